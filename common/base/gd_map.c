/* gd_map.c — see gd_map.h. Chained buckets keep deletion trivial (no tombstones), which
 * matters because the informer's relist deletes arbitrary subsets of the map. */
#include "gd_map.h"
#include "gd_hash.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct node {
    struct node *next;
    uint64_t hash;
    void *val;
    char key[];
} node;

struct gd_map {
    node **buckets;
    size_t nbuckets;          /* power of two */
    size_t count;
    gd_map_free_fn free_val;
};

static uint64_t hash_str(const char *s) { return gd_fnv1a64_str(GD_FNV1A64_INIT, s); }

gd_map *gd_map_new(gd_map_free_fn free_val)
{
    gd_map *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->nbuckets = 16;       /* the worker's cache keeps many small index sets */
    m->buckets = calloc(m->nbuckets, sizeof *m->buckets);
    if (!m->buckets) {
        free(m);
        return NULL;
    }
    m->free_val = free_val;
    return m;
}

void gd_map_destroy(gd_map **mp)
{
    if (!mp || !*mp)
        return;
    gd_map *m = *mp;
    for (size_t i = 0; i < m->nbuckets; i++) {
        node *n = m->buckets[i];
        while (n) {
            node *next = n->next;
            if (m->free_val && n->val)
                m->free_val(n->val);
            free(n);
            n = next;
        }
    }
    free(m->buckets);
    free(m);
    *mp = NULL;
}

static node **find_slot(const gd_map *m, const char *key, uint64_t h)
{
    node **slot = &m->buckets[h & (m->nbuckets - 1)];
    while (*slot && ((*slot)->hash != h || strcmp((*slot)->key, key) != 0))
        slot = &(*slot)->next;
    return slot;
}

void *gd_map_get(const gd_map *m, const char *key)
{
    node **slot = find_slot(m, key, hash_str(key));
    return *slot ? (*slot)->val : NULL;
}

/* Doubles the table when the load factor passes 1; a failed grow is not an error (the
 * map just gets slower), so callers never see NOMEM from it. */
static void maybe_grow(gd_map *m)
{
    if (m->count < m->nbuckets)
        return;
    size_t nb = m->nbuckets * 2;
    node **b = calloc(nb, sizeof *b);
    if (!b)
        return;
    for (size_t i = 0; i < m->nbuckets; i++) {
        node *n = m->buckets[i];
        while (n) {
            node *next = n->next;
            node **slot = &b[n->hash & (nb - 1)];
            n->next = *slot;
            *slot = n;
            n = next;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->nbuckets = nb;
}

gd_err gd_map_put(gd_map *m, const char *key, void *val, void **old)
{
    uint64_t h = hash_str(key);
    node **slot = find_slot(m, key, h);
    if (*slot) {
        if (old)
            *old = (*slot)->val;
        else if (m->free_val && (*slot)->val && (*slot)->val != val)
            m->free_val((*slot)->val);
        (*slot)->val = val;
        return GD_OK;
    }
    if (old)
        *old = NULL;
    size_t klen = strlen(key);
    node *n = malloc(sizeof *n + klen + 1);
    if (!n)
        return GD_ERR_NOMEM;
    n->next = NULL;
    n->hash = h;
    n->val = val;
    memcpy(n->key, key, klen + 1);
    *slot = n;
    m->count++;
    maybe_grow(m);
    return GD_OK;
}

void *gd_map_take(gd_map *m, const char *key)
{
    node **slot = find_slot(m, key, hash_str(key));
    node *n = *slot;
    if (!n)
        return NULL;
    *slot = n->next;
    void *val = n->val;
    free(n);
    m->count--;
    return val;
}

bool gd_map_del(gd_map *m, const char *key)
{
    node **slot = find_slot(m, key, hash_str(key));
    node *n = *slot;
    if (!n)
        return false;
    *slot = n->next;
    if (m->free_val && n->val)
        m->free_val(n->val);
    free(n);
    m->count--;
    return true;
}

size_t gd_map_count(const gd_map *m) { return m->count; }

bool gd_map_has(const gd_map *m, const char *key) { return *find_slot(m, key, hash_str(key)) != NULL; }

const char *gd_map_key(const gd_map *m, const char *key)
{
    node *n = *find_slot(m, key, hash_str(key));
    return n ? n->key : NULL;
}

int gd_map_each(const gd_map *m, gd_map_each_fn fn, void *ud)
{
    for (size_t i = 0; i < m->nbuckets; i++)
        for (node *n = m->buckets[i]; n; n = n->next) {
            int r = fn(ud, n->key, n->val);
            if (r)
                return r;
        }
    return 0;
}

void gd_map_iter_init(gd_map_iter *it, gd_map *m)
{
    memset(it, 0, sizeof *it);
    it->m = m;
    it->link = (void **)&m->buckets[0];
}

bool gd_map_next(gd_map_iter *it, const char **key, void **val)
{
    gd_map *m = it->m;
    if (it->bucket >= m->nbuckets)
        return false;
    /* Step past the current node unless it was taken (then *link already is its successor). */
    if (it->cur && !it->taken)
        it->link = (void **)&((node *)it->cur)->next;
    it->taken = false;
    while (!*it->link) {
        if (++it->bucket >= m->nbuckets) {
            it->cur = NULL;
            return false;
        }
        it->link = (void **)&m->buckets[it->bucket];
    }
    node *n = *it->link;
    it->cur = n;
    if (key)
        *key = n->key;
    if (val)
        *val = n->val;
    return true;
}

void *gd_map_iter_take(gd_map_iter *it)
{
    node *n = it->cur;
    if (!n || it->taken)
        return NULL;
    *it->link = n->next;
    void *val = n->val;
    free(n);
    it->m->count--;
    it->taken = true;
    return val;
}
