/* main.c — bin/godis-informer: flags, wiring, signals. The work happens in reflector.c
 * (list/watch thread) and publisher.c (store + ZeroMQ thread); see informer.h. */
#include "informer.h"
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>
#include "gd_hoptrace.h"
#include "gd_log.h"
#include "gd_time.h"
#include "k8s_config.h"

#define MAX_DROP 32

static const char usage[] =
"Usage: godis-informer --kind KIND [options]\n"
"\n"
"Lists and watches one kind of Kubernetes object, caches it and publishes every change over\n"
"ZeroMQ (protocol GDI1, docs/PROTOCOL.md): a PUB socket with one topic per shard, and a\n"
"ROUTER socket serving snapshots and STATS. Normally started by godis-manager.\n"
"\n"
"What to watch:\n"
"  --kind KIND              GodisCluster, Godis, ConfigMap, ReplicaSet, Service,\n"
"                           PersistentVolumeClaim, Pod or Node (plural and short names work)\n"
"  --resource G/V/R         any other resource: group/version/resource, or version/resource\n"
"                           for the core group (e.g. apps/v1/deployments, v1/secrets)\n"
"  --namespace NS           watch one namespace (default: all namespaces)\n"
"  --label-selector SEL     only objects matching SEL (e.g. cluster-name)\n"
"  --field-selector SEL     only objects matching SEL (e.g. spec.nodeName=n1)\n"
"  --drop-field PATH        also drop PATH (dot path) before caching; repeatable (up to 32).\n"
"                           metadata.managedFields is always dropped\n"
"\n"
"Where the API server is:\n"
"  --kubeconfig PATH        kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)\n"
"  --context NAME           kubeconfig context (default: current-context)\n"
"\n"
"Where to publish:\n"
"  --runtime-dir DIR        private 0700 directory for ipc:// endpoints (created if missing;\n"
"                           default $XDG_RUNTIME_DIR/godis-operator-<pid> or\n"
"                           /tmp/godis-operator-<uid>-<pid>)\n"
"  --pub-endpoint EP        PUB endpoint (default ipc://DIR/<kind>.pub)\n"
"  --snap-endpoint EP       ROUTER endpoint (default ipc://DIR/<kind>.snap)\n"
"  --pub-hwm N              PUB send high-water mark per subscriber (default 100000)\n"
"\n"
"Timing:\n"
"  --page-size N            list page size (limit), 0 = unpaginated (default 500)\n"
"  --initial-list-from-cache  first list with resourceVersion=0 as client-go does: served\n"
"                           from the API server's watch cache (no etcd read) but unpaginated;\n"
"                           default: a consistent, paginated read from etcd\n"
"  --heartbeat-ms MS        HEARTBEAT period (default 1000)\n"
"  --resync-period DUR      republish every object as MODIFIED each DUR; 0 = off (default 0)\n"
"  --min-watch-timeout DUR  watch timeout is random in [DUR, 2*DUR) (default 5m)\n"
"                           DUR: a number with unit ms, s, m or h (bare number = seconds)\n"
"\n"
"Logging:\n"
"  --log-level LEVEL        debug, info, warn or error (default info)\n"
"  --log-format FORMAT      text or json (default text)\n"
"  --help                   this text\n"
"\n"
"Exit status: 0 after SIGTERM/SIGINT, 1 on a runtime failure, 2 on a configuration error.\n";

static volatile int g_stop;
static inf_queue *g_queue;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
    if (g_queue)
        inf_queue_wake(g_queue);      /* a write(2) on an eventfd: async-signal-safe */
}

/* The reflector publishes on its own thread (inf_reflector_cfg.apply). */
static gd_err apply_direct(void *ud, inf_q_item *it) { return inf_pub_apply(ud, it); }

static void die_config(const char *fmt, const char *arg)
{
    fprintf(stderr, "godis-informer: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see --help)\n");
    exit(GD_EXIT_FATAL_CONFIG);
}

/* Duration: "250ms", "30s", "5m", "1h", or a bare number of seconds. -1 when invalid. */
static int64_t parse_duration_ms(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0)
        return -1;
    double mult = 1000;
    if (strcmp(end, "ms") == 0)
        mult = 1;
    else if (strcmp(end, "s") == 0 || *end == '\0')
        mult = 1000;
    else if (strcmp(end, "m") == 0)
        mult = 60000;
    else if (strcmp(end, "h") == 0)
        mult = 3600000;
    else
        return -1;
    double ms = v * mult;
    return ms > 1e15 ? -1 : (int64_t)ms;
}

