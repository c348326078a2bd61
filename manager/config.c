/* config.c — flags and YAML file for the manager, from one table of options. */
#include "config_internal.h"
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
#include "gd_domain.h"
#include "k8s_client.h"

/* The flags, bound to one configuration: the parser writes straight into c. */
#define FLAG GD_FLAG
#define STR(n, field, h, ...) FLAG(GD_FLAG_STRING, n, c->field, h, .cap = sizeof c->field, __VA_ARGS__)
size_t mgr_config_bind_flags(mgr_config *c, gd_flag *out)
{
    const gd_flag defs[] = {
        STR("config", config, "YAML file whose keys are these flag names (without --); flags given on the command line win", .metavar = "FILE"),
        STR("kubeconfig", kubeconfig, "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster)", .metavar = "PATH"),
        STR("context", context, "kubeconfig context to use (default: current-context)", .metavar = "NAME"),
        STR("namespace", namespace_, "namespace of the Lease when --leader-elect-resource-namespace is not set (default: the kubeconfig context's)", .metavar = "NS"),
        FLAG(GD_FLAG_BOOL, "leader-elect", &c->leader_elect, "elect one leader among the replicas with a coordination.k8s.io/v1 Lease; without it this manager always leads"),
        FLAG(GD_FLAG_DURATION, "leader-elect-lease-duration", &c->lease_duration_ms, "how long standbys wait after the last observed renewal before taking the lease"),
        FLAG(GD_FLAG_DURATION, "leader-elect-renew-deadline", &c->renew_deadline_ms, "how long the leader keeps trying to renew before it steps down and stops its workers"),
        FLAG(GD_FLAG_DURATION, "leader-elect-retry-period", &c->retry_period_ms, "interval between acquire/renew attempts"),
        STR("leader-elect-resource-name", lease_name, "name of the Lease object", .metavar = "NAME"),
        STR("leader-elect-resource-namespace", lease_namespace, "namespace of the Lease object", .metavar = "NS"),
        STR("leader-elect-identity", identity, "holder identity written into the Lease (default: <hostname>_<random>)", .metavar = "ID"),
        FLAG(GD_FLAG_INT, "workers", &c->workers, "number of worker processes (1..64; 0 with --remote-port-base: only remote workers); shards are spread over them", .metavar = "N", .min = 0, .max = 64),
        FLAG(GD_FLAG_INT, "max-concurrent-reconciles", &c->max_concurrent_reconciles, "reconciler threads per controller in each worker (1..1024)", .metavar = "N", .min = 1, .max = 1024),
        STR("informer-bin", informer_bin, "path of the informer program (default: godis-informer beside this program)", .metavar = "PATH", .no_default = true),
        STR("worker-bin", worker_bin, "path of the worker program (default: godis-worker beside this program)", .metavar = "PATH", .no_default = true),
        STR("informer-kinds", informer_kinds, "comma-separated kinds to run one informer each for (Kind, plural or short name; each kind once)", .metavar = "KINDS"),
        STR("worker-arg", worker_args, "extra flags for every worker, separated by spaces (e.g. \"--reconciler sleepy\"; for tests and benchmarks)", .metavar = "ARGS"),
        STR("runtime-dir", runtime_dir, "private 0700 directory for the ZeroMQ ipc:// endpoints (default: $XDG_RUNTIME_DIR/godis-operator-<pid> or /tmp/godis-operator-<uid>-<pid>)", .metavar = "DIR"),
        FLAG(GD_FLAG_INT, "max-concurrent-rollouts", &c->max_concurrent_rollouts, "at most N GodisClusters per worker roll a changed member template out at once (each worker counts the clusters of the shards it owns, so W workers roll at most W x N); the others wait, still scaling and healing. An operator upgrade that changes the template of many clusters so restarts their members a few clusters at a time (0..10000; 0: no limit)", .metavar = "N", .min = 0, .max = 10000),
        STR("default-godis-image", default_godis_image, "image of the members of GodisClusters without spec.image (default: the workers' own, kbzjung359/godis); a change rolls exactly those clusters, within --max-concurrent-rollouts", .metavar = "IMAGE"),
        STR("cluster-domain", cluster_domain, "the cluster's DNS domain: workers dial a godis member without a pod IP in the cache at <godis>-endpoint.<ns>.svc.<domain>", .metavar = "DOMAIN"),
        STR("health-probe-bind-address", health_addr, "IPv4 host:port serving /healthz and /readyz (\":8081\" = every interface, as a pod needs for the kubelet's probes; \"0\" disables)", .metavar = "ADDR"),
        STR("metrics-bind-address", metrics_addr, "IPv4 host:port serving /metrics (\"0\" disables)", .metavar = "ADDR"),
        STR("webhook-bind-address", webhook_addr, "IPv4 host:port where the eviction webhook (godis-webhook, a supervised child) serves HTTPS POST /eviction (\":9443\" = every interface; \"0\" = no webhook). It registers its ValidatingWebhookConfiguration itself", .metavar = "ADDR"),
        STR("webhook-url", webhook_url, "register the webhook under this URL (https://HOST:PORT/eviction) instead of the Service godis-system/godis-operator-webhook from deploy/ (an API server without Service routing)", .metavar = "URL"),
        STR("webhook-cert-dir", webhook_cert_dir, "the webhook's tls.crt/tls.key (and ca.crt), e.g. a cert-manager Secret; default: a CA and serving certificate generated with OpenSSL, renewed before expiry", .metavar = "DIR"),
        STR("webhook-client-ca", webhook_client_ca, "PEM file: the webhook requires a client certificate it signed (the API server's)", .metavar = "FILE"),
        STR("webhook-bin", webhook_bin, "path of the webhook program (default: godis-webhook beside this program)", .metavar = "PATH", .no_default = true),
        FLAG(GD_FLAG_INT, "remote-port-base", &c->remote_port_base, "take workers from other pods (godis-worker --leader-lease) over tcp:// with CURVE: the control socket on this port, each informer's PUB and snapshot socket on the next ones (1024..65000; 0 = no remote workers)", .metavar = "PORT", .min = 0, .max = 65000),
        STR("remote-address", remote_address, "address the tcp:// endpoints bind and advertise in the Lease (default: $POD_IP)", .metavar = "HOST"),
        STR("curve-server-key", curve_server_key, "CURVE secret key file of the tcp:// endpoints (godis-manager keygen)", .metavar = "FILE"),
        STR("curve-allow", curve_allow, "public keys of the remote workers allowed in, one z85 key per line (re-read when it changes)", .metavar = "FILE"),
        FLAG(GD_FLAG_DURATION, "heartbeat", &c->heartbeat_ms, "interval of PING to workers (10ms..1m); a worker silent for 5 intervals is killed", .min = 10, .max = 60000),
        FLAG(GD_FLAG_DURATION, "shutdown-grace", &c->shutdown_grace_ms, "on shutdown or fencing: time from STOP to SIGKILL of a worker, SIGTERM at half (0s..10m)", .min = 0, .max = 600000),
        STR("log-level", log_level, "debug, info, warn or error", .metavar = "LEVEL"),
        STR("log-format", log_format, "text (key=value) or json", .metavar = "FORMAT"),
    };
    memcpy(out, defs, sizeof defs);
    return sizeof defs / sizeof defs[0];
}

