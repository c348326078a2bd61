/* test_webhook_server.c — the webhook's HTTPS server dialled with libcurl: TLS, the answers
 * to a bad body, a wrong path or method, an oversized review, the client-CA requirement, and
 * certificate changes (a renewal, a changed --cert-dir): new connections get the new pair,
 * connections open and answers in progress go on untouched, a bad pair is refused while the
 * old one is still served, and a replaced pair is freed once no connection holds it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include <cmocka.h>
#include <curl/curl.h>
#include "../../webhook/certs.h"
#include "../../webhook/review.h"
#include "../../webhook/server.h"
#include "gd_log.h"
#include "httpd_helper.h"

static const char GOOD_REVIEW[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
    "\"uid\":\"u-1\",\"kind\":{\"group\":\"policy\",\"version\":\"v1\",\"kind\":\"Eviction\"},"
    "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
    "\"subResource\":\"eviction\",\"name\":\"p\",\"namespace\":\"ns1\",\"operation\":\"CREATE\","
    "\"userInfo\":{\"username\":\"admin\"},\"object\":{\"apiVersion\":\"policy/v1\","
    "\"kind\":\"Eviction\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ns1\"}}}}";

static int echo_review(void *ud, const char *body, size_t len, char **out, const char **type)
{
    (void)ud;
    wh_review r;
    char why[300];
    if (wh_review_parse(body, len, &r, why, sizeof why) != GD_OK) {
        *out = strdup(why);
        *type = "text/plain";
        return 400;
    }
    wh_verdict v = {.allowed = true, .code = 200};
    *out = wh_review_response(&r, &v);
    return 200;
}

typedef struct { char buf[8192]; size_t n; } sink;
static size_t on_data(char *p, size_t s, size_t n, void *ud)
{
    sink *k = ud;
    size_t len = s * n, room = sizeof k->buf - 1 - k->n;
    if (len > room) len = room;
    memcpy(k->buf + k->n, p, len);
    k->n += len;
    k->buf[k->n] = '\0';
    return s * n;
}

/* A caller trusting ca_pem (a bundle may hold several CAs); keep-alive unless fresh. */
static CURL *caller_new(const char *ca_pem, bool fresh)
{
    CURL *c = curl_easy_init();
    assert_non_null(c);
    struct curl_blob ca = {(void *)ca_pem, strlen(ca_pem), CURL_BLOB_COPY};
    curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &ca);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
    if (fresh) curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
    return c;
}

/* The HTTP status, 0 when no answer came (refused, TLS failure, cut, timeout). */
static long call(CURL *c, int port, const char *path, const char *body, sink *out)
{
    char url[128];
    snprintf(url, sizeof url, "https://127.0.0.1:%d%s", port, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    if (!body) curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    memset(out, 0, sizeof *out);
    long code = 0;
    CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    else snprintf(out->buf, sizeof out->buf, "%s", curl_easy_strerror(rc));
    return code;
}

static long post(int port, const char *path, const char *body, const char *ca_pem,
                 const char *cert, const char *key, sink *out)
{
    CURL *c = caller_new(ca_pem, true);
    if (cert) {
        struct curl_blob cb = {(void *)cert, strlen(cert), CURL_BLOB_COPY};
        struct curl_blob kb = {(void *)key, strlen(key), CURL_BLOB_COPY};
        curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cb);
        curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &kb);
        curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
    }
    long code = call(c, port, path, body, out);
    curl_easy_cleanup(c);
    return code;
}

