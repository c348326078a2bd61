/* itest_remote_pods.c — the remote workers as the Deployment runs them (issue 22 point 4):
 * deploy/overlays/remote-workers' godis-worker Deployment and RBAC applied to the local
 * control plane, its pods run by the node agent (tools/node-agent: image godis-operator ->
 * bin/godis-worker, each pod on its own 127.x IP, the CURVE keys from a Secret volume as
 * files, the ServiceAccount's token through KUBECONFIG, so the workers run with the overlay's
 * RBAC), and a manager pair as plain processes (--workers 0, tcp:// with CURVE, the Lease the
 * Deployment's --leader-lease names).
 *
 *   - the pods are Running and Ready with their own IPs; 2 -> 3 replicas: every pod's worker
 *     joins the leader and the three share the 256 shards;
 *   - 30 GodisClusters converge on those workers alone;
 *   - kill -9 of a worker pod's process while clusters scale: the dead worker's shards move
 *     within the bound, membership changes stay one at a time, everything converges, and
 *     the node agent restarts the container (restartCount 1, Ready again);
 *   - a worker key rotated through the allow-list and the Secret reaches every running pod's
 *     volume within the node agent's sync period (as the kubelet's), and a worker started
 *     afterwards joins with it (the manager re-read its allow-list).
 *
 * The manifests are applied as `kustomize edit set namespace` would: into a namespace of
 * this run (the ClusterRoleBinding named after it), so nothing is shared with other tests.
 * Every address is on 127.0.0.0/8; waits are on conditions with deadlines. */
#include <ctype.h>
#include <dirent.h>
#include <glob.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "e2e_lib.h"
#include "e2e_operator.h"
#include "e2e_procs.h"
#include "gd_json.h"
#include "gd_log.h"
#include "gd_proto.h"
#include "gd_time.h"
#include "gd_yaml.h"
#include "harness_manager.h"
#include "remote_pair.h"

#define NCLUSTERS 30
#define OVERLAY "deploy/overlays/remote-workers/"
#define WORKER_SEL "app.kubernetes.io/component=worker"

static struct {
    k8s_client *c;
    char ns[128], crb[200];
    bool made_role;
} R;
static remote_pair P;   /* the manager pair (remote_pair.h) */

static void keygen(const char *name) { assert_true(rp_keygen(&P, name)); }

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = calloc(1, 1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (buf) buf[n] = '\0';
    return buf;
}

/* The documents of a manifest (a JSON array), NULL when unreadable. */
static cJSON *manifest(const char *path)
{
    char *text = slurp(path), err[256];
    cJSON *docs = NULL;
    if (!text || gd_yaml_to_json(text, strlen(text), &docs, err, sizeof err) != GD_OK)
        fprintf(stderr, "rpods: %s: %s\n", path, text ? err : "cannot read");
    free(text);
    return docs;
}

/* Creates one object: namespaced ones in this run's namespace, the ClusterRoleBinding under
 * this run's name, ServiceAccount subjects in this namespace (kustomize's namespace
 * transform). */
static bool create(cJSON *obj)
{
    const char *kind = gd_json_str_or(obj, "kind", "");
    const k8s_resource *r = k8s_resource_lookup(kind);
    if (!r) { fprintf(stderr, "rpods: kind %s not handled\n", kind); return false; }
    if (!strcmp(kind, "ClusterRoleBinding")) gd_json_set(obj, "metadata.name", cJSON_CreateString(R.crb));
    else if (strcmp(kind, "ClusterRole") != 0) gd_json_set(obj, "metadata.namespace", cJSON_CreateString(R.ns));
    cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(obj, "subjects"))
        if (!strcmp(gd_json_str_or(s, "kind", ""), "ServiceAccount"))
            gd_json_set(s, "namespace", cJSON_CreateString(R.ns));
    k8s_status st = {0};
    gd_err e = k8s_create(R.c, r, r->namespaced ? R.ns : NULL, obj, NULL, &st);
    if (e != GD_OK) fprintf(stderr, "rpods: create %s %s: %s %s\n", kind, gd_meta_name(obj), gd_strerror(e), st.message);
    return e == GD_OK;
}

