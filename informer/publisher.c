/* publisher.c — the informer's ZeroMQ side (docs/PROTOCOL.md §1, GDI1).
 *
 * One mutex guards the store, the sequence numbers and the PUB socket: the reflector thread
 * applies list and watch results itself (inf_pub_apply: store, then PUB), while the
 * publisher thread (inf_pub_run) serves the ROUTER (snapshots, STATS) and the timers
 * (heartbeat, resync). A snapshot is built under that mutex between two publications, so
 * the sequence numbers it reports are exactly the state it contains. */
#include "publisher_internal.h"
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include <zmq.h>
#include "gd_hoptrace.h"
#include "gd_log.h"
#include "gd_proto.h"
#include "gd_time.h"
#include "gd_wake.h"

static int topic_index(int shard) { return shard >= 0 && shard < GD_NSHARDS ? shard : B_INDEX; }

static void topic_name(int idx, char *buf, size_t cap)
{
    gd_shard_topic(idx == B_INDEX ? GD_SHARD_BROADCAST : idx, buf, cap);
}

/* ------------------------------------------------------------ pure helpers */

gd_err inf_parse_topics(const char *s, bool *want, bool *all)
{
    memset(want, 0, NTOPICS * sizeof *want);
    *all = false;
    if (!s || !*s)
        return GD_ERR_ARG;
    if (strcmp(s, "*") == 0) {
        *all = true;
        for (int i = 0; i < NTOPICS; i++)
            want[i] = true;
        return GD_OK;
    }
    const char *p = s;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        char t[16];
        if (n == 0 || n >= sizeof t)
            return GD_ERR_ARG;
        memcpy(t, p, n);
        t[n] = '\0';
        int shard = gd_shard_parse_topic(t);
        if (shard == -2)
            return GD_ERR_ARG;
        want[topic_index(shard)] = true;
        p += n;
        if (*p == ',') {
            p++;
            if (!*p)
                return GD_ERR_ARG;    /* trailing comma */
        }
    }
    return GD_OK;
}

/* Appends "name":seq for each selected topic; `only` NULL selects topics with messages. */
static cJSON *topics_object(const uint64_t *topic_seq, const bool *only)
{
    cJSON *t = cJSON_CreateObject();
    if (!t)
        return NULL;
    for (int i = 0; i < NTOPICS; i++) {
        if (only ? !only[i] : topic_seq[i] == 0)
            continue;
        char name[8];
        topic_name(i, name, sizeof name);
        cJSON_AddItemToObject(t, name, cJSON_CreateNumber((double)topic_seq[i]));
    }
    return t;
}

char *inf_status_json(const char *instance, uint64_t seq, bool synced,
                      const uint64_t *topic_seq)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "instance", instance);
    cJSON_AddNumberToObject(o, "seq", (double)seq);   /* exact below 2^53 */
    cJSON_AddBoolToObject(o, "synced", synced);
    cJSON_AddItemToObject(o, "topics", topics_object(topic_seq, NULL));
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* ------------------------------------------------------------ sending */

/* Sends frames; the last one without SNDMORE unless more_after (a zero-copy body follows).
 * -1 with errno on failure. */
static int send_frames_more(void *sock, const char *const *f, const size_t *len, int n,
                            bool more_after)
{
    for (int i = 0; i < n; i++) {
        size_t l = len && len[i] != (size_t)-1 ? len[i] : strlen(f[i]);
        if (zmq_send(sock, f[i], l, i + 1 < n || more_after ? ZMQ_SNDMORE : 0) < 0)
            return -1;
    }
    return 0;
}

static int send_frames(void *sock, const char *const *f, const size_t *len, int n)
{
    return send_frames_more(sock, f, len, n, false);
}

static void release_obj(void *data, void *hint)
{
    (void)data;
    inf_obj_unref(hint);      /* runs on a ZeroMQ I/O thread: the refcount is atomic */
}

/* Sends o's body as the last frame without copying it: ZeroMQ holds a reference until the
 * message has left (for every subscriber), then release_obj drops it. */
static int send_body(void *sock, const inf_obj *o, int flags)
{
    zmq_msg_t m;
    if (zmq_msg_init_data(&m, (void *)o->body, o->body_len, release_obj, inf_obj_ref(o)) != 0) {
        inf_obj_unref((inf_obj *)o);
        return -1;
    }
    if (zmq_msg_send(&m, sock, flags) < 0) {
        zmq_msg_close(&m);    /* calls release_obj */
        return -1;
    }
    return 0;
}

