/* harness_informer.h — helpers of itest_informer.c: the devcluster's API server, the real
 * bin/godis-informer process and a recording gd_sub subscriber. Include after <cmocka.h>.
 * Everything fails the running cmocka test on errors it cannot ride out. */
#ifndef HARNESS_INFORMER_H
#define HARNESS_INFORMER_H
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "gd_err.h"
#include "gd_map.h"
#include "gd_sub.h"
#include "k8s_client.h"

typedef struct {
    k8s_client *c;              /* NULL: no devcluster, API tests skip */
    void *zctx;
    char root[PATH_MAX];        /* repository root */
    char tmp[256];              /* per-run scratch dir */
    int seq;
    /* what a failed test left behind (cmocka longjmps out of it): cleaned by test_teardown */
    pid_t pids[8];
    gd_sub *subs[8];
    bool private_apiserver;
    int apiserver_port;         /* the private API server's port, held by port_hold_fd */
    int port_hold_fd;           /* bound with SO_REUSEPORT for the whole run (apiserver()) */
} informer_itest;
extern informer_itest IT;

/* tests/integration/informer-apiserver.sh start|stop: a private API server; returns its
 * port. The port is picked once and held for the whole run by a socket of this process
 * bound with SO_REUSEPORT (the API server binds it with --permit-port-sharing), so while the
 * API server is down nobody else can take it: a restart comes back on the same port, the
 * one the informer's kubeconfig names (a port released while the API server is down could
 * be taken by another process: "bind: address already in use"). */
int apiserver(const char *verb);

/* cmocka group setup/teardown and the per-test teardown (kills what the test left). */
int group_setup(void **state);
int group_teardown(void **state);
int test_teardown(void **state);

/* ---- the API: ConfigMaps with data.v and an optional cluster-name label ---- */
/* Creates namespace "itest-inf-<what>-<pid>-<seq>" (name into ns). */
void make_ns(char *ns, size_t cap, const char *what);
void del_ns(const char *ns);
/* The start of every test against the API server: skips it without a devcluster, else
 * make_ns. */
void api_test_ns(char *ns, size_t cap, const char *what);
/* Writes retry transient failures; rv (may be NULL) gets the result's resourceVersion. */
gd_err cm_create(const char *ns, const char *name, const char *label, const char *val,
                 char *rv, size_t cap);
/* Merge-patches data.v (and the label when label is not NULL). */
gd_err cm_patch(const char *ns, const char *name, const char *label, const char *val,
                char *rv, size_t cap);
gd_err cm_delete(const char *ns, const char *name);

/* One thread's share of a bulk write: items [from, to) of namespace ns. */
typedef struct {
    const char *ns;
    int from, to;
    gd_err err;
} creator;
/* Runs fn (taking a creator *) over [0, n) in `threads` (≤ 16) parallel ranges; asserts
 * that every range's writes succeeded. */
void run_ranges(void *(*fn)(void *), const char *ns, int n, int threads);

/* ---- the informer process ---- */
typedef struct {
    pid_t pid;
    char pub[400], snap[400], log[400];
} informer;
/* Watches ConfigMaps of ns; kubeconfig NULL: $KUBECONFIG; extra flags NULL-terminated. */
void start_informer(informer *inf, const char *ns, const char *kubeconfig,
                    const char *const *extra);
/* SIGTERM; asserts exit 0 within 10 s. */
void stop_informer(informer *inf);
bool log_contains(const informer *inf, const char *needle);
/* One request on its ROUTER; collects OBJ key → rv into m (if given); returns the last
 * reply's frame 2 (STATS text or END seq) malloc'd. */
char *router_request(const informer *inf, const char *cmd, const char *arg, gd_map *m);
/* A counter of its STATS reply (the first sample with labels); -1 if absent. */
long long stat_value(const informer *inf, const char *metric);

/* ---- following it ---- */
typedef struct {
    pthread_mutex_t mu;
    gd_map *log;         /* key → "A:rv,M:rv,D," */
    int deleted;
} recorder;
/* A subscriber to every object; events recorded into r (may be NULL); rcvhwm 0: default. */
gd_sub *follow(const informer *inf, recorder *r, int rcvhwm);
void unfollow(gd_sub **s);
void recorder_free(recorder *r);
/* Is the replica exactly the map (key → rv)? */
bool replica_equals(gd_sub *s, gd_map *want, bool verbose);
/* Polls until the replica equals a fresh list (re-listed every second); fails at timeout. */
void converge(gd_sub *s, const char *ns, const char *selector, int timeout_ms);
void wait_synced(gd_sub *s, int timeout_ms);

/* Runs cmd; its stdout into out (when given); its exit status, -1 when it did not exit. */
int run_cmd(const char *cmd, char *out, size_t cap);
#endif
