/* control.h — the worker side of GDW1 (docs/PROTOCOL.md §2): parsing the manager's
 * messages and the shard lists, building the worker's. Pure functions over frames so they
 * are tested without sockets; worker_link.c does the ZeroMQ I/O. */
#ifndef WORKER_CONTROL_H
#define WORKER_CONTROL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "gd_err.h"
#include "gd_proto.h"

typedef enum {
    GDW_ASSIGN = 1,
    GDW_REVOKE,
    GDW_LEASE,
    GDW_PING,
    GDW_STOP,
    GDW_ERROR,
} gdw_type;

typedef struct {
    const void *data;
    size_t len;
} gdw_frame;

typedef struct {
    gdw_type type;
    uint64_t seq;
    int shards[GD_NSHARDS];     /* ASSIGN/REVOKE, ascending, no duplicates */
    int nshards;
    cJSON *pending;             /* ASSIGN: {"controller":["key",...]} (owned; may be NULL) */
    int64_t deadline_ms;        /* LEASE / STOP: wall-clock ms */
    /* LEASE to a remote worker (PROTOCOL.md §3.3): the stamp (our monotonic ms) of our last
     * HELLO/PONG the manager had, and the ms the lease lasts from it; has_remote false
     * for a local LEASE */
    bool has_remote;
    int64_t echo_ms, remaining_ms;
    char text[256];             /* ERROR: the peer's message */
} gdw_msg;

/* Parses the frames after the ROUTER identity (a DEALER receives exactly those). On error
 * returns GD_ERR_PROTOCOL with a one-line reason in why. gdw_msg_clear frees pending. */
gd_err gdw_parse(const gdw_frame *f, int n, gdw_msg *m, char *why, size_t cap);
void   gdw_msg_clear(gdw_msg *m);

/* Shard lists: "3,17,200", also ranges "0-255" and "all" (for --shards). Sorted, deduped.
 * "" is the empty list. GD_ERR_PARSE on anything else, with the reason in why. */
gd_err gdw_parse_shards(const char *s, int *out, int *n, char *why, size_t cap);
/* "3,17,200" (malloc'd; "" for none). */
char  *gdw_format_shards(const int *shards, int n);

/* Validates a pending-keys object: an object of arrays of strings. */
gd_err gdw_check_pending(const cJSON *pending, char *why, size_t cap);

#endif
