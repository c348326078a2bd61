/* itest_node_agent — the node agent against the real control plane (tools/devcluster).
 *
 * The test starts its own agent with two tainted nodes (itest-na-1, itest-na-2), its own IP
 * range and state directory, so it neither disturbs nor depends on the devcluster's agent;
 * its pods tolerate the taint and are pinned to those nodes by affinity. It proves: the nodes
 * register Ready with Leases; a ReplicaSet of kbzjung359/godis gets Running/Ready pods with
 * distinct loopback IPs whose stand-ins answer hello and cluster meet; a deleted pod comes
 * back with the same PVC data; a cordoned node gets no new pods; set-ready flips Ready; a pod
 * that ignores TERM is killed after its grace period and then removed from the API.
 *
 * Needs KUBECONFIG (else `tools/devcluster env` is asked; without a cluster every test is
 * skipped). Run from the repository root or anywhere: the agent is found next to bin/tests. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "gd_json.h"
#include "gd_log.h"
#include "gd_time.h"
#include "godis_client.h"
#include "k8s_client.h"
#include "k8s_config.h"

#define NODE1 "itest-na-1"
#define NODE2 "itest-na-2"
/* Pod IPs from 127.<240..255>.<n>.0/24, chosen by pid: outside every devcluster's
 * 127.<16..239>.0.0/16, and unlikely to meet another itest run on the same machine. */
static char ip_prefix[32], ip_base[32];

static k8s_client *api;
static char ns[64], state_dir[PATH_MAX], agent_bin[PATH_MAX], kubeconfig[PATH_MAX];
static char hosts_file[PATH_MAX + 8];
static pid_t agent_pid;

/* ------------------------------------------------------------------ helpers */

static bool find_kubeconfig(void)
{
    const char *k = getenv("KUBECONFIG");
    if (k && *k) { snprintf(kubeconfig, sizeof kubeconfig, "%s", k); return true; }
    FILE *p = popen("tools/devcluster env 2>/dev/null", "r");
    if (!p) return false;
    char line[PATH_MAX + 64];
    while (fgets(line, sizeof line, p)) {
        char *v = strstr(line, "KUBECONFIG=");
        if (!v) continue;
        v += strlen("KUBECONFIG=");
        v[strcspn(v, "\"'\n")] = '\0';
        if (*v == '"' || *v == '\'') v++;
        snprintf(kubeconfig, sizeof kubeconfig, "%s", v);
    }
    pclose(p);
    return *kubeconfig != '\0';
}

static cJSON *jsonf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static cJSON *jsonf(const char *fmt, ...)
{
    char buf[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && n < (int)sizeof buf);
    cJSON *j = cJSON_Parse(buf);
    if (!j) fail_msg("bad JSON in test: %s", buf);
    return j;
}

static void create(const k8s_resource *r, const char *in_ns, cJSON *obj)
{
    k8s_status st;
    gd_err e = k8s_create(api, r, in_ns, obj, NULL, &st);
    cJSON_Delete(obj);
    if (e != GD_OK) fail_msg("create %s: %s %s", r->resource, gd_strerror(e), st.message);
}

static cJSON *get(const k8s_resource *r, const char *in_ns, const char *name)
{
    cJSON *o = NULL;
    k8s_status st;
    return k8s_get(api, r, in_ns, name, &o, &st) == GD_OK ? o : NULL;
}

static const char *condition(const cJSON *obj, const char *type)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, gd_json_path(obj, "status.conditions"))
        if (strcmp(gd_json_str_or(c, "type", ""), type) == 0) return gd_json_str_or(c, "status", "");
    return "";
}

