/* gd_sub_internal.h — what the subscriber's files share (gd_sub.c: following topics and PUB
 * messages; gd_sub_snap.c: snapshots; gd_sub_store.c: the default replica store) and the
 * fuzz target reaches into. Not for the owners of a gd_sub: they use gd_sub.h. */
#ifndef GD_SUB_INTERNAL_H
#define GD_SUB_INTERNAL_H
#include <zmq.h>
#include "gd_map.h"
#include "gd_sub.h"

#define NTOPICS (GD_NSHARDS + 1)     /* shards 0..255, then broadcast */
#define B_INDEX GD_NSHARDS
#define MAX_FRAMES 8

/* State per topic: whether we follow it, whether we have a baseline (a snapshot), the last
 * topic sequence applied, and whether a re-snapshot is pending. */
struct gd_sub {
    gd_sub_opts o;
    char kind[64], pub_ep[256], snap_ep[256];
    gd_curve_keys curve;            /* copies of the options' keys (zero when none) */
    char server_public[GD_CURVE_Z85_LEN + 1];
    void *zctx, *sub, *dealer;
    gd_sub_store store;             /* the options' store, or the default map store */
    bool own_store;                 /* the default: gd_sub_destroy frees it */
    bool follow[NTOPICS], base[NTOPICS], resnap[NTOPICS];
    uint64_t last[NTOPICS];
    char instance[40];
    bool informer_synced;
    int64_t last_heard_ms, next_snap_ms;
    char last_rv[64];
    gd_sub_stats st;
};

static inline int topic_index(int shard)
{
    return shard >= 0 && shard < GD_NSHARDS ? shard : B_INDEX;
}
static inline int index_shard(int idx) { return idx == B_INDEX ? GD_SHARD_BROADCAST : idx; }

/* One multipart message as received. */
typedef struct {
    zmq_msg_t m[MAX_FRAMES];
    int n;
    bool overflow;
} frames;
void   gd_sub_frames_close(frames *f);
/* 1: got one, 0: nothing waiting (DONTWAIT), -1: error. */
int    gd_sub_recv_frames(void *sock, frames *f, int flags);
/* Frame i as a NUL-terminated copy in buf (truncated to cap); returns its full length. */
size_t gd_sub_frame_str(frames *f, int i, char *buf, size_t cap);
/* Frame i parsed (NULL: not JSON); count: it is an object, counted in
 * gd_sub_bytes_received (a status body is not). */
cJSON *gd_sub_parse_object(frames *f, int i, bool count);

/* A sequence number from a status object: a JSON integer in [0, 2^64); false otherwise. */
bool gd_sub_seq_value(const cJSON *v, uint64_t *out);
/* A HEARTBEAT/SYNCED/END status: a new instance or (check_topics) a topic ahead of ours
 * marks topics for a re-snapshot. */
void gd_sub_check_status(gd_sub *s, const cJSON *status, bool check_topics);

/* Replica changes, each reported to the owner's handler. upsert stores *obj (taken) with rec;
 * prev is key's record before (NULL: absent). */
void gd_sub_notify(gd_sub *s, gd_ev ev, const char *key, int shard, const cJSON *old,
                  const cJSON *new_obj, bool resync);
void gd_sub_upsert(gd_sub *s, const char *key, const gd_sub_rec *rec, const gd_sub_rec *prev,
                  cJSON **obj, bool resync, bool force);
void gd_sub_remove(gd_sub *s, const char *key, bool resync);

/* gd_sub_snap.c: snapshot of every followed topic that needs one, diffed into the replica. */
typedef struct {
    gd_map *items;                  /* key → snap_item */
    cJSON *end_topics, *end_status;
    uint64_t end_seq;               /* the informer's global sequence at the snapshot */
    bool synced;
} snap_result;
enum { SNAP_MORE = 1, SNAP_DONE = 0 };
void   gd_sub_snap_item_free(void *v);
void   gd_sub_snap_result_clear(snap_result *r);
/* One reply message of a snapshot: SNAP_MORE, SNAP_DONE, or -gd_err. */
int    gd_sub_snap_reply(gd_sub *s, frames *f, snap_result *r);
void   gd_sub_apply_snapshot(gd_sub *s, const bool *want, snap_result *r);
gd_err gd_sub_resnapshot(gd_sub *s);
/* Milliseconds until gd_sub_resnapshot has a snapshot to retry (0: now), -1 when none is
 * pending: how long gd_sub_poll may sleep. */
int64_t gd_sub_retry_in(const gd_sub *s);
void   gd_sub_close_dealer(gd_sub *s);
bool   gd_sub_stopping(const gd_sub *s);
/* zmq_poll of one socket for up to ms, in slices so the owner's stop flag is seen. */
int    gd_sub_poll_stoppable(const gd_sub *s, zmq_pollitem_t *pi, int64_t ms);

/* gd_sub_store.c: the default store, a map behind a read-write lock. */
gd_err gd_sub_map_store_new(gd_sub_store *out);
void   gd_sub_map_store_free(gd_sub_store *st);

#endif
