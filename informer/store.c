/* store.c — the informer's cache: objects by key, the transform applied before caching,
 * and client-go's DeltaFIFO Replace semantics for relists.
 *
 * Memory is the store's whole job (issue 4: at most half of client-go's bytes per cached
 * object), hence three choices:
 * - Objects are kept serialised (compact JSON, one allocation with key and rv): the informer
 *   never looks inside a cached object again, it only republishes it, so keeping cJSON trees
 *   would cost several times the memory for nothing.
 * - Once the store holds PACK_TRAIN_AT objects, bodies are compressed with zstd and a
 *   dictionary trained on those first objects. Objects of one kind repeat the same field
 *   names, namespace, labels and owner references; in 1-2 KB a compressor finds little of
 *   that inside one object, but a dictionary of the kind's common parts removes most of it.
 *   The long random tokens (digests, keys, UUIDs) are split out first and kept as their
 *   bits (store_pack.c, gd_tokpack). Cost: one compression per change, one decompression per republication of a cached
 *   object (snapshots, resync, relist diffs, DELETED by relist); the live event stream
 *   publishes the fresh object as it came. The dictionary is trained once and never
 *   retrained: every packed object depends on it, and a kind's shape does not drift.
 *   Stores that never reach PACK_TRAIN_AT objects stay uncompressed (they are small).
 * - Watch updates are packed late (the young objects): an object that just changed is
 *   likely to change again soon (a pod starting, a status being written), and packing each
 *   version would compress what is thrown away at the next event. So the last 512 upserts
 *   stay as JSON (a ring of references) and an object is packed when its turn in the ring
 *   comes and it is still the cached version. On the replay benchmark (200 keys changing in
 *   turn) compression was 44 % of the informer's instructions per event (callgrind); the
 *   cost is at most 512 unpacked objects. Relists are packed at once (bulk, cold).
 * - Packed objects are records in a slab (store_slab.h), not inf_objs: a 16-byte header
 *   instead of 48, no NULs, the namespace as an id shared by its objects (store_ns), and
 *   no malloc chunk per object. On the replay benchmark's 20 000 ConfigMaps (issue 23 item
 *   3) a packed object was 48 (inf_obj) + 38 (key, rv, NULs) + 717 (frame) + ~16 (malloc
 *   chunk) + ~45 (heap pages glibc kept after the list) + 13 (index) bytes; it is now 4
 *   (slab) + 16 + 16 (name, rv) + ~593 (the frame, 717 before its tokens were split out)
 *   + 13. The bench's random values carry ~540 bytes of entropy.
 * - The index is an open-addressing table of entries (store_index.h) that uses each
 *   entry's own key: no copy of the key and no node per entry (gd_map cost ~77 bytes per
 *   object). */
#include "store_internal.h"
#include "store_index.h"
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gd_json.h"
#include "gd_log.h"
#include "gd_proto.h"
#include "gd_time.h"


void inf_update_destroy(inf_update **up)
{
    if (!up || !*up)
        return;
    inf_update *u = *up;
    inf_obj_unref(u->obj);
    for (size_t i = 0; i < u->nitems; i++)
        inf_obj_unref(u->items[i]);
    free(u->items);
    free(u);
    *up = NULL;
}

/* An object with room for a body of body_len bytes (+ NUL), left for the caller to fill. */
static inf_obj *obj_alloc(const char *key, const char *rv, int shard, size_t body_len)
{
    size_t kl = strlen(key), rl = strlen(rv ? rv : "");
    inf_obj *o = malloc(sizeof *o + kl + 1 + rl + 1 + body_len + 1);
    if (!o)
        return NULL;
    char *p = o->data;
    o->shard = shard;
    o->mark = 0;
    o->raw_len = 0;
    atomic_init(&o->refs, 1);
    memcpy(p, key, kl + 1);
    o->key = p;
    p += kl + 1;
    memcpy(p, rv ? rv : "", rl + 1);
    o->rv = p;
    p += rl + 1;
    p[body_len] = '\0';
    o->body = p;
    o->body_len = body_len;
    return o;
}

inf_obj *inf_obj_new(const char *key, const char *rv, int shard, const char *body,
                     size_t body_len)
{
    inf_obj *o = obj_alloc(key, rv, shard, body_len);
    if (o)
        memcpy((char *)o->body, body, body_len);
    return o;
}

inf_obj *inf_obj_ref(const inf_obj *o)
{
    inf_obj *m = (inf_obj *)o;
    atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
    return m;
}

