/* bench_reconciler.c — the "bench" reconciler set: the informer → worker → reconcile
 * pipeline benchmark (issue 5, item 8).
 *
 * Events of every kind map to the object's own key in controller "bench" (no owner lookups:
 * the replay source's ConfigMaps all carry one cluster-name). A reconcile does nothing but
 * measure: the object in the cache carries the annotation bench.godis/sent-ns, the
 * CLOCK_MONOTONIC time the replay source wrote the event (one clock for the machine), so
 * start - sent is the event → reconcile-start latency. With the workqueue's dedup a key
 * updated twice before its reconcile is reconciled once, against its newest event — so the
 * latency is that of the newest event, as a controller would see it.
 *
 * Only watch events count (the replay source lists its objects with sent-ns 0).
 * --reconciler-arg "out=<file>,warmup_ms=<n>,expect=<e>": samples of the first n ms after
 * the first event are dropped (the start-up snapshot); one JSON line is written to file
 * once e events were seen and the queue is empty (else at shutdown):
 *   {"events":E,"reconciles":R,"events_per_s":..,"reconciles_per_s":..,
 *    "latency_p50_ms":..,"latency_p99_ms":..,"latency_max_ms":..,"samples":S}
 * (rates over the span from the first to the last event / reconcile). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cache.h"
#include "gd_hoptrace.h"
#include "gd_json.h"
#include "gd_log.h"
#include "gd_time.h"
#include "reconciler.h"
#include "workqueue.h"

#define MAX_SAMPLES (4 * 1024 * 1024)

typedef struct {
    char out[512];
    int64_t warmup_ns;              /* samples during the first warmup after the first event
                                     * are not kept (start-up snapshot, cold caches) */
    long expect;                    /* write the result once this many events were seen and
                                     * the queue is empty (0: at shutdown only) */
    atomic_bool written;
    int32_t *lat_us;                /* one sample per reconcile, until MAX_SAMPLES */
    atomic_long nsamples;
    int32_t *map_us;                /* event → mapping (informer + subscriber part) */
    atomic_long nmap;
    atomic_long events, reconciles;
    _Atomic int64_t first_event_ns, last_event_ns, first_rec_ns, last_rec_ns;
} bench;

static const char *bench_kind = "ConfigMap";

static void stamp(_Atomic int64_t *first, _Atomic int64_t *last, int64_t now)
{
    int64_t zero = 0;
    atomic_compare_exchange_strong(first, &zero, now);
    atomic_store(last, now);
}

static void bench_map(void *ud, const char *kind, const cJSON *old_obj, const cJSON *new_obj,
                      gd_emit_fn emit, void *emit_ud)
{
    bench *b = ud;
    const cJSON *obj = new_obj ? new_obj : old_obj;
    gd_hop_rv(gd_meta_rv(obj), GD_HOP_MAPPED);
    char key[512];
    /* Only watch events count: the replay source lists its objects with sent-ns 0. */
    const char *sent = gd_meta_annotation(obj, "bench.godis/sent-ns");
    long long s = sent ? atoll(sent) : 0;
    if (s > 0) {
        int64_t now = gd_mono_ns();
        atomic_fetch_add(&b->events, 1);
        stamp(&b->first_event_ns, &b->last_event_ns, now);
        if (now - atomic_load(&b->first_event_ns) >= b->warmup_ns) {
            long i = atomic_fetch_add(&b->nmap, 1);
            if (i < MAX_SAMPLES)
                b->map_us[i] = (int32_t)((now - s) / 1000);
        }
    }
    if (new_obj && gd_meta_key(obj, key, sizeof key) > 0) {
        emit(emit_ud, "bench", key);
        gd_hop_rv(gd_meta_rv(obj), GD_HOP_ENQUEUED);
    }
}

static void write_result(bench *b);

static gd_result bench_reconcile(rec_ctx *ctx, const char *key)
{
    bench *b = ctx->ud;
    int64_t now = gd_mono_ns();
    atomic_fetch_add(&b->reconciles, 1);
    stamp(&b->first_rec_ns, &b->last_rec_ns, now);
    char rv[32];
    bool deleting;
    if (!cache_get_rv(ctx->env->cache, bench_kind, key, rv, sizeof rv, &deleting))
        return gd_done();
    if (gd_hoptrace_enabled)
        gd_hoptrace_record(strtoull(rv, NULL, 10), GD_HOP_RECONCILE, now);
    cJSON *obj = cache_get(ctx->env->cache, bench_kind, key);
    const char *sent = obj ? gd_meta_annotation(obj, "bench.godis/sent-ns") : NULL;
    long long s = sent ? atoll(sent) : 0;
    int64_t first = atomic_load(&b->first_event_ns);
    if (s > 0 && first && now - first >= b->warmup_ns) {
        long i = atomic_fetch_add(&b->nsamples, 1);
        if (i < MAX_SAMPLES)
            b->lat_us[i] = (int32_t)((now - s) / 1000);
    }
    cJSON_Delete(obj);
    if (b->expect > 0 && atomic_load(&b->events) >= b->expect && wq_len(controller_queue(ctx->ctrl)) == 0)
        write_result(b);
    return gd_done();
}

