/* chaos.h — the chaos suite (issue 21.1): on a local control plane, GodisClusters are scaled
 * at random while faults are injected at random moments (processes killed or stopped,
 * control-plane restarts, node agents lost, objects deleted by hand, watches expired), and
 * invariants are checked all the time:
 *   quorum      a quorum of every cluster's members answers, sampled through RESP (a write
 *               through a member needs a leader that hears a majority), except while the
 *               cluster is being created and except the members a fault took down;
 *   one-change  membership changes one member at a time, never two in flight for a cluster
 *               (status and ConfigMap, from watches: every version is seen);
 *   id-reuse    no Raft id is ever used again in a cluster, and nextID never goes down;
 *   exclusive   no key is reconciled by two workers or two threads at once (the workers'
 *               reconcile trace, GODIS_RECONCILE_TRACE);
 *   fenced      no write by a manager's workers after that manager lost its Lease (the API
 *               server's audit log);
 *   converge    after the last fault every cluster runs `replicas` Ready members with
 *               ConfigMap == status.members == Godis objects == what the members know.
 * A violation is printed at once with the time, the fault before it, the objects involved
 * and the seed that reproduces the campaign.
 *
 * Files: main.c (flags, setup, the table), procs.c (processes: managers, node agents,
 * finding and signalling), faults.c (the campaign), membership.c (watches: one-change,
 * id-reuse), quorum.c (RESP sampling), audit.c (reconcile trace and audit log),
 * converge.c (the end); chaos_internal.h gives the checks' parts the unit test feeds
 * (tests/unit/test_chaos_checks.c). */
#ifndef CHAOS_H
#define CHAOS_H
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <cjson/cJSON.h>
#include "k8s_client.h"

#define CH_MAX_CLUSTERS 32
#define CH_MANAGERS 2
#define CH_MAX_AGENTS 8
#define CH_MAX_HITS 256
#define CH_LEASE "chaos-operator-leader"
#define CH_LEASE_NS "default"

typedef enum {
    F_KILL_LEADER = 0, F_STOP_LEADER, F_KILL_INFORMER, F_KILL_WORKER, F_KILL_MEMBER,
    F_RESTART_APISERVER, F_RESTART_ETCD, F_KILL_NODE_AGENT, F_DELETE_GODIS,
    F_DELETE_CONFIGMAP, F_DELETE_POD, F_EXPIRE_WATCH, F__COUNT
} ch_fault;

typedef enum {
    I_QUORUM = 0, I_ONE_CHANGE, I_ID_REUSE, I_EXCLUSIVE, I_FENCED, I_CONVERGE, I__COUNT
} ch_invariant;

const char *ch_fault_name(ch_fault f);
const char *ch_invariant_name(ch_invariant i);

/* A fault's victims: members (cluster, id; id 0 = every member of the cluster) or a node,
 * excused from the quorum check until `until` (ms since the start). A deleted member pod
 * (until_pod) is also excused for as long as no pod replaces it, up to `until_pod` ms:
 * creating the replacement is kube-controller-manager's part, and after back-to-back
 * kube-apiserver restarts its informers back off for minutes (a campaign saw 110 s). */
typedef struct {
    int cluster;            /* index, -1: none */
    int64_t id;
    char node[64];          /* "" : none */
    int64_t until;
    int64_t until_pod;      /* 0: none */
} ch_hit;

typedef struct {
    pid_t pid;
    int restarts;
    int64_t restart_at;     /* ms since start; 0: not scheduled */
    bool stopped;           /* SIGSTOPped */
} ch_proc;

