/* godis_client.c — RESP2 parser/encoder and the godis client (see godis_client.h). */
#include "godis_client.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
 * RESP2 parsing. A recursive descent over the buffer: cheap to restart from the beginning
 * when more bytes arrive, and every length is checked against a cap before it is trusted. */

typedef struct {
    const char *buf;
    size_t len, pos;
    size_t elems;           /* elements allocated so far in this reply (GODIS_MAX_ELEMS) */
} parse_state;

enum { P_OK = 0, P_MORE = 1 };  /* internal: complete / need more bytes; < 0 is -gd_err */

void godis_reply_destroy(godis_reply **rp)
{
    if (!rp || !*rp)
        return;
    godis_reply *r = *rp;
    if (r->elems) {
        for (size_t i = 0; i < r->n; i++)
            godis_reply_destroy(&r->elems[i]);
        free(r->elems);
    }
    free(r->str);
    free(r);
    *rp = NULL;
}

/* Finds the CRLF-terminated line at st->pos. Sets *line and *llen (without CRLF). */
static int read_line(parse_state *st, const char **line, size_t *llen)
{
    const char *p = st->buf + st->pos;
    size_t avail = st->len - st->pos;
    size_t scan = avail < GODIS_MAX_LINE + 2 ? avail : GODIS_MAX_LINE + 2;
    for (size_t i = 0; i < scan; i++) {
        if (p[i] == '\n')
            return -GD_ERR_PARSE;           /* a bare LF: not RESP */
        if (p[i] == '\r') {
            if (i + 1 >= avail)
                return P_MORE;
            if (p[i + 1] != '\n')
                return -GD_ERR_PARSE;
            *line = p;
            *llen = i;
            st->pos += i + 2;
            return P_OK;
        }
    }
    return avail >= GODIS_MAX_LINE + 2 ? -GD_ERR_TOO_LARGE : P_MORE;
}

/* Strict decimal: optional '-', 1..19 digits, no overflow, nothing else. */
static int parse_ll(const char *s, size_t n, long long *out)
{
    size_t i = 0;
    int neg = 0;
    if (n > 0 && s[0] == '-') {
        neg = 1;
        i = 1;
    }
    if (i == n || n - i > 19)
        return -1;
    unsigned long long v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (unsigned long long)(s[i] - '0');
    }
    if ((!neg && v > (unsigned long long)LLONG_MAX) ||
        (neg && v > (unsigned long long)LLONG_MAX + 1ULL))
        return -1;
    *out = neg ? (long long)(0ULL - v) : (long long)v;
    return 0;
}

static godis_reply *reply_new(godis_reply_type t)
{
    godis_reply *r = calloc(1, sizeof(*r));
    if (r)
        r->type = t;
    return r;
}

static int parse_value(parse_state *st, int depth, godis_reply **out);

static int parse_array(parse_state *st, int depth, long long n, godis_reply **out)
{
    if (n < -1)
        return -GD_ERR_PARSE;
    if (n == -1) {
        *out = reply_new(GODIS_REPLY_NIL);
        return *out ? P_OK : -GD_ERR_NOMEM;
    }
    if (n > GODIS_MAX_ARRAY || st->elems + (size_t)n > GODIS_MAX_ELEMS)
        return -GD_ERR_TOO_LARGE;
    if (depth >= GODIS_MAX_DEPTH)
        return -GD_ERR_TOO_LARGE;
    st->elems += (size_t)n;
    godis_reply *r = reply_new(GODIS_REPLY_ARRAY);
    if (!r)
        return -GD_ERR_NOMEM;
    if (n > 0 && !(r->elems = calloc((size_t)n, sizeof(*r->elems)))) {
        free(r);
        return -GD_ERR_NOMEM;
    }
    for (long long i = 0; i < n; i++) {
        int rc = parse_value(st, depth + 1, &r->elems[i]);
        r->n = (size_t)i + (rc == P_OK);
        if (rc != P_OK) {
            godis_reply_destroy(&r);
            return rc;
        }
    }
    *out = r;
    return P_OK;
}

static int parse_bulk(parse_state *st, long long n, godis_reply **out)
{
    if (n < -1)
        return -GD_ERR_PARSE;
    if (n == -1) {
        *out = reply_new(GODIS_REPLY_NIL);
        return *out ? P_OK : -GD_ERR_NOMEM;
    }
    if (n > GODIS_MAX_BULK)
        return -GD_ERR_TOO_LARGE;
    size_t need = (size_t)n + 2;
    if (st->len - st->pos < need)
        return P_MORE;
    const char *p = st->buf + st->pos;
    if (p[n] != '\r' || p[n + 1] != '\n')
        return -GD_ERR_PARSE;
    godis_reply *r = reply_new(GODIS_REPLY_BULK);
    if (!r || !(r->str = malloc((size_t)n + 1))) {
        free(r);
        return -GD_ERR_NOMEM;
    }
    memcpy(r->str, p, (size_t)n);
    r->str[n] = '\0';
    r->len = (size_t)n;
    st->pos += need;
    *out = r;
    return P_OK;
}

