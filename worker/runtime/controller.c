/* controller.c — see controller.h. Lock order: c->mu, then the queue's lock (the shard gate
 * calls into the queue while holding c->mu so no key of a revoked shard slips into the
 * queue between the ownership check and the add). The cache's lock is never taken under
 * c->mu: expectations are copied out before the cache is asked. */
#include "controller_internal.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cache.h"
#include "gd_json.h"
#include "gd_log.h"
#include "gd_rectrace.h"
#include "gd_time.h"
#include "gd_wake.h"

/* controller-runtime's ReconcileTime buckets */
static const double reconcile_buckets[] = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6,
    0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10,
    15, 20, 25, 30, 40, 50, 60};

/* ---- shards of keys ---- */

/* The one rule (gd_proto.h): the key's shape follows from the controller's name. */
static int key_shard(const controller *c, const char *key)
{
    return gd_shard_of_key(c->name, key);
}

/* A key whose shard cannot be computed is served only when this worker owns everything. */
static bool owned_locked(const controller *c, int shard)
{
    if (c->own_all)
        return true;
    return shard >= 0 && shard < GD_NSHARDS && c->owned[shard];
}

static bool revoking_locked(const controller *c, int shard)
{
    return shard >= 0 && shard < GD_NSHARDS && c->revoking[shard];
}

static void pending_add_locked(controller *c, const char *key, int shard)
{
    if (gd_map_put(c->pending, key, (void *)(intptr_t)(shard + 1), NULL) != GD_OK)
        gd_log(GD_LOG_ERROR, "controller: out of memory, pending key lost", "controller",
               c->name, "key", key, NULL);
}

/* ---- options, lifecycle ---- */

void controller_opts_default(controller_opts *o, const char *name, gd_reconcile_fn fn)
{
    memset(o, 0, sizeof *o);
    o->name = name;
    o->reconcile = fn;
    o->max_concurrent = 1;
    wq_config_default(&o->queue, name);
    o->stale_requeue_ms = 50;
    o->expectation_ttl_ms = 10000;
}

static void exp_list_free(void *p)
{
    exp_list *l = p;
    for (int i = 0; i < l->n; i++)
        free(l->v[i].objkey);
    free(l->v);
    free(l);
}

controller *controller_new(const controller_opts *o, gd_worker_env *env)
{
    if (!o || !o->name || !*o->name || !o->reconcile || !env || !env->fence)
        return NULL;
    controller *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    snprintf(c->name, sizeof c->name, "%s", o->name);
    c->o = *o;
    c->o.name = c->name;
    if (c->o.max_concurrent < 1)
        c->o.max_concurrent = 1;
    if (!c->o.queue.name[0])
        snprintf(c->o.queue.name, sizeof c->o.queue.name, "%s", c->name);
    c->env = env;
    c->q = wq_new(&c->o.queue);
    c->pending = gd_map_new(NULL);
    c->expect = gd_map_new(exp_list_free);
    c->km = keymetrics_new();
    if (!c->q || !c->pending || !c->expect || !c->km) {
        keymetrics_destroy(&c->km);
        wq_destroy(&c->q);
        gd_map_destroy(&c->pending);
        gd_map_destroy(&c->expect);
        free(c);
        return NULL;
    }
    /* Adaptive: the critical sections are a few hundred ns, so a contender spins briefly
     * instead of sleeping in the kernel (a sleep + wake-up costs ~10 µs on a VM). */
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&c->mu, &ma);
    pthread_mutexattr_destroy(&ma);
    gd_hist_init_bounds(&c->reconcile_time, reconcile_buckets,
                     (int)(sizeof reconcile_buckets / sizeof reconcile_buckets[0]));
    return c;
}

const char *controller_name(const controller *c) { return c->name; }
wq *controller_queue(controller *c) { return c->q; }

/* ---- the shard gate ---- */

