/* bench_reconciler.c — the "bench" reconciler set: the informer → worker → reconcile
 * pipeline benchmark (issue 5, item 8), linked only into bin/tests/godis-worker (a
 * subfolder, so bin/bench does not link it), never into the shipped worker.
 *
 * Events of every kind map to the object's own key in controller "bench" (no owner lookups:
 * the replay source's ConfigMaps all carry one cluster-name). A reconcile does nothing but
 * measure: the object in the cache carries the annotation bench.godis/sent-ns, the
 * CLOCK_MONOTONIC time the replay source wrote the event (one clock for the machine), so
 * start - sent is the event → reconcile-start latency. With the workqueue's dedup a key
 * updated twice before its reconcile is reconciled once, against its newest event — so the
 * latency is that of the newest event, as a controller would see it.
 *
 * Only watch events count (the replay source lists its objects with sent-ns 0), each once.
 * --reconciler-arg "out=<file>,warmup_ms=<n>,expect=<e>[,objects=<n>][,work_us=<n>]": samples
 * of the first n ms after the first event are dropped (the start-up snapshot); work_us makes
 * every reconcile sleep that long after it measured (an API round trip: the resync benchmark
 * needs reconciles slower than the feed, as real ones are, for the queue to fill). With
 * objects, each event gives one sample, at the first reconcile that sees its state: a resync
 * reconciling the object again later is not a new event. With objects (the
 * replay's --objects; expect is its --events) the run is complete once every object was
 * reconciled at the resourceVersion of its last event — whether each event arrived on its
 * own or a resync (gap, start-up) folded several into one; events never mapped one by one
 * are reported as events_missed, objects never reconciled at their final state as
 * keys - keys_final (a silent loss: must be 0). Without objects: once e events were seen
 * and the queue is empty. One JSON line is written to file then (else at shutdown):
 *   {"complete":true|false|null,"keys_final":K,"keys":N,"events_missed":M,
 *    "events":E,"reconciles":R,"events_per_s":..,"reconciles_per_s":..,
 *    "latency_p50_ms":..,"latency_p99_ms":..,"latency_p999_ms":..,"latency_max_ms":..,"samples":S,
 *    "map_latency_p50_ms":..,"map_latency_p99_ms":..}
 * (rates over the span from the first to the last event / reconcile). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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
    long expect;                    /* events the replay source writes */
    long objects;                   /* objects it cycles over (0: unknown, see below) */
    int64_t work_ns;                /* each reconcile sleeps this long (work_us) */
    atomic_bool written;
    int32_t *lat_us;                /* one sample per reconcile, until MAX_SAMPLES */
    atomic_long nsamples;
    int32_t *map_us;                /* event → mapping (informer + subscriber part) */
    atomic_long nmap;
    atomic_long events, reconciles;
    atomic_uchar *seen;             /* [expect]: event e was mapped (distinct count) */
    atomic_uchar *sampled;          /* [expect]: event e's reconcile-start was sampled */
    atomic_uchar *final;            /* [objects]: the object's last event was reconciled */
    atomic_long nfinal;
    _Atomic int64_t first_event_ns, last_event_ns, first_rec_ns, last_rec_ns;
} bench;

static const char *bench_kind = "ConfigMap";

static void stamp(_Atomic int64_t *first, _Atomic int64_t *last, int64_t now)
{
    int64_t zero = 0;
    atomic_compare_exchange_strong(first, &zero, now);
    atomic_store(last, now);
}

/* The replay source's event e (0-based) modifies object e % objects to resourceVersion
 * objects + 1 + e. So an event's index follows from its rv, and so does the last rv each
 * object reaches. -1 when rv is not one of the replay's events. */
static long event_of_rv(const bench *b, long long rv)
{
    long e = (long)(rv - b->objects - 1);
    return b->objects > 0 && e >= 0 && e < b->expect ? e : -1;
}

