/* godis_client.c — the godis client: connect, send, read, and the verbs (see godis_client.h).
 * The RESP2 parser/encoder and the input validation live in godis_resp.c. */
#include "godis_client.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------------
 * The client. */

struct godis_client {
    char host[256];
    int port;
    godis_opts opts;
    int fd;                      /* -1 when not connected */
    char addr[300];              /* "ip:port" dialled last, for messages */
    char *rbuf;                  /* bytes read but not yet parsed */
    size_t rlen, rcap;
    char err[768];
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

__attribute__((format(printf, 2, 3)))
static void set_err(godis_client *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof(c->err), fmt, ap);
    va_end(ap);
}

int godis_loopback_guard_env(void)
{
    const char *v = getenv(GODIS_LOOPBACK_ENV);
    return v && (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes"));
}

godis_client *godis_client_new(const char *host, int port, const godis_opts *opts)
{
    if (!host || !*host || strlen(host) >= 256 || port < 1 || port > 65535)
        return NULL;
    godis_client *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    snprintf(c->host, sizeof(c->host), "%s", host);
    c->port = port;
    c->fd = -1;
    c->opts.connect_timeout_ms = 1000;
    c->opts.reply_timeout_ms = 3000;
    if (opts) {
        if (opts->connect_timeout_ms > 0)
            c->opts.connect_timeout_ms = opts->connect_timeout_ms;
        if (opts->reply_timeout_ms > 0)
            c->opts.reply_timeout_ms = opts->reply_timeout_ms;
        c->opts.loopback_only = opts->loopback_only;
    }
    /* The test environment's guard, read once here: a process either runs under it or not. */
    if (godis_loopback_guard_env())
        c->opts.loopback_only = 1;
    return c;
}

static void client_close(godis_client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->rlen = 0;
}

void godis_client_destroy(godis_client **cp)
{
    if (!cp || !*cp)
        return;
    client_close(*cp);
    free((*cp)->rbuf);
    free(*cp);
    *cp = NULL;
}

const char *godis_last_error(const godis_client *c)
{
    return c ? c->err : "";
}

int godis_client_loopback_only(const godis_client *c)
{
    return c ? c->opts.loopback_only : 0;
}

static int is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        uint32_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
        return (a >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
    return 0;
}

static void addr_text(const struct sockaddr *sa, socklen_t len, char *out, size_t cap)
{
    char ip[INET6_ADDRSTRLEN] = "?", port[8] = "?";
    getnameinfo(sa, len, ip, sizeof(ip), port, sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(out, cap, sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", ip, port);
}

/* Finds name in a hosts file ("IP name alias..." lines); copies the IP into ip. */
static int hosts_file_lookup(const char *path, const char *name, char *ip, size_t cap)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char line[1024];
    int found = -1;
    while (found != 0 && fgets(line, sizeof(line), f)) {
        char *hash = strchr(line, '#'), *save = NULL;
        if (hash)
            *hash = '\0';
        char *addr = strtok_r(line, " \t\r\n", &save);
        for (char *n = addr ? strtok_r(NULL, " \t\r\n", &save) : NULL; n && found != 0;
             n = strtok_r(NULL, " \t\r\n", &save)) {
            if (strcasecmp(n, name) == 0 && strlen(addr) < cap) {
                snprintf(ip, cap, "%s", addr);
                found = 0;
            }
        }
    }
    fclose(f);
    return found;
}

/* Where a name comes from, in this order:
 *  1. a literal IP address: as is;
 *  2. $GODIS_HOSTS_FILE, when set (the local control plane has no cluster DNS: its node
 *     agent keeps the Service names of godis members there);
 *  3. the system resolver (getaddrinfo: /etc/hosts, then the cluster's DNS) — except under
 *     the loopback guard, which never asks DNS (the resolver is not on loopback) and reads
 *     /etc/hosts itself instead.
 * The guard then refuses every address outside 127.0.0.0/8 and ::1. */
static gd_err resolve(godis_client *c, struct addrinfo **res)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    char port[8], ip[256];
    const char *target = c->host;
    snprintf(port, sizeof(port), "%d", c->port);
    struct in6_addr a6;
    const char *extra = getenv("GODIS_HOSTS_FILE");
    if (inet_pton(AF_INET, c->host, &a6) == 1 || inet_pton(AF_INET6, c->host, &a6) == 1) {
        hints.ai_flags = AI_NUMERICHOST;
    } else if ((extra && *extra && hosts_file_lookup(extra, c->host, ip, sizeof(ip)) == 0) ||
               (c->opts.loopback_only && hosts_file_lookup("/etc/hosts", c->host, ip, sizeof(ip)) == 0)) {
        target = ip;
        hints.ai_flags = AI_NUMERICHOST;
    } else if (c->opts.loopback_only) {
        set_err(c, "resolve %s: in no hosts file, and the loopback guard (%s) does not ask DNS",
                c->host, GODIS_LOOPBACK_ENV);
        return GD_ERR_TRANSPORT;
    }
    int grc = getaddrinfo(target, port, &hints, res);
    if (grc != 0) {
        set_err(c, "resolve %s: %s", c->host, grc == EAI_SYSTEM ? strerror(errno) : gai_strerror(grc));
        return GD_ERR_TRANSPORT;
    }
    if (!c->opts.loopback_only)
        return GD_OK;
    for (struct addrinfo *ai = *res; ai; ai = ai->ai_next) {
        if (!is_loopback(ai->ai_addr)) {
            char a[300];
            addr_text(ai->ai_addr, ai->ai_addrlen, a, sizeof(a));
            set_err(c, "%s resolves to %s, outside 127.0.0.0/8: refused by the loopback guard (%s)",
                    c->host, a, GODIS_LOOPBACK_ENV);
            freeaddrinfo(*res);
            *res = NULL;
            return GD_ERR_ARG;
        }
    }
    return GD_OK;
}

int godis_valid_dns_name(const char *s)
{
    if (!s || !*s || strlen(s) > 253)
        return 0;
    size_t label = 0;
    for (const char *p = s;; p++) {
        if (*p == '.' || *p == '\0') {
            if (label == 0 || label > 63 || p[-1] == '-')
                return 0;
            if (*p == '\0')
                return 1;
            label = 0;
            continue;
        }
        if (!(isalnum((unsigned char)*p) || (*p == '-' && label > 0)))
            return 0;
        label++;
    }
}

int godis_member_hosts(const char *pod_ip, const char *godis_name, const char *ns,
                       const char *cluster_domain, char hosts[2][GODIS_HOST_MAX])
{
    if (!godis_name || !ns)
        return -1;
    int n = 0;
    if (pod_ip && *pod_ip) {
        if (strlen(pod_ip) >= GODIS_HOST_MAX)
            return -1;
        snprintf(hosts[n++], GODIS_HOST_MAX, "%s", pod_ip);
    }
    const char *dom = cluster_domain && *cluster_domain ? cluster_domain : GODIS_DEFAULT_CLUSTER_DOMAIN;
    int w = snprintf(hosts[n], GODIS_HOST_MAX, "%s-endpoint.%s.svc.%s", godis_name, ns, dom);
    if (w < 0 || w >= GODIS_HOST_MAX)
        return -1;
    return n + 1;
}

gd_err godis_client_resolve(godis_client *c, char *addr, size_t cap)
{
    if (!c || !addr || !cap)
        return GD_ERR_ARG;
    struct addrinfo *res = NULL;
    gd_err e = resolve(c, &res);
    if (e != GD_OK)
        return e;
    addr_text(res->ai_addr, res->ai_addrlen, addr, cap);
    freeaddrinfo(res);
    return GD_OK;
}

/* One address, with the connect timeout. */
static gd_err connect_one(godis_client *c, const struct addrinfo *ai)
{
    addr_text(ai->ai_addr, ai->ai_addrlen, c->addr, sizeof(c->addr));
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        set_err(c, "connect %s (%s): socket: %s", c->addr, c->host, strerror(errno));
        return GD_ERR_TRANSPORT;
    }
    int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
    gd_err e = GD_OK;
    if (rc != 0 && errno == EINPROGRESS) {
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        int pr;
        do {
            pr = poll(&pfd, 1, c->opts.connect_timeout_ms);
        } while (pr < 0 && errno == EINTR);
        int soerr = 0;
        socklen_t sl = sizeof(soerr);
        if (pr == 0) {
            set_err(c, "connect %s (%s): timed out after %d ms", c->addr, c->host,
                    c->opts.connect_timeout_ms);
            e = GD_ERR_TIMEOUT;
        } else if (pr < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr) {
            set_err(c, "connect %s (%s): %s", c->addr, c->host, strerror(soerr ? soerr : errno));
            e = GD_ERR_TRANSPORT;
        }
    } else if (rc != 0) {
        set_err(c, "connect %s (%s): %s", c->addr, c->host, strerror(errno));
        e = GD_ERR_TRANSPORT;
    }
    if (e != GD_OK) {
        close(fd);
        return e;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->fd = fd;
    c->rlen = 0;
    return GD_OK;
}

static gd_err client_connect(godis_client *c)
{
    struct addrinfo *res = NULL;
    gd_err e = resolve(c, &res);
    if (e != GD_OK)
        return e;
    e = GD_ERR_TRANSPORT;
    for (struct addrinfo *ai = res; ai && e != GD_OK; ai = ai->ai_next)
        e = connect_one(c, ai);
    freeaddrinfo(res);
    return e;
}

static gd_err write_all(godis_client *c, const char *p, size_t n, int64_t deadline)
{
    while (n > 0) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int64_t left = deadline - now_ms();
            struct pollfd pfd = {.fd = c->fd, .events = POLLOUT};
            if (left <= 0 || poll(&pfd, 1, (int)left) == 0) {
                set_err(c, "send to %s (%s): timed out", c->addr, c->host);
                return GD_ERR_TIMEOUT;
            }
            continue;
        }
        set_err(c, "send to %s (%s): %s", c->addr, c->host, strerror(errno));
        return GD_ERR_TRANSPORT;
    }
    return GD_OK;
}