static int parse_value(parse_state *st, int depth, godis_reply **out)
{
    *out = NULL;
    if (st->pos >= st->len)
        return P_MORE;
    char kind = st->buf[st->pos];
    if (kind != '+' && kind != '-' && kind != ':' && kind != '$' && kind != '*')
        return -GD_ERR_PARSE;
    st->pos++;
    const char *line;
    size_t llen;
    int rc = read_line(st, &line, &llen);
    if (rc != P_OK)
        return rc;
    long long n = 0;
    if (kind == '+' || kind == '-') {
        godis_reply *r = reply_new(kind == '+' ? GODIS_REPLY_STATUS : GODIS_REPLY_ERROR);
        if (!r || !(r->str = malloc(llen + 1))) {
            free(r);
            return -GD_ERR_NOMEM;
        }
        memcpy(r->str, line, llen);
        r->str[llen] = '\0';
        r->len = llen;
        *out = r;
        return P_OK;
    }
    if (parse_ll(line, llen, &n) != 0)
        return -GD_ERR_PARSE;
    if (kind == ':') {
        godis_reply *r = reply_new(GODIS_REPLY_INTEGER);
        if (!r)
            return -GD_ERR_NOMEM;
        r->integer = n;
        *out = r;
        return P_OK;
    }
    return kind == '$' ? parse_bulk(st, n, out) : parse_array(st, depth, n, out);
}

gd_err godis_reply_parse(const char *buf, size_t len, godis_reply **out, size_t *consumed)
{
    if (!out || !consumed || (!buf && len))
        return GD_ERR_ARG;
    *out = NULL;
    *consumed = 0;
    parse_state st = {.buf = buf, .len = len};
    godis_reply *r = NULL;
    int rc = parse_value(&st, 0, &r);
    if (rc == P_MORE)
        return GD_OK;
    if (rc < 0)
        return (gd_err)-rc;
    *out = r;
    *consumed = st.pos;
    return GD_OK;
}

gd_err godis_encode_command(int argc, const char *const *argv, const size_t *argvlen,
                            char **out, size_t *outlen)
{
    if (argc <= 0 || argc > GODIS_MAX_ARRAY || !argv || !out || !outlen)
        return GD_ERR_ARG;
    size_t total = 32;
    for (int i = 0; i < argc; i++) {
        if (!argv[i])
            return GD_ERR_ARG;
        size_t l = argvlen ? argvlen[i] : strlen(argv[i]);
        if (l > GODIS_MAX_BULK)
            return GD_ERR_TOO_LARGE;
        total += l + 32;
    }
    char *b = malloc(total);
    if (!b)
        return GD_ERR_NOMEM;
    size_t pos = (size_t)snprintf(b, total, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++) {
        size_t l = argvlen ? argvlen[i] : strlen(argv[i]);
        pos += (size_t)snprintf(b + pos, total - pos, "$%zu\r\n", l);
        memcpy(b + pos, argv[i], l);
        pos += l;
        b[pos++] = '\r';
        b[pos++] = '\n';
    }
    *out = b;
    *outlen = pos;
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * Validation: what godis would commit to its Raft log must be well-formed. */

int godis_valid_id(long long id)
{
    return id >= 1 && id <= GODIS_MAX_ID;
}

long long godis_parse_id(const char *s)
{
    if (!s || !*s || strlen(s) > 10)
        return 0;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9')
            return 0;
    if (s[0] == '0')                /* "0", "007": not how an id is written */
        return 0;
    long long v = strtoll(s, NULL, 10);
    return godis_valid_id(v) ? v : 0;
}

/* A DNS name (labels of [A-Za-z0-9-], not starting or ending with '-') or a dotted IPv4. */
static int valid_host(const char *h, size_t n)
{
    if (n == 0 || n > 253)
        return 0;
    size_t label = 0;
    for (size_t i = 0; i < n; i++) {
        char c = h[i];
        if (c == '.') {
            if (label == 0 || h[i - 1] == '-')
                return 0;
            label = 0;
            continue;
        }
        if (!(isalnum((unsigned char)c) || c == '-'))
            return 0;
        if (c == '-' && label == 0)
            return 0;
        if (++label > 63)
            return 0;
    }
    if (label == 0 || h[n - 1] == '-')
        return 0;
    /* All digits and dots: it must then be a real dotted quad (no "999.1", no "1.2.3"). */
    int numeric = 1;
    for (size_t i = 0; i < n; i++)
        if (!(isdigit((unsigned char)h[i]) || h[i] == '.'))
            numeric = 0;
    if (numeric) {
        char tmp[64];
        struct in_addr a;
        if (n >= sizeof(tmp))
            return 0;
        memcpy(tmp, h, n);
        tmp[n] = '\0';
        return inet_pton(AF_INET, tmp, &a) == 1;
    }
    return 1;
}

int godis_valid_peer_url(const char *url)
{
    static const char scheme[] = "http://";
    if (!url || strlen(url) > GODIS_MAX_URL || strncmp(url, scheme, sizeof(scheme) - 1) != 0)
        return 0;
    const char *host = url + sizeof(scheme) - 1;
    const char *colon = strrchr(host, ':');
    if (!colon)
        return 0;                    /* the port is required: godis joins peers by URL */
    const char *port = colon + 1;
    size_t plen = strlen(port);
    if (plen == 0 || plen > 5 || port[0] == '0')
        return 0;
    for (size_t i = 0; i < plen; i++)
        if (!isdigit((unsigned char)port[i]))
            return 0;
    long p = strtol(port, NULL, 10);
    if (p < 1 || p > 65535)
        return 0;
    return valid_host(host, (size_t)(colon - host));
}

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

/* Non-blocking connect bounded by connect_timeout_ms; tries each resolved address. */
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
