/* agent_pod.h — the pod table's records, shared by the files that run pods.
 *
 * Why a private header: one pod's life is split by concern — agent_pod.c (the table, watch
 * events, the tick, termination), agent_pod_volumes.c (volumes and the values a container's
 * environment looks up), agent_pod_ctr.c (a container's process: start, probe, exit) and
 * agent_pod_status.c (the status PATCHed to the API) — and all of them read these records.
 * Who may touch a record when (main loop or pod worker) is said at the top of agent_pod.c. */
#ifndef NODE_AGENT_POD_H
#define NODE_AGENT_POD_H
#include <stdatomic.h>
#include "agent.h"

#define NA_MAX_VOLUMES 32
#define NA_RETRY_MS 2000          /* setup/config errors are retried this often */
#define NA_SYNC_FREQUENCY_MS 60000 /* the kubelet's --sync-frequency default (1m) */

typedef struct {
    char name[NA_NAME_MAX];
    char image[512];
    pid_t pid;                    /* 0: not running */
    int restart_count;
    bool started_once;
    int64_t started_wall_ms, started_mono_ms;
    int64_t next_start_ms;        /* monotonic; when a stopped container may start */
    gd_backoff backoff;
    bool has_last;                /* lastState.terminated */
    int last_exit;
    int64_t last_started_wall_ms, last_finished_wall_ms;
    na_probe probe;
    int64_t next_probe_ms;
    int ok_streak, fail_streak;
    bool ready;
    char waiting_reason[48], waiting_message[300];
    bool finished;                /* exited and will not be restarted */
} na_ctr;

typedef struct {
    char name[NA_NAME_MAX];
    char host[NA_PATH_MAX];
} na_vol;

struct na_pod {
    struct na_pod *next;
    char ns[NA_NAME_MAX], name[NA_NAME_MAX], uid[64], node[NA_NAME_MAX];
    char ip[16];
    cJSON *obj;                   /* the latest object from the watch (owned) */
    na_ctr *c;
    int nc;
    char restart_policy[16];
    int64_t start_wall_ms;
    char dir[NA_PATH_MAX];        /* <state>/pods/<ns>_<name>_<uid> */
    na_vol vols[NA_MAX_VOLUMES];
    int nvols;
    bool volumes_ok;
    char kubeconfig[NA_PATH_MAX]; /* its ServiceAccount's credentials ("": none) */
    int64_t next_setup_ms;
    int64_t next_volume_sync_ms;  /* when the Secret volumes are re-read (monotonic) */
    bool terminating, killed, gone_from_api, seen;
    int64_t kill_deadline_ms;
    char *last_status;            /* the last status body PATCHed successfully */
    int64_t next_status_ms;
    bool last_ready;
    int64_t ready_since_wall_ms;
    /* pod workers (see the top of the file) */
    atomic_bool busy;             /* a worker runs sync_pod for this pod */
    bool status_dirty;            /* something the status shows may have changed */
    cJSON *pending_obj;           /* the latest watched object while busy (owned) */
    bool pending_deleted;         /* a DELETED event (or a vanished pod) while busy */
    bool snap_running, snap_ready;/* for na_pods_visit, taken while not busy */
};

/* agent_pod_volumes.c */
gd_err na_pod_setup_volumes(na_agent *a, na_pod *p, char *err, size_t errlen);
/* The kubelet's periodic sync of a running pod's Secret volumes: each re-read and, when it
 * changed, swapped in atomically. The first error (the others still refreshed). */
gd_err na_pod_refresh_volumes(na_agent *a, na_pod *p, char *err, size_t errlen);
size_t na_pod_mounts(const na_pod *p, const cJSON *ctr, na_mount *m, size_t cap);
gd_err na_pod_cm_lookup(void *ud, const char *ns, const char *name, const char *key, char **out,
                        char *err, size_t errlen);

/* agent_pod_ctr.c */
void na_ctr_set_waiting(const na_pod *p, na_ctr *c, const char *reason, const char *msg);
void na_ctr_start(na_agent *a, na_pod *p, na_ctr *c, const cJSON *ctr);
void na_ctr_probe(na_pod *p, na_ctr *c);
void na_ctr_exited(na_pod *p, na_ctr *c, int wstatus);

/* agent_pod_status.c */
void na_pod_publish_status(na_agent *a, na_pod *p);
bool na_pod_status_drifted(const cJSON *pod, const char *last_body);

#endif
