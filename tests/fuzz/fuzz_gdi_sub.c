/* fuzz_gdi_sub.c — what an informer sends its subscribers (docs/PROTOCOL.md §1, GDI1): PUB
 * messages and snapshot replies into common/proto/gd_sub*.c, as a worker runs it (the replica
 * in the worker's cache, worker/runtime/cache_sub.c and cache.c, each change mapped to
 * reconcile keys by worker/runtime/mapping.c, as worker/runtime/worker_feed.c does), and the STATS replies the manager reads
 * (manager/statsclient.c, manager/promtext.c).
 *
 * Input: byte 0 picks the kind; then records (fuzz_util.h). A record whose first frame is
 * "SNAP" is a snapshot reply message (the frames after it); a snapshot is applied at its
 * END, as resnapshot() does after fetch_snapshot(). "STATS" is a STATS reply text. Anything
 * else is a PUB message as the SUB socket receives it. One gd_sub serves the whole run (its
 * sockets are never used: the frames are handed to its parsing functions directly) and is
 * reset per input. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>
#include "fuzz_util.h"
#include "gd_sub.c"
#include "gd_sub_snap.c"
#include "gd_sub_store.c"
#include "cache.c"
#include "cache_sub.c"
#include "mapping.c"
#include "../../manager/promtext.c"
#include "../../manager/statsclient.c"

static const char *const kinds[8] = {"GodisCluster", "Godis", "ConfigMap", "ReplicaSet",
                                     "Service", "PersistentVolumeClaim", "Pod", "Node"};

typedef struct {
    gd_sub *sub;
    cache *cache;
    cache_sub cs;
    const char *kind;
    int emits;
} feed;

static void emit(void *ud, const char *ctrl, const char *key)
{
    feed *f = ud;
    if (!ctrl || !key || !*key) abort();
    f->emits++;
}

/* worker_feed.c's on_sub_event: the cache already holds new_obj; old_obj is what it held */
static void on_sub_event(void *ud, gd_ev ev, const char *key, int shard,
                         const cJSON *old_obj, const cJSON *new_obj, bool resync)
{
    feed *f = ud;
    if (ev == GD_EV_SYNCED) return;
    if (!key || (ev == GD_EV_ADDED) != (old_obj == NULL) || (ev == GD_EV_DELETED) != (new_obj == NULL))
        abort();
    if (new_obj && !cache_has(f->cache, f->kind, key)) abort();
    if (ev == GD_EV_DELETED && cache_has(f->cache, f->kind, key)) abort();
    mapping_event(f->cache, f->kind, ev == GD_EV_ADDED ? NULL : old_obj, new_obj, emit, f);
}

static void count_stamp(void *ud, const char *key, const cache_stamp *st)
{
    if (!key || !*key) abort();
    (*(size_t *)ud)++;
}

static void to_frames(const fz_record *r, int from, frames *f)
{
    f->n = 0;
    f->overflow = false;
    for (int i = from; i < r->n; i++) {
        if (f->n == MAX_FRAMES) {
            f->overflow = true;
            break;
        }
        zmq_msg_init_size(&f->m[f->n], r->len[i]);
        memcpy(zmq_msg_data(&f->m[f->n]), r->p[i], r->len[i]);
        f->n++;
    }
}

static bool frame_eq(const fz_record *r, int i, const char *s)
{
    return i < r->n && r->len[i] == strlen(s) && memcmp(r->p[i], s, r->len[i]) == 0;
}

static gd_sub *the_sub(feed *fd)
{
    static void *zctx;
    static gd_sub *s;
    if (!s) {
        zctx = zmq_ctx_new();
        gd_sub_opts o;
        gd_sub_opts_default(&o);
        o.kind = "Pod";
        o.pub_endpoint = "inproc://fz.pub";
        o.snap_endpoint = "inproc://fz.snap";
        o.on_event = on_sub_event;
        if (!(s = gd_sub_new(zctx, &o))) abort();
        gd_sub_map_store_free(&s->store);       /* replaced by each input's cache */
        s->own_store = false;
    }
    /* reset: an empty replica (this input's cache), every topic followed without a baseline */
    cache_sub_store(&fd->cs, fd->cache, fd->kind, &s->store);
    for (int i = 0; i < NTOPICS; i++) {
        s->follow[i] = true;
        s->base[i] = s->resnap[i] = false;
        s->last[i] = 0;
    }
    s->instance[0] = '\0';
    s->informer_synced = false;
    s->last_heard_ms = s->next_snap_ms = 0;
    s->last_rv[0] = '\0';
    memset(&s->st, 0, sizeof s->st);
    snprintf(s->kind, sizeof s->kind, "%s", fd->kind);
    s->o.ud = fd;
    return s;
}

static void stats_reply(const fz_record *r)
{
    char *text = r->n > 1 ? fz_strndup(r->p[1], r->len[1]) : NULL;
    if (!text) return;
    (void)mgr_stats_text_synced(text);
    mgr_promtext *pt = mgr_promtext_new();
    mgr_promtext_add(pt, text, strlen(text), NULL, NULL);
    mgr_promtext_add(pt, text, strlen(text), "worker", "3");
    free(mgr_promtext_render(pt));
    mgr_promtext_destroy(&pt);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t len)
{
    fz_quiet_logs();
    if (len < 1) return 0;
    feed fd = {.kind = kinds[d[0] % 8]};
    if (!(fd.cache = cache_new())) abort();
    gd_sub *s = fd.sub = the_sub(&fd);
    snap_result snap = {0};
    size_t pos = 1;
    fz_record r;
    while (fz_next_record(d, len, &pos, &r)) {
        frames f;
        if (frame_eq(&r, 0, "STATS")) {
            stats_reply(&r);
            continue;
        }
        bool is_snap = frame_eq(&r, 0, "SNAP");
        to_frames(&r, is_snap ? 1 : 0, &f);
        if (!is_snap) {
            handle_pub(s, &f);
        } else {
            if (!snap.items && !(snap.items = gd_map_new(gd_sub_snap_item_free))) abort();
            int rc = gd_sub_snap_reply(s, &f, &snap);
            if (rc == SNAP_DONE) {
                bool want[NTOPICS];
                for (int i = 0; i < NTOPICS; i++)
                    want[i] = s->follow[i] && (!s->base[i] || s->resnap[i]);
                gd_sub_apply_snapshot(s, want, &snap);
            }
            if (rc <= 0) gd_sub_snap_result_clear(&snap);
        }
        gd_sub_frames_close(&f);
    }
    gd_sub_snap_result_clear(&snap);
    (void)gd_sub_synced(s);
    size_t walked = 0;
    cache_each_stamp(fd.cache, fd.kind, count_stamp, &walked);
    if (gd_sub_count(s) != walked) abort();
    cache_destroy(&fd.cache);
    return 0;
}
