/* test_workqueue.c — client-go workqueue semantics: dedup, fairness, re-add while processing,
 * exclusivity under 16 threads (a checker fails on any overlap), backoff timings and AddAfter
 * ordering with an injected clock, shutdown with drain and abandon, shard extraction,
 * metrics. The worker modules are compiled into the test directly. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <pthread.h>
#include <unistd.h>
#include <cmocka.h>
#include "gd_time.h"
#include "workqueue.h"
#include "../support/test_wait.h"
#include "../support/wq_threads.h"

#define MS 1000000LL
static _Atomic int64_t fake_now_ns;
static int64_t fake_clock(void) { return atomic_load(&fake_now_ns); }
static void advance_ns(int64_t ns) { atomic_fetch_add(&fake_now_ns, ns); }

static int setup_clock(void **state)
{
    atomic_store(&fake_now_ns, 5000LL * 1000000000LL);
    gd_clock_set(fake_clock);
    return 0;
}

static int teardown_clock(void **state)
{
    gd_clock_set(NULL);
    return 0;
}

static wq *new_queue(double qps)
{
    wq_config c;
    wq_config_default(&c, "test");
    c.qps = qps;
    wq *q = wq_new(&c);
    assert_non_null(q);
    return q;
}

/* Gets without waiting and copies the key (it is only valid until done). */
static const char *try_get(wq *q) { return wq_get(q, 0, NULL); }

static void test_defaults(void **state)
{
    wq_config c;
    wq_config_default(&c, "x");
    assert_string_equal(c.name, "x");
    assert_int_equal(c.base_delay_ns, 5 * MS);
    assert_int_equal(c.max_delay_ns, 1000LL * 1000 * MS);
    assert_true(c.qps == 10.0);
    assert_int_equal(c.burst, 100);
}

static void test_dedup_and_fifo(void **state)
{
    wq *q = new_queue(0);
    assert_int_equal(wq_add(q, "ns/a"), GD_OK);
    assert_int_equal(wq_add(q, "ns/b"), GD_OK);
    assert_int_equal(wq_add(q, "ns/a"), GD_OK);
    assert_int_equal(wq_add(q, "ns/c"), GD_OK);
    assert_int_equal(wq_len(q), 3);
    const char *k = try_get(q);
    assert_string_equal(k, "ns/a");
    wq_done(q, k);
    k = try_get(q);
    assert_string_equal(k, "ns/b");
    wq_done(q, k);
    k = try_get(q);
    assert_string_equal(k, "ns/c");
    wq_done(q, k);
    assert_null(try_get(q));
    wq_stats st;
    wq_get_stats(q, &st);
    assert_int_equal(st.adds, 3);
    assert_int_equal(st.depth, 0);
    wq_destroy(&q);
    assert_null(q);
}

static void test_readd_while_processing(void **state)
{
    wq *q = new_queue(0);
    wq_add(q, "k");
    const char *k = try_get(q);
    assert_string_equal(k, "k");
    assert_true(wq_is_processing(q, "k"));
    wq_add(q, "k");                     /* dirty, but not handed to a second thread */
    wq_add(q, "k");
    assert_int_equal(wq_len(q), 0);
    assert_null(try_get(q));
    wq_done(q, "k");                    /* now it is queued again, once */
    assert_int_equal(wq_len(q), 1);
    k = try_get(q);
    assert_string_equal(k, "k");
    wq_done(q, k);
    assert_null(try_get(q));
    assert_int_equal(wq_len(q), 0);
    wq_destroy(&q);
}

