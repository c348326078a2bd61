/* godis_storage.c — see godis_storage.h. */
#include "godis_storage.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "godis_children.h"
#include "godis_status.h"
#include "godis_write.h"
#include "gd_json.h"
#include "gd_quantity.h"
#include "gd_log.h"

#define GS_MAX_CLASSES 4          /* StorageClasses looked up per reconcile (one in practice) */

static bool gs_quantity(const cJSON *q, long double *out)
{
    return gd_quantity_parse(q, out) && *out > 0;
}

/* A quantity as text (a number in the spec is written as a string of bytes). */
static void gs_quantity_text(const cJSON *q, char *out, size_t cap)
{
    if (cJSON_IsString(q)) snprintf(out, cap, "%s", q->valuestring);
    else if (cJSON_IsNumber(q)) snprintf(out, cap, "%.0f", q->valuedouble);
    else snprintf(out, cap, "?");
}

static const char *gs_pvc_class(const cJSON *pvc)
{
    return gd_json_str_or(pvc, "spec.storageClassName", "");
}

godis_vol_state godis_volume_state(const cJSON *pvc, const cJSON *want, const char *want_class)
{
    long double w, req, cap;
    if (!pvc || gd_meta_deleting(pvc) || !gs_quantity(want, &w)) return GODIS_VOL_SKIP;
    if (want_class && *want_class && strcmp(gs_pvc_class(pvc), want_class)) return GODIS_VOL_SKIP;
    if (!gs_quantity(gd_json_path(pvc, "spec.resources.requests.storage"), &req)) return GODIS_VOL_SKIP;
    const cJSON *wq = want;
    if (godis_quantity_equal(wq, gd_json_path(pvc, "spec.resources.requests.storage"))) req = w;
    if (req > w) return GODIS_VOL_SHRINK;
    if (req < w)
        return strcmp(gd_json_str_or(pvc, "status.phase", ""), "Bound") ? GODIS_VOL_UNBOUND : GODIS_VOL_GROW;
    /* Request reached: the storage system has to follow (status.capacity). */
    if (!gs_quantity(gd_json_path(pvc, "status.capacity.storage"), &cap)) return GODIS_VOL_RESIZING;
    if (godis_quantity_equal(gd_json_path(pvc, "status.capacity.storage"), want)) return GODIS_VOL_OK;
    return cap < w ? GODIS_VOL_RESIZING : GODIS_VOL_OK;
}

bool godis_class_allows_expansion(const cJSON *sc, const char *cls, char *why, size_t cap)
{
    if (!cls || !*cls) {
        snprintf(why, cap, "its PersistentVolumeClaim has no StorageClass (only dynamically "
                 "provisioned claims can be expanded)");
        return false;
    }
    if (!sc) {
        snprintf(why, cap, "StorageClass %s does not exist", cls);
        return false;
    }
    const cJSON *a = gd_json_path(sc, "allowVolumeExpansion");
    if (cJSON_IsTrue(a)) return true;
    snprintf(why, cap, "StorageClass %s does not allow volume expansion (allowVolumeExpansion "
             "is not true)", cls);
    return false;
}

