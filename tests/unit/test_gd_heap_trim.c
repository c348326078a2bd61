/* test_gd_heap_trim.c — when the heap trim runs: not before enough input, not while input
 * or work goes on, 1 s and 5 s into a quiet spell, again after work that follows the first
 * trim, at most GD_HEAP_TRIM_MAX_EARLY early trims per burst, and a real malloc_trim that
 * gives freed memory back. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdbool.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "gd_heap_trim.h"

#define MB (1u << 20)

/* Steps the clock from *now to until in 100 ms turns; returns the times it said "due". */
static int run_quiet(gd_heap_trim *t, uint64_t in, uint64_t work, int64_t *now, int64_t until,
                     int64_t *first_due)
{
    int due = 0;
    for (; *now < until; *now += 100)
        if (gd_heap_trim_due(t, in, work, *now)) {
            if (due++ == 0 && first_due)
                *first_due = *now;
        }
    return due;
}

static void test_needs_input(void **state)
{
    gd_heap_trim t = {0};
    int64_t now = 0;
    assert_false(gd_heap_trim_due(&t, 0, 0, now));
    /* a trickle below the threshold, then a long quiet: nothing to give back */
    assert_false(gd_heap_trim_due(&t, GD_HEAP_TRIM_MIN_BYTES - 1, 0, now += 100));
    assert_int_equal(run_quiet(&t, GD_HEAP_TRIM_MIN_BYTES - 1, 0, &now, 60000, NULL), 0);
}

static void test_quiet_spell_trims_twice(void **state)
{
    gd_heap_trim t = {0};
    int64_t now = 0, due_at = -1;
    gd_heap_trim_due(&t, 0, 0, now);
    /* a load: input every 100 ms for 3 s, never due while it lasts */
    uint64_t in = 0;
    for (int i = 0; i < 30; i++)
        assert_false(gd_heap_trim_due(&t, in += 4 * MB, 0, now += 100));
    int64_t last = now;
    assert_int_equal(run_quiet(&t, in, 0, &now, last + GD_HEAP_TRIM_QUIET2_MS - 100, &due_at), 1);
    assert_int_equal(due_at, last + GD_HEAP_TRIM_QUIET1_MS);
    due_at = -1;
    assert_int_equal(run_quiet(&t, in, 0, &now, last + 60000, &due_at), 1);
    assert_int_equal(due_at, last + GD_HEAP_TRIM_QUIET2_MS);
    /* disarmed: a small burst later does not trim again */
    assert_false(gd_heap_trim_due(&t, in + MB, 0, now += 100));
    assert_int_equal(run_quiet(&t, in + MB, 0, &now, now + 60000, NULL), 0);
    /* as much input again arms it again */
    assert_false(gd_heap_trim_due(&t, in + MB + GD_HEAP_TRIM_MIN_BYTES, 0, now += 100));
    assert_int_equal(run_quiet(&t, in + MB + GD_HEAP_TRIM_MIN_BYTES, 0, &now, now + 60000, NULL),
                     2);
}

static void test_work_delays_and_rearms(void **state)
{
    gd_heap_trim t = {0};
    int64_t now = 0, due_at = -1;
    uint64_t in = 64 * MB, work = 0;
    gd_heap_trim_due(&t, 0, 0, now);
    assert_false(gd_heap_trim_due(&t, in, work, now += 100));
    /* the input stops, but reconciles go on: not due while the work counter moves */
    for (int i = 0; i < 50; i++)
        assert_false(gd_heap_trim_due(&t, in, ++work, now += 100));
    int64_t last = now;
    assert_int_equal(run_quiet(&t, in, work, &now, last + 2000, &due_at), 1);
    assert_int_equal(due_at, last + GD_HEAP_TRIM_QUIET1_MS);
    /* work after the first trim (the queued keys reconciled): another spell, trimmed again */
    for (int i = 0; i < 10; i++)
        assert_false(gd_heap_trim_due(&t, in, ++work, now += 100));
    last = now;
    due_at = -1;
    assert_int_equal(run_quiet(&t, in, work, &now, last + 60000, &due_at), 2);
    assert_int_equal(due_at, last + GD_HEAP_TRIM_QUIET1_MS);
}

