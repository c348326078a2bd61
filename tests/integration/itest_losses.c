/* Losses (issue 16), with the whole operator on the local control plane and the unkind
 * godis stand-in:
 *  - a member whose PVC is deleted while it runs is replaced by a new id (added first) and
 *    then forgotten and stopped; a member whose node and volume are both gone is forgotten
 *    and replaced — in neither case does a pod of the old id ever run again (it would be
 *    the same id on an empty disk: a voter that forgot its votes);
 *  - every member lost: Degraded/AllMembersLost and an Event, nothing created, until the
 *    annotation asks for a fresh cluster — then new ids, the old members gone;
 *  - a member's pod deleted while the node holding its data is cordoned never starts on
 *    another node (its ReplicaSet requires status.volumeNode); the member is migrated;
 *  - a member on a node that turns NotReady is migrated when the grace period ends, with
 *    no other event to wake the operator, adding before removing;
 *  - Ready=True means a write through a member succeeds, also after a full restart. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "e2e_lib.h"
#include "e2e_operator.h"
#include "e2e_procs.h"
#include "e2e_standin.h"
#include "godis_client.h"
#include "gd_json.h"
#include "gd_time.h"

static k8s_client *c;
static e2e_operator op;
static const int T = 120000;
#define GRACE_MS 5000          /* the workers' node-grace-ms (the default is 40 s) */

#define NS_START(ns) char ns[64]; assert_true(e2e_ns_create(c, "ml", ns, sizeof ns))

static void converge(const char *ns, const char *name, int n)
{
    assert_true(e2e_wait_settled(c, ns, name, n, T));
}

static void ns_done(const char *ns) { assert_true(e2e_ns_delete_wait(c, ns, T)); }

static bool next_id_at_least(const char *type, const cJSON *gc, void *arg)
{
    return strcmp(type, "DELETED") != 0 && gd_json_int_or(gc, "status.nextID", 0) >= *(int64_t *)arg;
}

static void wait_next_id(const char *ns, const char *name, int64_t next)
{
    char fs[160];
    snprintf(fs, sizeof fs, "metadata.name=%s", name);
    assert_true(e2e_watch_until(c, &K8S_RES_GODISCLUSTERS, ns, NULL, fs, next_id_at_least, &next, T));
}

static void assert_members(const char *ns, const char *name, const int64_t *want, int n)
{
    cJSON *gc = e2e_cluster_get(c, ns, name);
    int64_t ids[16];
    assert_int_equal(e2e_status_members(gc, ids, 16), n);
    for (int i = 0; i < n; i++) assert_int_equal(ids[i], want[i]);
    cJSON_Delete(gc);
}

static void member_ip(const char *ns, const char *godis, char ip[64])
{
    assert_true(e2e_member_ip(c, ns, godis, ip, 64));
}

/* Deletes every pod of member `godis` at once (grace 0: as if its node were gone). */
static void force_delete_pods(const char *ns, const char *godis)
{
    char sel[160];
    snprintf(sel, sizeof sel, "node-name=%s", godis);
    cJSON *list = NULL;
    k8s_list_opts lo = {.label_selector = sel};
    assert_int_equal(k8s_list(c, &K8S_RES_PODS, ns, &lo, &list, NULL), GD_OK);
    const cJSON *p;
    cJSON_ArrayForEach(p, gd_json_path(list, "items"))
        assert_true(e2e_delete(c, &K8S_RES_PODS, ns, gd_meta_name(p), 0));
    cJSON_Delete(list);
}

/* ---- lost volumes ---- */