/* holder: the object whose body is published (zero-copy), or NULL for a status message. */
static gd_err publish(inf_pub *p, const char *type, int shard, const char *key,
                      const char *rv, const inf_obj *holder)
{
    int idx = topic_index(shard);
    p->seq++;
    p->topic_seq[idx]++;
    char topic[8], seqs[48];
    topic_name(idx, topic, sizeof topic);
    snprintf(seqs, sizeof seqs, "%" PRIu64 ":%" PRIu64, p->seq, p->topic_seq[idx]);
    char *status = NULL;
    int rc;
    if (holder) {
        const char *f[8] = {topic, GD_PROTO_INFORMER, seqs, type, p->kind, key, rv, ""};
        rc = send_frames_more(p->pub, f, NULL, 7, true);
        if (rc == 0)
            rc = send_body(p->pub, holder, 0);
    } else {   /* SYNCED / HEARTBEAT: the status object, counted with this message */
        status = inf_status_json(p->instance, p->seq, p->synced, p->topic_seq);
        const char *f[8] = {topic, GD_PROTO_INFORMER, seqs, type, p->kind, key, rv,
                            status ? status : "{}"};
        rc = send_frames(p->pub, f, NULL, 8);
    }
    free(status);
    atomic_fetch_add_explicit(&p->cfg.ctr->messages_published, 1, memory_order_relaxed);
    if (rc < 0) {
        /* PUB never blocks; a failure here means the socket is unusable. */
        GD_ERROR("publish failed", "error", zmq_strerror(errno));
        return GD_ERR_ZMQ;
    }
    return GD_OK;
}

static void on_change(void *ud, gd_ev ev, const inf_obj *old, const inf_obj *new_obj)
{
    inf_pub *p = ud;
    if (ev == GD_EV_DELETED) {
        publish(p, "DELETED", old->shard, old->key, old->rv, old);
    } else {
        if (old && old->shard != new_obj->shard)   /* moved: gone from the old topic */
            publish(p, "DELETED", old->shard, old->key, old->rv, old);
        publish(p, gd_ev_name(ev), new_obj->shard, new_obj->key, new_obj->rv, new_obj);
        gd_hop_rv(new_obj->rv, GD_HOP_INF_SENT);
    }
    atomic_fetch_add_explicit(&p->cfg.ctr->events_published, 1, memory_order_relaxed);
}

/* ------------------------------------------------------------ lifecycle */

static void *bind_socket(void *zctx, int type, const char *ep, const char *ep2,
                         const gd_curve_keys *curve, int sndhwm)
{
    void *s = zmq_socket(zctx, type);
    if (!s)
        return NULL;
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(s, ZMQ_SNDHWM, &sndhwm, sizeof sndhwm);
    if (type == ZMQ_ROUTER) {
        int one = 1;   /* a vanished requester is an error we see, not a silent drop */
        zmq_setsockopt(s, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
    }
    const char *eps[2] = {ep, ep2};
    for (int i = 0; i < 2; i++) {
        if (!eps[i])
            continue;
        gd_err rc = gd_curve_bind(s, eps[i], curve);
        if (rc != GD_OK) {
            GD_ERROR("cannot bind", "endpoint", eps[i], "error",
                     rc == GD_ERR_CONFIG ? "tcp:// needs CURVE keys" : zmq_strerror(errno));
            zmq_close(s);
            return NULL;
        }
    }
    return s;
}

inf_pub *inf_pub_new(const inf_pub_cfg *cfg)
{
    inf_pub *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->cfg = *cfg;
    pthread_mutex_init(&p->mu, NULL);
    p->wake_fd = gd_wake_open();
    snprintf(p->kind, sizeof p->kind, "%s", cfg->kind ? cfg->kind : "");
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, 0) != sizeof r)
        r = (uint64_t)gd_wall_ms() ^ ((uint64_t)gd_mono_ns() << 17);
    snprintf(p->instance, sizeof p->instance, "%016" PRIx64, r);
    p->store = inf_store_new();
    int hwm = cfg->pub_hwm > 0 ? cfg->pub_hwm : 100000;
    if (p->store)
        p->pub = bind_socket(cfg->zctx, ZMQ_PUB, cfg->pub_endpoint, cfg->tcp_pub_endpoint,
                             cfg->curve, hwm);
    if (p->pub)
        p->router = bind_socket(cfg->zctx, ZMQ_ROUTER, cfg->snap_endpoint, cfg->tcp_snap_endpoint,
                                cfg->curve, 0);
    if (!p->router || p->wake_fd < 0) {
        inf_pub_destroy(&p);
        return NULL;
    }
    int64_t now = gd_mono_ms();
    p->next_heartbeat_ms = now + (cfg->heartbeat_ms > 0 ? cfg->heartbeat_ms : 1000);
    p->next_resync_ms = cfg->resync_ms > 0 ? now + cfg->resync_ms : INT64_MAX;
    return p;
}

