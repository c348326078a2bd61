/* main.c — godis-worker: flags → worker_run (worker.c). */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "control.h"
#include "gd_err.h"
#include "gd_hoptrace.h"
#include "gd_log.h"
#include "godis_client.h"
#include "k8s_client.h"
#include "reconciler.h"
#include "worker.h"

static void usage(FILE *out)
{
    fputs(
        "Usage: godis-worker [flags]\n"
        "\n"
        "Runs reconcilers for the shards it owns: subscribes to the informers' streams,\n"
        "keeps a cache replica of its shards, maps events to reconcile keys, and serves them\n"
        "from client-go style workqueues with MaxConcurrentReconciles threads per controller.\n"
        "Started by godis-manager (managed mode: shards and the write lease come over GDW1),\n"
        "or alone for tests (standalone mode: --shards, never fenced).\n"
        "\n"
        "Flags:\n"
        "  --index N                     worker index given by the manager (default -1)\n"
        "  --control-endpoint EP         the manager's GDW1 ROUTER, e.g. ipc:///run/x/control;\n"
        "                                without it the worker runs standalone\n"
        "  --runtime-dir DIR             informers at ipc://DIR/<Kind>.pub and .snap\n"
        "  --informer-endpoints SPEC     instead of --runtime-dir, only these kinds:\n"
        "                                \"Kind=PUB,SNAP;Kind=PUB,SNAP\" (ipc:// only)\n"
        "  --shards LIST                 standalone: shards to own, e.g. \"0-255\" (default),\n"
        "                                \"3,17\" or \"all\"\n"
        "  --max-concurrent-reconciles N reconcile threads per controller (default 1)\n"
        "  --queue-rate-limits SPEC      per-controller workqueue rate limiter, client-go's\n"
        "                                MaxOf(per-key exponential, overall token bucket):\n"
        "                                \"base-ms=5,max-ms=1000000,qps=10,burst=100\" (defaults;\n"
        "                                any subset; qps=0 disables the bucket)\n"
        "  --heartbeat-ms MS             manager heartbeat; silent 3x: HELLO again, 5x: exit 1\n"
        "                                (default 1000)\n"
        "  --kube-api-qps N              the API client's rate limit, requests/s (default 50;\n"
        "                                -1: none, the API server's priority and fairness\n"
        "                                then being the only limit)\n"
        "  --kube-api-burst N            ... and its burst (default 100)\n"
        "  --kubeconfig PATH             kubeconfig for API writes (else in-cluster/$KUBECONFIG)\n"
        "  --context NAME                kubeconfig context\n"
        "  --manager-identity ID         the Lease identity of the manager that runs this\n"
        "                                worker; API requests then carry the User-Agent\n"
        "                                \"godis-operator (worker; manager=ID)\", so the API\n"
        "                                server's audit log names the manager of every write\n"
        "  --cluster-domain DOMAIN       the cluster's DNS domain: a member without a pod IP in\n"
        "                                the cache is dialled at\n"
        "                                <godis>-endpoint.<ns>.svc.DOMAIN (default cluster.local)\n"
        "  --reconciler NAME             reconciler set (default godis):\n",
        out);
    for (const gd_reconciler_set *s = gd_reconciler_first(); s; s = s->next)
        fprintf(out, "                                  %-8s %s\n", s->name, s->help);
    fputs(
        "  --reconciler-arg STRING       options for the reconciler set (test sets:\n"
        "                                \"record=<file>,sleep_ms=<n>\")\n"
        "  --stop-grace-ms MS            on SIGTERM, how long in-flight reconciles may run\n"
        "                                (default 4000)\n"
        "  --log-level LEVEL             debug|info|warn|error (default info)\n"
        "  --log-format FORMAT           text|json (default text)\n"
        "  --help                        this text\n"
        "\n"
        "Exit codes: 0 stopped, 1 failure (restart me), 2 fatal configuration.\n",
        out);
}

static int fatal(const char *msg, const char *detail)
{
    fprintf(stderr, "godis-worker: %s%s%s\n", msg, detail ? ": " : "", detail ? detail : "");
    return GD_EXIT_FATAL_CONFIG;
}

static bool parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