static long parse_long(const char *s, const char *flag, long min, long max)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s: expected an integer in [%ld, %ld], got '%%s'", flag,
                 min, max);
        die_config(msg, s);
    }
    return v;
}

typedef struct {
    const char *kind, *resource, *ns, *label_selector, *field_selector, *kubeconfig, *context;
    const char *runtime_dir, *pub_ep, *snap_ep, *log_level, *log_format;
    const char *drop[MAX_DROP];
    size_t ndrop;
    long page_size, heartbeat_ms, pub_hwm;
    bool list_from_cache;
    int64_t resync_ms, min_watch_ms;
} flags;

static void parse_flags(int argc, char **argv, flags *f)
{
    enum { F_KIND = 256, F_RESOURCE, F_NS, F_LSEL, F_FSEL, F_KUBECONFIG, F_CONTEXT, F_RUNDIR,
           F_PUB, F_SNAP, F_PAGE, F_HB, F_RESYNC, F_DROP, F_LOGLEVEL, F_LOGFORMAT, F_HELP,
           F_MINWATCH, F_HWM, F_LISTCACHE };
    static const struct option opts[] = {
        {"kind", required_argument, 0, F_KIND}, {"resource", required_argument, 0, F_RESOURCE},
        {"namespace", required_argument, 0, F_NS},
        {"label-selector", required_argument, 0, F_LSEL},
        {"field-selector", required_argument, 0, F_FSEL},
        {"kubeconfig", required_argument, 0, F_KUBECONFIG},
        {"context", required_argument, 0, F_CONTEXT},
        {"runtime-dir", required_argument, 0, F_RUNDIR},
        {"pub-endpoint", required_argument, 0, F_PUB},
        {"snap-endpoint", required_argument, 0, F_SNAP},
        {"page-size", required_argument, 0, F_PAGE},
        {"heartbeat-ms", required_argument, 0, F_HB},
        {"resync-period", required_argument, 0, F_RESYNC},
        {"min-watch-timeout", required_argument, 0, F_MINWATCH},
        {"pub-hwm", required_argument, 0, F_HWM},
        {"initial-list-from-cache", no_argument, 0, F_LISTCACHE},
        {"drop-field", required_argument, 0, F_DROP},
        {"log-level", required_argument, 0, F_LOGLEVEL},
        {"log-format", required_argument, 0, F_LOGFORMAT},
        {"help", no_argument, 0, F_HELP}, {0, 0, 0, 0}};
    memset(f, 0, sizeof *f);
    f->page_size = 500;
    f->heartbeat_ms = 1000;
    f->pub_hwm = 100000;
    f->min_watch_ms = 300000;
    f->log_level = "info";
    f->log_format = "text";
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case F_KIND: f->kind = optarg; break;
        case F_RESOURCE: f->resource = optarg; break;
        case F_NS: f->ns = *optarg ? optarg : NULL; break;
        case F_LSEL: f->label_selector = optarg; break;
        case F_FSEL: f->field_selector = optarg; break;
        case F_KUBECONFIG: f->kubeconfig = optarg; break;
        case F_CONTEXT: f->context = optarg; break;
        case F_RUNDIR: f->runtime_dir = optarg; break;
        case F_PUB: f->pub_ep = optarg; break;
        case F_SNAP: f->snap_ep = optarg; break;
        case F_PAGE: f->page_size = parse_long(optarg, "--page-size", 0, 100000); break;
        case F_HB: f->heartbeat_ms = parse_long(optarg, "--heartbeat-ms", 10, 3600000); break;
        case F_HWM: f->pub_hwm = parse_long(optarg, "--pub-hwm", 1, 100000000); break;
        case F_LISTCACHE: f->list_from_cache = true; break;
        case F_RESYNC:
            if ((f->resync_ms = parse_duration_ms(optarg)) < 0)
                die_config("--resync-period: bad duration '%s'", optarg);
            break;
        case F_MINWATCH:
            if ((f->min_watch_ms = parse_duration_ms(optarg)) < 1000)
                die_config("--min-watch-timeout: bad duration '%s' (at least 1s)", optarg);
            break;
        case F_DROP:
            if (f->ndrop >= MAX_DROP)
                die_config("--drop-field: more than 32 given (at '%s')", optarg);
            f->drop[f->ndrop++] = optarg;
            break;
        case F_LOGLEVEL:
            if (gd_log_level_parse(optarg) < 0)
                die_config("--log-level: unknown level '%s'", optarg);
            f->log_level = optarg;
            break;
        case F_LOGFORMAT:
            if (strcmp(optarg, "text") != 0 && strcmp(optarg, "json") != 0)
                die_config("--log-format: expected text or json, got '%s'", optarg);
            f->log_format = optarg;
            break;
        case F_HELP: fputs(usage, stdout); exit(GD_EXIT_OK);
        default:
            die_config("unknown flag or missing value: '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        die_config("unexpected argument '%s'", argv[optind]);
    if (!f->kind && !f->resource)
        die_config("%s", "one of --kind or --resource is required");
}

/* Fills res from --kind or --resource; kind_name is what goes on the wire. */
static void resolve_resource(const flags *f, k8s_resource *res, const char **kind_name,
                             char *buf, size_t cap)
{
    if (!f->resource) {
        const k8s_resource *r = k8s_resource_lookup(f->kind);
        if (!r)
            die_config("--kind: unknown kind '%s' (use --resource group/version/resource)",
                       f->kind);
        *res = *r;
        *kind_name = r->kind;
        return;
    }
    /* group/version/resource, or version/resource for the core group. */
    if (strlen(f->resource) >= cap)
        die_config("--resource: too long: '%s'", f->resource);
    snprintf(buf, cap, "%s", f->resource);
    char *parts[3] = {0};
    int n = 0;
    for (char *save = NULL, *t = strtok_r(buf, "/", &save); t; t = strtok_r(NULL, "/", &save))
        parts[n < 3 ? n : 2] = t, n++;
    if (n < 2 || n > 3)
        die_config("--resource: expected group/version/resource or version/resource, got '%s'",
                   f->resource);
    memset(res, 0, sizeof *res);
    res->group = n == 3 ? parts[0] : "";
    res->version = parts[n - 2];
    res->resource = parts[n - 1];
    res->kind = f->kind ? f->kind : parts[n - 1];
    res->namespaced = f->ns != NULL;
    *kind_name = res->kind;
}

/* Creates (or checks) the private runtime directory. */
static void prepare_runtime_dir(const char *dir)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        die_config("--runtime-dir: cannot create '%s'", dir);
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        die_config("--runtime-dir: '%s' is not a directory", dir);
    if (sb.st_uid != getuid() || (sb.st_mode & 077))
        die_config("--runtime-dir: '%s' must be owned by us with mode 0700", dir);
}

