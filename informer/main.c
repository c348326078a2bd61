/* main.c — bin/godis-informer: flags, wiring, signals. The work happens in reflector.c
 * (list/watch thread) and publisher.c (store + ZeroMQ thread); see informer.h. */
#include "informer.h"
#include <errno.h>
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
#include "gd_flags.h"
#include "gd_hoptrace.h"
#include "gd_log.h"
#include "gd_time.h"
#include "gd_wake.h"
#include "k8s_config.h"

#define MAX_DROP 32

static volatile int g_stop;
static inf_pub *g_pub;
static int g_stop_fd = -1;           /* the reflector's wake-up: readable once g_stop is set */

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
    gd_wake_poke(g_stop_fd);          /* a write(2) on an eventfd: async-signal-safe */
    if (g_pub)
        inf_pub_wake(g_pub);
}

/* The reflector publishes on its own thread (inf_reflector_cfg.apply). */
static gd_err apply_direct(void *ud, inf_update *it) { return inf_pub_apply(ud, it); }

static void die_config(const char *fmt, const char *arg)
{
    fprintf(stderr, "godis-informer: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see godis-informer --help)\n");
    exit(GD_EXIT_FATAL_CONFIG);
}

typedef struct {
    const char *kind, *resource, *ns, *label_selector, *field_selector, *kubeconfig, *context;
    const char *runtime_dir, *pub_ep, *snap_ep, *log_level, *log_format;
    const char *tcp_pub_ep, *tcp_snap_ep, *curve_server_key, *curve_allow;
    const char *drop[MAX_DROP];
    size_t ndrop;
    int page_size, pub_hwm;
    bool list_from_cache;
    int64_t heartbeat_ms, resync_ms, min_watch_ms, watch_deadline_ms;
} flags;

static gd_err add_drop(void *ud, const char *v, char *why, size_t cap)
{
    flags *f = ud;
    if (f->ndrop >= MAX_DROP) {
        snprintf(why, cap, "more than %d given (at \"%.60s\")", MAX_DROP, v);
        return GD_ERR_CONFIG;
    }
    f->drop[f->ndrop++] = v;
    return GD_OK;
}

static const char ABOUT[] =
    "Lists and watches one kind of Kubernetes object, caches it and publishes every change "
    "over ZeroMQ (protocol GDI1, docs/PROTOCOL.md): a PUB socket with one topic per shard, "
    "and a ROUTER socket serving snapshots and STATS. Normally started by godis-manager.";
static const char FOOTER[] =
    "Durations are Go durations: 250ms, 30s, 5m, 1h30m (a bare number needs a unit).\n\n"
    "Exit codes: 0 after SIGTERM/SIGINT, 1 on a runtime failure, 2 on a configuration error.";

