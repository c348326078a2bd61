/* worker_feed.c — the subscription side of the worker: one thread per informer kind
 * takes its events into the cache and maps them to controller keys.
 *
 * Why threads of their own: a gd_sub fetches snapshots synchronously, and an informer that
 * does not answer must not stall the manager's heartbeats on the main thread. Each thread's
 * gd_sub keeps its replica in the cache (cache_sub.h) and the thread maps its events to keys
 * (both thread-safe); it follows the shard set the main thread publishes (follow[] +
 * follow_gen, see worker_refollow), and the objects of shards it stops following leave the
 * cache with them. */
#include "worker_internal.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "gd_hoptrace.h"
#include "gd_json.h"
#include "gd_log.h"
#include "gd_time.h"
#include "gd_wake.h"
#include "mapping.h"
#include "workqueue.h"

/* Read-your-own-writes waits only for kinds an informer feeds into the cache. */
bool worker_tracks_kind(void *ud, const char *kind)
{
    worker *w = ud;
    for (int i = 0; w && i < w->nsubs; i++)
        if (strcmp(w->subs[i].kind, kind) == 0)
            return true;
    return false;
}

controller *worker_find_ctrl(worker *w, const char *name)
{
    for (int i = 0; i < w->nctrls; i++)
        if (strcmp(controller_name(w->ctrls[i]), name) == 0)
            return w->ctrls[i];
    return NULL;
}

typedef struct {
    worker *w;
    bool low;
} emit_ctx;

static void emit_key(void *ud, const char *ctrl, const char *key)
{
    const emit_ctx *e = ud;
    controller *c = worker_find_ctrl(e->w, ctrl);
    if (c && e->low)
        controller_enqueue_low(c, key);
    else if (c)
        controller_enqueue(c, key);
}

void worker_map_change(worker *w, const char *kind, bool low, const cJSON *old_obj,
                       const cJSON *new_obj)
{
    emit_ctx e = {w, low};
    if (w->set->map_event)
        w->set->map_event(w->set_ud, kind, old_obj, new_obj, emit_key, &e);
    else
        mapping_event(w->cache, kind, old_obj, new_obj, emit_key, &e);
}

/* Where an event comes from (PROTOCOL.md §1, "Origin of an event"), as controller-runtime's
 * WithLowPriorityWhenUnchanged decides it: an ADDED of the informer's initial list or found
 * in a snapshot (shards taken over, a restarted informer), or a MODIFIED that repeats the
 * resourceVersion the replica had (a --resync-period republish) is not a change a user just
 * made. A MODIFIED with a new resourceVersion and a DELETED are, even when a snapshot after
 * a gap is what revealed them. */
static bool event_is_low(const sub_slot *s, gd_ev ev, const cJSON *old_obj,
                         const cJSON *new_obj, bool resync)
{
    if (ev == GD_EV_ADDED)
        return resync || !gd_sub_informer_listed(s->sub);
    if (ev == GD_EV_MODIFIED && old_obj && new_obj) {
        const char *a = gd_meta_rv(old_obj), *b = gd_meta_rv(new_obj);
        return *a && strcmp(a, b) == 0;
    }
    return false;
}

/* The cache is the subscribers' replica store (cache_sub.h): by the time an event arrives
 * the cache holds new_obj, and old_obj is the object the key had before (borrowed; old
 * owners and labels for the mapping). */
static void on_sub_event(void *ud, gd_ev ev, const char *key, int shard,
                         const cJSON *old_obj, const cJSON *new_obj, bool resync)
{
    sub_slot *s = ud;
    if (ev == GD_EV_SYNCED) {
        gd_log(GD_LOG_INFO, "informer synced", "kind", s->kind, NULL);
        return;
    }
    if (new_obj)
        gd_hop_rv(gd_meta_rv(new_obj), GD_HOP_CACHE);
    worker_map_change(s->w, s->kind, event_is_low(s, ev, old_obj, new_obj, resync),
                      ev == GD_EV_ADDED ? NULL : old_obj, new_obj);
}

/* A subscriber thread sleeps until a message, a snapshot retry falling due, or its wake_fd
 * (a new follow set, stop): 9 kinds polled every 50 ms were ~180 wake-ups a second per
 * idle worker. The timeout is only a safety net. */
#define SUB_IDLE_POLL_MS 1000

void worker_wake_subs(worker *w)
{
    for (int i = 0; i < w->nsubs; i++)
        gd_wake_poke(w->subs[i].wake_fd);
}

