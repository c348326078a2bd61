/* itest_exec_plugin.c — a kubeconfig whose user is an exec credential plugin (what EKS,
 * GKE, AKS and OIDC logins write), against the local control plane: a small shell plugin
 * hands out the devcluster's admin client certificate as a client.authentication.k8s.io/v1
 * ExecCredential.
 *  - godisctl and godis-informer authenticate with it; the plugin sees KUBERNETES_EXEC_INFO
 *    with the cluster (provideClusterInfo), its args and env;
 *  - a credential the API server refuses (401) makes the plugin run again, and the request
 *    succeeds with the new one;
 *  - a plugin that fails is named in the error together with what it wrote on stderr. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli_run.h"
#include "e2e_procs.h"
#include "gd_json.h"
#include "gd_time.h"

/* The plugin: counts its runs; run N prints DIR/answer.N when present (else the admin
 * certificate); records its args, KUBERNETES_EXEC_INFO and $PLUGIN_ENV. */
static const char PLUGIN[] =
    "#!/bin/sh\n"
    "d=$(dirname \"$0\")\n"
    "n=$(( $(cat \"$d/runs\" 2>/dev/null || echo 0) + 1 )); echo $n >\"$d/runs\"\n"
    "echo \"$*\" >\"$d/args\"; echo \"$PLUGIN_ENV\" >\"$d/env\"\n"
    "printf '%s' \"$KUBERNETES_EXEC_INFO\" >\"$d/info\"\n"
    "if [ -f \"$d/answer.$n\" ]; then cat \"$d/answer.$n\"; exit 0; fi\n"
    "if [ -f \"$d/fail\" ]; then echo 'error: the session expired; run: login --again' >&2; exit 4; fi\n"
    "pem() { awk '{printf \"%s\\\\n\", $0}' \"$1\"; }\n"
    "printf '{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\",'\n"
    "printf '\"status\":{\"clientCertificateData\":\"%s\",\"clientKeyData\":\"%s\"}}\\n' \\\n"
    "  \"$(pem \"$PKI/admin.crt\")\" \"$(pem \"$PKI/admin.key\")\"\n";

static void write_file(const char *path, const char *text, mode_t mode)
{
    assert_true(cli_put(path, text, mode));
}

static int setup(void **st)
{
    const char *dir = getenv("DEVCLUSTER_DIR"), *server = getenv("KUBE_APISERVER");
    if (!dir || !server) {
        fprintf(stderr, "itest_exec_plugin: needs the devcluster (DEVCLUSTER_DIR, KUBE_APISERVER)\n");
        return -1;
    }
    write_file(cli_tmp("plugin"), PLUGIN, 0700);
    char kc[4096];
    snprintf(kc, sizeof kc,
             "apiVersion: v1\nkind: Config\ncurrent-context: dev\n"
             "clusters: [{name: dev, cluster: {server: '%s', certificate-authority: '%s/pki/ca.crt'}}]\n"
             "contexts: [{name: dev, context: {cluster: dev, user: sso, namespace: default}}]\n"
             "users:\n- name: sso\n  user:\n    exec:\n"
             "      apiVersion: client.authentication.k8s.io/v1\n"
             "      command: ./plugin\n"            /* relative to the kubeconfig's directory */
             "      args: [get-token, --cluster, dev]\n"
             "      env: [{name: PKI, value: '%s/pki'}, {name: PLUGIN_ENV, value: from-kubeconfig}]\n"
             "      interactiveMode: Never\n"
             "      provideClusterInfo: true\n"
             "      installHint: 'install the SSO plugin'\n", server, dir, dir);
    write_file(cli_tmp("kubeconfig"), kc, 0600);
    return 0;
}

static int runs(void) { return atoi(cli_slurp(cli_tmp("runs"))); }

static void reset(void)
{
    unlink(cli_tmp("runs"));
    unlink(cli_tmp("fail"));
    for (int i = 1; i < 4; i++) {
        char n[32];
        snprintf(n, sizeof n, "answer.%d", i);
        unlink(cli_tmp(n));
    }
}

