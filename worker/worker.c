/* worker.c — see worker.h.
 *
 * Threads: each subscriber runs on its own thread (a gd_sub fetches snapshots synchronously,
 * and an informer that does not answer must not stall the manager's heartbeats); it applies
 * events to the cache and maps them to keys itself (both thread-safe), and it follows the
 * shard set the main thread publishes (follow[] + follow_gen), dropping from the cache the
 * objects of shards it stops following. The main thread owns the control socket; each turn:
 *   1. poll the control socket (50 ms at most, so timers run) and handle its messages;
 *   2. activate loading shards once every subscriber follows them and is in sync;
 *   3. answer finished revocations;
 *   4. heartbeats: re-HELLO after 3 silent heartbeats, give up after 5. */
#include "worker.h"
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>
#include "cache.h"
#include "control.h"
#include "controller.h"
#include "gd_hoptrace.h"
#include "gd_json.h"
#include "gd_log.h"
#include "gd_sub.h"
#include "gd_time.h"
#include "k8s_client.h"
#include "k8s_config.h"
#include "mapping.h"
#include "metrics.h"
#include "reconciler.h"

const char *const worker_kinds[WORKER_MAX_KINDS] = {
    "Node", "Pod", "PersistentVolumeClaim", "Service", "ReplicaSet", "ConfigMap", "Godis",
    "GodisCluster"};

#define MAX_REVOCATIONS 64

typedef struct worker worker;

typedef struct {
    worker *w;
    char kind[48];
    gd_sub *sub;
    pthread_t th;
    bool running;
    _Atomic uint64_t applied_gen;   /* follow_gen last applied by this subscriber */
    atomic_bool synced;
    char ipc_path[256];             /* the PUB socket's file, to tell "no informer" */
    bool absent_logged;
} sub_slot;

typedef struct {
    uint64_t seq;
    int shards[GD_NSHARDS];
    int n;
} revocation;

struct worker {
    const worker_opts *o;
    void *zctx, *control;
    cache *cache;
    gd_fence fence;
    gd_worker_env env;
    const gd_reconciler_set *set;
    void *set_ud;
    controller *ctrls[GD_RECONCILER_MAX_CONTROLLERS];
    int nctrls;
    sub_slot subs[WORKER_MAX_KINDS];
    int nsubs;
    pthread_mutex_t follow_mu;
    bool follow[GD_NSHARDS];    /* what the subscribers must follow (under follow_mu) */
    _Atomic uint64_t follow_gen;
    atomic_bool subs_stop;
    uint64_t loading_gen;       /* follow_gen that includes every loading shard */
    bool active[GD_NSHARDS];    /* controllers take these shards' keys */
    bool loading[GD_NSHARDS];   /* followed, waiting for every subscriber to sync */
    revocation revs[MAX_REVOCATIONS];
    int nrevs;
    cJSON *pending_assign;      /* pending keys of loading shards, merged */
    uint64_t out_seq;
    int64_t last_heard_ms, last_hello_ms;
    bool stopping;
    int64_t stop_deadline_wall_ms;
    bool abandoned;             /* reconciles still running at exit: skip the teardown */
    int64_t started_ms;
};

static volatile sig_atomic_t got_signal;
static void on_signal(int sig) { got_signal = sig; }

/* ---- options ---- */

void worker_opts_default(worker_opts *o)
{
    memset(o, 0, sizeof *o);
    o->index = -1;
    o->max_concurrent = 1;
    o->heartbeat_ms = 1000;
    o->reconciler = "godis";
    o->stop_grace_ms = 4000;
    o->queue_base_delay_ms = 5;
    o->queue_max_delay_ms = 1000 * 1000;
    o->queue_qps = 10;
    o->queue_burst = 100;
    o->kube_api_qps = 50;
    o->kube_api_burst = 100;
}

gd_err worker_rate_limits_parse(worker_opts *o, const char *spec, char *why, size_t cap)
{
    char *copy = strdup(spec ? spec : ""), *save = NULL;
    if (!copy)
        return GD_ERR_NOMEM;
    gd_err rc = GD_OK;
    for (char *tok = strtok_r(copy, ",", &save); tok && rc == GD_OK;
         tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '='), *end = NULL;
        double v = eq ? strtod(eq + 1, &end) : -1;
        if (!eq || end == eq + 1 || *end || v < 0 || v > 1e12) {
            rc = GD_ERR_CONFIG;
        } else if (!strncmp(tok, "base-ms=", 8) && v >= 1) {
            o->queue_base_delay_ms = (int64_t)v;
        } else if (!strncmp(tok, "max-ms=", 7) && v >= 1) {
            o->queue_max_delay_ms = (int64_t)v;
        } else if (!strncmp(tok, "qps=", 4)) {
            o->queue_qps = v;               /* 0: no overall bucket */
        } else if (!strncmp(tok, "burst=", 6) && v >= 1 && v <= 1000000) {
            o->queue_burst = (int)v;
        } else {
            rc = GD_ERR_CONFIG;
        }
        if (rc != GD_OK)
            snprintf(why, cap, "\"%.40s\": want base-ms=N,max-ms=N,qps=N,burst=N", tok);
    }
    if (rc == GD_OK && o->queue_base_delay_ms > o->queue_max_delay_ms) {
        snprintf(why, cap, "base-ms is larger than max-ms");
        rc = GD_ERR_CONFIG;
    }
    free(copy);
    return rc;
}

