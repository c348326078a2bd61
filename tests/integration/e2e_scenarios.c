/* e2e_scenarios.c — see e2e_scenarios.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "e2e_lib.h"
#include "e2e_scenarios.h"
#include "gd_json.h"
#include "gd_time.h"

k8s_client *e2e_c;
int e2e_timeout_ms = 90000;

#define NS_START(ns) char ns[64]; assert_true(e2e_ns_create(e2e_c, "e2e", ns, sizeof ns))

static void converge(const char *ns, const char *name, int n)
{
    assert_true(e2e_wait_settled(e2e_c, ns, name, n, e2e_timeout_ms));
}

void e2e_scenario_create_scale(void **state)
{
    (void)state;
    NS_START(ns);
    e2e_history h;
    assert_true(e2e_cluster_create(e2e_c, ns, "example-godis", 3));
    assert_true(e2e_history_start(&h, e2e_c, ns, "example-godis"));
    converge(ns, "example-godis", 3);
    int steps[] = {6, 2, 3};
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
        assert_true(e2e_cluster_scale(e2e_c, ns, "example-godis", steps[i]));
        converge(ns, "example-godis", steps[i]);
    }
    assert_true(e2e_history_stop(&h));
    /* 3 initial + 3 added + 1 added back = 7 ids handed out, never reused */
    cJSON *gc = e2e_cluster_get(e2e_c, ns, "example-godis");
    assert_int_equal(gd_json_int_or(gc, "status.nextID", 0), 8);
    assert_true(h.transitions >= 3 + 4 + 1);
    cJSON_Delete(gc);
    e2e_ns_delete(e2e_c, ns);
}

static void delete_named(const k8s_resource *r, const char *ns, const char *name)
{
    k8s_delete_opts o;
    k8s_delete_opts_default(&o);
    o.propagation_policy = "Background";
    k8s_status st = {0};
    gd_err e = k8s_delete(e2e_c, r, ns, name, &o, &st);
    if (e) fprintf(stderr, "delete %s %s: %s %s\n", r->resource, name, gd_strerror(e), st.message);
    assert_int_equal(e, GD_OK);
}

void e2e_scenario_heal_godis(void **state)
{
    (void)state;
    NS_START(ns);
    assert_true(e2e_cluster_create(e2e_c, ns, "heal", 3));
    converge(ns, "heal", 3);
    delete_named(&K8S_RES_GODISES, ns, "heal-2");
    /* healed: 3 members again, 2 gone for good, 4 new */
    int64_t deadline = gd_mono_ms() + e2e_timeout_ms;
    int64_t ids[16];
    int n = 0;
    while (gd_mono_ms() < deadline) {
        cJSON *gc = e2e_cluster_get(e2e_c, ns, "heal");
        n = e2e_status_members(gc, ids, 16);
        cJSON_Delete(gc);
        if (n == 3 && ids[0] == 1 && ids[1] == 3 && ids[2] == 4) break;
        gd_sleep_ms(200);
    }
    assert_int_equal(n, 3);
    assert_int_equal(ids[1], 3);
    assert_int_equal(ids[2], 4);
    converge(ns, "heal", 3);
    e2e_ns_delete(e2e_c, ns);
}

void e2e_scenario_heal_configmap(void **state)
{
    (void)state;
    NS_START(ns);
    assert_true(e2e_cluster_create(e2e_c, ns, "cm", 3));
    converge(ns, "cm", 3);
    cJSON *before = e2e_cluster_get(e2e_c, ns, "cm");
    delete_named(&K8S_RES_CONFIGMAPS, ns, "cm-config");
    assert_true(e2e_wait_count(e2e_c, &K8S_RES_CONFIGMAPS, ns, "cluster-name=cm", 1, e2e_timeout_ms));
    converge(ns, "cm", 3);
    cJSON *after = e2e_cluster_get(e2e_c, ns, "cm");
    /* rebuilt from status.members: same members, no new ids, no re-initialise */
    assert_int_equal(gd_json_int_or(after, "status.nextID", 0), gd_json_int_or(before, "status.nextID", -1));
    int64_t a[16], b[16];
    int na = e2e_status_members(after, a, 16), nb = e2e_status_members(before, b, 16);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na * sizeof *a);
    cJSON_Delete(before);
    cJSON_Delete(after);
    e2e_ns_delete(e2e_c, ns);
}

static char *uid_of(const k8s_resource *r, const char *ns, const char *name)
{
    cJSON *o = NULL;
    if (k8s_get(e2e_c, r, ns, name, &o, NULL) != GD_OK) return NULL;
    char *u = strdup(gd_meta_uid(o));
    cJSON_Delete(o);
    return u;
}

static void wait_recreated(const k8s_resource *r, const char *ns, const char *name, const char *old_uid)
{
    int64_t deadline = gd_mono_ms() + e2e_timeout_ms;
    while (gd_mono_ms() < deadline) {
        char *u = uid_of(r, ns, name);
        bool fresh = u && strcmp(u, old_uid) != 0;
        free(u);
        if (fresh) return;
        gd_sleep_ms(200);
    }
    fail_msg("%s %s/%s was not recreated", r->resource, ns, name);
}