static void test_lost_volume_member_replaced(void **state)
{
    (void)state;
    NS_START(ns);
    assert_true(e2e_cluster_create(c, ns, "ml-vol", 3));
    converge(ns, "ml-vol", 3);
    e2e_pod_recorder rec;
    assert_true(e2e_pod_recorder_start(&rec, ns, "ml-vol"));
    char ips[3][64], surv[2][64];
    member_ip(ns, "ml-vol-1", ips[0]);
    member_ip(ns, "ml-vol-2", ips[1]);
    member_ip(ns, "ml-vol-3", ips[2]);
    /* 1. member 2's PVC deleted while it runs (pvc-protection holds it): still serving, so
     * a new id comes first, then 2 is forgotten and stopped, and its claim goes. */
    char before2[8][64];
    int nb2 = e2e_member_pod_uids(c, ns, "ml-vol-2", before2, 8);
    e2e_member_watch w;
    assert_true(e2e_member_watch_start(&w, 2, ips[1]));
    assert_true(e2e_delete(c, &K8S_RES_PVCS, ns, "data-ml-vol-2", -1));
    wait_next_id(ns, "ml-vol", 5);
    converge(ns, "ml-vol", 3);
    int64_t want1[] = {1, 3, 4};
    assert_members(ns, "ml-vol", want1, 3);
    memcpy(surv[0], ips[0], 64);
    memcpy(surv[1], ips[2], 64);
    int64_t forget = e2e_forget_time_us(surv, 2, 2), end = e2e_member_watch_end(&w, T);
    assert_true(forget > 0 && end > 0);
    e2e_note_forgotten_runtime(2, forget, end);
    assert_true(end - forget < 3000000);
    assert_true(e2e_wait_count(c, &K8S_RES_PVCS, ns, "node-name=ml-vol-2", 0, T));
    /* 2. member 1's node and volume lost together: its pod force-deleted with its claim.
     * It is down, so it is forgotten first; a new id replaces it. */
    char before1[8][64];
    int nb1 = e2e_member_pod_uids(c, ns, "ml-vol-1", before1, 8);
    assert_true(e2e_delete(c, &K8S_RES_PVCS, ns, "data-ml-vol-1", -1));
    force_delete_pods(ns, "ml-vol-1");
    wait_next_id(ns, "ml-vol", 6);
    converge(ns, "ml-vol", 3);
    int64_t want2[] = {3, 4, 5};
    assert_members(ns, "ml-vol", want2, 3);
    e2e_pod_recorder_stop(&rec);
    /* no pod of an old id ever served again (the same id on an empty disk) */
    assert_int_equal(e2e_pod_recorder_new_ready(&rec, "ml-vol-2", before2, nb2), 0);
    assert_int_equal(e2e_pod_recorder_new_ready(&rec, "ml-vol-1", before1, nb1), 0);
    ns_done(ns);
}

/* ---- a member's pod stays with its data ---- */

static char cordoned[128];    /* uncordoned by teardown should a test fail on the way */

static void cordon(const char *node, bool on)
{
    snprintf(cordoned, sizeof cordoned, "%s", on ? node : "");
    char patch[64];
    snprintf(patch, sizeof patch, "{\"spec\":{\"unschedulable\":%s}}", on ? "true" : "false");
    assert_int_equal(k8s_patch(c, &K8S_RES_NODES, NULL, node, K8S_PATCH_MERGE, patch, NULL, NULL, NULL), GD_OK);
}

/* A member's volume lives on the node it first ran on (the node agent keeps a PVC's data
 * on its node, as a hostPath or local disk does). Its pod deleted while that node is
 * cordoned must not start on another node: there it would be the same id on an empty disk
 * (the chaos suite saw one cluster split into two Raft groups that way). The Godis records
 * the node, the ReplicaSet requires it, the pod waits, and the member is migrated under a
 * new id (added first) as any member on a cordoned node is. */
static void test_member_pod_stays_with_its_data(void **state)
{
    (void)state;
    NS_START(ns);
    assert_true(e2e_cluster_create(c, ns, "ml-pin", 3));
    converge(ns, "ml-pin", 3);
    cJSON *g = NULL, *rs = NULL, *pods = NULL;
    assert_int_equal(k8s_get(c, &K8S_RES_GODISES, ns, "ml-pin-2", &g, NULL), GD_OK);
    char node[128];
    snprintf(node, sizeof node, "%s", gd_json_str_or(g, "status.volumeNode", ""));
    cJSON_Delete(g);
    k8s_list_opts lo = {.label_selector = "node-name=ml-pin-2"};
    assert_int_equal(k8s_list(c, &K8S_RES_PODS, ns, &lo, &pods, NULL), GD_OK);
    assert_string_equal(node, gd_json_str_or(cJSON_GetArrayItem(gd_json_path(pods, "items"), 0),
                                             "spec.nodeName", "?"));
    cJSON_Delete(pods);
    assert_int_equal(k8s_get(c, &K8S_RES_REPLICASETS, ns, "ml-pin-2", &rs, NULL), GD_OK);
    const cJSON *f = cJSON_GetArrayItem(gd_json_path(cJSON_GetArrayItem(gd_json_path(rs,
        "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
        "nodeSelectorTerms"), 0), "matchFields"), 0);
    assert_string_equal(gd_json_str_or(f, "key", ""), "metadata.name");
    assert_string_equal(cJSON_GetArrayItem(gd_json_path(f, "values"), 0)->valuestring, node);
    cJSON_Delete(rs);
    e2e_pod_recorder rec;
    assert_true(e2e_pod_recorder_start(&rec, ns, "ml-pin"));
    char before[8][64];
    int nb = e2e_member_pod_uids(c, ns, "ml-pin-2", before, 8);
    cordon(node, true);
    force_delete_pods(ns, "ml-pin-2");
    wait_next_id(ns, "ml-pin", 5);
    converge(ns, "ml-pin", 3);
    cordon(node, false);
    cJSON *gc = e2e_cluster_get(c, ns, "ml-pin");
    int64_t ids[16];
    int n = e2e_status_members(gc, ids, 16);
    cJSON_Delete(gc);
    assert_int_equal(n, 3);
    for (int i = 0; i < n; i++) assert_int_not_equal(ids[i], 2);   /* 2 was migrated */
    e2e_pod_recorder_stop(&rec);
    assert_int_equal(e2e_pod_recorder_new_ready(&rec, "ml-pin-2", before, nb), 0);
    ns_done(ns);
}

