/* itest_webhook_certs — the eviction webhook's certificates with the real kube-apiserver
 * calling it (issue 19.1): bin/godis-webhook run directly, registered under its own
 * configuration name with --url.
 *  - self-managed, --cert-validity 30s: renewed at two thirds (20 s); the caBundle then holds
 *    the new CA and the old one (replicas and in-flight calls keep verifying), the new
 *    certificate is served only after that, and the API server's calls keep reaching it,
 *    right after the switch too (an eviction of a missing pod gets the webhook's 404);
 *  - --cert-dir (what a cert-manager Secret mounts: tls.crt, tls.key, ca.crt, made here with
 *    the openssl command), failurePolicy Fail, a client making evictions through the API
 *    server all the time: its ca.crt is registered; a new leaf from the same CA is served
 *    within seconds; a new pair from a new CA is served only after the caBundle holds both
 *    CAs and the settle time has passed; not one call fails TLS across either change (the
 *    switch used to come first and the new CA after: the API server rejected calls until
 *    it had loaded the new caBundle);
 *  - --client-ca: the API server presents its client certificate (the devcluster's
 *    AdmissionConfiguration) and gets through; clients without it are refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <curl/curl.h>
#include "e2e_lib.h"
#include "e2e_procs.h"
#include "e2e_webhook.h"
#include "gd_json.h"
#include "gd_log.h"
#include "k8s_config.h"
#include "../support/test_wait.h"

static k8s_client *c;
static char ns[128], logdir[256], tmp[128];

static int setup(void **state)
{
    (void)state;
    gd_log_init("itest", GD_LOG_WARN, 0, 2);
    c = e2e_client();
    e2e_log_dir(logdir, sizeof logdir, "webhook-certs");
    snprintf(tmp, sizeof tmp, "/tmp/itest-webhook-certs-%d", (int)getpid());
    mkdir(tmp, 0700);
    return c && e2e_ns_create(c, "whcerts", ns, sizeof ns) ? 0 : -1;
}

static void delete_config(const char *name);
static void evictor_stop(void);
static pid_t certdir_pid;      /* the --cert-dir webhook, stopped by teardown after a failure */

static int teardown(void **state)
{
    (void)state;
    evictor_stop();
    if (certdir_pid > 0) e2e_stop(certdir_pid, 10000);
    /* also when a test failed before its own cleanup: a configuration left behind would
     * send later evictions to a webhook that is gone */
    char name[64];
    snprintf(name, sizeof name, "itest-renew-%d", (int)getpid());
    delete_config(name);
    snprintf(name, sizeof name, "itest-certdir-%d", (int)getpid());
    delete_config(name);
    snprintf(name, sizeof name, "itest-clientca-%d", (int)getpid());
    delete_config(name);
    e2e_ns_delete(c, ns);
    e2e_remove_dir(tmp);
    k8s_client_destroy(&c);
    return 0;
}

static void delete_config(const char *name)
{
    char path[300];
    snprintf(path, sizeof path, "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/%s", name);
    k8s_request(c, "DELETE", path, NULL, NULL, NULL, NULL);
}

/* The configuration's caBundle as PEM (malloc'd), NULL when missing. */
static char *bundle_pem(const char *name)
{
    char path[300];
    snprintf(path, sizeof path, "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/%s", name);
    cJSON *v = NULL;
    if (k8s_request(c, "GET", path, NULL, NULL, &v, NULL) != GD_OK) return NULL;
    const char *b64 = gd_json_str_or(cJSON_GetArrayItem(gd_json_path(v, "webhooks"), 0), "clientConfig.caBundle", "");
    unsigned char *pem = NULL;
    size_t len = 0;
    char *out = NULL;
    if (*b64 && gd_base64_decode(b64, strlen(b64), &pem, &len) == GD_OK && (out = malloc(len + 1))) {
        memcpy(out, pem, len);
        out[len] = '\0';
    }
    free(pem);
    cJSON_Delete(v);
    return out;
}

/* Certificates in the configuration's caBundle (0 when it or the bundle is missing). */
static int bundle_certs(const char *name)
{
    char *pem = bundle_pem(name);
    int n = 0;
    for (const char *p = pem; p && (p = strstr(p, "BEGIN CERTIFICATE")); p++) n++;
    free(pem);
    return n;
}

