/* godis_reconcile_godis.c — the Godis controller: keeps a Godis's Service, PVC and
 * ReplicaSet present and as specified (docs/reconcile.md, the resources), and reports status.state from its pod.
 * It never touches membership: that is the GodisCluster controller's job. So it leaves
 * alone what membership decisions depend on:
 *  - a forgotten member (the cluster's scaleInID, no longer in the ConfigMap) and a
 *    ReplicaSet marked retired (a forgotten member's or a stray's, stopped): never
 *    recreated nor scaled up again;
 *  - a lost volume (the PVC deleted, being deleted, or Lost, after the member had one): the
 *    PVC is not recreated — the same id on an empty disk could vote twice — and the loss is
 *    reported in status.volumeLost for the GodisCluster controller to replace the member;
 *  - a PVC by the member's name that is not the member's own (one kept by Retain from an
 *    earlier cluster of the same name): never mounted, the pod is not created.
 * It keeps GODIS_FINALIZER on the Godis, and drops it itself only when the GodisCluster is
 * gone or being deleted (otherwise the GodisCluster controller drops it after the forget). */
#include "godis_reconcile.h"
#include <stdio.h>
#include <string.h>
#include "godis_children.h"
#include "godis_retire.h"
#include "godis_write.h"
#include "gd_json.h"
#include "gd_log.h"

typedef struct {
    godis_env *e;
    const cJSON *godis, *cluster;  /* lent by the cache (godis_drop) */
    godis_child_spec spec;
    bool volume_lost;
    char pvc_uid[64];        /* the member's PVC now ("" when there is none) */
    const cJSON *pvc;        /* and the claim itself (NULL: none, or not read; godis_drop) */
} godis_ctx;

/* The desired ReplicaSet's node pin, as a merge patch of the ReplicaSet. */
static gd_err pin_replicaset(godis_ctx *g, const cJSON *want)
{
    cJSON *patch = cJSON_CreateObject();
    gd_json_set(patch, GODIS_RS_PIN, cJSON_Duplicate(gd_json_path(want, GODIS_RS_PIN), 1));
    gd_err err = gd_json_path(patch, GODIS_RS_PIN) ? gw_merge_patch(g->e, &K8S_RES_REPLICASETS, g->spec.ns,
                                                           gd_meta_name(want), patch)
                                          : GD_ERR_NOMEM;
    cJSON_Delete(patch);
    return err;
}

/* Creates a missing child, repairs a drifted one. have is the child as the cache has it
 * (NULL: none); it is consumed. Returns GD_OK when nothing was written (*wrote false) or
 * the write succeeded. */
static gd_err ensure_child(godis_ctx *g, const k8s_resource *r, cJSON *want, const cJSON *have,
                           bool *wrote)
{
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
    } else if (!gd_meta_deleting(have)) {
        /* A ReplicaSet on another template revision is the rollout's to update (one member
         * at a time); only what is no rollout's business is repaired here. */
        cJSON *fixed = r == &K8S_RES_REPLICASETS ? godis_replicaset_fix(want, have)
                     : godis_child_drifted(r->kind, want, have) ? godis_child_repair(r->kind, want, have)
                     : NULL;
        if (!fixed) goto out;
        bool pin = r == &K8S_RES_REPLICASETS && godis_replicaset_pin_only(want, have);
        /* The pin follows the status write that records the node, while kube-controller-
         * manager rewrites the ReplicaSet's status for the same pod turning Ready: a PUT
         * from the cache conflicted for 89 of 300 members. It only ever adds the node
         * affinity, so a merge patch without a resourceVersion says all of it. */
        err = pin ? pin_replicaset(g, want) : gw_update(g->e, r, fixed);
        *wrote = true;
        cJSON_Delete(fixed);
        /* Pinning a new member to the node its data is on is the plan, not drift: it was an
         * Event per member (300 of ~490 Events of a 100 x 3 converge). */
        if (!err && pin) {
            gd_log(GD_LOG_INFO, "ReplicaSet pinned to its data's node", "replicaset",
                   gd_meta_name(want), "node", g->spec.node ? g->spec.node : "", NULL);
        } else if (!err) {
            char msg[300];
            snprintf(msg, sizeof msg, "%s %s drifted from its spec: repaired", r->kind, gd_meta_name(want));
            godis_emit_event(g->e, g->godis, "Warning", "ChildRepaired", msg);
        }
    }
out:
    godis_drop(have);
    return err;
}

/* The member's PVC as the API server has it now (the cache may lag between kinds). */
static cJSON *pvc_from_api(godis_ctx *g, const char *claim)
{
    cJSON *pvc = NULL;
    if (k8s_get(g->e->client, &K8S_RES_PVCS, g->spec.ns, claim, &pvc, NULL) != GD_OK) return NULL;
    return pvc;
}

typedef enum { VOL_OK, VOL_MISSING_NEW, VOL_LOST, VOL_NOT_OURS } vol_state;

