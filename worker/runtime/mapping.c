/* mapping.c — see mapping.h. */
#include "mapping.h"
#include <stdio.h>
#include <string.h>
#include "gd_json.h"
#include "gd_log.h"
#include "gd_domain.h"

#define KEY_CAP 512

/* ---- predicates ---- */

/* Compares two objects member by member, ignoring the members skip() names, without
 * copying them (predicates run for every event, so no cJSON_Duplicate here). */
typedef bool (*skip_fn)(const char *name, bool drop_status, bool drop_generation);

static bool skip_top(const char *name, bool drop_status, bool drop_generation)
{
    return drop_status && strcmp(name, "status") == 0;
}

static bool skip_meta(const char *name, bool drop_status, bool drop_generation)
{
    return strcmp(name, "resourceVersion") == 0 || strcmp(name, "managedFields") == 0 ||
           (drop_generation && strcmp(name, "generation") == 0);
}

static bool members_equal(const cJSON *a, const cJSON *b, skip_fn skipper, bool ds, bool dg);

/* Every non-skipped member of a exists in b with an equal value. */
static bool covered(const cJSON *a, const cJSON *b, skip_fn skipper, bool ds, bool dg, bool deep)
{
    const cJSON *m;
    cJSON_ArrayForEach(m, a) {
        if (!m->string || skipper(m->string, ds, dg))
            continue;
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(b, m->string);
        if (!o)
            return false;
        if (!deep)
            continue;
        if (skipper == skip_top && strcmp(m->string, "metadata") == 0 && cJSON_IsObject(m) &&
            cJSON_IsObject(o)) {
            if (!members_equal(m, o, skip_meta, ds, dg))
                return false;
        } else if (!gd_json_equal(m, o)) {
            return false;
        }
    }
    return true;
}

static bool members_equal(const cJSON *a, const cJSON *b, skip_fn skipper, bool ds, bool dg)
{
    if (!cJSON_IsObject(a) || !cJSON_IsObject(b))
        return gd_json_equal(a, b);
    return covered(a, b, skipper, ds, dg, true) && covered(b, a, skipper, ds, dg, false);
}

static bool differs(const cJSON *a, const cJSON *b, bool drop_status, bool drop_generation)
{
    /* Most updates of a child are status changes (a pod's conditions, a ReplicaSet's
     * counts): comparing status first decides them without walking the spec, which for a
     * pod is most of the object. Equal statuses are not compared again below. */
    if (!drop_status && cJSON_IsObject(a) && cJSON_IsObject(b)) {
        const cJSON *sa = cJSON_GetObjectItemCaseSensitive(a, "status");
        const cJSON *sb = cJSON_GetObjectItemCaseSensitive(b, "status");
        if (!sa != !sb || (sa && !gd_json_equal(sa, sb)))
            return true;
        drop_status = true;
    }
    return !members_equal(a, b, skip_top, drop_status, drop_generation);
}

/* The status of the Ready condition ("" without one). */
static const char *ready_status(const cJSON *obj)
{
    return gd_json_str_or(gd_meta_condition(obj, "Ready"), "status", "");
}

bool mapping_for_update_matters(const cJSON *old_obj, const cJSON *new_obj)
{
    if (!old_obj || !new_obj)
        return true;
    if (gd_meta_generation(old_obj) != gd_meta_generation(new_obj))
        return true;
    /* Ready turning True or False is the one status change that counts: a reconcile gates
     * on it (a GodisCluster's rollout starts only once the cluster took a write, Ready=True)
     * and it is written by a reconcile that then has nothing left to do, so without this
     * event nothing woke the key (itest_rollout test_scale_during_rollout, see mapping.h). */
    if (strcmp(ready_status(old_obj), ready_status(new_obj)) != 0)
        return true;
    const cJSON *om = cJSON_GetObjectItemCaseSensitive(old_obj, "metadata");
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(new_obj, "metadata");
    if (!om || !nm)
        return differs(old_obj, new_obj, true, false);
    /* Without a generation (objects that have none) fall back to "anything but status". */
    if (gd_meta_generation(new_obj) == 0)
        return differs(old_obj, new_obj, true, false);
    return !members_equal(om, nm, skip_meta, true, true);
}

bool mapping_owned_update_matters(const cJSON *old_obj, const cJSON *new_obj)
{
    if (!old_obj || !new_obj)
        return true;
    return differs(old_obj, new_obj, false, false);
}

static bool json_equal(const cJSON *a, const cJSON *b)
{
    if (!a || !b)
        return a == b;
    return gd_json_equal(a, b);
}

bool mapping_node_update_matters(const cJSON *old_obj, const cJSON *new_obj)
{
    if (!old_obj || !new_obj)
        return true;
    if (!json_equal(gd_json_path(old_obj, "spec.unschedulable"),
                    gd_json_path(new_obj, "spec.unschedulable")) ||
        !json_equal(gd_json_path(old_obj, "spec.taints"), gd_json_path(new_obj, "spec.taints")))
        return true;
    const cJSON *ro = gd_meta_condition(old_obj, "Ready");
    const cJSON *rn = gd_meta_condition(new_obj, "Ready");
    return strcmp(gd_json_str_or(ro, "status", ""), gd_json_str_or(rn, "status", "")) != 0 ||
           gd_meta_deleting(old_obj) != gd_meta_deleting(new_obj);
}

/* ---- key helpers ---- */

typedef struct {
    map_emit_fn emit;
    void *ud;
    int n;
} emitter;

