/* node-agent — a stand-in kubelet for the loopback test cluster (see agent.h, DESIGN.md §7).
 *
 *   node-agent [flags]                          run N nodes and their pods until SIGTERM
 *   node-agent [flags] set-ready NODE true|false  mark a node Ready/NotReady (tests) */
#include "agent.h"
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gd_log.h"
#include "k8s_client.h"
#include "k8s_config.h"

static na_agent agent;

static void usage(FILE *f)
{
    fprintf(f,
"Usage: node-agent [flags]                            run the nodes and their pods\n"
"       node-agent [flags] set-ready NODE true|false  mark a node Ready / NotReady\n"
"\n"
"A stand-in kubelet: registers N Nodes, renews their Leases in kube-node-lease, and runs the\n"
"pods bound to them as local processes, each pod with its own IP in 127.0.0.0/8.\n"
"\n"
"Flags:\n"
"  --kubeconfig PATH     kubeconfig to use (default: $KUBECONFIG, then ~/.kube/config)\n"
"  --nodes N             number of Nodes to register (default 3, at most %d)\n"
"  --node-prefix P       Node names are P1..PN (default \"node-\")\n"
"  --ip-base A           pod IPs are handed out from A+1 upwards, one per live pod, in\n"
"                        127.0.0.0/8 only (default 127.0.1.0)\n"
"  --image-map I=PROG    run image I (matched without tag or registry) as program PROG;\n"
"                        repeatable, later entries win. An empty PROG runs the container's\n"
"                        own command on this host. PROG replaces the image entrypoint\n"
"                        (command[0]); command[1..] and args follow. Default:\n"
"                        kbzjung359/godis=<directory of this program>/godis-standin.\n"
"                        Image kbzjung359/godis also gets CLUSTER_LISTEN-CLIENT=\n"
"                        http://<podIP>:6379 and CLUSTER_LISTEN-PEER=http://<podIP>:6300.\n"
"  --state-dir DIR       volumes, pod logs and node markers (default\n"
"                        ${TMPDIR:-/tmp}/godis-node-agent-<uid>). A PVC is the directory\n"
"                        DIR/volumes/<namespace>/<claim> and survives its pods; an\n"
"                        emptyDir lives in DIR/pods/<ns>_<pod>_<uid>/volumes/<name>; logs\n"
"                        are DIR/pods/<ns>_<pod>_<uid>/<container>.log.\n"
"                        Processes share this filesystem, so mounts are told by env: any\n"
"                        env value that starts with a volume's mountPath gets that prefix\n"
"                        replaced by the volume's directory.\n"
"  --hosts-file PATH     keep a block '# BEGIN godis-node-agent' .. '# END godis-node-agent'\n"
"                        in PATH mapping <svc>.<ns>.svc.cluster.local to the pod IP behind\n"
"                        each Service's selector (off by default)\n"
"  --taint K[=V]:EFFECT  taint for newly registered Nodes (repeatable)\n"
"  --heartbeat-seconds S Lease renewal and Ready heartbeat period (default 10)\n"
"  --log-level L         debug, info, warn or error (default info)\n"
"  --help                this text\n"
"\n"
"set-ready NODE false writes DIR/nodes/NODE.notready and patches the Ready condition to\n"
"False; the running agent (same --state-dir) then keeps posting Ready=False while it still\n"
"renews the Lease. set-ready NODE true removes the marker and posts Ready=True.\n"
"On SIGTERM/SIGINT the agent stops every pod process (TERM, 10 s, KILL) and leaves the\n"
"Nodes registered.\n", NA_MAX_NODES);
}

static void on_signal(int sig)
{
    (void)sig;
    agent.stop = 1;
}

static k8s_client *make_client(const char *kubeconfig)
{
    k8s_config_opts co = { .kubeconfig = kubeconfig, .allow_in_cluster = true };
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

static void default_program(char *out, size_t cap)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) { snprintf(out, cap, "godis-standin"); return; }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) *slash = '\0';
    if (snprintf(out, cap, "kbzjung359/godis=%s/godis-standin", self) >= (int)cap)
        snprintf(out, cap, "kbzjung359/godis=godis-standin");
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

static int parse_int(const char *s, int lo, int hi, const char *flag)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi) {
        fprintf(stderr, "node-agent: %s %s: want an integer in %d..%d\n", flag, s, lo, hi);
        exit(GD_EXIT_FATAL_CONFIG);
    }
    return (int)v;
}

