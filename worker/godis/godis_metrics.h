/* godis_metrics.h — per-cluster Prometheus series (issue 20.6), published by the worker that
 * owns the cluster's shard after each reconcile of it, served on the leader manager's
 * /metrics with the worker's label, labelled namespace and cluster:
 *   godis_cluster_members                 gauge   Raft members recorded (status.members)
 *   godis_cluster_ready_members           gauge   of those, members whose pod is Ready
 *   godis_cluster_updated_members         gauge   members on the spec's pod template
 *   godis_cluster_quorum                  gauge   1 while a majority of the members is Ready
 *   godis_cluster_rollout_in_progress     gauge   1 from a rollout's first member until its last
 *                                                 is back (status.rollout; a cluster waiting for
 *                                                 a --max-concurrent-rollouts slot shows 0)
 *   godis_cluster_membership_changes_total{kind}  counter  add (cluster meet), remove (cluster
 *                                                 forget), replace (a member's pod replaced by a
 *                                                 rollout, same id) — counted by this worker since
 *                                                 it took the shard (a reset, as counters have)
 * A deleted cluster's series are dropped by its next reconcile (the cache no longer has it);
 * a cluster whose shard moves to another worker has its series dropped by the old worker
 * when it hands the shard back (keymetrics.h). */
#ifndef GODIS_METRICS_H
#define GODIS_METRICS_H
#include <stdbool.h>
#include "godis_reconcile.h"

#define GODIS_M_MEMBERS "godis_cluster_members"
#define GODIS_M_READY "godis_cluster_ready_members"
#define GODIS_M_UPDATED "godis_cluster_updated_members"
#define GODIS_M_QUORUM "godis_cluster_quorum"
#define GODIS_M_ROLLOUT "godis_cluster_rollout_in_progress"
#define GODIS_M_CHANGES "godis_cluster_membership_changes_total"

typedef struct {
    int members, ready, updated;
    bool rollout;
} godis_cluster_figures;

void godis_metrics_publish(godis_env *e, const char *ns, const char *name,
                           const godis_cluster_figures *f);
/* kind: "add", "remove" or "replace". */
void godis_metrics_change(godis_env *e, const char *ns, const char *name, const char *kind);
void godis_metrics_forget(godis_env *e);

#endif
