/* worker.c — see worker.h. The process's setup, main loop and teardown.
 *
 * The worker is split by what runs where: worker_feed.c (one subscriber thread per kind:
 * events → cache (the subscriber's replica, cache_sub.c) → mapping → controller queues),
 * worker_shards.c (shard loading, activation, revocation), worker_link.c (the control
 * socket to the manager), worker_remote.c (a worker in another pod: find the leader, run
 * worker_run against it, again after each leader change) and worker_opts.c (flag
 * parsing); their shared state is worker_internal.h.
 *
 * The main thread owns the control socket; each turn:
 *   1. a signal or a STOP: finish the in-flight reconciles (up to the grace) and return;
 *   2. wait for the control socket or the wake fd (a signal, a subscriber in sync, a key of
 *      a revoked shard finished) until the next heartbeat deadline, and handle the messages;
 *   3. activate loading shards once every subscriber follows them and is in sync;
 *   4. answer finished revocations, then stop following their shards;
 *   5. heartbeats: after 3 silent ones a local worker says HELLO again and a remote one
 *      drops everything to find the leader afresh (PROTOCOL.md §3.4); after 5 a local
 *      worker stops writing and exits. */
#include "worker_internal.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>
#include "gd_log.h"
#include "gd_time.h"
#include "gd_wake.h"
#include "k8s_client.h"
#include "k8s_config.h"

static volatile sig_atomic_t got_signal;
static volatile int g_wake_fd = -1;     /* the main loop's, once open: a signal ends its wait */
static void on_signal(int sig)
{
    got_signal = sig;
    gd_wake_poke(g_wake_fd);
}
bool worker_signalled(void) { return got_signal != 0; }

/* ---- setup and teardown ---- */

/* The API client for the reconcilers' writes. A configuration that was asked for
 * (--kubeconfig, --context, $KUBECONFIG) and cannot be used is fatal, and so is none at
 * all for a reconciler set that writes (the production "godis" set): one line naming the
 * file and the problem, exit 2, as the manager and the informer do. Only the test sets
 * run without one. */
static gd_err setup_client(worker *w)
{
    k8s_config_opts co = {.kubeconfig = w->o->kubeconfig, .context = w->o->context,
                          .allow_in_cluster = true};
    k8s_config *cfg = NULL;
    char err[512] = "";
    if (k8s_config_load(&co, &cfg, err, sizeof err) != GD_OK) {
        const gd_reconciler_set *set = gd_reconciler_find(w->o->reconciler);
        const char *env = getenv("KUBECONFIG");
        bool asked = w->o->kubeconfig || w->o->context || (env && *env);
        if (asked || (set && set->needs_api)) {
            fprintf(stderr, "godis-worker: %s\n", err);
            return GD_ERR_CONFIG;
        }
        gd_log(GD_LOG_WARN, "no API server configuration: reconcilers cannot write", "reason",
               err, NULL);
        return GD_OK;
    }
    k8s_client_opts opts;
    k8s_client_opts_default(&opts);
    opts.qps = w->o->kube_api_qps;
    opts.burst = w->o->kube_api_burst;
    /* The manager's identity in the User-Agent: the audit log then tells which manager's
     * worker made each write (tests prove fencing from it). */
    char ua[300];
    if (w->o->manager_identity && w->o->remote)   /* audit log: which remote worker */
        snprintf(ua, sizeof ua, "godis-operator (worker; manager=%s) remote-worker=%s",
                 w->o->manager_identity, w->o->worker_name ? w->o->worker_name : "");
    else if (w->o->manager_identity)
        snprintf(ua, sizeof ua, "godis-operator (worker; manager=%s)", w->o->manager_identity);
    else
        snprintf(ua, sizeof ua, "godis-operator (worker)");
    opts.user_agent = ua;
    w->env.client = k8s_client_new(&cfg, &opts);
    k8s_config_destroy(&cfg);
    if (!w->env.client) {
        fprintf(stderr, "godis-worker: cannot create the Kubernetes client\n");
        return GD_ERR_CONFIG;
    }
    return GD_OK;
}

