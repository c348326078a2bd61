/* godisctl — the project's own small kubectl: apply/delete manifests, get objects, and
 * watch over GodisClusters (status, events, follow, scale). It needs nothing but common/,
 * so `make demo`, the tests and a fresh machine never depend on a kubectl binary.
 *
 * Installed (or linked) as `kubectl-godis`, kubectl runs it as `kubectl godis …`: the same
 * program then speaks as "kubectl godis" and offers the four commands a kubectl user lacks
 * (status, scale, events, follow); kubectl itself does apply/get/delete. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "godisctl.h"
#include "gd_flags.h"
#include "gd_log.h"
#include "k8s_config.h"

typedef struct {
    const char *name, *args, *help;
    int min, max;                 /* positionals after the command */
    bool plugin;                  /* offered by `kubectl godis` */
} command;

static const command COMMANDS[] = {
    {"status", "[NAME]", "per GodisCluster: phase, conditions, and each member's id, Godis, pod, node, Ready and last change (all clusters of the namespace without NAME; -A: of every namespace)", 0, 1, true},
    {"scale", "NAME REPLICAS", "set spec.replicas (1..9, what the CRD allows)", 2, 2, true},
    {"events", "[NAME]", "Events of the namespace (or about NAME), oldest first", 0, 1, true},
    {"follow", "NAME REPLICAS [SECONDS]", "print every status change and Event of GodisCluster NAME until it runs REPLICAS Ready members; exit 1 when --timeout (or SECONDS) passes first", 2, 3, true},
    {"clusters", "", "table of GodisClusters: phase, replicas, ready, members", 0, 0, false},
    {"apply", "-f FILE|DIR|-...", "create or update every object of the files (a directory: its .yaml, .yml and .json files; -R: and below); CRDs are waited for until Established", 0, 0, false},
    {"delete", "-f FILE|DIR|-...", "delete every object of the files (missing ones are fine)", 0, 0, false},
    {"get", "KIND [NAME]", "print the object (or the list) as JSON", 1, 2, false},
};
#define NCOMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

static gd_err add_file(void *ud, const char *v, char *why, size_t cap)
{
    ctl *x = ud;
    if (x->nfiles >= (int)(sizeof x->files / sizeof x->files[0])) {
        snprintf(why, cap, "at most %zu files", sizeof x->files / sizeof x->files[0]);
        return GD_ERR_CONFIG;
    }
    x->files[x->nfiles++] = v;
    return GD_OK;
}

static char about[4096];

static void build_about(bool plugin)
{
    size_t n = (size_t)snprintf(about, sizeof about, "%s", plugin
        ? "GodisCluster tools for kubectl (godis-operator's godisctl, installed as kubectl-godis).\n\nCommands:\n"
        : "The godis-operator's small kubectl.\n\nCommands:\n");
    for (size_t i = 0; i < NCOMMANDS && n < sizeof about; i++) {
        if (plugin && !COMMANDS[i].plugin) continue;
        n += (size_t)snprintf(about + n, sizeof about - n, "  %s%s%s\n      %s\n", COMMANDS[i].name,
                              COMMANDS[i].args[0] ? " " : "", COMMANDS[i].args, COMMANDS[i].help);
    }
}

static const command *find_command(const char *name, bool plugin)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!strcmp(COMMANDS[i].name, name) && (!plugin || COMMANDS[i].plugin)) return &COMMANDS[i];
    return NULL;
}

static bool is_plugin(const char *argv0)
{
    const char *base = strrchr(argv0, '/');
    return strcmp(base ? base + 1 : argv0, "kubectl-godis") == 0;
}

/* Everything about the command line, before any file or kubeconfig is read. */
static int check_args(const gd_flagset *fs, const ctl *x, const command *cmd, int nargs,
                      char **args)
{
    if (nargs < cmd->min || nargs > cmd->max)
        return gd_flags_fail(fs, "%s takes %s%s", cmd->name, cmd->args[0] ? cmd->args : "no arguments",
                             nargs > cmd->max && !strcmp(cmd->args, "-f FILE|DIR|-...")
                                 ? " (give each file with -f)" : "");
    bool files = !strcmp(cmd->name, "apply") || !strcmp(cmd->name, "delete");
    if (files && x->nfiles == 0)
        return gd_flags_fail(fs, "%s needs -f FILE (a file, a directory, or - for stdin)", cmd->name);
    if (!files && (x->nfiles || x->recursive))
        return gd_flags_fail(fs, "-f and -R are for apply and delete, not %s", cmd->name);
    if (x->all_ns && strcmp(cmd->name, "status") && strcmp(cmd->name, "clusters") &&
        strcmp(cmd->name, "events"))
        return gd_flags_fail(fs, "-A is for status, clusters and events, not %s", cmd->name);
    if (!strcmp(cmd->name, "get") && !k8s_resource_lookup(args[0]))
        return gd_flags_fail(fs, "get: unknown kind \"%s\"", args[0]);
    return 0;
}

