/* godis_cluster_observe.c — what the GodisCluster reconciler sees before it decides:
 * the cluster's recorded status and, from the cache, its ConfigMap, its Godis objects,
 * each member's pods, ReplicaSet and node, turned into the godis_view the planner
 * (godis_plan.c) works on. Read only: nothing here writes to the API server or talks to
 * godis, so everything the reconcile does (godis_reconcile_cluster.c) starts from one
 * observation made here. Shares the reconcile's state through godis_cluster_ctx.h. */
#include "godis_cluster_ctx.h"
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "godis_children.h"
#include "godis_retire.h"
#include "godis_storage.h"
#include "gd_json.h"
#include "gd_time.h"

/* Cordoned, or NotReady/Unknown for longer than the grace period (judged on our clock
 * from lastTransitionTime — a coarse bound is enough to decide a migration). A node that is
 * NotReady but still within its grace sets c->grace_wait_ms, so the reconcile looks again
 * when the grace ends even if nothing else happens (no event marks that moment). */
static bool node_bad(godis_cluster_ctx *cx, const char *node_name)
{
    godis_env *e = cx->e;
    if (!node_name || !*node_name) return false;
    const cJSON *node = e->get(e, "Node", "", node_name);
    if (!node) return false;
    bool bad = false;
    bool unsched = false;
    if (gd_json_bool(node, "spec.unschedulable", &unsched) == GD_OK && unsched) bad = true;
    const cJSON *c;
    cJSON_ArrayForEach(c, gd_json_path(node, "status.conditions")) {
        if (strcmp(gd_json_str_or(c, "type", ""), "Ready") != 0) continue;
        if (strcmp(gd_json_str_or(c, "status", ""), "True") == 0) break;
        struct tm tm = {0};
        const char *ts = gd_json_str_or(c, "lastTransitionTime", "");
        if (strptime(ts, "%Y-%m-%dT%H:%M:%S", &tm)) {
            int64_t left = e->node_notready_grace_ms - (gd_wall_ms() - (int64_t)timegm(&tm) * 1000);
            if (left <= 0) bad = true;
            else if (cx->grace_wait_ms == 0 || left < cx->grace_wait_ms) cx->grace_wait_ms = left + 100;
        } else {
            bad = true;
        }
    }
    godis_drop(node);
    return bad;
}

/* Its pods and ReplicaSet: Ready, on a bad node, running, gone. */
static void observe_runtime(godis_cluster_ctx *c, int idx, const char *godis_name)
{
    godis_member *m = &c->v.observed[idx];
    const cJSON *pods = c->e->list(c->e, "Pod", c->ns, "node-name", godis_name);
    const cJSON *pod;
    cJSON_ArrayForEach(pod, pods) {
        m->pod_exists = true;
        if (gd_meta_deleting(pod)) continue;
        m->running = true;
        if (m->ready) continue;
        m->ready = gd_meta_condition_true(pod, "Ready");
        m->node_bad = node_bad(c, gd_json_str_or(pod, "spec.nodeName", NULL));
        m->reschedule |= gd_meta_annotation(pod, "godis.kumkeehyun.github.com/reschedule") != NULL;
        snprintf(c->pod_ip[idx], sizeof c->pod_ip[idx], "%s", gd_json_str_or(pod, "status.podIP", ""));
        snprintf(c->pod_node[idx], sizeof c->pod_node[idx], "%s", gd_json_str_or(pod, "spec.nodeName", ""));
        m->node = c->pod_node[idx][0] ? c->pod_node[idx] : NULL;
        if (godis_pod_unschedulable(pod, c->blocked_why[idx], sizeof c->blocked_why[idx])) {
            m->unschedulable = true;
            m->blocked_why = c->blocked_why[idx];
        }
    }
    godis_drop(pods);
    const cJSON *rs = c->e->get(c->e, "ReplicaSet", c->ns, godis_name);
    if (rs && gd_json_int_or(rs, "spec.replicas", 1) != 0) m->running = true;
    godis_drop(rs);
}

static void observe_godis(godis_cluster_ctx *c, const cJSON *g)
{
    godis_view *v = &c->v;
    int64_t id = godis_id_from_name(c->name, gd_meta_name(g));
    if (id <= 0 || v->nobserved >= GODIS_MAX_MEMBERS) return;
    if (!gd_meta_owned_by(g, "GodisCluster", c->uid)) return;   /* not ours: leave it alone */
    int idx = v->nobserved++;
    godis_member *m = &v->observed[idx];
    memset(m, 0, sizeof *m);
    m->id = id;
    m->godis_exists = true;
    m->godis_deleting = gd_meta_deleting(g);
    m->finalizer = gd_meta_has_finalizer(g, GODIS_FINALIZER);
    m->reschedule = gd_meta_annotation(g, "godis.kumkeehyun.github.com/reschedule") != NULL;
    gd_json_bool(g, "status.volumeLost", &m->volume_lost);
    m->wrong_class = godis_storage_wrong_class(c->e, c->cluster, c->ns, gd_meta_name(g));
    if (id > v->max_seen_id) v->max_seen_id = id;
    observe_runtime(c, idx, gd_meta_name(g));
    /* Its pods are pinned to the node that holds its data (status.volumeNode): a member not
     * Ready there, with that node bad or gone, can only come back by migrating (new id). */
    const char *home = gd_json_str_or(g, "status.volumeNode", "");
    if (!m->ready && *home) {
        const cJSON *node = c->e->get(c->e, "Node", "", home);
        m->node_bad |= !node || node_bad(c, home);
        godis_drop(node);
    }
}

/* A recorded member whose Godis is gone may still have a ReplicaSet and pods (the garbage
 * collector has not got to them): they are stopped like any forgotten member's. */
