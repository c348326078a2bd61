/* test_client.c — the Kubernetes REST client: resource table and paths, and (against the
 * libmicrohttpd helper on 127.0.0.1) every verb as the server saw it, transport errors,
 * timeouts, the User-Agent, 429 retries, the token bucket and concurrency. Watches are in
 * test_client_watch.c, bearer-token rotation and TLS in test_client_auth.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>
#include "k8s_client.h"
#include "gd_time.h"
#include "client_fixture.h"

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



static const char *STATUS_404 =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":"
    "\"pods \\\"nope\\\" not found\",\"reason\":\"NotFound\",\"code\":404}";

/* ---- verbs as the server saw them ---- */

static void test_get(void **state)
{
    client_fixture *f = *state;
    client_push(f->h, 200, NULL, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\"}}");
    cJSON *out = NULL;
    k8s_status st;
    assert_int_equal(k8s_get(f->c, &K8S_RES_PODS, "ns1", "p1", &out, &st), GD_OK);
    assert_int_equal(st.http_status, 200);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(out, "metadata"), "name")
                            ->valuestring, "p1");
    cJSON_Delete(out);
    const httpd_req *r = httpd_request(f->h, -1);
    assert_string_equal(r->method, "GET");
    assert_string_equal(r->uri, "/api/v1/namespaces/ns1/pods/p1");
    assert_string_equal(r->authorization, "Bearer tok123");
    assert_string_equal(r->accept, "application/json");
    assert_non_null(strstr(r->user_agent, "godis-operator"));
    assert_int_equal(r->body_len, 0);

    client_push(f->h, 404, NULL, STATUS_404);
    assert_int_equal(k8s_get(f->c, &K8S_RES_PODS, "ns1", "nope", &out, &st), GD_ERR_NOT_FOUND);
    assert_null(out);
    assert_int_equal(st.http_status, 404);
    assert_string_equal(st.reason, "NotFound");
    assert_string_equal(st.message, "pods \"nope\" not found");
    assert_int_equal(k8s_get(f->c, &K8S_RES_PODS, "ns1", "", &out, &st), GD_ERR_ARG);
    assert_int_equal(k8s_client_request_count(f->c), 2);
}

static void test_list_query_encoding(void **state)
{
    client_fixture *f = *state;
    client_push(f->h, 200, NULL, "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":\"9\","
                          "\"continue\":\"next\"},\"items\":[]}");
    k8s_list_opts o = {
        .label_selector = "app=godis,tier in (a,b)",
        .field_selector = "metadata.name=x",
        .limit = 50,
        .continue_token = "abc/=+&",
        .resource_version = "123",
        .resource_version_match = "NotOlderThan",
    };
    cJSON *out = NULL;
    assert_int_equal(k8s_list(f->c, &K8S_RES_CONFIGMAPS, "ns1", &o, &out, NULL), GD_OK);
    assert_non_null(cJSON_GetObjectItem(out, "items"));
    cJSON_Delete(out);
    const httpd_req *r = httpd_request(f->h, -1);
    assert_string_equal(r->method, "GET");
    assert_string_equal(r->uri, "/api/v1/namespaces/ns1/configmaps"
                                "?labelSelector=app%3Dgodis%2Ctier%20in%20%28a%2Cb%29"
                                "&fieldSelector=metadata.name%3Dx&limit=50"
                                "&continue=abc%2F%3D%2B%26&resourceVersion=123"
                                "&resourceVersionMatch=NotOlderThan");
    /* all namespaces, no options */
    client_push(f->h, 200, NULL, "{\"items\":[]}");
    assert_int_equal(k8s_list(f->c, &K8S_RES_PODS, NULL, NULL, &out, NULL), GD_OK);
    cJSON_Delete(out);
    assert_string_equal(httpd_request(f->h, -1)->uri, "/api/v1/pods");
}

static cJSON *gc_object(void)
{
    return cJSON_Parse("{\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"GodisCluster\","
                       "\"metadata\":{\"name\":\"gc1\",\"namespace\":\"ns1\","
                       "\"resourceVersion\":\"41\"},\"spec\":{\"replicas\":3},"
                       "\"status\":{\"status\":\"Running\"}}");
}

static void assert_body_equals(const httpd_req *r, const cJSON *want)
{
    cJSON *got = cJSON_ParseWithLength(r->body, r->body_len);
    assert_non_null(got);
    assert_true(cJSON_Compare(got, want, 1));
    cJSON_Delete(got);
}

