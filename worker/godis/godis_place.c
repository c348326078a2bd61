/* godis_place.c — see godis_place.h. */
#include "godis_place.h"
#include <stdio.h>
#include <string.h>
#include "gd_json.h"

#define WHY_NODES 8      /* nodes named in a message; the rest are counted */

/* The first taint that keeps a pod without tolerations off the node, or NULL. */
static const cJSON *place_blocking_taint(const cJSON *node)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, gd_json_path(node, "spec.taints")) {
        const char *eff = gd_json_str_or(t, "effect", "");
        if (!strcmp(eff, "NoSchedule") || !strcmp(eff, "NoExecute")) return t;
    }
    return NULL;
}

static bool place_listed(const godis_place_req *r, const char *name)
{
    for (int i = 0; i < r->nmember_nodes; i++)
        if (r->member_nodes[i] && !strcmp(r->member_nodes[i], name)) return true;
    return false;
}

/* Why node is no candidate ("" when it is one); taint is a scratch buffer. */
static const char *place_excluded(const cJSON *node, const godis_place_req *r, char *taint, size_t cap)
{
    const char *name = gd_meta_name(node);
    bool unsched = false;
    gd_json_bool(node, "spec.unschedulable", &unsched);
    if (r->own_node && !strcmp(name, r->own_node)) return "its own node";
    if (gd_meta_deleting(node)) return "being deleted";
    if (unsched) return "cordoned";
    if (!gd_meta_condition_true(node, "Ready")) return "not Ready";
    const cJSON *t = place_blocking_taint(node);
    if (t) {
        snprintf(taint, cap, "taint %s:%s", gd_json_str_or(t, "key", "?"), gd_json_str_or(t, "effect", "?"));
        return taint;
    }
    if (r->required && place_listed(r, name)) return "holds another member (antiAffinity required)";
    return "";
}

int godis_place_candidates(const cJSON *nodes, const godis_place_req *r, char *why, size_t cap)
{
    if (cap) why[0] = '\0';
    if (cJSON_GetArraySize(nodes) == 0) return -1;
    int ok = 0, named = 0, more = 0;
    size_t off = 0;
    if (cap) off = (size_t)snprintf(why, cap, "cannot be moved: no other schedulable node for its replacement (");
    const cJSON *n;
    cJSON_ArrayForEach(n, nodes) {
        char taint[300];
        const char *x = place_excluded(n, r, taint, sizeof taint);
        if (!*x) { ok++; continue; }
        if (named++ >= WHY_NODES) { more++; continue; }
        if (off < cap)
            off += (size_t)snprintf(why + off, cap - off, "%s%s: %s", named > 1 ? ", " : "", gd_meta_name(n), x);
    }
    if (off < cap && more) off += (size_t)snprintf(why + off, cap - off, ", %d more", more);
    if (off < cap) snprintf(why + off, cap - off, ")");
    if (ok && cap) why[0] = '\0';
    return ok;
}

bool godis_pod_unschedulable(const cJSON *pod, char *msg, size_t cap)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, gd_json_path(pod, "status.conditions")) {
        if (strcmp(gd_json_str_or(c, "type", ""), "PodScheduled")) continue;
        if (strcmp(gd_json_str_or(c, "status", ""), "False") ||
            strcmp(gd_json_str_or(c, "reason", ""), "Unschedulable"))
            return false;
        snprintf(msg, cap, "cannot be scheduled: %s", gd_json_str_or(c, "message", "(no message)"));
        return true;
    }
    return false;
}

void godis_place_observe(godis_env *e, const cJSON *cluster, godis_view *v,
                         char pod_node[][GODIS_NODE_NAME_MAX], char why[][GODIS_BLOCKED_WHY_MAX])
{
    const cJSON *nodes = NULL;
    const char *members[GODIS_MAX_MEMBERS];
    int nm = 0;
    for (int i = 0; i < v->nobserved; i++)
        if (pod_node[i][0]) members[nm++] = pod_node[i];
    godis_place_req r = {.member_nodes = members, .nmember_nodes = nm,
                         .required = !strcmp(gd_json_str_or(cluster, "spec.antiAffinity", ""), "required")};
    for (int i = 0; i < v->nobserved; i++) {
        godis_member *m = &v->observed[i];
        if (!m->ready || !(m->node_bad || m->reschedule)) continue;
        if (!nodes) nodes = e->list(e, "Node", "", NULL, NULL);
        r.own_node = pod_node[i];
        if (godis_place_candidates(nodes, &r, why[i], GODIS_BLOCKED_WHY_MAX) == 0) {
            m->no_node = true;
            m->blocked_why = why[i];
        }
    }
    godis_drop(nodes);
}
