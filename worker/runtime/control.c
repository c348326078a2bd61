/* control.c — see control.h. Every field is checked: a malformed message from the manager
 * is answered with ERROR and logged, never trusted. */
#include "control.h"
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gd_metrics.h"

#define FRAME_MAX 64     /* longest number/shard frame we copy for parsing, bar shard lists */

static bool frame_is(const gdw_frame *f, const char *s)
{
    size_t n = strlen(s);
    return f->len == n && memcmp(f->data, s, n) == 0;
}

/* Copies a frame into a NUL-terminated buffer; false when it does not fit. */
static bool frame_str(const gdw_frame *f, char *buf, size_t cap)
{
    if (f->len >= cap)
        return false;
    memcpy(buf, f->data, f->len);
    buf[f->len] = '\0';
    return memchr(buf, '\0', f->len) == NULL;
}

static bool parse_u64(const gdw_frame *f, uint64_t *out)
{
    char buf[FRAME_MAX];
    if (!frame_str(f, buf, sizeof buf) || !buf[0] || buf[0] == '-')
        return false;
    for (const char *p = buf; *p; p++)
        if (!isdigit((unsigned char)*p))
            return false;
    errno = 0;
    unsigned long long v = strtoull(buf, NULL, 10);
    if (errno)
        return false;
    *out = v;
    return true;
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

gd_err gdw_parse_shards(const char *s, int *out, int *n, char *why, size_t cap)
{
    bool seen[GD_NSHARDS] = {false};
    *n = 0;
    if (!s)
        s = "";
    if (strcmp(s, "all") == 0 || strcmp(s, "*") == 0) {
        for (int i = 0; i < GD_NSHARDS; i++)
            out[(*n)++] = i;
        return GD_OK;
    }
    const char *p = s;
    while (*p) {
        char *end;
        if (!isdigit((unsigned char)*p))
            goto bad;
        long a = strtol(p, &end, 10), b = a;
        p = end;
        if (*p == '-') {
            p++;
            if (!isdigit((unsigned char)*p))
                goto bad;
            b = strtol(p, &end, 10);
            p = end;
        }
        if (a < 0 || b >= GD_NSHARDS || a > b) {
            snprintf(why, cap, "shard range %ld-%ld outside 0-%d", a, b, GD_NSHARDS - 1);
            return GD_ERR_PARSE;
        }
        for (long i = a; i <= b; i++)
            seen[i] = true;
        if (*p == ',') {
            p++;
            if (!*p)
                goto bad;
        } else if (*p) {
            goto bad;
        }
    }
    for (int i = 0; i < GD_NSHARDS; i++)
        if (seen[i])
            out[(*n)++] = i;
    qsort(out, (size_t)*n, sizeof *out, cmp_int);
    return GD_OK;
bad:
    snprintf(why, cap, "malformed shard list near \"%.20s\" (want e.g. 3,17 or 0-255)", p);
    *n = 0;
    return GD_ERR_PARSE;
}

char *gdw_format_shards(const int *shards, int n)
{
    gd_sbuf b;
    gd_sbuf_init(&b);
    for (int i = 0; i < n; i++)
        gd_sbuf_putf(&b, i ? ",%d" : "%d", shards[i]);
    return gd_sbuf_detach(&b);
}

gd_err gdw_check_pending(const cJSON *pending, char *why, size_t cap)
{
    if (!cJSON_IsObject(pending)) {
        snprintf(why, cap, "pending keys: not a JSON object");
        return GD_ERR_PROTOCOL;
    }
    const cJSON *ctrl, *key;
    cJSON_ArrayForEach(ctrl, pending) {
        if (!cJSON_IsArray(ctrl)) {
            snprintf(why, cap, "pending keys: \"%.40s\" is not an array", ctrl->string);
            return GD_ERR_PROTOCOL;
        }
        cJSON_ArrayForEach(key, ctrl) {
            if (!cJSON_IsString(key) || !key->valuestring || !*key->valuestring) {
                snprintf(why, cap, "pending keys: \"%.40s\" holds a non-string", ctrl->string);
                return GD_ERR_PROTOCOL;
            }
        }
    }
    return GD_OK;
}

static gd_err bad(char *why, size_t cap, const char *what)
{
    snprintf(why, cap, "%s", what);
    return GD_ERR_PROTOCOL;
}

static gd_err parse_shard_frame(const gdw_frame *f, gdw_msg *m, char *why, size_t cap)
{
    char buf[GD_NSHARDS * 4 + 8];
    if (!frame_str(f, buf, sizeof buf))
        return bad(why, cap, "shard list too long or not text");
    if (gdw_parse_shards(buf, m->shards, &m->nshards, why, cap) != GD_OK ||
        strcmp(buf, "all") == 0 || strcmp(buf, "*") == 0)
        return bad(why, cap, "malformed shard list");
    return GD_OK;
}

gd_err gdw_parse(const gdw_frame *f, int n, gdw_msg *m, char *why, size_t cap)
{
    memset(m, 0, sizeof *m);
    if (n < 2 || !frame_is(&f[0], "GDW1"))
        return bad(why, cap, "not a GDW1 message");
    const gdw_frame *cmd = &f[1];
    if (frame_is(cmd, "ERROR")) {
        m->type = GDW_ERROR;
        if (n >= 3 && !frame_str(&f[2], m->text, sizeof m->text))
            snprintf(m->text, sizeof m->text, "(unprintable)");
        return GD_OK;
    }
    if (n < 3 || !parse_u64(&f[2], &m->seq))
        return bad(why, cap, "missing or malformed seq");
    if (frame_is(cmd, "PING")) {
        m->type = GDW_PING;
        return n == 3 ? GD_OK : bad(why, cap, "PING: wrong frame count");
    }
    if (frame_is(cmd, "LEASE") || frame_is(cmd, "STOP")) {
        m->type = frame_is(cmd, "LEASE") ? GDW_LEASE : GDW_STOP;
        uint64_t d, echo = 0, rem = 0;
        bool remote = m->type == GDW_LEASE && n == 6;
        if ((n != 4 && !remote) || !parse_u64(&f[3], &d) || d > (uint64_t)INT64_MAX ||
            (remote && (!parse_u64(&f[4], &echo) || !parse_u64(&f[5], &rem) ||
                        echo > (uint64_t)INT64_MAX / 2 || rem > (uint64_t)INT64_MAX / 2)))
            return bad(why, cap, "LEASE/STOP: want seq and a deadline in ms (LEASE: and "
                       "echo, remaining)");
        m->deadline_ms = (int64_t)d;
        m->has_remote = remote;
        m->echo_ms = (int64_t)echo;
        m->remaining_ms = (int64_t)rem;
        return GD_OK;
    }
    if (frame_is(cmd, "REVOKE")) {
        m->type = GDW_REVOKE;
        if (n != 4)
            return bad(why, cap, "REVOKE: wrong frame count");
        return parse_shard_frame(&f[3], m, why, cap);
    }
    if (frame_is(cmd, "ASSIGN")) {
        m->type = GDW_ASSIGN;
        if (n != 5)
            return bad(why, cap, "ASSIGN: wrong frame count");
        gd_err rc = parse_shard_frame(&f[3], m, why, cap);
        if (rc != GD_OK)
            return rc;
        if (f[4].len == 0)
            return GD_OK;
        m->pending = cJSON_ParseWithLength(f[4].data, f[4].len);
        if (!m->pending)
            return bad(why, cap, "ASSIGN: pending keys are not JSON");
        if ((rc = gdw_check_pending(m->pending, why, cap)) != GD_OK) {
            gdw_msg_clear(m);
            return rc;
        }
        return GD_OK;
    }
    return bad(why, cap, "unknown command");
}

void gdw_msg_clear(gdw_msg *m)
{
    cJSON_Delete(m->pending);
    m->pending = NULL;
}
