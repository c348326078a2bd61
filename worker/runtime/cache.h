/* cache.h — the worker's read-only cache replica: one store per kind, with the indexes the
 * mappings and reconcilers need (client-go Indexers). The two labels are the domain's
 * (gd_domain.h; godis: cluster-name, node-name):
 *   CACHE_IDX_NAMESPACE  "ns"                    every namespaced object
 *   CACHE_IDX_CLUSTER    "ns/<cluster label>"    objects carrying the cluster label
 *   CACHE_IDX_OWNER      "<uid>"                 the controller ownerReference's uid
 *   CACHE_IDX_NODE       "<node name>"           Pods by spec.nodeName
 *   CACHE_IDX_MEMBER     "ns/<member label>"     objects carrying the member label (one
 *                                                member's children and pods)
 * Written by the subscriber threads, one per kind, each the only writer of its kind (the
 * cache is their replica store, cache_sub.h), read by many (reconcile threads, mappings)
 * under a readers/writer lock. Reads hand out deep copies, run a callback under the read
 * lock, or, inside a view section, lend the cached object itself (cache_view_begin), so no
 * caller ever sees an object change under it. */
#ifndef WORKER_CACHE_H
#define WORKER_CACHE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "gd_err.h"

typedef struct cache cache;

typedef enum { CACHE_UPSERT = 1, CACHE_DELETE } cache_op;

typedef enum {
    CACHE_IDX_NAMESPACE = 0,
    CACHE_IDX_CLUSTER,
    CACHE_IDX_OWNER,
    CACHE_IDX_NODE,
    CACHE_IDX_MEMBER,
    CACHE_IDX__COUNT
} cache_index;

cache *cache_new(void);
void   cache_destroy(cache **c);

/* Stores a copy of obj under kind/key (UPSERT) or removes it (DELETE; obj may be NULL).
 * shard is remembered for cache_drop_shards. GD_ERR_ARG for a NULL kind/key or an UPSERT
 * without an object; GD_ERR_NOMEM. Deleting an absent key is GD_OK. */
gd_err cache_apply(cache *c, cache_op op, const char *kind, const char *key, int shard,
                   const cJSON *obj);
/* cache_apply without the copy: UPSERT takes *obj (set to NULL on success; on failure it
 * stays the caller's). old_out, when not NULL, receives the object the key had before
 * (the caller frees it; NULL when there was none) instead of it being freed. */
gd_err cache_apply_take(cache *c, cache_op op, const char *kind, const char *key, int shard,
                        cJSON **obj, cJSON **old_out);
/* Removes every object of kind (NULL: all kinds) whose shard is in shards — a revoked shard
 * is forgotten, not deleted. Returns the number removed. */
int    cache_drop_shards(cache *c, const char *kind, const int *shards, int n);

/* What the feed that fills the cache keeps with each object, so the worker holds one record
 * per key (its subscriber's bookkeeping, see cache_sub.h): the shard it came on, the feed's
 * sequence of that state, the resourceVersion the feed carried ("" when none was given). */
typedef struct {
    int shard;
    uint64_t seq;
    char rv[64];
} cache_stamp;
/* UPSERT with a stamp: takes *obj (set to NULL on success), the object key had before goes
 * to *old_out (NULL when none; the caller frees it). */
gd_err cache_put_stamped(cache *c, const char *kind, const char *key, const cache_stamp *st,
                         cJSON **obj, cJSON **old_out);
/* Removes key: its object to *old_out (the caller frees it), its stamp to *st (may be NULL);
 * false when absent. */
bool   cache_take(cache *c, const char *kind, const char *key, cJSON **old_out,
                  cache_stamp *st);
/* A feed's republish of the state the cache holds (same resourceVersion): only the stamp's
 * seq changes. Returns the cached object, borrowed: valid on the feed's thread (the only
 * writer of its kind) until it replaces or removes the key; NULL when absent. */
const cJSON *cache_restamp(cache *c, const char *kind, const char *key, uint64_t seq);
/* key's stamp; false when absent. cache_apply leaves seq 0 and rv "". */
bool   cache_get_stamp(cache *c, const char *kind, const char *key, cache_stamp *st);
/* fn for every object of kind with its stamp, under the read lock (in no particular order);
 * fn must not call into the cache. */
void   cache_each_stamp(cache *c, const char *kind,
                        void (*fn)(void *ud, const char *key, const cache_stamp *st), void *ud);

/* The cache key of ns/name ("name" for a cluster-scoped object, ns NULL or ""); false when
 * it does not fit in cap. */
bool   cache_key(char *out, size_t cap, const char *ns, const char *name);
/* Deep copy (caller cJSON_Delete's it), or NULL when absent. */
cJSON *cache_get(cache *c, const char *kind, const char *key);
cJSON *cache_get_nsname(cache *c, const char *kind, const char *ns, const char *name);
/* resourceVersion and deletion state without copying; false when absent. */
bool   cache_get_rv(cache *c, const char *kind, const char *key, char *rv, size_t cap,
                    bool *deleting);
bool   cache_has(cache *c, const char *kind, const char *key);
/* Calls fn with the cached object (borrowed) under the read lock, without copying it; fn
 * must not call into the cache. false (fn not called) when absent. */
bool   cache_read(cache *c, const char *kind, const char *key,
                  void (*fn)(void *ud, const cJSON *obj), void *ud);
size_t cache_count(cache *c, const char *kind);

/* A JSON array of copies of the objects of kind whose index value equals value (ordered by
 * key, so callers iterate deterministically). Never NULL except on NOMEM. */
cJSON *cache_list(cache *c, const char *kind, cache_index idx, const char *value);
/* Calls fn under the read lock for each matching object (borrowed). fn returns non-zero to
 * stop. fn must not call into the cache. Returns the number of calls. */
typedef int (*cache_fn)(void *ud, const char *key, const cJSON *obj);
int    cache_each_indexed(cache *c, const char *kind, cache_index idx, const char *value,
                          cache_fn fn, void *ud);
int    cache_each(cache *c, const char *kind, cache_fn fn, void *ud);

/* A view section (one reconcile): every object a read hands out borrowed while it is open
 * (cache_read's and the each functions' fn, rec_cache_get's and rec_cache_list's handles)
 * stays valid and unchanged until cache_view_end, even if the feed replaces or removes it
 * meanwhile: a replaced object is retired, and freed once every section that began before
 * it was retired has ended (epoch-based reclamation). No copy is made. Readers must never
 * modify a borrowed object: GODIS_CACHE_VERIFY=1 (the tests) checksums each object when
 * stored and aborts if it left the cache changed. Returns the section's slot; a thread holds
 * at most one section. */
int    cache_view_begin(cache *c);
void   cache_view_end(cache *c, int slot);
/* An object a write handed back (old_out, cache_take) while view sections may be open:
 * retired like a replaced one instead of freed at once. Without sections, cJSON_Delete. */
void   cache_retire(cache *c, cJSON *obj);
/* Retired objects not yet freed (some view section that began before them is open). */
size_t cache_retired_count(cache *c);

/* The controller's read-your-own-writes lookup (gd_rv_lookup_fn); ud is the cache. */
bool   cache_rv_lookup(void *ud, const char *kind, const char *key, char *rv, size_t cap,
                       bool *deleting);

#endif
