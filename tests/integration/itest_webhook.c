/* itest_webhook — the eviction webhook (issue 19.1) with the real kube-apiserver calling it.
 *
 * godis-manager runs with --webhook-bind-address 127.0.0.1:P --webhook-url
 * https://127.0.0.1:P/eviction (self-managed certificates): it must register its
 * ValidatingWebhookConfiguration with that URL and a caBundle that verifies what it serves.
 * Then real Evictions (POST pods/NAME/eviction, as kubectl drain sends them) on a 3-member
 * GodisCluster: a dry run gets 429 and changes nothing; a real one gets 429 and marks the
 * pod; a second member of the same cluster right after gets 429 and is not marked (one move
 * at a time); a repeat gets 429; the operator moves the member (a new id joins, the old is
 * forgotten, one membership change at a time, seen by a watch) and the eviction of the old
 * pod then gets 404 from the webhook; a pod that is not a member is evicted at once; a
 * malformed review sent straight to the webhook gets 400. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <curl/curl.h>
#include "e2e_lib.h"
#include "e2e_procs.h"
#include "e2e_webhook.h"
#include "gd_json.h"
#include "gd_log.h"
#include "k8s_config.h"

static k8s_client *c;        /* no client-side 429 retries: the test reads every answer */
static pid_t manager;
static char url[128], ns[128], rundir[256], logdir[256];

static int setup(void **state)
{
    (void)state;
    gd_log_init("itest", GD_LOG_WARN, 0, 2);
    char err[512];
    k8s_config_opts co = {.allow_in_cluster = false};
    k8s_config *cfg = NULL;
    if (k8s_config_load(&co, &cfg, err, sizeof err) != GD_OK) {
        fprintf(stderr, "itest_webhook: %s\n", err);
        return -1;
    }
    k8s_client_opts ko;
    k8s_client_opts_default(&ko);
    ko.max_retries_429 = 0;
    c = k8s_client_new(&cfg, &ko);
    if (!c || !e2e_install_crds(c) || !e2e_ns_create(c, "webhook", ns, sizeof ns)) return -1;
    char log[512];
    e2e_log_dir(logdir, sizeof logdir, "webhook");
    snprintf(rundir, sizeof rundir, "/tmp/godis-itest-webhook-%d", (int)getpid());
    snprintf(log, sizeof log, "%s/manager.log", logdir);
    manager = e2e_start_manager(rundir, log, 1, true, url, sizeof url);
    fprintf(stderr, "itest_webhook: logs in %s\n", logdir);
    return manager > 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    int st = e2e_stop(manager, 15000);
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
        fprintf(stderr, "itest_webhook: manager stopped with status 0x%x\n", st);
    e2e_delete_webhook_config(c);
    e2e_ns_delete(c, ns);
    e2e_remove_dir(rundir);
    k8s_client_destroy(&c);
    return 0;
}

/* POST an Eviction (policy/v1beta1, what Kubernetes 1.20 and its kubectl send). */
static gd_err evict(const char *pod, bool dry, k8s_status *st)
{
    char path[512], body[512];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s/eviction", ns, pod);
    snprintf(body, sizeof body, "{\"apiVersion\":\"policy/v1beta1\",\"kind\":\"Eviction\","
             "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"}%s}", pod, ns,
             dry ? ",\"deleteOptions\":{\"dryRun\":[\"All\"]}" : "");
    memset(st, 0, sizeof *st);
    return k8s_request(c, "POST", path, body, "application/json", NULL, st);
}

static cJSON *get_pod(const char *name)
{
    cJSON *p = NULL;
    return k8s_get(c, &K8S_RES_PODS, ns, name, &p, NULL) == GD_OK ? p : NULL;
}

static bool marked(const char *name)
{
    cJSON *p = get_pod(name);
    bool m = p && gd_meta_annotation(p, "godis.kumkeehyun.github.com/reschedule");
    cJSON_Delete(p);
    return m;
}

static char ca_pem[16384];

