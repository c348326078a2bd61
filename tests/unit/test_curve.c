/* test_curve.c — CURVE keys, the tcp:// policy and the ZAP allow-list handler
 * (common/proto/gd_curve*.c, docs/PROTOCOL.md §3.2) over real libzmq sockets on
 * 127.0.0.1: an allowed client receives, a client with an unknown key receives nothing and is
 * counted as refused, the allow-list is re-read when the file changes (a bad update keeps the
 * previous list; a Secret volume's ..data swap counts as a change), and one socket serves plain ipc:// and CURVE tcp:// side by side.
 *
 * Waits are on socket-monitor events (handshake succeeded / failed auth) or on messages,
 * each with a deadline: no fixed sleeps. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <zmq.h>
#include "curve_fixture.h"
#include "../../tools/node-agent/agent.h"   /* na_atomic_write: a Secret volume's layout */
#include "gd_curve.h"
#include "gd_time.h"

#define DEADLINE_MS 10000

typedef struct {
    char dir[64];
    char allow[128];
    void *zctx;
    gd_curve_zap *zap;
    gd_curve_keys server, a, b;
    void *socks[8];
    int nsocks;
} fx;

static void write_allow(fx *f, const char *text)
{
    /* write + rename, as a Secret update swaps the file: a new inode */
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s.tmp", f->allow);
    FILE *o = fopen(tmp, "w");
    assert_non_null(o);
    fputs(text, o);
    fclose(o);
    assert_int_equal(rename(tmp, f->allow), 0);
}

static void *sock(fx *f, int type)
{
    void *s = zmq_socket(f->zctx, type);
    assert_non_null(s);
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    f->socks[f->nsocks++] = s;
    return s;
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    cf_setup(f->dir, sizeof f->dir, "test-curve", &f->server, &f->a, &f->b);
    snprintf(f->allow, sizeof f->allow, "%s/allow", f->dir);
    char text[200];
    snprintf(text, sizeof text, "# workers\n%s worker-a\n", f->a.public_z85);
    write_allow(f, text);
    f->zctx = zmq_ctx_new();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    cf_teardown(f->socks, f->nsocks, &f->zap, f->zctx, f->dir);
    free(f);
    return 0;
}

/* A PAIR reading the socket's monitor events. */
static void *monitor(fx *f, void *s, const char *name)
{
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://mon-%s", name);
    assert_int_equal(zmq_socket_monitor(s, ep, ZMQ_EVENT_ALL), 0);
    void *m = sock(f, ZMQ_PAIR);
    assert_int_equal(zmq_connect(m, ep), 0);
    return m;
}

/* Waits for one of the two events; returns the one seen, 0 at the deadline. */
static int wait_event(void *mon, int want1, int want2)
{
    int64_t end = gd_mono_ms() + DEADLINE_MS;
    while (gd_mono_ms() < end) {
        int timeout = 200;
        zmq_setsockopt(mon, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
        uint8_t ev[6];
        char addr[256];
        if (zmq_recv(mon, ev, sizeof ev, 0) < 0)
            continue;
        zmq_recv(mon, addr, sizeof addr, 0);
        uint16_t e;
        memcpy(&e, ev, 2);
        if (e == want1 || e == want2)
            return e;
    }
    return 0;
}

static void last_endpoint(void *s, char *out, size_t cap)
{
    size_t len = cap;
    assert_int_equal(zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, out, &len), 0);
}

/* The reload tests' server: a ROUTER on 127.0.0.1 behind the ZAP handler of allow-list
 * file `allow`; tcp gets its endpoint. */
static void *allow_router(fx *f, const char *allow, char *tcp, size_t cap)
{
    f->zap = gd_curve_zap_new(f->zctx, allow);
    assert_non_null(f->zap);
    void *router = sock(f, ZMQ_ROUTER);
    assert_int_equal(gd_curve_bind(router, "tcp://127.0.0.1:*", &f->server), GD_OK);
    last_endpoint(router, tcp, cap);
    return router;
}

/* A new DEALER (monitor `name`) connects to tcp with client keys k: the handshake's outcome,
 * ZMQ_EVENT_HANDSHAKE_SUCCEEDED or ZMQ_EVENT_HANDSHAKE_FAILED_AUTH (0 at the deadline);
 * the socket in *dealer when not NULL. */
