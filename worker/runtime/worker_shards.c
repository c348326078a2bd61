/* worker_shards.c — how shards move through this worker: followed and loading (ASSIGN or
 * --shards), active once every subscriber has their snapshot, then revoked (REVOKE) and
 * forgotten only when none of their keys is in flight any more (worker.h tells the why).
 *
 * All of it runs on the main thread; what the subscriber threads see of it is the follow
 * set, published by worker_refollow under follow_mu. It never talks to the manager: the
 * control link (worker_link.c) and the main loop (worker.c) send what it decides, so the
 * calls run one way, link → shards. */
#include "worker_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gd_json.h"
#include "gd_log.h"

/* Shards the subscribers must follow: active, loading, or still being revoked. */
static void follow_set(worker *w, int *out, int *n)
{
    bool f[GD_NSHARDS];
    for (int i = 0; i < GD_NSHARDS; i++)
        f[i] = w->active[i] || w->loading[i];
    for (int r = 0; r < w->nrevs; r++)
        for (int i = 0; i < w->revs[r].n; i++)
            f[w->revs[r].shards[i]] = true;
    *n = 0;
    for (int i = 0; i < GD_NSHARDS; i++)
        if (f[i])
            out[(*n)++] = i;
}

/* Publishes the follow set and wakes the subscriber threads to pick it up. */
void worker_refollow(worker *w)
{
    int shards[GD_NSHARDS], n;
    follow_set(w, shards, &n);
    pthread_mutex_lock(&w->follow_mu);
    memset(w->follow, 0, sizeof w->follow);
    for (int i = 0; i < n; i++)
        w->follow[shards[i]] = true;
    atomic_fetch_add(&w->follow_gen, 1);
    pthread_mutex_unlock(&w->follow_mu);
    worker_wake_subs(w);
}

void worker_start_loading(worker *w, const int *shards, int n, cJSON **pending)
{
    for (int i = 0; i < n; i++)
        if (!w->active[shards[i]])
            w->loading[shards[i]] = true;
    if (pending && *pending) {
        if (!w->pending_assign) {
            w->pending_assign = *pending;
            *pending = NULL;
        } else {                /* merge: append arrays per controller */
            cJSON *ctrl;
            cJSON_ArrayForEach(ctrl, *pending) {
                cJSON *dst = cJSON_GetObjectItemCaseSensitive(w->pending_assign, ctrl->string);
                if (!dst)
                    dst = cJSON_AddArrayToObject(w->pending_assign, ctrl->string);
                cJSON *k;
                cJSON_ArrayForEach(k, ctrl)
                    if (dst)
                        cJSON_AddItemToArray(dst, cJSON_CreateString(k->valuestring));
            }
        }
    }
    worker_refollow(w);
    w->loading_gen = atomic_load(&w->follow_gen);
}

typedef struct {
    const bool *in;
    cJSON *objs;
    const char *kind;
} resync_ctx;

static int collect_in_shards(void *ud, const char *key, const cJSON *obj)
{
    resync_ctx *r = ud;
    int shard = gd_shard_of_object(r->kind, obj);
    if (shard >= 0 && shard < GD_NSHARDS && r->in[shard])
        cJSON_AddItemToArray(r->objs, cJSON_Duplicate(obj, 1));
    return 0;
}

/* The keys ASSIGNs handed over for the shards that just became active; returns how many. */
static int enqueue_pending_assign(worker *w)
{
    int keys = 0;
    if (w->pending_assign) {
        cJSON *ctrl, *k;
        cJSON_ArrayForEach(ctrl, w->pending_assign) {
            controller *c = worker_find_ctrl(w, ctrl->string);
            if (!c) {
                gd_log(GD_LOG_WARN, "pending keys for an unknown controller ignored",
                       "controller", ctrl->string, NULL);
                continue;
            }
            cJSON_ArrayForEach(k, ctrl) {
                controller_enqueue(c, k->valuestring);
                keys++;
            }
        }
        cJSON_Delete(w->pending_assign);
        w->pending_assign = NULL;
    }
    return keys;
}

/* Maps every cached object of the shards in[] as if just added (a full resync of those
 * shards); returns how many. */
static int resync_cached(worker *w, const bool *in)
{
    int objs = 0;
    for (int s = 0; s < w->nsubs; s++) {
        resync_ctx r = {in, cJSON_CreateArray(), w->subs[s].kind};
        if (!r.objs)
            continue;
        cache_each(w->cache, r.kind, collect_in_shards, &r);
        cJSON *o;
        cJSON_ArrayForEach(o, r.objs) {
            worker_map_change(w, r.kind, true, NULL, o);   /* nothing changed: low */
            objs++;
        }
        cJSON_Delete(r.objs);
    }
    return objs;
}

