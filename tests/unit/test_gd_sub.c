/* test_gd_sub.c — the subscriber library against the real informer publisher running in a
 * thread: first snapshot, live updates in order, a deliberately lagged subscriber (tiny
 * high-water marks) that must detect its gaps and end equal, shard following/revoking, and
 * an informer restart (new instance on the same ipc endpoints). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <cmocka.h>
#include <zmq.h>
#include "cache_sub.h"
#include "gd_json.h"
#include "gd_proto.h"
#include "gd_sub.h"
#include "gd_time.h"
#include "../../informer/informer.h"
#include "../support/test_wait.h"   /* test_scaled_ms: deadlines stretch under valgrind */

#define NKEYS 300

typedef struct {
    void *zctx;
    inf_counters ctr;
    inf_pub *p;
    pthread_t th;
    volatile int stop;
    char pub_ep[128], snap_ep[128], dir[64];
    int pub_hwm;
    int64_t resync_ms;
    int heartbeat_ms;       /* the informer's period; 0: 50 ms */
    /* the model: what the informer's store must hold */
    int rv[NKEYS];          /* 0: absent */
    int shard[NKEYS];
    int next_rv;
    /* the subscribers a test made: a failed assertion leaves the test before it destroys
     * them, and zmq_ctx_term in teardown would then wait for their sockets for ever */
    gd_sub *subs[4];
    cache *cache;           /* the worker's replica store, for the tests that use it */
    cache_sub cs;
    gd_sub_store store;
} fx;

typedef struct {
    int added, modified, deleted, synced, resync_events;
    int republished;        /* MODIFIED handing the replica's own object as old and new */
} counts;

static void on_event(void *ud, gd_ev ev, const char *key, int shard, const cJSON *old,
                     const cJSON *new_obj, bool resync)
{
    counts *c = ud;
    switch (ev) {
    case GD_EV_ADDED: c->added++; assert_null(old); assert_non_null(new_obj); break;
    case GD_EV_MODIFIED:
        c->modified++;
        assert_non_null(old);
        assert_non_null(new_obj);
        c->republished += old == new_obj;
        break;
    case GD_EV_DELETED: c->deleted++; assert_non_null(old); assert_null(new_obj); break;
    case GD_EV_SYNCED: c->synced++; break;
    }
    if (resync)
        c->resync_events++;
}

static void *pub_thread(void *arg)
{
    inf_pub_run(arg);
    return NULL;
}

static void start_pub(fx *f)
{
    f->stop = 0;
    inf_pub_cfg c = {.zctx = f->zctx, .kind = "ConfigMap", .pub_endpoint = f->pub_ep,
                     .snap_endpoint = f->snap_ep, .heartbeat_ms = f->heartbeat_ms ? f->heartbeat_ms : 50,
                     .ctr = &f->ctr, .stop = &f->stop, .pub_hwm = f->pub_hwm,
                     .resync_ms = f->resync_ms};
    f->p = inf_pub_new(&c);
    assert_non_null(f->p);
    assert_int_equal(pthread_create(&f->th, NULL, pub_thread, f->p), 0);
}

static void stop_pub(fx *f)
{
    f->stop = 1;
    inf_pub_wake(f->p);
    pthread_join(f->th, NULL);
    inf_pub_destroy(&f->p);
}

