/* Tests of the GodisCluster membership planner, step by step and by simulation: a model of
 * the API objects and of the godis Raft membership applies each planned step, and
 * invariants are checked after every one (ids never reused, one membership change at a
 * time, a member stopped before its forget only where the others commit without it and
 * forgotten only once its process is gone, forget before delete, a forgotten member never
 * running into the next step, quorum kept, ConfigMap == status.members == Raft members at
 * rest). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <cmocka.h>
#include "godis_plan.h"
#include "gd_json.h"

/* ---------- a small world model ---------- */
typedef struct {
    godis_view v;
    const char *phase_buf;
    bool raft[128];          /* godis membership as the members themselves know it */
    bool godis[128];         /* Godis objects */
    bool deleting[128];      /* the Godis has a deletionTimestamp (held by its finalizer) */
    bool finalizer[128];
    bool running[128];       /* its ReplicaSet wants a pod / a pod of it runs */
    int pod_gone_in[128];    /* steps until a stopped member's pod object is gone */
    int ready_in[128];       /* steps until a created Godis's pod is Ready (0 = Ready) */
    bool bad[128];
    bool lost_volume[128];
    bool no_node[128];       /* no other node could take its replacement (godis_place.c) */
    bool unsched[128];       /* its pod is Unschedulable (never Ready while set) */
    bool ever_used[128];     /* ids handed out so far */
    bool ever_member[128];   /* ids that were Raft members once */
    int steps;
} world;

static void sync_view(world *w)
{
    godis_view *v = &w->v;
    v->nobserved = 0;
    for (int id = 1; id < 128; id++) {
        bool member = false;
        for (int i = 0; i < v->nmembers; i++) member |= v->members[i] == id;
        if (!w->godis[id] && !member) continue;
        godis_member *m = &v->observed[v->nobserved++];
        memset(m, 0, sizeof *m);
        m->id = id;
        m->godis_exists = w->godis[id];
        m->godis_deleting = w->deleting[id];
        m->finalizer = w->finalizer[id];
        m->running = w->running[id];
        m->pod_exists = w->running[id] || w->pod_gone_in[id] > 0;
        m->ready = w->running[id] && w->ready_in[id] == 0;
        m->node_bad = w->bad[id];
        m->volume_lost = w->lost_volume[id];
        m->no_node = w->no_node[id];
        m->unschedulable = w->unsched[id];
        if (m->unschedulable) m->ready = false;
        m->blocked_why = m->no_node ? "cannot be moved: no other schedulable node (test)"
                         : m->unschedulable ? "cannot be scheduled: 0/3 nodes are available (test)" : NULL;
    }
}

static int raft_size(world *w)
{
    int n = 0;
    for (int i = 0; i < 128; i++) n += w->raft[i];
    return n;
}

static int raft_ready(world *w)
{
    int n = 0;
    for (int i = 0; i < 128; i++) n += w->raft[i] && w->running[i] && w->ready_in[i] == 0;
    return n;
}

/* Ready Raft members other than id. */
static int others_ready(world *w, int64_t id)
{
    return raft_ready(w) - (w->raft[id] && w->running[id] && w->ready_in[id] == 0);
}

static void set_members(world *w, const int64_t *ids, int n)
{
    memcpy(w->v.members, ids, n * sizeof *ids);
    w->v.nmembers = n;
}

static void cm_from(world *w, const int64_t *ids, int n)
{
    w->v.configmap_exists = true;
    w->v.configmap_parsed = true;
    memcpy(w->v.cm_ids, ids, n * sizeof *ids);
    w->v.cm_n = n;
}

static void remove_member(world *w, int64_t id)
{
    int j = 0;
    for (int i = 0; i < w->v.nmembers; i++)
        if (w->v.members[i] != id) w->v.members[j++] = w->v.members[i];
    w->v.nmembers = j;
}

static void stop(world *w, int64_t id)
{
    if (w->running[id]) w->pod_gone_in[id] = 2;
    w->running[id] = false;
}

static void start(world *w, int64_t id, int ready_in)
{
    w->godis[id] = true;
    w->finalizer[id] = true;
    w->running[id] = true;
    w->ready_in[id] = ready_in;
}

/* A Godis deleted by hand: held by its finalizer, its pod still runs. */
static void delete_by_hand(world *w, int64_t id)
{
    w->deleting[id] = true;
}

