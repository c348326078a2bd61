/* strmap.h — a string-keyed hash map (chained, power-of-two buckets, grows at load 1).
 *
 * The worker keeps many sets keyed by "namespace/name" (workqueue entries, cache objects,
 * index buckets); one small map type serves them all. Keys are copied; values are owned by
 * the map when a free function is given (called on replace, delete and destroy).
 * Not thread-safe: every user holds its own lock. */
#ifndef WORKER_STRMAP_H
#define WORKER_STRMAP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gd_err.h"

typedef struct strmap strmap;
typedef void (*strmap_free_fn)(void *val);
/* Iteration callback: return non-zero to stop early. Must not modify the map. */
typedef int (*strmap_each_fn)(void *ud, const char *key, void *val);

strmap *strmap_new(strmap_free_fn free_val);
void    strmap_destroy(strmap **m);
size_t  strmap_size(const strmap *m);
void   *strmap_get(const strmap *m, const char *key);
bool    strmap_has(const strmap *m, const char *key);
/* Inserts or replaces (the old value is freed). GD_ERR_NOMEM leaves the map unchanged. */
gd_err  strmap_put(strmap *m, const char *key, void *val);
/* Removes the key and returns its value without freeing it (NULL when absent). */
void   *strmap_take(strmap *m, const char *key);
/* Removes and frees; true when the key was present. */
bool    strmap_del(strmap *m, const char *key);
/* Calls fn for every entry in unspecified order; returns fn's non-zero stop value or 0. */
int     strmap_each(const strmap *m, strmap_each_fn fn, void *ud);
/* The map's own copy of key (stable until the key is removed), or NULL. */
const char *strmap_key(const strmap *m, const char *key);

uint64_t strmap_hash(const char *s);

#endif
