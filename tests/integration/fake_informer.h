/* fake_informer.h — a GodisCluster informer played by a test (GDI1 PUB + snapshot ROUTER,
 * docs/PROTOCOL.md §1) on ipc:// sockets in a directory of the test's, for driving workers
 * without an API server (itest_worker_gdw). Objects are GodisClusters "ns<i%10>/c<i>" with
 * 3 replicas; every change is published with the global and per-topic sequences a real
 * informer gives, snapshots are served from the objects as they are now. Single-threaded:
 * the test calls finf_serve while it waits. */
#ifndef FAKE_INFORMER_H
#define FAKE_INFORMER_H
#include <stdbool.h>
#include <stdint.h>
#include "gd_proto.h"

#define FINF_MAX_OBJS 500

typedef struct {
    char key[64];
    char rv[24];
    int shard;
    char *body;
} fobj;

typedef struct {
    void *pub, *snap;
    uint64_t gseq, tseq[GD_NSHARDS + 1];
    fobj objs[FINF_MAX_OBJS];
    int nobjs;
    uint64_t rv;
    int64_t last_hb_ms;
    /* true: answer a HEARTBEAT request with ERROR, as an informer older than the request */
    bool predates_heartbeat_request;
    int heartbeat_requests;     /* HEARTBEAT requests received */
} finf;

/* Binds <dir>/GodisCluster.pub and .snap; track is given each socket as it is created (the
 * test closes them, also after a failed assertion). */
finf *finf_new(void *zctx, const char *dir, void *(*track)(void *sock));
void  finf_destroy(finf *fi);
/* Creates or updates key i with a new generation (ADDED or MODIFIED). */
void  finf_put_cluster(finf *fi, int i, int generation);
/* A status message on the broadcast topic: "HEARTBEAT" or "SYNCED". */
void  finf_heartbeat(finf *fi, const char *type);
/* Serves snapshot and heartbeat requests and heartbeats (every 200 ms) for up to ms. */
void  finf_serve(finf *fi, int ms);
/* Sends n frames as one message. */
void  finf_sendv(void *sock, int n, const char **f);

#endif
