/* godis_plan.c — see godis_plan.h. Read the rules top to bottom: the first that applies
 * wins, and recorded intent always comes before new decisions. */
#include "godis_plan.h"
#include "godis_children.h"
#include "godis_client.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "gd_json.h"

static bool has_id(const int64_t *ids, int n, int64_t id)
{
    for (int i = 0; i < n; i++)
        if (ids[i] == id) return true;
    return false;
}

static const godis_member *observed(const godis_view *v, int64_t id)
{
    for (int i = 0; i < v->nobserved; i++)
        if (v->observed[i].id == id) return &v->observed[i];
    return NULL;
}

static bool member_ready(const godis_view *v, int64_t id)
{
    const godis_member *m = observed(v, id);
    return m && m->godis_exists && m->ready;
}

/* To move now: its node is bad, it asks to be moved, or its volume is lost. */
static bool member_moving(const godis_view *v, int64_t id)
{
    const godis_member *m = observed(v, id);
    return m && (m->node_bad || m->reschedule || m->volume_lost);
}

/* On a volume of another StorageClass than the spec's: to be replaced, but only at full
 * strength (a volume cannot move between classes, so this is a new member, not a move). */
static bool member_wrong_class(const godis_view *v, int64_t id)
{
    const godis_member *m = observed(v, id);
    return m && m->wrong_class;
}

/* To be removed first when a member goes (the scale-in victim's rank). */
static bool member_bad(const godis_view *v, int64_t id)
{
    return member_moving(v, id) || member_wrong_class(v, id);
}

/* Gone for good: its Godis was deleted, or its volume is lost and it no longer serves. */
static bool member_lost(const godis_view *v, int64_t id)
{
    const godis_member *m = observed(v, id);
    return !m || !m->godis_exists || (m->volume_lost && !m->ready);
}

static int majority(int n) { return n / 2 + 1; }

/* The ConfigMap still lists the member being removed until its forget got +OK; when the
 * ConfigMap is missing nobody knows, so the forget counts as not confirmed (it is sent again:
 * it is idempotent) — never skipped. */
static bool forget_confirmed(const godis_view *v)
{
    return v->scale_in_id > 0 && (v->forget_acked || (v->configmap_exists && v->configmap_parsed &&
                                                      !has_id(v->cm_ids, v->cm_n, v->scale_in_id)));
}

/* The ids the ConfigMap must list now: members, plus a member being added (so a pod that
 * restarts mid-scale-out already knows the newcomer), minus a member already forgotten. */
int godis_plan_configmap_ids(const godis_view *v, int64_t *out)
{
    int n = 0;
    bool forgotten = forget_confirmed(v);
    for (int i = 0; i < v->nmembers; i++)
        if (v->members[i] != v->scale_in_id || !forgotten) out[n++] = v->members[i];
    if (v->scale_out_id > 0 && !has_id(out, n, v->scale_out_id) && n < GODIS_MAX_MEMBERS)
        out[n++] = v->scale_out_id;
    return n;
}

static bool cm_matches(const godis_view *v)
{
    if (!v->configmap_exists || !v->configmap_parsed) return false;
    int64_t want[GODIS_MAX_MEMBERS];
    int n = godis_plan_configmap_ids(v, want);
    if (n != v->cm_n) return false;
    for (int i = 0; i < n; i++)
        if (!has_id(v->cm_ids, v->cm_n, want[i])) return false;
    return true;
}

/* Ready and not known to be dead: it answered, or was not asked (member.silent). */
static bool member_live(const godis_view *v, int64_t id)
{
    return member_ready(v, id) && !observed(v, id)->silent;
}

/* A live member other than `not_id` to send meet/forget to; the lowest id for determinism. */
static int64_t pick_via(const godis_view *v, int64_t not_id)
{
    int64_t best = 0;
    for (int i = 0; i < v->nmembers; i++) {
        int64_t id = v->members[i];
        if (id != not_id && member_live(v, id) && (best == 0 || id < best)) best = id;
    }
    return best;
}

static godis_step step(godis_step_kind k, int64_t id, const char *reason, const char *why)
{
    godis_step s = {.kind = k, .id = id, .reason = reason, .why = why};
    return s;
}