static void test_hostile_input(void **state)
{
    wq *q = new_queue(0);
    assert_int_equal(wq_add(q, NULL), GD_ERR_ARG);
    assert_int_equal(wq_add_after(q, NULL, 5), GD_ERR_ARG);
    assert_int_equal(wq_add_rate_limited(q, NULL), GD_ERR_ARG);
    wq_done(q, "never-added");          /* logged, ignored */
    wq_forget(q, "never-added");
    assert_int_equal(wq_num_requeues(q, "never-added"), 0);
    char big[70000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(wq_add(q, big), GD_OK);
    assert_int_equal(wq_add(q, ""), GD_OK);
    const char *k = try_get(q);
    assert_int_equal(strlen(k), sizeof big - 1);
    wq_done(q, k);
    k = try_get(q);
    assert_string_equal(k, "");
    wq_done(q, k);
    wq_done(q, "");                     /* double done: ignored */
    wq_destroy(&q);
    wq_destroy(&q);
    wq_destroy(NULL);
}

/* ---- exclusivity under 16 threads ---- */

#define NTHREADS 16
#define NADDS 20000

static void test_exclusivity_16_threads(void **state)
{
    gd_clock_set(NULL);
    wqt *t = calloc(1, sizeof *t);
    assert_non_null(t);
    assert_int_equal(wqt_start(t, new_queue(0), NTHREADS, true), 0);
    unsigned seed = 42;
    for (int n = 0; n < NADDS; n++)
        wqt_add(t, rand_r(&seed) % WQT_KEYS, false);
    /* wait until everything queued was processed */
    WAIT_UNTIL(wq_len(t->q) == 0 && wq_processing(t->q) == 0, 5000);
    assert_int_equal(wqt_stop(t, 5000), GD_OK);
    assert_int_equal(atomic_load(&t->bad_exits), 0);
    assert_int_equal(atomic_load(&t->overlaps), 0);
    for (int i = 0; i < WQT_KEYS; i++)
        if (atomic_load(&t->last_add[i]) > 0)     /* processed after its last add */
            assert_true(atomic_load(&t->last_start[i]) >= atomic_load(&t->last_add[i]));
    assert_true(atomic_load(&t->processed) >= WQT_KEYS);
    assert_true(atomic_load(&t->processed) <= NADDS);
    wq_stats st;
    wq_get_stats(t->q, &st);
    assert_int_equal(st.depth, 0);
    assert_int_equal(st.gets, st.dones);
    wq_destroy(&t->q);
    free(t);
}

/* ---- rate limiting with the injected clock ---- */

static void test_exponential_backoff(void **state)
{
    wq *q = new_queue(0);               /* bucket off: pure per-item exponential */
    int64_t expect = 5 * MS;
    for (int i = 0; i < 18; i++, expect *= 2)
        assert_int_equal(wq_when_ns(q, "a"), expect);   /* 5ms .. 655.36s */
    assert_int_equal(wq_when_ns(q, "a"), 1000LL * 1000 * MS);  /* capped at 1000 s */
    for (int i = 0; i < 100; i++)
        assert_int_equal(wq_when_ns(q, "a"), 1000LL * 1000 * MS);  /* no overflow */
    assert_int_equal(wq_num_requeues(q, "a"), 119);
    assert_int_equal(wq_when_ns(q, "b"), 5 * MS);       /* per item */
    wq_forget(q, "a");
    assert_int_equal(wq_num_requeues(q, "a"), 0);
    assert_int_equal(wq_when_ns(q, "a"), 5 * MS);
    wq_destroy(&q);
}

static void test_bucket_limiter(void **state)
{
    wq *q = new_queue(10);              /* default: 10 qps, burst 100 */
    char key[16];
    for (int i = 0; i < 100; i++) {     /* the burst: exponential delay wins */
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(wq_when_ns(q, key), 5 * MS);
    }
    /* the bucket is empty: each further token is 100 ms later than the previous */
    assert_int_equal(wq_when_ns(q, "x"), 100 * MS);
    assert_int_equal(wq_when_ns(q, "y"), 200 * MS);
    advance_ns(300 * MS);               /* pays the debt back */
    assert_int_equal(wq_when_ns(q, "z"), 5 * MS);
    wq_destroy(&q);
}

static void test_add_rate_limited_timing(void **state)
{
    wq *q = new_queue(0);
    int64_t delays[] = {5 * MS, 10 * MS, 20 * MS, 40 * MS};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(wq_add_rate_limited(q, "a"), GD_OK);
        assert_int_equal(wq_num_requeues(q, "a"), i + 1);
        assert_int_equal(wq_next_ready_ns(q), fake_clock() + delays[i]);
        advance_ns(delays[i] - 1);
        assert_null(try_get(q));
        assert_int_equal(wq_waiting(q), 1);
        advance_ns(1);
        const char *k = try_get(q);
        assert_non_null(k);
        assert_string_equal(k, "a");
        wq_done(q, k);
    }
    wq_forget(q, "a");
    wq_add_rate_limited(q, "a");
    assert_int_equal(wq_next_ready_ns(q), fake_clock() + 5 * MS);
    wq_stats st;
    wq_get_stats(q, &st);
    assert_int_equal(st.retries, 5);
    wq_destroy(&q);
}