/* ---- every member lost ---- */

static bool all_lost(const char *type, const cJSON *gc, void *arg)
{
    (void)arg;
    if (strcmp(type, "DELETED") == 0) return false;
    const cJSON *cond;
    cJSON_ArrayForEach(cond, gd_json_path(gc, "status.conditions"))
        if (!strcmp(gd_json_str_or(cond, "type", ""), "Degraded"))
            return !strcmp(gd_json_str_or(cond, "status", ""), "True") &&
                   !strcmp(gd_json_str_or(cond, "reason", ""), "AllMembersLost");
    return false;
}

static bool event_named(const char *type, const cJSON *ev, void *arg)
{
    return strcmp(type, "DELETED") != 0 && strcmp(gd_json_str_or(ev, "reason", ""), (const char *)arg) == 0;
}

static void test_all_members_lost_then_fresh_bootstrap(void **state)
{
    (void)state;
    NS_START(ns);
    assert_true(e2e_cluster_create(c, ns, "ml-lost", 3));
    converge(ns, "ml-lost", 3);
    /* paused, so the losses land at once: one at a time, each would be replaced */
    assert_true(k8s_patch(c, &K8S_RES_GODISCLUSTERS, ns, "ml-lost", K8S_PATCH_MERGE,
                          "{\"spec\":{\"paused\":true}}", NULL, NULL, NULL) == GD_OK);
    for (int i = 1; i <= 3; i++) {             /* every node and volume gone */
        char claim[64], g[64];
        snprintf(claim, sizeof claim, "data-ml-lost-%d", i);
        snprintf(g, sizeof g, "ml-lost-%d", i);
        assert_true(e2e_delete(c, &K8S_RES_PVCS, ns, claim, -1));
        force_delete_pods(ns, g);
    }
    assert_true(e2e_watch_until(c, &K8S_RES_GODISCLUSTERS, ns, NULL, "metadata.name=ml-lost",
                                all_lost, NULL, T));
    assert_true(e2e_watch_until(c, &K8S_RES_EVENTS, ns, NULL, "involvedObject.name=ml-lost",
                                event_named, "AllMembersLost", T));
    int64_t t_lost = e2e_wall_us();
    cJSON *gc = e2e_cluster_get(c, ns, "ml-lost");
    assert_int_equal(gd_json_int_or(gc, "status.nextID", 0), 4);   /* no id handed out */
    cJSON_Delete(gc);
    int64_t old[] = {1, 2, 3};
    assert_members(ns, "ml-lost", old, 3);
    /* the user asks for a fresh, empty cluster */
    assert_int_equal(k8s_patch(c, &K8S_RES_GODISCLUSTERS, ns, "ml-lost", K8S_PATCH_MERGE,
                               "{\"metadata\":{\"annotations\":{\"godis.kumkeehyun.github.com/"
                               "bootstrap-fresh\":\"true\"}}}", NULL, NULL, NULL), GD_OK);
    int64_t t_ask = e2e_wall_us();
    /* between the loss and the request the operator created nothing */
    audit_event *evs = NULL;
    int n = e2e_operator_writes(t_lost, &evs);
    for (int i = 0; i < n; i++)
        if (evs[i].recv_us < t_ask && !strcmp(evs[i].verb, "create") && !strncmp(evs[i].name, "ml-lost", 7))
            fail_msg("created %s %s while every member was lost", evs[i].resource, evs[i].name);
    free(evs);
    wait_next_id(ns, "ml-lost", 7);
    assert_true(k8s_patch(c, &K8S_RES_GODISCLUSTERS, ns, "ml-lost", K8S_PATCH_MERGE,
                          "{\"spec\":{\"paused\":false}}", NULL, NULL, NULL) == GD_OK);
    converge(ns, "ml-lost", 3);
    int64_t fresh[] = {4, 5, 6};
    assert_members(ns, "ml-lost", fresh, 3);
    gc = e2e_cluster_get(c, ns, "ml-lost");
    assert_null(gd_meta_annotation(gc, "godis.kumkeehyun.github.com/bootstrap-fresh"));
    cJSON_Delete(gc);
    assert_true(e2e_wait_count(c, &K8S_RES_GODISES, ns, "cluster-name=ml-lost", 3, T));
    assert_int_equal(e2e_count_all(c, &K8S_RES_GODISES, ns, "cluster-name=ml-lost"), 3);
    ns_done(ns);
}

