/* node-agent — a stand-in kubelet for the loopback test cluster (see agent.h, DESIGN.md §7).
 *
 *   node-agent [flags]                          run N nodes and their pods until SIGTERM
 *   node-agent [flags] set-ready NODE true|false  mark a node Ready/NotReady (tests) */
#include "agent.h"
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gd_flags.h"
#include "gd_log.h"
#include "k8s_client.h"
#include "k8s_config.h"

static na_agent agent;

static const char ABOUT[] =
    "A stand-in kubelet: registers N Nodes, renews their Leases in kube-node-lease, and runs "
    "the pods bound to them as local processes, each pod with its own IP in 127.0.0.0/8.";
static const char FOOTER[] =
    "set-ready NODE false writes DIR/nodes/NODE.notready and patches the Ready condition to "
    "False; the running agent (same --state-dir) then keeps posting Ready=False while it "
    "still renews the Lease. set-ready NODE true removes the marker and posts Ready=True.\n\n"
    "On SIGTERM/SIGINT the agent stops every pod process (TERM, 10 s, KILL) and leaves the "
    "Nodes registered.\n\n"
    "Exit codes: 0 stopped, 1 failure, 2 bad flags or configuration.";

static gd_err image_map(void *ud, const char *v, char *why, size_t cap)
{
    return na_image_map_add(&((na_agent *)ud)->images, v, why, cap);
}

static gd_err taint(void *ud, const char *v, char *why, size_t cap)
{
    cJSON *t = na_taint_parse(v, why, cap);
    if (!t) return GD_ERR_CONFIG;
    cJSON_AddItemToArray(((na_agent *)ud)->taints, t);
    return GD_OK;
}

static gd_err heartbeat_seconds(void *ud, const char *v, char *why, size_t cap)
{
    int64_t s;
    if (gd_parse_int(v, 1, 3600, &s) != GD_OK) {
        snprintf(why, cap, "expected 1..3600 seconds, got \"%.40s\"", v);
        return GD_ERR_CONFIG;
    }
    *(int64_t *)ud = s * 1000;
    return GD_OK;
}

static void on_signal(int sig)
{
    (void)sig;
    agent.stop = 1;
}

static k8s_client *make_client(const char *kubeconfig, const char *context)
{
    k8s_config_opts co = { .kubeconfig = kubeconfig, .context = context, .allow_in_cluster = true };
    k8s_config *cfg = NULL;
    char err[512] = "";
    if (k8s_config_load(&co, &cfg, err, sizeof err) != GD_OK) {
        fprintf(stderr, "node-agent: %s\n", err);
        return NULL;
    }
    k8s_client_opts o;
    k8s_client_opts_default(&o);
    o.user_agent = "godis-node-agent";
    /* Three kubelets' worth (kubelet's kubeAPIQPS/Burst defaults are 50/100 since 1.27;
     * 5/10 before, which dense nodes always raised): 100 qps left a 300-pod burst of PVC and
     * ConfigMap reads and status PATCHes queued behind this client's own bucket. */
    o.qps = 150;
    o.burst = 300;
    k8s_client *c = k8s_client_new(&cfg, &o);
    if (!c) fprintf(stderr, "node-agent: cannot create the API client\n");
    k8s_config_destroy(&cfg);
    return c;
}

/* The default image map: the godis members run as the stand-in, and the operator's image
 * (godis-operator) as bin/godis-worker: the remote-workers overlay's godis-worker
 * Deployment is what runs here as pods. Not the whole image (godis-operator=<bin>/ would run
 * each pod's own program): the manager Deployment's pods, which deploy/verify.sh creates
 * for a moment, would then start real managers, whose eviction webhook registration
 * outlives them; as godis-worker they exit on the manager's flags. */
