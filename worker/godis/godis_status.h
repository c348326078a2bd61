/* godis_status.h — GodisCluster status writes: recorded intents (the planner's RECORD_*
 * and FINISH_* steps), readiness and the Ready/Progressing/Degraded conditions. A write
 * happens only when something changed, so a converged cluster costs no API writes. */
#ifndef GODIS_STATUS_H
#define GODIS_STATUS_H
#include "godis_plan.h"
#include "godis_reconcile.h"

/* written (may be NULL): on a successful write, the object the API server returned (the
 * caller frees it); left alone when nothing was written. A change of counts and messages
 * only (readyReplicas, updatedReplicas, the revisions, conditions' reasons and messages) is
 * written at most once per GODIS_PROGRESS_WRITE_MS per cluster: until then nothing is
 * written and a settled step asks to be requeued when it is due. Compared with
 * v->status_base when set (see godis_view). */
/* 30 s: a 100 x 3 converge on a loaded machine (pods Ready 20-100 s after their cluster)
 * wrote 7.25 statuses per cluster with 10 s, most of them counts nobody waits on; every
 * wait on readiness that tests and users make (all members Ready, a member down) is a
 * decisive change and goes at once. */
#define GODIS_PROGRESS_WRITE_MS 30000
godis_result godis_status_step(godis_env *e, const cJSON *cluster, const godis_view *v,
                               const godis_step *s, cJSON **written);
/* An invalid spec (reason InvalidSpec) or recorded status (InvalidStatus): conditions and a
 * Warning Event (once per change), no other action. */
godis_result godis_status_invalid(godis_env *e, const cJSON *cluster, const char *reason,
                                  const char *msg);

/* Sets or replaces condition `type` in a status object, keeping lastTransitionTime when
 * the status did not change (Kubernetes API conventions). */
/* When each cluster's status was last written by this worker (by uid, gd_mono_ms): noted
 * on each write; due_in is the ms until a progress-only write of uid may go (0: now, also
 * for a uid never noted). reset forgets them all (tests). */
void    godis_status_memo_note(const char *uid, int64_t now_ms);
int64_t godis_status_memo_due_in(const char *uid, int64_t now_ms);
void    godis_status_memo_reset(void);

void godis_set_condition(cJSON *status, const char *type, bool value, const char *reason,
                         const char *message, int64_t generation);

#endif
