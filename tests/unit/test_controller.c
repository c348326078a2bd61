/* test_controller.c — reconcile results as controller-runtime handles them, exclusivity with
 * MaxConcurrentReconciles 8, read-your-own-writes, the write fence, shard revocation with
 * pending keys, and the metrics text. Real clock, tiny delays. */
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
#include "godis_domain.h"
#include "gd_json.h"
#include "gd_time.h"
#include "cache.h"
#include "controller_internal.h"
#include "reconciler.h"
#include "../support/test_wait.h"
#include "gd_wake.h"

#define NK 200
typedef struct {
    atomic_int calls[NK];
    atomic_int in_flight[NK];
    atomic_int overlaps;
    atomic_int total;
    atomic_int script[NK];      /* how many more times to return the scripted result */
    gd_result result;           /* scripted result */
    atomic_bool block;          /* reconciles of key 0 wait while set */
    atomic_bool record_write;   /* key 0 records a write at rv 10 */
    atomic_int cached_rv;       /* what the fake cache says for the written object */
} rec_state;

static int key_no(const char *key) { return atoi(strchr(key, '/') + 2); }

static gd_result test_reconcile(rec_ctx *ctx, const char *key)
{
    rec_state *st = ctx->ud;
    int k = key_no(key);
    if (atomic_fetch_add(&st->in_flight[k], 1) != 0)
        atomic_fetch_add(&st->overlaps, 1);
    atomic_fetch_add(&st->calls[k], 1);
    atomic_fetch_add(&st->total, 1);
    if (k == 0)
        while (atomic_load(&st->block))
            usleep(1000);
    if (k == 0 && atomic_load(&st->record_write))
        rec_record_write(ctx, "GodisCluster", key, "10", false);
    usleep((useconds_t)(rand() % 500));
    gd_result r = gd_done();
    if (atomic_load(&st->script[k]) > 0) {
        atomic_fetch_sub(&st->script[k], 1);
        r = st->result;
    }
    atomic_fetch_sub(&st->in_flight[k], 1);
    return r;
}

static bool fake_lookup(void *ud, const char *kind, const char *key, char *rv, size_t cap,
                        bool *deleting)
{
    rec_state *st = ud;
    *deleting = false;
    int v = atomic_load(&st->cached_rv);
    if (v < 0)
        return false;
    snprintf(rv, cap, "%d", v);
    return true;
}

typedef struct {
    gd_fence fence;
    gd_worker_env env;
    rec_state st;
    controller *c;
} fixture;

static fixture *fx_new(int workers, bool ryow)
{
    fixture *f = calloc(1, sizeof *f);
    gd_fence_init(&f->fence, GD_FENCE_NONE);
    f->env.fence = &f->fence;
    if (ryow) {
        f->env.rv_lookup = fake_lookup;
        f->env.rv_lookup_ud = &f->st;
    }
    controller_opts o;
    controller_opts_default(&o, "test", test_reconcile);
    o.ud = &f->st;
    o.max_concurrent = workers;
    o.queue.base_delay_ns = 1000000;    /* 1 ms backoff */
    o.queue.qps = 0;
    o.stale_requeue_ms = 5;
    f->c = controller_new(&o, &f->env);
    assert_non_null(f->c);
    return f;
}

static void fx_free(fixture *f)
{
    controller_destroy(&f->c);
    assert_null(f->c);
    gd_fence_destroy(&f->fence);
    free(f);
}

static char *key_of(int i, char *buf)
{
    sprintf(buf, "ns/k%d", i);
    return buf;
}

static bool wait_for(atomic_int *v, int want, int ms)
{
    WAIT_UNTIL(atomic_load(v) >= want, ms);
    return atomic_load(v) >= want;
}

static uint64_t stale_count(controller *c)
{
    controller_stats s;
    controller_get_stats(c, &s);
    return s.stale;
}

/* Waits (2 s at most) until read-your-own-writes has held keys back want times. */
static bool wait_stale(controller *c, uint64_t want)
{
    WAIT_UNTIL(stale_count(c) >= want, 2000);
    return stale_count(c) >= want;
}

static bool idle(controller *c)
{
    return wq_len(c->q) == 0 && wq_processing(c->q) == 0 && wq_waiting(c->q) == 0;
}

static void wait_idle(controller *c)
{
    WAIT_UNTIL(idle(c), 3000);
    if (!idle(c)) fail_msg("controller did not become idle");
}

static void test_bad_opts(void **state)
{
    gd_fence fence;
    gd_fence_init(&fence, GD_FENCE_NONE);
    gd_worker_env env = {.fence = &fence};
    controller_opts o;
    controller_opts_default(&o, "x", NULL);
    assert_null(controller_new(&o, &env));
    controller_opts_default(&o, "", test_reconcile);
    assert_null(controller_new(&o, &env));
    controller_opts_default(&o, "x", test_reconcile);
    assert_null(controller_new(&o, NULL));
    gd_worker_env noenv = {0};
    assert_null(controller_new(&o, &noenv));
    assert_null(controller_new(NULL, &env));
}

