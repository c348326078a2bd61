/* gd_sub_snap.c — the subscriber's one repair path (docs/PROTOCOL.md §1, steps 2 and 5):
 * fetch a snapshot of the topics that need one from the informer's ROUTER and make the
 * replica of those topics equal to it, so the owner hears ADDED/MODIFIED/DELETED for exactly
 * what differs. Everything that can go wrong on the wire (drops at the high-water mark, a
 * subscription that became active late, an informer restart) ends here. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gd_json.h"
#include "gd_log.h"
#include "gd_proto.h"
#include "gd_sub_internal.h"
#include "gd_time.h"

void gd_sub_close_dealer(gd_sub *s)
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
        gd_sub_close_dealer(s);
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

void gd_sub_snap_item_free(void *v)
{
    snap_item *it = v;
    free(it->rv);
    cJSON_Delete(it->obj);
    free(it);
}

void gd_sub_snap_result_clear(snap_result *r)
{
    gd_map_destroy(&r->items);
    cJSON_Delete(r->end_topics);
    cJSON_Delete(r->end_status);
    memset(r, 0, sizeof *r);
}

/* One reply message of a snapshot: OBJ goes into r->items, END completes it. Returns
 * SNAP_MORE, SNAP_DONE, or -gd_err (ERROR reply, malformed message, no memory). */
int gd_sub_snap_reply(gd_sub *s, frames *f, snap_result *r)
{
    char proto[8], cmd[8];
    if (f->n < 2 || f->overflow || gd_sub_frame_str(f, 0, proto, sizeof proto) >= sizeof proto ||
        strcmp(proto, GD_PROTO_INFORMER) != 0 || gd_sub_frame_str(f, 1, cmd, sizeof cmd) >= sizeof cmd)
        return -GD_ERR_PROTOCOL;
    if (!strcmp(cmd, "OBJ") && f->n == 6) {
        char key[512], rv[64], topic[8];
        if (gd_sub_frame_str(f, 2, key, sizeof key) >= sizeof key ||
            gd_sub_frame_str(f, 3, rv, sizeof rv) >= sizeof rv ||
            gd_sub_frame_str(f, 5, topic, sizeof topic) >= sizeof topic ||
            gd_shard_parse_topic(topic) == -2 || !key[0])
            return -GD_ERR_PROTOCOL;
        snap_item *it = calloc(1, sizeof *it);
        if (!it)
            return -GD_ERR_NOMEM;
        it->shard = gd_shard_parse_topic(topic);
        it->rv = strdup(rv);
        it->obj = gd_sub_parse_object(f, 4, true);
        if (!it->rv || !it->obj || gd_map_put(r->items, key, it, NULL) != GD_OK) {
            bool nomem = !it->rv;
            gd_sub_snap_item_free(it);
            return nomem ? -GD_ERR_NOMEM : -GD_ERR_PROTOCOL;
        }
        return SNAP_MORE;
    }
    if (!strcmp(cmd, "END") && f->n == 6) {
        char gseq[24], *end;
        if (gd_sub_frame_str(f, 2, gseq, sizeof gseq) >= sizeof gseq || !isdigit((unsigned char)gseq[0]))
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
            if (!gd_sub_seq_value(t, &seq))
                return -GD_ERR_PROTOCOL;    /* no baseline from a malformed sequence */
        return SNAP_DONE;
    }
    if (!strcmp(cmd, "ERROR") && f->n >= 3) {
        char msg[128];
        gd_sub_frame_str(f, 2, msg, sizeof msg);
        GD_WARN("gd_sub: snapshot refused", "kind", s->kind, "message", msg);
    }
    return -GD_ERR_PROTOCOL;
}

bool gd_sub_stopping(const gd_sub *s) { return s->o.stop && atomic_load(s->o.stop); }

int gd_sub_poll_stoppable(const gd_sub *s, zmq_pollitem_t *pi, int64_t ms)
{
    int64_t until = gd_mono_ms() + ms;
    for (;;) {
        int64_t left = until - gd_mono_ms();
        if (left <= 0 || gd_sub_stopping(s))
            return 0;
        int rc = zmq_poll(pi, 1, (long)(left > 100 ? 100 : left));
        if (rc != 0)
            return rc;
    }
}