static void test_add_after_ordering(void **state)
{
    wq *q = new_queue(0);
    wq_add_after(q, "c", 30);
    wq_add_after(q, "a", 10);
    wq_add_after(q, "b", 20);
    wq_add_after(q, "d", 20);           /* same time as b: after b */
    wq_add_after(q, "a", 50);           /* later: the earlier time is kept */
    wq_add_after(q, "c", 5);            /* earlier: moves up */
    assert_int_equal(wq_waiting(q), 4);
    assert_null(try_get(q));
    advance_ns(25 * MS);
    const char *want[] = {"c", "a", "b", "d"};
    for (int i = 0; i < 4; i++) {
        const char *k = try_get(q);
        assert_non_null(k);
        assert_string_equal(k, want[i]);
        wq_done(q, k);
    }
    assert_null(try_get(q));
    assert_int_equal(wq_waiting(q), 0);
    assert_int_equal(wq_next_ready_ns(q), -1);
    /* zero or negative delay: immediate; a due key that is already queued is not doubled */
    wq_add_after(q, "e", 0);
    wq_add_after(q, "e", 1);
    advance_ns(MS);
    assert_int_equal(wq_len(q), 1);
    wq_destroy(&q);
}

/* 1000 random delays come out sorted by due time. */
static void test_add_after_heap_random(void **state)
{
    wq *q = new_queue(0);
    unsigned seed = 7;
    int64_t due[1000];
    for (int i = 0; i < 1000; i++) {
        char key[16];
        snprintf(key, sizeof key, "%d", i);
        due[i] = 1 + rand_r(&seed) % 5000;
        wq_add_after(q, key, due[i]);
    }
    for (int64_t elapsed = 7; elapsed < 5000 + 7; elapsed += 7) {
        advance_ns(7 * MS);
        int64_t last = -1;
        const char *k;
        while ((k = try_get(q)) != NULL) {
            int64_t d = due[atoi(k)];
            assert_true(d <= elapsed);      /* never early */
            assert_true(d > elapsed - 7);   /* never late: due keys come out at once */
            assert_true(d >= last);         /* in due order */
            last = d;
            wq_done(q, k);
        }
    }
    assert_int_equal(wq_waiting(q), 0);
    wq_destroy(&q);
}

/* ---- blocking gets (real clock) ---- */

/* Thread tid of this process is asleep (state S: a getter waiting on the queue's condition
 * variable), as /proc shows it: what "the getter is waiting by now" means, observed. */
static bool thread_sleeping(pid_t tid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    return test_proc_state(path) == 'S';
}

typedef struct {
    wq *q;
    pid_t getter;
} adder_arg;

static void *late_adder(void *arg)
{
    adder_arg *a = arg;
    WAIT_UNTIL(thread_sleeping(a->getter), 5000);     /* the getter blocks first */
    wq_add(a->q, "late");
    return NULL;
}

static void test_blocking_get(void **state)
{
    gd_clock_set(NULL);
    wq *q = new_queue(0);
    int64_t t0 = gd_mono_ms();
    assert_null(wq_get(q, 30, NULL));                   /* timeout */
    assert_true(gd_mono_ms() - t0 >= 30);
    pthread_t th;
    adder_arg a = {q, gettid()};
    pthread_create(&th, NULL, late_adder, &a);
    const char *k = wq_get(q, 5000, NULL);              /* woken by the add */
    assert_non_null(k);
    assert_string_equal(k, "late");
    wq_done(q, k);
    pthread_join(th, NULL);
    t0 = gd_mono_ms();
    wq_add_after(q, "delayed", 40);                     /* woken when due */
    k = wq_get(q, -1, NULL);
    assert_non_null(k);
    assert_string_equal(k, "delayed");
    assert_true(gd_mono_ms() - t0 >= 39);
    wq_done(q, k);
    wq_destroy(&q);
}

/* Getters that serve a queue as a controller's threads do, until shutdown; they count keys. */
typedef struct {
    wq *q;
    atomic_int got;
} serve_ctx;

static uint64_t wakeups_of(wq *q)
{
    wq_stats st;
    wq_get_stats(q, &st);
    return st.wakeups;
}

static void *serving_getter(void *arg)
{
    serve_ctx *s = arg;
    bool shutdown = false;
    for (;;) {
        const char *k = wq_get(s->q, -1, &shutdown);
        if (!k)
            break;
        atomic_fetch_add(&s->got, 1);
        wq_done(s->q, k);
    }
    return NULL;
}

