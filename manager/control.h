/* control.h — the manager's end of GDW1 (docs/PROTOCOL.md section 2): a ROUTER socket,
 * one DEALER per worker. This module only frames and checks messages and keeps each
 * worker's connection (identity, sequence numbers, when it was last heard); what to do with
 * them is the manager's business (manager.c). Single-threaded: the main loop owns it. */
#ifndef MGR_CONTROL_H
#define MGR_CONTROL_H
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include "gd_err.h"
#include "gd_curve.h"
#include "shards.h"

typedef struct {
    /* HELLO with a well-formed identity "w<index>-<pid>". Return true to accept it (the
     * connection then becomes the worker's current one). */
    bool (*on_hello)(void *ud, int index, int pid);
    void (*on_revoked)(void *ud, int index, uint64_t seq, const int *shards, int n,
                       const char *pending_json);
    void (*on_pong)(void *ud, int index, uint64_t seq, const char *metrics, size_t len);
    /* HELLO from a remote worker (PROTOCOL.md §3.3) that got slot index (MGR_REMOTE_FIRST
     * and up); return true to accept. NULL: remote workers are refused. */
    bool (*on_remote_hello)(void *ud, int index, const char *name);
} mgr_control_handlers;

/* Remote workers get the slots from here up (local workers: 0 .. MGR_REMOTE_FIRST-1). */
#define MGR_REMOTE_FIRST 32

typedef struct mgr_control mgr_control;

/* Binds a ROUTER on endpoint in zmq context zctx. NULL on failure (logged). */
mgr_control *mgr_control_new(void *zctx, const char *endpoint, const mgr_control_handlers *h,
                           void *ud);
void  mgr_control_destroy(mgr_control **c);
/* Also binds a tcp:// endpoint with CURVE (server keys) for remote workers; their LEASE is
 * capped at lease_cap_ms after the stamp of their last PONG (PROTOCOL.md §3.3). */
gd_err mgr_control_bind_remote(mgr_control *c, const char *endpoint, const gd_curve_keys *keys,
                               int64_t lease_cap_ms);
bool   mgr_control_is_remote(mgr_control *c, int index);
/* Monotonic ms after which the remote worker's last LEASE has expired (0: none sent). */
int64_t mgr_control_remote_lease_end(mgr_control *c, int index);
void *mgr_control_socket(mgr_control *c);      /* for zmq_poll */
/* Reads and dispatches every queued message without blocking. Returns how many. */
int   mgr_control_dispatch(mgr_control *c);

/* Sends to worker index over its accepted connection. GD_ERR_ARG when it has none,
 * GD_ERR_ZMQ when the peer is gone. *seq_out (may be NULL) receives the seq used. */
gd_err mgr_control_assign(mgr_control *c, int index, const int *shards, int n,
                         const char *pending_json, uint64_t *seq_out);
gd_err mgr_control_revoke(mgr_control *c, int index, const int *shards, int n, uint64_t *seq_out);
gd_err mgr_control_lease(mgr_control *c, int index, int64_t deadline_wall_ms);
gd_err mgr_control_ping(mgr_control *c, int index);
gd_err mgr_control_stop(mgr_control *c, int index, int64_t drain_deadline_wall_ms);
/* Forgets the worker's connection (its process was reaped). */
void   mgr_control_forget(mgr_control *c, int index);
bool   mgr_control_connected(mgr_control *c, int index);
/* Monotonic ms when the worker was last heard (any message), 0 never. */
int64_t mgr_control_last_heard(mgr_control *c, int index);
/* Messages dropped as malformed or from unknown peers (metrics). */
uint64_t mgr_control_rejected(mgr_control *c);

#endif
