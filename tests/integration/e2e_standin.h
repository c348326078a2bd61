/* e2e_standin.h — what the godis stand-ins saw, for the membership-safety tests: their
 * event logs (`standin events`: elections, leaders, membership changes, with wall-clock
 * times), their counters, their fault switches, and the moment a member's process ended
 * (seen as the end of a connection held open to it, not by polling). */
#ifndef E2E_STANDIN_H
#define E2E_STANDIN_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "k8s_client.h"

#define E2E_STANDIN_PEER_PORT 6300

typedef struct {
    int64_t wall_us;
    char text[96];          /* "vote-request 3 term 7", "applied-forget 3", "leader 2 term 5" ... */
} e2e_sev;

/* The pod IP of member <godis>'s one live pod ("" when none): false when there is none. */
bool e2e_member_ip(k8s_client *c, const char *ns, const char *godis, char *ip, size_t cap);

/* `standin events` of the stand-in at ip (client port); the count, or -1. */
int e2e_standin_events(const char *ip, e2e_sev *out, int cap);
/* One integer of `standin stats`, or -1. */
long long e2e_standin_stat(const char *ip, const char *key);
/* Sends `standin <args...>` (argc strings) to ip:port; true on +OK. */
bool e2e_standin_cmd(const char *ip, int port, int argc, const char *const *argv);

/* The earliest time any of the stand-ins at ips[] applied `cluster forget id` (µs since the
 * epoch), or 0 when none did. */
int64_t e2e_forget_time_us(char ips[][64], int n, int64_t id);
/* Elections the stand-ins at ips[] saw in [from_us, to_us): distinct terms of the vote
 * requests they received and of their own campaigns. */
int e2e_elections_seen(char ips[][64], int n, int64_t from_us, int64_t to_us);
/* Vote requests from candidate `id` the stand-ins at ips[] received at or after from_us. */
int e2e_vote_requests_from(char ips[][64], int n, int64_t id, int64_t from_us);

/* Holds a connection open to a member's client port; a thread notes when the process
 * ends (the connection is closed by the kernel as the process dies). */
typedef struct {
    int64_t id;
    char ip[64];
    int fd;
    pthread_t th;
    volatile int stopping;
    volatile int64_t end_us;        /* 0 while the process runs */
} e2e_member_watch;
bool e2e_member_watch_start(e2e_member_watch *w, int64_t id, const char *ip);
/* Waits up to timeout_ms for the end; returns end_us (0: still running). Frees the watch. */
int64_t e2e_member_watch_end(e2e_member_watch *w, int timeout_ms);

#endif