static void test_shard_of_key(void **state)
{
    assert_int_equal(gd_shard_of_key(GODIS_CTRL_CLUSTER, "ns/foo"), gd_shard_of_cluster("ns", "foo"));
    assert_int_equal(gd_shard_of_key(GODIS_CTRL_MEMBER, "ns/foo-12"), gd_shard_of_cluster("ns", "foo"));
    assert_int_equal(gd_shard_of_key(GODIS_CTRL_MEMBER, "ns/a-b-3"), gd_shard_of_cluster("ns", "a-b"));
    assert_int_equal(gd_shard_of_key(GODIS_CTRL_MEMBER, "ns/foo"), -1);
    assert_int_equal(gd_shard_of_key(GODIS_CTRL_MEMBER, "ns/foo-"), -1);
    assert_int_equal(gd_shard_of_key(GODIS_CTRL_MEMBER, "ns/-3"), -1);
    assert_int_equal(gd_shard_of_key(GODIS_CTRL_MEMBER, "ns/foo-1x"), -1);
    assert_int_equal(gd_shard_of_key(GODIS_CTRL_MEMBER, NULL), -1);
    assert_int_equal(gd_shard_of_key(GODIS_CTRL_CLUSTER, "nokey"), -1);
    assert_int_equal(gd_shard_of_key(GODIS_CTRL_CLUSTER, "/x"), -1);
    assert_int_equal(gd_shard_of_key(GODIS_CTRL_CLUSTER, "ns/"), -1);
    char big[600];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    big[3] = '/';
    assert_int_equal(gd_shard_of_key(GODIS_CTRL_CLUSTER, big), -1);
}

/* 200 keys enqueued 5 times each while 8 threads reconcile: every key reconciled, never two
 * reconciles of one key at once. */
static void test_exclusivity_8(void **state)
{
    fixture *f = fx_new(8, false);
    controller_own_all(f->c);
    assert_int_equal(controller_start(f->c), GD_OK);
    char key[32];
    for (int round = 0; round < 5; round++)
        for (int i = 0; i < NK; i++)
            controller_enqueue(f->c, key_of(i, key));
    wait_idle(f->c);
    assert_int_equal(atomic_load(&f->st.overlaps), 0);
    for (int i = 0; i < NK; i++)
        assert_true(atomic_load(&f->st.calls[i]) >= 1);
    controller_stats s;
    controller_get_stats(f->c, &s);
    assert_int_equal(s.success, (uint64_t)atomic_load(&f->st.total));
    assert_int_equal(s.active, 0);
    assert_int_equal(controller_stop(f->c, 2000), GD_OK);
    fx_free(f);
}

static void test_results(void **state)
{
    fixture *f = fx_new(2, false);
    controller_own_all(f->c);
    assert_int_equal(controller_start(f->c), GD_OK);
    char key[32];
    /* error ×3 then done: rate-limited retries, counted as errors, then forgotten */
    f->st.result = gd_error(GD_ERR_SERVER);
    atomic_store(&f->st.script[1], 3);
    controller_enqueue(f->c, key_of(1, key));
    assert_true(wait_for(&f->st.calls[1], 4, 2000));
    wait_idle(f->c);
    assert_int_equal(wq_num_requeues(f->c->q, key), 0);
    controller_stats s;
    controller_get_stats(f->c, &s);
    assert_int_equal(s.error, 3);
    assert_int_equal(s.success, 1);
    /* requeue-after 30 ms ×1 */
    f->st.result = gd_requeue_after(30);
    atomic_store(&f->st.script[2], 1);
    int64_t t0 = gd_mono_ms();
    controller_enqueue(f->c, key_of(2, key));
    assert_true(wait_for(&f->st.calls[2], 2, 2000));
    assert_true(gd_mono_ms() - t0 >= 29);
    wait_idle(f->c);
    /* requeue ×2 */
    f->st.result = gd_requeue();
    atomic_store(&f->st.script[3], 2);
    controller_enqueue(f->c, key_of(3, key));
    assert_true(wait_for(&f->st.calls[3], 3, 2000));
    wait_idle(f->c);
    controller_get_stats(f->c, &s);
    assert_int_equal(s.requeue_after, 1);
    assert_int_equal(s.requeue, 2);
    assert_int_equal(s.success, 3);
    /* fenced error: back to the queue without counting an error */
    f->st.result = gd_error(GD_ERR_FENCED);
    atomic_store(&f->st.script[4], 1);
    controller_enqueue(f->c, key_of(4, key));
    assert_true(wait_for(&f->st.calls[4], 2, 2000));
    wait_idle(f->c);
    controller_get_stats(f->c, &s);
    assert_int_equal(s.error, 3);
    assert_int_equal(s.fenced, 1);

    gd_sbuf b;
    gd_sbuf_init(&b);
    controller *cs[] = {f->c};
    controllers_render_metrics(cs, 1, &b);
    char *text = gd_sbuf_detach(&b);
    assert_non_null(strstr(text, "controller_runtime_reconcile_total{controller=\"test\",result=\"error\"} 3\n"));
    assert_non_null(strstr(text, "controller_runtime_reconcile_total{controller=\"test\",result=\"requeue\"} 2\n"));
    assert_non_null(strstr(text, "controller_runtime_reconcile_total{controller=\"test\",result=\"requeue_after\"} 1\n"));
    assert_non_null(strstr(text, "controller_runtime_reconcile_total{controller=\"test\",result=\"success\"} 4\n"));
    assert_non_null(strstr(text, "controller_runtime_reconcile_errors_total{controller=\"test\"} 3\n"));
    assert_non_null(strstr(text, "controller_runtime_max_concurrent_reconciles{controller=\"test\"} 2\n"));
    assert_non_null(strstr(text, "controller_runtime_active_workers{controller=\"test\"} 0\n"));
    assert_non_null(strstr(text, "controller_runtime_reconcile_time_seconds_bucket{controller=\"test\",le=\"0.005\"}"));
    assert_non_null(strstr(text, "controller_runtime_reconcile_time_seconds_count{controller=\"test\"} 11\n"));
    assert_non_null(strstr(text, "workqueue_depth{name=\"test\"} 0\n"));
    assert_non_null(strstr(text, "# TYPE workqueue_retries_total counter\n"));
    free(text);
    fx_free(f);
}

