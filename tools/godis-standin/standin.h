/* standin.h — the godis stand-in: a C program that behaves, on its client and peer ports,
 * like `godis cluster` does for the operator (docs/godis.md), so the operator can be tested on
 * a machine that runs no containers. It is not a Raft implementation, but it keeps the parts
 * of Raft an operator can feel, and the hazards of the real server, on purpose: the
 * operator's tests must prove it never triggers them.
 *  - Leader election (election.c): terms, votes and leader heartbeats between stand-ins over
 *    the peer port. A write (set, cluster meet, cluster forget) needs a leader that hears a
 *    majority of its members; without one it is answered `-propose canceled by context`
 *    after about a second, not applied.
 *  - A forgotten follower does not learn it was removed: the leader stops sending it
 *    heartbeats, so it keeps starting elections with ever higher terms, and each one makes
 *    the survivors drop their leader (writes fail until they elect a new one) — until its
 *    process is stopped.
 *  - A removed leader logs "I've been removed from the cluster! Shutting down." and exits
 *    with code 0 before saving its removal: restarted (a kubelet restarts exit 0 too), it
 *    replays its WAL and comes back as a voter with its old membership.
 *  - A restart replays the WAL dir: membership, term and vote, keys. A restart on an empty
 *    WAL dir under an id the cluster knows comes up as a fresh voter with no memory of its
 *    votes: the dangerous case (it can vote twice) the operator must never cause.
 *  - SIGINT is a clean shutdown (exit 0); SIGTERM, what a pod gets, kills it at once.
 *  - A short command, or a non-string argument, kills the process (godis panics); a
 *    `cluster meet` with a non-numeric id or a malformed URL is first persisted and then
 *    kills the process, so it dies again on every restart (godis commits it to its log).
 * Extensions, not in godis (tests use them): `standin members` (the membership as
 * "id@url"), `standin stats` and `standin events` (what this member saw of elections and
 * membership, with wall-clock times), `standin campaign` (start an election now, as a leader
 * transfer would), `standin fault refuse|delay-ms|delay-membership-ms V`; on the peer port
 * `standin sync`
 * (membership replication, replicate.c), `standin kvsync` (data replication,
 * replicate_kv.c), `standin vote`, `standin heartbeat` and `standin leading`
 * (a follower forwarding a proposal asks its leader). */
#ifndef STANDIN_H
#define STANDIN_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
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

typedef enum { ROLE_FOLLOWER = 0, ROLE_CANDIDATE, ROLE_LEADER } standin_role;

typedef struct {
    /* configuration */
    long long self_id;
    char client_host[64], peer_host[64];
    int client_port, peer_port;
    char initial_cluster[4096];
    int join;
    char waldir[1024], snapdir[1024], port_file[1024];
    volatile int fault_delay_ms;
    volatile int fault_delay_membership_ms; /* `cluster meet|forget` replies only: a test holds
                                               a +OK back while the member answers the rest */
    volatile int fault_refuse;
    double fault_propose_cancel;
    /* state, under mu */
    pthread_mutex_t mu;
    standin_member members[STANDIN_MAX_MEMBERS];
    int nmembers;
    long long removed[STANDIN_MAX_REMOVED];   /* ids forgotten once: raft never re-adds them */
    int nremoved;
    char origin[16];                         /* "bootstrap" (own log) or "join" */
    struct kv_table *kv;
    int kv_fd;                               /* append-only set log, -1 without a WAL dir */
    int wake_fd;                             /* write end of the main loop's self-pipe */
    int nconns;                              /* live connection threads (atomic) */
    long long index;                         /* changes applied (replication, see replicate.c) */
    /* election (election.c), under mu; term and vote are persisted with the membership */
    long long term, voted_for, leader;       /* leader 0: none known */
    standin_role role;
    int64_t election_due_ms;                 /* monotonic: campaign if no leader by then */
    int64_t next_heartbeat_ms;
    int quorum;                              /* the leader heard a majority lately */
    long long elections_seen, leader_lost, campaigns;
    int fresh;                               /* started on an empty WAL dir */
} standin;

