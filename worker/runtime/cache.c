/* cache.c — see cache.h. An index maps each value to a set of items: a vector of item
 * pointers, each item remembering its set and its place there, so filing costs a pointer and
 * unfiling a swap with the last (no copy of the key in every set: with sets as maps of
 * keys, the five indexes took ~600 bytes an object, a tenth of the worker's memory on the
 * 10 000-cluster load). An update whose index values did not change takes over the old
 * item's places without touching the sets' shape. */
#include "cache.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gd_intern.h"
#include "gd_json.h"
#include "gd_log.h"
#include "gd_proto.h"
#include "gd_domain.h"
#include "gd_map.h"

struct item;

/* The items filed under one index value (unordered; reads sort what they hand out). */
typedef struct {
    const char *value;              /* the index map's own copy of the value */
    struct item **v;
    int n, cap;
} idxset;

typedef struct item {
    cJSON *obj;
    const char *key;                /* the items map's own copy of the key */
    idxset *set[CACHE_IDX__COUNT];  /* NULL when not indexed */
    int pos[CACHE_IDX__COUNT];      /* this item's place in each set's vector */
    int shard;
    uint64_t seq;                   /* the feed's stamp (cache_stamp) */
    char *rv;                       /* NULL: none given */
    struct cache *owner;            /* where a replaced object goes to be retired */
    uint64_t sum;                   /* GODIS_CACHE_VERIFY: the object's checksum when stored */
} item;

typedef struct {
    gd_map *items;                        /* key -> item */
    gd_map *index[CACHE_IDX__COUNT];      /* value -> idxset */
} store;

/* An object replaced or removed while view sections may still read it (cache.h). */
typedef struct retired {
    cJSON *obj;
    uint64_t tag;                   /* the epoch it was retired at */
    struct retired *next;
} retired;

#define CACHE_VIEWS 256              /* view sections open at once (reconcile threads) */

struct cache {
    pthread_rwlock_t lock;
    gd_map *kinds;                        /* kind -> store */
    bool verify;                          /* GODIS_CACHE_VERIFY=1 */
    /* Epoch-based reclamation. Each retirement takes the next epoch; a view section
     * records the epoch it began at (+1, 0 meaning free). A retired object can only have
     * been seen by sections that began at or before its epoch, so it is freed once every
     * open section began after it. */
    _Atomic uint64_t epoch;
    _Atomic uint64_t view[CACHE_VIEWS];
    _Atomic size_t nretired;
    pthread_mutex_t retired_lock;
    retired *retired_head, *retired_tail; /* in epoch order */
};

static void verify_unchanged(const item *it, const char *kind, const char *key);

static void retire(struct cache *c, cJSON *obj)
{
    if (!obj)
        return;
    retired *r = malloc(sizeof *r);
    if (!r) {                       /* cannot keep it for the readers: leak, never free early */
        gd_log(GD_LOG_ERROR, "cache: out of memory retiring an object (leaked)", NULL);
        return;
    }
    r->obj = obj;
    r->next = NULL;
    pthread_mutex_lock(&c->retired_lock);
    r->tag = atomic_fetch_add(&c->epoch, 1);
    if (c->retired_tail)
        c->retired_tail->next = r;
    else
        c->retired_head = r;
    c->retired_tail = r;
    atomic_fetch_add(&c->nretired, 1);
    pthread_mutex_unlock(&c->retired_lock);
}

/* Frees the retired objects no open section can hold. Outside the cache lock: the frees
 * never hold up readers. */
static void reclaim(struct cache *c)
{
    if (atomic_load(&c->nretired) == 0)
        return;
    uint64_t oldest = UINT64_MAX;
    for (int i = 0; i < CACHE_VIEWS; i++) {
        uint64_t v = atomic_load(&c->view[i]);
        if (v && v - 1 < oldest)
            oldest = v - 1;
    }
    pthread_mutex_lock(&c->retired_lock);
    retired *free_list = NULL, **tail = &free_list;
    size_t n = 0;
    while (c->retired_head && c->retired_head->tag < oldest) {
        retired *r = c->retired_head;
        c->retired_head = r->next;
        *tail = r;
        tail = &r->next;
        n++;
    }
    *tail = NULL;
    if (!c->retired_head)
        c->retired_tail = NULL;
    atomic_fetch_sub(&c->nretired, n);
    pthread_mutex_unlock(&c->retired_lock);
    while (free_list) {
        retired *r = free_list;
        free_list = r->next;
        cJSON_Delete(r->obj);
        free(r);
    }
}

