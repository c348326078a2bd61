/* k8s_watch_decoder.c — newline-delimited watch events from arbitrarily split bytes.
 *
 * State machine with two modes:
 *   collecting: bytes of the current line are appended to buf until a '\n' arrives; the
 *               line is then parsed as one event.
 *   skipping:   the current line grew past the cap; its bytes are dropped (only counted)
 *               until its '\n', then the skip is reported once. The event is never parsed,
 *               so a consumer never sees half an object.
 * A line that fits entirely inside one fed chunk is parsed in place without copying, so
 * the common case (many small events per read) costs no memcpy. */
#include "k8s_watch_decoder.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_EVENT (16u * 1024 * 1024)

struct k8s_watch_decoder {
    size_t max_event;           /* cap on one line, excluding its '\n' */
    char  *buf;                 /* bytes of the unfinished line */
    size_t len, cap;
    int    skipping;            /* 1 while dropping an oversized line */
    size_t skipped;             /* bytes dropped so far of that line */
    k8s_watch_event_fn on_event;
    k8s_watch_error_fn on_error;
    k8s_watch_line_fn on_line;
    void  *ud;
};

k8s_watch_decoder *k8s_watch_decoder_new(size_t max_event_bytes, k8s_watch_event_fn on_event,
                                         k8s_watch_error_fn on_error, void *ud)
{
    if (!on_event)
        return NULL;
    k8s_watch_decoder *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->max_event = max_event_bytes ? max_event_bytes : DEFAULT_MAX_EVENT;
    d->on_event = on_event;
    d->on_error = on_error;
    d->ud = ud;
    return d;
}

void k8s_watch_decoder_set_line_fn(k8s_watch_decoder *d, k8s_watch_line_fn fn)
{
    d->on_line = fn;
}

void k8s_watch_decoder_destroy(k8s_watch_decoder **d)
{
    if (!d || !*d)
        return;
    free((*d)->buf);
    free(*d);
    *d = NULL;
}

size_t k8s_watch_decoder_pending(const k8s_watch_decoder *d)
{
    if (!d)
        return 0;
    return d->skipping ? d->skipped : d->len;
}

static void report(k8s_watch_decoder *d, gd_err err, const char *what)
{
    if (d->on_error)
        d->on_error(d->ud, err, what);
}

/* Copies up to 80 bytes of a bad line into out as printable ASCII, for the error text. */
static void snippet(char *out, size_t cap, const char *s, size_t n)
{
    size_t j = 0;
    for (size_t i = 0; i < n && j + 4 < cap && i < 80; i++) {
        unsigned char ch = (unsigned char)s[i];
        out[j++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
    }
    if (n > 80 && j + 4 < cap) {
        memcpy(out + j, "...", 3);
        j += 3;
    }
    out[j] = '\0';
}

/* Parses one complete line (without '\n'). Returns GD_ERR_CANCELLED when the consumer asks
 * to stop, GD_OK otherwise (bad lines are reported and dropped). */
static gd_err handle_line(k8s_watch_decoder *d, const char *line, size_t n)
{
    while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
        n--;
    size_t lead = 0;
    while (lead < n && (line[lead] == ' ' || line[lead] == '\t' || line[lead] == '\r'))
        lead++;
    if (lead == n)
        return GD_OK;                         /* blank line: keep-alive, not an event */
    line += lead;
    n -= lead;
    if (d->on_line) {
        int r = d->on_line(d->ud, line, n);
        if (r != 0)
            return r < 0 ? GD_ERR_CANCELLED : GD_OK;
    }

    char what[192], snip[96];
    const char *end = NULL;
    /* cJSON would skip a NUL as whitespace; JSON text never contains one */
    cJSON *ev = memchr(line, '\0', n) ? NULL : cJSON_ParseWithLengthOpts(line, n, &end, 0);
    if (!ev || (size_t)(end - line) != n) {
        snippet(snip, sizeof snip, line, n);
        snprintf(what, sizeof what, "watch event is not valid JSON (%zu bytes): %s", n, snip);
        cJSON_Delete(ev);
        report(d, GD_ERR_PARSE, what);
        return GD_OK;
    }
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(ev, "type");
    cJSON *obj = cJSON_GetObjectItemCaseSensitive(ev, "object");
    if (!cJSON_IsObject(ev) || !cJSON_IsString(type) || !type->valuestring[0] ||
        !cJSON_IsObject(obj)) {
        snippet(snip, sizeof snip, line, n);
        snprintf(what, sizeof what, "watch event lacks a string \"type\" or an \"object\": %s",
                 snip);
        cJSON_Delete(ev);
        report(d, GD_ERR_PARSE, what);
        return GD_OK;
    }
    int stop = d->on_event(d->ud, type->valuestring, obj);
    cJSON_Delete(ev);
    return stop ? GD_ERR_CANCELLED : GD_OK;
}

/* Appends to the pending line; the caller has checked the cap. */
static gd_err append(k8s_watch_decoder *d, const char *p, size_t n)
{
    if (d->len + n > d->cap) {
        size_t ncap = d->cap ? d->cap : 4096;
        while (ncap < d->len + n)
            ncap *= 2;
        if (ncap > d->max_event)
            ncap = d->max_event;
        char *nb = realloc(d->buf, ncap);
        if (!nb)
            return GD_ERR_NOMEM;
        d->buf = nb;
        d->cap = ncap;
    }
    memcpy(d->buf + d->len, p, n);
    d->len += n;
    return GD_OK;
}

static void start_skip(k8s_watch_decoder *d, size_t already)
{
    d->skipping = 1;
    d->skipped = already;
    d->len = 0;
    /* Give back a huge buffer: one oversized line should not pin 16 MiB forever. */
    if (d->cap > 64 * 1024) {
        free(d->buf);
        d->buf = NULL;
        d->cap = 0;
    }
}

static void finish_skip(k8s_watch_decoder *d)
{
    char what[160];
    snprintf(what, sizeof what, "watch event of %zu bytes exceeds the cap of %zu bytes; skipped",
             d->skipped, d->max_event);
    d->skipping = 0;
    d->skipped = 0;
    report(d, GD_ERR_TOO_LARGE, what);
}

gd_err k8s_watch_decoder_feed(k8s_watch_decoder *d, const char *buf, size_t len)
{
    if (!d || (!buf && len))
        return GD_ERR_ARG;
    while (len > 0) {
        const char *nl = memchr(buf, '\n', len);
        size_t seg = nl ? (size_t)(nl - buf) : len;   /* bytes of the line in this chunk */
        size_t used = nl ? seg + 1 : seg;

        if (d->skipping) {
            d->skipped += seg;
            if (nl)
                finish_skip(d);
        } else if (d->len + seg > d->max_event) {
            start_skip(d, d->len + seg);
            if (nl)
                finish_skip(d);
        } else if (!nl) {
            gd_err e = append(d, buf, seg);
            if (e != GD_OK)
                return e;
        } else if (d->len == 0) {
            gd_err e = handle_line(d, buf, seg);       /* whole line in this chunk: no copy */
            if (e != GD_OK)
                return e;
        } else {
            gd_err e = append(d, buf, seg);
            if (e != GD_OK)
                return e;
            size_t n = d->len;
            d->len = 0;                                /* reset before the callback runs */
            e = handle_line(d, d->buf, n);
            if (e != GD_OK)
                return e;
        }
        buf += used;
        len -= used;
    }
    return GD_OK;
}