/* Pods of the namespace with label app=<app> that are Running and Ready, not deleting. */
static int ready_pods(const char *app, cJSON **list_out)
{
    char sel[128];
    snprintf(sel, sizeof sel, "app=%s", app);
    k8s_list_opts lo = { .label_selector = sel };
    cJSON *list = NULL;
    k8s_status st;
    if (k8s_list(api, &K8S_RES_PODS, ns, &lo, &list, &st) != GD_OK) return -1;
    cJSON *items = gd_json_path(list, "items"), *ready = cJSON_CreateArray(), *p;
    cJSON_ArrayForEach(p, items)
        if (!gd_meta_deleting(p) && strcmp(gd_json_str_or(p, "status.phase", ""), "Running") == 0 &&
            strcmp(condition(p, "Ready"), "True") == 0)
            cJSON_AddItemToArray(ready, cJSON_Duplicate(p, 1));
    cJSON_Delete(list);
    int n = cJSON_GetArraySize(ready);
    if (list_out) *list_out = ready; else cJSON_Delete(ready);
    return n;
}

static cJSON *wait_ready_pods(const char *app, int want, int timeout_s)
{
    int64_t deadline = gd_mono_ms() + timeout_s * 1000;
    for (;;) {
        cJSON *l = NULL;
        int n = ready_pods(app, &l);
        if (n == want) return l;
        cJSON_Delete(l);
        if (gd_mono_ms() > deadline) fail_msg("%s: %d Ready pods after %d s, want %d", app, n, timeout_s, want);
        gd_sleep_ms(500);
    }
}

/* A pod template: tolerates our taint, pinned to our nodes. */
static const char *TEMPLATE_SPEC =
    "\"tolerations\":[{\"key\":\"godis-itest\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],"
    "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":"
    "[{\"matchExpressions\":[{\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[\"" NODE1 "\",\"" NODE2 "\"]}]}]}}},"
    "\"terminationGracePeriodSeconds\":5";

static void create_godis_rs(const char *name, int replicas, const char *volume)
{
    create(&K8S_RES_REPLICASETS, ns, jsonf(
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"%s\"},"
        "\"spec\":{\"replicas\":%d,\"selector\":{\"matchLabels\":{\"app\":\"%s\"}},"
        "\"template\":{\"metadata\":{\"labels\":{\"app\":\"%s\"}},\"spec\":{%s,"
        "\"containers\":[{\"name\":\"godis\",\"image\":\"kbzjung359/godis:latest\",\"args\":[\"cluster\"],"
        "\"env\":[{\"name\":\"CLUSTER_ID\",\"value\":\"1\"},{\"name\":\"CLUSTER_WALDIR\",\"value\":\"/tmp/godis/wal\"},"
        "{\"name\":\"CLUSTER_SNAPDIR\",\"value\":\"/tmp/godis/snap\"},"
        "{\"name\":\"CLUSTER_INITIAL-CLUSTER\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"godis-config\",\"key\":\"initial-cluster\"}}},"
        "{\"name\":\"MY_IP\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.podIP\"}}}],"
        "\"ports\":[{\"name\":\"client\",\"containerPort\":6379},{\"name\":\"peer\",\"containerPort\":6300}],"
        "\"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/tmp/godis\"}],"
        "\"readinessProbe\":{\"tcpSocket\":{\"port\":\"client\"},\"periodSeconds\":1}}],"
        "\"volumes\":[{\"name\":\"data\",%s}]}}}}",
        name, replicas, name, name, TEMPLATE_SPEC, volume));
}

static godis_client *godis_at(const cJSON *pod)
{
    const char *ip = gd_json_str_or(pod, "status.podIP", "");
    godis_client *c = godis_client_new(ip, 6379, NULL);
    assert_non_null(c);
    return c;
}

/* ------------------------------------------------------------------ setup / teardown */

static int rm_entry(const char *p, const struct stat *sb, int f, struct FTW *w)
{
    (void)sb; (void)f; (void)w;
    remove(p);
    return 0;
}

static void run_agent_cmd(char *const extra[])
{
    char *argv[32];
    int n = 0;
    argv[n++] = agent_bin;
    argv[n++] = "--kubeconfig"; argv[n++] = kubeconfig;
    argv[n++] = "--state-dir"; argv[n++] = state_dir;
    for (int i = 0; extra[i] && n < 31; i++) argv[n++] = extra[i];
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        char log[PATH_MAX + 16];
        snprintf(log, sizeof log, "%s/agent.log", state_dir);
        FILE *f = freopen(log, "a", stderr);
        (void)f;
        execv(agent_bin, argv);
        _exit(127);
    }
    assert_true(pid > 0);
    if (strcmp(extra[0], "set-ready") == 0) {
        int ws;
        waitpid(pid, &ws, 0);
        assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    } else {
        agent_pid = pid;
    }
}