/* Applies one step to the model; asserts the safety invariants. Returns the step kind. */
static godis_step_kind apply(world *w)
{
    sync_view(w);
    godis_step s = godis_plan_next(&w->v);
    godis_view *v = &w->v;
    int before = raft_size(w);
    switch (s.kind) {
    case GP_RECORD_INIT: {
        int64_t base = v->next_id > 0 ? v->next_id : 1;
        int64_t ids[GODIS_MAX_MEMBERS];
        for (int i = 0; i < v->desired; i++) {
            ids[i] = base + i;
            assert_false(w->ever_used[ids[i]]);
            w->ever_used[ids[i]] = true;
        }
        set_members(w, ids, v->desired);
        v->members_recorded = true;
        v->next_id = base + v->desired;
        v->phase = "Initializing";
        v->bootstrap_fresh = false;
        break;
    }
    case GP_ENSURE_CONFIGMAP: {
        int64_t ids[GODIS_MAX_MEMBERS];
        int n = godis_plan_configmap_ids(v, ids);
        cm_from(w, ids, n);
        break;
    }
    case GP_CREATE_GODIS:
        assert_false(w->godis[s.id]);
        start(w, s.id, 2);
        if (s.preferred) {
            w->raft[s.id] = true;   /* initial members form the cluster */
            w->ever_member[s.id] = true;
        }
        break;
    case GP_FINISH_INIT:
        v->phase = "Running";
        break;
    case GP_RECORD_SCALE_OUT:
        assert_false(w->ever_used[v->next_id]);   /* never reuse an id */
        w->ever_used[v->next_id] = true;
        v->scale_out_id = v->next_id++;
        v->phase = "Scaling";
        break;
    case GP_MEET:
        assert_int_not_equal(s.via_id, s.id);
        assert_true(w->raft[s.via_id]);
        /* meet needs quorum of the current Raft membership */
        assert_true(raft_ready(w) >= raft_size(w) / 2 + 1);
        w->raft[s.id] = true;
        w->ever_member[s.id] = true;
        start(w, s.id, 3);         /* the executor creates the Godis right after +OK */
        break;
    case GP_FINISH_SCALE_OUT:
        v->members[v->nmembers++] = v->scale_out_id;
        v->scale_out_id = 0;
        v->phase = "Running";
        break;
    case GP_RECORD_SCALE_IN:
        v->scale_in_id = s.id;
        v->phase = "Scaling";
        break;
    case GP_FORGET: {
        assert_int_not_equal(s.via_id, s.id);
        /* the forget commits in the current configuration, the victim voting if it runs */
        assert_true(raft_ready(w) >= raft_size(w) / 2 + 1);
        /* where the others commit it alone with a vote to spare, the victim was stopped
         * first and is gone */
        if (others_ready(w, s.id) >= raft_size(w) / 2 + 2)
            assert_false(w->running[s.id] || w->pod_gone_in[s.id] > 0);
        w->raft[s.id] = false;
        stop(w, s.id);             /* the executor stops it right after +OK */
        v->forget_acked = true;    /* ...then rewrites the ConfigMap, as the executor does */
        int64_t ids[GODIS_MAX_MEMBERS];
        int n = godis_plan_configmap_ids(v, ids);
        v->forget_acked = false;
        cm_from(w, ids, n);
        for (int i = 0; i < n; i++) assert_int_not_equal(ids[i], s.id);
        break;
    }
    case GP_STOP_MEMBER:
        /* stopped while still a member only if the others commit its forget without it,
         * with a vote to spare */
        if (w->raft[s.id]) assert_true(others_ready(w, s.id) >= raft_size(w) / 2 + 2);
        stop(w, s.id);
        break;
    case GP_DELETE_GODIS:
        assert_false(w->raft[s.id]);   /* forget before delete */
        assert_false(w->running[s.id]);
        assert_int_equal(w->pod_gone_in[s.id], 0);
        w->godis[s.id] = false;
        w->finalizer[s.id] = false;
        w->deleting[s.id] = false;
        break;
    case GP_FINISH_SCALE_IN:
        remove_member(w, v->scale_in_id);
        v->scale_in_id = 0;
        v->phase = "Running";
        break;
    case GP_ADOPT:
    case GP_NOTHING:
    case GP_WAIT:
    case GP_ALL_LOST:
        break;
    }
    int after = raft_size(w);
    assert_true(after - before <= 1 && before - after <= 1);   /* one change at a time */
    for (int i = 1; i < 128; i++) {
        /* a forgotten member never runs into the next step */
        if (w->ever_member[i] && !w->raft[i]) assert_false(w->running[i]);
        if (w->godis[i] && w->ready_in[i] > 0) w->ready_in[i]--;
        if (w->pod_gone_in[i] > 0) w->pod_gone_in[i]--;
    }
    w->steps++;
    return s.kind;
}