static gd_err setup_controllers(worker *w)
{
    w->set = gd_reconciler_find(w->o->reconciler);
    if (!w->set) {
        gd_log(GD_LOG_ERROR, "unknown --reconciler (see --help)", "reconciler",
               w->o->reconciler, NULL);
        return GD_ERR_CONFIG;
    }
    if (w->set->init) {
        gd_err rc = w->set->init(&w->env, w->o->reconciler_arg, &w->set_ud);
        if (rc != GD_OK)
            return rc;
    }
    for (int i = 0; i < w->set->ncontrollers; i++) {
        const gd_reconciler *r = &w->set->controllers[i];
        controller_opts co;
        controller_opts_default(&co, r->controller, r->reconcile);
        co.ud = w->set_ud;
        co.max_concurrent = w->o->max_concurrent;
        co.queue.base_delay_ns = w->o->queue_base_delay_ms * 1000000;
        co.queue.max_delay_ns = w->o->queue_max_delay_ms * 1000000;
        co.queue.qps = w->o->queue_qps;
        co.queue.burst = w->o->queue_burst;
        co.queue.no_priority = w->o->queue_no_priority;
        controller *c = controller_new(&co, &w->env);
        if (!c || controller_start(c) != GD_OK) {
            controller_destroy(&c);
            return GD_ERR_NOMEM;
        }
        w->ctrls[w->nctrls++] = c;
    }
    return GD_OK;
}

static void teardown(worker *w)
{
    atomic_store(&w->subs_stop, true);
    worker_wake_subs(w);
    for (int i = 0; i < w->nsubs; i++)
        if (w->subs[i].running)
            pthread_join(w->subs[i].th, NULL);
    for (int i = 0; i < w->nctrls; i++)
        controller_destroy(&w->ctrls[i]);
    if (w->set && w->set->fini)
        w->set->fini(w->set_ud);
    for (int i = 0; i < w->nsubs; i++) {
        gd_sub_destroy(&w->subs[i].sub);
        gd_wake_close(&w->subs[i].wake_fd);
    }
    if (w->control)
        zmq_close(w->control);
    cache_destroy(&w->cache);
    k8s_client_destroy(&w->env.client);
    cJSON_Delete(w->pending_assign);
    if (w->zctx)
        zmq_ctx_term(w->zctx);
}

/* Stops every controller within the time left; true when all drained. */
static bool stop_controllers(worker *w, int64_t budget_ms)
{
    int64_t until = gd_mono_ms() + (budget_ms > 0 ? budget_ms : 0);
    bool ok = true;
    for (int i = 0; i < w->nctrls; i++) {
        int64_t left = until - gd_mono_ms();
        if (controller_stop(w->ctrls[i], left > 0 ? left : 0) != GD_OK)
            ok = false;
    }
    return ok;
}

/* ---- the loop ---- */

/* The longest the loop sleeps when nothing wakes it: a safety net only (the manager's
 * heartbeats arrive every second anyway). */
#define LOOP_IDLE_MS 1000

static int64_t min_ms(int64_t a, int64_t b) { return a < b ? a : b; }

/* How long the loop may sleep before a clock (not an event) can change what it does: the
 * heartbeat checks below, and a loading shard's grace for absent informers. */
static int64_t loop_timeout_ms(const worker *w, int64_t hb)
{
    int64_t now = gd_mono_ms(), t = LOOP_IDLE_MS;
    if (w->control) {
        int64_t silent = now - w->last_heard_ms;
        if (silent <= 3 * hb)
            t = min_ms(t, 3 * hb - silent + 1);
        else
            t = min_ms(t, min_ms(5 * hb - silent, 3 * hb - (now - w->last_hello_ms)) + 1);
    }
    bool loading = false;
    for (int i = 0; i < GD_NSHARDS && !loading; i++)
        loading = w->loading[i];
    if (loading)
        t = min_ms(t, worker_sync_recheck_ms(w));
    return t > 0 ? t : 1;
}

