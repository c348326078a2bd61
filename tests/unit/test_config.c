/* test_config.c — kubeconfig (libyaml) and in-cluster configuration, hostile inputs first. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "k8s_config.h"

static char tmp[256];
static char err[1024];
static k8s_config *cfg;

#define CA_PEM   "-----BEGIN CERTIFICATE-----\nQ0EgY2VydA==\n-----END CERTIFICATE-----\n"
#define CERT_PEM "-----BEGIN CERTIFICATE-----\nY2xpZW50\n-----END CERTIFICATE-----\n"
#define KEY_PEM  "-----BEGIN PRIVATE KEY-----\na2V5\n-----END PRIVATE KEY-----\n"

static char *b64(const char *in)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = strlen(in);
    char *out = malloc(n / 3 * 4 + 5), *o = out;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned char)in[i] << 16;
        if (i + 1 < n) v |= (unsigned char)in[i + 1] << 8;
        if (i + 2 < n) v |= (unsigned char)in[i + 2];
        *o++ = a[v >> 18 & 63];
        *o++ = a[v >> 12 & 63];
        *o++ = i + 1 < n ? a[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? a[v & 63] : '=';
    }
    *o = 0;
    return out;
}

static const char *path_in(const char *rel)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmp, rel);
    return buf[k];
}

static void write_file(const char *rel, const char *content)
{
    const char *p = path_in(rel);
    char dir[512];
    snprintf(dir, sizeof dir, "%s", p);
    *strrchr(dir, '/') = 0;
    for (char *p = dir + strlen(tmp) + 1; *p; p++) {  /* mkdir -p below tmp */
        if (*p == '/') {
            *p = 0;
            mkdir(dir, 0700);
            *p = '/';
        }
    }
    mkdir(dir, 0700);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
}

static gd_err from_yaml(const char *yaml, const char *ctx)
{
    k8s_config_destroy(&cfg);
    err[0] = 0;
    return k8s_config_from_yaml(yaml, strlen(yaml), "/x/config", ctx, &cfg, err, sizeof err);
}

static gd_err load(const k8s_config_opts *o)
{
    k8s_config_destroy(&cfg);
    err[0] = 0;
    return k8s_config_load(o, &cfg, err, sizeof err);
}

static int setup(void **state)
{
    snprintf(tmp, sizeof tmp, "/tmp/gdcfgtestXXXXXX");
    if (!mkdtemp(tmp))
        return -1;
    unsetenv("KUBECONFIG");
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    unsetenv("POD_NAMESPACE");
    return 0;
}