/* A wait the user must resolve (issue 19.2): Warning Event, and the webhook quotes it. */
static godis_step blocked(int64_t id, const char *reason, const char *why)
{
    godis_step s = step(GP_WAIT, id, reason, why);
    s.warn = true;
    return s;
}

int64_t godis_plan_victim(const godis_view *v)
{
    int64_t best = 0;
    int best_rank = -1;
    for (int i = 0; i < v->nmembers; i++) {
        int64_t id = v->members[i];
        int rank = member_bad(v, id) ? 2 : !member_ready(v, id) ? 1 : 0;
        if (rank > best_rank || (rank == best_rank && id > best)) {
            best = id;
            best_rank = rank;
        }
    }
    return best;
}

static int64_t newest_member(const godis_view *v)
{
    int64_t max = 0;
    for (int i = 0; i < v->nmembers; i++)
        if (v->members[i] > max) max = v->members[i];
    return max;
}

/* Removing `victim` keeps quorum: the forget commits in the current configuration (with
 * the victim's vote only if it is Ready — a 2-member cluster cannot forget its dead member),
 * the remaining Ready members are a majority of the smaller cluster, and the newest member
 * (the one a migration just added) is Ready — so a member is never forgotten before its
 * replacement serves. */
static bool scale_in_safe(const godis_view *v, int64_t victim)
{
    int ready_remaining = 0;
    for (int i = 0; i < v->nmembers; i++)
        if (v->members[i] != victim && member_ready(v, v->members[i])) ready_remaining++;
    int64_t newest = newest_member(v);
    if (newest != victim && !member_ready(v, newest)) return false;
    int commit = majority(v->nmembers) - (member_ready(v, victim) ? 1 : 0);
    return ready_remaining >= majority(v->nmembers - 1) && ready_remaining >= commit;
}

static int count_ready(const godis_view *v)
{
    int n = 0;
    for (int i = 0; i < v->nmembers; i++)
        if (member_ready(v, v->members[i])) n++;
    return n;
}

/* Adding a member: the intent (scaleOutID, nextID) is recorded first; the ConfigMap lists the
 * newcomer; its Godis is created with join=true (preferred=false); once its pod is Ready it
 * is admitted with `cluster meet`, and the executor records it in status.members in the
 * same step, right after the +OK (GP_MEET).
 *
 * Why the member exists before its meet: a godis started with join=true on an empty volume
 * is etcd raft's RestartNode with an empty log — no configuration, so it never campaigns,
 * and it waits for the leader's first message; no member lists it before its meet, so
 * nobody asks it for a vote either. Until the meet it is inert: a crash anywhere before the
 * meet changes nothing in Raft. The meet is the step's only Raft change, and it is made only
 * while the member it adds runs, so a new configuration never counts a voter that does not
 * exist. The other order (meet, then create) left a 1 -> 2 step without quorum when the
 * worker died between the two: 1 of 2 voters, and every retry of the meet had to commit in
 * the new configuration without the absent member. Resumed after its +OK, the step meets
 * again (idempotent: an admitted member is admitted again, nothing changes; it commits in
 * the configuration that holds the running newcomer), then records.
 *
 * A newcomer that is not Ready waits for its meet — except one whose node went bad or
 * whose volume is lost (it may have been admitted by a meet whose +OK was never recorded),
 * or one the user no longer wants (replicas lowered while it could not be scheduled): where
 * today's Ready members alone are a majority of the bigger cluster, the step is finished,
 * and the migration, loss and scale-in rules take it away (forgetting it first; a not-Ready
 * member is the first victim). Abandoning the step instead would need a durable record that
 * no meet was ever sent. A one-member cluster never admits a newcomer that does not run. */
