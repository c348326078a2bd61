/* godis_reconcile_godis.c — the Godis controller: keeps a Godis's Service, PVC and
 * ReplicaSet present and as specified (DESIGN.md §1), and reports status.state from its pod.
 * It never touches membership: that is the GodisCluster controller's job. */
#include "godis_reconcile.h"
#include <stdio.h>
#include <string.h>
#include "godis_children.h"
#include "godis_write.h"
#include "gd_json.h"
#include "gd_log.h"

typedef struct {
    godis_env *e;
    cJSON *godis, *cluster;
    godis_child_spec spec;
} godis_ctx;

/* Creates a missing child, repairs a drifted one. Returns GD_OK when nothing was written
 * (*wrote false) or the write succeeded. */
static gd_err ensure_child(godis_ctx *g, const k8s_resource *r, cJSON *want, bool *wrote)
{
    cJSON *have = g->e->get(g->e, r->kind, g->spec.ns, gd_meta_name(want));
    gd_err err = GD_OK;
    *wrote = false;
    if (!have) {
        /* No Event for a routine create: it doubled the writes of every new member.
         * Membership changes, adoptions and repairs of drift do get one. */
        bool adopted = false;
        err = gw_create_or_adopt(g->e, r, want, g->godis, &adopted);
        *wrote = true;
        if (adopted) {
            char msg[300];
            snprintf(msg, sizeof msg, "%s %s adopted (made without this operator's labels)",
                     r->kind, gd_meta_name(want));
            godis_emit_event(g->e, g->godis, "Normal", "ChildAdopted", msg);
        }
    } else if (!gd_meta_deleting(have) && godis_child_drifted(r->kind, want, have)) {
        cJSON *fixed = godis_child_repair(r->kind, want, have);
        err = gw_update(g->e, r, fixed);
        *wrote = true;
        cJSON_Delete(fixed);
        if (!err) {
            char msg[300];
            snprintf(msg, sizeof msg, "%s %s drifted from its spec: repaired", r->kind, gd_meta_name(want));
            godis_emit_event(g->e, g->godis, "Warning", "ChildRepaired", msg);
        }
    } else if (gd_meta_deleting(have) && strcmp(r->kind, "PersistentVolumeClaim") == 0) {
        /* A deleted PVC is held by pvc-protection while a pod uses it: delete the member's
         * pod so the claim can go and be recreated (the ReplicaSet brings the pod back). */
        cJSON *pods = g->e->list(g->e, "Pod", g->spec.ns, "node-name", g->spec.godis);
        const cJSON *p;
        cJSON_ArrayForEach(p, pods)
            if (!gd_meta_deleting(p))
                err = gw_delete(g->e, &K8S_RES_PODS, g->spec.ns, gd_meta_name(p), gd_meta_uid(p));
        cJSON_Delete(pods);
        *wrote = true;
    }
    cJSON_Delete(have);
    return err;
}

static const char *pod_state(godis_ctx *g, const char **ip, const char **pod_name, cJSON **pods)
{
    *pods = g->e->list(g->e, "Pod", g->spec.ns, "node-name", g->spec.godis);
    const char *state = "Pending";
    const cJSON *p;
    cJSON_ArrayForEach(p, *pods) {
        if (gd_meta_deleting(p)) continue;
        *ip = gd_json_str_or(p, "status.podIP", "");
        *pod_name = gd_meta_name(p);
        if (strcmp(gd_json_str_or(p, "status.phase", ""), "Failed") == 0) state = "Failed";
        const cJSON *c;
        cJSON_ArrayForEach(c, gd_json_path(p, "status.conditions"))
            if (strcmp(gd_json_str_or(c, "type", ""), "Ready") == 0 &&
                strcmp(gd_json_str_or(c, "status", ""), "True") == 0)
                return "Running";
    }
    return state;
}

static godis_result update_state(godis_ctx *g)
{
    const char *ip = "", *pod_name = "";
    cJSON *pods = NULL;
    const char *state = pod_state(g, &ip, &pod_name, &pods);
    godis_result r = {.kind = GODIS_DONE};
    /* Written on a change of state, and of pod IP only while Running (clients dial it).
     * A Pending member's pod gets its name and then its IP within a second or two; writing
     * each of those cost ~0.7 extra status writes per Godis (100 x 3 converge: 2.67 -> 2),
     * all landing while the API server is busiest. The next state change carries them. */
    bool running = strcmp(state, "Running") == 0;
    if (strcmp(gd_json_str_or(g->godis, "status.state", ""), state) != 0 ||
        (running && strcmp(gd_json_str_or(g->godis, "status.podIP", ""), ip) != 0)) {
        cJSON *obj = cJSON_Duplicate(g->godis, 1);
        gd_json_set(obj, "status.state", cJSON_CreateString(state));
        /* Empty strings are left out: the API server built here (Go 1.19, Debian's
         * reflect2) decodes "" in a custom resource as null and then fails the schema. */
        cJSON *st = cJSON_GetObjectItemCaseSensitive(obj, "status");
        cJSON_DeleteItemFromObjectCaseSensitive(st, "podIP");
        cJSON_DeleteItemFromObjectCaseSensitive(st, "podName");
        if (*ip) cJSON_AddStringToObject(st, "podIP", ip);
        if (*pod_name) cJSON_AddStringToObject(st, "podName", pod_name);
        gd_json_set(obj, "status.observedGeneration", cJSON_CreateNumber((double)gd_meta_generation(g->godis)));
        gd_err err = gw_update_status(g->e, &K8S_RES_GODISES, obj);
        cJSON_Delete(obj);
        if (err) r = gw_result(err);
    }
    cJSON_Delete(pods);
    return r;
}

