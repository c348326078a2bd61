/* itest_manager_load.c — the real pipeline under the manager: bin/godis-manager with real
 * bin/godis-informer and bin/godis-worker processes (the worker's "sleepy" test reconciler,
 * which logs every reconcile's start and end and writes status.observedGeneration), on the
 * local control plane (skipped without KUBECONFIG).
 *
 * 500 GodisClusters are created and then all changed once more, while workers and an
 * informer are killed with SIGKILL and the worker count goes 2 → 4 → 1 (SIGHUP). Then:
 * every object's status.observedGeneration equals its generation (every key reconciled
 * after its last change), no two reconciles of one key ever overlapped (across threads and
 * worker processes), and every killed child was restarted. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness_manager.h"
#include "k8s_client.h"
#include "gd_json.h"
#include "e2e_lib.h"
#include "../support/test_wait.h"

#define NKEYS 500
static k8s_client *kc;
static char ns[64], record[400];

static const k8s_resource *gc_res(void) { return &K8S_RES_GODISCLUSTERS; }

/* A child of mgr matching prog and what, other than `not` (0: any), once it runs (30 s at
 * most); 0 when none came. */
static pid_t await_child(pid_t mgr, const char *prog, const char *what, pid_t not)
{
    pid_t p[8], found = 0;
    WAIT_UNTIL((found = mgr_children(mgr, prog, what, p, 8) > 0 && p[0] != not ? p[0] : 0), 30000);
    return found;
}

static atomic_int created;                  /* GodisClusters of generation 1 created so far */

typedef struct { mgr_proc *m; char err[160]; } chaos_arg;

/* Kills the child and waits until the manager runs its replacement (observed, so every
 * fault has happened and been answered before the next). */
static bool kill_child(chaos_arg *a, const char *prog, const char *what)
{
    pid_t old = await_child(a->m->pid, prog, what, 0);
    if (old) kill(old, SIGKILL);
    if (old && await_child(a->m->pid, prog, what, old)) return true;
    snprintf(a->err, sizeof a->err, "%s %s: %s", prog, what, old ? "not restarted" : "never ran");
    return false;
}

/* The faults land while the objects are created, each once a share of them exists (create_all
 * counts them), not after guessed times. */
static void *chaos(void *arg)
{
    chaos_arg *a = arg;
    WAIT_UNTIL(atomic_load(&created) >= NKEYS / 5, 120000);
    if (!kill_child(a, "godis-worker", "--index 0 ")) return NULL;
    WAIT_UNTIL(atomic_load(&created) >= 2 * NKEYS / 5, 120000);
    if (!kill_child(a, "godis-informer", "--kind GodisCluster ")) return NULL;
    WAIT_UNTIL(atomic_load(&created) >= 3 * NKEYS / 5, 120000);
    write_file(a->m->cfg, "workers: 4\n");
    kill(a->m->pid, SIGHUP);
    if (!kill_child(a, "godis-worker", "--index 2 ")) return NULL;    /* one of the new ones */
    WAIT_UNTIL(atomic_load(&created) >= 4 * NKEYS / 5, 120000);
    write_file(a->m->cfg, "workers: 1\n");
    kill(a->m->pid, SIGHUP);
    return NULL;
}

static void create_all(int gen)
{
    for (int i = 0; i < NKEYS; i++) {
        char name[32];
        snprintf(name, sizeof name, "lc-%03d", i);
        gd_err e;
        if (gen == 1) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "apiVersion", "kumkeehyun.github.com/v1");
            cJSON_AddStringToObject(o, "kind", "GodisCluster");
            cJSON *md = cJSON_AddObjectToObject(o, "metadata");
            cJSON_AddStringToObject(md, "name", name);
            cJSON_AddStringToObject(md, "namespace", ns);
            cJSON_AddNumberToObject(cJSON_AddObjectToObject(o, "spec"), "replicas", 3);
            e = k8s_create(kc, gc_res(), ns, o, NULL, NULL);
            cJSON_Delete(o);
        } else {
            e = k8s_patch(kc, gc_res(), ns, name, K8S_PATCH_MERGE, "{\"spec\":{\"replicas\":5}}",
                          NULL, NULL, NULL);
        }
        if (e != GD_OK) fail_msg("writing %s: %s", name, gd_strerror(e));
        if (gen == 1) atomic_fetch_add(&created, 1);
    }
}

/* Objects whose status.observedGeneration equals metadata.generation. */
static int converged(void)
{
    cJSON *l = NULL;
    k8s_list_opts o = {0};
    if (k8s_list(kc, gc_res(), ns, &o, &l, NULL) != GD_OK) return -1;
    int n = 0;
    cJSON *it, *items = cJSON_GetObjectItem(l, "items");
    cJSON_ArrayForEach(it, items)
        if (gd_json_int_or(it, "status.observedGeneration", -1) == gd_meta_generation(it)) n++;
    cJSON_Delete(l);
    return n;
}

typedef struct { char key[64]; long long s, e; int pid; } span;

