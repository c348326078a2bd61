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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_groups_and_labels),
        cmocka_unit_test(test_label_escaping_and_empty),
        cmocka_unit_test(test_informer_synced_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
