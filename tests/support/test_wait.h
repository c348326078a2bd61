/* test_wait.h — how a test waits for something to happen: on the condition itself, with a
 * deadline, never a fixed sleep (a busy machine makes every fixed sleep too short one day).
 *
 *   WAIT_UNTIL(cond, ms);          re-evaluates cond every 10 ms until it holds or ms passed
 *   assert_true(cond);             then the test asserts it (the deadline is only a bound)
 *
 * A test that asserts something did NOT happen within a time keeps its sleep, with a comment
 * saying that the quiet period is the behaviour under test. */
#ifndef TEST_WAIT_H
#define TEST_WAIT_H
#include <stdint.h>
#include "gd_time.h"

#define WAIT_UNTIL(cond, ms)                                                              \
    for (int64_t wait_until_end_ = gd_mono_ms() + (ms); !(cond) && gd_mono_ms() < wait_until_end_;) \
        gd_sleep_ms(10)

#endif