/* The label the cluster controller lists its members by (and the cache indexes): Godis
 * objects made without it (seed 000's controller) or with it edited get it back. */
static godis_result label_godis(godis_ctx *g, const char *cluster)
{
    cJSON *fixed = cJSON_Duplicate(g->godis, 1);
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(fixed, "metadata");
    cJSON *labels = cJSON_GetObjectItemCaseSensitive(meta, "labels");
    if (!cJSON_IsObject(labels)) {
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "labels");
        labels = cJSON_AddObjectToObject(meta, "labels");
    }
    cJSON_DeleteItemFromObjectCaseSensitive(labels, "cluster-name");
    cJSON_AddStringToObject(labels, "cluster-name", cluster);
    gd_err err = gw_update(g->e, &K8S_RES_GODISES, fixed);
    cJSON_Delete(fixed);
    if (!err)
        gd_log(GD_LOG_INFO, "Godis labelled cluster-name", "godis", gd_meta_name(g->godis),
               "cluster", cluster, NULL);
    return gw_result(err);
}

static godis_result reconcile_godis_ctx(godis_ctx *g)
{
    cJSON *(*build[3])(const godis_child_spec *) = {godis_build_service, godis_build_pvc,
                                                    godis_build_replicaset};
    const k8s_resource *res[3] = {&K8S_RES_SERVICES, &K8S_RES_PVCS, &K8S_RES_REPLICASETS};
    bool any = false;
    for (int i = 0; i < 3; i++) {
        cJSON *want = build[i](&g->spec);
        bool wrote = false;
        gd_err err = ensure_child(g, res[i], want, &wrote);
        cJSON_Delete(want);
        if (err) return gw_result(err);
        any |= wrote;
    }
    if (any) return (godis_result){.kind = GODIS_REQUEUE};
    return update_state(g);
}

godis_result godis_reconcile_godis(godis_env *e, const char *key)
{
    char ns[256], name[256];
    const char *slash = strchr(key, '/');
    if (!slash || slash - key >= (int)sizeof ns || strlen(slash + 1) >= sizeof name)
        return (godis_result){.kind = GODIS_DONE};
    snprintf(ns, sizeof ns, "%.*s", (int)(slash - key), key);
    snprintf(name, sizeof name, "%s", slash + 1);
    godis_ctx g = {.e = e};
    g.godis = e->get(e, "Godis", ns, name);
    godis_result r = {.kind = GODIS_DONE};
    if (!g.godis || gd_meta_deleting(g.godis)) goto out;
    const cJSON *owner = gd_meta_controller_owner(g.godis);
    if (!owner || strcmp(gd_json_str_or(owner, "kind", ""), "GodisCluster") != 0)
        goto out;                                  /* not one of ours: leave it alone */
    const char *cluster = gd_json_str_or(owner, "name", "");
    g.cluster = e->get(e, "GodisCluster", ns, cluster);
    if (!g.cluster || gd_meta_deleting(g.cluster)) goto out;   /* GC removes us */
    if (strcmp(gd_meta_uid(g.cluster), gd_json_str_or(owner, "uid", "")) != 0)
        goto out;             /* owned by an earlier cluster of that name: GC removes it */
    const char *label = gd_meta_label(g.godis, "cluster-name");
    if (!label || strcmp(label, cluster) != 0) {
        r = label_godis(&g, cluster);              /* adopted: the Go controller's, or edited */
        goto out;
    }
    int64_t id = godis_id_from_name(cluster, name);
    if (id <= 0) {
        gd_log(GD_LOG_WARN, "Godis name does not end in a member id: ignored", "godis", name, NULL);
        goto out;
    }
    bool preferred = false;
    gd_json_bool(g.godis, "spec.preferred", &preferred);
    g.spec = (godis_child_spec){
        .ns = ns, .cluster = cluster, .godis = name, .godis_uid = gd_meta_uid(g.godis),
        .id = id, .preferred = preferred,
        .image = gd_json_str_or(g.cluster, "spec.image", NULL),
        .storage_size = gd_json_str_or(g.cluster, "spec.storage.size", NULL),
        .storage_class = gd_json_str_or(g.cluster, "spec.storage.storageClassName", NULL),
        .resources = gd_json_path(g.cluster, "spec.resources"),
        .anti_affinity = gd_json_str_or(g.cluster, "spec.antiAffinity", NULL)};
    r = reconcile_godis_ctx(&g);
out:
    cJSON_Delete(g.godis);
    cJSON_Delete(g.cluster);
    return r;
}