static void run_until_converged(world *w)
{
    int quiet = 0;
    for (int i = 0; i < 500 && quiet < 5; i++) {
        godis_step_kind k = apply(w);
        quiet = (k == GP_NOTHING) ? quiet + 1 : 0;
    }
    assert_int_equal(quiet, 5);
}

static void assert_consistent(world *w, int want)
{
    godis_view *v = &w->v;
    assert_int_equal(v->nmembers, want);
    assert_int_equal(raft_size(w), want);
    assert_int_equal(v->cm_n, want);
    for (int i = 0; i < v->nmembers; i++) {
        int64_t id = v->members[i];
        assert_true(w->raft[id]);
        assert_true(w->godis[id]);
        bool in_cm = false;
        for (int j = 0; j < v->cm_n; j++) in_cm |= v->cm_ids[j] == id;
        assert_true(in_cm);
    }
    int godis_count = 0, running = 0;
    for (int i = 0; i < 128; i++) {
        godis_count += w->godis[i];
        running += w->running[i] || w->pod_gone_in[i] > 0;
    }
    assert_int_equal(godis_count, want);
    assert_int_equal(running, want);
}

static void world_new(world *w, int desired)
{
    memset(w, 0, sizeof *w);
    w->v.desired = desired;
    w->v.phase = "";
}

/* ---------- tests ---------- */
static void test_create_three(void **state)
{
    (void)state;
    world w;
    world_new(&w, 3);
    assert_int_equal(apply(&w), GP_RECORD_INIT);   /* intent before any side effect */
    run_until_converged(&w);
    assert_consistent(&w, 3);
    assert_int_equal(w.v.next_id, 4);
    assert_string_equal(w.v.phase, "Running");
}

static void test_scale_3_6_2(void **state)
{
    (void)state;
    world w;
    world_new(&w, 3);
    run_until_converged(&w);
    w.v.desired = 6;
    run_until_converged(&w);
    assert_consistent(&w, 6);
    assert_int_equal(w.v.next_id, 7);
    w.v.desired = 2;
    run_until_converged(&w);
    assert_consistent(&w, 2);
    /* the highest ids go first when everything is healthy */
    assert_int_equal(w.v.members[0], 1);
    assert_int_equal(w.v.members[1], 2);
    w.v.desired = 4;
    run_until_converged(&w);
    assert_consistent(&w, 4);
    assert_true(w.raft[7] && w.raft[8]);   /* 3..6 are never reused */
}

static void test_scale_out_waits_for_ready(void **state)
{
    (void)state;
    world w;
    world_new(&w, 3);
    run_until_converged(&w);
    w.v.desired = 5;
    /* record, configmap, meet (creates 4, not Ready for 3 ticks), finish */
    assert_int_equal(apply(&w), GP_RECORD_SCALE_OUT);
    assert_int_equal(apply(&w), GP_ENSURE_CONFIGMAP);
    assert_int_equal(apply(&w), GP_MEET);
    assert_int_equal(apply(&w), GP_FINISH_SCALE_OUT);
    /* member 4 is not Ready yet: no second change starts */
    sync_view(&w);
    godis_step s = godis_plan_next(&w.v);
    assert_int_equal(s.kind, GP_WAIT);
    run_until_converged(&w);
    assert_consistent(&w, 5);
}

static void test_heal_deleted_godis(void **state)
{
    (void)state;
    world w;
    world_new(&w, 3);
    run_until_converged(&w);
    w.godis[2] = false;          /* gone outright (finalizer stripped); its pod too */
    w.running[2] = false;
    run_until_converged(&w);
    assert_consistent(&w, 3);
    assert_false(w.raft[2]);
    assert_true(w.raft[4]);      /* replaced by a new id */
}

/* Deleted by hand: the finalizer holds the Godis; forgotten while it still runs, stopped
 * in the same step, its Godis released only once its pod is gone; a new id replaces it. */
static void test_hand_deleted_godis_stopped_then_forgotten(void **state)
{
    (void)state;
    world w;
    world_new(&w, 3);
    run_until_converged(&w);
    delete_by_hand(&w, 2);
    sync_view(&w);
    godis_step s = godis_plan_next(&w.v);
    assert_int_equal(s.kind, GP_RECORD_SCALE_IN);
    assert_string_equal(s.reason, "MemberDeleted");
    apply(&w);
    assert_true(w.running[2]);
    /* 1 and 3 could commit its forget alone, but with no vote to spare: forgotten first
     * while all three run, stopped in the same step; the finalizer still holds the Godis */
    assert_int_equal(apply(&w), GP_FORGET);
    assert_false(w.raft[2] || w.running[2]);
    assert_true(w.godis[2]);
    run_until_converged(&w);
    assert_consistent(&w, 3);
    assert_true(w.raft[4]);
}