static godis_step plan_scale_out(const godis_view *v)
{
    int64_t id = v->scale_out_id;
    if (has_id(v->members, v->nmembers, id))
        return step(GP_FINISH_SCALE_OUT, id, "ScaledOut", "new member already recorded");
    if (!cm_matches(v))
        return step(GP_ENSURE_CONFIGMAP, id, "ScalingOut", "ConfigMap lists the new member before it starts");
    const godis_member *m = observed(v, id);
    if (!m || !m->godis_exists)
        return step(GP_CREATE_GODIS, id, "ScalingOut",
                    "new member created with join=true: it waits, inert, for its meet");
    /* scaled back meanwhile, and no migration's add-before-remove (which adds at the same size) */
    bool unwanted = v->desired <= v->nmembers;
    for (int i = 0; i < v->nmembers && unwanted; i++) unwanted = !member_bad(v, v->members[i]);
    if (!m->ready && !((member_moving(v, id) || unwanted) && count_ready(v) >= majority(v->nmembers + 1)))
        return step(GP_WAIT, id, "WaitingForNewMember", "the new member's pod must be Ready before its meet");
    int64_t via = pick_via(v, id);
    if (!via) return step(GP_WAIT, id, "NoReadyMember", "no Ready member to send cluster meet to");
    godis_step s = step(GP_MEET, id, "MemberAdded", "cluster meet, then record the member in status");
    s.via_id = via;
    return s;
}

/* After the forget: stop the member, wait until its pods are gone, then its Godis goes.
 * GP_NOTHING when nothing of it is left (the caller finishes). */
static godis_step plan_retire(const godis_view *v, int64_t id, const char *reason)
{
    const godis_member *m = observed(v, id);
    if (m && m->running)
        return step(GP_STOP_MEMBER, id, reason, "forgotten member stopped: ReplicaSet to 0, pods deleted");
    if (m && m->pod_exists)
        return step(GP_WAIT, id, "StoppingMember", "waiting until the forgotten member's pods are gone");
    if (m && m->godis_exists && (!m->godis_deleting || m->finalizer))
        return step(GP_DELETE_GODIS, id, reason, "stopped member's Godis removed");
    return step(GP_NOTHING, id, reason, "member removed");
}

/* The others commit the forget without the victim's vote and with a node's worth of
 * votes to spare: the Ready members besides it, less the most of them that one node holds,
 * are a majority of today's membership (which still counts the victim). Then the victim is
 * stopped before its forget, so it never runs as a forgotten member, and a failure in the
 * stop-to-forget window still leaves a quorum. A node's worth, not one vote: a node that
 * fails takes all its members at once, before their pods turn NotReady (a 200-fault chaos
 * campaign had c03 6 -> 5 stop member 17 while a node holding two of the other five had just
 * died: 3 of 6 voters up, the forget could not commit). Without the spare (3 -> 2, 4 -> 3;
 * 6 -> 5 with two members on one node) a stop first spends the cluster's only tolerated
 * failure (c06 4 -> 3 lost a node agent 6 s after member 8 was stopped: 2 of 4 voters up,
 * no write for 25 s); there the forget goes first (every member up, a failure to spare),
 * and the stop right after it. A pod stays Ready for the node grace period after its node
 * died, so before the stop the executor asks the survivors counted here whether they answer
 * (godis_probe_survivors); one that does not is silent and no longer counts. */
bool godis_plan_stop_first(const godis_view *v, int64_t victim)
{
    int others = 0, worst = 1;
    for (int i = 0; i < v->nmembers; i++) {
        int64_t id = v->members[i];
        if (id == victim || !member_live(v, id)) continue;
        others++;
        const godis_member *m = observed(v, id);
        if (!m->node) continue;
        int same = 0;
        for (int j = 0; j < v->nmembers; j++) {
            const godis_member *o = v->members[j] == victim ? NULL : observed(v, v->members[j]);
            same += o && member_live(v, o->id) && o->node && !strcmp(o->node, m->node);
        }
        if (same > worst) worst = same;
    }
    return others - worst >= majority(v->nmembers);
}

/* Before the forget (not confirmed: the ConfigMap, the record of a successful forget
 * rewritten only after +OK, still lists the victim, or is missing — then it is rebuilt
 * with the victim first). */
