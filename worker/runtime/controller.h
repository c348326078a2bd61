/* controller.h — a controller-runtime Controller in C: a name, a workqueue, and
 * MaxConcurrentReconciles threads that call one reconcile function per key.
 *
 * What the threads do with a key, as controller-runtime's reconcileHandler does:
 *   error           → AddRateLimited (backoff per key), result="error", errors_total++
 *   requeue-after   → Forget + AddAfter,                 result="requeue_after"
 *   requeue         → AddRateLimited,                    result="requeue"
 *   done            → Forget,                            result="success"
 * plus what a database operator needs on top (docs/reconcile.md rule 8, docs/PROTOCOL.md §2):
 *   - read your own writes: every write a reconciler reports (rec_wrote, reconciler.h)
 *     records the resourceVersion it produced under the reconcile key; before the key is
 *     reconciled again the cache must have caught up with all of them, else the key is
 *     requeued shortly (stale_requeue_ms, growing to 500 ms as the wait lengthens; a child's
 *     event that shows the write wakes the key at once) without calling the reconciler. Expectations
 *     that never come true (the object left the cache) expire after expectation_ttl_ms.
 *   - fencing: threads take no key while the lease deadline has passed, and the write
 *     helpers refuse with GD_ERR_FENCED once it passes mid-reconcile; such a key goes back
 *     to the queue without a backoff penalty.
 *   - shards: a key is processed only while its shard is owned. Revoking a shard takes its
 *     pending keys out of the queue, diverts later adds (requeues of in-flight reconciles
 *     included) to a pending list, and reports when the in-flight keys have finished.
 * Several controllers live in one worker; each has its own queue and threads. */
#ifndef WORKER_CONTROLLER_H
#define WORKER_CONTROLLER_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "fence.h"
#include "gd_err.h"
#include "gd_proto.h"
#include "gd_metrics.h"
#include "workqueue.h"

/* ---- what a reconcile returns ---- */
typedef enum {
    GD_RESULT_DONE = 0,
    GD_RESULT_REQUEUE,          /* requeue with the per-key backoff */
    GD_RESULT_REQUEUE_AFTER,    /* requeue after after_ms */
    GD_RESULT_ERROR,            /* failed: requeue with backoff, counted as an error */
} gd_result_kind;

typedef struct {
    gd_result_kind kind;
    int64_t after_ms;           /* REQUEUE_AFTER */
    gd_err err;                 /* ERROR */
} gd_result;

static inline gd_result gd_done(void) { return (gd_result){GD_RESULT_DONE, 0, GD_OK}; }
static inline gd_result gd_requeue(void) { return (gd_result){GD_RESULT_REQUEUE, 0, GD_OK}; }
static inline gd_result gd_requeue_after(int64_t ms)
{
    return (gd_result){GD_RESULT_REQUEUE_AFTER, ms, GD_OK};
}
static inline gd_result gd_error(gd_err e) { return (gd_result){GD_RESULT_ERROR, 0, e}; }

/* ---- what the worker shares with all its controllers ---- */

/* How a controller sees the cache for read-your-own-writes: the cached resourceVersion of
 * kind/key. Returns false when the object is not cached; *deleting tells whether it carries
 * a deletionTimestamp. */
typedef bool (*gd_rv_lookup_fn)(void *ud, const char *kind, const char *key, char *rv,
                                size_t cap, bool *deleting);

struct k8s_client;
struct cache;
typedef struct {
    gd_fence *fence;
    struct k8s_client *client;      /* NULL in tests: write helpers return GD_ERR_CONFIG */
    struct cache *cache;            /* handed to reconcilers, may be NULL in tests */
    gd_rv_lookup_fn rv_lookup;      /* NULL: read-your-own-writes disabled */
    void *rv_lookup_ud;
    /* Whether the cache follows kind at all (NULL: every kind). A write of a kind no
     * informer feeds (an Event, a kind without informer) is not waited for: the cache
     * would never show it. */
    bool (*tracks_kind)(void *ud, const char *kind);
    void *tracks_kind_ud;
    const char *cluster_domain;     /* --cluster-domain (NULL: cluster.local) */
    /* --max-concurrent-rollouts: objects of this worker's shards whose members may be
     * replaced at once (0: no limit); --default-godis-image (NULL: the domain's own). */
    int max_concurrent_rollouts;
    const char *default_image;
    /* Poked when a reconcile of a key whose shard is being revoked finishes: the worker's
     * main loop then answers the revocation at once (NULL: nobody to tell). A pointer, as
     * the env is zero-initialised and 0 is a valid fd. */
    const int *revoke_wake_fd;
} gd_worker_env;

/* ---- the reconcile context ---- */
typedef struct controller controller;
typedef struct {
    controller *ctrl;
    const char *controller_name;
    const char *key;
    gd_worker_env *env;
    void *ud;                       /* the reconciler's own data */
    int writes;                     /* writes recorded by this reconcile */
    bool viewing;                   /* a cache view section is open (run by the controller):
                                     * rec_cache_get/list lend the cached objects */
    int view_slot;
} rec_ctx;