/* ---- a NotReady node ---- */

typedef struct {
    int64_t old_id, new_id;
    bool both_seen;                  /* the newcomer was a member while the old one still was */
} migrate_q;

static bool migrated(const char *type, const cJSON *gc, void *arg)
{
    migrate_q *q = arg;
    if (strcmp(type, "DELETED") == 0) return false;
    int64_t ids[16];
    int n = e2e_status_members(gc, ids, 16);
    bool old = false, fresh = false;
    for (int i = 0; i < n; i++) {
        old |= ids[i] == q->old_id;
        fresh |= ids[i] == q->new_id;
    }
    q->both_seen |= old && fresh;
    return !old && fresh;
}

static void set_node_ready(const char *node, bool ready)
{
    const char *argv[] = {"bin/node-agent", "--kubeconfig", getenv("KUBECONFIG"), "--state-dir",
                          getenv("NODE_AGENT_STATE_DIR"), "set-ready", node, ready ? "true" : "false", NULL};
    pid_t p = e2e_spawn(argv, NULL);
    int st = 0;
    assert_int_equal(waitpid(p, &st, 0), p);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_notready_node_migrates_after_grace(void **state)
{
    (void)state;
    NS_START(ns);
    assert_true(e2e_cluster_create(c, ns, "ml-node", 3));
    converge(ns, "ml-node", 3);
    cJSON *list = NULL;
    k8s_list_opts lo = {.label_selector = "node-name=ml-node-1"};
    assert_int_equal(k8s_list(c, &K8S_RES_PODS, ns, &lo, &list, NULL), GD_OK);
    char node[128];
    snprintf(node, sizeof node, "%s", gd_json_str_or(cJSON_GetArrayItem(gd_json_path(list, "items"), 0),
                                                      "spec.nodeName", ""));
    cJSON_Delete(list);
    assert_true(node[0] != '\0');
    int64_t t0 = gd_mono_ms();
    set_node_ready(node, false);
    /* nothing but the operator's own delayed requeue marks the end of the grace period */
    migrate_q q = {.old_id = 1, .new_id = 4};
    bool ok = e2e_watch_until(c, &K8S_RES_GODISCLUSTERS, ns, NULL, "metadata.name=ml-node",
                              migrated, &q, T);
    int64_t took = gd_mono_ms() - t0;
    set_node_ready(node, true);
    assert_true(ok);
    assert_true(q.both_seen);                     /* added before removed */
    assert_true(took >= GRACE_MS);                /* not before the grace ended */
    fprintf(stderr, "ml-node: member 1 replaced %.1f s after its node turned NotReady (grace %d s)\n",
            took / 1000.0, GRACE_MS / 1000);
    converge(ns, "ml-node", 3);
    ns_done(ns);
}

/* ---- Ready means writable ---- */

static bool ready_is(const char *type, const cJSON *gc, void *arg)
{
    return strcmp(type, "DELETED") != 0 && e2e_condition_is(gc, "Ready", (const char *)arg);
}

/* What each member's stand-in saw (elections, leaders), for a failed write's message. */
static void dump_member_events(char ips[][64], int n, int64_t since_us)
{
    static e2e_sev evs[4096];
    for (int i = 0; i < n; i++) {
        int k = e2e_standin_events(ips[i], evs, 4096);
        for (int j = 0; j < k; j++)
            if (evs[j].wall_us >= since_us)
                fprintf(stderr, "  member %d (%s) %+.3f s: %s\n", i + 1, ips[i],
                        (evs[j].wall_us - since_us) / 1e6, evs[j].text);
    }
}

/* At the moment the watch shows Ready=True, a write through each member succeeds at once. */
static void write_through_every_member(const char *ns, const char *name, int n)
{
    char ips[8][64];
    assert_true(n <= (int)(sizeof ips / sizeof ips[0]));
    int64_t ready_seen_us = gd_wall_ms() * 1000;
    for (int i = 1; i <= n; i++) {
        char g[64];
        snprintf(g, sizeof g, "%s-%d", name, i);
        member_ip(ns, g, ips[i - 1]);
    }
    for (int i = 1; i <= n; i++) {
        godis_client *gc = godis_client_new(ips[i - 1], 6379, NULL);
        assert_non_null(gc);
        gd_err e = godis_set(gc, "written-when-ready", "yes");
        if (e) {
            fprintf(stderr, "stand-in events from 30 s before Ready=True was seen:\n");
            dump_member_events(ips, n, ready_seen_us - 30 * 1000000LL);
            fail_msg("write through %s-%d (%s) at Ready=True: %s %s", name, i, ips[i - 1],
                     gd_strerror(e), godis_last_error(gc));
        }
        godis_client_destroy(&gc);
    }
}

static void test_ready_means_writable(void **state)
{
    (void)state;
    NS_START(ns);
    assert_true(e2e_cluster_create(c, ns, "ml-ready", 3));
    assert_true(e2e_watch_until(c, &K8S_RES_GODISCLUSTERS, ns, NULL, "metadata.name=ml-ready",
                                ready_is, "True", T));
    write_through_every_member(ns, "ml-ready", 3);
    /* a full restart: every pod deleted at once, the ReplicaSets bring them back on their
     * volumes; pods turn Ready before godis has a leader again */
    cJSON *list = NULL;
    k8s_list_opts lo = {.label_selector = "cluster-name=ml-ready"};
    assert_int_equal(k8s_list(c, &K8S_RES_PODS, ns, &lo, &list, NULL), GD_OK);
    const cJSON *p;
    cJSON_ArrayForEach(p, gd_json_path(list, "items"))
        assert_true(e2e_delete(c, &K8S_RES_PODS, ns, gd_meta_name(p), -1));
    cJSON_Delete(list);
    assert_true(e2e_watch_until(c, &K8S_RES_GODISCLUSTERS, ns, NULL, "metadata.name=ml-ready",
                                ready_is, "False", T));
    assert_true(e2e_watch_until(c, &K8S_RES_GODISCLUSTERS, ns, NULL, "metadata.name=ml-ready",
                                ready_is, "True", T));
    write_through_every_member(ns, "ml-ready", 3);
    cJSON *gc = e2e_cluster_get(c, ns, "ml-ready");
    assert_int_equal(gd_json_int_or(gc, "status.nextID", 0), 4);    /* same members, same data */
    cJSON_Delete(gc);
    ns_done(ns);
}

static int setup(void **state)
{
    (void)state;
    static char warg[64];
    snprintf(warg, sizeof warg, "--reconciler-arg node-grace-ms=%d", GRACE_MS);
    return e2e_operator_suite_setup(&c, &op, "losses", warg);
}

static int teardown(void **state)
{
    (void)state;
    if (*cordoned) cordon(cordoned, false);
    return e2e_operator_suite_teardown(&c, &op, "losses (itest_losses)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ready_means_writable),
        cmocka_unit_test(test_lost_volume_member_replaced),
        cmocka_unit_test(test_member_pod_stays_with_its_data),
        cmocka_unit_test(test_all_members_lost_then_fresh_bootstrap),
        cmocka_unit_test(test_notready_node_migrates_after_grace),
    };
    if (getenv("LOSSES_FILTER")) cmocka_set_test_filter(getenv("LOSSES_FILTER"));   /* debugging */
    return cmocka_run_group_tests_name("losses", tests, setup, teardown);
}