static void enqueue_gated(controller *c, const char *key, int64_t delay_ms, bool rate_limited,
                          bool low)
{
    int shard = key_shard(c, key);
    pthread_mutex_lock(&c->mu);
    if (owned_locked(c, shard)) {
        if (rate_limited)
            wq_add_rate_limited(c->q, key);
        else if (delay_ms > 0)
            wq_add_after(c->q, key, delay_ms);
        else if (low)
            wq_add_low(c->q, key);
        else
            wq_add(c->q, key);
    } else if (revoking_locked(c, shard)) {
        pending_add_locked(c, key, shard);
    } else {
        gd_log(GD_LOG_DEBUG, "controller: key of a shard not owned, dropped", "controller",
               c->name, "key", key, NULL);
    }
    pthread_mutex_unlock(&c->mu);
}

void controller_enqueue(controller *c, const char *key)
{
    if (key)
        enqueue_gated(c, key, 0, false, false);
}

void controller_enqueue_low(controller *c, const char *key)
{
    if (key)
        enqueue_gated(c, key, 0, false, true);
}

void controller_enqueue_after(controller *c, const char *key, int64_t delay_ms)
{
    if (key)
        enqueue_gated(c, key, delay_ms, false, false);
}

/* ---- writes ---- */

gd_err rec_may_write(const rec_ctx *ctx)
{
    if (!gd_fence_open(ctx->env->fence)) {
        gd_log(GD_LOG_WARN, "write refused: lease deadline passed", "controller",
               ctx->controller_name, "key", ctx->key, NULL);
        return GD_ERR_FENCED;
    }
    return GD_OK;
}

/* ---- read your own writes ---- */

void rec_record_write(rec_ctx *ctx, const char *kind, const char *objkey, const char *rv,
                      bool deleted)
{
    controller *c = ctx->ctrl;
    ctx->writes++;
    if (!c || !kind || !objkey || (!deleted && (!rv || !*rv)))
        return;
    if (c->env->tracks_kind && !c->env->tracks_kind(c->env->tracks_kind_ud, kind))
        return;
    char cur[64];
    bool deleting = false;
    bool was_cached = c->env->rv_lookup &&
                      c->env->rv_lookup(c->env->rv_lookup_ud, kind, objkey, cur, sizeof cur,
                                        &deleting);
    pthread_mutex_lock(&c->mu);
    exp_list *l = gd_map_get(c->expect, ctx->key);
    if (!l) {
        l = calloc(1, sizeof *l);
        if (!l || gd_map_put(c->expect, ctx->key, l, NULL) != GD_OK) {
            free(l);
            l = NULL;
        } else {
            atomic_fetch_add(&c->nexpect, 1);
        }
    }
    expectation *e = NULL;
    for (int i = 0; l && i < l->n; i++)     /* one expectation per object: the latest */
        if (strcmp(l->v[i].kind, kind) == 0 && strcmp(l->v[i].objkey, objkey) == 0)
            e = &l->v[i];
    if (l && !e) {
        if (l->n == l->cap) {
            int cap = l->cap ? l->cap * 2 : 4;
            expectation *v = realloc(l->v, (size_t)cap * sizeof *v);
            if (v) {
                l->v = v;
                l->cap = cap;
            }
        }
        if (l->n < l->cap && (l->v[l->n].objkey = strdup(objkey)) != NULL)
            e = &l->v[l->n++];
    }
    if (e) {
        snprintf(e->kind, sizeof e->kind, "%s", kind);
        snprintf(e->rv, sizeof e->rv, "%s", deleted ? "" : rv);
        e->deleted = deleted;
        e->was_cached = was_cached;
        e->at_ns = gd_mono_ns();
    } else {
        gd_log(GD_LOG_ERROR, "controller: out of memory recording a write", "controller",
               c->name, "key", ctx->key, NULL);
    }
    pthread_mutex_unlock(&c->mu);
}

/* Has the cache caught up with one expectation? */
static bool exp_met(const controller *c, const expectation *e)
{
    char rv[64];
    bool deleting = false;
    bool present = c->env->rv_lookup(c->env->rv_lookup_ud, e->kind, e->objkey, rv, sizeof rv,
                                     &deleting);
    if (e->deleted)
        return !present || deleting;
    if (!present)
        return e->was_cached;   /* an updated object that vanished was deleted meanwhile */
    int cmp = gd_rv_compare(rv, e->rv);
    return cmp >= 0 || cmp == -2;   /* incomparable versions: do not block forever */
}

