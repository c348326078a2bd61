/* reconciler.c — the registry of reconciler sets (filled by constructors before main). */
#include "reconciler.h"
#include <stdio.h>
#include <string.h>
#include "cache.h"
#include "gd_json.h"
#include "gd_domain.h"

static gd_reconciler_set *registry;

void gd_reconciler_register(gd_reconciler_set *s)
{
    gd_reconciler_set **pp = &registry;   /* keep registration order: stable --help */
    while (*pp)
        pp = &(*pp)->next;
    s->next = NULL;
    *pp = s;
}

const gd_reconciler_set *gd_reconciler_find(const char *name)
{
    for (const gd_reconciler_set *s = registry; s && name; s = s->next)
        if (strcmp(s->name, name) == 0)
            return s;
    return NULL;
}

const gd_reconciler_set *gd_reconciler_first(void) { return registry; }

/* ---- cache access and write reporting for reconcilers ---- */

/* A handle on a cached object: a reference (it stays the cache's) inside a view section,
 * a deep copy outside one. */
static cJSON *handle(const rec_ctx *ctx, const cJSON *obj)
{
    return ctx->viewing ? cJSON_CreateObjectReference(obj->child) : cJSON_Duplicate(obj, 1);
}

typedef struct {
    const rec_ctx *ctx;
    const char *label_key, *label_value;   /* label_key NULL: every object */
    cJSON *out;
} list_ctx;

static void get_one(void *ud, const cJSON *obj)
{
    list_ctx *l = ud;
    l->out = handle(l->ctx, obj);
}

cJSON *rec_cache_get(rec_ctx *ctx, const char *kind, const char *ns, const char *name)
{
    if (!ctx || !ctx->env || !ctx->env->cache || !kind || !name)
        return NULL;
    char key[512];
    if (!cache_key(key, sizeof key, ns, name))
        return NULL;
    list_ctx l = {.ctx = ctx};
    cache_read(ctx->env->cache, kind, key, get_one, &l);
    return l.out;
}

static int add_if_labelled(void *ud, const char *key, const cJSON *obj)
{
    list_ctx *l = ud;
    const char *v = l->label_key ? gd_meta_label(obj, l->label_key) : NULL;
    if (!l->label_key || (v && l->label_value && strcmp(v, l->label_value) == 0))
        cJSON_AddItemToArray(l->out, handle(l->ctx, obj));
    return 0;
}

cJSON *rec_cache_list(rec_ctx *ctx, const char *kind, const char *ns, const char *label_key,
                      const char *label_value)
{
    cJSON *arr = cJSON_CreateArray();
    if (!arr || !ctx || !ctx->env || !ctx->env->cache || !kind || !ns)
        return arr;
    cache *c = ctx->env->cache;
    /* The two labels reconcilers select on are indexed ("ns/<value>"): a reconcile reads
     * its cluster's or member's few objects, not every object in the namespace (a scan of
     * 300 pods per member per reconcile was the largest share of the worker's own CPU in a
     * 100 x 3 profile: strcmp and cJSON label lookups). */
    const gd_domain *d = gd_domain_get();
    int idx = !label_key || !label_value                ? -1
              : strcmp(label_key, d->cluster_label) == 0 ? CACHE_IDX_CLUSTER
              : strcmp(label_key, d->member_label) == 0  ? CACHE_IDX_MEMBER
                                                         : -1;
    if (idx >= 0) {
        char v[512];
        if ((size_t)snprintf(v, sizeof v, "%s/%s", ns, label_value) >= sizeof v)
            return arr;
        list_ctx l = {.ctx = ctx, .out = arr};
        cache_each_indexed(c, kind, (cache_index)idx, v, add_if_labelled, &l);
        return arr;
    }
    list_ctx l = {ctx, label_key, label_value, arr};
    if (!*ns)                      /* cluster-scoped (Nodes): not in the namespace index */
        cache_each(c, kind, add_if_labelled, &l);
    else
        cache_each_indexed(c, kind, CACHE_IDX_NAMESPACE, ns, add_if_labelled, &l);
    return arr;
}

int rec_cache_each(rec_ctx *ctx, const char *kind,
                   int (*fn)(void *ud, const char *key, const cJSON *obj), void *ud)
{
    if (!ctx || !ctx->env || !ctx->env->cache || !kind || !fn)
        return 0;
    return cache_each(ctx->env->cache, kind, fn, ud);
}

void rec_wrote(rec_ctx *ctx, const char *kind, const char *ns, const char *name,
               const char *rv, bool deleted)
{
    if (!ctx || !kind || !name)
        return;
    char key[512];
    if (!cache_key(key, sizeof key, ns, name))
        return;
    rec_record_write(ctx, kind, key, rv, deleted);
}
