/* test_webhook.c — the eviction webhook's parts without an API server: AdmissionReview
 * parsing (both Eviction versions, dry runs, every malformed shape → a reason, never a
 * crash), the decision table (allow / 404 / 429 / mark), the per-cluster limiter, the
 * OpenSSL certificates and caBundle merging, and the registered webhook entry. The HTTPS
 * server is test_webhook_server.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <curl/curl.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include "../../webhook/certs.h"
#include "../../webhook/decide.h"
#include "../../webhook/register.h"
#include "../../webhook/review.h"
#include "../../webhook/server.h"
#include "gd_json.h"
#include "gd_log.h"
#include "client_fixture.h"
#include "httpd_helper.h"

static char *review_json(const char *api, const char *ev_api, const char *name, const char *extra_req,
                         const char *extra_obj)
{
    char *s = malloc(4096);
    snprintf(s, 4096,
             "{\"apiVersion\":\"%s\",\"kind\":\"AdmissionReview\",\"request\":{"
             "\"uid\":\"u-1\",\"kind\":{\"group\":\"policy\",\"version\":\"v1\",\"kind\":\"Eviction\"},"
             "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
             "\"subResource\":\"eviction\",\"name\":\"%s\",\"namespace\":\"ns1\","
             "\"operation\":\"CREATE\",\"userInfo\":{\"username\":\"admin\"}%s,"
             "\"object\":{\"apiVersion\":\"%s\",\"kind\":\"Eviction\","
             "\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns1\"}%s}}}",
             api, name, extra_req, ev_api, name, extra_obj);
    return s;
}

static void test_parse_both_eviction_versions(void **st)
{
    (void)st;
    const char *apis[] = {"admission.k8s.io/v1", "admission.k8s.io/v1beta1"};
    const char *evs[] = {"policy/v1", "policy/v1beta1"};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            char *b = review_json(apis[i], evs[j], "c-1-abc", "", "");
            wh_review r;
            char why[300] = "";
            assert_int_equal(wh_review_parse(b, strlen(b), &r, why, sizeof why), GD_OK);
            assert_string_equal(r.api_version, apis[i]);
            assert_string_equal(r.eviction_version, evs[j]);
            assert_string_equal(r.uid, "u-1");
            assert_string_equal(r.ns, "ns1");
            assert_string_equal(r.name, "c-1-abc");
            assert_true(wh_review_is_eviction(&r));
            assert_false(r.dry_run);
            free(b);
        }
}

static void test_parse_dry_run(void **st)
{
    (void)st;
    wh_review r;
    char why[300];
    char *b = review_json("admission.k8s.io/v1", "policy/v1", "p", ",\"dryRun\":true", "");
    assert_int_equal(wh_review_parse(b, strlen(b), &r, why, sizeof why), GD_OK);
    assert_true(r.dry_run);
    free(b);
    b = review_json("admission.k8s.io/v1", "policy/v1beta1", "p", ",\"dryRun\":false",
                    ",\"deleteOptions\":{\"dryRun\":[\"All\"]}");
    assert_int_equal(wh_review_parse(b, strlen(b), &r, why, sizeof why), GD_OK);
    assert_true(r.dry_run);
    free(b);
}

static void expect_bad(const char *body, const char *needle)
{
    wh_review r;
    char why[300] = "";
    assert_int_equal(wh_review_parse(body, strlen(body), &r, why, sizeof why), GD_ERR_INVALID);
    if (!strstr(why, needle)) fail_msg("reason \"%s\" lacks \"%s\" for %s", why, needle, body);
}

static void test_parse_malformed(void **st)
{
    (void)st;
    expect_bad("", "empty");
    expect_bad("{", "not valid JSON");
    expect_bad("[1,2]", "not an object");
    expect_bad("{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}", "expected an AdmissionReview");
    expect_bad("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}", "request");
    expect_bad("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":5}}",
               "request.uid is not a string");
    expect_bad("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"\"}}",
               "request.uid is empty");
    expect_bad("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\","
               "\"operation\":\"CREATE\",\"resource\":{\"group\":\"\",\"resource\":\"pods\"},"
               "\"subResource\":\"eviction\",\"namespace\":\"n\"}}", "needs request.namespace and request.name");
    char *b = review_json("admission.k8s.io/v1", "policy/v1", "p", ",\"dryRun\":\"yes\"", "");
    expect_bad(b, "request.dryRun is not a boolean");
    free(b);
    b = review_json("admission.k8s.io/v1", "apps/v1", "p", "", "");
    expect_bad(b, "expected an Eviction");
    free(b);
    b = review_json("admission.k8s.io/v1", "policy/v1", "p", "", ",\"deleteOptions\":{\"dryRun\":\"All\"}");
    expect_bad(b, "dryRun is not a list");
    free(b);
    /* The Eviction names another pod than the request: refused, not guessed. */
    const char *mismatch = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
        "\"uid\":\"u\",\"operation\":\"CREATE\",\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
        "\"subResource\":\"eviction\",\"name\":\"a\",\"namespace\":\"n\",\"object\":{\"apiVersion\":\"policy/v1\","
        "\"kind\":\"Eviction\",\"metadata\":{\"name\":\"b\",\"namespace\":\"n\"}}}}";
    expect_bad(mismatch, "names pod n/b");
    char longname[600];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    b = review_json("admission.k8s.io/v1", "policy/v1", longname, "", "");
    expect_bad(b, "longer than");
    free(b);
    /* every prefix of a valid review fails cleanly (no crash, a reason) or parses */
    b = review_json("admission.k8s.io/v1", "policy/v1", "p", "", "");
    for (size_t n = 0; n < strlen(b); n++) {
        wh_review r;
        char why[300] = "";
        if (wh_review_parse(b, n, &r, why, sizeof why) != GD_OK) assert_true(why[0] != '\0');
    }
    free(b);
}