static const char ABOUT[] =
    "Runs the godis operator: elects a leader among the replicas on a Lease, supervises one "
    "informer process per watched kind and the worker processes, spreads the 256 shards of "
    "reconcile keys over the workers, and serves /healthz, /readyz and /metrics.\n\n"
    "Every flag can also be set in the --config YAML file under the same name.";
static const char FOOTER[] =
    "Signals: SIGTERM/SIGINT stop gracefully (workers, then the lease is released, then the "
    "informers); SIGHUP re-reads the configuration and applies a changed --workers.\n\n"
    "Exit codes: 0 clean stop, 1 failure, 2 fatal configuration error (also when a child "
    "exits 2).";

static void make_set(gd_flagset *fs, gd_flag *flags, mgr_config *c)
{
    memset(fs, 0, sizeof *fs);
    fs->prog = "godis-manager";
    fs->usage = "godis-manager [flags]";
    fs->about = ABOUT;
    fs->footer = FOOTER;
    fs->flags = flags;
    fs->nflags = mgr_config_bind_flags(c, flags);
}

void mgr_config_default(mgr_config *c, const char *argv0)
{
    memset(c, 0, sizeof *c);
    c->leader_elect = true;
    c->lease_duration_ms = 15000;
    c->renew_deadline_ms = 10000;
    c->retry_period_ms = 2000;
    snprintf(c->lease_name, sizeof c->lease_name, "godis-operator-leader");
    c->workers = 2;
    c->max_concurrent_reconciles = 4;
    c->max_concurrent_rollouts = 1;
    gd_domain_kind_list(gd_domain_get(), c->informer_kinds, sizeof c->informer_kinds);
    snprintf(c->cluster_domain, sizeof c->cluster_domain, "cluster.local");
    snprintf(c->health_addr, sizeof c->health_addr, "127.0.0.1:8081");
    snprintf(c->metrics_addr, sizeof c->metrics_addr, "127.0.0.1:8080");
    snprintf(c->webhook_addr, sizeof c->webhook_addr, "0");
    c->heartbeat_ms = 1000;
    c->shutdown_grace_ms = 5000;
    snprintf(c->log_level, sizeof c->log_level, "info");
    snprintf(c->log_format, sizeof c->log_format, "text");
    /* children live beside the manager binary unless told otherwise */
    char dir[MGR_STR] = ".";
    char self[MGR_STR];
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
    snprintf(c->webhook_bin, sizeof c->webhook_bin, "%.490s/godis-webhook", dir);
}

