/* test_standin_raft.c — several bin/godis-standin members on loopback and the unkind parts
 * of Raft (election.c): no write without a leader, a forgotten follower campaigning and
 * costing the survivors their leader until it is stopped, a removed leader coming back from
 * its WAL as a voter, a fresh voter on an empty WAL, membership and data replicating to a
 * member that was behind, a joiner inert until its meet. The processes: standin_fixture.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "godis_client.h"
#include "standin_fixture.h"
#include "../support/test_wait.h"


/* The member's own membership as "1,2,3" into m ("" when it does not answer). */
static const char *members_of(const standin_proc *p, char *m, size_t cap)
{
    m[0] = '\0';
    godis_client *c = si_client(p, 1000);
    si_members_str(c, m, cap);
    godis_client_destroy(&c);
    return m;
}

/* Waits until the member's own membership reads want (replication is asynchronous). */
static int wait_members(const standin_proc *p, const char *want, int ms)
{
    char m[128] = "";
    WAIT_UNTIL(!strcmp(members_of(p, m, sizeof m), want), ms);
    if (!strcmp(m, want)) return 1;
    fprintf(stderr, "members of port %d: %s, want %s\n", p->port, m, want);
    return 0;
}

/* Whether key reads want on the member. */
static bool value_is(const standin_proc *p, const char *key, const char *want)
{
    godis_client *c = si_client(p, 1000);
    char *v = NULL;
    bool ok = c && godis_get(c, key, &v) == GD_OK && v && !strcmp(v, want);
    free(v);
    godis_client_destroy(&c);
    return ok;
}

/* Waits until key reads want on the member (replication is asynchronous). */
static int wait_value(const standin_proc *p, const char *key, const char *want, int ms)
{
    bool ok = false;
    WAIT_UNTIL((ok = value_is(p, key, want)), ms);
    if (ok) return 1;
    fprintf(stderr, "port %d: %s is not %s\n", p->port, key, want);
    return 0;
}

/* Starts member id with the initial cluster 1..n (peer ports peer[]), join=true or not. */
static void start_proc(standin_proc *p, int id, const int *peer, int n, bool join)
{
    char ic[256] = "";
    for (int k = 0; k < n; k++)
        snprintf(ic + strlen(ic), sizeof(ic) - strlen(ic), "%s%d@http://%s:%d",
                 k ? "," : "", k + 1, si_host(), peer[k]);
    char idf[24], lc[64], lp[64], wal[600], icf[300];
    snprintf(lc, sizeof(lc), "--listen-client=http://%s:0", si_host());
    snprintf(idf, sizeof(idf), "--id=%d", id);
    snprintf(lp, sizeof(lp), "--listen-peer=http://%s:%d", si_host(), peer[id - 1]);
    snprintf(wal, sizeof(wal), "--waldir=%s/wal", p->dir);
    snprintf(icf, sizeof(icf), "--initial-cluster=%s", ic);
    const char *args[] = {idf, lc, lp, wal, icf, join ? "--join" : NULL, NULL};
    p->host = si_host();
    assert_int_equal(si_start(p, args, NULL), 0);
}

/* Starts member i+1 of an n-member cluster whose peer ports are peer[]. */
static void start_member(standin_proc *p, int i, const int *peer, int n)
{
    start_proc(p, i + 1, peer, n, false);
}

/* Peer ports are reserved (si_reserve_port), not picked free and let go: a port released
 * before its member binds it could be taken by any process in between (the start failed),
 * and the address of a member that never runs (member 4 in test_membership_replicates) was bound meanwhile by another
 * test's stand-in through port 0, which then obeyed this cluster's heartbeats (seen: a
 * one-member leader of test_standin demoted for a minute, its writes canceled). */
static void start_cluster(standin_proc *p, int *peer, int n)
{
    for (int i = 0; i < n; i++)
        peer[i] = si_reserve_port();
    for (int i = 0; i < n; i++) {
        memset(&p[i], 0, sizeof(p[i]));
        si_mkdir_tmp(&p[i]);
        start_member(&p[i], i, peer, n);
    }
}

