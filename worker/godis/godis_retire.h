/* godis_retire.h — taking a member away for good, in the order that keeps a Raft cluster
 * safe (see godis_plan.h): stopping a forgotten member, removing its Godis (finalizer last,
 * Retain'd volume orphaned first), and letting go of everything when the GodisCluster
 * itself is deleted. Each call is idempotent: a retry after a crash or a Conflict repeats
 * only what is still to do. */
#ifndef GODIS_RETIRE_H
#define GODIS_RETIRE_H
#include <stdbool.h>
#include <stdint.h>
#include "godis_plan.h"
#include "godis_reconcile.h"

/* Stops member `godis` (a Godis name) of namespace ns: its ReplicaSet to 0 replicas,
 * annotated GODIS_ANN_RETIRED so nothing scales it up again, then every pod of it deleted
 * (gracePeriodSeconds 0 for a pod whose node is NotReady: no kubelet will confirm). The
 * ReplicaSet first: a pod deleted while its ReplicaSet still wants one is recreated, with
 * the same id and volume — a forgotten member back as a voter. */
gd_err godis_stop_member(godis_env *e, const char *ns, const char *godis);

/* Before a stop first (godis_plan_stop_first): asks each Ready member besides `victim`
 * whether it answers now (`hello` on its pod IP, else its Service name), each within
 * GODIS_PROBE_EACH_MS and all within GODIS_PROBE_BUDGET_MS, and marks each that did not
 * (or was not reached within the budget) silent in v; returns how many. A pod turns NotReady
 * only when its node's grace period ends (~40 s) — a stop first counting on a member of a
 * node that just died would leave the forget without a quorum. pod_ip: by observed index. */
#define GODIS_PROBE_EACH_MS 300
#define GODIS_PROBE_BUDGET_MS 1500
int godis_probe_survivors(godis_env *e, const char *ns, const char *cluster, godis_view *v,
                          const char (*pod_ip)[64], int64_t victim);

/* The forgets that got +OK, remembered by this worker process as (GodisCluster uid, id).
 * The durable record of a confirmed forget is the ConfigMap rewrite, but the API server may
 * be unreachable just when +OK arrives (a kube-apiserver restart): the record and the stop
 * both fail, and a retry that forgot the +OK sends the forget again — which cannot commit
 * while the forgotten member, still running or restarted by its kubelet from its WAL as a
 * voter, keeps disturbing the survivors. Remembered, the retry goes straight to the stop and
 * the record. Ids are never reused within a cluster, so an entry is true for good; the table
 * keeps the latest GODIS_FORGET_MEMO entries (an evicted one only costs a repeated forget). */
#define GODIS_FORGET_MEMO 256
void godis_forget_memo_note(const char *cluster_uid, int64_t id);
bool godis_forget_memo_has(const char *cluster_uid, int64_t id);

/* Removes a stopped member's Godis: with retain, its PVC is orphaned first (owner reference
 * dropped, annotated GODIS_ANN_RETAINED_FROM) so the garbage collector keeps it; then
 * GODIS_FINALIZER is dropped and the Godis deleted (background propagation). */
gd_err godis_remove_godis(godis_env *e, const cJSON *godis, bool retain);

/* Drops `finalizer` from obj (an update with obj's resourceVersion); GD_OK when absent. */
gd_err godis_drop_finalizer(godis_env *e, const k8s_resource *r, const cJSON *obj,
                            const char *finalizer);
/* Adds it; GD_OK when present. */
gd_err godis_add_finalizer(godis_env *e, const k8s_resource *r, const cJSON *obj,
                           const char *finalizer);

/* True for spec.storage.reclaimPolicy Retain (default Delete). */
bool godis_retain_volumes(const cJSON *cluster);

/* The GodisCluster is being deleted: nothing is forgotten (the whole cluster goes), but
 * with Retain every member's PVC is orphaned first; then the Godis finalizers and the
 * cluster's own are dropped, so the deletion finishes with nothing left Terminating. */
godis_result godis_release_cluster(godis_env *e, const cJSON *cluster);
/* The GodisCluster ns/name is gone already (deleted without waiting, e.g. by its namespace's
 * deletion): the Godis objects it controlled that are being deleted lose their finalizer.
 * The deletion of the cluster wakes no Godis reconcile, so the cluster reconcile does it. */
godis_result godis_release_orphans(godis_env *e, const char *ns, const char *name);

#endif