static void test_parse_other_request_is_not_eviction(void **st)
{
    (void)st;
    const char *b = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
        "\"uid\":\"u\",\"operation\":\"DELETE\",\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
        "\"name\":\"a\",\"namespace\":\"n\"}}";
    wh_review r;
    char why[300];
    assert_int_equal(wh_review_parse(b, strlen(b), &r, why, sizeof why), GD_OK);
    assert_false(wh_review_is_eviction(&r));
    wh_verdict v;
    assert_int_equal(wh_decide(&r, NULL, NULL, 0, &v), WH_ACT_ALLOW);
    assert_true(v.allowed);
}

static cJSON *pod(const char *cluster, const char *node_name, const char *owner_kind,
                  const char *owner, const char *annotation, bool deleting)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "{\"metadata\":{\"name\":\"x\",\"namespace\":\"ns1\",\"resourceVersion\":\"7\","
             "\"labels\":{\"cluster-name\":\"%s\",\"node-name\":\"%s\"},"
             "\"ownerReferences\":[{\"kind\":\"%s\",\"name\":\"%s\",\"controller\":true}]%s%s%s%s}}",
             cluster, node_name, owner_kind, owner,
             annotation ? ",\"annotations\":{\"godis.kumkeehyun.github.com/reschedule\":\"" : "",
             annotation ? annotation : "", annotation ? "\"}" : "",
             deleting ? ",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"" : "");
    cJSON *p = cJSON_Parse(buf);
    assert_non_null(p);
    return p;
}