/* The member had its volume once it ran on it: status.volumeClaimUID records the PVC then.
 * From there on, that PVC missing (as the API server says, not just the cache, which may lag
 * between kinds), replaced by another, being deleted or Lost means the member's data is
 * gone. Before, a missing PVC is simply created. The claim read is kept in g->pvc (the pin
 * decision reads it too). */
static vol_state volume_state(godis_ctx *g, char *uid, size_t cap)
{
    char claim[300];
    snprintf(claim, sizeof claim, "data-%s", g->spec.godis);
    const char *had = gd_json_str_or(g->godis, "status.volumeClaimUID", "");
    const cJSON *pvc = g->e->get(g->e, "PersistentVolumeClaim", g->spec.ns, claim);
    if (!pvc && *had) pvc = pvc_from_api(g, claim);
    snprintf(uid, cap, "%s", pvc ? gd_meta_uid(pvc) : "");
    vol_state st = VOL_OK;
    if (!pvc)
        st = *had ? VOL_LOST : VOL_MISSING_NEW;
    else if (gd_meta_deleting(pvc) || strcmp(gd_json_str_or(pvc, "status.phase", ""), "Lost") == 0 ||
             (*had && strcmp(had, uid) != 0))
        st = VOL_LOST;
    else if (!gd_meta_owned_by(pvc, "Godis", g->spec.godis_uid))
        st = VOL_NOT_OURS;
    g->pvc = pvc;
    return st;
}

/* Whether this member was forgotten: it is the cluster's scaleInID and the ConfigMap (the
 * record of a confirmed forget) no longer lists it. Until then its children are kept as
 * usual: a victim that must still vote for its own removal (2 -> 1) has to run. Only
 * scaleInID: a member missing from status.members may just be newer than this worker's
 * copy of the cluster (the Godis and GodisCluster caches are fed by different informers);
 * a stray's ReplicaSet, once stopped, is marked retired (GODIS_ANN_RETIRED). A missing ConfigMap
 * counts as not listing it: the children are then only left as they are (nothing here
 * deletes), and the retired mark keeps a stopped member stopped whatever this says. */
static bool forgotten(godis_ctx *g)
{
    if (gd_json_int_or(g->cluster, "status.scaleInID", 0) != g->spec.id) return false;
    char cm_name[300];
    snprintf(cm_name, sizeof cm_name, "%s-config", g->spec.cluster);
    const cJSON *cm = g->e->get(g->e, "ConfigMap", g->spec.ns, cm_name);
    int64_t ids[64];
    int n = godis_parse_initial_cluster(gd_json_str_or(cm, "data.initial-cluster", NULL), ids, 64);
    godis_drop(cm);
    for (int i = 0; i < n; i++)
        if (ids[i] == g->spec.id) return false;
    return true;
}