int cache_view_begin(cache *c)
{
    uint64_t at = atomic_load(&c->epoch) + 1;
    for (;;) {
        for (int i = 0; i < CACHE_VIEWS; i++) {
            uint64_t free_slot = 0;
            if (atomic_load(&c->view[i]) == 0 &&
                atomic_compare_exchange_strong(&c->view[i], &free_slot, at))
                return i;
        }
        sched_yield();              /* more sections than slots: wait for one to end */
    }
}

void cache_view_end(cache *c, int slot)
{
    if (slot < 0 || slot >= CACHE_VIEWS)
        return;
    atomic_store(&c->view[slot], 0);
    reclaim(c);
}

void cache_retire(cache *c, cJSON *obj)
{
    retire(c, obj);
    reclaim(c);
}

size_t cache_retired_count(cache *c) { return atomic_load(&c->nretired); }

static void item_free(void *p)
{
    item *it = p;
    if (it->owner)
        retire(it->owner, it->obj);
    else
        cJSON_Delete(it->obj);
    free(it->rv);
    free(it);
}

static void set_free(void *p)
{
    idxset *set = p;
    free(set->v);
    free(set);
}

static void store_free(void *p)
{
    store *s = p;
    gd_map_destroy(&s->items);
    for (int i = 0; i < CACHE_IDX__COUNT; i++)
        gd_map_destroy(&s->index[i]);
    free(s);
}

cache *cache_new(void)
{
    cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->kinds = gd_map_new(store_free);
    if (!c->kinds) {
        free(c);
        return NULL;
    }
    pthread_rwlock_init(&c->lock, NULL);
    pthread_mutex_init(&c->retired_lock, NULL);
    const char *v = getenv("GODIS_CACHE_VERIFY");
    c->verify = v && strcmp(v, "1") == 0;
    return c;
}

void cache_destroy(cache **pc)
{
    if (!pc || !*pc)
        return;
    cache *c = *pc;
    gd_map_destroy(&c->kinds);          /* every object retired: no section is open now */
    for (int i = 0; i < CACHE_VIEWS; i++)
        atomic_store(&c->view[i], 0);
    reclaim(c);
    pthread_mutex_destroy(&c->retired_lock);
    pthread_rwlock_destroy(&c->lock);
    free(c);
    *pc = NULL;
}

static store *store_get(cache *c, const char *kind, bool create)
{
    store *s = gd_map_get(c->kinds, kind);
    if (s || !create)
        return s;
    s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    bool ok = (s->items = gd_map_new(item_free)) != NULL;
    for (int i = 0; ok && i < CACHE_IDX__COUNT; i++)
        ok = (s->index[i] = gd_map_new(set_free)) != NULL;
    if (!ok || gd_map_put(c->kinds, kind, s, NULL) != GD_OK) {
        store_free(s);
        return NULL;
    }
    return s;
}

/* ---- index values of one object ---- */

static char *dup_or_null(const char *s) { return (s && *s) ? strdup(s) : NULL; }

/* "ns/<label value>", or NULL when the object lacks the label */
static char *ns_label(const char *ns, const cJSON *obj, const char *label)
{
    const char *v = gd_meta_label(obj, label);
    if (!v || !*v)
        return NULL;
    size_t n = strlen(ns) + strlen(v) + 2;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%s/%s", ns, v);
    return out;
}

static void index_values(const char *kind, const cJSON *obj, char *out[CACHE_IDX__COUNT])
{
    const char *ns = gd_meta_namespace(obj);
    out[CACHE_IDX_NAMESPACE] = dup_or_null(ns);
    const gd_domain *d = gd_domain_get();
    out[CACHE_IDX_CLUSTER] = ns_label(ns, obj, d->cluster_label);
    out[CACHE_IDX_MEMBER] = ns_label(ns, obj, d->member_label);
    const cJSON *owner = gd_meta_controller_owner(obj);
    out[CACHE_IDX_OWNER] = owner ? dup_or_null(gd_json_str_or(owner, "uid", "")) : NULL;
    if (strcmp(kind, "Pod") == 0)
        out[CACHE_IDX_NODE] = dup_or_null(gd_json_str_or(obj, "spec.nodeName", ""));
}

static void free_values(char *vals[CACHE_IDX__COUNT])
{
    for (int i = 0; i < CACHE_IDX__COUNT; i++)
        free(vals[i]);
}

