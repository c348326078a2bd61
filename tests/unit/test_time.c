/* test_time.c — injected clock, RFC 3339 formatting, backoff bounds, token bucket rates. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>
#include <stdio.h>
#include <time.h>
#include "gd_time.h"

static int64_t fake_now_ns;
static int64_t fake_clock(void) { return fake_now_ns; }
static void advance_ms(int64_t ms) { fake_now_ns += ms * 1000000LL; }

static int setup_clock(void **state)
{
    fake_now_ns = 1000LL * 1000000000LL;
    gd_clock_set(fake_clock);
    return 0;
}

static int teardown_clock(void **state)
{
    gd_clock_set(NULL);
    return 0;
}

static void test_injected_clock(void **state)
{
    assert_int_equal(gd_mono_ms(), 1000000);
    advance_ms(250);
    assert_int_equal(gd_mono_ms(), 1000250);
    assert_int_equal(gd_mono_ns(), fake_now_ns);
    gd_clock_set(NULL);
    int64_t a = gd_mono_ns(), b = gd_mono_ns();
    assert_true(b >= a);
    assert_true(a != fake_now_ns);
    gd_clock_set(fake_clock);
}

static void test_sleep(void **state)
{
    gd_clock_set(NULL);
    int64_t t0 = gd_mono_ns();
    gd_sleep_ms(20);
    int64_t dt = gd_mono_ns() - t0;
    assert_true(dt >= 20 * 1000000LL);
    gd_sleep_ms(0);
    gd_sleep_ms(-5);
    gd_clock_set(fake_clock);
}

static void test_rfc3339(void **state)
{
    char out[32];
    gd_format_rfc3339_micro(0, out);
    assert_string_equal(out, "1970-01-01T00:00:00.000000Z");
    /* 2026-11-22T11:02:03.123456Z */
    gd_format_rfc3339_micro(1795345323123456LL, out);
    assert_string_equal(out, "2026-11-22T11:02:03.123456Z");
    gd_format_rfc3339_micro(-1, out);
    assert_string_equal(out, "1969-12-31T23:59:59.999999Z");
    assert_true(gd_wall_ms() > 1700000000000LL);
    /* the lock-free date arithmetic agrees with gmtime_r: leap days, centuries, the range */
    static const int64_t secs[] = {951782400, 951868800, 4107542400LL, 4107456000LL,
                                   -86400, 253402300799LL, 68169600, 1582934400};
    for (size_t i = 0; i < sizeof secs / sizeof *secs + 2000; i++) {
        int64_t t = i < sizeof secs / sizeof *secs ? secs[i] : (int64_t)(gd_rand01() * 253402300799.0);
        time_t tt = (time_t)t;
        struct tm tm;
        char want[96];
        assert_non_null(gmtime_r(&tt, &tm));
        snprintf(want, sizeof want, "%04d-%02d-%02dT%02d:%02d:%02d.000007Z", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
        gd_format_rfc3339_micro(t * 1000000 + 7, out);
        assert_string_equal(out, want);
    }
}

static void test_rand01(void **state)
{
    double sum = 0;
    for (int i = 0; i < 10000; i++) {
        double r = gd_rand01();
        assert_true(r >= 0.0 && r < 1.0);
        sum += r;
    }
    assert_true(sum / 10000 > 0.45 && sum / 10000 < 0.55);
}

static void *rand_thread(void *arg)
{
    double *out = arg;
    for (int i = 0; i < 1000; i++)
        *out += gd_rand01();
    return NULL;
}

static void test_rand01_threads(void **state)
{
    pthread_t t[4];
    double sums[4] = { 0 };
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, rand_thread, &sums[i]);
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_true(sums[i] > 400 && sums[i] < 600);
    }
    /* each thread has its own stream */
    assert_true(sums[0] != sums[1]);
}

static void test_backoff_bounds(void **state)
{
    gd_backoff b;
    gd_backoff_init(&b, 100, 5000, 2.0, 0.2, 60000);
    int64_t base = 100;
    for (int i = 0; i < 20; i++) {
        int64_t d = gd_backoff_next(&b);
        assert_true(d >= (int64_t)(base * 0.8) - 1);
        assert_true(d <= (int64_t)(base * 1.2) + 1);
        base = base * 2 > 5000 ? 5000 : base * 2;
        advance_ms(d);
    }
    assert_int_equal(b.current_ms, 5000);
}