static gd_err check_endpoint(const char *ep)
{
    if (strncmp(ep, "ipc://", 6) == 0 && ep[6])
        return GD_OK;
    return GD_ERR_CONFIG;   /* tcp:// needs CURVE keys, which the worker does not do yet */
}

static gd_err add_endpoint(worker_opts *o, const char *kind, const char *pub, const char *snap)
{
    if (o->ninformers >= WORKER_MAX_KINDS)
        return GD_ERR_CONFIG;
    worker_endpoint *e = &o->informers[o->ninformers];
    if ((size_t)snprintf(e->kind, sizeof e->kind, "%s", kind) >= sizeof e->kind ||
        (size_t)snprintf(e->pub, sizeof e->pub, "%s", pub) >= sizeof e->pub ||
        (size_t)snprintf(e->snap, sizeof e->snap, "%s", snap) >= sizeof e->snap)
        return GD_ERR_CONFIG;
    if (check_endpoint(e->pub) != GD_OK || check_endpoint(e->snap) != GD_OK)
        return GD_ERR_CONFIG;
    o->ninformers++;
    return GD_OK;
}

gd_err worker_endpoints_from_dir(worker_opts *o, const char *dir)
{
    o->ninformers = 0;
    for (int i = 0; i < WORKER_MAX_KINDS; i++) {
        char pub[300], snap[300];
        snprintf(pub, sizeof pub, "ipc://%s/%s.pub", dir, worker_kinds[i]);
        snprintf(snap, sizeof snap, "ipc://%s/%s.snap", dir, worker_kinds[i]);
        if (add_endpoint(o, worker_kinds[i], pub, snap) != GD_OK)
            return GD_ERR_CONFIG;
    }
    return GD_OK;
}

static bool known_kind(const char *k)
{
    for (int i = 0; i < WORKER_MAX_KINDS; i++)
        if (strcmp(worker_kinds[i], k) == 0)
            return true;
    return false;
}