/* 2 -> 1: the victim must vote for its own removal, so it is forgotten while it runs and
 * stopped right after (stopping it first would leave 1 of 2 members: no quorum). */
static void test_two_to_one(void **state)
{
    (void)state;
    world w;
    world_new(&w, 2);
    run_until_converged(&w);
    w.v.desired = 1;
    assert_int_equal(apply(&w), GP_RECORD_SCALE_IN);
    assert_true(w.running[2] && w.raft[2]);
    assert_int_equal(apply(&w), GP_FORGET);
    assert_false(w.running[2] || w.raft[2]);
    run_until_converged(&w);
    assert_consistent(&w, 1);
}

/* A ConfigMap deleted while a scale-in is in flight is rebuilt with the victim still
 * listed: the forget is sent, never skipped. */
static void test_configmap_missing_mid_scale_in(void **state)
{
    (void)state;
    world w;
    world_new(&w, 3);
    run_until_converged(&w);
    w.v.desired = 2;
    assert_int_equal(apply(&w), GP_RECORD_SCALE_IN);
    w.v.configmap_exists = w.v.configmap_parsed = false;
    w.v.cm_n = 0;
    assert_int_equal(apply(&w), GP_ENSURE_CONFIGMAP);
    assert_int_equal(w.v.cm_n, 3);
    assert_int_equal(apply(&w), GP_FORGET);          /* 3 -> 2: no vote to spare, forget first */
    run_until_converged(&w);
    assert_consistent(&w, 2);
}

/* A 2-member cluster scaled to 1: the intent recorded, and member 2's forget applied by
 * godis — nothing the operator did after it is seen. */
static void two_to_one_forget_applied(world *w)
{
    world_new(w, 2);
    run_until_converged(w);
    w->v.desired = 1;
    assert_int_equal(apply(w), GP_RECORD_SCALE_IN);
    w->raft[2] = false;
    sync_view(w);
}

/* 2 -> 1 (forget first), a worker killed between the forget and the stop: the next one
 * (the ConfigMap still lists the victim, no +OK remembered) forgets again — idempotent —
 * and stops; one killed after the ConfigMap record but before the stop stops first. */
static void test_crash_between_forget_and_stop(void **state)
{
    (void)state;
    world w;
    two_to_one_forget_applied(&w);                   /* nothing after the forget */
    godis_step s = godis_plan_next(&w.v);
    assert_int_equal(s.kind, GP_FORGET);
    assert_int_equal(s.id, 2);
    w.raft[2] = true;
    world w2 = w;
    w2.raft[2] = false;                              /* forgotten and recorded, not stopped */
    int64_t ids[] = {1};
    cm_from(&w2, ids, 1);
    sync_view(&w2);
    s = godis_plan_next(&w2.v);
    assert_int_equal(s.kind, GP_STOP_MEMBER);
    assert_int_equal(s.id, 2);
    run_until_converged(&w);
    assert_consistent(&w, 1);
}

/* The forget got +OK, then the API server was unreachable: neither the ConfigMap record nor
 * the stop went through, and a removed leader may be back from its WAL as a voter. The
 * worker remembers the +OK (forget_acked), so the retry stops the member first, then
 * records — never a second forget, which the restarted member's campaigns would keep from
 * committing (seen in chaos seed 21: a 2 -> 1 stuck for minutes). Without the memo the same
 * state plans the forget again. */
static void test_forget_acked_record_failed(void **state)
{
    (void)state;
    world w;
    two_to_one_forget_applied(&w);                   /* +OK; the record and the stop failed */
    assert_int_equal(godis_plan_next(&w.v).kind, GP_FORGET);      /* nothing remembered */
    w.v.forget_acked = true;                         /* the worker remembers the +OK */
    godis_step s = godis_plan_next(&w.v);
    assert_int_equal(s.kind, GP_STOP_MEMBER);
    assert_int_equal(s.id, 2);
    apply(&w);
    assert_false(w.running[2]);
    sync_view(&w);
    assert_int_equal(godis_plan_next(&w.v).kind, GP_ENSURE_CONFIGMAP);
    int64_t ids[GODIS_MAX_MEMBERS];
    assert_int_equal(godis_plan_configmap_ids(&w.v, ids), 1);
    assert_int_equal(ids[0], 1);
    apply(&w);
    w.v.forget_acked = false;                        /* the ConfigMap is the record now */
    run_until_converged(&w);
    assert_consistent(&w, 1);
}