#define FLAG GD_FLAG
#define SECTION GD_FLAG_HEADING
static int parse_flags(int argc, char **argv, flags *f)
{
    memset(f, 0, sizeof *f);
    f->page_size = 500;
    f->heartbeat_ms = 1000;
    f->pub_hwm = 100000;
    f->min_watch_ms = 300000;
    f->watch_deadline_ms = 150000;    /* 2.5 bookmark intervals: reflector.c */
    f->log_level = "info";
    f->log_format = "text";
    gd_flag defs[] = {
        SECTION("What to watch"),
        FLAG(GD_FLAG_STRING, "kind", &f->kind, "GodisCluster, Godis, ConfigMap, ReplicaSet, Service, PersistentVolumeClaim, Pod or Node (plural and short names work)", .metavar = "KIND"),
        FLAG(GD_FLAG_STRING, "resource", &f->resource, "any other resource: group/version/resource, or version/resource for the core group (e.g. apps/v1/deployments, v1/secrets)", .metavar = "G/V/R"),
        FLAG(GD_FLAG_STRING, "namespace", &f->ns, "watch one namespace (default: all namespaces)", .metavar = "NS"),
        FLAG(GD_FLAG_STRING, "label-selector", &f->label_selector, "only objects matching SEL (e.g. cluster-name)", .metavar = "SEL"),
        FLAG(GD_FLAG_STRING, "field-selector", &f->field_selector, "only objects matching SEL (e.g. spec.nodeName=n1)", .metavar = "SEL"),
        FLAG(GD_FLAG_FUNC, "drop-field", NULL, "also drop PATH (dot path) before caching; repeatable (up to 32). metadata.managedFields is always dropped", .metavar = "PATH", .fn = add_drop, .ud = f),
        SECTION("Where the API server is"),
        FLAG(GD_FLAG_STRING, "kubeconfig", &f->kubeconfig, "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)", .metavar = "PATH"),
        FLAG(GD_FLAG_STRING, "context", &f->context, "kubeconfig context (default: current-context)", .metavar = "NAME"),
        SECTION("Where to publish"),
        FLAG(GD_FLAG_STRING, "runtime-dir", &f->runtime_dir, "private 0700 directory for ipc:// endpoints, created if missing (default $XDG_RUNTIME_DIR/godis-operator-<pid> or /tmp/godis-operator-<uid>-<pid>)", .metavar = "DIR"),
        FLAG(GD_FLAG_STRING, "pub-endpoint", &f->pub_ep, "PUB endpoint (default ipc://DIR/<kind>.pub)", .metavar = "EP"),
        FLAG(GD_FLAG_STRING, "snap-endpoint", &f->snap_ep, "ROUTER endpoint (default ipc://DIR/<kind>.snap)", .metavar = "EP"),
        FLAG(GD_FLAG_STRING, "tcp-pub-endpoint", &f->tcp_pub_ep, "also bind the PUB here for remote workers (tcp://HOST:PORT, CURVE: needs --curve-server-key and --curve-allow)", .metavar = "EP"),
        FLAG(GD_FLAG_STRING, "tcp-snap-endpoint", &f->tcp_snap_ep, "also bind the snapshot ROUTER here (tcp://HOST:PORT, CURVE)", .metavar = "EP"),
        FLAG(GD_FLAG_STRING, "curve-server-key", &f->curve_server_key, "the server's CURVE secret key (z85 file, godis-manager keygen) for every tcp:// endpoint", .metavar = "FILE"),
        FLAG(GD_FLAG_STRING, "curve-allow", &f->curve_allow, "allow-list of client public keys (z85, one per line, optional name), re-read when it changes", .metavar = "FILE"),
        FLAG(GD_FLAG_INT, "pub-hwm", &f->pub_hwm, "PUB send high-water mark per subscriber (1..100000000)", .metavar = "N", .min = 1, .max = 100000000),
        SECTION("Timing"),
        FLAG(GD_FLAG_INT, "page-size", &f->page_size, "list page size (limit), 0 = unpaginated (0..100000)", .metavar = "N", .min = 0, .max = 100000),
        FLAG(GD_FLAG_BOOL, "initial-list-from-cache", &f->list_from_cache, "first list with resourceVersion=0 as client-go does: served from the API server's watch cache (no etcd read) but unpaginated; default: a consistent, paginated read from etcd"),
        FLAG(GD_FLAG_DURATION, "heartbeat", &f->heartbeat_ms, "HEARTBEAT period (10ms..1h)", .min = 10, .max = 3600000),
        FLAG(GD_FLAG_MILLIS, "heartbeat-ms", &f->heartbeat_ms, "", .min = 10, .max = 3600000, .deprecated = "use --heartbeat DURATION"),
        FLAG(GD_FLAG_DURATION, "resync-period", &f->resync_ms, "republish every object as MODIFIED each period; 0 = off"),
        FLAG(GD_FLAG_DURATION, "min-watch-timeout", &f->min_watch_ms, "watch timeout is random in [D, 2*D) (1s..24h)", .min = 1000, .max = 86400000),
        FLAG(GD_FLAG_DURATION, "watch-progress-deadline", &f->watch_deadline_ms, "a watch that delivers no byte (event or bookmark) for D is ended and re-established from the last resourceVersion; the API server bookmarks about once a minute; 0 = off (0..24h)", .min = 0, .max = 86400000),
        SECTION("Logging"),
        FLAG(GD_FLAG_FUNC, "log-level", NULL, "debug, info, warn or error", .metavar = "LEVEL", .fn = gd_flags_log_level, .ud = &f->log_level, .def = "info"),
        FLAG(GD_FLAG_FUNC, "log-format", NULL, "text or json", .metavar = "FORMAT", .fn = gd_flags_log_format, .ud = &f->log_format, .def = "text"),
    };
    gd_flagset fs = {.prog = "godis-informer", .usage = "godis-informer --kind KIND [flags]",
                     .about = ABOUT, .footer = FOOTER, .flags = defs,
                     .nflags = sizeof defs / sizeof defs[0]};
    int rc = gd_flags_main(&fs, argc, argv);
    if (rc >= 0)
        return rc;
    if (f->ns && !*f->ns)
        f->ns = NULL;
    if (!f->kind && !f->resource)
        return gd_flags_fail(&fs, "one of --kind or --resource is required");
    gd_log_init("informer", (gd_log_level)gd_log_level_parse(f->log_level),
                strcmp(f->log_format, "json") == 0, 2);
    gd_flags_warn_deprecated(&fs);
    return -1;
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
        snprintf(out, cap, "%s", given);
        return;
    }
    int n = snprintf(out, cap, "ipc://%s/%s.%s", dir, kind, suffix);
    if (n < 0 || (size_t)n >= cap || (size_t)n - 6 >= sizeof(((struct sockaddr_un *)0)->sun_path))
        die_config("runtime dir path too long for an ipc:// endpoint: '%s'", dir);
}

