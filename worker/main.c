/* main.c — godis-worker: flags (gd_flags.h) → worker_run (worker.c). */
#include <stdbool.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "control.h"
#include "gd_err.h"
#include "gd_flags.h"
#include "gd_heap_trim.h"
#include "gd_hoptrace.h"
#include "gd_log.h"
#include "godis_client.h"
#include "k8s_client.h"
#include "reconciler.h"
#include "worker.h"

static const char ABOUT[] =
    "Runs reconcilers for the shards it owns: subscribes to the informers' streams, keeps a "
    "cache replica of its shards, maps events to reconcile keys, and serves them from "
    "client-go style workqueues with MaxConcurrentReconciles threads per controller.\n\n"
    "Started by godis-manager (managed mode: shards and the write lease come over GDW1), or "
    "alone for tests (standalone mode: --shards, never fenced).";
static const char FOOTER[] =
    "Durations are Go durations: 250ms, 30s, 5m (a bare number needs a unit).\n\n"
    "Exit codes: 0 stopped, 1 failure (restart me), 2 fatal configuration (a bad flag, or a "
    "kubeconfig that was asked for or is needed and cannot be used).";

static gd_err rate_limits(void *ud, const char *v, char *why, size_t cap)
{
    return worker_rate_limits_parse(ud, v, why, cap);
}

static gd_err api_qps(void *ud, const char *v, char *why, size_t cap)
{
    int64_t n;
    if (gd_parse_int(v, -1, 100000, &n) != GD_OK || n == 0) {
        snprintf(why, cap, "expected 1..100000, or -1 for no client-side limit, got \"%.40s\"", v);
        return GD_ERR_CONFIG;
    }
    *(double *)ud = (double)n;
    return GD_OK;
}

/* An image reference as the CRD accepts one for spec.image: no spaces or control characters. */
static gd_err default_image(void *ud, const char *v, char *why, size_t cap)
{
    bool ok = *v && strlen(v) < 512;
    for (const char *p = v; ok && *p; p++)
        ok = (unsigned char)*p > ' ' && *p != 0x7f;
    if (!ok) {
        snprintf(why, cap, "\"%.60s\" is not an image reference", v);
        return GD_ERR_CONFIG;
    }
    *(const char **)ud = v;
    return GD_OK;
}

static gd_err cluster_domain(void *ud, const char *v, char *why, size_t cap)
{
    if (!godis_valid_dns_name(v)) {
        snprintf(why, cap, "expected a DNS name (letters, digits, '-', '.'), got \"%.60s\"", v);
        return GD_ERR_CONFIG;
    }
    *(const char **)ud = v;
    return GD_OK;
}

static gd_err manager_identity(void *ud, const char *v, char *why, size_t cap)
{
    if (!k8s_user_agent_word_ok(v)) {
        snprintf(why, cap, "expected 1..253 visible ASCII characters without ( ) ; \\, got \"%.60s\"", v);
        return GD_ERR_CONFIG;
    }
    *(const char **)ud = v;
    return GD_OK;
}

/* "--reconciler NAME: reconciler set: godis (…)[; another (…)]" — the sets linked in */
static void reconciler_help(char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "reconciler set:");
    for (const gd_reconciler_set *s = gd_reconciler_first(); s && n < cap; s = s->next)
        n += (size_t)snprintf(out + n, cap - n, "%s %s (%s)", s == gd_reconciler_first() ? "" : ";",
                              s->name, s->help);
}

/* --leader-lease: a remote worker; the endpoints come from the Lease, so the flags that
 * give them locally make no sense with it. */