static void test_member_detection(void **st)
{
    (void)st;
    char c[64];
    cJSON *p = pod("web", "web-3", "ReplicaSet", "web-3", NULL, false);
    assert_true(wh_pod_member(p, c, sizeof c));
    assert_string_equal(c, "web");
    cJSON_Delete(p);
    struct { const char *cl, *nn, *ok, *on; } bad[] = {
        {"web", "web-0", "ReplicaSet", "web-0"},     /* ids start at 1 */
        {"web", "web-x", "ReplicaSet", "web-x"},
        {"web", "other-3", "ReplicaSet", "other-3"},
        {"web", "web-3", "Deployment", "web-3"},     /* not the operator's ReplicaSet */
        {"web", "web-3", "ReplicaSet", "web-4"},
        {"", "-3", "ReplicaSet", "-3"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = pod(bad[i].cl, bad[i].nn, bad[i].ok, bad[i].on, NULL, false);
        assert_false(wh_pod_member(p, c, sizeof c));
        cJSON_Delete(p);
    }
    p = cJSON_Parse("{\"metadata\":{\"name\":\"plain\"}}");
    assert_false(wh_pod_member(p, c, sizeof c));
    cJSON_Delete(p);
}

static wh_review eviction_of(const char *name, bool dry)
{
    wh_review r;
    memset(&r, 0, sizeof r);
    snprintf(r.operation, sizeof r.operation, "CREATE");
    snprintf(r.resource, sizeof r.resource, "pods");
    snprintf(r.sub_resource, sizeof r.sub_resource, "eviction");
    snprintf(r.ns, sizeof r.ns, "ns1");
    snprintf(r.name, sizeof r.name, "%s", name);
    snprintf(r.uid, sizeof r.uid, "u");
    r.dry_run = dry;
    return r;
}

static void test_decisions(void **st)
{
    (void)st;
    wh_limiter *lim = wh_limiter_new(10000, 16);
    wh_verdict v;
    wh_review r = eviction_of("web-3-abc", false);
    /* gone → 404 NotFound */
    assert_int_equal(wh_decide(&r, NULL, lim, 0, &v), WH_ACT_GONE);
    assert_false(v.allowed);
    assert_int_equal(v.code, 404);
    assert_string_equal(v.reason, "NotFound");
    /* not a member → allowed */
    cJSON *p = pod("web", "web-3", "Deployment", "web-3", NULL, false);
    assert_int_equal(wh_decide(&r, p, lim, 0, &v), WH_ACT_ALLOW);
    assert_true(v.allowed);
    cJSON_Delete(p);
    /* a member: dry run answers as a real one would, takes no limiter slot */
    p = pod("web", "web-3", "ReplicaSet", "web-3", NULL, false);
    wh_review dry = eviction_of("web-3-abc", true);
    assert_int_equal(wh_decide(&dry, p, lim, 0, &v), WH_ACT_MARK);
    assert_int_equal(v.code, 429);
    assert_string_equal(v.reason, "TooManyRequests");
    assert_non_null(strstr(v.message, "being moved"));
    assert_non_null(strstr(v.message, "dry run"));
    /* the real one marks */
    assert_int_equal(wh_decide(&r, p, lim, 1000, &v), WH_ACT_MARK);
    assert_int_equal(v.code, 429);
    assert_null(strstr(v.message, "dry run"));
    cJSON_Delete(p);
    /* another member of the same cluster within the interval: 429, not marked */
    cJSON *p2 = pod("web", "web-4", "ReplicaSet", "web-4", NULL, false);
    wh_review r2 = eviction_of("web-4-xyz", false);
    assert_int_equal(wh_decide(&r2, p2, lim, 2000, &v), WH_ACT_WAIT);
    assert_int_equal(v.code, 429);
    assert_non_null(strstr(v.message, "one at a time"));
    /* after the interval it may be marked */
    assert_int_equal(wh_decide(&r2, p2, lim, 11001, &v), WH_ACT_MARK);
    cJSON_Delete(p2);
    /* a member of another cluster is not held up by web's mark */
    cJSON *p3 = pod("db", "db-1", "ReplicaSet", "db-1", NULL, false);
    wh_review r3 = eviction_of("db-1-q", false);
    assert_int_equal(wh_decide(&r3, p3, lim, 11002, &v), WH_ACT_MARK);
    cJSON_Delete(p3);
    /* already marked (any valid value) → 429 again, nothing to do */
    const char *vals[] = {"true", "", "True"};
    for (int i = 0; i < 3; i++) {
        p = pod("web", "web-3", "ReplicaSet", "web-3", vals[i], false);
        assert_int_equal(wh_decide(&r, p, lim, 11003, &v), WH_ACT_WAIT);
        assert_int_equal(v.code, 429);
        cJSON_Delete(p);
    }
    /* an invalid value is not a mark: the member is marked properly (limiter permitting) */
    p = pod("web", "web-3", "ReplicaSet", "web-3", "banana", false);
    assert_int_equal(wh_decide(&r, p, lim, 30000, &v), WH_ACT_MARK);
    cJSON_Delete(p);
    /* a member pod being deleted → 429 until it is gone */
    p = pod("web", "web-3", "ReplicaSet", "web-3", "true", true);
    assert_int_equal(wh_decide(&r, p, lim, 40000, &v), WH_ACT_WAIT);
    assert_non_null(strstr(v.message, "being deleted"));
    cJSON_Delete(p);
    /* the response carries the code, reason and uid the API server needs */
    char *resp = wh_review_response(&r, &v);
    cJSON *o = cJSON_Parse(resp);
    assert_string_equal(gd_json_str_or(o, "response.uid", ""), "u");
    assert_false(cJSON_IsTrue(gd_json_path(o, "response.allowed")));
    assert_int_equal(gd_json_int_or(o, "response.status.code", 0), 429);
    assert_string_equal(gd_json_str_or(o, "response.status.reason", ""), "TooManyRequests");
    assert_string_equal(gd_json_str_or(o, "apiVersion", ""), "admission.k8s.io/v1");
    cJSON_Delete(o);
    free(resp);
    wh_limiter_destroy(&lim);
    assert_null(lim);
}

static void test_explain_with_the_cluster(void **st)
{
    (void)st;
    wh_verdict v;
    wh_review r = eviction_of("web-1-a", false);
    cJSON *p = pod("web", "web-1", "ReplicaSet", "web-1", NULL, false);
    /* a single member: not marked, told why */
    cJSON *one = cJSON_Parse("{\"metadata\":{\"name\":\"web\",\"namespace\":\"ns1\"},"
                             "\"spec\":{\"replicas\":1},\"status\":{\"members\":[1]}}");
    wh_action a = wh_decide(&r, p, NULL, 0, &v);
    assert_int_equal(a, WH_ACT_MARK);
    wh_explain(one, "web-1-a", &a, &v);
    assert_int_equal(a, WH_ACT_WAIT);
    assert_int_equal(v.code, 429);
    assert_non_null(strstr(v.message, "single member"));
    /* spec.replicas 1 before any status says the same */
    cJSON *fresh = cJSON_Parse("{\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":1}}");
    a = wh_decide(&r, p, NULL, 0, &v);
    wh_explain(fresh, "web-1-a", &a, &v);
    assert_int_equal(a, WH_ACT_WAIT);
    /* three members, the operator waiting: quoted, still marked */
    cJSON *held = cJSON_Parse("{\"metadata\":{\"name\":\"web\"},\"status\":{\"members\":[1,2,3],"
                              "\"conditions\":[{\"type\":\"Ready\",\"reason\":\"WaitingForQuorum\"},"
                              "{\"type\":\"Progressing\",\"status\":\"True\",\"reason\":\"WaitingForQuorum\","
                              "\"message\":\"migration waits for enough Ready members\"}]}}");
    a = wh_decide(&r, p, NULL, 0, &v);
    wh_explain(held, "web-1-a", &a, &v);
    assert_int_equal(a, WH_ACT_MARK);
    assert_non_null(strstr(v.message, "being moved"));
    assert_non_null(strstr(v.message, "WaitingForQuorum: migration waits for enough Ready members"));
    /* the operator cannot move it (no other schedulable node): said first, not "being
     * moved"; still marked, so the move starts once a node can take the replacement */
    cJSON *stuck = cJSON_Parse("{\"metadata\":{\"name\":\"web\",\"namespace\":\"ns1\"},\"status\":"
                               "{\"members\":[1,2,3],\"conditions\":[{\"type\":\"Progressing\",\"status\":"
                               "\"True\",\"reason\":\"CannotMoveMember\",\"message\":\"member 1 cannot be "
                               "moved: no other schedulable node for its replacement (n2: cordoned)\"}]}}");
    a = wh_decide(&r, p, NULL, 0, &v);
    wh_explain(stuck, "web-1-a", &a, &v);
    assert_int_equal(a, WH_ACT_MARK);
    assert_int_equal(v.code, 429);
    assert_null(strstr(v.message, "being moved"));
    assert_non_null(strstr(v.message, "ns1/web-1-a is not evicted"));
    assert_non_null(strstr(v.message, "CannotMoveMember: member 1 cannot be moved: no other "
                                      "schedulable node for its replacement (n2: cordoned)"));
    cJSON_Delete(stuck);
    /* converged three: the answer is unchanged; no cluster known: unchanged */
    cJSON *fine = cJSON_Parse("{\"metadata\":{\"name\":\"web\"},\"status\":{\"members\":[1,2,3],"
                              "\"conditions\":[{\"type\":\"Progressing\",\"reason\":\"Converged\"}]}}");
    a = wh_decide(&r, p, NULL, 0, &v);
    char before[1024];
    snprintf(before, sizeof before, "%s", v.message);
    wh_explain(fine, "web-1-a", &a, &v);
    assert_int_equal(a, WH_ACT_MARK);
    assert_string_equal(v.message, before);
    wh_explain(NULL, "web-1-a", &a, &v);
    assert_string_equal(v.message, before);
    /* an allowed or gone answer is never touched */
    wh_action gone = WH_ACT_GONE;
    wh_explain(one, "web-1-a", &gone, &v);
    assert_int_equal(gone, WH_ACT_GONE);
    cJSON_Delete(one); cJSON_Delete(fresh); cJSON_Delete(held); cJSON_Delete(fine); cJSON_Delete(p);
}