/* controller_caught_up; *waited_ms (may be NULL): how long ago the oldest write the cache
 * has not shown yet was made (0 when caught up). */
static bool caught_up_since(controller *c, const char *key, int64_t *waited_ms)
{
    if (waited_ms)
        *waited_ms = 0;
    if (!c->env->rv_lookup)
        return true;
    /* No reconcile of this controller has a write outstanding: nothing to wait for. A write
     * recorded concurrently belongs to a reconcile of another key (a key is never in two
     * reconciles at once), so it cannot concern this key. */
    if (atomic_load(&c->nexpect) == 0)
        return true;
    /* Copy the expectations out so the cache is never asked under c->mu. */
    pthread_mutex_lock(&c->mu);
    exp_list *l = gd_map_get(c->expect, key);
    int n = l ? l->n : 0;
    expectation *copy = n ? calloc((size_t)n, sizeof *copy) : NULL;
    for (int i = 0; copy && i < n; i++) {
        copy[i] = l->v[i];
        copy[i].objkey = strdup(l->v[i].objkey);
    }
    pthread_mutex_unlock(&c->mu);
    if (n && !copy)
        return true;
    int64_t now = gd_mono_ns(), ttl = c->o.expectation_ttl_ms * 1000000;
    bool all = true;
    bool *met = n ? calloc((size_t)n, sizeof *met) : NULL;
    for (int i = 0; i < n; i++) {
        met[i] = !copy[i].objkey || exp_met(c, &copy[i]);
        if (!met[i] && waited_ms && (now - copy[i].at_ns) / 1000000 > *waited_ms)
            *waited_ms = (now - copy[i].at_ns) / 1000000;
        if (!met[i] && now - copy[i].at_ns > ttl) {
            gd_log(GD_LOG_WARN, "controller: cache never showed our write, giving up waiting",
                   "controller", c->name, "key", key, "kind", copy[i].kind, "object",
                   copy[i].objkey ? copy[i].objkey : "", "rv", copy[i].rv, NULL);
            met[i] = true;
        }
        all = all && met[i];
    }
    /* Forget the met ones, unless a newer write replaced them meanwhile. */
    pthread_mutex_lock(&c->mu);
    l = gd_map_get(c->expect, key);
    for (int i = 0; l && i < n; i++) {
        if (!met[i])
            continue;
        for (int j = 0; j < l->n; j++) {
            expectation *e = &l->v[j];
            if (strcmp(e->kind, copy[i].kind) == 0 && copy[i].objkey &&
                strcmp(e->objkey, copy[i].objkey) == 0 && e->at_ns == copy[i].at_ns) {
                free(e->objkey);
                l->v[j] = l->v[--l->n];
                break;
            }
        }
    }
    if (l && l->n == 0) {
        gd_map_del(c->expect, key);
        atomic_fetch_sub(&c->nexpect, 1);
    }
    pthread_mutex_unlock(&c->mu);
    for (int i = 0; i < n; i++)
        free(copy[i].objkey);
    free(copy);
    free(met);
    return all;
}

bool controller_caught_up(controller *c, const char *key)
{
    return caught_up_since(c, key, NULL);
}

/* ---- the reconcile threads ---- */

static void count_result(controller *c, gd_result_kind kind)
{
    pthread_mutex_lock(&c->mu);
    switch (kind) {
    case GD_RESULT_DONE: c->stats.success++; break;
    case GD_RESULT_REQUEUE: c->stats.requeue++; break;
    case GD_RESULT_REQUEUE_AFTER: c->stats.requeue_after++; break;
    case GD_RESULT_ERROR: c->stats.error++; break;
    }
    pthread_mutex_unlock(&c->mu);
}

