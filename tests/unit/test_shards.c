/* test_shards.c — the shard assignment state machine, driven against simulated workers
 * that apply ASSIGN/REVOKE; a checker fails if any shard is ever held by two workers. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include "gd_log.h"
#include "../../manager/shards.h"

#define NW 8
/* What each simulated worker believes it owns. */
static bool held[NW][GD_NSHARDS];
/* REVOKEs a worker received and has not answered yet. */
static int owed[NW][GD_NSHARDS], nowed[NW];

static void sim_reset(void) { memset(held, 0, sizeof held); memset(nowed, 0, sizeof nowed); }

static void check_exclusive(void)
{
    for (int sh = 0; sh < GD_NSHARDS; sh++) {
        int holders = 0;
        for (int w = 0; w < NW; w++) holders += held[w][sh];
        assert_true(holders <= 1);
    }
}

/* One manager step: plan and deliver. REVOKE makes the worker stop (it keeps "holding"
 * the shard until it answers). */
static int step(mgr_shards *s)
{
    mgr_shards_action a[2 * MGR_SHARDS_MAX_WORKERS];
    int n = mgr_shards_plan(s, a, 2 * MGR_SHARDS_MAX_WORKERS);
    for (int i = 0; i < n; i++) {
        int w = a[i].worker;
        assert_true(w >= 0 && w < NW);
        for (int j = 0; j < a[i].n; j++) {
            int sh = a[i].shards[j];
            if (a[i].verb == MGR_SHARDS_ASSIGN) {
                held[w][sh] = true;
                assert_non_null(a[i].pending_json);
            } else {
                owed[w][nowed[w]++] = sh;
            }
        }
        check_exclusive();
    }
    mgr_shards_actions_free(a, n);
    return n;
}

/* Worker w finishes its in-flight keys and answers every REVOKE it got. */
static void answer(mgr_shards *s, int w)
{
    for (int i = 0; i < nowed[w]; i++) held[w][owed[w][i]] = false;
    assert_int_equal(mgr_shards_revoked(s, w, owed[w], nowed[w], "{}"), GD_OK);
    nowed[w] = 0;
}

static void die(mgr_shards *s, int w)
{
    memset(held[w], 0, sizeof held[w]);
    nowed[w] = 0;
    mgr_shards_worker_gone(s, w);
}

/* Runs steps, with every live worker answering, until nothing moves. */
static void settle(mgr_shards *s)
{
    for (int round = 0; round < 10; round++) {
        int n = step(s);
        int owing = 0;
        for (int w = 0; w < NW; w++) { owing += nowed[w]; answer(s, w); }
        if (n == 0 && owing == 0) return;
    }
    fail_msg("did not settle");
}

static void assert_balanced(mgr_shards *s, const int *ws, int n)
{
    int total = 0;
    for (int i = 0; i < n; i++) {
        int c = mgr_shards_owned_by(s, ws[i], NULL);
        assert_true(c == GD_NSHARDS / n || c == GD_NSHARDS / n + 1);
        int h = 0;
        for (int sh = 0; sh < GD_NSHARDS; sh++) h += held[ws[i]][sh];
        assert_int_equal(h, c);                  /* the worker agrees */
        total += c;
    }
    assert_int_equal(total, GD_NSHARDS);
    assert_int_equal(mgr_shards_unowned(s), 0);
}

static void test_single_worker_gets_all(void **st)
{
    (void)st;
    mgr_shards s;
    mgr_shards_init(&s);
    sim_reset();
    assert_int_equal(step(&s), 0);               /* no workers: nothing */
    mgr_shards_worker_up(&s, 0);
    settle(&s);
    assert_balanced(&s, (int[]){0}, 1);
    assert_int_equal(s.moves, 0);
    mgr_shards_cleanup(&s);
}

