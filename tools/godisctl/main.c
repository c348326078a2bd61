/* godisctl — the project's own small kubectl: apply/delete manifests, get objects, and
 * follow a GodisCluster as it changes. It needs nothing but common/, so `make demo`, the
 * tests and a fresh machine never depend on a kubectl binary being installed. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "godisctl.h"
#include "gd_log.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: godisctl [--kubeconfig PATH] [--context NAME] [-n NAMESPACE] COMMAND ...\n"
        "\n"
        "commands:\n"
        "  apply -f FILE...            create or update every object in the YAML files\n"
        "                              (CRDs are waited for until Established)\n"
        "  delete -f FILE...           delete every object in the YAML files (missing ones are fine)\n"
        "  get KIND [NAME]             print the object (or the list) as JSON\n"
        "  clusters                    table of GodisClusters: phase, replicas, ready, members\n"
        "  events [NAME]               Events of the namespace (or about NAME), oldest first\n"
        "  follow NAME REPLICAS [SECS] print every status change and Event of GodisCluster NAME\n"
        "                              until it runs REPLICAS Ready members (exit 1 on timeout)\n"
        "  scale NAME REPLICAS         set spec.replicas\n"
        "\n"
        "options:\n"
        "  --kubeconfig PATH   kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)\n"
        "  --context NAME      kubeconfig context (default: current-context)\n"
        "  -n, --namespace NS  namespace (default: the context's namespace)\n"
        "  -h, --help          this text\n"
        "exit codes: 0 ok, 1 failure, 2 bad usage or configuration\n");
}

int main(int argc, char **argv)
{
    gdctl_opts o = {0};
    static const struct option longs[] = {
        {"kubeconfig", required_argument, NULL, 'k'}, {"context", required_argument, NULL, 'c'},
        {"namespace", required_argument, NULL, 'n'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int ch;
    gd_log_init("godisctl", GD_LOG_WARN, 0, 2);
    while ((ch = getopt_long(argc, argv, "+n:h", longs, NULL)) != -1) {
        switch (ch) {
        case 'k': o.kubeconfig = optarg; break;
        case 'c': o.context = optarg; break;
        case 'n': o.ns = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return 2;
    }
    return gdctl_run(&o, argc - optind, argv + optind);
}