/* Every subscriber is in sync: the loading shards become active, their pending keys and
 * every cached object of theirs are enqueued. */
void worker_activate_loading(worker *w)
{
    int shards[GD_NSHARDS], n = 0;
    for (int i = 0; i < GD_NSHARDS; i++)
        if (w->loading[i]) {
            shards[n++] = i;
            w->loading[i] = false;
            w->active[i] = true;
        }
    if (n == 0)
        return;
    bool all = n == GD_NSHARDS && w->o->control_endpoint == NULL;
    for (int c = 0; c < w->nctrls; c++) {
        if (all)
            controller_own_all(w->ctrls[c]);
        else
            controller_own_shards(w->ctrls[c], shards, n);
    }
    int keys = enqueue_pending_assign(w);
    bool in[GD_NSHARDS] = {false};
    for (int i = 0; i < n; i++)
        in[shards[i]] = true;
    int objs = resync_cached(w, in);
    char *list = gdw_format_shards(shards, n);
    char nk[16], no[16];
    snprintf(nk, sizeof nk, "%d", keys);
    snprintf(no, sizeof no, "%d", objs);
    gd_log(GD_LOG_INFO, "shards active", "shards", list ? list : "?", "pending_keys", nk,
           "objects", no, NULL);
    free(list);
}

bool worker_handle_revoke(worker *w, const gdw_msg *m)
{
    if (w->nrevs >= MAX_REVOCATIONS)
        return false;
    for (int i = 0; i < m->nshards; i++) {
        w->active[m->shards[i]] = false;
        w->loading[m->shards[i]] = false;
    }
    for (int c = 0; c < w->nctrls; c++)
        controller_revoke_begin(w->ctrls[c], m->shards, m->nshards);
    revocation *r = &w->revs[w->nrevs++];
    r->seq = m->seq;
    r->n = m->nshards;
    memcpy(r->shards, m->shards, sizeof(int) * (size_t)m->nshards);
    return true;
}

/* Keys an ASSIGN handed over for shards that are revoked before they became active go
 * back with the REVOKED: they were never enqueued, so no controller holds them. */
static void take_unactivated(worker *w, controller *c, const revocation *rv, cJSON *arr)
{
    cJSON *keys = w->pending_assign
                      ? cJSON_GetObjectItemCaseSensitive(w->pending_assign, controller_name(c))
                      : NULL;
    if (!cJSON_IsArray(keys) || !arr)
        return;
    for (int i = cJSON_GetArraySize(keys) - 1; i >= 0; i--) {
        cJSON *k = cJSON_GetArrayItem(keys, i);
        int shard = controller_shard_of(c, k->valuestring);
        for (int j = 0; j < rv->n; j++)
            if (rv->shards[j] == shard) {
                cJSON_AddItemToArray(arr, cJSON_DetachItemFromArray(keys, i));
                break;
            }
    }
}

/* The next revocation whose in-flight keys have all finished, taken off the list with its
 * pending keys collected; the caller sends the REVOKED, then refollows. */
bool worker_take_finished_revocation(worker *w, worker_revoked *out)
{
    for (int r = 0; r < w->nrevs; r++) {
        revocation *rv = &w->revs[r];
        int inflight = 0;
        for (int c = 0; c < w->nctrls; c++)
            inflight += controller_inflight(w->ctrls[c], rv->shards, rv->n);
        if (inflight > 0)
            continue;
        cJSON *pending = cJSON_CreateObject();
        for (int c = 0; c < w->nctrls; c++) {
            cJSON *arr = cJSON_CreateArray();
            controller_revoke_finish(w->ctrls[c], rv->shards, rv->n, arr);
            take_unactivated(w, w->ctrls[c], rv, arr);
            if (pending && arr && cJSON_GetArraySize(arr) > 0)
                cJSON_AddItemToObject(pending, controller_name(w->ctrls[c]), arr);
            else
                cJSON_Delete(arr);
        }
        snprintf(out->seq, sizeof out->seq, "%llu", (unsigned long long)rv->seq);
        out->shards = gdw_format_shards(rv->shards, rv->n);
        out->pending = pending ? cJSON_PrintUnformatted(pending) : NULL;
        gd_log(GD_LOG_INFO, "shards revoked", "seq", out->seq,
               "shards", out->shards ? out->shards : "?",
               "pending", out->pending ? out->pending : "?", NULL);
        cJSON_Delete(pending);
        w->revs[r] = w->revs[--w->nrevs];
        return true;
    }
    return false;
}

void worker_revoked_free(worker_revoked *r)
{
    free(r->shards);
    free(r->pending);
    r->shards = r->pending = NULL;
}
