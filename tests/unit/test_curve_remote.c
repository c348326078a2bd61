/* test_curve_remote.c — the remote-worker half of GDW1 (docs/PROTOCOL.md §3.3) over a real
 * CURVE tcp:// socket on 127.0.0.1: the manager's control ROUTER bound with server keys and
 * the ZAP allow-list, a DEALER with an allowed key that says the remote HELLO, the remote
 * LEASE (echo of the worker's stamp, remaining capped and measured from when the stamp
 * arrived), a PONG that moves the stamp, and the worker's parsing of that LEASE. A DEALER
 * whose key is not on the list never reaches the manager's handlers. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <zmq.h>
#include "../../manager/control.h"
#include "../../worker/runtime/control.h"
#include "curve_fixture.h"
#include "gd_curve.h"
#include "gd_time.h"
#include "../support/test_wait.h"

#define CAP_MS 5000
/* Deadlines, not sleeps; stretched under valgrind (test_scaled_ms). */
#define WAIT_MS test_scaled_ms(5000)

static int hellos, pongs;
static char hello_name[64];
static bool h_hello(void *ud, int i, int pid) { (void)ud; (void)i; (void)pid; return false; }
static void h_revoked(void *ud, int i, uint64_t s, const int *sh, int n, const char *p)
{ (void)ud; (void)i; (void)s; (void)sh; (void)n; (void)p; }
static void h_pong(void *ud, int i, uint64_t s, const char *m, size_t l)
{ (void)ud; (void)i; (void)s; (void)m; (void)l; pongs++; }
static bool h_remote(void *ud, int i, const char *name)
{
    (void)ud;
    assert_true(i >= MGR_REMOTE_FIRST);
    hellos++;
    snprintf(hello_name, sizeof hello_name, "%s", name);
    return true;
}

typedef struct {
    void *zctx;
    gd_curve_zap *zap;
    mgr_control *c;
    char dir[64], ep[128];
    gd_curve_keys server, good, bad;
    void *peers[4];
    int npeers;
} fx;

static int setup(void **st)
{
    fx *f = calloc(1, sizeof *f);
    cf_setup(f->dir, sizeof f->dir, "test-curve-remote", &f->server, &f->good, &f->bad);
    char allow[128];
    snprintf(allow, sizeof allow, "%s/allow", f->dir);
    FILE *o = fopen(allow, "w");
    assert_non_null(o);
    fprintf(o, "%s good\n", f->good.public_z85);
    fclose(o);
    f->zctx = zmq_ctx_new();
    assert_non_null(f->zap = gd_curve_zap_new(f->zctx, allow));
    mgr_control_handlers h = {h_hello, h_revoked, h_pong, h_remote};
    assert_non_null(f->c = mgr_control_new(f->zctx, "inproc://ctl-remote", &h, NULL));
    assert_int_equal(mgr_control_bind_remote(f->c, "tcp://127.0.0.1:*", &f->server, CAP_MS), GD_OK);
    size_t len = sizeof f->ep;
    assert_int_equal(zmq_getsockopt(mgr_control_socket(f->c), ZMQ_LAST_ENDPOINT, f->ep, &len), 0);
    hellos = pongs = 0;
    *st = f;
    return 0;
}

static int teardown(void **st)
{
    fx *f = *st;
    mgr_control_destroy(&f->c);
    cf_teardown(f->peers, f->npeers, &f->zap, f->zctx, f->dir);
    free(f);
    return 0;
}

static void *peer(fx *f, const gd_curve_keys *k, const char *id)
{
    void *s = zmq_socket(f->zctx, ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(s, ZMQ_ROUTING_ID, id, strlen(id));
    assert_int_equal(gd_curve_connect(s, f->ep, k, f->server.public_z85), GD_OK);
    f->peers[f->npeers++] = s;
    return s;
}

static void say(void *s, int n, ...)
{
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        const char *fr = va_arg(ap, const char *);
        zmq_send(s, fr, strlen(fr), i < n - 1 ? ZMQ_SNDMORE : 0);
    }
    va_end(ap);
}

/* Waits up to 50 ms for the control socket and dispatches what came. It always waits, so a
 * caller looping on state another thread changes (the ZAP handler's counts) never spins: under
 * valgrind, which runs one thread at a time, a spinning loop starved the ZAP thread past the
 * deadline (CI on cf26d54). */
static void pump_once(fx *f)
{
    zmq_pollitem_t it = {mgr_control_socket(f->c), 0, ZMQ_POLLIN, 0};
    zmq_poll(&it, 1, 50);
    mgr_control_dispatch(f->c);
}

/* Dispatches until *counter reaches want or WAIT_MS pass. */
static void pump_until(fx *f, int *counter, int want)
{
    int64_t end = gd_mono_ms() + WAIT_MS;
    while (*counter < want && gd_mono_ms() < end) pump_once(f);
}

/* One message on the peer as frames. */
static int hear(void *s, gdw_frame *fr, zmq_msg_t *m, int cap)
{
    zmq_pollitem_t it = {s, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, WAIT_MS) <= 0) return 0;
    int n = 0, more = 1;
    while (more && n < cap) {
        zmq_msg_init(&m[n]);
        zmq_msg_recv(&m[n], s, 0);
        more = zmq_msg_more(&m[n]);
        fr[n].data = zmq_msg_data(&m[n]);
        fr[n].len = zmq_msg_size(&m[n]);
        n++;
    }
    return n;
}

