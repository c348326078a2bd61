/* test_client.c — the Kubernetes REST client: resource table and paths, and (against the
 * libmicrohttpd helper on 127.0.0.1) every verb as the server saw it, retries, tokens, TLS,
 * watches and concurrency. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "k8s_client.h"

static void test_resource_lookup(void **state)
{
    (void)state;
    assert_ptr_equal(k8s_resource_lookup("Pod"), &K8S_RES_PODS);
    assert_ptr_equal(k8s_resource_lookup("pods"), &K8S_RES_PODS);
    assert_ptr_equal(k8s_resource_lookup("pod"), &K8S_RES_PODS);
    assert_ptr_equal(k8s_resource_lookup("po"), &K8S_RES_PODS);
    assert_ptr_equal(k8s_resource_lookup("GodisCluster"), &K8S_RES_GODISCLUSTERS);
    assert_ptr_equal(k8s_resource_lookup("godises"), &K8S_RES_GODISES);
    assert_ptr_equal(k8s_resource_lookup("crd"), &K8S_RES_CRDS);
    assert_ptr_equal(k8s_resource_lookup("crds"), &K8S_RES_CRDS);
    assert_ptr_equal(k8s_resource_lookup("pdb"), &K8S_RES_PDBS);
    assert_ptr_equal(k8s_resource_lookup("Lease"), &K8S_RES_LEASES);
    assert_null(k8s_resource_lookup("widgets"));
    assert_null(k8s_resource_lookup(""));
    assert_null(k8s_resource_lookup(NULL));
    assert_string_equal(K8S_RES_PDBS.version, "v1beta1");
    assert_string_equal(K8S_RES_GODISES.kind, "Godis");
    assert_false(K8S_RES_NODES.namespaced);
    assert_true(K8S_RES_LEASES.namespaced);
}

static void test_paths(void **state)
{
    (void)state;
    char b[256];
    assert_int_equal(k8s_path(b, sizeof b, &K8S_RES_PODS, "ns1", "p1", "status"),
                     (int)strlen("/api/v1/namespaces/ns1/pods/p1/status"));
    assert_string_equal(b, "/api/v1/namespaces/ns1/pods/p1/status");
    k8s_path(b, sizeof b, &K8S_RES_PODS, NULL, NULL, NULL);
    assert_string_equal(b, "/api/v1/pods");
    k8s_path(b, sizeof b, &K8S_RES_PODS, "", NULL, NULL);
    assert_string_equal(b, "/api/v1/pods");
    k8s_path(b, sizeof b, &K8S_RES_GODISCLUSTERS, "default", "example-godis", NULL);
    assert_string_equal(b, "/apis/kumkeehyun.github.com/v1/namespaces/default/godisclusters/"
                           "example-godis");
    /* cluster-scoped: the namespace is ignored */
    k8s_path(b, sizeof b, &K8S_RES_NODES, "default", "n1", NULL);
    assert_string_equal(b, "/api/v1/nodes/n1");
    k8s_path(b, sizeof b, &K8S_RES_LEASES, "kube-system", "godis-operator", NULL);
    assert_string_equal(b, "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/"
                           "godis-operator");
    /* hostile names are encoded, never interpreted */
    k8s_path(b, sizeof b, &K8S_RES_CONFIGMAPS, "a/b", "x?y=1&z#w %", NULL);
    assert_string_equal(b, "/api/v1/namespaces/a%2Fb/configmaps/x%3Fy%3D1%26z%23w%20%25");
    assert_int_equal(k8s_path(b, sizeof b, &K8S_RES_CONFIGMAPS, "ns", "..", NULL), -1);
    assert_int_equal(k8s_path(b, sizeof b, &K8S_RES_CONFIGMAPS, "..", "x", NULL), -1);
    assert_int_equal(k8s_path(b, sizeof b, &K8S_RES_PODS, "ns", NULL, "status"), -1);
    /* too small */
    assert_int_equal(k8s_path(b, 10, &K8S_RES_PODS, "ns1", "p1", NULL), -1);
    assert_string_equal(b, "");
    size_t need = strlen("/api/v1/namespaces/ns1/pods/p1");
    assert_int_equal(k8s_path(b, need, &K8S_RES_PODS, "ns1", "p1", NULL), -1);
    assert_int_equal(k8s_path(b, need + 1, &K8S_RES_PODS, "ns1", "p1", NULL), (int)need);
    assert_int_equal(k8s_path(NULL, 5, &K8S_RES_PODS, NULL, NULL, NULL), -1);
    assert_int_equal(k8s_path(b, sizeof b, NULL, NULL, NULL, NULL), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resource_lookup),
        cmocka_unit_test(test_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
