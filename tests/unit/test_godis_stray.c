/* test_godis_stray.c — a stray Godis (one of ours that status.members does not list) is
 * stopped and removed by the GodisCluster controller (godis_reconcile_cluster), but only
 * once the API server's own copy of the GodisCluster does not name it either: the cache's
 * copy may lag the Godis objects (a worker that took the shard over, an informer relisting),
 * and a member just added — meet done, Godis created — must never be stopped and deleted
 * unforgotten. The cache is a fixed set of objects (members 1-3 recorded, Godis c-4 of ours
 * running); the API server is the scriptable httpd helper, so every request is asserted. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <string.h>
#include "client_fixture.h"
#include "godis_fake.h"
#include "../support/godis_fake_children.h"
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

/* status fields after "members": the cache has 1-3 and nextID 4 */
#define CLUSTER_FMT                                                                          \
    "{\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"GodisCluster\",\"metadata\":{"   \
    "\"name\":\"c\",\"namespace\":\"ns\",\"uid\":\"cu\",\"resourceVersion\":\"%s\","         \
    "\"generation\":1},\"spec\":{\"replicas\":3},\"status\":{\"status\":\"%s\","             \
    "\"members\":[1,2,3],\"nextID\":%d,\"scaleOutID\":%d,\"scaleInID\":0,"                   \
    "\"initialReplicas\":3,\"observedGeneration\":1}}"

static cJSON *cluster(const char *rv, const char *phase, int next_id, int scale_out_id)
{
    char buf[1024];
    snprintf(buf, sizeof buf, CLUSTER_FMT, rv, phase, next_id, scale_out_id);
    return cJSON_Parse(buf);
}

static int cm_members = 3;          /* members the ConfigMap lists */

static const cJSON *fake_get(godis_env *e, const char *kind, const char *ns, const char *name)
{
    (void)e;
    (void)ns;
    if (!strcmp(kind, "GodisCluster")) return !strcmp(name, "c") ? cluster("5", "Running", 4, 0) : NULL;
    if (!strcmp(kind, "ConfigMap")) return gfc_child(kind, name, cm_members, 4);
    if (!strcmp(kind, "Godis")) {
        int64_t id = gf_id_of(name);
        return id >= 1 && id <= 4 ? gf_godis(id, id <= 3) : NULL;
    }
    return gfc_child(kind, name, 3, 4);
}

static const cJSON *fake_list(godis_env *e, const char *kind, const char *ns, const char *k,
                        const char *v)
{
    (void)e;
    (void)ns;
    return gf_list(kind, k, v, 4, 3, true);
}

static void on_wrote(godis_env *e, const char *kind, const char *ns, const char *name,
                     const char *rv, bool deleted)
{
    (void)kind, (void)ns, (void)name, (void)rv, (void)deleted;
    (*(int *)e->ud)++;
}

static godis_result reconcile(client_fixture *f, int *writes)
{
    godis_env e = {.client = f->c, .get = fake_get, .list = fake_list, .wrote = on_wrote,
                   .ud = writes, .godis_port = 6379, .godis_timeout_ms = 100,
                   .node_notready_grace_ms = 40000};
    return godis_reconcile_cluster(&e, "ns/c");
}

/* One reconcile of the cache above, the API server answering its first request (the GET of
 * the GodisCluster, asserted) with this status; the writes recorded go to *writes. */
static godis_result reconcile_live(client_fixture *f, const char *phase, int next_id,
                                   int scale_out_id, int *writes)
{
    cJSON *live = cluster("6", phase, next_id, scale_out_id);
    char *body = cJSON_PrintUnformatted(live);
    client_push(f->h, 200, NULL, body);
    free(body);
    cJSON_Delete(live);
    *writes = 0;
    godis_result r = reconcile(f, writes);
    const httpd_req *q = httpd_request(f->h, 0);
    assert_non_null(q);
    assert_string_equal(q->method, "GET");
    assert_non_null(strstr(q->uri, "/namespaces/ns/godisclusters/c"));
    return r;
}

