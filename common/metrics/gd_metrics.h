/* gd_metrics.h — the one Prometheus text writer (exposition format 0.0.4) of the three
 * processes: a growable text buffer, family headers, samples and fixed-bucket histograms.
 * Counters are kept by their owners. Only the manager has an HTTP server: the worker's text
 * travels to it in PONG (PROTOCOL.md §2), the informers' in STATS, and the manager merges
 * them with its own (manager/promtext.c) on /metrics. */
#ifndef GD_METRICS_H
#define GD_METRICS_H
#include <stddef.h>
#include <stdint.h>
#include "gd_err.h"

/* Growable NUL-terminated string. A failed allocation sets oom and later appends do nothing,
 * so callers check once at the end. */
typedef struct {
    char *buf;
    size_t len, cap;
    int oom;
} gd_sbuf;
void  gd_sbuf_init(gd_sbuf *b);
void  gd_sbuf_free(gd_sbuf *b);
void  gd_sbuf_putf(gd_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void  gd_sbuf_put(gd_sbuf *b, const char *s);
/* Returns the string and hands ownership to the caller (NULL after oom). */
char *gd_sbuf_detach(gd_sbuf *b);

#define GD_HIST_MAX_BUCKETS 48
typedef struct {
    int nbounds;
    double bounds[GD_HIST_MAX_BUCKETS];    /* upper bounds, ascending; +Inf is implicit */
    uint64_t counts[GD_HIST_MAX_BUCKETS + 1];
    uint64_t count;
    double sum;
} gd_hist;
/* prometheus.ExponentialBuckets(start, factor, n) */
void gd_hist_init_exponential(gd_hist *h, double start, double factor, int n);
void gd_hist_init_bounds(gd_hist *h, const double *bounds, int n);
void gd_hist_observe(gd_hist *h, double v);

/* Writes "# HELP"/"# TYPE" once per family. */
void gd_prom_header(gd_sbuf *b, const char *name, const char *type, const char *help);
/* labels: preformatted `controller="x",result="y"` (no braces), may be "". */
void gd_prom_sample(gd_sbuf *b, const char *name, const char *labels, double v);
/* The same for an integer counter or gauge, printed exactly (no exponent form). */
void gd_prom_sample_int(gd_sbuf *b, const char *name, const char *labels, long long v);
/* A table of integer figures, rendered family by family: a row with a name starts a family
 * (its # HELP and # TYPE), a row with name NULL is one more sample of the family above. */
typedef struct {
    const char *name, *type, *help, *labels;    /* labels may be NULL */
    long long v;
} gd_prom_int;
void gd_prom_ints(gd_sbuf *b, const gd_prom_int *rows, size_t n);
void gd_prom_hist(gd_sbuf *b, const char *name, const char *labels, const gd_hist *h);
/* Escapes a label value (backslash, quote, newline) into out; truncates to cap. */
void gd_prom_escape(const char *in, char *out, size_t cap);

#endif