static void run_reconcile(controller *c, const char *key)
{
    rec_ctx ctx = {.ctrl = c, .controller_name = c->name, .key = key, .env = c->env,
                   .ud = c->o.ud};
    pthread_mutex_lock(&c->mu);
    c->stats.active++;
    pthread_mutex_unlock(&c->mu);
    int64_t t0 = gd_mono_ns();
    gd_rectrace('B', c->name, key);
    if (c->env->cache) {
        ctx.view_slot = cache_view_begin(c->env->cache);
        ctx.viewing = true;
    }
    gd_result r = c->o.reconcile(&ctx, key);
    if (ctx.viewing)
        cache_view_end(c->env->cache, ctx.view_slot);
    gd_rectrace('E', c->name, key);
    double secs = (double)(gd_mono_ns() - t0) / 1e9;
    pthread_mutex_lock(&c->mu);
    c->stats.active--;
    gd_hist_observe(&c->reconcile_time, secs);
    if (r.kind == GD_RESULT_DONE)       /* the common case: counted in the same section */
        c->stats.success++;
    pthread_mutex_unlock(&c->mu);

    switch (r.kind) {
    case GD_RESULT_ERROR:
        if (r.err == GD_ERR_FENCED) {   /* not the key's fault: retry once the lease is back */
            pthread_mutex_lock(&c->mu);
            c->stats.fenced++;
            pthread_mutex_unlock(&c->mu);
            enqueue_gated(c, key, 0, false, false);
            break;
        }
        gd_log(GD_LOG_INFO, "reconcile failed", "controller", c->name, "key", key, "error",
               gd_strerror(r.err), NULL);
        enqueue_gated(c, key, 0, true, false);
        count_result(c, GD_RESULT_ERROR);
        break;
    case GD_RESULT_REQUEUE_AFTER:
        wq_forget(c->q, key);
        enqueue_gated(c, key, r.after_ms > 0 ? r.after_ms : 0, false, false);
        count_result(c, GD_RESULT_REQUEUE_AFTER);
        break;
    case GD_RESULT_REQUEUE:
        enqueue_gated(c, key, 0, true, false);
        count_result(c, GD_RESULT_REQUEUE);
        break;
    case GD_RESULT_DONE:
    default:
        wq_forget(c->q, key);
        break;
    }
}

/* One key: shard gate, fence, read-your-own-writes, then the reconciler. */
/* How long a key whose cache has not caught up waits before it is looked at again: the
 * configured stale_requeue_ms at first, then a quarter of the time waited so far, up to
 * STALE_REQUEUE_MAX_MS. The event that shows a child's write wakes the key at once anyway (it
 * maps back to its owner); the requeue covers the rest (a status write of the key's own object
 * wakes nothing) and events that are slow or never come, and adds at most a quarter of a wait
 * that was already long. A fixed 50 ms
 * turned a stalled watch (10 s until the informer re-watches) into ~30 000 requeues of a few
 * hundred keys in one converge run. */
#define STALE_REQUEUE_MAX_MS 500
static int64_t stale_delay_ms(const controller *c, int64_t waited_ms)
{
    int64_t d = waited_ms / 4;
    if (d > STALE_REQUEUE_MAX_MS)
        d = STALE_REQUEUE_MAX_MS;
    return d > c->o.stale_requeue_ms ? d : c->o.stale_requeue_ms;
}

static void process_key(controller *c, const char *key)
{
    int shard = key_shard(c, key);
    pthread_mutex_lock(&c->mu);
    bool owned = owned_locked(c, shard);
    if (!owned && revoking_locked(c, shard))
        pending_add_locked(c, key, shard);
    pthread_mutex_unlock(&c->mu);
    if (!owned) {
        wq_forget(c->q, key);
        return;
    }
    if (!gd_fence_open(c->env->fence)) {
        pthread_mutex_lock(&c->mu);
        c->stats.fenced++;
        pthread_mutex_unlock(&c->mu);
        enqueue_gated(c, key, 0, false, false);        /* back to the queue, no penalty */
        return;
    }
    int64_t waited_ms = 0;
    if (!caught_up_since(c, key, &waited_ms)) {
        pthread_mutex_lock(&c->mu);
        c->stats.stale++;
        pthread_mutex_unlock(&c->mu);
        enqueue_gated(c, key, stale_delay_ms(c, waited_ms), false, false);
        return;
    }
    run_reconcile(c, key);
}

