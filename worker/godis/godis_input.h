/* godis_input.h — objects that passed the CRD schema but are nonsense to the operator
 * (issue 21.4), found after the GodisCluster reconciler observed its cluster and before it
 * plans a step. Each gets the condition Valid=False (reason below, a message naming the
 * object and what is wrong) and a Warning Event, never a crash or a wrong membership change:
 *   ForeignGodis       a Godis named like a member of this cluster (a recorded member, the
 *                      member being added, or the next id) whose controller is not this
 *                      GodisCluster: it would look like a lost member (and be forgotten
 *                      while its pod serves) or block the next member's creation after its
 *                      `cluster meet`. No membership step is taken until it is fixed (HOLD).
 *   InvalidAnnotation  godis.kumkeehyun.github.com/reschedule with a value other than
 *                      "true" (or empty) on a member's Godis or pod: ignored, no migration.
 *   ConfigMapEdited    <cluster>-config whose initial-cluster is not the id@URL list the
 *                      operator writes (garbage, or a URL that is not the member's): it is
 *                      rewritten from status.members, which is the record.
 *   InvalidStorage     spec.storage.size that is no positive quantity (nothing expanded), or
 *                      a storageClassName that is no StorageClass name (nobody moved).
 *   StorageClassNotFound  a changed storageClassName naming no StorageClass: the class
 *                      change (godis_storage.h) waits, a new member would never start.
 * Once everything makes sense again, Valid turns True (reason AsExpected). A cluster that
 * never had a finding gets no Valid condition at all (no extra status write).
 * spec.replicas changed while spec.paused is not invalid, but asks for something that will
 * not happen yet: a Warning Event ScalingPaused once per change, beside the planner's
 * Degraded condition (reason Paused); nothing changes until paused is false. */
#ifndef GODIS_INPUT_H
#define GODIS_INPUT_H
#include <stdbool.h>
#include <cjson/cJSON.h>
#include "godis_plan.h"
#include "godis_reconcile.h"

#define GODIS_ANN_RESCHEDULE "godis.kumkeehyun.github.com/reschedule"

typedef enum { GODIS_INPUT_OK = 0, GODIS_INPUT_HOLD } godis_input_verdict;

typedef struct {
    godis_env *e;
    const char *ns, *name, *uid;
    const cJSON **cluster;      /* replaced by the written object after a status write */
    godis_view *v;              /* adjusted: invalid reschedule requests cleared, a ConfigMap
                                 * with foreign URLs marked for rewriting */
    const cJSON *godises;       /* this cluster's Godis objects (array) */
    const cJSON *configmap;     /* or NULL */
} godis_input;

godis_input_verdict godis_input_check(godis_input *in);

/* The reschedule annotation's value asks for a move ("" or "true"); exposed for tests. */
bool godis_reschedule_value_valid(const char *v);

#endif