typedef struct chaos {
    /* configuration */
    int faults;
    unsigned seed;
    int nclusters, nagents, workers;
    int max_replicas;
    int64_t converge_bound_ms;
    char ns[64];
    char root[PATH_MAX];            /* repository root */
    char dir[PATH_MAX];             /* output: logs, trace */
    char kubeconfig[PATH_MAX], audit_log[PATH_MAX], trace[PATH_MAX + 32], hosts_file[PATH_MAX];
    char etcd[128];                 /* ETCD_ENDPOINTS */
    int api_port;
    int ip_octet;                   /* pod IPs 127.<ip_octet>.<32k>.x */
    int64_t t0;                     /* gd_mono_ms() at start */
    uint64_t rng;
    k8s_client *c;                  /* the main thread's */

    pthread_mutex_t mu;             /* everything below */
    char last_fault[256];
    int64_t last_fault_at;
    int fault_count[F__COUNT];
    int faults_done;
    ch_hit hits[CH_MAX_HITS];
    int nhits;
    int replicas[CH_MAX_CLUSTERS];  /* spec.replicas as last set */
    int64_t created_at[CH_MAX_CLUSTERS];
    int64_t lost_id[CH_MAX_CLUSTERS];   /* a member whose Godis a fault deleted, until it is
                                         * replaced: no second one meanwhile */
    ch_proc mgr[CH_MANAGERS];
    ch_proc agent[CH_MAX_AGENTS];
    int violations[I__COUNT];
    FILE *log;
    bool quiet;                     /* no lines on stdout (the checks' unit test) */

    _Atomic long checks[I__COUNT];
    atomic_int stop;                /* 1: the checker threads end; 2: interrupted */
    volatile int halt;              /* the same, for k8s_watch's stop flag */
    pthread_t threads[8];
    int nthreads;
} chaos;

/* ---- main.c ---- */
int64_t ch_now(const chaos *x);                 /* ms since the campaign started */
void ch_log(chaos *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ch_violation(chaos *x, ch_invariant inv, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ch_check(chaos *x, ch_invariant inv);      /* counts one check made */
uint64_t ch_rand(chaos *x);                     /* the campaign's seeded generator */
int ch_rand_int(chaos *x, int lo, int hi);      /* uniform in [lo, hi] */
k8s_client *ch_client(const chaos *x);          /* a new client (one per thread) */
void ch_cluster_name(int i, char *buf, size_t cap);
int ch_cluster_index(const chaos *x, const char *name);   /* -1: not ours */

/* ---- procs.c ---- */
bool ch_start_manager(chaos *x, int i);
bool ch_start_agent(chaos *x, int i);
void ch_agent_node(int i, char *buf, size_t cap);           /* the Node it registers */
/* Reaps exited children and restarts what is due; called from the main loop. */
void ch_tend(chaos *x);
int  ch_leader(chaos *x);                       /* manager index holding the Lease, -1 */
/* Children of pid whose comm is name, into out (cap); returns how many. */
int  ch_children(pid_t parent, const char *comm, pid_t *out, int cap);
/* The godis process serving the pod IP, 0 when none. */
pid_t ch_member_process(const char *pod_ip);
bool ch_devcluster_restart(chaos *x, const char *component);
bool ch_etcd_compact(chaos *x);
bool ch_hold_api_port(chaos *x);                /* bound SO_REUSEPORT for the whole run */
void ch_stop_all(chaos *x);
bool ch_pid_alive(pid_t pid);                   /* running (not a zombie) */

/* ---- faults.c ---- */
bool ch_create_clusters(chaos *x);
int  ch_campaign(chaos *x);                     /* faults injected */
void ch_hit_member(chaos *x, int cluster, int64_t id, int64_t for_ms);
/* Its pod was deleted: excused for for_ms, and while it has no pod, up to pod_max_ms. */
void ch_hit_pod(chaos *x, int cluster, int64_t id, int64_t for_ms, int64_t pod_max_ms);
void ch_hit_node(chaos *x, const char *node, int64_t for_ms);

/* ---- checker threads ---- */
void *ch_membership_thread(void *x);            /* membership.c */
void *ch_quorum_thread(void *x);                /* quorum.c */
void *ch_audit_thread(void *x);                 /* audit.c */

/* ---- converge.c ---- */
/* Waits for every cluster to converge; fills times (ms after the last fault, -1: never). */
int ch_converge(chaos *x, int64_t *times);

#endif
