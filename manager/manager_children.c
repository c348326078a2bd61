/* manager_children.c — the command lines of the manager's children: one informer per watched
 * kind (and its tcp:// endpoints when remote workers are on), the eviction webhook, and
 * the local worker slots. The supervisor starts, restarts and stops them. */
#include "manager_internal.h"
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "gd_domain.h"
#include "gd_log.h"

/* The informers' socket files, before mgr_rundir_remove: an informer killed after the grace
 * period (SIGKILL) could not unlink its own, and none may be left behind, whoever made the
 * directory. */
void mgr_unlink_endpoints(mgr_t *m)
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

bool mgr_add_informers(mgr_t *m)
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
bool mgr_add_webhook(mgr_t *m)
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

mgr_proc *mgr_worker_slot(mgr_t *m, int i)
{
    mgr_proc *p = mgr_sup_find(m->sup, MGR_ROLE_WORKER, i);
    if (p) return p;
    char idx[12], ctl[300], mcr[12], hb[24], name[32], mro[12];
    snprintf(idx, sizeof idx, "%d", i);
    snprintf(ctl, sizeof ctl, "ipc://%s/control", m->rundir);
    snprintf(mcr, sizeof mcr, "%d", m->cfg.max_concurrent_reconciles);
    snprintf(mro, sizeof mro, "%d", m->cfg.max_concurrent_rollouts);
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
    a[n++] = "--max-concurrent-rollouts"; a[n++] = mro;
    if (m->cfg.default_godis_image[0]) { a[n++] = "--default-godis-image"; a[n++] = m->cfg.default_godis_image; }
    n = common_args(m, a, n);
    if (m->identity[0]) { a[n++] = "--manager-identity"; a[n++] = m->identity; }
    char extra[MGR_STR];
    snprintf(extra, sizeof extra, "%s", m->cfg.worker_args);
    for (char *sv = NULL, *t = strtok_r(extra, " ", &sv); t && n < 46; t = strtok_r(NULL, " ", &sv))
        a[n++] = t;
    a[n] = NULL;
    return mgr_sup_add(m->sup, MGR_ROLE_WORKER, i, name, (char *const *)a);
}
