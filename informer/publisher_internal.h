/* publisher_internal.h — the publisher's state, for publisher.c and its unit test
 * (test_informer_pub reads the wake-up eventfd to prove inf_pub_wake makes it readable). */
#ifndef INF_PUBLISHER_INTERNAL_H
#define INF_PUBLISHER_INTERNAL_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "informer.h"
#include "gd_proto.h"

#define NTOPICS (GD_NSHARDS + 1)     /* shards, then broadcast */
#define B_INDEX GD_NSHARDS
#define MAX_REQ_FRAMES 8

struct inf_pub {
    inf_pub_cfg cfg;
    /* Guards the store, the sequence numbers and the PUB socket: the reflector thread
     * publishes watch events directly while this thread serves the ROUTER and timers
     * (ZeroMQ allows a socket to be used by several threads one at a time, with a full
     * memory barrier between them — which the mutex is). */
    pthread_mutex_t mu;
    char kind[96];
    void *pub, *router;
    inf_store *store;
    uint64_t seq;
    uint64_t topic_seq[NTOPICS];
    char instance[17];
    char last_rv[64];
    bool synced;
    bool trim_pending;             /* trim the heap again once the list's messages left */
    int64_t next_heartbeat_ms, next_resync_ms;
    int64_t requested_hb_ms;       /* when a HEARTBEAT request last published one */
    uint64_t requested_hb_seq;     /* and that heartbeat's global seq */
    int wake_fd;                   /* eventfd: inf_pub_wake interrupts the loop's poll */
};

#endif