int main(int argc, char **argv)
{
    na_agent *a = &agent;
    const char *kubeconfig = NULL, *ip_base = "127.0.1.0", *prefix = "node-";
    int nnodes = 3, level = GD_LOG_INFO;
    char err[512] = "", def[NA_PATH_MAX + 64];
    a->heartbeat_s = 10;
    a->taints = cJSON_CreateArray();
    a->last_hosts[0] = '\x01';   /* never equal to a real block: the first sync writes */
    default_program(def, sizeof def);
    na_image_map_add(&a->images, def, err, sizeof err);
    const char *tmp = getenv("TMPDIR");
    snprintf(a->state_dir, sizeof a->state_dir, "%s/godis-node-agent-%d", tmp && *tmp ? tmp : "/tmp", (int)getuid());
    enum { O_KUBE = 1, O_NODES, O_PREFIX, O_IPBASE, O_IMAGE, O_STATE, O_HOSTS, O_TAINT, O_HB, O_LOG, O_HELP };
    static const struct option opts[] = {
        { "kubeconfig", required_argument, 0, O_KUBE }, { "nodes", required_argument, 0, O_NODES },
        { "node-prefix", required_argument, 0, O_PREFIX }, { "ip-base", required_argument, 0, O_IPBASE },
        { "image-map", required_argument, 0, O_IMAGE }, { "state-dir", required_argument, 0, O_STATE },
        { "hosts-file", required_argument, 0, O_HOSTS }, { "taint", required_argument, 0, O_TAINT },
        { "heartbeat-seconds", required_argument, 0, O_HB }, { "log-level", required_argument, 0, O_LOG },
        { "help", no_argument, 0, O_HELP }, { 0, 0, 0, 0 },
    };
    int o;
    while ((o = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (o) {
        case O_KUBE: kubeconfig = optarg; break;
        case O_NODES: nnodes = parse_int(optarg, 1, NA_MAX_NODES, "--nodes"); break;
        case O_PREFIX: prefix = optarg; break;
        case O_IPBASE: ip_base = optarg; break;
        case O_IMAGE:
            if (na_image_map_add(&a->images, optarg, err, sizeof err) != GD_OK) {
                fprintf(stderr, "node-agent: %s\n", err);
                return GD_EXIT_FATAL_CONFIG;
            }
            break;
        case O_STATE:
            if (snprintf(a->state_dir, sizeof a->state_dir, "%s", optarg) >= (int)sizeof a->state_dir) {
                fprintf(stderr, "node-agent: --state-dir too long\n");
                return GD_EXIT_FATAL_CONFIG;
            }
            break;
        case O_HOSTS: a->hosts_file = optarg; break;
        case O_TAINT: {
            cJSON *t = na_taint_parse(optarg, err, sizeof err);
            if (!t) { fprintf(stderr, "node-agent: %s\n", err); return GD_EXIT_FATAL_CONFIG; }
            cJSON_AddItemToArray(a->taints, t);
            break;
        }
        case O_HB: a->heartbeat_s = parse_int(optarg, 1, 3600, "--heartbeat-seconds"); break;
        case O_LOG:
            if ((level = gd_log_level_parse(optarg)) < 0) {
                fprintf(stderr, "node-agent: --log-level %s: want debug, info, warn or error\n", optarg);
                return GD_EXIT_FATAL_CONFIG;
            }
            break;
        case O_HELP: case 'h': usage(stdout); return GD_EXIT_OK;
        default: usage(stderr); return GD_EXIT_FATAL_CONFIG;
        }
    }
    gd_log_init("node-agent", (gd_log_level)level, 0, 2);
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
    if (optind < argc && strcmp(argv[optind], "set-ready") == 0) {
        if (argc - optind != 3 || (strcmp(argv[optind + 2], "true") && strcmp(argv[optind + 2], "false"))) {
            fprintf(stderr, "node-agent: usage: set-ready NODE true|false\n");
            return GD_EXIT_FATAL_CONFIG;
        }
        a->api = make_client(kubeconfig);
        if (!a->api) return GD_EXIT_FATAL_CONFIG;
        gd_err e = na_node_set_ready(a->api, a->state_dir, argv[optind + 1], strcmp(argv[optind + 2], "true") == 0);
        if (e != GD_OK) fprintf(stderr, "node-agent: set-ready %s: %s\n", argv[optind + 1], gd_strerror(e));
        rc = e == GD_OK ? GD_EXIT_OK : GD_EXIT_FAILURE;
    } else if (optind < argc && strcmp(argv[optind], "run") != 0) {
        fprintf(stderr, "node-agent: unknown command %s (see --help)\n", argv[optind]);
        rc = GD_EXIT_FATAL_CONFIG;
    } else {
        a->api = make_client(kubeconfig);
        rc = a->api ? run(a) : GD_EXIT_FATAL_CONFIG;
    }
    k8s_client_destroy(&a->api);
    na_image_map_free(&a->images);
    na_ipam_free(&a->ipam);
    cJSON_Delete(a->taints);
    return rc;
}
