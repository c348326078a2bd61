/* control.h — the manager's end of GDW1 (docs/PROTOCOL.md section 2): a ROUTER socket,
 * one DEALER per worker. This module only frames and checks messages and keeps each
 * worker's connection (identity, sequence numbers, when it was last heard); what to do with
 * them is the manager's business (manager.c). Single-threaded: the main loop owns it. */
#ifndef GD_CONTROL_H
#define GD_CONTROL_H
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include "gd_err.h"
#include "shards.h"

typedef struct {
    /* HELLO with a well-formed identity "w<index>-<pid>". Return true to accept it (the
     * connection then becomes the worker's current one). */
    bool (*on_hello)(void *ud, int index, int pid);
    void (*on_revoked)(void *ud, int index, uint64_t seq, const int *shards, int n,
                       const char *pending_json);
    void (*on_pong)(void *ud, int index, uint64_t seq, const char *metrics, size_t len);
} gd_control_handlers;

typedef struct gd_control gd_control;

/* Binds a ROUTER on endpoint in zmq context zctx. NULL on failure (logged). */
gd_control *gd_control_new(void *zctx, const char *endpoint, const gd_control_handlers *h,
                           void *ud);
void  gd_control_destroy(gd_control **c);
void *gd_control_socket(gd_control *c);      /* for zmq_poll */
/* Reads and dispatches every queued message without blocking. Returns how many. */
int   gd_control_dispatch(gd_control *c);

/* Sends to worker index over its accepted connection. GD_ERR_ARG when it has none,
 * GD_ERR_ZMQ when the peer is gone. *seq_out (may be NULL) receives the seq used. */
gd_err gd_control_assign(gd_control *c, int index, const int *shards, int n,
                         const char *pending_json, uint64_t *seq_out);
gd_err gd_control_revoke(gd_control *c, int index, const int *shards, int n, uint64_t *seq_out);
gd_err gd_control_lease(gd_control *c, int index, int64_t deadline_wall_ms);
gd_err gd_control_ping(gd_control *c, int index);
gd_err gd_control_stop(gd_control *c, int index, int64_t drain_deadline_wall_ms);
/* Forgets the worker's connection (its process was reaped). */
void   gd_control_forget(gd_control *c, int index);
bool   gd_control_connected(gd_control *c, int index);
/* Monotonic ms when the worker was last heard (any message), 0 never. */
int64_t gd_control_last_heard(gd_control *c, int index);
/* Messages dropped as malformed or from unknown peers (metrics). */
uint64_t gd_control_rejected(gd_control *c);

#endif
