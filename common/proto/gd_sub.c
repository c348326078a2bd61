/* gd_sub.c — subscriber side of GDI1 (see gd_sub.h and docs/PROTOCOL.md §1).
 *
 * State per topic: whether we follow it, whether we have a baseline (a snapshot), the last
 * topic sequence applied, and whether a re-snapshot is pending. Everything that can go wrong
 * on the wire (drops at the high-water mark, a subscription that became active late, an
 * informer restart) ends in "re-snapshot these topics and diff", which is the one repair
 * path and so the one that gets tested. */
#include "gd_sub.h"
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>
#include "gd_hoptrace.h"
#include "gd_json.h"
#include "gd_log.h"
#include "gd_map.h"
#include "gd_proto.h"
#include "gd_time.h"

#define NTOPICS (GD_NSHARDS + 1)     /* shards 0..255, then broadcast */
#define B_INDEX GD_NSHARDS
#define MAX_FRAMES 8

typedef struct {
    int shard;
    char *rv;
    cJSON *obj;
    /* The informer's global sequence at which this state was current: the PUB message's,
     * or the snapshot END's. A PUB message with a lower or equal one is older than this
     * state (an object that moved shards: the old topic's DELETED, read after a snapshot of
     * the new topic that already has it) and is skipped. */
    uint64_t gseq;
} entry;

struct gd_sub {
    gd_sub_opts o;
    char kind[64], pub_ep[256], snap_ep[256];
    gd_curve_keys curve;            /* copies of the options' keys ( when none) */
    char server_public[GD_CURVE_Z85_LEN + 1];
    void *zctx, *sub, *dealer;
    pthread_rwlock_t lock;            /* guards cache only */
    gd_map *cache;
    bool follow[NTOPICS], base[NTOPICS], resnap[NTOPICS];
    uint64_t last[NTOPICS];
    char instance[40];
    bool informer_synced;
    int64_t last_heard_ms, next_snap_ms;
    char last_rv[64];
    cJSON *lending;                   /* keys_only: new_obj during on_event (gd_sub_steal) */
    gd_sub_stats st;
};

static int topic_index(int shard) { return shard >= 0 && shard < GD_NSHARDS ? shard : B_INDEX; }
static int index_shard(int idx) { return idx == B_INDEX ? GD_SHARD_BROADCAST : idx; }

static void entry_free(void *v)
{
    entry *e = v;
    if (!e)
        return;
    free(e->rv);
    cJSON_Delete(e->obj);
    free(e);
}

static entry *entry_new(int shard, const char *rv, cJSON **obj, uint64_t gseq)
{
    entry *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->rv = strdup(rv ? rv : "");
    if (!e->rv) {
        free(e);
        return NULL;
    }
    e->shard = shard;
    e->gseq = gseq;
    e->obj = *obj;
    *obj = NULL;
    return e;
}

void gd_sub_opts_default(gd_sub_opts *o)
{
    memset(o, 0, sizeof *o);
    o->rcvhwm = 100000;
    o->snapshot_timeout_ms = 10000;
    o->max_batch = 1000;
}

/* ------------------------------------------------------------ lifecycle */