/* A started controller whose key ns/k0 (into key) has been reconciled once and recorded a
 * write at rv 10, while the cache shows rv 5: the key is held back until the cache catches up. */
static fixture *fx_held_back(char key[32])
{
    fixture *f = fx_new(2, true);
    controller_own_all(f->c);
    atomic_store(&f->st.cached_rv, 5);
    atomic_store(&f->st.record_write, true);
    assert_int_equal(controller_start(f->c), GD_OK);
    controller_enqueue(f->c, key_of(0, key));
    assert_true(wait_for(&f->st.calls[0], 1, 2000));
    wait_idle(f->c);
    atomic_store(&f->st.record_write, false);
    return f;
}

/* A write recorded at rv 10 holds the key back until the cache shows rv >= 10. */
static void test_read_your_writes(void **state)
{
    char key[32];
    fixture *f = fx_held_back(key);
    controller_enqueue(f->c, key);
    assert_true(wait_stale(f->c, 2));                       /* looked at twice, ... */
    assert_int_equal(atomic_load(&f->st.calls[0]), 1);      /* held back: cache at 5 < 10 */
    controller_stats s;
    controller_get_stats(f->c, &s);
    assert_true(s.stale >= 2);
    atomic_store(&f->st.cached_rv, 11);                     /* cache caught up */
    assert_true(wait_for(&f->st.calls[0], 2, 2000));
    wait_idle(f->c);
    assert_true(controller_caught_up(f->c, key));
    /* an object that never shows up expires after the TTL */
    f->c->o.expectation_ttl_ms = 20;
    rec_ctx ctx = {.ctrl = f->c, .key = "ns/k5", .env = &f->env};
    atomic_store(&f->st.cached_rv, -1);                     /* created, not cached yet */
    rec_record_write(&ctx, "Godis", "ns/gone-1", "3", false);
    assert_false(controller_caught_up(f->c, "ns/k5"));
    WAIT_UNTIL(controller_caught_up(f->c, "ns/k5"), 2000);  /* the 20 ms TTL */
    assert_true(controller_caught_up(f->c, "ns/k5"));
    /* a delete is caught up once the object is absent */
    rec_record_write(&ctx, "Godis", "ns/x-1", NULL, true);
    assert_true(controller_caught_up(f->c, "ns/k5"));
    rec_record_write(&ctx, "Godis", "ns/x-1", NULL, true);
    atomic_store(&f->st.cached_rv, 3);
    assert_false(controller_caught_up(f->c, "ns/k5"));
    fx_free(f);
}

/* A key held back by its own write is looked at less and less often while the cache lags (a
 * stalled watch made a fixed 5-50 ms requeue spin), and the event that shows the write still
 * reconciles it at once, not at the next requeue. */
