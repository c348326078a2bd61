/* gd_sub.c — subscriber side of GDI1 (see gd_sub.h and docs/PROTOCOL.md §1): following
 * topics, applying PUB messages in order, and the replica changes the owner hears about.
 * Every gap it finds is repaired by gd_sub_snap.c (re-snapshot these topics and diff), the
 * one repair path and so the one that gets tested. */
#include "gd_sub.h"
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gd_hoptrace.h"
#include "gd_json.h"
#include "gd_log.h"
#include "gd_proto.h"
#include "gd_sub_internal.h"
#include "gd_time.h"
#include "gd_wake.h"

void gd_sub_opts_default(gd_sub_opts *o)
{
    memset(o, 0, sizeof *o);
    o->rcvhwm = 100000;
    o->snapshot_timeout_ms = 10000;
    o->max_batch = 1000;
    o->wake_fd = -1;
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
    if (o->store) {
        s->store = *o->store;
    } else {
        if (gd_sub_map_store_new(&s->store) != GD_OK)
            goto fail;
        s->own_store = true;
    }
    s->o.store = &s->store;
    s->sub = zmq_socket(zctx, ZMQ_SUB);
    if (!s->sub)
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
    if (s->own_store)
        gd_sub_map_store_free(&s->store);
    free(s);
    *sp = NULL;
}

void gd_sub_last_rv(const gd_sub *s, char *buf, size_t cap) { snprintf(buf, cap, "%s", s->last_rv); }
void gd_sub_get_stats(const gd_sub *s, gd_sub_stats *out) { *out = s->st; }

bool gd_sub_informer_listed(const gd_sub *s) { return s->informer_synced; }

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

static void release_old(gd_sub *s, cJSON *old)
{
    if (s->store.release)
        s->store.release(s->store.ud, old);
    else
        cJSON_Delete(old);
}

void gd_sub_notify(gd_sub *s, gd_ev ev, const char *key, int shard, const cJSON *old,
                   const cJSON *new_obj, bool resync)
{
    if (s->o.on_event)
        s->o.on_event(s->o.ud, ev, key, shard, old, new_obj, resync);
}

/* Stores *obj (taken) under key; reports ADDED or, if the rv or shard changed or force,
 * MODIFIED. The store keeps the new object, which stays valid on this thread for the
 * handler; the one it replaced is freed after the handler saw it. */
void gd_sub_upsert(gd_sub *s, const char *key, const gd_sub_rec *rec, const gd_sub_rec *prev,
                   cJSON **obj, bool resync, bool force)
{
    const cJSON *nobj = *obj;
    cJSON *old = NULL;
    if (s->store.put(s->store.ud, key, rec, obj, &old) != GD_OK) {
        cJSON_Delete(*obj);          /* the replica keeps its previous state */
        *obj = NULL;
        return;
    }
    gd_hop_rv(rec->rv, GD_HOP_SUB_APPLIED);
    if (!prev)
        gd_sub_notify(s, GD_EV_ADDED, key, rec->shard, NULL, nobj, resync);
    else if (force || strcmp(prev->rv, rec->rv) != 0 || prev->shard != rec->shard)
        gd_sub_notify(s, GD_EV_MODIFIED, key, rec->shard, old, nobj, resync);
    release_old(s, old);
}

void gd_sub_remove(gd_sub *s, const char *key, bool resync)
{
    cJSON *old = NULL;
    gd_sub_rec rec;
    if (!s->store.take(s->store.ud, key, &old, &rec))
        return;
    gd_sub_notify(s, GD_EV_DELETED, key, rec.shard, old, NULL, resync);
    release_old(s, old);
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
bool gd_sub_seq_value(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble < 18446744073709551616.0) ||
        v->valuedouble != (double)(uint64_t)v->valuedouble)
        return false;
    *out = (uint64_t)v->valuedouble;
    return true;
}

/* Instance change → the informer restarted, everything must be re-snapshotted. Then every
 * followed topic whose sequence is ahead of ours lost a message. */
void gd_sub_check_status(gd_sub *s, const cJSON *status, bool check_topics)
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
        if (shard == -2 || !gd_sub_seq_value(t, &seq))
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

void gd_sub_frames_close(frames *f)
{
    for (int i = 0; i < f->n; i++)
        zmq_msg_close(&f->m[i]);
    f->n = 0;
}

static atomic_uint_fast64_t bytes_received;

uint64_t gd_sub_bytes_received(void)
{
    return atomic_load_explicit(&bytes_received, memory_order_relaxed);
}

cJSON *gd_sub_parse_object(frames *f, int i, bool count)
{
    size_t n = zmq_msg_size(&f->m[i]);
    if (count)
        atomic_fetch_add_explicit(&bytes_received, n, memory_order_relaxed);
    return gd_json_parse(zmq_msg_data(&f->m[i]), n);
}

/* Receives one multipart message. */
int gd_sub_recv_frames(void *sock, frames *f, int flags)
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
            gd_sub_frames_close(f);
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