static bool create_secret(const char *name, const char *const *files)
{
    cJSON *s = cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{},\"stringData\":{}}");
    gd_json_set(s, "metadata.name", cJSON_CreateString(name));
    for (int i = 0; files[i]; i++) {
        char path[300];
        snprintf(path, sizeof path, "%s/%s", P.dir, files[i]);
        char *text = slurp(path);
        if (!text) { cJSON_Delete(s); return false; }
        cJSON_AddStringToObject(cJSON_GetObjectItem(s, "stringData"), files[i], text);
        free(text);
    }
    bool ok = create(s);
    cJSON_Delete(s);
    return ok;
}

/* The overlay's RBAC and Deployment (replicas 2) in this run's namespace, after the
 * ClusterRole they bind to (deploy/base/rbac, created only when absent) and the CURVE Secret. */
static bool apply_overlay(void)
{
    cJSON *role = manifest("deploy/base/rbac/manager_role.yaml"), *d;
    bool ok = role != NULL;
    cJSON_ArrayForEach(d, role) {
        if (strcmp(gd_json_str_or(d, "kind", ""), "ClusterRole") != 0) continue;
        if (k8s_get(R.c, &K8S_RES_CLUSTERROLES, NULL, gd_meta_name(d), NULL, NULL) == GD_OK) continue;
        ok &= create(d);
        R.made_role = ok;
    }
    cJSON_Delete(role);
    const char *wfiles[] = {"worker.key", "server.pub", NULL};
    ok = ok && create_secret("godis-curve-worker", wfiles);
    const char *files[] = {OVERLAY "worker_rbac.yaml", OVERLAY "worker_deployment.yaml"};
    for (int i = 0; ok && i < 2; i++) {
        cJSON *docs = manifest(files[i]);
        ok = docs != NULL;
        cJSON_ArrayForEach(d, docs) ok = ok && create(d);
        cJSON_Delete(docs);
    }
    return ok;
}

static int setup(void **state)
{
    (void)state;
    gd_log_init("itest", GD_LOG_WARN, 0, 2);
    memset(&R, 0, sizeof R);
    if (!(R.c = e2e_client()) || !e2e_install_crds(R.c)) return -1;
    if (!e2e_ns_create(R.c, "rpods", R.ns, sizeof R.ns)) return -1;
    snprintf(R.crb, sizeof R.crb, "godis-operator-worker-%s", R.ns);
    /* below the ephemeral range, RP_PORTS per run (itest_remote uses 20000-31999); the
     * Lease the Deployment's --leader-lease names, in this run's namespace */
    if (!rp_init(&P, "remote-pods", R.ns, "godis-operator-leader", "worker.pub", 8000 + (int)(getpid() % 500) * RP_PORTS))
        return -1;
    keygen("server");
    keygen("worker");
    for (int i = 0; i < 2; i++)
        if (!rp_spawn_manager(&P, i)) return -1;
    if (!apply_overlay()) return -1;
    fprintf(stderr, "rpods: namespace %s, logs in %s, ports %d..%d\n", R.ns, P.logdir, P.base, P.base + RP_PORTS - 1);
    return 0;
}

static e2e_history H[3];   /* stopped by the test or, after a failed assertion, by the teardown */
static bool H_running;

static void stop_histories(void)
{
    for (int i = 0; H_running && i < 3; i++) e2e_history_stop(&H[i]);
    H_running = false;
}

/* The worker pods' logs (the node agent keeps them in its state directory, which the
 * devcluster's teardown removes) beside the managers' logs. */