/* The order of a removal by size: where the Ready members besides the victim are a majority
 * of today's membership, the victim is stopped first and forgotten once its pods are gone;
 * 2 -> 1 (its vote is needed) forgets first. */
static void test_stop_first_where_the_others_commit(void **state)
{
    (void)state;
    for (int n = 2; n <= 7; n++) {
        world w;
        world_new(&w, n);
        run_until_converged(&w);
        w.v.desired = n - 1;
        assert_int_equal(apply(&w), GP_RECORD_SCALE_IN);
        sync_view(&w);
        assert_int_equal(godis_plan_stop_first(&w.v, n), n >= 5);   /* a vote to spare */
        if (n >= 5) {
            assert_int_equal(apply(&w), GP_STOP_MEMBER);
            assert_true(w.raft[n]);
            while (w.pod_gone_in[n] > 0) assert_int_equal(apply(&w), GP_WAIT);
        }
        assert_int_equal(apply(&w), GP_FORGET);
        assert_false(w.running[n] || w.raft[n]);
        run_until_converged(&w);
        assert_consistent(&w, n - 1);
    }
    /* 4 -> 3 with member 2 not Ready: 2 is the victim, and 1, 3, 4 commit alone */
    world w;
    world_new(&w, 4);
    run_until_converged(&w);
    stop(&w, 2);
    w.v.desired = 3;
    assert_int_equal(apply(&w), GP_RECORD_SCALE_IN);
    assert_int_equal(w.v.scale_in_id, 2);
    run_until_converged(&w);
    assert_consistent(&w, 3);
    /* 5 members, one besides the victim not Ready: 3 of 5 commit, but with none to spare */
    world_new(&w, 5);
    run_until_converged(&w);
    w.ready_in[1] = 5;
    sync_view(&w);
    assert_false(godis_plan_stop_first(&w.v, 5));
}

/* Every member lost: nothing is created until the user asks for a fresh cluster; then new
 * ids, never the old ones. */
static void test_all_members_lost(void **state)
{
    (void)state;
    world w;
    world_new(&w, 3);
    run_until_converged(&w);
    for (int id = 1; id <= 3; id++) {
        w.lost_volume[id] = true;
        w.running[id] = false;
        w.raft[id] = false;
    }
    for (int i = 0; i < 5; i++) assert_int_equal(apply(&w), GP_ALL_LOST);
    w.v.bootstrap_fresh = true;
    assert_int_equal(apply(&w), GP_RECORD_INIT);
    assert_int_equal(w.v.members[0], 4);
    run_until_converged(&w);
    assert_consistent(&w, 3);
    assert_false(w.godis[1] || w.godis[2] || w.godis[3]);
}

/* A majority lost for good (the rest can never commit again): the same wait, reason
 * QuorumLost. */
static void test_quorum_lost(void **state)
{
    (void)state;
    world w;
    world_new(&w, 3);
    run_until_converged(&w);
    for (int id = 1; id <= 2; id++) {
        w.lost_volume[id] = true;
        w.running[id] = false;
    }
    sync_view(&w);
    godis_step s = godis_plan_next(&w.v);
    assert_int_equal(s.kind, GP_ALL_LOST);
    assert_string_equal(s.reason, "QuorumLost");
}

/* A member whose volume is gone but that still serves (its pod holds the old claim) is
 * replaced like a member on a bad node: a new id first, then it is removed. */
static void test_lost_volume_replaced_add_first(void **state)
{
    (void)state;
    world w;
    world_new(&w, 3);
    run_until_converged(&w);
    w.lost_volume[2] = true;
    assert_int_equal(apply(&w), GP_RECORD_SCALE_OUT);
    run_until_converged(&w);
    assert_consistent(&w, 3);
    assert_false(w.raft[2]);
    assert_true(w.raft[4]);
}

/* The only member cannot be forgotten: deleting its Godis by hand waits. */
static void test_last_member_kept(void **state)
{
    (void)state;
    world w;
    world_new(&w, 1);
    run_until_converged(&w);
    delete_by_hand(&w, 1);
    sync_view(&w);
    godis_step s = godis_plan_next(&w.v);
    assert_int_equal(s.kind, GP_WAIT);
    assert_string_equal(s.reason, "LastMember");
}

static void test_configmap_deleted_is_rebuilt_not_reinitialised(void **state)
{
    (void)state;
    world w;
    world_new(&w, 3);
    run_until_converged(&w);
    w.v.configmap_exists = false;
    w.v.configmap_parsed = false;
    w.v.cm_n = 0;
    sync_view(&w);
    godis_step s = godis_plan_next(&w.v);
    assert_int_equal(s.kind, GP_ENSURE_CONFIGMAP);
    run_until_converged(&w);
    assert_consistent(&w, 3);
    assert_int_equal(w.v.next_id, 4);   /* no re-initialise */
}

