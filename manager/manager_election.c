/* manager_election.c — the manager's leader election: the Kubernetes client, the Lease lock
 * (with the remote workers' annotation, PROTOCOL.md §3.1), the election thread and the
 * Lease watch; the main loop reads the election's status (manager.c). */
#include "manager_internal.h"
#include <stdio.h>
#include <unistd.h>
#include "gd_log.h"
#include "gd_wake.h"

/* Election thread → main loop: a byte on an eventfd ends the loop's zmq_poll early. */
static void wake_loop(void *ud)
{
    mgr_t *m = ud;
    gd_wake_poke(m->wake_fd);
}

gd_err mgr_setup_election(mgr_t *m)
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

void mgr_stop_election(mgr_t *m)
{
    mgr_lease_watch_cancel(m->watch);      /* its stop_fd ends the stream or the backoff at once */
    if (m->le_running) {
        mgr_le_stop(m->le);                /* releases the lease on its way out: at once */
        pthread_join(m->le_th, NULL);
        m->le_running = false;
    }
    mgr_lease_watch_stop(&m->watch);
}