static bool wait_bundle(const char *name, int want, int ms)
{
    int64_t end = e2e_now_ms() + ms;
    while (e2e_now_ms() < end) {
        if (bundle_certs(name) == want) return true;
        usleep(200000);
    }
    fprintf(stderr, "webhook-certs: %s has %d certificates, want %d\n", name, bundle_certs(name), want);
    return false;
}

/* The API server called the webhook, TLS verified with the registered caBundle: an eviction
 * of a pod that does not exist gets the webhook's own 404 message. */
static bool reaches_webhook(k8s_client *client)
{
    char path[300], body[300];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/nosuch/eviction", ns);
    snprintf(body, sizeof body, "{\"apiVersion\":\"policy/v1beta1\",\"kind\":\"Eviction\","
             "\"metadata\":{\"name\":\"nosuch\",\"namespace\":\"%s\"}}", ns);
    k8s_status st = {0};
    gd_err e = k8s_request(client, "POST", path, body, "application/json", NULL, &st);
    if (e != GD_ERR_NOT_FOUND || !strstr(st.message, "admission webhook"))
        fprintf(stderr, "webhook-certs: eviction answer %s: %s\n", gd_strerror(e), st.message);
    return e == GD_ERR_NOT_FOUND && strstr(st.message, "admission webhook");
}

static bool api_server_reaches_webhook(void) { return reaches_webhook(c); }

/* A client that makes evictions through the API server until told to stop, counting
 * those that did not reach the webhook (with failurePolicy Fail: rejected). */
typedef struct {
    pthread_t th;
    bool running;
    k8s_client *client;
    _Atomic int stop, calls, failed;
} evictor;

static evictor ev;             /* static: teardown stops it when a test failed midway */

static void *evict_loop(void *arg)
{
    (void)arg;
    while (!ev.stop) {
        bool ok = reaches_webhook(ev.client);
        ev.failed += !ok;
        ev.calls++;
        usleep(20000);                /* pacing (about 40 calls a second), not a wait */
    }
    return NULL;
}

static bool evictor_start(void)
{
    ev.stop = ev.calls = ev.failed = 0;
    ev.client = e2e_client();
    ev.running = ev.client && pthread_create(&ev.th, NULL, evict_loop, NULL) == 0;
    return ev.running;
}

static void evictor_stop(void)
{
    ev.stop = 1;
    if (ev.running) pthread_join(ev.th, NULL);
    ev.running = false;
    k8s_client_destroy(&ev.client);
}

/* Lines of the log that contain what. */
static int log_count(const char *log, const char *what)
{
    FILE *f = fopen(log, "r");
    char line[4096];
    int n = 0;
    while (f && fgets(line, sizeof line, f)) n += strstr(line, what) != NULL;
    if (f) fclose(f);
    return n;
}

static char last_url[128];     /* the URL of the webhook started last */

static pid_t start_webhook4(const char *name, const char *extra1, const char *extra2,
                            const char *extra3, const char *extra4, char *log, size_t cap)
{
    int port = e2e_free_port();
    char bind[64], *url = last_url;
    snprintf(bind, sizeof bind, "127.0.0.1:%d", port);
    snprintf(last_url, sizeof last_url, "https://127.0.0.1:%d/eviction", port);
    snprintf(log, cap, "%s/%s.log", logdir, name);
    const char *argv[] = {"bin/godis-webhook", "--kubeconfig", getenv("KUBECONFIG"), "--bind-address", bind,
                          "--url", url, "--configuration-name", name, extra1, extra2, extra3, extra4, NULL};
    return e2e_spawn(argv, log);
}

static pid_t start_webhook(const char *name, const char *extra1, const char *extra2, char *log, size_t cap)
{
    return start_webhook4(name, extra1, extra2, NULL, NULL, log, cap);
}