static int setup_common(void **state, int pub_hwm, int64_t resync_ms, int heartbeat_ms)
{
    fx *f = calloc(1, sizeof *f);
    f->resync_ms = resync_ms;
    f->heartbeat_ms = heartbeat_ms;
    f->zctx = zmq_ctx_new();
    f->pub_hwm = pub_hwm;
    snprintf(f->dir, sizeof f->dir, "/tmp/gdsubXXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->pub_ep, sizeof f->pub_ep, "ipc://%s/cm.pub", f->dir);
    snprintf(f->snap_ep, sizeof f->snap_ep, "ipc://%s/cm.snap", f->dir);
    f->next_rv = 100;
    start_pub(f);
    *state = f;
    return 0;
}
static int setup(void **state) { return setup_common(state, 0, 0, 0); }
static int setup_lag(void **state) { return setup_common(state, 5, 0, 0); }
static int setup_resync(void **state) { return setup_common(state, 0, 100, 0); }
static int setup_hourly_heartbeat(void **state) { return setup_common(state, 0, 0, 3600000); }

static int teardown(void **state)
{
    fx *f = *state;
    for (size_t i = 0; i < sizeof f->subs / sizeof f->subs[0]; i++)
        gd_sub_destroy(&f->subs[i]);
    cache_destroy(&f->cache);
    stop_pub(f);
    zmq_ctx_term(f->zctx);
    rmdir(f->dir);
    free(f);
    return 0;
}

static inf_obj *mkobj(fx *f, int i)
{
    char key[32], body[256], rv[16];
    snprintf(key, sizeof key, "ns/o%d", i);
    snprintf(rv, sizeof rv, "%d", f->rv[i]);
    snprintf(body, sizeof body,
             "{\"metadata\":{\"name\":\"o%d\",\"namespace\":\"ns\",\"resourceVersion\":\"%s\"}}",
             i, rv);
    return inf_obj_new(key, rv, f->shard[i], body, strlen(body));
}

static void push(fx *f, inf_update_kind t, inf_obj *o, inf_obj **items, size_t n)
{
    inf_update *it = calloc(1, sizeof *it);
    it->type = t;
    it->obj = o;
    it->items = items;
    it->nitems = n;
    snprintf(it->rv, sizeof it->rv, "%d", f->next_rv - 1);
    /* as the reflector does: applied on this thread, under the publisher's mutex */
    inf_pub_apply(f->p, it);           /* its result is the publisher loop's to ignore */
    inf_update_destroy(&it);
}

/* Initial list: keys 0..n-1 across shards 0..3 and broadcast. */
static void initial_list(fx *f, int n)
{
    inf_obj **items = calloc((size_t)n, sizeof *items);
    for (int i = 0; i < n; i++) {
        f->rv[i] = f->next_rv++;
        f->shard[i] = i % 5 == 4 ? GD_SHARD_BROADCAST : i % 5;
        items[i] = mkobj(f, i);
    }
    push(f, INF_UPD_REPLACE, NULL, items, (size_t)n);
}

/* Random writes: updates, deletes, re-creates, shard moves. */
static void churn(fx *f, int n)
{
    for (int j = 0; j < n; j++) {
        int i = rand() % NKEYS;
        int r = rand() % 10;
        if (f->rv[i] && r < 2) {
            f->next_rv++;
            inf_obj *o = mkobj(f, i);
            f->rv[i] = 0;
            push(f, INF_UPD_DELETE, o, NULL, 0);
            continue;
        }
        if (r == 2)
            f->shard[i] = rand() % 5 == 4 ? GD_SHARD_BROADCAST : rand() % 4;
        f->rv[i] = f->next_rv++;
        push(f, INF_UPD_UPSERT, mkobj(f, i), NULL, 0);
    }
}

static bool wanted(int shard, const int *shards, int n)
{
    if (shard == GD_SHARD_BROADCAST || !shards)
        return true;
    for (int i = 0; i < n; i++)
        if (shards[i] == shard)
            return true;
    return false;
}

/* True when the replica equals the model restricted to the followed shards. */
static bool replica_equal(fx *f, gd_sub *s, const int *shards, int n, bool verbose)
{
    size_t expect = 0;
    for (int i = 0; i < NKEYS; i++) {
        char key[32], rv[32], want[16];
        snprintf(key, sizeof key, "ns/o%d", i);
        bool in = f->rv[i] && wanted(f->shard[i], shards, n);
        bool have = gd_sub_get_rv(s, key, rv, sizeof rv);
        if (in)
            expect++;
        snprintf(want, sizeof want, "%d", f->rv[i]);
        if (in != have || (in && strcmp(rv, want) != 0)) {
            if (verbose)
                print_message("mismatch %s: want %s (%d) have %s (%d)\n", key, want, in,
                              have ? rv : "-", have);
            return false;
        }
    }
    return gd_sub_count(s) == expect;
}

static void converge(fx *f, gd_sub *s, const int *shards, int n)
{
    int64_t until = gd_mono_ms() + test_scaled_ms(10000);
    while (gd_mono_ms() < until) {
        gd_sub_poll(s, 20);
        char rv[32], want[32];
        gd_sub_last_rv(s, rv, sizeof rv);
        snprintf(want, sizeof want, "%d", f->next_rv - 1);
        if (gd_sub_synced(s) && !strcmp(rv, want) && replica_equal(f, s, shards, n, false))
            return;
    }
    char rv[32];
    gd_sub_stats st = {0};
    gd_sub_last_rv(s, rv, sizeof rv);
    gd_sub_get_stats(s, &st);
    print_message("not converged: synced %d, last rv %s (want %d), %zu objects, %llu gaps, "
                  "%llu snapshots, %llu snapshot failures\n", gd_sub_synced(s), rv, f->next_rv - 1,
                  gd_sub_count(s), (unsigned long long)st.gaps, (unsigned long long)st.snapshots,
                  (unsigned long long)st.snapshot_failures);
    assert_true(replica_equal(f, s, shards, n, true));
    fail_msg("replica did not converge");
}

static gd_sub *new_sub_with(fx *f, gd_sub_event_fn fn, void *ud, int rcvhwm,
                            const gd_sub_store *store)
{
    gd_sub_opts o;
    gd_sub_opts_default(&o);
    o.kind = "ConfigMap";
    o.pub_endpoint = f->pub_ep;
    o.snap_endpoint = f->snap_ep;
    o.on_event = fn;
    o.ud = ud;
    o.snapshot_timeout_ms = (int)test_scaled_ms(2000);
    o.store = store;
    if (rcvhwm)
        o.rcvhwm = rcvhwm;
    gd_sub *s = gd_sub_new(f->zctx, &o);
    assert_non_null(s);
    for (size_t i = 0; i < sizeof f->subs / sizeof f->subs[0]; i++)
        if (!f->subs[i]) {
            f->subs[i] = s;
            return s;
        }
    fail_msg("more subscribers than the fixture tracks");
    return NULL;
}

/* Destroys a subscriber new_sub made (and forgets it in the fixture). */
static void drop_sub(fx *f, gd_sub **s)
{
    for (size_t i = 0; i < sizeof f->subs / sizeof f->subs[0]; i++)
        if (f->subs[i] == *s)
            f->subs[i] = NULL;
    gd_sub_destroy(s);
}

static gd_sub *new_sub(fx *f, counts *c, int rcvhwm)
{
    return new_sub_with(f, on_event, c, rcvhwm, NULL);
}

/* A subscriber whose replica is the worker's cache (cache_sub.h), as the worker runs it. */
static gd_sub *new_cache_sub(fx *f, counts *c, int rcvhwm)
{
    if (!f->cache) {
        f->cache = cache_new();
        assert_non_null(f->cache);
        cache_sub_store(&f->cs, f->cache, "ConfigMap", &f->store);
    }
    return new_sub_with(f, on_event, c, rcvhwm, &f->store);
}

static void test_live_and_late(void **state)
{
    fx *f = *state;
    counts c = {0}, late = {0};
    gd_sub *s = new_sub(f, &c, 0);
    assert_false(gd_sub_synced(s));
    assert_int_equal(gd_sub_set_all(s), GD_OK);     /* empty informer: snapshot of nothing */
    initial_list(f, 200);
    converge(f, s, NULL, 0);
    assert_true(c.synced >= 1);
    assert_int_equal(c.added, 200);
    churn(f, 2000);
    converge(f, s, NULL, 0);
    gd_sub_stats st;
    gd_sub_get_stats(s, &st);
    assert_int_equal(st.gaps, 0);                 /* nothing should be lost here */
    assert_true(st.applied >= 2000);
    /* late subscriber */
    gd_sub *s2 = new_sub(f, &late, 0);
    assert_int_equal(gd_sub_set_all(s2), GD_OK);
    churn(f, 300);
    converge(f, s2, NULL, 0);
    converge(f, s, NULL, 0);
    assert_int_equal(late.synced, 1);
    /* the replica hands out copies */
    cJSON *o = NULL;
    for (int i = 0; i < NKEYS && !o; i++)
        if (f->rv[i]) {
            char key[32];
            snprintf(key, sizeof key, "ns/o%d", i);
            o = gd_sub_get(s, key);
        }
    assert_non_null(o);
    assert_non_null(gd_meta_name(o));
    cJSON_Delete(o);
    assert_null(gd_sub_get(s, "ns/none"));
    drop_sub(f, &s2);
    drop_sub(f, &s);
    assert_null(s);
}

/* A new subscriber's first snapshot waits for proof that its subscriptions are active
 * (a message on the SUB, PROTOCOL.md §1 step 2). It asks the informer for a heartbeat
 * instead of waiting for the periodic one: with the informer's period an hour, the one
 * message it hears is the heartbeat it asked for. (Before the request existed it heard
 * nothing and took its snapshot when its wait ran out.) */
static void test_first_snapshot_asks_for_a_heartbeat(void **state)
{
    fx *f = *state;
    initial_list(f, 20);
    uint64_t published = atomic_load(&f->ctr.messages_published);
    counts c = {0};
    gd_sub *s = new_sub(f, &c, 0);
    assert_int_equal(gd_sub_set_all(s), GD_OK);
    assert_true(gd_sub_synced(s));
    assert_int_equal(c.added, 20);
    uint64_t asked = atomic_load(&f->ctr.messages_published) - published;
    assert_true(asked >= 1 && asked <= 30);      /* once, or again every 50 ms for 1.5 s */
    for (int i = 0; i < 10; i++)
        gd_sub_poll(s, 20);
    gd_sub_stats st;
    gd_sub_get_stats(s, &st);
    /* heard: a heartbeat it asked for (one asked before its subscription was active at
     * the PUB side is not delivered: that is what it asks again for) */
    assert_true(st.messages >= 1 && st.messages <= asked);
    assert_int_equal(st.gaps, 0);
    assert_int_equal(st.snapshots, 1);
    drop_sub(f, &s);
}

/* gd_sub_bytes_received counts the objects parsed (snapshots and PUB), not the informer's
 * heartbeats: an idle feed leaves it alone, so the worker's heap trim sees the quiet. */
static void test_bytes_received(void **state)
{
    fx *f = *state;
    counts c = {0};
    uint64_t b0 = gd_sub_bytes_received();
    gd_sub *s = new_sub(f, &c, 0);
    assert_int_equal(gd_sub_set_all(s), GD_OK);
    initial_list(f, 100);
    converge(f, s, NULL, 0);
    assert_int_equal(c.added, 100);
    static const char smallest[] =
        "{\"metadata\":{\"name\":\"o0\",\"namespace\":\"ns\",\"resourceVersion\":\"1\"}}";
    uint64_t b1 = gd_sub_bytes_received();
    assert_true(b1 - b0 >= 100 * (sizeof smallest - 1));
    /* idle: 10 heartbeats (every 50 ms) arrive and count nothing */
    gd_sub_stats st0, st1;
    gd_sub_get_stats(s, &st0);
    int64_t until = gd_mono_ms() + 500;
    while (gd_mono_ms() < until)
        gd_sub_poll(s, 50);
    gd_sub_get_stats(s, &st1);
    assert_true(st1.messages > st0.messages);       /* they did arrive */
    assert_int_equal(gd_sub_bytes_received(), b1);
    churn(f, 50);
    converge(f, s, NULL, 0);
    assert_true(gd_sub_bytes_received() - b1 >= 50 * (sizeof smallest - 1));
    drop_sub(f, &s);
}

/* The replica in the worker's cache: the handler sees old and new objects as with the
 * default store (on_event asserts them), the cache holds every object with the record the
 * protocol needs, the gd_sub no copy of its own; gaps still repair. */
static void test_cache_store(void **state)
{
    fx *f = *state;      /* PUB high-water mark 5: gaps happen */
    counts c = {0};
    gd_sub *s = new_cache_sub(f, &c, 5);
    initial_list(f, 100);
    assert_int_equal(gd_sub_set_all(s), GD_OK);
    converge(f, s, NULL, 0);
    churn(f, 1000);                            /* converge() waits for all of it */
    converge(f, s, NULL, 0);
    assert_true(c.modified > 0 && c.deleted > 0);
    assert_int_equal(gd_sub_count(s), cache_count(f->cache, "ConfigMap"));
    for (int i = 0; i < NKEYS; i++) {
        char key[32], want[16];
        snprintf(key, sizeof key, "ns/o%d", i);
        snprintf(want, sizeof want, "%d", f->rv[i]);
        cache_stamp st;
        cJSON *o = cache_get(f->cache, "ConfigMap", key);
        assert_int_equal(o != NULL, f->rv[i] != 0);
        assert_int_equal(cache_get_stamp(f->cache, "ConfigMap", key, &st), f->rv[i] != 0);
        if (o) {
            assert_string_equal(gd_meta_rv(o), want);
            assert_string_equal(st.rv, want);
            assert_int_equal(st.shard, f->shard[i]);
            assert_true(st.seq > 0);
        }
        cJSON_Delete(o);
    }
    drop_sub(f, &s);
}

static void test_lagged(void **state)
{
    fx *f = *state;      /* PUB high-water mark 5 */
    counts c = {0};
    gd_sub *s = new_sub(f, &c, 5);
    initial_list(f, 250);
    assert_int_equal(gd_sub_set_all(s), GD_OK);
    converge(f, s, NULL, 0);
    /* The subscriber does not read meanwhile. Whether 1500 events overflow depends on the
     * kernel's socket buffers and on how fast the publisher runs (under valgrind it is slow
     * enough for a round to fit), so rounds go on until a gap was seen, within a bound. */
    gd_sub_stats st = {0};
    for (int round = 0; round < 3 || (st.gaps == 0 && round < 30); round++) {
        churn(f, 1500);
        gd_sleep_ms(100);                      /* unread meanwhile: the round's gap, if any */
        converge(f, s, NULL, 0);
        gd_sub_get_stats(s, &st);
    }
    assert_true(st.gaps > 0);
    assert_true(st.snapshots > 1);
    assert_true(c.resync_events > 0);
    drop_sub(f, &s);
}

static void test_shards(void **state)
{
    fx *f = *state;
    counts c = {0};
    gd_sub *s = new_sub(f, &c, 0);
    initial_list(f, 100);                      /* converge() below waits for it */
    int sh1[] = {1, 3};
    assert_int_equal(gd_sub_set_shards(s, sh1, 2), GD_OK);
    converge(f, s, sh1, 2);
    churn(f, 500);
    converge(f, s, sh1, 2);
    /* revoke 3, add 2: shard 3 objects leave silently, shard 2 ones arrive as resync ADDs */
    int deleted_before = c.deleted, added_before = c.added;
    int in2 = 0;
    for (int i = 0; i < NKEYS; i++)
        in2 += f->rv[i] && f->shard[i] == 2;
    int sh2[] = {1, 2};
    assert_int_equal(gd_sub_set_shards(s, sh2, 2), GD_OK);
    assert_int_equal(c.deleted, deleted_before);
    assert_int_equal(c.added - added_before, in2);
    converge(f, s, sh2, 2);
    int bad[] = {256};
    assert_int_equal(gd_sub_set_shards(s, bad, 1), GD_ERR_ARG);
    /* a long topic list (200 shards: ~1000 bytes in the request frame) is served */
    int many[200];
    for (int i = 0; i < 200; i++)
        many[i] = i;
    assert_int_equal(gd_sub_set_shards(s, many, 200), GD_OK);
    converge(f, s, many, 200);
    gd_sub_stats st;
    gd_sub_get_stats(s, &st);
    assert_int_equal(st.snapshot_failures, 0);
    drop_sub(f, &s);
}

/* An object moves from a followed shard into one being added. The move is published as
 * DELETED on the old topic, then ADDED on the new one; the snapshot of the new shard (taken
 * after the move) has the object, and the old topic's DELETED, published before that snapshot
 * but read after it, must not remove it: it is older than what the snapshot gave. */
static void move_into_added_shard(fx *f, bool in_cache)
{
    counts c = {0};
    gd_sub *s = in_cache ? new_cache_sub(f, &c, 0) : new_sub(f, &c, 0);
    initial_list(f, 100);
    int sh1[] = {1};
    assert_int_equal(gd_sub_set_shards(s, sh1, 1), GD_OK);
    converge(f, s, sh1, 1);
    int moved = 1;                       /* ns/o1 is in shard 1 */
    assert_int_equal(f->shard[moved], 1);
    f->shard[moved] = 2;
    f->rv[moved] = f->next_rv++;
    push(f, INF_UPD_UPSERT, mkobj(f, moved), NULL, 0);   /* not read yet: no poll */
    int sh12[] = {1, 2};
    assert_int_equal(gd_sub_set_shards(s, sh12, 2), GD_OK);
    char rv[32], want[16];
    snprintf(want, sizeof want, "%d", f->rv[moved]);
    assert_true(gd_sub_get_rv(s, "ns/o1", rv, sizeof rv));
    assert_string_equal(rv, want);
    converge(f, s, sh12, 2);             /* reads the old topic's DELETED */
    assert_true(gd_sub_get_rv(s, "ns/o1", rv, sizeof rv));
    assert_string_equal(rv, want);
    drop_sub(f, &s);
}

static void test_move_into_added_shard(void **state) { move_into_added_shard(*state, false); }
/* the same with the replica in the worker's cache */
static void test_move_into_added_shard_cache(void **state)
{
    move_into_added_shard(*state, true);
}

static void test_restart(void **state)
{
    fx *f = *state;
    counts c = {0};
    gd_sub *s = new_sub(f, &c, 0);
    initial_list(f, 100);
    assert_int_equal(gd_sub_set_all(s), GD_OK);
    converge(f, s, NULL, 0);
    /* the informer dies; while it is away objects change; a new one lists afresh */
    stop_pub(f);
    for (int i = 0; i < 100; i += 3)
        f->rv[i] = 0;                     /* deleted while away */
    start_pub(f);
    inf_obj **items = calloc(NKEYS, sizeof *items);
    size_t n = 0;
    for (int i = 0; i < 120; i++) {
        if (i >= 100 || i % 3 == 1)
            f->rv[i] = f->next_rv++;      /* new or changed */
        if (f->rv[i])
            items[n++] = mkobj(f, i);
    }
    push(f, INF_UPD_REPLACE, NULL, items, n);
    int del_before = c.deleted;
    converge(f, s, NULL, 0);
    assert_int_equal(c.deleted - del_before, 34);
    drop_sub(f, &s);
}

static void test_resync(void **state)
{
    fx *f = *state;      /* --resync-period 100ms */
    counts c = {0};
    gd_sub *s = new_sub(f, &c, 0);
    initial_list(f, 10);
    assert_int_equal(gd_sub_set_all(s), GD_OK);
    converge(f, s, NULL, 0);
    int before = c.modified;
    int64_t until = gd_mono_ms() + 450;
    while (gd_mono_ms() < until)
        gd_sub_poll(s, 20);
    /* every object re-announced as MODIFIED (same rv) several times; nothing else changed */
    assert_true(c.modified - before >= 20);
    assert_true(c.republished >= 20);   /* restamped, not parsed and stored again */
    assert_int_equal(c.deleted, 0);
    converge(f, s, NULL, 0);
    drop_sub(f, &s);
}

/* The same in the worker's cache: a republish only moves the key's sequence on (the cached
 * object and its indexes stay), and a real change after it is parsed and stored. */
static void test_resync_restamps_cache(void **state)
{
    fx *f = *state;      /* --resync-period 100ms */
    counts c = {0};
    gd_sub *s = new_cache_sub(f, &c, 0);
    initial_list(f, 10);
    assert_int_equal(gd_sub_set_all(s), GD_OK);
    converge(f, s, NULL, 0);
    const char *key = "ns/o0";
    cache_stamp st0, st1;
    assert_true(cache_get_stamp(f->cache, "ConfigMap", key, &st0));
    int before = c.republished;
    int64_t until = gd_mono_ms() + 450;
    while (gd_mono_ms() < until)
        gd_sub_poll(s, 20);
    assert_true(c.republished - before >= 20);
    assert_true(cache_get_stamp(f->cache, "ConfigMap", key, &st1));
    assert_true(st1.seq > st0.seq);
    assert_string_equal(st1.rv, st0.rv);
    churn(f, 30);
    converge(f, s, NULL, 0);            /* the cache equals the informer's, objects included */
    drop_sub(f, &s);
}

static void test_bad_opts(void **state)
{
    gd_sub_opts o;
    gd_sub_opts_default(&o);
    void *z = zmq_ctx_new();
    assert_null(gd_sub_new(z, &o));                 /* no endpoints */
    o.pub_endpoint = "nonsense://x";
    o.snap_endpoint = "inproc://y";
    assert_null(gd_sub_new(z, &o));
    assert_null(gd_sub_new(NULL, &o));
    /* an informer that is not there: snapshot times out, the gd_sub stays usable */
    o.pub_endpoint = "inproc://nobody.pub";
    o.snap_endpoint = "inproc://nobody.snap";
    o.snapshot_timeout_ms = 100;
    gd_sub *s = gd_sub_new(z, &o);
    assert_non_null(s);
    assert_int_equal(gd_sub_set_all(s), GD_ERR_TIMEOUT);
    assert_false(gd_sub_synced(s));
    gd_sub_stats st;
    gd_sub_get_stats(s, &st);
    assert_int_equal(st.snapshot_failures, 1);
    gd_sub_destroy(&s);
    zmq_ctx_term(z);
}

/* gd_sub_poll sleeps until a message, a snapshot retry falling due, or a write to its
 * wake_fd: each of the last two ends a 60 s wait (a worker's subscriber threads sleep in
 * it; they polled every 50 ms before). */
/* An informer, played here, whose snapshot answer is slow but never stalls: five objects
 * 80 ms apart, then END, against a 200 ms snapshot timeout. It answers the HEARTBEAT
 * request with ERROR (an older informer) and publishes nothing. */
typedef struct {
    void *router;
    int heartbeat_requests, snapshots;
} slow_informer;

static void slow_send(void *sock, const char *id, size_t idl, int n, const char **f)
{
    zmq_send(sock, id, idl, ZMQ_SNDMORE);
    for (int i = 0; i < n; i++)
        zmq_send(sock, f[i], strlen(f[i]), i + 1 < n ? ZMQ_SNDMORE : 0);
}

static void *slow_informer_main(void *arg)
{
    slow_informer *si = arg;
    while (si->snapshots == 0) {
        zmq_pollitem_t pi = {.socket = si->router, .events = ZMQ_POLLIN};
        if (zmq_poll(&pi, 1, 5000) <= 0)
            return NULL;
        char fr[4][256];
        int n = 0, more = 1;
        size_t ms = sizeof more, idl = 0;
        while (more) {
            int l = zmq_recv(si->router, fr[n < 4 ? n : 3], 255, 0);
            if (n == 0) idl = (size_t)(l < 255 ? l : 255);
            fr[n < 4 ? n : 3][l < 255 ? (l < 0 ? 0 : l) : 255] = 0;
            n++;
            zmq_getsockopt(si->router, ZMQ_RCVMORE, &more, &ms);
        }
        if (n >= 3 && !strcmp(fr[2], "HEARTBEAT")) {
            si->heartbeat_requests++;
            const char *f[] = {"GDI1", "ERROR", "unknown command"};
            slow_send(si->router, fr[0], idl, 3, f);
            continue;
        }
        for (int i = 0; i < 5; i++) {
            char key[16], body[128];
            snprintf(key, sizeof key, "ns/s%d", i);
            snprintf(body, sizeof body, "{\"metadata\":{\"name\":\"s%d\",\"namespace\":\"ns\","
                                        "\"resourceVersion\":\"7\"}}", i);
            const char *f[] = {"GDI1", "OBJ", key, "7", body, "S001"};
            slow_send(si->router, fr[0], idl, 6, f);
            gd_sleep_ms(80);
        }
        const char *f[] = {"GDI1", "END", "9", "{\"S001\":5,\"B\":4}", "1",
                           "{\"instance\":\"ab\",\"seq\":9,\"synced\":true,\"topics\":{\"S001\":5,\"B\":4}}"};
        slow_send(si->router, fr[0], idl, 6, f);
        si->snapshots++;
    }
    return NULL;
}

/* The snapshot timeout is for an informer gone silent: an answer that takes longer in all
 * than the timeout, every message of it in time, is read to its end (it used to be given
 * up at the timeout and started over, never finishing on a loaded machine). */
static void test_slow_snapshot_is_read_to_the_end(void **state)
{
    (void)state;
    void *z = zmq_ctx_new();
    void *pub = zmq_socket(z, ZMQ_PUB);
    slow_informer si = {.router = zmq_socket(z, ZMQ_ROUTER)};
    assert_int_equal(zmq_bind(pub, "inproc://slow.pub"), 0);
    assert_int_equal(zmq_bind(si.router, "inproc://slow.snap"), 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, slow_informer_main, &si), 0);
    gd_sub_opts o;
    gd_sub_opts_default(&o);
    o.pub_endpoint = "inproc://slow.pub";
    o.snap_endpoint = "inproc://slow.snap";
    o.snapshot_timeout_ms = 200;
    counts c = {0};
    o.on_event = on_event;
    o.ud = &c;
    gd_sub *s = gd_sub_new(z, &o);
    assert_non_null(s);
    int shards[] = {1};
    assert_int_equal(gd_sub_set_shards(s, shards, 1), GD_OK);
    pthread_join(th, NULL);
    assert_int_equal(si.heartbeat_requests, 1);     /* ERROR: not asked again */
    assert_int_equal(si.snapshots, 1);
    assert_true(gd_sub_synced(s));
    assert_int_equal(c.added, 5);
    gd_sub_stats st;
    gd_sub_get_stats(s, &st);
    assert_int_equal(st.snapshot_failures, 0);
    gd_sub_destroy(&s);
    zmq_close(pub);
    zmq_close(si.router);
    zmq_ctx_term(z);
}