static void test_create_update_status(void **state)
{
    client_fixture *f = *state;
    cJSON *obj = gc_object();
    cJSON *out = NULL;
    client_push(f->h, 201, NULL, "{\"metadata\":{\"name\":\"gc1\",\"resourceVersion\":\"42\"}}");
    assert_int_equal(k8s_create(f->c, &K8S_RES_GODISCLUSTERS, NULL, obj, &out, NULL), GD_OK);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(out, "metadata"),
                                            "resourceVersion")->valuestring, "42");
    cJSON_Delete(out);
    const httpd_req *r = httpd_request(f->h, -1);
    assert_string_equal(r->method, "POST");
    assert_string_equal(r->uri, "/apis/kumkeehyun.github.com/v1/namespaces/ns1/godisclusters");
    assert_string_equal(r->content_type, "application/json");
    assert_body_equals(r, obj);

    client_push(f->h, 409, NULL, "{\"kind\":\"Status\",\"reason\":\"AlreadyExists\",\"message\":"
                          "\"exists\",\"code\":409}");
    k8s_status st;
    assert_int_equal(k8s_create(f->c, &K8S_RES_GODISCLUSTERS, "ns1", obj, NULL, &st),
                     GD_ERR_ALREADY_EXISTS);

    client_push(f->h, 200, NULL, "{}");
    assert_int_equal(k8s_update(f->c, &K8S_RES_GODISCLUSTERS, obj, NULL, NULL), GD_OK);
    r = httpd_request(f->h, -1);
    assert_string_equal(r->method, "PUT");
    assert_string_equal(r->uri, "/apis/kumkeehyun.github.com/v1/namespaces/ns1/godisclusters/gc1");
    assert_string_equal(r->content_type, "application/json");
    assert_body_equals(r, obj);            /* carries resourceVersion 41 */

    client_push(f->h, 409, NULL, "{\"kind\":\"Status\",\"reason\":\"Conflict\",\"message\":\"the object "
                          "has been modified\",\"code\":409}");
    assert_int_equal(k8s_update_status(f->c, &K8S_RES_GODISCLUSTERS, obj, NULL, &st),
                     GD_ERR_CONFLICT);
    r = httpd_request(f->h, -1);
    assert_string_equal(r->method, "PUT");
    assert_string_equal(r->uri,
                        "/apis/kumkeehyun.github.com/v1/namespaces/ns1/godisclusters/gc1/status");
    assert_string_equal(st.message, "the object has been modified");

    /* objects without a name or namespace are refused before anything is sent */
    int before = httpd_request_count(f->h);
    cJSON *bad = cJSON_Parse("{\"metadata\":{\"name\":\"x\"}}");
    assert_int_equal(k8s_update(f->c, &K8S_RES_GODISCLUSTERS, bad, NULL, &st), GD_ERR_ARG);
    assert_int_equal(k8s_create(f->c, &K8S_RES_GODISCLUSTERS, NULL, bad, NULL, &st), GD_ERR_ARG);
    /* cluster-scoped needs no namespace */
    client_push(f->h, 201, NULL, "{}");
    assert_int_equal(k8s_create(f->c, &K8S_RES_NODES, NULL, bad, NULL, &st), GD_OK);
    assert_string_equal(httpd_request(f->h, -1)->uri, "/api/v1/nodes");
    assert_int_equal(httpd_request_count(f->h), before + 1);
    cJSON_Delete(bad);
    cJSON_Delete(obj);
}

static void test_patch_types(void **state)
{
    client_fixture *f = *state;
    static const struct {
        k8s_patch_type t;
        const char *ct, *sub;
    } P[] = {
        {K8S_PATCH_MERGE, "application/merge-patch+json", NULL},
        {K8S_PATCH_JSON, "application/json-patch+json", "status"},
        {K8S_PATCH_STRATEGIC, "application/strategic-merge-patch+json", NULL},
    };
    for (size_t i = 0; i < 3; i++) {
        const char *patch = P[i].t == K8S_PATCH_JSON
                                ? "[{\"op\":\"replace\",\"path\":\"/status/x\",\"value\":1}]"
                                : "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}";
        client_push(f->h, 200, NULL, "{\"ok\":true}");
        cJSON *out = NULL;
        assert_int_equal(k8s_patch(f->c, &K8S_RES_PODS, "ns1", "p1", P[i].t, patch, P[i].sub,
                                   &out, NULL), GD_OK);
        assert_non_null(out);
        cJSON_Delete(out);
        const httpd_req *r = httpd_request(f->h, -1);
        assert_string_equal(r->method, "PATCH");
        assert_string_equal(r->content_type, P[i].ct);
        assert_string_equal(r->body, patch);
        assert_string_equal(r->uri, P[i].sub ? "/api/v1/namespaces/ns1/pods/p1/status"
                                             : "/api/v1/namespaces/ns1/pods/p1");
    }
    assert_int_equal(k8s_patch(f->c, &K8S_RES_PODS, "ns1", "p1", (k8s_patch_type)9, "{}", NULL,
                               NULL, NULL), GD_ERR_ARG);
}

