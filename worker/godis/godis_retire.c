/* godis_retire.c — see godis_retire.h. */
#include "godis_retire.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "godis_children.h"
#include "godis_client.h"
#include "godis_write.h"
#include "gd_json.h"
#include "gd_log.h"
#include "gd_time.h"

/* metadata.<name> of obj as an object (or array), made so when absent or of another type. */
static cJSON *meta_member(cJSON *obj, const char *name, bool array)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    cJSON *m = cJSON_GetObjectItemCaseSensitive(meta, name);
    if (array ? cJSON_IsArray(m) : cJSON_IsObject(m)) return m;
    cJSON_DeleteItemFromObjectCaseSensitive(meta, name);
    return array ? cJSON_AddArrayToObject(meta, name) : cJSON_AddObjectToObject(meta, name);
}

static void set_annotation(cJSON *obj, const char *key, const char *value)
{
    cJSON *ann = meta_member(obj, "annotations", false);
    cJSON_DeleteItemFromObjectCaseSensitive(ann, key);
    cJSON_AddStringToObject(ann, key, value);
}

static bool node_ready(godis_env *e, const char *node_name)
{
    if (!node_name || !*node_name) return true;        /* not scheduled: nothing runs */
    const cJSON *node = e->get(e, "Node", "", node_name);
    bool ready = node == NULL;                          /* unknown node: treat as ours to wait for */
    const cJSON *c;
    cJSON_ArrayForEach(c, gd_json_path(node, "status.conditions"))
        if (strcmp(gd_json_str_or(c, "type", ""), "Ready") == 0)
            ready = strcmp(gd_json_str_or(c, "status", ""), "True") == 0;
    godis_drop(node);
    return ready;
}

/* One `hello` to each address of the member (pod IP, then Service name: where the
 * operator's forget would go), each bounded by GODIS_PROBE_EACH_MS and what is left of the
 * budget; true at the first that answers. */
static bool member_answers(godis_env *e, const char *ns, const char *godis, const char *ip,
                           int64_t deadline)
{
    char hosts[2][GODIS_HOST_MAX];
    int n = godis_member_hosts(ip, godis, ns, e->cluster_domain, hosts);
    for (int i = 0; i < n; i++) {
        int64_t left = deadline - gd_mono_ms();
        if (left <= 0) return false;
        int ms = left < GODIS_PROBE_EACH_MS ? (int)left : GODIS_PROBE_EACH_MS;
        godis_opts o = {.connect_timeout_ms = ms, .reply_timeout_ms = ms};
        godis_client *gc = godis_client_new(hosts[i], e->godis_port, &o);
        bool ok = gc && godis_hello(gc, NULL) == GD_OK;
        godis_client_destroy(&gc);
        if (ok) return true;
    }
    return false;
}

int godis_probe_survivors(godis_env *e, const char *ns, const char *cluster, godis_view *v,
                          const char (*pod_ip)[64], int64_t victim)
{
    int64_t deadline = gd_mono_ms() + GODIS_PROBE_BUDGET_MS;
    int silent = 0;
    for (int i = 0; i < v->nobserved; i++) {
        godis_member *m = &v->observed[i];
        bool member = false;
        for (int j = 0; j < v->nmembers; j++) member |= v->members[j] == m->id;
        if (!member || m->id == victim || !m->godis_exists || !m->ready) continue;
        char godis[300], id[24];
        snprintf(godis, sizeof godis, "%s-%lld", cluster, (long long)m->id);
        if (member_answers(e, ns, godis, pod_ip[i], deadline)) continue;
        m->silent = true;
        silent++;
        snprintf(id, sizeof id, "%lld", (long long)m->id);
        gd_log(GD_LOG_WARN, "member Ready but not answering: not counted for a stop first",
               "cluster", cluster, "namespace", ns, "id", id, NULL);
    }
    return silent;
}

