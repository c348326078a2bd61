/* godis_pdb.h — each GodisCluster's PodDisruptionBudget (issue 19.3): maxUnavailable 1 over
 * its member pods (label cluster-name), owned by the GodisCluster (garbage-collected with
 * it). The second line of defence behind the eviction webhook: without the webhook, a drain
 * evicts at most one member of a cluster at a time, and none while a member is missing
 * (during a move the new member's pod counts as unavailable until it is Ready). */
#ifndef GODIS_PDB_H
#define GODIS_PDB_H
#include <cjson/cJSON.h>
#include "godis_reconcile.h"

/* The PDB for a cluster; api_version "policy/v1" or "policy/v1beta1" (same fields). */
cJSON *godis_build_pdb(const char *api_version, const char *ns, const char *cluster,
                       const char *cluster_uid);

/* Creates the PDB of the GodisCluster at key (namespace/name) once a quorum of its recorded
 * members has a Ready pod (before that no eviction costs availability), unless this process has
 * already seen it created or present (one API call per cluster per worker process, not one
 * per reconcile: PDBs are not cached). policy/v1 when the API server serves it (Kubernetes
 * 1.21+), else policy/v1beta1 (1.20, the local control plane): asked once per process.
 * Best effort: a failure is logged and tried again on the next reconcile; it never holds
 * the membership work up. Fenced like every write. */
void godis_ensure_pdb(godis_env *e, const char *key);
/* The same for the GodisCluster gc as the caller read it (borrowed): the cluster controller's
 * reconcile, which has it already (a cache copy less per reconcile). */
void godis_ensure_pdb_of(godis_env *e, const cJSON *gc);

#endif