static void test_delete_options(void **state)
{
    client_fixture *f = *state;
    k8s_delete_opts o;
    k8s_delete_opts_default(&o);
    assert_int_equal(o.grace_period_seconds, -1);
    o.precondition_uid = "uid-1";
    o.precondition_rv = "77";
    o.propagation_policy = "Foreground";
    o.grace_period_seconds = 0;
    o.dry_run = true;
    client_push(f->h, 200, NULL, "{\"kind\":\"Status\",\"status\":\"Success\"}");
    assert_int_equal(k8s_delete(f->c, &K8S_RES_GODISES, "ns1", "gc1-1", &o, NULL), GD_OK);
    const httpd_req *r = httpd_request(f->h, -1);
    assert_string_equal(r->method, "DELETE");
    assert_string_equal(r->uri, "/apis/kumkeehyun.github.com/v1/namespaces/ns1/godises/gc1-1");
    assert_string_equal(r->content_type, "application/json");
    cJSON *want = cJSON_Parse("{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\","
                              "\"preconditions\":{\"uid\":\"uid-1\",\"resourceVersion\":\"77\"},"
                              "\"propagationPolicy\":\"Foreground\",\"gracePeriodSeconds\":0,"
                              "\"dryRun\":[\"All\"]}");
    assert_body_equals(r, want);
    cJSON_Delete(want);

    /* defaults: only kind/apiVersion */
    k8s_delete_opts_default(&o);
    client_push(f->h, 200, NULL, "{}");
    assert_int_equal(k8s_delete(f->c, &K8S_RES_PODS, "ns1", "p", &o, NULL), GD_OK);
    want = cJSON_Parse("{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\"}");
    assert_body_equals(httpd_request(f->h, -1), want);
    cJSON_Delete(want);

    /* no options: no body at all; a failed precondition is a Conflict */
    client_push(f->h, 409, NULL, "{\"kind\":\"Status\",\"reason\":\"Conflict\",\"message\":"
                          "\"Precondition failed: UID in precondition: x\",\"code\":409}");
    k8s_status st;
    assert_int_equal(k8s_delete(f->c, &K8S_RES_NODES, NULL, "n1", NULL, &st), GD_ERR_CONFLICT);
    r = httpd_request(f->h, -1);
    assert_string_equal(r->uri, "/api/v1/nodes/n1");
    assert_int_equal(r->body_len, 0);
}

static void test_generic_request_and_bodies(void **state)
{
    client_fixture *f = *state;
    cJSON *out = (cJSON *)1;
    client_push(f->h, 200, NULL, "");
    assert_int_equal(k8s_request(f->c, "GET", "/healthz", NULL, NULL, &out, NULL), GD_OK);
    assert_null(out);
    client_push(f->h, 200, NULL, "this is not json");
    k8s_status st;
    assert_int_equal(k8s_request(f->c, "GET", "/version", NULL, NULL, &out, &st), GD_ERR_PARSE);
    assert_null(out);
    assert_int_equal(st.http_status, 200);
    client_push(f->h, 502, "Content-Type: text/html", "<html><body><h1>502 Bad Gateway</h1></body></html>");
    assert_int_equal(k8s_request(f->c, "GET", "/api", NULL, NULL, &out, &st), GD_ERR_SERVER);
    assert_string_equal(st.message, "<html><body><h1>502 Bad Gateway</h1></body></html>");
    assert_int_equal(k8s_request(f->c, "GET", "no-slash", NULL, NULL, &out, &st), GD_ERR_ARG);
    client_push(f->h, 200, NULL, "{}");
    assert_int_equal(k8s_request(f->c, "POST", "/x", "{\"a\":1}", NULL, NULL, NULL), GD_OK);
    assert_string_equal(httpd_request(f->h, -1)->content_type, "application/json");
    assert_string_equal(httpd_request(f->h, -1)->body, "{\"a\":1}");
}

/* Requests ride one kept-alive connection. */
static void test_connection_reuse(void **state)
{
    client_fixture *f = *state;
    int before = httpd_connection_count(f->h);
    for (int i = 0; i < 20; i++)
        assert_int_equal(k8s_request(f->c, "GET", "/x", NULL, NULL, NULL, NULL), GD_OK);
    assert_true(httpd_connection_count(f->h) - before <= 1);
}