static void test_registers_url_and_ca(void **state)
{
    (void)state;
    cJSON *v = NULL;
    int64_t deadline = e2e_now_ms() + 30000;
    const char *ca = NULL;
    while (e2e_now_ms() < deadline) {
        cJSON_Delete(v);
        v = NULL;
        if (k8s_request(c, "GET", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/" E2E_WEBHOOK_CONFIG, NULL, NULL, &v, NULL) == GD_OK &&
            (ca = gd_json_str_or(cJSON_GetArrayItem(gd_json_path(v, "webhooks"), 0), "clientConfig.caBundle", NULL)))
            break;
        usleep(100000);
    }
    assert_non_null(ca);
    const cJSON *w = cJSON_GetArrayItem(gd_json_path(v, "webhooks"), 0);
    assert_string_equal(gd_json_str_or(w, "clientConfig.url", ""), url);
    assert_string_equal(gd_json_str_or(w, "sideEffects", ""), "NoneOnDryRun");
    assert_string_equal(gd_json_str_or(w, "failurePolicy", ""), "Ignore");
    unsigned char *pem = NULL;
    size_t len = 0;
    assert_int_equal(gd_base64_decode(ca, strlen(ca), &pem, &len), GD_OK);
    assert_true(len < sizeof ca_pem);
    memcpy(ca_pem, pem, len);
    ca_pem[len] = '\0';
    free(pem);
    cJSON_Delete(v);
    assert_non_null(strstr(ca_pem, "BEGIN CERTIFICATE"));
}

static size_t keep(char *p, size_t s, size_t n, void *ud)
{
    char *buf = ud;
    size_t have = strlen(buf), len = s * n;
    if (have + len < 1024) { memcpy(buf + have, p, len); buf[have + len] = '\0'; }
    return s * n;
}

/* Straight to the webhook, trusting only the registered caBundle: TLS verifies (the
 * certificate is the one the API server trusts) and a malformed body is a 400. */
static void test_malformed_review_is_400(void **state)
{
    (void)state;
    assert_true(ca_pem[0]);
    const char *bodies[] = {"{\"apiVersion\":\"admission.k8s.io/v1\"", "[]",
                            "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":7}}"};
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        CURL *h = curl_easy_init();
        char out[1024] = "";
        struct curl_blob b = {ca_pem, strlen(ca_pem), CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, bodies[i]);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, keep);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
        CURLcode rc = curl_easy_perform(h);
        long code = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        curl_easy_cleanup(h);
        assert_int_equal(rc, CURLE_OK);
        assert_int_equal(code, 400);
        assert_non_null(strstr(out, "invalid AdmissionReview"));
    }
}

/* The members' pods, by Godis name: pods[i] for the i-th member pod found. */
static int member_pods(char names[][128], char godis[][128], int cap)
{
    k8s_list_opts lo = {.label_selector = "cluster-name=evict"};
    cJSON *list = NULL;
    if (k8s_list(c, &K8S_RES_PODS, ns, &lo, &list, NULL) != GD_OK) return 0;
    int n = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, gd_json_path(list, "items")) {
        if (n >= cap || gd_meta_deleting(p)) continue;
        snprintf(names[n], 128, "%s", gd_meta_name(p));
        snprintf(godis[n], 128, "%s", gd_meta_label(p, "node-name"));
        n++;
    }
    cJSON_Delete(list);
    return n;
}