static void close_all(zmq_msg_t *m, int n) { for (int i = 0; i < n; i++) zmq_msg_close(&m[i]); }

static void test_remote_hello_and_lease(void **st)
{
    fx *f = *st;
    void *w = peer(f, &f->good, "r42-0000abcd");
    char stamp[24];
    int64_t t0 = gd_mono_ms();
    snprintf(stamp, sizeof stamp, "%lld", (long long)t0);
    say(w, 6, "GDW1", "HELLO", "remote", "42", stamp, "pod-a");
    pump_until(f, &hellos, 1);
    assert_int_equal(hellos, 1);
    assert_string_equal(hello_name, "pod-a");
    assert_true(mgr_control_is_remote(f->c, MGR_REMOTE_FIRST));
    assert_false(mgr_control_is_remote(f->c, 0));

    /* a deadline far away: remaining is capped; one close by: remaining follows it */
    assert_int_equal(mgr_control_lease(f->c, MGR_REMOTE_FIRST, gd_wall_ms() + 60000), GD_OK);
    gdw_frame fr[8];
    zmq_msg_t m[8];
    int n = hear(w, fr, m, 8);
    gdw_msg msg;
    char why[200];
    assert_int_equal(gdw_parse(fr, n, &msg, why, sizeof why), GD_OK);
    close_all(m, n);
    assert_int_equal(msg.type, GDW_LEASE);
    assert_true(msg.has_remote);
    assert_int_equal(msg.echo_ms, t0);
    assert_true(msg.remaining_ms <= CAP_MS && msg.remaining_ms > CAP_MS - 1000);
    int64_t end1 = mgr_control_remote_lease_end(f->c, MGR_REMOTE_FIRST);
    assert_true(end1 > gd_mono_ms() && end1 <= gd_mono_ms() + CAP_MS);

    assert_int_equal(mgr_control_lease(f->c, MGR_REMOTE_FIRST, gd_wall_ms() + 2000), GD_OK);
    n = hear(w, fr, m, 8);
    assert_int_equal(gdw_parse(fr, n, &msg, why, sizeof why), GD_OK);
    close_all(m, n);
    /* the property that matters: on the worker's clock (here the test's, whose stamp t0
     * was taken before the manager received it) the lease ends no later than the manager's
     * deadline, however long the message took */
    assert_true(msg.echo_ms + msg.remaining_ms <= gd_mono_ms() + 2000);
    assert_true(msg.remaining_ms >= 2000);

    /* a PONG moves the stamp the next LEASE echoes */
    int64_t t1 = t0 + 777;
    snprintf(stamp, sizeof stamp, "%lld", (long long)t1);
    say(w, 5, "GDW1", "PONG", "1", "", stamp);
    pump_until(f, &pongs, 1);
    assert_int_equal(pongs, 1);
    assert_int_equal(mgr_control_lease(f->c, MGR_REMOTE_FIRST, gd_wall_ms() + 60000), GD_OK);
    n = hear(w, fr, m, 8);
    assert_int_equal(gdw_parse(fr, n, &msg, why, sizeof why), GD_OK);
    close_all(m, n);
    assert_int_equal(msg.echo_ms, t1);
    /* a lease already over is not sent at all */
    uint64_t rej = mgr_control_rejected(f->c);
    assert_int_equal(mgr_control_lease(f->c, MGR_REMOTE_FIRST, gd_wall_ms() - 1000), GD_OK);
    zmq_pollitem_t it = {w, 0, ZMQ_POLLIN, 0};
    assert_int_equal(zmq_poll(&it, 1, 100), 0);
    assert_int_equal(mgr_control_rejected(f->c), rej);
}

/* The remote PONG without its stamp, and a malformed remote HELLO, are refused. */
static void test_remote_malformed(void **st)
{
    fx *f = *st;
    void *w = peer(f, &f->good, "r43-00000001");
    say(w, 5, "GDW1", "HELLO", "remote", "43", "x1");
    int64_t end = gd_mono_ms() + WAIT_MS;
    while (mgr_control_rejected(f->c) == 0 && gd_mono_ms() < end) pump_once(f);
    assert_int_equal(hellos, 0);
    assert_true(mgr_control_rejected(f->c) >= 1);
}

/* A key that is not on the allow-list never gets a message through. */
static void test_remote_unknown_key(void **st)
{
    fx *f = *st;
    void *good = peer(f, &f->good, "r44-00000001"), *bad = peer(f, &f->bad, "r45-00000001");
    say(bad, 6, "GDW1", "HELLO", "remote", "45", "1", "intruder");
    say(good, 6, "GDW1", "HELLO", "remote", "44", "1", "pod-b");
    /* both handshakes decided: the good HELLO arrived, the bad key was refused (so its
     * HELLO can never arrive) */
    gd_curve_zap_stats s = {0};
    int64_t end = gd_mono_ms() + WAIT_MS;
    while ((hellos < 1 || s.refused < 1) && gd_mono_ms() < end) {
        pump_once(f);
        gd_curve_zap_get_stats(f->zap, &s);
    }
    mgr_control_dispatch(f->c);     /* anything already queued */
    assert_true(s.refused >= 1);
    assert_int_equal(hellos, 1);
    assert_string_equal(hello_name, "pod-b");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_remote_hello_and_lease, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remote_malformed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remote_unknown_key, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
