/* test_manager_control.c — GDW1 on the manager's ROUTER with real DEALER peers over
 * inproc: HELLO checks (identity must be w<index>-<pid> and match the frames, the manager
 * must accept it), messages from peers that never said HELLO, malformed frames answered
 * with ERROR and counted, REVOKED/PONG delivered, ASSIGN/REVOKE/LEASE/PING/STOP framing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "gd_log.h"
#include <string.h>
#include <zmq.h>
#include "../../manager/control.h"
#include "../../manager/shards.h"

static void *zctx;
static char ep[32];
static int hellos, revokeds, pongs, last_n;
static bool accept_hello = true;
static char last_pending[256], last_metrics[256];

static bool h_hello(void *ud, int index, int pid) { (void)ud; (void)index; (void)pid; hellos++; return accept_hello; }
static void h_revoked(void *ud, int index, uint64_t seq, const int *shards, int n, const char *p)
{
    (void)ud; (void)index; (void)seq; (void)shards;
    revokeds++;
    last_n = n;
    snprintf(last_pending, sizeof last_pending, "%s", p);
}
static void h_pong(void *ud, int index, uint64_t seq, const char *m, size_t len)
{
    (void)ud; (void)index; (void)seq;
    pongs++;
    snprintf(last_metrics, sizeof last_metrics, "%.*s", (int)len, m);
}

static void *peer(const char *id)
{
    void *s = zmq_socket(zctx, ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(s, ZMQ_ROUTING_ID, id, strlen(id));
    assert_int_equal(zmq_connect(s, ep), 0);
    return s;
}

static void say(void *s, int n, ...)
{
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        const char *f = va_arg(ap, const char *);
        zmq_send(s, f, strlen(f), i + 1 < n ? ZMQ_SNDMORE : 0);
    }
    va_end(ap);
}

/* Lets the ROUTER see what was sent, then dispatches. */
static int pump(mgr_control *c)
{
    zmq_pollitem_t it = {mgr_control_socket(c), 0, ZMQ_POLLIN, 0};
    zmq_poll(&it, 1, 200);
    return mgr_control_dispatch(c);
}

/* Reads one message on the peer: frames joined by '|'. */
static void hear(void *s, char *out, size_t cap)
{
    zmq_pollitem_t it = {s, 0, ZMQ_POLLIN, 0};
    out[0] = '\0';
    if (zmq_poll(&it, 1, 500) <= 0) return;
    int more = 1;
    size_t o = 0;
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        zmq_msg_recv(&m, s, 0);
        more = zmq_msg_more(&m);
        int k = snprintf(out + o, cap - o, "%s%.*s", o ? "|" : "", (int)zmq_msg_size(&m), (char *)zmq_msg_data(&m));
        if (k > 0 && (size_t)k < cap - o) o += (size_t)k;
        zmq_msg_close(&m);
    }
}

static mgr_control *control(void)
{
    mgr_control_handlers h = {h_hello, h_revoked, h_pong, NULL};
    hellos = revokeds = pongs = 0;
    accept_hello = true;
    static int n;
    snprintf(ep, sizeof ep, "inproc://ctl%d", ++n);
    mgr_control *c = mgr_control_new(zctx, ep, &h, NULL);
    assert_non_null(c);
    return c;
}

