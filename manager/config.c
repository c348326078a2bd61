/* config.c — flags and YAML file for the manager, from one table of options. */
#include "config.h"
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>
#include <arpa/inet.h>
#include "gd_log.h"
#include "godis_client.h"

typedef enum { OPT_STR, OPT_BOOL, OPT_INT, OPT_DUR } opt_type;

typedef struct {
    const char *name;
    opt_type type;
    size_t off, cap;                    /* cap: string capacity */
    const char *help;
} opt_def;

#define S(field, name, help) {name, OPT_STR, offsetof(gd_mgr_config, field), \
                              sizeof(((gd_mgr_config *)0)->field), help}
#define B(field, name, help) {name, OPT_BOOL, offsetof(gd_mgr_config, field), 0, help}
#define I(field, name, help) {name, OPT_INT, offsetof(gd_mgr_config, field), 0, help}
#define D(field, name, help) {name, OPT_DUR, offsetof(gd_mgr_config, field), 0, help}

static const opt_def OPTS[] = {
    S(config, "config", "YAML file whose keys are these flag names (without --); flags given on the command line win"),
    S(kubeconfig, "kubeconfig", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster)"),
    S(context, "context", "kubeconfig context to use (default: current-context)"),
    S(namespace_, "namespace", "namespace of the Lease when --leader-elect-resource-namespace is not set (default: the kubeconfig context's)"),
    B(leader_elect, "leader-elect", "elect one leader among the replicas with a coordination.k8s.io/v1 Lease; without it this manager always leads"),
    D(lease_duration_ms, "leader-elect-lease-duration", "how long standbys wait after the last observed renewal before taking the lease"),
    D(renew_deadline_ms, "leader-elect-renew-deadline", "how long the leader keeps trying to renew before it steps down and stops its workers"),
    D(retry_period_ms, "leader-elect-retry-period", "interval between acquire/renew attempts"),
    S(lease_name, "leader-elect-resource-name", "name of the Lease object"),
    S(lease_namespace, "leader-elect-resource-namespace", "namespace of the Lease object"),
    S(identity, "leader-elect-identity", "holder identity written into the Lease (default: <hostname>_<random>)"),
    I(workers, "workers", "number of worker processes (1..64); shards are spread over them"),
    I(max_concurrent_reconciles, "max-concurrent-reconciles", "reconciler threads per controller in each worker (1..1024)"),
    S(informer_bin, "informer-bin", "path of the informer program (default: godis-informer beside this program)"),
    S(worker_bin, "worker-bin", "path of the worker program (default: godis-worker beside this program)"),
    S(informer_kinds, "informer-kinds", "comma-separated kinds to run informers for"),
    S(worker_args, "worker-arg", "extra flags for every worker, separated by spaces (e.g. \"--reconciler sleepy\"; for tests and benchmarks)"),
    S(runtime_dir, "runtime-dir", "private 0700 directory for the ZeroMQ ipc:// endpoints (default: $XDG_RUNTIME_DIR/godis-operator-<pid> or /tmp/godis-operator-<uid>-<pid>)"),
    S(cluster_domain, "cluster-domain", "the cluster's DNS domain: workers dial a godis member without a pod IP in the cache at <godis>-endpoint.<ns>.svc.<domain>"),
    S(health_addr, "health-probe-bind-address", "IPv4 host:port serving /healthz and /readyz (\":8081\" = every interface, as a pod needs for the kubelet's probes; \"0\" disables)"),
    S(metrics_addr, "metrics-bind-address", "IPv4 host:port serving /metrics (\"0\" disables)"),
    D(heartbeat_ms, "heartbeat", "interval of PING to workers; a worker silent for 5 intervals is killed"),
    D(shutdown_grace_ms, "shutdown-grace", "on shutdown or fencing: time from STOP to SIGKILL of a worker (SIGTERM at half)"),
    S(log_level, "log-level", "debug, info, warn or error"),
    S(log_format, "log-format", "text (key=value) or json"),
};
#define NOPTS (sizeof OPTS / sizeof OPTS[0])

