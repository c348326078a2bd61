/* fuzz_util.h — what every libFuzzer target shares: quiet logs, and the one input format of
 * the multi-part targets. An input is a list of records separated by 0x1E (ASCII record
 * separator); a record is a list of frames separated by 0x1F (unit separator). So a seed is
 * readable text and written with printf, and the fuzzer can split, join and reorder frames
 * (the separators are in each target's dictionary). */
#ifndef FUZZ_UTIL_H
#define FUZZ_UTIL_H
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "gd_log.h"

#define FZ_RS 0x1e
#define FZ_US 0x1f
#define FZ_MAX_FRAMES 16

typedef struct {
    const char *p[FZ_MAX_FRAMES];
    size_t len[FZ_MAX_FRAMES];
    int n;
} fz_record;

/* Logs go to /dev/null at debug level: every log line the parsers write is formatted (the
 * formatter sees the hostile values too) but none is printed. */
static inline void fz_quiet_logs(void)
{
    static int done;
    if (!done) {
        gd_log_init("fuzz", GD_LOG_DEBUG, 0, open("/dev/null", O_WRONLY | O_CLOEXEC));
        done = 1;
    }
}

/* Next record of [*pos, len) into r (frames beyond FZ_MAX_FRAMES are joined into the last
 * one). Returns 0 when the input is exhausted. */
static inline int fz_next_record(const uint8_t *d, size_t len, size_t *pos, fz_record *r)
{
    if (*pos > len || (*pos == len && len > 0))
        return 0;
    const char *s = (const char *)d + *pos;
    const char *end = memchr(s, FZ_RS, len - *pos);
    size_t rl = end ? (size_t)(end - s) : len - *pos;
    *pos += rl + 1;
    r->n = 0;
    size_t at = 0;
    while (r->n < FZ_MAX_FRAMES) {
        const char *us = r->n + 1 < FZ_MAX_FRAMES ? memchr(s + at, FZ_US, rl - at) : NULL;
        size_t fl = us ? (size_t)(us - (s + at)) : rl - at;
        r->p[r->n] = s + at;
        r->len[r->n] = fl;
        r->n++;
        if (!us)
            break;
        at += fl + 1;
    }
    return 1;
}

/* A NUL-terminated copy (malloc'd) of n bytes; the parsers that take C strings get one. */
static inline char *fz_strndup(const void *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = '\0';
    }
    return s;
}

#endif
