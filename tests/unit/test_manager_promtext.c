/* test_manager_promtext.c — merging Prometheus expositions for the manager's /metrics:
 * families regrouped, HELP/TYPE once, a source label injected, junk lines dropped. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "../../manager/promtext.h"
#include "../../manager/statsclient.h"
#include <stdio.h>
#include <unistd.h>
#include <zmq.h>
#include "gd_time.h"

static void test_merge_groups_and_labels(void **st)
{
    (void)st;
    mgr_promtext *p = mgr_promtext_new();
    const char *w = "# HELP workqueue_depth Current depth.\n# TYPE workqueue_depth gauge\n"
                    "workqueue_depth{name=\"godis\"} 3\n"
                    "# TYPE controller_runtime_reconcile_time_seconds histogram\n"
                    "controller_runtime_reconcile_time_seconds_bucket{le=\"0.1\"} 1\n"
                    "controller_runtime_reconcile_time_seconds_sum 0.05\n"
                    "controller_runtime_reconcile_time_seconds_count 1\n"
                    "plain_metric 7\n";
    mgr_promtext_add(p, w, strlen(w), "worker", "0");
    mgr_promtext_add(p, w, strlen(w), "worker", "1");
    const char *own = "# TYPE up gauge\nup 1\r\n\nnot a sample\n{bad} 1\nno_value\n# random comment\n";
    mgr_promtext_add(p, own, strlen(own), NULL, NULL);
    char *out = mgr_promtext_render(p);
    assert_non_null(out);
    /* HELP and TYPE once per family, samples of both workers together after them */
    const char *t = strstr(out, "# TYPE workqueue_depth gauge\n"
                                "workqueue_depth{worker=\"0\",name=\"godis\"} 3\n"
                                "workqueue_depth{worker=\"1\",name=\"godis\"} 3\n");
    assert_non_null(t);
    assert_null(strstr(t + 1, "# TYPE workqueue_depth"));
    assert_non_null(strstr(out, "controller_runtime_reconcile_time_seconds_sum{worker=\"0\"} 0.05\n"
                                "controller_runtime_reconcile_time_seconds_count{worker=\"0\"} 1\n"
                                "controller_runtime_reconcile_time_seconds_bucket{worker=\"1\",le=\"0.1\"} 1\n"));
    assert_non_null(strstr(out, "plain_metric{worker=\"0\"} 7\nplain_metric{worker=\"1\"} 7\n"));
    assert_non_null(strstr(out, "# TYPE up gauge\nup 1\n"));
    assert_null(strstr(out, "not a sample"));
    assert_null(strstr(out, "{bad}"));
    assert_null(strstr(out, "no_value"));
    assert_null(strstr(out, "random comment"));
    free(out);
    mgr_promtext_destroy(&p);
    assert_null(p);
}

static void test_label_escaping_and_empty(void **st)
{
    (void)st;
    mgr_promtext *p = mgr_promtext_new();
    char *out = mgr_promtext_render(p);
    assert_string_equal(out, "");
    free(out);
    mgr_promtext_add(p, "x{} 1\n", 6, "src", "a\"b\\c\nd");
    out = mgr_promtext_render(p);
    assert_string_equal(out, "x{src=\"a\\\"b\\\\c\\nd\"} 1\n");
    free(out);
    mgr_promtext_add(p, NULL, 5, NULL, NULL);       /* ignored */
    mgr_promtext_destroy(&p);
}

static void test_informer_synced_parse(void **st)
{
    (void)st;
    assert_true(mgr_stats_text_synced("godis_informer_synced{kind=\"Pod\"} 1\n"));
    assert_true(mgr_stats_text_synced("# TYPE x gauge\ngodis_informer_synced 1\n"));
    assert_false(mgr_stats_text_synced("godis_informer_synced{kind=\"Pod\"} 0\n"));
    assert_false(mgr_stats_text_synced("godis_informer_synced_total 1\n"));    /* another metric */
    assert_false(mgr_stats_text_synced("x godis_informer_synced 1\n"));        /* not at line start */
    assert_false(mgr_stats_text_synced("godis_informer_synced{kind=\"Pod\" 1\n")); /* unclosed */
    assert_false(mgr_stats_text_synced(""));
}

/* The manager's loop sleeps until mgr_stats_due_ms: it must name the next request while
 * idle, the end of the wait while one is in flight, and the next request again after the
 * answer (200 ms while unsynced, the period once synced); a tick in the interval's last
 * quarter already sends, so the informers' requests go out together. */