static void test_stale_requeue_backs_off(void **state)
{
    char key[32];
    fixture *f = fx_held_back(key);
    uint64_t s0 = stale_count(f->c);
    controller_enqueue(f->c, key);
    gd_sleep_ms(1500);                                      /* the cache lags 1.5 s */
    uint64_t held = stale_count(f->c) - s0;
    printf("# held back %llu times in 1.5 s (every 5 ms: ~300)\n", (unsigned long long)held);
    assert_true(held >= 5);
    assert_true(held <= 40);
    assert_int_equal(atomic_load(&f->st.calls[0]), 1);
    atomic_store(&f->st.cached_rv, 11);                     /* the write's event arrives */
    int64_t t0 = gd_mono_ms();
    controller_enqueue(f->c, key);
    assert_true(wait_for(&f->st.calls[0], 2, 2000));
    int64_t took = gd_mono_ms() - t0;
    printf("# reconciled %lld ms after the event\n", (long long)took);
    assert_true(took < test_scaled_ms(150));                /* the next requeue: ~375 ms */
    wait_idle(f->c);
    fx_free(f);
}

static void test_fence(void **state)
{
    fixture *f = fx_new(2, false);
    controller_own_all(f->c);
    gd_fence_close(&f->fence);                              /* no lease yet */
    rec_ctx ctx = {.ctrl = f->c, .key = "ns/k0", .env = &f->env, .controller_name = "test"};
    assert_int_equal(rec_may_write(&ctx), GD_ERR_FENCED);
    assert_int_equal(controller_start(f->c), GD_OK);
    char key[32];
    controller_enqueue(f->c, key_of(7, key));
    /* the quiet period is the behaviour under test: no thread takes a key while fenced (there
     * is no event to wait for) */
    usleep(60000);
    assert_int_equal(atomic_load(&f->st.calls[7]), 0);     /* nothing runs while fenced */
    gd_fence_extend(&f->fence, gd_wall_ms() + 10000);
    assert_int_equal(rec_may_write(&ctx), GD_OK);
    assert_true(wait_for(&f->st.calls[7], 1, 2000));
    gd_fence_extend(&f->fence, gd_wall_ms() - 5);           /* smaller deadline: ignored */
    assert_true(gd_fence_open(&f->fence));
    gd_fence_close(&f->fence);
    assert_false(gd_fence_open(&f->fence));
    gd_fence_extend(&f->fence, gd_wall_ms() - 1);           /* an expired lease */
    assert_int_equal(rec_may_write(&ctx), GD_ERR_FENCED);
    fx_free(f);
}

typedef struct {
    gd_fence *f;
    int64_t deadline;       /* > 0: extend to it; 0: kick */
} fence_poke;

static void *poke_fence_later(void *arg)
{
    fence_poke *p = arg;
    usleep(50000);
    if (p->deadline > 0)
        gd_fence_extend(p->f, p->deadline);
    else
        gd_fence_kick(p->f);
    return NULL;
}

/* Runs gd_fence_wait(f, gen, 60 s) while another thread extends (or kicks) 50 ms later;
 * true when the wait ended well before its timeout. */
static bool wait_ended_by(gd_fence *f, int64_t deadline)
{
    fence_poke p = {f, deadline};
    pthread_t th;
    uint64_t gen = gd_fence_gen(f);
    assert_int_equal(pthread_create(&th, NULL, poke_fence_later, &p), 0);
    int64_t t0 = gd_mono_ms();
    gd_fence_wait(f, gen, 60000);
    int64_t took = gd_mono_ms() - t0;
    pthread_join(th, NULL);
    return took < 30000;
}

/* A thread waiting for a lease sleeps until one comes (or a kick): no lost wake-up when the
 * extend comes between the look at the fence and the wait, and a smaller deadline wakes
 * nobody. */
static void test_fence_wait(void **state)
{
    gd_fence f;
    gd_fence_init(&f, 0);
    assert_true(wait_ended_by(&f, gd_wall_ms() + 10000));
    assert_true(gd_fence_open(&f));
    assert_true(wait_ended_by(&f, 0));                      /* a kick */
    uint64_t gen = gd_fence_gen(&f);
    gd_fence_extend(&f, gd_wall_ms() + 20000);              /* after the read */
    int64_t t0 = gd_mono_ms();
    gd_fence_wait(&f, gen, 60000);                          /* returns at once */
    assert_true(gd_mono_ms() - t0 < 30000);
    gen = gd_fence_gen(&f);
    gd_fence_extend(&f, gd_wall_ms() + 1000);               /* smaller: ignored */
    assert_int_equal(gd_fence_gen(&f), gen);
    gd_fence_close(&f);
    assert_int_equal(gd_fence_gen(&f), gen);                /* a close wakes nobody either */
    gd_fence_wait(&f, gen, 20);                             /* the timeout still ends it */
    gd_fence_destroy(&f);
}

static uint64_t queue_wakeups(controller *c)
{
    wq_stats s;
    wq_get_stats(controller_queue(c), &s);
    return s.wakeups;
}