static void emit_nsname(emitter *e, const char *ctrl, const char *ns, const char *name)
{
    if (!ns || !*ns || !name || !*name)
        return;
    char key[KEY_CAP];
    int n = snprintf(key, sizeof key, "%s/%s", ns, name);
    if (n < 0 || (size_t)n >= sizeof key) {
        gd_log(GD_LOG_WARN, "mapping: key too long, event ignored", "controller", ctrl,
               "namespace", ns, NULL);
        return;
    }
    e->emit(e->ud, ctrl, key);
    e->n++;
}

static void emit_self(emitter *e, const char *ctrl, const cJSON *obj)
{
    emit_nsname(e, ctrl, gd_meta_namespace(obj), gd_meta_name(obj));
}

/* The controller owner's name when it is of kind owner_kind, else NULL. */
static const char *owner_name(const cJSON *obj, const char *owner_kind)
{
    const cJSON *o = gd_meta_controller_owner(obj);
    if (!o || strcmp(gd_json_str_or(o, "kind", ""), owner_kind) != 0)
        return NULL;
    const char *n = gd_json_str_or(o, "name", "");
    return *n ? n : NULL;
}

/* Owner of kind owner_kind, else the fallback label; NULL when neither. */
static const char *owner_or_label(const cJSON *obj, const char *owner_kind, const char *label)
{
    const char *name = owner_name(obj, owner_kind);
    if (!name && label)
        name = gd_meta_label(obj, label);
    return name;
}

/* Owns: on an update both the old and the new owner hear of it (once when they agree). */
static void emit_owner_both(emitter *e, const char *ctrl, const cJSON *old_obj,
                            const cJSON *new_obj, const char *owner_kind, const char *label)
{
    const cJSON *cur = new_obj ? new_obj : old_obj;
    const char *name = owner_or_label(cur, owner_kind, label);
    emit_nsname(e, ctrl, gd_meta_namespace(cur), name);
    if (!old_obj || !new_obj)
        return;
    const char *old_name = owner_or_label(old_obj, owner_kind, label);
    if (old_name && (!name || strcmp(old_name, name) != 0 ||
                     strcmp(gd_meta_namespace(old_obj), gd_meta_namespace(new_obj)) != 0))
        emit_nsname(e, ctrl, gd_meta_namespace(old_obj), old_name);
}

/* ---- Node → the objects its pods' label names ---- */

typedef struct {
    emitter *e;
    const gd_wake *w;
} node_pods;

static int emit_pod_label(void *ud, const char *key, const cJSON *pod)
{
    node_pods *np = ud;
    emit_nsname(np->e, np->w->controller, gd_meta_namespace(pod),
                gd_meta_label(pod, np->w->label));
    return 0;
}

static void map_node(cache *c, emitter *e, const gd_wake *w, const cJSON *node)
{
    const char *name = gd_meta_name(node);
    if (!c || !*name)
        return;
    node_pods np = {e, w};
    cache_each_indexed(c, "Pod", CACHE_IDX_NODE, name, emit_pod_label, &np);
}

/* The object named by label, and on an update the one the old label named if it differs. */
static void emit_label_both(emitter *e, const char *ctrl, const cJSON *old_obj,
                            const cJSON *new_obj, const char *label)
{
    const cJSON *cur = new_obj ? new_obj : old_obj;
    const char *is = gd_meta_label(cur, label);
    emit_nsname(e, ctrl, gd_meta_namespace(cur), is);
    const char *was = old_obj && new_obj ? gd_meta_label(old_obj, label) : NULL;
    if (was && (!is || strcmp(was, is) != 0))
        emit_nsname(e, ctrl, gd_meta_namespace(old_obj), was);
}

/* Whether an update is worth a reconcile under the wake's rule (creates and deletes are). */
static bool update_matters(const gd_wake *w, const cJSON *old_obj, const cJSON *new_obj)
{
    if (!old_obj || !new_obj)
        return true;
    switch (w->rule) {
    case GD_WAKE_SELF: return mapping_for_update_matters(old_obj, new_obj);
    case GD_WAKE_NODE_PODS: return mapping_node_update_matters(old_obj, new_obj);
    default:
        return w->ignore_status ? differs(old_obj, new_obj, true, false)
                                : mapping_owned_update_matters(old_obj, new_obj);
    }
}

/* ---- the dispatcher: the domain table's wakes for the kind ---- */

int mapping_event(cache *c, const char *kind, const cJSON *old_obj, const cJSON *new_obj,
                  map_emit_fn emit, void *ud)
{
    const gd_watched_kind *wk = gd_domain_kind(gd_domain_get(), kind);
    if (!wk || !emit || (!old_obj && !new_obj))
        return 0;
    emitter e = {emit, ud, 0};
    const cJSON *obj = new_obj ? new_obj : old_obj;
    for (int i = 0; i < GD_DOMAIN_MAX_WAKES && wk->wakes[i].rule != GD_WAKE_NONE; i++) {
        const gd_wake *w = &wk->wakes[i];
        if (!update_matters(w, old_obj, new_obj))
            continue;
        switch (w->rule) {
        case GD_WAKE_SELF: emit_self(&e, w->controller, obj); break;
        case GD_WAKE_OWNER:
            emit_owner_both(&e, w->controller, old_obj, new_obj, w->owner_kind, w->label);
            break;
        case GD_WAKE_LABEL: emit_label_both(&e, w->controller, old_obj, new_obj, w->label); break;
        case GD_WAKE_NODE_PODS: map_node(c, &e, w, obj); break;
        case GD_WAKE_NONE: break;
        }
    }
    return e.n;
}
