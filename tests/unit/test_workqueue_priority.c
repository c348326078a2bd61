/* test_workqueue_priority.c — the two priority levels of the workqueue (workqueue.h,
 * controller-runtime's priority queue): keys from initial lists and resyncs (wq_add_low) are
 * handed out only after every real change; a real change raises a waiting key; dedup and
 * per-key exclusivity hold across the levels; priority=0 (no_priority) is client-go's one
 * FIFO. Order is checked with non-blocking gets: nothing here is timed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <pthread.h>
#include <cmocka.h>
#include "gd_time.h"
#include "workqueue.h"
#include "../support/test_wait.h"
#include "../support/wq_threads.h"

#define MS 1000000LL
static _Atomic int64_t fake_now_ns;
static int64_t fake_clock(void) { return atomic_load(&fake_now_ns); }

static int setup_clock(void **state)
{
    (void)state;
    atomic_store(&fake_now_ns, 5000LL * 1000000000LL);
    gd_clock_set(fake_clock);
    return 0;
}

static int teardown_clock(void **state)
{
    (void)state;
    gd_clock_set(NULL);
    return 0;
}

static wq *new_queue(bool no_priority)
{
    wq_config c;
    wq_config_default(&c, "prio");
    c.qps = 0;
    c.no_priority = no_priority;
    wq *q = wq_new(&c);
    assert_non_null(q);
    return q;
}

/* Gets one key without waiting, checks it, and marks it done. */
static void expect_next(wq *q, const char *want)
{
    const char *k = wq_get(q, 0, NULL);
    assert_non_null(k);
    assert_string_equal(k, want);
    wq_done(q, k);
}

#define NRESYNC 20000

static void add_resync(wq *q)
{
    char key[32];
    for (int i = 0; i < NRESYNC; i++) {
        snprintf(key, sizeof key, "ns/obj-%d", i);
        assert_int_equal(wq_add_low(q, key), GD_OK);
    }
}

/* A user's change queued after a resync of 20 000 unchanged objects is handed out first;
 * the resync then follows in its own order. */
static void test_real_change_before_20000_resyncs(void **state)
{
    (void)state;
    wq *q = new_queue(false);
    add_resync(q);
    assert_int_equal(wq_add(q, "ns/user-change"), GD_OK);
    assert_int_equal(wq_len(q), NRESYNC + 1);
    assert_int_equal(wq_len_low(q), NRESYNC);
    expect_next(q, "ns/user-change");
    char key[32];
    for (int i = 0; i < NRESYNC; i++) {
        snprintf(key, sizeof key, "ns/obj-%d", i);
        expect_next(q, key);
    }
    assert_null(wq_get(q, 0, NULL));
    assert_int_equal(wq_len_low(q), 0);
    wq_destroy(&q);
}

/* priority=0: one FIFO, as client-go — the change waits behind the whole resync. */
static void test_no_priority_is_one_fifo(void **state)
{
    (void)state;
    wq *q = new_queue(true);
    add_resync(q);
    wq_add(q, "ns/user-change");
    assert_int_equal(wq_len_low(q), 0);
    expect_next(q, "ns/obj-0");
    char key[32];
    for (int i = 1; i < NRESYNC; i++) {
        snprintf(key, sizeof key, "ns/obj-%d", i);
        expect_next(q, key);
    }
    expect_next(q, "ns/user-change");
    wq_destroy(&q);
}

/* A real change of a key waiting at low priority moves it to the normal FIFO's tail; a
 * low add of a key waiting at normal priority leaves it there. */
static void test_promotion(void **state)
{
    (void)state;
    wq *q = new_queue(false);
    wq_add_low(q, "a");
    wq_add_low(q, "b");
    wq_add_low(q, "c");
    wq_add(q, "x");
    wq_add_low(q, "x");         /* stays normal */
    wq_add(q, "b");             /* promoted behind x */
    assert_int_equal(wq_len(q), 4);
    assert_int_equal(wq_len_low(q), 2);
    expect_next(q, "x");
    expect_next(q, "b");
    expect_next(q, "a");
    expect_next(q, "c");
    assert_null(wq_get(q, 0, NULL));
    wq_stats st;
    wq_get_stats(q, &st);
    assert_int_equal(st.adds, 4);       /* the re-adds were deduplicated */
    assert_int_equal(st.depth, 0);
    wq_destroy(&q);
}

/* One key added at both levels, several times, is handed out once. */
static void test_dedup_across_priorities(void **state)
{
    (void)state;
    wq *q = new_queue(false);
    wq_add_low(q, "k");
    wq_add(q, "k");
    wq_add_low(q, "k");
    wq_add(q, "k");
    assert_int_equal(wq_len(q), 1);
    assert_int_equal(wq_len_low(q), 0);
    expect_next(q, "k");
    assert_null(wq_get(q, 0, NULL));
    wq_destroy(&q);
}