static void test_limiter_bounded_and_undo(void **st)
{
    (void)st;
    wh_limiter *l = wh_limiter_new(1000, 2);
    int64_t wait = 0;
    assert_true(wh_limiter_take(l, "a", 0, &wait));
    assert_true(wh_limiter_take(l, "b", 10, &wait));
    /* full, every entry within the interval: refused rather than forgetting a mark */
    assert_false(wh_limiter_take(l, "c", 20, &wait));
    assert_int_equal(wait, 980);
    /* after the interval the oldest slot is reused */
    assert_true(wh_limiter_take(l, "c", 1001, &wait));
    assert_false(wh_limiter_take(l, "c", 1002, &wait));
    /* undo gives the slot back: a failed mark does not block the next try */
    wh_limiter_undo(l, "c");
    assert_true(wh_limiter_take(l, "c", 1003, &wait));
    wh_limiter_destroy(&l);
    wh_verdict v;
    wh_review r = eviction_of("p", false);
    wh_verdict_mark_failed(&r, true, "x", &v);
    assert_int_equal(v.code, 404);
    wh_verdict_mark_failed(&r, false, "Conflict", &v);
    assert_int_equal(v.code, 429);
    assert_non_null(strstr(v.message, "Conflict"));
}

static X509 *first_cert(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
    BIO_free(b);
    return x;
}

