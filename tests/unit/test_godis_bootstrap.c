/* test_godis_bootstrap.c — a new GodisCluster's bootstrap in one reconcile
 * (godis_reconcile_cluster): record the members in status, then — on the API server's
 * answer, without waiting for the cache — the ConfigMap and the initial members' Godis.
 * The intent must be persisted before any side effect: a refused status write creates
 * nothing. The cache is a fixed set of objects; the API server is the scriptable httpd
 * helper, so the requests are asserted in order, with their bodies. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include "client_fixture.h"
#include "godis_children.h"
#include "godis_plan.h"
#include "godis_status.h"
#include "godis_write.h"
#include "godis_status_check.h"
#include "godis_input.h"
#include "godis_place.h"
#include "godis_reconcile.h"
#include "godis_retire.h"
#include "gd_json.h"

#define CLUSTER_META                                                                         \
    "\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"GodisCluster\",\"metadata\":{"   \
    "\"name\":\"c\",\"namespace\":\"ns\",\"uid\":\"cu\",\"resourceVersion\":\"%s\","         \
    "\"generation\":1},\"spec\":{\"replicas\":3}"

static const cJSON *fake_get(godis_env *e, const char *kind, const char *ns, const char *name)
{
    char buf[512];
    if (strcmp(kind, "GodisCluster") != 0 || strcmp(name, "c") != 0) return NULL;
    snprintf(buf, sizeof buf, "{" CLUSTER_META "}", "1");   /* new: no status yet */
    return cJSON_Parse(buf);
}

static const cJSON *fake_list(godis_env *e, const char *kind, const char *ns, const char *k,
                        const char *v)
{
    return cJSON_CreateArray();                               /* no children yet */
}

typedef struct {
    int writes;
} write_log;

static void on_wrote(godis_env *e, const char *kind, const char *ns, const char *name,
                     const char *rv, bool deleted)
{
    ((write_log *)e->ud)->writes++;
}

static godis_result reconcile(client_fixture *f, write_log *wl)
{
    godis_env e = {.client = f->c, .get = fake_get, .list = fake_list, .wrote = on_wrote,
                   .ud = wl, .godis_port = 6379, .godis_timeout_ms = 100,
                   .node_notready_grace_ms = 40000};
    return godis_reconcile_cluster(&e, "ns/c");
}

static cJSON *body_of(client_fixture *f, int i)
{
    const httpd_req *r = httpd_request(f->h, i);
    assert_non_null(r);
    return cJSON_Parse(r->body);
}

static void test_bootstrap_in_one_reconcile(void **state)
{
    client_fixture *f = *state;
    char written[1024];
    snprintf(written, sizeof written,
             "{" CLUSTER_META ",\"status\":{\"status\":\"Initializing\",\"members\":[1,2,3],"
             "\"nextID\":4,\"initialReplicas\":3,\"replicas\":3,\"readyReplicas\":0,"
             "\"scaleOutID\":0,\"scaleInID\":0,\"observedGeneration\":1}}", "2");
    client_push(f->h, 200, NULL, written);   /* the status write's answer; then echoes */
    write_log wl = {0};
    godis_result r = reconcile(f, &wl);
    /* the phase Running (all created) waits for the members to serve: no member has a
     * pod yet, so it is left for later (test_godis_status_writes) */
    assert_int_equal(r.kind, GODIS_REQUEUE_AFTER);
    assert_true(r.after_ms > 0 && r.after_ms <= GODIS_PROGRESS_WRITE_MS);
    assert_int_equal(r.err, GD_OK);

    /* 0: the intent, 1: its Event, 2: the ConfigMap, 3..5: the members */
    assert_int_equal(httpd_request_count(f->h), 6);
    const httpd_req *q = httpd_request(f->h, 0);
    assert_string_equal(q->method, "PUT");
    assert_non_null(strstr(q->uri, "/namespaces/ns/godisclusters/c/status"));
    cJSON *b = body_of(f, 0);
    assert_int_equal(cJSON_GetArraySize(gd_json_path(b, "status.members")), 3);
    assert_string_equal(gd_json_str_or(b, "status.status", ""), "Initializing");
    cJSON_Delete(b);
    assert_non_null(strstr(httpd_request(f->h, 1)->uri, "/events"));

    q = httpd_request(f->h, 2);
    assert_string_equal(q->method, "POST");
    assert_non_null(strstr(q->uri, "/namespaces/ns/configmaps"));
    b = body_of(f, 2);
    assert_string_equal(gd_meta_name(b), "c-config");
    /* owned by the cluster: the uid must survive the swap to the written object */
    const cJSON *owner = cJSON_GetArrayItem(gd_json_path(b, "metadata.ownerReferences"), 0);
    assert_string_equal(gd_json_str_or(owner, "uid", ""), "cu");
    const char *ic = gd_json_str_or(b, "data.initial-cluster", "");
    assert_non_null(strstr(ic, "1@http://c-1-endpoint.ns.svc.cluster.local:6300"));
    assert_non_null(strstr(ic, "3@http://c-3-endpoint.ns.svc.cluster.local:6300"));
    cJSON_Delete(b);

    for (int i = 3; i < 6; i++) {
        q = httpd_request(f->h, i);
        assert_string_equal(q->method, "POST");
        assert_non_null(strstr(q->uri, "/namespaces/ns/godises"));
        b = body_of(f, i);
        char want[16];
        snprintf(want, sizeof want, "c-%d", i - 2);
        assert_string_equal(gd_meta_name(b), want);
        bool preferred = false;
        assert_int_equal(gd_json_bool(b, "spec.preferred", &preferred), GD_OK);
        assert_true(preferred);
        owner = cJSON_GetArrayItem(gd_json_path(b, "metadata.ownerReferences"), 0);
        assert_string_equal(gd_json_str_or(owner, "uid", ""), "cu");
        cJSON_Delete(b);
    }
    /* every write recorded for read-your-writes (status, ConfigMap, 3 Godis; not the Event) */
    assert_int_equal(wl.writes, 5);
}

static void test_refused_intent_creates_nothing(void **state)
{
    client_fixture *f = *state;
    client_push(f->h, 409, NULL,
                "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                "\"reason\":\"Conflict\",\"code\":409,\"message\":\"the object has been modified\"}");
    write_log wl = {0};
    godis_result r = reconcile(f, &wl);
    assert_int_not_equal(r.kind, GODIS_DONE);
    assert_int_equal(httpd_request_count(f->h), 1);   /* the refused status write only */
    assert_string_equal(httpd_request(f->h, 0)->method, "PUT");
    assert_int_equal(wl.writes, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bootstrap_in_one_reconcile, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_refused_intent_creates_nothing, client_setup, client_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