static void test_server_https(void **st)
{
    (void)st;
    const char *hosts[] = {"127.0.0.1"};
    wh_certs c;
    char why[300];
    assert_int_equal(wh_certs_generate(hosts, 1, 600, &c, why, sizeof why), GD_OK);
    wh_server_opts o = {.host = "127.0.0.1", .port = 0, .review = echo_review};
    wh_server *s = wh_server_start(&o, &c);
    assert_non_null(s);
    int port = wh_server_port(s);
    assert_true(port > 0);
    sink out;
    const char *good = GOOD_REVIEW;
    assert_int_equal(post(port, "/eviction", good, c.ca_pem, NULL, NULL, &out), 200);
    assert_non_null(strstr(out.buf, "\"uid\":\"u-1\""));
    assert_int_equal(post(port, "/eviction", "{not json", c.ca_pem, NULL, NULL, &out), 400);
    assert_non_null(strstr(out.buf, "not valid JSON"));
    assert_int_equal(post(port, "/other", good, c.ca_pem, NULL, NULL, &out), 404);
    assert_int_equal(post(port, "/eviction", NULL, c.ca_pem, NULL, NULL, &out), 405);
    assert_int_equal(post(port, "/healthz", NULL, c.ca_pem, NULL, NULL, &out), 200);
    /* a body over the cap is refused, the server keeps serving */
    size_t big = WH_REVIEW_MAX_BODY + 10;
    char *huge = malloc(big + 1);
    memset(huge, ' ', big);
    huge[big] = '\0';
    assert_int_equal(post(port, "/eviction", huge, c.ca_pem, NULL, NULL, &out), 413);
    free(huge);
    /* renewal: the same server serves the new pair to new connections, which trust it
     * through the new CA; the old CA no longer verifies it */
    wh_certs c2;
    assert_int_equal(wh_certs_generate(hosts, 1, 600, &c2, why, sizeof why), GD_OK);
    assert_true(wh_server_set_certs(s, &c2));
    assert_int_equal(post(port, "/eviction", good, c2.ca_pem, NULL, NULL, &out), 200);
    assert_int_equal(post(port, "/eviction", good, c.ca_pem, NULL, NULL, &out), 0);
    wh_server_stop(&s);
    assert_null(s);
    wh_certs_free(&c2);

    /* --client-ca: without a certificate, or with one from another CA → 403 */
    httpd_tls_material *m = httpd_tls_material_new();
    assert_non_null(m);
    wh_server_opts oc = {.host = "127.0.0.1", .port = 0, .client_ca = m->ca_pem, .review = echo_review};
    s = wh_server_start(&oc, &c);
    assert_non_null(s);
    port = wh_server_port(s);
    assert_int_equal(post(port, "/eviction", good, c.ca_pem, NULL, NULL, &out), 403);
    assert_int_equal(post(port, "/eviction", good, c.ca_pem, m->rogue_cert_pem, m->rogue_key_pem, &out), 403);
    assert_int_equal(post(port, "/eviction", good, c.ca_pem, m->client_cert_pem, m->client_key_pem, &out), 200);
    wh_server_stop(&s);
    httpd_tls_material_destroy(&m);
    wh_certs_free(&c);
}

/* ---- certificate changes while callers are being answered ---- */

/* A review that takes delay_ms, as one waiting on the API server does. */
typedef struct {
    int delay_ms;
    atomic_int entered;
} slow;

static int slow_review(void *ud, const char *body, size_t len, char **out, const char **type)
{
    slow *w = ud;
    atomic_fetch_add(&w->entered, 1);
    struct timespec ts = {w->delay_ms / 1000, (long)(w->delay_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    return echo_review(NULL, body, len, out, type);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Every replaced pair is freed once the callers' connections have closed (the server sees a
 * close a moment after the caller makes it). */
static void expect_one_pair_alive(wh_server *s)
{
    for (int i = 0; i < 200 && wh_server_pairs_alive(s) != 1; i++) sleep_ms(10);
    assert_int_equal(wh_server_pairs_alive(s), 1);
}

typedef struct {
    int port;
    const char *body;
    const char *ca_pem;
    long code;
} one_call;

static void *call_once(void *arg)
{
    one_call *oc = arg;
    sink out;
    oc->code = post(oc->port, "/eviction", oc->body, oc->ca_pem, NULL, NULL, &out);
    return NULL;
}

/* Two self-made pairs for 127.0.0.1, each with its own CA. */
static void two_pairs(wh_certs *c1, wh_certs *c2)
{
    const char *hosts[] = {"127.0.0.1"};
    char why[300];
    assert_int_equal(wh_certs_generate(hosts, 1, 600, c1, why, sizeof why), GD_OK);
    assert_int_equal(wh_certs_generate(hosts, 1, 600, c2, why, sizeof why), GD_OK);
}

/* An answer in progress when the certificate changes is finished, not cut: the bug this
 * replaced cut it, and the API server turned the EOF into a refused eviction. */
static void test_cert_change_keeps_answer_in_progress(void **st)
{
    (void)st;
    wh_certs c1, c2;
    two_pairs(&c1, &c2);
    slow w = {.delay_ms = 400};
    wh_server_opts o = {.host = "127.0.0.1", .review = slow_review, .ud = &w};
    wh_server *s = wh_server_start(&o, &c1);
    assert_non_null(s);
    one_call oc = {.port = wh_server_port(s), .body = GOOD_REVIEW, .ca_pem = c1.ca_pem};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, call_once, &oc), 0);
    for (int i = 0; i < 500 && !atomic_load(&w.entered); i++) sleep_ms(10);
    assert_int_equal(atomic_load(&w.entered), 1);          /* the answer is in progress */
    assert_true(wh_server_set_certs(s, &c2));
    assert_int_equal(wh_server_pairs_alive(s), 2);           /* its connection holds the old pair */
    pthread_join(t, NULL);
    assert_int_equal(oc.code, 200);
    expect_one_pair_alive(s);
    sink out;
    assert_int_equal(post(oc.port, "/eviction", GOOD_REVIEW, c2.ca_pem, NULL, NULL, &out), 200);
    wh_server_stop(&s);
    wh_certs_free(&c1);
    wh_certs_free(&c2);
}

/* A pair that cannot be served (a key of another certificate, a PEM that is not one) is
 * refused; the server goes on serving the pair it had. */