/* snprintf at msg+off that never runs past cap; returns the new offset. */
static size_t gs_put(char *msg, size_t cap, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static size_t gs_put(char *msg, size_t cap, size_t off, const char *fmt, ...)
{
    if (off >= cap) return off;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(msg + off, cap - off, fmt, ap);
    va_end(ap);
    return w < 0 ? off : off + (size_t)w;
}

/* Appends "member <id> (<detail>), ..." for the reports in state st, up to five. */
static size_t gs_list_members(char *msg, size_t cap, size_t off, const godis_vol_report *r, int n,
                           godis_vol_state st, bool refused)
{
    int named = 0;
    for (int i = 0; i < n; i++) {
        if (r[i].state != st || r[i].refused != refused) continue;
        if (named++ == 5) return gs_put(msg, cap, off, ", ...");
        off = gs_put(msg, cap, off, "%smember %lld", named > 1 ? ", " : "", (long long)r[i].id);
        if (r[i].have[0]) off = gs_put(msg, cap, off, " (%s)", r[i].have);
    }
    return off;
}

static int gs_count_state(const godis_vol_report *r, int n, godis_vol_state st)
{
    int k = 0;
    for (int i = 0; i < n; i++) k += r[i].state == st && !r[i].refused;
    return k;
}

bool godis_storage_condition(const godis_vol_report *r, int n, const char *want,
                             const char **reason, char *msg, size_t cap)
{
    int shrink = gs_count_state(r, n, GODIS_VOL_SHRINK), refused = 0, ok = gs_count_state(r, n, GODIS_VOL_OK);
    const char *why = NULL;
    for (int i = 0; i < n; i++)
        if (r[i].refused && !refused++) why = r[i].why;
    int busy = gs_count_state(r, n, GODIS_VOL_GROW) + gs_count_state(r, n, GODIS_VOL_RESIZING) +
               gs_count_state(r, n, GODIS_VOL_UNBOUND);
    if (cap) msg[0] = '\0';
    size_t off;
    if (shrink) {
        *reason = "ShrinkNotSupported";
        off = gs_put(msg, cap, 0, "spec.storage.size %s is smaller than the volume of ", want);
        off = gs_list_members(msg, cap, off, r, n, GODIS_VOL_SHRINK, false);
        gs_put(msg, cap, off, ": Kubernetes cannot shrink a PersistentVolumeClaim; nothing was changed");
        return false;
    }
    if (refused) {
        *reason = "ExpansionNotAllowed";
        off = gs_put(msg, cap, 0, "cannot expand the volumes to %s: %s; nothing was changed (", want, why);
        off = gs_list_members(msg, cap, off, r, n, GODIS_VOL_GROW, true);
        gs_put(msg, cap, off, " keep their size)");
        return false;
    }
    if (busy) {
        static const struct { godis_vol_state st; const char *what; } waits[] = {
            {GODIS_VOL_GROW, "the expansion to start"},
            {GODIS_VOL_RESIZING, "the storage system (capacity now)"},
            {GODIS_VOL_UNBOUND, "the claim to be bound"}};
        *reason = "Resizing";
        off = gs_put(msg, cap, 0, "%d of %d member volumes have %s", ok, ok + busy, want);
        for (size_t k = 0; k < sizeof waits / sizeof *waits; k++) {
            if (!gs_count_state(r, n, waits[k].st)) continue;
            off = gs_put(msg, cap, off, "; waiting for %s: ", waits[k].what);
            off = gs_list_members(msg, cap, off, r, n, waits[k].st, false);
        }
        return false;
    }
    *reason = "Resized";
    gs_put(msg, cap, 0, "every member volume has spec.storage.size %s", want);
    return true;
}

bool godis_storage_wrong_class(godis_env *e, const cJSON *cluster, const char *ns, const char *godis)
{
    const char *want = gd_json_str_or(cluster, "spec.storage.storageClassName", NULL);
    if (!want || !*want) return false;
    char claim[300];
    snprintf(claim, sizeof claim, "data-%s", godis);
    const cJSON *pvc = e->get(e, "PersistentVolumeClaim", ns, claim);
    bool wrong = pvc && !gd_meta_deleting(pvc) && strcmp(gs_pvc_class(pvc), want) != 0;
    godis_drop(pvc);
    return wrong;
}

/* ---- the reconcile's share ---- */

typedef struct {
    char name[254];
    bool allows;
    char why[240];
} gs_class_verdict;

/* StorageClasses are cluster-scoped and not watched (one GET when a volume is to grow). */
static const gs_class_verdict *gs_class_lookup(godis_env *e, gs_class_verdict *seen, int *nseen, const char *cls)
{
    for (int i = 0; i < *nseen; i++)
        if (!strcmp(seen[i].name, cls)) return &seen[i];
    if (*nseen == GS_MAX_CLASSES) return NULL;
    gs_class_verdict *c = &seen[(*nseen)++];
    snprintf(c->name, sizeof c->name, "%s", cls);
    cJSON *sc = NULL;
    gd_err err = *cls ? k8s_get(e->client, &K8S_RES_STORAGECLASSES, "", cls, &sc, NULL) : GD_ERR_NOT_FOUND;
    if (err && err != GD_ERR_NOT_FOUND) {
        (*nseen)--;                       /* unknown: decide on a later reconcile */
        return NULL;
    }
    c->allows = godis_class_allows_expansion(sc, cls, c->why, sizeof c->why);
    cJSON_Delete(sc);
    return c;
}

static const cJSON *gs_condition(const cJSON *cluster, const char *type)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, gd_json_path(cluster, "status.conditions"))
        if (!strcmp(gd_json_str_or(c, "type", ""), type)) return c;
    return NULL;
}