static void test_self_managed_renewal(void **state)
{
    (void)state;
    char name[64], log[512];
    snprintf(name, sizeof name, "itest-renew-%d", (int)getpid());
    pid_t p = start_webhook(name, "--cert-validity", "30s", log, sizeof log);
    assert_true(p > 0);
    assert_true(wait_bundle(name, 1, 30000));
    assert_true(api_server_reaches_webhook());
    /* renewed at 20 s: the new CA joins the bundle, the old one stays until it expires */
    assert_true(wait_bundle(name, 2, 40000));
    assert_true(api_server_reaches_webhook());
    /* then the new certificate is served; every eviction right after the switch must still
     * reach the webhook (switching before the API server had loaded the new caBundle let
     * them through unchecked under failurePolicy Ignore) */
    char cmd[700];
    snprintf(cmd, sizeof cmd, "grep -q 'webhook certificate renewed' %s", log);
    int64_t end = e2e_now_ms() + 20000;
    while (system(cmd) != 0 && e2e_now_ms() < end) usleep(100000);
    assert_int_equal(system(cmd), 0);
    for (int64_t until = e2e_now_ms() + 3000; e2e_now_ms() < until; usleep(100000))
        assert_true(api_server_reaches_webhook());
    int st = e2e_stop(p, 10000);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    delete_config(name);
}

/* A serving certificate for 127.0.0.1 in dir, made with the openssl command as cert-manager
 * would make them (ca.crt, tls.crt, tls.key), written by rename one file after the other
 * (so the webhook may see a half-written directory); new_ca: from a new CA, else from the
 * CA there (cert-manager's usual renewal). */
static void make_cert_dir(const char *dir, bool new_ca)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "set -e; cd %s; %s; "
             "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 "
             "-keyout key.new -out req.csr 2>/dev/null; "
             "printf 'subjectAltName=IP:127.0.0.1\\n' >ext; "
             "openssl x509 -req -in req.csr -CA ca.new -CAkey ca.key -CAcreateserial -days 1 -extfile ext "
             "-out crt.new 2>/dev/null; "
             "mv key.new tls.key; mv crt.new tls.crt; mv ca.new ca.crt", dir,
             new_ca ? "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 "
                      "-subj /CN=itest-ca -keyout ca.key -out ca.new 2>/dev/null"
                    : "cp ca.crt ca.new");
    assert_int_equal(system(cmd), 0);
}

static void test_cert_dir_changes_never_fail_tls(void **state)
{
    (void)state;
    char name[64], log[512], dir[200];
    snprintf(name, sizeof name, "itest-certdir-%d", (int)getpid());
    snprintf(dir, sizeof dir, "%s/certs", tmp);
    mkdir(dir, 0700);
    make_cert_dir(dir, true);
    /* Fail, not Ignore: a call that fails TLS is then a rejected eviction, never an
     * unchecked one that looks like success */
    pid_t p = certdir_pid = start_webhook4(name, "--cert-dir", dir, "--failure-policy", "Fail", log,
                                           sizeof log);
    assert_true(p > 0);
    assert_true(wait_bundle(name, 1, 30000));
    WAIT_UNTIL(api_server_reaches_webhook(), 10000);   /* the API server loaded it */
    assert_true(api_server_reaches_webhook());
    assert_true(evictor_start());
    /* a new leaf from the same CA: served at once (no settle), nothing to publish */
    make_cert_dir(dir, false);
    WAIT_UNTIL(log_count(log, "webhook certificates reloaded") == 1, 20000);
    assert_int_equal(log_count(log, "webhook certificates reloaded"), 1);
    assert_int_equal(log_count(log, "new webhook CA registered"), 0);
    assert_int_equal(bundle_certs(name), 1);
    /* a new CA: both CAs stored first, the old certificate served meanwhile */
    make_cert_dir(dir, true);
    WAIT_UNTIL(log_count(log, "new webhook CA registered") == 1, 30000);
    assert_int_equal(log_count(log, "new webhook CA registered"), 1);
    assert_int_equal(log_count(log, "webhook certificates reloaded"), 1);
    assert_int_equal(bundle_certs(name), 2);
    WAIT_UNTIL(log_count(log, "webhook certificates reloaded") == 2, 60000);
    assert_int_equal(log_count(log, "webhook certificates reloaded"), 2);
    /* the API server's calls right after the switch, on new connections, too */
    int calls_at_switch = ev.calls;
    WAIT_UNTIL(ev.calls >= calls_at_switch + 50, 30000);
    evictor_stop();
    fprintf(stderr, "webhook-certs: %d evictions through the API server, %d failed\n",
            (int)ev.calls, (int)ev.failed);
    assert_true(ev.calls >= calls_at_switch + 50);
    assert_int_equal(ev.failed, 0);
    assert_int_equal(bundle_certs(name), 2);            /* the old CA goes after 10 minutes */
    int st = e2e_stop(p, 10000);
    certdir_pid = 0;
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    delete_config(name);
}