void gd_mgr_config_default(gd_mgr_config *c, const char *argv0)
{
    memset(c, 0, sizeof *c);
    c->leader_elect = true;
    c->lease_duration_ms = 15000;
    c->renew_deadline_ms = 10000;
    c->retry_period_ms = 2000;
    snprintf(c->lease_name, sizeof c->lease_name, "godis-operator-leader");
    c->workers = 2;
    c->max_concurrent_reconciles = 4;
    snprintf(c->informer_kinds, sizeof c->informer_kinds,
             "GodisCluster,Godis,ConfigMap,ReplicaSet,Service,PersistentVolumeClaim,Pod,Node");
    snprintf(c->cluster_domain, sizeof c->cluster_domain, "cluster.local");
    snprintf(c->health_addr, sizeof c->health_addr, "127.0.0.1:8081");
    snprintf(c->metrics_addr, sizeof c->metrics_addr, "127.0.0.1:8080");
    c->heartbeat_ms = 1000;
    c->shutdown_grace_ms = 5000;
    snprintf(c->log_level, sizeof c->log_level, "info");
    snprintf(c->log_format, sizeof c->log_format, "text");
    /* children live beside the manager binary unless told otherwise */
    char dir[GD_MGR_STR] = ".";
    char self[GD_MGR_STR];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) { *slash = '\0'; snprintf(dir, sizeof dir, "%s", self); }
    } else if (argv0 && strrchr(argv0, '/')) {
        snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(argv0, '/') - argv0), argv0);
    }
    snprintf(c->informer_bin, sizeof c->informer_bin, "%.490s/godis-informer", dir);
    snprintf(c->worker_bin, sizeof c->worker_bin, "%.490s/godis-worker", dir);
}

gd_err gd_parse_duration_ms(const char *s, int64_t *out)
{
    if (!s || !*s) return GD_ERR_PARSE;
    int64_t total = 0;
    const char *p = s;
    while (*p) {
        if (!isdigit((unsigned char)*p)) return GD_ERR_PARSE;
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (errno || end == p) return GD_ERR_PARSE;
        p = end;
        double mult;
        if (strncmp(p, "ms", 2) == 0) { mult = 1; p += 2; }
        else if (*p == 's') { mult = 1000; p++; }
        else if (*p == 'm') { mult = 60000; p++; }
        else if (*p == 'h') { mult = 3600000; p++; }
        else return GD_ERR_PARSE;       /* a unit is required, as in Go */
        double ms = v * mult;
        if (ms > 1e12 || total + (int64_t)ms > (int64_t)1e12) return GD_ERR_PARSE;
        total += (int64_t)ms;
    }
    *out = total;
    return GD_OK;
}

gd_err gd_parse_bind_addr(const char *s, char *host, size_t hostcap, int *port,
                          char *why, size_t whylen)
{
    if (strcmp(s, "0") == 0) {
        if (hostcap) host[0] = '\0';
        *port = 0;
        return GD_OK;
    }
    const char *colon = strrchr(s, ':');
    if (!colon) {
        snprintf(why, whylen, "expected host:port, got \"%s\"", s);
        return GD_ERR_CONFIG;
    }
    size_t hl = (size_t)(colon - s);
    char h[128];
    if (hl >= sizeof h || hl >= hostcap) {
        snprintf(why, whylen, "host too long");
        return GD_ERR_CONFIG;
    }
    memcpy(h, s, hl);
    h[hl] = '\0';
    char *end;
    errno = 0;
    long p = strtol(colon + 1, &end, 10);
    if (errno || *end || end == colon + 1 || p < 1 || p > 65535) {
        snprintf(why, whylen, "bad port in \"%s\"", s);
        return GD_ERR_CONFIG;
    }
    if (strcmp(h, "localhost") == 0) snprintf(h, sizeof h, "127.0.0.1");
    if (h[0] == '\0') snprintf(h, sizeof h, "0.0.0.0");     /* ":8080": every interface */
    struct in_addr a;
    if (inet_pton(AF_INET, h, &a) != 1) {
        snprintf(why, whylen, "\"%s\" is not an IPv4 address", h);
        return GD_ERR_CONFIG;
    }
    snprintf(host, hostcap, "%s", h);
    *port = (int)p;
    return GD_OK;
}

