/* godis_cluster_ctx.h — internal to the GodisCluster reconciler: the state one reconcile
 * works on, shared by the two files that make it up. godis_cluster_observe.c fills it from
 * the cache (read only: the godis_view the planner decides on, plus each member's pod IP
 * and node); godis_reconcile_cluster.c plans and performs the step on it. Split so that
 * what the reconcile sees can be read apart from what it does; nothing outside those two
 * files includes this header (the controller's API is godis_reconcile.h). */
#ifndef GODIS_CLUSTER_CTX_H
#define GODIS_CLUSTER_CTX_H
#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "godis_place.h"
#include "godis_plan.h"
#include "godis_reconcile.h"

typedef struct {
    godis_env *e;
    const cJSON *cluster;    /* the GodisCluster read (lent by the cache, godis_drop) or, after
                              * a status write, the one the API server returned */
    const cJSON *godises_list; /* the cluster's Godis objects as listed (godis_drop) */
    cJSON *godises;          /* ours: references to those, plus unlabelled ones (copies) */
    const cJSON *configmap;  /* or NULL */
    cJSON *written;          /* our last status write as the API server returned it */
    const char *ns, *name, *uid;
    godis_view v;
    char phase[32];
    char pod_ip[GODIS_MAX_MEMBERS][64]; /* by observed index */
    char pod_node[GODIS_MAX_MEMBERS][GODIS_NODE_NAME_MAX];       /* by observed index */
    char blocked_why[GODIS_MAX_MEMBERS][GODIS_BLOCKED_WHY_MAX];  /* godis_member.blocked_why */
    int64_t grace_wait_ms;   /* >0: a member's node turns bad for migration after this long */
    bool observed;           /* v and updated hold this reconcile's observation (metrics) */
    int updated;             /* members on the spec's template (godis_rollout) */
    int64_t storage_wait_ms; /* >0: a volume resize is under way (godis_storage.h) */
    cJSON *status_base;      /* godis_rollout.status_base */
} godis_cluster_ctx;

/* The recorded state from c->cluster's status (phase, nextID, the intents, members) into
 * c->v; called again after the reconcile's own status write replaced c->cluster. */
void godis_cluster_read_status(godis_cluster_ctx *c);
/* Everything else the planner needs, from the cache: the ConfigMap, this cluster's Godis
 * objects (and members missing their label), each member's pods, ReplicaSet and node,
 * recorded members whose Godis is gone, where a moving member could go. Call after
 * godis_cluster_read_status. A NotReady node still within its grace sets
 * c->grace_wait_ms. */
void godis_cluster_observe(godis_cluster_ctx *c);
/* The index of member id in c->v.observed, or -1. */
int godis_cluster_observed_index(const godis_cluster_ctx *c, int64_t id);

#endif