/* Step 2: sleeps until a control message, a poke of the wake fd, or the timeout, then
 * handles the messages. false: zmq_poll failed. */
static bool wait_and_drain(worker *w, int64_t hb)
{
    int64_t t = loop_timeout_ms(w, hb);
    if (!w->control) {
        if (gd_wake_wait(w->wake_fd, t))
            gd_wake_drain(w->wake_fd);
        return true;
    }
    zmq_pollitem_t items[2] = {{.socket = w->control, .events = ZMQ_POLLIN},
                               {.socket = NULL, .fd = w->wake_fd, .events = ZMQ_POLLIN}};
    if (zmq_poll(items, w->wake_fd >= 0 ? 2 : 1, (long)t) < 0 && errno != EINTR) {
        gd_log(GD_LOG_ERROR, "zmq_poll failed", "error", zmq_strerror(errno), NULL);
        return false;
    }
    if (items[1].revents)
        gd_wake_drain(w->wake_fd);
    worker_drain_control(w);
    return true;
}

/* Reconciles finished or running: the work the heap trim waits to end (gd_heap_trim.h). */
static uint64_t reconciles_done(worker *w)
{
    uint64_t n = 0;
    for (int i = 0; i < w->nctrls; i++) {
        controller_stats st;
        controller_get_stats(w->ctrls[i], &st);
        n += st.success + st.error + st.requeue + st.requeue_after + st.stale + st.fenced +
             (uint64_t)st.active;
    }
    return n;
}

static void trim_heap_when_quiet(worker *w)
{
    int64_t gave_back = gd_heap_trim_tick(&w->heap, gd_sub_bytes_received(),
                                          reconciles_done(w), gd_mono_ms());
    if (gave_back > 0) {
        char b[24];
        snprintf(b, sizeof b, "%lld", (long long)gave_back);
        gd_log(GD_LOG_DEBUG, "heap trimmed: the feeds and the reconciles went quiet",
               "returned_bytes", b, NULL);
    }
}

static int run_loop(worker *w)
{
    const int64_t hb = w->o->heartbeat_ms > 0 ? w->o->heartbeat_ms : 1000;
    for (;;) {
        if (got_signal) {
            gd_log(GD_LOG_INFO, "signal: abandoning queued keys, finishing in-flight ones",
                   NULL);
            gd_fence_close(&w->fence);      /* no new writes (PROTOCOL.md §2, signals) */
            w->abandoned = !stop_controllers(w, w->o->stop_grace_ms);
            return GD_EXIT_OK;
        }
        if (w->stopping) {
            int64_t left = w->stop_deadline_wall_ms - gd_wall_ms();
            w->abandoned = !stop_controllers(w, left);
            gd_log(GD_LOG_INFO,
                   w->abandoned ? "stopped: drain deadline passed" : "stopped: drained", NULL);
            return w->o->remote ? WORKER_RECONNECT : GD_EXIT_OK;
        }
        if (!wait_and_drain(w, hb))
            return GD_EXIT_FAILURE;
        trim_heap_when_quiet(w);
        bool loading = false;
        for (int i = 0; i < GD_NSHARDS && !loading; i++)
            loading = w->loading[i];
        if (loading && worker_all_synced(w))
            worker_activate_loading(w);
        /* Answer each revocation whose keys have all finished; only then stop following
         * (and forget) its shards: no reconcile of theirs runs any more. */
        worker_revoked rv;
        while (w->nrevs && worker_take_finished_revocation(w, &rv)) {
            worker_send_revoked(w, &rv);
            worker_revoked_free(&rv);
            worker_refollow(w);
        }
        if (w->control) {
            int64_t now = gd_mono_ms(), silent = now - w->last_heard_ms;
            /* A remote worker never says HELLO again on a connection the manager may have
             * given up (it would come back as a new worker still holding its old shards):
             * it drops everything and finds the leader afresh (PROTOCOL.md §3.4). */
            if (w->o->remote && (silent > 3 * hb || w->reconnect)) {
                gd_log(GD_LOG_WARN, w->reconnect ? "manager forgot us: reconnecting"
                                                 : "manager silent for 3 heartbeats: reconnecting",
                       NULL);
                gd_fence_close(&w->fence);
                w->abandoned = !stop_controllers(w, w->o->stop_grace_ms);
                return WORKER_RECONNECT;
            }
            if (silent > 5 * hb) {
                gd_log(GD_LOG_ERROR, "manager silent for 5 heartbeats: stop writing, exit",
                       NULL);
                gd_fence_close(&w->fence);
                w->abandoned = !stop_controllers(w, 0);
                return GD_EXIT_FAILURE;
            }
            if (silent > 3 * hb && now - w->last_hello_ms > 3 * hb)
                worker_send_hello(w);
        }
    }
}

