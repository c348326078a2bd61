/* godis_resp.c — RESP2 reply parser and command encoder, and the validation of what may be
 * sent to godis (see godis_client.h; split from godis_client.c to keep files small). */
#include "godis_client.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