/* In sync now: the main loop may activate loading shards. Checked after a new follow set
 * too, not only after a poll: the follow set's snapshot is what brings a subscriber into
 * sync, and the poll after it sleeps until the next message (an idle informer's heartbeat,
 * up to a second), which held every shard taken over back that long. */
static void note_synced(sub_slot *s)
{
    bool synced = gd_sub_synced(s->sub);
    if (!atomic_exchange(&s->synced, synced) && synced)
        gd_wake_poke(s->w->wake_fd);
}

static void *sub_thread(void *arg)
{
    sub_slot *s = arg;
    worker *w = s->w;
    bool want[GD_NSHARDS];
    uint64_t applied = 0;
    while (!atomic_load(&w->subs_stop)) {
        uint64_t gen = atomic_load(&w->follow_gen);
        if (gen != applied) {
            pthread_mutex_lock(&w->follow_mu);
            gen = atomic_load(&w->follow_gen);
            memcpy(want, w->follow, sizeof want);
            pthread_mutex_unlock(&w->follow_mu);
            int shards[GD_NSHARDS], n = 0;
            for (int i = 0; i < GD_NSHARDS; i++)
                if (want[i])
                    shards[n++] = i;
            atomic_store(&s->synced, false);
            gd_err rc = gd_sub_set_shards(s->sub, shards, (size_t)n);
            if (rc != GD_OK && rc != GD_ERR_TIMEOUT && rc != GD_ERR_CANCELLED)
                gd_log(GD_LOG_ERROR, "subscriber: cannot follow shards", "kind", s->kind,
                       "error", gd_strerror(rc), NULL);
            /* the shards no longer followed left the cache without events (cache_sub) */
            applied = gen;
            atomic_store(&s->applied_gen, gen);
            note_synced(s);
        }
        /* the keys one batch of messages maps to wake the reconcile threads once */
        wq_hold_wakeups();
        gd_sub_poll(s->sub, SUB_IDLE_POLL_MS);
        wq_release_wakeups();
        note_synced(s);
    }
    return NULL;
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

int64_t worker_sync_recheck_ms(const worker *w)
{
    int64_t left = w->started_ms + ABSENT_GRACE_MS - gd_mono_ms();
    return left >= 0 ? left + 1 : 1000;
}

/* Every subscriber follows the loading shards and has their snapshot. */
bool worker_all_synced(worker *w)
{
    for (int i = 0; i < w->nsubs; i++) {
        sub_slot *s = &w->subs[i];
        if ((atomic_load(&s->applied_gen) < w->loading_gen || !atomic_load(&s->synced)) &&
            !informer_absent(w, s))
            return false;
    }
    return true;
}

gd_err worker_setup_subs(worker *w)
{
    for (int i = 0; i < w->o->ninformers; i++) {
        sub_slot *s = &w->subs[w->nsubs];
        const worker_endpoint *e = &w->o->informers[i];
        s->w = w;
        snprintf(s->kind, sizeof s->kind, "%s", e->kind);
        if (strncmp(e->pub, "ipc://", 6) == 0)      /* a tcp:// informer has no file */
            snprintf(s->ipc_path, sizeof s->ipc_path, "%s", e->pub + 6);
        gd_sub_opts so;
        gd_sub_opts_default(&so);
        so.kind = e->kind;
        so.pub_endpoint = e->pub;
        so.snap_endpoint = e->snap;
        so.curve = &w->o->curve;        /* used for tcp:// only (PROTOCOL.md §3.2) */
        so.server_public = w->o->server_public;
        so.on_event = on_sub_event;
        so.ud = s;
        so.snapshot_timeout_ms = 1000;
        gd_sub_store store;
        cache_sub_store(&s->store, w->cache, e->kind, &store);
        so.store = &store;          /* the cache is the replica (cache_sub.h) */
        so.stop = &w->subs_stop;    /* a stopping worker does not sit out a snapshot wait */
        s->wake_fd = gd_wake_open();
        if (s->wake_fd < 0) {
            gd_log(GD_LOG_ERROR, "cannot create subscriber: eventfd", "kind", e->kind,
                   "error", strerror(errno), NULL);
            return GD_ERR_IO;
        }
        so.wake_fd = s->wake_fd;
        s->sub = gd_sub_new(w->zctx, &so);
        if (!s->sub) {
            gd_log(GD_LOG_ERROR, "cannot create subscriber", "kind", e->kind, "pub", e->pub,
                   NULL);
            gd_wake_close(&s->wake_fd);
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