void inf_pub_destroy(inf_pub **pp)
{
    if (!pp || !*pp)
        return;
    inf_pub *p = *pp;
    if (p->pub)
        zmq_close(p->pub);
    if (p->router)
        zmq_close(p->router);
    inf_store_destroy(&p->store);
    gd_wake_close(&p->wake_fd);
    pthread_mutex_destroy(&p->mu);
    free(p);
    *pp = NULL;
}

void inf_pub_wake(inf_pub *p)
{
    gd_wake_poke(p->wake_fd);     /* async-signal-safe */
}

uint64_t inf_pub_seq(const inf_pub *p) { return p->seq; }
uint64_t inf_pub_topic_seq(const inf_pub *p, int shard) { return p->topic_seq[topic_index(shard)]; }
inf_store *inf_pub_store(inf_pub *p) { return p->store; }

/* ------------------------------------------------------------ applying reflector output */


static void set_last_rv(inf_pub *p, const char *rv)
{
    if (rv && *rv)
        snprintf(p->last_rv, sizeof p->last_rv, "%s", rv);
}

static gd_err apply_locked(inf_pub *p, inf_update *it);

gd_err inf_pub_apply(inf_pub *p, inf_update *it)
{
    pthread_mutex_lock(&p->mu);
    gd_err e = apply_locked(p, it);
    pthread_mutex_unlock(&p->mu);
    return e;
}

static gd_err apply_locked(inf_pub *p, inf_update *it)
{
    gd_err e = GD_OK;
    set_last_rv(p, it->rv);
    switch (it->type) {
    case INF_UPD_UPSERT:
        gd_hop_rv(it->obj->rv, GD_HOP_INF_POPPED);
        e = inf_store_upsert(p->store, &it->obj, on_change, p);
        break;
    case INF_UPD_DELETE: {
        /* Publish the watch's final state (its resourceVersion is the deletion's), on the
         * topic where subscribers have the object. */
        const inf_obj *old = inf_store_get(p->store, it->obj->key);
        if (old) {
            publish(p, "DELETED", old->shard, it->obj->key, it->obj->rv, it->obj);
            atomic_fetch_add_explicit(&p->cfg.ctr->events_published, 1, memory_order_relaxed);
            inf_store_delete(p->store, it->obj->key, NULL, NULL);
        }
        break;
    }
    case INF_UPD_REPLACE:
        e = inf_store_replace(p->store, it->items, it->nitems, on_change, p);
        p->synced = true;
        atomic_store(&p->cfg.ctr->synced, 1);
        publish(p, "SYNCED", GD_SHARD_BROADCAST, "", p->last_rv, NULL);
        {
            char n[24];
            snprintf(n, sizeof n, "%zu", inf_store_count(p->store));
            GD_INFO("synced", "kind", p->kind, "objects", n, "rv", p->last_rv);
        }
        /* A list's pages were parsed into cJSON trees several times the size of what we
         * keep; glibc keeps such freed memory in its arenas. Give it back to the OS once
         * per (re)list so RSS reflects the cache, not the peak (glibc-specific). */
        malloc_trim(0);
        p->trim_pending = true;
        break;
    case INF_UPD_RV:
        break;
    }
    atomic_store_explicit(&p->cfg.ctr->objects, inf_store_count(p->store),
                          memory_order_relaxed);
    return e;
}

gd_err inf_pub_heartbeat(inf_pub *p)
{
    pthread_mutex_lock(&p->mu);
    gd_err e = publish(p, "HEARTBEAT", GD_SHARD_BROADCAST, "", p->last_rv, NULL);
    pthread_mutex_unlock(&p->mu);
    return e;
}

/* ------------------------------------------------------------ ROUTER requests */

typedef struct {
    inf_pub *p;
    zmq_msg_t *id;
    bool has_delim;
    const bool *want;
    int err;                 /* errno of a failed send */
    size_t sent;
} snap_ctx;

/* Sends the envelope and frames, all with SNDMORE (more frames follow). */
static int reply_more(void *router, zmq_msg_t *id, bool delim, const char *const *f, int n)
{
    if (zmq_send(router, zmq_msg_data(id), zmq_msg_size(id), ZMQ_SNDMORE) < 0)
        return -1;
    if (delim && zmq_send(router, "", 0, ZMQ_SNDMORE) < 0)
        return -1;
    return send_frames_more(router, f, NULL, n, true);
}