/* The API client, from --kubeconfig/--context, $KUBECONFIG or in-cluster; NULL after
 * printing why (exit 2: a configuration the user must fix). */
static k8s_client *make_client(const flags *f)
{
    char err[512] = "";
    k8s_config_opts co = {.kubeconfig = f->kubeconfig, .context = f->context,
                          .allow_in_cluster = true};
    k8s_config *cfg = NULL;
    if (k8s_config_load(&co, &cfg, err, sizeof err) != GD_OK) {
        fprintf(stderr, "godis-informer: %s\n", err[0] ? err : "cannot load kubeconfig");
        return NULL;
    }
    k8s_client_opts ko;
    k8s_client_opts_default(&ko);
    ko.user_agent = "godis-operator (informer)";
    k8s_client *client = k8s_client_new(&cfg, &ko);
    if (!client)
        fprintf(stderr, "godis-informer: cannot create the Kubernetes client\n");
    return client;
}

/* The PUB and snapshot endpoints (256 bytes each): the flags', else ipc:// sockets in the
 * runtime directory, which is made (private) when not given; *own_dir tells main to remove
 * it at exit. Returns that directory (NULL when both endpoints were given). */
static const char *choose_endpoints(const flags *f, const char *kind, char dirbuf[256],
                                    bool *own_dir, char *pub_ep, char *snap_ep)
{
    const char *dir = f->runtime_dir;
    if (!f->pub_ep || !f->snap_ep) {
        if (!dir) {
            const char *xdg = getenv("XDG_RUNTIME_DIR");
            if (xdg && *xdg)
                snprintf(dirbuf, 256, "%s/godis-operator-%d", xdg, (int)getpid());
            else
                snprintf(dirbuf, 256, "/tmp/godis-operator-%d-%d", (int)getuid(),
                         (int)getpid());
            dir = dirbuf;
            *own_dir = true;
        }
        prepare_runtime_dir(dir);
    }
    make_endpoint(pub_ep, 256, f->pub_ep, dir, kind, "pub");
    make_endpoint(snap_ep, 256, f->snap_ep, dir, kind, "snap");
    return dir;
}

/* The reflector thread must not take the signals: the publisher's poll wakes on them
 * through the eventfd either way, but curl in the reflector should never see EINTR. */
static int start_reflector(pthread_t *th, inf_reflector_cfg *rc)
{
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int terr = pthread_create(th, NULL, inf_reflector_run, rc);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return terr;
}

/* The reflector notices the stop at once, in a list, a watch or a backoff nap (each waits
 * on g_stop_fd too; within ~100 ms if it could not be made); bound the wait anyway, below
 * the manager's default TERM-to-KILL (2.5 s), so the socket files are always removed. */
static bool join_reflector(pthread_t th)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 2;
    return pthread_timedjoin_np(th, NULL, &ts) == 0;
}

