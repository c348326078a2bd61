/* test_godis_forget_memo.c — a forget that got +OK is not sent again by the same worker
 * (godis_forget_memo_*), the GodisCluster controller end to end against a fixed cache and
 * the scriptable httpd helper as the API server.
 *
 * The state: 2 -> 1, member 2 is the scaleInID, the ConfigMap still lists it and its
 * ReplicaSet still wants a pod — what the cache shows when `cluster forget 2` got +OK while
 * kube-apiserver was down, so that neither the ConfigMap record nor the stop went through
 * (chaos seed 21). Member 2 may be back from its WAL as a voter by then, and its campaigns
 * keep a second forget from committing: the chaos campaign saw that retry fail for minutes.
 * Remembered, the reconcile stops member 2 at once, without a second forget; not
 * remembered (another worker, or another cluster's uid), it sends the forget again — but
 * only once the API server answered just before (the stop must follow at once). The godis
 * port dialled is closed, so a forget that is sent fails and says so in an Event. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "client_fixture.h"
#include "godis_fake.h"
#include "../support/godis_fake_children.h"
#include "gd_json.h"
#include "godis_children.h"
#include "godis_client.h"
#include "godis_plan.h"
#include "godis_reconcile.h"
#include "godis_retire.h"

static bool no_configmap;           /* the ConfigMap was deleted meanwhile */

static const cJSON *fake_get(godis_env *e, const char *kind, const char *ns, const char *name)
{
    (void)e;
    (void)ns;
    int64_t id = gf_id_of(name);
    if (no_configmap && !strcmp(kind, "ConfigMap")) return NULL;
    if (!strcmp(kind, "GodisCluster") && !strcmp(name, "c"))
        return cJSON_Parse(
            "{\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"GodisCluster\",\"metadata\":{"
            "\"name\":\"c\",\"namespace\":\"ns\",\"uid\":\"cu\",\"resourceVersion\":\"5\","
            "\"generation\":2},\"spec\":{\"replicas\":1},\"status\":{\"status\":\"Scaling\","
            "\"members\":[1,2],\"nextID\":3,\"scaleOutID\":0,\"scaleInID\":2,"
            "\"initialReplicas\":2,\"observedGeneration\":2}}");
    if (!strcmp(kind, "Godis")) return id == 1 || id == 2 ? gf_godis(id, true) : NULL;
    return gfc_child(kind, name, 2, 2);
}

static const cJSON *fake_list(godis_env *e, const char *kind, const char *ns, const char *k,
                        const char *v)
{
    (void)e;
    (void)ns;
    return gf_list(kind, k, v, 2, 2, false);
}

static godis_result reconcile(client_fixture *f)
{
    setenv(GODIS_LOOPBACK_ENV, "1", 1);       /* the test environment: never ask DNS */
    unsetenv("GODIS_HOSTS_FILE");
    godis_env e = {.client = f->c, .get = fake_get, .list = fake_list,
                   .godis_port = gf_closed_port(), .godis_timeout_ms = 200,
                   .node_notready_grace_ms = 40000};
    return godis_reconcile_cluster(&e, "ns/c");
}

/* The reason of the first Event posted, or "" (a static buffer). */
static const char *first_event_reason(client_fixture *f)
{
    static char reason[64];
    reason[0] = '\0';
    for (int i = 0; i < httpd_request_count(f->h) && !reason[0]; i++) {
        const httpd_req *q = httpd_request(f->h, i);
        if (strcmp(q->method, "POST") || !strstr(q->uri, "/events")) continue;
        cJSON *ev = cJSON_Parse(q->body);
        snprintf(reason, sizeof reason, "%s", gd_json_str_or(ev, "reason", ""));
        cJSON_Delete(ev);
    }
    return reason;
}

static bool wrote_to(client_fixture *f, const char *method, const char *uri_part)
{
    for (int i = 0; i < httpd_request_count(f->h); i++) {
        const httpd_req *q = httpd_request(f->h, i);
        if (!strcmp(q->method, method) && strstr(q->uri, uri_part)) return true;
    }
    return false;
}

/* Nothing remembered for this cluster (only for another cluster's uid): the forget is sent
 * again — and fails here, on the closed port — and member 2 is not touched. */
static void test_not_remembered_forgets_again(void **state)
{
    client_fixture *f = *state;
    godis_forget_memo_note("another-cluster", 2);
    godis_result r = reconcile(f);
    assert_int_equal(r.kind, GODIS_ERROR);
    assert_string_equal(first_event_reason(f), "ForgetFailed");
    assert_false(wrote_to(f, "PUT", "/replicasets/c-2"));
    assert_false(wrote_to(f, "DELETE", "/pods/c-2-x"));
}

/* The ConfigMap is missing while the forget of member 2 has not gone through: it is rebuilt
 * from status.members (listing member 2), and the forget is sent next; member 2 is not
 * stopped. The rebuild used to leave the view with an empty member list, read as the
 * record of the forget: member 2 was stopped unforgotten (chaos seed 1, c07). */
