/* itest_devcluster.c — the devcluster seen through the project's own client (common/):
 * the admin identity works, alice (no groups) is refused by RBAC until a RoleBinding lets
 * her in, and the nodes the node agent registered are Ready. Needs the environment of
 * `tools/devcluster env` (tests/run-integration.sh provides it); without it every test is
 * skipped. The expected node count is DEVCLUSTER_DIR/run/nodes, written by `up`. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "gd_json.h"
#include "gd_time.h"
#include "k8s_client.h"
#include "k8s_config.h"

static k8s_client *admin, *alice;
static char ns[64];

static cJSON *parse(const char *s) { return gd_json_parse(s, strlen(s)); }

static k8s_client *client_for(const char *kubeconfig)
{
    char err[512];
    k8s_config *cfg = NULL;
    k8s_config_opts o = {.kubeconfig = kubeconfig};
    if (k8s_config_load(&o, &cfg, err, sizeof err) != GD_OK) {
        fprintf(stderr, "itest_devcluster: %s\n", err);
        return NULL;
    }
    k8s_client_opts co;
    k8s_client_opts_default(&co);
    co.qps = -1;
    return k8s_client_new(&cfg, &co);
}

static int setup(void **state)
{
    (void)state;
    const char *kc = getenv("KUBECONFIG"), *akc = getenv("DEVCLUSTER_ALICE_KUBECONFIG");
    if (!kc || !akc)
        return 0;               /* no devcluster: tests skip */
    admin = client_for(kc);
    alice = client_for(akc);
    if (!admin || !alice)
        return -1;
    snprintf(ns, sizeof ns, "itest-dc-%d", (int)getpid());
    cJSON *obj = parse("{\"metadata\":{}}");
    cJSON_AddStringToObject(cJSON_GetObjectItem(obj, "metadata"), "name", ns);
    gd_err e = k8s_create(admin, &K8S_RES_NAMESPACES, NULL, obj, NULL, NULL);
    cJSON_Delete(obj);
    return e == GD_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    if (admin && ns[0]) {
        k8s_delete_opts o;
        k8s_delete_opts_default(&o);
        k8s_delete(admin, &K8S_RES_NAMESPACES, NULL, ns, &o, NULL);
    }
    k8s_client_destroy(&admin);
    k8s_client_destroy(&alice);
    return 0;
}

static int expected_nodes(void)
{
    char path[1024];
    const char *d = getenv("DEVCLUSTER_DIR");
    if (!d)
        return 0;
    snprintf(path, sizeof path, "%s/run/nodes", d);
    FILE *f = fopen(path, "r");
    int n = 0;
    if (f) {
        if (fscanf(f, "%d", &n) != 1)
            n = 0;
        fclose(f);
    }
    return n;
}

static int count_ready_nodes(void)
{
    cJSON *list = NULL;
    k8s_list_opts lo = {0};
    if (k8s_list(admin, &K8S_RES_NODES, NULL, &lo, &list, NULL) != GD_OK)
        return -1;
    int ready = 0;
    const cJSON *node;
    cJSON_ArrayForEach(node, cJSON_GetObjectItem(list, "items")) {
        const cJSON *c;
        cJSON_ArrayForEach(c, gd_json_path(node, "status.conditions"))
            if (!strcmp(gd_json_str_or(c, "type", ""), "Ready") &&
                !strcmp(gd_json_str_or(c, "status", ""), "True"))
                ready++;
    }
    cJSON_Delete(list);
    return ready;
}

/* `up` waited for its nodes; still, a node agent on a loaded machine gets a few seconds. */
static void test_nodes_ready(void **state)
{
    (void)state;
    if (!admin)
        skip();
    int want = expected_nodes(), got = -1;
    if (want == 0) {
        printf("  no node agent was started: nothing to check\n");
        return;
    }
    for (int i = 0; i < 100 && (got = count_ready_nodes()) < want; i++)
        usleep(200 * 1000);
    printf("  %d of %d nodes Ready\n", got, want);
    assert_int_equal(got, want);
}

static void test_rbac_refuses_alice(void **state)
{
    (void)state;
    if (!admin)
        skip();
    k8s_status st;
    cJSON *out = NULL;
    k8s_list_opts lo = {0};
    assert_int_equal(k8s_list(alice, &K8S_RES_SECRETS, ns, &lo, &out, &st), GD_ERR_FORBIDDEN);
    assert_int_equal(st.http_status, 403);
    assert_null(out);
    assert_int_equal(k8s_list(admin, &K8S_RES_SECRETS, ns, &lo, &out, &st), GD_OK);
    cJSON_Delete(out);
}

static void test_rolebinding_lets_alice_in(void **state)
{
    (void)state;
    if (!admin)
        skip();
    cJSON *role = parse(
        "{\"metadata\":{\"name\":\"cm-reader\"},\"rules\":[{\"apiGroups\":[\"\"],"
        "\"resources\":[\"configmaps\"],\"verbs\":[\"list\"]}]}");
    cJSON *rb = parse(
        "{\"metadata\":{\"name\":\"alice-cm\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\","
        "\"kind\":\"Role\",\"name\":\"cm-reader\"},\"subjects\":[{\"apiGroup\":"
        "\"rbac.authorization.k8s.io\",\"kind\":\"User\",\"name\":\"alice\"}]}");
    assert_non_null(role);
    assert_non_null(rb);
    assert_int_equal(k8s_create(admin, &K8S_RES_ROLES, ns, role, NULL, NULL), GD_OK);
    assert_int_equal(k8s_create(admin, &K8S_RES_ROLEBINDINGS, ns, rb, NULL, NULL), GD_OK);
    cJSON_Delete(role);
    cJSON_Delete(rb);
    gd_err e = GD_ERR_FORBIDDEN;
    k8s_list_opts lo = {0};
    for (int i = 0; i < 50 && e == GD_ERR_FORBIDDEN; i++) {
        cJSON *out = NULL;
        if ((e = k8s_list(alice, &K8S_RES_CONFIGMAPS, ns, &lo, &out, NULL)) == GD_ERR_FORBIDDEN)
            usleep(100 * 1000);
        cJSON_Delete(out);
    }
    assert_int_equal(e, GD_OK);
    /* the binding is for configmaps only, and only in this namespace */
    assert_int_equal(k8s_list(alice, &K8S_RES_SECRETS, ns, &lo, NULL, NULL), GD_ERR_FORBIDDEN);
    assert_int_equal(k8s_list(alice, &K8S_RES_CONFIGMAPS, "default", &lo, NULL, NULL), GD_ERR_FORBIDDEN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nodes_ready),
        cmocka_unit_test(test_rbac_refuses_alice),
        cmocka_unit_test(test_rolebinding_lets_alice_in),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