static godis_step plan_forget(const godis_view *v, int64_t id)
{
    if (!cm_matches(v))
        return step(GP_ENSURE_CONFIGMAP, id, "ScalingIn", "ConfigMap rebuilt from status.members before the forget");
    const godis_member *m = observed(v, id);
    if (m && godis_plan_stop_first(v, id)) {
        if (m->running) {
            godis_step s = step(GP_STOP_MEMBER, id, "StoppingMember",
                                "the others commit its forget without it: stopped first, so it never runs forgotten");
            s.stop_first = true;
            return s;
        }
        if (m->pod_exists)
            return step(GP_WAIT, id, "StoppingMember", "waiting until its pods are gone, then the forget");
    }
    int64_t via = pick_via(v, id);
    if (!via)
        return step(GP_WAIT, id, "NoReadyMember", "no Ready member to send cluster forget to");
    godis_step s = step(GP_FORGET, id, "MemberRemoved", "cluster forget, stop the member, rewrite the ConfigMap");
    s.via_id = via;
    return s;
}

static godis_step plan_scale_in(const godis_view *v)
{
    int64_t id = v->scale_in_id;
    if (!has_id(v->members, v->nmembers, id))
        return step(GP_FINISH_SCALE_IN, id, "ScaledIn", "member already removed from status");
    if (!forget_confirmed(v)) return plan_forget(v, id);
    /* Forgotten: a member still running is stopped before anything else, the record
     * included (when the record failed after +OK, the API server was unreachable, and the
     * member may be back from its WAL as a voter meanwhile). */
    const godis_member *m = observed(v, id);
    if (m && m->running)
        return step(GP_STOP_MEMBER, id, "MemberRemoved", "forgotten member stopped: ReplicaSet to 0, pods deleted");
    if (!cm_matches(v))
        return step(GP_ENSURE_CONFIGMAP, id, "ScalingIn", "ConfigMap without the forgotten member");
    godis_step r = plan_retire(v, id, "MemberRemoved");
    if (r.kind != GP_NOTHING) return r;
    return step(GP_FINISH_SCALE_IN, id, "ScaledIn", "member removed");
}

/* Whether initial member m, whose Godis is not in the cache, may have run: a pod of it is
 * still there (a Godis deleted with its finalizer stripped: its pods outlive it by their
 * grace period, and the deletion wakes the cluster at once). Otherwise it was never made
 * (a create that failed: the bootstrap goes on creating it under its id). Once it may have
 * voted or held the log, its id is never used again. */
static bool initial_member_ran(const godis_member *m)
{
    return m && m->pod_exists;
}

static godis_step plan_initializing(const godis_view *v)
{
    if (!cm_matches(v))
        return step(GP_ENSURE_CONFIGMAP, 0, "Initializing", "ConfigMap with the initial members");
    for (int i = 0; i < v->nmembers; i++) {
        const godis_member *m = observed(v, v->members[i]);
        if ((!m || !m->godis_exists) && initial_member_ran(m)) {
            /* (the phase Running waits for readiness, godis_status.c: a Godis deleted while
             * its member runs must not be re-created under its id meanwhile) */
            godis_step s = step(GP_FINISH_INIT, v->members[i], "MemberDeleted",
                                "an initial member's Godis is gone after it may have run: the "
                                "bootstrap is recorded as done and the member replaced under a new id");
            s.at_once = true;
            return s;
        }
        if (!m || !m->godis_exists) {
            godis_step s = step(GP_CREATE_GODIS, v->members[i], "Initializing", "initial member");
            s.preferred = true;
            return s;
        }
    }
    /* (the steady state's reason and words, which the conditions quote: the next reconcile
     * finds them as it would write them, instead of a change of reason or message alone,
     * one more status write a new cluster) */
    return step(GP_FINISH_INIT, 0, "Converged", "membership matches spec");
}

static int count_lost(const godis_view *v)
{
    int n = 0;
    for (int i = 0; i < v->nmembers; i++) n += member_lost(v, v->members[i]);
    return n;
}

/* A Godis deleted by hand (or by a tool, or by the garbage collector) is held by its
 * finalizer; a Godis that is gone outright was lost. Either way: forget it, a new id
 * replaces it. */
