/* gd_sub_store.c — the default replica store of a gd_sub (gd_sub_store): a map key → record
 * and object behind a read-write lock, for owners that keep no store of their own (the
 * informer tests, gdi tools). The worker's is its cache (worker/runtime/cache_sub.c). */
#include <pthread.h>
#include <stdlib.h>
#include "gd_sub_internal.h"

typedef struct {
    gd_sub_rec rec;
    cJSON *obj;
} entry;

typedef struct {
    pthread_rwlock_t lock;
    gd_map *map;
} map_store;

static void entry_free(void *v)
{
    entry *e = v;
    if (!e)
        return;
    cJSON_Delete(e->obj);
    free(e);
}

static bool ms_get(void *ud, const char *key, gd_sub_rec *rec)
{
    map_store *m = ud;
    pthread_rwlock_rdlock(&m->lock);
    const entry *e = gd_map_get(m->map, key);
    if (e)
        *rec = e->rec;
    pthread_rwlock_unlock(&m->lock);
    return e != NULL;
}

static gd_err ms_put(void *ud, const char *key, const gd_sub_rec *rec, cJSON **obj, cJSON **old)
{
    map_store *m = ud;
    *old = NULL;
    entry *e = calloc(1, sizeof *e);
    if (!e)
        return GD_ERR_NOMEM;
    e->rec = *rec;
    e->obj = *obj;
    void *prev = NULL;
    pthread_rwlock_wrlock(&m->lock);
    gd_err err = gd_map_put(m->map, key, e, &prev);
    pthread_rwlock_unlock(&m->lock);
    if (err != GD_OK) {
        free(e);                     /* the object stays the caller's */
        return err;
    }
    *obj = NULL;
    if (prev) {
        *old = ((entry *)prev)->obj;
        free(prev);
    }
    return GD_OK;
}

static bool ms_take(void *ud, const char *key, cJSON **old, gd_sub_rec *rec)
{
    map_store *m = ud;
    pthread_rwlock_wrlock(&m->lock);
    entry *e = gd_map_take(m->map, key);
    pthread_rwlock_unlock(&m->lock);
    *old = NULL;
    if (!e)
        return false;
    *old = e->obj;
    *rec = e->rec;
    free(e);
    return true;
}

static void ms_each(void *ud, void (*fn)(void *fud, const char *key, const gd_sub_rec *rec),
                    void *fud)
{
    map_store *m = ud;
    gd_map_iter it;
    const char *key;
    void *val;
    pthread_rwlock_rdlock(&m->lock);
    gd_map_iter_init(&it, m->map);
    while (gd_map_next(&it, &key, &val))
        fn(fud, key, &((entry *)val)->rec);
    pthread_rwlock_unlock(&m->lock);
}

static void ms_drop(void *ud, const int *shards, int n)
{
    map_store *m = ud;
    bool drop[NTOPICS] = {false};
    for (int i = 0; i < n; i++)
        drop[topic_index(shards[i])] = true;
    gd_map_iter it;
    void *val;
    pthread_rwlock_wrlock(&m->lock);
    gd_map_iter_init(&it, m->map);
    while (gd_map_next(&it, NULL, &val))
        if (drop[topic_index(((entry *)val)->rec.shard)])
            entry_free(gd_map_iter_take(&it));
    pthread_rwlock_unlock(&m->lock);
}

static cJSON *ms_copy(void *ud, const char *key)
{
    map_store *m = ud;
    pthread_rwlock_rdlock(&m->lock);
    const entry *e = gd_map_get(m->map, key);
    cJSON *copy = e ? cJSON_Duplicate(e->obj, 1) : NULL;
    pthread_rwlock_unlock(&m->lock);
    return copy;
}

static const cJSON *ms_restamp(void *ud, const char *key, const gd_sub_rec *rec)
{
    map_store *m = ud;
    pthread_rwlock_wrlock(&m->lock);
    entry *e = gd_map_get(m->map, key);
    if (e)
        e->rec = *rec;
    pthread_rwlock_unlock(&m->lock);
    return e ? e->obj : NULL;
}

static size_t ms_count(void *ud)
{
    map_store *m = ud;
    pthread_rwlock_rdlock(&m->lock);
    size_t n = gd_map_count(m->map);
    pthread_rwlock_unlock(&m->lock);
    return n;
}

gd_err gd_sub_map_store_new(gd_sub_store *out)
{
    map_store *m = calloc(1, sizeof *m);
    if (!m || !(m->map = gd_map_new(entry_free))) {
        free(m);
        return GD_ERR_NOMEM;
    }
    pthread_rwlock_init(&m->lock, NULL);
    *out = (gd_sub_store){.ud = m, .get = ms_get, .put = ms_put, .take = ms_take,
                          .each = ms_each, .drop = ms_drop, .copy = ms_copy,
                          .restamp = ms_restamp, .count = ms_count};
    return GD_OK;
}

void gd_sub_map_store_free(gd_sub_store *st)
{
    map_store *m = st ? st->ud : NULL;
    if (!m)
        return;
    gd_map_destroy(&m->map);
    pthread_rwlock_destroy(&m->lock);
    free(m);
    st->ud = NULL;
}