size_t gd_sub_frame_str(frames *f, int i, char *buf, size_t cap)
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
    if (f->n != 8 || f->overflow || gd_sub_frame_str(f, 0, topic, sizeof topic) >= sizeof topic ||
        gd_sub_frame_str(f, 1, proto, sizeof proto) >= sizeof proto ||
        strcmp(proto, GD_PROTO_INFORMER) != 0 ||
        gd_sub_frame_str(f, 2, seqs, sizeof seqs) >= sizeof seqs ||
        gd_sub_frame_str(f, 3, type, sizeof type) >= sizeof type ||
        gd_sub_frame_str(f, 5, key, sizeof key) >= sizeof key ||
        gd_sub_frame_str(f, 6, rv, sizeof rv) >= sizeof rv) {
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
            gd_sub_check_status(s, st, false);
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
    gd_ev ev = gd_ev_parse(type);
    gd_sub_rec prev;
    bool had = (ev == GD_EV_ADDED || ev == GD_EV_MODIFIED || ev == GD_EV_DELETED) && *key &&
               s->store.get(s->store.ud, key, &prev);
    if (had && g > prev.gseq && ev == GD_EV_MODIFIED && *rv && !strcmp(prev.rv, rv) &&
        prev.shard == shard && s->store.restamp) {
        /* A resync republishes what the replica holds (same resourceVersion, same object):
         * parsing and storing it again cost the most per message, and a resync of 20 000
         * objects sat ahead of a real change on the SUB (issue 23: 80-140 ms). */
        gd_sub_rec rec = prev;
        rec.gseq = g;
        const cJSON *cur = s->store.restamp(s->store.ud, key, &rec);
        if (cur) {
            s->st.applied++;
            gd_hop_rv(rv, GD_HOP_SUB_APPLIED);
            gd_sub_notify(s, GD_EV_MODIFIED, key, shard, cur, cur, false);
            return;
        }
    }
    cJSON *body = gd_sub_parse_object(f, 7, ev == GD_EV_ADDED || ev == GD_EV_MODIFIED ||
                                                ev == GD_EV_DELETED);
    if (had && g <= prev.gseq) {     /* older than the replica's state (gd_sub_rec.gseq) */
        s->st.stale++;
    } else if (!strcmp(type, "HEARTBEAT") || ev == GD_EV_SYNCED) {
        gd_sub_check_status(s, body, true);
        if (ev == GD_EV_SYNCED) {
            s->informer_synced = true;
            gd_sub_notify(s, GD_EV_SYNCED, NULL, GD_SHARD_BROADCAST, NULL, NULL, false);
        }
    } else if (ev == GD_EV_ADDED || ev == GD_EV_MODIFIED) {
        if (!body || !*key) {
            s->st.protocol_errors++;
            s->resnap[idx] = true;   /* we cannot apply it: repair from a snapshot */
        } else {
            s->st.applied++;
            gd_sub_rec rec = {.shard = shard, .gseq = g};
            snprintf(rec.rv, sizeof rec.rv, "%s", rv);
            gd_sub_upsert(s, key, &rec, had ? &prev : NULL, &body, false, true);
        }
    } else if (ev == GD_EV_DELETED) {
        s->st.applied++;
        gd_sub_remove(s, key, false);
    } else {
        s->st.protocol_errors++;
    }
    cJSON_Delete(body);
}

/* ------------------------------------------------------------ following topics */

static gd_err follow(gd_sub *s, const bool *want)
{
    int drop[NTOPICS], ndrop = 0;
    for (int i = 0; i < NTOPICS; i++) {
        char t[8];
        gd_shard_topic(index_shard(i), t, sizeof t);
        if (want[i] && !s->follow[i]) {
            zmq_setsockopt(s->sub, ZMQ_SUBSCRIBE, t, strlen(t));
            s->base[i] = false;
            s->resnap[i] = false;
            s->last[i] = 0;
        } else if (s->follow[i] && !want[i]) {
            zmq_setsockopt(s->sub, ZMQ_UNSUBSCRIBE, t, strlen(t));
            s->base[i] = s->resnap[i] = false;
            s->last[i] = 0;
            drop[ndrop++] = index_shard(i);
        }
        s->follow[i] = want[i];
    }
    if (ndrop)          /* a revoked shard is not a deletion: drop silently */
        s->store.drop(s->store.ud, drop, ndrop);
    s->next_snap_ms = 0;
    return gd_sub_resnapshot(s);
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
        int r = gd_sub_recv_frames(s->sub, &f, ZMQ_DONTWAIT);
        if (r <= 0)
            break;
        handle_pub(s, &f);
        gd_sub_frames_close(&f);
    }
    return gd_sub_resnapshot(s);
}

gd_err gd_sub_poll(gd_sub *s, int timeout_ms)
{
    zmq_pollitem_t pi[2] = {
        {.socket = s->sub, .events = ZMQ_POLLIN},
        {.fd = s->o.wake_fd, .events = ZMQ_POLLIN},
    };
    int n = s->o.wake_fd >= 0 ? 2 : 1;
    int64_t due = gd_sub_retry_in(s);     /* a pending snapshot is retried on time */
    if (due >= 0 && (timeout_ms < 0 || due < timeout_ms))
        timeout_ms = (int)due;
    if (zmq_poll(pi, n, timeout_ms) < 0 && errno != EINTR)
        return GD_ERR_ZMQ;
    if (n == 2 && (pi[1].revents & ZMQ_POLLIN))
        gd_wake_drain(s->o.wake_fd);
    return dispatch(s);
}

/* ------------------------------------------------------------ replica readers */

cJSON *gd_sub_get(gd_sub *s, const char *key) { return s->store.copy(s->store.ud, key); }
size_t gd_sub_count(gd_sub *s) { return s->store.count(s->store.ud); }

bool gd_sub_get_rv(gd_sub *s, const char *key, char *buf, size_t cap)
{
    gd_sub_rec rec;
    if (!s->store.get(s->store.ud, key, &rec))
        return false;
    snprintf(buf, cap, "%s", rec.rv);
    return true;
}
