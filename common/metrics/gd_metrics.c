/* gd_metrics.c — see gd_metrics.h. */
#include "gd_metrics.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gd_sbuf_init(gd_sbuf *b) { memset(b, 0, sizeof *b); }

void gd_sbuf_free(gd_sbuf *b)
{
    free(b->buf);
    memset(b, 0, sizeof *b);
}

static int reserve(gd_sbuf *b, size_t extra)
{
    if (b->oom)
        return -1;
    if (b->len + extra + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *nb = realloc(b->buf, cap);
    if (!nb) {
        b->oom = 1;
        return -1;
    }
    b->buf = nb;
    b->cap = cap;
    return 0;
}

void gd_sbuf_putf(gd_sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || reserve(b, (size_t)n) < 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void gd_sbuf_put(gd_sbuf *b, const char *s)
{
    size_t n = strlen(s);
    if (reserve(b, n) < 0)
        return;
    memcpy(b->buf + b->len, s, n + 1);
    b->len += n;
}

char *gd_sbuf_detach(gd_sbuf *b)
{
    char *s = NULL;
    if (!b->oom) {
        if (!b->buf && reserve(b, 0) == 0)
            b->buf[0] = '\0';
        s = b->buf;
        b->buf = NULL;
    }
    gd_sbuf_free(b);
    return s;
}

void gd_hist_init_exponential(gd_hist *h, double start, double factor, int n)
{
    memset(h, 0, sizeof *h);
    if (n > GD_HIST_MAX_BUCKETS)
        n = GD_HIST_MAX_BUCKETS;
    double v = start;
    for (int i = 0; i < n; i++, v *= factor)
        h->bounds[i] = v;
    h->nbounds = n;
}

void gd_hist_init_bounds(gd_hist *h, const double *bounds, int n)
{
    memset(h, 0, sizeof *h);
    if (n > GD_HIST_MAX_BUCKETS)
        n = GD_HIST_MAX_BUCKETS;
    memcpy(h->bounds, bounds, (size_t)n * sizeof *bounds);
    h->nbounds = n;
}

void gd_hist_observe(gd_hist *h, double v)
{
    int i = 0;
    while (i < h->nbounds && v > h->bounds[i])
        i++;
    h->counts[i]++;     /* non-cumulative here; rendering accumulates */
    h->count++;
    h->sum += v;
}

void gd_prom_header(gd_sbuf *b, const char *name, const char *type, const char *help)
{
    gd_sbuf_putf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Go's strconv.FormatFloat(v, 'g', -1, 64), which Prometheus uses: the fewest digits that
 * read back as the same double, in %e form when the decimal exponent is < -4 or >= 6:
 * 0.005 → "0.005", 10 → "10", 1e6 → "1e+06", 1e-5 → "1e-05". */
static void put_value(gd_sbuf *b, double v)
{
    if (isinf(v)) {
        gd_sbuf_put(b, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (isnan(v)) {
        gd_sbuf_put(b, "NaN");
        return;
    }
    char tmp[48];
    int prec = 1;
    for (; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    if (prec > 17)
        prec = 17;
    const char *e = strchr(tmp, 'e');
    int exp = e ? atoi(e + 1) : 0;
    if (v != 0 && exp >= -4 && exp < 6) {
        int decimals = prec - 1 - exp;
        snprintf(tmp, sizeof tmp, "%.*f", decimals > 0 ? decimals : 0, v);
    } else if (v == 0) {
        snprintf(tmp, sizeof tmp, "0");
    }
    gd_sbuf_put(b, tmp);
}

void gd_prom_sample(gd_sbuf *b, const char *name, const char *labels, double v)
{
    if (labels && *labels)
        gd_sbuf_putf(b, "%s{%s} ", name, labels);
    else
        gd_sbuf_putf(b, "%s ", name);
    put_value(b, v);
    gd_sbuf_put(b, "\n");
}

void gd_prom_sample_int(gd_sbuf *b, const char *name, const char *labels, long long v)
{
    if (labels && *labels)
        gd_sbuf_putf(b, "%s{%s} %lld\n", name, labels, v);
    else
        gd_sbuf_putf(b, "%s %lld\n", name, v);
}

void gd_prom_ints(gd_sbuf *b, const gd_prom_int *rows, size_t n)
{
    const char *family = NULL;
    for (size_t i = 0; i < n; i++) {
        if (rows[i].name) {
            family = rows[i].name;
            gd_prom_header(b, family, rows[i].type, rows[i].help);
        }
        if (family)
            gd_prom_sample_int(b, family, rows[i].labels, rows[i].v);
    }
}

void gd_prom_hist(gd_sbuf *b, const char *name, const char *labels, const gd_hist *h)
{
    const char *sep = (labels && *labels) ? "," : "";
    const char *lab = labels ? labels : "";
    uint64_t cum = 0;
    for (int i = 0; i <= h->nbounds; i++) {
        cum += h->counts[i];
        gd_sbuf_putf(b, "%s_bucket{%s%sle=\"", name, lab, sep);
        if (i < h->nbounds)
            put_value(b, h->bounds[i]);
        else
            gd_sbuf_put(b, "+Inf");
        gd_sbuf_putf(b, "\"} %llu\n", (unsigned long long)cum);
    }
    char n2[160];
    snprintf(n2, sizeof n2, "%s_sum", name);
    gd_prom_sample(b, n2, lab, h->sum);
    snprintf(n2, sizeof n2, "%s_count", name);
    gd_prom_sample(b, n2, lab, (double)h->count);
}

void gd_prom_escape(const char *in, char *out, size_t cap)
{
    size_t o = 0;
    if (cap == 0)
        return;
    for (; *in; in++) {
        const char *rep = NULL;
        char one[2] = {*in, 0};
        if (*in == '\\')
            rep = "\\\\";
        else if (*in == '"')
            rep = "\\\"";
        else if (*in == '\n')
            rep = "\\n";
        else
            rep = one;
        size_t rl = strlen(rep);
        if (o + rl >= cap)
            break;
        memcpy(out + o, rep, rl);
        o += rl;
    }
    out[o] = '\0';
}