int worker_run(const worker_opts *o)
{
    worker *w = calloc(1, sizeof *w);
    if (!w)
        return GD_EXIT_FAILURE;
    w->o = o;
    w->started_ms = gd_mono_ms();
    pthread_mutex_init(&w->follow_mu, NULL);
    gd_fence_init(&w->fence, o->control_endpoint ? 0 : GD_FENCE_NONE);
    w->zctx = zmq_ctx_new();
    w->cache = cache_new();
    w->env.fence = &w->fence;
    w->env.cache = w->cache;
    w->env.rv_lookup = cache_rv_lookup;
    w->env.rv_lookup_ud = w->cache;
    w->env.tracks_kind = worker_tracks_kind;
    w->env.tracks_kind_ud = w;
    w->env.cluster_domain = o->cluster_domain;
    w->env.max_concurrent_rollouts = o->max_concurrent_rollouts;
    w->env.default_image = o->default_image;
    w->wake_fd = gd_wake_open();
    w->env.revoke_wake_fd = &w->wake_fd;
    int code = GD_EXIT_FATAL_CONFIG;
    if (!w->zctx || !w->cache || w->wake_fd < 0) {
        code = GD_EXIT_FAILURE;
        goto out;
    }
    g_wake_fd = w->wake_fd;
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (setup_client(w) != GD_OK)
        goto out;
    if (setup_controllers(w) != GD_OK || worker_setup_subs(w) != GD_OK ||
        worker_setup_control(w) != GD_OK)
        goto out;
    worker_refollow(w);                 /* broadcast only: Nodes */
    if (!o->control_endpoint)
        worker_start_loading(w, o->shards, o->nshards, NULL);
    gd_log(GD_LOG_INFO, "worker running", "reconciler", o->reconciler, "mode",
           o->control_endpoint ? "managed" : "standalone", "allocator", gd_heap_allocator(),
           NULL);
    code = run_loop(w);
    if (w->abandoned && code == WORKER_RECONNECT && o->argv) {
        /* reconcile threads that would not finish (fenced: they write nothing more) would
         * outlive this connection: start clean in the same process slot instead */
        gd_log(GD_LOG_WARN, "reconnect: in-flight reconciles did not finish; re-executing",
               NULL);
        execv("/proc/self/exe", o->argv);
    }
    if (w->abandoned)
        return code;    /* threads are inside reconciles: the process exit ends them */
out:
    teardown(w);
    /* the global first: a late signal must not poke a closed (or reused) fd */
    int fd = w->wake_fd;
    g_wake_fd = -1;
    gd_wake_close(&fd);
    gd_fence_destroy(&w->fence);
    pthread_mutex_destroy(&w->follow_mu);
    free(w);
    return code;
}