static void save_pod_logs(void)
{
    const char *state = getenv("NODE_AGENT_STATE_DIR");
    char cmd[1024];
    if (!state) return;
    snprintf(cmd, sizeof cmd, "for d in '%s'/pods/%s_godis-worker-*; do [ -f \"$d/worker.log\" ] && "
             "cp \"$d/worker.log\" '%s'/\"${d##*/}.log\"; done; true", state, R.ns, P.logdir);
    if (system(cmd) != 0) fprintf(stderr, "rpods: could not copy the worker pods' logs\n");
}

static int teardown(void **state)
{
    (void)state;
    stop_histories();
    /* the worker pods first (the node agent stops their processes), then the managers */
    k8s_delete_opts o;
    k8s_delete_opts_default(&o);
    o.propagation_policy = "Foreground";
    k8s_delete(R.c, &K8S_RES_DEPLOYMENTS, R.ns, "godis-worker", &o, NULL);
    if (!e2e_wait_count(R.c, &K8S_RES_PODS, R.ns, WORKER_SEL, 0, 60000))
        fprintf(stderr, "rpods: worker pods still there after 60 s\n");
    save_pod_logs();
    for (int i = 0; i < 2; i++)
        if (P.mgr[i] > 0) e2e_stop(P.mgr[i], 15000);
    e2e_ns_delete(R.c, R.ns);
    k8s_delete_opts_default(&o);
    k8s_delete(R.c, &K8S_RES_CLUSTERROLEBINDINGS, NULL, R.crb, &o, NULL);
    if (R.made_role) k8s_delete(R.c, &K8S_RES_CLUSTERROLES, NULL, "godis-operator-manager", &o, NULL);
    k8s_client_destroy(&R.c);
    e2e_remove_dir(P.dir);
    return 0;
}

static int wait_leader(void) { return rp_wait_leader(R.c, &P, 30000); }

static bool own_all(int ldr, int slots, double losses, int timeout_ms)
{
    return rp_own_all(&P, ldr, slots, losses, timeout_ms);
}

typedef struct {
    char name[128], ip[16];
    int restarts;
    bool ready;
} pod_t;

/* The worker pods that are Running and Ready (all containers), with their IPs. */
static int worker_pods(pod_t *out, int cap)
{
    k8s_list_opts lo = {.label_selector = WORKER_SEL};
    cJSON *list = NULL;
    if (k8s_list(R.c, &K8S_RES_PODS, R.ns, &lo, &list, NULL) != GD_OK) return -1;
    int n = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(list, "items")) {
        if (n == cap || gd_meta_deleting(p)) continue;
        pod_t *o = &out[n];
        snprintf(o->name, sizeof o->name, "%s", gd_meta_name(p));
        snprintf(o->ip, sizeof o->ip, "%s", gd_json_str_or(p, "status.podIP", ""));
        const cJSON *cs = cJSON_GetArrayItem(gd_json_path(p, "status.containerStatuses"), 0);
        o->restarts = (int)gd_json_int_or(cs, "restartCount", -1);
        o->ready = !strcmp(gd_json_str_or(p, "status.phase", ""), "Running") &&
                   e2e_condition_is(p, "Ready", "True");
        n += o->ready;
    }
    cJSON_Delete(list);
    return n;
}

static bool wait_ready_pods(int want, pod_t *pods, int timeout_ms)
{
    int64_t end = gd_mono_ms() + timeout_ms;
    int n = 0;
    while ((n = worker_pods(pods, 8)) != want && gd_mono_ms() < end) gd_sleep_ms(250);
    if (n != want) fprintf(stderr, "rpods: %d worker pods Ready, want %d\n", n, want);
    return n == want;
}

/* The pid of the process whose command line holds both needles (0: none). */
static pid_t find_process(const char *prog, const char *needle)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    pid_t found = 0;
    while (d && !found && (e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0])) continue;
        char path[300], buf[4096];
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        FILE *f = fopen(path, "rb");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f) fclose(f);
        for (size_t i = 0; i < n; i++) if (!buf[i]) buf[i] = ' ';
        buf[n] = '\0';
        if (n && strstr(buf, prog) && strstr(buf, needle)) found = (pid_t)atoi(e->d_name);
    }
    if (d) closedir(d);
    return found;
}