static void test_hello_and_messages(void **st)
{
    (void)st;
    mgr_control *c = control();
    void *w = peer("w1-4242");
    char got[512];
    say(w, 4, "GDW1", "HELLO", "1", "4242");
    pump(c);
    assert_int_equal(hellos, 1);
    assert_true(mgr_control_connected(c, 1));
    assert_true(mgr_control_last_heard(c, 1) > 0);

    int shards[] = {3, 17, 200};
    uint64_t seq;
    assert_int_equal(mgr_control_assign(c, 1, shards, 3, "{\"godiscluster\":[\"ns/a\"]}", &seq), GD_OK);
    hear(w, got, sizeof got);
    assert_string_equal(got, "GDW1|ASSIGN|1|3,17,200|{\"godiscluster\":[\"ns/a\"]}");
    assert_int_equal(mgr_control_revoke(c, 1, shards, 2, NULL), GD_OK);
    hear(w, got, sizeof got);
    assert_string_equal(got, "GDW1|REVOKE|2|3,17");
    assert_int_equal(mgr_control_lease(c, 1, 1795348989796LL), GD_OK);
    hear(w, got, sizeof got);
    assert_string_equal(got, "GDW1|LEASE|3|1795348989796");
    assert_int_equal(mgr_control_ping(c, 1), GD_OK);
    hear(w, got, sizeof got);
    assert_string_equal(got, "GDW1|PING|4");
    assert_int_equal(mgr_control_stop(c, 1, 5), GD_OK);
    hear(w, got, sizeof got);
    assert_string_equal(got, "GDW1|STOP|5|5");
    assert_int_equal(mgr_control_ping(c, 2), GD_ERR_ARG);    /* no connection */

    say(w, 6, "GDW1", "REVOKED", "2", "3,17", "{}", "");   /* one frame too many */
    pump(c);
    hear(w, got, sizeof got);
    assert_non_null(strstr(got, "GDW1|ERROR|REVOKED"));
    assert_int_equal(revokeds, 0);
    say(w, 5, "GDW1", "REVOKED", "2", "3,17", "{\"godis\":[\"ns/a-1\"]}");
    pump(c);
    assert_int_equal(revokeds, 1);
    assert_int_equal(last_n, 2);
    assert_string_equal(last_pending, "{\"godis\":[\"ns/a-1\"]}");
    say(w, 5, "GDW1", "REVOKED", "2", "3,,17", "{}");
    pump(c);
    hear(w, got, sizeof got);
    assert_string_equal(got, "GDW1|ERROR|REVOKED: bad shard list");
    say(w, 4, "GDW1", "PONG", "4", "x_total 1\n");
    pump(c);
    assert_int_equal(pongs, 1);
    assert_string_equal(last_metrics, "x_total 1\n");
    say(w, 3, "GDW1", "PONG", "x");
    pump(c);
    hear(w, got, sizeof got);
    assert_non_null(strstr(got, "ERROR|PONG"));
    say(w, 3, "GDW1", "DANCE", "1");
    pump(c);
    hear(w, got, sizeof got);
    assert_string_equal(got, "GDW1|ERROR|unknown command");
    assert_int_equal(mgr_control_rejected(c), 4);
    mgr_control_forget(c, 1);
    assert_false(mgr_control_connected(c, 1));
    zmq_close(w);
    mgr_control_destroy(&c);
    assert_null(c);
}

static void test_hostile_peers(void **st)
{
    (void)st;
    mgr_control *c = control();
    char got[512];
    void *a = peer("w1-100");
    say(a, 4, "GDW1", "HELLO", "2", "100");             /* index does not match identity */
    pump(c);
    hear(a, got, sizeof got);
    assert_non_null(strstr(got, "ERROR|HELLO"));
    say(a, 4, "GDW1", "HELLO", "1", "101");             /* pid does not match */
    pump(c);
    hear(a, got, sizeof got);
    assert_non_null(strstr(got, "ERROR|HELLO"));
    say(a, 3, "GDW1", "PONG", "1");                      /* never said HELLO */
    pump(c);
    hear(a, got, sizeof got);
    assert_string_equal(got, "GDW1|ERROR|no HELLO from this peer");
    say(a, 2, "GDI1", "HELLO");                          /* wrong protocol */
    pump(c);
    hear(a, got, sizeof got);
    assert_non_null(strstr(got, "ERROR|expected GDW1"));
    void *b = peer("x9-1");                              /* identity not w<i>-<pid> */
    say(b, 4, "GDW1", "HELLO", "9", "1");
    pump(c);
    hear(b, got, sizeof got);
    assert_non_null(strstr(got, "ERROR|HELLO"));
    void *d = peer("w99-5");                             /* index out of range */
    say(d, 4, "GDW1", "HELLO", "99", "5");
    pump(c);
    hear(d, got, sizeof got);
    assert_non_null(strstr(got, "ERROR|HELLO"));
    accept_hello = false;                                /* a worker the manager did not start */
    void *e = peer("w3-77");
    say(e, 4, "GDW1", "HELLO", "3", "77");
    pump(c);
    hear(e, got, sizeof got);
    assert_non_null(strstr(got, "not a worker this manager started"));
    assert_false(mgr_control_connected(c, 3));
    void *f = peer("w4-78");                             /* 9 frames: too many */
    accept_hello = true;
    say(f, 9, "GDW1", "HELLO", "4", "78", "a", "b", "c", "d", "e");
    pump(c);
    hear(f, got, sizeof got);
    assert_non_null(strstr(got, "too many frames"));
    assert_false(mgr_control_connected(c, 4));
    assert_int_equal(mgr_control_rejected(c), 8);
    zmq_close(a); zmq_close(b); zmq_close(d); zmq_close(e); zmq_close(f);
    mgr_control_destroy(&c);
}

int main(void)
{
    gd_log_init("test", GD_LOG_ERROR + 1, 0, 2);
    zctx = zmq_ctx_new();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hello_and_messages),
        cmocka_unit_test(test_hostile_peers),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    zmq_ctx_term(zctx);
    return rc;
}