static void test_rebalance_2_4_1_never_overlaps(void **st)
{
    (void)st;
    mgr_shards s;
    mgr_shards_init(&s);
    sim_reset();
    mgr_shards_worker_up(&s, 0);
    mgr_shards_worker_up(&s, 1);
    settle(&s);
    assert_balanced(&s, (int[]){0, 1}, 2);

    /* 2 → 4: workers 0 and 1 answer slowly; 2 and 3 must not get a shard before that */
    mgr_shards_worker_up(&s, 2);
    mgr_shards_worker_up(&s, 3);
    step(&s);
    assert_int_equal(mgr_shards_owned_by(&s, 2, NULL), 0);
    step(&s);                                    /* nothing new while REVOKEs are owed */
    assert_int_equal(mgr_shards_owned_by(&s, 2, NULL), 0);
    answer(&s, 0);                               /* worker 0 hands back first */
    step(&s);
    check_exclusive();
    assert_true(mgr_shards_owned_by(&s, 2, NULL) + mgr_shards_owned_by(&s, 3, NULL) == 64);
    answer(&s, 1);
    settle(&s);
    assert_balanced(&s, (int[]){0, 1, 2, 3}, 4);
    assert_int_equal(s.moves, 128);              /* exactly the shards that had to move */

    /* 4 → 1: retire 1..3; their shards go to 0 only after REVOKED or death */
    mgr_shards_worker_retire(&s, 1);
    mgr_shards_worker_retire(&s, 2);
    mgr_shards_worker_retire(&s, 3);
    step(&s);
    assert_int_equal(mgr_shards_owned_by(&s, 0, NULL), 64);
    answer(&s, 1);                               /* 1 answers */
    die(&s, 2);                                  /* 2 dies before answering: reaped */
    step(&s);
    check_exclusive();
    assert_int_equal(mgr_shards_owned_by(&s, 0, NULL), 192);
    assert_int_equal(mgr_shards_owned_by(&s, 3, NULL), 64); /* 3 still owes its answer */
    answer(&s, 3);
    settle(&s);
    die(&s, 1);
    die(&s, 3);
    settle(&s);
    assert_balanced(&s, (int[]){0}, 1);
    mgr_shards_cleanup(&s);
}

static void test_death_frees_at_once_and_join_rebalances(void **st)
{
    (void)st;
    mgr_shards s;
    mgr_shards_init(&s);
    sim_reset();
    for (int w = 0; w < 3; w++) mgr_shards_worker_up(&s, w);
    settle(&s);
    assert_balanced(&s, (int[]){0, 1, 2}, 3);
    die(&s, 1);
    settle(&s);
    assert_balanced(&s, (int[]){0, 2}, 2);
    mgr_shards_worker_up(&s, 1);                  /* restarted */
    settle(&s);
    assert_balanced(&s, (int[]){0, 1, 2}, 3);
    /* deterministic: a second identical run gives the same owners */
    mgr_shards t;
    mgr_shards_init(&t);
    sim_reset();
    for (int w = 0; w < 3; w++) mgr_shards_worker_up(&t, w);
    settle(&t);
    die(&t, 1);
    settle(&t);
    mgr_shards_worker_up(&t, 1);
    settle(&t);
    for (int sh = 0; sh < GD_NSHARDS; sh++) assert_int_equal(s.slot[sh].owner, t.slot[sh].owner);
    mgr_shards_cleanup(&s);
    mgr_shards_cleanup(&t);
}

static void test_stopping_worker_keeps_shards_until_reaped(void **st)
{
    (void)st;
    mgr_shards s;
    mgr_shards_init(&s);
    sim_reset();
    mgr_shards_worker_up(&s, 0);
    mgr_shards_worker_up(&s, 1);
    settle(&s);
    /* worker 1 missed its heartbeats: it is being killed, nobody may take its shards yet */
    mgr_shards_worker_stopping(&s, 1);
    assert_int_equal(step(&s), 0);               /* no REVOKE to it, no ASSIGN of its shards */
    assert_int_equal(mgr_shards_owned_by(&s, 1, NULL), 128);
    die(&s, 1);
    settle(&s);
    assert_balanced(&s, (int[]){0}, 1);
    assert_int_equal(mgr_shards_worker_stopping(&s, -1), GD_ERR_ARG);
    assert_int_equal(mgr_shards_worker_up(&s, MGR_SHARDS_MAX_WORKERS), GD_ERR_ARG);
    mgr_shards_cleanup(&s);
}

static void test_frozen_assigns_nothing(void **st)
{
    (void)st;
    mgr_shards s;
    mgr_shards_init(&s);
    sim_reset();
    mgr_shards_freeze(&s, true);
    mgr_shards_worker_up(&s, 0);
    assert_int_equal(step(&s), 0);
    mgr_shards_freeze(&s, false);
    settle(&s);
    assert_balanced(&s, (int[]){0}, 1);
    mgr_shards_freeze(&s, true);
    mgr_shards_worker_up(&s, 1);
    assert_int_equal(step(&s), 0);               /* no revokes either */
    mgr_shards_cleanup(&s);
}