typedef gd_result (*gd_reconcile_fn)(rec_ctx *ctx, const char *key);

typedef struct {
    const char *name;               /* "godiscluster" (copied) */
    gd_reconcile_fn reconcile;
    void *ud;
    int max_concurrent;             /* MaxConcurrentReconciles, default 1 */
    wq_config queue;                /* rate limiter; defaults from wq_config_default */
    int64_t stale_requeue_ms;       /* default 50 */
    int64_t expectation_ttl_ms;     /* default 10000 */
} controller_opts;
void controller_opts_default(controller_opts *o, const char *name, gd_reconcile_fn fn);

/* env is borrowed and must outlive the controller. NULL on failure. */
controller *controller_new(const controller_opts *o, gd_worker_env *env);
/* Stops (drain up to 1 s, then abandon), joins the threads, frees. */
void controller_destroy(controller **c);
const char *controller_name(const controller *c);
wq *controller_queue(controller *c);

gd_err controller_start(controller *c);
/* Stops taking keys (queued ones are abandoned); waits up to timeout_ms for in-flight
 * reconciles (< 0: forever). GD_ERR_TIMEOUT leaves the threads running (not joined). */
gd_err controller_stop(controller *c, int64_t timeout_ms);

/* Enqueue through the shard gate: owned shard → queue; revoking shard → pending list;
 * otherwise dropped (the owner of that shard sees the same event). */
void controller_enqueue(controller *c, const char *key);
/* At low priority (wq_add_low): a key from an initial list or a resync, not a real change. */
void controller_enqueue_low(controller *c, const char *key);
void controller_enqueue_after(controller *c, const char *key, int64_t delay_ms);

/* ---- shards ---- */
/* Takes ownership of the shards (ASSIGN); a shard being revoked is taken back. all=true
 * owns every shard (standalone mode). */
void controller_own_shards(controller *c, const int *shards, int n);
void controller_own_all(controller *c);
/* Starts revoking: the shards stop being owned, their queued and delayed keys move to the
 * pending list, later adds of their keys go there too. */
void controller_revoke_begin(controller *c, const int *shards, int n);
/* Number of keys of these shards that are being reconciled now. */
int  controller_inflight(controller *c, const int *shards, int n);
/* Finishes a revocation: appends the shards' pending keys to arr (a JSON array; may be
 * NULL to discard them) and forgets them. Call when controller_inflight() is 0. */
void controller_revoke_finish(controller *c, const int *shards, int n, cJSON *arr);
bool controller_owns(controller *c, int shard);
/* The shard of a key as this controller computes it (-1 when it cannot). */
int  controller_shard_of(const controller *c, const char *key);

/* GD_OK while a write may start, GD_ERR_FENCED once the lease deadline has passed. Every
 * write helper calls it first. */
gd_err rec_may_write(const rec_ctx *ctx);

/* ---- read your own writes (used by rec_wrote in reconciler.c; exposed for tests) ---- */
/* Records that this reconcile wrote kind/objkey at rv (deleted: the object was deleted). */
void rec_record_write(rec_ctx *ctx, const char *kind, const char *objkey, const char *rv,
                      bool deleted);
/* True when the cache has caught up with every write recorded under key (and forgets
 * those that have). */
bool controller_caught_up(controller *c, const char *key);

/* ---- metrics ---- */
typedef struct {
    uint64_t success, error, requeue, requeue_after, stale, fenced;
    int active;
} controller_stats;
void controller_get_stats(controller *c, controller_stats *s);
/* Renders controller_runtime_* and workqueue_* for every controller in the array, each
 * family under one HELP/TYPE header. */
void controllers_render_metrics(controller **cs, int n, gd_sbuf *out);

/* ---- per-object metrics (keymetrics.h) ----
 * A reconciler's own families, e.g. {"godis_cluster_members", "gauge", "..."}; a table
 * ends with a row whose name is NULL. */
typedef struct {
    const char *name, *type, *help;
} gd_key_metric;
/* The sample family{labels} of the object this reconcile is about (its key): set to v, or
 * increased by d (a counter; d 0 makes the series exist at 0). Labels are preformatted and
 * escaped (gd_prom_escape). Dropped by rec_metrics_forget (the object is gone) and when
 * the key's shard leaves this worker, so no stale series outlives a deleted or moved
 * object. */
void rec_metric_set(rec_ctx *ctx, const char *family, const char *labels, double v);
void rec_metric_add(rec_ctx *ctx, const char *family, const char *labels, double d);
void rec_metrics_forget(rec_ctx *ctx);
/* Each family of fams under one HELP/TYPE header, with every controller's samples. */
void controllers_render_key_metrics(controller **cs, int n, const gd_key_metric *fams,
                                    gd_sbuf *out);
/* Keys with per-object samples (for tests). */
int  controller_key_metrics_count(controller *c);

#endif