enum {
    OPT_INDEX = 1000, OPT_CONTROL, OPT_RUNDIR, OPT_ENDPOINTS, OPT_SHARDS, OPT_MCR, OPT_HB,
    OPT_KUBECONFIG, OPT_CONTEXT, OPT_RECONCILER, OPT_RECARG, OPT_GRACE, OPT_LEVEL, OPT_FORMAT,
    OPT_HELP, OPT_RATE, OPT_MGRID, OPT_QPS, OPT_BURST, OPT_DOMAIN,
};

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"index", required_argument, NULL, OPT_INDEX},
        {"control-endpoint", required_argument, NULL, OPT_CONTROL},
        {"runtime-dir", required_argument, NULL, OPT_RUNDIR},
        {"informer-endpoints", required_argument, NULL, OPT_ENDPOINTS},
        {"shards", required_argument, NULL, OPT_SHARDS},
        {"max-concurrent-reconciles", required_argument, NULL, OPT_MCR},
        {"heartbeat-ms", required_argument, NULL, OPT_HB},
        {"kubeconfig", required_argument, NULL, OPT_KUBECONFIG},
        {"context", required_argument, NULL, OPT_CONTEXT},
        {"reconciler", required_argument, NULL, OPT_RECONCILER},
        {"reconciler-arg", required_argument, NULL, OPT_RECARG},
        {"stop-grace-ms", required_argument, NULL, OPT_GRACE},
        {"log-level", required_argument, NULL, OPT_LEVEL},
        {"log-format", required_argument, NULL, OPT_FORMAT},
        {"queue-rate-limits", required_argument, NULL, OPT_RATE},
        {"manager-identity", required_argument, NULL, OPT_MGRID},
        {"kube-api-qps", required_argument, NULL, OPT_QPS},
        {"kube-api-burst", required_argument, NULL, OPT_BURST},
        {"cluster-domain", required_argument, NULL, OPT_DOMAIN},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    static worker_opts o;
    worker_opts_default(&o);
    const char *shards = NULL, *endpoints = NULL, *level = "info", *format = "text";
    long v;
    int c;
    bool reconciler_given = false;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case OPT_INDEX:
            if (!parse_int(optarg, 0, 100000, &v))
                return fatal("--index wants a number >= 0", optarg);
            o.index = (int)v;
            break;
        case OPT_CONTROL: o.control_endpoint = optarg; break;
        case OPT_RUNDIR: o.runtime_dir = optarg; break;
        case OPT_ENDPOINTS: endpoints = optarg; break;
        case OPT_SHARDS: shards = optarg; break;
        case OPT_MCR:
            if (!parse_int(optarg, 1, 1024, &v))
                return fatal("--max-concurrent-reconciles wants 1..1024", optarg);
            o.max_concurrent = (int)v;
            break;
        case OPT_HB:
            if (!parse_int(optarg, 10, 600000, &v))
                return fatal("--heartbeat-ms wants 10..600000", optarg);
            o.heartbeat_ms = (int)v;
            break;
        case OPT_KUBECONFIG: o.kubeconfig = optarg; break;
        case OPT_CONTEXT: o.context = optarg; break;
        case OPT_RECONCILER:
            o.reconciler = optarg;
            reconciler_given = true;
            break;
        case OPT_RECARG: o.reconciler_arg = optarg; break;
        case OPT_MGRID:
            if (!k8s_user_agent_word_ok(optarg))
                return fatal("--manager-identity wants 1..253 visible ASCII characters "
                             "without ( ) ; \\", optarg);
            o.manager_identity = optarg;
            break;
        case OPT_GRACE:
            if (!parse_int(optarg, 0, 3600000, &v))
                return fatal("--stop-grace-ms wants 0..3600000", optarg);
            o.stop_grace_ms = v;
            break;
        case OPT_RATE: {
            char why[160];
            if (worker_rate_limits_parse(&o, optarg, why, sizeof why) != GD_OK)
                return fatal("--queue-rate-limits", why);
            break;
        }
        case OPT_QPS:
            if (!parse_int(optarg, -1, 100000, &v) || v == 0)
                return fatal("--kube-api-qps wants 1..100000, or -1 for no client-side limit", optarg);
            o.kube_api_qps = (double)v;
            break;
        case OPT_BURST:
            if (!parse_int(optarg, 1, 100000, &v))
                return fatal("--kube-api-burst wants 1..100000", optarg);
            o.kube_api_burst = (int)v;
            break;
        case OPT_DOMAIN:
            if (!godis_valid_dns_name(optarg))
                return fatal("--cluster-domain wants a DNS name (letters, digits, '-', '.')", optarg);
            o.cluster_domain = optarg;
            break;
        case OPT_LEVEL: level = optarg; break;
        case OPT_FORMAT: format = optarg; break;
        case OPT_HELP: usage(stdout); return GD_EXIT_OK;
        default:
            return fatal("unknown flag or missing value (see --help)",
                         optind > 0 && optind <= argc ? argv[optind - 1] : NULL);
        }
    }
    if (optind < argc)
        return fatal("unexpected argument", argv[optind]);
    int lvl = gd_log_level_parse(level);
    if (lvl < 0)
        return fatal("--log-level wants debug|info|warn|error", level);
    if (strcmp(format, "text") != 0 && strcmp(format, "json") != 0)
        return fatal("--log-format wants text|json", format);
    gd_log_init("worker", (gd_log_level)lvl, strcmp(format, "json") == 0, 2);
    gd_hoptrace_init("worker");

    char why[200] = "";
    if (endpoints && o.runtime_dir)
        return fatal("give --runtime-dir or --informer-endpoints, not both", NULL);
    if (endpoints) {
        if (worker_endpoints_parse(&o, endpoints, why, sizeof why) != GD_OK)
            return fatal("--informer-endpoints", why);
    } else if (o.runtime_dir) {
        if (worker_endpoints_from_dir(&o, o.runtime_dir) != GD_OK)
            return fatal("--runtime-dir: path too long", o.runtime_dir);
    } else {
        return fatal("need --runtime-dir or --informer-endpoints", NULL);
    }
    if (o.control_endpoint) {
        if (shards)
            return fatal("--shards is for standalone mode; the manager assigns shards", NULL);
        if (strncmp(o.control_endpoint, "ipc://", 6) != 0)
            return fatal("--control-endpoint must be ipc:// (tcp needs CURVE keys)",
                         o.control_endpoint);
    } else if (gdw_parse_shards(shards ? shards : "all", o.shards, &o.nshards, why,
                                sizeof why) != GD_OK) {
        return fatal("--shards", why);
    }
    if (!gd_reconciler_find(o.reconciler)) {
        /* Until the godis reconcilers are linked in, a manager-started worker (no
         * --reconciler flag) runs the no-op set rather than refusing to start. */
        if (!reconciler_given && gd_reconciler_find("noop")) {
            gd_log(GD_LOG_WARN, "the godis reconcilers are not built in: running noop", NULL);
            o.reconciler = "noop";
        } else {
            return fatal("unknown --reconciler (see --help)", o.reconciler);
        }
    }
    return worker_run(&o);
}
