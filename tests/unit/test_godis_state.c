/* test_godis_state.c — when the Godis controller writes status.state (godis_reconcile_godis):
 * on a change of state, and on a change of pod IP only while Running. A Pending member's
 * pod getting its name and then its IP must not cost a status write each. The cache is a
 * fixed set of objects; the API server is the scriptable httpd helper, so every write the
 * reconciler makes is a recorded request. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include "client_fixture.h"
#include "godis_children.h"
#include "godis_write.h"
#include "godis_reconcile.h"
#include "godis_retire.h"
#include "gd_json.h"

typedef struct {
    const char *godis_status;    /* JSON of the Godis's status, "{}" for none */
    const char *pod;             /* JSON of its one pod, or NULL */
    bool pvc_deleting;           /* its PVC has a deletionTimestamp */
} world;
static bool rs_unpinned;         /* its ReplicaSet lacks the pin to status.volumeNode */
static bool rs_drifted;          /* and its container runs another image */
static const char *pv_node;      /* its PVC is bound to pv-1, whose nodeAffinity requires this
                                  * node (kubernetes.io/hostname); NULL: unbound, no such PV */

#define CLUSTER                                                                             \
    "{\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"GodisCluster\",\"metadata\":{"   \
    "\"name\":\"c\",\"namespace\":\"ns\",\"uid\":\"cu\",\"generation\":1},"                  \
    "\"spec\":{\"replicas\":3}}"

static const cJSON *fake_get(godis_env *e, const char *kind, const char *ns, const char *name)
{
    const world *w = e->ud;
    char buf[2048];
    if (strcmp(kind, "GodisCluster") == 0) return cJSON_Parse(CLUSTER);
    if (strcmp(kind, "PersistentVolume") == 0 && !*ns && !strcmp(name, "pv-1") && pv_node) {
        snprintf(buf, sizeof buf, "{\"metadata\":{\"name\":\"pv-1\"},\"spec\":{\"nodeAffinity\":"
                 "{\"required\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":"
                 "\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[\"%s\"]}]}]}}}}", pv_node);
        return cJSON_Parse(buf);
    }
    if (strcmp(kind, "Godis") == 0 && strcmp(name, "c-1") == 0) {
        snprintf(buf, sizeof buf,
                 "{\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"Godis\",\"metadata\":{"
                 "\"name\":\"c-1\",\"namespace\":\"ns\",\"uid\":\"gu\",\"resourceVersion\":\"7\","
                 "\"generation\":1,\"labels\":{\"cluster-name\":\"c\"},"
                 "\"finalizers\":[\"" GODIS_FINALIZER "\"],\"ownerReferences\":[{"
                 "\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"GodisCluster\","
                 "\"name\":\"c\",\"uid\":\"cu\",\"controller\":true}]},"
                 "\"spec\":{\"preferred\":true},\"status\":%s}", w->godis_status);
        return cJSON_Parse(buf);
    }
    /* The children exist exactly as the controller builds them: only the status path runs */
    cJSON *st = cJSON_Parse(w->godis_status);
    char node[64];
    snprintf(node, sizeof node, "%s", gd_json_str_or(st, "volumeNode", ""));
    cJSON_Delete(st);
    godis_child_spec spec = {.ns = "ns", .cluster = "c", .godis = "c-1", .godis_uid = "gu",
                             .id = 1, .preferred = true,
                             .node = strcmp(kind, "ReplicaSet") == 0 && rs_unpinned ? NULL : node};
    cJSON *child = strcmp(kind, "Service") == 0               ? godis_build_service(&spec)
                   : strcmp(kind, "PersistentVolumeClaim") == 0 ? godis_build_pvc(&spec)
                   : strcmp(kind, "ReplicaSet") == 0            ? godis_build_replicaset(&spec)
                                                                : NULL;
    if (child && strcmp(gd_meta_name(child), name) != 0) {
        cJSON_Delete(child);
        child = NULL;
    }
    if (child && strcmp(kind, "ReplicaSet") == 0 && rs_drifted)
        gd_json_set(cJSON_GetArrayItem(gd_json_path(child, "spec.template.spec.containers"), 0),
                    "image", cJSON_CreateString("someone/else"));
    if (child && strcmp(kind, "PersistentVolumeClaim") == 0) {
        gd_json_set(child, "metadata.uid", cJSON_CreateString("pvc-uid-1"));
        if (pv_node) gd_json_set(child, "spec.volumeName", cJSON_CreateString("pv-1"));
        if (w->pvc_deleting)
            gd_json_set(child, "metadata.deletionTimestamp", cJSON_CreateString("2026-01-01T00:00:00Z"));
    }
    return child;
}