static gd_err load_file(mgr_config *c, const char *path, char *err, size_t errlen)
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
    gd_err e = mgr_config_yaml(c, buf, n, path, err, errlen);
    free(buf);
    return e;
}

gd_err mgr_config_yaml(mgr_config *c, const char *yaml, size_t len, const char *source,
                          char *err, size_t errlen)
{
    gd_flagset fs;
    gd_flag flags[MGR_CONFIG_MAX_FLAGS];
    make_set(&fs, flags, c);
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
                if (!gd_flags_find(&fs, v) || !strcmp(v, "config")) {
                    snprintf(err, errlen, "%s: unknown key \"%.100s\" (keys are the flag names, see --help)",
                             source, v);
                    rc = GD_ERR_CONFIG;
                }
                want_key = false;
            } else {
                char where[700];
                snprintf(where, sizeof where, "%s: %s", source, key);
                rc = gd_flags_set(&fs, key, v, where, err, errlen);
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

/* The file applies under the flags: parse the command line once to find --config (and
 * --help, --version and every bad flag), then start again from the defaults, apply the
 * file, and parse the command line over it. */
gd_err mgr_config_parse(mgr_config *c, int argc, char **argv, char *err, size_t errlen)
{
    gd_flagset fs;
    gd_flag flags[MGR_CONFIG_MAX_FLAGS];
    mgr_config defaults = *c;
    make_set(&fs, flags, c);
    switch (gd_flags_parse(&fs, argc, argv, err, errlen)) {
    case GD_FLAGS_HELP: c->help = true; return GD_OK;
    case GD_FLAGS_VERSION: c->version = true; return GD_OK;
    case GD_FLAGS_ERROR: return GD_ERR_CONFIG;
    case GD_FLAGS_OK: break;
    }
    if (c->config[0]) {
        char path[MGR_STR];
        snprintf(path, sizeof path, "%s", c->config);
        *c = defaults;
        snprintf(c->config, sizeof c->config, "%s", path);
        gd_err e = load_file(c, path, err, errlen);
        if (e != GD_OK) return e;
        if (gd_flags_parse(&fs, argc, argv, err, errlen) != GD_FLAGS_OK) return GD_ERR_CONFIG;
    }
    return mgr_config_validate(c, err, errlen);
}

gd_err mgr_config_validate(const mgr_config *c, char *err, size_t errlen)
{
    char why[200], host[128];
    int port;
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
    if (gd_parse_bind_addr(c->webhook_addr, host, sizeof host, &port, why, sizeof why)) {
        snprintf(err, errlen, "--webhook-bind-address: %s", why);
        return GD_ERR_CONFIG;
    }
    if (port == 0 && (c->webhook_url[0] || c->webhook_cert_dir[0] || c->webhook_client_ca[0])) {
        snprintf(err, errlen, "--webhook-url, --webhook-cert-dir and --webhook-client-ca need --webhook-bind-address");
        return GD_ERR_CONFIG;
    }
    if (c->webhook_url[0] && strncmp(c->webhook_url, "https://", 8)) {
        snprintf(err, errlen, "--webhook-url: expected https://HOST:PORT/eviction, got \"%.200s\"", c->webhook_url);
        return GD_ERR_CONFIG;
    }
    if (c->workers == 0 && !c->remote_port_base) {
        snprintf(err, errlen, "--workers: must be between 1 and 64, got 0 (0 only with --remote-port-base)");
        return GD_ERR_CONFIG;
    }
    if (c->remote_port_base && (c->remote_port_base < 1024 || !c->curve_server_key[0] ||
                                !c->curve_allow[0] || c->workers > 32)) {
        snprintf(err, errlen, "--remote-port-base: needs a port of 1024 or more, "
                 "--curve-server-key and --curve-allow (there is no plaintext tcp), and "
                 "--workers of 32 at most");
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
    for (const char *p = c->default_godis_image; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f) {
            snprintf(err, errlen, "--default-godis-image: \"%.60s\" is not an image reference", c->default_godis_image);
            return GD_ERR_CONFIG;
        }
    if (!godis_valid_dns_name(c->cluster_domain)) {
        snprintf(err, errlen, "--cluster-domain: expected a DNS name (letters, digits, '-', '.'), got \"%s\"",
                 c->cluster_domain);
        return GD_ERR_CONFIG;
    }
    return mgr_informer_kinds(c->informer_kinds, NULL, err, errlen);
}

/* Each kind once: two informers for one kind would bind the same endpoints. Kinds may be
 * given as the kind, the plural or a short name ("Pod", "pods", "po"); out gets the kinds
 * as the endpoints and the workers name them. */
gd_err mgr_informer_kinds(const char *list, char (*out)[64], char *err, size_t errlen)
{
    char copy[MGR_STR];
    const char *seen[MGR_MAX_KINDS];
    int n = 0;
    snprintf(copy, sizeof copy, "%s", list);
    if (!copy[0]) {
        snprintf(err, errlen, "--informer-kinds: must name at least one kind");
        return GD_ERR_CONFIG;
    }
    for (char *p = copy, *k; (k = strsep(&p, ",")) != NULL;) {
        const k8s_resource *r = *k ? k8s_resource_lookup(k) : NULL;
        if (!*k) {
            snprintf(err, errlen, "--informer-kinds: empty entry in \"%.200s\"", list);
            return GD_ERR_CONFIG;
        }
        if (!r) {
            snprintf(err, errlen, "--informer-kinds: unknown kind \"%.60s\"", k);
            return GD_ERR_CONFIG;
        }
        for (int i = 0; i < n; i++) {
            if (strcmp(seen[i], r->kind) == 0) {
                snprintf(err, errlen, "--informer-kinds: %s is listed twice (\"%.60s\")", r->kind, k);
                return GD_ERR_CONFIG;
            }
        }
        if (n == MGR_MAX_KINDS) {
            snprintf(err, errlen, "--informer-kinds: more than %d kinds", MGR_MAX_KINDS);
            return GD_ERR_CONFIG;
        }
        if (out) snprintf(out[n], 64, "%s", r->kind);
        seen[n++] = r->kind;
    }
    return GD_OK;
}

void mgr_config_usage(FILE *out)
{
    mgr_config d;
    gd_flagset fs;
    gd_flag flags[MGR_CONFIG_MAX_FLAGS];
    mgr_config_default(&d, NULL);
    make_set(&fs, flags, &d);
    gd_flags_usage(&fs, out);
}