/* Sends the envelope (identity, optional empty delimiter) then the frames. */
static int reply(void *router, zmq_msg_t *id, bool delim, const char *const *f,
                 const size_t *len, int n)
{
    if (zmq_send(router, zmq_msg_data(id), zmq_msg_size(id), ZMQ_SNDMORE) < 0)
        return -1;
    if (delim && zmq_send(router, "", 0, ZMQ_SNDMORE) < 0)
        return -1;
    return send_frames(router, f, len, n);
}

static int snap_one(void *ud, const inf_obj *o)
{
    snap_ctx *c = ud;
    if (!c->want[topic_index(o->shard)])
        return 0;
    char topic[8];
    topic_name(topic_index(o->shard), topic, sizeof topic);
    /* the body goes zero-copy: a snapshot of N objects copies no bodies */
    const char *f[4] = {GD_PROTO_INFORMER, "OBJ", o->key, o->rv}, *t[1] = {topic};
    if (reply_more(c->p->router, c->id, c->has_delim, f, 4) < 0 ||
        send_body(c->p->router, o, ZMQ_SNDMORE) < 0 || send_frames(c->p->router, t, NULL, 1) < 0) {
        c->err = errno;
        return 1;
    }
    c->sent++;
    return 0;
}

static void serve_snapshot(inf_pub *p, zmq_msg_t *id, bool delim, const char *topics)
{
    bool want[NTOPICS], all;
    if (inf_parse_topics(topics, want, &all) != GD_OK) {
        const char *f[3] = {GD_PROTO_INFORMER, "ERROR", "bad topic list"};
        reply(p->router, id, delim, f, NULL, 3);
        return;
    }
    snap_ctx c = {.p = p, .id = id, .has_delim = delim, .want = want};
    inf_store_foreach(p->store, snap_one, &c);
    if (c.err) {
        GD_WARN("snapshot aborted", "kind", p->kind, "error", zmq_strerror(c.err));
        return;
    }
    cJSON *ts = topics_object(p->topic_seq, all ? NULL : want);
    char *tjson = ts ? cJSON_PrintUnformatted(ts) : NULL;
    cJSON_Delete(ts);
    char *status = inf_status_json(p->instance, p->seq, p->synced, p->topic_seq);
    char seq[24];
    snprintf(seq, sizeof seq, "%" PRIu64, p->seq);
    const char *f[6] = {GD_PROTO_INFORMER, "END", seq, tjson ? tjson : "{}",
                        p->synced ? "1" : "0", status ? status : "{}"};
    if (reply(p->router, id, delim, f, NULL, 6) < 0)
        GD_WARN("snapshot END not sent", "kind", p->kind, "error", zmq_strerror(errno));
    free(tjson);
    free(status);
    atomic_fetch_add_explicit(&p->cfg.ctr->snapshots, 1, memory_order_relaxed);
    char n[24];
    snprintf(n, sizeof n, "%zu", c.sent);
    GD_DEBUG("snapshot served", "kind", p->kind, "topics", topics, "objects", n, "seq", seq);
}

