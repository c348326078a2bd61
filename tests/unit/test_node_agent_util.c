/* Tests of the node agent's pure logic: image map, IP pool, env/argv building with the mount
 * rule, probe specs, selectors, the hosts-file block and taints. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "k8s_client.h"
#include "k8s_config.h"
#include "../../tools/node-agent/agent.h"

static cJSON *J(const char *s)
{
    cJSON *j = cJSON_Parse(s);
    assert_non_null(j);
    return j;
}

static void test_image_strip_tag(void **st)
{
    (void)st;
    char b[64];
    assert_true(na_image_strip_tag("kbzjung359/godis:1.0", b, sizeof b));
    assert_string_equal(b, "kbzjung359/godis");
    assert_true(na_image_strip_tag("localhost:5000/x/godis", b, sizeof b));
    assert_string_equal(b, "localhost:5000/x/godis");
    assert_true(na_image_strip_tag("localhost:5000/godis:v2", b, sizeof b));
    assert_string_equal(b, "localhost:5000/godis");
    assert_true(na_image_strip_tag("a/b@sha256:abcd", b, sizeof b));
    assert_string_equal(b, "a/b");
    assert_false(na_image_strip_tag("", b, sizeof b));
    assert_false(na_image_strip_tag(":tag", b, sizeof b));
    assert_false(na_image_strip_tag("averyveryverylongname", b, 8));
}

static void test_image_map(void **st)
{
    (void)st;
    na_image_map m = { 0 };
    char err[256];
    assert_int_equal(na_image_map_add(&m, "kbzjung359/godis=/bin/standin", err, sizeof err), GD_OK);
    assert_int_equal(na_image_map_add(&m, "busybox:1.36=", err, sizeof err), GD_OK);
    assert_int_equal(na_image_map_add(&m, "godis=/bin/other", err, sizeof err), GD_OK);
    const na_image_entry *e = na_image_map_find(&m, "kbzjung359/godis:latest");
    assert_non_null(e);
    assert_string_equal(e->program, "/bin/standin");
    e = na_image_map_find(&m, "docker.io/kbzjung359/godis");     /* registry host in front */
    assert_non_null(e);
    assert_string_equal(e->program, "/bin/standin");              /* longest match wins */
    e = na_image_map_find(&m, "busybox");
    assert_non_null(e);
    assert_string_equal(e->program, "");
    assert_null(na_image_map_find(&m, "kbzjung359/godisx"));
    assert_null(na_image_map_find(&m, "xgodis"));
    assert_null(na_image_map_find(&m, ""));
    /* a later entry for the same image replaces the earlier one */
    assert_int_equal(na_image_map_add(&m, "kbzjung359/godis:9=/usr/bin/godis", err, sizeof err), GD_OK);
    assert_string_equal(na_image_map_find(&m, "kbzjung359/godis")->program, "/usr/bin/godis");
    assert_int_equal(m.n, 3);
    assert_int_equal(na_image_map_add(&m, "noequals", err, sizeof err), GD_ERR_ARG);
    assert_non_null(strstr(err, "IMAGE=PROGRAM"));
    assert_int_equal(na_image_map_add(&m, "=prog", err, sizeof err), GD_ERR_ARG);
    assert_int_equal(na_image_map_add(&m, ":x=prog", err, sizeof err), GD_ERR_ARG);
    assert_int_equal(na_image_map_add(&m, NULL, err, sizeof err), GD_ERR_ARG);
    na_image_map_free(&m);
}

