/* server.c — see server.h. */
#include "server.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include "cert_slot.h"
#include "gd_httpd.h"
#include "gd_log.h"
#include "review.h"

struct wh_server {
    struct MHD_Daemon *d;
    wh_server_opts o;
    wh_cert_slot *pair;       /* what each handshake serves (cert_slot.h) */
    char *ca;                 /* MHD keeps a pointer to it */
    int port;
};

/* A connection's own state: the server, and the pair its handshake took. */
typedef struct {
    wh_server *s;
    wh_keypair *pair;
} conn_state;

typedef struct {
    char *buf;
    size_t len, cap;
    bool too_large;
} upload;

static bool client_cert_ok(struct MHD_Connection *con)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(con, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (!ci || !ci->tls_session) return false;
    gnutls_session_t s = (gnutls_session_t)ci->tls_session;
    unsigned n = 0, status = 0;
    if (!gnutls_certificate_get_peers(s, &n) || n == 0) return false;
    return gnutls_certificate_verify_peers2(s, &status) == 0 && status == 0;
}

static bool append(upload *u, const char *data, size_t n)
{
    if (u->len + n > WH_REVIEW_MAX_BODY) {
        u->too_large = true;
        return true;
    }
    if (u->len + n + 1 > u->cap) {
        size_t nc = u->cap ? u->cap * 2 : 4096;
        while (nc < u->len + n + 1) nc *= 2;
        char *nb = realloc(u->buf, nc);
        if (!nb) return false;
        u->buf = nb;
        u->cap = nc;
    }
    memcpy(u->buf + u->len, data, n);
    u->len += n;
    u->buf[u->len] = '\0';
    return true;
}

static gd_mhd_ret on_request(void *cls, struct MHD_Connection *c, const char *url,
                          const char *method, const char *version, const char *data,
                          size_t *data_size, void **state)
{
    (void)version;
    wh_server *s = cls;
    if (!*state) {                      /* headers only: refuse early what we never read */
        if (s->o.client_ca && !client_cert_ok(c))
            return gd_httpd_reply(c, MHD_HTTP_FORBIDDEN, "text/plain", "a client certificate signed by "
                         "the --client-ca is required\n", false);
        upload *u = calloc(1, sizeof *u);
        if (!u) return MHD_NO;
        *state = u;
        return MHD_YES;
    }
    upload *u = *state;
    if (*data_size) {
        bool ok = append(u, data, *data_size);
        *data_size = 0;
        return ok ? MHD_YES : MHD_NO;
    }
    if (!strcmp(url, "/healthz"))
        return gd_httpd_reply(c, MHD_HTTP_OK, "text/plain", "ok\n", false);
    if (strcmp(url, "/eviction"))
        return gd_httpd_reply(c, MHD_HTTP_NOT_FOUND, "text/plain", "not found: the webhook serves POST "
                     "/eviction\n", false);
    if (strcmp(method, "POST"))
        return gd_httpd_reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", "method not allowed: POST "
                     "an AdmissionReview\n", false);
    if (u->too_large)
        return gd_httpd_reply(c, MHD_HTTP_CONTENT_TOO_LARGE, "text/plain", "AdmissionReview too large\n", false);
    char *out = NULL;
    const char *type = "application/json";
    int code = s->o.review(s->o.ud, u->buf ? u->buf : "", u->len, &out, &type);
    if (!out) return gd_httpd_reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain", "out of memory\n", false);
    return gd_httpd_reply(c, (unsigned)code, type, out, true);
}

static void on_done(void *cls, struct MHD_Connection *c, void **state,
                    enum MHD_RequestTerminationCode toe)
{
    (void)cls; (void)c; (void)toe;
    upload *u = *state;
    if (u) free(u->buf);
    free(u);
    *state = NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **state,
                          enum MHD_ConnectionNotificationCode code)
{
    (void)c;
    wh_server *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        conn_state *cs = calloc(1, sizeof *cs);
        if (cs) cs->s = s;
        *state = cs;              /* NULL: its handshake fails, nothing else does */
        return;
    }
    conn_state *cs = *state;
    if (cs) wh_cert_slot_release(s->pair, &cs->pair);
    free(cs);
    *state = NULL;
}