static gd_err read_reply(godis_client *c, godis_reply **reply, int64_t deadline)
{
    for (;;) {
        size_t used = 0;
        gd_err e = godis_reply_parse(c->rbuf, c->rlen, reply, &used);
        if (e != GD_OK) {
            set_err(c, "reply from %s (%s): %s", c->addr, c->host, gd_strerror(e));
            return e == GD_ERR_NOMEM ? e : GD_ERR_PROTOCOL;
        }
        if (*reply) {
            memmove(c->rbuf, c->rbuf + used, c->rlen - used);
            c->rlen -= used;
            return GD_OK;
        }
        if (c->rcap - c->rlen < 4096) {
            size_t ncap = c->rcap ? c->rcap * 2 : 16384;
            if (ncap > GODIS_MAX_BULK + 2 * GODIS_MAX_LINE) {
                set_err(c, "reply from %s (%s): too large", c->addr, c->host);
                return GD_ERR_PROTOCOL;
            }
            char *nb = realloc(c->rbuf, ncap);
            if (!nb)
                return GD_ERR_NOMEM;
            c->rbuf = nb;
            c->rcap = ncap;
        }
        int64_t left = deadline - now_ms();
        struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
        int pr = left > 0 ? poll(&pfd, 1, (int)left) : 0;
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr == 0) {
            set_err(c, "reply from %s (%s): timed out after %d ms", c->addr, c->host,
                    c->opts.reply_timeout_ms);
            return GD_ERR_TIMEOUT;
        }
        ssize_t r = recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen, 0);
        if (r == 0) {
            set_err(c, "reply from %s (%s): connection closed", c->addr, c->host);
            return GD_ERR_CLOSED;
        }
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            set_err(c, "recv from %s (%s): %s", c->addr, c->host, strerror(errno));
            return GD_ERR_TRANSPORT;
        }
        c->rlen += (size_t)r;
    }
}