static int count_certs(const char *pem)
{
    int n = 0;
    for (const char *p = pem; (p = strstr(p, "BEGIN CERTIFICATE")); p++) n++;
    return n;
}

static void test_certs_generate_and_verify(void **st)
{
    (void)st;
    const char *hosts[] = {"127.0.0.1", "svc.ns.svc"};
    wh_certs c;
    char why[300];
    assert_int_equal(wh_certs_generate(hosts, 2, 3600, &c, why, sizeof why), GD_OK);
    int64_t now = (int64_t)time(NULL);
    assert_true(c.not_before_s <= now && c.not_after_s >= now + 3590 && c.not_after_s <= now + 3610);
    int64_t ra = wh_certs_renew_at(&c);
    assert_true(ra > now + 2000 && ra < c.not_after_s);
    /* a short validity is not eaten by the backdated notBefore: 30 s renews at ~20 s from
     * now, not at once (it renewed in a loop, a new CA every pass, before) */
    wh_certs s30;
    assert_int_equal(wh_certs_generate(hosts, 1, 30, &s30, why, sizeof why), GD_OK);
    assert_true(wh_certs_renew_at(&s30) >= now + 19 && wh_certs_renew_at(&s30) <= now + 21);
    assert_true(s30.not_before_s < now);
    wh_certs_free(&s30);
    /* the serving certificate verifies against the CA for both names */
    X509 *ca = first_cert(c.ca_pem), *leaf = first_cert(c.cert_pem);
    assert_non_null(ca);
    assert_non_null(leaf);
    X509_STORE *store = X509_STORE_new();
    X509_STORE_add_cert(store, ca);
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    X509_STORE_CTX_init(ctx, store, leaf, NULL);
    assert_int_equal(X509_verify_cert(ctx), 1);
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    assert_int_equal(X509_check_ip_asc(leaf, "127.0.0.1", 0), 1);
    assert_int_equal(X509_check_host(leaf, "svc.ns.svc", 0, 0, NULL), 1);
    assert_int_not_equal(X509_check_host(leaf, "evil.example", 0, 0, NULL), 1);
    X509_free(ca);
    X509_free(leaf);
    /* a host that would change the SAN's meaning is refused */
    const char *evil[] = {"a,DNS:evil"};
    wh_certs bad;
    assert_int_equal(wh_certs_generate(evil, 1, 3600, &bad, why, sizeof why), GD_ERR_ARG);
    /* the bundle: own first, an older CA kept, duplicates and expired ones dropped, capped */
    wh_certs c2;
    assert_int_equal(wh_certs_generate(hosts, 1, 3600, &c2, why, sizeof why), GD_OK);
    char *b1 = wh_ca_bundle_merge(NULL, c.ca_pem, now, 8);
    assert_int_equal(count_certs(b1), 1);
    char *b2 = wh_ca_bundle_merge(b1, c2.ca_pem, now, 8);
    assert_int_equal(count_certs(b2), 2);
    assert_int_equal(strncmp(b2, c2.ca_pem, strlen(c2.ca_pem)), 0);
    char *b3 = wh_ca_bundle_merge(b2, c2.ca_pem, now, 8);     /* idempotent */
    assert_int_equal(count_certs(b3), 2);
    char *b4 = wh_ca_bundle_merge(b2, c2.ca_pem, now + 7200, 8);   /* c's CA expired */
    assert_int_equal(count_certs(b4), 1);
    char *b5 = wh_ca_bundle_merge(b2, NULL, now, 1);
    assert_int_equal(count_certs(b5), 1);
    char *b6 = wh_ca_bundle_merge("garbage", c.ca_pem, now, 8);
    assert_int_equal(count_certs(b6), 1);
    /* with both CAs trusted (they share a name), an OpenSSL client finds each serving
     * certificate's own CA: the leaf names it by key identifier */
    X509_STORE *both = X509_STORE_new();
    X509 *ca1 = first_cert(c.ca_pem), *ca2 = first_cert(c2.ca_pem);
    X509_STORE_add_cert(both, ca1);
    X509_STORE_add_cert(both, ca2);
    const char *leaves[] = {c.cert_pem, c2.cert_pem};
    for (int i = 0; i < 2; i++) {
        X509 *l = first_cert(leaves[i]);
        X509_STORE_CTX *vc = X509_STORE_CTX_new();
        X509_STORE_CTX_init(vc, both, l, NULL);
        assert_int_equal(X509_verify_cert(vc), 1);
        X509_STORE_CTX_free(vc);
        X509_free(l);
    }
    X509_STORE_free(both);
    X509_free(ca1);
    X509_free(ca2);
    free(b1); free(b2); free(b3); free(b4); free(b5); free(b6);
    wh_certs_free(&c);
    wh_certs_free(&c2);
}