static void default_images(na_image_map *m)
{
    char self[PATH_MAX], spec[PATH_MAX + 64], err[256];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) *slash = '\0';
    if (n <= 0 || snprintf(spec, sizeof spec, "kbzjung359/godis=%s/godis-standin", self) >= (int)sizeof spec)
        snprintf(spec, sizeof spec, "kbzjung359/godis=godis-standin");
    na_image_map_add(m, spec, err, sizeof err);
    if (n > 0 && snprintf(spec, sizeof spec, "godis-operator=%s/godis-worker", self) < (int)sizeof spec)
        na_image_map_add(m, spec, err, sizeof err);
}

static int run(na_agent *a)
{
    struct sigaction sa = { .sa_handler = on_signal };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (!na_mkdirs(a->state_dir)) {
        fprintf(stderr, "node-agent: cannot create --state-dir %s: %s\n", a->state_dir, strerror(errno));
        return GD_EXIT_FATAL_CONFIG;
    }
    gd_backoff bo;
    gd_backoff_init(&bo, 500, 10000, 2.0, 0.2, 60000);
    while (!a->stop && na_node_register_all(a) != GD_OK) {
        int64_t d = gd_backoff_next(&bo);
        for (int64_t t = 0; t < d && !a->stop; t += 100) gd_sleep_ms(100);
    }
    if (a->stop) return GD_EXIT_OK;
    a->queue = na_queue_new();
    a->workers = na_pool_new(NA_POD_WORKERS);
    if (!a->queue || !a->workers || na_watch_start(a) != GD_OK) {
        fprintf(stderr, "node-agent: cannot start the pod watch\n");
        return GD_EXIT_FAILURE;
    }
    for (int i = 0; i < a->nnodes; i++) a->nodes[i].ready_reported = !na_node_marked_notready(a, a->nodes[i].name);
    int64_t last_hb = INT64_MIN / 2, last_hosts = INT64_MIN / 2;   /* both run on the first pass */
    int64_t last_resize = INT64_MIN / 2;
    gd_log(GD_LOG_INFO, "node agent running", "state-dir", a->state_dir, NULL);
    while (!a->stop) {
        na_event ev;
        while (na_queue_pop(a->queue, &ev)) {
            na_pods_apply(a, &ev);
            cJSON_Delete(ev.pod);
        }
        na_pods_tick(a);
        int64_t now = gd_mono_ms();
        bool marker_changed = false;
        for (int i = 0; i < a->nnodes; i++)
            marker_changed |= na_node_marked_notready(a, a->nodes[i].name) == a->nodes[i].ready_reported;
        if (marker_changed || now - last_hb >= (int64_t)a->heartbeat_s * 1000) {
            na_node_heartbeat_all(a);
            last_hb = now;
        }
        if (a->hosts_file && now - last_hosts >= 2000) {
            na_hosts_sync(a);
            last_hosts = now;
        }
        if (now - last_resize >= 2000) {
            na_resize_sync(a);
            last_resize = now;
        }
        gd_sleep_ms(100);
    }
    gd_log(GD_LOG_INFO, "stopping: terminating every pod process", NULL);
    na_pods_stop_all(a, 10);
    na_pool_destroy(&a->workers);     /* after the pods: their PDEATHSIG follows the forking thread */
    na_watch_join(a);
    na_pods_free_all(a);
    na_queue_destroy(&a->queue);
    return GD_EXIT_OK;
}