int main(int argc, char **argv)
{
    /* One malloc arena, set before any thread starts: the reflector allocates what the
     * publisher and ZeroMQ free, and with an arena per thread those cross-thread frees left
     * 10-35 % more of the cache's RSS stranded in half-used pages, varying run to run with
     * which thread won the allocation (bench rss: 0.94-0.99 MB vs 1.06-1.29 MB per 1k). */
    mallopt(M_ARENA_MAX, 1);
    flags f;
    int code = parse_flags(argc, argv, &f);
    if (code >= 0)
        return code;
    gd_hoptrace_init("informer");

    k8s_resource res;
    const char *kind;
    char resbuf[256];
    resolve_resource(&f, &res, &kind, resbuf, sizeof resbuf);

    k8s_client *client = make_client(&f);
    if (!client)
        return GD_EXIT_FATAL_CONFIG;

    char dirbuf[256], pub_ep[256], snap_ep[256];
    bool own_dir = false;
    const char *dir = choose_endpoints(&f, kind, dirbuf, &own_dir, pub_ep, snap_ep);

    /* tcp:// only with CURVE (docs/PROTOCOL.md §3.2): keys and an allow-list, or nothing */
    const char *eps[] = {pub_ep, snap_ep, f.tcp_pub_ep, f.tcp_snap_ep};
    bool tcp = false;
    for (int i = 0; i < 4; i++)
        tcp |= eps[i] && gd_curve_needed(eps[i]);
    static gd_curve_keys keys;
    char kerr[600];
    if (tcp && (!f.curve_server_key || !f.curve_allow))
        die_config("%s: a tcp:// endpoint needs --curve-server-key and --curve-allow "
                   "(there is no plaintext tcp)", f.tcp_pub_ep ? f.tcp_pub_ep :
                   f.tcp_snap_ep ? f.tcp_snap_ep : gd_curve_needed(pub_ep) ? pub_ep : snap_ep);
    if (tcp && gd_curve_load_key(f.curve_server_key, true, &keys, kerr, sizeof kerr) != GD_OK)
        die_config("--curve-server-key: %s", kerr);

    static inf_counters ctr;
    atomic_store(&ctr.last_rv, -1);
    void *zctx = zmq_ctx_new();
    if (!zctx) {
        fprintf(stderr, "godis-informer: out of memory\n");
        return GD_EXIT_FAILURE;
    }
    gd_curve_zap *zap = tcp ? gd_curve_zap_new(zctx, f.curve_allow) : NULL;
    if (tcp && !zap)
        return GD_EXIT_FAILURE;
    inf_pub_cfg pc = {.zctx = zctx, .kind = kind, .pub_endpoint = pub_ep,
                      .snap_endpoint = snap_ep, .tcp_pub_endpoint = f.tcp_pub_ep,
                      .tcp_snap_endpoint = f.tcp_snap_ep, .curve = tcp ? &keys : NULL, .heartbeat_ms = (int)f.heartbeat_ms,
                      .heartbeat_request_gap_ms = 10,
                      .resync_ms = f.resync_ms, .pub_hwm = (int)f.pub_hwm,
                      .ctr = &ctr, .stop = &g_stop};
    inf_pub *pub = inf_pub_new(&pc);
    if (!pub) {
        fprintf(stderr, "godis-informer: cannot bind %s / %s%s\n", pub_ep, snap_ep,
                f.tcp_pub_ep || f.tcp_snap_ep ? " and the tcp:// endpoints (see the log above)" : "");
        return GD_EXIT_FATAL_CONFIG;
    }
    g_pub = pub;

    g_stop_fd = gd_wake_open();       /* -1: the reflector falls back to 100 ms looks */
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
                            .watch_idle_timeout_ms = f.watch_deadline_ms,
                            .drop = f.drop, .ndrop = f.ndrop, .apply = apply_direct,
                            .apply_ud = pub, .ctr = &ctr,
                            .stop = &g_stop, .stop_fd = &g_stop_fd};
    pthread_t th;
    if (start_reflector(&th, &rc) != 0) {
        fprintf(stderr, "godis-informer: cannot start the reflector thread\n");
        return GD_EXIT_FAILURE;
    }
    GD_INFO("informer started", "kind", kind, "namespace", f.ns ? f.ns : "(all)",
            "label_selector", f.label_selector ? f.label_selector : "",
            "pub", pub_ep, "snap", snap_ep);

    gd_err e = inf_pub_run(pub);
    g_stop = 1;
    gd_wake_poke(g_stop_fd);
    bool joined = join_reflector(th);
    GD_INFO("informer stopping", "kind", kind, "reflector", joined ? "joined" : "abandoned");
    g_pub = NULL;
    inf_pub_destroy(&pub);
    if (joined) {                     /* (an abandoned reflector may still use both) */
        k8s_client_destroy(&client);
        int fd = g_stop_fd;
        g_stop_fd = -1;               /* first: a late signal must not poke a closed fd */
        gd_wake_close(&fd);
    }
    gd_curve_zap_destroy(&zap);
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