/* Loose objects: the store no longer holds them, but ZeroMQ messages may, until sent (often
 * on its I/O thread, well after the call that let them go): inflated copies handed out for
 * publication (snapshots, resync, relist diffs), and the JSON originals of objects the store
 * keeps packed. A list or a full snapshot lets tens of MB go at once, and glibc keeps such
 * freed memory in its arenas (measured: +11 MB RSS after a 20 000-object snapshot, +4..14 MB
 * after a list whose messages left after the publisher's trim). So loose objects are
 * counted, and when the last of a large batch is freed the heap is trimmed. */
static _Atomic long loose_live;
static _Atomic int trim_wanted;

long inf_store_loose_live(void) { return atomic_load(&loose_live); }
bool inf_store_trim_wanted(void) { return atomic_load(&trim_wanted) != 0; }

static void trim_if_idle(void)
{
    if (atomic_load(&loose_live) == 0 && atomic_exchange(&trim_wanted, 0))
        malloc_trim(0);
}

/* After a loop that let `bytes` of objects loose: trim once the last of them is gone. */
static void trim_after_loose(size_t bytes)
{
    if (bytes < TRIM_AFTER_BYTES)
        return;
    atomic_store(&trim_wanted, 1);
    trim_if_idle();            /* all already sent (or the last one went before the flag) */
}

/* Lets go of the store's reference to o, which may live on in messages in flight. The mark
 * is written before the release, so the thread that frees o sees it. */
static void let_loose(inf_obj *o)
{
    atomic_fetch_add(&loose_live, 1);
    o->mark = MARK_LOOSE;
    inf_obj_unref(o);
}

void inf_obj_unref(inf_obj *o)
{
    if (!o || atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) != 1)
        return;
    bool loose = o->mark == MARK_LOOSE;
    free(o);
    if (loose && atomic_fetch_sub(&loose_live, 1) == 1)
        trim_if_idle();
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

/* ------------------------------------------------------------ compaction */

/* Called when a public call is done with every record pointer it held. */
static void store_compact(inf_store *s)
{
    if (s->slab.sparse)
        slab_compact(&s->slab, tab_rec_moved, &s->t);
}

/* ------------------------------------------------------------ compression */
/* The frames and the dictionary are store_pack.c's; here, records and the table. */

/* A packed copy of o in the slab, or NULL when o is to be kept as it is: no dictionary, o
 * already packed, too small or too large (or a key, rv or shard a record has no room for),
 * not smaller compressed, or out of memory. */
static pk_rec *pack_obj(inf_store *s, const inf_obj *o)
{
    store_pack *pk = &s->pk;
    if (!pk->cdict || o->raw_len || o->body_len < PACK_MIN_BYTES ||
        o->body_len > PACK_MAX_BYTES || o->shard < -1 || o->shard >= 511)
        return NULL;
    const char *name = o->key, *slash = strchr(o->key, '/');
    size_t rl = strlen(o->rv);
    if (slash)
        name = slash + 1;
    if (strlen(o->key) > REC_NAME_MAX || rl > REC_RV_MAX)
        return NULL;
    size_t z = store_pack_frame(pk, o->body, o->body_len);
    if (!z)
        return NULL;
    uint32_t ns = slash ? ns_ref(&s->ns, o->key, (size_t)(slash - o->key)) : 0;
    if (!ns)
        name = o->key;                /* no namespace, or no id for it: the whole key */
    size_t nl = strlen(name);
    pk_rec *r = slab_alloc(&s->slab, sizeof *r + nl + rl + z);
    if (!r) {
        ns_unref(&s->ns, ns);
        return NULL;
    }
    *r = (pk_rec){.raw_len = (uint32_t)o->body_len, .mark = o->mark, .zlen = (uint32_t)z,
                  .rvlen = (uint32_t)rl, .nlen = (uint32_t)nl,
                  .shard1 = (uint32_t)(o->shard + 1), .ns = ns};
    memcpy(r->data, name, nl);
    memcpy(r->data + nl, o->rv, rl);
    memcpy(r->data + nl + rl, pk->zbuf, z);
    return r;
}

/* o with its JSON body: a new reference to o when it is not packed, else an inflated copy
 * (refs 1). NULL and a reason in *why when a packed body does not inflate to exactly
 * raw_len bytes (corrupt, or larger than it claims) or memory is short. */
inf_obj *inf_store_unpack(store_pack *pk, const inf_obj *o, const char **why)
{
    if (!o->raw_len)
        return inf_obj_ref(o);
    if (!pk->ddict) {
        *why = "packed object but no dictionary";
        return NULL;
    }
    inf_obj *u = obj_alloc(o->key, o->rv, o->shard, o->raw_len);
    if (!u) {
        *why = "out of memory";
        return NULL;
    }
    *why = store_pack_inflate(pk, (const unsigned char *)o->body, o->body_len, (char *)u->body,
                              o->raw_len);
    if (*why) {
        free(u);
        return NULL;
    }
    u->mark = o->mark;
    return u;
}