static void test_migrate_cordoned_adds_first(void **state)
{
    (void)state;
    world w;
    world_new(&w, 3);
    run_until_converged(&w);
    w.bad[1] = true;             /* cordoned; member 1 still Ready */
    assert_int_equal(apply(&w), GP_RECORD_SCALE_OUT);
    int peak = 0;
    for (int i = 0; i < 100; i++) {
        godis_step_kind k = apply(&w);
        if (raft_size(&w) > peak) peak = raft_size(&w);
        if (k == GP_NOTHING) break;
    }
    assert_int_equal(peak, 4);   /* added before removed */
    run_until_converged(&w);
    assert_consistent(&w, 3);
    assert_false(w.raft[1]);
}

/* Issue 19.2: a move that cannot keep quorum or has nowhere to go waits, says why (a
 * warning step naming the member), and changes nothing; it proceeds once a node appears. */
static void test_move_blocked_without_a_node(void **state)
{
    (void)state;
    world w;
    world_new(&w, 3);
    run_until_converged(&w);
    w.bad[2] = true;             /* cordoned, Ready, every other node unusable */
    w.no_node[2] = true;
    for (int i = 0; i < 20; i++) {
        sync_view(&w);
        godis_step s = godis_plan_next(&w.v);
        assert_int_equal(s.kind, GP_WAIT);
        assert_true(s.warn);
        assert_int_equal(s.id, 2);
        assert_string_equal(s.reason, "CannotMoveMember");
        assert_non_null(strstr(s.why, "no other schedulable node"));
        assert_int_equal(apply(&w), GP_WAIT);
    }
    assert_consistent(&w, 3);
    assert_int_equal(w.v.next_id, 4);           /* no scale-out was even recorded */
    w.no_node[2] = false;        /* uncordoned */
    run_until_converged(&w);
    assert_consistent(&w, 3);
    assert_false(w.raft[2]);
}

static void test_single_member_cannot_move(void **state)
{
    (void)state;
    world w;
    world_new(&w, 1);
    run_until_converged(&w);
    w.bad[1] = true;
    sync_view(&w);
    godis_step s = godis_plan_next(&w.v);
    assert_int_equal(s.kind, GP_WAIT);
    assert_true(s.warn);
    assert_int_equal(s.id, 1);
    assert_string_equal(s.reason, "CannotMoveMember");
    assert_non_null(strstr(s.why, "only member"));
    assert_consistent(&w, 1);
}

/* The replacement (or a new member) cannot be scheduled: the wait for readiness says so. */
static void test_unschedulable_member_is_surfaced(void **state)
{
    (void)state;
    world w;
    world_new(&w, 3);
    run_until_converged(&w);
    w.bad[1] = true;
    assert_int_equal(apply(&w), GP_RECORD_SCALE_OUT);
    w.unsched[4] = true;
    godis_step s = {0};
    for (int i = 0; i < 20 && !s.warn; i++) {
        sync_view(&w);
        s = godis_plan_next(&w.v);
        apply(&w);
    }
    assert_int_equal(s.kind, GP_WAIT);
    assert_string_equal(s.reason, "MemberUnschedulable");
    assert_int_equal(s.id, 4);
    assert_non_null(strstr(s.why, "cannot be scheduled"));
    assert_true(w.raft[1]);      /* nothing forgotten while its replacement is not Ready */
    w.unsched[4] = false;
    run_until_converged(&w);
    assert_consistent(&w, 3);
    assert_false(w.raft[1]);
    /* a scale-out beyond what the nodes take: converged in membership, said all the same */
    w.v.desired = 4;
    assert_int_equal(apply(&w), GP_RECORD_SCALE_OUT);
    int64_t id = w.v.next_id - 1;
    w.unsched[id] = true;
    for (int i = 0; i < 20; i++) apply(&w);
    sync_view(&w);
    s = godis_plan_next(&w.v);
    assert_string_equal(s.reason, "MemberUnschedulable");
    assert_int_equal(s.id, id);
}

static void test_migrate_dead_member_removes_first(void **state)
{
    (void)state;
    world w;
    world_new(&w, 3);
    run_until_converged(&w);
    w.bad[2] = true;             /* node NotReady past grace: member 2 down */
    w.ready_in[2] = 1000;
    run_until_converged(&w);
    assert_consistent(&w, 3);
    assert_false(w.raft[2]);
}