static int handshake(fx *f, const char *tcp, const gd_curve_keys *k, const char *name,
                     void **dealer)
{
    void *d = sock(f, ZMQ_DEALER), *m = monitor(f, d, name);
    assert_int_equal(gd_curve_connect(d, tcp, k, f->server.public_z85), GD_OK);
    if (dealer)
        *dealer = d;
    return wait_event(m, ZMQ_EVENT_HANDSHAKE_SUCCEEDED, ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
}

static void test_keys_files(void **state)
{
    fx *f = *state;
    char why[300];
    assert_true(gd_curve_valid_z85(f->a.public_z85));
    assert_false(gd_curve_valid_z85("short"));
    assert_int_equal(gd_curve_write_pair(f->dir, "srv", &f->server, why, sizeof why), GD_OK);
    /* never overwrites a key */
    assert_int_equal(gd_curve_write_pair(f->dir, "srv", &f->a, why, sizeof why), GD_ERR_IO);
    char path[160];
    snprintf(path, sizeof path, "%s/srv.key", f->dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    gd_curve_keys k;
    assert_int_equal(gd_curve_load_key(path, true, &k, why, sizeof why), GD_OK);
    assert_string_equal(k.public_z85, f->server.public_z85);   /* derived from the secret */
    assert_string_equal(k.secret_z85, f->server.secret_z85);
    snprintf(path, sizeof path, "%s/srv.pub", f->dir);
    assert_int_equal(gd_curve_load_key(path, false, &k, why, sizeof why), GD_OK);
    assert_string_equal(k.public_z85, f->server.public_z85);
    assert_string_equal(k.secret_z85, "");
    /* bad input: named in the message */
    assert_int_equal(gd_curve_load_key(f->allow, true, &k, why, sizeof why), GD_ERR_PARSE);
    assert_non_null(strstr(why, f->allow));
    snprintf(path, sizeof path, "%s/none", f->dir);
    assert_int_equal(gd_curve_load_key(path, true, &k, why, sizeof why), GD_ERR_IO);
    assert_non_null(strstr(why, "No such file"));
}

static void test_allow_parse(void **state)
{
    fx *f = *state;
    static gd_curve_allow al;
    char why[200], text[400];
    snprintf(text, sizeof text, "\n# c\n#another\n  %s  worker-a #trailing\n%s\n", f->a.public_z85,
             f->b.public_z85);
    assert_int_equal(gd_curve_allow_parse(text, &al, why, sizeof why), GD_OK);
    assert_int_equal(al.n, 2);
    uint8_t bin[32];
    zmq_z85_decode(bin, f->a.public_z85);
    assert_string_equal(gd_curve_allow_find(&al, bin), "worker-a");
    zmq_z85_decode(bin, f->b.public_z85);
    assert_string_equal(gd_curve_allow_find(&al, bin), "");
    zmq_z85_decode(bin, f->server.public_z85);
    assert_null(gd_curve_allow_find(&al, bin));
    snprintf(text, sizeof text, "%s\nnot-a-key\n", f->a.public_z85);
    assert_int_equal(gd_curve_allow_parse(text, &al, why, sizeof why), GD_ERR_PARSE);
    assert_non_null(strstr(why, "line 2"));
    /* z85 has '#' in its alphabet (never first in a group): a key containing one is a key */
    gd_curve_keys k;
    bool seen = false;
    for (int i = 0; i < 5000 && !seen; i++) {
        assert_int_equal(gd_curve_keygen(&k), GD_OK);
        assert_int_not_equal(k.public_z85[0], '#');
        if (!strchr(k.public_z85, '#'))
            continue;
        snprintf(text, sizeof text, "# leading comment\n%s named\n", k.public_z85);
        assert_int_equal(gd_curve_allow_parse(text, &al, why, sizeof why), GD_OK);
        assert_int_equal(al.n, 1);
        zmq_z85_decode(bin, k.public_z85);
        assert_string_equal(gd_curve_allow_find(&al, bin), "named");
        seen = true;
    }
    assert_true(seen);
    snprintf(text, sizeof text, "%s a b\n", f->a.public_z85);
    assert_int_equal(gd_curve_allow_parse(text, &al, why, sizeof why), GD_ERR_PARSE);
    assert_non_null(strstr(why, "line 1"));
}

/* No plaintext tcp://: a tcp endpoint without keys is a configuration error; ipc is not. */
static void test_no_plain_tcp(void **state)
{
    fx *f = *state;
    void *s = sock(f, ZMQ_PUB);
    assert_int_equal(gd_curve_bind(s, "tcp://127.0.0.1:*", NULL), GD_ERR_CONFIG);
    gd_curve_keys pub_only = f->server;
    pub_only.secret_z85[0] = '\0';
    assert_int_equal(gd_curve_bind(s, "tcp://127.0.0.1:*", &pub_only), GD_ERR_CONFIG);
    void *c = sock(f, ZMQ_SUB);
    assert_int_equal(gd_curve_connect(c, "tcp://127.0.0.1:5", NULL, f->server.public_z85),
                     GD_ERR_CONFIG);
    assert_int_equal(gd_curve_connect(c, "tcp://127.0.0.1:5", &f->a, "bad"), GD_ERR_CONFIG);
    char ep[128];
    snprintf(ep, sizeof ep, "ipc://%s/plain", f->dir);
    assert_int_equal(gd_curve_bind(s, ep, NULL), GD_OK);
    assert_true(gd_curve_needed("tcp://x:1"));
    assert_false(gd_curve_needed(ep));
}

/* Publishes numbered messages until sub got n of them (PUB/SUB joins late); returns the
 * number it published. */
static int publish_until(void *pub, void *sub, int n)
{
    int sent = 0, got = 0;
    int64_t end = gd_mono_ms() + DEADLINE_MS;
    while (got < n && gd_mono_ms() < end) {
        char m[32];
        snprintf(m, sizeof m, "m-%d", sent++);
        zmq_send(pub, m, strlen(m), 0);
        zmq_pollitem_t it = {.socket = sub, .events = ZMQ_POLLIN};
        while (zmq_poll(&it, 1, got ? 0 : 20) > 0) {
            char buf[32];
            if (zmq_recv(sub, buf, sizeof buf, ZMQ_DONTWAIT) >= 0)
                got++;
        }
    }
    assert_true(got >= n);
    return sent;
}

static void assert_nothing(void *s)
{
    char buf[32];
    assert_int_equal(zmq_recv(s, buf, sizeof buf, ZMQ_DONTWAIT), -1);
}

/* An allowed key receives; an unknown key is refused by ZAP and receives nothing. One
 * socket also serves a plain ipc:// subscriber bound before the CURVE options. */
static void test_unknown_key_receives_nothing(void **state)
{
    fx *f = *state;
    f->zap = gd_curve_zap_new(f->zctx, f->allow);
    assert_non_null(f->zap);
    void *pub = sock(f, ZMQ_PUB);
    char ipc[128], tcp[128];
    snprintf(ipc, sizeof ipc, "ipc://%s/pub", f->dir);
    assert_int_equal(gd_curve_bind(pub, ipc, &f->server), GD_OK);
    assert_int_equal(gd_curve_bind(pub, "tcp://127.0.0.1:*", &f->server), GD_OK);
    last_endpoint(pub, tcp, sizeof tcp);

    void *good = sock(f, ZMQ_SUB), *bad = sock(f, ZMQ_SUB), *local = sock(f, ZMQ_SUB);
    void *mgood = monitor(f, good, "good"), *mbad = monitor(f, bad, "bad");
    for (int i = 0; i < f->nsocks; i++)
        if (f->socks[i] == good || f->socks[i] == bad || f->socks[i] == local)
            zmq_setsockopt(f->socks[i], ZMQ_SUBSCRIBE, "", 0);
    assert_int_equal(gd_curve_connect(good, tcp, &f->a, f->server.public_z85), GD_OK);
    assert_int_equal(gd_curve_connect(bad, tcp, &f->b, f->server.public_z85), GD_OK);
    assert_int_equal(gd_curve_connect(local, ipc, NULL, NULL), GD_OK);
    assert_int_equal(wait_event(mgood, ZMQ_EVENT_HANDSHAKE_SUCCEEDED,
                                ZMQ_EVENT_HANDSHAKE_FAILED_AUTH), ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
    assert_int_equal(wait_event(mbad, ZMQ_EVENT_HANDSHAKE_SUCCEEDED,
                                ZMQ_EVENT_HANDSHAKE_FAILED_AUTH), ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
    publish_until(pub, good, 50);
    publish_until(pub, local, 50);
    assert_nothing(bad);
    gd_curve_zap_stats st;
    gd_curve_zap_get_stats(f->zap, &st);
    assert_true(st.accepted >= 1);
    assert_true(st.refused >= 1);
    assert_int_equal(st.keys, 1);
}

/* The list is re-read when the file changes: b is refused, then allowed after the update;
 * a broken update keeps the previous list (a still connects) and is counted. */
static void test_allow_reload(void **state)
{
    fx *f = *state;
    char tcp[128];
    void *router = allow_router(f, f->allow, tcp, sizeof tcp);
    assert_int_equal(handshake(f, tcp, &f->b, "b1", NULL), ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);

    char text[200];
    snprintf(text, sizeof text, "%s worker-a\n%s worker-b\n", f->a.public_z85, f->b.public_z85);
    write_allow(f, text);
    void *b2;
    assert_int_equal(handshake(f, tcp, &f->b, "b2", &b2), ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
    assert_int_equal(zmq_send(b2, "hello", 5, 0), 5);
    int timeout = DEADLINE_MS;
    zmq_setsockopt(router, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    char id[64], body[16];
    assert_true(zmq_recv(router, id, sizeof id, 0) > 0);
    assert_int_equal(zmq_recv(router, body, sizeof body, 0), 5);

    write_allow(f, "garbage\n");
    assert_int_equal(handshake(f, tcp, &f->a, "a1", NULL), ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
    gd_curve_zap_stats st;
    gd_curve_zap_get_stats(f->zap, &st);
    assert_int_equal(st.keys, 2);
    assert_int_equal(st.reloads, 2);
    assert_int_equal(st.reload_errors, 1);
    assert_true(st.refused >= 1);
}

/* The allow-list as the manager reads it in a pod: a file of a Secret volume, which the
 * kubelet (and the node agent here, na_atomic_write) updates by swapping DIR/..data to a new
 * version while DIR/allow stays a link into it. The path's file changes identity, so the
 * handler re-reads it: b, refused before, is let in after the swap. */
static void test_allow_reload_secret_volume(void **state)
{
    fx *f = *state;
    char vol[128], path[160], text[200], err[256];
    bool changed = false;
    snprintf(vol, sizeof vol, "%s/volume", f->dir);
    snprintf(path, sizeof path, "%s/allow", vol);
    snprintf(text, sizeof text, "%s worker-a\n", f->a.public_z85);
    na_payload_file pf = {.path = "allow", .data = text, .len = strlen(text), .mode = 0444};
    assert_int_equal(na_atomic_write(vol, &pf, 1, &changed, err, sizeof err), GD_OK);
    char tcp[128];
    allow_router(f, path, tcp, sizeof tcp);
    assert_int_equal(handshake(f, tcp, &f->b, "b1", NULL), ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);

    snprintf(text, sizeof text, "%s worker-a\n%s worker-b\n", f->a.public_z85, f->b.public_z85);
    pf.len = strlen(text);
    assert_int_equal(na_atomic_write(vol, &pf, 1, &changed, err, sizeof err), GD_OK);
    assert_true(changed);
    assert_int_equal(handshake(f, tcp, &f->b, "b2", NULL), ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
    gd_curve_zap_stats st;
    gd_curve_zap_get_stats(f->zap, &st);
    assert_int_equal(st.keys, 2);
}

/* A client that pins the wrong server key never completes the handshake. */
static void test_wrong_server_key(void **state)
{
    fx *f = *state;
    f->zap = gd_curve_zap_new(f->zctx, f->allow);
    void *pub = sock(f, ZMQ_PUB), *good = sock(f, ZMQ_SUB), *impostor = sock(f, ZMQ_SUB);
    char tcp[128];
    assert_int_equal(gd_curve_bind(pub, "tcp://127.0.0.1:*", &f->server), GD_OK);
    last_endpoint(pub, tcp, sizeof tcp);
    zmq_setsockopt(good, ZMQ_SUBSCRIBE, "", 0);
    zmq_setsockopt(impostor, ZMQ_SUBSCRIBE, "", 0);
    assert_int_equal(gd_curve_connect(good, tcp, &f->a, f->server.public_z85), GD_OK);
    assert_int_equal(gd_curve_connect(impostor, tcp, &f->a, f->b.public_z85), GD_OK);
    publish_until(pub, good, 20);
    assert_nothing(impostor);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_keys_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_allow_parse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_plain_tcp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_key_receives_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_allow_reload, setup, teardown),
        cmocka_unit_test_setup_teardown(test_allow_reload_secret_volume, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_server_key, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