/* Whether process pid's environment has KUBECONFIG set to a file under the node agent's
 * pod directory (its ServiceAccount's credentials, not the test's admin kubeconfig). */
static bool runs_as_service_account(pid_t pid)
{
    char path[64], buf[16384];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
        if (!strncmp(buf + i, "KUBECONFIG=", 11))
            return strstr(buf + i, "/serviceaccount/kubeconfig") != NULL;
    return false;
}

static bool set_replicas(int n)
{
    char patch[64];
    snprintf(patch, sizeof patch, "{\"spec\":{\"replicas\":%d}}", n);
    return k8s_patch(R.c, &K8S_RES_DEPLOYMENTS, R.ns, "godis-worker", K8S_PATCH_MERGE, patch,
                     NULL, NULL, NULL) == GD_OK;
}

/* The Deployment's pods run as bin/godis-worker processes on their own 127.x IPs, with the
 * keys from the Secret volume and their ServiceAccount, and join the leader; 2 -> 3. */
static void test_remote_pods_run_and_join(void **state)
{
    (void)state;
    int ldr = wait_leader();
    assert_true(ldr >= 0);
    pod_t pods[8];
    assert_true(wait_ready_pods(2, pods, 120000));
    assert_true(own_all(ldr, 2, 0, 60000));
    assert_true(set_replicas(3));
    assert_true(wait_ready_pods(3, pods, 120000));
    assert_true(own_all(ldr, 3, 0, 60000));
    for (int i = 0; i < 3; i++) {
        assert_int_equal(strncmp(pods[i].ip, "127.", 4), 0);
        for (int j = 0; j < i; j++) assert_string_not_equal(pods[i].ip, pods[j].ip);
        char needle[200];
        snprintf(needle, sizeof needle, "--worker-name=%s", pods[i].name);
        pid_t pid = find_process("godis-worker", needle);
        assert_true(pid > 0);
        assert_true(runs_as_service_account(pid));
        fprintf(stderr, "rpods: pod %s ip %s pid %d\n", pods[i].name, pods[i].ip, (int)pid);
    }
    /* the manager logs each join by the pod's name */
    FILE *f = fopen(P.mgrlog[ldr], "r");
    char line[4096];
    int joined = 0;
    while (f && fgets(line, sizeof line, f))
        for (int i = 0; i < 3; i++) joined += strstr(line, "remote worker joined") && strstr(line, pods[i].name);
    if (f) fclose(f);
    assert_true(joined >= 3);
}

static void cluster_name(char *out, size_t cap, int i) { snprintf(out, cap, "rp-%d", i); }

static void test_remote_pods_converge_30(void **state)
{
    (void)state;
    int ldr = wait_leader();
    assert_true(ldr >= 0);
    int64_t t0 = gd_mono_ms();
    for (int i = 0; i < NCLUSTERS; i++) {
        char name[32];
        cluster_name(name, sizeof name, i);
        assert_true(e2e_cluster_create(R.c, R.ns, name, 1 + i % 3));
    }
    for (int i = 0; i < NCLUSTERS; i++) {
        char name[32];
        cluster_name(name, sizeof name, i);
        assert_true(e2e_wait_converged(R.c, R.ns, name, 1 + i % 3, 300000));
        assert_true(e2e_wait_consistent(R.c, R.ns, name, 60000));
    }
    fprintf(stderr, "rpods: %d GodisClusters converged in %lld ms on 3 worker pods\n", NCLUSTERS,
            (long long)(gd_mono_ms() - t0));
    assert_true(metric(P.metrics[ldr], "godis_manager_children_running{role=\"worker\"}") == 0);
}

/* kill -9 one worker pod's process while three clusters scale out (2->4, 3->5: every step
 * keeps a quorum, see itest_remote): its shards move within the bound, every status change
 * is one member at a time, all converge, and the node agent restarts the container. */