static cli_result R;

static void godisctl_get_ns(void)
{
    const char *argv[] = {"bin/godisctl", "--kubeconfig", cli_tmp("kubeconfig"), "get", "namespace",
                          "default", NULL};
    cli_run(&R, argv, NULL, 60000);
}

static void test_godisctl_with_plugin(void **st)
{
    reset();
    godisctl_get_ns();
    if (R.status != 0) fail_msg("exit %d: %s", R.status, R.err);
    assert_non_null(strstr(R.out, "\"name\":\t\"default\""));
    assert_int_equal(runs(), 1);
    assert_string_equal(cli_slurp(cli_tmp("args")), "get-token --cluster dev\n");
    assert_string_equal(cli_slurp(cli_tmp("env")), "from-kubeconfig\n");
    cJSON *info = cJSON_Parse(cli_slurp(cli_tmp("info")));
    assert_non_null(info);
    assert_string_equal(gd_json_str_or(info, "apiVersion", ""), "client.authentication.k8s.io/v1");
    assert_true(cJSON_IsFalse(gd_json_path(info, "spec.interactive")));
    assert_string_equal(gd_json_str_or(info, "spec.cluster.server", ""), getenv("KUBE_APISERVER"));
    assert_true(strlen(gd_json_str_or(info, "spec.cluster.certificate-authority-data", "")) > 100);
    cJSON_Delete(info);
}

/* The API server refuses the first credential (a token it does not know: 401); the plugin
 * runs again and the same request goes through with the certificate. */
static void test_401_runs_the_plugin_again(void **st)
{
    reset();
    write_file(cli_tmp("answer.1"), "{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\","
               "\"status\":{\"token\":\"revoked-token\",\"expirationTimestamp\":\"2999-01-01T00:00:00Z\"}}\n", 0600);
    godisctl_get_ns();
    if (R.status != 0) fail_msg("exit %d: %s", R.status, R.err);
    assert_int_equal(runs(), 2);
}

static void test_failing_plugin_is_named(void **st)
{
    reset();
    write_file(cli_tmp("fail"), "", 0600);
    godisctl_get_ns();
    char want[400];
    snprintf(want, sizeof want, "getting credentials: exec plugin \"%s\" (%s: users[0] (name=sso)): "
             "failed with exit code 4: error: the session expired; run: login --again", cli_tmp("plugin"),
             cli_tmp("kubeconfig"));
    if (R.status != 1 || !strstr(R.err, want) || cli_lines(R.err) != 1)
        fail_msg("exit %d: %s\nwant: %s", R.status, R.err, want);
}

/* A daemon, too: the informer lists and watches with the plugin's credential. */
static void test_informer_with_plugin(void **st)
{
    reset();
    const char *argv[] = {"bin/godis-informer", "--kind", "Node", "--kubeconfig", cli_tmp("kubeconfig"),
                          "--runtime-dir", cli_tmp("rt"), NULL};
    pid_t pid = e2e_spawn(argv, cli_tmp("informer.log"));
    int64_t deadline = gd_mono_ms() + 30000;
    bool listed;
    while (!(listed = strstr(cli_slurp(cli_tmp("informer.log")), "msg=listed kind=Node") != NULL) &&
           gd_mono_ms() < deadline)
        gd_sleep_ms(50);
    int status = e2e_stop(pid, 10000);
    if (!listed) fail_msg("the informer did not list Nodes: %s", cli_slurp(cli_tmp("informer.log")));
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(runs(), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_godisctl_with_plugin),
        cmocka_unit_test(test_401_runs_the_plugin_again),
        cmocka_unit_test(test_failing_plugin_is_named),
        cmocka_unit_test(test_informer_with_plugin),
    };
    if (!cli_tmp_init("itest-exec")) return 1;
    return cli_tmp_done(cmocka_run_group_tests(tests, setup, NULL));
}