gd_sub *gd_sub_new(void *zctx, const gd_sub_opts *o)
{
    if (!zctx || !o || !o->pub_endpoint || !o->snap_endpoint)
        return NULL;
    gd_sub *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->o = *o;
    if (s->o.rcvhwm <= 0)
        s->o.rcvhwm = 100000;
    if (s->o.snapshot_timeout_ms <= 0)
        s->o.snapshot_timeout_ms = 10000;
    if (s->o.max_batch <= 0)
        s->o.max_batch = 1000;
    snprintf(s->kind, sizeof s->kind, "%s", o->kind ? o->kind : "");
    if ((size_t)snprintf(s->pub_ep, sizeof s->pub_ep, "%s", o->pub_endpoint) >= sizeof s->pub_ep ||
        (size_t)snprintf(s->snap_ep, sizeof s->snap_ep, "%s", o->snap_endpoint) >= sizeof s->snap_ep) {
        free(s);
        return NULL;
    }
    if (o->curve)
        s->curve = *o->curve;
    if (o->server_public)
        snprintf(s->server_public, sizeof s->server_public, "%s", o->server_public);
    s->o.curve = &s->curve;
    s->o.server_public = s->server_public;
    s->o.kind = s->kind;
    s->o.pub_endpoint = s->pub_ep;
    s->o.snap_endpoint = s->snap_ep;
    s->zctx = zctx;
    pthread_rwlock_init(&s->lock, NULL);
    s->cache = gd_map_new(entry_free);
    s->sub = zmq_socket(zctx, ZMQ_SUB);
    if (!s->cache || !s->sub)
        goto fail;
    int linger = 0;
    zmq_setsockopt(s->sub, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(s->sub, ZMQ_RCVHWM, &s->o.rcvhwm, sizeof s->o.rcvhwm);
    if (gd_curve_connect(s->sub, s->pub_ep, &s->curve, s->server_public) != GD_OK) {
        GD_ERROR("gd_sub: cannot connect", "endpoint", s->pub_ep, "error",
                 gd_curve_needed(s->pub_ep) && !s->curve.secret_z85[0] ? "tcp:// needs CURVE keys"
                                                                      : zmq_strerror(errno));
        goto fail;
    }
    return s;
fail:
    gd_sub_destroy(&s);
    return NULL;
}

void gd_sub_destroy(gd_sub **sp)
{
    if (!sp || !*sp)
        return;
    gd_sub *s = *sp;
    if (s->sub)
        zmq_close(s->sub);
    if (s->dealer)
        zmq_close(s->dealer);
    gd_map_destroy(&s->cache);
    pthread_rwlock_destroy(&s->lock);
    free(s);
    *sp = NULL;
}

void gd_sub_last_rv(const gd_sub *s, char *buf, size_t cap) { snprintf(buf, cap, "%s", s->last_rv); }
void gd_sub_get_stats(const gd_sub *s, gd_sub_stats *out) { *out = s->st; }

bool gd_sub_synced(const gd_sub *s)
{
    if (!s->informer_synced)
        return false;
    for (int i = 0; i < NTOPICS; i++)
        if (s->follow[i] && (!s->base[i] || s->resnap[i]))
            return false;
    return true;
}

/* ------------------------------------------------------------ replica changes */

static void notify(gd_sub *s, gd_ev ev, const char *key, int shard, const cJSON *old,
                   const cJSON *new_obj, bool resync)
{
    if (s->o.on_event)
        s->o.on_event(s->o.ud, ev, key, shard, old, new_obj, resync);
}

cJSON *gd_sub_steal(gd_sub *s)
{
    cJSON *o = s->lending;
    s->lending = NULL;
    return o;
}

/* Stores obj (taken) under key; reports ADDED or, if the rv changed or force, MODIFIED.
 * keys_only: the entry gets no object; new_obj is lent to the handler (gd_sub_steal). */
static void upsert(gd_sub *s, const char *key, int shard, const char *rv, uint64_t gseq,
                   cJSON **obj, bool resync, bool force)
{
    cJSON *lent = NULL;
    if (s->o.keys_only) {
        lent = *obj;
        *obj = NULL;
    }
    entry *e = entry_new(shard, rv, obj, gseq);
    if (!e) {
        cJSON_Delete(*obj);
        cJSON_Delete(lent);
        *obj = NULL;
        return;
    }
    void *prev = NULL;
    pthread_rwlock_wrlock(&s->lock);
    gd_err err = gd_map_put(s->cache, key, e, &prev);
    pthread_rwlock_unlock(&s->lock);
    if (err != GD_OK) {
        entry_free(e);
        cJSON_Delete(lent);
        return;
    }
    entry *old = prev;
    gd_hop_rv(e->rv, GD_HOP_SUB_APPLIED);
    const cJSON *nobj = lent ? lent : e->obj;
    s->lending = lent;
    if (!old)
        notify(s, GD_EV_ADDED, key, shard, NULL, nobj, resync);
    else if (force || strcmp(old->rv, e->rv) != 0 || old->shard != shard)
        notify(s, GD_EV_MODIFIED, key, shard, old->obj, nobj, resync);
    cJSON_Delete(s->lending);          /* not taken by the handler */
    s->lending = NULL;
    entry_free(old);
}

/* Is a PUB message of global sequence gseq about key older than the replica's state? */
static bool stale(gd_sub *s, const char *key, uint64_t gseq)
{
    pthread_rwlock_rdlock(&s->lock);
    const entry *e = gd_map_get(s->cache, key);
    bool old = e && gseq <= e->gseq;
    pthread_rwlock_unlock(&s->lock);
    return old;
}

static void remove_key(gd_sub *s, const char *key, bool resync)
{
    pthread_rwlock_wrlock(&s->lock);
    entry *old = gd_map_take(s->cache, key);
    pthread_rwlock_unlock(&s->lock);
    if (!old)
        return;
    notify(s, GD_EV_DELETED, key, old->shard, old->obj, NULL, resync);
    entry_free(old);
}

/* ------------------------------------------------------------ status (HEARTBEAT, SYNCED, END) */

static void mark_all_resnap(gd_sub *s)
{
    for (int i = 0; i < NTOPICS; i++)
        if (s->follow[i])
            s->resnap[i] = true;
}

/* A sequence number from a status object: a JSON integer in [0, 2^64). Anything else (a
 * negative, fractional or huge number, NaN) is malformed: converting it would be undefined
 * behaviour, and a made-up baseline would hide a gap. */
static bool seq_value(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble < 18446744073709551616.0) ||
        v->valuedouble != (double)(uint64_t)v->valuedouble)
        return false;
    *out = (uint64_t)v->valuedouble;
    return true;
}

