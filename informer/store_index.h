/* store_index.h — the informer store's index (store.c): its entries (JSON objects or packed
 * records), the namespaces packed records share, and the open-addressing table over them.
 *
 * The table holds no key of its own: it reads each entry's key, a JSON object's `key` or a
 * packed record's namespace id and name, and hashes "namespace/name" the same way for both
 * (FNV-1a runs byte by byte, so the pieces hash as the whole). No node per entry (gd_map
 * cost ~77 bytes an object), 8 bytes a slot at a load of 3/8..3/4.
 *
 * Included by store.c only; a header so store.c stays readable (and under ~800 lines)
 * without a module its unit tests would have to link. */
#ifndef INFORMER_STORE_INDEX_H
#define INFORMER_STORE_INDEX_H
#include <stdlib.h>
#include <string.h>
#include "gd_hash.h"
#include "store_internal.h"

/* ------------------------------------------------------------ entries */

static inline bool ent_packed(store_ent e) { return (e & ENT_PACKED) != 0; }
static inline pk_rec *ent_rec(store_ent e) { return (pk_rec *)(e & ~ENT_PACKED); }
static inline inf_obj *ent_obj(store_ent e) { return (inf_obj *)e; }
static inline store_ent rec_ent(const pk_rec *r) { return (uintptr_t)r | ENT_PACKED; }
static inline const char *rec_rv(const pk_rec *r) { return r->data + r->nlen; }
static inline const char *rec_z(const pk_rec *r) { return rec_rv(r) + r->rvlen; }
static inline int rec_shard(const pk_rec *r) { return (int)r->shard1 - 1; }

static inline uint32_t ent_mark(store_ent e)
{
    return ent_packed(e) ? ent_rec(e)->mark : ent_obj(e)->mark;
}

/* ------------------------------------------------------------ namespaces */

static inline void ns_free(store_ns *ns)
{
    gd_map_destroy(&ns->ids);
    free(ns->v);
    free(ns->free_ids);
    *ns = (store_ns){0};
}

/* The id of namespace name[0..len) with one more reference, or 0 (the key is then kept
 * whole): out of memory, or every id in use. */
static inline uint32_t ns_ref(store_ns *ns, const char *name, size_t len)
{
    char buf[REC_NAME_MAX + 1];
    if (len > REC_NAME_MAX)
        return 0;
    memcpy(buf, name, len);
    buf[len] = '\0';
    if (!ns->ids && !(ns->ids = gd_map_new(NULL)))
        return 0;
    uint32_t id = (uint32_t)(uintptr_t)gd_map_get(ns->ids, buf);
    if (id) {
        ns->v[id - 1].refs++;
        return id;
    }
    if (ns->nfree) {
        id = ns->free_ids[--ns->nfree];
    } else {
        if (ns->n == REC_NS_MAX)
            return 0;
        if (ns->n == ns->cap) {
            size_t nc = ns->cap ? ns->cap * 2 : 16;
            ns_ent *nv = realloc(ns->v, nc * sizeof *nv);
            uint16_t *nf = realloc(ns->free_ids, nc * sizeof *nf);
            if (nv)
                ns->v = nv;
            if (nf)
                ns->free_ids = nf;
            if (!nv || !nf)
                return 0;
            ns->cap = nc;
        }
        id = (uint32_t)++ns->n;
    }
    if (gd_map_put(ns->ids, buf, (void *)(uintptr_t)id, NULL) != GD_OK) {
        ns->free_ids[ns->nfree++] = (uint16_t)id;
        return 0;
    }
    ns->v[id - 1] = (ns_ent){.name = gd_map_key(ns->ids, buf), .len = (uint32_t)len, .refs = 1};
    return id;
}

static inline void ns_unref(store_ns *ns, uint32_t id)
{
    if (!id || --ns->v[id - 1].refs)
        return;
    gd_map_del(ns->ids, ns->v[id - 1].name);
    ns->v[id - 1].name = NULL;
    ns->free_ids[ns->nfree++] = (uint16_t)id;
}

/* ------------------------------------------------------------ packed records */

/* Room for a packed record's inf_obj view: the struct and its key and rv, NUL-terminated. */
typedef union {
    inf_obj o;
    char room[sizeof(inf_obj) + 2 * (REC_NAME_MAX + 1) + REC_RV_MAX + 1];
} rec_view_buf;

/* A packed record seen as the inf_obj it packs (body: the frame, raw_len set), written in
 * v. The body points into the slab: valid until the next change to the store (compaction
 * moves records). */
static inline const inf_obj *rec_view(const store_ns *ns, const pk_rec *r, rec_view_buf *v)
{
    inf_obj *o = &v->o;
    char *p = o->data;
    if (r->ns) {
        memcpy(p, ns->v[r->ns - 1].name, ns->v[r->ns - 1].len);
        p += ns->v[r->ns - 1].len;
        *p++ = '/';
    }
    memcpy(p, r->data, r->nlen);
    p += r->nlen;
    *p++ = '\0';
    memcpy(p, rec_rv(r), r->rvlen);
    p[r->rvlen] = '\0';
    o->key = o->data;
    o->rv = p;
    o->shard = rec_shard(r);
    o->mark = r->mark;
    atomic_init(&o->refs, 1);     /* never referenced: inf_store_unpack copies packed ones */
    o->raw_len = r->raw_len;
    o->body = rec_z(r);
    o->body_len = r->zlen;
    return o;
}

