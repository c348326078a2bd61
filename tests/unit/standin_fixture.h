/* standin_fixture.h — bin/godis-standin processes for the stand-in's unit tests: each
 * listens on 127.0.0.1 port 0 and reports its port through --port-file, so tests never
 * collide on ports; GODIS_STANDIN_BIN overrides the path. Used by test_standin.c (one
 * process: verbs, crash hazards, flags, faults) and test_standin_raft.c (several members:
 * elections, replication). */
#ifndef TEST_STANDIN_FIXTURE_H
#define TEST_STANDIN_FIXTURE_H
#include <stddef.h>
#include <sys/types.h>
#include "godis_client.h"

typedef struct {
    char dir[128];          /* temp dir: wal/, snap/, ports, log */
    pid_t pid;
    int port;
    const char *host;       /* where its client port listens: si_host(), NULL 127.0.0.1 */
} standin_proc;

/* How long a stand-in may take to start, to exit or to win an election before the test
 * gives up on it: only a bound against a hang, never what the test measures. On a loaded
 * machine a clean shutdown waited more than 3 s for an fsync in progress (see si_stop). */
#define SI_BOUND_MS 30000

const char *si_bin_path(void);
/* This test process's own loopback address, 127.240-254.x.y (the devcluster's pod IPs are
 * 127.16-239.x.y): stand-ins of one test listen there, so no other process's stand-in, a
 * test's or one left running by a failed run, can reach them through a port it once knew. */
const char *si_host(void);
/* A port on si_host() reserved for this process's lifetime (a socket bound with
 * SO_REUSEADDR, never listening): the stand-in given it binds it (it sets SO_REUSEADDR
 * too), again after a restart, while nothing else can take it in between, and a member that
 * never runs has an address nobody answers on. */
int  si_reserve_port(void);
void si_msleep(int ms);
/* Waits up to ms for the child; returns its raw status, or -1 if it is still running. */
int  si_wait_exit(pid_t pid, int ms);
void si_mkdir_tmp(standin_proc *p);
void si_rm_tmp(standin_proc *p);
/* Starts `godis-standin cluster <args>` with extra env entries; waits for its port file.
 * Returns 0 when listening, else the exit status of a child that died first. */
int  si_start(standin_proc *p, const char *const *args, const char *const *extra_env);
/* Starts with a WAL under the temp dir as the only member of its initial cluster, listening
 * on si_host(). */
int  si_start_std(standin_proc *p, const char *id, const char *const *more);
/* SIGINT: godis's clean shutdown, exit 0. */
void si_stop(standin_proc *p);
godis_client *si_client(const standin_proc *p, int reply_ms);
/* `standin stats` field `key` (an integer), or -1. */
long long si_stat_of(const standin_proc *p, const char *key);
/* Makes p the leader now (`standin campaign`, as a leader transfer would) and waits for it. */
void si_lead(const standin_proc *p);
/* How many of p's events start with `prefix` and were recorded at or after since_us. */
int  si_count_events(const standin_proc *p, const char *prefix, long long since_us);
long long si_wall_us(void);
/* Membership as a sorted "1,4" string. */
void si_members_str(godis_client *c, char *out, size_t cap);
/* Sends raw bytes the client would never send, then closes. */
void si_send_raw(const standin_proc *p, const char *bytes);

#endif