/* Instance change → the informer restarted, everything must be re-snapshotted. Then every
 * followed topic whose sequence is ahead of ours lost a message. */
static void check_status(gd_sub *s, const cJSON *status, bool check_topics)
{
    const char *inst = gd_json_str_or(status, "instance", "");
    if (*inst) {
        if (s->instance[0] && strcmp(s->instance, inst) != 0) {
            GD_INFO("gd_sub: informer restarted; resyncing", "kind", s->kind);
            s->st.gaps++;
            mark_all_resnap(s);
        }
        snprintf(s->instance, sizeof s->instance, "%s", inst);
    }
    if (!check_topics)
        return;
    cJSON *topics = cJSON_GetObjectItemCaseSensitive(status, "topics");
    cJSON *t;
    cJSON_ArrayForEach(t, topics) {
        int shard = gd_shard_parse_topic(t->string);
        uint64_t seq;
        if (shard == -2 || !seq_value(t, &seq))
            continue;
        int idx = topic_index(shard);
        if (s->follow[idx] && s->base[idx] && !s->resnap[idx] && seq > s->last[idx]) {
            s->st.gaps++;
            s->resnap[idx] = true;
            GD_DEBUG("gd_sub: heartbeat shows a lost message", "kind", s->kind, "topic",
                     t->string);
        }
    }
}

/* ------------------------------------------------------------ PUB messages */

typedef struct {
    zmq_msg_t m[MAX_FRAMES];
    int n;
    bool overflow;
} frames;

static void frames_close(frames *f)
{
    for (int i = 0; i < f->n; i++)
        zmq_msg_close(&f->m[i]);
    f->n = 0;
}

/* Receives one multipart message. 1: got one, 0: nothing waiting (DONTWAIT), -1: error. */
static int recv_frames(void *sock, frames *f, int flags)
{
    f->n = 0;
    f->overflow = false;
    int more = 1;
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, sock, f->n == 0 && !f->overflow ? flags : 0) < 0) {
            int e = errno;
            zmq_msg_close(&m);
            frames_close(f);
            return e == EAGAIN ? 0 : -1;
        }
        more = zmq_msg_more(&m);
        if (f->n < MAX_FRAMES)
            f->m[f->n++] = m;
        else {
            f->overflow = true;
            zmq_msg_close(&m);
        }
    }
    return 1;
}