/* Asks the informer to publish a heartbeat now (PROTOCOL.md §1, `HEARTBEAT` request).
 * Returns false when it will not: an informer older than the request answers ERROR. */
static bool request_heartbeat(gd_sub *s)
{
    if (open_dealer(s) != GD_OK)
        return false;
    if (zmq_send(s->dealer, GD_PROTO_INFORMER, 4, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        zmq_send(s->dealer, "HEARTBEAT", 9, ZMQ_DONTWAIT) < 0) {
        gd_sub_close_dealer(s);
        return true;                    /* not connected yet: ask again */
    }
    zmq_pollitem_t pi = {.socket = s->dealer, .events = ZMQ_POLLIN};
    frames f;
    if (gd_sub_poll_stoppable(s, &pi, 200) <= 0 || gd_sub_recv_frames(s->dealer, &f, ZMQ_DONTWAIT) <= 0) {
        gd_sub_close_dealer(s);         /* a late answer must not be read as a snapshot's */
        return true;
    }
    char cmd[16] = "";
    if (f.n >= 2)
        gd_sub_frame_str(&f, 1, cmd, sizeof cmd);
    gd_sub_frames_close(&f);
    return strcmp(cmd, "ERROR") != 0;
}

/* Nothing received yet: our subscriptions may not be active at the PUB side, and whatever
 * is published between the snapshot and that moment would be lost (a gap, repaired, but
 * avoidable). A message on the SUB proves they are active. Waits for one, briefly, without
 * consuming it, and asks the informer for a heartbeat meanwhile (again every 50 ms while
 * none arrives: the subscription may reach the PUB side after the request) instead of
 * waiting for its periodic one, up to a second away. */
static void await_first_message(gd_sub *s)
{
    int64_t until = gd_mono_ms() + 1500;
    bool ask = true;
    for (;;) {
        if (ask)
            ask = request_heartbeat(s);
        int64_t left = until - gd_mono_ms();
        zmq_pollitem_t pi = {.socket = s->sub, .events = ZMQ_POLLIN};
        if (left <= 0 || gd_sub_stopping(s) ||
            gd_sub_poll_stoppable(s, &pi, ask && left > 50 ? 50 : left) != 0)
            return;
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
        gd_sub_close_dealer(s);
        return GD_ERR_TIMEOUT;           /* not connected yet: try again later */
    }
    int64_t deadline = gd_mono_ms() + s->o.snapshot_timeout_ms;
    for (;;) {
        int64_t left = deadline - gd_mono_ms();
        zmq_pollitem_t pi = {.socket = s->dealer, .events = ZMQ_POLLIN};
        if (left <= 0 || gd_sub_poll_stoppable(s, &pi, left) == 0) {
            gd_sub_close_dealer(s);     /* a late reply must not be read as the next one's */
            return gd_sub_stopping(s) ? GD_ERR_CANCELLED : GD_ERR_TIMEOUT;
        }
        if (!(pi.revents & ZMQ_POLLIN))
            continue;
        frames f;
        if (gd_sub_recv_frames(s->dealer, &f, ZMQ_DONTWAIT) <= 0)
            continue;
        /* The timeout is for an informer gone silent, not for a large snapshot: one of
         * 10 000 pods, on a loaded machine, takes longer than the worker's second while
         * every frame of it arrives in time, and a retry starts it over. */
        deadline = gd_mono_ms() + s->o.snapshot_timeout_ms;
        int rc = gd_sub_snap_reply(s, &f, r);
        gd_sub_frames_close(&f);
        if (rc == SNAP_DONE)
            return GD_OK;
        if (rc < 0) {
            gd_sub_close_dealer(s);
            return (gd_err)-rc;
        }
    }
}

/* The replica's keys of the topics in want[] that a snapshot (items) lacks: collected
 * under the store's iteration, removed after it. */
typedef struct {
    const bool *want;
    gd_map *items;
    char **keys;
    size_t n, cap;
} stale_keys;

static void collect_stale(void *ud, const char *key, const gd_sub_rec *rec)
{
    stale_keys *d = ud;
    if (!d->want[topic_index(rec->shard)] || gd_map_get(d->items, key))
        return;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 64;
        char **nk = realloc(d->keys, cap * sizeof *nk);
        if (!nk)
            return;             /* left for the next snapshot to find */
        d->keys = nk;
        d->cap = cap;
    }
    d->keys[d->n++] = strdup(key);
}

