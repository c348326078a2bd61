/* main.c — bin/godis-webhook: the eviction webhook (seed 003, issue 19). Serves
 * POST /eviction over HTTPS, keeps its certificate fresh (self-made with OpenSSL, or a
 * cert-manager directory it re-reads when the files change) and keeps its
 * ValidatingWebhookConfiguration registered. Normally started by godis-manager
 * (--webhook-bind-address); every replica serves and registers, none needs the lease. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "certs.h"
#include "decide.h"
#include "gd_addr.h"
#include "gd_flags.h"
#include "gd_log.h"
#include "gd_time.h"
#include "handler.h"
#include "k8s_config.h"
#include "register.h"
#include "rotation.h"
#include "server.h"

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { (void)sig; g_stop = 1; }

typedef struct {
    const char *bind, *url, *service, *cert_dir, *client_ca, *config_name, *failure_policy;
    const char *kubeconfig, *context, *log_level, *log_format;
    int service_port;
    int64_t timeout_ms, validity_ms, mark_interval_ms, register_every_ms;
    bool no_register;
    char host[64];
    int port;
    char svc_ns[254], svc_name[254], url_host[256];
} flags;

static const char ABOUT[] =
    "Answers the API server's AdmissionReviews for pods/eviction so that `kubectl drain` never "
    "costs a godis cluster its quorum: a godis member pod is not evicted but marked with "
    "godis.kumkeehyun.github.com/reschedule (the operator adds a new member elsewhere, then "
    "removes this one) and the eviction gets 429 until the pod is gone, then 404; every other "
    "pod is allowed at once. Normally started by godis-manager --webhook-bind-address.";
static const char FOOTER[] =
    "Certificates: with --cert-dir, tls.crt/tls.key (and ca.crt, registered as the caBundle "
    "when present) as a cert-manager Secret holds them, re-read when they change. A new leaf "
    "the registered CA signs is served at once; one from a new ca.crt is served only once the "
    "stored caBundle holds the new CA beside the old one and a settle time (at most 30 s) has "
    "passed, and the old CA leaves the bundle when its certificate expires or 10 minutes after "
    "the switch. Without ca.crt (the caBundle injected by someone else, e.g. cert-manager's "
    "cainjector) or with --no-register, a new pair is served at once: a CA change then leaves "
    "a window in which the API server does not trust the webhook. Without --cert-dir, "
    "a CA and serving certificate are generated with OpenSSL and renewed at two thirds of "
    "--cert-validity: the new CA joins the caBundle first, the new certificate is served once "
    "the stored bundle holds it (and a settle time has passed), the old CA is kept until it "
    "expires.\n\n"
    "Exit codes: 0 after SIGTERM/SIGINT, 1 on a runtime failure, 2 on a configuration error.";

#define FLAG GD_FLAG
#define SECTION GD_FLAG_HEADING
static int parse_flags(int argc, char **argv, flags *f)
{
    memset(f, 0, sizeof *f);
    f->service = "godis-system/godis-operator-webhook";
    f->service_port = 443;
    f->config_name = "godis-operator-eviction";
    f->failure_policy = "Ignore";
    f->timeout_ms = 10000;
    f->validity_ms = 90LL * 24 * 3600 * 1000;
    f->mark_interval_ms = 10000;
    f->register_every_ms = 60000;
    f->log_level = "info";
    f->log_format = "text";
    gd_flag defs[] = {
        SECTION("Serving"),
        FLAG(GD_FLAG_STRING, "bind-address", &f->bind, "IPv4 host:port to serve HTTPS on (\":9443\" = every interface, as a pod needs)", .metavar = "ADDR"),
        FLAG(GD_FLAG_STRING, "cert-dir", &f->cert_dir, "directory with tls.crt and tls.key (and ca.crt), e.g. a cert-manager Certificate's Secret; default: self-managed certificates", .metavar = "DIR"),
        FLAG(GD_FLAG_DURATION, "cert-validity", &f->validity_ms, "self-managed: validity of the generated CA and serving certificate, renewed at two thirds (10s..8760h)", .min = 10000, .max = 8760LL * 3600 * 1000),
        FLAG(GD_FLAG_STRING, "client-ca", &f->client_ca, "PEM file: require a client certificate it signed (the API server's, configured in its AdmissionConfiguration kubeconfig)", .metavar = "FILE"),
        FLAG(GD_FLAG_DURATION, "mark-interval", &f->mark_interval_ms, "at most one member of a cluster is marked for a move per interval (0s..1h)", .min = 0, .max = 3600000),
        SECTION("Registration (ValidatingWebhookConfiguration)"),
        FLAG(GD_FLAG_STRING, "configuration-name", &f->config_name, "name of the ValidatingWebhookConfiguration created or updated", .metavar = "NAME"),
        FLAG(GD_FLAG_STRING, "url", &f->url, "register this URL (https://HOST:PORT/eviction) instead of the Service; for an API server without Service routing", .metavar = "URL"),
        FLAG(GD_FLAG_STRING, "service", &f->service, "register the Service NAMESPACE/NAME (path /eviction) when --url is not given", .metavar = "NS/NAME"),
        FLAG(GD_FLAG_INT, "service-port", &f->service_port, "the Service's port (1..65535)", .metavar = "PORT", .min = 1, .max = 65535),
        FLAG(GD_FLAG_STRING, "failure-policy", &f->failure_policy, "Ignore or Fail: what the API server does when the webhook does not answer (deploy/README.md explains the default)", .metavar = "POLICY"),
        FLAG(GD_FLAG_DURATION, "timeout", &f->timeout_ms, "timeoutSeconds of the webhook (1s..30s)", .min = 1000, .max = 30000),
        FLAG(GD_FLAG_BOOL, "no-register", &f->no_register, "serve only; the configuration is managed elsewhere"),
        SECTION("Where the API server is"),
        FLAG(GD_FLAG_STRING, "kubeconfig", &f->kubeconfig, "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)", .metavar = "PATH"),
        FLAG(GD_FLAG_STRING, "context", &f->context, "kubeconfig context (default: current-context)", .metavar = "NAME"),
        SECTION("Logging"),
        FLAG(GD_FLAG_FUNC, "log-level", NULL, "debug, info, warn or error", .metavar = "LEVEL", .fn = gd_flags_log_level, .ud = &f->log_level, .def = "info"),
        FLAG(GD_FLAG_FUNC, "log-format", NULL, "text or json", .metavar = "FORMAT", .fn = gd_flags_log_format, .ud = &f->log_format, .def = "text"),
    };
    gd_flagset fs = {.prog = "godis-webhook", .usage = "godis-webhook --bind-address HOST:PORT [flags]",
                     .about = ABOUT, .footer = FOOTER, .flags = defs,
                     .nflags = sizeof defs / sizeof defs[0]};
    int rc = gd_flags_main(&fs, argc, argv);
    if (rc >= 0) return rc;
    char why[256];
    if (!f->bind) return gd_flags_fail(&fs, "--bind-address is required");
    if (gd_parse_bind_addr(f->bind, f->host, sizeof f->host, &f->port, why, sizeof why) != GD_OK || f->port == 0)
        return gd_flags_fail(&fs, "--bind-address: %s", f->port == 0 && !why[0] ? "a port is required" : why);
    if (f->url && !wh_url_host(f->url, f->url_host, sizeof f->url_host))
        return gd_flags_fail(&fs, "--url: expected https://HOST:PORT/eviction, got \"%s\"", f->url);
    const char *slash = strchr(f->service, '/');
    if (!slash || slash == f->service || !slash[1] || (size_t)(slash - f->service) >= sizeof f->svc_ns ||
        strlen(slash + 1) >= sizeof f->svc_name)
        return gd_flags_fail(&fs, "--service: expected NAMESPACE/NAME, got \"%s\"", f->service);
    snprintf(f->svc_ns, sizeof f->svc_ns, "%.*s", (int)(slash - f->service), f->service);
    snprintf(f->svc_name, sizeof f->svc_name, "%s", slash + 1);
    if (strcmp(f->failure_policy, "Ignore") && strcmp(f->failure_policy, "Fail"))
        return gd_flags_fail(&fs, "--failure-policy: expected Ignore or Fail, got \"%s\"", f->failure_policy);
    gd_log_init("webhook", (gd_log_level)gd_log_level_parse(f->log_level),
                strcmp(f->log_format, "json") == 0, 2);
    return -1;
}

/* The serving certificate: from --cert-dir, or generated for the names the API server
 * will dial (the --url host, or the Service's DNS names). */