static const opt_def *find_opt(const char *name, size_t len)
{
    for (size_t i = 0; i < NOPTS; i++)
        if (strlen(OPTS[i].name) == len && strncmp(OPTS[i].name, name, len) == 0) return &OPTS[i];
    return NULL;
}

/* Sets one option from text. where: "--workers" or "file.yaml: workers". */
static gd_err set_opt(gd_mgr_config *c, const opt_def *o, const char *val, const char *where,
                      char *err, size_t errlen)
{
    char *base = (char *)c + o->off;
    switch (o->type) {
    case OPT_STR:
        if (strlen(val) >= o->cap) {
            snprintf(err, errlen, "%s: value too long (max %zu bytes)", where, o->cap - 1);
            return GD_ERR_CONFIG;
        }
        snprintf(base, o->cap, "%s", val);
        return GD_OK;
    case OPT_BOOL:
        if (!strcmp(val, "true") || !strcmp(val, "1")) { *(bool *)base = true; return GD_OK; }
        if (!strcmp(val, "false") || !strcmp(val, "0")) { *(bool *)base = false; return GD_OK; }
        snprintf(err, errlen, "%s: expected true or false, got \"%s\"", where, val);
        return GD_ERR_CONFIG;
    case OPT_INT: {
        char *end;
        errno = 0;
        long v = strtol(val, &end, 10);
        if (errno || end == val || *end || v < INT_MIN || v > INT_MAX) {
            snprintf(err, errlen, "%s: expected an integer, got \"%s\"", where, val);
            return GD_ERR_CONFIG;
        }
        *(int *)base = (int)v;
        return GD_OK;
    }
    case OPT_DUR:
        if (gd_parse_duration_ms(val, (int64_t *)base) != GD_OK) {
            snprintf(err, errlen, "%s: expected a duration like 15s or 500ms, got \"%s\"", where, val);
            return GD_ERR_CONFIG;
        }
        return GD_OK;
    }
    return GD_ERR_CONFIG;
}

static gd_err load_file(gd_mgr_config *c, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "--config: cannot open %s: %s", path, strerror(errno));
        return GD_ERR_CONFIG;
    }
    char *buf = malloc(1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20), f) : 0;
    bool toolarge = buf && n == (1 << 20);
    fclose(f);
    if (!buf || toolarge) {
        snprintf(err, errlen, "%s: %s", path, buf ? "file too large (max 1 MiB)" : "out of memory");
        free(buf);
        return GD_ERR_CONFIG;
    }
    gd_err e = gd_mgr_config_yaml(c, buf, n, path, err, errlen);
    free(buf);
    return e;
}

gd_err gd_mgr_config_yaml(gd_mgr_config *c, const char *yaml, size_t len, const char *source,
                          char *err, size_t errlen)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        snprintf(err, errlen, "%s: cannot initialise the YAML parser", source);
        return GD_ERR_CONFIG;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)yaml, len);
    gd_err rc = GD_OK;
    int depth = 0;                      /* mappings entered */
    char key[128] = "";
    bool want_key = true, done = false;
    while (!done && rc == GD_OK) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            snprintf(err, errlen, "%s: line %zu: %s", source, p.problem_mark.line + 1,
                     p.problem ? p.problem : "invalid YAML");
            rc = GD_ERR_CONFIG;
            break;
        }
        switch (ev.type) {
        case YAML_STREAM_END_EVENT: done = true; break;
        case YAML_MAPPING_START_EVENT:
            if (depth++ > 0) {
                snprintf(err, errlen, "%s: %s: expected a scalar value, got a mapping", source, key);
                rc = GD_ERR_CONFIG;
            }
            break;
        case YAML_MAPPING_END_EVENT: depth--; break;
        case YAML_SEQUENCE_START_EVENT:
            snprintf(err, errlen, "%s: %s: expected a scalar value, got a list", source,
                     depth ? key : "(top level)");
            rc = GD_ERR_CONFIG;
            break;
        case YAML_SCALAR_EVENT: {
            const char *v = (const char *)ev.data.scalar.value;
            if (depth == 0) {
                if (ev.data.scalar.length == 0) break;      /* empty document */
                snprintf(err, errlen, "%s: expected a mapping of flag names to values", source);
                rc = GD_ERR_CONFIG;
            } else if (want_key) {
                snprintf(key, sizeof key, "%s", v);
                const opt_def *o = find_opt(v, strlen(v));
                if (!o || !strcmp(v, "config")) {
                    snprintf(err, errlen, "%s: unknown key \"%.100s\" (keys are the flag names, see --help)",
                             source, v);
                    rc = GD_ERR_CONFIG;
                }
                want_key = false;
            } else {
                char where[700];
                snprintf(where, sizeof where, "%s: %s", source, key);
                rc = set_opt(c, find_opt(key, strlen(key)), v, where, err, errlen);
                want_key = true;
            }
            break;
        }
        case YAML_ALIAS_EVENT:
            snprintf(err, errlen, "%s: aliases are not supported", source);
            rc = GD_ERR_CONFIG;
            break;
        default: break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    return rc;
}