/* Trains the dictionary once and packs every cached object with it. On any failure the
 * store simply stays uncompressed. */
static void pack_train(inf_store *s)
{
    store_pack *pk = &s->pk;
    pk->trained = true;
    int64_t t0 = gd_mono_ms();
    if (!store_pack_train(pk, &s->t)) {
        GD_WARN("store: no compression dictionary; objects stay uncompressed");
        return;
    }
    size_t raw = 0, kept = 0;
    for (size_t i = 0; i < s->t.cap; i++) {
        store_ent e = s->t.slot[i];
        if (!e || ent_packed(e))
            continue;
        inf_obj *o = ent_obj(e);
        raw += o->body_len;
        pk_rec *p = pack_obj(s, o);
        kept += p ? p->zlen : o->body_len;
        if (p) {
            s->t.slot[i] = rec_ent(p);
            let_loose(o);                 /* may still be on its way to subscribers */
        }
    }
    char ms[24], ds[24], rb[24], kb[24];
    snprintf(ms, sizeof ms, "%lld", (long long)(gd_mono_ms() - t0));
    snprintf(ds, sizeof ds, "%zu", pk->dict_len);
    snprintf(rb, sizeof rb, "%zu", raw);
    snprintf(kb, sizeof kb, "%zu", kept);
    trim_after_loose(raw);
    GD_INFO("store: compression dictionary ready", "dictionary", pk->dict_how, "dict_bytes", ds, "ms", ms,
            "bodies_bytes", rb, "packed_bytes", kb);
}

static void maybe_train(inf_store *s)
{
    if (!s->pk.trained && s->pk.train_at && s->t.count >= s->pk.train_at)
        pack_train(s);
}

/* What a change callback gets for a cached object: JSON, or (when it does not inflate) a
 * stand-in with the key, rv and shard and an empty object as body, after an ERROR log. */
static inf_obj *unpack_for_callback(inf_store *s, const inf_obj *o)
{
    const char *why = NULL;
    inf_obj *u = inf_store_unpack(&s->pk, o, &why);
    if (!u) {
        GD_ERROR("store: cached object does not inflate", "key", o->key, "error", why);
        u = inf_obj_new(o->key, o->rv, o->shard, "{}", 2);
    }
    if (u && u != o) {
        u->mark = MARK_LOOSE;             /* the caller's reference is the one let go */
        atomic_fetch_add(&loose_live, 1);
    }
    return u;
}

/* The same for an index entry. */
static inf_obj *ent_for_callback(inf_store *s, store_ent e)
{
    rec_view_buf v;
    return unpack_for_callback(s, ent_view(s, e, &v));
}


/* ------------------------------------------------------------ the store */

inf_store *inf_store_new(void)
{
    inf_store *s = calloc(1, sizeof *s);
    if (s && !(s->view = calloc(1, sizeof(rec_view_buf)))) {
        free(s);
        return NULL;
    }
    if (s) {
        s->t.ns = &s->ns;
        s->pk.train_at = PACK_TRAIN_AT;
        s->young.cap = PACK_YOUNG_DEFAULT;
    }
    return s;
}

void inf_store_set_packing(inf_store *s, size_t train_at)
{
    s->pk.train_at = train_at;
}

void inf_store_set_young(inf_store *s, size_t window)
{
    s->young.cap = window;
}

/* The oldest young object leaves the ring: packed in its slot if it is still the cached
 * version (and packs), else just let go. */
static void young_pop(inf_store *s)
{
    store_young *y = &s->young;
    inf_obj *o = y->ring[y->head];
    y->ring[y->head] = NULL;
    y->head = (y->head + 1) % y->cap;
    y->len--;
    size_t i = s->t.cap ? tab_find(&s->t, o->key) : 0;
    if (s->t.cap && s->t.slot[i] == (store_ent)o) {
        pk_rec *p = pack_obj(s, o);
        if (p) {
            s->t.slot[i] = rec_ent(p);
            let_loose(o);                /* the table's reference; it may be in flight */
        }
    }
    inf_obj_unref(o);                    /* the ring's */
}

/* o was just put unpacked: it joins the ring (false: no room for a ring, pack it now). */
static bool young_push(inf_store *s, inf_obj *o)
{
    store_young *y = &s->young;
    if (!y->ring) {
        y->ring = calloc(y->cap, sizeof *y->ring);
        if (!y->ring)
            return false;
    }
    if (y->len == y->cap)
        young_pop(s);
    y->ring[(y->head + y->len) % y->cap] = inf_obj_ref(o);
    y->len++;
    return true;
}