static void test_victim_order(void **state)
{
    (void)state;
    godis_view v = {0};
    int64_t ids[] = {1, 2, 3, 4};
    memcpy(v.members, ids, sizeof ids);
    v.nmembers = 4;
    for (int i = 0; i < 4; i++)
        v.observed[v.nobserved++] = (godis_member){.id = ids[i], .godis_exists = true, .ready = true};
    assert_int_equal(godis_plan_victim(&v), 4);          /* highest id */
    v.observed[1].ready = false;
    assert_int_equal(godis_plan_victim(&v), 2);          /* not Ready first */
    v.observed[0].node_bad = true;
    assert_int_equal(godis_plan_victim(&v), 1);          /* bad node first */
}

static void test_crash_resumes_recorded_step(void **state)
{
    (void)state;
    world w;
    world_new(&w, 3);
    run_until_converged(&w);
    w.v.desired = 4;
    assert_int_equal(apply(&w), GP_RECORD_SCALE_OUT);
    int64_t recorded = w.v.scale_out_id;
    /* a new worker picks up the same status: it must continue with the same id */
    sync_view(&w);
    godis_step s = godis_plan_next(&w.v);
    assert_int_equal(s.kind, GP_ENSURE_CONFIGMAP);
    assert_int_equal(s.id, recorded);
    run_until_converged(&w);
    assert_consistent(&w, 4);
    assert_int_equal(w.v.members[3], recorded);
}

static void test_paused_stops_changes(void **state)
{
    (void)state;
    world w;
    world_new(&w, 3);
    run_until_converged(&w);
    w.v.paused = true;
    w.v.desired = 5;
    run_until_converged(&w);
    assert_consistent(&w, 3);
}

static void test_scale_in_needs_a_ready_peer(void **state)
{
    (void)state;
    world w;
    world_new(&w, 2);
    run_until_converged(&w);
    w.v.desired = 1;
    w.ready_in[1] = 1000;        /* member 1 is down */
    sync_view(&w);
    godis_step s = godis_plan_next(&w.v);
    /* the victim is the not-Ready member 1, but forgetting it needs 2 of 2 votes: the
     * forget could never commit, so it is not started */
    assert_int_equal(s.kind, GP_WAIT);
    assert_int_equal(s.id, 1);
    w.ready_in[1] = 0;
    sync_view(&w);
    s = godis_plan_next(&w.v);
    assert_int_equal(s.kind, GP_RECORD_SCALE_IN);
}

static void test_stray_godis_removed(void **state)
{
    (void)state;
    world w;
    world_new(&w, 3);
    run_until_converged(&w);
    start(&w, 9, 0);                 /* not a member: stopped, then removed */
    run_until_converged(&w);
    assert_false(w.godis[9] || w.running[9]);
    assert_consistent(&w, 3);
}

static void test_adopt_old_controller_object(void **state)
{
    (void)state;
    godis_view v = {0};
    v.desired = 3;
    v.phase = "Running";
    v.next_id = 4;
    v.observed[v.nobserved++] = (godis_member){.id = 1, .godis_exists = true};
    godis_step s = godis_plan_next(&v);
    assert_int_equal(s.kind, GP_ADOPT);
}

static void test_spec_validation(void **state)
{
    (void)state;
    const char *bad[] = {"{\"spec\":{\"replicas\":0}}", "{\"spec\":{\"replicas\":10}}",
                         "{\"spec\":{\"replicas\":-1}}", "{\"spec\":{\"replicas\":\"3\"}}",
                         "{\"spec\":[]}", "{\"spec\":{\"replicas\":2.5}}",
                         "{\"spec\":{\"paused\":\"yes\"}}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cJSON *o = cJSON_Parse(bad[i]);
        godis_spec sp;
        char msg[128] = "";
        assert_false(godis_spec_validate(o, &sp, msg, sizeof msg));
        assert_true(strlen(msg) > 0);
        cJSON_Delete(o);
    }
    cJSON *o = cJSON_Parse("{\"spec\":{\"replicas\":9,\"paused\":true}}");
    godis_spec sp;
    char msg[128];
    assert_true(godis_spec_validate(o, &sp, msg, sizeof msg));
    assert_int_equal(sp.replicas, 9);
    assert_true(sp.paused);
    cJSON_Delete(o);
    o = cJSON_Parse("{}");
    assert_false(godis_spec_validate(o, &sp, msg, sizeof msg));
    assert_string_equal(msg, "spec is missing");
    cJSON_Delete(o);
    o = cJSON_Parse("{\"spec\":{}}");
    assert_true(godis_spec_validate(o, &sp, msg, sizeof msg));
    assert_int_equal(sp.replicas, 3);
    cJSON_Delete(o);
}

