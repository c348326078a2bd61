/* test_godis_status_writes.c — how many GodisCluster status writes a reconcile makes
 * (issue 23: a 100 x 3 converge wrote ~13 statuses per cluster). The rollout's counts and
 * revisions ride on the planner's write (one write per reconcile, not two), and a change of
 * counts and messages alone waits until GODIS_PROGRESS_WRITE_MS after the cluster's last
 * status write, while a decisive change (a condition turning) goes at once. The cache is a
 * Running cluster c with members 1-3 whose pods turn Ready one by one; the API server is
 * the scriptable httpd helper (it echoes each write, which becomes the cache's copy). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include "client_fixture.h"
#include "godis_fake.h"
#include "../support/godis_fake_children.h"
#include "godis_status.h"
#include "godis_reconcile.h"
#include "gd_json.h"

static cJSON *cached;      /* the cache's GodisCluster */
static int nready;         /* members 1..nready have a Ready pod, the others a pod not Ready */

static cJSON *fake_get(godis_env *e, const char *kind, const char *ns, const char *name)
{
    (void)e;
    (void)ns;
    if (!strcmp(kind, "GodisCluster")) return !strcmp(name, "c") ? cJSON_Duplicate(cached, 1) : NULL;
    if (!strcmp(kind, "Godis")) {
        int64_t id = gf_id_of(name);
        return id >= 1 && id <= 3 ? gf_godis(id, true) : NULL;
    }
    return gfc_child(kind, name, 3, 3);
}

static cJSON *fake_list(godis_env *e, const char *kind, const char *ns, const char *k,
                        const char *v)
{
    (void)e;
    (void)ns;
    cJSON *l = gf_list(kind, k, v, 3, 3, true);
    if (!strcmp(kind, "Pod")) {
        cJSON *p;
        cJSON_ArrayForEach(p, l)
            if (gf_id_of(gd_json_str_or(p, "metadata.labels.node-name", "")) > nready)
                gd_json_set(cJSON_GetArrayItem(gd_json_path(p, "status.conditions"), 0), "status",
                            cJSON_CreateString("False"));
    }
    return l;
}

/* One reconcile; returns the status writes it made, the last one becoming the cache's copy. */
static int reconcile(client_fixture *f, godis_result *r)
{
    godis_env e = {.client = f->c, .get = fake_get, .list = fake_list, .godis_port = gf_closed_port(),
                   .godis_timeout_ms = 100, .node_notready_grace_ms = 40000};
    int before = httpd_request_count(f->h), n = 0;
    *r = godis_reconcile_cluster(&e, "ns/c");
    for (int i = before; i < httpd_request_count(f->h); i++) {
        const httpd_req *q = httpd_request(f->h, i);
        if (strcmp(q->method, "PUT") || !strstr(q->uri, "/godisclusters/c/status")) continue;
        n++;
        cJSON_Delete(cached);
        cached = cJSON_Parse(q->body);
    }
    return n;
}

static const char *condition(const char *type, const char *field)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, gd_json_path(cached, "status.conditions"))
        if (!strcmp(gd_json_str_or(c, "type", ""), type)) return gd_json_str_or(c, field, "");
    return "";
}

static void test_counts_batched_then_coalesced(void **state)
{
    client_fixture *f = *state;
    godis_status_memo_reset();
    /* just initialised: members recorded, no pod Ready, no counts of the rollout yet */
    cached = cJSON_Parse(
        "{\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"GodisCluster\",\"metadata\":{"
        "\"name\":\"c\",\"namespace\":\"ns\",\"uid\":\"cu\",\"resourceVersion\":\"5\","
        "\"generation\":1},\"spec\":{\"replicas\":3},\"status\":{\"status\":\"Running\","
        "\"members\":[1,2,3],\"replicas\":3,\"nextID\":4,\"scaleOutID\":0,\"scaleInID\":0,"
        "\"initialReplicas\":3,\"observedGeneration\":1,\"readyReplicas\":0}}");
    godis_result r;
    /* member 1 Ready: the rollout's counts and the planner's readiness, one write */
    nready = 1;
    assert_int_equal(reconcile(f, &r), 1);
    assert_int_equal(gd_json_int_or(cached, "status.readyReplicas", -1), 1);
    assert_non_null(gd_json_path(cached, "status.updatedReplicas"));
    assert_non_null(gd_json_path(cached, "status.updateRevision"));
    assert_string_equal(condition("Degraded", "status"), "True");
    /* member 2 Ready right after: counts and messages only, so nothing yet; the reconcile
     * asks to come back when the write is due */
    nready = 2;
    assert_int_equal(reconcile(f, &r), 0);
    assert_int_equal(r.kind, GODIS_REQUEUE_AFTER);
    assert_true(r.after_ms > 0 && r.after_ms <= GODIS_PROGRESS_WRITE_MS);
    assert_int_equal(gd_json_int_or(cached, "status.readyReplicas", -1), 1);
    /* member 3 Ready: Degraded turns False, written at once with the counts */
    nready = 3;
    assert_int_equal(reconcile(f, &r), 1);
    assert_int_equal(gd_json_int_or(cached, "status.readyReplicas", -1), 3);
    assert_string_equal(condition("Degraded", "status"), "False");
    /* nothing changed since: nothing written */
    assert_int_equal(reconcile(f, &r), 0);
    /* all Ready but no write through a member yet (nothing listens): a progress-only
     * change left for later must not push the probe's next try out to the write's turn */
    cJSON_DeleteItemFromObject(gd_json_path(cached, "status"), "updateRevision");
    assert_int_equal(reconcile(f, &r), 0);
    assert_int_equal(r.kind, GODIS_REQUEUE_AFTER);
    assert_true(r.after_ms <= 1000);
    assert_string_equal(condition("Ready", "status"), "False");
    /* and once the interval has passed (a worker that never wrote it: the memo forgotten),
     * a progress-only change is written */
    nready = 2;
    assert_int_equal(reconcile(f, &r), 1);     /* Degraded True again: decisive */
    nready = 1;
    assert_int_equal(reconcile(f, &r), 0);     /* 2 -> 1 Ready: progress only, within the interval */
    godis_status_memo_reset();
    assert_int_equal(reconcile(f, &r), 1);
    assert_int_equal(gd_json_int_or(cached, "status.readyReplicas", -1), 1);
    cJSON_Delete(cached);
    cached = NULL;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_counts_batched_then_coalesced, client_setup, client_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