static int connect_api(ctl *x, const char *kubeconfig, const char *context, const char *ns)
{
    k8s_config_opts co = {.kubeconfig = kubeconfig, .context = context, .allow_in_cluster = true};
    k8s_config *cfg = NULL;
    char err[1024];
    if (k8s_config_load(&co, &cfg, err, sizeof err) != GD_OK) {
        fprintf(stderr, "%s: %s\n", x->prog, err);
        return GD_EXIT_FATAL_CONFIG;
    }
    static char ns_buf[254];
    snprintf(ns_buf, sizeof ns_buf, "%s", ns && *ns ? ns : cfg->namespace_ ? cfg->namespace_ : "default");
    x->ns = ns_buf;
    k8s_client_opts copts;
    k8s_client_opts_default(&copts);
    copts.user_agent = "godisctl";
    copts.request_timeout_ms = 20000;   /* a person is waiting */
    x->c = k8s_client_new(&cfg, &copts);
    if (!x->c) {
        fprintf(stderr, "%s: cannot create the Kubernetes client\n", x->prog);
        return GD_EXIT_FAILURE;
    }
    return 0;
}

#define FLAG GD_FLAG

int main(int argc, char **argv)
{
    bool plugin = is_plugin(argv[0]);
    ctl x = {.prog = plugin ? "kubectl godis" : "godisctl", .timeout_ms = 120000};
    const char *kubeconfig = NULL, *context = NULL, *ns = NULL;
    gd_log_init("godisctl", GD_LOG_WARN, 0, 2);
    gd_flag defs[] = {
        FLAG(GD_FLAG_STRING, "kubeconfig", &kubeconfig, "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)", .metavar = "PATH"),
        FLAG(GD_FLAG_STRING, "context", &context, "kubeconfig context (default: current-context)", .metavar = "NAME"),
        FLAG(GD_FLAG_STRING, "namespace", &ns, "namespace (default: the context's)", .shorthand = 'n', .metavar = "NS"),
        FLAG(GD_FLAG_BOOL, "all-namespaces", &x.all_ns, "status, clusters, events: every namespace", .shorthand = 'A'),
        FLAG(GD_FLAG_FUNC, "filename", NULL, "apply, delete: a manifest file, a directory of them, or - for stdin; repeatable", .shorthand = 'f', .metavar = "FILE", .fn = add_file, .ud = &x, .hidden = plugin),
        FLAG(GD_FLAG_BOOL, "recursive", &x.recursive, "apply, delete: also the directories below a -f directory", .shorthand = 'R', .hidden = plugin),
        FLAG(GD_FLAG_DURATION, "timeout", &x.timeout_ms, "follow: how long to wait (1s..24h)", .min = 1000, .max = 86400000),
    };
    build_about(plugin);
    gd_flagset fs = {.prog = x.prog,
                     .usage = plugin ? "kubectl godis COMMAND [ARGS] [flags]" : "godisctl COMMAND [ARGS] [flags]",
                     .about = about,
                     .footer = "Flags may come before or after the command; -- ends them (for a NAME that "
                               "starts with -). Numbers are checked against what the CRD allows before "
                               "anything is sent.\n\nExit codes: 0 ok, 1 the API server refused or "
                               "failed (its status and message are printed), 2 bad usage or configuration.",
                     .flags = defs, .nflags = sizeof defs / sizeof defs[0], .allow_args = true};
    int rc = gd_flags_main(&fs, argc, argv);
    if (rc >= 0) return rc;
    if (fs.nargs == 0) return gd_flags_fail(&fs, "no command given");
    const command *cmd = find_command(fs.args[0], plugin);
    if (!cmd) {
        if (plugin && find_command(fs.args[0], false))
            return gd_flags_fail(&fs, "\"%s\" is godisctl's; kubectl godis has status, scale, events "
                                 "and follow (use kubectl %s)", fs.args[0], fs.args[0]);
        return gd_flags_fail(&fs, "unknown command \"%s\"", fs.args[0]);
    }
    char **args = fs.args + 1;
    int nargs = fs.nargs - 1, replicas = 0;
    if ((rc = check_args(&fs, &x, cmd, nargs, args)))
        return rc;
    if ((!strcmp(cmd->name, "scale") || !strcmp(cmd->name, "follow")) &&
        !gdctl_replicas(&x, cmd->name, args[1], &replicas))
        return GD_EXIT_FATAL_CONFIG;
    if (!strcmp(cmd->name, "follow") && nargs == 3) {
        int64_t s;
        if (gd_parse_int(args[2], 1, 86400, &s) != GD_OK)
            return gd_flags_fail(&fs, "follow: SECONDS: expected an integer between 1 and 86400, got \"%s\"", args[2]);
        x.timeout_ms = s * 1000;
    }
    if ((!strcmp(cmd->name, "apply") || !strcmp(cmd->name, "delete")) &&
        (rc = gdctl_load_manifests(&x, cmd->name)))
        return rc;
    if ((rc = connect_api(&x, kubeconfig, context, ns)))
        goto out;
    if (!strcmp(cmd->name, "apply")) rc = gdctl_apply(&x);
    else if (!strcmp(cmd->name, "delete")) rc = gdctl_delete(&x);
    else if (!strcmp(cmd->name, "get")) rc = gdctl_get(&x, args[0], nargs > 1 ? args[1] : NULL);
    else if (!strcmp(cmd->name, "clusters")) rc = gdctl_clusters(&x);
    else if (!strcmp(cmd->name, "status")) rc = gdctl_status(&x, nargs ? args[0] : NULL);
    else if (!strcmp(cmd->name, "events")) rc = gdctl_events(&x, nargs ? args[0] : NULL);
    else if (!strcmp(cmd->name, "follow")) rc = gdctl_follow(&x, args[0], replicas);
    else rc = gdctl_scale(&x, args[0], replicas);
out:
    k8s_client_destroy(&x.c);
    cJSON_Delete(x.docs);
    cJSON_Delete(x.doc_files);
    return rc;
}
