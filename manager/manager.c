/* manager.c — the manager's main loop.
 *
 * Every iteration: reap children, follow the leadership state (acquire → start workers,
 * lose or fail to renew → fence), hand out shards, heartbeat the workers, ask informers for
 * STATS, tick the process table, then wait on the sockets for at most 100 ms. Leadership
 * itself is decided on the election thread; this loop only reads its status, and fences on
 * its own clock too, so a renewal stuck in a request cannot keep workers running past the
 * renew deadline.
 *
 * Shutdown order (SIGTERM, or a child that exited with the fatal code 2): workers first
 * (STOP, then TERM, then KILL), then the lease is released (so a standby takes over at
 * once, never while our workers might still write), then the informers. */
#include "manager.h"
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <zmq.h>
#include "control.h"
#include "gd_domain.h"
#include "gd_log.h"
#include "gd_metrics.h"
#include "gd_time.h"
#include "gd_version.h"
#include "http.h"
#include "k8s_client.h"
#include "leaderelection.h"
#include "leaselock.h"
#include "promtext.h"
#include "remote.h"
#include "rundir.h"
#include "shards.h"
#include "statsclient.h"
#include "supervisor.h"

volatile sig_atomic_t mgr_sig_term, mgr_sig_hup, mgr_sig_chld;

#define MAX_KINDS MGR_MAX_KINDS
#define MISSED_PINGS 5

typedef struct {
    bool hello;             /* connection accepted, shards may be assigned */
    bool stopping;          /* STOP sent / being killed: waiting for the reap */
    bool retiring;          /* scaled away: shards are being revoked before STOP */
    bool killed;            /* SIGKILLed for missing heartbeats */
    char *metrics;          /* last PONG text */
} worker_t;

typedef struct {
    char kind[64];
    mgr_proc *proc;
    mgr_stats *stats;
} informer_t;

typedef struct {
    mgr_config cfg;
    int argc;
    char **argv;
    char rundir[200];
    bool rundir_made;
    void *zctx;
    mgr_control *ctl;
    mgr_supervisor *sup;
    mgr_shards shards;
    k8s_client *client;
    mgr_leaselock *lock;
    mgr_le *le;
    pthread_t le_th;
    bool le_running;
    mgr_lease_watch *watch;
    char identity[MGR_LE_HOLDER_MAX];    /* Lease identity ("" without leader election) */
    mgr_http *http_health, *http_metrics;
    mgr_remote *remote;     /* NULL: no remote workers (PROTOCOL.md §3) */

    worker_t w[MGR_SHARDS_MAX_WORKERS];
    int want_workers;
    informer_t inf[MAX_KINDS];
    int ninf;

    bool leading;           /* workers may run */
    uint64_t renewals_sent;
    int64_t lease_deadline_wall, next_ping_ms, nolead_next_lease_ms;
    int phase;              /* 0 run, 1 stopping workers, 2 stopping informers, 3 done */
    int exit_code;
    uint64_t fencings, heartbeat_kills, leaderships;
    int64_t lead_since_ms;  /* first assignment waits for every worker's HELLO (or 2 s) */
    int wake_fd;            /* eventfd the election thread pokes */

    pthread_mutex_t pub_mu; /* what the HTTP thread reads */
    char *pub_metrics;
    bool pub_ready;
    char pub_ready_msg[200];
    int64_t pub_loop_ms;
} mgr_t;

/* ---- small helpers ---- */


static int64_t fence_grace_ms(const mgr_t *m)
{
    /* workers must be gone before another manager can take the lease */
    int64_t g = m->cfg.shutdown_grace_ms;
    int64_t room = (m->cfg.lease_duration_ms - m->cfg.renew_deadline_ms) * 4 / 5;
    return m->cfg.leader_elect && room < g ? room : g;
}

/* The informers' socket files, before mgr_rundir_remove: an informer killed after the grace
 * period (SIGKILL) could not unlink its own, and none may be left behind, whoever made the
 * directory. */
static void unlink_endpoints(mgr_t *m)
{
    if (!m->rundir[0]) return;
    char p[300];
    for (int i = 0; i < m->ninf; i++) {
        snprintf(p, sizeof p, "%s/%s.pub", m->rundir, m->inf[i].kind);
        unlink(p);
        snprintf(p, sizeof p, "%s/%s.snap", m->rundir, m->inf[i].kind);
        unlink(p);
    }
}

/* Appends the flags every child gets. */
static int common_args(mgr_t *m, const char **a, int n)
{
    if (m->cfg.kubeconfig[0]) { a[n++] = "--kubeconfig"; a[n++] = m->cfg.kubeconfig; }
    if (m->cfg.context[0]) { a[n++] = "--context"; a[n++] = m->cfg.context; }
    a[n++] = "--log-level"; a[n++] = m->cfg.log_level;
    a[n++] = "--log-format"; a[n++] = m->cfg.log_format;
    return n;
}