static int remote_main(gd_flagset *fs, worker_opts *o, const char *lease, const char *key,
                       const char *server, char **argv)
{
    static char ns[254], hostname[254];
    const char *slash = strchr(lease, '/');
    if (!slash || slash == lease || !slash[1] || (size_t)(slash - lease) >= sizeof ns ||
        strchr(slash + 1, '/'))
        return gd_flags_fail(fs, "--leader-lease: expected NAMESPACE/NAME, got \"%s\"", lease);
    if (o->runtime_dir || o->control_endpoint || o->ninformers)
        return gd_flags_fail(fs, "--leader-lease: the endpoints come from the Lease; drop "
                             "--runtime-dir, --informer-endpoints and --control-endpoint");
    char why[600];
    if (worker_curve_load(o, key, server, why, sizeof why) != GD_OK)
        return gd_flags_fail(fs, "%s", why);
    snprintf(ns, sizeof ns, "%.*s", (int)(slash - lease), lease);
    if (!o->worker_name) {
        if (gethostname(hostname, sizeof hostname - 1) != 0)
            snprintf(hostname, sizeof hostname, "worker");
        o->worker_name = hostname;
    }
    /* it goes into the User-Agent and the manager's logs */
    if (strlen(o->worker_name) > 63 || !*o->worker_name ||
        strspn(o->worker_name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
            != strlen(o->worker_name))
        return gd_flags_fail(fs, "--worker-name: 1..63 letters, digits, '.', '_' or '-', got \"%s\"",
                             o->worker_name);
    if (!gd_reconciler_find(o->reconciler))
        return gd_flags_fail(fs, "--reconciler: unknown reconciler set \"%s\"", o->reconciler);
    o->remote = true;
    o->index = -1;
    o->argv = argv;
    return worker_remote_main(o, ns, slash + 1);
}

#define FLAG GD_FLAG

/* On glibc's malloc (an ASan build; the worker is otherwise linked with jemalloc, whose
 * arenas return their free pages by themselves): two malloc arenas, set before any thread
 * starts, unless the environment chooses
 * (MALLOC_ARENA_MAX, GLIBC_TUNABLES). Nine subscriber threads fill the cache, ZeroMQ's I/O
 * thread allocates the messages they free, and the reconcile threads come and go: with
 * glibc's arena per thread (up to 8 per core) the memory freed after a large load stayed
 * stranded in arenas that no later allocation used. 10 000 clusters' objects held in
 * cache (tools/bench/scale.sh, 675 MB in use): RSS 704-764 MB with the default (up to 953
 * on another machine), 659-791 MB (median 683) with two, 726-731 MB with one (and 2x the
 * CPU: the threads then wait on its lock). Two also keep the freed memory where the heap
 * trim (gd_heap_trim.h) finds it. */
static void limit_malloc_arenas(void)
{
    if (gd_heap_on_jemalloc())
        return;             /* the worker is linked with jemalloc (Makefile): glibc's is idle */
    const char *tun = getenv("GLIBC_TUNABLES");
    if (getenv("MALLOC_ARENA_MAX") || (tun && strstr(tun, "arena_max")))
        return;
    mallopt(M_ARENA_MAX, 2);
}

int main(int argc, char **argv)
{
    limit_malloc_arenas();
    static worker_opts o;
    worker_opts_default(&o);
    const char *shards = NULL, *endpoints = NULL, *level = "info", *format = "text";
    const char *curve_key = NULL, *curve_server = NULL, *leader_lease = NULL;
    static char rec_help[1024];
    reconciler_help(rec_help, sizeof rec_help);
    gd_flag defs[] = {
        FLAG(GD_FLAG_INT, "index", &o.index, "worker index given by the manager (0..100000; -1: standalone)", .metavar = "N", .min = 0, .max = 100000, .no_default = true),
        FLAG(GD_FLAG_STRING, "control-endpoint", &o.control_endpoint, "the manager's GDW1 ROUTER, e.g. ipc:///run/x/control; without it the worker runs standalone", .metavar = "EP"),
        FLAG(GD_FLAG_STRING, "runtime-dir", &o.runtime_dir, "informers at ipc://DIR/<Kind>.pub and .snap", .metavar = "DIR"),
        FLAG(GD_FLAG_STRING, "informer-endpoints", &endpoints, "instead of --runtime-dir, only these kinds: \"Kind=PUB,SNAP;Kind=PUB,SNAP\" (ipc://, or tcp:// with the CURVE flags)", .metavar = "SPEC"),
        FLAG(GD_FLAG_STRING, "leader-lease", &leader_lease, "a worker in another pod: find the leader in this Lease's annotation (NAMESPACE/NAME, the manager's leader-election Lease) and join it over tcp:// with CURVE; after a leader change it joins the new one without exiting", .metavar = "NS/NAME"),
        FLAG(GD_FLAG_STRING, "worker-name", &o.worker_name, "this remote worker's name in the manager's logs (default: the host name, i.e. the pod name)", .metavar = "NAME"),
        FLAG(GD_FLAG_STRING, "curve-key", &curve_key, "our CURVE secret key (z85 file, godis-manager keygen): needed for tcp:// endpoints, which always use CURVE", .metavar = "FILE"),
        FLAG(GD_FLAG_STRING, "curve-server-public", &curve_server, "the manager's CURVE public key (z85 file) that tcp:// endpoints must present", .metavar = "FILE"),
        FLAG(GD_FLAG_STRING, "shards", &shards, "standalone: shards to own, e.g. \"0-255\", \"3,17\" or \"all\"", .metavar = "LIST", .def = "all"),
        FLAG(GD_FLAG_INT, "max-concurrent-reconciles", &o.max_concurrent, "reconcile threads per controller (1..1024)", .metavar = "N", .min = 1, .max = 1024),
        FLAG(GD_FLAG_FUNC, "queue-rate-limits", NULL, "per-controller workqueue rate limiter, client-go's MaxOf(per-key exponential, overall token bucket): any subset of \"base-ms=5,max-ms=1000000,qps=10,burst=100,priority=1\" (the defaults); qps=0 disables the bucket; priority=0 queues initial lists and resyncs as real changes (client-go's order)", .metavar = "SPEC", .fn = rate_limits, .ud = &o),
        FLAG(GD_FLAG_DURATION, "heartbeat", &o.heartbeat_ms, "the manager's heartbeat (10ms..10m); silent 3x: HELLO again, 5x: exit 1", .min = 10, .max = 600000),
        FLAG(GD_FLAG_MILLIS, "heartbeat-ms", &o.heartbeat_ms, "", .min = 10, .max = 600000, .deprecated = "use --heartbeat DURATION"),
        FLAG(GD_FLAG_FUNC, "kube-api-qps", NULL, "the API client's rate limit in requests/s (1..100000; -1: none, the API server's priority and fairness then being the only limit)", .metavar = "N", .fn = api_qps, .ud = &o.kube_api_qps, .def = "50"),
        FLAG(GD_FLAG_INT, "kube-api-burst", &o.kube_api_burst, "... and its burst (1..100000)", .metavar = "N", .min = 1, .max = 100000),
        FLAG(GD_FLAG_STRING, "kubeconfig", &o.kubeconfig, "kubeconfig for API writes (default: $KUBECONFIG, ~/.kube/config, then in-cluster)", .metavar = "PATH"),
        FLAG(GD_FLAG_STRING, "context", &o.context, "kubeconfig context (default: current-context)", .metavar = "NAME"),
        FLAG(GD_FLAG_FUNC, "manager-identity", NULL, "the Lease identity of the manager that runs this worker; API requests then carry the User-Agent \"godis-operator (worker; manager=ID)\", so the API server's audit log names the manager of every write", .metavar = "ID", .fn = manager_identity, .ud = &o.manager_identity),
        FLAG(GD_FLAG_FUNC, "cluster-domain", NULL, "the cluster's DNS domain: a member without a pod IP in the cache is dialled at <godis>-endpoint.<ns>.svc.DOMAIN", .metavar = "DOMAIN", .fn = cluster_domain, .ud = &o.cluster_domain, .def = "cluster.local"),
        FLAG(GD_FLAG_INT, "max-concurrent-rollouts", &o.max_concurrent_rollouts, "at most N of this worker's GodisClusters (the clusters of the shards it owns) roll a changed member template out at once; the others wait, still scaling and healing (0..10000; 0: no limit)", .metavar = "N", .min = 0, .max = 10000),
        FLAG(GD_FLAG_FUNC, "default-godis-image", NULL, "image of the members of GodisClusters without spec.image; a change rolls those clusters, within --max-concurrent-rollouts", .metavar = "IMAGE", .fn = default_image, .ud = &o.default_image, .def = "kbzjung359/godis"),
        FLAG(GD_FLAG_STRING, "reconciler", &o.reconciler, rec_help, .metavar = "NAME"),
        FLAG(GD_FLAG_STRING, "reconciler-arg", &o.reconciler_arg, "options for the reconciler set (godis: \"node-grace-ms=N,godis-timeout-ms=N,godis-port=N\")", .metavar = "STRING"),
        FLAG(GD_FLAG_DURATION, "stop-grace", &o.stop_grace_ms, "on SIGTERM, how long in-flight reconciles may run (0s..1h)", .min = 0, .max = 3600000),
        FLAG(GD_FLAG_MILLIS, "stop-grace-ms", &o.stop_grace_ms, "", .min = 0, .max = 3600000, .deprecated = "use --stop-grace DURATION"),
        FLAG(GD_FLAG_FUNC, "log-level", NULL, "debug, info, warn or error", .metavar = "LEVEL", .fn = gd_flags_log_level, .ud = &level, .def = "info"),
        FLAG(GD_FLAG_FUNC, "log-format", NULL, "text or json", .metavar = "FORMAT", .fn = gd_flags_log_format, .ud = &format, .def = "text"),
    };
    gd_flagset fs = {.prog = "godis-worker", .usage = "godis-worker [flags]", .about = ABOUT,
                     .footer = FOOTER, .flags = defs, .nflags = sizeof defs / sizeof defs[0]};
    int rc = gd_flags_main(&fs, argc, argv);
    if (rc >= 0)
        return rc;
    gd_log_init("worker", (gd_log_level)gd_log_level_parse(level), strcmp(format, "json") == 0, 2);
    gd_hoptrace_init("worker");
    gd_flags_warn_deprecated(&fs);

    char why[600] = "";
    if (leader_lease)
        return remote_main(&fs, &o, leader_lease, curve_key, curve_server, argv);
    if (endpoints && o.runtime_dir)
        return gd_flags_fail(&fs, "give --runtime-dir or --informer-endpoints, not both");
    if (endpoints) {
        if (worker_endpoints_parse(&o, endpoints, why, sizeof why) != GD_OK)
            return gd_flags_fail(&fs, "--informer-endpoints: %s", why);
    } else if (o.runtime_dir) {
        if (worker_endpoints_from_dir(&o, o.runtime_dir) != GD_OK)
            return gd_flags_fail(&fs, "--runtime-dir: path too long: %s", o.runtime_dir);
    } else {
        return gd_flags_fail(&fs, "need --runtime-dir or --informer-endpoints");
    }
    if (o.control_endpoint) {
        if (shards)
            return gd_flags_fail(&fs, "--shards is for standalone mode; the manager assigns shards");
        if (strncmp(o.control_endpoint, "ipc://", 6) != 0 &&
            strncmp(o.control_endpoint, "tcp://", 6) != 0)
            return gd_flags_fail(&fs, "--control-endpoint must be ipc:// or tcp://, got \"%s\"",
                                 o.control_endpoint);
    } else if (gdw_parse_shards(shards ? shards : "all", o.shards, &o.nshards, why,
                                sizeof why) != GD_OK) {
        return gd_flags_fail(&fs, "--shards: %s", why);
    }
    o.remote = o.control_endpoint && strncmp(o.control_endpoint, "tcp://", 6) == 0;
    if (worker_opts_need_curve(&o) &&
        worker_curve_load(&o, curve_key, curve_server, why, sizeof why) != GD_OK)
        return gd_flags_fail(&fs, "%s", why);
    if (!gd_reconciler_find(o.reconciler))
        return gd_flags_fail(&fs, "--reconciler: unknown reconciler set \"%s\"", o.reconciler);
    return worker_run(&o);
}