/* Makes the replica of the topics in want[] equal to the snapshot r: baselines from END,
 * deletions of what the snapshot lacks, then additions and changes (r->items is consumed). */
void gd_sub_apply_snapshot(gd_sub *s, const bool *want, snap_result *r)
{
    /* Baselines first. A different instance in END means the informer restarted since
     * our other baselines were taken: check_status marks those for a re-snapshot too. */
    gd_sub_check_status(s, r->end_status, false);
    for (int i = 0; i < NTOPICS; i++) {
        if (!want[i])
            continue;
        char t[8];
        gd_shard_topic(index_shard(i), t, sizeof t);
        if (!gd_sub_seq_value(cJSON_GetObjectItemCaseSensitive(r->end_topics, t), &s->last[i]))
            s->last[i] = 0;             /* absent: no message on that topic yet */
        s->base[i] = true;
        s->resnap[i] = false;
    }
    /* Deletions: replica objects of the snapshotted topics the snapshot does not have. */
    stale_keys d = {.want = want, .items = r->items};
    s->store.each(s->store.ud, collect_stale, &d);
    for (size_t i = 0; i < d.n; i++) {
        if (d.keys[i])
            gd_sub_remove(s, d.keys[i], true);
        free(d.keys[i]);
    }
    free(d.keys);
    /* Additions and changes. */
    gd_map_iter it;
    const char *key;
    void *val;
    gd_map_iter_init(&it, r->items);
    while (gd_map_next(&it, &key, &val)) {
        snap_item *si = val;
        gd_sub_rec rec = {.shard = si->shard, .gseq = r->end_seq}, prev;
        snprintf(rec.rv, sizeof rec.rv, "%s", si->rv);
        bool had = s->store.get(s->store.ud, key, &prev);
        gd_sub_upsert(s, key, &rec, had ? &prev : NULL, &si->obj, true, false);
    }
    s->st.snapshots++;
    if (r->synced && !s->informer_synced) {
        s->informer_synced = true;
        gd_sub_notify(s, GD_EV_SYNCED, NULL, GD_SHARD_BROADCAST, NULL, NULL, true);
    }
}

/* The followed topics that need a snapshot (no base yet, or a gap); false: none. */
static bool snap_wanted(const gd_sub *s, bool want[NTOPICS])
{
    bool any = false;
    for (int i = 0; i < NTOPICS; i++) {
        want[i] = s->follow[i] && (!s->base[i] || s->resnap[i]);
        any = any || want[i];
    }
    return any;
}

int64_t gd_sub_retry_in(const gd_sub *s)
{
    bool want[NTOPICS];
    if (!snap_wanted(s, want))
        return -1;
    int64_t left = s->next_snap_ms - gd_mono_ms();
    return left > 0 ? left : 0;
}

/* Snapshot of every followed topic that needs one, diffed into the replica. */
gd_err gd_sub_resnapshot(gd_sub *s)
{
    bool want[NTOPICS];
    if (!snap_wanted(s, want))
        return GD_OK;
    if (gd_mono_ms() < s->next_snap_ms)
        return GD_ERR_TIMEOUT;
    if (s->last_heard_ms == 0)
        await_first_message(s);
    if (gd_sub_stopping(s))
        return GD_ERR_CANCELLED;
    snap_result r = {.items = gd_map_new(gd_sub_snap_item_free)};
    if (!r.items) {
        s->next_snap_ms = gd_mono_ms() + 1000;   /* (gd_sub_poll must not spin on it) */
        return GD_ERR_NOMEM;
    }
    gd_err e = fetch_snapshot(s, want, &r);
    if (e == GD_ERR_CANCELLED) {
        gd_sub_snap_result_clear(&r);
        return e;
    }
    if (e != GD_OK) {
        s->st.snapshot_failures++;
        s->next_snap_ms = gd_mono_ms() + 1000;
        gd_sub_snap_result_clear(&r);
        GD_WARN("gd_sub: snapshot failed; will retry", "kind", s->kind, "error", gd_strerror(e));
        return e;
    }
    s->next_snap_ms = 0;
    gd_sub_apply_snapshot(s, want, &r);
    gd_sub_snap_result_clear(&r);
    return GD_OK;
}