static void stop_cluster(standin_proc *p, int n)
{
    for (int i = 0; i < n; i++) {
        si_stop(&p[i]);
        si_rm_tmp(&p[i]);
    }
}

/* Most tests run on three members, started before the test and stopped after it, also
 * when an assertion failed midway (no stand-in left running into the next test). */
typedef struct {
    standin_proc p[3];
    int peer[3];
} trio;

static int trio_setup(void **state)
{
    trio *t = calloc(1, sizeof *t);
    if (!t) return -1;
    start_cluster(t->p, t->peer, 3);
    *state = t;
    return 0;
}

static int trio_teardown(void **state)
{
    trio *t = *state;
    if (t) stop_cluster(t->p, 3);
    free(t);
    return 0;
}

/* A forgotten follower is not told: it keeps campaigning, every campaign costs the
 * survivors their leader (a write in that moment fails), until its process is stopped. */
static void test_forgotten_follower_disrupts_until_stopped(void **state)
{
    standin_proc *p = ((trio *)*state)->p;
    si_lead(&p[0]);
    godis_client *c = si_client(&p[0], 3000);
    assert_int_equal(godis_set(c, "k", "v"), GD_OK);
    long long t0 = si_wall_us();
    assert_int_equal(godis_forget(c, 3, 3000), GD_OK);
    /* Within a few election timeouts member 3 has campaigned more than once, and member 2
     * (a survivor) saw each campaign as a new election and lost its leader. */
    int seen = 0;
    WAIT_UNTIL((seen = si_count_events(&p[1], "vote-request 3 ", t0)) >= 2, 15000);
    assert_true(seen >= 2);
    assert_true(si_count_events(&p[1], "leader-lost", t0) >= 1);
    assert_true(si_count_events(&p[2], "campaign", t0) >= 2);
    assert_true(si_wait_exit(p[2].pid, 0) < 0);               /* it keeps running */
    /* Stopped: the survivors settle down and accept writes again. */
    kill(p[2].pid, SIGTERM);
    assert_true(si_wait_exit(p[2].pid, (int)test_scaled_ms(SI_BOUND_MS)) >= 0);
    p[2].pid = 0;
    long long t1 = si_wall_us();
    gd_err e = GD_ERR_TIMEOUT;
    WAIT_UNTIL((e = godis_set(c, "after", "stop")) == GD_OK, 15000);   /* the survivors re-elect */
    assert_int_equal(e, GD_OK);
    /* the quiet period is the behaviour under test: more than an election timeout, and the
     * stopped member's vote requests have stopped */
    si_msleep(2500);
    assert_int_equal(si_count_events(&p[1], "vote-request 3 ", t1), 0);
    godis_client_destroy(&c);
}

/* A removed leader exits 0 at once without saving its removal; the survivors elect a new
 * leader. Restarted on its WAL it is a voter again, and its campaigns disturb them. */
static void test_removed_leader_returns_as_voter(void **state)
{
    standin_proc *p = ((trio *)*state)->p;
    const int *peer = ((trio *)*state)->peer;
    si_lead(&p[2]);
    godis_client *c = si_client(&p[0], 3000);
    assert_int_equal(godis_forget(c, 3, 3000), GD_OK);
    int st = si_wait_exit(p[2].pid, (int)test_scaled_ms(SI_BOUND_MS));
    assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    p[2].pid = 0;
    assert_true(wait_members(&p[1], "1,2", 3000));
    long long t0 = si_wall_us();
    start_member(&p[2], 2, peer, 3);
    assert_true(wait_members(&p[2], "1,2,3", 0));           /* its old membership */
    int seen = 0;
    WAIT_UNTIL((seen = si_count_events(&p[0], "vote-request 3 ", t0) +
                       si_count_events(&p[1], "vote-request 3 ", t0)) >= 1, 10000);
    assert_true(seen >= 1);
    godis_client_destroy(&c);
}

