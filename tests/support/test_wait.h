/* test_wait.h — how a test waits for something to happen: on the condition itself, with a
 * deadline, never a fixed sleep (a busy machine makes every fixed sleep too short one day).
 *
 *   WAIT_UNTIL(cond, ms);          re-evaluates cond every 10 ms until it holds or ms passed
 *   assert_true(cond);             then the test asserts it (the deadline is only a bound,
 *                                  stretched under valgrind: test_scaled_ms)
 *
 * A test that asserts something did NOT happen within a time keeps its sleep, with a comment
 * saying that the quiet period is the behaviour under test. */
#ifndef TEST_WAIT_H
#define TEST_WAIT_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gd_time.h"

/* A deadline of ms on this machine: stretched k times under GD_TEST_TIME_SCALE=k (1..100;
 * tests/valgrind/run-unit.sh sets 10, where the code runs 20-50x slower). */
static inline int64_t test_scaled_ms(int64_t ms)
{
    const char *v = getenv("GD_TEST_TIME_SCALE");
    int k = v ? atoi(v) : 1;
    return ms * (k > 0 && k <= 100 ? k : 1);
}

/* The real monotonic clock in ms: a deadline runs out also while a test has replaced
 * gd_mono_ms's clock (gd_clock_set) and holds it still. */
static inline int64_t test_real_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#define WAIT_UNTIL(cond, ms)                                                              \
    for (int64_t wait_until_end_ = test_real_ms() + test_scaled_ms(ms);                   \
         !(cond) && test_real_ms() < wait_until_end_;)                                    \
        gd_sleep_ms(10)

/* The state letter in a /proc stat file ("/proc/<pid>/stat", "/proc/self/task/<tid>/stat"):
 * 'R', 'S' (asleep: a thread blocked on a condition variable), 'Z' (a zombie), ...; 0 when
 * there is no such process. What a test observes instead of guessing how long a step takes. */
static inline char test_proc_state(const char *stat_path)
{
    char buf[512];
    FILE *f = fopen(stat_path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *rp = strrchr(buf, ')');            /* the command name may hold spaces */
    return rp && rp[1] == ' ' ? rp[2] : 0;
}

#endif