static bool add_informers(mgr_t *m)
{
    char kinds[MGR_MAX_KINDS][64] = {{0}}, err[256];
    if (mgr_informer_kinds(m->cfg.informer_kinds, kinds, err, sizeof err) != GD_OK) {
        GD_ERROR("bad --informer-kinds", "error", err);
        return false;
    }
    int nk = 0;
    while (nk < MGR_MAX_KINDS && kinds[nk][0]) nk++;
    gd_err re;
    m->remote = mgr_remote_new(&m->cfg, m->zctx, kinds, nk, m->identity, &re);
    if (re != GD_OK || (m->remote && mgr_control_bind_remote(m->ctl,
            mgr_remote_control_endpoint(m->remote), mgr_remote_keys(m->remote),
            MGR_REMOTE_MISSED_PINGS * m->cfg.heartbeat_ms) != GD_OK))
        return false;
    for (int ki = 0; ki < MGR_MAX_KINDS && kinds[ki][0]; ki++) {
        informer_t *in = &m->inf[m->ninf];
        snprintf(in->kind, sizeof in->kind, "%.63s", kinds[ki]);
        const char *k = in->kind;
        char pub[300], snap[300], name[96];
        snprintf(pub, sizeof pub, "ipc://%s/%s.pub", m->rundir, k);
        snprintf(snap, sizeof snap, "ipc://%s/%s.snap", m->rundir, k);
        snprintf(name, sizeof name, "informer/%s", k);
        const char *a[32];
        int n = 0;
        a[n++] = m->cfg.informer_bin;
        a[n++] = "--kind"; a[n++] = k;
        const gd_watched_kind *wk = gd_domain_kind(gd_domain_get(), k);
        if (wk && wk->label_selected) {
            a[n++] = "--label-selector";
            a[n++] = gd_domain_get()->cluster_label;
        }
        a[n++] = "--pub-endpoint"; a[n++] = pub;
        a[n++] = "--snap-endpoint"; a[n++] = snap;
        if (m->remote) {
            a[n++] = "--tcp-pub-endpoint"; a[n++] = mgr_remote_pub(m->remote, m->ninf);
            a[n++] = "--tcp-snap-endpoint"; a[n++] = mgr_remote_snap(m->remote, m->ninf);
            a[n++] = "--curve-server-key"; a[n++] = m->cfg.curve_server_key;
            a[n++] = "--curve-allow"; a[n++] = m->cfg.curve_allow;
        }
        n = common_args(m, a, n);
        a[n] = NULL;
        in->proc = mgr_sup_add(m->sup, MGR_ROLE_INFORMER, m->ninf, name, (char *const *)a);
        in->stats = mgr_stats_new(m->zctx, snap, 2000);
        if (!in->proc || !in->stats) return false;
        mgr_sup_want(m->sup, in->proc);
        m->ninf++;
    }
    return true;
}

/* The eviction webhook (--webhook-bind-address): one child, started whether or not this
 * manager leads (the API server may call any replica; only the leader's workers act on
 * the marks it sets). */
static bool add_webhook(mgr_t *m)
{
    char host[128], why[128];
    int port = 0;
    if (gd_parse_bind_addr(m->cfg.webhook_addr, host, sizeof host, &port, why, sizeof why) != GD_OK || port == 0)
        return true;
    const char *a[32];
    int n = 0;
    a[n++] = m->cfg.webhook_bin;
    a[n++] = "--bind-address"; a[n++] = m->cfg.webhook_addr;
    if (m->cfg.webhook_url[0]) { a[n++] = "--url"; a[n++] = m->cfg.webhook_url; }
    if (m->cfg.webhook_cert_dir[0]) { a[n++] = "--cert-dir"; a[n++] = m->cfg.webhook_cert_dir; }
    if (m->cfg.webhook_client_ca[0]) { a[n++] = "--client-ca"; a[n++] = m->cfg.webhook_client_ca; }
    n = common_args(m, a, n);
    a[n] = NULL;
    mgr_proc *p = mgr_sup_add(m->sup, MGR_ROLE_WEBHOOK, 0, "webhook", (char *const *)a);
    if (!p) return false;
    mgr_sup_want(m->sup, p);
    return true;
}

static mgr_proc *worker_slot(mgr_t *m, int i)
{
    mgr_proc *p = mgr_sup_find(m->sup, MGR_ROLE_WORKER, i);
    if (p) return p;
    char idx[12], ctl[300], mcr[12], hb[24], name[32];
    snprintf(idx, sizeof idx, "%d", i);
    snprintf(ctl, sizeof ctl, "ipc://%s/control", m->rundir);
    snprintf(mcr, sizeof mcr, "%d", m->cfg.max_concurrent_reconciles);
    snprintf(hb, sizeof hb, "%lldms", (long long)m->cfg.heartbeat_ms);
    snprintf(name, sizeof name, "worker/%d", i);
    const char *a[48];
    int n = 0;
    a[n++] = m->cfg.worker_bin;
    a[n++] = "--index"; a[n++] = idx;
    a[n++] = "--control-endpoint"; a[n++] = ctl;
    a[n++] = "--runtime-dir"; a[n++] = m->rundir;
    a[n++] = "--max-concurrent-reconciles"; a[n++] = mcr;
    a[n++] = "--heartbeat"; a[n++] = hb;
    a[n++] = "--cluster-domain"; a[n++] = m->cfg.cluster_domain;
    n = common_args(m, a, n);
    if (m->identity[0]) { a[n++] = "--manager-identity"; a[n++] = m->identity; }
    char extra[MGR_STR];
    snprintf(extra, sizeof extra, "%s", m->cfg.worker_args);
    for (char *sv = NULL, *t = strtok_r(extra, " ", &sv); t && n < 46; t = strtok_r(NULL, " ", &sv))
        a[n++] = t;
    a[n] = NULL;
    return mgr_sup_add(m->sup, MGR_ROLE_WORKER, i, name, (char *const *)a);
}