/* Frame i as a NUL-terminated copy in buf (truncated to cap); returns its full length. */
static size_t frame_str(frames *f, int i, char *buf, size_t cap)
{
    size_t l = zmq_msg_size(&f->m[i]);
    size_t c = l < cap - 1 ? l : cap - 1;
    memcpy(buf, zmq_msg_data(&f->m[i]), c);
    buf[c] = '\0';
    return l;
}

static void handle_pub(gd_sub *s, frames *f)
{
    char topic[8], proto[8], seqs[48], type[16], key[512], rv[64];
    if (f->n != 8 || f->overflow || frame_str(f, 0, topic, sizeof topic) >= sizeof topic ||
        frame_str(f, 1, proto, sizeof proto) >= sizeof proto ||
        strcmp(proto, GD_PROTO_INFORMER) != 0 ||
        frame_str(f, 2, seqs, sizeof seqs) >= sizeof seqs ||
        frame_str(f, 3, type, sizeof type) >= sizeof type ||
        frame_str(f, 5, key, sizeof key) >= sizeof key ||
        frame_str(f, 6, rv, sizeof rv) >= sizeof rv) {
        s->st.protocol_errors++;
        return;
    }
    int shard = gd_shard_parse_topic(topic);
    uint64_t g, t;
    char *colon = strchr(seqs, ':');
    if (shard == -2 || !colon || sscanf(seqs, "%" SCNu64 ":%" SCNu64, &g, &t) != 2 || t == 0) {
        s->st.protocol_errors++;
        return;
    }
    s->st.messages++;
    gd_hop_rv(rv, GD_HOP_SUB_RECV);
    s->last_heard_ms = gd_mono_ms();
    if (*rv)
        snprintf(s->last_rv, sizeof s->last_rv, "%s", rv);
    int idx = topic_index(shard);
    if (!s->follow[idx] || !s->base[idx] || s->resnap[idx] || t <= s->last[idx]) {
        /* Not ours any more, covered by the coming snapshot, or already in our baseline.
         * A status message still tells us about restarts. */
        if (idx == B_INDEX && (!strcmp(type, "HEARTBEAT") || !strcmp(type, "SYNCED"))) {
            cJSON *st = gd_json_parse(zmq_msg_data(&f->m[7]), zmq_msg_size(&f->m[7]));
            check_status(s, st, false);
            cJSON_Delete(st);
        }
        return;
    }
    if (t > s->last[idx] + 1) {
        s->st.gaps++;
        s->resnap[idx] = true;
        GD_DEBUG("gd_sub: gap", "kind", s->kind, "topic", topic);
        return;
    }
    s->last[idx] = t;
    cJSON *body = gd_json_parse(zmq_msg_data(&f->m[7]), zmq_msg_size(&f->m[7]));
    gd_ev ev = gd_ev_parse(type);
    if ((ev == GD_EV_ADDED || ev == GD_EV_MODIFIED || ev == GD_EV_DELETED) && *key &&
        stale(s, key, g)) {
        s->st.stale++;
    } else if (!strcmp(type, "HEARTBEAT") || ev == GD_EV_SYNCED) {
        check_status(s, body, true);
        if (ev == GD_EV_SYNCED) {
            s->informer_synced = true;
            notify(s, GD_EV_SYNCED, NULL, GD_SHARD_BROADCAST, NULL, NULL, false);
        }
    } else if (ev == GD_EV_ADDED || ev == GD_EV_MODIFIED) {
        if (!body || !*key) {
            s->st.protocol_errors++;
            s->resnap[idx] = true;   /* we cannot apply it: repair from a snapshot */
        } else {
            s->st.applied++;
            upsert(s, key, shard, rv, g, &body, false, true);
        }
    } else if (ev == GD_EV_DELETED) {
        s->st.applied++;
        remove_key(s, key, false);
    } else {
        s->st.protocol_errors++;
    }
    cJSON_Delete(body);
}

