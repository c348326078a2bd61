/* manager.c — the manager's main loop.
 *
 * Every iteration: reap children, follow the leadership state (acquire → start workers,
 * lose or fail to renew → fence), hand out shards, heartbeat the workers, ask informers for
 * STATS, tick the process table, then wait on the sockets until the earliest deadline any
 * of those has (loop_wait_ms; at most 1 s, so /healthz sees the loop turn). Leadership
 * itself is decided on the election thread; this loop only reads its status, and fences on
 * its own clock too, so a renewal stuck in a request cannot keep workers running past the
 * renew deadline.
 *
 * Shutdown order (SIGTERM, or a child that exited with the fatal code 2): workers first
 * (STOP, then TERM, then KILL), then the lease is released (so a standby takes over at
 * once, never while our workers might still write), then the informers. */
#include "manager_internal.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>
#include "gd_log.h"
#include "gd_time.h"
#include "gd_wake.h"
#include "rundir.h"

volatile sig_atomic_t mgr_sig_term, mgr_sig_hup, mgr_sig_chld;
volatile sig_atomic_t mgr_sig_wake_fd = -1;

/* What the HTTP threads serve is rebuilt at most every PUBLISH_EVERY_MS, on a wake-up that
 * comes anyway, and at most PUBLISH_STALE_MS after a wake-up that may have changed it; a
 * change of leadership or of phase is published at once. */
#define PUBLISH_EVERY_MS 250
#define PUBLISH_STALE_MS 1000
#define STARTUP_SETTLE_MS 2000  /* a new leader waits this long at most for every HELLO */

static int64_t fence_grace_ms(const mgr_t *m)
{
    /* workers must be gone before another manager can take the lease */
    int64_t g = m->cfg.shutdown_grace_ms;
    int64_t room = (m->cfg.lease_duration_ms - m->cfg.renew_deadline_ms) * 4 / 5;
    return m->cfg.leader_elect && room < g ? room : g;
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
        mgr_proc *p = mgr_worker_slot(m, i);
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
        /* A worker stopped by fencing comes back: as a warm standby, or, when the lease was
         * won back before it exited (want_workers skipped it while it was stopping), as a
         * worker of this leader, which hands it shards on its HELLO. Left down, the leader
         * had no worker at all (300 x 3 benchmark, 2026-12-03: the lease renewal timed out
         * under load, the lease came back 2 s later, the workers exited 3 s later). */
        if (m->phase == 0 && p->index < m->want_workers && !mgr_sup_fatal(m->sup))
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
    if (now - m->lead_since_ms >= STARTUP_SETTLE_MS || mgr_shards_unowned(&m->shards) < GD_NSHARDS) return true;
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
        m->fence_at_ms = fence_at;
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

/* ---- setup and the loop ---- */

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
        mgr_stop_election(m);
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
    mgr_stop_election(m);
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
    mgr_unlink_endpoints(m);
    mgr_rundir_remove(m->rundir, m->rundir_made);
    mgr_sig_wake_fd = -1;
    gd_wake_close(&m->wake_fd);
    pthread_mutex_destroy(&m->pub_mu);
}

static void due_at(int64_t *due, int64_t at)
{
    if (at < *due) *due = at;
}

/* How long the loop may sleep: until the first deadline of anything it ticks. Every other
 * change arrives as a wake-up (a control or STATS message, the election thread's notify,
 * a signal poking the eventfd), so an idle manager wakes only for its heartbeats, STATS
 * and lease renewals. sup_wait (the process table's) is at most 1 s. */