static void test_ipam(void **st)
{
    (void)st;
    na_ipam p;
    char err[256], ip[16];
    assert_int_equal(na_ipam_init(&p, "127.0.1.0", 3, err, sizeof err), GD_OK);
    assert_int_equal(na_ipam_alloc(&p, ip), GD_OK);
    assert_string_equal(ip, "127.0.1.1");
    assert_int_equal(na_ipam_alloc(&p, ip), GD_OK);
    assert_string_equal(ip, "127.0.1.2");
    na_ipam_release(&p, "127.0.1.1");
    assert_int_equal(na_ipam_alloc(&p, ip), GD_OK);
    assert_string_equal(ip, "127.0.1.3");        /* round-robin: a freed address waits */
    assert_int_equal(na_ipam_alloc(&p, ip), GD_OK);
    assert_string_equal(ip, "127.0.1.1");
    assert_int_equal(na_ipam_alloc(&p, ip), GD_ERR_TOO_LARGE);
    assert_int_equal(na_ipam_reserve(&p, "127.0.1.2"), GD_ERR_ALREADY_EXISTS);
    na_ipam_release(&p, "127.0.1.2");
    assert_int_equal(na_ipam_reserve(&p, "127.0.1.2"), GD_OK);
    assert_int_equal(na_ipam_reserve(&p, "127.0.1.0"), GD_ERR_ARG);   /* the base itself */
    assert_int_equal(na_ipam_reserve(&p, "127.0.1.4"), GD_ERR_ARG);   /* past the pool */
    assert_int_equal(na_ipam_reserve(&p, "10.0.0.1"), GD_ERR_ARG);
    assert_int_equal(na_ipam_reserve(&p, "garbage"), GD_ERR_ARG);
    na_ipam_release(&p, "garbage");                                   /* harmless */
    na_ipam_free(&p);

    assert_int_equal(na_ipam_init(&p, "10.0.0.0", 0, err, sizeof err), GD_ERR_ARG);
    assert_non_null(strstr(err, "127.0.0.0/8"));
    assert_int_equal(na_ipam_init(&p, "not-an-ip", 0, err, sizeof err), GD_ERR_ARG);
    assert_int_equal(na_ipam_init(&p, "127.255.255.254", 0, err, sizeof err), GD_ERR_ARG);
    assert_int_equal(na_ipam_init(&p, "127.255.255.253", 100, err, sizeof err), GD_OK);
    assert_int_equal(p.size, 1);                  /* clamped below the broadcast address */
    assert_int_equal(na_ipam_alloc(&p, ip), GD_OK);
    assert_string_equal(ip, "127.255.255.254");
    na_ipam_free(&p);
}

static gd_err fake_cm(void *ud, const char *ns, const char *name, const char *key, char **out,
                      char *err, size_t errlen)
{
    (void)ud;
    if (strcmp(ns, "ns1") == 0 && strcmp(name, "c-config") == 0 && strcmp(key, "initial-cluster") == 0) {
        *out = strdup("1@http://c-1-endpoint.ns1.svc.cluster.local:6300");
        return GD_OK;
    }
    snprintf(err, errlen, "configmap %s/%s has no key %s", ns, name, key);
    return GD_ERR_NOT_FOUND;
}

static const char *POD = "{\"metadata\":{\"name\":\"c-1-abcde\",\"namespace\":\"ns1\",\"uid\":\"u-1\","
                         "\"labels\":{\"app\":\"x\"}},\"spec\":{\"nodeName\":\"node-2\"}}";