static gd_err gs_expand(godis_storage *s, const cJSON *pvc, const cJSON *want, const char *want_text, int64_t id)
{
    cJSON *fixed = cJSON_Duplicate(pvc, 1);
    char old[40];
    gs_quantity_text(gd_json_path(pvc, "spec.resources.requests.storage"), old, sizeof old);
    gd_json_set(fixed, "spec.resources.requests.storage",
                cJSON_IsString(want) ? cJSON_Duplicate(want, 1) : cJSON_CreateString(want_text));
    gd_err err = gw_update(s->e, &K8S_RES_PVCS, fixed);
    cJSON_Delete(fixed);
    if (!err) {
        char msg[400];
        snprintf(msg, sizeof msg, "member %lld: PersistentVolumeClaim %s expanded in place from %s "
                 "to %s", (long long)id, gd_meta_name(pvc), old, want_text);
        godis_emit_event(s->e, *s->cluster, "Normal", "VolumeExpanding", msg);
    }
    return err;
}

/* Writes the condition when it changed (nothing when it is absent and not wanted). */
static void gs_write_condition(godis_storage *s, bool want_cond, bool status, const char *reason,
                            const char *msg)
{
    const cJSON *old = gs_condition(*s->cluster, GODIS_COND_STORAGE);
    if (!want_cond && !old) return;
    if (want_cond && old && !strcmp(gd_json_str_or(old, "status", ""), status ? "True" : "False") &&
        !strcmp(gd_json_str_or(old, "reason", ""), reason) &&
        !strcmp(gd_json_str_or(old, "message", ""), msg))
        return;
    bool was_refusal = old && (!strcmp(gd_json_str_or(old, "reason", ""), "ShrinkNotSupported") ||
                               !strcmp(gd_json_str_or(old, "reason", ""), "ExpansionNotAllowed"));
    bool was_true = old && !strcmp(gd_json_str_or(old, "status", ""), "True");
    bool same_reason = old && !strcmp(gd_json_str_or(old, "reason", ""), reason);
    cJSON *obj = cJSON_Duplicate(*s->cluster, 1);
    cJSON *st = cJSON_GetObjectItemCaseSensitive(obj, "status");
    if (!cJSON_IsObject(st)) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
        st = cJSON_AddObjectToObject(obj, "status");
    }
    if (want_cond) {
        godis_set_condition(st, GODIS_COND_STORAGE, status, reason, msg, gd_meta_generation(*s->cluster));
    } else {
        cJSON *conds = cJSON_GetObjectItemCaseSensitive(st, "conditions");
        for (int i = cJSON_GetArraySize(conds) - 1; i >= 0; i--)
            if (!strcmp(gd_json_str_or(cJSON_GetArrayItem(conds, i), "type", ""), GODIS_COND_STORAGE))
                cJSON_DeleteItemFromArray(conds, i);
    }
    cJSON *written = NULL;
    gd_err err = gw_update_status_out(s->e, &K8S_RES_GODISCLUSTERS, obj, &written);
    cJSON_Delete(obj);
    if (err) return;
    bool refusal = want_cond && !status && strcmp(reason, "Resizing");
    if (refusal && !(same_reason && was_refusal))
        godis_emit_event(s->e, *s->cluster, "Warning", reason, msg);
    else if (want_cond && status && old && !was_true)
        godis_emit_event(s->e, *s->cluster, "Normal", "VolumesResized", msg);
    if (written) {
        godis_drop(*s->cluster);
        *s->cluster = written;            /* the next status write needs the new rv */
    }
}