static gd_err scale_to_zero(godis_env *e, const char *ns, const char *godis)
{
    const cJSON *rs = e->get(e, "ReplicaSet", ns, godis);
    if (!rs) return GD_OK;
    gd_err err = GD_OK;
    bool retired = gd_meta_annotation(rs, GODIS_ANN_RETIRED) != NULL;
    if (gd_json_int_or(rs, "spec.replicas", 1) != 0 || !retired) {
        cJSON *upd = cJSON_Duplicate(rs, 1);     /* rs is the cache's */
        if (!upd) {
            godis_drop(rs);
            return GD_ERR_NOMEM;
        }
        set_annotation(upd, GODIS_ANN_RETIRED, "true");
        gd_json_set(upd, "spec.replicas", cJSON_CreateNumber(0));
        err = gw_update(e, &K8S_RES_REPLICASETS, upd);
        cJSON_Delete(upd);
    }
    godis_drop(rs);
    return err;
}

gd_err godis_stop_member(godis_env *e, const char *ns, const char *godis)
{
    gd_err err = scale_to_zero(e, ns, godis);
    if (err) return err;
    const cJSON *pods = e->list(e, "Pod", ns, "node-name", godis);
    const cJSON *p;
    cJSON_ArrayForEach(p, pods) {
        if (gd_meta_deleting(p) && node_ready(e, gd_json_str_or(p, "spec.nodeName", NULL)))
            continue;
        long grace = node_ready(e, gd_json_str_or(p, "spec.nodeName", NULL)) ? -1 : 0;
        gd_err e2 = gw_delete_grace(e, &K8S_RES_PODS, ns, gd_meta_name(p), gd_meta_uid(p), grace);
        if (e2 && !err) err = e2;
    }
    godis_drop(pods);
    return err;
}

static struct {
    char uid[64];
    int64_t id;
} memo[GODIS_FORGET_MEMO];
static unsigned memo_next;
static pthread_mutex_t memo_mu = PTHREAD_MUTEX_INITIALIZER;

void godis_forget_memo_note(const char *cluster_uid, int64_t id)
{
    if (!cluster_uid || !*cluster_uid || id <= 0 || godis_forget_memo_has(cluster_uid, id)) return;
    pthread_mutex_lock(&memo_mu);
    unsigned i = memo_next++ % GODIS_FORGET_MEMO;
    snprintf(memo[i].uid, sizeof memo[i].uid, "%s", cluster_uid);
    memo[i].id = id;
    pthread_mutex_unlock(&memo_mu);
}

bool godis_forget_memo_has(const char *cluster_uid, int64_t id)
{
    bool has = false;
    pthread_mutex_lock(&memo_mu);
    for (int i = 0; i < GODIS_FORGET_MEMO && !has && cluster_uid; i++)
        has = memo[i].id == id && id > 0 && strcmp(memo[i].uid, cluster_uid) == 0;
    pthread_mutex_unlock(&memo_mu);
    return has;
}

static gd_err edit_finalizer(godis_env *e, const k8s_resource *r, const cJSON *obj,
                             const char *finalizer, bool add)
{
    if (gd_meta_has_finalizer(obj, finalizer) == add) return GD_OK;
    cJSON *copy = cJSON_Duplicate(obj, 1);
    cJSON *fins = meta_member(copy, "finalizers", true);
    if (add) {
        cJSON_AddItemToArray(fins, cJSON_CreateString(finalizer));
    } else {
        for (int i = cJSON_GetArraySize(fins) - 1; i >= 0; i--) {
            const cJSON *f = cJSON_GetArrayItem(fins, i);
            if (cJSON_IsString(f) && strcmp(f->valuestring, finalizer) == 0)
                cJSON_DeleteItemFromArray(fins, i);
        }
    }
    gd_err err = gw_update(e, r, copy);
    cJSON_Delete(copy);
    return err;
}

gd_err godis_drop_finalizer(godis_env *e, const k8s_resource *r, const cJSON *obj,
                            const char *finalizer)
{
    return edit_finalizer(e, r, obj, finalizer, false);
}