static void write_text(const char *dir, const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_certs_load_dir(void **st)
{
    (void)st;
    char dir[] = "/tmp/gd-whcerts-XXXXXX";
    assert_non_null(mkdtemp(dir));
    wh_certs c, g;
    char why[300];
    assert_int_equal(wh_certs_load_dir(dir, &c, why, sizeof why), GD_ERR_CONFIG);
    assert_non_null(strstr(why, "tls.crt is missing"));
    const char *hosts[] = {"127.0.0.1"};
    assert_int_equal(wh_certs_generate(hosts, 1, 600, &g, why, sizeof why), GD_OK);
    write_text(dir, "tls.crt", "not a cert");
    write_text(dir, "tls.key", g.key_pem);
    assert_int_equal(wh_certs_load_dir(dir, &c, why, sizeof why), GD_ERR_CONFIG);
    assert_non_null(strstr(why, "not a PEM certificate"));
    write_text(dir, "tls.crt", g.cert_pem);
    assert_int_equal(wh_certs_load_dir(dir, &c, why, sizeof why), GD_OK);
    assert_null(c.ca_pem);
    assert_int_equal(c.not_after_s, g.not_after_s);
    wh_certs_free(&c);
    write_text(dir, "ca.crt", g.ca_pem);
    assert_int_equal(wh_certs_load_dir(dir, &c, why, sizeof why), GD_OK);
    assert_string_equal(c.ca_pem, g.ca_pem);
    wh_certs_free(&c);
    wh_certs_free(&g);
    char p[512];
    const char *names[] = {"tls.crt", "tls.key", "ca.crt"};
    for (int i = 0; i < 3; i++) { snprintf(p, sizeof p, "%s/%s", dir, names[i]); unlink(p); }
    rmdir(dir);
}

static void test_webhook_entry_and_url(void **st)
{
    (void)st;
    wh_reg_opts o = {.name = "cfg", .url = "https://127.0.0.1:9443/eviction",
                     .failure_policy = "Ignore", .timeout_s = 10};
    cJSON *w = wh_webhook_entry(&o, "Q0E=");
    assert_string_equal(gd_json_str_or(w, "clientConfig.url", ""), o.url);
    assert_string_equal(gd_json_str_or(w, "clientConfig.caBundle", ""), "Q0E=");
    assert_string_equal(gd_json_str_or(w, "sideEffects", ""), "NoneOnDryRun");
    assert_string_equal(gd_json_str_or(w, "failurePolicy", ""), "Ignore");
    const cJSON *rule = cJSON_GetArrayItem(gd_json_path(w, "rules"), 0);
    assert_string_equal(cJSON_GetArrayItem(gd_json_path(rule, "resources"), 0)->valuestring, "pods/eviction");
    assert_string_equal(cJSON_GetArrayItem(gd_json_path(rule, "operations"), 0)->valuestring, "CREATE");
    assert_null(gd_json_path(w, "objectSelector"));
    cJSON_Delete(w);
    wh_reg_opts s = {.name = "cfg", .svc_ns = "godis-system", .svc_name = "wh", .svc_port = 443,
                     .failure_policy = "Fail", .timeout_s = 5};
    w = wh_webhook_entry(&s, NULL);
    assert_string_equal(gd_json_str_or(w, "clientConfig.service.name", ""), "wh");
    assert_string_equal(gd_json_str_or(w, "clientConfig.service.path", ""), "/eviction");
    assert_null(gd_json_path(w, "clientConfig.caBundle"));
    assert_null(gd_json_path(w, "clientConfig.url"));
    cJSON_Delete(w);
    char h[64];
    assert_true(wh_url_host("https://127.0.0.1:9443/eviction", h, sizeof h));
    assert_string_equal(h, "127.0.0.1");
    assert_true(wh_url_host("https://wh.ns.svc/eviction", h, sizeof h));
    assert_string_equal(h, "wh.ns.svc");
    assert_true(wh_url_host("https://[::1]:9443/eviction", h, sizeof h));
    assert_string_equal(h, "::1");
    assert_false(wh_url_host("http://127.0.0.1:9443/eviction", h, sizeof h));
    assert_false(wh_url_host("https://:9443/eviction", h, sizeof h));
    assert_false(wh_url_host("https://u@h/eviction", h, sizeof h));
    assert_false(wh_url_host("https://[::1/eviction", h, sizeof h));
}

/* A failed registration says which request failed with its own status, never the message
 * of the request before it (a GET's NotFound quoted for a failed create misled a flake hunt),
 * and is retried soon: 0.5 s doubling up to 5 s. */
static void test_register_failure_names_the_request(void **st)
{
    (void)st;
    httpd *h = httpd_start(NULL);
    assert_non_null(h);
    cfg_spec cs = {.server = httpd_url(h)};
    k8s_client *c = make_client(&cs, NULL);
    client_push(h, 404, NULL, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                "\"reason\":\"NotFound\",\"code\":404,\"message\":\"validatingwebhookconfigurations "
                "\\\"x\\\" not found\"}");
    client_push(h, 503, "Content-Type: text/plain\n", "upstream connect error");
    wh_reg_opts o = {.name = "x", .url = "https://127.0.0.1:9443/eviction", .failure_policy = "Ignore",
                     .timeout_s = 10};
    bool changed = true;
    char why[700];
    assert_int_not_equal(wh_register(c, &o, NULL, &changed, why, sizeof why), GD_OK);
    assert_false(changed);
    assert_string_equal(httpd_request(h, 1)->method, "POST");
    assert_non_null(strstr(why, "x: create: HTTP 503"));
    assert_null(strstr(why, "not found"));
    k8s_client_destroy(&c);
    httpd_stop(&h);
    int64_t b = 0, seen[8];
    for (int i = 0; i < 8; i++) seen[i] = b = wh_register_backoff_ms(b);
    assert_int_equal(seen[0], 500);
    assert_int_equal(seen[1], 1000);
    assert_int_equal(seen[3], 4000);
    assert_int_equal(seen[4], 5000);
    assert_int_equal(seen[7], 5000);
}

/* The renewal's CA publish: due at once; after failures at 0.5, 1, 2, 4, 5, 5 s; at once
 * again after a success. */
static void test_publish_retry_backs_off(void **st)
{
    (void)st;
    wh_retry r = {0};
    assert_true(wh_retry_due(&r, 0));
    int64_t now = 1000, waits[] = {500, 1000, 2000, 4000, 5000, 5000};
    for (size_t i = 0; i < sizeof waits / sizeof waits[0]; i++) {
        assert_int_equal(wh_retry_failed(&r, now), waits[i]);
        assert_false(wh_retry_due(&r, now + waits[i] - 1));   /* no try in between */
        now += waits[i];
        assert_true(wh_retry_due(&r, now));
    }
    wh_retry_done(&r);
    assert_true(wh_retry_due(&r, now));
    assert_int_equal(wh_retry_failed(&r, now), 500);
}


int main(void)
{
    gd_log_init("test", GD_LOG_ERROR, false, 2);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_both_eviction_versions),
        cmocka_unit_test(test_parse_dry_run),
        cmocka_unit_test(test_parse_malformed),
        cmocka_unit_test(test_parse_other_request_is_not_eviction),
        cmocka_unit_test(test_member_detection),
        cmocka_unit_test(test_decisions),
        cmocka_unit_test(test_explain_with_the_cluster),
        cmocka_unit_test(test_limiter_bounded_and_undo),
        cmocka_unit_test(test_certs_generate_and_verify),
        cmocka_unit_test(test_certs_load_dir),
        cmocka_unit_test(test_webhook_entry_and_url),
        cmocka_unit_test(test_register_failure_names_the_request),
        cmocka_unit_test(test_publish_retry_backs_off),
    };
    int rc = cmocka_run_group_tests_name("webhook", tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
