/* chaos — the chaos suite (see chaos.h): flags, setup, the run and its table.
 *
 *   chaos [--faults N] [--seed S] [--clusters N] ...   on the devcluster of $KUBECONFIG
 *
 * Run by `make chaos CHAOS_FAULTS=N CHAOS_SEED=S` (tools/chaos/chaos.sh), which starts a
 * devcluster of its own without node agents (this program runs them, one per node, so a
 * node can be lost alone) and stops it afterwards. The last line of the output is
 *   chaos: F faults, C checks, V violations, converged in T s */
#include "chaos.h"
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "gd_flags.h"
#include "gd_json.h"
#include "gd_log.h"
#include "gd_time.h"
#include "gd_yaml.h"
#include "k8s_config.h"

static chaos X;

/* ---- setup ---- */

static bool apply_crds(chaos *x)
{
    const char *files[] = {"deploy/base/crds/godisclusters.yaml", "deploy/base/crds/godises.yaml"};
    for (size_t i = 0; i < 2; i++) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/%s", x->root, files[i]);
        FILE *f = fopen(path, "rb");
        char *buf = f ? malloc(1 << 20) : NULL;
        size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
        if (f) fclose(f);
        cJSON *docs = NULL;
        char err[256] = "";
        bool ok = buf && gd_yaml_to_json(buf, n, &docs, err, sizeof err) == GD_OK;
        free(buf);
        if (!ok) {
            fprintf(stderr, "chaos: %s: %s\n", path, err[0] ? err : strerror(errno));
            return false;
        }
        cJSON *d;
        cJSON_ArrayForEach(d, docs) {
            gd_err e = k8s_create(x->c, &K8S_RES_CRDS, NULL, d, NULL, NULL);
            if (e != GD_OK && e != GD_ERR_ALREADY_EXISTS) ok = false;
        }
        cJSON_Delete(docs);
        if (!ok) return false;
    }
    for (int64_t end = gd_mono_ms() + 30000; gd_mono_ms() < end; gd_sleep_ms(200)) {
        cJSON *l = NULL;
        bool ok = k8s_list(x->c, &K8S_RES_GODISCLUSTERS, x->ns, NULL, &l, NULL) == GD_OK &&
                  k8s_list(x->c, &K8S_RES_GODISES, x->ns, NULL, NULL, NULL) == GD_OK;
        cJSON_Delete(l);
        if (ok) return true;
    }
    fprintf(stderr, "chaos: the CRDs are not served\n");
    return false;
}

static bool make_namespace(chaos *x)
{
    char body[256];
    snprintf(body, sizeof body, "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", x->ns);
    cJSON *o = cJSON_Parse(body);
    gd_err e = k8s_create(x->c, &K8S_RES_NAMESPACES, NULL, o, NULL, NULL);
    cJSON_Delete(o);
    return e == GD_OK || e == GD_ERR_ALREADY_EXISTS;
}

static bool nodes_ready(chaos *x, int want, int timeout_ms)
{
    for (int64_t end = gd_mono_ms() + timeout_ms; gd_mono_ms() < end; gd_sleep_ms(500)) {
        ch_tend(x);
        cJSON *l = NULL;
        int ready = 0;
        if (k8s_list(x->c, &K8S_RES_NODES, NULL, NULL, &l, NULL) == GD_OK) {
            const cJSON *n, *c;
            cJSON_ArrayForEach(n, gd_json_path(l, "items"))
                cJSON_ArrayForEach(c, gd_json_path(n, "status.conditions"))
                    ready += !strcmp(gd_json_str_or(c, "type", ""), "Ready") &&
                             !strcmp(gd_json_str_or(c, "status", ""), "True");
        }
        cJSON_Delete(l);
        if (ready >= want) return true;
    }
    return false;
}

