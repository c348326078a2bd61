/* fuzz_kubeconfig.c — how every program learns where the API server is and who it is: a
 * kubeconfig file (common/k8s/k8s_kubeconfig_yaml.c through libyaml, then common/k8s/k8s_config.c:
 * contexts, clusters, users, base64 key material, exec plugin blocks), and what an exec
 * credential plugin prints (common/k8s/k8s_exec.c's ExecCredential parser).
 *
 * Input: an optional context name, a record separator, the kubeconfig text, another record
 * separator, then the plugin's output (used when the chosen user has an exec block; the
 * plugin is never run). Relative file references resolve against a directory that does not
 * exist, and stdin is /dev/null (run.sh), so no input can make the target read a real file
 * or block. Checked: a config that loads has a server, a namespace and a context name; an
 * error is one line. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_util.h"
#include "k8s_config.h"
#include "k8s_exec.c"

static void check_line(const char *err, size_t cap)
{
    if (!memchr(err, '\0', cap) || strchr(err, '\n')) abort();
}

static void plugin_output(const k8s_config *cfg, const char *out, size_t n)
{
    k8s_exec *x = k8s_exec_new(cfg, 1000);
    if (!x) abort();
    run_result r = {.out = fz_strndup(out, n), .outlen = n, .status = 0};
    char why[300] = "";
    k8s_cred *c = parse_cred(x, &r, why, sizeof why);
    if (c) {
        if (!c->token && !c->cert_pem) abort();
        if ((c->cert_pem == NULL) != (c->key_pem == NULL)) abort();
        if (c->token && strpbrk(c->token, "\r\n")) abort();
        k8s_cred_release(&c);
    } else {
        check_line(why, sizeof why);
    }
    free(r.out);
    k8s_exec_destroy(&x);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t len)
{
    fz_quiet_logs();
    const char *s = (const char *)d;
    const char *rs1 = memchr(s, FZ_RS, len);
    char *ctx = rs1 ? fz_strndup(s, (size_t)(rs1 - s)) : NULL;
    const char *yaml = rs1 ? rs1 + 1 : s;
    size_t rest = len - (size_t)(yaml - s);
    const char *rs2 = memchr(yaml, FZ_RS, rest);
    size_t ylen = rs2 ? (size_t)(rs2 - yaml) : rest;

    k8s_config *cfg = NULL;
    char err[512] = "";
    gd_err e = k8s_config_from_yaml(yaml, ylen, "/nonexistent-fuzz-dir/kubeconfig",
                                    ctx && *ctx ? ctx : NULL, &cfg, err, sizeof err);
    if (e == GD_OK) {
        if (!cfg || !cfg->server || !cfg->namespace_ || !cfg->context_name) abort();
        if (cfg->exec && rs2) plugin_output(cfg, rs2 + 1, rest - ylen - 1);
        k8s_config_destroy(&cfg);
        if (cfg) abort();
    } else {
        if (cfg) abort();
        check_line(err, sizeof err);
    }
    free(ctx);
    return 0;
}