static void start_agent(void);

static int setup(void **st)
{
    (void)st;
    gd_log_init("itest", GD_LOG_WARN, 0, 2);
    if (!find_kubeconfig()) return 0;
    k8s_config_opts co = { .kubeconfig = kubeconfig };
    k8s_config *cfg = NULL;
    char err[512];
    if (k8s_config_load(&co, &cfg, err, sizeof err) != GD_OK) { fprintf(stderr, "%s\n", err); return 0; }
    api = k8s_client_new(&cfg, NULL);
    if (!api) return -1;
    cJSON *nsl = get(&K8S_RES_NAMESPACES, NULL, "default");
    if (!nsl) { k8s_client_destroy(&api); return 0; }      /* no cluster answering: skip */
    cJSON_Delete(nsl);
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return -1;
    self[n] = '\0';
    *strrchr(self, '/') = '\0';                            /* bin/tests */
    *strrchr(self, '/') = '\0';                            /* bin */
    if (snprintf(agent_bin, sizeof agent_bin, "%s/node-agent", self) >= (int)sizeof agent_bin) return -1;
    snprintf(state_dir, sizeof state_dir, "/tmp/itest-node-agent-XXXXXX");
    if (!mkdtemp(state_dir)) return -1;
    snprintf(ns, sizeof ns, "itest-na-%d", (int)getpid());
    int b2 = 240 + getpid() % 16, b3 = (getpid() / 16) % 256;
    snprintf(ip_prefix, sizeof ip_prefix, "127.%d.%d.", b2, b3);
    snprintf(ip_base, sizeof ip_base, "127.%d.%d.0", b2, b3);
    if (snprintf(hosts_file, sizeof hosts_file, "%s/hosts", state_dir) >= (int)sizeof hosts_file) return -1;
    FILE *hf = fopen(hosts_file, "w");
    if (!hf) return -1;
    fputs("127.0.0.1 localhost\n", hf);
    fclose(hf);
    create(&K8S_RES_NAMESPACES, NULL, jsonf("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", ns));
    start_agent();
    return 0;
}

static void start_agent(void)
{
    char *args[] = { "--nodes", "2", "--node-prefix", "itest-na-", "--ip-base", ip_base,
                     "--taint", "godis-itest=node-agent:NoSchedule", "--heartbeat", "2s",
                     "--image-map", "itest/shell=", "--hosts-file", hosts_file, NULL };
    run_agent_cmd(args);
}

