/* http.c — the manager's probe and metrics endpoints on libmicrohttpd.
 *
 * Debian's libmicrohttpd does the HTTP parsing, limits and connection handling; this file
 * only routes three GET paths. Anything else is 404, any other method 405. */
#include "http.h"
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <unistd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <microhttpd.h>
#include "gd_httpd.h"
#include "gd_log.h"

struct mgr_http {
    struct MHD_Daemon *d;
    mgr_http_handlers h;
    void *ud;
    int what, port;
};

static gd_mhd_ret probe(struct MHD_Connection *c, bool ok, const char *msg)
{
    char body[300];
    snprintf(body, sizeof body, "%s\n", msg[0] ? msg : (ok ? "ok" : "not ok"));
    return gd_httpd_reply(c, ok ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8",
                 body, false);
}

static gd_mhd_ret on_request(void *cls, struct MHD_Connection *c, const char *url,
                          const char *method, const char *version, const char *upload,
                          size_t *upload_size, void **state)
{
    (void)version; (void)upload;
    mgr_http *s = cls;
    if (*state == NULL) {           /* first call: headers only */
        static int marker;
        *state = &marker;
        return MHD_YES;
    }
    if (*upload_size) { *upload_size = 0; return MHD_YES; }   /* ignore bodies */
    bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    char msg[256] = "";
    if ((s->what & MGR_HTTP_HEALTH) && !strcmp(url, "/healthz")) {
        if (!get) return gd_httpd_reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", "method not allowed\n", false);
        bool ok = s->h.healthz(s->ud, msg, sizeof msg);
        return probe(c, ok, msg);
    }
    if ((s->what & MGR_HTTP_HEALTH) && !strcmp(url, "/readyz")) {
        if (!get) return gd_httpd_reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", "method not allowed\n", false);
        bool ok = s->h.readyz(s->ud, msg, sizeof msg);
        return probe(c, ok, msg);
    }
    if ((s->what & MGR_HTTP_METRICS) && !strcmp(url, "/metrics")) {
        if (!get) return gd_httpd_reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", "method not allowed\n", false);
        char *text = s->h.metrics(s->ud);
        if (!text) return gd_httpd_reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain", "out of memory\n", false);
        return gd_httpd_reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text, true);
    }
    return gd_httpd_reply(c, MHD_HTTP_NOT_FOUND, "text/plain", "not found\n", false);
}

/* libmicrohttpd's own complaints go to our log, not raw to stderr. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[300];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = '\0';
    GD_WARN("HTTP server", "error", msg);
}

/* Our own listening socket, so a bind failure comes back as an errno we can name. */
static int listen_on(const struct sockaddr_in *sa, int *err)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (const struct sockaddr *)sa, sizeof *sa) != 0 || listen(fd, 64) != 0) {
        *err = errno;
        if (fd >= 0) close(fd);
        return -1;
    }
    return fd;
}

mgr_http *mgr_http_start(const char *host, int port, int what, const mgr_http_handlers *h, void *ud,
                       const char *flag)
{
    char addr[160];
    snprintf(addr, sizeof addr, "%s:%d", host, port);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        GD_ERROR("cannot listen for HTTP", "flag", flag, "address", addr,
                 "error", "not an IPv4 address");
        return NULL;
    }
    int err = 0, fd = listen_on(&sa, &err);
    if (fd < 0) {
        GD_ERROR("cannot listen for HTTP", "flag", flag, "address", addr, "error", strerror(err));
        return NULL;
    }
    mgr_http *s = calloc(1, sizeof *s);
    if (!s) {
        close(fd);
        return NULL;
    }
    s->h = *h;
    s->ud = ud;
    s->what = what;
    s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, (uint16_t)port,
                            NULL, NULL, on_request, s,
                            MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,   /* first, or MHD complains */
                            MHD_OPTION_LISTEN_SOCKET, fd,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536,
                            MHD_OPTION_END);
    if (!s->d) {
        GD_ERROR("cannot start the HTTP server", "flag", flag, "address", addr);
        close(fd);
        free(s);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : port;
    return s;
}

int mgr_http_port(const mgr_http *s) { return s ? s->port : 0; }

void mgr_http_stop(mgr_http **sp)
{
    if (!sp || !*sp) return;
    MHD_stop_daemon((*sp)->d);
    free(*sp);
    *sp = NULL;
}
