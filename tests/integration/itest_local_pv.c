/* itest_local_pv — members on node-local PersistentVolumes that name their node (as rancher
 * local-path, `local` PVs of the static provisioner, TopoLVM and OpenEBS LocalPV write them)
 * get no node pin on their ReplicaSet: the scheduler keeps their pods on that node by the
 * PV's nodeAffinity alone, so the pin would be one wasted ReplicaSet update per member.
 *
 * On the local control plane (the real API server, kube-scheduler and the PV controller of
 * kube-controller-manager; the node agent as the kubelet, which keeps a claim's data in a
 * directory of its node whatever the PV's type: exactly node-local storage; the stand-in
 * godis, which keeps its data on that volume; godis-manager with its PersistentVolume
 * informer): a StorageClass with no provisioner (volumeBindingMode WaitForFirstConsumer)
 * and, for every node, static `local` PVs requiring that node by kubernetes.io/hostname. A
 * 3-member GodisCluster on that class converges; then every member has status.volumeNode
 * recorded (the node its PV names, the node its pod runs on), its ReplicaSet has no
 * nodeAffinity and was never updated (generation 1). A member's pod deleted comes back on
 * the same node with the same Raft id and the keys written to it before.
 *
 * The pinned path (hostPath volumes of the devcluster's default class) is itest_losses'
 * test_member_pod_stays_with_its_data. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "e2e_lib.h"
#include "e2e_members.h"
#include "e2e_operator.h"
#include "e2e_procs.h"
#include "e2e_storage.h"
#include "e2e_webhook.h"
#include "../support/test_wait.h"
#include "gd_json.h"
#include "gd_log.h"
#include "godis_client.h"

#define PVS_PER_NODE 2

static k8s_client *c;
static pid_t manager;
static char ns[128], rundir[256], logdir[256], mgr_log[512];
static e2e_local_pvs vols;                /* the class and the PVs made for this run */

/* The node the PV bound to claim ns/claim requires ("" when unbound or not of ours). */
static void pv_node_of(const char *claim, char *out, size_t cap)
{
    out[0] = '\0';
    cJSON *pvc = NULL, *pv = NULL;
    if (k8s_get(c, &K8S_RES_PVCS, ns, claim, &pvc, NULL) != GD_OK) return;
    const char *vol = gd_json_str_or(pvc, "spec.volumeName", "");
    if (*vol && k8s_get(c, &K8S_RES_PVS, NULL, vol, &pv, NULL) == GD_OK) {
        const cJSON *term = cJSON_GetArrayItem(gd_json_path(pv, "spec.nodeAffinity.required.nodeSelectorTerms"), 0);
        const cJSON *req = cJSON_GetArrayItem(gd_json_path(term, "matchExpressions"), 0);
        const cJSON *v = cJSON_GetArrayItem(gd_json_path(req, "values"), 0);
        if (!strcmp(gd_json_str_or(pv, "spec.storageClassName", ""), vols.class_name) &&
            cJSON_IsString(v))
            snprintf(out, cap, "%s", v->valuestring);
    }
    cJSON_Delete(pv);
    cJSON_Delete(pvc);
}

static int setup(void **state)
{
    (void)state;
    gd_log_init("itest", GD_LOG_WARN, 0, 2);
    c = e2e_client();
    if (!c || !e2e_install_crds(c) || !e2e_ns_create(c, "localpv", ns, sizeof ns)) return -1;
    if (!e2e_local_pvs_create(c, &vols, "localpv", PVS_PER_NODE, "128Mi")) return -1;
    if (vols.nodes < 3) {
        fprintf(stderr, "localpv: %d nodes, want at least 3\n", vols.nodes);
        return -1;
    }
    e2e_log_dir(logdir, sizeof logdir, "localpv");
    snprintf(rundir, sizeof rundir, "/tmp/godis-itest-localpv-%d", (int)getpid());
    snprintf(mgr_log, sizeof mgr_log, "%s/manager.log", logdir);
    manager = e2e_start_manager(rundir, mgr_log, 1, false, NULL, 0);
    fprintf(stderr, "localpv: logs in %s, %d PVs on %d nodes\n", logdir, vols.n, vols.nodes);
    return manager > 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    e2e_stop(manager, 15000);
    e2e_ns_delete(c, ns);
    e2e_local_pvs_delete(c, &vols);
    e2e_remove_dir(rundir);
    k8s_client_destroy(&c);
    return 0;
}

/* The member's ReplicaSet: its nodeAffinity (NULL: none) copied into *aff, its generation. */
static int64_t rs_state(const char *godis, cJSON **aff)
{
    cJSON *rs = NULL;
    assert_int_equal(k8s_get(c, &K8S_RES_REPLICASETS, ns, godis, &rs, NULL), GD_OK);
    const cJSON *na = gd_json_path(rs, "spec.template.spec.affinity.nodeAffinity");
    *aff = na ? cJSON_Duplicate(na, 1) : NULL;
    int64_t gen = gd_meta_generation(rs);
    cJSON_Delete(rs);
    return gen;
}

/* The Godis's status.volumeNode into out; false while there is none. */
static bool volume_node(const char *godis, char *out, size_t cap)
{
    cJSON *g = NULL;
    out[0] = '\0';
    if (k8s_get(c, &K8S_RES_GODISES, ns, godis, &g, NULL) != GD_OK) return false;
    snprintf(out, cap, "%s", gd_json_str_or(g, "status.volumeNode", ""));
    cJSON_Delete(g);
    return *out;
}

/* Every member: volumeNode recorded, the node its PV names and its pod runs on; its
 * ReplicaSet never pinned nor otherwise updated. */