gd_err worker_endpoints_parse(worker_opts *o, const char *spec, char *why, size_t cap)
{
    char *copy = strdup(spec ? spec : ""), *save = NULL;
    if (!copy)
        return GD_ERR_NOMEM;
    gd_err rc = GD_OK;
    o->ninformers = 0;
    for (char *tok = strtok_r(copy, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(tok, '='), *comma = eq ? strchr(eq, ',') : NULL;
        if (!eq || !comma) {
            snprintf(why, cap, "\"%.60s\": want Kind=PUB,SNAP", tok);
            rc = GD_ERR_CONFIG;
            break;
        }
        *eq = *comma = '\0';
        if (!known_kind(tok)) {
            snprintf(why, cap, "unknown kind \"%.40s\"", tok);
            rc = GD_ERR_CONFIG;
            break;
        }
        if (add_endpoint(o, tok, eq + 1, comma + 1) != GD_OK) {
            snprintf(why, cap, "%s: endpoints must be ipc://… (at most %d kinds)", tok,
                     WORKER_MAX_KINDS);
            rc = GD_ERR_CONFIG;
            break;
        }
    }
    if (rc == GD_OK && o->ninformers == 0) {
        snprintf(why, cap, "no endpoints given");
        rc = GD_ERR_CONFIG;
    }
    free(copy);
    return rc;
}

/* Read-your-own-writes waits only for kinds an informer feeds into the cache. */
static bool tracks_kind(void *ud, const char *kind)
{
    worker *w = ud;
    for (int i = 0; w && i < w->nsubs; i++)
        if (strcmp(w->subs[i].kind, kind) == 0)
            return true;
    return false;
}

/* ---- events: subscriber → cache → mapping → controllers ---- */

static controller *find_ctrl(worker *w, const char *name)
{
    for (int i = 0; i < w->nctrls; i++)
        if (strcmp(controller_name(w->ctrls[i]), name) == 0)
            return w->ctrls[i];
    return NULL;
}

static void emit_key(void *ud, const char *ctrl, const char *key)
{
    controller *c = find_ctrl(ud, ctrl);
    if (c)
        controller_enqueue(c, key);
}

static void map_change(worker *w, const char *kind, const cJSON *old_obj, const cJSON *new_obj)
{
    if (w->set->map_event)
        w->set->map_event(w->set_ud, kind, old_obj, new_obj, emit_key, w);
    else
        mapping_event(w->cache, kind, old_obj, new_obj, emit_key, w);
}

/* The subscribers are keys_only: the cache is the one replica of the objects. gd_sub lends
 * each new object and the cache takes it without a copy; the object the key had before
 * comes back out of the cache for the mapping (old owners, old labels) and is freed after.
 * A cached object is never changed and only this thread replaces or removes it, so
 * new_obj stays valid for the mapping after the cache took it. */
static void on_sub_event(void *ud, gd_sub_event ev, const char *key, int shard,
                         const cJSON *old_obj, const cJSON *new_obj, bool resync)
{
    sub_slot *s = ud;
    worker *w = s->w;
    cJSON *old = NULL;
    (void)old_obj;              /* always NULL with keys_only */
    switch (ev) {
    case GD_SUB_ADDED:
    case GD_SUB_MODIFIED: {
        cJSON *obj = gd_sub_steal(s->sub);
        if (!obj || cache_apply_take(w->cache, CACHE_UPSERT, s->kind, key, shard, &obj,
                                     &old) != GD_OK) {
            cJSON_Delete(obj);
            return;
        }
        gd_hop_rv(gd_meta_rv(new_obj), GD_HOP_CACHE);
        break;
    }
    case GD_SUB_DELETED:
        cache_apply_take(w->cache, CACHE_DELETE, s->kind, key, shard, NULL, &old);
        if (!old)
            return;             /* the cache never had it: nothing to map */
        break;
    case GD_SUB_SYNCED:
        gd_log(GD_LOG_INFO, "informer synced", "kind", s->kind, NULL);
        return;
    }
    map_change(w, s->kind, ev == GD_SUB_ADDED ? NULL : old, new_obj);
    cJSON_Delete(old);
}

/* ---- shards ---- */

/* Shards the subscribers must follow: active, loading, or still being revoked. */
static void follow_set(worker *w, int *out, int *n)
{
    bool f[GD_NSHARDS];
    for (int i = 0; i < GD_NSHARDS; i++)
        f[i] = w->active[i] || w->loading[i];
    for (int r = 0; r < w->nrevs; r++)
        for (int i = 0; i < w->revs[r].n; i++)
            f[w->revs[r].shards[i]] = true;
    *n = 0;
    for (int i = 0; i < GD_NSHARDS; i++)
        if (f[i])
            out[(*n)++] = i;
}

/* Publishes the follow set; the subscriber threads pick it up within one poll. */
static void refollow(worker *w)
{
    int shards[GD_NSHARDS], n;
    follow_set(w, shards, &n);
    pthread_mutex_lock(&w->follow_mu);
    memset(w->follow, 0, sizeof w->follow);
    for (int i = 0; i < n; i++)
        w->follow[shards[i]] = true;
    atomic_fetch_add(&w->follow_gen, 1);
    pthread_mutex_unlock(&w->follow_mu);
}

static void *sub_thread(void *arg)
{
    sub_slot *s = arg;
    worker *w = s->w;
    bool cur[GD_NSHARDS] = {false}, want[GD_NSHARDS];
    uint64_t applied = 0;
    while (!atomic_load(&w->subs_stop)) {
        uint64_t gen = atomic_load(&w->follow_gen);
        if (gen != applied) {
            pthread_mutex_lock(&w->follow_mu);
            gen = atomic_load(&w->follow_gen);
            memcpy(want, w->follow, sizeof want);
            pthread_mutex_unlock(&w->follow_mu);
            int shards[GD_NSHARDS], n = 0, drop[GD_NSHARDS], nd = 0;
            for (int i = 0; i < GD_NSHARDS; i++) {
                if (want[i])
                    shards[n++] = i;
                else if (cur[i])
                    drop[nd++] = i;
            }
            atomic_store(&s->synced, false);
            gd_err rc = gd_sub_set_shards(s->sub, shards, (size_t)n);
            if (rc != GD_OK && rc != GD_ERR_TIMEOUT)
                gd_log(GD_LOG_ERROR, "subscriber: cannot follow shards", "kind", s->kind,
                       "error", gd_strerror(rc), NULL);
            /* gd_sub dropped those shards' objects without events; so does the cache. */
            if (nd)
                cache_drop_shards(w->cache, s->kind, drop, nd);
            memcpy(cur, want, sizeof cur);
            applied = gen;
            atomic_store(&s->applied_gen, gen);
        }
        /* the keys one batch of messages maps to wake the reconcile threads once */
        wq_hold_wakeups();
        gd_sub_poll(s->sub, 50);
        wq_release_wakeups();
        atomic_store(&s->synced, gd_sub_synced(s->sub));
    }
    return NULL;
}

static void start_loading(worker *w, const int *shards, int n, cJSON **pending)
{
    for (int i = 0; i < n; i++)
        if (!w->active[shards[i]])
            w->loading[shards[i]] = true;
    if (pending && *pending) {
        if (!w->pending_assign) {
            w->pending_assign = *pending;
            *pending = NULL;
        } else {                /* merge: append arrays per controller */
            cJSON *ctrl;
            cJSON_ArrayForEach(ctrl, *pending) {
                cJSON *dst = cJSON_GetObjectItemCaseSensitive(w->pending_assign, ctrl->string);
                if (!dst)
                    dst = cJSON_AddArrayToObject(w->pending_assign, ctrl->string);
                cJSON *k;
                cJSON_ArrayForEach(k, ctrl)
                    if (dst)
                        cJSON_AddItemToArray(dst, cJSON_CreateString(k->valuestring));
            }
        }
    }
    refollow(w);
    w->loading_gen = atomic_load(&w->follow_gen);
}

typedef struct {
    const bool *in;
    cJSON *objs;
    const char *kind;
} resync_ctx;

static int collect_in_shards(void *ud, const char *key, const cJSON *obj)
{
    resync_ctx *r = ud;
    int shard = gd_shard_of_object(r->kind, obj);
    if (shard >= 0 && shard < GD_NSHARDS && r->in[shard])
        cJSON_AddItemToArray(r->objs, cJSON_Duplicate(obj, 1));
    return 0;
}

#define ABSENT_GRACE_MS 5000

/* With --runtime-dir the worker subscribes to every kind, but the manager may run
 * informers for fewer (--informer-kinds): a kind whose socket file has not appeared
 * ABSENT_GRACE_MS after start-up does not hold shards back. It joins as soon as its
 * informer binds (ZeroMQ keeps reconnecting). */
static bool informer_absent(worker *w, sub_slot *s)
{
    struct stat st;
    if (!w->o->runtime_dir || !s->ipc_path[0] || stat(s->ipc_path, &st) == 0 ||
        gd_mono_ms() - w->started_ms < ABSENT_GRACE_MS)
        return false;
    if (!s->absent_logged) {
        gd_log(GD_LOG_WARN, "no informer for this kind: not waiting for it", "kind", s->kind,
               "endpoint", s->ipc_path, NULL);
        s->absent_logged = true;
    }
    return true;
}

/* Every subscriber follows the loading shards and has their snapshot. */
static bool all_synced(worker *w)
{
    for (int i = 0; i < w->nsubs; i++) {
        sub_slot *s = &w->subs[i];
        if ((atomic_load(&s->applied_gen) < w->loading_gen || !atomic_load(&s->synced)) &&
            !informer_absent(w, s))
            return false;
    }
    return true;
}

/* Every subscriber is in sync: the loading shards become active, their pending keys and
 * every cached object of theirs are enqueued. */
static void activate_loading(worker *w)
{
    int shards[GD_NSHARDS], n = 0;
    for (int i = 0; i < GD_NSHARDS; i++)
        if (w->loading[i]) {
            shards[n++] = i;
            w->loading[i] = false;
            w->active[i] = true;
        }
    if (n == 0)
        return;
    bool all = n == GD_NSHARDS && w->o->control_endpoint == NULL;
    for (int c = 0; c < w->nctrls; c++) {
        if (all)
            controller_own_all(w->ctrls[c]);
        else
            controller_own_shards(w->ctrls[c], shards, n);
    }
    int keys = 0;
    if (w->pending_assign) {
        cJSON *ctrl, *k;
        cJSON_ArrayForEach(ctrl, w->pending_assign) {
            controller *c = find_ctrl(w, ctrl->string);
            if (!c) {
                gd_log(GD_LOG_WARN, "pending keys for an unknown controller ignored",
                       "controller", ctrl->string, NULL);
                continue;
            }
            cJSON_ArrayForEach(k, ctrl) {
                controller_enqueue(c, k->valuestring);
                keys++;
            }
        }
        cJSON_Delete(w->pending_assign);
        w->pending_assign = NULL;
    }
    bool in[GD_NSHARDS] = {false};
    for (int i = 0; i < n; i++)
        in[shards[i]] = true;
    int objs = 0;
    for (int s = 0; s < w->nsubs; s++) {
        resync_ctx r = {in, cJSON_CreateArray(), w->subs[s].kind};
        if (!r.objs)
            continue;
        cache_each(w->cache, r.kind, collect_in_shards, &r);
        cJSON *o;
        cJSON_ArrayForEach(o, r.objs) {
            map_change(w, r.kind, NULL, o);
            objs++;
        }
        cJSON_Delete(r.objs);
    }
    char *list = gdw_format_shards(shards, n);
    char nk[16], no[16];
    snprintf(nk, sizeof nk, "%d", keys);
    snprintf(no, sizeof no, "%d", objs);
    gd_log(GD_LOG_INFO, "shards active", "shards", list ? list : "?", "pending_keys", nk,
           "objects", no, NULL);
    free(list);
}

/* ---- control socket ---- */

static gd_err send_frames(worker *w, const char **frames, const size_t *lens, int n)
{
    for (int i = 0; i < n; i++) {
        if (zmq_send(w->control, frames[i], lens[i], i < n - 1 ? ZMQ_SNDMORE : 0) < 0) {
            gd_log(GD_LOG_ERROR, "control: send failed", "error", zmq_strerror(errno), NULL);
            return GD_ERR_ZMQ;
        }
    }
    return GD_OK;
}

static void send_strs(worker *w, const char **frames, int n)
{
    size_t lens[8];
    for (int i = 0; i < n; i++)
        lens[i] = strlen(frames[i]);
    send_frames(w, frames, lens, n);
}

static void send_hello(worker *w)
{
    char idx[16], pid[16];
    snprintf(idx, sizeof idx, "%d", w->o->index);
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    const char *f[] = {GD_PROTO_WORKER, "HELLO", idx, pid};
    send_strs(w, f, 4);
    w->last_hello_ms = gd_mono_ms();
}

static void send_error(worker *w, const char *why)
{
    const char *f[] = {GD_PROTO_WORKER, "ERROR", why};
    send_strs(w, f, 3);
}

static char *render_metrics(worker *w)
{
    sbuf b;
    sbuf_init(&b);
    controllers_render_metrics(w->ctrls, w->nctrls, &b);
    metrics_header(&b, "godis_worker_shards_active", "gauge",
                   "Shards whose keys this worker reconciles");
    int n = 0;
    for (int i = 0; i < GD_NSHARDS; i++)
        n += w->active[i];
    metrics_sample(&b, "godis_worker_shards_active", "", n);
    metrics_header(&b, "godis_worker_cache_objects", "gauge",
                   "Objects in the worker's cache replica");
    for (int i = 0; i < w->nsubs; i++) {
        char lab[80];
        snprintf(lab, sizeof lab, "kind=\"%s\"", w->subs[i].kind);
        metrics_sample(&b, "godis_worker_cache_objects", lab,
                       (double)cache_count(w->cache, w->subs[i].kind));
    }
    metrics_header(&b, "godis_worker_lease_valid", "gauge",
                   "1 while the worker may start writes (lease deadline not passed)");
    metrics_sample(&b, "godis_worker_lease_valid", "", gd_fence_open(&w->fence) ? 1 : 0);
    return sbuf_detach(&b);
}

static void handle_revoke(worker *w, const gdw_msg *m)
{
    if (w->nrevs >= MAX_REVOCATIONS) {
        send_error(w, "too many revocations in progress");
        return;
    }
    for (int i = 0; i < m->nshards; i++) {
        w->active[m->shards[i]] = false;
        w->loading[m->shards[i]] = false;
    }
    for (int c = 0; c < w->nctrls; c++)
        controller_revoke_begin(w->ctrls[c], m->shards, m->nshards);
    revocation *r = &w->revs[w->nrevs++];
    r->seq = m->seq;
    r->n = m->nshards;
    memcpy(r->shards, m->shards, sizeof(int) * (size_t)m->nshards);
}

/* Keys an ASSIGN handed over for shards that are revoked before they became active go
 * back with the REVOKED: they were never enqueued, so no controller holds them. */
static void take_unactivated(worker *w, controller *c, const revocation *rv, cJSON *arr)
{
    cJSON *keys = w->pending_assign
                      ? cJSON_GetObjectItemCaseSensitive(w->pending_assign, controller_name(c))
                      : NULL;
    if (!cJSON_IsArray(keys) || !arr)
        return;
    for (int i = cJSON_GetArraySize(keys) - 1; i >= 0; i--) {
        cJSON *k = cJSON_GetArrayItem(keys, i);
        int shard = controller_shard_of(c, k->valuestring);
        for (int j = 0; j < rv->n; j++)
            if (rv->shards[j] == shard) {
                cJSON_AddItemToArray(arr, cJSON_DetachItemFromArray(keys, i));
                break;
            }
    }
}

/* Answers every revocation whose in-flight keys have all finished. */
static void finish_revocations(worker *w)
{
    for (int r = 0; r < w->nrevs;) {
        revocation *rv = &w->revs[r];
        int inflight = 0;
        for (int c = 0; c < w->nctrls; c++)
            inflight += controller_inflight(w->ctrls[c], rv->shards, rv->n);
        if (inflight > 0) {
            r++;
            continue;
        }
        cJSON *pending = cJSON_CreateObject();
        for (int c = 0; c < w->nctrls; c++) {
            cJSON *arr = cJSON_CreateArray();
            controller_revoke_finish(w->ctrls[c], rv->shards, rv->n, arr);
            take_unactivated(w, w->ctrls[c], rv, arr);
            if (pending && arr && cJSON_GetArraySize(arr) > 0)
                cJSON_AddItemToObject(pending, controller_name(w->ctrls[c]), arr);
            else
                cJSON_Delete(arr);
        }
        char seq[24];
        snprintf(seq, sizeof seq, "%llu", (unsigned long long)rv->seq);
        char *list = gdw_format_shards(rv->shards, rv->n);
        char *json = pending ? cJSON_PrintUnformatted(pending) : NULL;
        if (w->control && list && json) {
            const char *f[] = {GD_PROTO_WORKER, "REVOKED", seq, list, json};
            send_strs(w, f, 5);
        }
        gd_log(GD_LOG_INFO, "shards revoked", "seq", seq, "shards", list ? list : "?",
               "pending", json ? json : "?", NULL);
        free(list);
        free(json);
        cJSON_Delete(pending);
        /* Only now stop following (and forget) the shards: no reconcile of theirs runs. */
        w->revs[r] = w->revs[--w->nrevs];
        refollow(w);
    }
}

static void handle_message(worker *w, const gdw_msg *m)
{
    switch (m->type) {
    case GDW_ASSIGN: {
        cJSON *pending = m->pending ? cJSON_Duplicate(m->pending, 1) : NULL;
        start_loading(w, m->shards, m->nshards, &pending);
        cJSON_Delete(pending);
        break;
    }
    case GDW_REVOKE: handle_revoke(w, m); break;
    case GDW_LEASE: gd_fence_extend(&w->fence, m->deadline_ms); break;
    case GDW_PING: {
        char seq[24];
        snprintf(seq, sizeof seq, "%llu", (unsigned long long)m->seq);
        char *text = render_metrics(w);
        const char *f[] = {GD_PROTO_WORKER, "PONG", seq, text ? text : ""};
        send_strs(w, f, 4);
        free(text);
        break;
    }
    case GDW_STOP:
        gd_log(GD_LOG_INFO, "STOP from the manager", NULL);
        w->stopping = true;
        w->stop_deadline_wall_ms = m->deadline_ms;
        break;
    case GDW_ERROR:
        gd_log(GD_LOG_WARN, "manager reported an error", "message", m->text, NULL);
        break;
    }
}

/* Reads every message waiting on the control socket. */
static void drain_control(worker *w)
{
    for (;;) {
        zmq_msg_t parts[8];
        gdw_frame frames[8];
        int n = 0, more = 1;
        bool too_many = false;
        while (more) {
            zmq_msg_t tmp;
            zmq_msg_init(&tmp);
            if (zmq_msg_recv(&tmp, w->control, n == 0 ? ZMQ_DONTWAIT : 0) < 0) {
                zmq_msg_close(&tmp);
                for (int i = 0; i < n; i++)
                    zmq_msg_close(&parts[i]);
                return;         /* EAGAIN: nothing more */
            }
            more = zmq_msg_more(&tmp);
            if (n < 8) {
                parts[n] = tmp;
                frames[n].data = zmq_msg_data(&parts[n]);
                frames[n].len = zmq_msg_size(&parts[n]);
                n++;
            } else {
                too_many = true;
                zmq_msg_close(&tmp);
            }
        }
        w->last_heard_ms = gd_mono_ms();
        gdw_msg m;
        char why[200];
        if (too_many) {
            send_error(w, "too many frames");
        } else if (gdw_parse(frames, n, &m, why, sizeof why) != GD_OK) {
            gd_log(GD_LOG_WARN, "control: malformed message", "reason", why, NULL);
            send_error(w, why);
        } else {
            handle_message(w, &m);
            gdw_msg_clear(&m);
        }
        for (int i = 0; i < n; i++)
            zmq_msg_close(&parts[i]);
    }
}

/* ---- setup and teardown ---- */

/* The API client for the reconcilers' writes. Without a usable configuration the worker
 * still runs (test reconcilers need none); a reconciler set that writes refuses to start
 * in its init when env.client is NULL. */
static void setup_client(worker *w)
{
    k8s_config_opts co = {.kubeconfig = w->o->kubeconfig, .context = w->o->context,
                          .allow_in_cluster = true};
    k8s_config *cfg = NULL;
    char err[300] = "";
    if (k8s_config_load(&co, &cfg, err, sizeof err) != GD_OK) {
        gd_log(GD_LOG_WARN, "no API server configuration: reconcilers cannot write", "reason",
               err, NULL);
        return;
    }
    k8s_client_opts opts;
    k8s_client_opts_default(&opts);
    /* The manager's identity in the User-Agent: the audit log then tells which manager's
     * worker made each write (tests prove fencing from it). */
    char ua[300];
    if (w->o->manager_identity)
        snprintf(ua, sizeof ua, "godis-operator (worker; manager=%s)", w->o->manager_identity);
    else
        snprintf(ua, sizeof ua, "godis-operator (worker)");
    opts.user_agent = ua;
    w->env.client = k8s_client_new(&cfg, &opts);
    k8s_config_destroy(&cfg);
    if (!w->env.client)
        gd_log(GD_LOG_WARN, "cannot create the API client: reconcilers cannot write", NULL);
}

static gd_err setup_controllers(worker *w)
{
    w->set = gd_reconciler_find(w->o->reconciler);
    if (!w->set) {
        gd_log(GD_LOG_ERROR, "unknown --reconciler (see --help)", "reconciler",
               w->o->reconciler, NULL);
        return GD_ERR_CONFIG;
    }
    if (w->set->init) {
        gd_err rc = w->set->init(&w->env, w->o->reconciler_arg, &w->set_ud);
        if (rc != GD_OK)
            return rc;
    }
    for (int i = 0; i < w->set->ncontrollers; i++) {
        const gd_reconciler *r = &w->set->controllers[i];
        controller_opts co;
        controller_opts_default(&co, r->controller, r->reconcile);
        co.ud = w->set_ud;
        co.max_concurrent = w->o->max_concurrent;
        co.queue.base_delay_ns = w->o->queue_base_delay_ms * 1000000;
        co.queue.max_delay_ns = w->o->queue_max_delay_ms * 1000000;
        co.queue.qps = w->o->queue_qps;
        co.queue.burst = w->o->queue_burst;
        co.shard_of_key = r->shard_of_key;
        controller *c = controller_new(&co, &w->env);
        if (!c || controller_start(c) != GD_OK) {
            controller_destroy(&c);
            return GD_ERR_NOMEM;
        }
        w->ctrls[w->nctrls++] = c;
    }
    return GD_OK;
}

static gd_err setup_subs(worker *w)
{
    for (int i = 0; i < w->o->ninformers; i++) {
        sub_slot *s = &w->subs[w->nsubs];
        const worker_endpoint *e = &w->o->informers[i];
        s->w = w;
        snprintf(s->kind, sizeof s->kind, "%s", e->kind);
        snprintf(s->ipc_path, sizeof s->ipc_path, "%s", e->pub + 6);   /* after ipc:// */
        gd_sub_opts so;
        gd_sub_opts_default(&so);
        so.kind = e->kind;
        so.pub_endpoint = e->pub;
        so.snap_endpoint = e->snap;
        so.on_event = on_sub_event;
        so.ud = s;
        so.snapshot_timeout_ms = 1000;
        so.keys_only = true;        /* the cache keeps the objects (on_sub_event) */
        s->sub = gd_sub_new(w->zctx, &so);
        if (!s->sub) {
            gd_log(GD_LOG_ERROR, "cannot create subscriber", "kind", e->kind, "pub", e->pub,
                   NULL);
            return GD_ERR_CONFIG;
        }
        w->nsubs++;
    }
    for (int i = 0; i < w->nsubs; i++) {
        if (pthread_create(&w->subs[i].th, NULL, sub_thread, &w->subs[i]) != 0)
            return GD_ERR_IO;
        w->subs[i].running = true;
    }
    return GD_OK;
}

static gd_err setup_control(worker *w)
{
    if (!w->o->control_endpoint)
        return GD_OK;
    w->control = zmq_socket(w->zctx, ZMQ_DEALER);
    if (!w->control)
        return GD_ERR_ZMQ;
    char id[48];
    snprintf(id, sizeof id, "w%d-%d", w->o->index, (int)getpid());
    int linger = 500;
    zmq_setsockopt(w->control, ZMQ_ROUTING_ID, id, strlen(id));
    zmq_setsockopt(w->control, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_connect(w->control, w->o->control_endpoint) != 0) {
        gd_log(GD_LOG_ERROR, "cannot connect to the manager", "endpoint",
               w->o->control_endpoint, "error", zmq_strerror(errno), NULL);
        return GD_ERR_CONFIG;
    }
    send_hello(w);
    w->last_heard_ms = gd_mono_ms();
    return GD_OK;
}

static void teardown(worker *w)
{
    atomic_store(&w->subs_stop, true);
    for (int i = 0; i < w->nsubs; i++)
        if (w->subs[i].running)
            pthread_join(w->subs[i].th, NULL);
    for (int i = 0; i < w->nctrls; i++)
        controller_destroy(&w->ctrls[i]);
    if (w->set && w->set->fini)
        w->set->fini(w->set_ud);
    for (int i = 0; i < w->nsubs; i++)
        gd_sub_destroy(&w->subs[i].sub);
    if (w->control)
        zmq_close(w->control);
    cache_destroy(&w->cache);
    k8s_client_destroy(&w->env.client);
    cJSON_Delete(w->pending_assign);
    if (w->zctx)
        zmq_ctx_term(w->zctx);
}

/* Stops every controller within the time left; true when all drained. */
static bool stop_controllers(worker *w, int64_t budget_ms)
{
    int64_t until = gd_mono_ms() + (budget_ms > 0 ? budget_ms : 0);
    bool ok = true;
    for (int i = 0; i < w->nctrls; i++) {
        int64_t left = until - gd_mono_ms();
        if (controller_stop(w->ctrls[i], left > 0 ? left : 0) != GD_OK)
            ok = false;
    }
    return ok;
}

/* ---- the loop ---- */

static int run_loop(worker *w)
{
    const int64_t hb = w->o->heartbeat_ms > 0 ? w->o->heartbeat_ms : 1000;
    for (;;) {
        if (got_signal) {
            gd_log(GD_LOG_INFO, "signal: abandoning queued keys, finishing in-flight ones",
                   NULL);
            gd_fence_close(&w->fence);      /* no new writes (PROTOCOL.md §2, signals) */
            w->abandoned = !stop_controllers(w, w->o->stop_grace_ms);
            return GD_EXIT_OK;
        }
        if (w->stopping) {
            int64_t left = w->stop_deadline_wall_ms - gd_wall_ms();
            w->abandoned = !stop_controllers(w, left);
            gd_log(GD_LOG_INFO,
                   w->abandoned ? "stopped: drain deadline passed" : "stopped: drained", NULL);
            return GD_EXIT_OK;
        }
        if (w->control) {
            zmq_pollitem_t item = {.socket = w->control, .events = ZMQ_POLLIN};
            if (zmq_poll(&item, 1, 50) < 0 && errno != EINTR) {
                gd_log(GD_LOG_ERROR, "zmq_poll failed", "error", zmq_strerror(errno), NULL);
                return GD_EXIT_FAILURE;
            }
            drain_control(w);
        } else {
            gd_sleep_ms(50);
        }
        bool loading = false;
        for (int i = 0; i < GD_NSHARDS && !loading; i++)
            loading = w->loading[i];
        if (loading && all_synced(w))
            activate_loading(w);
        if (w->nrevs)
            finish_revocations(w);
        if (w->control) {
            int64_t now = gd_mono_ms(), silent = now - w->last_heard_ms;
            if (silent > 5 * hb) {
                gd_log(GD_LOG_ERROR, "manager silent for 5 heartbeats: stop writing, exit",
                       NULL);
                gd_fence_close(&w->fence);
                w->abandoned = !stop_controllers(w, 0);
                return GD_EXIT_FAILURE;
            }
            if (silent > 3 * hb && now - w->last_hello_ms > 3 * hb)
                send_hello(w);
        }
    }
}

int worker_run(const worker_opts *o)
{
    worker *w = calloc(1, sizeof *w);
    if (!w)
        return GD_EXIT_FAILURE;
    w->o = o;
    w->started_ms = gd_mono_ms();
    pthread_mutex_init(&w->follow_mu, NULL);
    gd_fence_init(&w->fence, o->control_endpoint ? 0 : GD_FENCE_NONE);
    w->zctx = zmq_ctx_new();
    w->cache = cache_new();
    w->env.fence = &w->fence;
    w->env.cache = w->cache;
    w->env.rv_lookup = cache_rv_lookup;
    w->env.rv_lookup_ud = w->cache;
    w->env.tracks_kind = tracks_kind;
    w->env.tracks_kind_ud = w;
    int code = GD_EXIT_FATAL_CONFIG;
    if (!w->zctx || !w->cache) {
        code = GD_EXIT_FAILURE;
        goto out;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    setup_client(w);
    if (setup_controllers(w) != GD_OK || setup_subs(w) != GD_OK || setup_control(w) != GD_OK)
        goto out;
    refollow(w);                        /* broadcast only: Nodes */
    if (!o->control_endpoint)
        start_loading(w, o->shards, o->nshards, NULL);
    gd_log(GD_LOG_INFO, "worker running", "reconciler", o->reconciler, "mode",
           o->control_endpoint ? "managed" : "standalone", NULL);
    code = run_loop(w);
    if (w->abandoned)
        return code;    /* threads are inside reconciles: the process exit ends them */
out:
    teardown(w);
    pthread_mutex_destroy(&w->follow_mu);
    free(w);
    return code;
}