gd_err inf_pub_serve_one(inf_pub *p)
{
    zmq_msg_t fr[MAX_REQ_FRAMES];
    int n = 0, more = 1;
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, p->router, n == 0 ? ZMQ_DONTWAIT : 0) < 0) {
            zmq_msg_close(&m);
            for (int i = 0; i < n; i++)
                zmq_msg_close(&fr[i]);
            return errno == EAGAIN ? GD_ERR_TIMEOUT : GD_ERR_ZMQ;
        }
        more = zmq_msg_more(&m);
        if (n < MAX_REQ_FRAMES)
            fr[n++] = m;
        else
            zmq_msg_close(&m);     /* excess frames of a hostile request: dropped */
    }
    /* fr[0] identity; optional empty delimiter (REQ); then GDI1, command, args. */
    int at = 1;
    bool delim = n > 1 && zmq_msg_size(&fr[1]) == 0;
    if (delim)
        at = 2;
    char args[4][NTOPICS * 5 + 16];     /* "S000,S001,…,S255,B": every topic fits */
    int nargs = 0;
    for (int i = at; i < n && nargs < 4; i++, nargs++) {
        size_t l = zmq_msg_size(&fr[i]);
        if (l >= sizeof args[0])
            l = sizeof args[0] - 1;      /* long topic lists are rejected by the parser */
        memcpy(args[nargs], zmq_msg_data(&fr[i]), l);
        args[nargs][l] = '\0';
    }
    const char *err = NULL;
    pthread_mutex_lock(&p->mu);       /* a snapshot reads the store and the sequences */
    if (nargs < 2 || strcmp(args[0], GD_PROTO_INFORMER) != 0)
        err = "bad version: expected GDI1";
    else if (strcmp(args[1], "SNAPSHOT") == 0)
        serve_snapshot(p, &fr[0], delim, nargs > 2 ? args[2] : "*");
    else if (strcmp(args[1], "HEARTBEAT") == 0) {
        /* A subscriber that just subscribed asks for a heartbeat now rather than wait up to
         * a period for proof that its subscriptions are active (PROTOCOL.md §1, subscriber
         * step 2): every shard handed over was held back that long. Requests inside the gap
         * share one (workers starting together, or a subscriber asking in a loop, cannot
         * make the informer flood topic B); one that missed it asks again in 50 ms. */
        int64_t now = gd_mono_ms();
        uint64_t hb = p->requested_hb_seq;
        if (hb == 0 || p->cfg.heartbeat_request_gap_ms <= 0 ||
            now - p->requested_hb_ms >= p->cfg.heartbeat_request_gap_ms) {
            hb = 0;
            if (publish(p, "HEARTBEAT", GD_SHARD_BROADCAST, "", p->last_rv, NULL) == GD_OK) {
                p->requested_hb_ms = now;
                p->requested_hb_seq = hb = p->seq;
            }
        }
        char seq[24];
        snprintf(seq, sizeof seq, "%" PRIu64, hb ? hb : p->seq);
        const char *f[3] = {GD_PROTO_INFORMER, "HEARTBEAT", seq};
        reply(p->router, &fr[0], delim, f, NULL, 3);
    } else if (strcmp(args[1], "STATS") == 0) {
        char *text = inf_counters_render(p->cfg.ctr, p->kind);
        const char *f[3] = {GD_PROTO_INFORMER, "STATS", text ? text : ""};
        reply(p->router, &fr[0], delim, f, NULL, 3);
        free(text);
    } else
        err = "unknown command";
    if (err) {
        const char *f[3] = {GD_PROTO_INFORMER, "ERROR", err};
        reply(p->router, &fr[0], delim, f, NULL, 3);
    }
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < n; i++)
        zmq_msg_close(&fr[i]);
    return GD_OK;
}

/* ------------------------------------------------------------ the loop */

static void run_timers(inf_pub *p)
{
    int64_t now = gd_mono_ms();
    if (now >= p->next_heartbeat_ms) {
        /* The events of a list were still queued in ZeroMQ's pipes at the first trim; by
         * the next heartbeat they have left and their pipe memory is free: trim again. */
        pthread_mutex_lock(&p->mu);
        if (p->trim_pending) {
            malloc_trim(0);
            p->trim_pending = false;
        }
        pthread_mutex_unlock(&p->mu);
        inf_pub_heartbeat(p);
        p->next_heartbeat_ms = now + (p->cfg.heartbeat_ms > 0 ? p->cfg.heartbeat_ms : 1000);
    }
    if (now >= p->next_resync_ms) {
        pthread_mutex_lock(&p->mu);
        if (p->synced)
            inf_store_resync(p->store, on_change, p);
        pthread_mutex_unlock(&p->mu);
        p->next_resync_ms = now + p->cfg.resync_ms;
    }
}

gd_err inf_pub_run(inf_pub *p)
{
    while (!*p->cfg.stop) {
        int64_t now = gd_mono_ms();
        int64_t next = p->next_heartbeat_ms < p->next_resync_ms ? p->next_heartbeat_ms
                                                                 : p->next_resync_ms;
        long timeout = next > now ? (long)(next - now) : 0;
        zmq_pollitem_t items[2] = {
            {.socket = p->router, .events = ZMQ_POLLIN},
            {.fd = p->wake_fd, .events = ZMQ_POLLIN},
        };
        if (zmq_poll(items, 2, timeout) < 0) {
            if (errno == EINTR)
                continue;
            GD_ERROR("zmq_poll failed", "error", zmq_strerror(errno));
            return GD_ERR_ZMQ;
        }
        if (items[1].revents & ZMQ_POLLIN)
            gd_wake_drain(p->wake_fd);
        for (int i = 0; i < 16 && inf_pub_serve_one(p) == GD_OK; i++)
            ;
        run_timers(p);
    }
    return GD_OK;
}