static void observe_departed(godis_cluster_ctx *c, int64_t id)
{
    godis_view *v = &c->v;
    for (int i = 0; i < v->nobserved; i++)
        if (v->observed[i].id == id) return;
    if (id <= 0 || v->nobserved >= GODIS_MAX_MEMBERS) return;
    int idx = v->nobserved++;
    memset(&v->observed[idx], 0, sizeof v->observed[idx]);
    v->observed[idx].id = id;
    char name[300];
    snprintf(name, sizeof name, "%s-%lld", c->name, (long long)id);
    observe_runtime(c, idx, name);
}

static bool listed(const godis_cluster_ctx *c, const char *name)
{
    const cJSON *g;
    cJSON_ArrayForEach(g, c->godises)
        if (strcmp(gd_meta_name(g), name) == 0) return true;
    return false;
}

static void add_if_ours(godis_cluster_ctx *c, const cJSON *g)
{
    if (g && gd_meta_owned_by(g, "GodisCluster", c->uid) && !listed(c, gd_meta_name(g)))
        cJSON_AddItemToArray(c->godises, cJSON_Duplicate(g, 1));
}

/* Members are listed by their cluster-name label, but a Godis of ours can lack it: seed
 * 000's Go controller made them without (the Godis controller adds it), or someone edited
 * it away. Missing one would make a live member look lost — or, before status.members is
 * recorded, make an adopted cluster look empty and be initialised anew over its data. So:
 * before members are recorded, every Godis of the namespace that this cluster controls
 * (a scan, once per adoption); after, each recorded member not listed is looked up by name. */
static void add_unlabelled_godises(godis_cluster_ctx *c)
{
    const godis_view *v = &c->v;
    if (!v->members_recorded) {
        const cJSON *all = c->e->list(c->e, "Godis", c->ns, NULL, NULL);
        const cJSON *g;
        cJSON_ArrayForEach(g, all) add_if_ours(c, g);
        godis_drop(all);
        return;
    }
    int64_t ids[GODIS_MAX_MEMBERS + 2];
    int n = 0;
    for (int i = 0; i < v->nmembers; i++) ids[n++] = v->members[i];
    if (v->scale_out_id > 0) ids[n++] = v->scale_out_id;
    if (v->scale_in_id > 0) ids[n++] = v->scale_in_id;
    for (int i = 0; i < n; i++) {
        char name[300];
        snprintf(name, sizeof name, "%s-%lld", c->name, (long long)ids[i]);
        if (listed(c, name)) continue;
        const cJSON *g = c->e->get(c->e, "Godis", c->ns, name);
        add_if_ours(c, g);
        godis_drop(g);
    }
}

void godis_cluster_read_status(godis_cluster_ctx *c)
{
    godis_view *v = &c->v;
    snprintf(c->phase, sizeof c->phase, "%s", gd_json_str_or(c->cluster, "status.status", ""));
    v->phase = c->phase;
    v->next_id = gd_json_int_or(c->cluster, "status.nextID", 0);
    v->scale_out_id = gd_json_int_or(c->cluster, "status.scaleOutID", 0);
    v->scale_in_id = gd_json_int_or(c->cluster, "status.scaleInID", 0);
    v->initial_replicas = gd_json_int_or(c->cluster, "status.initialReplicas", 0);
    cJSON *members = NULL;
    if (gd_json_arr(c->cluster, "status.members", &members) == GD_OK) {
        v->members_recorded = true;
        const cJSON *m;
        cJSON_ArrayForEach(m, members) {
            if (cJSON_IsNumber(m) && m->valuedouble > 0 && v->nmembers < GODIS_MAX_MEMBERS)
                v->members[v->nmembers++] = (int64_t)m->valuedouble;
        }
    }
}

void godis_cluster_observe(godis_cluster_ctx *c)
{
    godis_view *v = &c->v;
    char cm_name[300];
    snprintf(cm_name, sizeof cm_name, "%s-config", c->name);
    c->configmap = c->e->get(c->e, "ConfigMap", c->ns, cm_name);
    if (c->configmap && gd_meta_owned_by(c->configmap, "GodisCluster", c->uid)) {
        v->configmap_exists = true;
        int n = godis_parse_initial_cluster(gd_json_str_or(c->configmap, "data.initial-cluster", NULL),
                                            v->cm_ids, GODIS_MAX_MEMBERS);
        v->configmap_parsed = n >= 0;
        v->cm_n = n > 0 ? n : 0;
    }
    /* an array of our own over the listed ones (references), as unlabelled ones join it */
    c->godises_list = c->e->list(c->e, "Godis", c->ns, "cluster-name", c->name);
    c->godises = cJSON_CreateArray();
    const cJSON *listed_g;
    cJSON_ArrayForEach(listed_g, c->godises_list)
        cJSON_AddItemToArray(c->godises, cJSON_CreateObjectReference(listed_g->child));
    add_unlabelled_godises(c);
    const cJSON *g;
    cJSON_ArrayForEach(g, c->godises) observe_godis(c, g);
    for (int i = 0; i < v->nmembers; i++) observe_departed(c, v->members[i]);
    observe_departed(c, v->scale_in_id);
    godis_place_observe(c->e, c->cluster, v, c->pod_node, c->blocked_why);
    v->bootstrap_fresh = gd_meta_annotation(c->cluster, GODIS_ANN_BOOTSTRAP_FRESH) != NULL;
    v->forget_acked = v->scale_in_id > 0 && godis_forget_memo_has(c->uid, v->scale_in_id);
}

int godis_cluster_observed_index(const godis_cluster_ctx *c, int64_t id)
{
    for (int i = 0; i < c->v.nobserved; i++)
        if (c->v.observed[i].id == id) return i;
    return -1;
}