/* A delayed key coming due wakes about one getter, not every idle one: with 16 idle getters
 * that each slept until the heap's head, every due key woke all 16 for one to take it (that
 * was a quarter of a converging worker's CPU). Every key is still handed out, and not early. */
static void test_due_key_wakes_one_getter(void **state)
{
    enum { GETTERS = 16, KEYS = 40 };
    wq *q = new_queue(0);
    serve_ctx s = {.q = q};
    pthread_t th[GETTERS];
    for (int i = 0; i < GETTERS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, serving_getter, &s), 0);
    uint64_t before = wakeups_of(q);
    int64_t t0 = gd_mono_ms();
    for (int i = 0; i < KEYS; i++) {
        char key[16];
        snprintf(key, sizeof key, "d%d", i);
        assert_int_equal(wq_add_after(q, key, 20 + 3 * i), GD_OK);
    }
    WAIT_UNTIL(atomic_load(&s.got) == KEYS, 10000);
    assert_int_equal(atomic_load(&s.got), KEYS);
    assert_true(gd_mono_ms() - t0 >= 20 + 3 * (KEYS - 1) - 1);     /* the last one not early */
    uint64_t wakeups = wakeups_of(q) - before;
    printf("# %d delayed keys, %d getters: %llu wake-ups\n", KEYS, GETTERS,
           (unsigned long long)wakeups);
    assert_true(wakeups <= 4 * KEYS + GETTERS);
    wq_shutdown(q);
    for (int i = 0; i < GETTERS; i++)
        pthread_join(th[i], NULL);
    wq_destroy(&q);
}

/* A key queued while the only idle getter is the timer still goes out at once: the timer is
 * woken for it, not left asleep until the delayed key it waits for. */
static void test_timer_takes_queued_key(void **state)
{
    wq *q = new_queue(0);
    assert_int_equal(wq_add_after(q, "later", 60000), GD_OK);
    serve_ctx s = {.q = q};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, serving_getter, &s), 0);
    WAIT_UNTIL(wakeups_of(q) > 0, 5000);        /* the getter sleeps as the timer */
    assert_true(wakeups_of(q) > 0);
    int64_t t0 = gd_mono_ms();
    assert_int_equal(wq_add(q, "now"), GD_OK);
    WAIT_UNTIL(atomic_load(&s.got) == 1, 5000);
    assert_int_equal(atomic_load(&s.got), 1);
    int64_t took = gd_mono_ms() - t0;
    printf("# queued key taken by the timer after %lld ms\n", (long long)took);
    /* woken, not found by its next 200 ms re-check */
    assert_true(took < test_scaled_ms(150));
    wq_shutdown(q);
    pthread_join(th, NULL);
    wq_destroy(&q);
}

/* ---- shutdown ---- */

static void test_shutdown(void **state)
{
    wq *q = new_queue(0);
    wq_add(q, "a");
    wq_add(q, "b");
    wq_add_after(q, "later", 10);
    wq_shutdown(q);
    assert_true(wq_shutting_down(q));
    wq_add(q, "c");                                     /* ignored */
    wq_add_rate_limited(q, "c");
    assert_int_equal(wq_waiting(q), 0);                 /* delayed keys dropped */
    bool sd = false;
    const char *k = wq_get(q, -1, &sd);                 /* queued keys still served */
    assert_string_equal(k, "a");
    assert_false(sd);
    wq_done(q, k);
    k = wq_get(q, -1, &sd);
    assert_string_equal(k, "b");
    wq_done(q, k);
    assert_null(wq_get(q, -1, &sd));                    /* returns at once */
    assert_true(sd);
    wq_destroy(&q);
}

typedef struct {
    wq *q;
    _Atomic int64_t done_at;
} done_arg;

/* The in-flight key is done once the drain has begun (observed), not after a guessed time. */
static void *late_done(void *arg)
{
    done_arg *d = arg;
    WAIT_UNTIL(wq_shutting_down(d->q), 5000);
    atomic_store(&d->done_at, gd_mono_ms());
    wq_done(d->q, "busy");
    return NULL;
}

