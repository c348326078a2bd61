/* gd_map.h — the project's string-keyed hash map (chained, power-of-two buckets that double
 * at load 1, FNV-1a from gd_hash.h).
 *
 * Small on purpose: the informer's store, the worker's cache, index sets, workqueue entries
 * and expectations all need "values by namespace/name" with insert, replace, delete and
 * iteration, nothing more. Keys are copied into the node (one allocation per entry); values
 * are opaque pointers owned by the map and freed with the free function given at creation
 * (NULL: the map never frees values; a NULL value is never passed to it).
 * Not thread-safe: callers lock. */
#ifndef GD_MAP_H
#define GD_MAP_H
#include <stdbool.h>
#include <stddef.h>
#include "gd_err.h"

typedef struct gd_map gd_map;
typedef void (*gd_map_free_fn)(void *val);

gd_map *gd_map_new(gd_map_free_fn free_val);
void    gd_map_destroy(gd_map **m);          /* frees every value with free_val */

void   *gd_map_get(const gd_map *m, const char *key);
/* Inserts or replaces. When the key existed its previous value goes to *old if old is not
 * NULL (the caller owns it then), else it is freed with free_val. GD_ERR_NOMEM on failure
 * (the map is unchanged and val still belongs to the caller). */
gd_err  gd_map_put(gd_map *m, const char *key, void *val, void **old);
/* Removes the key and returns its value (caller owns it), or NULL when absent. */
void   *gd_map_take(gd_map *m, const char *key);
/* Removes the key and frees its value; false when absent. */
bool    gd_map_del(gd_map *m, const char *key);
size_t  gd_map_count(const gd_map *m);
bool    gd_map_has(const gd_map *m, const char *key);
/* The map's own copy of key (stable until the key is removed), or NULL when absent. */
const char *gd_map_key(const gd_map *m, const char *key);

/* Calls fn for every entry in bucket order; a non-zero return stops the walk and is
 * returned (0 when it ran to the end). fn must not modify the map. */
typedef int (*gd_map_each_fn)(void *ud, const char *key, void *val);
int     gd_map_each(const gd_map *m, gd_map_each_fn fn, void *ud);

/* Iteration in bucket order. The map must not be modified during an iteration, except by
 * gd_map_iter_take(), which removes the entry just returned by gd_map_next(). */
typedef struct {
    gd_map *m;
    size_t bucket;
    void **link;      /* the slot that points at the current node */
    void *cur;        /* current node, NULL before the first call */
    bool taken;       /* the current node was removed by gd_map_iter_take */
} gd_map_iter;
void  gd_map_iter_init(gd_map_iter *it, gd_map *m);
bool  gd_map_next(gd_map_iter *it, const char **key, void **val);
void *gd_map_iter_take(gd_map_iter *it);

#endif
