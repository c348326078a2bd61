/* reconciler.h — how reconcilers plug into the worker.
 *
 * A reconciler set is one or more controllers (name, For kind, reconcile function) chosen by
 * --reconciler. Each set registers itself from its own file with GD_RECONCILER_SET(), a
 * constructor that runs before main: the worker never names a reconciler's symbols, so a
 * reconciler file is added (worker/<domain>/reconcile_<domain>.c) without touching main.c or
 * the Makefile.
 *
 * The shipped worker has one set, "godis" (worker/godis/reconcile_godis.c: controllers
 * "godiscluster" For GodisCluster and "godis" For Godis). The test sets "noop" and "sleepy"
 * (tests/support/worker/) and the benchmark's "bench" (tools/bench/worker/) register the
 * same way but are linked only into bin/tests/godis-worker, the worker the integration tests
 * and benchmarks run.
 *
 * Controller names must match the wakes of the domain table (gd_domain.h; godis:
 * common/godis/godis_domain.c) for events to reach them; a set may also name its own
 * controllers and map events itself through map_event. */
#ifndef WORKER_RECONCILER_H
#define WORKER_RECONCILER_H
#include <stdbool.h>
#include <cjson/cJSON.h>
#include "controller.h"

#define GD_RECONCILER_MAX_CONTROLLERS 4

typedef struct {
    const char *controller;         /* "godiscluster": queue name, metrics label, and the
                                     * field of pending keys in GDW1 ASSIGN/REVOKED */
    const char *for_kind;           /* "GodisCluster" */
    gd_reconcile_fn reconcile;
} gd_reconciler;

/* Emits (controller, key) pairs; see mapping.h. */
typedef void (*gd_emit_fn)(void *ud, const char *controller, const char *key);

typedef struct gd_reconciler_set {
    const char *name;               /* --reconciler value */
    const char *help;               /* one line for --help */
    bool needs_api;                 /* writes to the API server: without a usable kubeconfig
                                     * the worker refuses to start (exit 2) */
    int ncontrollers;
    gd_reconciler controllers[GD_RECONCILER_MAX_CONTROLLERS];
    /* Optional: set up with --reconciler-arg (may be NULL); *ud is handed to every
     * reconcile as rec_ctx.ud. Non-GD_OK aborts start-up (exit 2). */
    gd_err (*init)(gd_worker_env *env, const char *arg, void **ud);
    void (*fini)(void *ud);
    /* Optional: replaces the standard mapping (mapping_event) for this set. */
    void (*map_event)(void *ud, const char *kind, const cJSON *old_obj, const cJSON *new_obj,
                      gd_emit_fn emit, void *emit_ud);
    /* Optional: the families its reconcilers publish with rec_metric_set/add (controller.h),
     * ended by a NULL name; rendered in the worker's metrics. */
    const gd_key_metric *key_metrics;
    struct gd_reconciler_set *next; /* registry link, set by gd_reconciler_register */
} gd_reconciler_set;

/* ---- what a reconcile may use besides rec_may_write (controller.h) ----
 * Reads go to the worker's cache replica, NULL when absent. Inside the controller's reconcile
 * (ctx->viewing) they lend the cached objects themselves: the handle returned is a cJSON
 * reference (cJSON_CreateObjectReference) that the caller frees with cJSON_Delete, which
 * frees the handle only, and what it refers to must never be modified (copy it first);
 * it is valid until the reconcile returns. Outside (tests), they are deep copies.
 * writes go through env->client after rec_may_write, and each successful write is reported
 * with rec_wrote so the next reconcile of the key waits for the cache to show it. */
cJSON *rec_cache_get(rec_ctx *ctx, const char *kind, const char *ns, const char *name);
/* Objects of kind in ns whose label label_key equals label_value (label_key NULL: every
 * object of ns; ns "": every object of a cluster-scoped kind such as Node), as a JSON array
 * ordered by key; never NULL except on NOMEM. */
cJSON *rec_cache_list(rec_ctx *ctx, const char *kind, const char *ns, const char *label_key,
                      const char *label_value);
/* After a successful write of kind ns/name that produced rv (deleted: it was a delete). */
/* Calls fn for every cached object of kind (borrowed, under the cache's read lock: fn must
 * not call into the cache); fn returns non-zero to stop. Cheap: nothing is copied. */
int    rec_cache_each(rec_ctx *ctx, const char *kind,
                      int (*fn)(void *ud, const char *key, const cJSON *obj), void *ud);
void   rec_wrote(rec_ctx *ctx, const char *kind, const char *ns, const char *name,
                 const char *rv, bool deleted);

void gd_reconciler_register(gd_reconciler_set *s);
const gd_reconciler_set *gd_reconciler_find(const char *name);
/* First registered set (iterate with ->next). */
const gd_reconciler_set *gd_reconciler_first(void);

#define GD_RECONCILER_SET(var)                                                           \
    static void var##_register(void) __attribute__((constructor));                      \
    static void var##_register(void) { gd_reconciler_register(&var); }

#endif