static void test_remote_pods_kill9_mid_scaling(void **state)
{
    (void)state;
    int ldr = wait_leader();
    assert_true(ldr >= 0);
    pod_t pods[8];
    assert_true(wait_ready_pods(3, pods, 30000));
    double lost = metric(P.metrics[ldr], "godis_manager_remote_worker_losses_total");
    const char *names[3] = {"rp-1", "rp-2", "rp-5"};
    const int want[3] = {4, 5, 5};
    for (int i = 0; i < 3; i++) assert_true(e2e_history_start(&H[i], R.c, R.ns, names[i]));
    H_running = true;
    for (int i = 0; i < 3; i++) assert_true(e2e_cluster_scale(R.c, R.ns, names[i], want[i]));
    for (int i = 0; i < 3; i++) assert_true(e2e_history_wait_scale_out(&H[i], 1, 60000) != 0);
    char needle[200];
    snprintf(needle, sizeof needle, "--worker-name=%s", pods[0].name);
    pid_t victim = find_process("godis-worker", needle);
    assert_true(victim > 0);
    int64_t t_kill = e2e_wall_us() / 1000;
    assert_int_equal(kill(victim, SIGKILL), 0);
    /* the dead worker is declared gone and its shards are owned by the three live
     * processes (the restarted container joins as a new worker meanwhile) */
    assert_true(own_all(ldr, 3, lost + 1, 30000));
    int64_t t_moved = e2e_wall_us() / 1000;
    fprintf(stderr, "rpods: kill -9 of pod %s's worker: shards moved after %lld ms (heartbeat 1 s, bound 6 s)\n",
            pods[0].name, (long long)(t_moved - t_kill));
    assert_true(t_moved - t_kill <= 10000);
    for (int i = 0; i < 3; i++) {
        assert_true(e2e_wait_converged(R.c, R.ns, names[i], want[i], 180000));
        assert_true(e2e_wait_consistent(R.c, R.ns, names[i], 60000));
    }
    bool clean = true;
    for (int i = 0; i < 3; i++) clean &= e2e_history_stop(&H[i]);
    H_running = false;
    assert_true(clean);
    /* the same pod, restarted by the node agent: Running, Ready, restartCount 1 */
    int64_t end = gd_mono_ms() + 30000;
    bool restarted = false;
    while (!restarted && gd_mono_ms() < end) {
        int n = worker_pods(pods, 8);
        for (int i = 0; i < n; i++) restarted |= !strcmp(pods[i].name, pods[0].name) && pods[i].restarts == 1;
        if (!restarted) gd_sleep_ms(250);
    }
    assert_true(restarted);
    pid_t again = find_process("godis-worker", needle);
    assert_true(again > 0 && again != victim);
}

/* The file `name` of pod's Secret volume `vol` as the node agent lays it out (its state
 * directory: <state>/pods/<ns>_<pod>_<uid>/volumes/<vol>/), into out; false when absent. */
static bool pod_volume_file(const char *pod, const char *vol, const char *name, char *out, size_t cap)
{
    const char *state = getenv("NODE_AGENT_STATE_DIR");
    char pattern[4096];
    glob_t g;
    out[0] = '\0';
    if (!state) return false;
    snprintf(pattern, sizeof pattern, "%s/pods/%s_%s_*/volumes/%s/%s", state, R.ns, pod, vol, name);
    if (glob(pattern, 0, NULL, &g) != 0) return false;
    char *text = g.gl_pathc == 1 ? slurp(g.gl_pathv[0]) : NULL;
    globfree(&g);
    if (text) snprintf(out, cap, "%s", text);
    free(text);
    return text != NULL;
}

