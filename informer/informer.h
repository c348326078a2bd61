/* informer.h — the modules of bin/godis-informer and how they fit together.
 *
 *   reflector thread                                publisher thread
 *   list (paged) / watch → inf_update ──inf_pub_apply──▶ store ──▶ PUB (events by shard)
 *   transform → inf_obj         (one mutex: store, sequence numbers, PUB)
 *                                                    ROUTER (snapshots, STATS), heartbeat
 *                                                    and resync timers: inf_pub_run
 *
 * The reflector blocks in libcurl; it turns every object into an inf_obj (transformed,
 * serialised once) and applies each list or watch result to the store and the PUB socket
 * itself, under the publisher's mutex — no thread handoff per event. The publisher thread
 * serves the ROUTER and the timers under the same mutex, so a snapshot is consistent with
 * the sequence numbers it reports. Counters are atomics read by STATS. */
#ifndef INFORMER_H
#define INFORMER_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "gd_err.h"
#include "gd_curve.h"
#include "gd_proto.h"
#include "k8s_client.h"

/* ---------------------------------------------------------------- objects and store */

/* One cached object, in one allocation: key, resourceVersion and the compact JSON body.
 * Inside the store a body may be packed (raw_len != 0: zstd with the store's dictionary);
 * everything the store hands out through callbacks, foreach and inf_store_load is JSON. */
typedef struct inf_obj {
    int shard;              /* 0..GD_NSHARDS-1 or GD_SHARD_BROADCAST */
    uint32_t mark;          /* relist generation (store.c) */
    _Atomic uint32_t refs;  /* the store, an update being applied, ZeroMQ messages (zero-copy) */
    uint32_t raw_len;       /* 0: body is JSON; else the JSON's length, body is packed */
    const char *key;        /* "namespace/name" or "name" */
    const char *rv;
    const char *body;       /* NUL-terminated compact JSON (unless packed) */
    size_t body_len;
    char data[];
} inf_obj;

/* refs starts at 1. */
inf_obj *inf_obj_new(const char *key, const char *rv, int shard, const char *body,
                     size_t body_len);
inf_obj *inf_obj_ref(const inf_obj *o);
void     inf_obj_unref(inf_obj *o);     /* frees on the last reference; NULL is fine */
void     inf_obj_destroy(inf_obj **o);  /* unref and NULL */

/* Drops metadata.managedFields and every path in drop (dot paths, "\." escapes a dot in a
 * key, as gd_json). Missing paths are fine. */
void     inf_transform(cJSON *obj, const char *const *drop, size_t ndrop);
/* Transform + key + rv + shard + serialise. kind feeds the shard rule. On failure NULL and
 * a reason in why (missing name, serialisation failure). */
inf_obj *inf_obj_from_json(const char *kind, cJSON *obj, const char *const *drop,
                           size_t ndrop, const char **why);
/* The watch fast path (watchline.c): an ADDED/MODIFIED/DELETED event line (no '\n') to the
 * object inf_obj_from_json would make of it with no drop paths (managedFields dropped,
 * everything else kept), without a cJSON tree of the whole object. Returns 1 with *ev and
 * *out set, or 0 when the line is left to the general path (another type, a shape it does
 * not handle, invalid JSON, no metadata.name, out of memory). */
int      inf_obj_from_watch_line(const char *kind, const char *line, size_t n, gd_ev *ev,
                                 inf_obj **out);
void     inf_watch_line_release(void);   /* frees the calling thread's buffer */
/* The same for a list page's response body: every item as add_page + inf_obj_from_json make
 * it (type meta added when missing: kind from the list's kind minus "List", else res_kind;
 * the list's apiVersion), the list's resourceVersion and continue token into rv and cont.
 * Returns 1 with *items (malloc'd, *nitems references), or 0 with nothing made when the page
 * is left to the general path (invalid JSON, an item it is unsure about or without a name,
 * a continue token too long for cont). */
int      inf_list_page_scan(const char *kind, const char *res_kind, const char *body,
                            size_t n, inf_obj ***items, size_t *nitems, char *rv, size_t rvcap,
                            char *cont, size_t contcap);
/* Frees the calling thread's serialisation buffer (call before a thread that used
 * inf_obj_from_json exits). */
void     inf_obj_scratch_release(void);

/* Told about every change after it was applied; old/new are valid during the call only
 * (take a reference to keep one). old's body is its JSON for DELETED and for a MODIFIED
 * that moves the object to another shard; for any other MODIFIED it may be empty
 * (body_len 0: the cached copy is compressed and inflating it would be wasted work). */