static const cJSON *fake_list(godis_env *e, const char *kind, const char *ns, const char *k,
                        const char *v)
{
    const world *w = e->ud;
    cJSON *arr = cJSON_CreateArray();
    if (strcmp(kind, "Pod") == 0 && w->pod) cJSON_AddItemToArray(arr, cJSON_Parse(w->pod));
    return arr;
}

#define POD_PENDING_NO_IP "{\"metadata\":{\"name\":\"c-1-abc\"},\"status\":{\"phase\":\"Pending\"}}"
#define POD_PENDING_IP                                                                       \
    "{\"metadata\":{\"name\":\"c-1-abc\"},\"status\":{\"phase\":\"Running\","                \
    "\"podIP\":\"127.0.1.5\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}"
#define POD_READY(ip)                                                                        \
    "{\"metadata\":{\"name\":\"c-1-abc\"},\"status\":{\"phase\":\"Running\",\"podIP\":\"" ip \
    "\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}"

static godis_result_kind last_kind;   /* what the last status_writes reconcile returned */

/* Runs one reconcile of ns/c-1 against w; returns the status writes it made (PUTs to
 * .../godises/c-1/status) and asserts it made no other request (Events aside). */
static int status_writes(client_fixture *f, const world *w, const char **body_out)
{
    godis_env e = {.client = f->c, .get = fake_get, .list = fake_list, .ud = (void *)w,
                   .godis_port = 6379, .godis_timeout_ms = 100};
    int before = httpd_request_count(f->h);
    /* nothing queued: the helper answers 200 with an echo, a successful write */
    godis_result r = godis_reconcile_godis(&e, "ns/c-1");
    last_kind = r.kind;
    assert_true(r.kind == GODIS_DONE || r.kind == GODIS_REQUEUE);
    int n = 0;
    for (int i = before; i < httpd_request_count(f->h); i++) {
        const httpd_req *q = httpd_request(f->h, i);
        if (strcmp(q->method, "POST") == 0 && strstr(q->uri, "/events")) continue;
        assert_string_equal(q->method, "PUT");
        assert_non_null(strstr(q->uri, "/namespaces/ns/godises/c-1/status"));
        n++;
        if (body_out) *body_out = q->body;
    }
    return n;
}

static void test_pending_not_written(void **state)
{
    client_fixture *f = *state;
    const char *body = NULL;
    /* no state yet reads as Pending: nothing to write, with or without a pod */
    world fresh = {"{}", NULL, false};
    assert_int_equal(status_writes(f, &fresh, &body), 0);
    world fresh_pod = {"{}", POD_PENDING_IP, false};
    assert_int_equal(status_writes(f, &fresh_pod, &body), 0);
    /* from no state to Running: one write */
    world fresh_ready = {"{}", POD_READY("127.0.1.5"), false};
    assert_int_equal(status_writes(f, &fresh_ready, &body), 1);
    cJSON *b = cJSON_Parse(body);
    assert_string_equal(gd_json_str_or(b, "status.state", ""), "Running");
    cJSON_Delete(b);
    /* Pending already recorded: the pod appearing, then getting an IP, writes nothing */
    world named = {"{\"state\":\"Pending\"}", POD_PENDING_NO_IP, false};
    assert_int_equal(status_writes(f, &named, NULL), 0);
    world with_ip = {"{\"state\":\"Pending\"}", POD_PENDING_IP, false};
    assert_int_equal(status_writes(f, &with_ip, NULL), 0);
}

static void test_running_carries_pod_ip(void **state)
{
    client_fixture *f = *state;
    const char *body = NULL;
    world ready = {"{\"state\":\"Pending\"}", POD_READY("127.0.1.5"), false};
    assert_int_equal(status_writes(f, &ready, &body), 1);
    cJSON *b = cJSON_Parse(body);
    assert_string_equal(gd_json_str_or(b, "status.state", ""), "Running");
    assert_string_equal(gd_json_str_or(b, "status.podIP", ""), "127.0.1.5");
    assert_string_equal(gd_json_str_or(b, "status.podName", ""), "c-1-abc");
    /* the same write records the volume it ran on */
    assert_string_equal(gd_json_str_or(b, "status.volumeClaimUID", ""), "pvc-uid-1");
    cJSON_Delete(b);
    /* Running with the same IP: nothing; a new IP while Running: written */
#define RUNNING_ON(ip) "{\"state\":\"Running\",\"volumeClaimUID\":\"pvc-uid-1\",\"podIP\":\"" ip "\"}"
    world same = {RUNNING_ON("127.0.1.5"), POD_READY("127.0.1.5"), false};
    assert_int_equal(status_writes(f, &same, NULL), 0);
    world moved = {RUNNING_ON("127.0.1.5"), POD_READY("127.0.2.9"), false};
    assert_int_equal(status_writes(f, &moved, &body), 1);
    b = cJSON_Parse(body);
    assert_string_equal(gd_json_str_or(b, "status.podIP", ""), "127.0.2.9");
    cJSON_Delete(b);
    /* Running -> not Ready: back to Pending, written */
    world lost = {RUNNING_ON("127.0.2.9"), POD_PENDING_IP, false};
    assert_int_equal(status_writes(f, &lost, &body), 1);
    b = cJSON_Parse(body);
    assert_string_equal(gd_json_str_or(b, "status.state", ""), "Pending");
    cJSON_Delete(b);
}