/* Idle reconcile threads sleep until a key comes (they used to time out every second), and
 * threads waiting for a lease are joined at stop without one. */
static void test_idle_threads_sleep(void **state)
{
    fixture *f = fx_new(8, false);
    controller_own_all(f->c);
    assert_int_equal(controller_start(f->c), GD_OK);
    char key[32];
    controller_enqueue(f->c, key_of(3, key));
    assert_true(wait_for(&f->st.calls[3], 1, 2000));
    wait_idle(f->c);
    uint64_t before = queue_wakeups(f->c);
    /* the quiet period is the behaviour under test: longer than the old 1 s timeout */
    usleep(1300000);
    assert_int_equal(queue_wakeups(f->c), before);
    controller_enqueue(f->c, key_of(4, key));               /* and a key still wakes one */
    assert_true(wait_for(&f->st.calls[4], 1, 2000));
    gd_fence_close(&f->fence);                              /* every thread waits for a lease */
    assert_int_equal(controller_stop(f->c, 5000), GD_OK);   /* joined */
    fx_free(f);
}

/* A reconcile of a key whose shard is being revoked pokes revoke_wake_fd as it finishes (the
 * worker's main loop answers the REVOKE then); a key of an owned shard does not. */
static void test_revoke_wakes_the_loop(void **state)
{
    fixture *f = fx_new(1, false);
    int fd = gd_wake_open();
    assert_true(fd >= 0);
    f->env.revoke_wake_fd = &fd;
    char ka[32], kc[32];
    key_of(0, ka);
    int sa = gd_shard_of_key(GODIS_CTRL_CLUSTER, ka), ic = -1;
    for (int i = 1; i < NK && ic < 0; i++)
        if (gd_shard_of_key(GODIS_CTRL_CLUSTER, key_of(i, kc)) != sa)
            ic = i;
    assert_true(ic > 0);
    int sc = gd_shard_of_key(GODIS_CTRL_CLUSTER, kc), shards[] = {sa, sc};
    controller_own_shards(f->c, shards, 2);
    assert_int_equal(controller_start(f->c), GD_OK);
    controller_enqueue(f->c, kc);
    assert_true(wait_for(&f->st.calls[ic], 1, 2000));
    wait_idle(f->c);
    assert_int_equal(gd_wake_wait(fd, 0), 0);               /* an owned shard's key: no poke */
    atomic_store(&f->st.block, true);
    controller_enqueue(f->c, ka);
    assert_true(wait_for(&f->st.calls[0], 1, 2000));        /* in flight, blocked */
    controller_revoke_begin(f->c, &sa, 1);
    assert_int_equal(gd_wake_wait(fd, 0), 0);
    atomic_store(&f->st.block, false);
    assert_int_equal(gd_wake_wait(fd, 10000), 1);           /* finished: the loop is told */
    assert_int_equal(controller_inflight(f->c, &sa, 1), 0);
    controller_revoke_finish(f->c, &sa, 1, NULL);
    fx_free(f);
    gd_wake_close(&fd);
}

static int same_shard_key(int shard, int skip, char *buf)
{
    for (int i = 1; i < NK; i++)
        if (i != skip && gd_shard_of_key(GODIS_CTRL_CLUSTER, key_of(i, buf)) == shard)
            return i;
    return -1;
}

