/* Tests of the member pods' spread (issue 19.3): pod anti-affinity on kubernetes.io/hostname
 * against the other members of the same cluster — preferred by default, required or none on
 * request (spec.antiAffinity) — and where a moving member's replacement could go (issue 19.2). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "godis_children.h"
#include "godis_pdb.h"
#include "godis_place.h"
#include "gd_json.h"

static cJSON *rs_with(const char *mode)
{
    godis_child_spec s = {.ns = "ns1", .cluster = "web", .godis = "web-4", .godis_uid = "u",
                          .id = 4, .anti_affinity = mode};
    return godis_build_replicaset(&s);
}

static void check_term(const cJSON *term)
{
    assert_non_null(term);
    assert_string_equal(gd_json_str_or(term, "topologyKey", ""), "kubernetes.io/hostname");
    /* the whole cluster, not just this member: node-name would select only itself */
    const cJSON *ml = gd_json_path(term, "labelSelector.matchLabels");
    assert_int_equal(cJSON_GetArraySize(ml), 1);
    assert_string_equal(gd_json_str_or(ml, "cluster-name", ""), "web");
}

static void test_preferred_by_default(void **st)
{
    (void)st;
    const char *modes[] = {NULL, "preferred", "something-else"};
    for (int i = 0; i < 3; i++) {
        cJSON *rs = rs_with(modes[i]);
        const cJSON *pa = gd_json_path(rs, "spec.template.spec.affinity.podAntiAffinity");
        assert_non_null(pa);
        assert_null(gd_json_path(pa, "requiredDuringSchedulingIgnoredDuringExecution"));
        const cJSON *w = cJSON_GetArrayItem(gd_json_path(pa, "preferredDuringSchedulingIgnoredDuringExecution"), 0);
        assert_int_equal(gd_json_int_or(w, "weight", 0), 100);
        check_term(gd_json_path(w, "podAffinityTerm"));
        cJSON_Delete(rs);
    }
}

static void test_required_and_none(void **st)
{
    (void)st;
    cJSON *rs = rs_with("required");
    const cJSON *pa = gd_json_path(rs, "spec.template.spec.affinity.podAntiAffinity");
    assert_null(gd_json_path(pa, "preferredDuringSchedulingIgnoredDuringExecution"));
    check_term(cJSON_GetArrayItem(gd_json_path(pa, "requiredDuringSchedulingIgnoredDuringExecution"), 0));
    cJSON_Delete(rs);
    rs = rs_with("none");
    assert_null(gd_json_path(rs, "spec.template.spec.affinity"));
    /* the rest of the pod contract is untouched */
    assert_int_equal(gd_json_int_or(rs, "spec.replicas", 0), 1);
    cJSON_Delete(rs);
}

/* The PDB: maxUnavailable 1 over exactly the cluster's member pods, owned by the cluster. */
static void test_pdb(void **st)
{
    (void)st;
    const char *versions[] = {"policy/v1", "policy/v1beta1"};
    for (int i = 0; i < 2; i++) {
        cJSON *p = godis_build_pdb(versions[i], "ns1", "web", "uid-web");
        assert_string_equal(gd_json_str_or(p, "apiVersion", ""), versions[i]);
        assert_string_equal(gd_json_str_or(p, "kind", ""), "PodDisruptionBudget");
        assert_string_equal(gd_meta_name(p), "web");
        assert_string_equal(gd_meta_namespace(p), "ns1");
        assert_int_equal(gd_json_int_or(p, "spec.maxUnavailable", 0), 1);
        assert_null(gd_json_path(p, "spec.minAvailable"));
        const cJSON *ml = gd_json_path(p, "spec.selector.matchLabels");
        assert_int_equal(cJSON_GetArraySize(ml), 1);
        assert_string_equal(gd_json_str_or(ml, "cluster-name", ""), "web");
        assert_true(gd_meta_owned_by(p, "GodisCluster", "uid-web"));
        const cJSON *own = gd_meta_controller_owner(p);
        assert_non_null(own);
        cJSON_Delete(p);
    }
}