/* ---- workers ---- */

/* Asks worker i to stop (STOP, then the supervisor's TERM and KILL). */
static void stop_worker(mgr_t *m, int i, int64_t drain_deadline_wall)
{
    mgr_proc *p = mgr_sup_find(m->sup, MGR_ROLE_WORKER, i);
    worker_t *w = &m->w[i];
    if (w->hello) mgr_control_stop(m->ctl, i, drain_deadline_wall);
    w->stopping = p && p->pid > 0;             /* cleared when the process is reaped */
    w->retiring = false;
    mgr_shards_worker_stopping(&m->shards, i);
    if (p) mgr_sup_stop(m->sup, p, w->hello);   /* no HELLO: nobody to ask, TERM now */
}

static void stop_all_workers(mgr_t *m, const char *why)
{
    int64_t drain = gd_wall_ms() + fence_grace_ms(m) / 2;
    int stopped = 0;
    for (int i = 0; i < mgr_sup_count(m->sup); i++) {
        mgr_proc *p = mgr_sup_at(m->sup, i);
        if (p->role != MGR_ROLE_WORKER) continue;
        if (p->pid > 0) { stop_worker(m, p->index, drain); stopped++; }
        else if (m->phase > 0) mgr_sup_stop(m->sup, p, false);   /* no restart at shutdown */
        /* fencing: a worker between processes holds nothing; it comes back as standby */
    }
    mgr_remote_stop_all(m->remote, m->ctl, &m->shards);
    mgr_shards_freeze(&m->shards, true);
    if (stopped) GD_WARN("stopping every worker", "reason", why);
}

/* Workers run on standbys too (warm: started, connected, no shards, no lease), so a new
 * leader only has to hand out shards and a LEASE. */
static void want_workers(mgr_t *m)
{
    for (int i = 0; i < m->want_workers; i++) {
        mgr_proc *p = worker_slot(m, i);
        if (!p) { GD_ERROR("cannot add a worker slot"); continue; }
        if (m->w[i].stopping) continue;         /* comes back after its reap */
        m->w[i].retiring = false;
        mgr_sup_want(m->sup, p);
    }
}

static void start_leading(mgr_t *m)
{
    want_workers(m);
    for (int i = 0; i < m->want_workers; i++)
        if (m->w[i].hello && !m->w[i].stopping) mgr_shards_worker_up(&m->shards, i);
    mgr_remote_start_leading(m->remote, &m->shards);
    mgr_shards_freeze(&m->shards, false);
    m->renewals_sent = 0;                       /* LEASE to every worker now */
}

static void on_child_exit(void *ud, mgr_proc *p, int status)
{
    (void)status;
    mgr_t *m = ud;
    if (p->role == MGR_ROLE_WORKER) {
        worker_t *w = &m->w[p->index];
        mgr_shards_worker_gone(&m->shards, p->index);   /* its shards are free now */
        mgr_control_forget(m->ctl, p->index);
        w->hello = w->stopping = w->killed = false;
        free(w->metrics);
        w->metrics = NULL;
        /* a worker stopped by fencing comes back as a warm standby worker */
        if (m->phase == 0 && !m->leading && p->index < m->want_workers && !mgr_sup_fatal(m->sup))
            mgr_sup_want(m->sup, p);
    } else if (p->role == MGR_ROLE_INFORMER && p->index < m->ninf) {
        mgr_stats_reset(m->inf[p->index].stats);
    }
}

static bool on_hello(void *ud, int index, int pid)
{
    mgr_t *m = ud;
    mgr_proc *p = mgr_sup_find(m->sup, MGR_ROLE_WORKER, index);
    worker_t *w = &m->w[index];
    if (!p || p->pid != pid || p->state != MGR_PROC_RUNNING || w->stopping)
        return false;
    char idx[12];
    snprintf(idx, sizeof idx, "%d", index);
    bool again = w->hello;
    w->hello = true;
    if (m->leading && !w->retiring) mgr_shards_worker_up(&m->shards, index);
    if (m->leading && m->lease_deadline_wall)
        mgr_control_lease(m->ctl, index, m->lease_deadline_wall);
    if (again) {
        /* the worker lost track of us: repeat what it owns (ASSIGN is cumulative) */
        int owned[GD_NSHARDS];
        int n = mgr_shards_owned_by(&m->shards, index, owned);
        if (n) mgr_control_assign(m->ctl, index, owned, n, "{}", NULL);
    }
    GD_INFO(again ? "worker said HELLO again" : "worker joined", "worker", idx);
    return true;
}

