/* metrics.h — just enough Prometheus for the worker: a growable text buffer, counters kept by
 * their owners, and fixed-bucket histograms rendered in the text exposition format 0.0.4.
 * The worker has no HTTP server: the text travels to the manager in PONG (PROTOCOL.md §2),
 * which serves it on /metrics. */
#ifndef WORKER_METRICS_H
#define WORKER_METRICS_H
#include <stddef.h>
#include <stdint.h>
#include "gd_err.h"

/* Growable NUL-terminated string. A failed allocation sets oom and later appends do nothing,
 * so callers check once at the end. */
typedef struct {
    char *buf;
    size_t len, cap;
    int oom;
} sbuf;
void  sbuf_init(sbuf *b);
void  sbuf_free(sbuf *b);
void  sbuf_putf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void  sbuf_put(sbuf *b, const char *s);
/* Returns the string and hands ownership to the caller (NULL after oom). */
char *sbuf_detach(sbuf *b);

#define HIST_MAX_BUCKETS 48
typedef struct {
    int nbounds;
    double bounds[HIST_MAX_BUCKETS];    /* upper bounds, ascending; +Inf is implicit */
    uint64_t counts[HIST_MAX_BUCKETS + 1];
    uint64_t count;
    double sum;
} histogram;
/* prometheus.ExponentialBuckets(start, factor, n) */
void hist_init_exponential(histogram *h, double start, double factor, int n);
void hist_init_bounds(histogram *h, const double *bounds, int n);
void hist_observe(histogram *h, double v);

/* Writes "# HELP"/"# TYPE" once per family. */
void metrics_header(sbuf *b, const char *name, const char *type, const char *help);
/* labels: preformatted `controller="x",result="y"` (no braces), may be "". */
void metrics_sample(sbuf *b, const char *name, const char *labels, double v);
void metrics_hist(sbuf *b, const char *name, const char *labels, const histogram *h);
/* Escapes a label value (backslash, quote, newline) into out; truncates to cap. */
void metrics_escape(const char *in, char *out, size_t cap);

#endif