static gd_err bench_init(gd_worker_env *env, const char *arg, void **ud)
{
    bench *b = calloc(1, sizeof *b);
    if (!b || !(b->lat_us = malloc(sizeof(int32_t) * MAX_SAMPLES)) ||
        !(b->map_us = malloc(sizeof(int32_t) * MAX_SAMPLES))) {
        if (b)
            free(b->lat_us);
        free(b);
        return GD_ERR_NOMEM;
    }
    char *copy = strdup(arg ? arg : ""), *save = NULL;
    bool ok = copy != NULL;
    for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL; tok && ok;
         tok = strtok_r(NULL, ",", &save)) {
        char *end;
        if (strncmp(tok, "out=", 4) == 0) {
            snprintf(b->out, sizeof b->out, "%s", tok + 4);
        } else if (strncmp(tok, "expect=", 7) == 0) {
            b->expect = strtol(tok + 7, &end, 10);
            ok = *end == '\0' && b->expect >= 0;
        } else if (strncmp(tok, "warmup_ms=", 10) == 0) {
            long ms = strtol(tok + 10, &end, 10);
            ok = *end == '\0' && ms >= 0 && ms <= 600000;
            b->warmup_ns = (int64_t)ms * 1000000;
        } else {
            ok = false;
        }
    }
    free(copy);
    if (!ok) {
        gd_log(GD_LOG_ERROR, "bench: --reconciler-arg wants out=<file>,warmup_ms=<n>,expect=<e>", "arg",
               arg, NULL);
        free(b->lat_us);
        free(b->map_us);
        free(b);
        return GD_ERR_CONFIG;
    }
    *ud = b;
    return GD_OK;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static double rate(long n, int64_t first, int64_t last)
{
    return last > first ? (double)n / ((double)(last - first) / 1e9) : 0;
}

/* Sorts the samples and reads a percentile in ms. */
static double pct(int32_t *v, long n, int p)
{
    return n ? v[(n - 1) * p / 100] / 1000.0 : 0;
}

static long sorted(int32_t *v, atomic_long *count)
{
    long n = atomic_load(count);
    if (n > MAX_SAMPLES)
        n = MAX_SAMPLES;
    qsort(v, (size_t)n, sizeof *v, cmp_i32);
    return n;
}

static void write_result(bench *b)
{
    if (atomic_exchange(&b->written, true))
        return;
    long n = sorted(b->lat_us, &b->nsamples), nm = sorted(b->map_us, &b->nmap);
    char line[640];
    snprintf(line, sizeof line,
             "{\"events\":%ld,\"reconciles\":%ld,\"events_per_s\":%.1f,\"reconciles_per_s\":%.1f,"
             "\"latency_p50_ms\":%.3f,\"latency_p99_ms\":%.3f,\"latency_max_ms\":%.3f,"
             "\"samples\":%ld,\"map_latency_p50_ms\":%.3f,\"map_latency_p99_ms\":%.3f}\n",
             atomic_load(&b->events), atomic_load(&b->reconciles),
             rate(atomic_load(&b->events), b->first_event_ns, b->last_event_ns),
             rate(atomic_load(&b->reconciles), b->first_rec_ns, b->last_rec_ns), pct(b->lat_us, n, 50),
             pct(b->lat_us, n, 99), n ? b->lat_us[n - 1] / 1000.0 : 0, n, pct(b->map_us, nm, 50),
             pct(b->map_us, nm, 99));
    /* write then rename: a reader polling for the file never sees half a line */
    char tmp[540];
    snprintf(tmp, sizeof tmp, "%s.tmp", b->out);
    FILE *f = b->out[0] ? fopen(tmp, "w") : NULL;
    fputs(line, f ? f : stderr);
    if (f) {
        fclose(f);
        rename(tmp, b->out);
    }
}

static void bench_fini(void *ud)
{
    bench *b = ud;
    if (!b)
        return;
    write_result(b);
    free(b->lat_us);
    free(b->map_us);
    free(b);
}

static gd_reconciler_set bench_set = {
    .name = "bench",
    .help = "benchmark: event -> reconcile-start latency from the replay source's\n"
            "                                           bench.godis/sent-ns (out=<file>,warmup_ms=<n>)",
    .ncontrollers = 1,
    .controllers = {{"bench", "ConfigMap", bench_reconcile, NULL}},
    .init = bench_init,
    .fini = bench_fini,
    .map_event = bench_map,
};
GD_RECONCILER_SET(bench_set)