/* A follower forwards a write to its leader: with the leader dead the write fails at once
 * (before the follower's election timeout notices), and succeeds again once the survivors
 * elected a new leader. */
static void test_write_needs_a_live_leader(void **state)
{
    standin_proc *p = ((trio *)*state)->p;
    si_lead(&p[0]);
    godis_client *c = si_client(&p[1], 3000);
    assert_int_equal(godis_set(c, "k", "v"), GD_OK);
    kill(p[0].pid, SIGKILL);
    assert_true(si_wait_exit(p[0].pid, (int)test_scaled_ms(SI_BOUND_MS)) >= 0);
    p[0].pid = 0;
    assert_int_equal(godis_set(c, "k", "v2"), GD_ERR_PROTOCOL);
    assert_string_equal(godis_last_error(c), "propose canceled by context");
    gd_err e = GD_ERR_PROTOCOL;
    WAIT_UNTIL((e = godis_set(c, "k", "v3")) == GD_OK, 15000);   /* 2 of 3 elect a new leader */
    assert_int_equal(e, GD_OK);
    godis_client_destroy(&c);
}

/* The same id restarted on an empty WAL dir: a fresh voter with no term and no vote. */
static void test_empty_wal_is_a_fresh_voter(void **state)
{
    standin_proc *p = ((trio *)*state)->p;
    const int *peer = ((trio *)*state)->peer;
    si_lead(&p[0]);
    si_lead(&p[1]);
    /* p[1]'s vote request or its first heartbeat gives p[2] the term (one of them may have
     * timed out on a loaded machine) */
    WAIT_UNTIL(si_stat_of(&p[2], "term") >= 2, 10000);
    assert_true(si_stat_of(&p[2], "term") >= 2);
    assert_int_equal(si_stat_of(&p[2], "fresh"), 1);
    si_stop(&p[2]);
    start_member(&p[2], 2, peer, 3);
    assert_int_equal(si_stat_of(&p[2], "fresh"), 0);           /* replayed its WAL */
    si_stop(&p[2]);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s/wal'", p[2].dir);
    assert_int_equal(system(cmd), 0);
    start_member(&p[2], 2, peer, 3);
    assert_int_equal(si_stat_of(&p[2], "fresh"), 1);           /* no term, no vote remembered */
}

/* Stand-in extension: a change applied on one member reaches the others over the peer
 * port; a forgotten member, like a forgotten godis follower, does not learn it. */
static void test_membership_replicates(void **state)
{
    standin_proc *p = ((trio *)*state)->p;
    const int *peer = ((trio *)*state)->peer;
    si_lead(&p[0]);
    godis_client *c = si_client(&p[0], 2000);
    char url4[64];
    snprintf(url4, sizeof(url4), "http://%s:%d", si_host(), si_reserve_port());
    assert_int_equal(godis_meet(c, 4, url4, 2000), GD_OK);
    for (int i = 0; i < 3; i++)
        assert_true(wait_members(&p[i], "1,2,3,4", 5000));
    assert_int_equal(godis_forget(c, 3, 2000), GD_OK);
    godis_client_destroy(&c);
    assert_true(wait_members(&p[0], "1,2,4", 5000));
    assert_true(wait_members(&p[1], "1,2,4", 5000));
    /* the quiet period is the behaviour under test: more than one push period, and the
     * forgotten member has not learnt of its removal */
    si_msleep(700);
    assert_true(wait_members(&p[2], "1,2,3,4", 0));
    assert_true(si_wait_exit(p[2].pid, 0) < 0);      /* still running, campaigning */
    /* Restarted member 2 keeps the replicated membership (it was persisted). */
    si_stop(&p[1]);
    start_member(&p[1], 1, peer, 3);
    assert_true(wait_members(&p[1], "1,2,4", 0));
}

/* Only the leader applies a membership change: a follower that just restarted behind the
 * others (a member was added while it was down) forwards the forget it is sent to its leader,
 * so both end with the same membership. Applied to its own stale membership, the change
 * diverged for good: the member added meanwhile was missing on it, the leader never adopted
 * a change at an index it already had, and the cluster split its idea of who votes (seen in
 * the chaos campaign: a survivor left waiting for a majority that included a stopped member). */