static int teardown(void **st)
{
    (void)st;
    if (!api) return 0;
    k8s_delete_opts o;
    k8s_delete_opts_default(&o);
    k8s_status s;
    k8s_delete(api, &K8S_RES_NAMESPACES, NULL, ns, &o, &s);
    /* Let the agent finish the namespace's pods, then stop it and remove its nodes. */
    for (int i = 0; i < 60 && ready_pods("godis", NULL) + ready_pods("vol", NULL) + ready_pods("sleep", NULL) > 0; i++)
        gd_sleep_ms(500);
    if (agent_pid > 0) {
        kill(agent_pid, SIGTERM);
        int ws;
        for (int i = 0; i < 200 && waitpid(agent_pid, &ws, WNOHANG) == 0; i++) gd_sleep_ms(100);
        if (waitpid(agent_pid, &ws, WNOHANG) == 0) { kill(agent_pid, SIGKILL); waitpid(agent_pid, &ws, 0); }
    }
    k8s_delete(api, &K8S_RES_NODES, NULL, NODE1, &o, &s);
    k8s_delete(api, &K8S_RES_NODES, NULL, NODE2, &o, &s);
    if (getenv("ITEST_KEEP_STATE")) fprintf(stderr, "agent state kept in %s\n", state_dir);
    else nftw(state_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    k8s_client_destroy(&api);
    return 0;
}

#define NEED_CLUSTER() do { if (!api) skip(); } while (0)

/* ------------------------------------------------------------------ tests */

/* Waits until the node's Lease carries a renewTime other than `since`. */
static bool wait_lease_renewed(const char *node, const char *since, int timeout_ms)
{
    int64_t deadline = gd_mono_ms() + timeout_ms;
    do {
        cJSON *lease = get(&K8S_RES_LEASES, "kube-node-lease", node);
        bool renewed = lease && strcmp(gd_json_str_or(lease, "spec.renewTime", since), since) != 0;
        cJSON_Delete(lease);
        if (renewed) return true;
        gd_sleep_ms(200);
    } while (gd_mono_ms() < deadline);
    fprintf(stderr, "node %s: Lease not renewed since %s within %d ms\n", node, since, timeout_ms);
    return false;
}

static void test_nodes_ready(void **st)
{
    (void)st;
    NEED_CLUSTER();
    const char *nodes[] = { NODE1, NODE2 };
    for (int i = 0; i < 2; i++) {
        cJSON *n = NULL;
        for (int t = 0; t < 60; t++) {
            cJSON_Delete(n);
            n = get(&K8S_RES_NODES, NULL, nodes[i]);
            if (n && strcmp(condition(n, "Ready"), "True") == 0) break;
            gd_sleep_ms(500);
        }
        if (!n || strcmp(condition(n, "Ready"), "True") != 0) fail_msg("node %s not Ready after 30 s", nodes[i]);
        assert_string_equal(gd_json_str_or(n, "status.capacity.cpu", ""), "8");
        assert_string_equal(gd_json_str_or(n, "status.allocatable.memory", ""), "16Gi");
        assert_string_equal(gd_json_str_or(n, "status.capacity.pods", ""), "110");
        cJSON_Delete(n);
        /* the agent registers the Node (Ready) first and creates its Lease on the heartbeat
         * right after: on a busy machine the Node can be seen before the Lease */
        assert_true(wait_lease_renewed(nodes[i], "", 30000));
        cJSON *lease = get(&K8S_RES_LEASES, "kube-node-lease", nodes[i]);
        assert_non_null(lease);
        assert_string_equal(gd_json_str_or(lease, "spec.holderIdentity", ""), nodes[i]);
        char renew1[64];
        snprintf(renew1, sizeof renew1, "%s", gd_json_str_or(lease, "spec.renewTime", ""));
        cJSON_Delete(lease);
        /* --heartbeat 2s: renewed again (a condition with a deadline, not a sleep
         * that assumes the agent is on time on a loaded machine) */
        assert_true(wait_lease_renewed(nodes[i], renew1, 30000));
    }
}

static void test_godis_replicaset(void **st)
{
    (void)st;
    NEED_CLUSTER();
    create(&K8S_RES_CONFIGMAPS, ns, jsonf(
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"godis-config\"},"
        "\"data\":{\"initial-cluster\":\"1@http://godis-1-endpoint.%s.svc.cluster.local:6300\"}}", ns));
    create_godis_rs("godis", 3, "\"emptyDir\":{}");
    cJSON *pods = wait_ready_pods("godis", 3, 90), *p;
    char ips[3][16];
    int i = 0;
    cJSON_ArrayForEach(p, pods) {
        const char *ip = gd_json_str_or(p, "status.podIP", "");
        assert_true(strncmp(ip, ip_prefix, strlen(ip_prefix)) == 0);
        assert_string_equal(gd_json_str_or(p, "status.hostIP", ""), "127.0.0.1");
        const cJSON *ip0 = cJSON_GetArrayItem(gd_json_path(p, "status.podIPs"), 0);
        assert_string_equal(gd_json_str_or(ip0, "ip", ""), ip);
        assert_non_null(gd_json_path(p, "status.startTime"));
        const cJSON *cs = cJSON_GetArrayItem(gd_json_path(p, "status.containerStatuses"), 0);
        assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cs, "ready")));
        assert_non_null(gd_json_path(cs, "state.running"));
        for (int j = 0; j < i; j++) assert_string_not_equal(ips[j], ip);
        snprintf(ips[i++], 16, "%s", ip);
        godis_client *g = godis_at(p);
        godis_hello_info hi;
        assert_int_equal(godis_hello(g, &hi), GD_OK);
        assert_int_equal(godis_meet(g, 7, "http://127.0.200.250:6300", 5000), GD_OK);
        godis_client_destroy(&g);
    }
    cJSON_Delete(pods);
}

