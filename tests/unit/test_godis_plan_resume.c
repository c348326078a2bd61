/* Tests of the GodisCluster membership planner (godis_plan.c), second part: the order in
 * which a member is removed, by cluster size, and every membership step interrupted at each
 * of its points (a worker or manager killed, a record that failed after godis's +OK) and
 * resumed by the next worker from what it left behind — which must converge with no id
 * reused, one change at a time, and never a Raft configuration that counts a voter that
 * does not run. The model and its invariants: tests/support/godis_plan_world.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <cmocka.h>
#include "godis_plan.h"
#include "../support/godis_plan_world.h"

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
    /* a node's worth to spare: 7 members two to a node (the last alone) may stop 7 first
     * (6 others, 2 on one node, 4 left: a majority of 7); 6 -> 5 may not (5 others, 2 on one
     * node, 3 left of 6) and forgets first */
    static const char *nodes[] = {"", "n1", "n1", "n2", "n2", "n3", "n3", "n4"};
    for (int n = 7; n >= 6; n--) {
        world_new(&w, n);
        run_until_converged(&w);
        w.v.desired = n - 1;
        assert_int_equal(apply(&w), GP_RECORD_SCALE_IN);
        sync_view(&w);
        for (int i = 0; i < w.v.nobserved; i++) w.v.observed[i].node = nodes[w.v.observed[i].id];
        assert_int_equal(godis_plan_stop_first(&w.v, n), n == 7);
    }
    /* one member to a node: the one vote to spare is a node's worth */
    world_new(&w, 5);
    run_until_converged(&w);
    w.v.desired = 4;
    assert_int_equal(apply(&w), GP_RECORD_SCALE_IN);
    sync_view(&w);
    static const char *own[] = {"", "a", "b", "c", "d", "e"};
    for (int i = 0; i < w.v.nobserved; i++) w.v.observed[i].node = own[w.v.observed[i].id];
    assert_true(godis_plan_stop_first(&w.v, 5));
    /* a survivor that did not answer the probe (Ready, its node just died) no longer counts,
     * and the forget that then goes first is not sent to it */
    for (int i = 0; i < w.v.nobserved; i++) w.v.observed[i].silent = w.v.observed[i].id == 1;
    assert_false(godis_plan_stop_first(&w.v, 5));
    godis_step s = godis_plan_next(&w.v);
    assert_int_equal(s.kind, GP_FORGET);
    assert_int_equal(s.via_id, 2);
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

/* Where a scale-out step is interrupted. */
enum { AFTER_INTENT, AFTER_CONFIGMAP, AFTER_GODIS, AFTER_MEET_OK, AFTER_RECORD, NPOINTS };

/* n -> n+1, the worker (or the manager) killed at `point`; with newcomer_restarts, the new
 * member's pod also restarts then (not Ready again for a while). The next worker resumes
 * from what is left: the same id (recorded before any side effect), the meet only while
 * the newcomer runs (re-sent after a +OK that was never recorded: idempotent), and it
 * converges to n+1 members with no id reused (apply() asserts each step). */
static void scale_out_killed_at(int n, int point, bool newcomer_restarts)
{
    world w;
    world_new(&w, n);
    run_until_converged(&w);
    w.v.desired = n + 1;
    int64_t id = w.v.next_id;
    static const godis_step_kind until[] = {GP_RECORD_SCALE_OUT, GP_ENSURE_CONFIGMAP,
                                            GP_CREATE_GODIS, GP_MEET, GP_MEET};
    godis_step_kind k;
    do {
        sync_view(&w);
        if (point == AFTER_MEET_OK && godis_plan_next(&w.v).kind == GP_MEET)
            w.crash_after_meet = true;
        k = apply(&w);
    } while (k != until[point]);
    assert_int_equal(w.v.next_id, id + 1);      /* the intent holds the id it handed out */
    if (point == AFTER_MEET_OK) {               /* admitted, not recorded */
        assert_true(w.raft[id]);
        assert_int_equal(w.v.scale_out_id, id);
        assert_int_equal(w.v.nmembers, n);
    }
    if (newcomer_restarts && w.godis[id]) w.ready_in[id] = 4;
    sync_view(&w);
    godis_step s = godis_plan_next(&w.v);       /* the next worker, from the same state */
    if (point == AFTER_MEET_OK)                 /* meets again once the newcomer is Ready */
        assert_int_equal(s.kind, newcomer_restarts ? GP_WAIT : GP_MEET);
    if (point != AFTER_RECORD) assert_int_equal(s.id, id);
    run_until_converged(&w);
    assert_consistent(&w, n + 1);
    assert_true(w.raft[id]);
    assert_int_equal(w.v.next_id, id + 1);      /* no second id for the same step */
}