static void test_transport_errors(void **state)
{
    (void)state;
    httpd *h = httpd_start(NULL);
    char url[64];
    snprintf(url, sizeof url, "%s", httpd_url(h));
    httpd_stop(&h);                                   /* nobody listens there now */
    cfg_spec s = {.server = url};
    k8s_client *c = make_client(&s, NULL);
    k8s_status st;
    assert_int_equal(k8s_get(c, &K8S_RES_PODS, "ns", "p", NULL, &st), GD_ERR_TRANSPORT);
    assert_int_equal(st.http_status, 0);
    assert_true(strlen(st.message) > 0);
    k8s_client_destroy(&c);

    /* bad configs are refused */
    cfg_spec bad = {.server = "ftp://127.0.0.1:1"};
    k8s_config *cfg = make_cfg(&bad);
    assert_null(k8s_client_new(&cfg, NULL));
    assert_null(cfg);
    cfg_spec bad2 = {.server = "https://127.0.0.1:1", .tls_server_name = "a/b"};
    cfg = make_cfg(&bad2);
    assert_null(k8s_client_new(&cfg, NULL));
    cfg = NULL;
    assert_null(k8s_client_new(&cfg, NULL));
    assert_null(k8s_client_new(NULL, NULL));
}

static void test_request_timeout(void **state)
{
    client_fixture *f = *state;
    k8s_client_opts o;
    k8s_client_opts_default(&o);
    o.request_timeout_ms = 300;
    cfg_spec s = {.server = httpd_url(f->h)};
    k8s_client *c = make_client(&s, &o);
    httpd_resp r = {.status = 200, .body = "{}", .delay_ms = 5000};
    httpd_push(f->h, &r);
    int64_t t0 = gd_mono_ms();
    k8s_status st;
    assert_int_equal(k8s_get(c, &K8S_RES_PODS, "ns", "slow", NULL, &st), GD_ERR_TIMEOUT);
    assert_true(gd_mono_ms() - t0 < 2500);      /* generous: the machine is shared */
    k8s_client_destroy(&c);
}

/* The User-Agent is sent as given (the manager's identity in it names the writer in the
 * API server's audit log); only safe words may go into it. */
