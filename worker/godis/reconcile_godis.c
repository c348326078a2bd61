/* reconcile_godis.c — plugs the godis reconcilers (godis_reconcile_*.c) into the worker as
 * the reconciler set "godis": controller "godiscluster" For GodisCluster and controller
 * "godis" For Godis. A godis_env is built per reconcile over the rec_ctx, so reads come
 * from the worker's cache replica, writes are fenced by the lease deadline, and every
 * write is recorded for read-your-own-writes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "godis_children.h"
#include "godis_domain.h"
#include "godis_metrics.h"
#include "godis_pdb.h"
#include "godis_reconcile.h"
#include "reconciler.h"
#include "gd_log.h"

typedef struct {
    int64_t node_notready_grace_ms;
    int godis_timeout_ms;
    int godis_port;
} godis_set_opts;

static const cJSON *env_get(godis_env *e, const char *kind, const char *ns, const char *name)
{
    return rec_cache_get(e->ud, kind, ns, name);
}

static const cJSON *env_list(godis_env *e, const char *kind, const char *ns, const char *key,
                             const char *value)
{
    cJSON *arr = rec_cache_list(e->ud, kind, ns, key, value);
    return arr ? arr : cJSON_CreateArray();
}

static gd_err env_may_write(godis_env *e) { return rec_may_write(e->ud); }

static void env_wrote(godis_env *e, const char *kind, const char *ns, const char *name,
                      const char *rv, bool deleted)
{
    rec_wrote(e->ud, kind, ns, name, rv, deleted);
}

static int env_each(godis_env *e, const char *kind,
                    int (*fn)(void *ud, const char *key, const cJSON *obj), void *ud)
{
    return rec_cache_each(e->ud, kind, fn, ud);
}

static void env_metric(godis_env *e, const char *family, const char *labels, double v, bool add)
{
    if (add) rec_metric_add(e->ud, family, labels, v);
    else rec_metric_set(e->ud, family, labels, v);
}

static void env_metrics_forget(godis_env *e) { rec_metrics_forget(e->ud); }

static void env_init(godis_env *e, rec_ctx *ctx)
{
    const godis_set_opts *o = ctx->ud;
    memset(e, 0, sizeof *e);
    e->client = ctx->env->client;
    e->get = env_get;
    e->list = env_list;
    e->may_write = env_may_write;
    e->wrote = env_wrote;
    e->node_notready_grace_ms = o->node_notready_grace_ms;
    e->godis_timeout_ms = o->godis_timeout_ms;
    e->godis_port = o->godis_port;
    e->cluster_domain = ctx->env->cluster_domain;
    e->each = env_each;
    e->max_concurrent_rollouts = ctx->env->max_concurrent_rollouts;
    e->ud = ctx;
}

static gd_result to_result(godis_result r)
{
    switch (r.kind) {
    case GODIS_DONE: return gd_done();
    case GODIS_REQUEUE:
        /* A step that succeeded is progress, not a failure: the next step follows at once
         * (the read-your-own-writes gate still holds it until the cache shows the write).
         * Only a refused write (Conflict, NotFound) goes through the rate limiter — with
         * it, 100 clusters x ~8 steps queued behind the 10 qps bucket for over a minute. */
        return r.err == GD_OK ? gd_requeue_after(0) : gd_requeue();
    case GODIS_REQUEUE_AFTER: return gd_requeue_after(r.after_ms);
    default: return gd_error(r.err ? r.err : GD_ERR_UNEXPECTED);
    }
}

static gd_result reconcile_cluster(rec_ctx *ctx, const char *key)
{
    godis_env e;
    env_init(&e, ctx);
    e.metric = env_metric;              /* the series are the cluster controller's keys */
    e.metrics_forget = env_metrics_forget;
    e.cluster_read = godis_ensure_pdb_of;
    return to_result(godis_reconcile_cluster(&e, key));
}

static gd_result reconcile_member(rec_ctx *ctx, const char *key)
{
    godis_env e;
    env_init(&e, ctx);
    return to_result(godis_reconcile_godis(&e, key));
}

/* --reconciler-arg "node-grace-ms=40000,godis-timeout-ms=5000,godis-port=6379" */
static gd_err set_init(gd_worker_env *env, const char *arg, void **ud)
{
    godis_set_default_image(env ? env->default_image : NULL);
    godis_set_opts *o = calloc(1, sizeof *o);
    if (!o) return GD_ERR_NOMEM;
    o->node_notready_grace_ms = 40000;    /* the node lifecycle controller's default grace */
    o->godis_timeout_ms = 5000;
    o->godis_port = 6379;
    char *copy = arg ? strdup(arg) : NULL, *save = NULL;
    for (char *kv = copy ? strtok_r(copy, ",", &save) : NULL; kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        long long v = eq ? strtoll(eq + 1, NULL, 10) : -1;
        if (eq) *eq = '\0';
        if (v < 0) goto bad;
        if (!strcmp(kv, "node-grace-ms")) o->node_notready_grace_ms = v;
        else if (!strcmp(kv, "godis-timeout-ms") && v > 0) o->godis_timeout_ms = (int)v;
        else if (!strcmp(kv, "godis-port") && v > 0 && v < 65536) o->godis_port = (int)v;
        else goto bad;
    }
    free(copy);
    *ud = o;
    return GD_OK;
bad:
    gd_log(GD_LOG_ERROR, "bad --reconciler-arg for godis (want node-grace-ms=N,godis-timeout-ms=N,godis-port=N)",
           "arg", arg, NULL);
    free(copy);
    free(o);
    return GD_ERR_CONFIG;
}

static void set_fini(void *ud) { free(ud); }

static const gd_key_metric godis_key_metrics[] = {
    {GODIS_M_MEMBERS, "gauge", "Raft members of the GodisCluster (status.members)"},
    {GODIS_M_READY, "gauge", "Members of the GodisCluster whose pod is Ready"},
    {GODIS_M_UPDATED, "gauge", "Members of the GodisCluster on the pod template its spec renders"},
    {GODIS_M_QUORUM, "gauge", "1 while a majority of the GodisCluster's members is Ready, else 0"},
    {GODIS_M_ROLLOUT, "gauge", "1 while a rollout replaces the GodisCluster's members (from its first member until every member is on the new template), else 0"},
    {GODIS_M_CHANGES, "counter", "Membership changes of the GodisCluster made by this worker: add (cluster meet), remove (cluster forget), replace (a member's pod replaced by a rollout, same id)"},
    {NULL, NULL, NULL},
};

static gd_reconciler_set godis_set = {
    .name = "godis",
    .help = "the GodisCluster and Godis controllers (production)",
    .needs_api = true,
    .ncontrollers = 2,
    .controllers = {
        {.controller = GODIS_CTRL_CLUSTER, .for_kind = "GodisCluster", .reconcile = reconcile_cluster},
        {.controller = GODIS_CTRL_MEMBER, .for_kind = "Godis", .reconcile = reconcile_member},
    },
    .init = set_init,
    .fini = set_fini,
    .key_metrics = godis_key_metrics,
};
GD_RECONCILER_SET(godis_set)
