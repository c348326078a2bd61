/* godis_place.h — could a member's replacement be scheduled anywhere else? (issue 19.2)
 *
 * A move adds a new member before it removes the old one. If no node could take the new
 * member, recording the scale-out would only leave a Pending pod, a cluster of n+1 members
 * needing one more vote, and a drain waiting with no word of why. So before a move starts,
 * the operator asks its Node cache the coarse question the scheduler would answer, and
 * a move with no candidate node waits with the condition Progressing reason
 * CannotMoveMember, a Warning Event, and the eviction denied with that message.
 *
 * A node is a candidate for the replacement when it is
 *   - not being deleted, not cordoned (spec.unschedulable),
 *   - Ready (condition Ready=True),
 *   - without a NoSchedule or NoExecute taint (member pods tolerate none; a cordoned or
 *     NotReady node's own taints are reported as cordoned / not Ready),
 *   - not the moving member's node,
 *   - with anti-affinity "required": not holding a pod of another member of the cluster.
 * Resources, volume topology and preferred terms are the scheduler's finer business: when it
 * still cannot place the pod, the pod's PodScheduled=False reason Unschedulable is surfaced
 * instead (godis_pod_unschedulable; the planner's MemberUnschedulable). With no Node in the
 * cache at all nothing is judged (the cache may be empty, not the cluster): the move starts,
 * and the scheduler's answer is surfaced the same way. */
#ifndef GODIS_PLACE_H
#define GODIS_PLACE_H
#include <stdbool.h>
#include <stddef.h>
#include <cjson/cJSON.h>
#include "godis_plan.h"
#include "godis_reconcile.h"

#define GODIS_NODE_NAME_MAX 254
#define GODIS_BLOCKED_WHY_MAX 400

typedef struct {
    const char *own_node;               /* the moving member's node (never a candidate) */
    const char *const *member_nodes;    /* nodes holding a pod of any member of the cluster */
    int nmember_nodes;
    bool required;                      /* spec.antiAffinity "required" */
} godis_place_req;

/* Counts the candidate nodes in nodes (an array of Node objects). With none, why gets
 * "cannot be moved: no other schedulable node for its replacement (node-1: its own node,
 * node-2: cordoned, ...)". Returns -1 when nodes is empty (not judged). */
int godis_place_candidates(const cJSON *nodes, const godis_place_req *r, char *why, size_t cap);

/* A pod the scheduler could not place: PodScheduled=False with reason Unschedulable. msg
 * gets "cannot be scheduled: <the scheduler's message>". */
bool godis_pod_unschedulable(const cJSON *pod, char *msg, size_t cap);

/* For every observed member that is to move (node bad or reschedule asked) and Ready, sets
 * no_node when no other node could take its replacement, with why[idx] (by observed index)
 * as its blocked_why. pod_node[idx]: the node of member idx's pod ("" if none). */
void godis_place_observe(godis_env *e, const cJSON *cluster, godis_view *v,
                         char pod_node[][GODIS_NODE_NAME_MAX],
                         char why[][GODIS_BLOCKED_WHY_MAX]);

#endif
