/* godis_env_api.c — a godis_env that reads straight from the API server instead of a cache.
 * Used by the reconciler integration tests to check the reconcilers on their own, and as a
 * reference: the cache-backed env must behave the same way. */
#include "godis_env_api.h"
#include <stdio.h>
#include <string.h>
#include "gd_json.h"

static const cJSON *api_get(godis_env *e, const char *kind, const char *ns, const char *name)
{
    const k8s_resource *r = k8s_resource_lookup(kind);
    if (!r) return NULL;
    cJSON *out = NULL;
    if (k8s_get(e->client, r, r->namespaced ? ns : NULL, name, &out, NULL) != GD_OK) return NULL;
    return out;
}

static const cJSON *api_list(godis_env *e, const char *kind, const char *ns, const char *key,
                       const char *value)
{
    const k8s_resource *r = k8s_resource_lookup(kind);
    char sel[512];
    snprintf(sel, sizeof sel, "%s=%s", key ? key : "", value ? value : "");
    k8s_list_opts o = {.label_selector = key ? sel : NULL};   /* no key: every object of ns */
    cJSON *list = NULL;
    if (!r || k8s_list(e->client, r, ns, &o, &list, NULL) != GD_OK) return cJSON_CreateArray();
    cJSON *items = cJSON_DetachItemFromObjectCaseSensitive(list, "items");
    cJSON_Delete(list);
    return cJSON_IsArray(items) ? items : (cJSON_Delete(items), cJSON_CreateArray());
}

void godis_env_api_init(godis_env *e, k8s_client *client)
{
    memset(e, 0, sizeof *e);
    e->client = client;
    e->get = api_get;
    e->list = api_list;
    e->node_notready_grace_ms = 40000;
    e->godis_timeout_ms = 5000;
    e->godis_port = 6379;
}