static void test_revoke(void **state)
{
    fixture *f = fx_new(1, false);      /* one thread: while A blocks it, B stays queued */
    char ka[32], kb[32], kc[32];
    key_of(0, ka);
    int sa = gd_shard_of_key(GODIS_CTRL_CLUSTER, ka);
    int ib = same_shard_key(sa, -1, kb);
    int ic = -1;
    for (int i = 1; i < NK; i++)
        if (gd_shard_of_key(GODIS_CTRL_CLUSTER, key_of(i, kc)) != sa) {
            ic = i;
            break;
        }
    assert_true(ib > 0 && ic > 0);
    key_of(ib, kb);
    int sc = gd_shard_of_key(GODIS_CTRL_CLUSTER, kc);
    int shards[] = {sa, sc};
    controller_own_shards(f->c, shards, 2);
    assert_true(controller_owns(f->c, sa));
    assert_false(controller_owns(f->c, (sa + 1) % GD_NSHARDS == sc ? (sa + 2) % GD_NSHARDS
                                                                   : (sa + 1) % GD_NSHARDS));
    atomic_store(&f->st.block, true);
    f->st.result = gd_requeue();
    atomic_store(&f->st.script[0], 1);              /* A asks to be requeued */
    assert_int_equal(controller_start(f->c), GD_OK);
    controller_enqueue(f->c, ka);
    assert_true(wait_for(&f->st.calls[0], 1, 2000)); /* A in flight, blocked */
    controller_enqueue(f->c, kb);
    controller_enqueue_after(f->c, kc, 1);
    controller_revoke_begin(f->c, &sa, 1);
    assert_false(controller_owns(f->c, sa));
    assert_true(controller_owns(f->c, sc));
    assert_int_equal(controller_inflight(f->c, &sa, 1), 1);
    atomic_store(&f->st.block, false);               /* A finishes, asks for a requeue */
    WAIT_UNTIL(controller_inflight(f->c, &sa, 1) == 0, 2000);
    assert_int_equal(controller_inflight(f->c, &sa, 1), 0);
    controller_enqueue(f->c, ka);                     /* an event during revocation */
    cJSON *arr = cJSON_CreateArray();
    controller_revoke_finish(f->c, &sa, 1, arr);
    assert_int_equal(cJSON_GetArraySize(arr), 2);
    char *s = cJSON_PrintUnformatted(arr);
    assert_non_null(strstr(s, ka));
    assert_non_null(strstr(s, kb));
    free(s);
    cJSON_Delete(arr);
    assert_true(wait_for(&f->st.calls[ic], 1, 2000)); /* the other shard keeps working */
    assert_int_equal(atomic_load(&f->st.calls[ib]), 0);
    assert_int_equal(atomic_load(&f->st.calls[0]), 1);
    controller_enqueue(f->c, kb);                     /* not ours any more: dropped */
    wait_idle(f->c);
    assert_int_equal(atomic_load(&f->st.calls[ib]), 0);
    arr = cJSON_CreateArray();
    controller_revoke_finish(f->c, &sa, 1, arr);
    assert_int_equal(cJSON_GetArraySize(arr), 0);
    cJSON_Delete(arr);
    controller_own_shards(f->c, &sa, 1);              /* assigned back */
    controller_enqueue(f->c, kb);
    assert_true(wait_for(&f->st.calls[ib], 1, 2000));
    /* revoking a shard never owned finishes at once with nothing */
    int other = (sa + 7) % GD_NSHARDS;
    controller_revoke_begin(f->c, &other, 1);
    assert_int_equal(controller_inflight(f->c, &other, 1), 0);
    controller_revoke_finish(f->c, &other, 1, NULL);
    fx_free(f);
}

static void test_stop_abandons_queued(void **state)
{
    fixture *f = fx_new(1, false);
    controller_own_all(f->c);
    atomic_store(&f->st.block, true);
    assert_int_equal(controller_start(f->c), GD_OK);
    char key[32];
    controller_enqueue(f->c, key_of(0, key));
    assert_true(wait_for(&f->st.calls[0], 1, 2000));
    for (int i = 1; i < 20; i++)
        controller_enqueue(f->c, key_of(i, key));
    assert_int_equal(controller_stop(f->c, 30), GD_ERR_TIMEOUT);   /* A still running */
    atomic_store(&f->st.block, false);
    assert_int_equal(controller_stop(f->c, 2000), GD_OK);
    assert_int_equal(atomic_load(&f->st.total), 1);                /* nothing else ran */
    fx_free(f);
}

/* The reconcilers' cache helpers and write reporting, on a real cache. */
static void put_obj(cache *c, const char *kind, const char *key, const char *json)
{
    cJSON *o = cJSON_Parse(json);
    assert_non_null(o);
    assert_int_equal(cache_apply(c, CACHE_UPSERT, kind, key, 0, o), GD_OK);
    cJSON_Delete(o);
}

static bool only_godis(void *ud, const char *kind) { return strcmp(kind, "Godis") == 0; }

