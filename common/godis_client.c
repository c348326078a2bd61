/* godis_client.c — the godis client: connect, send, read, and the verbs (see godis_client.h).
 * The RESP2 parser/encoder and the input validation live in godis_resp.c. */
#include "godis_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
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
    char *rbuf;                  /* bytes read but not yet parsed */
    size_t rlen, rcap;
    char err[512];
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

static void set_err(godis_client *c, const char *fmt, const char *a)
{
    snprintf(c->err, sizeof(c->err), fmt, a ? a : "");
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
        c->opts.allow_non_loopback = opts->allow_non_loopback;
    }
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

/* Loopback-only mode never asks DNS (the resolver here is not on loopback): a literal
 * address is used as is; a name must be in $GODIS_HOSTS_FILE (the node agent's hosts-file
 * block) or /etc/hosts. */
static gd_err resolve_without_dns(godis_client *c, char *ip, size_t cap)
{
    struct in6_addr a6;
    if (inet_pton(AF_INET, c->host, &a6) == 1 || inet_pton(AF_INET6, c->host, &a6) == 1) {
        snprintf(ip, cap, "%s", c->host);
        return GD_OK;
    }
    const char *extra = getenv("GODIS_HOSTS_FILE");
    if ((extra && *extra && hosts_file_lookup(extra, c->host, ip, cap) == 0) ||
        hosts_file_lookup("/etc/hosts", c->host, ip, cap) == 0)
        return GD_OK;
    set_err(c, "resolve: %s is in no hosts file (loopback-only mode does not use DNS)", c->host);
    return GD_ERR_TRANSPORT;
}

static gd_err client_connect(godis_client *c)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    char port[8], ip[256];
    const char *target = c->host;
    snprintf(port, sizeof(port), "%d", c->port);
    if (!c->opts.allow_non_loopback) {
        gd_err re = resolve_without_dns(c, ip, sizeof(ip));
        if (re != GD_OK)
            return re;
        target = ip;
        hints.ai_flags = AI_NUMERICHOST;
    }
    int grc = getaddrinfo(target, port, &hints, &res);
    if (grc != 0) {
        set_err(c, "resolve: %s", gai_strerror(grc));
        return GD_ERR_TRANSPORT;
    }
    gd_err e = GD_ERR_TRANSPORT;
    set_err(c, "connect: no usable address%s", "");
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        if (!c->opts.allow_non_loopback && !is_loopback(ai->ai_addr)) {
            set_err(c, "refusing non-loopback address of %s", c->host);
            e = GD_ERR_ARG;
            continue;
        }
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
            continue;
        int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (rc != 0 && errno == EINPROGRESS) {
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            int pr;
            do {
                pr = poll(&pfd, 1, c->opts.connect_timeout_ms);
            } while (pr < 0 && errno == EINTR);
            int soerr = 0;
            socklen_t sl = sizeof(soerr);
            if (pr == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0)
                rc = 0;
            else {
                set_err(c, "connect: %s", pr == 0 ? "timed out" : strerror(soerr ? soerr : errno));
                e = pr == 0 ? GD_ERR_TIMEOUT : GD_ERR_TRANSPORT;
            }
        } else if (rc != 0) {
            set_err(c, "connect: %s", strerror(errno));
        }
        if (rc == 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            c->fd = fd;
            c->rlen = 0;
            freeaddrinfo(res);
            return GD_OK;
        }
        close(fd);
    }
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
                set_err(c, "send: timed out%s", "");
                return GD_ERR_TIMEOUT;
            }
            continue;
        }
        set_err(c, "send: %s", strerror(errno));
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
            set_err(c, "reply: %s", gd_strerror(e));
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
                set_err(c, "reply: too large%s", "");
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
            set_err(c, "reply: timed out%s", "");
            return GD_ERR_TIMEOUT;
        }
        ssize_t r = recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen, 0);
        if (r == 0) {
            set_err(c, "reply: connection closed by %s", c->host);
            return GD_ERR_CLOSED;
        }
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            set_err(c, "recv: %s", strerror(errno));
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
        set_err(c, "hello: unexpected reply%s", "");
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
        set_err(c, "hello: no server field%s", "");
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
