/* e2e_operator.h — the whole operator for an end-to-end test: two godis-manager replicas
 * (leader election with short lease timings so a killed leader is replaced in seconds),
 * each supervising informers and workers, plus what the membership-safety tests share:
 * creating clusters with any spec, watching pods, reading the audit log, and the figure
 * of how long forgotten members ran. */
#ifndef E2E_OPERATOR_H
#define E2E_OPERATOR_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "audit_log.h"
#include "e2e_standin.h"
#include "k8s_client.h"

typedef struct {
    pid_t pid[2];
    char ident[2][64];
    char rundir[2][256];
    char logdir[256];
    char lease[64];
    const char *worker_arg;          /* extra --worker-arg, or NULL */
} e2e_operator;

bool e2e_operator_start(e2e_operator *op, const char *name, const char *worker_arg);
/* A membership suite's cmocka setup and teardown: logs, a client (*c), the CRDs and the
 * operator named `name` (worker_arg: an extra --worker-arg, or NULL); the teardown prints
 * the forgotten-member figure under `figure_label`, then stops the operator and the client.
 * Setup returns 0 or -1 as cmocka wants. */
int e2e_operator_suite_setup(k8s_client **c, e2e_operator *op, const char *name,
                             const char *worker_arg);
int e2e_operator_suite_teardown(k8s_client **c, e2e_operator *op, const char *figure_label);
/* Starts replica i again (after e2e_operator_kill). */
void e2e_operator_spawn(e2e_operator *op, int i);
void e2e_operator_stop(e2e_operator *op, k8s_client *c);
/* The replica holding the Lease (0 or 1), or -1. */
int e2e_operator_leader(e2e_operator *op, k8s_client *c);
/* SIGKILL replica i with its workers and informers, as a node crash would. */
void e2e_operator_kill(e2e_operator *op, int i);

/* Objects of r in ns with the label selector, counting those being deleted too. */
int e2e_count_all(k8s_client *c, const k8s_resource *r, const char *ns, const char *sel);
bool e2e_delete(k8s_client *c, const k8s_resource *r, const char *ns, const char *name, long grace);
/* Waits until ns/name of r is gone: its DELETED event on a watch, or a 404 (it may be gone
 * before the watch starts). ns NULL for cluster-scoped kinds. */
bool e2e_wait_gone(k8s_client *c, const k8s_resource *r, const char *ns, const char *name, int timeout_ms);
/* Deletes the namespace and waits until it is gone: every scenario ends so, and that deletion
 * must finish (the operator drops its Godis finalizers, nothing is left Terminating). */
bool e2e_ns_delete_wait(k8s_client *c, const char *ns, int timeout_ms);

/* Records every pod of a cluster a watch shows: uid, member, restarts, Ready, deleted. */
typedef struct {
    char uid[64], member[128];
    int restarts;
    bool ready_seen, deleted;
    int64_t deleted_us;             /* when the watch showed it gone (wall clock) */
} e2e_pod_rec;
typedef struct {
    pthread_t th;
    k8s_client *c;
    char ns[128], sel[160];
    volatile int stop;
    pthread_mutex_t mu;
    e2e_pod_rec pods[128];
    int n;
} e2e_pod_recorder;
bool e2e_pod_recorder_start(e2e_pod_recorder *r, const char *ns, const char *cluster);
void e2e_pod_recorder_stop(e2e_pod_recorder *r);
/* Highest restart count any pod of member `godis` showed. */
int e2e_pod_recorder_restarts(e2e_pod_recorder *r, const char *godis);
/* When the last pod of member `godis` was seen deleted (0: one is not deleted yet). */
int64_t e2e_pod_recorder_gone_us(e2e_pod_recorder *r, const char *godis);
/* Pods of member `godis` whose uid is not in before[] that were ever Ready. */
int e2e_pod_recorder_new_ready(e2e_pod_recorder *r, const char *godis, char before[][64], int nb);
/* The uids of the live pods of member `godis`, into uids; the count. */
int e2e_member_pod_uids(k8s_client *c, const char *ns, const char *godis, char uids[][64], int cap);

/* The operator's writes (its User-Agent) received at or after since_us, from the audit log. */
int e2e_operator_writes(int64_t since_us, audit_event **out);
/* The same for any writer whose User-Agent contains ua_part ("" every writer). */
int e2e_writes_by(int64_t since_us, const char *ua_part, audit_event **out);
/* The first of evs[0..n) with this verb ("" any), resource and name prefix; NULL if none. */
const audit_event *e2e_first_write(const audit_event *evs, int n, const char *verb,
                                   const char *resource, const char *name_prefix);

/* How long forgotten members' processes ran after their forget, over a test binary. */
void e2e_note_forgotten_runtime(int64_t id, int64_t forget_us, int64_t end_us);
void e2e_print_forgotten_runtimes(const char *what);

int64_t e2e_wall_us(void);

#endif