static bool on_remote_hello(void *ud, int index, const char *name)
{
    mgr_t *m = ud;
    return mgr_remote_hello(m->remote, m->ctl, &m->shards, index, name, m->leading,
                            m->lease_deadline_wall);
}

static void on_revoked(void *ud, int index, uint64_t seq, const int *shards, int n,
                       const char *pending)
{
    (void)seq;
    mgr_t *m = ud;
    if (mgr_shards_revoked(&m->shards, index, shards, n, pending) == GD_ERR_PARSE) {
        char idx[12];
        snprintf(idx, sizeof idx, "%d", index);
        GD_WARN("REVOKED carried malformed pending keys; the shards' full sync recovers them",
                "worker", idx);
    }
}

static void on_pong(void *ud, int index, uint64_t seq, const char *metrics, size_t len)
{
    (void)seq;
    mgr_t *m = ud;
    char *t = malloc(len + 1);
    if (!t) return;
    memcpy(t, metrics, len);
    t[len] = '\0';
    free(m->w[index].metrics);
    m->w[index].metrics = t;
    mgr_remote_pong(m->remote, m->ctl, index, m->leading, m->lease_deadline_wall);
}

static bool startup_settled(mgr_t *m, int64_t now)
{
    if (now - m->lead_since_ms >= 2000 || mgr_shards_unowned(&m->shards) < GD_NSHARDS) return true;
    for (int i = 0; i < m->want_workers; i++)
        if (!m->w[i].hello) return false;   /* avoid dealing everything twice at start-up */
    return true;
}

static void send_shard_actions(mgr_t *m)
{
    static mgr_shards_action a[2 * MGR_SHARDS_MAX_WORKERS];
    int n = mgr_shards_plan(&m->shards, a, 2 * MGR_SHARDS_MAX_WORKERS);
    for (int i = 0; i < n; i++) {
        if (a[i].verb == MGR_SHARDS_ASSIGN)
            mgr_control_assign(m->ctl, a[i].worker, a[i].shards, a[i].n, a[i].pending_json, NULL);
        else
            mgr_control_revoke(m->ctl, a[i].worker, a[i].shards, a[i].n, NULL);
    }
    mgr_shards_actions_free(a, n);
    /* retiring workers that hold nothing any more can go */
    for (int i = 0; i < MGR_SHARDS_MAX_WORKERS; i++) {
        if (!m->w[i].retiring || mgr_shards_owned_by(&m->shards, i, NULL) > 0) continue;
        stop_worker(m, i, gd_wall_ms() + fence_grace_ms(m) / 2);
    }
}

static void heartbeat(mgr_t *m, int64_t now)
{
    if (now < m->next_ping_ms) return;
    m->next_ping_ms = now + m->cfg.heartbeat_ms;
    for (int i = 0; i < MGR_SHARDS_MAX_WORKERS; i++) {
        worker_t *w = &m->w[i];
        if (!w->hello || w->killed) continue;
        mgr_control_ping(m->ctl, i);
        if (now - mgr_control_last_heard(m->ctl, i) > MISSED_PINGS * m->cfg.heartbeat_ms) {
            mgr_proc *p = mgr_sup_find(m->sup, MGR_ROLE_WORKER, i);
            char idx[12];
            snprintf(idx, sizeof idx, "%d", i);
            GD_ERROR("worker stopped answering heartbeats: SIGKILL", "worker", idx);
            if (p && p->pid > 0) kill(p->pid, SIGKILL);
            w->killed = true;
            m->heartbeat_kills++;
            mgr_shards_worker_stopping(&m->shards, i);   /* shards move once it is reaped */
        }
    }
}

/* ---- leadership ---- */

static void follow_leadership(mgr_t *m, int64_t now)
{
    bool valid;
    int64_t deadline_wall = 0;
    uint64_t renewals = 0;
    if (m->le) {
        mgr_le_status_t st;
        mgr_le_status(m->le, &st);
        int64_t fence_at = st.leading ? st.valid_from_mono_ms + m->cfg.renew_deadline_ms : 0;
        valid = st.leading && now < fence_at;
        deadline_wall = st.valid_from_wall_ms + m->cfg.renew_deadline_ms;
        renewals = st.renewals;
    } else {
        /* no election: always leading; the LEASE deadline still bounds a hung manager */
        valid = true;
        if (now >= m->nolead_next_lease_ms) {
            m->nolead_next_lease_ms = now + m->cfg.retry_period_ms;
            m->renewals_sent = 0;
        }
        deadline_wall = gd_wall_ms() + m->cfg.renew_deadline_ms;
        renewals = 1;
    }
    if (m->phase > 0) valid = false;
    if (valid && !m->leading) {
        m->leading = true;
        m->leaderships++;
        GD_INFO("leading: handing shards and the lease to the workers");
        m->lead_since_ms = now;
        start_leading(m);
    } else if (!valid && m->leading) {
        m->leading = false;
        m->lease_deadline_wall = 0;
        if (m->phase == 0) {
            m->fencings++;
            GD_ERROR("lease lost or not renewed before the renew deadline: fencing workers");
        }
        if (m->phase == 0) stop_all_workers(m, "fenced");   /* shutdown already did */
    }
    if (m->leading && renewals != m->renewals_sent) {
        m->renewals_sent = renewals;
        m->lease_deadline_wall = deadline_wall;
        for (int i = 0; i < MGR_SHARDS_MAX_WORKERS; i++)
            if (m->w[i].hello && !m->w[i].stopping) mgr_control_lease(m->ctl, i, deadline_wall);
        mgr_remote_lease_all(m->remote, m->ctl, deadline_wall);
    }
}

