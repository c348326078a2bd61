/* Tests of the member pods' spread (issue 19.3): pod anti-affinity on kubernetes.io/hostname
 * against the other members of the same cluster — preferred by default, required or none on
 * request (spec.antiAffinity). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "godis_children.h"
#include "godis_pdb.h"
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preferred_by_default),
        cmocka_unit_test(test_required_and_none),
        cmocka_unit_test(test_pdb),
    };
    return cmocka_run_group_tests_name("godis_spread", tests, NULL, NULL);
}