/* A reply being built (commands.c). */
typedef struct {
    char *p;
    size_t len, cap;
} sbuf;
void sb_add(sbuf *b, const char *s, size_t n);
void sb_fmt(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_bulk(sbuf *b, const char *s, size_t n);
void sb_bulkz(sbuf *b, const char *s);

/* state.c */
int  standin_state_load(standin *s);        /* 0 ok; exits the process on a poisoned log */
int  standin_state_save(standin *s, const char *poison_id, const char *poison_url);
int  standin_member_add(standin *s, long long id, const char *url);   /* 0, 1 = ignored */
int  standin_member_remove(standin *s, long long id);                 /* 1 if it was there */
int  standin_parse_members(const char *list, standin_member *out, int cap);  /* -1 bad */
int  standin_kv_set(standin *s, const char *k, size_t kl, const char *v, size_t vl);
const char *standin_kv_get(standin *s, const char *k, size_t kl, size_t *vl);
void standin_kv_free(standin *s);
/* Applies a set with its replication id (origin member, its sequence), logs it and records
 * it for the pusher (caller holds mu; the id must not have been seen). 0 ok, -1 no memory. */
int  standin_kv_apply(standin *s, long long origin, long long seq, const char *k, size_t kl,
                      const char *v, size_t vl);

/* replicate_kv.c (stand-in extension: data reaches the other stand-ins; caller holds mu) */
int  standin_kv_seen(long long origin, long long seq);
long long standin_kv_next_seq(standin *s);
int  standin_kv_record(long long origin, long long seq, const char *k, size_t kl, const char *v,
                       size_t vl);
void standin_kv_receive(standin *s, godis_reply **a, size_t n, sbuf *out);
int  standin_kv_replicate_start(standin *s);

/* replicate.c (stand-in extension: membership reaches the other stand-ins) */
int  standin_replicate_start(standin *s);
void standin_replicate_changed(standin *s);  /* caller holds mu */
/* This member applies its own removal: pushes the membership without it to the others now,
 * without saving anything (the caller then exits). Caller does not hold mu. */
void standin_replicate_final_push(standin *s);
void standin_replicate_receive(standin *s, godis_reply **a, size_t n, sbuf *out);
/* A peer client for url (http://host:port), or NULL when the url is not one. */
godis_client *standin_peer_client(const char *url, int timeout_ms);

/* election.c */
int  standin_election_start(standin *s);
/* Waits up to about a second for a leader (caller does not hold mu): 1 when there is one. */
int  standin_wait_leader(standin *s);
/* Who leads now (caller does not hold mu): 0 this member, 1 another (its peer URL in url),
 * -1 none known. */
int  standin_leader_url(standin *s, char *url, size_t cap);
void standin_peer_vote(standin *s, godis_reply **a, size_t n, sbuf *out);
void standin_peer_heartbeat(standin *s, godis_reply **a, size_t n, sbuf *out);
void standin_peer_leading(standin *s, godis_reply **a, size_t n, sbuf *out);
void standin_cmd_stats(standin *s, sbuf *out);
void standin_cmd_events(standin *s, sbuf *out);
void standin_cmd_campaign(standin *s, sbuf *out);
/* After a membership change (caller holds mu): a leader checks its majority again. */
void standin_recheck_quorum(standin *s);
/* A joiner's first contact (its first sync) restarts its election timer, as raft's first
 * message from the leader does (caller holds mu). */
void standin_first_contact(standin *s);
/* Records a notable event with the wall-clock time (caller holds mu). */
void standin_event(standin *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* main.c: starts fn(arg) on a detached thread with a small stack; 0 ok, -1 failed. */
int standin_spawn(void *(*fn)(void *), void *arg);

/* commands.c */
void *standin_conn_thread(void *arg);        /* arg: heap int with the fd */
void  standin_request_exit(standin *s, char why);  /* 'T' signal, 'F' forgotten */

extern standin g_standin;

#endif