static bool env_setup(chaos *x)
{
    const char *kc = getenv("KUBECONFIG"), *audit = getenv("DEVCLUSTER_AUDIT_LOG"),
               *etcd = getenv("ETCD_ENDPOINTS"), *api = getenv("KUBE_APISERVER"),
               *hosts = getenv("GODIS_HOSTS_FILE");
    if (!kc || !audit || !*audit || !etcd || !api || !hosts) {
        fprintf(stderr, "chaos: run it on a devcluster: eval \"$(tools/devcluster env)\" "
                        "(KUBECONFIG, DEVCLUSTER_AUDIT_LOG, ETCD_ENDPOINTS, KUBE_APISERVER, "
                        "GODIS_HOSTS_FILE)\n");
        return false;
    }
    snprintf(x->kubeconfig, sizeof x->kubeconfig, "%s", kc);
    snprintf(x->audit_log, sizeof x->audit_log, "%s", audit);
    snprintf(x->etcd, sizeof x->etcd, "%s", etcd);
    snprintf(x->hosts_file, sizeof x->hosts_file, "%s", hosts);
    const char *colon = strrchr(api, ':');
    x->api_port = colon ? atoi(colon + 1) : 0;
    x->ip_octet = 16 + x->api_port % 224;        /* tools/devcluster's pod_ip_base */
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return false;
    self[n] = '\0';
    char *slash = strrchr(self, '/');            /* <root>/bin/chaos */
    if (slash) *slash = '\0';
    slash = strrchr(self, '/');
    if (slash) *slash = '\0';
    snprintf(x->root, sizeof x->root, "%s", self);
    mkdir(x->dir, 0755);
    snprintf(x->trace, sizeof x->trace, "%s/reconcile.trace", x->dir);
    unlink(x->trace);
    char lp[PATH_MAX + 16];
    snprintf(lp, sizeof lp, "%s/chaos.log", x->dir);
    x->log = fopen(lp, "w");
    return x->api_port > 0;
}

