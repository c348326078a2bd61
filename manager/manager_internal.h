/* manager_internal.h — the manager's state, shared by the files of the main loop:
 * manager.c (the loop, leadership, workers, shutdown), manager_children.c (the children's
 * command lines), manager_election.c (leader election setup) and manager_status.c
 * (metrics, readiness and the HTTP endpoints). Everything here runs on the main thread
 * except the HTTP handlers, which read only the pub_* fields under pub_mu. */
#ifndef MGR_MANAGER_INTERNAL_H
#define MGR_MANAGER_INTERNAL_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "manager.h"
#include "control.h"
#include "http.h"
#include "k8s_client.h"
#include "leaderelection.h"
#include "leaselock.h"
#include "remote.h"
#include "shards.h"
#include "statsclient.h"
#include "supervisor.h"

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
    int64_t fence_at_ms;    /* the renew deadline follow_leadership fences at (0: none) */
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

/* manager_children.c */
bool mgr_add_informers(mgr_t *m);
bool mgr_add_webhook(mgr_t *m);
mgr_proc *mgr_worker_slot(mgr_t *m, int i);
void mgr_unlink_endpoints(mgr_t *m);

/* manager_election.c */
gd_err mgr_setup_election(mgr_t *m);
void mgr_stop_election(mgr_t *m);

/* manager_status.c */
void mgr_publish(mgr_t *m, int64_t now);
gd_err mgr_setup_http(mgr_t *m);

#endif