static void test_follower_behind_forwards_to_leader(void **state)
{
    standin_proc *p = ((trio *)*state)->p;
    const int *peer = ((trio *)*state)->peer;
    si_lead(&p[0]);
    si_stop(&p[1]);
    godis_client *c = si_client(&p[0], 3000);
    char url4[64];
    snprintf(url4, sizeof(url4), "http://%s:%d", si_host(), si_reserve_port());
    assert_int_equal(godis_meet(c, 4, url4, 3000), GD_OK);
    godis_client_destroy(&c);
    assert_true(wait_members(&p[2], "1,2,3,4", 5000));
    start_member(&p[1], 1, peer, 3);                        /* back with 1,2,3 */
    c = si_client(&p[1], 5000);
    assert_int_equal(godis_forget(c, 3, 5000), GD_OK);
    godis_client_destroy(&c);
    assert_true(wait_members(&p[0], "1,2,4", 3000));
    assert_true(wait_members(&p[1], "1,2,4", 3000));
}

/* Starts member `id` with join=true on an empty WAL dir, initial cluster ids 1..id. */
static void start_joiner(standin_proc *p, int id, const int *peer)
{
    start_proc(p, id, peer, id, true);
}

/* What the operator's scale-out relies on (docs/reconcile.md rule 3), as etcd raft does it:
 * a member started with join=true before its meet serves its client port, never
 * campaigns and disturbs nobody (no configuration until the leader's first message); the
 * meet admits it and it follows. A meet of a member that does not run is applied all the
 * same, and leaves a one-member cluster without quorum: writes and the meet sent again
 * fail until the member runs, then both succeed (the meet is idempotent). */
static void test_joiner_inert_until_met(void **state)
{
    (void)state;
    standin_proc p[2];
    int peer[2] = {si_reserve_port(), si_reserve_port()};
    for (int i = 0; i < 2; i++) {
        memset(&p[i], 0, sizeof(p[i]));
        si_mkdir_tmp(&p[i]);
    }
    start_member(&p[0], 0, peer, 1);
    si_lead(&p[0]);
    long long t0 = si_wall_us();
    start_joiner(&p[1], 2, peer);
    /* the quiet period is the behaviour under test: more than two election timeouts */
    si_msleep(2500);
    assert_int_equal(si_stat_of(&p[1], "campaigns"), 0);
    assert_int_equal(si_stat_of(&p[1], "term"), 0);
    assert_int_equal(si_count_events(&p[0], "vote-request", t0), 0);
    godis_client *c = si_client(&p[0], 3000);
    assert_int_equal(godis_set(c, "k", "v"), GD_OK);        /* member 1 alone commits */
    char url[64];
    snprintf(url, sizeof(url), "http://%s:%d", si_host(), peer[1]);
    assert_int_equal(godis_meet(c, 2, url, 3000), GD_OK);
    assert_true(wait_members(&p[1], "1,2", 5000));
    /* 2 of 2: once member 2 answered a heartbeat since the meet (a write before that is
     * canceled, as in godis, whose leader needs the newcomer's ack to commit) */
    gd_err e = GD_ERR_PROTOCOL;
    WAIT_UNTIL((e = godis_set(c, "k", "v2")) == GD_OK, 10000);
    assert_int_equal(e, GD_OK);
    assert_true(wait_value(&p[1], "k", "v2", 5000));
    /* not even right after its admission: the first contact restarted its election timer */
    assert_int_equal(si_stat_of(&p[1], "campaigns"), 0);
    stop_cluster(p, 2);

    /* the other order: the meet first, the member absent */
    int peer2[2] = {si_reserve_port(), si_reserve_port()};
    for (int i = 0; i < 2; i++) {
        memset(&p[i], 0, sizeof(p[i]));
        si_mkdir_tmp(&p[i]);
    }
    start_member(&p[0], 0, peer2, 1);
    si_lead(&p[0]);
    godis_client_destroy(&c);
    c = si_client(&p[0], 3000);
    snprintf(url, sizeof(url), "http://%s:%d", si_host(), peer2[1]);
    assert_int_equal(godis_meet(c, 2, url, 3000), GD_OK);   /* applied, nobody there */
    assert_int_equal(godis_set(c, "k", "v"), GD_ERR_PROTOCOL);
    assert_string_equal(godis_last_error(c), "propose canceled by context");
    assert_int_equal(godis_meet(c, 2, url, 2000), GD_ERR_TIMEOUT);   /* retried, never +OK */
    start_joiner(&p[1], 2, peer2);
    e = GD_ERR_PROTOCOL;
    WAIT_UNTIL((e = godis_meet(c, 2, url, 3000)) == GD_OK, 10000);
    assert_int_equal(e, GD_OK);
    assert_int_equal(godis_set(c, "k", "v3"), GD_OK);
    godis_client_destroy(&c);
    stop_cluster(p, 2);
}

