/* godis_slots.c — see godis_slots.h. */
#include "godis_slots.h"
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include "gd_json.h"
#include "gd_map.h"

static pthread_mutex_t slots_mu = PTHREAD_MUTEX_INITIALIZER;
static gd_map *slots_reserved;        /* key -> (intptr_t) the count pass that last saw it cached */
static gd_map *slots_waiting;         /* key -> (void *)1 */
static intptr_t slots_pass;

typedef struct {
    const char *self;
    bool holding;
    int before, others;
} slot_count_ctx;

static int slot_count_holder(void *ud, const char *key, const cJSON *obj)
{
    slot_count_ctx *c = ud;
    bool mine = gd_map_has(slots_reserved, key);
    if (mine)
        gd_map_put(slots_reserved, key, (void *)slots_pass, NULL);     /* still ours to count */
    if (!strcmp(key, c->self))
        return 0;
    bool paused = false;
    gd_json_bool(obj, "spec.paused", &paused);
    bool holds = mine || (cJSON_IsObject(gd_json_path(obj, "status.rollout")) && !paused &&
                          !gd_meta_deleting(obj));
    if (holds) {
        c->others++;
        c->before += strcmp(key, c->self) < 0;
    }
    return 0;
}

/* A reservation whose cluster left the cache (deleted, or its shard moved away) is not ours
 * to count any more. */
static void slot_prune_unseen(const char *self)
{
    gd_map_iter it;
    gd_map_iter_init(&it, slots_reserved);
    const char *key;
    void *val;
    while (gd_map_next(&it, &key, &val))
        if ((intptr_t)val != slots_pass && strcmp(key, self))
            gd_map_iter_take(&it);
}

bool godis_slot_may_roll(godis_env *e, const char *key, bool holding, int *holders)
{
    if (holders)
        *holders = 0;
    int limit = e->max_concurrent_rollouts;
    if (limit <= 0 || !e->each || !key)
        return true;
    pthread_mutex_lock(&slots_mu);
    if (!slots_reserved)
        slots_reserved = gd_map_new(NULL);
    slots_pass = slots_pass % 1000000 + 2;         /* never 1, the value a fresh reservation gets */
    slot_count_ctx c = {.self = key, .holding = holding};
    e->each(e, "GodisCluster", slot_count_holder, &c);
    slot_prune_unseen(key);
    bool ok = holding ? c.before < limit : c.others < limit;
    if (ok && !holding && slots_reserved)
        gd_map_put(slots_reserved, key, (void *)1, NULL);
    pthread_mutex_unlock(&slots_mu);
    if (holders)
        *holders = c.others;
    return ok;
}

void godis_slot_release(const char *key)
{
    pthread_mutex_lock(&slots_mu);
    if (slots_reserved && key)
        gd_map_del(slots_reserved, key);
    pthread_mutex_unlock(&slots_mu);
}

bool godis_slot_note_waiting(const char *key, bool now_waiting)
{
    pthread_mutex_lock(&slots_mu);
    if (!slots_waiting)
        slots_waiting = gd_map_new(NULL);
    bool was = slots_waiting && gd_map_has(slots_waiting, key);
    if (slots_waiting && now_waiting && !was)
        gd_map_put(slots_waiting, key, (void *)1, NULL);
    else if (slots_waiting && !now_waiting && was)
        gd_map_del(slots_waiting, key);
    pthread_mutex_unlock(&slots_mu);
    return now_waiting && !was;
}

void godis_slot_forget(const char *key)
{
    pthread_mutex_lock(&slots_mu);
    if (slots_reserved && key) gd_map_del(slots_reserved, key);
    if (slots_waiting && key) gd_map_del(slots_waiting, key);
    pthread_mutex_unlock(&slots_mu);
}

void godis_slots_reset(void)
{
    pthread_mutex_lock(&slots_mu);
    gd_map_destroy(&slots_reserved);
    gd_map_destroy(&slots_waiting);
    pthread_mutex_unlock(&slots_mu);
}