static void test_backoff_no_jitter_sequence(void **state)
{
    gd_backoff b;
    gd_backoff_init(&b, 10, 100, 3.0, 0.0, 0);
    assert_int_equal(gd_backoff_next(&b), 10);
    assert_int_equal(gd_backoff_next(&b), 30);
    assert_int_equal(gd_backoff_next(&b), 90);
    assert_int_equal(gd_backoff_next(&b), 100);
    assert_int_equal(gd_backoff_next(&b), 100);
    gd_backoff_reset(&b);
    assert_int_equal(gd_backoff_next(&b), 10);
}

static void test_backoff_reset_after_healthy(void **state)
{
    gd_backoff b;
    gd_backoff_init(&b, 10, 1000, 2.0, 0.0, 5000);
    gd_backoff_next(&b);
    gd_backoff_next(&b);
    assert_int_equal(gd_backoff_next(&b), 40);
    advance_ms(4999);  /* not healthy long enough */
    assert_int_equal(gd_backoff_next(&b), 80);
    advance_ms(5000);  /* quiet for reset_after: start over */
    assert_int_equal(gd_backoff_next(&b), 10);
}

static void test_backoff_hostile_params(void **state)
{
    gd_backoff b;
    gd_backoff_init(&b, 0, -5, 0.5, 7.0, 0);
    for (int i = 0; i < 10; i++) {
        int64_t d = gd_backoff_next(&b);
        assert_true(d >= 1 && d <= 2);
    }
    /* huge values do not overflow */
    gd_backoff_init(&b, 1000, INT64_C(1) << 50, 10.0, 0.0, 0);
    for (int i = 0; i < 40; i++)
        assert_true(gd_backoff_next(&b) > 0);
    assert_int_equal(b.current_ms, INT64_C(1) << 50);
}