static const char *pod_state(godis_ctx *g, const char **ip, const char **pod_name,
                             const char **node, const cJSON **pods)
{
    *pods = g->e->list(g->e, "Pod", g->spec.ns, "node-name", g->spec.godis);
    const char *state = "Pending";
    const cJSON *p;
    cJSON_ArrayForEach(p, *pods) {
        if (gd_meta_deleting(p)) continue;
        *ip = gd_json_str_or(p, "status.podIP", "");
        *pod_name = gd_meta_name(p);
        *node = gd_json_str_or(p, "spec.nodeName", "");
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
    const char *ip = "", *pod_name = "", *node = "";
    const cJSON *pods = NULL;
    const char *state = pod_state(g, &ip, &pod_name, &node, &pods);
    godis_result r = {.kind = GODIS_DONE};
    /* Written on a change of state, and of pod IP only while Running (clients dial it).
     * A Pending member's pod gets its name and then its IP within a second or two; writing
     * each of those cost ~0.7 extra status writes per Godis (100 x 3 converge: 2.67 -> 2),
     * all landing while the API server is busiest. The next state change carries them. */
    bool running = strcmp(state, "Running") == 0;
    bool was_lost = false;
    gd_json_bool(g->godis, "status.volumeLost", &was_lost);
    /* The volume is recorded with the write that says Running (it ran on it), or once for a
     * member that ran before this field existed. */
    bool record_volume = running && *g->pvc_uid && !g->volume_lost &&
                         !*gd_json_str_or(g->godis, "status.volumeClaimUID", "");
    /* The node it ran on holds that volume's data: its pods are pinned there from now on
     * (godis_build_replicaset; by its PV alone where that names the node, godis_pin_node),
     * and migration reads it (godis_cluster_observe.c). Recorded with the volume, or once
     * for a member that ran before this field existed (its running pod is on the node its
     * data is on). */
    bool record_node = running && *node && !g->volume_lost &&
                       (record_volume || *gd_json_str_or(g->godis, "status.volumeClaimUID", "")) &&
                       !*gd_json_str_or(g->godis, "status.volumeNode", "");
    /* No state yet reads as Pending: writing it was one status write per member of every
     * new cluster (3 of ~40 requests per cluster of a 100 x 3 converge) that nothing reads. */
    const char *had_state = gd_json_str_or(g->godis, "status.state", "");
    bool state_changed = strcmp(*had_state ? had_state : "Pending", state) != 0;
    if (state_changed ||
        (running && strcmp(gd_json_str_or(g->godis, "status.podIP", ""), ip) != 0) ||
        (g->volume_lost && !was_lost) || record_volume || record_node) {
        cJSON *obj = cJSON_Duplicate(g->godis, 1);
        gd_json_set(obj, "status.state", cJSON_CreateString(state));
        if (g->volume_lost) gd_json_set(obj, "status.volumeLost", cJSON_CreateBool(1));
        if (record_volume) gd_json_set(obj, "status.volumeClaimUID", cJSON_CreateString(g->pvc_uid));
        if (record_node) gd_json_set(obj, "status.volumeNode", cJSON_CreateString(node));
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
        else if (record_node && godis_pin_node_for_claim(g->e, g->pvc, node))
            /* The pin follows from this write, and nothing else wakes this Godis for it: its
             * own status updates are filtered out (mapping.h), and its pod's and ReplicaSet's
             * events may all have come before this reconcile ran (a busy worker, one that
             * took over shards). The next run waits for the cache to show this write. */
            r = (godis_result){.kind = GODIS_REQUEUE};
        if (!err && g->volume_lost && !was_lost)
            godis_emit_event(g->e, g->godis, "Warning", "VolumeLost",
                             "the member's PersistentVolumeClaim is gone: the member is lost and "
                             "will be replaced by a new id (never restarted on an empty volume)");
    }
    godis_drop(pods);
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
    if (!gd_meta_has_finalizer(g->godis, GODIS_FINALIZER)) {   /* made before finalizers */
        gd_err err = godis_add_finalizer(g->e, &K8S_RES_GODISES, g->godis, GODIS_FINALIZER);
        return err ? gw_result(err) : (godis_result){.kind = GODIS_REQUEUE};
    }
    if (forgotten(g)) return update_state(g);
    vol_state vol = volume_state(g, g->pvc_uid, sizeof g->pvc_uid);
    g->volume_lost = vol == VOL_LOST;
    if (vol == VOL_NOT_OURS) {
        g->pvc_uid[0] = '\0';
        char msg[400];
        snprintf(msg, sizeof msg, "PersistentVolumeClaim data-%s exists but is not this member's "
                 "(kept by reclaimPolicy Retain from an earlier cluster?): not mounted; delete it "
                 "to let the member start", g->spec.godis);
        godis_emit_event(g->e, g->godis, "Warning", "VolumeNotOwned", msg);
        return update_state(g);
    }
    /* After volume_state: the pin decision reads the claim it read. */
    g->spec.node = godis_pin_node_for_claim(g->e, g->pvc,
                                            gd_json_str_or(g->godis, "status.volumeNode", NULL));
    /* Read once: whether it is retired, then what ensure_child compares. */
    const cJSON *rs = g->e->get(g->e, "ReplicaSet", g->spec.ns, g->spec.godis);
    bool retired = rs && gd_meta_annotation(rs, GODIS_ANN_RETIRED) != NULL;
    bool any = false;
    for (int i = 0; i < 3; i++) {
        if (i == 1 && vol != VOL_MISSING_NEW && vol != VOL_OK) continue;  /* never re-created */
        if (i == 2 && (retired || g->volume_lost)) continue;
        cJSON *want = build[i](&g->spec);
        const cJSON *have = i == 2 ? rs : g->e->get(g->e, res[i]->kind, g->spec.ns, gd_meta_name(want));
        if (i == 2) rs = NULL;
        bool wrote = false;
        gd_err err = ensure_child(g, res[i], want, have, &wrote);
        cJSON_Delete(want);
        if (err) {
            godis_drop(rs);
            return gw_result(err);
        }
        any |= wrote;
    }
    godis_drop(rs);
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
    if (!g.godis) goto out;
    const cJSON *owner = gd_meta_controller_owner(g.godis);
    if (!owner || strcmp(gd_json_str_or(owner, "kind", ""), "GodisCluster") != 0)
        goto out;                                  /* not one of ours: leave it alone */
    const char *cluster = gd_json_str_or(owner, "name", "");
    g.cluster = e->get(e, "GodisCluster", ns, cluster);
    bool cluster_gone = !g.cluster || gd_meta_deleting(g.cluster) ||
                        strcmp(gd_meta_uid(g.cluster), gd_json_str_or(owner, "uid", "")) != 0;
    if (cluster_gone) {
        /* Its whole cluster goes (or went, or this is an earlier cluster's of that name):
         * nothing to forget from; let the deletion finish (GC removes the rest). */
        gd_err err = gd_meta_deleting(g.godis) ? godis_drop_finalizer(e, &K8S_RES_GODISES, g.godis, GODIS_FINALIZER)
                                                : GD_OK;
        if (err) r = gw_result(err);
        goto out;
    }
    if (gd_meta_deleting(g.godis)) goto out;       /* the GodisCluster controller forgets it */
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
        .id = id, .preferred = preferred};
    godis_child_spec_from_cluster(&g.spec, g.cluster);
    r = reconcile_godis_ctx(&g);
out:
    godis_drop(g.godis);
    godis_drop(g.cluster);
    godis_drop(g.pvc);
    return r;
}