static int64_t tick_until_sent(mgr_stats *s)
{
    for (int i = 0; i < 200; i++) {
        int64_t before = gd_mono_ms();
        mgr_stats_tick(s);
        if (mgr_stats_due_ms(s) > before + 2500) return before;   /* in flight */
        usleep(10000);
    }
    return -1;
}

static void answer(void *router, const char *text)
{
    zmq_msg_t id, part;
    zmq_msg_init(&id);
    assert_true(zmq_msg_recv(&id, router, 0) > 0);             /* the DEALER's identity */
    for (bool more = zmq_msg_more(&id); more;) {               /* GDI1, STATS */
        zmq_msg_init(&part);
        assert_true(zmq_msg_recv(&part, router, 0) >= 0);
        more = zmq_msg_more(&part);
        zmq_msg_close(&part);
    }
    zmq_msg_send(&id, router, ZMQ_SNDMORE);
    zmq_send(router, "GDI1", 4, ZMQ_SNDMORE);
    zmq_send(router, "STATS", 5, ZMQ_SNDMORE);
    zmq_send(router, text, strlen(text), 0);
}

static void dispatch_until_answered(mgr_stats *s)
{
    for (int i = 0; i < 200 && mgr_stats_due_ms(s) > gd_mono_ms() + 2500; i++) {
        zmq_pollitem_t it = {mgr_stats_socket(s), 0, ZMQ_POLLIN, 0};
        zmq_poll(&it, 1, 10);
        mgr_stats_dispatch(s);
    }
}

static void test_stats_due(void **st)
{
    (void)st;
    char dir[] = "/tmp/gd-stats-due-XXXXXX", ep[128];
    assert_non_null(mkdtemp(dir));
    snprintf(ep, sizeof ep, "ipc://%s/snap", dir);
    void *ctx = zmq_ctx_new();
    mgr_stats *s = mgr_stats_new(ctx, ep, 2000);
    assert_non_null(s);
    assert_true(mgr_stats_due_ms(s) <= gd_mono_ms());          /* the first request: now */
    int64_t t0 = gd_mono_ms();
    mgr_stats_tick(s);                                          /* nobody there: again soon */
    int64_t due = mgr_stats_due_ms(s);
    assert_true(due > t0 && due <= gd_mono_ms() + 100);

    void *router = zmq_socket(ctx, ZMQ_ROUTER);
    int zero = 0;
    zmq_setsockopt(router, ZMQ_LINGER, &zero, sizeof zero);
    assert_int_equal(zmq_bind(router, ep), 0);
    int64_t sent = tick_until_sent(s);
    assert_true(sent > 0);
    due = mgr_stats_due_ms(s);                                  /* the wait's end */
    assert_true(due > sent + 3000 && due <= gd_mono_ms() + 3001);
    answer(router, "godis_informer_synced 1\n");
    dispatch_until_answered(s);
    assert_true(mgr_stats_synced(s));
    due = mgr_stats_due_ms(s);                                  /* unsynced when sent: 200 ms */
    assert_true(due >= sent + 200 && due <= gd_mono_ms() + 200);

    while (gd_mono_ms() < due) usleep(5000);
    sent = tick_until_sent(s);
    assert_true(sent >= due);
    answer(router, "godis_informer_synced 1\n");
    dispatch_until_answered(s);
    due = mgr_stats_due_ms(s);                                  /* synced when sent: the period */
    assert_true(due >= sent + 2000 && due <= gd_mono_ms() + 2000);
    mgr_stats_tick(s);                                          /* not yet: nothing sent */
    assert_int_equal(mgr_stats_due_ms(s), due);
    while (gd_mono_ms() < due - 400) usleep(10000);             /* inside the last quarter */
    mgr_stats_tick(s);                                          /* early is as good */
    assert_true(mgr_stats_due_ms(s) > due + 2500);

    mgr_stats_destroy(&s);
    zmq_close(router);
    zmq_ctx_term(ctx);
    char sock[160];
    snprintf(sock, sizeof sock, "%s/snap", dir);
    unlink(sock);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_groups_and_labels),
        cmocka_unit_test(test_label_escaping_and_empty),
        cmocka_unit_test(test_informer_synced_parse),
        cmocka_unit_test(test_stats_due),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