static void test_pending_keys_travel_with_their_shard(void **st)
{
    (void)st;
    mgr_shards s;
    mgr_shards_init(&s);
    sim_reset();
    mgr_shards_worker_up(&s, 0);
    settle(&s);
    int sa = gd_shard_of_key("godiscluster", "ns/a");
    int sb = gd_shard_of_key("godis", "ns/a-7");
    assert_int_equal(sa, sb);                    /* a Godis key travels with its cluster */
    assert_int_equal(sa, gd_shard_of_cluster("ns", "a"));
    mgr_shards_worker_retire(&s, 0);
    mgr_shards_worker_up(&s, 1);
    step(&s);
    assert_int_equal(nowed[0], 256);
    for (int i = 0; i < nowed[0]; i++) held[0][owed[0][i]] = false;
    /* a key of a shard not handed back is dropped; a malformed pending text is reported */
    assert_int_equal(mgr_shards_revoked(&s, 0, owed[0], nowed[0],
                                       "{\"godiscluster\":[\"ns/a\",\"ns/a\"],\"godis\":[\"ns/a-7\",\"bad\"]}"),
                     GD_OK);
    nowed[0] = 0;
    mgr_shards_action a[8];
    int n = mgr_shards_plan(&s, a, 8);
    assert_int_equal(n, 1);
    assert_int_equal(a[0].verb, MGR_SHARDS_ASSIGN);
    assert_int_equal(a[0].worker, 1);
    assert_int_equal(a[0].n, 256);
    assert_string_equal(a[0].pending_json, "{\"godiscluster\":[\"ns/a\"],\"godis\":[\"ns/a-7\"]}");
    mgr_shards_actions_free(a, n);
    assert_int_equal(mgr_shards_revoked(&s, 1, (int[]){1}, 1, "[not json"), GD_ERR_PARSE);
    assert_int_equal(mgr_shards_revoked(&s, 99, NULL, 0, NULL), GD_ERR_ARG);
    mgr_shards_cleanup(&s);
}

static void test_key_shard_and_lists(void **st)
{
    (void)st;
    assert_int_equal(gd_shard_of_key("godis", "ns/a"), -1);     /* no id */
    assert_int_equal(gd_shard_of_key("godis", "ns/a-x1"), -1);
    assert_int_equal(gd_shard_of_key("godis", "ns/a-"), -1);
    assert_int_equal(gd_shard_of_key("godiscluster", "noslash"), -1);
    assert_int_equal(gd_shard_of_key("godiscluster", "/x"), -1);
    assert_int_equal(gd_shard_of_key("godiscluster", "a/b/c"), -1);
    assert_int_equal(gd_shard_of_key(NULL, "a/b"), -1);
    int v[GD_NSHARDS], n;
    assert_int_equal(mgr_shards_parse_list("3,17,255", v, GD_NSHARDS, &n), GD_OK);
    assert_int_equal(n, 3);
    assert_int_equal(v[2], 255);
    assert_int_equal(mgr_shards_parse_list("", v, GD_NSHARDS, &n), GD_OK);
    assert_int_equal(n, 0);
    const char *bad[] = {"256", "1,,2", "1,", ",1", "-1", "1 ,2", "0012", "a", "1,2x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_not_equal(mgr_shards_parse_list(bad[i], v, GD_NSHARDS, &n), GD_OK);
    assert_int_equal(mgr_shards_parse_list("1,2,3", v, 2, &n), GD_ERR_TOO_LARGE);
    char buf[16];
    mgr_shards_format_list((int[]){3, 17, 200}, 3, buf, sizeof buf);
    assert_string_equal(buf, "3,17,200");
    mgr_shards_format_list((int[]){3, 17, 200}, 3, buf, 7);
    assert_string_equal(buf, "3,17");              /* truncated at a whole number */
}

int main(void)
{
    gd_log_init("test", GD_LOG_ERROR + 1, 0, 2);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_worker_gets_all),
        cmocka_unit_test(test_rebalance_2_4_1_never_overlaps),
        cmocka_unit_test(test_death_frees_at_once_and_join_rebalances),
        cmocka_unit_test(test_stopping_worker_keeps_shards_until_reaped),
        cmocka_unit_test(test_frozen_assigns_nothing),
        cmocka_unit_test(test_pending_keys_travel_with_their_shard),
        cmocka_unit_test(test_key_shard_and_lists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