#define FENCED_WAIT_MS 1000

static void *reconcile_thread(void *arg)
{
    controller *c = arg;
    for (;;) {
        /* Take no key while fenced: a worker without a lease must not even start. The wait
         * ends at a LEASE (gd_fence_extend) or at controller_stop (gd_fence_kick); the
         * timeout is only a safety net. */
        while (!gd_fence_open(c->env->fence) && !wq_shutting_down(c->q)) {
            uint64_t gen = gd_fence_gen(c->env->fence);
            if (gd_fence_open(c->env->fence) || wq_shutting_down(c->q))
                break;      /* opened (or stopping) since the look above */
            gd_fence_wait(c->env->fence, gen, FENCED_WAIT_MS);
        }
        /* No timeout: a key or the queue's shutdown ends the wait (64 idle threads timing
         * out every second were a third of an idle worker's wake-ups). */
        bool shutdown = false;
        const char *key = wq_get(c->q, -1, &shutdown);
        if (!key) {
            if (shutdown)
                break;
            continue;
        }
        int shard = c->env->revoke_wake_fd ? key_shard(c, key) : -1;   /* key dies at done */
        if (!atomic_load(&c->stopping))
            process_key(c, key);
        wq_done(c->q, key);
        /* Without c->mu: revoke_begin set the flag before the main loop counted this key in
         * flight, and that count and wq_done are ordered by the queue's lock. */
        if (shard >= 0 && shard < GD_NSHARDS && atomic_load(&c->revoking[shard]))
            gd_wake_poke(*c->env->revoke_wake_fd);
    }
    return NULL;
}

gd_err controller_start(controller *c)
{
    if (c->threads)
        return GD_ERR_ARG;
    c->threads = calloc((size_t)c->o.max_concurrent, sizeof *c->threads);
    if (!c->threads)
        return GD_ERR_NOMEM;
    for (int i = 0; i < c->o.max_concurrent; i++) {
        if (pthread_create(&c->threads[i], NULL, reconcile_thread, c) != 0) {
            gd_log(GD_LOG_ERROR, "controller: cannot start a reconcile thread", "controller",
                   c->name, NULL);
            wq_shutdown(c->q);
            for (int j = 0; j < i; j++)
                pthread_join(c->threads[j], NULL);
            free(c->threads);
            c->threads = NULL;
            return GD_ERR_IO;
        }
        c->nthreads++;
    }
    gd_log(GD_LOG_INFO, "controller started", "controller", c->name, NULL);
    return GD_OK;
}

gd_err controller_stop(controller *c, int64_t timeout_ms)
{
    atomic_store(&c->stopping, true);
    gd_err rc = wq_shutdown_drain(c->q, timeout_ms);
    gd_fence_kick(c->env->fence);      /* threads waiting for a lease see the shutdown */
    if (rc != GD_OK)
        return rc;      /* threads still inside reconciles: not joined */
    for (int i = 0; i < c->nthreads; i++)
        pthread_join(c->threads[i], NULL);
    c->nthreads = 0;
    free(c->threads);
    c->threads = NULL;
    return GD_OK;
}

void controller_destroy(controller **pc)
{
    if (!pc || !*pc)
        return;
    controller *c = *pc;
    if (c->threads && controller_stop(c, 1000) != GD_OK)
        controller_stop(c, -1);
    wq_destroy(&c->q);
    gd_map_destroy(&c->pending);
    gd_map_destroy(&c->expect);
    keymetrics_destroy(&c->km);
    pthread_mutex_destroy(&c->mu);
    free(c);
    *pc = NULL;
}

/* ---- shards ---- */

void controller_own_shards(controller *c, const int *shards, int n)
{
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < n; i++)
        if (shards[i] >= 0 && shards[i] < GD_NSHARDS) {
            c->owned[shards[i]] = true;
            c->revoking[shards[i]] = false;
        }
    pthread_mutex_unlock(&c->mu);
}