gd_err godis_add_finalizer(godis_env *e, const k8s_resource *r, const cJSON *obj,
                           const char *finalizer)
{
    return edit_finalizer(e, r, obj, finalizer, true);
}

bool godis_retain_volumes(const cJSON *cluster)
{
    return strcmp(gd_json_str_or(cluster, "spec.storage.reclaimPolicy", "Delete"), "Retain") == 0;
}

/* The PVC of godis keeps its data: no owner reference any more (the garbage collector
 * leaves it), and a note of whose it was. */
static gd_err retain_volume(godis_env *e, const cJSON *godis)
{
    const char *ns = gd_meta_namespace(godis), *name = gd_meta_name(godis);
    char claim[300];
    snprintf(claim, sizeof claim, "data-%s", name);
    const cJSON *pvc = e->get(e, "PersistentVolumeClaim", ns, claim);
    if (!pvc || gd_meta_deleting(pvc) || !gd_json_path(pvc, "metadata.ownerReferences")) {
        godis_drop(pvc);
        return GD_OK;
    }
    cJSON *upd = cJSON_Duplicate(pvc, 1);       /* pvc is the cache's */
    godis_drop(pvc);
    if (!upd) return GD_ERR_NOMEM;
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(upd, "metadata"),
                                            "ownerReferences");
    char from[400];
    snprintf(from, sizeof from, "%s/%s", name, gd_meta_uid(godis));
    set_annotation(upd, GODIS_ANN_RETAINED_FROM, from);
    gd_err err = gw_update(e, &K8S_RES_PVCS, upd);
    cJSON_Delete(upd);
    return err;
}

gd_err godis_remove_godis(godis_env *e, const cJSON *godis, bool retain)
{
    gd_err err = retain ? retain_volume(e, godis) : GD_OK;
    if (!err) err = godis_drop_finalizer(e, &K8S_RES_GODISES, godis, GODIS_FINALIZER);
    if (!err && !gd_meta_deleting(godis))
        err = gw_delete(e, &K8S_RES_GODISES, gd_meta_namespace(godis), gd_meta_name(godis),
                        gd_meta_uid(godis));
    return err;
}

godis_result godis_release_cluster(godis_env *e, const cJSON *cluster)
{
    bool retain = godis_retain_volumes(cluster);
    const char *ns = gd_meta_namespace(cluster);
    const cJSON *godises = e->list(e, "Godis", ns, "cluster-name", gd_meta_name(cluster));
    gd_err err = GD_OK;
    const cJSON *g;
    cJSON_ArrayForEach(g, godises) {
        if (!gd_meta_owned_by(g, "GodisCluster", gd_meta_uid(cluster))) continue;
        if (retain && !err) err = retain_volume(e, g);
        if (!err) err = godis_drop_finalizer(e, &K8S_RES_GODISES, g, GODIS_FINALIZER);
    }
    godis_drop(godises);
    if (!err) err = godis_drop_finalizer(e, &K8S_RES_GODISCLUSTERS, cluster, GODIS_CLUSTER_FINALIZER);
    return err ? gw_result(err) : (godis_result){.kind = GODIS_DONE};
}

godis_result godis_release_orphans(godis_env *e, const char *ns, const char *name)
{
    const cJSON *godises = e->list(e, "Godis", ns, "cluster-name", name);
    gd_err err = GD_OK;
    const cJSON *g;
    cJSON_ArrayForEach(g, godises) {
        const cJSON *owner = gd_meta_controller_owner(g);
        if (!gd_meta_deleting(g) || !owner || strcmp(gd_json_str_or(owner, "kind", ""), "GodisCluster") != 0 ||
            strcmp(gd_json_str_or(owner, "name", ""), name) != 0)
            continue;
        gd_err e2 = godis_drop_finalizer(e, &K8S_RES_GODISES, g, GODIS_FINALIZER);
        if (e2 && !err) err = e2;
    }
    godis_drop(godises);
    return err ? gw_result(err) : (godis_result){.kind = GODIS_DONE};
}