/* Takes it out of index i: the last item of the set moves into its place. An emptied set
 * goes; one far below its capacity shrinks (a namespace emptied by a relist). */
static void unfile_one(store *s, item *it, int i)
{
    idxset *set = it->set[i];
    if (!set)
        return;
    it->set[i] = NULL;
    item *last = set->v[--set->n];
    if (it->pos[i] != set->n) {
        set->v[it->pos[i]] = last;
        last->pos[i] = it->pos[i];
    }
    if (set->n == 0) {
        gd_map_del(s->index[i], set->value);
        return;
    }
    if (set->cap >= 64 && set->n < set->cap / 4) {
        item **v = realloc(set->v, (size_t)(set->cap / 2) * sizeof *v);
        if (v) {
            set->v = v;
            set->cap /= 2;
        }
    }
}

static void unfile(store *s, item *it)
{
    for (int i = 0; i < CACHE_IDX__COUNT; i++)
        unfile_one(s, it, i);
}

static gd_err file_one(store *s, item *it, int i, const char *value)
{
    idxset *set = gd_map_get(s->index[i], value);
    if (!set) {
        set = calloc(1, sizeof *set);
        if (!set || gd_map_put(s->index[i], value, set, NULL) != GD_OK) {
            free(set);
            return GD_ERR_NOMEM;
        }
        set->value = gd_map_key(s->index[i], value);
    }
    if (set->n == set->cap) {
        int cap = set->cap ? set->cap * 2 : 2;      /* most sets are one member's few */
        item **v = realloc(set->v, (size_t)cap * sizeof *v);
        if (!v) {
            if (set->n == 0)
                gd_map_del(s->index[i], set->value);
            return GD_ERR_NOMEM;
        }
        set->v = v;
        set->cap = cap;
    }
    it->set[i] = set;
    it->pos[i] = set->n;
    set->v[set->n++] = it;
    return GD_OK;
}

/* Files it under vals, taking over prev's places (prev: the item it replaces, or NULL)
 * where the value is the same, and unfiling prev from the others. */
static gd_err refile(store *s, item *prev, item *it, char *const vals[CACHE_IDX__COUNT])
{
    gd_err rc = GD_OK;
    for (int i = 0; i < CACHE_IDX__COUNT; i++) {
        if (prev && prev->set[i] && vals[i] && strcmp(prev->set[i]->value, vals[i]) == 0) {
            it->set[i] = prev->set[i];
            it->pos[i] = prev->pos[i];
            it->set[i]->v[it->pos[i]] = it;
            prev->set[i] = NULL;
            continue;
        }
        if (prev)
            unfile_one(s, prev, i);
        if (vals[i] && rc == GD_OK)
            rc = file_one(s, it, i, vals[i]);
    }
    return rc;
}

/* ---- GODIS_CACHE_VERIFY: borrowed objects are never modified ---- */

/* FNV-1a of the object's JSON: computed only in verify mode (tests), never in production. */
static uint64_t checksum(const cJSON *obj)
{
    char *txt = cJSON_PrintUnformatted(obj);
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = txt ? txt : ""; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    free(txt);
    return h;
}

/* An object leaving the cache is as it was stored: reconcilers read borrowed objects
 * (cache_view_begin) and must copy before they change anything. A change means a reader
 * wrote into memory other readers share, so it is fatal in verify mode. */
static void verify_unchanged(const item *it, const char *kind, const char *key)
{
    if (!it->owner || !it->owner->verify || !it->obj || checksum(it->obj) == it->sum)
        return;
    gd_log(GD_LOG_ERROR, "cache: a reader modified a cached object (GODIS_CACHE_VERIFY)",
           "kind", kind, "key", key, NULL);
    abort();
}

/* ---- writes ---- */

gd_err cache_apply(cache *c, cache_op op, const char *kind, const char *key, int shard,
                   const cJSON *obj)
{
    cJSON *copy = NULL;
    if (op == CACHE_UPSERT && obj && !(copy = cJSON_Duplicate(obj, 1)))
        return GD_ERR_NOMEM;
    gd_err rc = cache_apply_take(c, op, kind, key, shard, op == CACHE_UPSERT ? &copy : NULL,
                                 NULL);
    cJSON_Delete(copy);
    return rc;
}

static void stamp_of(const item *it, cache_stamp *st)
{
    st->shard = it->shard;
    st->seq = it->seq;
    snprintf(st->rv, sizeof st->rv, "%s", it->rv ? it->rv : "");
}