/* The PVC it ran on is being deleted: the member is lost. Reported once in status (the
 * GodisCluster controller replaces it); the pod is not deleted, the claim not re-created. */
static void test_volume_lost_reported(void **state)
{
    client_fixture *f = *state;
    const char *body = NULL;
    world gone = {RUNNING_ON("127.0.1.5"), POD_READY("127.0.1.5"), true};
    assert_int_equal(status_writes(f, &gone, &body), 1);   /* only the status: no DELETE */
    cJSON *b = cJSON_Parse(body);
    bool lost = false;
    assert_int_equal(gd_json_bool(b, "status.volumeLost", &lost), GD_OK);
    assert_true(lost);
    cJSON_Delete(b);
    world told = {"{\"state\":\"Running\",\"volumeClaimUID\":\"pvc-uid-1\",\"volumeLost\":true,"
                  "\"podIP\":\"127.0.1.5\"}", POD_READY("127.0.1.5"), true};
    assert_int_equal(status_writes(f, &told, NULL), 0);
}

#define POD_READY_ON(node)                                                                   \
    "{\"metadata\":{\"name\":\"c-1-abc\"},\"spec\":{\"nodeName\":\"" node "\"},"             \
    "\"status\":{\"phase\":\"Running\",\"podIP\":\"127.0.1.5\","                               \
    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}"

/* The node a member first ran on holds its data: recorded with its volume (the write that
 * says Running), or once for a member that ran before status.volumeNode existed; never
 * rewritten from a later pod (a pod elsewhere would be on an empty disk, not a new home). */
static void test_volume_node_recorded(void **state)
{
    client_fixture *f = *state;
    const char *body = NULL;
    world first = {"{\"state\":\"Pending\"}", POD_READY_ON("node-a"), false};
    assert_int_equal(status_writes(f, &first, &body), 1);
    cJSON *b = cJSON_Parse(body);
    assert_string_equal(gd_json_str_or(b, "status.volumeClaimUID", ""), "pvc-uid-1");
    assert_string_equal(gd_json_str_or(b, "status.volumeNode", ""), "node-a");
    cJSON_Delete(b);
    /* The pin follows from that write, and no event of its own wakes this Godis again (its
     * status updates are filtered; its pod's and ReplicaSet's may all be past): it asks to
     * run again. A write that records no node does not. */
    assert_int_equal(last_kind, GODIS_REQUEUE);
    world older = {RUNNING_ON("127.0.1.5"), POD_READY_ON("node-b"), false};
    assert_int_equal(status_writes(f, &older, &body), 1);
    b = cJSON_Parse(body);
    assert_string_equal(gd_json_str_or(b, "status.volumeNode", ""), "node-b");
    cJSON_Delete(b);
    world known = {"{\"state\":\"Running\",\"volumeClaimUID\":\"pvc-uid-1\",\"volumeNode\":\"node-a\","
                   "\"podIP\":\"127.0.1.5\"}", POD_READY_ON("node-b"), false};
    assert_int_equal(status_writes(f, &known, NULL), 0);
    assert_int_equal(last_kind, GODIS_DONE);
    world moved = {RUNNING_ON("127.0.1.5"), POD_READY("127.0.2.9"), false};
    assert_int_equal(status_writes(f, &moved, NULL), 1);
    assert_int_equal(last_kind, GODIS_DONE);
}

static char rs_method[16];          /* of the last write to its ReplicaSet */
static const char *rs_body;        /* and its body */