static bool next_id_reached(const char *type, const cJSON *gc, void *arg)
{
    return strcmp(type, "DELETED") != 0 && gd_json_int_or(gc, "status.nextID", 0) >= *(int64_t *)arg;
}

void e2e_scenario_heal_children(void **state)
{
    (void)state;
    NS_START(ns);
    assert_true(e2e_cluster_create(e2e_c, ns, "kids", 3));
    converge(ns, "kids", 3);
    struct { const k8s_resource *r; const char *name; } kids[] = {
        {&K8S_RES_REPLICASETS, "kids-1"},
        {&K8S_RES_SERVICES, "kids-2-endpoint"},
    };
    for (size_t i = 0; i < sizeof kids / sizeof *kids; i++) {
        char *old = uid_of(kids[i].r, ns, kids[i].name);
        assert_non_null(old);
        delete_named(kids[i].r, ns, kids[i].name);
        wait_recreated(kids[i].r, ns, kids[i].name, old);
        free(old);
        converge(ns, "kids", 3);
    }
    cJSON *gc = e2e_cluster_get(e2e_c, ns, "kids");
    assert_int_equal(gd_json_int_or(gc, "status.nextID", 0), 4);   /* membership untouched */
    cJSON_Delete(gc);
    /* A deleted PVC is not a child to re-create: the member's data is gone, so it is a lost
     * member, replaced by a new id (never restarted empty under its old id). */
    delete_named(&K8S_RES_PVCS, ns, "data-kids-3");
    assert_true(e2e_watch_until(e2e_c, &K8S_RES_GODISCLUSTERS, ns, NULL, "metadata.name=kids",
                                next_id_reached, &(int64_t){5}, e2e_timeout_ms));
    converge(ns, "kids", 3);
    gc = e2e_cluster_get(e2e_c, ns, "kids");
    int64_t ids[8];
    assert_int_equal(e2e_status_members(gc, ids, 8), 3);
    assert_int_equal(ids[2], 4);
    assert_int_equal(gd_json_int_or(gc, "status.nextID", 0), 5);
    cJSON_Delete(gc);
    e2e_ns_delete(e2e_c, ns);
}

static char *node_of_member(const char *ns, const char *godis)
{
    char sel[200];
    snprintf(sel, sizeof sel, "node-name=%s", godis);
    k8s_list_opts lo = {.label_selector = sel};
    cJSON *pods = NULL;
    if (k8s_list(e2e_c, &K8S_RES_PODS, ns, &lo, &pods, NULL) != GD_OK) return NULL;
    const cJSON *p = cJSON_GetArrayItem(gd_json_path(pods, "items"), 0);
    char *node = p ? strdup(gd_json_str_or(p, "spec.nodeName", "")) : NULL;
    cJSON_Delete(pods);
    return node;
}

static void set_unschedulable(const char *node, bool on)
{
    char patch[64];
    snprintf(patch, sizeof patch, "{\"spec\":{\"unschedulable\":%s}}", on ? "true" : "false");
    assert_int_equal(k8s_patch(e2e_c, &K8S_RES_NODES, NULL, node, K8S_PATCH_MERGE, patch, NULL, NULL, NULL), GD_OK);
}

void e2e_scenario_cordon(void **state)
{
    (void)state;
    NS_START(ns);
    assert_true(e2e_cluster_create(e2e_c, ns, "drain", 3));
    converge(ns, "drain", 3);
    char *node = node_of_member(ns, "drain-1");
    assert_non_null(node);
    assert_true(node[0] != '\0');
    set_unschedulable(node, true);
    /* every member on that node moves: wait until none of the cluster's pods is there */
    int64_t deadline = gd_mono_ms() + e2e_timeout_ms;
    bool moved = false;
    while (!moved && gd_mono_ms() < deadline) {
        cJSON *gc = e2e_cluster_get(e2e_c, ns, "drain");
        int64_t ids[16];
        int n = e2e_status_members(gc, ids, 16);
        cJSON_Delete(gc);
        moved = n == 3;
        for (int i = 0; i < n && moved; i++) {
            char g[64];
            snprintf(g, sizeof g, "drain-%lld", (long long)ids[i]);
            char *nd = node_of_member(ns, g);
            moved = nd && strcmp(nd, node) != 0;
            free(nd);
        }
        if (!moved) gd_sleep_ms(300);
    }
    set_unschedulable(node, false);
    free(node);
    assert_true(moved);
    converge(ns, "drain", 3);
    e2e_ns_delete(e2e_c, ns);
}