static void test_env_godis(void **st)
{
    (void)st;
    cJSON *pod = J(POD);
    cJSON *c = J("{\"name\":\"godis\",\"env\":["
                 "{\"name\":\"CLUSTER_ID\",\"value\":\"1\"},"
                 "{\"name\":\"CLUSTER_INITIAL-CLUSTER\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"c-config\",\"key\":\"initial-cluster\"}}},"
                 "{\"name\":\"CLUSTER_WALDIR\",\"value\":\"/tmp/godis/wal\"},"
                 "{\"name\":\"CLUSTER_SNAPDIR\",\"value\":\"/tmp/godis/snap\"},"
                 "{\"name\":\"OTHER\",\"value\":\"/tmp/godisx\"},"
                 "{\"name\":\"MY_IP\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.podIP\"}}},"
                 "{\"name\":\"MY_NAME\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}},"
                 "{\"name\":\"MY_NS\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.namespace\"}}},"
                 "{\"name\":\"MY_NODE\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"spec.nodeName\"}}},"
                 "{\"name\":\"MY_APP\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.labels['app']\"}}},"
                 "{\"name\":\"URL\",\"value\":\"http://$(MY_IP):1/$(NOPE)/$$(MY_IP)\"}]}");
    na_mount m[] = { { "/tmp/godis", "/state/volumes/ns1/data-c-1" } };
    na_env_ctx ctx = { .pod_ip = "127.0.1.7", .host_ip = "127.0.0.1", .node_name = "node-2", .cm_lookup = fake_cm };
    na_env env = { 0 };
    char err[256] = "";
    assert_int_equal(na_env_build(pod, c, "kbzjung359/godis:latest", &ctx, m, 1, &env, err, sizeof err), GD_OK);
    assert_string_equal(na_env_get(&env, "CLUSTER_ID"), "1");
    assert_string_equal(na_env_get(&env, "CLUSTER_INITIAL-CLUSTER"), "1@http://c-1-endpoint.ns1.svc.cluster.local:6300");
    assert_string_equal(na_env_get(&env, "CLUSTER_WALDIR"), "/state/volumes/ns1/data-c-1/wal");
    assert_string_equal(na_env_get(&env, "CLUSTER_SNAPDIR"), "/state/volumes/ns1/data-c-1/snap");
    assert_string_equal(na_env_get(&env, "OTHER"), "/tmp/godisx");   /* not under the mount */
    assert_string_equal(na_env_get(&env, "MY_IP"), "127.0.1.7");
    assert_string_equal(na_env_get(&env, "MY_NAME"), "c-1-abcde");
    assert_string_equal(na_env_get(&env, "MY_NS"), "ns1");
    assert_string_equal(na_env_get(&env, "MY_NODE"), "node-2");
    assert_string_equal(na_env_get(&env, "MY_APP"), "x");
    assert_string_equal(na_env_get(&env, "URL"), "http://127.0.1.7:1/$(NOPE)/$(MY_IP)");
    assert_string_equal(na_env_get(&env, "CLUSTER_LISTEN-CLIENT"), "http://127.0.1.7:6379");
    assert_string_equal(na_env_get(&env, "CLUSTER_LISTEN-PEER"), "http://127.0.1.7:6300");
    char **envp = na_env_to_envp(&env);
    assert_non_null(envp);
    assert_string_equal(envp[0], "CLUSTER_ID=1");
    na_strv_free(&envp);
    assert_null(envp);
    na_env_free(&env);

    /* the pod's own value wins over the image's extra; other images get no extras */
    cJSON *c2 = J("{\"env\":[{\"name\":\"CLUSTER_LISTEN-PEER\",\"value\":\"http://x:1\"}]}");
    assert_int_equal(na_env_build(pod, c2, "kbzjung359/godis", &ctx, NULL, 0, &env, err, sizeof err), GD_OK);
    assert_string_equal(na_env_get(&env, "CLUSTER_LISTEN-PEER"), "http://x:1");
    assert_string_equal(na_env_get(&env, "CLUSTER_LISTEN-CLIENT"), "http://127.0.1.7:6379");
    na_env_free(&env);
    assert_int_equal(na_env_build(pod, c2, "busybox", &ctx, NULL, 0, &env, err, sizeof err), GD_OK);
    assert_null(na_env_get(&env, "CLUSTER_LISTEN-CLIENT"));
    na_env_free(&env);
    cJSON_Delete(c);
    cJSON_Delete(c2);
    cJSON_Delete(pod);
}

