/* test_informer_pub.c — GDI1 encoding by the informer's publisher: topic parsing, status
 * object, PUB frames with global and per-topic sequences, shard moves, SYNCED, snapshots
 * (all / some topics, REQ envelope, errors) and STATS — over real inproc ZeroMQ sockets. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stdint.h>
#include <cmocka.h>
#include <zmq.h>
#include "gd_json.h"
#include "gd_proto.h"
#include "../../informer/publisher_internal.h"
#include <pthread.h>
#include <unistd.h>

typedef struct {
    void *zctx, *sub;
    inf_counters ctr;
    inf_pub *p;
    volatile int stop;
} fx;

typedef struct {
    int n;
    char f[8][512];
} msg;

static int recv_msg(void *sock, msg *m, int timeout_ms)
{
    zmq_pollitem_t pi = {.socket = sock, .events = ZMQ_POLLIN};
    if (zmq_poll(&pi, 1, timeout_ms) <= 0)
        return -1;
    m->n = 0;
    int more = 1;
    while (more) {
        char buf[512];
        int l = zmq_recv(sock, buf, sizeof buf - 1, 0);
        assert_true(l >= 0);
        if (l > (int)sizeof buf - 1)
            l = sizeof buf - 1;
        buf[l] = 0;
        if (m->n < 8)
            memcpy(m->f[m->n++], buf, (size_t)l + 1);
        size_t sz = sizeof more;
        zmq_getsockopt(sock, ZMQ_RCVMORE, &more, &sz);
    }
    return m->n;
}

static int setup_with_gap(void **state, int heartbeat_request_gap_ms)
{
    fx *f = calloc(1, sizeof *f);
    f->zctx = zmq_ctx_new();
    inf_pub_cfg c = {.zctx = f->zctx, .kind = "ConfigMap", .pub_endpoint = "inproc://t.pub",
                     .snap_endpoint = "inproc://t.snap", .heartbeat_ms = 1000,
                     .heartbeat_request_gap_ms = heartbeat_request_gap_ms,
                     .ctr = &f->ctr, .stop = &f->stop};
    f->p = inf_pub_new(&c);
    assert_non_null(f->p);
    f->sub = zmq_socket(f->zctx, ZMQ_SUB);
    assert_int_equal(zmq_connect(f->sub, "inproc://t.pub"), 0);
    zmq_setsockopt(f->sub, ZMQ_SUBSCRIBE, "", 0);
    /* Slow joiner: heartbeat until the subscription is live, then drain. */
    msg m;
    for (int i = 0; i < 100; i++) {
        inf_pub_heartbeat(f->p);
        if (recv_msg(f->sub, &m, 20) > 0)
            break;
    }
    while (recv_msg(f->sub, &m, 20) > 0)
        ;
    *state = f;
    return 0;
}

static int setup(void **state) { return setup_with_gap(state, 0); }
/* A gap no test outlasts: every request after the first shares its heartbeat. */
static int setup_shared(void **state) { return setup_with_gap(state, 3600 * 1000); }

static int teardown(void **state)
{
    fx *f = *state;
    zmq_close(f->sub);
    inf_pub_destroy(&f->p);
    zmq_ctx_term(f->zctx);
    free(f);
    return 0;
}

static inf_obj *mk(const char *key, const char *rv, int shard)
{
    char body[256];
    snprintf(body, sizeof body, "{\"metadata\":{\"name\":\"%s\",\"resourceVersion\":\"%s\"}}",
             key, rv);
    return inf_obj_new(key, rv, shard, body, strlen(body));
}

static void apply(fx *f, inf_update_kind t, inf_obj *o, inf_obj **items, size_t n, const char *rv)
{
    inf_update it = {.type = t, .obj = o, .items = items, .nitems = n};
    snprintf(it.rv, sizeof it.rv, "%s", rv);
    assert_int_equal(inf_pub_apply(f->p, &it), GD_OK);
    inf_obj_unref(it.obj);
}

static void expect(fx *f, const char *topic, const char *seq, const char *type,
                   const char *key, const char *rv)
{
    msg m;
    assert_int_equal(recv_msg(f->sub, &m, 1000), 8);
    assert_string_equal(m.f[0], topic);
    assert_string_equal(m.f[1], "GDI1");
    if (seq)
        assert_string_equal(m.f[2], seq);
    assert_string_equal(m.f[3], type);
    assert_string_equal(m.f[4], "ConfigMap");
    assert_string_equal(m.f[5], key);
    assert_string_equal(m.f[6], rv);
}