/* GnuTLS asks for the certificate of each handshake. The callback has no user pointer; MHD
 * sets the session's pointer to the connection (libmicrohttpd 0.9.75, as Debian 12 ships it),
 * and the connection's state names the server. If a later MHD stops doing that, handshakes
 * fail with a logged reason, and test_webhook_server fails. */
static int pick_certificate(gnutls_session_t tls, const gnutls_datum_t *req_ca_dn, int nreqs,
                            const gnutls_pk_algorithm_t *algos, int nalgos,
                            gnutls_pcert_st **pcert, unsigned *npcert, gnutls_privkey_t *key)
{
    (void)req_ca_dn; (void)nreqs; (void)algos; (void)nalgos;
    struct MHD_Connection *c = gnutls_session_get_ptr(tls);
    const union MHD_ConnectionInfo *ci =
        c ? MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT) : NULL;
    conn_state *cs = ci ? ci->socket_context : NULL;
    if (!cs) {
        GD_WARN("webhook HTTPS server", "error", "a TLS handshake without its connection's state "
                "(out of memory, or a libmicrohttpd that no longer links the TLS session to it)");
        return -1;
    }
    wh_cert_slot_release(cs->s->pair, &cs->pair);     /* a second handshake on the connection */
    cs->pair = wh_cert_slot_take(cs->s->pair, pcert, npcert, key);
    return cs->pair ? 0 : -1;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[300];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = '\0';
    GD_WARN("webhook HTTPS server", "error", msg);
}

static int listen_on(const char *host, int port, int *err)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        *err = EINVAL;
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (const struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 256) != 0) {
        *err = errno;
        if (fd >= 0) close(fd);
        return -1;
    }
    return fd;
}

wh_server *wh_server_start(const wh_server_opts *o, const wh_certs *certs)
{
    char addr[160];
    snprintf(addr, sizeof addr, "%s:%d", o->host, o->port);
    int err = 0, fd = listen_on(o->host, o->port, &err);
    if (fd < 0) {
        GD_ERROR("cannot listen for the webhook", "address", addr, "error", strerror(err));
        return NULL;
    }
    char why[300] = "out of memory";
    wh_server *s = calloc(1, sizeof *s);
    if (!s || !(s->pair = wh_cert_slot_new(certs->cert_pem, certs->key_pem, why, sizeof why)) ||
        (o->client_ca && !(s->ca = strdup(o->client_ca)))) {
        GD_ERROR("cannot start the webhook HTTPS server", "address", addr, "error", why);
        close(fd);
        if (s) wh_cert_slot_destroy(&s->pair);
        free(s);
        return NULL;
    }
    s->o = *o;
    struct MHD_OptionItem opts[12];
    int k = 0;
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, NULL};
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, fd, NULL};
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)pick_certificate};
    if (s->ca) opts[k++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, s->ca};
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, s};
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_done, NULL};
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, 512, NULL};
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, 30, NULL};
    opts[k++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    s->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                            MHD_USE_TLS | MHD_USE_ERROR_LOG,
                            (uint16_t)o->port, NULL, NULL, on_request, s,
                            MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    if (!s->d) {
        GD_ERROR("cannot start the webhook HTTPS server", "address", addr);
        close(fd);
        wh_cert_slot_destroy(&s->pair);
        free(s->ca);
        free(s);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info && info->port ? info->port : o->port;
    return s;
}

int wh_server_port(const wh_server *s) { return s ? s->port : 0; }

bool wh_server_set_certs(wh_server *s, const wh_certs *certs)
{
    char why[300];
    if (wh_cert_slot_set(s->pair, certs->cert_pem, certs->key_pem, why, sizeof why) == GD_OK)
        return true;
    GD_ERROR("cannot serve the new webhook certificate (keeping the one served)", "error", why);
    return false;
}

int wh_server_pairs_alive(wh_server *s) { return s ? wh_cert_slot_alive(s->pair) : 0; }

void wh_server_stop(wh_server **sp)
{
    if (!sp || !*sp) return;
    wh_server *s = *sp;
    MHD_stop_daemon(s->d);    /* every connection closed: every pair released */
    wh_cert_slot_destroy(&s->pair);
    free(s->ca);
    free(s);
    *sp = NULL;
}