/* Every reconcile of a key, from the record; no two may overlap. Returns distinct keys. */
static int check_record(void)
{
    FILE *f = fopen(record, "r");
    assert_non_null(f);
    static span sp[200000];
    int n = 0;
    char line[512];
    while (fgets(line, sizeof line, f) && n < 200000) {
        char t, ctrl[32], key[64];
        long long ns_;
        int pid;
        if (line[0] == 'S' && sscanf(line, "%c %31s %63s %lld %*s %d", &t, ctrl, key, &ns_, &pid) == 5) {
            snprintf(sp[n].key, sizeof sp[n].key, "%s", key);
            sp[n].s = sp[n].e = ns_;     /* an unmatched start (worker killed): a point */
            sp[n].pid = pid;
            n++;
        } else if (line[0] == 'E' && sscanf(line, "%c %31s %63s %lld %d", &t, ctrl, key, &ns_, &pid) == 5) {
            for (int i = n - 1; i >= 0; i--)
                if (sp[i].pid == pid && sp[i].e == sp[i].s && !strcmp(sp[i].key, key)) { sp[i].e = ns_; break; }
        }
    }
    fclose(f);
    int keys = 0;
    for (int i = 0; i < n; i++) {
        bool first = true;
        for (int j = 0; j < n; j++) {
            if (j == i || strcmp(sp[i].key, sp[j].key)) continue;
            if (j < i) first = false;
            if (sp[i].s < sp[j].e && sp[j].s < sp[i].e)
                fail_msg("%s reconciled twice at once (pids %d and %d)", sp[i].key, sp[i].pid, sp[j].pid);
        }
        if (first) keys++;
    }
    printf("load: %d reconciles of %d keys, none overlapping\n", n, keys);
    return keys;
}

static void test_load_with_kills_and_rescale(void **st)
{
    (void)st;
    snprintf(ns, sizeof ns, "itest-mgr-load-%d", (int)getpid());
    cJSON *nso = cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{}}");
    cJSON_AddStringToObject(cJSON_GetObjectItem(nso, "metadata"), "name", ns);
    assert_int_equal(k8s_create(kc, &K8S_RES_NAMESPACES, NULL, nso, NULL, NULL), GD_OK);
    cJSON_Delete(nso);

    snprintf(record, sizeof record, "%s/record", getenv("FAKE_DIR"));
    char wa[600], kcfg[600], ib[PATH_MAX + 20], wb[PATH_MAX + 20];
    /* ns=: GodisClusters of other tests (the informers watch every namespace) are not ours */
    snprintf(wa, sizeof wa, "--worker-arg=--reconciler sleepy --reconciler-arg ns=%s,record=%s,sleep_ms=20,write=status",
             ns, record);
    snprintf(kcfg, sizeof kcfg, "--kubeconfig=%s", getenv("KUBECONFIG"));
    snprintf(ib, sizeof ib, "--informer-bin=%s", informer_path);
    snprintf(wb, sizeof wb, "--worker-bin=%s", worker_path);
    /* later flags win: the real programs instead of the stand-ins */
    const char *x[] = {"--leader-elect=false", kcfg, ib, wb, wa, "--heartbeat=500ms",
                       "--max-concurrent-reconciles=4",
                       "--informer-kinds=GodisCluster,Godis,ConfigMap,ReplicaSet,Service,PersistentVolumeClaim,Pod,Node",
                       NULL};
    mgr_proc m;
    start_mgr_v(&m, 2, x);
    pthread_t th;
    chaos_arg ca = {.m = &m};
    atomic_store(&created, 0);
    pthread_create(&th, NULL, chaos, &ca);
    create_all(1);
    pthread_join(th, NULL);
    if (ca.err[0]) fail_msg("fault injection: %s", ca.err);
    create_all(2);                                   /* generation 2 for everyone */
    long long end = now_ms() + 90000;
    int c = 0;
    while (now_ms() < end && (c = converged()) < NKEYS) usleep(500000);   /* poll, deadline */
    printf("load: %d of %d objects reconciled after their last change\n", c, NKEYS);
    assert_int_equal(c, NKEYS);
    assert_true(check_record() == NKEYS);
    assert_true(metric(m.metrics, "godis_manager_child_restarts_total{role=\"worker\"}") >= 2);
    assert_true(metric(m.metrics, "godis_manager_child_restarts_total{role=\"informer\"}") >= 1);
    assert_int_equal(metric(m.metrics, "godis_manager_children_running{role=\"worker\"}"), 1);
    assert_int_equal(stop_mgr(&m, SIGTERM, 15000), 0);
    k8s_delete(kc, &K8S_RES_NAMESPACES, NULL, ns, NULL, NULL);
}

int main(int argc, char **argv)
{
    int rc = mgr_itest_init(argc, argv, "itest_manager_load");
    if (rc >= 0) return rc;
    if (!getenv("KUBECONFIG") || access(mgr_path, X_OK) || access(informer_path, X_OK) ||
        access(worker_path, X_OK)) {
        printf("itest_manager_load: skipped (needs KUBECONFIG of a running devcluster and bin/)\n");
        printf("[  SKIPPED ] 1 test(s), listed below:\n");   /* counted by run-integration.sh */
        return 0;
    }
    if (!(kc = e2e_client())) return 1;              /* no client-side rate limit */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_load_with_kills_and_rescale, fresh_fake_dir, kill_started),
    };
    rc = MGR_ITEST_RUN(tests, "itest_manager_load");
    k8s_client_destroy(&kc);
    return rc;
}