/* ------------------------------------------------------------ snapshots */

static void close_dealer(gd_sub *s)
{
    if (s->dealer)
        zmq_close(s->dealer);
    s->dealer = NULL;
}

static gd_err open_dealer(gd_sub *s)
{
    if (s->dealer)
        return GD_OK;
    s->dealer = zmq_socket(s->zctx, ZMQ_DEALER);
    if (!s->dealer)
        return GD_ERR_ZMQ;
    int linger = 0, hwm = 0;
    zmq_setsockopt(s->dealer, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(s->dealer, ZMQ_RCVHWM, &hwm, sizeof hwm);
    if (gd_curve_connect(s->dealer, s->snap_ep, &s->curve, s->server_public) != GD_OK) {
        close_dealer(s);
        return GD_ERR_ZMQ;
    }
    return GD_OK;
}

/* Builds "*" or "S003,S017,B" for the topics in want. */
static void topic_list(const bool *want, char *buf, size_t cap)
{
    bool all = true;
    for (int i = 0; i < NTOPICS; i++)
        all = all && want[i];
    if (all) {
        snprintf(buf, cap, "*");
        return;
    }
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < NTOPICS && n + 6 < cap; i++) {
        if (!want[i])
            continue;
        char t[8];
        gd_shard_topic(index_shard(i), t, sizeof t);
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "," : "", t);
    }
}

typedef struct {
    int shard;
    char *rv;
    cJSON *obj;
} snap_item;

static void snap_item_free(void *v)
{
    snap_item *it = v;
    free(it->rv);
    cJSON_Delete(it->obj);
    free(it);
}

typedef struct {
    gd_map *items;                  /* key → snap_item */
    cJSON *end_topics, *end_status;
    uint64_t end_seq;               /* the informer's global sequence at the snapshot */
    bool synced;
} snap_result;

static void snap_result_clear(snap_result *r)
{
    gd_map_destroy(&r->items);
    cJSON_Delete(r->end_topics);
    cJSON_Delete(r->end_status);
    memset(r, 0, sizeof *r);
}

enum { SNAP_MORE = 1, SNAP_DONE = 0 };

/* One reply message of a snapshot: OBJ goes into r->items, END completes it. Returns
 * SNAP_MORE, SNAP_DONE, or -gd_err (ERROR reply, malformed message, no memory). */