static void make_endpoint(char *out, size_t cap, const char *given, const char *dir,
                          const char *kind, const char *suffix)
{
    if (given) {
        if (strncmp(given, "tcp://", 6) == 0)
            die_config("%s: tcp:// endpoints need CURVE keys, which this build does not "
                       "configure yet; use ipc:// or inproc://", given);
        snprintf(out, cap, "%s", given);
        return;
    }
    int n = snprintf(out, cap, "ipc://%s/%s.%s", dir, kind, suffix);
    if (n < 0 || (size_t)n >= cap || (size_t)n - 6 >= sizeof(((struct sockaddr_un *)0)->sun_path))
        die_config("runtime dir path too long for an ipc:// endpoint: '%s'", dir);
}

int main(int argc, char **argv)
{
    /* One malloc arena, set before any thread starts: the reflector allocates what the
     * publisher and ZeroMQ free, and with an arena per thread those cross-thread frees left
     * 10-35 % more of the cache's RSS stranded in half-used pages, varying run to run with
     * which thread won the allocation (bench rss: 0.94-0.99 MB vs 1.06-1.29 MB per 1k). */
    mallopt(M_ARENA_MAX, 1);
    flags f;
    parse_flags(argc, argv, &f);
    gd_log_init("informer", (gd_log_level)gd_log_level_parse(f.log_level),
                strcmp(f.log_format, "json") == 0, 2);
    gd_hoptrace_init("informer");

    k8s_resource res;
    const char *kind;
    char resbuf[256];
    resolve_resource(&f, &res, &kind, resbuf, sizeof resbuf);

    char err[512] = "";
    k8s_config_opts co = {.kubeconfig = f.kubeconfig, .context = f.context,
                          .allow_in_cluster = true};
    k8s_config *cfg = NULL;
    if (k8s_config_load(&co, &cfg, err, sizeof err) != GD_OK) {
        fprintf(stderr, "godis-informer: %s\n", err[0] ? err : "cannot load kubeconfig");
        return GD_EXIT_FATAL_CONFIG;
    }
    k8s_client_opts ko;
    k8s_client_opts_default(&ko);
    ko.user_agent = "godis-operator (informer)";
    k8s_client *client = k8s_client_new(&cfg, &ko);
    if (!client) {
        fprintf(stderr, "godis-informer: cannot create the Kubernetes client\n");
        return GD_EXIT_FATAL_CONFIG;
    }

    char dirbuf[256];
    const char *dir = f.runtime_dir;
    bool own_dir = false;
    if (!f.pub_ep || !f.snap_ep) {
        if (!dir) {
            const char *xdg = getenv("XDG_RUNTIME_DIR");
            if (xdg && *xdg)
                snprintf(dirbuf, sizeof dirbuf, "%s/godis-operator-%d", xdg, (int)getpid());
            else
                snprintf(dirbuf, sizeof dirbuf, "/tmp/godis-operator-%d-%d", (int)getuid(),
                         (int)getpid());
            dir = dirbuf;
            own_dir = true;
        }
        prepare_runtime_dir(dir);
    }
    char pub_ep[256], snap_ep[256];
    make_endpoint(pub_ep, sizeof pub_ep, f.pub_ep, dir, kind, "pub");
    make_endpoint(snap_ep, sizeof snap_ep, f.snap_ep, dir, kind, "snap");

    static inf_counters ctr;
    atomic_store(&ctr.last_rv, -1);
    inf_queue *q = inf_queue_new(4096);
    void *zctx = zmq_ctx_new();
    if (!q || !zctx) {
        fprintf(stderr, "godis-informer: out of memory\n");
        return GD_EXIT_FAILURE;
    }
    g_queue = q;
    inf_pub_cfg pc = {.zctx = zctx, .kind = kind, .pub_endpoint = pub_ep,
                      .snap_endpoint = snap_ep, .heartbeat_ms = (int)f.heartbeat_ms,
                      .resync_ms = f.resync_ms, .pub_hwm = (int)f.pub_hwm, .q = q,
                      .ctr = &ctr, .stop = &g_stop};
    inf_pub *pub = inf_pub_new(&pc);
    if (!pub) {
        fprintf(stderr, "godis-informer: cannot bind %s / %s\n", pub_ep, snap_ep);
        return GD_EXIT_FATAL_CONFIG;
    }

    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    inf_reflector_cfg rc = {.client = client, .res = res, .kind = kind, .ns = f.ns,
                            .label_selector = f.label_selector,
                            .field_selector = f.field_selector, .page_size = f.page_size,
                            .initial_list_from_cache = f.list_from_cache,
                            .min_watch_timeout_s = (int)(f.min_watch_ms / 1000),
                            .drop = f.drop, .ndrop = f.ndrop, .q = q, .apply = apply_direct,
                            .apply_ud = pub, .ctr = &ctr,
                            .stop = &g_stop};
    /* The reflector thread must not take the signals: the publisher's poll wakes on them
     * through the eventfd either way, but curl in the reflector should never see EINTR. */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    pthread_t th;
    int terr = pthread_create(&th, NULL, inf_reflector_run, &rc);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (terr != 0) {
        fprintf(stderr, "godis-informer: cannot start the reflector thread\n");
        return GD_EXIT_FAILURE;
    }
    GD_INFO("informer started", "kind", kind, "namespace", f.ns ? f.ns : "(all)",
            "label_selector", f.label_selector ? f.label_selector : "",
            "pub", pub_ep, "snap", snap_ep);

    gd_err e = inf_pub_run(pub);
    g_stop = 1;
    /* The reflector notices the stop within ~100 ms inside a watch; a list in flight can
     * take up to the request timeout, so do not wait for ever. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 5;
    bool joined = pthread_timedjoin_np(th, NULL, &ts) == 0;
    GD_INFO("informer stopping", "kind", kind, "reflector", joined ? "joined" : "abandoned");
    inf_pub_destroy(&pub);
    if (joined) {
        inf_queue_destroy(&q);
        k8s_client_destroy(&client);
    }
    zmq_ctx_term(zctx);
    /* libzmq leaves ipc socket files behind; remove ours so the directory can go too. */
    if (strncmp(pub_ep, "ipc://", 6) == 0)
        unlink(pub_ep + 6);
    if (strncmp(snap_ep, "ipc://", 6) == 0)
        unlink(snap_ep + 6);
    if (own_dir)
        rmdir(dir);
    return e == GD_OK ? GD_EXIT_OK : GD_EXIT_FAILURE;
}
