/* gd_sub.h — subscriber side of the informer publication protocol (GDI1, docs/PROTOCOL.md §1).
 *
 * One gd_sub follows one informer (one kind): it subscribes to a set of shard topics on the
 * informer's PUB socket, fetches a snapshot of those shards from its ROUTER socket, keeps a
 * replica (key → shard, resourceVersion and, unless keys_only, the parsed object) and
 * applies updates strictly in order. The worker runs keys_only: its cache holds the
 * objects, the replica only what gap repair needs.
 * Gaps (a per-topic sequence that jumps, a HEARTBEAT listing a newer topic sequence than we
 * have, an informer restart) are repaired by re-fetching a snapshot of the affected topics
 * and diffing it against the replica, so the owner's handler sees ADDED/MODIFIED/DELETED for
 * exactly what changed — never a silent loss.
 *
 * Threads: the gd_sub itself (its sockets, gd_sub_set_shards, gd_sub_poll) belongs to ONE
 * thread, as ZeroMQ sockets do. The replica is behind a read-write lock, so gd_sub_get /
 * gd_sub_get_rv / gd_sub_count may be called from any thread.
 * The event handler runs on the owning thread, after the replica was updated and without the
 * lock held (it may call gd_sub_get). Snapshots are fetched synchronously inside
 * gd_sub_poll/gd_sub_set_shards (bounded by snapshot_timeout_ms); PUB messages that
 * arrive meanwhile are buffered and applied after the snapshot (CHP / clone pattern). */
#ifndef GD_SUB_H
#define GD_SUB_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "gd_curve.h"
#include "gd_err.h"
#include "gd_proto.h"

typedef struct gd_sub gd_sub;

/* The events a handler sees are gd_ev's (gd_proto.h): ADDED (new key in the replica, old ==
 * NULL), MODIFIED (key replaced: old and new set; a resync may repeat the same rv), DELETED
 * (key removed: new == NULL, old is the last known object) and SYNCED (the informer finished
 * a (re)list, or our first snapshot said it had: from now on gd_sub_synced() is true;
 * key/objects NULL). */

/* Called on the owning thread for every change applied to the replica. old/new are
 * borrowed and valid only during the call. shard is 0..GD_NSHARDS-1 or GD_SHARD_BROADCAST.
 * resync is true when the change was found by diffing a snapshot (after a gap, a restart of
 * the informer or newly assigned shards) rather than received as a PUB event. */
typedef void (*gd_sub_event_fn)(void *ud, gd_ev ev, const char *key, int shard,
                                const cJSON *old_obj, const cJSON *new_obj, bool resync);

typedef struct {
    const char *kind;              /* for logs, e.g. "Pod" (copied) */
    const char *pub_endpoint;      /* informer PUB, e.g. ipc:///run/x/Pod.pub (copied) */
    const char *snap_endpoint;     /* informer ROUTER, e.g. ipc:///run/x/Pod.snap (copied) */
    int  rcvhwm;                   /* SUB receive high-water mark; 0 → 100000 */
    int  snapshot_timeout_ms;      /* one snapshot request; 0 → 10000 */
    int  max_batch;                /* gd_sub_poll: messages per call; 0 → 1000 */
    gd_sub_event_fn on_event;      /* may be NULL */
    void *ud;
    /* The replica keeps key, shard and resourceVersion only — enough for gap repair — and
     * the owner keeps the objects: inside on_event (ADDED/MODIFIED) it takes new_obj with
     * gd_sub_steal (or leaves it, and gd_sub frees it). Saves a copy of every object (the
     * worker's indexed cache is the replica). Then old_obj is always NULL, gd_sub_get
     * returns NULL. */
    bool keys_only;
    /* Non-NULL: set (by any thread) when the owner is stopping; the snapshot waits inside
     * gd_sub_set_shards/gd_sub_poll give up within ~100 ms (GD_ERR_CANCELLED), so a
     * stopping process is not held up by an informer that is not synced yet. */
    const atomic_bool *stop;
    /* tcp:// endpoints (remote workers, PROTOCOL.md §3.2): the client's key pair and the
     * server's public key (both copied); ipc:// needs neither. */
    const gd_curve_keys *curve;
    const char *server_public;
} gd_sub_opts;
void gd_sub_opts_default(gd_sub_opts *o);

/* zctx: a ZeroMQ context (borrowed, must outlive the gd_sub). Connects but subscribes to
 * nothing until gd_sub_set_shards / gd_sub_set_all. NULL on failure (bad endpoint, NOMEM). */
gd_sub *gd_sub_new(void *zctx, const gd_sub_opts *o);
void    gd_sub_destroy(gd_sub **s);

/* Follows exactly these shards plus the broadcast topic. Newly added shards are snapshotted
 * (their objects reported as ADDED with resync=true); objects of shards no longer followed
 * are dropped from the replica WITHOUT events (a revoked shard is not a deletion).
 * GD_ERR_TIMEOUT when the informer did not answer the snapshot in time: the shards stay
 * followed and the snapshot is retried by later gd_sub_poll calls. */
gd_err gd_sub_set_shards(gd_sub *s, const int *shards, size_t n);
/* Follows every topic (all shards and broadcast), e.g. for Nodes or for the manager. */
gd_err gd_sub_set_all(gd_sub *s);

/* keys_only: inside on_event for ADDED/MODIFIED, takes new_obj (the caller owns it from
 * now on; it stays valid). NULL outside the handler, when already taken, or without
 * keys_only. */
cJSON *gd_sub_steal(gd_sub *s);

/* Waits up to timeout_ms for messages, applies those received (up to max_batch), repairs
 * any gap found (synchronous snapshot) and retries a pending snapshot. Returns GD_OK, or the
 * error of a failed snapshot (the caller just keeps calling; the gap stays pending). */
gd_err gd_sub_poll(gd_sub *s, int timeout_ms);

/* True once a SYNCED was seen (or a snapshot said the informer had synced) and no snapshot
 * repair is pending. */
bool    gd_sub_synced(const gd_sub *s);
/* The informer's last resourceVersion as carried by the latest message ("" if none), copied
 * into buf. Lets a worker check "has the cache caught up with my write" (read your writes). */
void    gd_sub_last_rv(const gd_sub *s, char *buf, size_t cap);

/* ---- the replica: safe from any thread ---- */
/* Deep copy of the cached object (caller cJSON_Delete's it), or NULL when absent. */
cJSON  *gd_sub_get(gd_sub *s, const char *key);
/* resourceVersion of the cached object into buf; false when absent. */
bool    gd_sub_get_rv(gd_sub *s, const char *key, char *buf, size_t cap);
size_t  gd_sub_count(gd_sub *s);

typedef struct {
    uint64_t messages;             /* PUB messages received */
    uint64_t applied;              /* ADDED/MODIFIED/DELETED applied from PUB */
    uint64_t gaps;                 /* gaps detected */
    uint64_t snapshots;            /* snapshots applied */
    uint64_t snapshot_failures;    /* timeouts / protocol errors */
    uint64_t protocol_errors;      /* malformed messages dropped */
    uint64_t stale;                /* messages older than the replica's state, skipped */
} gd_sub_stats;
void gd_sub_get_stats(const gd_sub *s, gd_sub_stats *out);

#endif