static godis_step plan_departed(const godis_view *v)
{
    for (int i = 0; i < v->nmembers; i++) {
        const godis_member *m = observed(v, v->members[i]);
        bool gone = !m || !m->godis_exists;
        if (!gone && !m->godis_deleting) continue;
        if (v->nmembers == 1)       /* nobody to tell, and its data would be gone: refuse */
            return step(GP_WAIT, v->members[i], "LastMember",
                        "the only member cannot be forgotten; its Godis stays until the GodisCluster is deleted");
        if (!scale_in_safe(v, v->members[i]))
            return step(GP_WAIT, v->members[i], "WaitingForQuorum", "departed member cannot be forgotten safely yet");
        return step(GP_RECORD_SCALE_IN, v->members[i], gone ? "MemberLost" : "MemberDeleted",
                    gone ? "Godis gone: forget it, a new id replaces it"
                         : "Godis deleted: forget it before it goes, a new id replaces it");
    }
    return step(GP_NOTHING, 0, "Converged", "");
}

/* Steady state: heal, migrate, scale — in that order, one change at a time. */
static godis_step plan_running(const godis_view *v)
{
    if (!cm_matches(v))
        return step(GP_ENSURE_CONFIGMAP, 0, "ConfigMapRepaired", "ConfigMap rebuilt from status.members");
    /* A non-member Godis of ours (hand-made, left by an interrupted adoption, or a member of
     * a cluster bootstrapped afresh) would campaign like a forgotten follower: stop it,
     * then remove it. It is no member, so there is nothing to forget. (The executor first
     * checks that the API server's status does not name it either: the cache may lag.) */
    for (int i = 0; i < v->nobserved; i++) {
        const godis_member *m = &v->observed[i];
        if (has_id(v->members, v->nmembers, m->id)) continue;
        godis_step r = plan_retire(v, m->id, "StrayGodisRemoved");
        if (r.kind != GP_NOTHING) return r;
    }
    /* Lost members never come back (their data is gone): with all of them lost, or a
     * majority, the cluster can never commit again. Nothing is created (a member added now
     * could not even join) until the user asks for a fresh, empty cluster. */
    int lost = count_lost(v);
    if (v->nmembers == 0 || lost >= majority(v->nmembers)) {
        if (v->bootstrap_fresh)
            return step(GP_RECORD_INIT, 0, "FreshBootstrap", "members lost for good: a fresh empty cluster with new ids, as asked");
        if (lost < v->nmembers)
            return step(GP_ALL_LOST, 0, "QuorumLost",
                        "a majority of the members is lost (Godis or volume gone): the cluster cannot "
                        "commit again; nothing is created until the annotation " GODIS_ANN_BOOTSTRAP_FRESH
                        " asks for a fresh empty cluster (the remaining members' data is dropped)");
        return step(GP_ALL_LOST, 0, "AllMembersLost",
                    "every member is lost (Godis or volume gone): nothing is created until the annotation "
                    GODIS_ANN_BOOTSTRAP_FRESH " asks for a fresh empty cluster");
    }
    if (v->paused) return step(GP_NOTHING, 0, "Paused", "spec.paused: membership changes stopped");
    godis_step d = plan_departed(v);
    if (d.kind != GP_NOTHING) return d;
    if (v->nmembers > v->desired) {
        int64_t victim = godis_plan_victim(v);
        if (!scale_in_safe(v, victim))
            return step(GP_WAIT, victim, "WaitingForReady", "scale-in waits until it keeps quorum");
        if (!member_moving(v, victim) && member_wrong_class(v, victim))
            return step(GP_RECORD_SCALE_IN, victim, "StorageClassChanged",
                        "its volume is not of spec.storage.storageClassName: replaced by a new member");
        return step(GP_RECORD_SCALE_IN, victim, member_bad(v, victim) ? "Migrating" : "ScalingIn",
                    "remove one member");
    }
    int ready = count_ready(v);
    if (v->nmembers < v->desired) {
        if (ready < v->nmembers)
            return step(GP_WAIT, 0, "WaitingForReady", "scale-out waits until every member is Ready");
        return step(GP_RECORD_SCALE_OUT, v->next_id, "ScalingOut", "add one member");
    }
    for (int i = 0; i < v->nmembers; i++) {
        int64_t id = v->members[i];
        if (!member_moving(v, id)) continue;
        /* Add before remove when the bigger cluster keeps quorum with today's Ready members;
         * a member that is already down is removed first instead (a dead member in a bigger
         * cluster would make quorum harder, not easier). */
        if (v->nmembers == 1)
            return blocked(id, "CannotMoveMember", "cannot be moved: it is the only member (a move "
                           "adds a member first, and 1 Ready of 2 is no quorum); scale the cluster to "
                           "3 first, or delete its pod to accept the outage");
        const godis_member *m = observed(v, id);
        if (ready >= majority(v->nmembers + 1) && m && m->no_node)
            return blocked(id, "CannotMoveMember", m->blocked_why ? m->blocked_why
                           : "cannot be moved: no other schedulable node for its replacement");
        if (ready >= majority(v->nmembers + 1))
            return step(GP_RECORD_SCALE_OUT, v->next_id, "Migrating", "replacement for a member on a bad node");
        if (!member_ready(v, id) && scale_in_safe(v, id))
            return step(GP_RECORD_SCALE_IN, id, "Migrating", "member on a bad node is down: remove it first");
        return step(GP_WAIT, id, "WaitingForQuorum", "migration waits for enough Ready members");
    }
    /* spec.storage.storageClassName changed: a volume cannot move between classes, so a
     * member on another class is replaced by a new id on a new PVC, add before remove (the
     * removal then picks a wrong-class member as its victim), one member at a time and only
     * at full strength: every member Ready, nothing else in flight. */
    for (int i = 0; i < v->nmembers; i++) {
        if (!member_wrong_class(v, v->members[i])) continue;
        if (v->nmembers == 1)        /* 1 Ready of 2 is no quorum while the new one starts */
            return blocked(v->members[i], "CannotMoveMember", "cannot be moved to spec.storage."
                           "storageClassName: it is the only member (the replacement is added "
                           "first, and 1 Ready of 2 is no quorum); scale the cluster to 3 first");
        if (ready < v->nmembers)
            return step(GP_WAIT, v->members[i], "WaitingForReady",
                        "storage class change waits until every member is Ready");
        return step(GP_RECORD_SCALE_OUT, v->next_id, "StorageClassChanged",
                    "a new member on a volume of spec.storage.storageClassName, before one on the old class goes");
    }
    return step(GP_NOTHING, 0, "Converged", "membership matches spec");
}

