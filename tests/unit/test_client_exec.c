/* test_client_exec.c — the exec credential plugin protocol (k8s_exec.h) end to end: small
 * shell plugins, a kubeconfig that names them, and the httpd helper as the API server.
 * Tokens and client certificates, v1 and v1beta1, KUBERNETES_EXEC_INFO with and without
 * the cluster, the cache and expirationTimestamp, a second run after a 401, and every way a
 * plugin fails: the message names the plugin and quotes its stderr. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "k8s_client.h"
#include "k8s_exec.h"
#include "gd_json.h"
#include "gd_log.h"
#include "httpd_helper.h"

static char dir[64];

static const char *in_dir(const char *name)
{
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void write_file(const char *name, const char *text, mode_t mode)
{
    FILE *f = fopen(in_dir(name), "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    chmod(in_dir(name), mode);
}

static char *read_all(const char *name)
{
    FILE *f = fopen(in_dir(name), "r");
    if (!f) return NULL;
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* A plugin that counts its runs in DIR/runs, records its argv, environment and stdin, and
 * prints DIR/out.<run> if it exists, else DIR/out. */
static const char PLUGIN[] =
    "#!/bin/sh\n"
    "d=$(dirname \"$0\")\n"
    "n=$(( $(cat \"$d/runs\" 2>/dev/null || echo 0) + 1 )); echo $n >\"$d/runs\"\n"
    "echo \"$@\" >\"$d/argv\"\n"
    "printf '%s' \"$KUBERNETES_EXEC_INFO\" >\"$d/info\"\n"
    "echo \"FOO=$FOO HOME_SET=${HOME:+yes}\" >\"$d/env\"\n"
    "if [ -t 0 ]; then echo tty; else cat >/dev/null; echo notty; fi >\"$d/stdin\"\n"
    "if [ -f \"$d/out.$n\" ]; then cat \"$d/out.$n\"; else cat \"$d/out\"; fi\n";

static void cred(const char *file, const char *version, const char *status)
{
    char buf[8192];
    snprintf(buf, sizeof buf, "{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/%s\","
             "\"status\":%s}\n", version, status);
    write_file(file, buf, 0600);
}

static httpd *srv;

static k8s_client *client_for(const char *server, const char *exec_block, long timeout_ms,
                              const char *ca_pem)
{
    char yaml[4096], err[512];
    char ca_line[3000] = "";
    if (ca_pem) {
        char *b64 = NULL;
        /* certificate-authority as a file next to the kubeconfig */
        write_file("ca.pem", ca_pem, 0600);
        snprintf(ca_line, sizeof ca_line, ", certificate-authority: ca.pem");
        (void)b64;
    }
    snprintf(yaml, sizeof yaml,
             "current-context: x\n"
             "clusters: [{name: c, cluster: {server: '%s'%s}}]\n"
             "users: [{name: plug, user: {exec: %s}}]\n"
             "contexts: [{name: x, context: {cluster: c, user: plug}}]\n",
             server, ca_line, exec_block);
    write_file("kubeconfig", yaml, 0600);
    k8s_config_opts o = {.kubeconfig = in_dir("kubeconfig")};
    k8s_config *cfg = NULL;
    if (k8s_config_load(&o, &cfg, err, sizeof err) != GD_OK) fail_msg("%s", err);
    k8s_client_opts co;
    k8s_client_opts_default(&co);
    co.qps = -1;
    co.exec_timeout_ms = timeout_ms;
    k8s_client *c = k8s_client_new(&cfg, &co);
    assert_non_null(c);
    return c;
}

#define V1_EXEC "{apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never, command: ./plugin, " \
                "args: [get-token, --cluster, prod], env: [{name: FOO, value: bar}]}"

static int setup(void **state)
{
    snprintf(dir, sizeof dir, "/tmp/gdexecXXXXXX");
    assert_non_null(mkdtemp(dir));
    write_file("plugin", PLUGIN, 0700);
    srv = httpd_start(NULL);
    assert_non_null(srv);
    return 0;
}