static void test_parse_topics(void **state)
{
    bool want[GD_NSHARDS + 1], all;
    assert_int_equal(inf_parse_topics("*", want, &all), GD_OK);
    assert_true(all && want[0] && want[255] && want[GD_NSHARDS]);
    assert_int_equal(inf_parse_topics("S003,S255,B", want, &all), GD_OK);
    assert_false(all);
    assert_true(want[3] && want[255] && want[GD_NSHARDS]);
    assert_false(want[4]);
    const char *bad[] = {"", "S256", "S3", "X", "S003,", ",S003", "S003,,B", "s003", "B,*",
                         "S0030"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(inf_parse_topics(bad[i], want, &all), GD_ERR_ARG);
    assert_int_equal(inf_parse_topics(NULL, want, &all), GD_ERR_ARG);
}

static void test_status_json(void **state)
{
    uint64_t ts[GD_NSHARDS + 1] = {0};
    ts[3] = 17;
    ts[GD_NSHARDS] = 12;
    char *s = inf_status_json("abc", 1042, true, ts);
    cJSON *o = gd_json_parse(s, strlen(s));
    assert_string_equal(gd_json_str_or(o, "instance", ""), "abc");
    assert_int_equal(gd_json_int_or(o, "seq", 0), 1042);
    assert_int_equal(gd_json_int_or(o, "topics.S003", 0), 17);
    assert_int_equal(gd_json_int_or(o, "topics.B", 0), 12);
    assert_null(gd_json_path(o, "topics.S004"));
    assert_true(cJSON_IsTrue(gd_json_path(o, "synced")));
    cJSON_Delete(o);
    free(s);
}

static void test_publish_sequences(void **state)
{
    fx *f = *state;
    uint64_t g0 = inf_pub_seq(f->p), b0 = inf_pub_topic_seq(f->p, GD_SHARD_BROADCAST);
    inf_obj **l = calloc(3, sizeof *l);
    l[0] = mk("ns/a", "10", 3);
    l[1] = mk("ns/b", "11", 3);
    l[2] = mk("n1", "12", GD_SHARD_BROADCAST);
    apply(f, INF_UPD_REPLACE, NULL, l, 3, "12");
    free(l);
    char seq[48];
    snprintf(seq, sizeof seq, "%llu:1", (unsigned long long)g0 + 1);
    expect(f, "S003", seq, "ADDED", "ns/a", "10");
    snprintf(seq, sizeof seq, "%llu:2", (unsigned long long)g0 + 2);
    expect(f, "S003", seq, "ADDED", "ns/b", "11");
    snprintf(seq, sizeof seq, "%llu:%llu", (unsigned long long)g0 + 3,
             (unsigned long long)b0 + 1);
    expect(f, "B", seq, "ADDED", "n1", "12");
    expect(f, "B", NULL, "SYNCED", "", "12");
    assert_int_equal(f->ctr.synced, 1);
    assert_int_equal(f->ctr.objects, 3);

    /* watch ADDED for a cached key is published as MODIFIED */
    apply(f, INF_UPD_UPSERT, mk("ns/a", "13", 3), NULL, 0, "13");
    expect(f, "S003", NULL, "MODIFIED", "ns/a", "13");
    assert_int_equal(inf_pub_topic_seq(f->p, 3), 3);
    /* shard move: DELETED on the old topic, then MODIFIED on the new one */
    apply(f, INF_UPD_UPSERT, mk("ns/b", "14", 5), NULL, 0, "14");
    expect(f, "S003", NULL, "DELETED", "ns/b", "11");
    expect(f, "S005", NULL, "MODIFIED", "ns/b", "14");
    assert_int_equal(inf_pub_topic_seq(f->p, 5), 1);
    /* DELETED carries the watch's final object; unknown keys are not published */
    apply(f, INF_UPD_DELETE, mk("n1", "15", GD_SHARD_BROADCAST), NULL, 0, "15");
    expect(f, "B", NULL, "DELETED", "n1", "15");
    apply(f, INF_UPD_DELETE, mk("ghost", "16", GD_SHARD_BROADCAST), NULL, 0, "16");
    apply(f, INF_UPD_RV, NULL, NULL, 0, "20");   /* bookmark */
    inf_pub_heartbeat(f->p);
    msg m;
    assert_int_equal(recv_msg(f->sub, &m, 1000), 8);
    assert_string_equal(m.f[3], "HEARTBEAT");
    assert_string_equal(m.f[6], "20");
    cJSON *st = gd_json_parse(m.f[7], strlen(m.f[7]));
    assert_int_equal(gd_json_int_or(st, "topics.S003", 0), 4);
    assert_int_equal(gd_json_int_or(st, "topics.S005", 0), 1);
    assert_int_equal(gd_json_int_or(st, "seq", 0), (int64_t)inf_pub_seq(f->p));
    assert_int_equal(gd_json_int_or(st, "topics.B", 0),
                     (int64_t)inf_pub_topic_seq(f->p, GD_SHARD_BROADCAST));
    cJSON_Delete(st);
    assert_int_equal(f->ctr.events_published, 6);   /* a shard move is one event */
    assert_int_equal(f->ctr.objects, 2);

    /* relist: unchanged a is silent, b vanished → DELETED, c new → ADDED */
    l = calloc(2, sizeof *l);
    l[0] = mk("ns/a", "13", 3);
    l[1] = mk("ns/c", "21", 3);
    apply(f, INF_UPD_REPLACE, NULL, l, 2, "21");
    free(l);
    expect(f, "S003", NULL, "ADDED", "ns/c", "21");
    expect(f, "S005", NULL, "DELETED", "ns/b", "14");
    expect(f, "B", NULL, "SYNCED", "", "21");
    assert_int_equal(recv_msg(f->sub, &m, 50), -1);
}

/* Sends a request on a DEALER (optionally REQ-style with an empty delimiter) and serves it. */
static void *request(fx *f, bool delim, const char *const *frames, int n)
{
    void *d = zmq_socket(f->zctx, ZMQ_DEALER);
    assert_int_equal(zmq_connect(d, "inproc://t.snap"), 0);
    if (delim)
        zmq_send(d, "", 0, ZMQ_SNDMORE);
    for (int i = 0; i < n; i++)
        zmq_send(d, frames[i], strlen(frames[i]), i + 1 < n ? ZMQ_SNDMORE : 0);
    for (int i = 0; i < 100 && inf_pub_serve_one(f->p) != GD_OK; i++)
        zmq_poll(NULL, 0, 5);
    return d;
}

static void test_snapshot(void **state)
{
    fx *f = *state;
    inf_obj **l = calloc(3, sizeof *l);
    l[0] = mk("ns/a", "10", 3);
    l[1] = mk("ns/b", "11", 7);
    l[2] = mk("n1", "12", GD_SHARD_BROADCAST);
    apply(f, INF_UPD_REPLACE, NULL, l, 3, "12");
    free(l);

    const char *req[] = {"GDI1", "SNAPSHOT", "S003,B"};
    void *d = request(f, false, req, 3);
    msg m;
    int objs = 0;
    bool seen_a = false, seen_n1 = false;
    for (;;) {
        assert_true(recv_msg(d, &m, 1000) > 0);
        assert_string_equal(m.f[0], "GDI1");
        if (!strcmp(m.f[1], "END"))
            break;
        assert_string_equal(m.f[1], "OBJ");
        assert_int_equal(m.n, 6);
        objs++;
        if (!strcmp(m.f[2], "ns/a")) {
            seen_a = true;
            assert_string_equal(m.f[3], "10");
            assert_string_equal(m.f[5], "S003");
            assert_non_null(strstr(m.f[4], "\"resourceVersion\":\"10\""));
        }
        if (!strcmp(m.f[2], "n1")) {
            seen_n1 = true;
            assert_string_equal(m.f[5], "B");
        }
    }
    assert_int_equal(objs, 2);
    assert_true(seen_a && seen_n1);
    assert_int_equal(m.n, 6);
    char seq[24];
    snprintf(seq, sizeof seq, "%llu", (unsigned long long)inf_pub_seq(f->p));
    assert_string_equal(m.f[2], seq);
    cJSON *ts = gd_json_parse(m.f[3], strlen(m.f[3]));
    assert_int_equal(gd_json_int_or(ts, "S003", -1), 1);
    assert_int_equal(gd_json_int_or(ts, "B", -1),
                     (int64_t)inf_pub_topic_seq(f->p, GD_SHARD_BROADCAST));
    assert_null(gd_json_path(ts, "S007"));        /* not requested */
    cJSON_Delete(ts);
    assert_string_equal(m.f[4], "1");
    cJSON *st = gd_json_parse(m.f[5], strlen(m.f[5]));
    assert_int_equal(strlen(gd_json_str_or(st, "instance", "")), 16);
    cJSON_Delete(st);
    zmq_close(d);

    /* all topics, REQ-style envelope: the delimiter comes back; a requested empty topic
     * reports 0 */
    const char *req2[] = {"GDI1", "SNAPSHOT", "*"};
    d = request(f, true, req2, 3);
    objs = 0;
    for (;;) {
        assert_true(recv_msg(d, &m, 1000) > 0);
        assert_string_equal(m.f[0], "");
        if (!strcmp(m.f[2], "END"))
            break;
        objs++;
    }
    assert_int_equal(objs, 3);
    zmq_close(d);
    const char *req3[] = {"GDI1", "SNAPSHOT", "S009"};
    d = request(f, false, req3, 3);
    assert_true(recv_msg(d, &m, 1000) > 0);
    assert_string_equal(m.f[1], "END");
    assert_string_equal(m.f[3], "{\"S009\":0}");
    zmq_close(d);
    assert_int_equal(f->ctr.snapshots, 3);

    /* errors: bad version, unknown command, bad topic list, no frames after identity */
    const char *bad1[] = {"GDI9", "SNAPSHOT", "*"};
    const char *bad2[] = {"GDI1", "DANCE"};
    const char *bad3[] = {"GDI1", "SNAPSHOT", "S1,Q"};
    const char *const *bads[] = {bad1, bad2, bad3};
    int nb[] = {3, 2, 3};
    for (int i = 0; i < 3; i++) {
        d = request(f, false, bads[i], nb[i]);
        assert_true(recv_msg(d, &m, 1000) > 0);
        assert_string_equal(m.f[1], "ERROR");
        zmq_close(d);
    }
}

/* HEARTBEAT request: a HEARTBEAT goes out on topic B at once (no loop runs here, so no
 * periodic one can), and the answer names its global seq; also with a REQ envelope. */
static void test_heartbeat_request(void **state)
{
    fx *f = *state;
    for (int delim = 0; delim <= 1; delim++) {
        uint64_t g0 = inf_pub_seq(f->p), b0 = inf_pub_topic_seq(f->p, GD_SHARD_BROADCAST);
        const char *req[] = {"GDI1", "HEARTBEAT"};
        void *d = request(f, delim, req, 2);
        msg m;
        assert_int_equal(recv_msg(d, &m, 1000), 3 + delim);
        char want[32];
        snprintf(want, sizeof want, "%llu", (unsigned long long)g0 + 1);
        assert_string_equal(m.f[delim + 0], "GDI1");
        assert_string_equal(m.f[delim + 1], "HEARTBEAT");
        assert_string_equal(m.f[delim + 2], want);
        zmq_close(d);
        char seq[48];
        snprintf(seq, sizeof seq, "%llu:%llu", (unsigned long long)g0 + 1,
                 (unsigned long long)b0 + 1);
        expect(f, "B", seq, "HEARTBEAT", "", "");
        assert_int_equal(inf_pub_seq(f->p), g0 + 1);
    }
}

/* HEARTBEAT requests inside the gap share the heartbeat the first one published: one
 * message on topic B, and every answer names its global seq, whatever was published on
 * other topics since (a subscriber only needs proof its subscription is live). */
static void test_heartbeat_request_shared(void **state)
{
    fx *f = *state;
    uint64_t g0 = inf_pub_seq(f->p), b0 = inf_pub_topic_seq(f->p, GD_SHARD_BROADCAST);
    char want[32];
    snprintf(want, sizeof want, "%llu", (unsigned long long)g0 + 1);
    const char *req[] = {"GDI1", "HEARTBEAT"};
    for (int i = 0; i < 5; i++) {
        if (i == 3) {               /* an event between requests does not end the sharing */
            inf_obj **l = calloc(1, sizeof *l);
            l[0] = mk("ns/a", "10", 3);
            apply(f, INF_UPD_REPLACE, NULL, l, 1, "10");
            free(l);
        }
        void *d = request(f, i % 2, req, 2);
        msg m;
        assert_int_equal(recv_msg(d, &m, 1000), 3 + i % 2);
        assert_string_equal(m.f[i % 2 + 1], "HEARTBEAT");
        assert_string_equal(m.f[i % 2 + 2], want);
        zmq_close(d);
    }
    assert_int_equal(inf_pub_topic_seq(f->p, GD_SHARD_BROADCAST), b0 + 2);  /* + SYNCED */
    char seq[48];
    snprintf(seq, sizeof seq, "%llu:%llu", (unsigned long long)g0 + 1, (unsigned long long)b0 + 1);
    expect(f, "B", seq, "HEARTBEAT", "", "");
}

static void test_stats(void **state)
{
    fx *f = *state;
    inf_obj **l = calloc(1, sizeof *l);
    l[0] = mk("ns/a", "10", 3);
    apply(f, INF_UPD_REPLACE, NULL, l, 1, "10");
    free(l);
    atomic_store(&f->ctr.last_rv, 10);
    atomic_store(&f->ctr.relists, 2);
    const char *req[] = {"GDI1", "STATS"};
    void *d = request(f, false, req, 2);
    msg m;
    assert_int_equal(recv_msg(d, &m, 1000), 3);
    assert_string_equal(m.f[1], "STATS");
    zmq_close(d);
    /* the frame is capped at 512 bytes in recv_msg; check the full text directly */
    char *t = inf_counters_render(&f->ctr, "Con\"fig\nMap");
    assert_non_null(strstr(t, "godis_informer_objects{kind=\"ConfigMap\"} 1\n"));
    assert_non_null(strstr(t, "godis_informer_relists_total{kind=\"ConfigMap\"} 2\n"));
    assert_non_null(strstr(t, "godis_informer_last_resource_version{kind=\"ConfigMap\"} 10\n"));
    assert_non_null(strstr(t, "godis_informer_synced{kind=\"ConfigMap\"} 1\n"));
    assert_non_null(strstr(t, "# TYPE godis_informer_events_published_total counter\n"));
    free(t);
}

static void *run_pub(void *arg) { return (void *)(intptr_t)inf_pub_run(arg); }

/* inf_pub_wake makes the wake-up fd readable and ends the loop's poll at once (not at its
 * next timer, 1 s away); an update frees what it holds. */
static void test_wake_and_update_destroy(void **state)
{
    fx *f = *state;
    zmq_pollitem_t pi = {.fd = f->p->wake_fd, .events = ZMQ_POLLIN};
    assert_int_equal(zmq_poll(&pi, 1, 0), 0);
    inf_pub_wake(f->p);
    assert_int_equal(zmq_poll(&pi, 1, 0), 1);
    uint64_t n;
    assert_int_equal(read(f->p->wake_fd, &n, sizeof n), (ssize_t)sizeof n);
    assert_int_equal(zmq_poll(&pi, 1, 0), 0);     /* drained: no longer readable */
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, run_pub, f->p), 0);
    f->stop = 1;
    inf_pub_wake(f->p);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_nsec += 700 * 1000000L;
    if (dl.tv_nsec >= 1000000000L) { dl.tv_sec++; dl.tv_nsec -= 1000000000L; }
    void *rc;
    assert_int_equal(pthread_timedjoin_np(th, &rc, &dl), 0);
    assert_int_equal((gd_err)(intptr_t)rc, GD_OK);
    inf_update *it = calloc(1, sizeof *it);
    it->obj = mk("x", "1", 1);
    it->nitems = 1;
    it->items = calloc(1, sizeof *it->items);
    it->items[0] = mk("y", "1", 1);
    inf_update_destroy(&it);
    assert_null(it);
    inf_update_destroy(&it);                       /* NULL: nothing */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_topics),
        cmocka_unit_test(test_status_json),
        cmocka_unit_test_setup_teardown(test_publish_sequences, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heartbeat_request, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heartbeat_request_shared, setup_shared, teardown),
        cmocka_unit_test_setup_teardown(test_stats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wake_and_update_destroy, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