static int64_t loop_wait_ms(mgr_t *m, int64_t now, int64_t sup_wait, int64_t publish_due)
{
    int64_t due = now + sup_wait;
    due_at(&due, m->next_ping_ms);
    due_at(&due, publish_due);
    due_at(&due, mgr_remote_due_ms(m->remote, m->ctl));
    for (int i = 0; i < m->ninf; i++) due_at(&due, mgr_stats_due_ms(m->inf[i].stats));
    if (!m->le) due_at(&due, m->nolead_next_lease_ms);
    else if (m->leading) due_at(&due, m->fence_at_ms);   /* fence on our own clock */
    if (m->leading && now - m->lead_since_ms < STARTUP_SETTLE_MS)
        due_at(&due, m->lead_since_ms + STARTUP_SETTLE_MS);   /* startup_settled's cap */
    int64_t wait = due - now;
    if (m->wake_fd < 0 && wait > 100) wait = 100;   /* no eventfd: a signal may not end the wait */
    return wait < 0 ? 0 : wait;
}

static void loop(mgr_t *m)
{
    int64_t last_publish = 0;
    while (m->phase < 3) {
        int64_t now = gd_mono_ms();
        bool was_leading = m->leading;
        int was_phase = m->phase;
        if (mgr_sig_term) begin_shutdown(m, m->exit_code, "signal");
        if (mgr_sig_hup) { mgr_sig_hup = 0; if (m->phase == 0) reload(m); }
        mgr_sig_chld = 0;
        mgr_sup_reap(m->sup);
        if (mgr_sup_fatal(m->sup)) begin_shutdown(m, GD_EXIT_FATAL_CONFIG, "a child reported a fatal configuration error");
        follow_leadership(m, now);
        if (m->leading && startup_settled(m, now)) send_shard_actions(m);
        heartbeat(m, now);                  /* standby workers too */
        int freed[MGR_SHARDS_MAX_WORKERS];
        for (int i = 0, n = mgr_remote_tick(m->remote, m->ctl, &m->shards, now, freed); i < n; i++)
            { free(m->w[freed[i]].metrics); m->w[freed[i]].metrics = NULL; }
        for (int i = 0; i < m->ninf; i++) mgr_stats_tick(m->inf[i].stats);
        advance_shutdown(m);
        int64_t sup_wait = mgr_sup_tick(m->sup);
        bool changed = m->leading != was_leading || m->phase != was_phase;   /* probes see it at once */
        int64_t publish_due = INT64_MAX;
        if (changed || now - last_publish >= PUBLISH_EVERY_MS) {
            mgr_publish(m, now);
            last_publish = now;
        } else {
            publish_due = last_publish + PUBLISH_STALE_MS;
        }
        zmq_pollitem_t items[2 + MAX_KINDS];
        int n = 0;
        items[n++] = (zmq_pollitem_t){mgr_control_socket(m->ctl), 0, ZMQ_POLLIN, 0};
        if (m->wake_fd >= 0) items[n++] = (zmq_pollitem_t){NULL, m->wake_fd, ZMQ_POLLIN, 0};
        for (int i = 0; i < m->ninf; i++)
            items[n++] = (zmq_pollitem_t){mgr_stats_socket(m->inf[i].stats), 0, ZMQ_POLLIN, 0};
        int64_t wait = loop_wait_ms(m, gd_mono_ms(), sup_wait, publish_due);
        zmq_poll(items, n, (long)wait);     /* a signal's poke (or EINTR) ends the wait */
        gd_wake_drain(m->wake_fd);
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
    m->wake_fd = gd_wake_open();
    mgr_sig_wake_fd = m->wake_fd;
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
    if (!mgr_add_informers(m) || !mgr_add_webhook(m)) { code = GD_EXIT_FATAL_CONFIG; goto out; }
    want_workers(m);
    if (mgr_setup_http(m) != GD_OK) { code = GD_EXIT_FATAL_CONFIG; goto out; }
    gd_err e = mgr_setup_election(m);
    if (e != GD_OK) { code = e == GD_ERR_CONFIG ? GD_EXIT_FATAL_CONFIG : GD_EXIT_FAILURE; goto out; }
    GD_INFO("manager started", "runtime_dir", m->rundir, "leader_elect", m->cfg.leader_elect ? "true" : "false");
    loop(m);
    code = m->exit_code;
out:
    teardown(m);
    free(m);
    return code;
}
