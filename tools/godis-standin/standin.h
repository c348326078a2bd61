/* standin.h — the godis stand-in: a C program that behaves, on its client port, like
 * `godis cluster` does for the operator (DESIGN.md §2), so the operator can be tested on a
 * machine that runs no containers. It is not a Raft implementation: each stand-in keeps its
 * own membership (what it was started with plus the meet/forget commands it received) on disk
 * under the WAL dir, the way godis keeps its WAL. The hazards of the real server are kept on
 * purpose, because the operator's tests must prove it never triggers them:
 *  - a short command, or a non-string argument, kills the process (godis panics);
 *  - a `cluster meet` with a non-numeric id or a malformed URL is first persisted and then
 *    kills the process, so it dies again on every restart (godis commits it to its Raft log);
 *  - a member that is itself forgotten exits (status 0), and stays exited on restart.
 * Extensions, not in godis: `standin members` answers the membership as "id@url" strings;
 * `standin sync` on the peer port replicates membership between stand-ins (replicate.c). */
#ifndef STANDIN_H
#define STANDIN_H
#include <pthread.h>
#include <stddef.h>
#include "godis_client.h"

#define STANDIN_MAX_MEMBERS 64
#define STANDIN_MAX_REMOVED 1024
#define STANDIN_STATE_FILE  "standin-membership"
#define STANDIN_KV_FILE     "standin-kv.log"
#define STANDIN_EXIT_CRASH  2            /* what a Go panic exits with */

typedef struct {
    long long id;
    char url[GODIS_MAX_URL + 1];
} standin_member;

typedef struct {
    /* configuration */
    long long self_id;
    char client_host[64], peer_host[64];
    int client_port, peer_port;
    char initial_cluster[4096];
    int join;
    char waldir[1024], snapdir[1024], port_file[1024];
    int fault_delay_ms;
    volatile int fault_refuse;
    double fault_propose_cancel;
    /* state, under mu */
    pthread_mutex_t mu;
    standin_member members[STANDIN_MAX_MEMBERS];
    int nmembers;
    long long removed[STANDIN_MAX_REMOVED];   /* ids forgotten once: raft never re-adds them */
    int nremoved;
    int self_removed;
    char origin[16];                         /* "bootstrap" (own log) or "join" */
    struct kv_table *kv;
    int kv_fd;                               /* append-only set log, -1 without a WAL dir */
    int wake_fd;                             /* write end of the main loop's self-pipe */
    int nconns;                              /* live connection threads (atomic) */
    long long index;                         /* changes applied (replication, see replicate.c) */
} standin;

/* state.c */
int  standin_state_load(standin *s);        /* 0 ok; exits the process on a poisoned log */
int  standin_state_save(standin *s, const char *poison_id, const char *poison_url);
int  standin_member_add(standin *s, long long id, const char *url);   /* 0, 1 = ignored */
int  standin_member_remove(standin *s, long long id);                 /* 1 if it was there */
int  standin_parse_members(const char *list, standin_member *out, int cap);  /* -1 bad */
int  standin_kv_set(standin *s, const char *k, size_t kl, const char *v, size_t vl);
const char *standin_kv_get(standin *s, const char *k, size_t kl, size_t *vl);
void standin_kv_free(standin *s);

/* replicate.c (stand-in extension: membership reaches the other stand-ins) */
typedef void (*sbuf_fn)(void *arg, const char *s);
int  standin_replicate_start(standin *s);
void standin_replicate_changed(standin *s);  /* caller holds mu */
void standin_replicate_receive(standin *s, godis_reply **a, size_t n, sbuf_fn reply, void *rarg);

/* commands.c */
void *standin_conn_thread(void *arg);        /* arg: heap int with the fd */
void  standin_request_exit(standin *s, char why);  /* 'T' signal, 'F' forgotten */

extern standin g_standin;

#endif