/* A worker key rotated the documented way (deploy/README.md): the new public key added to
 * the allow-list, the Secret given the new private key. The node agent, like the kubelet,
 * brings the new key into every running pod's volume within its sync period (default 1 min,
 * jittered up to 1.5) without restarting anything; a worker process that starts afterwards
 * (kill -9, restarted by the node agent) uses it and is let in only because the manager
 * re-read its allow-list. */
static void test_remote_pods_worker_key_rotated(void **state)
{
    (void)state;
    int ldr = wait_leader();
    assert_true(ldr >= 0);
    pod_t pods[8], now[8];
    assert_true(wait_ready_pods(3, pods, 60000));
    keygen("worker2");
    char path[300], *oldpub, *newpub, *newkey;
    snprintf(path, sizeof path, "%s/worker.pub", P.dir);
    assert_non_null(oldpub = slurp(path));
    snprintf(path, sizeof path, "%s/worker2.pub", P.dir);
    assert_non_null(newpub = slurp(path));
    snprintf(path, sizeof path, "%s/worker2.key", P.dir);
    assert_non_null(newkey = slurp(path));
    /* 1. the allow-list the managers read (--curve-allow) gets the new key beside the old */
    char allow[300], tmp[310];
    snprintf(allow, sizeof allow, "%s/worker.pub", P.dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", allow);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fprintf(f, "%s%s%s", oldpub, oldpub[strlen(oldpub) - 1] == '\n' ? "" : "\n", newpub);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(rename(tmp, allow), 0);
    /* 2. the Secret gets the new private key */
    cJSON *patch = cJSON_CreateObject(), *sd = cJSON_AddObjectToObject(patch, "stringData");
    cJSON_AddStringToObject(sd, "worker.key", newkey);
    char *body = cJSON_PrintUnformatted(patch);
    assert_int_equal(k8s_patch(R.c, &K8S_RES_SECRETS, R.ns, "godis-curve-worker", K8S_PATCH_MERGE, body,
                               NULL, NULL, NULL), GD_OK);
    cJSON_free(body);
    cJSON_Delete(patch);
    int64_t t0 = gd_mono_ms(), end = t0 + 150000;
    int fresh = 0;
    while (fresh < 3 && gd_mono_ms() < end) {
        fresh = 0;
        for (int i = 0; i < 3; i++) {
            char got[4096];
            fresh += pod_volume_file(pods[i].name, "curve-worker", "worker.key", got, sizeof got) &&
                     !strcmp(got, newkey);
        }
        if (fresh < 3) gd_sleep_ms(500);
    }
    fprintf(stderr, "rpods: the rotated key reached %d of 3 pods' volumes in %lld ms\n", fresh,
            (long long)(gd_mono_ms() - t0));
    assert_int_equal(fresh, 3);
    assert_int_equal(worker_pods(now, 8), 3);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            if (!strcmp(now[i].name, pods[j].name)) assert_int_equal(now[i].restarts, pods[j].restarts);
    /* 3. a worker that starts now runs with the new key, and the manager lets it in */
    double lost = metric(P.metrics[ldr], "godis_manager_remote_worker_losses_total");
    char needle[200];
    snprintf(needle, sizeof needle, "--worker-name=%s", pods[0].name);
    pid_t victim = find_process("godis-worker", needle);
    assert_true(victim > 0);
    assert_int_equal(kill(victim, SIGKILL), 0);
    assert_true(own_all(ldr, 3, lost + 1, 60000));
    pid_t again = find_process("godis-worker", needle);
    assert_true(again > 0 && again != victim);
    free(oldpub);
    free(newpub);
    free(newkey);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_remote_pods_run_and_join),
        cmocka_unit_test(test_remote_pods_converge_30),
        cmocka_unit_test(test_remote_pods_kill9_mid_scaling),
        cmocka_unit_test(test_remote_pods_worker_key_rotated),
    };
    if (getenv("RPODS_FILTER")) cmocka_set_test_filter(getenv("RPODS_FILTER"));   /* debugging */
    return cmocka_run_group_tests_name("remote-pods", tests, setup, teardown);
}