gd_err gd_mgr_config_parse(gd_mgr_config *c, int argc, char **argv, char *err, size_t errlen)
{
    /* pass 1: --config (and --help), so the file applies before the other flags */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 1; i < argc; i++) {
            const char *a = argv[i];
            if (!strcmp(a, "--help") || !strcmp(a, "-h")) { c->help = true; return GD_OK; }
            if (strncmp(a, "--", 2) != 0) {
                snprintf(err, errlen, "unexpected argument \"%.200s\" (flags start with --)", a);
                return GD_ERR_CONFIG;
            }
            const char *name = a + 2, *eq = strchr(name, '=');
            size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
            const opt_def *o = find_opt(name, nlen);
            if (!o) {
                snprintf(err, errlen, "unknown flag --%.*s (see --help)", (int)(nlen > 100 ? 100 : nlen), name);
                return GD_ERR_CONFIG;
            }
            const char *val = eq ? eq + 1 : NULL;
            if (!val && o->type == OPT_BOOL) val = "true";
            if (!val) {
                if (i + 1 >= argc) {
                    snprintf(err, errlen, "--%s needs a value", o->name);
                    return GD_ERR_CONFIG;
                }
                val = argv[++i];
            }
            bool is_config = !strcmp(o->name, "config");
            if (pass == 0 && !is_config) continue;
            if (pass == 1 && is_config) continue;
            char where[128];
            snprintf(where, sizeof where, "--%s", o->name);
            gd_err e = set_opt(c, o, val, where, err, errlen);
            if (e != GD_OK) return e;
            if (is_config && (e = load_file(c, c->config, err, errlen)) != GD_OK) return e;
        }
    }
    return gd_mgr_config_validate(c, err, errlen);
}