typedef void (*inf_change_fn)(void *ud, gd_ev ev, const inf_obj *old_obj,
                              const inf_obj *new_obj);

typedef struct inf_store inf_store;
inf_store *inf_store_new(void);
void       inf_store_destroy(inf_store **s);
/* Compress bodies once the store holds train_at objects (default 256; 0: never). Set it
 * before the first object; the dictionary is trained once and never retrained. */
void       inf_store_set_packing(inf_store *s, size_t train_at);
/* Watch updates (inf_store_upsert) are packed only once `window` later updates went by
 * without the object changing again (default 512; 0: at once). Relists pack at once. */
void       inf_store_set_young(inf_store *s, size_t window);
size_t     inf_store_count(const inf_store *s);
/* The cached entry: key, rv and shard; its body may be packed (raw_len != 0). A packed
 * entry's answer is a view the store rewrites: valid until the next inf_store_ call. */
const inf_obj *inf_store_get(const inf_store *s, const char *key);
/* A reference to the object with its JSON body (inflated if packed), or NULL and a reason
 * (no such key, out of memory, a packed body that does not inflate). */
inf_obj   *inf_store_load(inf_store *s, const char *key, const char **why);
typedef struct {
    size_t objects, packed;
    size_t body_bytes;      /* the JSON bodies' total length */
    size_t stored_bytes;    /* what the store keeps of them (packed or not) */
    size_t dict_bytes, index_bytes;
} inf_store_mem_stats;
void       inf_store_mem(const inf_store *s, inf_store_mem_stats *m);
/* Takes *o. ADDED when the key is new, MODIFIED otherwise. */
gd_err     inf_store_upsert(inf_store *s, inf_obj **o, inf_change_fn fn, void *ud);
/* DELETED (with the cached object) when the key exists; nothing otherwise. */
void       inf_store_delete(inf_store *s, const char *key, inf_change_fn fn, void *ud);
/* DeltaFIFO Replace: the list becomes the store. Takes every items[i] (set to NULL).
 * Reports ADDED for new keys, MODIFIED for changed resourceVersions, DELETED for keys not
 * in the list; unchanged objects are kept silently. */
gd_err     inf_store_replace(inf_store *s, inf_obj **items, size_t n, inf_change_fn fn,
                             void *ud);
/* Resync: MODIFIED (old == new) for every object. */
void       inf_store_resync(inf_store *s, inf_change_fn fn, void *ud);
/* fn returns non-zero to stop. */
void       inf_store_foreach(inf_store *s, int (*fn)(void *ud, const inf_obj *o), void *ud);

/* ---------------------------------------------------------------- counters */

/* Why a watch ended (each end is followed by a re-watch, or a relist then a watch). */
typedef enum {
    INF_END_TIMEOUT,     /* the server ended it at the timeoutSeconds we asked for */
    INF_END_CLOSED,      /* the server ended it cleanly before that (shutdown, a cacher that
                          * dropped a slow watcher, a proxy) */
    INF_END_STALLED,     /* no byte within the progress deadline, or the server overran
                          * timeoutSeconds: we ended it */
    INF_END_TRUNCATED,   /* the response was cut (inside an event, or with no proper end) */
    INF_END_GARBAGE,     /* a line that is no watch event */
    INF_END_EXPIRED,     /* 410 Gone / Expired / too large resource version: relist */
    INF_END_ERROR,       /* any other ERROR event, HTTP error or transport failure */
    INF_END_QUIET,       /* silent for the burst deadline right after a burst: we ended it
                          * (a cacher may have dropped us; or the burst was over) */
    INF_END__COUNT
} inf_watch_end;
const char *inf_watch_end_name(inf_watch_end e);   /* "timeout", "closed", ... */

typedef struct {
    _Atomic uint64_t objects, events_published, messages_published, lists, relists,
        watch_restarts, watch_errors, snapshots, bad_objects, synced;
    _Atomic uint64_t watch_ends[INF_END__COUNT];
    _Atomic int64_t last_rv;     /* numeric resourceVersion, -1 when not numeric */
} inf_counters;
/* Prometheus text exposition (malloc'd). */
char *inf_counters_render(const inf_counters *c, const char *kind);

/* ---------------------------------------------------------------- reflector → publisher */

/* One list or watch result, as the reflector hands it to inf_pub_apply. */
typedef enum { INF_UPD_UPSERT = 1, INF_UPD_DELETE, INF_UPD_REPLACE, INF_UPD_RV } inf_update_kind;
typedef struct {
    inf_update_kind type;
    inf_obj *obj;                /* UPSERT, DELETE */
    inf_obj **items;             /* REPLACE */
    size_t nitems;
    char rv[64];                 /* the resourceVersion this update brings the informer to */
} inf_update;
void inf_update_destroy(inf_update **u);

