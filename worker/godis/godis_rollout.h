/* godis_rollout.h — day-2 changes roll out one member at a time (docs/reconcile.md rule 10).
 *
 * A change to what the GodisCluster's spec renders into the member pod template (image,
 * resources, godis settings, pod labels/annotations, anti-affinity) gives a new template
 * revision (godis_template_hash). Members on another revision are replaced one at a time,
 * each under its own id and on its own volume (a restart with its log intact is safe; a new
 * pod stays pinned to its data's node, the ReplicaSet carries status.volumeNode):
 *
 *   1. intent first: status.rollout = {member, revision, startTime}, written with optimistic
 *      concurrency, only while the cluster is at full strength (every member Ready, no
 *      membership change recorded, spec.replicas reached, spec.paused false);
 *   2. the member's ReplicaSet gets the new template;
 *   3. its pods on the old template are deleted (an Event MemberReplaced names it);
 *   4. wait: its new pod Ready, the member answering `hello` on its client port, and caught
 *      up — a key written through another member is readable on it;
 *   5. status.rollout.member cleared (an Event MemberUpdated), and the next member;
 *      status.rollout {revision, startTime} itself stays until every member is on the
 *      revision: the cluster holds its --max-concurrent-rollouts slot (godis_slots.h) from
 *      its first member to its last, and a cluster without one waits (scaling and healing
 *      meanwhile) with a RolloutQueued Event.
 * While a member is in progress the membership planner does not run, so a scale request
 * waits for that member and then proceeds before the rollout goes on. A member that is not
 * back within spec.progressDeadlineSeconds (default 600) turns Progressing False with reason
 * RolloutStuck and a Warning Event; the rollout holds (never a second member down). A spec
 * fixed meanwhile gives another revision, which that same member gets at once (it is the one
 * down), and the deadline starts again.
 *
 * Status kept here: updateRevision (the spec's revision), currentRevision (the revision all
 * members were on when the last rollout finished), updatedReplicas (members whose ReplicaSet
 * and running pod are on updateRevision), readyReplicas. */
#ifndef GODIS_ROLLOUT_H
#define GODIS_ROLLOUT_H
#include <stdbool.h>
#include <cjson/cJSON.h>
#include "godis_plan.h"
#include "godis_reconcile.h"

#define GODIS_DEFAULT_PROGRESS_DEADLINE_S 600
#define GODIS_ROLLOUT_KEY "godis-operator-rollout-check"   /* never starts with * $ + - : */

typedef struct godis_rollout godis_rollout;
struct godis_rollout {
    godis_env *e;
    const char *ns, *name;
    const cJSON **cluster;      /* replaced by the written object after a status write,
                                 * or by a copy of its own to stage status on */
    const godis_view *v;        /* the planner's view: members, readiness, intents */
    const char *phase;          /* status.status */
    bool writable;              /* the cluster took a write (Ready=True) */
    /* The member answers on its client port and has caught up: a write through via is
     * readable on it. NULL: over RESP (pod IP from the cache, then the Service name). */
    gd_err (*member_check)(godis_rollout *ro, int64_t id, int64_t via, char *why, size_t cap);
    /* Out: members on the spec's template; > 0: look again after this long even if the
     * planner has nothing to do (waiting for a rollout slot). */
    int updated;
    int64_t recheck_ms;
    /* Out (the caller frees it): when not NULL, *cluster carries the counts and revisions
     * unwritten, for the planner's status write to carry; this is the status before them,
     * as the API server has it (godis_view.status_base). */
    cJSON *status_base;
};

/* One reconcile's share of the rollout. true: the rollout took this reconcile (a member is
 * in progress, or one was just started) and *r says when to look again; the planner must
 * not run. false: nothing to roll now; the planner runs (with nothing for the planner to
 * do, the counts and revisions are set in *ro->cluster unwritten: see status_base). */
bool godis_rollout_run(godis_rollout *ro, godis_result *r);

#endif