void controller_own_all(controller *c)
{
    pthread_mutex_lock(&c->mu);
    c->own_all = true;
    for (int i = 0; i < GD_NSHARDS; i++)
        c->owned[i] = true;
    pthread_mutex_unlock(&c->mu);
}

int controller_shard_of(const controller *c, const char *key) { return key_shard(c, key); }

bool controller_owns(controller *c, int shard)
{
    pthread_mutex_lock(&c->mu);
    bool o = owned_locked(c, shard);
    pthread_mutex_unlock(&c->mu);
    return o;
}

typedef struct {
    controller *c;
    bool in[GD_NSHARDS];
} shard_match;

static bool match_shard(void *ud, const char *key)
{
    shard_match *m = ud;
    int s = key_shard(m->c, key);
    return s >= 0 && s < GD_NSHARDS && m->in[s];
}

static void take_pending(void *ud, const char *key)
{
    shard_match *m = ud;
    pending_add_locked(m->c, key, key_shard(m->c, key));
}

static void fill_match(shard_match *m, controller *c, const int *shards, int n)
{
    memset(m, 0, sizeof *m);
    m->c = c;
    for (int i = 0; i < n; i++)
        if (shards[i] >= 0 && shards[i] < GD_NSHARDS)
            m->in[shards[i]] = true;
}

void controller_revoke_begin(controller *c, const int *shards, int n)
{
    shard_match *m = malloc(sizeof *m);
    if (!m)
        return;
    fill_match(m, c, shards, n);
    pthread_mutex_lock(&c->mu);
    c->own_all = false;
    for (int i = 0; i < n; i++)
        if (shards[i] >= 0 && shards[i] < GD_NSHARDS) {
            c->revoking[shards[i]] = c->owned[shards[i]];
            c->owned[shards[i]] = false;
        }
    wq_extract(c->q, match_shard, take_pending, m);     /* take runs under c->mu: fine */
    pthread_mutex_unlock(&c->mu);
    free(m);
}

int controller_inflight(controller *c, const int *shards, int n)
{
    shard_match *m = malloc(sizeof *m);
    if (!m)
        return 0;
    fill_match(m, c, shards, n);
    int k = wq_count_processing(c->q, match_shard, m);
    free(m);
    return k;
}

typedef struct {
    shard_match *m;
    cJSON *arr;
    char **drop;
    int ndrop;
} finish_ctx;

static int collect_finished(void *ud, const char *key, void *val)
{
    finish_ctx *f = ud;
    int shard = (int)(intptr_t)val - 1;
    if (shard < 0 || shard >= GD_NSHARDS || !f->m->in[shard])
        return 0;
    if (f->arr)
        cJSON_AddItemToArray(f->arr, cJSON_CreateString(key));
    f->drop[f->ndrop++] = (char *)key;
    return 0;
}

void controller_revoke_finish(controller *c, const int *shards, int n, cJSON *arr)
{
    shard_match *m = malloc(sizeof *m);
    if (!m)
        return;
    fill_match(m, c, shards, n);
    pthread_mutex_lock(&c->mu);
    finish_ctx f = {.m = m, .arr = arr,
                    .drop = calloc(gd_map_count(c->pending) + 1, sizeof(char *))};
    if (f.drop) {
        gd_map_each(c->pending, collect_finished, &f);
        for (int i = 0; i < f.ndrop; i++) {     /* copy first: the key dies with the node */
            char *k = strdup(f.drop[i]);
            if (k) {
                gd_map_del(c->pending, k);
                free(k);
            }
        }
        free(f.drop);
    }
    for (int i = 0; i < n; i++)
        if (shards[i] >= 0 && shards[i] < GD_NSHARDS)
            c->revoking[shards[i]] = false;
    pthread_mutex_unlock(&c->mu);
    /* The objects of these shards are the next owner's to describe now: a series left here
     * would be a stale duplicate under this worker's label. */
    keymetrics_forget_if(c->km, match_shard, m);
    free(m);
}

/* ---- metrics ---- */

void rec_metric_set(rec_ctx *ctx, const char *family, const char *labels, double v)
{
    if (ctx && ctx->ctrl)
        keymetrics_put(ctx->ctrl->km, ctx->key, family, labels, v, false);
}