static void test_user_agent(void **state)
{
    client_fixture *f = *state;
    k8s_client_opts o;
    k8s_client_opts_default(&o);
    char ua[64];
    snprintf(ua, sizeof ua, "godis-operator (worker; manager=%s)", "host_0123abcd");
    o.user_agent = ua;
    cfg_spec s = {.server = httpd_url(f->h)};
    k8s_client *c = make_client(&s, &o);
    memset(ua, 0, sizeof ua);                   /* the client keeps its own copy */
    client_push(f->h, 200, NULL, "{}");
    assert_int_equal(k8s_get(c, &K8S_RES_PODS, "ns", "p", NULL, NULL), GD_OK);
    assert_string_equal(httpd_request(f->h, -1)->user_agent,
                        "godis-operator (worker; manager=host_0123abcd)");
    k8s_client_destroy(&c);

    assert_true(k8s_user_agent_word_ok("host_0123abcd"));
    assert_true(k8s_user_agent_word_ok("a.b-c:d/e=f"));
    const char *bad[] = {NULL, "", "a b", "a\r\nX: y", "a)", "(a", "a;b", "a\\b", "\t", "\x7f", "\xc3\xa9"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(k8s_user_agent_word_ok(bad[i]));
    char longw[300];
    memset(longw, 'w', 253);
    longw[253] = '\0';
    assert_true(k8s_user_agent_word_ok(longw));
    longw[253] = 'w';
    longw[254] = '\0';
    assert_false(k8s_user_agent_word_ok(longw));
}


/* ---- 429 and the token bucket ---- */

static void test_429_retry_after(void **state)
{
    client_fixture *f = *state;
    const char *tmr = "{\"kind\":\"Status\",\"reason\":\"TooManyRequests\",\"message\":\"slow\","
                      "\"code\":429}";
    client_push(f->h, 429, "Retry-After: 1", tmr);
    client_push(f->h, 429, "Retry-After: 1", tmr);
    client_push(f->h, 200, NULL, "{\"done\":1}");
    int before = httpd_request_count(f->h);
    uint64_t sent = k8s_client_request_count(f->c);
    int64_t t0 = gd_mono_ms();
    cJSON *out = NULL;
    assert_int_equal(k8s_get(f->c, &K8S_RES_PODS, "ns", "p", &out, NULL), GD_OK);
    int64_t took = gd_mono_ms() - t0;
    assert_true(took >= 1900 && took < 6000);
    assert_non_null(cJSON_GetObjectItem(out, "done"));
    cJSON_Delete(out);
    assert_int_equal(httpd_request_count(f->h) - before, 3);
    assert_int_equal(k8s_client_request_count(f->c) - sent, 3);

    /* retries run out: the 429 comes back with its Retry-After */
    k8s_client_opts o;
    k8s_client_opts_default(&o);
    o.max_retries_429 = 1;
    cfg_spec s = {.server = httpd_url(f->h)};
    k8s_client *c = make_client(&s, &o);
    client_push(f->h, 429, "Retry-After: 0", tmr);
    client_push(f->h, 429, "Retry-After: 0", tmr);
    client_push(f->h, 200, NULL, "{}");
    k8s_status st;
    before = httpd_request_count(f->h);
    assert_int_equal(k8s_get(c, &K8S_RES_PODS, "ns", "p", NULL, &st), GD_ERR_TOO_MANY_REQUESTS);
    assert_int_equal(httpd_request_count(f->h) - before, 2);
    assert_int_equal(k8s_get(c, &K8S_RES_PODS, "ns", "p", NULL, &st), GD_OK);   /* drain */

    /* a Retry-After longer than we are willing to block goes straight back */
    client_push(f->h, 429, "Retry-After: 3600", tmr);
    t0 = gd_mono_ms();
    assert_int_equal(k8s_get(c, &K8S_RES_PODS, "ns", "p", NULL, &st), GD_ERR_TOO_MANY_REQUESTS);
    assert_int_equal(st.retry_after_s, 3600);
    assert_true(gd_mono_ms() - t0 < 900);      /* no 1 s wait before giving up */
    k8s_client_destroy(&c);
}

static void test_token_bucket(void **state)
{
    client_fixture *f = *state;
    k8s_client_opts o;
    k8s_client_opts_default(&o);
    o.qps = 20;
    o.burst = 1;
    cfg_spec s = {.server = httpd_url(f->h)};
    k8s_client *c = make_client(&s, &o);
    int64_t t0 = gd_mono_ms();
    for (int i = 0; i < 6; i++)
        assert_int_equal(k8s_request(c, "GET", "/x", NULL, NULL, NULL, NULL), GD_OK);
    /* 1 from the burst, then 5 at 20/s: at least 250 ms */
    assert_true(gd_mono_ms() - t0 >= 240);
    k8s_client_destroy(&c);
}


/* ---- concurrency ---- */

typedef struct {
    k8s_client *c;
    int id, failures;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *a = p;
    for (int i = 0; i < 40; i++) {
        char name[32], want[128];
        snprintf(name, sizeof name, "t%d-%d", a->id, i);
        snprintf(want, sizeof want, "/api/v1/namespaces/ns/pods/%s", name);
        cJSON *out = NULL;
        if (k8s_get(a->c, &K8S_RES_PODS, "ns", name, &out, NULL) != GD_OK) {
            a->failures++;
            continue;
        }
        const cJSON *uri = cJSON_GetObjectItem(out, "uri");   /* the server's echo */
        if (!cJSON_IsString(uri) || strcmp(uri->valuestring, want) != 0)
            a->failures++;
        cJSON_Delete(out);
    }
    return NULL;
}

static void test_concurrent_requests(void **state)
{
    client_fixture *f = *state;
    uint64_t before = k8s_client_request_count(f->c);
    pthread_t t[8];
    worker_arg a[8];
    for (int i = 0; i < 8; i++) {
        a[i] = (worker_arg){f->c, i, 0};
        pthread_create(&t[i], NULL, worker, &a[i]);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(a[i].failures, 0);
    }
    assert_int_equal(k8s_client_request_count(f->c) - before, 8 * 40);
    /* handles (and their connections) were reused, not one per request */
    assert_true(httpd_connection_count(f->h) < 8 * 40 / 4);
}


int main(void)
{
    const struct CMUnitTest basics[] = {
        cmocka_unit_test(test_resource_lookup),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_transport_errors),
    };
#define T(name) cmocka_unit_test_setup_teardown(name, client_setup, client_teardown)
    const struct CMUnitTest plain[] = {
        T(test_get), T(test_list_query_encoding), T(test_create_update_status),
        T(test_patch_types), T(test_delete_options), T(test_generic_request_and_bodies),
        T(test_connection_reuse), T(test_request_timeout), T(test_user_agent),
        T(test_429_retry_after), T(test_token_bucket), T(test_concurrent_requests),
    };
#undef T
    int fails = cmocka_run_group_tests_name("basics", basics, NULL, NULL);
    fails += cmocka_run_group_tests_name("plain_http", plain, NULL, NULL);
    return fails ? 1 : 0;
}
