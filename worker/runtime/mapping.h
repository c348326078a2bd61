/* mapping.h — which reconcile keys an object change wakes up, as controller-runtime's
 * builder wires them for the godis operator:
 *
 *   For(GodisCluster)            → godiscluster controller, the object's own key
 *   For(Godis)                   → godis controller, the object's own key
 *   Owns(Godis)                  → godiscluster: the controller owner GodisCluster, else the
 *                                  cluster-name label
 *   Owns(ConfigMap)              → godiscluster: its controller owner GodisCluster, else the
 *                                  cluster-name label
 *   Owns(ReplicaSet/Service/PVC) → godis: their controller owner Godis, else label node-name
 *   Pod                          → godis: the Godis named by its node-name label; and
 *                                  godiscluster: its cluster-name label (readiness gates
 *                                  the next membership step)
 *   Watches(Node)                → godiscluster: every cluster with a member pod on the node
 *                                  (pods-by-node index of the cache)
 *
 * Predicates: a For object's update counts only when its generation or its metadata (labels,
 * annotations, finalizers, owners, deletion) changed — GenerationChanged, plus the metadata
 * changes a finalizer-driven reconcile needs; an owned object's update counts unless only
 * resourceVersion/managedFields changed; a Node's update counts only when schedulability,
 * taints or the Ready condition changed (heartbeats do not). Creates and deletes always count.
 * On an update whose owner changed, both the old and the new owner are woken. */
#ifndef WORKER_MAPPING_H
#define WORKER_MAPPING_H
#include <stdbool.h>
#include <cjson/cJSON.h>
#include "cache.h"

#include "gd_proto.h"

/* The controllers' names, which also fix their keys' shape and shard (gd_shard_of_key). */
#define MAP_CTRL_CLUSTER GD_CTRL_CLUSTER
#define MAP_CTRL_GODIS   GD_CTRL_GODIS

/* Receives each (controller, key) to enqueue; duplicates are possible (the queue dedups). */
typedef void (*map_emit_fn)(void *ud, const char *controller, const char *key);

/* One change of kind: old NULL for a create, new NULL for a delete, both for an update.
 * c is used for the Node mapping (may be NULL: Nodes then map to nothing). Returns the
 * number of emits. Unknown kinds map to nothing. */
int mapping_event(cache *c, const char *kind, const cJSON *old_obj, const cJSON *new_obj,
                  map_emit_fn emit, void *ud);

/* The predicates, exposed for tests. */
bool mapping_for_update_matters(const cJSON *old_obj, const cJSON *new_obj);
bool mapping_owned_update_matters(const cJSON *old_obj, const cJSON *new_obj);
bool mapping_node_update_matters(const cJSON *old_obj, const cJSON *new_obj);

#endif