/* ---- SIGHUP: re-read the worker count ---- */

static void reload(mgr_t *m)
{
    mgr_config c;
    char err[512];
    mgr_config_default(&c, m->argv[0]);
    if (mgr_config_parse(&c, m->argc, m->argv, err, sizeof err) != GD_OK) {
        GD_ERROR("SIGHUP: configuration rejected, keeping the current one", "error", err);
        return;
    }
    if (c.workers == m->want_workers) return;
    char from[12], to[12];
    snprintf(from, sizeof from, "%d", m->want_workers);
    snprintf(to, sizeof to, "%d", c.workers);
    GD_INFO("SIGHUP: changing the number of workers", "from", from, "to", to);
    for (int i = c.workers; i < m->want_workers; i++) {
        mgr_proc *p = mgr_sup_find(m->sup, MGR_ROLE_WORKER, i);
        if (!p) continue;
        if (m->leading && m->w[i].hello && !m->w[i].stopping) {
            m->w[i].retiring = true;                 /* revoke first, STOP when empty */
            mgr_shards_worker_retire(&m->shards, i);
        } else {
            stop_worker(m, i, gd_wall_ms());
        }
    }
    m->want_workers = c.workers;
    want_workers(m);
}

/* ---- metrics, readiness ---- */

static void publish(mgr_t *m, int64_t now)
{
    const char *lease = m->cfg.lease_name;
    int ready_workers = 0, synced = 0;
    for (int i = 0; i < m->want_workers; i++) ready_workers += m->w[i].hello && !m->w[i].stopping;
    for (int i = 0; i < m->ninf; i++) synced += mgr_stats_synced(m->inf[i].stats);
    char lease_label[300];
    snprintf(lease_label, sizeof lease_label, "name=\"%s\"", lease);
    const char *inf = "role=\"informer\"", *wrk = "role=\"worker\"";
    const gd_prom_int f[] = {
        {"leader_election_master_status", "gauge", "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master.", lease_label, m->leading},
        {"godis_manager_child_restarts_total", "counter", "Children restarted after they exited.", inf, (long long)mgr_sup_restarts(m->sup, MGR_ROLE_INFORMER)},
        {NULL, NULL, NULL, wrk, (long long)mgr_sup_restarts(m->sup, MGR_ROLE_WORKER)},
        {"godis_manager_children_running", "gauge", "Children with a live process.", inf, mgr_sup_alive(m->sup, MGR_ROLE_INFORMER)},
        {NULL, NULL, NULL, wrk, mgr_sup_alive(m->sup, MGR_ROLE_WORKER)},
        {"godis_manager_shard_moves_total", "counter", "Shards that changed owner.", NULL, (long long)m->shards.moves},
        {"godis_manager_shards_unassigned", "gauge", "Shards without an owner.", NULL, mgr_shards_unowned(&m->shards)},
        {"godis_manager_fencings_total", "counter", "Times the workers were stopped because the lease was lost or not renewed in time.", NULL, (long long)m->fencings},
        {"godis_manager_heartbeat_kills_total", "counter", "Workers killed for missing heartbeats.", NULL, (long long)m->heartbeat_kills},
        {"godis_manager_informers_synced", "gauge", "Informers whose cache is synced.", NULL, synced},
        {"godis_manager_control_rejected_total", "counter", "Malformed or unexpected control messages.", NULL, (long long)mgr_control_rejected(m->ctl)},
        {"godis_manager_remote_workers", "gauge", "Workers in other pods connected over tcp:// with CURVE.", NULL, mgr_remote_count(m->remote)},
        {"godis_manager_remote_worker_losses_total", "counter", "Remote workers declared gone after missed heartbeats.", NULL, (long long)mgr_remote_losses(m->remote)},
    };
    gd_sbuf ownb;
    gd_sbuf_init(&ownb);
    gd_prom_ints(&ownb, f, sizeof f / sizeof f[0]);
    char *own = gd_sbuf_detach(&ownb);
    mgr_promtext *pt = mgr_promtext_new();
    char *text = NULL;
    if (pt && own) {
        mgr_promtext_add(pt, own, strlen(own), NULL, NULL);
        char build[600];
        gd_build_info_metric(build, sizeof build);
        mgr_promtext_add(pt, build, strlen(build), NULL, NULL);
        for (int i = 0; i < MGR_SHARDS_MAX_WORKERS; i++) {
            if (!m->w[i].metrics) continue;
            char idx[12];
            snprintf(idx, sizeof idx, "%d", i);
            mgr_promtext_add(pt, m->w[i].metrics, strlen(m->w[i].metrics), "worker", idx);
        }
        for (int i = 0; i < m->ninf; i++) {
            const char *t = mgr_stats_text(m->inf[i].stats);
            mgr_promtext_add(pt, t, strlen(t), NULL, NULL);
        }
        text = mgr_promtext_render(pt);
    }
    mgr_promtext_destroy(&pt);
    free(own);
    char msg[200];
    bool ready;
    if (m->phase > 0) { ready = false; snprintf(msg, sizeof msg, "shutting down"); }
    else if (synced < m->ninf) {
        ready = false;
        snprintf(msg, sizeof msg, "informer caches: %d of %d synced", synced, m->ninf);
    } else if (m->leading && ready_workers < m->want_workers) {
        ready = false;
        snprintf(msg, sizeof msg, "leader: %d of %d workers running", ready_workers, m->want_workers);
    } else {
        ready = true;
        snprintf(msg, sizeof msg, "ok (%s)", m->leading ? "leader" : "standby");
    }
    pthread_mutex_lock(&m->pub_mu);
    if (text) { free(m->pub_metrics); m->pub_metrics = text; }
    m->pub_ready = ready;
    snprintf(m->pub_ready_msg, sizeof m->pub_ready_msg, "%s", msg);
    m->pub_loop_ms = now;
    pthread_mutex_unlock(&m->pub_mu);
}