static size_t keep_body(char *p, size_t sz, size_t n, void *ud)
{
    char *buf = ud;
    size_t have = strlen(buf), len = sz * n;
    if (have + len < 512) { memcpy(buf + have, p, len); buf[have + len] = '\0'; }
    return sz * n;
}

/* POSTs a malformed review straight to the webhook, trusting the caBundle, presenting the
 * client certificate cert/key (NULL: none). Returns the HTTP status, 0 without an answer. */
static long post_direct(const char *ca_pem, const char *cert, const char *key, char *out)
{
    CURL *h = curl_easy_init();
    struct curl_blob b = {(void *)ca_pem, strlen(ca_pem), CURL_BLOB_COPY};
    out[0] = '\0';
    curl_easy_setopt(h, CURLOPT_URL, last_url);
    curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, "[]");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, keep_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
    if (cert) {
        curl_easy_setopt(h, CURLOPT_SSLCERT, cert);
        curl_easy_setopt(h, CURLOPT_SSLKEY, key);
    }
    long code = 0;
    if (curl_easy_perform(h) == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(h);
    return code;
}

/* --client-ca with the real API server: the devcluster's AdmissionConfiguration makes
 * kube-apiserver present a client certificate to webhooks (signed by
 * DEVCLUSTER_WEBHOOK_CLIENT_CA, a CA of its own). A webhook that requires it still gets the
 * API server's eviction calls (its own 404 comes back through the API server; failurePolicy
 * Ignore would otherwise hide a refused call as an allowed eviction), while a client without
 * it — no certificate, or the cluster CA's admin certificate — is refused with 403, and the
 * API server's certificate presented by hand gets the review's own 400. */
static void test_client_ca_admits_the_api_server_only(void **state)
{
    (void)state;
    const char *ca = getenv("DEVCLUSTER_WEBHOOK_CLIENT_CA"), *dir = getenv("DEVCLUSTER_DIR");
    if (!ca || !dir || access(ca, R_OK))
        fail_msg("no DEVCLUSTER_WEBHOOK_CLIENT_CA: this devcluster predates its webhook client "
                 "certificate (tools/devcluster down, then up)");
    char name[64], log[512];
    snprintf(name, sizeof name, "itest-clientca-%d", (int)getpid());
    pid_t p = start_webhook(name, "--client-ca", ca, log, sizeof log);
    assert_true(p > 0);
    assert_true(wait_bundle(name, 1, 30000));
    assert_true(api_server_reaches_webhook());
    char *pem = bundle_pem(name);
    assert_non_null(pem);
    char out[512], cert[300], key[300];
    assert_int_equal(post_direct(pem, NULL, NULL, out), 403);
    assert_non_null(strstr(out, "client certificate"));
    snprintf(cert, sizeof cert, "%s/pki/admin.crt", dir);
    snprintf(key, sizeof key, "%s/pki/admin.key", dir);
    assert_int_equal(post_direct(pem, cert, key, out), 403);
    snprintf(cert, sizeof cert, "%s/pki/webhook-client.crt", dir);
    snprintf(key, sizeof key, "%s/pki/webhook-client.key", dir);
    assert_int_equal(post_direct(pem, cert, key, out), 400);
    assert_non_null(strstr(out, "invalid AdmissionReview"));
    free(pem);
    assert_true(api_server_reaches_webhook());
    int st = e2e_stop(p, 10000);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    delete_config(name);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_self_managed_renewal),
        cmocka_unit_test(test_cert_dir_changes_never_fail_tls),
        cmocka_unit_test(test_client_ca_admits_the_api_server_only),
    };
    return cmocka_run_group_tests_name("itest_webhook_certs", tests, setup, teardown);
}