static void test_wake_fd_and_retry(void **state)
{
    (void)state;
    gd_sub_opts o;
    gd_sub_opts_default(&o);
    assert_int_equal(o.wake_fd, -1);                /* none unless asked: not stdin */
    void *z = zmq_ctx_new();
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    assert_true(fd >= 0);
    o.pub_endpoint = "inproc://nobody.pub";
    o.snap_endpoint = "inproc://nobody.snap";
    o.snapshot_timeout_ms = 100;
    o.wake_fd = fd;
    gd_sub *s = gd_sub_new(z, &o);
    assert_non_null(s);
    /* nothing followed, so nothing falls due: only the wake-up ends the wait */
    const uint64_t one = 1;
    assert_int_equal(write(fd, &one, sizeof one), sizeof one);
    int64_t t0 = gd_mono_ms();
    assert_int_equal(gd_sub_poll(s, 60000), GD_OK);
    assert_true(gd_mono_ms() - t0 < 30000);
    uint64_t v;
    assert_int_equal(read(fd, &v, sizeof v), -1);   /* read empty by the poll */
    assert_int_equal(errno, EAGAIN);
    /* no informer: the snapshot fails, and is retried 1 s later, inside this wait */
    assert_int_equal(gd_sub_set_all(s), GD_ERR_TIMEOUT);
    t0 = gd_mono_ms();
    gd_sub_poll(s, 60000);
    assert_true(gd_mono_ms() - t0 < 30000);
    gd_sub_stats st;
    gd_sub_get_stats(s, &st);
    assert_int_equal(st.snapshot_failures, 2);
    gd_sub_destroy(&s);
    close(fd);
    zmq_ctx_term(z);
}

int main(void)
{
    srand(42);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_live_and_late, setup, teardown),
        cmocka_unit_test_setup_teardown(test_first_snapshot_asks_for_a_heartbeat,
                                        setup_hourly_heartbeat, teardown),
        cmocka_unit_test_setup_teardown(test_bytes_received, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lagged, setup_lag, teardown),
        cmocka_unit_test_setup_teardown(test_cache_store, setup_lag, teardown),
        cmocka_unit_test_setup_teardown(test_shards, setup, teardown),
        cmocka_unit_test_setup_teardown(test_move_into_added_shard, setup, teardown),
        cmocka_unit_test_setup_teardown(test_move_into_added_shard_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resync, setup_resync, teardown),
        cmocka_unit_test_setup_teardown(test_resync_restamps_cache, setup_resync, teardown),
        cmocka_unit_test(test_bad_opts),
        cmocka_unit_test(test_wake_fd_and_retry),
        cmocka_unit_test(test_slow_snapshot_is_read_to_the_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