static long long final_rv_of(const bench *b, long i)
{
    if (i >= b->expect)
        return i + 1;                                   /* never modified: its list rv */
    long last = i + b->objects * ((b->expect - 1 - i) / b->objects);
    return b->objects + 1 + last;
}

/* Object index from the key "<ns>/cm-<i>"; -1 when not a replay object. */
static long object_of_key(const bench *b, const char *key)
{
    const char *dash = strrchr(key, '-');
    char *end;
    long i = dash ? strtol(dash + 1, &end, 10) : -1;
    return dash && *end == '\0' && i >= 0 && i < b->objects ? i : -1;
}

static void bench_map(void *ud, const char *kind, const cJSON *old_obj, const cJSON *new_obj,
                      gd_emit_fn emit, void *emit_ud)
{
    bench *b = ud;
    const cJSON *obj = new_obj ? new_obj : old_obj;
    gd_hop_rv(gd_meta_rv(obj), GD_HOP_MAPPED);
    char key[512];
    /* Only watch events count: the replay source lists its objects with sent-ns 0. Each
     * event once: a resync (start-up, gap) maps objects again with the stamp of an event
     * that may already have been seen. */
    const char *sent = gd_meta_annotation(obj, "bench.godis/sent-ns");
    long long s = sent ? atoll(sent) : 0;
    long e = b->seen ? event_of_rv(b, atoll(gd_meta_rv(obj))) : -1;
    bool fresh = s > 0 && (!b->seen || (e >= 0 && !atomic_exchange(&b->seen[e], 1)));
    if (fresh) {
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

typedef struct {
    long long rv, sent;
} cached_stamp;

static void read_stamp(void *ud, const cJSON *obj)
{
    cached_stamp *cs = ud;
    const char *sent = gd_meta_annotation(obj, "bench.godis/sent-ns");
    cs->sent = sent ? atoll(sent) : 0;
    cs->rv = atoll(gd_meta_rv(obj));
}

static gd_result bench_reconcile(rec_ctx *ctx, const char *key)
{
    bench *b = ctx->ud;
    int64_t now = gd_mono_ns();
    atomic_fetch_add(&b->reconciles, 1);
    stamp(&b->first_rec_ns, &b->last_rec_ns, now);
    /* the object is read in place, as client-go's indexer hands out its pointer */
    cached_stamp cs = {0, 0};
    if (!cache_read(ctx->env->cache, bench_kind, key, read_stamp, &cs))
        return gd_done();
    if (gd_hoptrace_enabled)
        gd_hoptrace_record((uint64_t)cs.rv, GD_HOP_RECONCILE, now);
    int64_t first = atomic_load(&b->first_event_ns);
    long ev = b->sampled ? event_of_rv(b, cs.rv) : -1;
    bool again = ev >= 0 && atomic_exchange(&b->sampled[ev], 1);
    if (cs.sent > 0 && first && now - first >= b->warmup_ns && !again) {
        long i = atomic_fetch_add(&b->nsamples, 1);
        if (i < MAX_SAMPLES)
            b->lat_us[i] = (int32_t)((now - cs.sent) / 1000);
    }
    long obj = b->final ? object_of_key(b, key) : -1;
    if (obj >= 0 && cs.rv == final_rv_of(b, obj) && !atomic_exchange(&b->final[obj], 1) &&
        atomic_fetch_add(&b->nfinal, 1) + 1 == b->objects)
        write_result(b);        /* every object reconciled at its last event: done */
    else if (!b->final && b->expect > 0 && atomic_load(&b->events) >= b->expect &&
             wq_len(controller_queue(ctx->ctrl)) == 0)
        write_result(b);
    if (b->work_ns > 0) {
        struct timespec ts = {b->work_ns / 1000000000, b->work_ns % 1000000000};
        while (nanosleep(&ts, &ts) != 0) {}     /* EINTR: sleep the rest */
    }
    return gd_done();
}

static void bench_free(bench *b)
{
    free(b->lat_us);
    free(b->map_us);
    free((void *)b->seen);
    free((void *)b->sampled);
    free((void *)b->final);
    free(b);
}

static gd_err bench_init(gd_worker_env *env, const char *arg, void **ud)
{
    bench *b = calloc(1, sizeof *b);
    if (!b || !(b->lat_us = malloc(sizeof(int32_t) * MAX_SAMPLES)) ||
        !(b->map_us = malloc(sizeof(int32_t) * MAX_SAMPLES))) {
        if (b)
            bench_free(b);
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
        } else if (strncmp(tok, "objects=", 8) == 0) {
            b->objects = strtol(tok + 8, &end, 10);
            ok = *end == '\0' && b->objects >= 0 && b->objects <= 10000000;
        } else if (strncmp(tok, "work_us=", 8) == 0) {
            long us = strtol(tok + 8, &end, 10);
            ok = *end == '\0' && us >= 0 && us <= 10000000;
            b->work_ns = (int64_t)us * 1000;
        } else if (strncmp(tok, "warmup_ms=", 10) == 0) {
            long ms = strtol(tok + 10, &end, 10);
            ok = *end == '\0' && ms >= 0 && ms <= 600000;
            b->warmup_ns = (int64_t)ms * 1000000;
        } else {
            ok = false;
        }
    }
    free(copy);
    if (ok && b->objects > 0 && b->expect > 0 && b->expect <= 100000000) {
        b->seen = calloc((size_t)b->expect, 1);
        b->final = calloc((size_t)b->objects, 1);
        b->sampled = calloc((size_t)b->expect, 1);
        ok = b->seen && b->final && b->sampled;
    }
    if (!ok) {
        gd_log(GD_LOG_ERROR, "bench: --reconciler-arg wants "
               "out=<file>,warmup_ms=<n>,expect=<events>[,objects=<n>]", "arg", arg, NULL);
        bench_free(b);
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

/* Reads a percentile, in per mille (990: p99, 999: p99.9), of sorted samples, in ms. */
static double pct(int32_t *v, long n, int permille)
{
    return n ? v[(n - 1) * permille / 1000] / 1000.0 : 0;
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
    char line[900];
    long nfinal = atomic_load(&b->nfinal);
    snprintf(line, sizeof line,
             "{\"complete\":%s,\"keys_final\":%ld,\"keys\":%ld,\"events_missed\":%ld,"
             "\"events\":%ld,\"reconciles\":%ld,\"events_per_s\":%.1f,\"reconciles_per_s\":%.1f,"
             "\"latency_p50_ms\":%.3f,\"latency_p99_ms\":%.3f,\"latency_p999_ms\":%.3f,"
             "\"latency_max_ms\":%.3f,"
             "\"samples\":%ld,\"map_latency_p50_ms\":%.3f,\"map_latency_p99_ms\":%.3f}\n",
             b->final ? (nfinal == b->objects ? "true" : "false") : "null", nfinal, b->objects,
             b->seen ? b->expect - atomic_load(&b->events) : 0,
             atomic_load(&b->events), atomic_load(&b->reconciles),
             rate(atomic_load(&b->events), b->first_event_ns, b->last_event_ns),
             rate(atomic_load(&b->reconciles), b->first_rec_ns, b->last_rec_ns), pct(b->lat_us, n, 500),
             pct(b->lat_us, n, 990), pct(b->lat_us, n, 999), n ? b->lat_us[n - 1] / 1000.0 : 0, n,
             pct(b->map_us, nm, 500), pct(b->map_us, nm, 990));
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
    bench_free(b);
}

static gd_reconciler_set bench_set = {
    .name = "bench",
    .help = "benchmark: event -> reconcile-start latency from the replay source's "
            "bench.godis/sent-ns (out=<file>,warmup_ms=<n>)",
    .ncontrollers = 1,
    .controllers = {{"bench", "ConfigMap", bench_reconcile}},
    .init = bench_init,
    .fini = bench_fini,
    .map_event = bench_map,
};
GD_RECONCILER_SET(bench_set)
