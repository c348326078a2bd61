/* mapping.h — which reconcile keys an object change wakes up, as controller-runtime's
 * builder wires them (For / Owns / Watches). What each kind wakes is the domain's table
 * (gd_domain.h; the godis one, with its wiring drawn out, is common/godis/godis_domain.c):
 * this file only knows the rules.
 *
 * Predicates: a For object's update counts only when its generation or its metadata (labels,
 * annotations, finalizers, owners, deletion) changed — GenerationChanged, plus the metadata
 * changes a finalizer-driven reconcile needs — or the status of its Ready condition changed:
 * the GodisCluster reconcile that finds a write goes through (after a scale) writes
 * Ready=True and is done, while the rollout it holds back waits for exactly that (it ran
 * before the write, in that same reconcile); other status changes are its own bookkeeping
 * and are not seen again. An owned or labelled object's update counts
 * unless only resourceVersion/managedFields changed (or, for a wake marked ignore_status,
 * only those and its status: a ReplicaSet's); a Node's update counts only when
 * schedulability, taints or the Ready condition changed (heartbeats do not). Creates and
 * deletes always count. On an update whose owner or label changed, both the old and the new
 * one are woken. */
#ifndef WORKER_MAPPING_H
#define WORKER_MAPPING_H
#include <stdbool.h>
#include <cjson/cJSON.h>
#include "cache.h"

/* Receives each (controller, key) to enqueue; duplicates are possible (the queue dedups). */
typedef void (*map_emit_fn)(void *ud, const char *controller, const char *key);

/* One change of kind: old NULL for a create, new NULL for a delete, both for an update.
 * c is used for the Node mapping (may be NULL: Nodes then map to nothing). Returns the
 * number of emits. Kinds the domain does not watch map to nothing. */
int mapping_event(cache *c, const char *kind, const cJSON *old_obj, const cJSON *new_obj,
                  map_emit_fn emit, void *ud);

/* The predicates, exposed for tests. */
bool mapping_for_update_matters(const cJSON *old_obj, const cJSON *new_obj);
bool mapping_owned_update_matters(const cJSON *old_obj, const cJSON *new_obj);
bool mapping_node_update_matters(const cJSON *old_obj, const cJSON *new_obj);

#endif
