/* store.c — the informer's cache: objects by key, the transform applied before caching,
 * and client-go's DeltaFIFO Replace semantics for relists.
 *
 * Objects are kept serialised (compact JSON, one allocation with key and rv): the informer
 * never looks inside a cached object again, it only republishes it, so keeping cJSON trees
 * would cost several times the memory for nothing. */
#include "informer.h"
#include <stdlib.h>
#include <string.h>
#include "gd_json.h"
#include "gd_map.h"
#include "gd_proto.h"

struct inf_store {
    gd_map *by_key;
    uint32_t generation;   /* bumped per replace; objects seen in the list carry it */
};

const char *inf_ev_name(inf_ev ev)
{
    switch (ev) {
    case INF_ADDED: return "ADDED";
    case INF_MODIFIED: return "MODIFIED";
    case INF_DELETED: return "DELETED";
    }
    return "?";
}

inf_obj *inf_obj_new(const char *key, const char *rv, int shard, const char *body,
                     size_t body_len)
{
    size_t kl = strlen(key), rl = strlen(rv ? rv : "");
    inf_obj *o = malloc(sizeof *o + kl + 1 + rl + 1 + body_len + 1);
    if (!o)
        return NULL;
    char *p = o->data;
    o->shard = shard;
    o->mark = 0;
    atomic_init(&o->refs, 1);
    memcpy(p, key, kl + 1);
    o->key = p;
    p += kl + 1;
    memcpy(p, rv ? rv : "", rl + 1);
    o->rv = p;
    p += rl + 1;
    memcpy(p, body, body_len);
    p[body_len] = '\0';
    o->body = p;
    o->body_len = body_len;
    return o;
}

inf_obj *inf_obj_ref(const inf_obj *o)
{
    inf_obj *m = (inf_obj *)o;
    atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
    return m;
}

void inf_obj_unref(inf_obj *o)
{
    if (o && atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) == 1)
        free(o);
}

void inf_obj_destroy(inf_obj **o)
{
    if (o) {
        inf_obj_unref(*o);
        *o = NULL;
    }
}

/* Removes one dot path; "\." inside a segment is a literal dot. */
static void drop_path(cJSON *obj, const char *path)
{
    char seg[256];
    cJSON *cur = obj;
    const char *p = path;
    while (cur && *p) {
        size_t n = 0;
        while (*p && *p != '.') {
            if (*p == '\\' && p[1])
                p++;
            if (n + 1 >= sizeof seg)
                return;               /* absurdly long segment: cannot exist */
            seg[n++] = *p++;
        }
        seg[n] = '\0';
        if (*p == '.') {
            p++;
            cur = cJSON_IsObject(cur) ? cJSON_GetObjectItemCaseSensitive(cur, seg) : NULL;
        } else if (cJSON_IsObject(cur)) {
            cJSON_DeleteItemFromObjectCaseSensitive(cur, seg);
            return;
        }
    }
}

void inf_transform(cJSON *obj, const char *const *drop, size_t ndrop)
{
    if (!cJSON_IsObject(obj))
        return;
    drop_path(obj, "metadata.managedFields");
    for (size_t i = 0; i < ndrop; i++)
        if (drop[i] && *drop[i])
            drop_path(obj, drop[i]);
}

static __thread char *scratch;      /* inf_obj_from_json's serialisation buffer */
static __thread size_t scratch_cap;

void inf_obj_scratch_release(void)
{
    free(scratch);
    scratch = NULL;
    scratch_cap = 0;
}

inf_obj *inf_obj_from_json(const char *kind, cJSON *obj, const char *const *drop,
                           size_t ndrop, const char **why)
{
    static const char *dummy;
    if (!why)
        why = &dummy;
    *why = NULL;
    if (!cJSON_IsObject(obj)) {
        *why = "object is not a JSON object";
        return NULL;
    }
    char key[512];
    if (gd_meta_key(obj, key, sizeof key) < 0) {
        *why = "object has no metadata.name (or the key is too long)";
        return NULL;
    }
    inf_transform(obj, drop, ndrop);
    /* Serialise into a per-thread scratch buffer rather than cJSON's growing malloc'd one:
     * the object is then copied once into an exact-size allocation, and the heap is not
     * left with a hole per cached object (that fragmentation doubled the RSS per object). */
    char *body = NULL;
    if (!scratch) {
        scratch_cap = 256 * 1024;
        scratch = malloc(scratch_cap);
    }
    if (scratch && cJSON_PrintPreallocated(obj, scratch, (int)scratch_cap, 0))
        body = scratch;
    else
        body = cJSON_PrintUnformatted(obj);         /* larger than 256 KiB: rare */
    if (!body) {
        *why = "cannot serialise object";
        return NULL;
    }
    inf_obj *o = inf_obj_new(key, gd_meta_rv(obj), gd_shard_of_object(kind, obj), body,
                             strlen(body));
    if (body != scratch)
        cJSON_free(body);
    if (!o)
        *why = "out of memory";
    return o;
}