int main(int argc, char **argv)
{
    na_agent *a = &agent;
    const char *kubeconfig = NULL, *context = NULL, *ip_base = "127.0.1.0", *prefix = "node-";
    int nnodes = 3, level = GD_LOG_INFO;
    char err[512] = "";
    a->heartbeat_s = 10;
    a->taints = cJSON_CreateArray();
    a->last_hosts[0] = '\x01';   /* never equal to a real block: the first sync writes */
    default_images(&a->images);
    const char *tmp = getenv("TMPDIR");
    snprintf(a->state_dir, sizeof a->state_dir, "%s/godis-node-agent-%d", tmp && *tmp ? tmp : "/tmp", (int)getuid());
    int64_t heartbeat_ms = 10000;
    a->sync_frequency_ms = 60000;
    const char *level_name = "info";
#define FLAG GD_FLAG
    char nodes_help[96];
    snprintf(nodes_help, sizeof nodes_help, "number of Nodes to register (1..%d)", NA_MAX_NODES);
    gd_flag defs[] = {
        FLAG(GD_FLAG_STRING, "kubeconfig", &kubeconfig, "kubeconfig to use (default: $KUBECONFIG, then ~/.kube/config)", .metavar = "PATH"),
        FLAG(GD_FLAG_STRING, "context", &context, "kubeconfig context (default: current-context)", .metavar = "NAME"),
        FLAG(GD_FLAG_INT, "nodes", &nnodes, nodes_help, .metavar = "N", .min = 1, .max = NA_MAX_NODES),
        FLAG(GD_FLAG_STRING, "node-prefix", &prefix, "Node names are P1..PN", .metavar = "P"),
        FLAG(GD_FLAG_STRING, "ip-base", &ip_base, "pod IPs are handed out from A+1 upwards, one per live pod, in 127.0.0.0/8 only", .metavar = "A"),
        FLAG(GD_FLAG_FUNC, "image-map", NULL, "run image I (matched without tag or registry) as program PROG; repeatable, later entries win. An empty PROG runs the container's own command on this host. PROG replaces the image entrypoint (command[0]); command[1..] and args follow; a PROG ending in / is a directory holding the image's programs, command[0]'s base name is run from it. Defaults: kbzjung359/godis=<directory of this program>/godis-standin and godis-operator=<directory of this program>/godis-worker (the remote-workers overlay's pods). Image kbzjung359/godis also gets CLUSTER_LISTEN-CLIENT=http://<podIP>:6379 and CLUSTER_LISTEN-PEER=http://<podIP>:6300.", .metavar = "I=PROG", .fn = image_map, .ud = a),
        FLAG(GD_FLAG_STRING, "state-dir", a->state_dir, "volumes, pod logs and node markers (default ${TMPDIR:-/tmp}/godis-node-agent-<uid>). A PVC is the directory DIR/volumes/<namespace>/<claim> and survives its pods; an emptyDir lives in DIR/pods/<ns>_<pod>_<uid>/volumes/<name>; logs are DIR/pods/<ns>_<pod>_<uid>/<container>.log. Processes share this filesystem, so mounts are told by env and args: any env value or argument (or the PATH of an argument -x=PATH / --flag=PATH) that starts with a volume's mountPath gets that prefix replaced by the volume's directory. A secret volume is a directory with one file per key, in the kubelet's layout (DIR/<key> -> ..data/<key>, ..data swapped atomically when the Secret changes; see --sync-frequency). A pod naming a ServiceAccount other than default gets its token, CA and namespace in DIR/pods/<ns>_<pod>_<uid>/serviceaccount and KUBECONFIG pointing at a kubeconfig there.", .metavar = "DIR", .cap = sizeof a->state_dir, .no_default = true),
        FLAG(GD_FLAG_STRING, "hosts-file", &a->hosts_file, "keep a block '# BEGIN godis-node-agent' .. '# END godis-node-agent' in PATH mapping <svc>.<ns>.svc.cluster.local to the pod IP behind each Service's selector (off by default)", .metavar = "PATH"),
        FLAG(GD_FLAG_STRING, "hosts-block", &a->hosts_block, "name of this agent's block in --hosts-file ('# BEGIN godis-node-agent NAME'), so several agents can share one file, each rewriting only its own block (default: the unnamed block)", .metavar = "NAME"),
        FLAG(GD_FLAG_FUNC, "taint", NULL, "taint for newly registered Nodes (repeatable)", .metavar = "K[=V]:EFFECT", .fn = taint, .ud = a),
        FLAG(GD_FLAG_DURATION, "sync-frequency", &a->sync_frequency_ms, "how often a running pod's Secret volumes are re-read and, when the Secret changed, replaced atomically (the kubelet's --sync-frequency, default 1m; each pod's next sync is jittered by up to half of it, as there) (1s..1h)", .min = 1000, .max = 3600000),
        FLAG(GD_FLAG_DURATION, "heartbeat", &heartbeat_ms, "Lease renewal and Ready heartbeat period (1s..1h)", .min = 1000, .max = 3600000),
        FLAG(GD_FLAG_FUNC, "heartbeat-seconds", NULL, "", .fn = heartbeat_seconds, .ud = &heartbeat_ms, .deprecated = "use --heartbeat DURATION"),
        FLAG(GD_FLAG_FUNC, "log-level", NULL, "debug, info, warn or error", .metavar = "LEVEL", .fn = gd_flags_log_level, .ud = &level_name, .def = "info"),
    };
    gd_flagset fs = {.prog = "node-agent",
                     .usage = "node-agent [flags] [run]                      run the nodes and their pods\n"
                              "node-agent [flags] set-ready NODE true|false  mark a node Ready / NotReady",
                     .about = ABOUT, .footer = FOOTER, .flags = defs,
                     .nflags = sizeof defs / sizeof defs[0], .allow_args = true};
    int code = gd_flags_main(&fs, argc, argv);
    if (code >= 0) return code;
    level = gd_log_level_parse(level_name);
    a->heartbeat_s = (int)(heartbeat_ms / 1000);
    gd_log_init("node-agent", (gd_log_level)level, 0, 2);
    gd_flags_warn_deprecated(&fs);
    if (strlen(prefix) + 4 >= sizeof a->node_prefix || !*prefix) {
        fprintf(stderr, "node-agent: --node-prefix must be 1..%zu characters\n", sizeof a->node_prefix - 5);
        return GD_EXIT_FATAL_CONFIG;
    }
    snprintf(a->node_prefix, sizeof a->node_prefix, "%s", prefix);
    a->nnodes = nnodes;
    for (int i = 0; i < nnodes; i++) snprintf(a->nodes[i].name, sizeof a->nodes[i].name, "%s%d", prefix, i + 1);
    if (na_ipam_init(&a->ipam, ip_base, 65534, err, sizeof err) != GD_OK) {
        fprintf(stderr, "node-agent: %s\n", err);
        return GD_EXIT_FATAL_CONFIG;
    }
    int rc;
    const char *cmd = fs.nargs ? fs.args[0] : "run";
    if (strcmp(cmd, "set-ready") == 0) {
        if (fs.nargs != 3 || (strcmp(fs.args[2], "true") && strcmp(fs.args[2], "false")))
            return gd_flags_fail(&fs, "usage: set-ready NODE true|false");
        a->api = make_client(kubeconfig, context);
        if (!a->api) return GD_EXIT_FATAL_CONFIG;
        gd_err e = na_node_set_ready(a->api, a->state_dir, fs.args[1], strcmp(fs.args[2], "true") == 0);
        if (e != GD_OK) fprintf(stderr, "node-agent: set-ready %s: %s\n", fs.args[1], gd_strerror(e));
        rc = e == GD_OK ? GD_EXIT_OK : GD_EXIT_FAILURE;
    } else if (strcmp(cmd, "run") != 0 || fs.nargs > 1) {
        return gd_flags_fail(&fs, "unknown command \"%s\"", fs.nargs > 1 && !strcmp(cmd, "run") ? fs.args[1] : cmd);
    } else {
        a->api = make_client(kubeconfig, context);
        rc = a->api ? run(a) : GD_EXIT_FATAL_CONFIG;
    }
    k8s_client_destroy(&a->api);
    na_image_map_free(&a->images);
    na_ipam_free(&a->ipam);
    cJSON_Delete(a->taints);
    return rc;
}