static void test_initial_cluster_string(void **state)
{
    (void)state;
    char buf[512];
    int64_t ids[] = {1, 2};
    int n = godis_initial_cluster(buf, sizeof buf, "ns1", "example-godis", ids, 2, NULL);
    assert_true(n > 0);
    assert_string_equal(buf,
        "1@http://example-godis-1-endpoint.ns1.svc.cluster.local:6300,"
        "2@http://example-godis-2-endpoint.ns1.svc.cluster.local:6300");
    assert_int_equal(godis_initial_cluster(buf, 20, "ns1", "example-godis", ids, 2, NULL), -1);
}

/* Members dial each other by these names through the cluster's DNS: --cluster-domain is used. */
static void test_initial_cluster_domain(void **state)
{
    (void)state;
    char buf[512];
    int64_t ids[] = {3, 7};
    assert_true(godis_initial_cluster(buf, sizeof buf, "db", "c", ids, 2, "corp.example") > 0);
    assert_string_equal(buf, "3@http://c-3-endpoint.db.svc.corp.example:6300,"
                             "7@http://c-7-endpoint.db.svc.corp.example:6300");
    assert_true(godis_initial_cluster_valid(buf, "db", "c", "corp.example"));
    /* what the Go controller wrote (cluster.local) stays valid under any domain */
    const char *go = "3@http://c-3-endpoint.db.svc.cluster.local:6300";
    assert_true(godis_initial_cluster_valid(go, "db", "c", "corp.example"));
    assert_true(godis_initial_cluster_valid(go, "db", "c", NULL));
    assert_true(godis_initial_cluster_valid("", "db", "c", NULL));
    /* any other domain, namespace, cluster, id or shape is not */
    assert_false(godis_initial_cluster_valid(buf, "db", "c", NULL));
    assert_false(godis_initial_cluster_valid("3@http://c-3-endpoint.db.svc.evil.example:6300", "db", "c", "corp.example"));
    assert_false(godis_initial_cluster_valid("3@http://c-4-endpoint.db.svc.cluster.local:6300", "db", "c", NULL));
    assert_false(godis_initial_cluster_valid("3@http://c-3-endpoint.other.svc.cluster.local:6300", "db", "c", NULL));
    assert_false(godis_initial_cluster_valid("3@http://c-3-endpoint.db.svc.cluster.local:6300,", "db", "c", NULL));
    assert_false(godis_initial_cluster_valid("x@http://c-3-endpoint.db.svc.cluster.local:6300", "db", "c", NULL));
    assert_false(godis_initial_cluster_valid("3@http://c-3-endpoint.db.svc.cluster.local:63000", "db", "c", NULL));
    assert_false(godis_initial_cluster_valid(NULL, "db", "c", NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_three),
        cmocka_unit_test(test_scale_3_6_2),
        cmocka_unit_test(test_scale_out_waits_for_ready),
        cmocka_unit_test(test_heal_deleted_godis),
        cmocka_unit_test(test_hand_deleted_godis_stopped_then_forgotten),
        cmocka_unit_test(test_two_to_one),
        cmocka_unit_test(test_configmap_missing_mid_scale_in),
        cmocka_unit_test(test_crash_between_forget_and_stop),
        cmocka_unit_test(test_forget_acked_record_failed),
        cmocka_unit_test(test_stop_first_where_the_others_commit),
        cmocka_unit_test(test_all_members_lost),
        cmocka_unit_test(test_quorum_lost),
        cmocka_unit_test(test_lost_volume_replaced_add_first),
        cmocka_unit_test(test_last_member_kept),
        cmocka_unit_test(test_configmap_deleted_is_rebuilt_not_reinitialised),
        cmocka_unit_test(test_migrate_cordoned_adds_first),
        cmocka_unit_test(test_migrate_dead_member_removes_first),
        cmocka_unit_test(test_move_blocked_without_a_node),
        cmocka_unit_test(test_single_member_cannot_move),
        cmocka_unit_test(test_unschedulable_member_is_surfaced),
        cmocka_unit_test(test_victim_order),
        cmocka_unit_test(test_crash_resumes_recorded_step),
        cmocka_unit_test(test_paused_stops_changes),
        cmocka_unit_test(test_scale_in_needs_a_ready_peer),
        cmocka_unit_test(test_stray_godis_removed),
        cmocka_unit_test(test_adopt_old_controller_object),
        cmocka_unit_test(test_spec_validation),
        cmocka_unit_test(test_initial_cluster_string),
        cmocka_unit_test(test_initial_cluster_domain),
    };
    return cmocka_run_group_tests_name("godis_plan", tests, NULL, NULL);
}