static gd_err get_certs(const flags *f, wh_certs *c, char *why, size_t whylen)
{
    if (f->cert_dir) return wh_certs_load_dir(f->cert_dir, c, why, whylen);
    char a[600], b[600], d[600];
    snprintf(a, sizeof a, "%s.%s", f->svc_name, f->svc_ns);
    snprintf(b, sizeof b, "%s.%s.svc", f->svc_name, f->svc_ns);
    snprintf(d, sizeof d, "%s.%s.svc.cluster.local", f->svc_name, f->svc_ns);
    const char *svc_hosts[] = {b, f->svc_name, a, d};
    const char *url_hosts[] = {f->url_host};
    return f->url ? wh_certs_generate(url_hosts, 1, f->validity_ms / 1000, c, why, whylen)
                  : wh_certs_generate(svc_hosts, 4, f->validity_ms / 1000, c, why, whylen);
}

static int64_t dir_stamp(const char *dir)
{
    int64_t s = 0;
    const char *names[] = {"tls.crt", "tls.key", "ca.crt"};
    for (int i = 0; i < 3; i++) {
        char p[1024];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        if (stat(p, &st) == 0) s += (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec + st.st_ino;
    }
    return s;
}

typedef struct {
    flags *f;
    k8s_client *client;
    wh_server *srv;
    wh_certs certs;
    wh_rotation rot;          /* a renewal (self-managed) or a CA change (--cert-dir) under way */
    char *drop_ca;            /* a retired CA the next registration leaves out */
    bool registered;          /* the current CA is in the configuration */
    wh_retry reg;             /* the next registration: periodic, or a retry after a failure */
    wh_retry publish;         /* the renewal's CA publish (rot_publish) */
} webhook;

static wh_reg_opts reg_opts(const flags *f)
{
    return (wh_reg_opts){.name = f->config_name, .url = f->url, .svc_ns = f->svc_ns,
                         .svc_name = f->svc_name, .svc_port = f->service_port,
                         .failure_policy = f->failure_policy, .timeout_s = (int)(f->timeout_ms / 1000)};
}

static void try_register(webhook *w, int64_t now)
{
    if (w->f->no_register || !wh_retry_due(&w->reg, now)) return;
    wh_reg_opts ro = reg_opts(w->f);
    ro.drop_ca = w->drop_ca;
    char why[700];
    bool changed = false;
    if (wh_register(w->client, &ro, w->certs.ca_pem, &changed, why, sizeof why) != GD_OK) {
        wh_retry_failed(&w->reg, now);
        GD_WARN("cannot register the webhook configuration; retrying", "error", why);
        return;
    }
    if (changed || !w->registered)
        GD_INFO("webhook configuration registered", "name", w->f->config_name,
                "client", w->f->url ? w->f->url : w->f->service, "changed", changed ? "true" : "false");
    if (w->drop_ca) GD_INFO("webhook configuration registered without the retired CA");
    free(w->drop_ca);
    w->drop_ca = NULL;
    w->registered = true;
    wh_retry_done(&w->reg);
    w->reg.next_ms = now + w->f->register_every_ms;
}

/* Serves new certificates on the same server: no connection is touched (cert_slot.h). */
static bool switch_certs(webhook *w, wh_certs *fresh)
{
    if (!wh_server_set_certs(w->srv, fresh)) return false;
    wh_certs_free(&w->certs);
    w->certs = *fresh;
    memset(fresh, 0, sizeof *fresh);
    return true;
}

/* Renewal (self-managed) and CA changes (--cert-dir) in the order of rotation.h: the new
 * CA into the caBundle (beside the old), read back, a settle time, only then the new
 * certificate served. */
static gd_err rot_generate(void *ud, wh_certs *out)
{
    webhook *w = ud;
    char why[300];
    gd_err e = get_certs(w->f, out, why, sizeof why);
    if (e != GD_OK) GD_ERROR("cannot renew the webhook certificate", "error", why);
    return e;
}

static bool rot_publish(void *ud, const char *ca_pem)
{
    webhook *w = ud;
    int64_t now = gd_mono_ms();
    if (!wh_retry_due(&w->publish, now)) return false;     /* a later pass tries again */
    wh_reg_opts ro = reg_opts(w->f);
    char why[700];
    bool changed = false;
    if (wh_register(w->client, &ro, ca_pem, &changed, why, sizeof why) != GD_OK) {
        char wait[24];
        snprintf(wait, sizeof wait, "%lld", (long long)wh_retry_failed(&w->publish, now));
        GD_WARN("cannot register the renewed webhook CA; retrying", "error", why, "retry_in_ms", wait);
        return false;
    }
    wh_retry_done(&w->publish);
    return true;
}

static char *rot_read_bundle(void *ud)
{
    webhook *w = ud;
    return wh_registered_bundle(w->client, w->f->config_name);
}

static bool rot_serve(void *ud, wh_certs *fresh)
{
    webhook *w = ud;
    if (!switch_certs(w, fresh)) return false;
    char na[32];
    snprintf(na, sizeof na, "%lld", (long long)w->certs.not_after_s);
    if (w->f->cert_dir) {
        GD_INFO("webhook certificates reloaded", "dir", w->f->cert_dir, "not_after_unix", na);
        w->reg.next_ms = 0;           /* a ca.crt that is new to the bundle (or first there) */
    } else {
        GD_INFO("webhook certificate renewed", "not_after_unix", na);
        /* the new CA is already in the bundle; the periodic registration now merges it */
    }
    return true;
}

/* --cert-dir: the directory's pair, whole (a half-written update is read again later). */
static gd_err rot_load(void *ud, wh_certs *out)
{
    webhook *w = ud;
    char why[300];
    gd_err e = wh_certs_load_dir(w->f->cert_dir, out, why, sizeof why);
    if (e == GD_OK && (e = wh_certs_check(out, why, sizeof why)) != GD_OK) wh_certs_free(out);
    if (e != GD_OK)
        GD_WARN("cannot reload the certificates (keeping the ones served)", "dir", w->f->cert_dir,
                "error", why);
    return e;
}

/* stamp: the cert dir's change stamp (--cert-dir only). */
static void renew(webhook *w, int64_t now, int64_t stamp)
{
    int64_t wall = (int64_t)time(NULL);
    wh_rotation_ops ops = {.generate = w->f->cert_dir ? NULL : rot_generate, .publish = rot_publish,
                           .read_bundle = rot_read_bundle, .serve = rot_serve, .load = rot_load,
                           .ud = w};
    if (w->f->cert_dir)
        wh_rotation_dir_step(&w->rot, &w->certs, stamp, wall, w->f->no_register, &ops);
    else
        wh_rotation_step(&w->rot, &w->certs, wall, w->f->no_register, &ops);
    /* step 6: the old CA's time is up, a registration now drops it from the bundle */
    if (wh_rotation_old_ca_expired(&w->rot, wall)) {
        free(w->drop_ca);
        w->drop_ca = wh_rotation_take_retired_ca(&w->rot);
        w->reg.next_ms = now;
    }
}

int main(int argc, char **argv)
{
    static flags f;
    int rc = parse_flags(argc, argv, &f);
    if (rc >= 0) return rc;
    char err[512] = "";
    k8s_config_opts co = {.kubeconfig = f.kubeconfig, .context = f.context, .allow_in_cluster = true};
    k8s_config *cfg = NULL, *reg_cfg = NULL;
    if (k8s_config_load(&co, &cfg, err, sizeof err) != GD_OK ||
        k8s_config_load(&co, &reg_cfg, err, sizeof err) != GD_OK) {
        fprintf(stderr, "godis-webhook: %s\n", err[0] ? err : "cannot load kubeconfig");
        return GD_EXIT_FATAL_CONFIG;
    }
    k8s_client_opts ko;
    k8s_client_opts_default(&ko);
    ko.user_agent = "godis-operator (webhook)";
    ko.request_timeout_ms = 4000;     /* answer well within the webhook's own timeout */
    /* Every review costs a GET (a mark a PATCH) and comes from the API server itself, as
     * fast as evictions arrive: a drain of 100 pods is 100 reviews at once, then one per pod
     * every 5 s. The default 50 qps bucket queued them (p99 0.8 s in the webhook under
     * load); this one lets a 100-pod burst through and still bounds a runaway. */
    ko.qps = 200;
    ko.burst = 300;
    ko.max_retries_429 = 0;
    static webhook w;
    static wh_handler h;
    w.f = &f;
    h.client = k8s_client_new(&cfg, &ko);
    /* Registration has a client of its own, with the default 30 s request timeout: the
     * reviews' 4 s is for answering within the webhook's timeout, but a registration should
     * wait for a slow API server (at start-up under load), not time out and back off. */
    k8s_client_opts ro;
    k8s_client_opts_default(&ro);
    ro.user_agent = ko.user_agent;
    w.client = k8s_client_new(&reg_cfg, &ro);
    h.lim = wh_limiter_new(f.mark_interval_ms, 4096);
    if (!w.client || !h.client || !h.lim) {
        fprintf(stderr, "godis-webhook: cannot create the Kubernetes client\n");
        return GD_EXIT_FAILURE;
    }
    char *client_ca = NULL;
    if (f.client_ca && !(client_ca = wh_read_text(f.client_ca))) {
        fprintf(stderr, "godis-webhook: --client-ca: cannot read %s\n", f.client_ca);
        return GD_EXIT_FATAL_CONFIG;
    }
    /* the stamp before the read: a change in between is read again, never missed */
    int64_t stamp = f.cert_dir ? dir_stamp(f.cert_dir) : 0, next_dir_check = 0;
    if (get_certs(&f, &w.certs, err, sizeof err) != GD_OK) {
        fprintf(stderr, "godis-webhook: %s\n", err);
        return GD_EXIT_FATAL_CONFIG;
    }
    wh_server_opts so = {.host = f.host, .port = f.port, .client_ca = client_ca,
                         .review = wh_handle_review, .ud = &h};
    if (!(w.srv = wh_server_start(&so, &w.certs))) return GD_EXIT_FAILURE;
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    char port[16];
    snprintf(port, sizeof port, "%d", wh_server_port(w.srv));
    GD_INFO("webhook serving", "address", f.host, "port", port, "path", "/eviction",
            "certificates", f.cert_dir ? f.cert_dir : "self-managed");
    w.rot.dir_stamp = stamp;          /* the pair read at start is the one served */
    while (!g_stop) {
        int64_t now = gd_mono_ms();
        if (f.cert_dir && now >= next_dir_check) {
            stamp = dir_stamp(f.cert_dir);
            next_dir_check = now + 2000;
        }
        try_register(&w, now);
        renew(&w, now, stamp);
        struct timespec ts = {0, 200 * 1000000L};
        nanosleep(&ts, NULL);
    }
    GD_INFO("webhook stopping");
    wh_server_stop(&w.srv);
    wh_certs_free(&w.certs);
    wh_rotation_free(&w.rot);
    free(w.drop_ca);
    wh_limiter_destroy(&h.lim);
    k8s_client_destroy(&w.client);
    k8s_client_destroy(&h.client);
    free(client_ca);
    return GD_EXIT_OK;
}