static void test_shutdown_drain(void **state)
{
    gd_clock_set(NULL);
    wq *q = new_queue(0);
    wq_add(q, "busy");
    assert_string_equal(try_get(q), "busy");
    pthread_t th;
    done_arg d = {.q = q};
    pthread_create(&th, NULL, late_done, &d);
    assert_int_equal(wq_shutdown_drain(q, 5000), GD_OK);
    int64_t drained_at = gd_mono_ms();
    assert_true(atomic_load(&d.done_at) > 0);
    assert_true(drained_at >= atomic_load(&d.done_at));   /* it waited for the key's Done */
    assert_int_equal(wq_processing(q), 0);
    pthread_join(th, NULL);
    wq_destroy(&q);
}

static void test_shutdown_abandon(void **state)
{
    gd_clock_set(NULL);
    wq *q = new_queue(0);
    wq_add(q, "stuck");
    const char *k = try_get(q);
    assert_non_null(k);
    int64_t t0 = gd_mono_ms();
    assert_int_equal(wq_shutdown_drain(q, 30), GD_ERR_TIMEOUT);
    int64_t dt = gd_mono_ms() - t0;
    assert_true(dt >= 30 && dt < 2000);
    assert_int_equal(wq_processing(q), 1);
    wq_done(q, "stuck");                /* a late done after abandoning is harmless */
    assert_int_equal(wq_shutdown_drain(q, 0), GD_OK);
    wq_destroy(&q);
}

/* ---- shard extraction ---- */

static bool match_ns1(void *ud, const char *key) { return strncmp(key, "ns1/", 4) == 0; }
static void collect(void *ud, const char *key)
{
    char *acc = ud;
    strcat(acc, key);
    strcat(acc, ";");
}

static void test_extract(void **state)
{
    wq *q = new_queue(0);
    wq_add(q, "ns1/busy");
    const char *busy = try_get(q);
    assert_string_equal(busy, "ns1/busy");
    wq_add(q, "ns1/busy");              /* dirty while processing */
    wq_add(q, "ns1/a");
    wq_add(q, "ns2/a");
    wq_add_after(q, "ns1/later", 100);
    wq_add_rate_limited(q, "ns1/failing");
    wq_add(q, "ns2/b");
    char acc[256] = "";
    assert_int_equal(wq_extract(q, match_ns1, collect, acc), 4);
    assert_non_null(strstr(acc, "ns1/busy;"));
    assert_non_null(strstr(acc, "ns1/a;"));
    assert_non_null(strstr(acc, "ns1/later;"));
    assert_non_null(strstr(acc, "ns1/failing;"));
    assert_int_equal(wq_num_requeues(q, "ns1/failing"), 0);
    assert_int_equal(wq_waiting(q), 0);
    assert_true(wq_is_processing(q, "ns1/busy"));
    wq_done(q, "ns1/busy");             /* not re-queued: its pending add was taken */
    assert_int_equal(wq_len(q), 2);
    assert_string_equal(try_get(q), "ns2/a");
    wq_done(q, "ns2/a");
    assert_string_equal(try_get(q), "ns2/b");
    wq_done(q, "ns2/b");
    wq_stats st;
    wq_get_stats(q, &st);
    assert_int_equal(st.depth, 0);
    wq_destroy(&q);
}

/* ---- metrics ---- */

static void test_metrics(void **state)
{
    wq *q = new_queue(0);
    wq_add(q, "a");
    wq_add(q, "b");
    advance_ns(2000 * MS);
    const char *k = try_get(q);         /* a waited 2 s */
    assert_string_equal(k, "a");
    advance_ns(3000 * MS);              /* a runs for 3 s */
    wq_add_after(q, "c", 1000);
    gd_sbuf b;
    gd_sbuf_init(&b);
    wq_metrics_render(q, &b);
    char *text = gd_sbuf_detach(&b);
    assert_non_null(text);
    if (getenv("SHOW_METRICS"))
        fputs(text, stderr);
    assert_non_null(strstr(text, "# TYPE workqueue_depth gauge\nworkqueue_depth{name=\"test\"} 1\n"));
    assert_non_null(strstr(text, "workqueue_adds_total{name=\"test\"} 2\n"));
    assert_non_null(strstr(text, "workqueue_retries_total{name=\"test\"} 1\n"));
    assert_non_null(strstr(text, "workqueue_longest_running_processor_seconds{name=\"test\"} 3\n"));
    assert_non_null(strstr(text, "workqueue_unfinished_work_seconds{name=\"test\"} 3\n"));
    assert_non_null(strstr(text, "workqueue_queue_duration_seconds_bucket{name=\"test\",le=\"1\"} 0\n"));
    assert_non_null(strstr(text, "workqueue_queue_duration_seconds_bucket{name=\"test\",le=\"10\"} 1\n"));
    assert_non_null(strstr(text, "workqueue_queue_duration_seconds_bucket{name=\"test\",le=\"1e-08\"} 0\n"));
    assert_non_null(strstr(text, "workqueue_queue_duration_seconds_sum{name=\"test\"} 2\n"));
    assert_non_null(strstr(text, "workqueue_queue_duration_seconds_count{name=\"test\"} 1\n"));
    assert_non_null(strstr(text, "workqueue_work_duration_seconds_count{name=\"test\"} 0\n"));
    free(text);
    wq_done(q, k);
    gd_sbuf_init(&b);
    wq_metrics_render_family(q, 3, &b);
    text = gd_sbuf_detach(&b);
    assert_non_null(strstr(text, "workqueue_work_duration_seconds_sum{name=\"test\"} 3\n"));
    assert_null(strstr(text, "# HELP"));
    free(text);
    assert_null(wq_metrics_family(7, NULL));
    wq_destroy(&q);
}

