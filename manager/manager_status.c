/* manager_status.c — what the manager shows: its metrics (its own, the workers' from their
 * PONGs and the informers' from STATS, merged), readiness, and the HTTP servers that serve
 * them. The main loop publishes every 250 ms; the HTTP threads read only that copy. */
#include "manager_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gd_log.h"
#include "gd_metrics.h"
#include "gd_time.h"
#include "gd_version.h"
#include "http.h"
#include "promtext.h"

void mgr_publish(mgr_t *m, int64_t now)
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

gd_err mgr_setup_http(mgr_t *m)
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