/* A wait for readiness, or a converged cluster short of Ready members, behind which a
 * member's pod cannot be scheduled (a move's replacement, a scale-out beyond the nodes that
 * anti-affinity allows): say so, with the scheduler's message, rather than wait silently. */
static godis_step explain_unschedulable(const godis_view *v, godis_step s)
{
    if (s.kind != GP_WAIT && (s.kind != GP_NOTHING || strcmp(s.reason, "Converged"))) return s;
    if (s.kind == GP_WAIT && (s.warn || strncmp(s.reason, "Waiting", 7))) return s;
    for (int i = 0; i < v->nobserved; i++) {
        const godis_member *m = &v->observed[i];
        if (m->unschedulable && (has_id(v->members, v->nmembers, m->id) || m->id == v->scale_out_id))
            return blocked(m->id, "MemberUnschedulable", m->blocked_why ? m->blocked_why
                           : "cannot be scheduled");
    }
    return s;
}

static godis_step plan_next(const godis_view *v);

godis_step godis_plan_next(const godis_view *v)
{
    return explain_unschedulable(v, plan_next(v));
}

static godis_step plan_next(const godis_view *v)
{
    const char *phase = v->phase ? v->phase : "";
    if (!v->members_recorded) {
        if (v->nobserved == 0 && v->next_id <= 1 && v->scale_out_id == 0)
            return step(GP_RECORD_INIT, 0, "Initializing", "new cluster");
        return step(GP_ADOPT, 0, "Adopted", "status.members derived from existing Godis objects");
    }
    if (v->scale_out_id > 0) return plan_scale_out(v);
    if (v->scale_in_id > 0) return plan_scale_in(v);
    if (strcmp(phase, "Initializing") == 0) return plan_initializing(v);
    return plan_running(v);
}