static int teardown(void **state)
{
    httpd_stop(&srv);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int runs(void)
{
    const char *s = read_all("runs");
    return s ? atoi(s) : 0;
}

static void test_v1_token_cached(void **state)
{
    cred("out", "v1", "{\"token\":\"tok-1\",\"expirationTimestamp\":\"2999-01-01T00:00:00Z\"}");
    k8s_client *c = client_for(httpd_url(srv), V1_EXEC, 5000, NULL);
    for (int i = 0; i < 3; i++) {
        k8s_status st;
        assert_int_equal(k8s_request(c, "GET", "/api", NULL, NULL, NULL, &st), GD_OK);
        assert_string_equal(httpd_request(srv, -1)->authorization, "Bearer tok-1");
    }
    assert_int_equal(runs(), 1);                         /* cached until 2999 */
    assert_string_equal(read_all("argv"), "get-token --cluster prod\n");
    assert_string_equal(read_all("env"), "FOO=bar HOME_SET=yes\n");   /* ours + the kubeconfig's */
    assert_string_equal(read_all("stdin"), "notty\n");              /* Never: no stdin */
    cJSON *info = cJSON_Parse(read_all("info"));
    assert_non_null(info);
    assert_string_equal(gd_json_str_or(info, "kind", ""), "ExecCredential");
    assert_string_equal(gd_json_str_or(info, "apiVersion", ""), "client.authentication.k8s.io/v1");
    assert_true(cJSON_IsFalse(gd_json_path(info, "spec.interactive")));
    assert_null(gd_json_path(info, "spec.cluster"));     /* not asked for */
    cJSON_Delete(info);
    k8s_client_destroy(&c);
}

static void test_expired_runs_again(void **state)
{
    cred("out", "v1beta1", "{\"token\":\"old\",\"expirationTimestamp\":\"2001-01-01T00:00:00Z\"}");
    k8s_client *c = client_for(httpd_url(srv), "{apiVersion: client.authentication.k8s.io/v1beta1, "
                               "command: ./plugin, provideClusterInfo: true}", 5000, NULL);
    assert_int_equal(k8s_request(c, "GET", "/api", NULL, NULL, NULL, NULL), GD_OK);
    assert_int_equal(k8s_request(c, "GET", "/api", NULL, NULL, NULL, NULL), GD_OK);
    assert_int_equal(runs(), 2);                         /* expired at once: every use runs it */
    cJSON *info = cJSON_Parse(read_all("info"));
    assert_string_equal(gd_json_str_or(info, "apiVersion", ""), "client.authentication.k8s.io/v1beta1");
    assert_string_equal(gd_json_str_or(info, "spec.cluster.server", ""), httpd_url(srv));
    cJSON_Delete(info);
    k8s_client_destroy(&c);
}

/* client-go runs the plugin again after a 401; the refused request goes out once more. */
static void test_401_runs_again(void **state)
{
    cred("out.1", "v1", "{\"token\":\"revoked\"}");
    cred("out", "v1", "{\"token\":\"fresh\"}");
    k8s_client *c = client_for(httpd_url(srv), V1_EXEC, 5000, NULL);
    httpd_resp unauth = {.status = 401, .body = "{\"kind\":\"Status\",\"code\":401,\"reason\":\"Unauthorized\"}"};
    httpd_push(srv, &unauth);
    int before = httpd_request_count(srv);
    k8s_status st;
    assert_int_equal(k8s_request(c, "GET", "/api/v1/pods", NULL, NULL, NULL, &st), GD_OK);
    assert_int_equal(httpd_request_count(srv), before + 2);
    assert_string_equal(httpd_request(srv, -2)->authorization, "Bearer revoked");
    assert_string_equal(httpd_request(srv, -1)->authorization, "Bearer fresh");
    assert_int_equal(runs(), 2);
    /* a second 401 with the fresh token: one more run, one retry, then the 401 stands */
    cred("out", "v1", "{\"token\":\"fresh\"}");
    httpd_push(srv, &unauth);
    httpd_push(srv, &unauth);
    assert_int_equal(k8s_request(c, "GET", "/api/v1/pods", NULL, NULL, NULL, &st), GD_ERR_UNAUTHORIZED);
    assert_int_equal(runs(), 3);
    k8s_client_destroy(&c);
}

static void expect_failure(const char *exec_block, long timeout_ms, const char *const *want)
{
    k8s_client *c = client_for(httpd_url(srv), exec_block, timeout_ms, NULL);
    int before = httpd_request_count(srv);
    k8s_status st;
    assert_int_equal(k8s_request(c, "GET", "/api", NULL, NULL, NULL, &st), GD_ERR_TRANSPORT);
    assert_int_equal(httpd_request_count(srv), before);     /* nothing sent without a credential */
    assert_int_equal(st.http_status, 0);
    assert_null(strchr(st.message, '\n'));
    for (; *want; want++)
        if (!strstr(st.message, *want)) fail_msg("want \"%s\" in \"%s\"", *want, st.message);
    k8s_client_destroy(&c);
}

static void test_failures_name_the_plugin(void **state)
{
    write_file("failing", "#!/bin/sh\necho 'looking up credentials' >&2\n"
               "echo 'error: no SSO session; run aws sso login' >&2\nexit 3\n", 0700);
    const char *w1[] = {"getting credentials: exec plugin \"", "/failing\"", "users[0] (name=plug)",
                        "failed with exit code 3", "error: no SSO session; run aws sso login", NULL};
    expect_failure("{apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never, command: ./failing}",
                   5000, w1);

    write_file("slow", "#!/bin/sh\necho 'waiting for the browser' >&2\nexec sleep 30\n", 0700);
    const char *w2[] = {"/slow\"", "no answer within 300ms, killed", "waiting for the browser", NULL};
    expect_failure("{apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never, command: ./slow}",
                   300, w2);

    const char *w3[] = {"exec plugin \"no-such-plugin-xyz\"", "executable not found: brew install xyz", NULL};
    expect_failure("{apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never, "
                   "command: no-such-plugin-xyz, installHint: 'brew install xyz'}", 5000, w3);

    struct { const char *out, *want; } bad[] = {
        {"not json at all\n", "its output is not an ExecCredential (not JSON"},
        {"{\"kind\":\"Secret\",\"apiVersion\":\"client.authentication.k8s.io/v1\"}",
         "its output is not an ExecCredential (kind \"Secret\")"},
        {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"status\":{\"token\":\"t\"}}",
         "configured to use API version client.authentication.k8s.io/v1, the plugin returned version "
         "\"client.authentication.k8s.io/v1beta1\""},
        {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\"}",
         "didn't return a status field"},
        {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\",\"status\":{}}",
         "didn't return a token or cert/key pair"},
        {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\",\"status\":"
         "{\"clientCertificateData\":\"-----BEGIN CERTIFICATE-----\"}}", "only certificate or key, not both"},
        {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\",\"status\":"
         "{\"token\":\"t\",\"expirationTimestamp\":\"tomorrow\"}}", "expirationTimestamp \"tomorrow\" is not RFC 3339"},
        {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\",\"status\":"
         "{\"clientCertificateData\":\"x\",\"clientKeyData\":\"y\"}}", "not a PEM pair"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unlink(in_dir("runs"));
        write_file("out", bad[i].out, 0600);
        const char *w[] = {"exec plugin \"", "/plugin\"", bad[i].want, NULL};
        expect_failure(V1_EXEC, 5000, w);
    }

    /* Always needs a terminal; a daemon's stdin is none */
    int saved = dup(0), devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    const char *w4[] = {"exec plugin cannot support interactive mode: standard input is not a terminal", NULL};
    expect_failure("{apiVersion: client.authentication.k8s.io/v1, interactiveMode: Always, command: ./plugin}",
                   5000, w4);
    dup2(saved, 0);
    close(saved);
    close(devnull);
}

/* A client certificate from the plugin, checked by a TLS server that requires one. */
static void test_client_certificate(void **state)
{
    httpd_tls_material *m = httpd_tls_material_new();
    assert_non_null(m);
    httpd_tls tls = {.cert_pem = m->server_cert_pem, .key_pem = m->server_key_pem,
                     .client_ca_pem = m->ca_pem};
    httpd *h = httpd_start(&tls);
    assert_non_null(h);
    cJSON *status = cJSON_CreateObject();
    cJSON_AddStringToObject(status, "clientCertificateData", m->client_cert_pem);
    cJSON_AddStringToObject(status, "clientKeyData", m->client_key_pem);
    char *st = cJSON_PrintUnformatted(status);
    cred("out", "v1", st);
    free(st);
    cJSON_Delete(status);
    k8s_client *c = client_for(httpd_url(h), V1_EXEC, 5000, m->ca_pem);
    assert_int_equal(k8s_request(c, "GET", "/api", NULL, NULL, NULL, NULL), GD_OK);
    assert_true(httpd_request(h, -1)->client_cert_ok);
    assert_string_equal(httpd_request(h, -1)->authorization, "");
    k8s_client_destroy(&c);
    /* a certificate the server does not trust: 401, the plugin runs again, still 401 */
    unlink(in_dir("runs"));
    status = cJSON_CreateObject();
    cJSON_AddStringToObject(status, "clientCertificateData", m->rogue_cert_pem);
    cJSON_AddStringToObject(status, "clientKeyData", m->rogue_key_pem);
    st = cJSON_PrintUnformatted(status);
    cred("out", "v1", st);
    free(st);
    cJSON_Delete(status);
    c = client_for(httpd_url(h), V1_EXEC, 5000, m->ca_pem);
    k8s_status s;
    gd_err e = k8s_request(c, "GET", "/api", NULL, NULL, NULL, &s);
    assert_true(e == GD_ERR_UNAUTHORIZED || e == GD_ERR_TRANSPORT);
    k8s_client_destroy(&c);
    httpd_stop(&h);
    httpd_tls_material_destroy(&m);
}

int main(void)
{
    gd_log_init("test", GD_LOG_ERROR + 1, 0, 2);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_v1_token_cached, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expired_runs_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_401_runs_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failures_name_the_plugin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_certificate, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