static int teardown(void **state)
{
    k8s_config_destroy(&cfg);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- a good kubeconfig ---- */

static void test_full_inline(void **state)
{
    char *ca = b64(CA_PEM), *cert = b64(CERT_PEM), *key = b64(KEY_PEM);
    char yaml[4096];
    snprintf(yaml, sizeof yaml,
             "apiVersion: v1\nkind: Config\ncurrent-context: dev\n"
             "clusters:\n"
             "- name: c1\n  cluster:\n    server: https://127.0.0.1:6443/\n"
             "    certificate-authority-data: %s\n    tls-server-name: kubernetes\n"
             "users:\n"
             "- name: admin\n  user:\n    client-certificate-data: %s\n    client-key-data: %s\n"
             "    token: abc\n"
             "contexts:\n"
             "- name: dev\n  context: {cluster: c1, user: admin, namespace: prod}\n"
             "- name: bare\n  context: {cluster: c1}\n",
             ca, cert, key);
    assert_int_equal(from_yaml(yaml, NULL), GD_OK);
    assert_string_equal(cfg->server, "https://127.0.0.1:6443");
    assert_string_equal(cfg->tls_server_name, "kubernetes");
    assert_false(cfg->insecure_skip_tls_verify);
    assert_int_equal(cfg->ca_pem_len, strlen(CA_PEM));
    assert_memory_equal(cfg->ca_pem, CA_PEM, strlen(CA_PEM));
    assert_memory_equal(cfg->cert_pem, CERT_PEM, strlen(CERT_PEM));
    assert_memory_equal(cfg->key_pem, KEY_PEM, strlen(KEY_PEM));
    assert_string_equal(cfg->token, "abc");
    assert_null(cfg->token_file);
    assert_string_equal(cfg->namespace_, "prod");
    assert_string_equal(cfg->context_name, "dev");
    assert_string_equal(cfg->source, "/x/config");

    /* explicit context: no user, default namespace */
    assert_int_equal(from_yaml(yaml, "bare"), GD_OK);
    assert_string_equal(cfg->context_name, "bare");
    assert_string_equal(cfg->namespace_, "default");
    assert_null(cfg->token);
    assert_null(cfg->key_pem);
    free(ca);
    free(cert);
    free(key);
}

static void test_server_forms(void **state)
{
    const char *tmpl = "current-context: x\nclusters: [{name: c, cluster: {server: '%s', "
                       "insecure-skip-tls-verify: %s}}]\ncontexts: [{name: x, context: {cluster: c}}]\n";
    char yaml[512];
    snprintf(yaml, sizeof yaml, tmpl, "127.0.0.1:6443", "true");
    assert_int_equal(from_yaml(yaml, NULL), GD_OK);
    assert_string_equal(cfg->server, "https://127.0.0.1:6443");
    assert_true(cfg->insecure_skip_tls_verify);
    snprintf(yaml, sizeof yaml, tmpl, "http://127.0.0.1:8080///", "false");
    assert_int_equal(from_yaml(yaml, NULL), GD_OK);
    assert_string_equal(cfg->server, "http://127.0.0.1:8080");
    snprintf(yaml, sizeof yaml, tmpl, "ftp://127.0.0.1", "false");
    assert_int_equal(from_yaml(yaml, NULL), GD_ERR_CONFIG);
    assert_non_null(strstr(err, "unsupported scheme"));
    snprintf(yaml, sizeof yaml, tmpl, "https://", "false");
    assert_int_equal(from_yaml(yaml, NULL), GD_ERR_CONFIG);
    assert_non_null(strstr(err, "no host"));
    snprintf(yaml, sizeof yaml, tmpl, "https://127.0.0.1", "maybe");
    assert_int_equal(from_yaml(yaml, NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: clusters[0] (name=c): insecure-skip-tls-verify: expected true or false");
}

/* ---- hostile inputs ---- */

static void test_broken_yaml(void **state)
{
    assert_int_equal(from_yaml("clusters:\n- name: a\n  cluster: {server: [\n", NULL), GD_ERR_CONFIG);
    assert_non_null(strstr(err, "/x/config: line "));
    assert_non_null(strstr(err, "YAML syntax error"));
    assert_null(cfg);
    assert_int_equal(from_yaml("a: b\n\tc: d\n", NULL), GD_ERR_CONFIG);
    assert_true(strncmp(err, "/x/config: line 2 column", 24) == 0);
    assert_int_equal(from_yaml("key: \"unterminated\n", NULL), GD_ERR_CONFIG);
    assert_non_null(strstr(err, "YAML syntax error"));
    assert_int_equal(from_yaml("a: 1\n---\nb: 2\n", NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: more than one YAML document");
    assert_int_equal(from_yaml("a: *nosuch\n", NULL), GD_ERR_CONFIG);
    assert_non_null(strstr(err, "line 1"));
    /* binary junk */
    const char junk[] = "\xff\xfe\x00\x01garbage";
    k8s_config_destroy(&cfg);
    assert_int_equal(k8s_config_from_yaml(junk, sizeof junk, "/x/config", NULL, &cfg, err, sizeof err),
                     GD_ERR_CONFIG);
    assert_true(strncmp(err, "/x/config: ", 11) == 0);
}

static void test_wrong_types(void **state)
{
    assert_int_equal(from_yaml("users: {name: a}\n", NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: users: expected a sequence, got a mapping");
    assert_int_equal(from_yaml("clusters: just-a-string\n", NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: clusters: expected a sequence, got a scalar");
    assert_int_equal(from_yaml("clusters: [oops]\n", NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: clusters[0]: expected a mapping, got a scalar");
    assert_int_equal(from_yaml("users:\n- name: admin\n  user:\n    token: {a: b}\n", NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: users[0] (name=admin): token: expected a string, got a mapping");
    assert_int_equal(from_yaml("users:\n- name: admin\n  user: [1, 2]\n", NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: users[0] (name=admin): user: expected a mapping, got a sequence");
    assert_int_equal(from_yaml("contexts:\n- context: {cluster: c}\n", NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: contexts[0]: name is missing");
    assert_int_equal(from_yaml("contexts:\n- name: [x]\n", NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: contexts[0]: name: expected a string, got a sequence");
    assert_int_equal(from_yaml("- a\n- b\n", NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: expected a mapping at the top, got a sequence");
    assert_int_equal(from_yaml("current-context: {a: 1}\n", NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: current-context: expected a string");
    assert_int_equal(from_yaml("clusters:\n- name: c\n  cluster: {server: a, server: b}\n", NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: clusters[0] (name=c): server: duplicate key");
    assert_int_equal(from_yaml("clusters:\n- {name: c, cluster: {server: a}}\n- {name: c, cluster: {server: b}}\n",
                               NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: clusters[1] (name=c): name: duplicate name in this file");
    /* a broken entry is an error even when no context uses it */
    assert_int_equal(from_yaml("current-context: x\nclusters: [{name: c, cluster: {server: s}}]\n"
                               "users: [{name: u, user: {token: [1]}}]\n"
                               "contexts: [{name: x, context: {cluster: c}}]\n", NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: users[0] (name=u): token: expected a string, got a sequence");
}

static void test_contexts_and_missing_entries(void **state)
{
    const char *yaml = "current-context: ctx\n"
                       "clusters: [{name: c, cluster: {}}, {name: ok, cluster: {server: https://127.0.0.1}}]\n"
                       "users: [{name: u, user: {token: t}}]\n"
                       "contexts:\n"
                       "- {name: ctx, context: {cluster: c, user: u}}\n"
                       "- {name: nocluster, context: {cluster: gone, user: u}}\n"
                       "- {name: nouser, context: {cluster: ok, user: ghost}}\n"
                       "- {name: empty, context: {}}\n"
                       "- {name: null-ctx}\n";
    assert_int_equal(from_yaml(yaml, NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: cluster \"c\" (context \"ctx\"): server is missing");
    assert_int_equal(from_yaml(yaml, "foo"), GD_ERR_CONFIG);
    assert_string_equal(err, "context \"foo\" not found in /x/config");
    assert_int_equal(from_yaml(yaml, "nocluster"), GD_ERR_CONFIG);
    assert_string_equal(err, "cluster \"gone\" (context \"nocluster\") not found in /x/config");
    assert_int_equal(from_yaml(yaml, "nouser"), GD_ERR_CONFIG);
    assert_string_equal(err, "user \"ghost\" (context \"nouser\") not found in /x/config");
    assert_int_equal(from_yaml(yaml, "empty"), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: contexts[3] (name=empty): cluster is missing");
    assert_int_equal(from_yaml(yaml, "null-ctx"), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: contexts[4] (name=null-ctx): cluster is missing");
    assert_int_equal(from_yaml("clusters: []\ncontexts: [{name: a, context: {cluster: c}}]\n", NULL),
                     GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: no current-context set and no --context given");
}

static void test_error_is_one_line(void **state)
{
    assert_int_equal(from_yaml("current-context: \"a\\nb\"\ncontexts: [{name: \"x\\ny\", context: {}}]\n", NULL),
                     GD_ERR_CONFIG);
    assert_string_equal(err, "context \"a?b\" not found in /x/config");
    assert_int_equal(from_yaml("contexts: [{name: \"x\\ny\", context: {}}]\n", "x\ny"), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: contexts[0] (name=x?y): cluster is missing");
    /* a NUL inside a scalar */
    assert_int_equal(from_yaml("users: [{name: u, user: {token: \"a\\0b\"}}]\n", NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: users[0] (name=u): token: contains a NUL byte");
    /* the error buffer is never overrun, and a tiny one still gets a terminated prefix */
    char small[16];
    k8s_config_destroy(&cfg);
    assert_int_equal(k8s_config_from_yaml("x", 1, "/a/very/long/path/to/config", "nope", &cfg, small,
                                          sizeof small), GD_ERR_CONFIG);
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_int_equal(k8s_config_from_yaml("x", 1, "/p", "nope", &cfg, NULL, 0), GD_ERR_CONFIG);
}

static void test_empty(void **state)
{
    assert_int_equal(from_yaml("", NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: kubeconfig is empty");
    assert_int_equal(from_yaml("# only a comment\n", NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: kubeconfig is empty");
    assert_int_equal(from_yaml("~\n", NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: kubeconfig is empty");
    assert_int_equal(from_yaml("clusters:\nusers: ~\ncontexts: null\n", NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: kubeconfig is empty");
}

static void test_bad_base64_and_pem(void **state)
{
    const char *tmpl = "current-context: x\nclusters: [{name: c, cluster: {server: https://h, "
                       "certificate-authority-data: %s}}]\n"
                       "users:\n- name: admin\n  user: {client-certificate-data: %s, client-key-data: %s}\n"
                       "contexts: [{name: x, context: {cluster: c, user: admin}}]\n";
    char *ca = b64(CA_PEM), *cert = b64(CERT_PEM), *key = b64(KEY_PEM), *notpem = b64("hello");
    char yaml[2048];
    snprintf(yaml, sizeof yaml, tmpl, ca, cert, "'not*base64'");
    assert_int_equal(from_yaml(yaml, NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: users[0] (name=admin): client-key-data: invalid base64");
    snprintf(yaml, sizeof yaml, tmpl, "QUJD$", cert, key);
    assert_int_equal(from_yaml(yaml, NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: clusters[0] (name=c): certificate-authority-data: invalid base64");
    snprintf(yaml, sizeof yaml, tmpl, ca, notpem, key);
    assert_int_equal(from_yaml(yaml, NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: users[0] (name=admin): client-certificate-data: not PEM (no -----BEGIN line)");
    /* certificate without key */
    snprintf(yaml, sizeof yaml, tmpl, ca, cert, "''");
    assert_int_equal(from_yaml(yaml, NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: users[0] (name=admin): client-certificate is set but client-key is missing");
    free(ca);
    free(cert);
    free(key);
    free(notpem);
}

static void test_unsupported_auth(void **state)
{
    const char *yaml = "current-context: x\nclusters: [{name: c, cluster: {server: https://h}}]\n"
                       "users: [{name: u, user: {auth-provider: {name: gcp}}}]\n"
                       "contexts: [{name: x, context: {cluster: c, user: u}}]\n";
    assert_int_equal(from_yaml(yaml, NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: users[0] (name=u): auth-provider is not supported; use "
                             "an exec credential plugin (what kubectl uses since 1.26), a token, "
                             "tokenFile or a client certificate");
}

/* users[].user.exec as clientcmd reads and checks it (the runs: test_client_exec.c). */
static void test_exec_config(void **state)
{
    char yaml[1024];
#define EXEC_YAML(execblock) \
    snprintf(yaml, sizeof yaml, "current-context: x\nclusters: [{name: c, cluster: {server: https://h}}]\n" \
             "users: [{name: eks, user: {exec: %s}}]\ncontexts: [{name: x, context: {cluster: c, user: eks}}]\n", \
             execblock)
    EXEC_YAML("{apiVersion: client.authentication.k8s.io/v1, command: aws, interactiveMode: Never, "
              "args: [eks, get-token, --cluster-name, prod], env: [{name: AWS_PROFILE, value: p1}, {name: E}], "
              "provideClusterInfo: true, installHint: 'install the aws CLI'}");
    assert_int_equal(from_yaml(yaml, NULL), GD_OK);
    assert_non_null(cfg->exec);
    assert_null(cfg->token);
    assert_string_equal(cfg->exec->command, "aws");          /* a bare name: found in $PATH */
    assert_int_equal(cfg->exec->nargs, 4);
    assert_string_equal(cfg->exec->args[3], "prod");
    assert_int_equal(cfg->exec->nenv, 2);
    assert_string_equal(cfg->exec->env[0], "AWS_PROFILE=p1");
    assert_string_equal(cfg->exec->env[1], "E=");
    assert_int_equal(cfg->exec->interactive, K8S_EXEC_NEVER);
    assert_true(cfg->exec->provide_cluster_info);
    assert_string_equal(cfg->exec->install_hint, "install the aws CLI");
    assert_string_equal(cfg->exec->where, "/x/config: users[0] (name=eks)");
    /* v1beta1 defaults interactiveMode to IfAvailable; a path is resolved against the file */
    EXEC_YAML("{apiVersion: client.authentication.k8s.io/v1beta1, command: ./bin/plugin}");
    assert_int_equal(from_yaml(yaml, NULL), GD_OK);
    assert_string_equal(cfg->exec->command, "/x/bin/plugin");
    assert_int_equal(cfg->exec->interactive, K8S_EXEC_IF_AVAILABLE);
    /* a static credential wins over the plugin, as in client-go */
    snprintf(yaml, sizeof yaml, "current-context: x\nclusters: [{name: c, cluster: {server: https://h}}]\n"
             "users: [{name: u, user: {token: t, exec: {command: aws}}}]\n"
             "contexts: [{name: x, context: {cluster: c, user: u}}]\n");
    assert_int_equal(from_yaml(yaml, NULL), GD_OK);
    assert_null(cfg->exec);
    assert_string_equal(cfg->token, "t");
    struct { const char *block, *want; } bad[] = {
        {"{apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never}", "exec.command is missing"},
        {"{command: aws}", "exec.apiVersion is missing"},
        {"{command: aws, apiVersion: client.authentication.k8s.io/v1alpha1}",
         "exec.apiVersion \"client.authentication.k8s.io/v1alpha1\" is not supported"},
        {"{command: aws, apiVersion: client.authentication.k8s.io/v1}",
         "exec.interactiveMode must be set for client.authentication.k8s.io/v1"},
        {"{command: aws, apiVersion: client.authentication.k8s.io/v1, interactiveMode: Sometimes}",
         "exec.interactiveMode \"Sometimes\" is not Never, IfAvailable or Always"},
        {"{command: aws, args: aws}", "exec.args: expected a sequence, got a scalar"},
        {"{command: aws, args: [[x]]}", "exec.args[0]: expected a string"},
        {"{command: aws, env: [FOO=bar]}", "exec.env[0]: expected a mapping with name and value"},
        {"{command: aws, env: [{value: x}]}", "exec.env[0]: name is missing"},
        {"{command: [aws]}", "exec.command: expected a string, got a sequence"},
        {"{command: aws, provideClusterInfo: maybe}", "exec.provideClusterInfo: expected true or false"},
        {"aws", "exec: expected a mapping, got a scalar"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        EXEC_YAML(bad[i].block);
        assert_int_equal(from_yaml(yaml, NULL), GD_ERR_CONFIG);
        if (!strstr(err, bad[i].want) || !strstr(err, "/x/config: users[0] (name=eks): "))
            fail_msg("%s: got \"%s\"", bad[i].block, err);
    }
#undef EXEC_YAML
}

static void test_alias_bomb(void **state)
{
    /* aliases are shared nodes in libyaml's document API, never expanded */
    const char *yaml = "a: &a [x, x, x, x, x, x, x, x, x]\n"
                       "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                       "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                       "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                       "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                       "clusters: *e\n";
    assert_int_equal(from_yaml(yaml, NULL), GD_ERR_CONFIG);
    assert_string_equal(err, "/x/config: clusters[0]: expected a mapping, got a sequence");
}

static void test_big_kubeconfig(void **state)
{
    /* ~1 MB: 3000 clusters, users and contexts, the one used is the last */
    size_t cap = 2u << 20, n = 0;
    char *y = malloc(cap);
    n += (size_t)snprintf(y + n, cap - n, "current-context: ctx2999\nclusters:\n");
    for (int i = 0; i < 3000; i++)
        n += (size_t)snprintf(y + n, cap - n, "- name: cluster%d\n  cluster:\n    server: https://127.0.0.%d:%d\n"
                              "    certificate-authority-data: %0200d\n", i, i % 250 + 1, 1000 + i, 0);
    n += (size_t)snprintf(y + n, cap - n, "users:\n");
    for (int i = 0; i < 3000; i++)
        n += (size_t)snprintf(y + n, cap - n, "- name: user%d\n  user: {token: tok%d}\n", i, i);
    n += (size_t)snprintf(y + n, cap - n, "contexts:\n");
    for (int i = 0; i < 3000; i++)
        n += (size_t)snprintf(y + n, cap - n, "- name: ctx%d\n  context: {cluster: cluster%d, user: user%d}\n", i, i, i);
    assert_true(n > 1000000);
    /* the CA data is not PEM: replace only the used cluster's with a real one */
    k8s_config_destroy(&cfg);
    gd_err rc = k8s_config_from_yaml(y, n, "/x/big", "ctx5", &cfg, err, sizeof err);
    assert_int_equal(rc, GD_ERR_CONFIG);
    assert_string_equal(err, "/x/big: clusters[5] (name=cluster5): certificate-authority-data: not PEM (no -----BEGIN line)");
    /* and without CA data it loads */
    for (char *p = y; (p = strstr(p, "certificate-authority-data")); p++)
        memcpy(p, "xcertificate-authority-dat", 26);
    rc = k8s_config_from_yaml(y, n, "/x/big", NULL, &cfg, err, sizeof err);
    assert_int_equal(rc, GD_OK);
    assert_string_equal(cfg->server, "https://127.0.0.250:3999");
    assert_string_equal(cfg->token, "tok2999");
    free(y);
}

/* ---- files: relative paths, tokenFile, KUBECONFIG, HOME, --kubeconfig ---- */

static void test_relative_paths(void **state)
{
    write_file("rel/certs/ca.crt", CA_PEM);
    write_file("rel/certs/client.crt", CERT_PEM);
    write_file("rel/certs/client.key", KEY_PEM);
    write_file("rel/token", "from-file\n\n");
    write_file("rel/config",
               "current-context: x\n"
               "clusters: [{name: c, cluster: {server: https://h, certificate-authority: certs/ca.crt}}]\n"
               "users: [{name: u, user: {client-certificate: certs/client.crt, client-key: certs/client.key, "
               "token: static, tokenFile: token}}]\n"
               "contexts: [{name: x, context: {cluster: c, user: u, namespace: ns1}}]\n");
    k8s_config_opts o = { .kubeconfig = path_in("rel/config") };
    /* cwd is elsewhere: paths must resolve against the kubeconfig's directory */
    assert_int_equal(chdir("/"), 0);
    k8s_config_destroy(&cfg);
    assert_int_equal(load(&o), GD_OK);
    assert_memory_equal(cfg->ca_pem, CA_PEM, strlen(CA_PEM));
    assert_memory_equal(cfg->cert_pem, CERT_PEM, strlen(CERT_PEM));
    assert_memory_equal(cfg->key_pem, KEY_PEM, strlen(KEY_PEM));
    assert_string_equal(cfg->token, "from-file");  /* file wins over the static token */
    assert_string_equal(cfg->token_file, path_in("rel/token"));
    assert_string_equal(cfg->namespace_, "ns1");
    assert_string_equal(cfg->source, path_in("rel/config"));

    /* missing referenced files */
    write_file("rel/config2",
               "current-context: x\n"
               "clusters: [{name: c, cluster: {server: https://h, certificate-authority: nope.crt}}]\n"
               "contexts: [{name: x, context: {cluster: c}}]\n");
    o.kubeconfig = path_in("rel/config2");
    char want[1024];
    snprintf(want, sizeof want, "%s: clusters[0] (name=c): certificate-authority: cannot read %s: "
             "No such file or directory", path_in("rel/config2"), path_in("rel/nope.crt"));
    assert_int_equal(load(&o), GD_ERR_CONFIG);
    assert_string_equal(err, want);

    write_file("rel/config3",
               "current-context: x\nclusters: [{name: c, cluster: {server: https://h}}]\n"
               "users: [{name: u, user: {tokenFile: /nonexistent/token}}]\n"
               "contexts: [{name: x, context: {cluster: c, user: u}}]\n");
    o.kubeconfig = path_in("rel/config3");
    assert_int_equal(load(&o), GD_ERR_CONFIG);
    assert_non_null(strstr(err, "users[0] (name=u): tokenFile: cannot read /nonexistent/token"));

    /* a directory given as CA */
    write_file("rel/config4",
               "current-context: x\nclusters: [{name: c, cluster: {server: https://h, certificate-authority: certs}}]\n"
               "contexts: [{name: x, context: {cluster: c}}]\n");
    o.kubeconfig = path_in("rel/config4");
    assert_int_equal(load(&o), GD_ERR_CONFIG);
    assert_non_null(strstr(err, "not a regular file"));
}

static void test_explicit_missing_file(void **state)
{
    k8s_config_opts o = { .kubeconfig = path_in("does-not-exist") };
    char want[600];
    snprintf(want, sizeof want, "%s: cannot read kubeconfig: No such file or directory", path_in("does-not-exist"));
    k8s_config_destroy(&cfg);
    assert_int_equal(load(&o), GD_ERR_CONFIG);
    assert_string_equal(err, want);
    assert_null(cfg);
    /* an explicit file wins over KUBECONFIG */
    setenv("KUBECONFIG", "/whatever", 1);
    write_file("explicit", "current-context: x\nclusters: [{name: c, cluster: {server: https://e}}]\n"
                           "contexts: [{name: x, context: {cluster: c}}]\n");
    o.kubeconfig = path_in("explicit");
    assert_int_equal(load(&o), GD_OK);
    assert_string_equal(cfg->server, "https://e");
    unsetenv("KUBECONFIG");
    /* an empty explicit file */
    write_file("emptyfile", "");
    o.kubeconfig = path_in("emptyfile");
    k8s_config_destroy(&cfg);
    assert_int_equal(load(&o), GD_ERR_CONFIG);
    assert_non_null(strstr(err, "kubeconfig is empty"));
}

static void test_oversized_and_fallbacks(void **state)
{
    /* a 17 MiB file is refused before parsing */
    write_file("huge", "");
    assert_int_equal(truncate(path_in("huge"), 17 << 20), 0);
    k8s_config_opts o = { .kubeconfig = path_in("huge") };
    assert_int_equal(load(&o), GD_ERR_CONFIG);
    assert_non_null(strstr(err, "cannot read kubeconfig: larger than"));
    /* KUBECONFIG naming only missing files falls back to in-cluster when allowed */
    write_file("sa9/token", "t9");
    write_file("sa9/ca.crt", CA_PEM);
    setenv("KUBECONFIG", "/nonexistent/a", 1);
    setenv("KUBERNETES_SERVICE_HOST", "127.0.0.9", 1);
    setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
    k8s_config_opts o2 = { .allow_in_cluster = true, .sa_dir = path_in("sa9") };
    assert_int_equal(load(&o2), GD_OK);
    assert_string_equal(cfg->server, "https://127.0.0.9:6443");
    assert_string_equal(cfg->token, "t9");
    /* but a kubeconfig that exists and is broken never falls back */
    write_file("broken2", "clusters: {\n");
    setenv("KUBECONFIG", path_in("broken2"), 1);
    assert_int_equal(load(&o2), GD_ERR_CONFIG);
    assert_null(cfg);
    unsetenv("KUBECONFIG");
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
}

static void test_kubeconfig_merge(void **state)
{
    write_file("a/config",
               "current-context: ctxA\n"
               "clusters: [{name: c1, cluster: {server: https://a1}}]\n"
               "users: [{name: u1, user: {token: tokA}}]\n"
               "contexts: [{name: ctxA, context: {cluster: c1, user: u1}}]\n");
    write_file("b/config",
               "current-context: ctxB\n"
               "clusters: [{name: c1, cluster: {server: https://b1}}, {name: c2, cluster: {server: https://b2}}]\n"
               "users: [{name: u1, user: {token: tokB}}, {name: u2, user: {tokenFile: tok}}]\n"
               "contexts: [{name: ctxA, context: {cluster: c2}}, {name: ctxB, context: {cluster: c2, user: u2, namespace: nb}},"
               " {name: mixed, context: {cluster: c1, user: u1}}]\n");
    write_file("b/tok", "tokfile-b");
    write_file("c/config", "contexts: []\n");  /* no current-context: does not reset it */
    char env[2048];
    snprintf(env, sizeof env, "%s::%s:%s:%s", path_in("c/config"), path_in("missing/config"),
             path_in("a/config"), path_in("b/config"));
    setenv("KUBECONFIG", env, 1);
    k8s_config_opts o = { 0 };
    k8s_config_destroy(&cfg);
    /* current-context from the first file that sets one (a), entries first-wins */
    assert_int_equal(load(&o), GD_OK);
    assert_string_equal(cfg->context_name, "ctxA");
    assert_string_equal(cfg->server, "https://a1");
    assert_string_equal(cfg->token, "tokA");
    assert_string_equal(cfg->source, path_in("a/config"));
    k8s_config_destroy(&cfg);
    /* a context only b has, its tokenFile relative to b's directory */
    o.context = "ctxB";
    assert_int_equal(load(&o), GD_OK);
    assert_string_equal(cfg->server, "https://b2");
    assert_string_equal(cfg->token, "tokfile-b");
    assert_string_equal(cfg->token_file, path_in("b/tok"));
    assert_string_equal(cfg->namespace_, "nb");
    k8s_config_destroy(&cfg);
    /* b's context "mixed" resolves c1/u1 to a's entries (first wins per entry) */
    o.context = "mixed";
    assert_int_equal(load(&o), GD_OK);
    assert_string_equal(cfg->server, "https://a1");
    assert_string_equal(cfg->token, "tokA");
    k8s_config_destroy(&cfg);
    /* unknown context names every file read */
    o.context = "nope";
    assert_int_equal(load(&o), GD_ERR_CONFIG);
    char want[2048];
    snprintf(want, sizeof want, "context \"nope\" not found in %s:%s:%s", path_in("c/config"),
             path_in("a/config"), path_in("b/config"));
    assert_string_equal(err, want);
    /* reversed order: b wins */
    snprintf(env, sizeof env, "%s:%s", path_in("b/config"), path_in("a/config"));
    setenv("KUBECONFIG", env, 1);
    o.context = NULL;
    assert_int_equal(load(&o), GD_OK);
    assert_string_equal(cfg->context_name, "ctxB");
    k8s_config_destroy(&cfg);
    o.context = "ctxA";
    assert_int_equal(load(&o), GD_OK);
    assert_string_equal(cfg->server, "https://b2");
    k8s_config_destroy(&cfg);
    /* a broken file anywhere in the list is an error naming it */
    write_file("broken/config", "clusters: [\n");
    snprintf(env, sizeof env, "%s:%s", path_in("a/config"), path_in("broken/config"));
    setenv("KUBECONFIG", env, 1);
    assert_int_equal(load(&o), GD_ERR_CONFIG);
    assert_true(strncmp(err, path_in("broken/config"), strlen(path_in("broken/config"))) == 0);
    /* none exist: error, or in-cluster when allowed */
    setenv("KUBECONFIG", "/nonexistent/a:/nonexistent/b", 1);
    assert_int_equal(load(&o), GD_ERR_CONFIG);
    assert_string_equal(err, "KUBECONFIG=/nonexistent/a:/nonexistent/b: none of these files exist");
    unsetenv("KUBECONFIG");
}

static void test_home_and_fallback(void **state)
{
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    write_file("home/.kube/config", "current-context: h\nclusters: [{name: c, cluster: {server: https://home}}]\n"
                                    "contexts: [{name: h, context: {cluster: c}}]\n");
    setenv("HOME", path_in("home"), 1);
    k8s_config_opts o = { 0 };
    k8s_config_destroy(&cfg);
    assert_int_equal(load(&o), GD_OK);
    assert_string_equal(cfg->server, "https://home");
    k8s_config_destroy(&cfg);
    /* no kubeconfig anywhere: error unless in-cluster is allowed and present */
    setenv("HOME", path_in("nohome"), 1);
    assert_int_equal(load(&o), GD_ERR_CONFIG);
    assert_non_null(strstr(err, "no kubeconfig"));
    o.allow_in_cluster = true;
    assert_int_equal(load(&o), GD_ERR_CONFIG);
    assert_non_null(strstr(err, "not running in a cluster"));
    write_file("sa/token", "sa-token\n");
    write_file("sa/ca.crt", CA_PEM);
    setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
    o.sa_dir = path_in("sa");
    assert_int_equal(load(&o), GD_OK);
    assert_string_equal(cfg->context_name, "in-cluster");
    k8s_config_destroy(&cfg);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    if (old_home)
        setenv("HOME", old_home, 1);
    free(old_home);
}

static void test_in_cluster(void **state)
{
    write_file("sa2/token", "the-token\n");
    write_file("sa2/ca.crt", CA_PEM);
    write_file("sa2/namespace", "godis-system\n");
    const char *sa = path_in("sa2");
    k8s_config_destroy(&cfg);
    assert_int_equal(k8s_config_in_cluster(sa, &cfg, err, sizeof err), GD_ERR_CONFIG);
    assert_non_null(strstr(err, "KUBERNETES_SERVICE_HOST"));
    setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    assert_int_equal(k8s_config_in_cluster(sa, &cfg, err, sizeof err), GD_OK);
    assert_string_equal(cfg->server, "https://127.0.0.1:443");
    assert_string_equal(cfg->token, "the-token");
    char tf[600];
    snprintf(tf, sizeof tf, "%s/token", sa);
    assert_string_equal(cfg->token_file, tf);
    assert_memory_equal(cfg->ca_pem, CA_PEM, cfg->ca_pem_len);
    assert_string_equal(cfg->namespace_, "godis-system");
    assert_string_equal(cfg->context_name, "in-cluster");
    k8s_config_destroy(&cfg);

    setenv("KUBERNETES_SERVICE_HOST", "::1", 1);
    setenv("POD_NAMESPACE", "from-env", 1);
    assert_int_equal(k8s_config_in_cluster(sa, &cfg, err, sizeof err), GD_OK);
    assert_string_equal(cfg->server, "https://[::1]:443");
    assert_string_equal(cfg->namespace_, "from-env");
    k8s_config_destroy(&cfg);
    unsetenv("POD_NAMESPACE");

    setenv("KUBERNETES_SERVICE_PORT", "https", 1);
    assert_int_equal(k8s_config_in_cluster(sa, &cfg, err, sizeof err), GD_ERR_CONFIG);
    assert_string_equal(err, "in-cluster: KUBERNETES_SERVICE_PORT \"https\" is not a port");
    setenv("KUBERNETES_SERVICE_PORT", "70000", 1);
    assert_int_equal(k8s_config_in_cluster(sa, &cfg, err, sizeof err), GD_ERR_CONFIG);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);

    /* missing namespace file: "default" */
    write_file("sa3/token", "t");
    write_file("sa3/ca.crt", CA_PEM);
    assert_int_equal(k8s_config_in_cluster(path_in("sa3"), &cfg, err, sizeof err), GD_OK);
    assert_string_equal(cfg->namespace_, "default");
    k8s_config_destroy(&cfg);

    /* missing token, empty token, missing CA */
    write_file("sa4/ca.crt", CA_PEM);
    assert_int_equal(k8s_config_in_cluster(path_in("sa4"), &cfg, err, sizeof err), GD_ERR_CONFIG);
    char want[700];
    snprintf(want, sizeof want, "in-cluster: %s/token: cannot read: No such file or directory", path_in("sa4"));
    assert_string_equal(err, want);
    assert_null(cfg);
    write_file("sa4/token", "\n");
    assert_int_equal(k8s_config_in_cluster(path_in("sa4"), &cfg, err, sizeof err), GD_ERR_CONFIG);
    assert_non_null(strstr(err, "token: file is empty"));
    write_file("sa5/token", "t");
    assert_int_equal(k8s_config_in_cluster(path_in("sa5"), &cfg, err, sizeof err), GD_ERR_CONFIG);
    snprintf(want, sizeof want, "in-cluster: %s/ca.crt: cannot read: No such file or directory", path_in("sa5"));
    assert_string_equal(err, want);
    assert_int_equal(k8s_config_in_cluster("/nonexistent-sa", &cfg, err, sizeof err), GD_ERR_CONFIG);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
}

static void test_base64(void **state)
{
    unsigned char *out;
    size_t n;
    assert_int_equal(gd_base64_decode("aGVsbG8=", 8, &out, &n), GD_OK);
    assert_int_equal(n, 5);
    assert_memory_equal(out, "hello", 5);
    free(out);
    assert_int_equal(gd_base64_decode(" aGVs\nbG8h \r\n", 13, &out, &n), GD_OK);
    assert_int_equal(n, 6);
    assert_memory_equal(out, "hello!", 6);
    free(out);
    assert_int_equal(gd_base64_decode("aA==", 4, &out, &n), GD_OK);
    assert_int_equal(n, 1);
    free(out);
    assert_int_equal(gd_base64_decode("", 0, &out, &n), GD_OK);
    assert_int_equal(n, 0);
    free(out);
    const char *bad[] = { "aGVsbG8", "a", "aGVsbG8=x", "a===", "====", "aG=V", "aGVs*G8=",
                          "aA==aA==", "aGV-bG8_", "aA===", "\xc3\xa9\xc3\xa9" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        out = (unsigned char *)"sentinel";
        assert_int_equal(gd_base64_decode(bad[i], strlen(bad[i]), &out, &n), GD_ERR_PARSE);
        assert_null(out);
    }
    assert_int_equal(gd_base64_decode(NULL, 3, &out, &n), GD_ERR_ARG);
    /* round trips of every length remainder */
    const char *texts[] = { "a", "ab", "abc", "abcd", "\x01\xff\x80" };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        char *e = b64(texts[i]);
        assert_int_equal(gd_base64_decode(e, strlen(e), &out, &n), GD_OK);
        assert_int_equal(n, strlen(texts[i]));
        assert_memory_equal(out, texts[i], n);
        free(out);
        free(e);
    }
    char *enc = b64("any carnal pleasure.");
    assert_int_equal(gd_base64_decode(enc, strlen(enc), &out, &n), GD_OK);
    assert_memory_equal(out, "any carnal pleasure.", n);
    free(out);
    free(enc);
}

static void test_destroy_null(void **state)
{
    k8s_config *none = NULL;
    k8s_config_destroy(&none);
    k8s_config_destroy(NULL);
    assert_int_equal(k8s_config_from_yaml("a: b", 4, "x", NULL, NULL, err, sizeof err), GD_ERR_ARG);
    assert_int_equal(k8s_config_load(NULL, NULL, err, sizeof err), GD_ERR_ARG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_inline),
        cmocka_unit_test(test_server_forms),
        cmocka_unit_test(test_broken_yaml),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_contexts_and_missing_entries),
        cmocka_unit_test(test_error_is_one_line),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_bad_base64_and_pem),
        cmocka_unit_test(test_unsupported_auth),
        cmocka_unit_test(test_exec_config),
        cmocka_unit_test(test_alias_bomb),
        cmocka_unit_test(test_big_kubeconfig),
        cmocka_unit_test(test_relative_paths),
        cmocka_unit_test(test_explicit_missing_file),
        cmocka_unit_test(test_oversized_and_fallbacks),
        cmocka_unit_test(test_kubeconfig_merge),
        cmocka_unit_test(test_home_and_fallback),
        cmocka_unit_test(test_in_cluster),
        cmocka_unit_test(test_base64),
        cmocka_unit_test(test_destroy_null),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
