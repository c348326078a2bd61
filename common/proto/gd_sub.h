/* gd_sub.h — subscriber side of the informer publication protocol (GDI1, docs/PROTOCOL.md §1).
 *
 * One gd_sub follows one informer (one kind): it subscribes to a set of shard topics on the
 * informer's PUB socket, fetches a snapshot of those shards from its ROUTER socket, keeps a
 * replica (per key: the object and the record gap repair and ordering need, gd_sub_rec) and
 * applies updates strictly in order. Where the replica lives is the owner's choice
 * (gd_sub_store): by default a map inside the gd_sub; the worker passes its indexed cache,
 * so it keeps one record per key (worker/runtime/cache_sub.h).
 * Gaps (a per-topic sequence that jumps, a HEARTBEAT listing a newer topic sequence than we
 * have, an informer restart) are repaired by re-fetching a snapshot of the affected topics
 * and diffing it against the replica, so the owner's handler sees ADDED/MODIFIED/DELETED for
 * exactly what changed — never a silent loss.
 *
 * Threads: the gd_sub itself (its sockets, gd_sub_set_shards, gd_sub_poll) belongs to ONE
 * thread, as ZeroMQ sockets do, and only that thread changes the replica. The default store
 * is behind a read-write lock (a given store must be as thread-safe as its readers need), so
 * gd_sub_get / gd_sub_get_rv / gd_sub_count may be called from any thread.
 * The event handler runs on the owning thread, after the replica was updated and without a
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

/* What the protocol keeps per key beside the object (PROTOCOL.md §1, subscriber algorithm). */
typedef struct {
    int shard;                     /* the topic it came on: 0..GD_NSHARDS-1 or broadcast */
    /* The informer's global sequence at which this state was current: the PUB message's,
     * or the snapshot END's. A PUB message with a lower or equal one is older than this
     * state (an object that moved shards: the old topic's DELETED, read after a snapshot of
     * the new topic that already has it) and is skipped. */
    uint64_t gseq;
    char rv[64];                   /* resourceVersion the message carried */
} gd_sub_rec;

/* The replica's storage: one entry per key holding the object and its gd_sub_rec. The
 * gd_sub calls the writers (put, take, drop) on its owning thread only, so an object it was
 * handed stays valid on that thread until the gd_sub replaces or removes it. */
typedef struct {
    void *ud;
    /* key's record into *rec; false when absent */
    bool   (*get)(void *ud, const char *key, gd_sub_rec *rec);
    /* stores *obj (taken: set to NULL on success) with rec under key; the object key had
     * before goes to *old (NULL when none; the gd_sub frees it) */
    gd_err (*put)(void *ud, const char *key, const gd_sub_rec *rec, cJSON **obj, cJSON **old);
    /* removes key: its object to *old (the gd_sub frees it), its record to *rec; false when
     * absent */
    bool   (*take)(void *ud, const char *key, cJSON **old, gd_sub_rec *rec);
    /* fn for every key, in any order; fn must not call into the store */
    void   (*each)(void *ud, void (*fn)(void *fud, const char *key, const gd_sub_rec *rec),
                   void *fud);
    /* removes, without telling anyone, every key whose shard is one of shards[0..n) (a
     * revoked shard is not a deletion); GD_SHARD_BROADCAST may be among them */
    void   (*drop)(void *ud, const int *shards, int n);
    cJSON *(*copy)(void *ud, const char *key);     /* deep copy, NULL when absent */
    /* Optional (may be NULL): key's record becomes rec (a republish of the same shard and
     * resourceVersion, only the sequence is new) and its object is returned, borrowed as
     * above; NULL when absent. Lets a resync skip parsing and storing an object it has. */
    const cJSON *(*restamp)(void *ud, const char *key, const gd_sub_rec *rec);
    size_t (*count)(void *ud);
    /* Optional: takes an object put or take handed back, once the handler has seen it
     * (a store whose readers may still borrow it frees it later); NULL: cJSON_Delete. */
    void   (*release)(void *ud, cJSON *old);
} gd_sub_store;

typedef struct {
    const char *kind;              /* for logs, e.g. "Pod" (copied) */
    const char *pub_endpoint;      /* informer PUB, e.g. ipc:///run/x/Pod.pub (copied) */
    const char *snap_endpoint;     /* informer ROUTER, e.g. ipc:///run/x/Pod.snap (copied) */
    int  rcvhwm;                   /* SUB receive high-water mark; 0 → 100000 */
    int  snapshot_timeout_ms;      /* how long a snapshot's answer may pause (its first
                                    * message included); 0 → 10000 */
    int  max_batch;                /* gd_sub_poll: messages per call; 0 → 1000 */
    gd_sub_event_fn on_event;      /* may be NULL */
    void *ud;
    /* Where the replica lives (copied); NULL: a map inside the gd_sub. */
    const gd_sub_store *store;
    /* Non-NULL: set (by any thread) when the owner is stopping; the snapshot waits inside
     * gd_sub_set_shards/gd_sub_poll give up within ~100 ms (GD_ERR_CANCELLED), so a
     * stopping process is not held up by an informer that is not synced yet. */
    const atomic_bool *stop;
    /* >= 0: a file descriptor (an eventfd) the owner writes to end a gd_sub_poll wait early,
     * e.g. on a new follow set or when stopping; gd_sub_poll reads it empty. -1 (the
     * default): none. Borrowed. */
    int wake_fd;
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

/* Waits up to timeout_ms for messages (less when a snapshot retry falls due sooner; a write
 * to wake_fd ends the wait), applies those received (up to max_batch), repairs any gap found
 * (synchronous snapshot) and retries a pending snapshot. Returns GD_OK, or the error of a
 * failed snapshot (the caller just keeps calling; the gap stays pending). */
gd_err gd_sub_poll(gd_sub *s, int timeout_ms);

/* True once a SYNCED was seen (or a snapshot said the informer had synced) and no snapshot
 * repair is pending. */
bool    gd_sub_synced(const gd_sub *s);
/* The informer finished its initial list (a SYNCED, or a snapshot END that said so): an
 * ADDED before that is part of the initial list, not a real change (PROTOCOL.md §1,
 * "Origin of an event"). Owning thread only. */
bool    gd_sub_informer_listed(const gd_sub *s);
/* The informer's last resourceVersion as carried by the latest message ("" if none), copied
 * into buf. Lets a worker check "has the cache caught up with my write" (read your writes). */
void    gd_sub_last_rv(const gd_sub *s, char *buf, size_t cap);

/* ---- the replica (through its store): safe from any thread with the default store ---- */
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

/* Bytes of the objects (in PUB and snapshot messages) all subscribers of this process have
 * parsed: how much the feeds brought in, for a heap that may need trimming after a burst.
 * Heartbeats and other bookkeeping messages do not count. */
uint64_t gd_sub_bytes_received(void);

#endif