static void test_volume_survives_pod(void **st)
{
    (void)st;
    NEED_CLUSTER();
    create(&K8S_RES_PVCS, ns, jsonf(
        "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":\"data-vol\"},"
        "\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"resources\":{\"requests\":{\"storage\":\"1Mi\"}}}}"));
    create_godis_rs("vol", 1, "\"persistentVolumeClaim\":{\"claimName\":\"data-vol\"}");
    cJSON *pods = wait_ready_pods("vol", 1, 120);
    cJSON *p = cJSON_GetArrayItem(pods, 0);
    char old_name[128];
    snprintf(old_name, sizeof old_name, "%s", gd_meta_name(p));
    godis_client *g = godis_at(p);
    assert_int_equal(godis_set(g, "survives", "yes"), GD_OK);
    assert_int_equal(godis_meet(g, 5, "http://127.0.200.251:6300", 5000), GD_OK);
    godis_client_destroy(&g);
    cJSON_Delete(pods);
    char wal[PATH_MAX + 64];
    assert_true(snprintf(wal, sizeof wal, "%s/volumes/%s/data-vol/wal", state_dir, ns) < (int)sizeof wal);
    struct stat sb;
    assert_int_equal(stat(wal, &sb), 0);                  /* the env rule put the WAL there */

    k8s_delete_opts o;
    k8s_delete_opts_default(&o);
    k8s_status s;
    assert_int_equal(k8s_delete(api, &K8S_RES_PODS, ns, old_name, &o, &s), GD_OK);
    int64_t deadline = gd_mono_ms() + 120000;
    for (;;) {
        pods = NULL;
        if (ready_pods("vol", &pods) == 1 && strcmp(gd_meta_name(cJSON_GetArrayItem(pods, 0)), old_name) != 0)
            break;
        cJSON_Delete(pods);
        if (gd_mono_ms() > deadline) fail_msg("no replacement pod became Ready");
        gd_sleep_ms(500);
    }
    g = godis_at(cJSON_GetArrayItem(pods, 0));
    char *v = NULL;
    assert_int_equal(godis_get(g, "survives", &v), GD_OK);
    assert_string_equal(v, "yes");
    free(v);
    long long ids[16];
    char *urls[16];
    size_t n = 0;
    assert_int_equal(godis_members(g, ids, urls, 16, &n), GD_OK);
    bool found = false;
    for (size_t i = 0; i < n; i++) { found |= ids[i] == 5; free(urls[i]); }
    assert_true(found);
    godis_client_destroy(&g);
    cJSON_Delete(pods);
    /* The old pod was finished by the agent (grace, then delete with gracePeriodSeconds=0). */
    cJSON *old = NULL;
    for (int t = 0; t < 40 && (old = get(&K8S_RES_PODS, ns, old_name)); t++) { cJSON_Delete(old); gd_sleep_ms(500); }
    assert_null(old);
}

static void test_hosts_file(void **st)
{
    (void)st;
    NEED_CLUSTER();
    create(&K8S_RES_SERVICES, ns, jsonf(
        "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"vol-endpoint\"},"
        "\"spec\":{\"selector\":{\"app\":\"vol\"},\"ports\":[{\"name\":\"client\",\"port\":6379}]}}"));
    cJSON *pods = wait_ready_pods("vol", 1, 10);
    char want[256];
    snprintf(want, sizeof want, "%s vol-endpoint.%s.svc.cluster.local",
             gd_json_str_or(cJSON_GetArrayItem(pods, 0), "status.podIP", "?"), ns);
    cJSON_Delete(pods);
    char buf[8192] = "";
    for (int t = 0; t < 40; t++) {
        FILE *f = fopen(hosts_file, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f) fclose(f);
        buf[n] = '\0';
        if (strstr(buf, want)) break;
        gd_sleep_ms(250);
    }
    if (!strstr(buf, want)) fail_msg("hosts file lacks \"%s\":\n%s", want, buf);
    const char *head = "127.0.0.1 localhost\n# BEGIN godis-node-agent\n";
    assert_true(strncmp(buf, head, strlen(head)) == 0);     /* foreign lines kept, block after */
    assert_non_null(strstr(buf, "# END godis-node-agent\n"));
}