gd_err godis_command(godis_client *c, godis_reply **reply, int argc, const char *const *argv)
{
    if (!c || !reply)
        return GD_ERR_ARG;
    *reply = NULL;
    char *req = NULL;
    size_t reqlen = 0;
    gd_err e = godis_encode_command(argc, argv, NULL, &req, &reqlen);
    if (e != GD_OK)
        return e;
    if (c->fd < 0 && (e = client_connect(c)) != GD_OK) {
        free(req);
        return e;
    }
    int64_t deadline = now_ms() + c->opts.reply_timeout_ms;
    e = write_all(c, req, reqlen, deadline);
    free(req);
    if (e == GD_OK)
        e = read_reply(c, reply, deadline);
    if (e != GD_OK) {
        client_close(c);         /* a half-read reply would desynchronise the stream */
        return e;
    }
    if ((*reply)->type == GODIS_REPLY_ERROR)
        set_err(c, "%s", (*reply)->str);
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * Verbs. */

static void copy_field(char *dst, size_t cap, const godis_reply *v)
{
    if (v && (v->type == GODIS_REPLY_BULK || v->type == GODIS_REPLY_STATUS))
        snprintf(dst, cap, "%s", v->str);
}

gd_err godis_hello(godis_client *c, godis_hello_info *info)
{
    static const char *const argv[] = {"hello"};
    godis_reply *r = NULL;
    gd_err e = godis_command(c, &r, 1, argv);
    if (e != GD_OK)
        return e;
    if (r->type != GODIS_REPLY_ARRAY || r->n % 2 != 0) {
        godis_reply_destroy(&r);
        set_err(c, "hello: unexpected reply from %s", c->addr);
        return GD_ERR_PROTOCOL;
    }
    godis_hello_info tmp;
    memset(&tmp, 0, sizeof(tmp));
    for (size_t i = 0; i + 1 < r->n; i += 2) {
        const godis_reply *k = r->elems[i], *v = r->elems[i + 1];
        if (k->type != GODIS_REPLY_BULK && k->type != GODIS_REPLY_STATUS)
            continue;
        if (!strcmp(k->str, "server"))
            copy_field(tmp.server, sizeof(tmp.server), v);
        else if (!strcmp(k->str, "version"))
            copy_field(tmp.version, sizeof(tmp.version), v);
        else if (!strcmp(k->str, "mode"))
            copy_field(tmp.mode, sizeof(tmp.mode), v);
        else if (!strcmp(k->str, "role"))
            copy_field(tmp.role, sizeof(tmp.role), v);
        else if (!strcmp(k->str, "proto") && v->type == GODIS_REPLY_INTEGER)
            tmp.proto = v->integer;
        else if (!strcmp(k->str, "id") && v->type == GODIS_REPLY_INTEGER)
            tmp.id = v->integer;
    }
    godis_reply_destroy(&r);
    if (!tmp.server[0]) {
        set_err(c, "hello: no server field in the reply from %s", c->addr);
        return GD_ERR_PROTOCOL;
    }
    if (info)
        *info = tmp;
    return GD_OK;
}

static int is_propose_canceled(const godis_reply *r)
{
    return r->type == GODIS_REPLY_ERROR && strstr(r->str, "propose canceled") != NULL;
}

/* Sends a membership command until +OK or the deadline; the verbs are idempotent. */
static gd_err membership_retry(godis_client *c, int argc, const char *const *argv, int timeout_ms)
{
    int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 10000);
    int64_t backoff = 50;
    gd_err last = GD_ERR_TIMEOUT;
    for (;;) {
        godis_reply *r = NULL;
        gd_err e = godis_command(c, &r, argc, argv);
        if (e == GD_OK) {
            if (r->type == GODIS_REPLY_STATUS && !strcmp(r->str, "OK")) {
                godis_reply_destroy(&r);
                return GD_OK;
            }
            int retry = is_propose_canceled(r);
            if (!retry && r->type != GODIS_REPLY_ERROR)
                set_err(c, "unexpected reply to %s", argv[1]);
            godis_reply_destroy(&r);
            if (!retry)
                return GD_ERR_PROTOCOL;
            last = GD_ERR_TIMEOUT;
        } else if (e == GD_ERR_ARG || e == GD_ERR_NOMEM) {
            return e;                /* refused address, bad arguments: retrying will not help */
        } else {
            last = e;
        }
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return last == GD_ERR_TIMEOUT ? GD_ERR_TIMEOUT : last;
        sleep_ms(backoff < left ? backoff : left);
        backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
        if (now_ms() >= deadline)
            return GD_ERR_TIMEOUT;
    }
}