static void test_configmap_rebuilt_then_forget_not_skipped(void **state)
{
    client_fixture *f = *state;
    no_configmap = true;
    const cJSON *live = fake_get(NULL, "GodisCluster", "ns", "c");   /* the API server agrees */
    char *body = cJSON_PrintUnformatted(live);
    client_push(f->h, 200, NULL, body);
    free(body);
    godis_drop(live);
    godis_result r = reconcile(f);
    no_configmap = false;
    assert_int_equal(r.kind, GODIS_ERROR);                  /* the forget, on the closed port */
    bool listed = false;
    for (int i = 0; i < httpd_request_count(f->h); i++) {
        const httpd_req *q = httpd_request(f->h, i);
        if (strcmp(q->method, "POST") || !strstr(q->uri, "/configmaps")) continue;
        cJSON *cm = cJSON_Parse(q->body);
        listed = strstr(gd_json_str_or(cm, "data.initial-cluster", ""), "2@http://") != NULL;
        cJSON_Delete(cm);
    }
    assert_true(listed);
    assert_false(wrote_to(f, "PUT", "/replicasets/c-2"));
    assert_false(wrote_to(f, "DELETE", "/pods/c-2-x"));
    bool forget_failed = false;
    for (int i = 0; i < httpd_request_count(f->h); i++) {
        const httpd_req *q = httpd_request(f->h, i);
        forget_failed |= !strcmp(q->method, "POST") && strstr(q->uri, "/events") &&
                         strstr(q->body, "ForgetFailed");
    }
    assert_true(forget_failed);
}

/* The API server does not answer just before the forget: member 2 runs (its vote commits
 * its removal), and the stop that must follow a forget at once would fail, so no forget is
 * sent (no Event about one) and the reconcile is retried. */
static void test_api_down_no_forget(void **state)
{
    client_fixture *f = *state;
    client_push(f->h, 503, NULL, "{\"kind\":\"Status\",\"reason\":\"ServiceUnavailable\"}");
    godis_result r = reconcile(f);
    assert_int_equal(r.kind, GODIS_ERROR);
    assert_int_equal(httpd_request_count(f->h), 1);
    const httpd_req *q = httpd_request(f->h, 0);
    assert_string_equal(q->method, "GET");
    assert_non_null(strstr(q->uri, "/namespaces/ns/replicasets/c-2"));
}

/* This worker heard +OK for member 2: the reconcile stops it (its ReplicaSet to 0, marked
 * retired, then its pod deleted) and sends no forget. */
static void test_remembered_stops_without_forgetting_again(void **state)
{
    client_fixture *f = *state;
    godis_forget_memo_note("cu", 2);
    godis_result r = reconcile(f);
    assert_int_equal(r.err, GD_OK);
    assert_true(httpd_request_count(f->h) >= 2);
    const httpd_req *q = httpd_request(f->h, 0);
    assert_string_equal(q->method, "PUT");
    assert_non_null(strstr(q->uri, "/namespaces/ns/replicasets/c-2"));
    cJSON *b = cJSON_Parse(q->body);
    assert_int_equal(gd_json_int_or(b, "spec.replicas", 1), 0);
    assert_non_null(gd_meta_annotation(b, GODIS_ANN_RETIRED));
    cJSON_Delete(b);
    q = httpd_request(f->h, 1);
    assert_string_equal(q->method, "DELETE");
    assert_non_null(strstr(q->uri, "/namespaces/ns/pods/c-2-x"));
    assert_string_not_equal(first_event_reason(f), "ForgetFailed");
    assert_false(wrote_to(f, "PUT", "/configmaps/c-config"));   /* the record comes next */
}

/* The memo keeps the latest GODIS_FORGET_MEMO forgets, per cluster uid and id. */
static void test_memo_table(void **state)
{
    (void)state;
    godis_forget_memo_note("u-first", 7);
    assert_true(godis_forget_memo_has("u-first", 7));
    assert_false(godis_forget_memo_has("u-first", 8));
    assert_false(godis_forget_memo_has("u-other", 7));
    assert_false(godis_forget_memo_has(NULL, 7));
    godis_forget_memo_note("u-first", 7);                      /* no second entry */
    for (int i = 0; i < GODIS_FORGET_MEMO; i++) {
        char uid[32];
        snprintf(uid, sizeof uid, "u-%d", i);
        godis_forget_memo_note(uid, 1);
    }
    assert_false(godis_forget_memo_has("u-first", 7));         /* the oldest went */
    assert_true(godis_forget_memo_has("u-0", 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_not_remembered_forgets_again, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_configmap_rebuilt_then_forget_not_skipped, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_api_down_no_forget, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_remembered_stops_without_forgetting_again, client_setup, client_teardown),
        cmocka_unit_test(test_memo_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
