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
} standin_proc;

const char *si_bin_path(void);
void si_msleep(int ms);
/* Waits up to ms for the child; returns its raw status, or -1 if it is still running. */
int  si_wait_exit(pid_t pid, int ms);
void si_mkdir_tmp(standin_proc *p);
void si_rm_tmp(standin_proc *p);
/* Starts `godis-standin cluster <args>` with extra env entries; waits for its port file.
 * Returns 0 when listening, else the exit status of a child that died first. */
int  si_start(standin_proc *p, const char *const *args, const char *const *extra_env);
/* Starts with a WAL under the temp dir as the only member of its initial cluster. */
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
