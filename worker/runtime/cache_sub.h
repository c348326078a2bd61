/* cache_sub.h — the worker's cache as the replica store of its subscribers (gd_sub_store,
 * docs/PROTOCOL.md §1): a subscriber keeps the protocol's bookkeeping of each key (shard,
 * the informer's global sequence, resourceVersion) in the cache entry beside the object, so
 * the worker holds one record per key and no map beside its cache. The cache itself knows
 * nothing of GDI1: this adapter maps gd_sub_rec onto cache_stamp. */
#ifndef WORKER_CACHE_SUB_H
#define WORKER_CACHE_SUB_H
#include "cache.h"
#include "gd_sub.h"

/* One kind's view of the cache; must outlive the gd_sub given its store. */
typedef struct {
    cache *cache;
    char kind[64];
} cache_sub;

/* Fills out (for gd_sub_opts.store) with the store of kind in c; cs holds the view. */
void cache_sub_store(cache_sub *cs, cache *c, const char *kind, gd_sub_store *out);

#endif