/* UPSERT (stamp st, takes *obj) or DELETE (the removed key's stamp to old_st when not NULL). */
static gd_err apply_change(cache *c, cache_op op, const char *kind, const char *key,
                    const cache_stamp *st, cJSON **obj, cJSON **old_out, cache_stamp *old_st)
{
    if (old_out)
        *old_out = NULL;
    if (!c || !kind || !*kind || !key || !*key || (op == CACHE_UPSERT && (!obj || !*obj)))
        return GD_ERR_ARG;
    item *it = NULL;
    char *vals[CACHE_IDX__COUNT] = {0};     /* its index values (the maps copy them) */
    if (op == CACHE_UPSERT) {   /* build outside the lock: readers are never held up by it */
        it = calloc(1, sizeof *it);
        if (!it)
            return GD_ERR_NOMEM;
        it->obj = *obj;
        it->owner = c;
        gd_json_intern_names(it->obj);      /* the names every object of a kind repeats */
        if (c->verify)
            it->sum = checksum(it->obj);
        it->shard = st->shard;
        it->seq = st->seq;
        if (st->rv[0] && !(it->rv = strdup(st->rv))) {
            free(it);
            return GD_ERR_NOMEM;
        }
        index_values(kind, it->obj, vals);
    }
    gd_err rc = GD_OK;
    pthread_rwlock_wrlock(&c->lock);
    store *s = store_get(c, kind, op == CACHE_UPSERT);
    if (!s) {
        rc = op == CACHE_UPSERT ? GD_ERR_NOMEM : GD_OK;
        goto out;
    }
    item *old = gd_map_get(s->items, key);
    if (old) {
        verify_unchanged(old, kind, key);
        if (old_st)
            stamp_of(old, old_st);
    }
    if (op == CACHE_DELETE) {
        if (old) {
            unfile(s, old);
            if (old_out) {      /* handed to the caller instead of freed with the item */
                *old_out = old->obj;
                old->obj = NULL;
            }
        }
        gd_map_del(s->items, key);
        goto out;
    }
    item *prev = NULL;
    if ((rc = gd_map_put(s->items, key, it, (void **)&prev)) != GD_OK)
        goto out;               /* the old item stays as it was, filed */
    it->key = gd_map_key(s->items, key);
    rc = refile(s, prev, it, vals);
    it = NULL;                  /* owned by the store now */
    *obj = NULL;
    if (prev) {
        if (old_out) {          /* handed to the caller instead of freed with the item */
            *old_out = prev->obj;
            prev->obj = NULL;
        }
        item_free(prev);
    }
out:
    pthread_rwlock_unlock(&c->lock);
    free_values(vals);
    if (it) {
        it->obj = NULL;         /* still the caller's */
        item_free(it);
    }
    reclaim(c);
    if (rc == GD_ERR_NOMEM)
        gd_log(GD_LOG_ERROR, "cache: out of memory applying a change", "kind", kind, "key",
               key, NULL);
    return rc;
}

gd_err cache_apply_take(cache *c, cache_op op, const char *kind, const char *key, int shard,
                        cJSON **obj, cJSON **old_out)
{
    if (op != CACHE_UPSERT && op != CACHE_DELETE)
        return GD_ERR_ARG;
    cache_stamp st = {.shard = shard};
    return apply_change(c, op, kind, key, &st, obj, old_out, NULL);
}

gd_err cache_put_stamped(cache *c, const char *kind, const char *key, const cache_stamp *st,
                         cJSON **obj, cJSON **old_out)
{
    return st ? apply_change(c, CACHE_UPSERT, kind, key, st, obj, old_out, NULL) : GD_ERR_ARG;
}

bool cache_take(cache *c, const char *kind, const char *key, cJSON **old_out, cache_stamp *st)
{
    apply_change(c, CACHE_DELETE, kind, key, NULL, NULL, old_out, st);
    return *old_out != NULL;    /* a cached key always has its object */
}

typedef struct {
    bool in[GD_NSHARDS];
    char **keys;
    int n, cap;
} drop_ctx;

static int collect_drop(void *ud, const char *key, void *val)
{
    drop_ctx *d = ud;
    const item *it = val;
    if (it->shard < 0 || it->shard >= GD_NSHARDS || !d->in[it->shard])
        return 0;       /* broadcast objects (Nodes) belong to no shard */
    if (d->n == d->cap) {
        int cap = d->cap ? d->cap * 2 : 64;
        char **k = realloc(d->keys, (size_t)cap * sizeof *k);
        if (!k)
            return 1;
        d->keys = k;
        d->cap = cap;
    }
    d->keys[d->n] = strdup(key);
    if (d->keys[d->n])
        d->n++;
    return 0;
}

