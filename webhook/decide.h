/* decide.h — what the eviction webhook answers, as pure functions over the pod the API
 * server holds (or its absence) and a per-cluster rate limiter, so every branch is unit
 * tested without a server.
 *
 * The answers (seed 003, and kubectl's drain loop in k8s.io/kubectl/pkg/drain, which retries
 * an eviction 5 s after a 429 and ends on a 404):
 *   not a pod eviction, or not a godis member pod   → allow, at once
 *   pod not found (the member was replaced)          → 404 NotFound
 *   member pod already marked, or being deleted      → 429, nothing changed
 *   member pod, cluster marked within the interval   → 429, nothing changed (a forged or
 *                                                      repeated review moves at most one
 *                                                      member per cluster per interval)
 *   member pod                                        → mark it (the reschedule annotation),
 *                                                      429 saying it is being moved; a dry
 *                                                      run answers the same and marks nothing */
#ifndef WH_DECIDE_H
#define WH_DECIDE_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "review.h"

#define WH_ANN_RESCHEDULE "godis.kumkeehyun.github.com/reschedule"

/* A godis member pod, as the operator makes it (worker/godis/godis_children.c): labels
 * cluster-name=<c> and node-name=<c>-<id> with a positive integer id, and a controller
 * ownerReference to the ReplicaSet named <c>-<id>. Writes the cluster's name into cluster.
 * Labels alone are not trusted: anyone can label a pod, but only the operator's ReplicaSets
 * own member pods, so a look-alike is allowed like any other pod. */
bool wh_pod_member(const cJSON *pod, char *cluster, size_t cap);

typedef enum {
    WH_ACT_ALLOW = 0,     /* allowed as is */
    WH_ACT_GONE,          /* 404 */
    WH_ACT_WAIT,          /* 429, nothing to do (already marked, deleting, rate-limited) */
    WH_ACT_MARK,          /* 429 after the annotation is set (dry run: not set) */
} wh_action;

/* Per-cluster limiter of marks: at most one mark per cluster (namespace/name) every
 * interval_ms. Bounded: the table holds cap clusters; when full, the entry marked longest
 * ago is reused (it is older than the interval or the table would not need it: see .c). */
typedef struct wh_limiter wh_limiter;
wh_limiter *wh_limiter_new(int64_t interval_ms, int cap);
void wh_limiter_destroy(wh_limiter **l);
/* True (and the cluster is counted as marked at now_ms) when a mark may happen now; else
 * *wait_ms gets the time until it may. */
bool wh_limiter_take(wh_limiter *l, const char *key, int64_t now_ms, int64_t *wait_ms);
/* Gives a taken slot back (the mark failed, so the cluster was not marked after all). */
void wh_limiter_undo(wh_limiter *l, const char *key);

/* Decides for a parsed review. pod: the pod from the API server, NULL when it does not
 * exist. lim may be NULL (no limit). Fills v (code, reason, message) and returns the action
 * the caller carries out; for WH_ACT_MARK the caller sets the annotation unless r->dry_run,
 * and on failure calls wh_verdict_mark_failed. */
wh_action wh_decide(const wh_review *r, const cJSON *pod, wh_limiter *lim, int64_t now_ms,
                    wh_verdict *v);
/* Refines the answer for a member pod with what its GodisCluster says (cluster may be NULL:
 * unknown, nothing changes). A cluster of one member cannot move it without stopping it —
 * the move adds a member first, and 1 Ready of 2 is no quorum — so nothing is marked (act
 * becomes WH_ACT_WAIT) and the message says why and what to do. A move the operator holds
 * up (condition Progressing with reason Waiting…, or QuorumLost) is quoted, so the person
 * running kubectl drain reads why it waits. A move the operator cannot make now (reason
 * CannotMoveMember: no other schedulable node, or MemberUnschedulable: the replacement's pod
 * is Unschedulable) replaces the message: the pod (pod_name) is not evicted and why. */
void wh_explain(const cJSON *cluster, const char *pod_name, wh_action *act, wh_verdict *v);

/* The answer when marking failed: 404 if the pod vanished meanwhile, else 429 naming the
 * error so kubectl retries. */
void wh_verdict_mark_failed(const wh_review *r, bool gone, const char *error, wh_verdict *v);

#endif