void e2e_scenario_invalid(void **state)
{
    (void)state;
    NS_START(ns);
    const char *bad[] = {"{\"replicas\":0}", "{\"replicas\":10}", "{\"replicas\":-1}",
                         "{\"replicas\":\"3\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char body[300];
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"GodisCluster\","
                 "\"metadata\":{\"name\":\"bad%zu\"},\"spec\":%s}", i, bad[i]);
        cJSON *obj = cJSON_Parse(body);
        k8s_status st = {0};
        gd_err e = k8s_create(e2e_c, &K8S_RES_GODISCLUSTERS, ns, obj, NULL, &st);
        cJSON_Delete(obj);
        assert_int_equal(e, GD_ERR_INVALID);   /* the CRD's schema refuses it */
    }
    /* No spec at all passes the schema: the controller refuses it with a condition. */
    cJSON *obj = cJSON_Parse("{\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"GodisCluster\","
                             "\"metadata\":{\"name\":\"nospec\"}}");
    assert_int_equal(k8s_create(e2e_c, &K8S_RES_GODISCLUSTERS, ns, obj, NULL, NULL), GD_OK);
    cJSON_Delete(obj);
    int64_t deadline = gd_mono_ms() + e2e_timeout_ms;
    bool flagged = false;
    while (!flagged && gd_mono_ms() < deadline) {
        cJSON *gc = e2e_cluster_get(e2e_c, ns, "nospec");
        const cJSON *c;
        cJSON_ArrayForEach(c, gd_json_path(gc, "status.conditions"))
            if (strcmp(gd_json_str_or(c, "type", ""), "Degraded") == 0 &&
                strcmp(gd_json_str_or(c, "reason", ""), "InvalidSpec") == 0)
                flagged = true;
        cJSON_Delete(gc);
        if (!flagged) gd_sleep_ms(200);
    }
    assert_true(flagged);
    assert_int_equal(e2e_count(e2e_c, &K8S_RES_GODISES, ns, "cluster-name=nospec"), 0);
    e2e_ns_delete(e2e_c, ns);
}

void e2e_scenario_many(void **state)
{
    (void)state;
    int n = getenv("E2E_MANY") ? atoi(getenv("E2E_MANY")) : 50;
    int replicas = getenv("E2E_MANY_REPLICAS") ? atoi(getenv("E2E_MANY_REPLICAS")) : 3;
    NS_START(ns);
    int64_t t0 = gd_mono_ms();
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "many-%d", i);
        assert_true(e2e_cluster_create(e2e_c, ns, name, replicas));
    }
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "many-%d", i);
        assert_true(e2e_wait_converged(e2e_c, ns, name, replicas, e2e_timeout_ms * 3));
    }
    fprintf(stderr, "e2e: %d clusters x %d members converged in %.1f s\n", n, replicas,
            (gd_mono_ms() - t0) / 1000.0);
    for (int i = 0; i < n; i += 7) {
        char name[32];
        snprintf(name, sizeof name, "many-%d", i);
        assert_true(e2e_wait_consistent(e2e_c, ns, name, e2e_timeout_ms));
    }
    e2e_ns_delete(e2e_c, ns);
}

void (*e2e_kill_workers)(void);

void e2e_scenario_worker_killed_mid_scale(void **state)
{
    (void)state;
    assert_non_null(e2e_kill_workers);
    NS_START(ns);
    e2e_history h;
    assert_true(e2e_cluster_create(e2e_c, ns, "crash", 3));
    converge(ns, "crash", 3);
    assert_true(e2e_history_start(&h, e2e_c, ns, "crash"));
    assert_true(e2e_cluster_scale(e2e_c, ns, "crash", 5));
    /* The first recorded intent, as the watch delivers it (a poll could see the operator
     * already at 5: it is faster than this test, which is allowed), then kill every worker
     * at once: the restarted workers resume whatever step is recorded. */
    int64_t recorded = e2e_history_wait_scale_out(&h, 1, e2e_timeout_ms);
    e2e_kill_workers();
    assert_int_equal(recorded, 4);
    cJSON *at_kill = e2e_cluster_get(e2e_c, ns, "crash");
    fprintf(stderr, "e2e: workers killed with status.scaleOutID %lld recorded\n",
            (long long)gd_json_int_or(at_kill, "status.scaleOutID", 0));
    cJSON_Delete(at_kill);
    converge(ns, "crash", 5);
    /* every intent recorded exactly once, in order: 4 then 5, none skipped or repeated */
    assert_int_equal(h.nscale_out, 2);
    assert_int_equal(h.scale_out_ids[0], 4);
    assert_int_equal(h.scale_out_ids[1], 5);
    assert_true(e2e_history_stop(&h));
    cJSON *gc = e2e_cluster_get(e2e_c, ns, "crash");
    int64_t ids[16];
    int n = e2e_status_members(gc, ids, 16);
    /* the recorded id 4 was used, not skipped or reused; 5 came next */
    assert_int_equal(n, 5);
    assert_int_equal(ids[3], 4);
    assert_int_equal(ids[4], 5);
    assert_int_equal(gd_json_int_or(gc, "status.nextID", 0), 6);
    cJSON_Delete(gc);
    e2e_ns_delete(e2e_c, ns);
}