/* As godis replicates writes through Raft: a key set through one member becomes readable
 * on the others; a member that was down while keys were written has them once it is back
 * (from the others, not from its own log), and keeps them across a restart. */
static void test_data_replicates_and_catches_up(void **state)
{
    standin_proc *p = ((trio *)*state)->p;
    const int *peer = ((trio *)*state)->peer;
    si_lead(&p[0]);
    godis_client *c = si_client(&p[0], 2000);
    assert_int_equal(godis_set(c, "k1", "v1"), GD_OK);
    assert_true(wait_value(&p[1], "k1", "v1", 5000));
    assert_true(wait_value(&p[2], "k1", "v1", 5000));
    si_stop(&p[2]);                                   /* down: 2 of 3 keep writing */
    assert_int_equal(godis_set(c, "k2", "v2"), GD_OK);
    assert_int_equal(godis_set(c, "k1", "v1b"), GD_OK);
    godis_client_destroy(&c);
    start_member(&p[2], 2, peer, 3);
    assert_true(wait_value(&p[2], "k2", "v2", 5000));
    assert_true(wait_value(&p[2], "k1", "v1b", 5000));
    c = si_client(&p[2], 2000);                       /* a write through it reaches the rest */
    gd_err e = GD_ERR_PROTOCOL;                       /* once it heard from its leader */
    WAIT_UNTIL((e = godis_set(c, "k3", "v3")) == GD_OK, 10000);
    assert_int_equal(e, GD_OK);
    godis_client_destroy(&c);
    assert_true(wait_value(&p[0], "k3", "v3", 5000));
    assert_true(wait_value(&p[1], "k3", "v3", 5000));
    si_stop(&p[1]);
    start_member(&p[1], 1, peer, 3);
    assert_true(wait_value(&p[1], "k1", "v1b", 0));    /* replayed from its own log */
}

int main(void)
{
    if (access(si_bin_path(), X_OK) != 0) {
        fprintf(stderr, "test_standin_raft: %s not built (make first)\n", si_bin_path());
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_membership_replicates, trio_setup, trio_teardown),
        cmocka_unit_test_setup_teardown(test_follower_behind_forwards_to_leader, trio_setup, trio_teardown),
        cmocka_unit_test_setup_teardown(test_forgotten_follower_disrupts_until_stopped, trio_setup, trio_teardown),
        cmocka_unit_test_setup_teardown(test_removed_leader_returns_as_voter, trio_setup, trio_teardown),
        cmocka_unit_test_setup_teardown(test_empty_wal_is_a_fresh_voter, trio_setup, trio_teardown),
        cmocka_unit_test_setup_teardown(test_write_needs_a_live_leader, trio_setup, trio_teardown),
        cmocka_unit_test_setup_teardown(test_data_replicates_and_catches_up, trio_setup, trio_teardown),
        cmocka_unit_test(test_joiner_inert_until_met),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