static int snap_reply(gd_sub *s, frames *f, snap_result *r)
{
    char proto[8], cmd[8];
    if (f->n < 2 || f->overflow || frame_str(f, 0, proto, sizeof proto) >= sizeof proto ||
        strcmp(proto, GD_PROTO_INFORMER) != 0 || frame_str(f, 1, cmd, sizeof cmd) >= sizeof cmd)
        return -GD_ERR_PROTOCOL;
    if (!strcmp(cmd, "OBJ") && f->n == 6) {
        char key[512], rv[64], topic[8];
        if (frame_str(f, 2, key, sizeof key) >= sizeof key ||
            frame_str(f, 3, rv, sizeof rv) >= sizeof rv ||
            frame_str(f, 5, topic, sizeof topic) >= sizeof topic ||
            gd_shard_parse_topic(topic) == -2 || !key[0])
            return -GD_ERR_PROTOCOL;
        snap_item *it = calloc(1, sizeof *it);
        if (!it)
            return -GD_ERR_NOMEM;
        it->shard = gd_shard_parse_topic(topic);
        it->rv = strdup(rv);
        it->obj = gd_json_parse(zmq_msg_data(&f->m[4]), zmq_msg_size(&f->m[4]));
        if (!it->rv || !it->obj || gd_map_put(r->items, key, it, NULL) != GD_OK) {
            bool nomem = !it->rv;
            snap_item_free(it);
            return nomem ? -GD_ERR_NOMEM : -GD_ERR_PROTOCOL;
        }
        return SNAP_MORE;
    }
    if (!strcmp(cmd, "END") && f->n == 6) {
        char gseq[24], *end;
        if (frame_str(f, 2, gseq, sizeof gseq) >= sizeof gseq || !isdigit((unsigned char)gseq[0]))
            return -GD_ERR_PROTOCOL;
        errno = 0;
        r->end_seq = strtoull(gseq, &end, 10);
        if (*end || errno)
            return -GD_ERR_PROTOCOL;
        r->end_topics = gd_json_parse(zmq_msg_data(&f->m[3]), zmq_msg_size(&f->m[3]));
        r->end_status = gd_json_parse(zmq_msg_data(&f->m[5]), zmq_msg_size(&f->m[5]));
        r->synced = zmq_msg_size(&f->m[4]) == 1 && *(char *)zmq_msg_data(&f->m[4]) == '1';
        if (!cJSON_IsObject(r->end_topics) || !cJSON_IsObject(r->end_status))
            return -GD_ERR_PROTOCOL;
        const cJSON *t;
        uint64_t seq;
        cJSON_ArrayForEach(t, r->end_topics)
            if (!seq_value(t, &seq))
                return -GD_ERR_PROTOCOL;    /* no baseline from a malformed sequence */
        return SNAP_DONE;
    }
    if (!strcmp(cmd, "ERROR") && f->n >= 3) {
        char msg[128];
        frame_str(f, 2, msg, sizeof msg);
        GD_WARN("gd_sub: snapshot refused", "kind", s->kind, "message", msg);
    }
    return -GD_ERR_PROTOCOL;
}

static bool stopping(const gd_sub *s) { return s->o.stop && atomic_load(s->o.stop); }

/* zmq_poll of one socket for up to ms, in slices so the owner's stop flag is seen. */
static int poll_stoppable(const gd_sub *s, zmq_pollitem_t *pi, int64_t ms)
{
    int64_t until = gd_mono_ms() + ms;
    for (;;) {
        int64_t left = until - gd_mono_ms();
        if (left <= 0 || stopping(s))
            return 0;
        int rc = zmq_poll(pi, 1, (long)(left > 100 ? 100 : left));
        if (rc != 0)
            return rc;
    }
}