static void test_bad_pair_keeps_serving(void **st)
{
    (void)st;
    wh_certs c1, c2;
    two_pairs(&c1, &c2);
    wh_server_opts o = {.host = "127.0.0.1", .review = echo_review};
    wh_certs mixed = c2;
    mixed.key_pem = c1.key_pem;
    assert_null(wh_server_start(&o, &mixed));
    wh_server *s = wh_server_start(&o, &c1);
    assert_non_null(s);
    assert_false(wh_server_set_certs(s, &mixed));
    wh_certs junk = c2;
    junk.cert_pem = "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n";
    assert_false(wh_server_set_certs(s, &junk));
    sink out;
    assert_int_equal(post(wh_server_port(s), "/eviction", GOOD_REVIEW, c1.ca_pem, NULL, NULL, &out), 200);
    assert_int_equal(wh_server_pairs_alive(s), 1);
    wh_server_stop(&s);
    wh_certs_free(&c1);
    wh_certs_free(&c2);
}

#define LOAD_CALLERS 3
#define LOAD_CHANGES 4

typedef struct {
    int port;
    const char *ca_bundle;
    bool fresh;                  /* a new connection (a handshake) per call */
    atomic_bool *stop;
    int ok, failed;
    char last_failure[160];
} caller;

static void *keep_calling(void *arg)
{
    caller *k = arg;
    CURL *c = caller_new(k->ca_bundle, k->fresh);
    sink out;
    while (!atomic_load(k->stop)) {
        long code = call(c, k->port, "/eviction", GOOD_REVIEW, &out);
        if (code == 200) {
            k->ok++;
        } else {
            k->failed++;
            snprintf(k->last_failure, sizeof k->last_failure, "%ld %.100s", code, out.buf);
        }
    }
    curl_easy_cleanup(c);
    return NULL;
}

/* Callers on kept-alive connections and on a new connection per call, with answers that take
 * 30 ms, while the certificate changes four times: not one call fails, and every replaced
 * pair is freed when the callers are done. The callers trust every generation's CA, as the
 * API server does while the caBundle holds the old CA beside the new one. */
static void test_cert_changes_under_load(void **st)
{
    (void)st;
    const char *hosts[] = {"127.0.0.1"};
    wh_certs gen[LOAD_CHANGES + 1];
    char why[300], bundle[LOAD_CHANGES + 1][4096];
    size_t used = 0;
    char *all = calloc(1, sizeof bundle);
    assert_non_null(all);
    for (int i = 0; i <= LOAD_CHANGES; i++) {
        assert_int_equal(wh_certs_generate(hosts, 1, 600, &gen[i], why, sizeof why), GD_OK);
        used += (size_t)snprintf(all + used, sizeof bundle - used, "%s", gen[i].ca_pem);
    }
    slow w = {.delay_ms = 30};
    wh_server_opts o = {.host = "127.0.0.1", .review = slow_review, .ud = &w};
    wh_server *s = wh_server_start(&o, &gen[0]);
    assert_non_null(s);
    atomic_bool stop = false;
    caller k[LOAD_CALLERS];
    pthread_t t[LOAD_CALLERS];
    for (int i = 0; i < LOAD_CALLERS; i++) {
        k[i] = (caller){.port = wh_server_port(s), .ca_bundle = all, .fresh = i == 0, .stop = &stop};
        assert_int_equal(pthread_create(&t[i], NULL, keep_calling, &k[i]), 0);
    }
    for (int i = 1; i <= LOAD_CHANGES; i++) {
        sleep_ms(250);
        assert_true(wh_server_set_certs(s, &gen[i]));
    }
    sleep_ms(250);
    atomic_store(&stop, true);
    int ok = 0, failed = 0;
    for (int i = 0; i < LOAD_CALLERS; i++) {
        pthread_join(t[i], NULL);
        ok += k[i].ok;
        failed += k[i].failed;
        if (k[i].failed)
            print_message("caller %d: %d failed, the last: %s\n", i, k[i].failed, k[i].last_failure);
        assert_true(k[i].ok > 0);
    }
    print_message("%d calls through %d certificate changes, %d failed\n", ok + failed,
                  LOAD_CHANGES, failed);
    assert_int_equal(failed, 0);
    expect_one_pair_alive(s);
    sink out;    /* the last generation is the one served */
    assert_int_equal(post(wh_server_port(s), "/eviction", GOOD_REVIEW, gen[LOAD_CHANGES].ca_pem,
                          NULL, NULL, &out), 200);
    assert_int_equal(post(wh_server_port(s), "/eviction", GOOD_REVIEW, gen[0].ca_pem, NULL, NULL,
                          &out), 0);
    wh_server_stop(&s);
    for (int i = 0; i <= LOAD_CHANGES; i++) wh_certs_free(&gen[i]);
    free(all);
}

int main(void)
{
    gd_log_init("test", GD_LOG_ERROR, false, 2);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_https),
        cmocka_unit_test(test_cert_change_keeps_answer_in_progress),
        cmocka_unit_test(test_bad_pair_keeps_serving),
        cmocka_unit_test(test_cert_changes_under_load),
    };
    int rc = cmocka_run_group_tests_name("webhook_server", tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