/* 1 -> 2 (the step that needs the newcomer for quorum the moment it is admitted: killed
 * between a meet and a Godis created after it, it was stuck for good), 2 -> 3, 3 -> 4. */
static void test_scale_out_killed_at_each_point(void **state)
{
    (void)state;
    for (int n = 1; n <= 3; n++)
        for (int point = 0; point < NPOINTS; point++)
            for (int restarts = 0; restarts <= 1; restarts++)
                scale_out_killed_at(n, point, restarts);
}

/* A newcomer that cannot come up (its node went bad) before its meet: a one-member cluster
 * never admits it (1 of 2 voters would be no quorum) and waits; where today's Ready
 * members alone are a majority of the bigger cluster (3 -> 4) the step finishes (it may
 * have been admitted by a meet whose +OK was never recorded) and the migration rules
 * replace it, adding first. */
static void test_new_member_on_a_bad_node(void **state)
{
    (void)state;
    world w;
    world_new(&w, 1);
    run_until_converged(&w);
    w.v.desired = 2;
    while (!w.godis[2]) apply(&w);
    w.bad[2] = true;
    w.ready_in[2] = 1000;
    for (int i = 0; i < 10; i++) assert_int_equal(apply(&w), GP_WAIT);
    assert_false(w.raft[2]);
    w.bad[2] = false;
    w.ready_in[2] = 0;
    run_until_converged(&w);
    assert_consistent(&w, 2);

    world_new(&w, 3);
    run_until_converged(&w);
    w.v.desired = 4;
    while (!w.godis[4]) apply(&w);
    w.bad[4] = true;
    w.ready_in[4] = 1000;
    assert_int_equal(apply(&w), GP_MEET);
    assert_int_equal(w.v.nmembers, 4);
    w.running[4] = false;                       /* its node is gone for good */
    w.pod_gone_in[4] = 0;
    run_until_converged(&w);
    assert_consistent(&w, 4);
    assert_false(w.raft[4]);
    assert_true(w.raft[5]);

    /* 3 -> 4 with a newcomer that cannot be scheduled (anti-affinity required, every node
     * taken), then back to 3: it waits while wanted, then it is admitted (1, 2, 3 Ready
     * keep 4's quorum) and forgotten by the scale-in, never left waiting for good */
    world_new(&w, 3);
    run_until_converged(&w);
    w.v.desired = 4;
    while (!w.godis[4]) apply(&w);
    w.running[4] = false;
    w.ready_in[4] = 1000;
    for (int i = 0; i < 10; i++) assert_int_equal(apply(&w), GP_WAIT);
    assert_false(w.raft[4]);
    w.v.desired = 3;
    assert_int_equal(apply(&w), GP_MEET);
    run_until_converged(&w);
    assert_consistent(&w, 3);
    assert_false(w.raft[4]);
    assert_int_equal(w.v.nmembers, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_deleted_godis_stopped_then_forgotten),
        cmocka_unit_test(test_two_to_one),
        cmocka_unit_test(test_configmap_missing_mid_scale_in),
        cmocka_unit_test(test_crash_between_forget_and_stop),
        cmocka_unit_test(test_forget_acked_record_failed),
        cmocka_unit_test(test_stop_first_where_the_others_commit),
        cmocka_unit_test(test_crash_resumes_recorded_step),
        cmocka_unit_test(test_scale_out_killed_at_each_point),
        cmocka_unit_test(test_new_member_on_a_bad_node),
    };
    return cmocka_run_group_tests_name("godis_plan_resume", tests, NULL, NULL);
}