/* An index entry as an inf_obj: itself, or a packed record's view written in v. */
static inline const inf_obj *ent_view(const inf_store *s, store_ent e, rec_view_buf *v)
{
    return ent_packed(e) ? rec_view(&s->ns, ent_rec(e), v) : ent_obj(e);
}

/* Lets go of a packed record: its namespace reference and its slab space. */
static inline void rec_free(inf_store *s, pk_rec *r)
{
    if (!r)
        return;
    ns_unref(&s->ns, r->ns);
    slab_free(&s->slab, r);
}

/* Lets go of an entry taken out of the index. */
static inline void ent_release(inf_store *s, store_ent e)
{
    if (e && ent_packed(e))
        rec_free(s, ent_rec(e));
    else if (e)
        inf_obj_unref(ent_obj(e));
}

static inline size_t hash_mix(uint64_t h)
{
    return (size_t)(h ^ (h >> 29));
}

static inline size_t key_hash(const char *key)
{
    return hash_mix(gd_fnv1a64_str(GD_FNV1A64_INIT, key));
}

/* The hash of an entry's key, "namespace/name" for a packed record too. */
static inline size_t ent_hash(const store_ns *ns, store_ent e)
{
    if (!ent_packed(e))
        return key_hash(ent_obj(e)->key);
    const pk_rec *r = ent_rec(e);
    uint64_t h = GD_FNV1A64_INIT;
    if (r->ns) {
        h = gd_fnv1a64_add(h, ns->v[r->ns - 1].name, ns->v[r->ns - 1].len);
        h = gd_fnv1a64_add(h, "/", 1);
    }
    return hash_mix(gd_fnv1a64_add(h, r->data, r->nlen));
}

/* Is key the entry's key? (strncmp: stops at key's end, never reads past it) */
static inline bool ent_is(const store_ns *ns, store_ent e, const char *key)
{
    if (!ent_packed(e))
        return strcmp(ent_obj(e)->key, key) == 0;
    const pk_rec *r = ent_rec(e);
    if (r->ns) {
        const ns_ent *n = &ns->v[r->ns - 1];
        if (strncmp(key, n->name, n->len) != 0 || key[n->len] != '/')
            return false;
        key += n->len + 1;
    }
    return strncmp(key, r->data, r->nlen) == 0 && key[r->nlen] == '\0';
}

/* ------------------------------------------------------------ the table */

/* The slot holding key, or the empty slot where it would go. t->cap must be > 0. */
static inline size_t tab_find(const obj_table *t, const char *key)
{
    size_t mask = t->cap - 1, i = key_hash(key) & mask;
    while (t->slot[i] && !ent_is(t->ns, t->slot[i], key))
        i = (i + 1) & mask;
    return i;
}

static inline store_ent tab_get(const obj_table *t, const char *key)
{
    return t->cap ? t->slot[tab_find(t, key)] : 0;
}

/* The slot of an entry that is in the table. */
static inline size_t tab_slot_of(const obj_table *t, store_ent e)
{
    size_t mask = t->cap - 1, i = ent_hash(t->ns, e) & mask;
    while (t->slot[i] != e)
        i = (i + 1) & mask;
    return i;
}

/* Keeps the load at most 3/4 so probe runs stay short. */
static inline gd_err tab_reserve(obj_table *t, size_t count)
{
    if (count * 4 <= t->cap * 3)
        return GD_OK;
    size_t nc = t->cap ? t->cap * 2 : 64;
    while (count * 4 > nc * 3)
        nc *= 2;
    obj_table n = {.slot = calloc(nc, sizeof *n.slot), .cap = nc, .count = t->count,
                   .ns = t->ns};
    if (!n.slot)
        return GD_ERR_NOMEM;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slot[i])
            continue;
        size_t j = ent_hash(t->ns, t->slot[i]) & (nc - 1);
        while (n.slot[j])
            j = (j + 1) & (nc - 1);
        n.slot[j] = t->slot[i];
    }
    free(t->slot);
    *t = n;
    return GD_OK;
}

/* Inserts or replaces e, whose key is key; the replaced entry goes to *old (0 if new). */
static inline gd_err tab_put(obj_table *t, const char *key, store_ent e, store_ent *old)
{
    *old = 0;
    if (tab_reserve(t, t->count + 1) != GD_OK) {
        if (!t->cap || !t->slot[tab_find(t, key)])
            return GD_ERR_NOMEM;      /* a replacement needs no room: go on */
    }
    size_t i = tab_find(t, key);
    *old = t->slot[i];
    if (!*old)
        t->count++;
    t->slot[i] = e;
    return GD_OK;
}

/* Removes slot i's entry and returns it; shifts back the entries of the run after it that
 * would otherwise become unreachable. */
static inline store_ent tab_take_at(obj_table *t, size_t i)
{
    size_t mask = t->cap - 1;
    store_ent e = t->slot[i];
    t->slot[i] = 0;
    t->count--;
    for (size_t j = (i + 1) & mask; t->slot[j]; j = (j + 1) & mask) {
        size_t home = ent_hash(t->ns, t->slot[j]) & mask;
        /* j's entry may move into the hole at i unless its home lies in (i, j] */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            t->slot[i] = t->slot[j];
            t->slot[j] = 0;
            i = j;
        }
    }
    return e;
}

/* The slab moved a record: its slot follows (every live record is in the table). */
static inline void tab_rec_moved(void *ud, void *from, void *to)
{
    obj_table *t = ud;
    size_t i = tab_slot_of(t, rec_ent(from));
    t->slot[i] = rec_ent(to);
}

#endif