static void test_member_eviction_moves_then_404(void **state)
{
    (void)state;
    assert_true(e2e_cluster_create(c, ns, "evict", 3));
    assert_true(e2e_wait_converged(c, ns, "evict", 3, 180000));
    e2e_history h;
    assert_true(e2e_history_start(&h, c, ns, "evict"));
    char pods[8][128], godis[8][128];
    assert_int_equal(member_pods(pods, godis, 8), 3);
    k8s_status st;
    /* dry run: the answer a real eviction gets, and nothing changes */
    assert_int_equal(evict(pods[0], true, &st), GD_ERR_TOO_MANY_REQUESTS);
    assert_int_equal(st.http_status, 429);
    assert_non_null(strstr(st.message, "dry run"));
    assert_false(marked(pods[0]));
    /* the real one: 429, the pod is marked */
    assert_int_equal(evict(pods[0], false, &st), GD_ERR_TOO_MANY_REQUESTS);
    assert_non_null(strstr(st.message, "being moved"));
    assert_true(marked(pods[0]));
    /* another member of the same cluster right after: 429, not marked */
    assert_int_equal(evict(pods[1], false, &st), GD_ERR_TOO_MANY_REQUESTS);
    assert_non_null(strstr(st.message, "one at a time"));
    assert_false(marked(pods[1]));
    /* repeated: 429 again (until the pod is gone) */
    gd_err e = evict(pods[0], false, &st);
    assert_true(e == GD_ERR_TOO_MANY_REQUESTS || e == GD_ERR_NOT_FOUND);
    /* the operator moves the member: the old pod goes away */
    int64_t deadline = e2e_now_ms() + 180000;
    cJSON *p = NULL;
    while (e2e_now_ms() < deadline && (p = get_pod(pods[0]))) {
        cJSON_Delete(p);
        usleep(200000);
    }
    assert_null(p);
    /* then the eviction kubectl keeps retrying gets 404 from the webhook, ending its loop */
    assert_int_equal(evict(pods[0], false, &st), GD_ERR_NOT_FOUND);
    assert_int_equal(st.http_status, 404);
    assert_non_null(strstr(st.message, "admission webhook"));
    assert_true(e2e_wait_converged(c, ns, "evict", 3, 180000));
    assert_true(e2e_wait_consistent(c, ns, "evict", 60000));
    assert_true(e2e_history_stop(&h));
    /* the moved member got a fresh id: its Godis is gone, the highest id is new */
    cJSON *gc = e2e_cluster_get(c, ns, "evict");
    int64_t ids[16];
    int n = e2e_status_members(gc, ids, 16);
    cJSON_Delete(gc);
    assert_int_equal(n, 3);
    char old[128];
    for (int i = 0; i < n; i++) {
        snprintf(old, sizeof old, "evict-%lld", (long long)ids[i]);
        assert_string_not_equal(old, godis[0]);
    }
    assert_true(h.max_id_seen >= 4);
}

static void test_non_member_evicted_at_once(void **state)
{
    (void)state;
    const char *pod = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"plain\","
        "\"labels\":{\"cluster-name\":\"evict\",\"node-name\":\"evict-9\"}},"
        "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"none\"}]}}";
    cJSON *obj = cJSON_Parse(pod);
    /* labelled like a member, but no operator ReplicaSet owns it: not a member */
    assert_int_equal(k8s_create(c, &K8S_RES_PODS, ns, obj, NULL, NULL), GD_OK);
    cJSON_Delete(obj);
    k8s_status st;
    assert_int_equal(evict("plain", false, &st), GD_OK);
    cJSON *p = get_pod("plain");
    assert_true(!p || gd_meta_deleting(p));
    cJSON_Delete(p);
}

/* A single-member cluster cannot move its member without stopping it: the eviction gets 429
 * saying so, and the pod is not marked (the operator could not honour it). */
static void test_single_member_cluster_not_moved(void **state)
{
    (void)state;
    assert_true(e2e_cluster_create(c, ns, "solo", 1));
    assert_true(e2e_wait_converged(c, ns, "solo", 1, 180000));
    k8s_list_opts lo = {.label_selector = "cluster-name=solo"};
    cJSON *list = NULL;
    assert_int_equal(k8s_list(c, &K8S_RES_PODS, ns, &lo, &list, NULL), GD_OK);
    char pod[128];
    snprintf(pod, sizeof pod, "%s", gd_meta_name(cJSON_GetArrayItem(gd_json_path(list, "items"), 0)));
    cJSON_Delete(list);
    k8s_status st;
    assert_int_equal(evict(pod, false, &st), GD_ERR_TOO_MANY_REQUESTS);
    assert_non_null(strstr(st.message, "single member"));
    assert_false(marked(pod));
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registers_url_and_ca),
        cmocka_unit_test(test_malformed_review_is_400),
        cmocka_unit_test(test_member_eviction_moves_then_404),
        cmocka_unit_test(test_non_member_evicted_at_once),
        cmocka_unit_test(test_single_member_cluster_not_moved),
    };
    int rc = cmocka_run_group_tests_name("itest_webhook", tests, setup, teardown);
    curl_global_cleanup();
    return rc;
}
