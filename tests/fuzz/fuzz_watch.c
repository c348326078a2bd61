/* fuzz_watch.c — what the API server sends an informer: a list page and a watch stream, for
 * any of the eight kinds, down the informer's own path: common/k8s/k8s_client.c's watch callback
 * (ERROR events classified) over common/k8s/k8s_watch_decoder.c fed in arbitrary chunks, the
 * reflector's event handling and list pages (informer/reflector.c), the transform, key and
 * shard of every object (informer/store.c, common/proto/gd_proto.c) and the publisher's store and
 * PUB socket (informer/publisher.c, an inproc endpoint nobody reads).
 *
 * Input: byte 0 picks the kind (bits 0-2) and whether a bad line ends the watch as the
 * reflector asks (bit 3, end_on_bad_event), byte 1 the chunk sizes; the rest is a list page
 * (JSON), a record separator, then the watch stream. The stream is also decoded whole, and
 * both ways must yield the same events: the decoder may not depend on how the network split
 * bytes. Once a bad line ended the watch, no later byte may deliver an event (the reflector
 * resumes from before the bad line; an event applied after it would move the rv past it). */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>
#include "fuzz_util.h"
#include "k8s_client.c"
#include "../../informer/store.c"
#include "../../informer/store_pack.c"
#include "../../informer/watchline.c"
#include "../../informer/counters.c"
#include "../../informer/publisher.c"
#include "../../informer/reflector.c"

static const char *const kinds[8] = {"GodisCluster", "Godis", "ConfigMap", "ReplicaSet",
                                     "Service", "PersistentVolumeClaim", "Pod", "Node"};
static const char *const drop[] = {"metadata.managedFields", "status.conditions"};

typedef struct {
    int events;
    unsigned long hash;
} tally;

static int count_event(void *ud, const char *type, cJSON *obj)
{
    tally *t = ud;
    t->events++;
    for (const char *p = type; *p; p++) t->hash = t->hash * 31 + (unsigned char)*p;
    char *s = cJSON_PrintUnformatted(obj);
    for (const char *p = s; p && *p; p++) t->hash = t->hash * 31 + (unsigned char)*p;
    free(s);
    return 0;
}

static tally decode(const char *s, size_t n, size_t chunk_seed)
{
    tally t = {0};
    k8s_watch_decoder *d = k8s_watch_decoder_new(4096, count_event, NULL, &t);
    size_t off = 0, i = 0;
    while (off < n) {
        size_t c = chunk_seed ? 1 + ((chunk_seed >> (i % 8)) & 0x3f) * (i % 3 + 1) : n;
        i++;
        if (c > n - off) c = n - off;
        if (k8s_watch_decoder_feed(d, s + off, c) != GD_OK) abort();
        off += c;
    }
    k8s_watch_decoder_destroy(&d);
    return t;
}

/* One publisher per kind for the whole run, its store and sequences reset per input:
 * ZeroMQ frees a closed socket's memory on its own threads, later, so a publisher per
 * input made libFuzzer run a full leak scan after every input (50x slower). */
static inf_pub *pub_for(void *zctx, int k, inf_counters *ctr, volatile int *stop)
{
    static inf_pub *pubs[8];
    if (!pubs[k]) {
        char pub[64], snap[64];
        snprintf(pub, sizeof pub, "inproc://fz-%d.pub", k);
        snprintf(snap, sizeof snap, "inproc://fz-%d.snap", k);
        inf_pub_cfg c = {.zctx = zctx, .kind = kinds[k], .pub_endpoint = pub,
                         .snap_endpoint = snap, .heartbeat_ms = 1000, .ctr = ctr, .stop = stop};
        if (!(pubs[k] = inf_pub_new(&c))) abort();
    }
    inf_pub *p = pubs[k];
    inf_store_destroy(&p->store);
    if (!(p->store = inf_store_new())) abort();
    p->seq = 0;
    memset(p->topic_seq, 0, sizeof p->topic_seq);
    p->synced = false;
    p->last_rv[0] = '\0';
    return p;
}

static gd_err apply(void *ud, inf_update *it) { return inf_pub_apply(ud, it); }

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t len)
{
    static void *zctx;
    fz_quiet_logs();
    if (!zctx) zctx = zmq_ctx_new();
    if (len < 2) return 0;
    const char *kind = kinds[d[0] % 8];
    size_t chunk_seed = d[1];
    const char *body = (const char *)d + 2;
    size_t blen = len - 2;
    const char *rs = memchr(body, FZ_RS, blen);
    size_t list_len = rs ? (size_t)(rs - body) : 0;
    const char *stream = rs ? rs + 1 : body;
    size_t slen = blen - (size_t)(stream - body);

    /* the decoder alone: whole and chunked agree */
    tally whole = decode(stream, slen, 0), parts = decode(stream, slen, chunk_seed | 1);
    if (whole.events != parts.events || whole.hash != parts.hash) abort();

    /* the informer's path */
    static inf_counters ctr;
    static volatile int stop;
    memset(&ctr, 0, sizeof ctr);
    inf_pub *p = pub_for(zctx, d[0] % 8, &ctr, &stop);
    const k8s_resource *res = k8s_resource_lookup(kind);
    inf_reflector_cfg cfg = {.res = *res, .kind = kind, .drop = drop, .ndrop = 2,
                             .apply = apply, .apply_ud = p, .ctr = &ctr, .stop = &stop};
    refl r = {.cfg = &cfg};
    if (list_len) {
        cJSON *page = gd_json_parse(body, list_len);
        if (page) {
            objvec all = {0};
            if (add_page(&r, page, &all) == GD_OK)
                push(&r, INF_UPD_REPLACE, NULL, all.v, all.n);
            else
                objvec_free(&all);
            cJSON_Delete(page);
        }
    }
    watch_ctx *w = calloc(1, sizeof *w);
    w->fn = on_event;
    w->ud = &r;
    w->end_on_bad = (d[0] & 8) != 0;
    w->dec = k8s_watch_decoder_new(8192, watch_on_event, watch_on_error, w);
    size_t off = 0, i = 0;
    while (off < slen && w->stop_err == GD_OK) {
        size_t c = 1 + ((chunk_seed >> (i++ % 8)) & 0x7f) * 3;
        if (c > slen - off) c = slen - off;
        if (watch_sink(w, stream + off, c) != 0) break;
        off += c;
    }
    if (w->end_on_bad && w->bad_events > 0) {
        /* whatever follows the bad line, and whatever the network brings after it, is
         * refused without reaching the reflector */
        int before = r.events;
        if (w->stop_err == GD_OK || watch_sink(w, stream + off, slen - off) != 1 ||
            r.events != before)
            abort();
    }
    (void)inf_needs_relist(w->stop_err, &w->error_status);
    k8s_watch_decoder_destroy(&w->dec);
    free(w);
    inf_store_resync(inf_pub_store(p), on_change, p);
    inf_pub_heartbeat(p);
    inf_store_destroy(&p->store);
    inf_obj_scratch_release();
    return 0;
}