static void young_free(store_young *y)
{
    for (size_t k = 0; k < y->len; k++)
        inf_obj_unref(y->ring[(y->head + k) % y->cap]);
    free(y->ring);
    *y = (store_young){.cap = y->cap};
}

void inf_store_destroy(inf_store **s)
{
    if (!s || !*s)
        return;
    young_free(&(*s)->young);
    for (size_t i = 0; i < (*s)->t.cap; i++)
        if ((*s)->t.slot[i] && !ent_packed((*s)->t.slot[i]))
            inf_obj_unref(ent_obj((*s)->t.slot[i]));
    free((*s)->t.slot);
    slab_destroy(&(*s)->slab);
    ns_free(&(*s)->ns);
    store_pack_free(&(*s)->pk);
    free((*s)->view);
    free(*s);
    *s = NULL;
}

size_t inf_store_count(const inf_store *s) { return s->t.count; }

const inf_obj *inf_store_get(const inf_store *s, const char *key)
{
    store_ent e = tab_get(&s->t, key);
    if (!e)
        return NULL;
    return ent_view(s, e, (rec_view_buf *)s->view);
}

inf_obj *inf_store_load(inf_store *s, const char *key, const char **why)
{
    static const char *dummy;
    if (!why)
        why = &dummy;
    *why = NULL;
    store_ent e = tab_get(&s->t, key);
    if (!e) {
        *why = "no such key";
        return NULL;
    }
    rec_view_buf v;
    return inf_store_unpack(&s->pk, ent_view(s, e, &v), why);
}

void inf_store_mem(const inf_store *s, inf_store_mem_stats *m)
{
    *m = (inf_store_mem_stats){.objects = s->t.count, .dict_bytes = s->pk.dict_len,
                               .index_bytes = s->t.cap * sizeof *s->t.slot};
    for (size_t i = 0; i < s->t.cap; i++) {
        store_ent e = s->t.slot[i];
        if (e && ent_packed(e)) {
            m->body_bytes += ent_rec(e)->raw_len;
            m->stored_bytes += ent_rec(e)->zlen;
            m->packed++;
        } else if (e) {
            m->body_bytes += ent_obj(e)->body_len;
            m->stored_bytes += ent_obj(e)->body_len;
        }
    }
}

/* Puts o, packed when a dictionary exists (*packed says so: the store then keeps a packed
 * record and not o); the old entry goes to *old. Callers hold a reference of their own to o
 * while they report it, then let it go with store_done(). On failure o still belongs to
 * them. */
static gd_err store_put(inf_store *s, inf_obj *o, store_ent *old, bool *packed, bool young)
{
    /* young: kept as JSON in the young ring (when a dictionary exists, so it would pack) */
    young = young && s->young.cap && s->pk.cdict && !o->raw_len;
    pk_rec *p = young ? NULL : pack_obj(s, o);
    *packed = p != NULL;
    gd_err e = tab_put(&s->t, o->key, p ? rec_ent(p) : (store_ent)o, old);
    if (e != GD_OK) {
        rec_free(s, p);
        return e;
    }
    if (p)
        inf_obj_unref(o);            /* the table's reference: the caller still has one */
    if (young && !young_push(s, o)) {
        /* no memory for the ring: pack now, as without one */
        pk_rec *q = pack_obj(s, o);
        if (q) {
            s->t.slot[tab_find(&s->t, o->key)] = rec_ent(q);
            inf_obj_unref(o);
            *packed = true;
        }
    }
    return GD_OK;
}

/* The caller's reference to a put object: plain, or loose when the store kept a packed copy
 * (o was just published and may be in flight). */
static void store_done(inf_obj *o, bool packed)
{
    if (packed)
        let_loose(o);
    else
        inf_obj_unref(o);
}

/* Tells fn about old → o. A packed old is inflated only when fn may publish its body:
 * DELETED, or MODIFIED to another shard; otherwise fn sees its key, rv and shard with an
 * empty body (see inf_change_fn). */
static void tell(inf_store *s, inf_change_fn fn, void *ud, gd_ev ev, store_ent old,
                 const inf_obj *o)
{
    if (!fn)
        return;
    inf_obj *u = NULL;
    const inf_obj *was = old ? ent_obj(old) : NULL;
    if (old && ent_packed(old)) {
        rec_view_buf v;
        const inf_obj *r = ent_view(s, old, &v);
        bool need_body = ev == GD_EV_DELETED || (o && o->shard != r->shard);
        u = need_body ? unpack_for_callback(s, r) : obj_alloc(r->key, r->rv, r->shard, 0);
        if (!u)
            return;                  /* out of memory: nothing sensible to report */
        was = u;
    }
    fn(ud, ev, was, o);
    inf_obj_unref(u);
}