/* Fetches a snapshot of want[] into r (r->items must be an empty map). */
static gd_err fetch_snapshot(gd_sub *s, const bool *want, snap_result *r)
{
    char topics[NTOPICS * 6 + 8];
    topic_list(want, topics, sizeof topics);
    if (open_dealer(s) != GD_OK)
        return GD_ERR_ZMQ;
    if (zmq_send(s->dealer, GD_PROTO_INFORMER, 4, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        zmq_send(s->dealer, "SNAPSHOT", 8, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        zmq_send(s->dealer, topics, strlen(topics), ZMQ_DONTWAIT) < 0) {
        close_dealer(s);
        return GD_ERR_TIMEOUT;           /* not connected yet: try again later */
    }
    int64_t deadline = gd_mono_ms() + s->o.snapshot_timeout_ms;
    for (;;) {
        int64_t left = deadline - gd_mono_ms();
        zmq_pollitem_t pi = {.socket = s->dealer, .events = ZMQ_POLLIN};
        if (left <= 0 || poll_stoppable(s, &pi, left) == 0) {
            close_dealer(s);     /* a late reply must not be read as the next one's */
            return stopping(s) ? GD_ERR_CANCELLED : GD_ERR_TIMEOUT;
        }
        if (!(pi.revents & ZMQ_POLLIN))
            continue;
        frames f;
        if (recv_frames(s->dealer, &f, ZMQ_DONTWAIT) <= 0)
            continue;
        int rc = snap_reply(s, &f, r);
        frames_close(&f);
        if (rc == SNAP_DONE)
            return GD_OK;
        if (rc < 0) {
            close_dealer(s);
            return (gd_err)-rc;
        }
    }
}

/* Makes the replica of the topics in want[] equal to the snapshot r: baselines from END,
 * deletions of what the snapshot lacks, then additions and changes (r->items is consumed). */
static void apply_snapshot(gd_sub *s, const bool *want, snap_result *r)
{
    /* Baselines first. A different instance in END means the informer restarted since
     * our other baselines were taken: check_status marks those for a re-snapshot too. */
    check_status(s, r->end_status, false);
    for (int i = 0; i < NTOPICS; i++) {
        if (!want[i])
            continue;
        char t[8];
        gd_shard_topic(index_shard(i), t, sizeof t);
        if (!seq_value(cJSON_GetObjectItemCaseSensitive(r->end_topics, t), &s->last[i]))
            s->last[i] = 0;             /* absent: no message on that topic yet */
        s->base[i] = true;
        s->resnap[i] = false;
    }
    /* Deletions: replica objects of the snapshotted topics the snapshot does not have. */
    gd_map_iter it;
    const char *key;
    void *val;
    size_t ndel = 0, cap = 0;
    char **del = NULL;
    pthread_rwlock_rdlock(&s->lock);
    gd_map_iter_init(&it, s->cache);
    while (gd_map_next(&it, &key, &val)) {
        entry *en = val;
        if (!want[topic_index(en->shard)] || gd_map_get(r->items, key))
            continue;
        if (ndel == cap) {
            cap = cap ? cap * 2 : 64;
            char **nd = realloc(del, cap * sizeof *nd);
            if (!nd)
                break;
            del = nd;
        }
        del[ndel++] = strdup(key);
    }
    pthread_rwlock_unlock(&s->lock);
    for (size_t i = 0; i < ndel; i++) {
        if (del[i])
            remove_key(s, del[i], true);
        free(del[i]);
    }
    free(del);
    /* Additions and changes. */
    gd_map_iter_init(&it, r->items);
    while (gd_map_next(&it, &key, &val)) {
        snap_item *si = val;
        upsert(s, key, si->shard, si->rv, r->end_seq, &si->obj, true, false);
    }
    s->st.snapshots++;
    if (r->synced && !s->informer_synced) {
        s->informer_synced = true;
        notify(s, GD_EV_SYNCED, NULL, GD_SHARD_BROADCAST, NULL, NULL, true);
    }
}

/* Snapshot of every followed topic that needs one, diffed into the replica. */
static gd_err resnapshot(gd_sub *s)
{
    bool want[NTOPICS];
    bool any = false;
    for (int i = 0; i < NTOPICS; i++) {
        want[i] = s->follow[i] && (!s->base[i] || s->resnap[i]);
        any = any || want[i];
    }
    if (!any)
        return GD_OK;
    if (gd_mono_ms() < s->next_snap_ms)
        return GD_ERR_TIMEOUT;
    if (s->last_heard_ms == 0) {
        /* Nothing received yet: our subscriptions may not be active at the PUB side, and
         * whatever is published between the snapshot and that moment would be lost (a
         * gap, repaired, but avoidable). A message on the SUB proves they are active;
         * heartbeats come every second, so wait for one, briefly, without consuming it. */
        zmq_pollitem_t pi = {.socket = s->sub, .events = ZMQ_POLLIN};
        poll_stoppable(s, &pi, 1500);
    }
    if (stopping(s))
        return GD_ERR_CANCELLED;
    snap_result r = {.items = gd_map_new(snap_item_free)};
    if (!r.items)
        return GD_ERR_NOMEM;
    gd_err e = fetch_snapshot(s, want, &r);
    if (e == GD_ERR_CANCELLED) {
        snap_result_clear(&r);
        return e;
    }
    if (e != GD_OK) {
        s->st.snapshot_failures++;
        s->next_snap_ms = gd_mono_ms() + 1000;
        snap_result_clear(&r);
        GD_WARN("gd_sub: snapshot failed; will retry", "kind", s->kind, "error", gd_strerror(e));
        return e;
    }
    s->next_snap_ms = 0;
    apply_snapshot(s, want, &r);
    snap_result_clear(&r);
    return GD_OK;
}

/* ------------------------------------------------------------ following topics */

static gd_err follow(gd_sub *s, const bool *want)
{
    bool drop[NTOPICS], any_drop = false;
    for (int i = 0; i < NTOPICS; i++) {
        char t[8];
        gd_shard_topic(index_shard(i), t, sizeof t);
        drop[i] = s->follow[i] && !want[i];
        if (want[i] && !s->follow[i]) {
            zmq_setsockopt(s->sub, ZMQ_SUBSCRIBE, t, strlen(t));
            s->base[i] = false;
            s->resnap[i] = false;
            s->last[i] = 0;
        } else if (drop[i]) {
            zmq_setsockopt(s->sub, ZMQ_UNSUBSCRIBE, t, strlen(t));
            s->base[i] = s->resnap[i] = false;
            s->last[i] = 0;
            any_drop = true;
        }
        s->follow[i] = want[i];
    }
    if (any_drop) {     /* a revoked shard is not a deletion: drop silently */
        gd_map_iter it;
        void *val;
        pthread_rwlock_wrlock(&s->lock);
        gd_map_iter_init(&it, s->cache);
        while (gd_map_next(&it, NULL, &val))
            if (drop[topic_index(((entry *)val)->shard)])
                entry_free(gd_map_iter_take(&it));
        pthread_rwlock_unlock(&s->lock);
    }
    s->next_snap_ms = 0;
    return resnapshot(s);
}

gd_err gd_sub_set_shards(gd_sub *s, const int *shards, size_t n)
{
    bool want[NTOPICS] = {false};
    for (size_t i = 0; i < n; i++) {
        if (shards[i] < 0 || shards[i] >= GD_NSHARDS)
            return GD_ERR_ARG;
        want[shards[i]] = true;
    }
    want[B_INDEX] = true;
    return follow(s, want);
}

gd_err gd_sub_set_all(gd_sub *s)
{
    bool want[NTOPICS];
    for (int i = 0; i < NTOPICS; i++)
        want[i] = true;
    return follow(s, want);
}

/* ------------------------------------------------------------ dispatch */

/* Applies the messages already received (up to max_batch) without blocking, repairs any
 * gap found (synchronous snapshot), and retries a pending snapshot. */
static gd_err dispatch(gd_sub *s)
{
    for (int i = 0; i < s->o.max_batch; i++) {
        frames f;
        int r = recv_frames(s->sub, &f, ZMQ_DONTWAIT);
        if (r <= 0)
            break;
        handle_pub(s, &f);
        frames_close(&f);
    }
    return resnapshot(s);
}

gd_err gd_sub_poll(gd_sub *s, int timeout_ms)
{
    zmq_pollitem_t pi = {.socket = s->sub, .events = ZMQ_POLLIN};
    if (zmq_poll(&pi, 1, timeout_ms) < 0 && errno != EINTR)
        return GD_ERR_ZMQ;
    return dispatch(s);
}

/* ------------------------------------------------------------ replica readers */

cJSON *gd_sub_get(gd_sub *s, const char *key)
{
    pthread_rwlock_rdlock(&s->lock);
    entry *e = gd_map_get(s->cache, key);
    cJSON *copy = e ? cJSON_Duplicate(e->obj, 1) : NULL;
    pthread_rwlock_unlock(&s->lock);
    return copy;
}

bool gd_sub_get_rv(gd_sub *s, const char *key, char *buf, size_t cap)
{
    pthread_rwlock_rdlock(&s->lock);
    entry *e = gd_map_get(s->cache, key);
    if (e)
        snprintf(buf, cap, "%s", e->rv);
    pthread_rwlock_unlock(&s->lock);
    return e != NULL;
}

size_t gd_sub_count(gd_sub *s)
{
    pthread_rwlock_rdlock(&s->lock);
    size_t n = gd_map_count(s->cache);
    pthread_rwlock_unlock(&s->lock);
    return n;
}