void rec_metric_add(rec_ctx *ctx, const char *family, const char *labels, double d)
{
    if (ctx && ctx->ctrl)
        keymetrics_put(ctx->ctrl->km, ctx->key, family, labels, d, true);
}

void rec_metrics_forget(rec_ctx *ctx)
{
    if (ctx && ctx->ctrl)
        keymetrics_forget(ctx->ctrl->km, ctx->key);
}

void controllers_render_key_metrics(controller **cs, int n, const gd_key_metric *fams,
                                    gd_sbuf *out)
{
    for (int f = 0; fams && fams[f].name; f++) {
        gd_prom_header(out, fams[f].name, fams[f].type, fams[f].help);
        for (int i = 0; i < n; i++)
            keymetrics_render_family(cs[i]->km, fams[f].name, out);
    }
}

int controller_key_metrics_count(controller *c) { return keymetrics_keys(c->km); }

void controller_get_stats(controller *c, controller_stats *s)
{
    pthread_mutex_lock(&c->mu);
    *s = c->stats;
    pthread_mutex_unlock(&c->mu);
}

static void controller_labels(const controller *c, char *out, size_t cap)
{
    char esc[160];
    gd_prom_escape(c->name, esc, sizeof esc);
    snprintf(out, cap, "controller=\"%s\"", esc);
}

void controllers_render_metrics(controller **cs, int n, gd_sbuf *out)
{
    char lab[256], lab2[300];
    static const char *results[] = {"error", "requeue", "requeue_after", "success"};
    gd_prom_header(out, "controller_runtime_reconcile_total", "counter",
                   "Total number of reconciliations per controller");
    for (int i = 0; i < n; i++) {
        controller_stats s;
        controller_get_stats(cs[i], &s);
        uint64_t v[] = {s.error, s.requeue, s.requeue_after, s.success};
        controller_labels(cs[i], lab, sizeof lab);
        for (int r = 0; r < 4; r++) {
            snprintf(lab2, sizeof lab2, "%s,result=\"%s\"", lab, results[r]);
            gd_prom_sample(out, "controller_runtime_reconcile_total", lab2, (double)v[r]);
        }
    }
    gd_prom_header(out, "controller_runtime_reconcile_errors_total", "counter",
                   "Total number of reconciliation errors per controller");
    for (int i = 0; i < n; i++) {
        controller_stats s;
        controller_get_stats(cs[i], &s);
        controller_labels(cs[i], lab, sizeof lab);
        gd_prom_sample(out, "controller_runtime_reconcile_errors_total", lab, (double)s.error);
    }
    gd_prom_header(out, "controller_runtime_reconcile_time_seconds", "histogram",
                   "Length of time per reconciliation per controller");
    for (int i = 0; i < n; i++) {
        controller_labels(cs[i], lab, sizeof lab);
        pthread_mutex_lock(&cs[i]->mu);
        gd_prom_hist(out, "controller_runtime_reconcile_time_seconds", lab,
                     &cs[i]->reconcile_time);
        pthread_mutex_unlock(&cs[i]->mu);
    }
    gd_prom_header(out, "controller_runtime_max_concurrent_reconciles", "gauge",
                   "Maximum number of concurrent reconciles per controller");
    for (int i = 0; i < n; i++) {
        controller_labels(cs[i], lab, sizeof lab);
        gd_prom_sample(out, "controller_runtime_max_concurrent_reconciles", lab,
                       cs[i]->o.max_concurrent);
    }
    gd_prom_header(out, "controller_runtime_active_workers", "gauge",
                   "Number of currently used workers per controller");
    for (int i = 0; i < n; i++) {
        controller_stats s;
        controller_get_stats(cs[i], &s);
        controller_labels(cs[i], lab, sizeof lab);
        gd_prom_sample(out, "controller_runtime_active_workers", lab, s.active);
    }
    for (int f = 0; wq_metrics_family(f, NULL); f++) {
        wq_metrics_family(f, out);
        for (int i = 0; i < n; i++)
            wq_metrics_render_family(cs[i]->q, f, out);
    }
}