gd_err godis_meet(godis_client *c, long long id, const char *peer_url, int timeout_ms)
{
    if (!c || !godis_valid_id(id) || !godis_valid_peer_url(peer_url))
        return GD_ERR_ARG;
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *argv[] = {"cluster", "meet", ids, peer_url};
    return membership_retry(c, 4, argv, timeout_ms);
}

gd_err godis_forget(godis_client *c, long long id, int timeout_ms)
{
    if (!c || !godis_valid_id(id))
        return GD_ERR_ARG;
    char ids[24];
    snprintf(ids, sizeof(ids), "%lld", id);
    const char *argv[] = {"cluster", "forget", ids};
    return membership_retry(c, 3, argv, timeout_ms);
}

gd_err godis_set(godis_client *c, const char *key, const char *value)
{
    if (!c || !key || !value)
        return GD_ERR_ARG;
    const char *argv[] = {"set", key, value};
    godis_reply *r = NULL;
    gd_err e = godis_command(c, &r, 3, argv);
    if (e != GD_OK)
        return e;
    e = (r->type == GODIS_REPLY_STATUS && !strcmp(r->str, "OK")) ? GD_OK : GD_ERR_PROTOCOL;
    godis_reply_destroy(&r);
    return e;
}

gd_err godis_get(godis_client *c, const char *key, char **value)
{
    if (!c || !key || !value)
        return GD_ERR_ARG;
    *value = NULL;
    const char *argv[] = {"get", key};
    godis_reply *r = NULL;
    gd_err e = godis_command(c, &r, 2, argv);
    if (e != GD_OK)
        return e;
    if (r->type == GODIS_REPLY_BULK) {
        *value = r->str;         /* take the string over */
        r->str = NULL;
    } else if ((r->type == GODIS_REPLY_ERROR && !strcmp(r->str, "redis: nil")) ||
               r->type == GODIS_REPLY_NIL) {
        e = GD_ERR_NOT_FOUND;
    } else {
        e = GD_ERR_PROTOCOL;
    }
    godis_reply_destroy(&r);
    return e;
}