/* ---------------------------------------------------------------- reflector */

typedef struct {
    k8s_client *client;
    k8s_resource res;
    const char *kind;
    const char *ns;                  /* NULL: all namespaces */
    const char *label_selector, *field_selector;
    long page_size;
    bool initial_list_from_cache;    /* first list with resourceVersion=0, as client-go */
    int min_watch_timeout_s;         /* watch timeout random in [min, 2*min) */
    /* The watch progress deadline: no byte for this long (with bookmarks requested) ends
     * the watch, which is then re-established from the last resourceVersion. 0: none. */
    int64_t watch_idle_timeout_ms;
    /* A burst (burst_events events within burst_window_ms) shortens that deadline to
     * burst_deadline_ms for the rest of the watch. 0: 20 events, 10 s, 10 s. */
    int burst_events;
    int64_t burst_window_ms, burst_deadline_ms;
    const char *const *drop;
    size_t ndrop;
    /* Every list/watch result is handed to apply (main.c: inf_pub_apply, the store + PUB)
     * on the reflector thread itself: no thread handoff per event (a wake-up costs ~10 µs
     * of CPU and jitter on a VM). The reflector still owns the update after the call. */
    gd_err (*apply)(void *ud, inf_update *u);
    void *apply_ud;
    inf_counters *ctr;
    volatile int *stop;
    const int *stop_fd;    /* optional: a wake fd (gd_wake.h) poked after *stop is set, so
                            * an idle watch and a backoff nap end at once (no 100 ms polls) */
} inf_reflector_cfg;
/* Runs list/watch until *stop. Returns NULL. */
void *inf_reflector_run(void *cfg);
/* Exposed for tests: is this API failure a "relist from scratch" one (410 Gone / Expired /
 * too large resource version)? */
bool  inf_needs_relist(gd_err err, const k8s_status *st);

/* ---------------------------------------------------------------- publisher */

typedef struct inf_pub inf_pub;
typedef struct {
    void *zctx;
    const char *kind;
    const char *pub_endpoint, *snap_endpoint;
    /* Optional second endpoints for remote workers, bound after the first ones with CURVE
     * (libzmq captures socket options per bind: the ipc:// endpoint stays plain). */
    const char *tcp_pub_endpoint, *tcp_snap_endpoint;
    const gd_curve_keys *curve;      /* server keys; NULL: no tcp:// allowed */
    int heartbeat_ms;
    /* HEARTBEAT requests within this many ms of the last one that published share its
     * heartbeat (0: each publishes). Below the subscriber's 50 ms retry, so one that the
     * shared heartbeat missed gets its own on asking again. */
    int heartbeat_request_gap_ms;
    int64_t resync_ms;               /* 0: off */
    int pub_hwm;                     /* 0: 100000 */
    inf_counters *ctr;
    volatile int *stop;
} inf_pub_cfg;
inf_pub *inf_pub_new(const inf_pub_cfg *cfg);
void     inf_pub_destroy(inf_pub **p);
/* The publisher thread's loop until *stop: ROUTER requests and timers. The store and the
 * PUB socket are guarded by one mutex, so the reflector thread publishes directly
 * (inf_pub_apply) while this thread serves snapshots and heartbeats. */
gd_err   inf_pub_run(inf_pub *p);
/* Interrupts inf_pub_run's poll (after setting *stop). Async-signal-safe. */
void     inf_pub_wake(inf_pub *p);
/* Steps of the loop, exposed for tests. */
gd_err   inf_pub_apply(inf_pub *p, inf_update *it);
gd_err   inf_pub_heartbeat(inf_pub *p);
gd_err   inf_pub_serve_one(inf_pub *p);       /* one ROUTER request, if any is waiting */
uint64_t inf_pub_seq(const inf_pub *p);
uint64_t inf_pub_topic_seq(const inf_pub *p, int shard);
inf_store *inf_pub_store(inf_pub *p);

/* Pure helpers (publisher.c), unit-tested. */
/* Topic list "S003,S017,B" or "*" → want[GD_NSHARDS+1] (index GD_NSHARDS = B). */
gd_err inf_parse_topics(const char *s, bool *want, bool *all);
/* {"instance":..,"seq":..,"synced":..,"topics":{..}} (malloc'd). */
char  *inf_status_json(const char *instance, uint64_t seq, bool synced,
                       const uint64_t *topic_seq);

#endif