/* The API server says member 4 is being added (scaleOutID 4): the cache lags, 4 is no stray.
 * Nothing is written; the reconcile looks again later. */
static void test_member_being_added_is_left_alone(void **state)
{
    client_fixture *f = *state;
    int writes;
    godis_result r = reconcile_live(f, "Scaling", 5, 4, &writes);
    assert_int_equal(r.kind, GODIS_REQUEUE_AFTER);
    assert_int_equal(r.err, GD_OK);
    assert_int_equal(httpd_request_count(f->h), 1);
    assert_int_equal(writes, 0);
}

/* The API server agrees with the cache: 4 is a stray. Its ReplicaSet goes to 0 (marked
 * retired) before its pod is deleted. */
static void test_confirmed_stray_is_stopped(void **state)
{
    client_fixture *f = *state;
    int writes;
    godis_result r = reconcile_live(f, "Running", 4, 0, &writes);
    assert_int_equal(r.err, GD_OK);
    assert_true(httpd_request_count(f->h) >= 3);
    const httpd_req *q = httpd_request(f->h, 1);
    assert_string_equal(q->method, "PUT");
    assert_non_null(strstr(q->uri, "/namespaces/ns/replicasets/c-4"));
    cJSON *b = cJSON_Parse(q->body);
    assert_int_equal(gd_json_int_or(b, "spec.replicas", 1), 0);
    assert_non_null(gd_meta_annotation(b, GODIS_ANN_RETIRED));
    cJSON_Delete(b);
    q = httpd_request(f->h, 2);
    assert_string_equal(q->method, "DELETE");
    assert_non_null(strstr(q->uri, "/namespaces/ns/pods/c-4-x"));
    assert_int_equal(writes, 2);
}

/* The ConfigMap lists 1 and 2, the cache's status 1, 2 and 3: a ConfigMap to repair — unless
 * the cache lags. The API server's status is asked first: it says 1 and 2 (member 3 was
 * forgotten and removed meanwhile), so nothing is written, and member 3, forgotten, is never
 * listed again (the chaos campaign, seed 7: a manager that took the Lease over rewrote
 * ConfigMaps from its stale cache). When it agrees, the ConfigMap is repaired. */
static void test_configmap_repair_waits_for_a_lagging_cache(void **state)
{
    client_fixture *f = *state;
    cm_members = 2;
    client_push(f->h, 200, NULL,
                "{\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"GodisCluster\",\"metadata\":{"
                "\"name\":\"c\",\"namespace\":\"ns\",\"uid\":\"cu\",\"resourceVersion\":\"7\"},"
                "\"spec\":{\"replicas\":2},\"status\":{\"status\":\"Running\",\"members\":[1,2],"
                "\"nextID\":4,\"scaleOutID\":0,\"scaleInID\":0}}");
    int writes = 0;
    godis_result r = reconcile(f, &writes);
    assert_int_equal(r.kind, GODIS_REQUEUE_AFTER);
    assert_int_equal(writes, 0);
    assert_int_equal(httpd_request_count(f->h), 1);
    assert_string_equal(httpd_request(f->h, 0)->method, "GET");
    /* the API server agrees with the cache: repaired */
    cJSON *live = cluster("5", "Running", 4, 0);
    char *body = cJSON_PrintUnformatted(live);
    client_push(f->h, 200, NULL, body);
    free(body);
    cJSON_Delete(live);
    r = reconcile(f, &writes);
    cm_members = 3;
    bool put = false;
    for (int i = 1; i < httpd_request_count(f->h); i++)
        put |= !strcmp(httpd_request(f->h, i)->method, "PUT") &&
               strstr(httpd_request(f->h, i)->uri, "/configmaps/c-config") != NULL;
    assert_true(put);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_member_being_added_is_left_alone, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_confirmed_stray_is_stopped, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_configmap_repair_waits_for_a_lagging_cache, client_setup, client_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