static bool http_healthz(void *ud, char *msg, size_t cap)
{
    mgr_t *m = ud;
    pthread_mutex_lock(&m->pub_mu);
    int64_t age = gd_mono_ms() - m->pub_loop_ms;
    pthread_mutex_unlock(&m->pub_mu);
    bool ok = age < 5000;       /* the main loop is turning */
    snprintf(msg, cap, ok ? "ok" : "main loop stalled for %lld ms", (long long)age);
    return ok;
}

static bool http_readyz(void *ud, char *msg, size_t cap)
{
    mgr_t *m = ud;
    pthread_mutex_lock(&m->pub_mu);
    bool r = m->pub_ready;
    snprintf(msg, cap, "%s", m->pub_ready_msg);
    pthread_mutex_unlock(&m->pub_mu);
    return r;
}

static char *http_metrics(void *ud)
{
    mgr_t *m = ud;
    pthread_mutex_lock(&m->pub_mu);
    char *t = strdup(m->pub_metrics ? m->pub_metrics : "");
    pthread_mutex_unlock(&m->pub_mu);
    return t;
}


/* ---- setup and the loop ---- */

/* Election thread → main loop: a byte on an eventfd ends the loop's zmq_poll early. */
static void wake_loop(void *ud)
{
    mgr_t *m = ud;
    uint64_t one = 1;
    if (m->wake_fd >= 0) (void)!write(m->wake_fd, &one, sizeof one);
}

static gd_err setup_election(mgr_t *m)
{
    if (!m->cfg.leader_elect) return GD_OK;
    k8s_config_opts o = {
        .kubeconfig = m->cfg.kubeconfig[0] ? m->cfg.kubeconfig : NULL,
        .context = m->cfg.context[0] ? m->cfg.context : NULL,
        .allow_in_cluster = true,
    };
    k8s_config *kc = NULL;
    char err[512];
    if (k8s_config_load(&o, &kc, err, sizeof err) != GD_OK) {
        fprintf(stderr, "godis-manager: %s\n", err);
        return GD_ERR_CONFIG;
    }
    const char *ns = m->cfg.lease_namespace[0] ? m->cfg.lease_namespace
                   : m->cfg.namespace_[0] ? m->cfg.namespace_
                   : kc->namespace_ && kc->namespace_[0] ? kc->namespace_ : "default";
    char nsbuf[254];
    snprintf(nsbuf, sizeof nsbuf, "%s", ns);
    k8s_client_opts co;
    k8s_client_opts_default(&co);
    /* one hung request must not eat the renew deadline */
    co.request_timeout_ms = m->cfg.retry_period_ms < 1000 ? 1000 : m->cfg.retry_period_ms;
    co.connect_timeout_ms = co.request_timeout_ms;
    /* The identity in the User-Agent of the manager's and its workers' requests: the API
     * server's audit log then names who made each write (fencing is tested from it). */
    char ua[MGR_LE_HOLDER_MAX + 48];
    snprintf(ua, sizeof ua, "godis-operator (manager; identity=%s)", m->identity);
    co.user_agent = ua;
    if (!(m->client = k8s_client_new(&kc, &co))) {
        k8s_config_destroy(&kc);
        fprintf(stderr, "godis-manager: cannot create the Kubernetes client\n");
        return GD_ERR_CONFIG;
    }
    mgr_le_config lc;
    mgr_le_config_default(&lc);
    lc.lease_duration_ms = m->cfg.lease_duration_ms;
    lc.renew_deadline_ms = m->cfg.renew_deadline_ms;
    lc.retry_period_ms = m->cfg.retry_period_ms;
    snprintf(lc.name, sizeof lc.name, "%s", m->cfg.lease_name);
    snprintf(lc.identity, sizeof lc.identity, "%s", m->identity);
    if (mgr_le_config_validate(&lc, err, sizeof err) != GD_OK) {
        fprintf(stderr, "godis-manager: %s\n", err);
        return GD_ERR_CONFIG;
    }
    mgr_le_lock ops;
    if (!(m->lock = mgr_leaselock_new(m->client, nsbuf, m->cfg.lease_name))) {
        fprintf(stderr, "godis-manager: bad lease namespace or name\n");
        return GD_ERR_CONFIG;
    }
    if (m->remote && mgr_leaselock_set_annotation(m->lock, MGR_REMOTE_ANNOTATION,
                                                  mgr_remote_annotation(m->remote)) != GD_OK)
        return GD_ERR_NOMEM;
    mgr_leaselock_ops(m->lock, &ops);
    if (!(m->le = mgr_le_new(&lc, &ops))) return GD_ERR_NOMEM;
    mgr_le_set_notify(m->le, wake_loop, m);
    GD_INFO("leader election", "lease", m->cfg.lease_name, "namespace", nsbuf,
            "identity", lc.identity);
    if (pthread_create(&m->le_th, NULL, mgr_le_thread_main, m->le) != 0) return GD_ERR_NOMEM;
    m->le_running = true;
    m->watch = mgr_lease_watch_start(m->client, nsbuf, m->cfg.lease_name, m->le);
    return GD_OK;
}