gd_err inf_store_upsert(inf_store *s, inf_obj **op, inf_change_fn fn, void *ud)
{
    inf_obj *o = *op;
    store_ent old = 0;
    o->mark = s->generation;
    bool packed;
    inf_obj_ref(o);                      /* ours until fn has seen it */
    gd_err e = store_put(s, o, &old, &packed, true);
    if (e != GD_OK) {
        inf_obj_unref(o);
        return e;                         /* *op still belongs to the caller */
    }
    *op = NULL;
    tell(s, fn, ud, old ? GD_EV_MODIFIED : GD_EV_ADDED, old, o);
    ent_release(s, old);
    store_done(o, packed);
    maybe_train(s);
    store_compact(s);
    return GD_OK;
}

void inf_store_delete(inf_store *s, const char *key, inf_change_fn fn, void *ud)
{
    if (!s->t.cap)
        return;
    size_t i = tab_find(&s->t, key);
    if (!s->t.slot[i])
        return;
    store_ent old = tab_take_at(&s->t, i);
    tell(s, fn, ud, GD_EV_DELETED, old, NULL);
    ent_release(s, old);
    store_compact(s);
}

gd_err inf_store_replace(inf_store *s, inf_obj **items, size_t n, inf_change_fn fn,
                         void *ud)
{
    gd_err err = GD_OK;
    uint32_t gen = ++s->generation;
    size_t loose = 0;
    for (size_t i = 0; i < n; i++) {
        inf_obj *o = items[i];
        store_ent old = 0;
        bool packed;
        if (!o)
            continue;
        items[i] = NULL;
        o->mark = gen;
        inf_obj_ref(o);
        if (store_put(s, o, &old, &packed, false) != GD_OK) {
            /* Keep the old object (still marked stale unless re-put) rather than lose it:
             * the next relist repairs it. */
            inf_obj_unref(o);
            inf_obj_unref(o);
            err = GD_ERR_NOMEM;
            continue;
        }
        if (!old) {
            tell(s, fn, ud, GD_EV_ADDED, 0, o);
        } else {
            rec_view_buf v;
            const inf_obj *was = ent_view(s, old, &v);
            if (strcmp(was->rv, o->rv) != 0 || was->shard != o->shard)
                tell(s, fn, ud, GD_EV_MODIFIED, old, o);
        }
        ent_release(s, old);
        loose += packed ? o->body_len : 0;
        store_done(o, packed);
        maybe_train(s);
    }
    /* Sweep: whatever the list did not mention vanished while we were away. Taking slot i
     * shifts a later entry into it, so i is looked at again; an entry may be seen twice
     * (shifted across the wrap), never skipped, and a second look finds it current. */
    for (size_t i = 0; i < s->t.cap;) {
        store_ent e = s->t.slot[i];
        if (!e || ent_mark(e) == gen) {
            i++;
            continue;
        }
        tab_take_at(&s->t, i);
        loose += ent_packed(e) ? ent_rec(e)->raw_len : 0;   /* inflated for DELETED */
        tell(s, fn, ud, GD_EV_DELETED, e, NULL);
        ent_release(s, e);
    }
    trim_after_loose(loose);
    store_compact(s);
    return err;
}

typedef struct {
    inf_change_fn fn;
    void *ud;
} resync_ctx;

static int resync_one(void *ud, const inf_obj *o)
{
    resync_ctx *c = ud;
    c->fn(c->ud, GD_EV_MODIFIED, o, o);
    return 0;
}

void inf_store_foreach(inf_store *s, int (*fn)(void *ud, const inf_obj *o), void *ud)
{
    size_t inflated = 0;
    for (size_t i = 0; i < s->t.cap; i++) {
        store_ent e = s->t.slot[i];
        if (!e)
            continue;
        inflated += ent_packed(e) ? ent_rec(e)->raw_len : 0;
        inf_obj *u = ent_for_callback(s, e);
        int stop = u ? fn(ud, u) : 0;
        inf_obj_unref(u);
        if (stop)
            break;
    }
    trim_after_loose(inflated);
}

void inf_store_resync(inf_store *s, inf_change_fn fn, void *ud)
{
    resync_ctx c = {.fn = fn, .ud = ud};
    inf_store_foreach(s, resync_one, &c);
}