static void test_env_errors(void **st)
{
    (void)st;
    cJSON *pod = J(POD);
    na_env_ctx ctx = { .pod_ip = "127.0.1.7", .host_ip = "127.0.0.1", .node_name = "node-2", .cm_lookup = fake_cm };
    const char *bad[][2] = {
        { "{\"env\":[{\"name\":\"A\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"c-config\",\"key\":\"nope\"}}}]}", "NotFound" },
        { "{\"env\":[{\"name\":\"A\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"c-config\"}}}]}", "Invalid" },
        { "{\"env\":[{\"name\":\"A\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.phase\"}}}]}", "Invalid" },
        { "{\"env\":[{\"name\":\"A\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"s\",\"key\":\"k\"}}}]}", "Invalid" },
        { "{\"env\":[{\"value\":\"no name\"}]}", "Invalid" },
        { "{\"env\":[{\"name\":\"\",\"value\":\"x\"}]}", "Invalid" },
        { "{\"env\":\"not a list\"}", "Invalid" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cJSON *c = J(bad[i][0]);
        na_env env = { 0 };
        char err[256] = "";
        gd_err e = na_env_build(pod, c, "x", &ctx, NULL, 0, &env, err, sizeof err);
        assert_string_equal(gd_strerror(e), bad[i][1]);
        assert_true(strlen(err) > 0);
        na_env_free(&env);
        cJSON_Delete(c);
    }
    /* optional ConfigMap refs that do not resolve are skipped */
    cJSON *c = J("{\"env\":[{\"name\":\"A\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"x\",\"key\":\"k\",\"optional\":true}}}]}");
    na_env env = { 0 };
    char err[256];
    assert_int_equal(na_env_build(pod, c, "x", &ctx, NULL, 0, &env, err, sizeof err), GD_OK);
    assert_null(na_env_get(&env, "A"));
    na_env_free(&env);
    cJSON_Delete(c);
    cJSON_Delete(pod);
}

static void test_rewrite_path(void **st)
{
    (void)st;
    na_mount m[] = { { "/data", "/h/d" }, { "/data/deep/", "/h/deep" }, { "/", "/h/root" } };
    char *r = na_rewrite_path("/data", m, 2);
    assert_string_equal(r, "/h/d");
    free(r);
    r = na_rewrite_path("/data/x/y", m, 2);
    assert_string_equal(r, "/h/d/x/y");
    free(r);
    r = na_rewrite_path("/data/deep/z", m, 2);       /* longest mountPath wins */
    assert_string_equal(r, "/h/deep/z");
    free(r);
    assert_null(na_rewrite_path("/database", m, 2));
    assert_null(na_rewrite_path("data/x", m, 2));
    assert_null(na_rewrite_path("", m, 2));
    r = na_rewrite_path("/etc/x", m, 3);
    assert_string_equal(r, "/h/root/etc/x");
    free(r);
}

static void test_argv_rewrite_paths(void **st)
{
    (void)st;
    na_mount m[] = { { "/etc/keys", "/h/keys" } };
    char *v[] = { strdup("/etc/keys/prog"), strdup("--key=/etc/keys/w.key"), strdup("/etc/keys/a"),
                  strdup("-k=/etc/keys"), strdup("--other=/etc/keysx"), strdup("x=/etc/keys/b"),
                  strdup("--flag"), NULL };
    assert_int_equal(na_argv_rewrite_paths(v, m, 1), GD_OK);
    assert_string_equal(v[0], "/etc/keys/prog");          /* the program is not an argument */
    assert_string_equal(v[1], "--key=/h/keys/w.key");
    assert_string_equal(v[2], "/h/keys/a");
    assert_string_equal(v[3], "-k=/h/keys");
    assert_string_equal(v[4], "--other=/etc/keysx");      /* not under the mountPath */
    assert_string_equal(v[5], "x=/etc/keys/b");           /* not an option */
    assert_string_equal(v[6], "--flag");
    for (int i = 0; v[i]; i++) free(v[i]);
}

static void test_argv(void **st)
{
    (void)st;
    na_env env = { 0 };
    na_env_set(&env, "PORT", "6379");
    char **v = NULL, err[256];
    cJSON *c = J("{\"args\":[\"cluster\",\"--port=$(PORT)\"]}");
    assert_int_equal(na_argv_build(c, "/bin/standin", &env, &v, err, sizeof err), GD_OK);
    assert_string_equal(v[0], "/bin/standin");
    assert_string_equal(v[1], "cluster");
    assert_string_equal(v[2], "--port=6379");
    assert_null(v[3]);
    na_strv_free(&v);
    cJSON_Delete(c);
    c = J("{\"command\":[\"godis\",\"cluster\"],\"args\":[\"--x\"]}");
    assert_int_equal(na_argv_build(c, "/bin/standin", &env, &v, err, sizeof err), GD_OK);
    assert_string_equal(v[0], "/bin/standin");       /* the program replaces the entrypoint */
    assert_string_equal(v[1], "cluster");
    assert_string_equal(v[2], "--x");
    assert_null(v[3]);
    na_strv_free(&v);
    assert_int_equal(na_argv_build(c, "", &env, &v, err, sizeof err), GD_OK);   /* passthrough */
    assert_string_equal(v[0], "godis");
    na_strv_free(&v);
    cJSON_Delete(c);
    c = J("{\"args\":[\"x\"]}");
    assert_int_equal(na_argv_build(c, "", &env, &v, err, sizeof err), GD_ERR_INVALID);
    cJSON_Delete(c);
    c = J("{\"args\":[\"x\", 3]}");
    assert_int_equal(na_argv_build(c, "/p", &env, &v, err, sizeof err), GD_ERR_INVALID);
    assert_null(v);
    cJSON_Delete(c);
    /* an image of several programs: command[0]'s name from the mapped directory */
    c = J("{\"command\":[\"/usr/local/bin/godis-worker\"],\"args\":[\"--x\"]}");
    assert_int_equal(na_argv_build(c, "/opt/bin/", &env, &v, err, sizeof err), GD_OK);
    assert_string_equal(v[0], "/opt/bin/godis-worker");
    assert_string_equal(v[1], "--x");
    assert_null(v[2]);
    na_strv_free(&v);
    cJSON_Delete(c);
    c = J("{\"args\":[\"--x\"]}");
    assert_int_equal(na_argv_build(c, "/opt/bin/", &env, &v, err, sizeof err), GD_ERR_INVALID);
    assert_null(v);
    cJSON_Delete(c);
    c = J("{\"command\":[\"/x/..\"]}");
    assert_int_equal(na_argv_build(c, "/opt/bin/", &env, &v, err, sizeof err), GD_ERR_INVALID);
    cJSON_Delete(c);
    c = J("{\"command\":\"sh\"}");
    assert_int_equal(na_argv_build(c, "/p", &env, &v, err, sizeof err), GD_ERR_INVALID);
    cJSON_Delete(c);
    na_env_free(&env);
}

static void test_probe_parse(void **st)
{
    (void)st;
    na_probe p;
    char err[256];
    cJSON *c = J("{\"ports\":[{\"name\":\"client\",\"containerPort\":6379}],"
                 "\"readinessProbe\":{\"tcpSocket\":{\"port\":\"client\"},\"periodSeconds\":1,\"initialDelaySeconds\":2},"
                 "\"livenessProbe\":{\"httpGet\":{\"port\":8080,\"path\":\"/healthz\"}},"
                 "\"startupProbe\":{\"exec\":{\"command\":[\"true\"]}},"
                 "\"badProbe\":{\"tcpSocket\":{\"port\":\"nope\"}},"
                 "\"bigProbe\":{\"tcpSocket\":{\"port\":70000}}}");
    assert_int_equal(na_probe_parse(c, "readinessProbe", &p, err, sizeof err), GD_OK);
    assert_int_equal(p.kind, NA_PROBE_TCP);
    assert_int_equal(p.port, 6379);
    assert_int_equal(p.period_s, 1);
    assert_int_equal(p.initial_delay_s, 2);
    assert_int_equal(p.timeout_s, 1);
    assert_int_equal(p.failure_threshold, 3);
    assert_int_equal(na_probe_parse(c, "livenessProbe", &p, err, sizeof err), GD_OK);
    assert_int_equal(p.kind, NA_PROBE_HTTP);
    assert_int_equal(p.port, 8080);
    assert_string_equal(p.path, "/healthz");
    assert_int_equal(p.period_s, 10);
    assert_int_equal(na_probe_parse(c, "startupProbe", &p, err, sizeof err), GD_OK);
    assert_int_equal(p.kind, NA_PROBE_UNSUPPORTED);
    assert_int_equal(na_probe_parse(c, "missing", &p, err, sizeof err), GD_OK);
    assert_int_equal(p.kind, NA_PROBE_NONE);
    assert_int_equal(na_probe_parse(c, "badProbe", &p, err, sizeof err), GD_ERR_INVALID);
    assert_int_equal(p.kind, NA_PROBE_NONE);
    assert_int_equal(na_probe_parse(c, "bigProbe", &p, err, sizeof err), GD_ERR_INVALID);
    assert_int_equal(na_probe_parse(c, "ports", &p, err, sizeof err), GD_ERR_INVALID);
    cJSON_Delete(c);
}

static void test_selector(void **st)
{
    (void)st;
    cJSON *labels = J("{\"cluster-name\":\"c\",\"node-name\":\"c-1\"}");
    cJSON *s1 = J("{\"node-name\":\"c-1\"}"), *s2 = J("{\"node-name\":\"c-2\"}"), *s3 = J("{}");
    cJSON *s4 = J("{\"node-name\":\"c-1\",\"x\":\"y\"}"), *s5 = J("{\"node-name\":1}");
    assert_true(na_selector_matches(s1, labels));
    assert_false(na_selector_matches(s2, labels));
    assert_false(na_selector_matches(s3, labels));
    assert_false(na_selector_matches(s4, labels));
    assert_false(na_selector_matches(s5, labels));
    assert_false(na_selector_matches(NULL, labels));
    assert_false(na_selector_matches(s1, NULL));
    cJSON_Delete(labels); cJSON_Delete(s1); cJSON_Delete(s2); cJSON_Delete(s3); cJSON_Delete(s4); cJSON_Delete(s5);
}

static void test_hosts_rewrite(void **st)
{
    (void)st;
    gd_err e;
    char *r = na_hosts_rewrite("", "127.0.1.1 a.ns.svc.cluster.local\n", NULL, &e);
    assert_int_equal(e, GD_OK);
    assert_string_equal(r, NA_HOSTS_BEGIN "\n127.0.1.1 a.ns.svc.cluster.local\n" NA_HOSTS_END "\n");
    char *r2 = na_hosts_rewrite(r, "127.0.1.2 b", NULL, &e);  /* replaced, newline added */
    assert_string_equal(r2, NA_HOSTS_BEGIN "\n127.0.1.2 b\n" NA_HOSTS_END "\n");
    free(r);
    free(r2);
    const char *old = "127.0.0.1 localhost\n" NA_HOSTS_BEGIN "\nold line\n" NA_HOSTS_END "\n::1 ip6\n"
                      "# BEGIN godis-node-agentX is not a marker\n";
    r = na_hosts_rewrite(old, "", NULL, &e);
    assert_string_equal(r, "127.0.0.1 localhost\n::1 ip6\n# BEGIN godis-node-agentX is not a marker\n"
                           NA_HOSTS_BEGIN "\n" NA_HOSTS_END "\n");
    free(r);
    r = na_hosts_rewrite("no newline at end", "x\n", NULL, &e);
    assert_string_equal(r, "no newline at end\n" NA_HOSTS_BEGIN "\nx\n" NA_HOSTS_END "\n");
    free(r);
    r = na_hosts_rewrite("a\n" NA_HOSTS_BEGIN "\nkeep me\n", "x\n", NULL, &e);   /* BEGIN without END */
    assert_null(r);
    assert_int_equal(e, GD_ERR_PARSE);
    /* named blocks: two agents share one file, each rewrites only its own block */
    r = na_hosts_rewrite(NA_HOSTS_BEGIN "\nu\n" NA_HOSTS_END "\n", "a1\n", "a", &e);
    r2 = na_hosts_rewrite(r, "b1\n", "b", &e);
    free(r);
    r = na_hosts_rewrite(r2, "a2\n", "a", &e);
    assert_string_equal(r, NA_HOSTS_BEGIN "\nu\n" NA_HOSTS_END "\n" NA_HOSTS_BEGIN " b\nb1\n"
                           NA_HOSTS_END " b\n" NA_HOSTS_BEGIN " a\na2\n" NA_HOSTS_END " a\n");
    free(r);
    free(r2);
    r = na_hosts_rewrite(NULL, NULL, NULL, &e);
    assert_string_equal(r, NA_HOSTS_BEGIN "\n" NA_HOSTS_END "\n");
    free(r);
}

static void test_taint_and_paths(void **st)
{
    (void)st;
    char err[256], out[64];
    cJSON *t = na_taint_parse("godis-test=yes:NoSchedule", err, sizeof err);
    assert_non_null(t);
    char *s = cJSON_PrintUnformatted(t);
    assert_string_equal(s, "{\"key\":\"godis-test\",\"value\":\"yes\",\"effect\":\"NoSchedule\"}");
    free(s);
    cJSON_Delete(t);
    t = na_taint_parse("k:NoExecute", err, sizeof err);
    assert_non_null(t);
    assert_null(cJSON_GetObjectItem(t, "value"));
    cJSON_Delete(t);
    assert_null(na_taint_parse("k=v", err, sizeof err));
    assert_null(na_taint_parse("k=v:Sometimes", err, sizeof err));
    assert_null(na_taint_parse(":NoSchedule", err, sizeof err));
    assert_null(na_taint_parse("=v:NoSchedule", err, sizeof err));
    assert_true(na_path_join(out, sizeof out, "/s", "ns1"));
    assert_string_equal(out, "/s/ns1");
    assert_false(na_path_join(out, sizeof out, "/s", ".."));
    assert_false(na_path_join(out, sizeof out, "/s", "a/b"));
    assert_false(na_path_join(out, sizeof out, "/s", ""));
    assert_false(na_path_join(out, 8, "/s", "toolongname"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_image_strip_tag), cmocka_unit_test(test_image_map),
        cmocka_unit_test(test_ipam),            cmocka_unit_test(test_env_godis),
        cmocka_unit_test(test_env_errors),      cmocka_unit_test(test_rewrite_path),
        cmocka_unit_test(test_argv), cmocka_unit_test(test_argv_rewrite_paths),          cmocka_unit_test(test_probe_parse),
        cmocka_unit_test(test_selector),        cmocka_unit_test(test_hosts_rewrite),
        cmocka_unit_test(test_taint_and_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
