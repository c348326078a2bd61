/* cache_sub.c — see cache_sub.h. */
#include "cache_sub.h"
#include <stdio.h>
#include <string.h>

static void to_rec(const cache_stamp *st, gd_sub_rec *rec)
{
    rec->shard = st->shard;
    rec->gseq = st->seq;
    memcpy(rec->rv, st->rv, sizeof rec->rv);
}

static bool cs_get(void *ud, const char *key, gd_sub_rec *rec)
{
    cache_sub *cs = ud;
    cache_stamp st;
    if (!cache_get_stamp(cs->cache, cs->kind, key, &st))
        return false;
    to_rec(&st, rec);
    return true;
}

static gd_err cs_put(void *ud, const char *key, const gd_sub_rec *rec, cJSON **obj, cJSON **old)
{
    cache_sub *cs = ud;
    cache_stamp st = {.shard = rec->shard, .seq = rec->gseq};
    memcpy(st.rv, rec->rv, sizeof st.rv);
    return cache_put_stamped(cs->cache, cs->kind, key, &st, obj, old);
}

static const cJSON *cs_restamp(void *ud, const char *key, const gd_sub_rec *rec)
{
    cache_sub *cs = ud;
    return cache_restamp(cs->cache, cs->kind, key, rec->gseq);
}

static bool cs_take(void *ud, const char *key, cJSON **old, gd_sub_rec *rec)
{
    cache_sub *cs = ud;
    cache_stamp st;
    if (!cache_take(cs->cache, cs->kind, key, old, &st))
        return false;
    to_rec(&st, rec);
    return true;
}

typedef struct {
    void (*fn)(void *fud, const char *key, const gd_sub_rec *rec);
    void *fud;
} walk;

static void each_stamp(void *ud, const char *key, const cache_stamp *st)
{
    walk *w = ud;
    gd_sub_rec rec;
    to_rec(st, &rec);
    w->fn(w->fud, key, &rec);
}

static void cs_each(void *ud, void (*fn)(void *fud, const char *key, const gd_sub_rec *rec),
                    void *fud)
{
    cache_sub *cs = ud;
    walk w = {fn, fud};
    cache_each_stamp(cs->cache, cs->kind, each_stamp, &w);
}

/* A subscriber of shards always follows the broadcast topic, so only shards are dropped
 * here (cache_drop_shards leaves broadcast objects, the Nodes, alone). */
static void cs_drop(void *ud, const int *shards, int n)
{
    cache_sub *cs = ud;
    cache_drop_shards(cs->cache, cs->kind, shards, n);
}

static cJSON *cs_copy(void *ud, const char *key)
{
    cache_sub *cs = ud;
    return cache_get(cs->cache, cs->kind, key);
}

static void cs_release(void *ud, cJSON *old)
{
    cache_sub *cs = ud;
    cache_retire(cs->cache, old);
}

static size_t cs_count(void *ud)
{
    cache_sub *cs = ud;
    return cache_count(cs->cache, cs->kind);
}

void cache_sub_store(cache_sub *cs, cache *c, const char *kind, gd_sub_store *out)
{
    cs->cache = c;
    snprintf(cs->kind, sizeof cs->kind, "%s", kind);
    *out = (gd_sub_store){.ud = cs, .get = cs_get, .put = cs_put, .take = cs_take,
                          .each = cs_each, .drop = cs_drop, .copy = cs_copy, .restamp = cs_restamp,
                          .count = cs_count, .release = cs_release};
}