typedef struct {
    wq *q;
    atomic_int got;
    atomic_int tid;
} hold_ctx;

static void *blocked_getter(void *arg)
{
    hold_ctx *h = arg;
    atomic_store(&h->tid, (int)gettid());
    const char *k = wq_get(h->q, 10000, NULL);     /* real time: up to 10 s */
    if (k) {
        atomic_fetch_add(&h->got, 1);
        wq_done(h->q, k);
    }
    return NULL;
}

/* Held wake-ups: keys are queued at once (a non-blocking get sees them), a sleeping getter
 * is woken by the release; holds nest; a release without a hold does nothing. */
static void test_hold_wakeups(void **state)
{
    wq *q = new_queue(0);
    wq_release_wakeups();                           /* no hold: harmless */
    wq_hold_wakeups();
    wq_hold_wakeups();
    assert_int_equal(wq_add(q, "a"), GD_OK);
    const char *k = try_get(q);
    assert_non_null(k);
    assert_string_equal(k, "a");
    wq_done(q, k);
    wq_release_wakeups();
    wq_release_wakeups();
    hold_ctx h = {.q = q};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, blocked_getter, &h), 0);
    WAIT_UNTIL(atomic_load(&h.tid) && thread_sleeping(atomic_load(&h.tid)), 5000);
    assert_true(thread_sleeping(atomic_load(&h.tid)));      /* the getter is waiting */
    wq_hold_wakeups();
    assert_int_equal(wq_add(q, "b"), GD_OK);
    wq_release_wakeups();                           /* wakes it */
    pthread_join(th, NULL);
    assert_int_equal(atomic_load(&h.got), 1);
    wq_destroy(&q);
}

/* A long held batch does not keep a getter asleep to its end: it is woken once 32 keys are
 * queued, before the release. */
static void test_hold_wakeups_bounded(void **state)
{
    wq *q = new_queue(0);
    hold_ctx h = {.q = q};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, blocked_getter, &h), 0);
    WAIT_UNTIL(atomic_load(&h.tid) && thread_sleeping(atomic_load(&h.tid)), 5000);
    assert_true(thread_sleeping(atomic_load(&h.tid)));
    wq_hold_wakeups();
    for (int i = 0; i < 32; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(wq_add(q, key), GD_OK);
    }
    WAIT_UNTIL(atomic_load(&h.got) == 1, 5000);    /* still holding */
    assert_int_equal(atomic_load(&h.got), 1);
    wq_release_wakeups();
    pthread_join(th, NULL);
    assert_int_equal(wq_len(q), 31);
    wq_destroy(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test_setup_teardown(test_dedup_and_fifo, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_readd_while_processing, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_hostile_input, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_exclusivity_16_threads, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_exponential_backoff, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_bucket_limiter, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_add_rate_limited_timing, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_add_after_ordering, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_add_after_heap_random, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_blocking_get, setup_clock, teardown_clock),
        cmocka_unit_test(test_due_key_wakes_one_getter),
        cmocka_unit_test(test_timer_takes_queued_key),
        cmocka_unit_test_setup_teardown(test_shutdown, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_shutdown_drain, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_shutdown_abandon, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_extract, setup_clock, teardown_clock),
        cmocka_unit_test_setup_teardown(test_metrics, setup_clock, teardown_clock),
        cmocka_unit_test(test_hold_wakeups),
        cmocka_unit_test(test_hold_wakeups_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
