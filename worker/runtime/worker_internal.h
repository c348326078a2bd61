/* worker_internal.h — the worker's state, shared by the files that make up godis-worker.
 *
 * Why a private header: worker_run (worker.c) owns one `worker`, and three files act on it —
 * worker_feed.c runs the subscriber threads that fill the cache, worker_shards.c moves
 * shards through loading → active → revoked, and worker_link.c speaks GDW1 on the control
 * socket (worker_opts.c and worker_remote.c work on the options, before and around
 * worker_run). Only the subscriber threads and the main thread share fields; which ones,
 * and how, is said beside each field. */
#ifndef WORKER_WORKER_INTERNAL_H
#define WORKER_WORKER_INTERNAL_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "cache.h"
#include "cache_sub.h"
#include "control.h"
#include "controller.h"
#include "gd_heap_trim.h"
#include "gd_sub.h"
#include "reconciler.h"
#include "worker.h"

#define MAX_REVOCATIONS 64

typedef struct worker worker;

typedef struct {
    worker *w;
    char kind[48];
    gd_sub *sub;
    cache_sub store;                /* the subscriber's replica: this kind in the cache */
    pthread_t th;
    bool running;
    _Atomic uint64_t applied_gen;   /* follow_gen last applied by this subscriber */
    atomic_bool synced;
    char ipc_path[256];             /* the PUB socket's file, to tell "no informer" */
    bool absent_logged;
    int wake_fd;                    /* eventfd: a new follow set, or stop (worker_wake_subs) */
} sub_slot;

/* Ends every subscriber thread's wait at once (they sleep in gd_sub_poll until a message,
 * a snapshot retry or this): after a new follow set, or when stopping. */
void worker_wake_subs(worker *w);

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
    bool reconnect;             /* remote: the manager does not know this connection */
    int64_t stop_deadline_wall_ms;
    bool abandoned;             /* reconciles still running at exit: skip the teardown */
    int64_t started_ms;
    /* eventfd ending the main loop's wait: a signal, a subscriber that came into sync, a key
     * of a revoking shard that finished (gd_worker_env.revoke_wake_fd) */
    int wake_fd;
    gd_heap_trim heap;          /* the main loop trims the heap once the feeds go quiet */
};

/* worker_feed.c: subscriber → cache → mapping → controllers */
bool        worker_tracks_kind(void *ud, const char *kind);
controller *worker_find_ctrl(worker *w, const char *name);
/* low: the change comes from an initial list or a resync, not from a real change (its keys
 * are queued behind every real change's, controller_enqueue_low). */
void        worker_map_change(worker *w, const char *kind, bool low, const cJSON *old_obj,
                              const cJSON *new_obj);
gd_err      worker_setup_subs(worker *w);
bool        worker_all_synced(worker *w);
/* While shards load: ms until an absent informer's grace ends and worker_all_synced may
 * change without any event (LOOP_IDLE_MS-ish when no grace is pending). */
int64_t     worker_sync_recheck_ms(const worker *w);

/* worker_shards.c: loading → active → revoked */
void worker_refollow(worker *w);
void worker_start_loading(worker *w, const int *shards, int n, cJSON **pending);
void worker_activate_loading(worker *w);
/* false: too many revocations in progress (the caller answers ERROR). */
bool worker_handle_revoke(worker *w, const gdw_msg *m);
/* A finished revocation's REVOKED frames: seq, shard list and pending keys JSON (malloc'd,
 * NULL on allocation failure). */
typedef struct {
    char seq[24];
    char *shards, *pending;
} worker_revoked;
bool worker_take_finished_revocation(worker *w, worker_revoked *out);
void worker_revoked_free(worker_revoked *r);

/* worker_link.c: the control socket (GDW1) */
gd_err worker_setup_control(worker *w);
void   worker_drain_control(worker *w);
void   worker_send_strs(worker *w, const char **frames, int n);
void   worker_send_hello(worker *w);
void   worker_send_error(worker *w, const char *why);
void   worker_send_revoked(worker *w, const worker_revoked *r);

#endif
