/* gd_log.c — one structured line per event (logfmt or JSON), secrets redacted.
 *
 * A line is formatted into a stack buffer and handed to write(2) once, under a mutex, so
 * lines from threads never interleave and a forked child (nginx-style) logs its own pid. */
#include "gd_log.h"
#include "gd_time.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINE_MAX 8192
#define LOG_RESERVE  48  /* room kept for closing quote, truncation marker, '}' and '\n' */

static char log_role[32] = "godis";
static atomic_int log_min_level = GD_LOG_INFO;
static atomic_int log_json;
static atomic_int log_fd = 2;
static pthread_mutex_t log_write_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t log_atfork_once = PTHREAD_ONCE_INIT;

/* A fork while another thread holds the write lock would leave the child's copy locked
 * forever; holding it across fork() guarantees both sides start unlocked. */
static void log_lock(void) { pthread_mutex_lock(&log_write_mu); }
static void log_unlock(void) { pthread_mutex_unlock(&log_write_mu); }
static void log_register_atfork(void) { pthread_atfork(log_lock, log_unlock, log_unlock); }

static const char *const level_names[] = { "debug", "info", "warn", "error" };

void gd_log_init(const char *role, gd_log_level min_level, int json, int fd)
{
    snprintf(log_role, sizeof log_role, "%s", role ? role : "godis");
    atomic_store(&log_min_level, min_level);
    atomic_store(&log_json, json ? 1 : 0);
    atomic_store(&log_fd, fd);
}

void gd_log_set_level(gd_log_level lvl) { atomic_store(&log_min_level, lvl); }

int gd_log_level_parse(const char *s)
{
    if (!s)
        return -1;
    for (int i = 0; i < 4; i++)
        if (strcasecmp(s, level_names[i]) == 0)
            return i;
    if (strcasecmp(s, "warning") == 0)
        return GD_LOG_WARN;
    return -1;
}

/* ---- redaction ---- */

/* Substrings of a key (case-insensitive) whose value is never printed. Not plain "key":
 * reconcile keys ("ns/name") are logged under "key" all the time. */
static const char *const secret_key_parts[] = {
    "token", "password", "passwd", "secret", "key-data", "key_data", "keydata",
    "cert-data", "cert_data", "certdata", "authorization", "bearer", "credential",
    "private-key", "private_key", "privatekey",
};

static bool is_secret_key(const char *key)
{
    for (size_t i = 0; i < sizeof secret_key_parts / sizeof *secret_key_parts; i++)
        if (strcasestr(key, secret_key_parts[i]))
            return true;
    return false;
}

/* A value that looks like a credential whatever its key is called. */
static bool is_secret_value(const char *v)
{
    return strcasestr(v, "bearer ") || strstr(v, "-----BEGIN");
}

/* ---- a capped writer ---- */

typedef struct {
    char *buf;
    int cap, pos, limit;  /* limit = cap - LOG_RESERVE: body text stops here */
    bool truncated;
    int nfields;          /* the first field has no separator before it */
} line_writer;

static void put_raw(line_writer *w, const char *s, int n, bool reserved)
{
    int end = reserved ? w->cap - 1 : w->limit;
    if (w->pos + n > end) {
        w->truncated = true;
        n = end - w->pos;
        if (n <= 0)
            return;
    }
    memcpy(w->buf + w->pos, s, (size_t)n);
    w->pos += n;
}

static void put_str(line_writer *w, const char *s) { put_raw(w, s, (int)strlen(s), false); }

static bool needs_quotes(const char *v)
{
    if (!*v)
        return true;
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p <= ' ' || *p == '"' || *p == '=' || *p == '\\' || *p == 0x7f)
            return true;
    return false;
}

/* Escapes one value; an escape sequence is written whole or not at all, and a cut never
 * leaves half a UTF-8 character behind. */
static void put_escaped(line_writer *w, const char *v, bool json)
{
    int start = w->pos;
    for (const unsigned char *p = (const unsigned char *)v; *p && !w->truncated; p++) {
        char esc[8];
        int n;
        switch (*p) {
        case '"':  n = snprintf(esc, sizeof esc, "\\\""); break;
        case '\\': n = snprintf(esc, sizeof esc, "\\\\"); break;
        case '\n': n = snprintf(esc, sizeof esc, "\\n"); break;
        case '\r': n = snprintf(esc, sizeof esc, "\\r"); break;
        case '\t': n = snprintf(esc, sizeof esc, "\\t"); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                n = snprintf(esc, sizeof esc, json ? "\\u%04x" : "\\x%02x", *p);
            else {
                esc[0] = (char)*p;
                n = 1;
            }
        }
        if (w->pos + n > w->limit) {
            w->truncated = true;
            break;
        }
        put_raw(w, esc, n, false);
    }
    if (w->truncated) {
        while (w->pos > start && ((unsigned char)w->buf[w->pos - 1] & 0xC0) == 0x80)
            w->pos--;
        if (w->pos > start && (unsigned char)w->buf[w->pos - 1] >= 0xC0)
            w->pos--;
    }
}

/* Returns false (having written nothing) when not even the opening quote fits. */
static bool put_value(line_writer *w, const char *v, bool json)
{
    bool quote = json || needs_quotes(v);
    if (quote) {
        put_str(w, "\"");
        if (w->truncated)
            return false;
    }
    put_escaped(w, v, json);
    if (quote)
        put_raw(w, "\"", 1, true);  /* always closed, from the reserve */
    return true;
}