/* One reconcile of ns/c-1: the writes (PUT, PATCH) to its ReplicaSet and the Events it posted. */
static void rs_writes(client_fixture *f, const world *w, int *puts, int *events)
{
    godis_env e = {.client = f->c, .get = fake_get, .list = fake_list, .ud = (void *)w,
                   .godis_port = 6379, .godis_timeout_ms = 100};
    int before = httpd_request_count(f->h);
    godis_reconcile_godis(&e, "ns/c-1");
    *puts = *events = 0;
    for (int i = before; i < httpd_request_count(f->h); i++) {
        const httpd_req *q = httpd_request(f->h, i);
        if (strcmp(q->method, "POST") == 0 && strstr(q->uri, "/events")) (*events)++;
        else if ((!strcmp(q->method, "PUT") || !strcmp(q->method, "PATCH")) &&
                 strstr(q->uri, "/replicasets/c-1")) {
            (*puts)++;
            snprintf(rs_method, sizeof rs_method, "%s", q->method);
            rs_body = q->body;
        }
    }
}

/* A member that has just recorded status.volumeNode gets its ReplicaSet pinned there: the
 * plan, not drift, so no ChildRepaired Event (one per member of every new cluster, 300 of
 * the ~490 Events of a 100 x 3 converge). Real drift with it still gets its Event. */
static void test_pin_is_no_drift(void **state)
{
    client_fixture *f = *state;
    int puts, events;
    world pinning = {"{\"state\":\"Running\",\"volumeClaimUID\":\"pvc-uid-1\",\"volumeNode\":\"node-a\","
                     "\"podIP\":\"127.0.1.5\"}", POD_READY_ON("node-a"), false};
    rs_unpinned = true;
    rs_writes(f, &pinning, &puts, &events);
    assert_int_equal(puts, 1);
    assert_int_equal(events, 0);
    /* a merge patch of the affinity alone, without a resourceVersion: kube-controller-manager
     * rewrites the ReplicaSet's status at the same moment, and a PUT from the cache conflicted */
    assert_string_equal(rs_method, "PATCH");
    cJSON *p = cJSON_Parse(rs_body);
    assert_non_null(p);
    assert_null(gd_json_path(p, "metadata"));
    assert_int_equal(cJSON_GetArraySize(p), 1);
    const cJSON *term = cJSON_GetArrayItem(gd_json_path(p, "spec.template.spec.affinity.nodeAffinity."
                                                           "requiredDuringSchedulingIgnoredDuringExecution."
                                                           "nodeSelectorTerms"), 0);
    char *text = cJSON_PrintUnformatted(term);
    assert_non_null(text);
    bool names_node = strstr(text, "\"node-a\"") != NULL;
    cJSON_free(text);
    cJSON_Delete(p);
    assert_true(names_node);
    rs_drifted = true;
    rs_writes(f, &pinning, &puts, &events);
    rs_unpinned = rs_drifted = false;
    assert_int_equal(puts, 1);
    assert_int_equal(events, 1);
    assert_string_equal(rs_method, "PUT");       /* real drift: the whole object, as before */
}

/* Where the member's PV already requires the node its data is on (local-path, local PVs),
 * its ReplicaSet is not pinned: no update at all, and status.volumeNode is still recorded
 * (migration reads it). A ReplicaSet pinned before is left pinned, again without a write.
 * A PV on another node than the one recorded keeps the pin. */
static void test_no_pin_where_the_pv_names_the_node(void **state)
{
    client_fixture *f = *state;
    int puts, events;
    const char *body = NULL;
    pv_node = "node-a";
    world first = {"{\"state\":\"Pending\"}", POD_READY_ON("node-a"), false};
    assert_int_equal(status_writes(f, &first, &body), 1);
    assert_int_equal(last_kind, GODIS_DONE);     /* no pin to follow: no second run */
    cJSON *b = cJSON_Parse(body);
    assert_string_equal(gd_json_str_or(b, "status.volumeNode", ""), "node-a");
    cJSON_Delete(b);
    world recorded = {"{\"state\":\"Running\",\"volumeClaimUID\":\"pvc-uid-1\",\"volumeNode\":\"node-a\","
                      "\"podIP\":\"127.0.1.5\"}", POD_READY_ON("node-a"), false};
    rs_unpinned = true;
    rs_writes(f, &recorded, &puts, &events);
    assert_int_equal(puts, 0);
    assert_int_equal(events, 0);
    rs_unpinned = false;                      /* pinned by an earlier version: stays so */
    rs_writes(f, &recorded, &puts, &events);
    assert_int_equal(puts, 0);
    pv_node = "node-b";
    rs_unpinned = true;
    rs_writes(f, &recorded, &puts, &events);
    rs_unpinned = false;
    pv_node = NULL;
    assert_int_equal(puts, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pending_not_written, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_running_carries_pod_ip, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_volume_lost_reported, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_volume_node_recorded, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_pin_is_no_drift, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_no_pin_where_the_pv_names_the_node, client_setup,
                                        client_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