static void stop_election(mgr_t *m)
{
    mgr_lease_watch_cancel(m->watch);      /* ends on its own within ~100 ms */
    if (m->le_running) {
        mgr_le_stop(m->le);                /* releases the lease on its way out: at once */
        pthread_join(m->le_th, NULL);
        m->le_running = false;
    }
    mgr_lease_watch_stop(&m->watch);
}


static gd_err setup_http(mgr_t *m)
{
    mgr_http_handlers h = {http_healthz, http_readyz, http_metrics};
    char hh[128], mh[128], why[200];
    int hp, mp;
    gd_parse_bind_addr(m->cfg.health_addr, hh, sizeof hh, &hp, why, sizeof why);
    gd_parse_bind_addr(m->cfg.metrics_addr, mh, sizeof mh, &mp, why, sizeof why);
    bool same = hp && mp && hp == mp && !strcmp(hh, mh);
    if (hp && !(m->http_health = mgr_http_start(hh, hp, MGR_HTTP_HEALTH | (same ? MGR_HTTP_METRICS : 0), &h, m,
                                               "--health-probe-bind-address")))
        return GD_ERR_IO;
    if (mp && !same && !(m->http_metrics = mgr_http_start(mh, mp, MGR_HTTP_METRICS, &h, m,
                                                         "--metrics-bind-address")))
        return GD_ERR_IO;
    return GD_OK;
}

static void begin_shutdown(mgr_t *m, int code, const char *why)
{
    if (m->phase > 0) return;
    m->phase = 1;
    m->exit_code = code;
    mgr_sup_shutdown(m->sup);        /* from here on nothing is (re)started */
    GD_INFO("shutting down: workers first, then the lease, then the informers", "reason", why);
    stop_all_workers(m, why);
}

static void advance_shutdown(mgr_t *m)
{
    /* remote workers too: the lease is released only once none can still write */
    if (m->phase == 1 && mgr_sup_alive(m->sup, MGR_ROLE_WORKER) == 0 && mgr_remote_quiet(m->remote, m->ctl, gd_mono_ms())) {
        stop_election(m);
        for (int i = 0; i < m->ninf; i++) mgr_sup_stop(m->sup, m->inf[i].proc, false);
        mgr_proc *wh = mgr_sup_find(m->sup, MGR_ROLE_WEBHOOK, 0);
        if (wh) mgr_sup_stop(m->sup, wh, false);
        m->phase = 2;
    }
    if (m->phase == 2 && mgr_sup_alive(m->sup, MGR_ROLE_INFORMER) == 0 &&
        mgr_sup_alive(m->sup, MGR_ROLE_WEBHOOK) == 0)
        m->phase = 3;
}

static void teardown(mgr_t *m)
{
    stop_election(m);
    mgr_http_stop(&m->http_health);
    mgr_http_stop(&m->http_metrics);
    for (int i = 0; i < m->ninf; i++) mgr_stats_destroy(&m->inf[i].stats);
    mgr_control_destroy(&m->ctl);
    if (m->sup) {
        mgr_sup_signal_all(m->sup, SIGKILL);   /* only if something survived the stop */
        mgr_sup_reap(m->sup);
    }
    mgr_sup_destroy(&m->sup);
    mgr_shards_cleanup(&m->shards);
    mgr_le_destroy(&m->le);
    mgr_leaselock_destroy(&m->lock);
    k8s_client_destroy(&m->client);
    for (int i = 0; i < MGR_SHARDS_MAX_WORKERS; i++) free(m->w[i].metrics);
    free(m->pub_metrics);
    mgr_remote_destroy(&m->remote);
    if (m->zctx) zmq_ctx_term(m->zctx);
    unlink_endpoints(m);
    mgr_rundir_remove(m->rundir, m->rundir_made);
    if (m->wake_fd >= 0) close(m->wake_fd);
    pthread_mutex_destroy(&m->pub_mu);
}