static int drop_in_store(store *s, drop_ctx *d)
{
    d->n = 0;
    gd_map_each(s->items, collect_drop, d);
    for (int i = 0; i < d->n; i++) {
        item *it = gd_map_get(s->items, d->keys[i]);
        if (it) {
            verify_unchanged(it, "(dropped shard)", d->keys[i]);
            unfile(s, it);
        }
        gd_map_del(s->items, d->keys[i]);
        free(d->keys[i]);
    }
    return d->n;
}

typedef struct {
    drop_ctx *d;
    int total;
} drop_all_ctx;

static int drop_each_store(void *ud, const char *kind, void *val)
{
    drop_all_ctx *a = ud;
    a->total += drop_in_store(val, a->d);
    return 0;
}

int cache_drop_shards(cache *c, const char *kind, const int *shards, int n)
{
    drop_ctx *d = calloc(1, sizeof *d);
    if (!d)
        return 0;
    for (int i = 0; i < n; i++)
        if (shards[i] >= 0 && shards[i] < GD_NSHARDS)
            d->in[shards[i]] = true;
    int total = 0;
    pthread_rwlock_wrlock(&c->lock);
    if (kind) {
        store *s = store_get(c, kind, false);
        if (s)
            total = drop_in_store(s, d);
    } else {
        drop_all_ctx a = {d, 0};
        gd_map_each(c->kinds, drop_each_store, &a);
        total = a.total;
    }
    pthread_rwlock_unlock(&c->lock);
    free(d->keys);
    free(d);
    reclaim(c);
    return total;
}

/* ---- reads ---- */

static item *find(cache *c, const char *kind, const char *key)
{
    store *s = (kind && key) ? store_get(c, kind, false) : NULL;
    return s ? gd_map_get(s->items, key) : NULL;
}

cJSON *cache_get(cache *c, const char *kind, const char *key)
{
    pthread_rwlock_rdlock(&c->lock);
    item *it = find(c, kind, key);
    cJSON *copy = it ? cJSON_Duplicate(it->obj, 1) : NULL;
    pthread_rwlock_unlock(&c->lock);
    return copy;
}

bool cache_key(char *out, size_t cap, const char *ns, const char *name)
{
    int n = (ns && *ns) ? snprintf(out, cap, "%s/%s", ns, name ? name : "")
                        : snprintf(out, cap, "%s", name ? name : "");
    return n >= 0 && (size_t)n < cap;
}

cJSON *cache_get_nsname(cache *c, const char *kind, const char *ns, const char *name)
{
    char key[512];
    return cache_key(key, sizeof key, ns, name) ? cache_get(c, kind, key) : NULL;
}

bool cache_get_rv(cache *c, const char *kind, const char *key, char *rv, size_t cap,
                  bool *deleting)
{
    pthread_rwlock_rdlock(&c->lock);
    item *it = find(c, kind, key);
    if (it) {
        if (rv && cap)
            snprintf(rv, cap, "%s", gd_meta_rv(it->obj));
        if (deleting)
            *deleting = gd_meta_deleting(it->obj);
    }
    pthread_rwlock_unlock(&c->lock);
    return it != NULL;
}

const cJSON *cache_restamp(cache *c, const char *kind, const char *key, uint64_t seq)
{
    pthread_rwlock_wrlock(&c->lock);
    item *it = find(c, kind, key);
    if (it)
        it->seq = seq;
    pthread_rwlock_unlock(&c->lock);
    return it ? it->obj : NULL;
}

bool cache_get_stamp(cache *c, const char *kind, const char *key, cache_stamp *st)
{
    pthread_rwlock_rdlock(&c->lock);
    item *it = find(c, kind, key);
    if (it)
        stamp_of(it, st);
    pthread_rwlock_unlock(&c->lock);
    return it != NULL;
}

typedef struct {
    void (*fn)(void *ud, const char *key, const cache_stamp *st);
    void *ud;
} stamp_walk;

static int walk_stamp(void *ud, const char *key, void *val)
{
    stamp_walk *w = ud;
    cache_stamp st;
    stamp_of(val, &st);
    w->fn(w->ud, key, &st);
    return 0;
}