static void test_bucket_burst_then_rate(void **state)
{
    gd_bucket b;
    gd_bucket_init(&b, 10.0, 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(gd_bucket_reserve_ns(&b), 0);
    /* the 6th waits one token period (100 ms), the 7th queues behind it (200 ms) */
    assert_int_equal(gd_bucket_reserve_ns(&b), 100000000);
    assert_int_equal(gd_bucket_reserve_ns(&b), 200000000);
    advance_ms(200);  /* debt paid back exactly */
    assert_int_equal(gd_bucket_reserve_ns(&b), 100000000);
    advance_ms(10000);  /* refill caps at burst */
    for (int i = 0; i < 5; i++)
        assert_int_equal(gd_bucket_reserve_ns(&b), 0);
    assert_true(gd_bucket_reserve_ns(&b) > 0);
    gd_bucket_destroy(&b);
}

static void test_bucket_sustained_rate(void **state)
{
    gd_bucket b;
    gd_bucket_init(&b, 50.0, 1);
    /* a caller that always honours the wait: over 10 s of fake time it gets the burst plus
     * qps * 10 tokens, no more */
    int64_t start = fake_now_ns;
    int n = 0;
    while (fake_now_ns - start < 10000000000LL) {
        fake_now_ns += gd_bucket_reserve_ns(&b);
        n++;
    }
    assert_in_range(n, 500, 502);
    gd_bucket_destroy(&b);
}

/* With the clock frozen, concurrent reservations queue up: each gets a distinct slot, so the
 * sorted waits are exactly 0 (burst times) then 1, 2, 3... token periods. */
static gd_bucket shared_bucket;
static int64_t thread_waits[4][50];

static void *reserve_thread(void *arg)
{
    int64_t *out = arg;
    for (int i = 0; i < 50; i++)
        out[i] = gd_bucket_reserve_ns(&shared_bucket);
    return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_bucket_threads(void **state)
{
    gd_bucket_init(&shared_bucket, 100.0, 3);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, reserve_thread, thread_waits[i]);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    int64_t *all = &thread_waits[0][0];
    qsort(all, 200, sizeof *all, cmp_i64);
    for (int i = 0; i < 200; i++) {
        int64_t want = i < 3 ? 0 : (int64_t)(i - 2) * 10000000LL;
        assert_true(all[i] >= want - 2 && all[i] <= want + 2);
    }
    gd_bucket_destroy(&shared_bucket);
}

static void test_bucket_unlimited(void **state)
{
    gd_bucket b;
    gd_bucket_init(&b, 0, 0);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(gd_bucket_reserve_ns(&b), 0);
    gd_bucket_wait(&b);
    gd_bucket_destroy(&b);
}

/* One duration syntax for every flag: Go's time.ParseDuration, bare numbers refused. */
static void test_duration_parse(void **state)
{
    struct { const char *s; int64_t ms; } ok[] = {
        {"0", 0}, {"0s", 0}, {"15s", 15000}, {"1m30s", 90000}, {"250ms", 250}, {"1.5s", 1500},
        {"2m", 120000}, {"1h", 3600000}, {".5s", 500}, {"1500000us", 1500}, {"2000000ns", 2},
        {"3\xc2\xb5s", 0}, {"1h2m3s4ms", 3723004}, {"5m0s", 300000},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t ms = -1;
        if (gd_parse_duration_ms(ok[i].s, &ms) != GD_OK || ms != ok[i].ms)
            fail_msg("\"%s\": got %lld", ok[i].s, (long long)ms);
    }
    const char *bad[] = {"", "s", "15", "10", "-1s", "+1s", "1d", "1s2", "99999999999h", " 1s",
                         "1s ", ".s", "1..5s", "1e3s", "abc", "1S", "0x10s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t ms;
        if (gd_parse_duration_ms(bad[i], &ms) != GD_ERR_PARSE)
            fail_msg("\"%s\" was accepted", bad[i]);
    }
}

static void test_duration_format(void **state)
{
    struct { int64_t ms; const char *s; } c[] = {
        {0, "0s"}, {1, "1ms"}, {250, "250ms"}, {1000, "1s"}, {1500, "1.5s"}, {15000, "15s"},
        {90000, "1m30s"}, {300000, "5m0s"}, {3600000, "1h0m0s"}, {3723004, "1h2m3.004s"},
        {-1500, "-1.5s"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char buf[32];
        gd_format_duration_ms(c[i].ms, buf, sizeof buf);
        assert_string_equal(buf, c[i].s);
        int64_t back;
        if (c[i].ms >= 0) {           /* what we print, we parse back */
            assert_int_equal(gd_parse_duration_ms(buf, &back), GD_OK);
            assert_int_equal(back, c[i].ms);
        }
    }
}

static void test_rfc3339_parse(void **state)
{
    int64_t ms;
    assert_int_equal(gd_parse_rfc3339_ms("1970-01-01T00:00:00Z", &ms), GD_OK);
    assert_int_equal(ms, 0);
    assert_int_equal(gd_parse_rfc3339_ms("2026-11-22T11:02:03Z", &ms), GD_OK);
    assert_int_equal(ms, 1795345323000LL);
    assert_int_equal(gd_parse_rfc3339_ms("2026-11-22T11:02:03.123456Z", &ms), GD_OK);
    assert_int_equal(ms, 1795345323123LL);
    assert_int_equal(gd_parse_rfc3339_ms("2026-11-22T20:02:03+09:00", &ms), GD_OK);
    assert_int_equal(ms, 1795345323000LL);
    assert_int_equal(gd_parse_rfc3339_ms("2026-11-22T10:02:03.5-01:00", &ms), GD_OK);
    assert_int_equal(ms, 1795345323500LL);
    char out[32];
    gd_format_rfc3339_micro(1795345323123000LL, out);
    assert_int_equal(gd_parse_rfc3339_ms(out, &ms), GD_OK);
    assert_int_equal(ms, 1795345323123LL);
    const char *bad[] = {"", "2026-11-22", "2026-11-22T11:02:03", "2026-13-22T11:02:03Z",
                         "2026-11-22T11:02:03Zjunk", "2026-11-22T11:02:03.Z", "2026-11-22 11:02:03Z",
                         "2026-11-22T11:02:03+0900", "tomorrow"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (gd_parse_rfc3339_ms(bad[i], &ms) != GD_ERR_PARSE) fail_msg("\"%s\" accepted", bad[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_injected_clock, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_sleep, setup_clock, teardown_clock),
        cmocka_unit_test(test_rfc3339),
        cmocka_unit_test(test_rfc3339_parse),
        cmocka_unit_test(test_duration_parse),
        cmocka_unit_test(test_duration_format),
        cmocka_unit_test(test_rand01),
        cmocka_unit_test(test_rand01_threads),
        cmocka_unit_test_setup_teardown(test_backoff_bounds, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_backoff_no_jitter_sequence, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_backoff_reset_after_healthy, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_backoff_hostile_params, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_bucket_burst_then_rate, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_bucket_sustained_rate, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_bucket_threads, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_bucket_unlimited, setup_clock, teardown_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