static void check_unpinned(const e2e_member *m, int n)
{
    for (int i = 0; i < n; i++) {
        char godis[160], claim[200], pv_node[128], vnode[128] = "";
        snprintf(godis, sizeof godis, "lp-%lld", (long long)m[i].id);
        snprintf(claim, sizeof claim, "data-%s", godis);
        /* written with the status that says Running, which converged may not wait for */
        WAIT_UNTIL(volume_node(godis, vnode, sizeof vnode), 30000);
        pv_node_of(claim, pv_node, sizeof pv_node);
        fprintf(stderr, "localpv: member %lld on %s, volumeNode %s, its PV on %s\n",
                (long long)m[i].id, m[i].node, vnode, pv_node);
        assert_string_equal(vnode, m[i].node);
        assert_string_equal(pv_node, m[i].node);
        cJSON *aff = NULL;
        int64_t gen = rs_state(godis, &aff);
        if (aff) {
            char *txt = cJSON_PrintUnformatted(aff);
            fprintf(stderr, "localpv: ReplicaSet %s pinned: %s\n", godis, txt);
            cJSON_free(txt);
        }
        assert_null(aff);
        assert_int_equal(gen, 1);        /* created once, never updated */
    }
}

static void write_keys(const e2e_member *m)
{
    godis_client *g = e2e_member_dial(m->ip);
    assert_non_null(g);
    for (int i = 0; i < 10; i++) {
        char k[48], v[48];
        snprintf(k, sizeof k, "lp-key-%d", i);
        snprintf(v, sizeof v, "lp-value-%d", i);
        assert_int_equal(godis_set(g, k, v), GD_OK);
    }
    godis_client_destroy(&g);
}

/* The first of the 10 keys member m does not answer with its value, or -1; its Raft id. */
static int missing_key(const e2e_member *m, long long *raft_id)
{
    godis_client *g = e2e_member_dial(m->ip);
    godis_hello_info hi = {0};
    *raft_id = g && godis_hello(g, &hi) == GD_OK ? hi.id : -1;
    int missing = -1;
    for (int i = 0; i < 10 && missing < 0; i++) {
        char k[48], want[48], *v = NULL;
        snprintf(k, sizeof k, "lp-key-%d", i);
        snprintf(want, sizeof want, "lp-value-%d", i);
        if (!(g && godis_get(g, k, &v) == GD_OK && v && !strcmp(v, want))) missing = i;
        free(v);
    }
    godis_client_destroy(&g);
    return missing;
}

/* The live member with id, its pod not pod_uid (a new pod), into *out. */
static bool member_back(int64_t id, const char *old_pod_uid, e2e_member *out)
{
    e2e_member m[8];
    int n = e2e_members_now(c, ns, "lp", m, 8);
    const e2e_member *x = n > 0 ? e2e_member_by_id(m, n, id) : NULL;
    if (!x || !strcmp(x->pod_uid, old_pod_uid) || !*x->ip) return false;
    *out = *x;
    return true;
}

static void test_no_pin_on_pvs_that_name_their_node(void **state)
{
    (void)state;
    char spec[300];
    snprintf(spec, sizeof spec, "{\"replicas\":3,\"storage\":{\"size\":\"64Mi\",\"storageClassName\":\"%s\"}}",
             vols.class_name);
    assert_true(e2e_cluster_create_spec(c, ns, "lp", spec));
    assert_true(e2e_wait_converged(c, ns, "lp", 3, 180000));
    e2e_member m[8];
    assert_int_equal(e2e_members_now(c, ns, "lp", m, 8), 3);
    check_unpinned(m, 3);

    /* a member's pod deleted comes back where its data is, with it, under the same id */
    const e2e_member victim = m[1];
    write_keys(&victim);
    long long raft_before = -1;
    assert_int_equal(missing_key(&victim, &raft_before), -1);
    assert_int_equal(raft_before, victim.id);
    char pod[128];
    snprintf(pod, sizeof pod, "%s", victim.pod);
    assert_true(e2e_delete(c, &K8S_RES_PODS, ns, pod, -1));
    e2e_member back;
    bool is_back = false;
    WAIT_UNTIL((is_back = member_back(victim.id, victim.pod_uid, &back)), 120000);
    assert_true(is_back);
    assert_true(e2e_wait_converged(c, ns, "lp", 3, 120000));
    assert_true(member_back(victim.id, victim.pod_uid, &back));
    fprintf(stderr, "localpv: member %lld back on %s (was %s)\n", (long long)victim.id, back.node,
            victim.node);
    assert_string_equal(back.node, victim.node);
    assert_string_equal(back.pvc_uid, victim.pvc_uid);
    long long raft_after = -1;
    int missing = 0;
    WAIT_UNTIL((missing = missing_key(&back, &raft_after)) < 0, 20000);
    assert_int_equal(missing, -1);
    assert_int_equal(raft_after, victim.id);
    /* still unpinned, never updated, after the restart's reconciles too */
    assert_int_equal(e2e_members_now(c, ns, "lp", m, 8), 3);
    check_unpinned(m, 3);
    cJSON *gc = e2e_cluster_get(c, ns, "lp");
    int64_t ids[8];
    assert_int_equal(e2e_status_members(gc, ids, 8), 3);
    assert_int_equal(gd_json_int_or(gc, "status.nextID", 0), 4);   /* nobody migrated */
    cJSON_Delete(gc);
    assert_true(e2e_check_consistent(c, ns, "lp"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_pin_on_pvs_that_name_their_node),
    };
    return cmocka_run_group_tests_name("itest_local_pv", tests, setup, teardown);
}