static cJSON *nodes_json(void)
{
    return cJSON_Parse(
        "[{\"metadata\":{\"name\":\"n1\"},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}},"
        " {\"metadata\":{\"name\":\"n2\"},\"spec\":{\"unschedulable\":true,\"taints\":[{\"key\":"
        "\"node.kubernetes.io/unschedulable\",\"effect\":\"NoSchedule\"}]},\"status\":{\"conditions\":"
        "[{\"type\":\"Ready\",\"status\":\"True\"}]}},"
        " {\"metadata\":{\"name\":\"n3\"},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}},"
        " {\"metadata\":{\"name\":\"n4\"},\"spec\":{\"taints\":[{\"key\":\"gpu\",\"effect\":"
        "\"PreferNoSchedule\"},{\"key\":\"dedicated\",\"effect\":\"NoExecute\"}]},\"status\":"
        "{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}},"
        " {\"metadata\":{\"name\":\"n5\"},\"spec\":{\"taints\":[{\"key\":\"soft\",\"effect\":"
        "\"PreferNoSchedule\"}]},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}]");
}

/* The coarse scheduler question: its own node, cordoned, not Ready, a NoSchedule/NoExecute
 * taint and (required) a node holding another member are out; PreferNoSchedule is not. */
static void test_place_candidates(void **st)
{
    (void)st;
    cJSON *nodes = nodes_json();
    const char *held[] = {"n1", "n5"};
    godis_place_req r = {.own_node = "n1", .member_nodes = held, .nmember_nodes = 2};
    char why[GODIS_BLOCKED_WHY_MAX];
    assert_int_equal(godis_place_candidates(nodes, &r, why, sizeof why), 1);   /* n5 */
    assert_string_equal(why, "");
    r.required = true;                          /* n5 holds another member */
    assert_int_equal(godis_place_candidates(nodes, &r, why, sizeof why), 0);
    assert_string_equal(why, "cannot be moved: no other schedulable node for its replacement "
                        "(n1: its own node, n2: cordoned, n3: not Ready, n4: taint dedicated:NoExecute, "
                        "n5: holds another member (antiAffinity required))");
    r.required = false;
    r.own_node = "n5";                          /* n1 is a candidate for a member on n5 */
    assert_int_equal(godis_place_candidates(nodes, &r, why, sizeof why), 1);
    cJSON *none = cJSON_CreateArray();          /* an empty cache is not judged */
    assert_int_equal(godis_place_candidates(none, &r, why, sizeof why), -1);
    char tiny[20];                              /* a short buffer truncates, never overflows */
    r.own_node = "n1";
    r.required = true;
    assert_int_equal(godis_place_candidates(nodes, &r, tiny, sizeof tiny), 0);
    assert_int_equal(strlen(tiny), sizeof tiny - 1);
    cJSON_Delete(none);
    cJSON_Delete(nodes);
}

static void test_pod_unschedulable(void **st)
{
    (void)st;
    char msg[200];
    cJSON *p = cJSON_Parse("{\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\","
                           "\"status\":\"False\",\"reason\":\"Unschedulable\",\"message\":\"0/3 nodes are "
                           "available: 3 node(s) were unschedulable.\"}]}}");
    assert_true(godis_pod_unschedulable(p, msg, sizeof msg));
    assert_string_equal(msg, "cannot be scheduled: 0/3 nodes are available: 3 node(s) were unschedulable.");
    cJSON_Delete(p);
    p = cJSON_Parse("{\"status\":{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\"}]}}");
    assert_false(godis_pod_unschedulable(p, msg, sizeof msg));
    cJSON_Delete(p);
    p = cJSON_Parse("{\"status\":{}}");                /* not looked at by the scheduler yet */
    assert_false(godis_pod_unschedulable(p, msg, sizeof msg));
    cJSON_Delete(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preferred_by_default),
        cmocka_unit_test(test_required_and_none),
        cmocka_unit_test(test_pdb),
        cmocka_unit_test(test_place_candidates),
        cmocka_unit_test(test_pod_unschedulable),
    };
    return cmocka_run_group_tests_name("godis_spread", tests, NULL, NULL);
}