static void free_obj(void *v) { inf_obj_unref(v); }

inf_store *inf_store_new(void)
{
    inf_store *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->by_key = gd_map_new(free_obj);
    if (!s->by_key) {
        free(s);
        return NULL;
    }
    return s;
}

void inf_store_destroy(inf_store **s)
{
    if (!s || !*s)
        return;
    gd_map_destroy(&(*s)->by_key);
    free(*s);
    *s = NULL;
}

size_t inf_store_count(const inf_store *s) { return gd_map_count(s->by_key); }

const inf_obj *inf_store_get(const inf_store *s, const char *key)
{
    return gd_map_get(s->by_key, key);
}

gd_err inf_store_upsert(inf_store *s, inf_obj **op, inf_change_fn fn, void *ud)
{
    inf_obj *o = *op;
    void *old = NULL;
    o->mark = s->generation;
    gd_err e = gd_map_put(s->by_key, o->key, o, &old);
    if (e != GD_OK)
        return e;                         /* *op still belongs to the caller */
    *op = NULL;
    if (fn)
        fn(ud, old ? INF_MODIFIED : INF_ADDED, old, o);
    inf_obj_unref(old);
    return GD_OK;
}

void inf_store_delete(inf_store *s, const char *key, inf_change_fn fn, void *ud)
{
    inf_obj *old = gd_map_take(s->by_key, key);
    if (!old)
        return;
    if (fn)
        fn(ud, INF_DELETED, old, NULL);
    inf_obj_unref(old);
}

gd_err inf_store_replace(inf_store *s, inf_obj **items, size_t n, inf_change_fn fn,
                         void *ud)
{
    gd_err err = GD_OK;
    uint32_t gen = ++s->generation;
    for (size_t i = 0; i < n; i++) {
        inf_obj *o = items[i];
        if (!o)
            continue;
        items[i] = NULL;
        o->mark = gen;
        void *prev = NULL;
        if (gd_map_put(s->by_key, o->key, o, &prev) != GD_OK) {
            /* Keep the old object (still marked stale unless re-put) rather than lose it:
             * the next relist repairs it. */
            inf_obj_unref(o);
            err = GD_ERR_NOMEM;
            continue;
        }
        inf_obj *old = prev;
        if (fn) {
            if (!old)
                fn(ud, INF_ADDED, NULL, o);
            else if (strcmp(old->rv, o->rv) != 0 || old->shard != o->shard)
                fn(ud, INF_MODIFIED, old, o);
        }
        inf_obj_unref(old);
    }
    /* Sweep: whatever the list did not mention vanished while we were away. */
    gd_map_iter it;
    gd_map_iter_init(&it, s->by_key);
    inf_obj *o;
    while (gd_map_next(&it, NULL, (void **)&o)) {
        if (o->mark == gen)
            continue;
        gd_map_iter_take(&it);
        if (fn)
            fn(ud, INF_DELETED, o, NULL);
        inf_obj_unref(o);
    }
    return err;
}

void inf_store_resync(inf_store *s, inf_change_fn fn, void *ud)
{
    gd_map_iter it;
    gd_map_iter_init(&it, s->by_key);
    inf_obj *o;
    while (gd_map_next(&it, NULL, (void **)&o))
        fn(ud, INF_MODIFIED, o, o);
}

void inf_store_foreach(inf_store *s, int (*fn)(void *ud, const inf_obj *o), void *ud)
{
    gd_map_iter it;
    gd_map_iter_init(&it, s->by_key);
    inf_obj *o;
    while (gd_map_next(&it, NULL, (void **)&o))
        if (fn(ud, o))
            return;
}