static void test_crash_loop(void **st)
{
    (void)st;
    NEED_CLUSTER();
    create(&K8S_RES_PODS, ns, jsonf(
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"crasher\"},"
        "\"spec\":{\"nodeName\":\"" NODE1 "\",\"tolerations\":[{\"key\":\"godis-itest\",\"operator\":\"Exists\"}],"
        "\"containers\":[{\"name\":\"sh\",\"image\":\"itest/shell\",\"command\":[\"/bin/sh\",\"-c\",\"exit 3\"]}]}}"));
    for (int t = 0; t < 60; t++) {
        cJSON *p = get(&K8S_RES_PODS, ns, "crasher");
        const cJSON *cs = cJSON_GetArrayItem(gd_json_path(p, "status.containerStatuses"), 0);
        int64_t restarts = gd_json_int_or(cs, "restartCount", 0);
        int64_t code = gd_json_int_or(cs, "lastState.terminated.exitCode", -1);
        bool ok = restarts >= 2 && code == 3;
        cJSON_Delete(p);
        if (ok) return;
        gd_sleep_ms(250);
    }
    fail_msg("crasher: no restartCount >= 2 with lastState exitCode 3 after 15 s");
}

/* The agent dies hard (its pod processes die with it) and comes back: pods keep their IPs,
 * count a restart, and are Ready again. */
static void test_agent_restart(void **st)
{
    (void)st;
    NEED_CLUSTER();
    cJSON *before = wait_ready_pods("godis", 3, 10), *p;
    kill(agent_pid, SIGKILL);
    int ws;
    waitpid(agent_pid, &ws, 0);
    agent_pid = 0;
    start_agent();
    int64_t deadline = gd_mono_ms() + 60000;
    for (;;) {
        cJSON *now = NULL;
        int n = ready_pods("godis", &now), same = 0;
        cJSON_ArrayForEach(p, now) {
            const cJSON *cs = cJSON_GetArrayItem(gd_json_path(p, "status.containerStatuses"), 0);
            const cJSON *q;
            cJSON_ArrayForEach(q, before)
                if (strcmp(gd_meta_name(q), gd_meta_name(p)) == 0 &&
                    strcmp(gd_json_str_or(q, "status.podIP", ""), gd_json_str_or(p, "status.podIP", "-")) == 0 &&
                    gd_json_int_or(cs, "restartCount", 0) >= 1)
                    same++;
        }
        cJSON_Delete(now);
        if (n == 3 && same == 3) break;
        if (gd_mono_ms() > deadline) fail_msg("godis pods not back with their IPs after an agent restart");
        gd_sleep_ms(500);
    }
    cJSON_ArrayForEach(p, before) {
        godis_client *g = godis_at(p);
        godis_hello_info hi;
        assert_int_equal(godis_hello(g, &hi), GD_OK);
        godis_client_destroy(&g);
    }
    cJSON_Delete(before);
}

static void create_sleepers(const char *name, int replicas)
{
    create(&K8S_RES_REPLICASETS, ns, jsonf(
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"%s\"},"
        "\"spec\":{\"replicas\":%d,\"selector\":{\"matchLabels\":{\"app\":\"%s\"}},"
        "\"template\":{\"metadata\":{\"labels\":{\"app\":\"%s\"}},\"spec\":{%s,"
        "\"containers\":[{\"name\":\"sh\",\"image\":\"itest/shell\",\"command\":[\"sleep\",\"600\"]}]}}}}",
        name, replicas, name, name, TEMPLATE_SPEC));
}