static void test_reconciler_cache_helpers(void **state)
{
    cache *c = cache_new();
    gd_fence fence;
    gd_fence_init(&fence, GD_FENCE_NONE);
    gd_worker_env env = {.fence = &fence, .cache = c, .rv_lookup = cache_rv_lookup,
                         .rv_lookup_ud = c};
    controller_opts o;
    controller_opts_default(&o, "godis", test_reconcile);
    controller *ctrl = controller_new(&o, &env);
    rec_ctx ctx = {.ctrl = ctrl, .controller_name = "godis", .key = "ns/ex-1", .env = &env};
    put_obj(c, "Godis", "ns/ex-1",
            "{\"metadata\":{\"name\":\"ex-1\",\"namespace\":\"ns\",\"resourceVersion\":\"5\","
            "\"labels\":{\"cluster-name\":\"ex\",\"role\":\"a\"}}}");
    put_obj(c, "Godis", "ns/ex-2",
            "{\"metadata\":{\"name\":\"ex-2\",\"namespace\":\"ns\",\"resourceVersion\":\"6\","
            "\"labels\":{\"cluster-name\":\"ex\",\"role\":\"b\",\"node-name\":\"ex-2\"}}}");
    put_obj(c, "Godis", "other/ex-1",
            "{\"metadata\":{\"name\":\"ex-1\",\"namespace\":\"other\",\"labels\":{\"cluster-name\":\"ex\"}}}");
    cJSON *g = rec_cache_get(&ctx, "Godis", "ns", "ex-1");
    assert_non_null(g);
    assert_string_equal(gd_meta_rv(g), "5");
    cJSON_Delete(g);
    assert_null(rec_cache_get(&ctx, "Godis", "ns", "ex-9"));
    assert_null(rec_cache_get(&ctx, NULL, "ns", "ex-1"));
    cJSON *l = rec_cache_list(&ctx, "Godis", "ns", "cluster-name", "ex");
    assert_int_equal(cJSON_GetArraySize(l), 2);
    cJSON_Delete(l);
    l = rec_cache_list(&ctx, "Godis", "ns", "node-name", "ex-2");   /* the member index */
    assert_int_equal(cJSON_GetArraySize(l), 1);
    assert_string_equal(gd_meta_name(cJSON_GetArrayItem(l, 0)), "ex-2");
    cJSON_Delete(l);
    l = rec_cache_list(&ctx, "Godis", "other", "node-name", "ex-2");
    assert_int_equal(cJSON_GetArraySize(l), 0);
    cJSON_Delete(l);
    l = rec_cache_list(&ctx, "Godis", "ns", "role", "b");
    assert_int_equal(cJSON_GetArraySize(l), 1);
    assert_string_equal(gd_meta_name(cJSON_GetArrayItem(l, 0)), "ex-2");
    cJSON_Delete(l);
    l = rec_cache_list(&ctx, "Godis", "ns", NULL, NULL);
    assert_int_equal(cJSON_GetArraySize(l), 2);
    cJSON_Delete(l);
    l = rec_cache_list(&ctx, "Godis", NULL, NULL, NULL);
    assert_int_equal(cJSON_GetArraySize(l), 0);
    cJSON_Delete(l);
    /* inside the controller's view section the reads lend the cached objects: handles that
     * refer to them, still reading as they were when the feed replaces them */
    ctx.view_slot = cache_view_begin(c);
    ctx.viewing = true;
    g = rec_cache_get(&ctx, "Godis", "ns", "ex-1");
    assert_true(g->type & cJSON_IsReference);
    l = rec_cache_list(&ctx, "Godis", "ns", "cluster-name", "ex");
    assert_int_equal(cJSON_GetArraySize(l), 2);
    assert_true(cJSON_GetArrayItem(l, 0)->type & cJSON_IsReference);
    put_obj(c, "Godis", "ns/ex-1", "{\"metadata\":{\"name\":\"ex-1\",\"namespace\":\"ns\","
                                   "\"resourceVersion\":\"7\"}}");
    assert_string_equal(gd_meta_rv(g), "5");
    assert_string_equal(gd_meta_rv(cJSON_GetArrayItem(l, 0)), "5");
    cJSON_Delete(g);                    /* the handles only */
    cJSON_Delete(l);
    assert_int_equal(cache_retired_count(c), 1);
    cache_view_end(c, ctx.view_slot);
    ctx.viewing = false;
    assert_int_equal(cache_retired_count(c), 0);
    /* a reported write holds the key until the cache shows it */
    rec_wrote(&ctx, "Godis", "ns", "ex-2", "9", false);
    assert_int_equal(ctx.writes, 1);
    assert_false(controller_caught_up(ctrl, "ns/ex-1"));
    put_obj(c, "Godis", "ns/ex-2", "{\"metadata\":{\"name\":\"ex-2\",\"namespace\":\"ns\","
                                   "\"resourceVersion\":\"9\"}}");
    assert_true(controller_caught_up(ctrl, "ns/ex-1"));
    rec_wrote(&ctx, "Godis", "ns", "ex-2", NULL, true);
    assert_false(controller_caught_up(ctrl, "ns/ex-1"));
    cache_apply(c, CACHE_DELETE, "Godis", "ns/ex-2", 0, NULL);
    assert_true(controller_caught_up(ctrl, "ns/ex-1"));
    rec_wrote(NULL, "Godis", "ns", "x", "1", false);
    /* an updated object (cached when written) that disappears was deleted: not waited for;
     * a created one (not cached yet) is */
    rec_wrote(&ctx, "Godis", "ns", "ex-1", "50", false);
    assert_false(controller_caught_up(ctrl, "ns/ex-1"));
    cache_apply(c, CACHE_DELETE, "Godis", "ns/ex-1", 0, NULL);
    assert_true(controller_caught_up(ctrl, "ns/ex-1"));
    rec_wrote(&ctx, "Godis", "ns", "new-1", "51", false);
    assert_false(controller_caught_up(ctrl, "ns/ex-1"));
    put_obj(c, "Godis", "ns/new-1", "{\"metadata\":{\"name\":\"new-1\",\"namespace\":\"ns\","
                                    "\"resourceVersion\":\"51\"}}");
    assert_true(controller_caught_up(ctrl, "ns/ex-1"));
    /* a kind the cache does not follow is never waited for */
    env.tracks_kind = only_godis;
    rec_wrote(&ctx, "Event", "ns", "ev-1", "77", false);
    assert_true(controller_caught_up(ctrl, "ns/ex-1"));
    rec_wrote(&ctx, "Godis", "ns", "ex-3", "77", false);
    assert_false(controller_caught_up(ctrl, "ns/ex-1"));
    controller_destroy(&ctrl);
    cache_destroy(&c);
}