/* Keys come from code, but keep them well-formed anyway: anything odd becomes '_'. */
static void put_key(line_writer *w, const char *k, bool json)
{
    char tmp[64];
    size_t n = 0;
    for (; k[n] && n < sizeof tmp - 1; n++) {
        unsigned char c = (unsigned char)k[n];
        tmp[n] = (isalnum(c) || c == '_' || c == '-' || c == '.' || c == '/') ? (char)c : '_';
    }
    tmp[n] = 0;
    if (n == 0)
        snprintf(tmp, sizeof tmp, "_");
    if (w->nfields > 0)
        put_str(w, json ? "," : " ");
    if (json) {
        put_str(w, "\"");
        put_str(w, tmp);
        put_str(w, "\":");
    } else {
        put_str(w, tmp);
        put_str(w, "=");
    }
}

/* A field is written whole or, when even its start does not fit, not at all: a key
 * without its value would break JSON. raw values (numbers, our own timestamps) are written
 * verbatim and unredacted. */
static void put_field_ex(line_writer *w, const char *k, const char *v, bool json, bool raw)
{
    if (w->truncated)
        return;
    int saved = w->pos;
    put_key(w, k, json);
    if (!w->truncated) {
        if (!v) {
            put_str(w, json ? "null" : "\"\"");
        } else if (raw) {
            put_str(w, v);
        } else if (put_value(w, is_secret_key(k) || is_secret_value(v) ? "<redacted>" : v, json)) {
            w->nfields++;
            return;
        }
    }
    if (w->truncated)
        w->pos = saved;
    else
        w->nfields++;
}

static void put_field(line_writer *w, const char *k, const char *v, bool json)
{
    put_field_ex(w, k, v, json, false);
}

static int format_line(char *buf, int cap, gd_log_level lvl, const char *msg, va_list *kv)
{
    if (!buf || cap <= 0)
        return 0;
    if (cap < LOG_RESERVE * 2) {  /* too small for a meaningful line */
        buf[0] = 0;
        return 0;
    }
    bool json = atomic_load(&log_json);
    line_writer w = { buf, cap, 0, cap - LOG_RESERVE, false, 0 };
    if ((int)lvl < 0 || (int)lvl > GD_LOG_ERROR)
        lvl = GD_LOG_ERROR;

    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char tsbuf[32];
    gd_format_rfc3339_micro((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000, tsbuf);
    memmove(tsbuf + 23, tsbuf + 26, 2);  /* keep milliseconds: ...03.123Z */
    char pid[24];
    snprintf(pid, sizeof pid, "%d", (int)getpid());

    if (json)
        put_str(&w, "{");
    put_field_ex(&w, "ts", tsbuf, json, !json);
    put_field_ex(&w, "level", level_names[lvl], json, !json);
    put_field_ex(&w, "role", log_role, json, false);
    put_field_ex(&w, "pid", pid, json, true);
    put_field(&w, "msg", msg ? msg : "", json);
    if (kv) {
        for (;;) {
            const char *k = va_arg(*kv, const char *);
            if (!k)
                break;
            const char *v = va_arg(*kv, const char *);
            put_field(&w, k, v, json);
        }
    }
    if (w.truncated) {
        const char *mark = json ? ",\"truncated\":true" : " truncated=true";
        if (w.nfields == 0)
            mark++;  /* no separator before the first field */
        put_raw(&w, mark, (int)strlen(mark), true);
    }
    if (json)
        put_raw(&w, "}", 1, true);
    put_raw(&w, "\n", 1, true);
    buf[w.pos] = 0;
    return w.pos;
}

int gd_log_format(char *buf, int cap, gd_log_level lvl, const char *msg, va_list kv)
{
    va_list cp;
    va_copy(cp, kv);
    int n = format_line(buf, cap, lvl, msg, &cp);
    va_end(cp);
    return n;
}

static void emit(const char *line, int len)
{
    int fd = atomic_load(&log_fd);
    pthread_once(&log_atfork_once, log_register_atfork);
    pthread_mutex_lock(&log_write_mu);
    int saved = errno;  /* logging must not disturb the caller's errno */
    while (len > 0) {
        ssize_t n = write(fd, line, (size_t)len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        line += n;
        len -= (int)n;
    }
    errno = saved;
    pthread_mutex_unlock(&log_write_mu);
}

void gd_logv(gd_log_level lvl, const char *msg, va_list kv)
{
    if ((int)lvl < atomic_load(&log_min_level))
        return;
    char line[LOG_LINE_MAX];
    int n = gd_log_format(line, sizeof line, lvl, msg, kv);
    emit(line, n);
}

void gd_log(gd_log_level lvl, const char *msg, ...)
{
    va_list ap;
    va_start(ap, msg);
    gd_logv(lvl, msg, ap);
    va_end(ap);
}

void gd_logf(gd_log_level lvl, const char *fmt, ...)
{
    if ((int)lvl < atomic_load(&log_min_level))
        return;
    char msg[LOG_LINE_MAX / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char line[LOG_LINE_MAX];
    int n = format_line(line, sizeof line, lvl, msg, NULL);
    emit(line, n);
}