/* ---- the table ---- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int report(chaos *x, int faults, const int64_t *conv, int64_t elapsed)
{
    long checks = 0;
    int viol = 0;
    printf("\nchaos: seed %u, %d clusters (replicas 1..%d), %d nodes, %d managers x %d workers, "
           "%.0f s\n", x->seed, x->nclusters, x->max_replicas, x->nagents, CH_MANAGERS,
           x->workers, (double)elapsed / 1000);
    printf("  %-22s %8s\n", "fault", "injected");
    for (int f = 0; f < F__COUNT; f++) printf("  %-22s %8d\n", ch_fault_name(f), x->fault_count[f]);
    printf("  %-22s %8d\n", "total", faults);
    printf("  %-22s %8s %11s\n", "invariant", "checks", "violations");
    for (int i = 0; i < I__COUNT; i++) {
        long c = atomic_load(&x->checks[i]);
        printf("  %-22s %8ld %11d\n", ch_invariant_name(i), c, x->violations[i]);
        checks += c;
        viol += x->violations[i];
    }
    int64_t sorted[CH_MAX_CLUSTERS];
    int n = 0;
    bool all = true;
    for (int i = 0; i < x->nclusters; i++) {
        if (conv[i] >= 0) sorted[n++] = conv[i];
        else all = false;
    }
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_i64);
    double max = n ? (double)sorted[n - 1] / 1000 : 0, p50 = n ? (double)sorted[(n - 1) / 2] / 1000 : 0;
    printf("  convergence after the last fault: max %.1f s, p50 %.1f s (%d of %d clusters%s)\n",
           max, p50, n, x->nclusters, all ? "" : "; the others did not converge");
    printf("chaos: %d faults, %ld checks, %d violations, converged in %.1f s\n", faults, checks,
           viol, max);
    fflush(stdout);
    return viol == 0 && all ? 0 : 1;
}

static void on_signal(int sig)
{
    (void)sig;
    atomic_store(&X.stop, 2);
    X.halt = 1;
}

static void stop_checkers(chaos *x)
{
    if (!atomic_load(&x->stop)) atomic_store(&x->stop, 1);
    x->halt = 1;
    for (int i = 0; i < x->nthreads; i++) pthread_join(x->threads[i], NULL);
    x->nthreads = 0;
}

int main(int argc, char **argv)
{
    chaos *x = &X;
    x->faults = 200;
    x->seed = 1;
    x->nclusters = 10;
    x->nagents = 4;
    x->workers = 2;
    x->max_replicas = 7;
    x->converge_bound_ms = 300000;
    snprintf(x->ns, sizeof x->ns, "chaos");
    snprintf(x->dir, sizeof x->dir, "build/chaos");
    int seed = 1;
    gd_flag flags[] = {
        {.type = GD_FLAG_INT, .name = "faults", .dst = &x->faults, .min = 0, .max = 100000, .metavar = "N", .help = "faults to inject"},
        {.type = GD_FLAG_INT, .name = "seed", .dst = &seed, .min = 0, .max = 2147483647, .metavar = "S", .help = "seed of the campaign: the same seed gives the same sequence of faults, targets and scalings (their timing follows the cluster)"},
        {.type = GD_FLAG_INT, .name = "clusters", .dst = &x->nclusters, .min = 1, .max = CH_MAX_CLUSTERS, .metavar = "N", .help = "GodisClusters"},
        {.type = GD_FLAG_INT, .name = "nodes", .dst = &x->nagents, .min = 2, .max = CH_MAX_AGENTS, .metavar = "N", .help = "nodes, each run by a node agent of its own"},
        {.type = GD_FLAG_INT, .name = "workers", .dst = &x->workers, .min = 1, .max = 8, .metavar = "N", .help = "worker processes per manager (two managers run)"},
        {.type = GD_FLAG_INT, .name = "max-replicas", .dst = &x->max_replicas, .min = 1, .max = 9, .metavar = "N", .help = "clusters are scaled at random to 1..N members"},
        {.type = GD_FLAG_DURATION, .name = "converge-timeout", .dst = &x->converge_bound_ms, .min = 10000, .max = 3600000, .help = "bound on each cluster's convergence after the last fault"},
        {.type = GD_FLAG_STRING, .name = "namespace", .dst = x->ns, .cap = sizeof x->ns, .metavar = "NS", .help = "namespace of the clusters"},
        {.type = GD_FLAG_STRING, .name = "out", .dst = x->dir, .cap = sizeof x->dir, .metavar = "DIR", .help = "logs of every process, the reconcile trace and chaos.log"},
    };
    gd_flagset fs = {.prog = "chaos", .usage = "chaos [flags]",
                     .about = "The chaos suite on the devcluster of $KUBECONFIG (see tools/chaos/chaos.h). Normally run by make chaos CHAOS_FAULTS=N CHAOS_SEED=S.",
                     .flags = flags, .nflags = sizeof flags / sizeof flags[0]};
    int rc = gd_flags_main(&fs, argc, argv);
    if (rc >= 0) return rc;
    x->seed = (unsigned)seed;
    x->rng = 0x5eed0000ULL ^ (uint64_t)seed;
    gd_log_init("chaos", GD_LOG_ERROR, 0, 2);
    pthread_mutex_init(&x->mu, NULL);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    x->t0 = gd_mono_ms();
    if (!env_setup(x) || !(x->c = ch_client(x))) return 2;
    setenv("GODIS_RECONCILE_TRACE", x->trace, 1);   /* the managers' workers inherit it */
    setenv("GODIS_LOOPBACK_ONLY", "1", 1);
    ch_log(x, "seed %u, %d faults, %d clusters, %d nodes; logs in %s", x->seed, x->faults,
           x->nclusters, x->nagents, x->dir);
    int64_t conv[CH_MAX_CLUSTERS];
    for (int i = 0; i < CH_MAX_CLUSTERS; i++) conv[i] = -1;
    int faults = 0;
    rc = 1;
    if (!ch_hold_api_port(x) || !apply_crds(x) || !make_namespace(x)) goto out;
    for (int i = 0; i < x->nagents; i++)
        if (!ch_start_agent(x, i)) goto out;
    if (!nodes_ready(x, x->nagents, 120000)) {
        ch_log(x, "the %d nodes did not become Ready", x->nagents);
        goto out;
    }
    for (int i = 0; i < CH_MANAGERS; i++)
        if (!ch_start_manager(x, i)) goto out;
    void *(*threads[])(void *) = {ch_membership_thread, ch_quorum_thread, ch_audit_thread};
    for (size_t i = 0; i < sizeof threads / sizeof *threads; i++)
        pthread_create(&x->threads[x->nthreads++], NULL, threads[i], x);
    if (!ch_create_clusters(x)) goto out;
    int64_t initial[CH_MAX_CLUSTERS];
    if (ch_converge(x, initial) != 0) {
        ch_violation(x, I_CONVERGE, "the clusters did not converge before the first fault");
        goto out;
    }
    ch_log(x, "every cluster converged; the campaign starts");
    int64_t start = ch_now(x);
    faults = ch_campaign(x);
    if (atomic_load(&x->stop) != 2) {
        ch_log(x, "faults stopped after %d; waiting for every cluster to converge", faults);
        ch_converge(x, conv);
    }
    int64_t elapsed = ch_now(x) - start;
    stop_checkers(x);
    ch_stop_all(x);
    rc = report(x, faults, conv, elapsed);
    goto done;
out:        /* setup failed or the clusters never converged: still the table and its line */
    stop_checkers(x);
    ch_stop_all(x);
    report(x, faults, conv, ch_now(x));
    rc = 1;
done:
    k8s_client_destroy(&x->c);
    if (x->log) fclose(x->log);
    return rc;
}