gd_err gd_mgr_config_validate(const gd_mgr_config *c, char *err, size_t errlen)
{
    char why[200], host[128];
    int port;
    if (c->workers < 1 || c->workers > 64) {
        snprintf(err, errlen, "--workers: must be between 1 and 64 (got %d)", c->workers);
        return GD_ERR_CONFIG;
    }
    if (c->max_concurrent_reconciles < 1 || c->max_concurrent_reconciles > 1024) {
        snprintf(err, errlen, "--max-concurrent-reconciles: must be between 1 and 1024 (got %d)",
                 c->max_concurrent_reconciles);
        return GD_ERR_CONFIG;
    }
    if (c->lease_duration_ms < 1000 || c->lease_duration_ms % 1000) {
        snprintf(err, errlen, "--leader-elect-lease-duration: must be a whole number of seconds, at least 1s");
        return GD_ERR_CONFIG;
    }
    if (c->renew_deadline_ms <= 0 || c->retry_period_ms <= 0) {
        snprintf(err, errlen, "--leader-elect-renew-deadline and --leader-elect-retry-period must be greater than zero");
        return GD_ERR_CONFIG;
    }
    if (c->lease_duration_ms <= c->renew_deadline_ms) {
        snprintf(err, errlen, "--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline");
        return GD_ERR_CONFIG;
    }
    if ((double)c->renew_deadline_ms <= 1.2 * (double)c->retry_period_ms) {
        snprintf(err, errlen, "--leader-elect-renew-deadline must be greater than 1.2 x --leader-elect-retry-period");
        return GD_ERR_CONFIG;
    }
    if (!c->lease_name[0]) {
        snprintf(err, errlen, "--leader-elect-resource-name must not be empty");
        return GD_ERR_CONFIG;
    }
    if (gd_parse_bind_addr(c->health_addr, host, sizeof host, &port, why, sizeof why)) {
        snprintf(err, errlen, "--health-probe-bind-address: %s", why);
        return GD_ERR_CONFIG;
    }
    if (gd_parse_bind_addr(c->metrics_addr, host, sizeof host, &port, why, sizeof why)) {
        snprintf(err, errlen, "--metrics-bind-address: %s", why);
        return GD_ERR_CONFIG;
    }
    if (c->heartbeat_ms < 10 || c->heartbeat_ms > 60000) {
        snprintf(err, errlen, "--heartbeat: must be between 10ms and 60s");
        return GD_ERR_CONFIG;
    }
    if (c->shutdown_grace_ms < 0 || c->shutdown_grace_ms > 600000) {
        snprintf(err, errlen, "--shutdown-grace: must be between 0s and 10m");
        return GD_ERR_CONFIG;
    }
    if (gd_log_level_parse(c->log_level) < 0) {
        snprintf(err, errlen, "--log-level: expected debug, info, warn or error, got \"%s\"", c->log_level);
        return GD_ERR_CONFIG;
    }
    if (strcmp(c->log_format, "text") && strcmp(c->log_format, "json")) {
        snprintf(err, errlen, "--log-format: expected text or json, got \"%s\"", c->log_format);
        return GD_ERR_CONFIG;
    }
    if (!c->informer_kinds[0]) {
        snprintf(err, errlen, "--informer-kinds: must name at least one kind");
        return GD_ERR_CONFIG;
    }
    if (!godis_valid_dns_name(c->cluster_domain)) {
        snprintf(err, errlen, "--cluster-domain: expected a DNS name (letters, digits, '-', '.'), got \"%s\"",
                 c->cluster_domain);
        return GD_ERR_CONFIG;
    }
    return GD_OK;
}

void gd_mgr_config_usage(FILE *out)
{
    gd_mgr_config d;
    gd_mgr_config_default(&d, NULL);
    fprintf(out,
            "Usage: godis-manager [flags]\n\n"
            "Runs the godis operator: elects a leader among the replicas on a Lease, supervises one\n"
            "informer process per watched kind and the worker processes, spreads the %d shards of\n"
            "reconcile keys over the workers, and serves /healthz, /readyz and /metrics.\n\n"
            "Every flag can also be set in the --config YAML file under the same name.\n"
            "Signals: SIGTERM/SIGINT stop gracefully (workers, then the lease is released, then the\n"
            "informers); SIGHUP re-reads the configuration and applies a changed --workers.\n"
            "Exit codes: 0 clean stop, 1 failure, 2 fatal configuration error (also when a child\n"
            "exits 2).\n\nFlags:\n", 256);
    for (size_t i = 0; i < NOPTS; i++) {
        const opt_def *o = &OPTS[i];
        const char *base = (const char *)&d + o->off;
        char def[GD_MGR_STR + 8] = "";
        switch (o->type) {
        case OPT_STR: if (*base) snprintf(def, sizeof def, "%s", base); break;
        case OPT_BOOL: snprintf(def, sizeof def, "%s", *(const bool *)base ? "true" : "false"); break;
        case OPT_INT: snprintf(def, sizeof def, "%d", *(const int *)base); break;
        case OPT_DUR: {
            int64_t ms = *(const int64_t *)base;
            if (ms % 1000) snprintf(def, sizeof def, "%lldms", (long long)ms);
            else snprintf(def, sizeof def, "%llds", (long long)(ms / 1000));
            break;
        }
        }
        const char *arg = o->type == OPT_BOOL ? "" : o->type == OPT_INT ? " int"
                        : o->type == OPT_DUR ? " duration" : " string";
        fprintf(out, "  --%s%s\n      %s", o->name, arg, o->help);
        if (def[0] && strcmp(o->name, "informer-bin") && strcmp(o->name, "worker-bin"))
            fprintf(out, " (default %s)", def);
        fputc('\n', out);
    }
    fprintf(out, "  --help\n      print this help and exit\n");
}
