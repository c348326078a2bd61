/* remote_pair.h — the manager pair of the remote-worker tests (itest_remote.c,
 * itest_remote_pods.c, issue 22): two bin/godis-manager replicas with --workers 0 (only
 * workers in other processes reconcile), listening on tcp:// with CURVE on 127.0.0.1 and
 * 127.0.0.2 from a port base of this run, leader election on a Lease the test names, and
 * what both tests ask of them: who leads, and which remote workers own the shards. */
#ifndef REMOTE_PAIR_H
#define REMOTE_PAIR_H
#include <stdbool.h>
#include <sys/types.h>
#include "k8s_client.h"

typedef struct {
    char dir[128];                 /* keys and the managers' runtime directories */
    char logdir[256];
    char lease_ns[128], lease[64]; /* --leader-elect-resource-namespace / -name */
    char allow[300];               /* --curve-allow */
    char addr[2][16], ident[2][64], mgrlog[2][300], rundir[2][300];
    int base, metrics[2];          /* remote ports base..base+2*kinds (the control port, a
                                    * PUB and a snapshot port per watched kind), metrics the
                                    * two after them */
    pid_t mgr[2];
} remote_pair;

/* Ports a run takes from its base: 1 + 2 x 9 watched kinds + 2 metrics = 21, and room for
 * one more kind (rp_init refuses a domain table that needs more). */
#define RP_PORTS 24

/* Fills r: its directory (created here, 0700), log directory and identities named after tag
 * and this pid, RP_PORTS ports from base (or from the first block after it that nothing
 * listens on). The allow-list path is dir/allow_name. False when
 * the directory cannot be made or the domain's kinds need more ports. */
bool rp_init(remote_pair *r, const char *tag, const char *lease_ns, const char *lease,
             const char *allow_name, int base);
/* bin/godis-manager keygen: dir/<name>.key and dir/<name>.pub. */
bool rp_keygen(const remote_pair *r, const char *name);
/* Starts replica i (0 or 1); false when it could not be spawned. */
bool rp_spawn_manager(remote_pair *r, int i);
/* The replica holding the Lease (0 or 1), -1 while none; rp_wait_leader waits up to
 * timeout_ms for one. */
int rp_leader(k8s_client *c, const remote_pair *r);
int rp_wait_leader(k8s_client *c, const remote_pair *r, int timeout_ms);
/* From one read of the leader's /metrics: how many remote slots (32..63) own shards, and
 * how many shards they own together; -1 when /metrics does not answer. */
int rp_owning_slots(const remote_pair *r, int ldr, int *total);
/* Waits until exactly `slots` remote workers own every shard between them (none
 * unassigned), with at least `losses` remote workers declared gone so far (< 0: any). */
bool rp_own_all(const remote_pair *r, int ldr, int slots, double losses, int timeout_ms);

#endif
