/* godis_reconcile.h — the GodisCluster and Godis reconcilers (docs/reconcile.md).
 *
 * They read through a godis_env (the worker's cache replica in production; the API server
 * directly in some tests) and write through common/'s client, asking the env before each
 * write (fencing: no write after the lease deadline) and telling it after (read your own
 * writes). One call performs at most one membership step and says whether to requeue. */
#ifndef GODIS_RECONCILE_H
#define GODIS_RECONCILE_H
#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "gd_err.h"
#include "k8s_client.h"

typedef struct godis_env godis_env;
struct godis_env {
    k8s_client *client;
    /* Cache reads, NULL when absent. kind: "GodisCluster", "Godis", "ConfigMap", "Service",
     * "PersistentVolumeClaim", "ReplicaSet", "Pod", "Node", "PersistentVolume"
     * (cluster-scoped kinds with ns ""). What they return is a handle the caller gives back
     * with godis_drop. In the worker it lends the cached object itself (valid until the
     * reconcile returns, no copy made), so it is const all the way down: nothing reached
     * through it may be modified, not even a child found with cJSON_GetObjectItem (which
     * drops the const); cJSON_Duplicate what is to change. GODIS_CACHE_VERIFY=1 catches a
     * reconcile that breaks this (cache.h). */
    const cJSON *(*get)(godis_env *e, const char *kind, const char *ns, const char *name);
    /* Objects of kind in ns carrying label key=value, as an array handle (godis_drop). */
    const cJSON *(*list)(godis_env *e, const char *kind, const char *ns, const char *label_key,
                         const char *label_value);
    /* Before every write: GD_OK, or GD_ERR_FENCED when writing is no longer allowed. */
    gd_err (*may_write)(godis_env *e);
    /* After every successful write: the object written and the resourceVersion the API
     * server returned (deleted: it was deleted; rv may then be ""). */
    void (*wrote)(godis_env *e, const char *kind, const char *ns, const char *name,
                  const char *rv, bool deleted);
    int64_t node_notready_grace_ms;   /* a NotReady node counts as bad after this long */
    int godis_timeout_ms;             /* one meet/forget, retries included */
    int godis_port;                   /* client port to dial (6379) */
    const char *cluster_domain;       /* Service names: <svc>.<ns>.svc.<domain>; NULL: cluster.local */
    /* Optional (NULL in tests that do not need them): every cached object of kind, borrowed
     * (fn must not call back into the env); the per-cluster series of /metrics, kept under
     * this reconcile's key (add: a counter increment), and their removal. */
    int (*each)(godis_env *e, const char *kind,
                int (*fn)(void *ud, const char *key, const cJSON *obj), void *ud);
    void (*metric)(godis_env *e, const char *family, const char *labels, double v, bool add);
    void (*metrics_forget)(godis_env *e);
    /* Optional: called by the cluster controller with the live GodisCluster it read (borrowed),
     * before any step: side work on the same copy (its PodDisruptionBudget), no second read. */
    void (*cluster_read)(godis_env *e, const cJSON *cluster);
    int max_concurrent_rollouts;      /* per worker (godis_slots.h); 0: no limit */
    void *ud;
};

typedef enum {
    GODIS_DONE = 0,
    GODIS_REQUEUE,          /* more to do: requeue now (rate-limited by the queue) */
    GODIS_REQUEUE_AFTER,    /* look again after after_ms */
    GODIS_ERROR,            /* failed: rate-limited requeue with backoff */
} godis_result_kind;

typedef struct {
    godis_result_kind kind;
    int64_t after_ms;
    gd_err err;
} godis_result;

/* Gives back what get or list returned (frees a handle; a lent object stays the cache's). */
static inline void godis_drop(const cJSON *handle) { cJSON_Delete((cJSON *)handle); }

/* key: "namespace/name". */
godis_result godis_reconcile_cluster(godis_env *e, const char *key);
godis_result godis_reconcile_godis(godis_env *e, const char *key);

/* Creates a core/v1 Event about obj (best effort: failures are logged, not returned). */
void godis_emit_event(godis_env *e, const cJSON *obj, const char *type, const char *reason,
                      const char *message);


#endif