static char *render_keys(controller *c)
{
    static const gd_key_metric fams[] = {{"obj_members", "gauge", "members"},
                                         {"obj_changes_total", "counter", "changes"},
                                         {NULL, NULL, NULL}};
    gd_sbuf b;
    gd_sbuf_init(&b);
    controllers_render_key_metrics(&c, 1, fams, &b);
    return gd_sbuf_detach(&b);
}

/* Per-object series (issue 20.6): set and added under the reconcile key, rendered under one
 * header per family, dropped when the key's shard is handed back (the next owner publishes
 * them) and when the reconciler says the object is gone — no stale series either way. */
static void test_key_metrics(void **state)
{
    fixture *f = fx_new(1, false);
    char ka[32], kc[32];
    key_of(0, ka);
    int sa = gd_shard_of_key(GODIS_CTRL_CLUSTER, ka);
    for (int i = 1; i < NK; i++)
        if (gd_shard_of_key(GODIS_CTRL_CLUSTER, key_of(i, kc)) != sa) break;
    int sc = gd_shard_of_key(GODIS_CTRL_CLUSTER, kc);
    assert_int_not_equal(sa, sc);
    int shards[] = {sa, sc};
    controller_own_shards(f->c, shards, 2);
    rec_ctx a = {.ctrl = f->c, .key = ka}, c = {.ctrl = f->c, .key = kc};
    rec_metric_set(&a, "obj_members", "cluster=\"a\"", 5);
    rec_metric_set(&a, "obj_members", "cluster=\"a\"", 3);     /* a gauge: replaced */
    rec_metric_add(&a, "obj_changes_total", "cluster=\"a\",kind=\"add\"", 0);
    rec_metric_add(&a, "obj_changes_total", "cluster=\"a\",kind=\"add\"", 1);
    rec_metric_add(&a, "obj_changes_total", "cluster=\"a\",kind=\"add\"", 1);
    rec_metric_set(&c, "obj_members", "cluster=\"c\"", 1);
    char *t = render_keys(f->c);
    assert_non_null(strstr(t, "# TYPE obj_members gauge\n"));
    assert_non_null(strstr(t, "obj_members{cluster=\"a\"} 3\n"));
    assert_non_null(strstr(t, "obj_members{cluster=\"c\"} 1\n"));
    assert_non_null(strstr(t, "# TYPE obj_changes_total counter\n"));
    assert_non_null(strstr(t, "obj_changes_total{cluster=\"a\",kind=\"add\"} 2\n"));
    assert_null(strstr(strstr(t, "# TYPE obj_members") + 1, "# TYPE obj_members"));  /* once */
    free(t);
    assert_int_equal(controller_key_metrics_count(f->c), 2);
    controller_revoke_begin(f->c, &sa, 1);       /* a's shard moves to another worker */
    controller_revoke_finish(f->c, &sa, 1, NULL);
    t = render_keys(f->c);
    assert_null(strstr(t, "cluster=\"a\""));
    assert_non_null(strstr(t, "obj_members{cluster=\"c\"} 1\n"));
    free(t);
    rec_metrics_forget(&c);                      /* c was deleted */
    assert_int_equal(controller_key_metrics_count(f->c), 0);
    t = render_keys(f->c);
    assert_null(strstr(t, "cluster="));
    free(t);
    fx_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_opts),
        cmocka_unit_test(test_shard_of_key),
        cmocka_unit_test(test_exclusivity_8),
        cmocka_unit_test(test_results),
        cmocka_unit_test(test_read_your_writes),
        cmocka_unit_test(test_stale_requeue_backs_off),
        cmocka_unit_test(test_fence),
        cmocka_unit_test(test_fence_wait),
        cmocka_unit_test(test_idle_threads_sleep),
        cmocka_unit_test(test_revoke_wakes_the_loop),
        cmocka_unit_test(test_revoke),
        cmocka_unit_test(test_stop_abandons_queued),
        cmocka_unit_test(test_reconciler_cache_helpers),
        cmocka_unit_test(test_key_metrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