static void loop(mgr_t *m)
{
    int64_t next_publish = 0;
    while (m->phase < 3) {
        int64_t now = gd_mono_ms();
        if (mgr_sig_term) begin_shutdown(m, m->exit_code, "signal");
        if (mgr_sig_hup) { mgr_sig_hup = 0; if (m->phase == 0) reload(m); }
        mgr_sig_chld = 0;
        mgr_sup_reap(m->sup);
        if (mgr_sup_fatal(m->sup)) begin_shutdown(m, GD_EXIT_FATAL_CONFIG, "a child reported a fatal configuration error");
        bool was_leading = m->leading;
        follow_leadership(m, now);
        if (m->leading != was_leading) next_publish = 0;   /* probes see it at once */
        if (m->leading && startup_settled(m, now)) send_shard_actions(m);
        heartbeat(m, now);                  /* standby workers too */
        int freed[MGR_SHARDS_MAX_WORKERS];
        for (int i = 0, n = mgr_remote_tick(m->remote, m->ctl, &m->shards, now, freed); i < n; i++)
            { free(m->w[freed[i]].metrics); m->w[freed[i]].metrics = NULL; }
        for (int i = 0; i < m->ninf; i++) mgr_stats_tick(m->inf[i].stats);
        advance_shutdown(m);
        int64_t wait = mgr_sup_tick(m->sup);
        if (now >= next_publish) { publish(m, now); next_publish = now + 250; }
        zmq_pollitem_t items[2 + MAX_KINDS];
        int n = 0;
        items[n++] = (zmq_pollitem_t){mgr_control_socket(m->ctl), 0, ZMQ_POLLIN, 0};
        if (m->wake_fd >= 0) items[n++] = (zmq_pollitem_t){NULL, m->wake_fd, ZMQ_POLLIN, 0};
        for (int i = 0; i < m->ninf; i++)
            items[n++] = (zmq_pollitem_t){mgr_stats_socket(m->inf[i].stats), 0, ZMQ_POLLIN, 0};
        if (wait > 100) wait = 100;
        zmq_poll(items, n, (long)wait);     /* EINTR (a signal) just ends the wait */
        uint64_t drained;
        if (m->wake_fd >= 0) (void)!read(m->wake_fd, &drained, sizeof drained);
        mgr_control_dispatch(m->ctl);
        for (int i = 0; i < m->ninf; i++) mgr_stats_dispatch(m->inf[i].stats);
    }
}

int mgr_run(const mgr_config *cfg, int argc, char **argv)
{
    mgr_t *m = calloc(1, sizeof *m);
    if (!m) return GD_EXIT_FAILURE;
    m->cfg = *cfg;
    m->argc = argc;
    m->argv = argv;
    m->want_workers = cfg->workers;
    /* before the worker slots: their command lines carry it (setup_election validates it) */
    if (cfg->leader_elect && cfg->identity[0])
        snprintf(m->identity, sizeof m->identity, "%s", cfg->identity);
    else if (cfg->leader_elect)
        mgr_le_make_identity(m->identity, sizeof m->identity);
    m->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    pthread_mutex_init(&m->pub_mu, NULL);
    mgr_shards_init(&m->shards);
    mgr_shards_freeze(&m->shards, true);
    int code = GD_EXIT_OK;
    mgr_sup_opts so;
    mgr_sup_opts_default(&so);
    so.term_after_ms = so.kill_after_ms = fence_grace_ms(m) / 2 > 50 ? fence_grace_ms(m) / 2 : 50;
    char ctl[300];
    mgr_control_handlers h = {on_hello, on_revoked, on_pong, on_remote_hello};
    if (!(m->zctx = zmq_ctx_new()) || !mgr_rundir_make(m->cfg.runtime_dir, m->rundir, sizeof m->rundir, &m->rundir_made)) { code = GD_EXIT_FATAL_CONFIG; goto out; }
    snprintf(ctl, sizeof ctl, "ipc://%s/control", m->rundir);
    if (!(m->sup = mgr_sup_new(&so, on_child_exit, m)) || !(m->ctl = mgr_control_new(m->zctx, ctl, &h, m))) {
        code = GD_EXIT_FAILURE;
        goto out;
    }
    if (!add_informers(m) || !add_webhook(m)) { code = GD_EXIT_FATAL_CONFIG; goto out; }
    want_workers(m);
    if (setup_http(m) != GD_OK) { code = GD_EXIT_FATAL_CONFIG; goto out; }
    gd_err e = setup_election(m);
    if (e != GD_OK) { code = e == GD_ERR_CONFIG ? GD_EXIT_FATAL_CONFIG : GD_EXIT_FAILURE; goto out; }
    GD_INFO("manager started", "runtime_dir", m->rundir, "leader_elect", m->cfg.leader_elect ? "true" : "false");
    loop(m);
    code = m->exit_code;
out:
    teardown(m);
    free(m);
    return code;
}