void godis_storage_run(godis_storage *s)
{
    s->wait_ms = 0;
    const godis_view *v = s->v;
    const cJSON *want = gd_json_path(*s->cluster, "spec.storage.size");
    long double w;
    if (!want || !gs_quantity(want, &w) || !v->members_recorded) {
        gs_write_condition(s, false, false, "", "");
        return;
    }
    char want_text[40];
    gs_quantity_text(want, want_text, sizeof want_text);
    const char *want_class = gd_json_str_or(*s->cluster, "spec.storage.storageClassName", NULL);
    godis_vol_report rep[GODIS_MAX_MEMBERS];
    const cJSON *pvcs[GODIS_MAX_MEMBERS] = {0};
    gs_class_verdict seen[GS_MAX_CLASSES];
    int nseen = 0, n = 0;
    bool unknown = false, blocked = false;
    for (int i = 0; i < v->nmembers && n < GODIS_MAX_MEMBERS; i++) {
        godis_vol_report *r = &rep[n];
        memset(r, 0, sizeof *r);
        r->id = v->members[i];
        char claim[300];
        snprintf(claim, sizeof claim, "data-%s-%lld", s->name, (long long)r->id);
        pvcs[n] = s->e->get(s->e, "PersistentVolumeClaim", s->ns, claim);
        r->state = godis_volume_state(pvcs[n], want, want_class);
        if (r->state == GODIS_VOL_SHRINK)
            gs_quantity_text(gd_json_path(pvcs[n], "spec.resources.requests.storage"), r->have, sizeof r->have);
        if (r->state == GODIS_VOL_RESIZING)
            gs_quantity_text(gd_json_path(pvcs[n], "status.capacity.storage"), r->have, sizeof r->have);
        if (r->state == GODIS_VOL_GROW) {
            const gs_class_verdict *c = gs_class_lookup(s->e, seen, &nseen, gs_pvc_class(pvcs[n]));
            if (!c) unknown = true;
            else if (!c->allows) {
                r->refused = true;
                snprintf(r->why, sizeof r->why, "%s", c->why);
            }
        }
        blocked |= r->state == GODIS_VOL_SHRINK || r->refused;
        n++;
    }
    /* All or nothing: a refusal for one member changes no member's volume. */
    if (!blocked && !unknown)
        for (int i = 0; i < n; i++)
            if (rep[i].state == GODIS_VOL_GROW && gs_expand(s, pvcs[i], want, want_text, rep[i].id) == GD_OK)
                rep[i].state = GODIS_VOL_RESIZING;
    for (int i = 0; i < n; i++) godis_drop(pvcs[i]);
    const char *reason;
    char msg[900];
    bool status = godis_storage_condition(rep, n, want_text, &reason, msg, sizeof msg);
    if (!status && !blocked) s->wait_ms = GODIS_STORAGE_RECHECK_MS;
    /* A StorageClass edited to allow expansion wakes nothing here (it is not watched). */
    else if (!status && !strcmp(reason, "ExpansionNotAllowed")) s->wait_ms = GODIS_STORAGE_REFUSED_RECHECK_MS;
    gs_write_condition(s, true, status, reason, msg);
}
