/* Tests of the GodisCluster membership planner (godis_plan.c): creating, scaling, healing
 * and moving members, losses, and the spec and ConfigMap checks — step by step and by
 * simulation on the model of tests/support/godis_plan_world.c, which checks the safety
 * invariants after every step. The removal order and the resumption of a step interrupted
 * at any point: test_godis_plan_resume.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <cmocka.h>
#include "godis_plan.h"
#include "gd_json.h"
#include "../support/godis_plan_world.h"

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

/* A member is added in this order: the intent, the ConfigMap, its Godis (join=true: no Raft
 * change), a wait until its pod is Ready, then the meet, recorded at once. Raft changes
 * only at the meet, and only while the newcomer runs. */
static void test_scale_out_waits_for_ready(void **state)
{
    (void)state;
    world w;
    world_new(&w, 1);
    run_until_converged(&w);
    w.v.desired = 2;
    assert_int_equal(apply(&w), GP_RECORD_SCALE_OUT);
    assert_int_equal(apply(&w), GP_ENSURE_CONFIGMAP);
    assert_int_equal(apply(&w), GP_CREATE_GODIS);
    assert_true(w.godis[2] && w.running[2]);
    assert_false(w.raft[2]);                    /* created, inert: not a member yet */
    sync_view(&w);
    godis_step s = godis_plan_next(&w.v);
    assert_int_equal(s.kind, GP_WAIT);          /* its pod is not Ready: no meet */
    assert_string_equal(s.reason, "WaitingForNewMember");
    assert_int_equal(s.id, 2);
    while (godis_plan_next(&w.v).kind == GP_WAIT) {
        assert_int_equal(apply(&w), GP_WAIT);
        assert_false(w.raft[2]);
        sync_view(&w);
    }
    assert_int_equal(apply(&w), GP_MEET);
    assert_true(w.raft[2]);
    assert_int_equal(w.v.nmembers, 2);          /* recorded in the same step */
    assert_int_equal(w.v.scale_out_id, 0);
    w.v.desired = 5;
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

/* A Godis gone outright during the bootstrap (its finalizer stripped), its pod still there:
 * the member may have voted or held the log, so it is not re-created under its id (the
 * bootstrap's record, phase Running, now waits for readiness and so stays open longer); the
 * bootstrap is recorded as done and the member replaced under a new id. A member whose
 * Godis was never made (a create that failed) is still created under its own. */
static void test_godis_deleted_during_bootstrap_not_recreated(void **state)
{
    (void)state;
    world w;
    world_new(&w, 3);
    sync_view(&w);
    for (int i = 0; i < 20 && godis_plan_next(&w.v).kind != GP_FINISH_INIT; i++) {
        apply(&w);
        sync_view(&w);
    }
    assert_string_equal(w.v.phase, "Initializing");
    assert_false(godis_plan_next(&w.v).at_once);   /* the normal record waits for readiness */
    w.godis[2] = false;          /* gone outright; its pod outlives it for its grace period */
    w.running[2] = false;
    w.pod_gone_in[2] = 3;
    sync_view(&w);
    godis_step s = godis_plan_next(&w.v);
    assert_int_equal(s.kind, GP_FINISH_INIT);
    assert_string_equal(s.reason, "MemberDeleted");
    assert_true(s.at_once);      /* written without waiting (godis_status.c) */
    run_until_converged(&w);
    assert_consistent(&w, 3);
    assert_false(w.raft[2]);
    assert_true(w.raft[4]);      /* replaced by a new id */

    world_new(&w, 3);            /* never made: created under its id */
    sync_view(&w);
    for (int i = 0; i < 20 && godis_plan_next(&w.v).kind != GP_FINISH_INIT; i++) {
        apply(&w);
        sync_view(&w);
    }
    w.godis[3] = false;
    w.running[3] = false;
    sync_view(&w);
    s = godis_plan_next(&w.v);
    assert_int_equal(s.kind, GP_CREATE_GODIS);
    assert_int_equal(s.id, 3);
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
        cmocka_unit_test(test_godis_deleted_during_bootstrap_not_recreated),
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