gd_err godis_members(godis_client *c, long long *ids, char **urls, size_t cap, size_t *n)
{
    if (!c || !n || (cap && (!ids || !urls)))
        return GD_ERR_ARG;
    *n = 0;
    static const char *const argv[] = {"standin", "members"};
    godis_reply *r = NULL;
    gd_err e = godis_command(c, &r, 2, argv);
    if (e != GD_OK)
        return e;
    if (r->type != GODIS_REPLY_ARRAY) {
        godis_reply_destroy(&r);
        return GD_ERR_PROTOCOL;
    }
    if (r->n > cap) {
        godis_reply_destroy(&r);
        return GD_ERR_TOO_LARGE;
    }
    for (size_t i = 0; i < r->n; i++) {
        const godis_reply *el = r->elems[i];
        const char *at = el->type == GODIS_REPLY_BULK ? strchr(el->str, '@') : NULL;
        char idbuf[16];
        size_t il = at ? (size_t)(at - el->str) : 0;
        long long id = 0;
        if (at && il < sizeof(idbuf)) {
            memcpy(idbuf, el->str, il);
            idbuf[il] = '\0';
            id = godis_parse_id(idbuf);
        }
        if (!id || !(urls[i] = strdup(at + 1))) {
            for (size_t j = 0; j < i; j++) {
                free(urls[j]);
                urls[j] = NULL;
            }
            godis_reply_destroy(&r);
            return id ? GD_ERR_NOMEM : GD_ERR_PROTOCOL;
        }
        ids[i] = id;
    }
    *n = r->n;
    godis_reply_destroy(&r);
    return GD_OK;
}