static void test_cordoned_node_gets_no_pods(void **st)
{
    (void)st;
    NEED_CLUSTER();
    k8s_status s;
    assert_int_equal(k8s_patch(api, &K8S_RES_NODES, NULL, NODE2, K8S_PATCH_MERGE,
                               "{\"spec\":{\"unschedulable\":true}}", NULL, NULL, &s), GD_OK);
    create_sleepers("sleep", 4);
    cJSON *pods = wait_ready_pods("sleep", 4, 60), *p;
    cJSON_ArrayForEach(p, pods) assert_string_equal(gd_json_str_or(p, "spec.nodeName", ""), NODE1);
    cJSON_Delete(pods);
    assert_int_equal(k8s_patch(api, &K8S_RES_NODES, NULL, NODE2, K8S_PATCH_MERGE,
                               "{\"spec\":{\"unschedulable\":false}}", NULL, NULL, &s), GD_OK);
}

static void wait_node_ready(const char *node, const char *want, int timeout_s)
{
    for (int t = 0; t < timeout_s * 4; t++) {
        cJSON *n = get(&K8S_RES_NODES, NULL, node);
        bool ok = n && strcmp(condition(n, "Ready"), want) == 0;
        cJSON_Delete(n);
        if (ok) return;
        gd_sleep_ms(250);
    }
    fail_msg("node %s Ready != %s after %d s", node, want, timeout_s);
}

static void test_set_ready(void **st)
{
    (void)st;
    NEED_CLUSTER();
    char *off[] = { "set-ready", NODE2, "false", NULL };
    run_agent_cmd(off);
    wait_node_ready(NODE2, "False", 30);
    /* Two heartbeats later (two Lease renewals observed, not a guess of how long they
     * take), the agent still reports it NotReady: the setting sticks. */
    for (int beat = 0; beat < 2; beat++) {
        cJSON *lease = get(&K8S_RES_LEASES, "kube-node-lease", NODE2);
        char renew[64];
        snprintf(renew, sizeof renew, "%s", gd_json_str_or(lease, "spec.renewTime", ""));
        cJSON_Delete(lease);
        assert_true(wait_lease_renewed(NODE2, renew, 30000));
    }
    cJSON *n = get(&K8S_RES_NODES, NULL, NODE2);
    assert_string_equal(condition(n, "Ready"), "False");
    cJSON_Delete(n);
    char *on[] = { "set-ready", NODE2, "true", NULL };
    run_agent_cmd(on);
    wait_node_ready(NODE2, "True", 30);
}

static void test_grace_then_kill(void **st)
{
    (void)st;
    NEED_CLUSTER();
    create(&K8S_RES_PODS, ns, jsonf(
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"stubborn\",\"labels\":{\"app\":\"stubborn\"}},"
        "\"spec\":{\"nodeName\":\"" NODE1 "\",\"terminationGracePeriodSeconds\":2,"
        "\"tolerations\":[{\"key\":\"godis-itest\",\"operator\":\"Exists\"}],"
        "\"containers\":[{\"name\":\"sh\",\"image\":\"itest/shell\","
        "\"command\":[\"/bin/sh\",\"-c\",\"trap '' TERM; while :; do sleep 1; done\"]}]}}"));
    cJSON *pods = wait_ready_pods("stubborn", 1, 30);
    cJSON_Delete(pods);
    k8s_delete_opts o;
    k8s_delete_opts_default(&o);
    k8s_status s;
    int64_t t0 = gd_mono_ms();
    assert_int_equal(k8s_delete(api, &K8S_RES_PODS, ns, "stubborn", &o, &s), GD_OK);
    cJSON *p;
    while ((p = get(&K8S_RES_PODS, ns, "stubborn"))) {
        cJSON_Delete(p);
        if (gd_mono_ms() - t0 > 20000) fail_msg("pod that ignores TERM still exists after 20 s");
        gd_sleep_ms(100);
    }
    int64_t took = gd_mono_ms() - t0;
    assert_true(took >= 1500);                            /* it waited for the grace period */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nodes_ready),
        cmocka_unit_test(test_godis_replicaset),
        cmocka_unit_test(test_volume_survives_pod),
        cmocka_unit_test(test_hosts_file),
        cmocka_unit_test(test_cordoned_node_gets_no_pods),
        cmocka_unit_test(test_set_ready),
        cmocka_unit_test(test_crash_loop),
        cmocka_unit_test(test_grace_then_kill),
        cmocka_unit_test(test_agent_restart),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