static void test_bursty_work_is_bounded(void **state)
{
    gd_heap_trim t = {0};
    int64_t now = 0;
    uint64_t in = 64 * MB, work = 0;
    gd_heap_trim_due(&t, 0, 0, now);
    gd_heap_trim_due(&t, in, work, now += 100);
    /* work every 3 s forever: quiet spells of 1-5 s only */
    int trims = 0;
    for (int spell = 0; spell < 20; spell++) {
        gd_heap_trim_due(&t, in, ++work, now += 100);
        trims += run_quiet(&t, in, work, &now, now + 3000, NULL);
    }
    assert_int_equal(trims, GD_HEAP_TRIM_MAX_EARLY);
    /* the next burst of input arms it afresh: both trims of a quiet spell again */
    in += GD_HEAP_TRIM_MIN_BYTES;
    assert_false(gd_heap_trim_due(&t, in, work, now += 100));
    assert_int_equal(run_quiet(&t, in, work, &now, now + 60000, NULL), 2);
}

static void test_counter_reset_restarts(void **state)
{
    gd_heap_trim t = {0};
    int64_t now = 0;
    gd_heap_trim_due(&t, 100 * MB, 10, now);
    /* counters that go back (a new run of the loop): a fresh start, nothing armed */
    assert_false(gd_heap_trim_due(&t, 0, 0, now += 100));
    assert_int_equal(run_quiet(&t, 0, 0, &now, 60000, NULL), 0);
}

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

#if !UNDER_ASAN
/* The real thing: memory freed in a fragmented way comes back to the system. */
static void test_tick_gives_memory_back(void **state)
{
    assert_false(gd_heap_on_jemalloc());                /* not linked with jemalloc */
    assert_string_equal(gd_heap_allocator(), "glibc");
    assert_int_equal(gd_heap_jemalloc_allocated(), 0);
    enum { N = 200000 };
    size_t before = mallinfo2().uordblks;
    char **p = malloc(N * sizeof *p);
    for (int i = 0; i < N; i++) {
        p[i] = malloc(1000);
        memset(p[i], 1, 1000);
    }
    if (mallinfo2().uordblks - before < (size_t)N * 1000) {
        /* not glibc's heap (valgrind's allocator): malloc_trim has nothing to give back */
        for (int i = 0; i < N; i++)
            free(p[i]);
        free(p);
        skip();
    }
    for (int i = 0; i < N; i++)
        if (i % 64)                 /* keep every 64th: the heap's top cannot shrink */
            free(p[i]);
    gd_heap_trim t = {0};
    int64_t now = 0;
    assert_int_equal(gd_heap_trim_tick(&t, 0, 0, now), 0);
    assert_int_equal(gd_heap_trim_tick(&t, 64 * MB, 0, now += 100), 0);
    int64_t gave = 0;
    for (; now < 2000 && gave == 0; now += 100)
        gave = gd_heap_trim_tick(&t, 64 * MB, 0, now);
    assert_true(gave > 100 * 1000 * 1000);      /* of ~195 MB freed */
    for (int i = 0; i < N; i += 64)
        free(p[i]);
    free(p);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_needs_input),
        cmocka_unit_test(test_quiet_spell_trims_twice),
        cmocka_unit_test(test_work_delays_and_rearms),
        cmocka_unit_test(test_bursty_work_is_bounded),
        cmocka_unit_test(test_counter_reset_restarts),
#if !UNDER_ASAN                 /* ASan's allocator: glibc's heap holds nothing to trim */
        cmocka_unit_test(test_tick_gives_memory_back),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
