/* strmap.c — see strmap.h. Chaining keeps deletion trivial, and the worker's maps are small
 * enough (thousands of keys) that cache misses on chains do not matter. */
#include "strmap.h"
#include <stdlib.h>
#include <string.h>

typedef struct node {
    struct node *next;
    uint64_t hash;
    void *val;
    char key[];
} node;

struct strmap {
    node **buckets;
    size_t nbuckets;    /* power of two */
    size_t size;
    strmap_free_fn free_val;
};

uint64_t strmap_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;             /* FNV-1a 64 */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

strmap *strmap_new(strmap_free_fn free_val)
{
    strmap *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->nbuckets = 16;
    m->buckets = calloc(m->nbuckets, sizeof *m->buckets);
    if (!m->buckets) {
        free(m);
        return NULL;
    }
    m->free_val = free_val;
    return m;
}

void strmap_destroy(strmap **pm)
{
    if (!pm || !*pm)
        return;
    strmap *m = *pm;
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
    *pm = NULL;
}

size_t strmap_size(const strmap *m) { return m->size; }

static node **find_slot(const strmap *m, const char *key, uint64_t h)
{
    node **pp = &m->buckets[h & (m->nbuckets - 1)];
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->hash == h && strcmp((*pp)->key, key) == 0)
            return pp;
    return pp;
}

void *strmap_get(const strmap *m, const char *key)
{
    node *n = *find_slot(m, key, strmap_hash(key));
    return n ? n->val : NULL;
}

bool strmap_has(const strmap *m, const char *key)
{
    return *find_slot(m, key, strmap_hash(key)) != NULL;
}

const char *strmap_key(const strmap *m, const char *key)
{
    node *n = *find_slot(m, key, strmap_hash(key));
    return n ? n->key : NULL;
}

/* Doubles the table; on allocation failure the map simply stays denser. */
static void grow(strmap *m)
{
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

gd_err strmap_put(strmap *m, const char *key, void *val)
{
    uint64_t h = strmap_hash(key);
    node **pp = find_slot(m, key, h);
    if (*pp) {
        if (m->free_val && (*pp)->val && (*pp)->val != val)
            m->free_val((*pp)->val);
        (*pp)->val = val;
        return GD_OK;
    }
    size_t klen = strlen(key);
    node *n = malloc(sizeof *n + klen + 1);
    if (!n)
        return GD_ERR_NOMEM;
    memcpy(n->key, key, klen + 1);
    n->hash = h;
    n->val = val;
    n->next = NULL;
    *pp = n;
    if (++m->size > m->nbuckets)
        grow(m);
    return GD_OK;
}

void *strmap_take(strmap *m, const char *key)
{
    node **pp = find_slot(m, key, strmap_hash(key));
    node *n = *pp;
    if (!n)
        return NULL;
    *pp = n->next;
    void *v = n->val;
    free(n);
    m->size--;
    return v;
}

bool strmap_del(strmap *m, const char *key)
{
    node **pp = find_slot(m, key, strmap_hash(key));
    node *n = *pp;
    if (!n)
        return false;
    *pp = n->next;
    if (m->free_val && n->val)
        m->free_val(n->val);
    free(n);
    m->size--;
    return true;
}

int strmap_each(const strmap *m, strmap_each_fn fn, void *ud)
{
    for (size_t i = 0; i < m->nbuckets; i++)
        for (node *n = m->buckets[i]; n; n = n->next) {
            int r = fn(ud, n->key, n->val);
            if (r)
                return r;
        }
    return 0;
}