/* A key being processed is never handed out again before Done, whatever the level it is
 * re-added at; Done re-queues it at the highest level it was added with meanwhile. */
static void test_exclusivity_across_priorities(void **state)
{
    (void)state;
    wq *q = new_queue(false);
    wq_add(q, "k");
    const char *k = wq_get(q, 0, NULL);
    assert_string_equal(k, "k");
    wq_add_low(q, "k");
    assert_null(wq_get(q, 0, NULL));    /* dirty, but processing */
    wq_add_low(q, "n");
    wq_add(q, "k");                     /* promoted while processing */
    const char *n = wq_get(q, 0, NULL);
    assert_string_equal(n, "n");        /* the only key that may be handed out */
    assert_null(wq_get(q, 0, NULL));
    wq_add_low(q, "m");
    wq_done(q, k);                      /* k comes back at normal priority, before m */
    expect_next(q, "k");
    wq_done(q, n);
    expect_next(q, "m");

    /* a low re-add while processing comes back low: behind a normal key added later */
    wq_add(q, "k");
    k = wq_get(q, 0, NULL);
    wq_add_low(q, "k");
    wq_add(q, "z");
    wq_done(q, k);
    expect_next(q, "z");
    expect_next(q, "k");
    assert_null(wq_get(q, 0, NULL));
    wq_destroy(&q);
}

/* Delayed and rate-limited adds are real work (a requeue the reconciler asked for): normal. */
static void test_delayed_keys_are_normal(void **state)
{
    (void)state;
    wq *q = new_queue(false);
    wq_add_low(q, "resynced");
    wq_add_after(q, "requeued", 10);
    atomic_fetch_add(&fake_now_ns, 10 * MS);
    expect_next(q, "requeued");
    expect_next(q, "resynced");
    wq_destroy(&q);
}

static bool match_prefix_a(void *ud, const char *key)
{
    (void)ud;
    return key[0] == 'a';
}

/* Shard handoff takes pending keys of both levels; the FIFOs stay consistent. */
static void test_extract_both_levels(void **state)
{
    (void)state;
    wq *q = new_queue(false);
    wq_add_low(q, "a1");
    wq_add(q, "a2");
    wq_add_low(q, "b1");
    wq_add(q, "b2");
    assert_int_equal(wq_extract(q, match_prefix_a, NULL, NULL), 2);
    assert_int_equal(wq_len(q), 2);
    assert_int_equal(wq_len_low(q), 1);
    expect_next(q, "b2");
    expect_next(q, "b1");
    wq_add_low(q, "a1");                /* a freed entry starts afresh */
    expect_next(q, "a1");
    wq_destroy(&q);
}

/* 8 threads, keys added at random levels and promoted: no key is ever in two threads at
 * once, and every key is processed after its last add. */
#define NTHREADS 8
#define NADDS 40000

static void test_exclusivity_threads(void **state)
{
    (void)state;
    gd_clock_set(NULL);
    wqt *t = calloc(1, sizeof *t);
    assert_non_null(t);
    assert_int_equal(wqt_start(t, new_queue(false), NTHREADS, false), 0);
    unsigned seed = 7;
    for (int n = 0; n < NADDS; n++) {
        int i = rand_r(&seed) % WQT_KEYS;
        wqt_add(t, i, rand_r(&seed) % 2);
    }
    WAIT_UNTIL(wq_len(t->q) == 0 && wq_processing(t->q) == 0, 20000);
    assert_int_equal(wq_len(t->q), 0);
    assert_int_equal(wqt_stop(t, 5000), GD_OK);
    assert_int_equal(atomic_load(&t->bad_exits), 0);
    assert_int_equal(atomic_load(&t->overlaps), 0);
    for (int i = 0; i < WQT_KEYS; i++)
        if (atomic_load(&t->last_add[i]) > 0)
            assert_true(atomic_load(&t->last_start[i]) >= atomic_load(&t->last_add[i]));
    wq_stats st;
    wq_get_stats(t->q, &st);
    assert_int_equal(st.depth, 0);
    assert_int_equal(st.gets, st.dones);
    wq_destroy(&t->q);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_real_change_before_20000_resyncs, setup_clock,
                                        teardown_clock),
        cmocka_unit_test_setup_teardown(test_no_priority_is_one_fifo, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_promotion, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_dedup_across_priorities, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_exclusivity_across_priorities, setup_clock,
                                        teardown_clock),
        cmocka_unit_test_setup_teardown(test_delayed_keys_are_normal, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_extract_both_levels, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_exclusivity_threads, setup_clock, teardown_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