const char *godis_step_name(godis_step_kind k)
{
    static const char *names[] = {"Nothing", "Wait", "RecordInit", "Adopt", "EnsureConfigMap",
        "CreateGodis", "FinishInit", "RecordScaleOut", "Meet", "FinishScaleOut",
        "RecordScaleIn", "Forget", "StopMember", "DeleteGodis", "FinishScaleIn", "AllLost"};
    return (k >= 0 && k <= GP_ALL_LOST) ? names[k] : "?";
}

bool godis_spec_validate(const void *cluster_json, godis_spec *out, char *msg, int msgcap)
{
    const cJSON *obj = cluster_json;
    cJSON *spec = NULL;
    out->replicas = 3;
    out->paused = false;
    gd_err e = gd_json_obj(obj, "spec", &spec);
    if (e == GD_ERR_TYPE) {
        snprintf(msg, msgcap, "spec must be an object");
        return false;
    }
    if (e != GD_OK) {   /* the CRD defaults replicas only inside a spec: none is an error */
        snprintf(msg, msgcap, "spec is missing");
        return false;
    }
    int64_t r = 3;
    e = gd_json_int(spec, "replicas", &r);
    if (e == GD_ERR_TYPE) {
        snprintf(msg, msgcap, "spec.replicas must be an integer");
        return false;
    }
    if (e == GD_OK && (r < 1 || r > GODIS_MAX_REPLICAS)) {
        snprintf(msg, msgcap, "spec.replicas must be between 1 and %d, got %lld",
                 GODIS_MAX_REPLICAS, (long long)r);
        return false;
    }
    out->replicas = (int)r;
    bool paused = false;
    e = gd_json_bool(spec, "paused", &paused);
    if (e == GD_ERR_TYPE) {
        snprintf(msg, msgcap, "spec.paused must be a boolean");
        return false;
    }
    out->paused = paused;
    return true;
}

int godis_peer_url(char *buf, int cap, const char *ns, const char *cluster, int64_t id,
                   const char *domain)
{
    if (!domain || !*domain) domain = GODIS_DEFAULT_CLUSTER_DOMAIN;
    int n = snprintf(buf, cap, "http://%s-%lld-endpoint.%s.svc.%s:6300", cluster,
                     (long long)id, ns, domain);
    return (n < 0 || n >= cap) ? -1 : n;
}

int godis_initial_cluster(char *buf, int cap, const char *ns, const char *cluster,
                          const int64_t *ids, int n, const char *domain)
{
    int off = 0;
    if (cap < 1) return -1;
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        char url[512];
        if (godis_peer_url(url, sizeof url, ns, cluster, ids[i], domain) < 0) return -1;
        int w = snprintf(buf + off, cap - off, "%s%lld@%s", i ? "," : "", (long long)ids[i], url);
        if (w < 0 || w >= cap - off) return -1;
        off += w;
    }
    return off;
}

/* Is url (ul bytes) member id's peer URL in domain? */
static bool peer_url_is(const char *url, size_t ul, const char *ns, const char *cluster,
                        long long id, const char *domain)
{
    char want[512];
    return godis_peer_url(want, sizeof want, ns, cluster, id, domain) > 0 &&
           strlen(want) == ul && !strncmp(url, want, ul);
}

bool godis_initial_cluster_valid(const char *val, const char *ns, const char *cluster,
                                 const char *domain)
{
    if (!val) return false;
    for (const char *p = *val ? val : NULL; p;) {     /* "": no members yet, valid */
        char *end;
        long long id = strtoll(p, &end, 10);
        if (end == p || *end != '@' || id <= 0) return false;
        const char *comma = strchr(end, ',');
        size_t ul = comma ? (size_t)(comma - end - 1) : strlen(end + 1);
        if (!peer_url_is(end + 1, ul, ns, cluster, id, domain) &&
            !peer_url_is(end + 1, ul, ns, cluster, id, GODIS_DEFAULT_CLUSTER_DOMAIN))
            return false;
        p = comma ? comma + 1 : NULL;
    }
    return true;
}