void cache_each_stamp(cache *c, const char *kind,
                      void (*fn)(void *ud, const char *key, const cache_stamp *st), void *ud)
{
    stamp_walk w = {fn, ud};
    pthread_rwlock_rdlock(&c->lock);
    store *s = kind ? store_get(c, kind, false) : NULL;
    if (s)
        gd_map_each(s->items, walk_stamp, &w);
    pthread_rwlock_unlock(&c->lock);
}

bool cache_rv_lookup(void *ud, const char *kind, const char *key, char *rv, size_t cap,
                     bool *deleting)
{
    return cache_get_rv(ud, kind, key, rv, cap, deleting);
}

bool cache_read(cache *c, const char *kind, const char *key,
                void (*fn)(void *ud, const cJSON *obj), void *ud)
{
    pthread_rwlock_rdlock(&c->lock);
    item *it = find(c, kind, key);
    if (it && fn)
        fn(ud, it->obj);
    pthread_rwlock_unlock(&c->lock);
    return it != NULL;
}

bool cache_has(cache *c, const char *kind, const char *key)
{
    pthread_rwlock_rdlock(&c->lock);
    bool h = find(c, kind, key) != NULL;
    pthread_rwlock_unlock(&c->lock);
    return h;
}

size_t cache_count(cache *c, const char *kind)
{
    pthread_rwlock_rdlock(&c->lock);
    store *s = kind ? store_get(c, kind, false) : NULL;
    size_t n = s ? gd_map_count(s->items) : 0;
    pthread_rwlock_unlock(&c->lock);
    return n;
}

typedef struct {
    item **v;
    int n, cap;
} itemvec;

static bool itemvec_push(itemvec *v, item *it)
{
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 16;
        item **nv = realloc(v->v, (size_t)cap * sizeof *nv);
        if (!nv)
            return false;
        v->v = nv;
        v->cap = cap;
    }
    v->v[v->n++] = it;
    return true;
}

static int push_item(void *ud, const char *key, void *val)
{
    (void)key;
    return itemvec_push(ud, val) ? 0 : 1;
}

static int cmp_item_key(const void *a, const void *b)
{
    return strcmp((*(item *const *)a)->key, (*(item *const *)b)->key);
}

/* Under the read lock: the items of kind matching idx=value (all when idx < 0), sorted by
 * key. A vector that could not grow (NOMEM) holds what fitted. */
static void matching_items(cache *c, const char *kind, int idx, const char *value, itemvec *v)
{
    store *s = kind ? store_get(c, kind, false) : NULL;
    if (!s)
        return;
    if (idx < 0) {
        gd_map_each(s->items, push_item, v);
    } else {
        idxset *set = value ? gd_map_get(s->index[idx], value) : NULL;
        for (int i = 0; set && i < set->n; i++)
            if (!itemvec_push(v, set->v[i]))
                break;
    }
    if (v->n > 1)
        qsort(v->v, (size_t)v->n, sizeof *v->v, cmp_item_key);
}

static int each(cache *c, const char *kind, int idx, const char *value, cache_fn fn, void *ud)
{
    itemvec v = {0};
    int calls = 0;
    pthread_rwlock_rdlock(&c->lock);
    matching_items(c, kind, idx, value, &v);
    for (int i = 0; i < v.n; i++) {
        calls++;
        if (fn(ud, v.v[i]->key, v.v[i]->obj))
            break;
    }
    pthread_rwlock_unlock(&c->lock);
    free(v.v);
    return calls;
}

int cache_each_indexed(cache *c, const char *kind, cache_index idx, const char *value,
                       cache_fn fn, void *ud)
{
    if (idx < 0 || idx >= CACHE_IDX__COUNT || !fn)
        return 0;
    return each(c, kind, (int)idx, value, fn, ud);
}

int cache_each(cache *c, const char *kind, cache_fn fn, void *ud)
{
    return fn ? each(c, kind, -1, NULL, fn, ud) : 0;
}

static int add_copy(void *ud, const char *key, const cJSON *obj)
{
    cJSON *dup = cJSON_Duplicate(obj, 1);
    if (!dup)
        return 1;
    cJSON_AddItemToArray(ud, dup);
    return 0;
}

cJSON *cache_list(cache *c, const char *kind, cache_index idx, const char *value)
{
    cJSON *arr = cJSON_CreateArray();
    if (arr)
        cache_each_indexed(c, kind, idx, value, add_copy, arr);
    return arr;
}
