/* godis_input.c — see godis_input.h. */
#include "godis_input.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "godis_children.h"
#include "godis_status.h"
#include "godis_write.h"
#include "gd_json.h"
#include "gd_quantity.h"
#include "gd_log.h"

#define MAX_FINDINGS 8

typedef struct {
    const char *reason;
    char msg[320];
} finding;

typedef struct {
    finding f[MAX_FINDINGS];
    int n;
    bool hold;
} findings;

static void add(findings *fs, const char *reason, bool hold, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add(findings *fs, const char *reason, bool hold, const char *fmt, ...)
{
    fs->hold |= hold;
    if (fs->n == MAX_FINDINGS) return;
    finding *f = &fs->f[fs->n++];
    f->reason = reason;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->msg, sizeof f->msg, fmt, ap);
    va_end(ap);
}

bool godis_reschedule_value_valid(const char *v)
{
    return v && (!*v || !strcmp(v, "true") || !strcmp(v, "True"));
}

static bool observed_godis(const godis_view *v, int64_t id)
{
    for (int i = 0; i < v->nobserved; i++)
        if (v->observed[i].id == id && v->observed[i].godis_exists) return true;
    return false;
}

/* A Godis named <cluster>-<id> that is not ours. */
static void check_name(godis_input *in, findings *fs, int64_t id, const char *role)
{
    if (id <= 0 || observed_godis(in->v, id)) return;
    char name[300];
    snprintf(name, sizeof name, "%s-%lld", in->name, (long long)id);
    const cJSON *g = in->e->get(in->e, "Godis", in->ns, name);
    if (g && !gd_meta_owned_by(g, "GodisCluster", in->uid)) {
        const cJSON *owner = gd_meta_controller_owner(g);
        add(fs, "ForeignGodis", true, "Godis %s is not controlled by this GodisCluster (controller: "
            "%.40s %.60s): %s %lld is left alone and no membership change is made until its "
            "ownerReference is fixed", name, owner ? gd_json_str_or(owner, "kind", "?") : "none",
            owner ? gd_json_str_or(owner, "name", "?") : "", role, (long long)id);
    }
    godis_drop(g);
}

static void check_annotations(godis_input *in, findings *fs)
{
    godis_view *v = in->v;
    const cJSON *pods = in->e->list(in->e, "Pod", in->ns, "cluster-name", in->name);
    for (int i = 0; i < v->nobserved; i++) {
        godis_member *m = &v->observed[i];
        if (!m->reschedule) continue;
        char godis[300];
        snprintf(godis, sizeof godis, "%s-%lld", in->name, (long long)m->id);
        bool asked = false;
        const cJSON *o;
        cJSON_ArrayForEach(o, in->godises) {
            const char *a = strcmp(gd_meta_name(o), godis) ? NULL : gd_meta_annotation(o, GODIS_ANN_RESCHEDULE);
            if (!a) continue;
            if (godis_reschedule_value_valid(a)) asked = true;
            else add(fs, "InvalidAnnotation", false, "Godis %s: %s is \"%.40s\", not \"true\": "
                     "ignored, the member is not moved", godis, GODIS_ANN_RESCHEDULE, a);
        }
        cJSON_ArrayForEach(o, pods) {
            const char *nn = gd_meta_label(o, "node-name");
            const char *a = nn && !strcmp(nn, godis) ? gd_meta_annotation(o, GODIS_ANN_RESCHEDULE) : NULL;
            if (!a || gd_meta_deleting(o)) continue;
            if (godis_reschedule_value_valid(a)) asked = true;
            else add(fs, "InvalidAnnotation", false, "Pod %s: %s is \"%.40s\", not \"true\": "
                     "ignored, the member is not moved", gd_meta_name(o), GODIS_ANN_RESCHEDULE, a);
        }
        m->reschedule = asked;
    }
    godis_drop(pods);
}

/* initial-cluster must be exactly id@<the member's peer URL>, comma-separated. */
static void check_configmap(godis_input *in, findings *fs)
{
    godis_view *v = in->v;
    if (!v->configmap_exists || !in->configmap) return;
    const char *val = gd_json_str_or(in->configmap, "data.initial-cluster", NULL);
    bool ok = v->configmap_parsed && val &&
              godis_initial_cluster_valid(val, in->ns, in->name, in->e ? in->e->cluster_domain : NULL);
    if (ok) return;
    v->configmap_parsed = false;            /* the planner rewrites it from status.members */
    add(fs, "ConfigMapEdited", false, "ConfigMap %s-config: initial-cluster \"%.80s\" is not "
        "the id@URL list of the members: rewritten from status.members", in->name,
        val ? val : "(missing)");
}

/* Day-2 fields that passed an older CRD (or none): what cannot be rendered is left out of
 * the member pod template, and said here. */
static void check_pod_fields(godis_input *in, findings *fs)
{
    const cJSON *spec = gd_json_path(*in->cluster, "spec");
    const cJSON *kv;
    cJSON_ArrayForEach(kv, gd_json_path(spec, "podMetadata.labels")) {
        const char *why = godis_reserved_pod_label(kv->string) ? "is the operator's own"
                        : !godis_metadata_key_valid(kv->string) ? "is not a valid label key"
                        : !cJSON_IsString(kv) || !godis_label_value_valid(kv->valuestring)
                        ? "has a value that is not a valid label value" : NULL;
        if (why) add(fs, "InvalidPodMetadata", false, "spec.podMetadata.labels: \"%.63s\" %s: "
                     "left out of the member pods", kv->string, why);
    }
    cJSON_ArrayForEach(kv, gd_json_path(spec, "podMetadata.annotations"))
        if (!godis_metadata_key_valid(kv->string) || !cJSON_IsString(kv) ||
            !strcmp(kv->string, GODIS_ANN_TEMPLATE_HASH))
            add(fs, "InvalidPodMetadata", false, "spec.podMetadata.annotations: \"%.63s\" is "
                "not a valid annotation (or is the operator's own): left out of the member pods",
                kv->string);
    static const struct { const char *f; int lo, hi; } ints[] = {
        {"goMaxProcs", 1, 1024}, {"goGC", 1, 100000}};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(gd_json_path(spec, "godis"), ints[i].f);
        if (x && !(cJSON_IsNumber(x) && x->valuedouble >= ints[i].lo && x->valuedouble <= ints[i].hi))
            add(fs, "InvalidSettings", false, "spec.godis.%s must be an integer from %d to %d: "
                "left out of the member pods", ints[i].f, ints[i].lo, ints[i].hi);
    }
    const cJSON *ml = gd_json_path(spec, "godis.goMemLimit");
    if (ml && !(cJSON_IsString(ml) && godis_go_memlimit_valid(ml->valuestring)))
        add(fs, "InvalidSettings", false, "spec.godis.goMemLimit must be digits with an optional "
            "unit B, KiB, MiB, GiB or TiB: left out of the member pods");
}

/* A DNS subdomain (StorageClass names), or "" (no class, as in a PVC). */
static bool class_name_valid(const char *n)
{
    size_t len = strlen(n);
    if (len > 253) return false;
    for (size_t i = 0; i < len; i++) {
        char ch = n[i];
        bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
        bool edge = i == 0 || i == len - 1 || n[i - 1] == '.' || n[i + 1] == '.';
        if (!alnum && !((ch == '-' || ch == '.') && !edge)) return false;
    }
    return true;
}

/* spec.storage that bypassed the CRD: a size that is no positive quantity is neither given
 * to new volumes' claims with effect nor used to expand (godis_storage.c skips it); a class
 * name that is no string or DNS name is never a migration target. */
static void check_storage(godis_input *in, findings *fs)
{
    const cJSON *st = gd_json_path(*in->cluster, "spec.storage");
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(st, "size");
    long double b;
    if (size && !(gd_quantity_parse(size, &b) && b > 0))
        add(fs, "InvalidStorage", false, "spec.storage.size is not a positive Kubernetes quantity "
            "(such as 2Gi): no volume is expanded");
    const cJSON *cls = cJSON_GetObjectItemCaseSensitive(st, "storageClassName");
    bool valid = !cls || (cJSON_IsString(cls) && class_name_valid(cls->valuestring));
    if (!valid)
        add(fs, "InvalidStorage", false, "spec.storage.storageClassName is not a StorageClass "
            "name (a DNS subdomain): no member is moved to it");
    /* A class change adds a member first: on a class that does not exist its claim would
     * stay Pending, and the cluster would carry a member that never starts. */
    godis_view *v = in->v;
    bool moving = false;
    for (int i = 0; i < v->nobserved; i++) moving |= v->observed[i].wrong_class;
    if (!moving || !in->e || !in->e->client) return;
    cJSON *sc = NULL;
    gd_err err = valid ? k8s_get(in->e->client, &K8S_RES_STORAGECLASSES, "", cls->valuestring, &sc, NULL)
                       : GD_ERR_INVALID;
    cJSON_Delete(sc);
    if (err == GD_OK) return;
    for (int i = 0; i < v->nobserved; i++) v->observed[i].wrong_class = false;
    if (err == GD_ERR_NOT_FOUND)
        add(fs, "StorageClassNotFound", false, "spec.storage.storageClassName %.253s: no such "
            "StorageClass; no member is moved to it until it exists", cls->valuestring);
}

static const cJSON *condition(const cJSON *cluster, const char *type)
{
    const cJSON *c, *found = NULL;
    cJSON_ArrayForEach(c, gd_json_path(cluster, "status.conditions"))
        if (!strcmp(gd_json_str_or(c, "type", ""), type)) found = c;
    return found;
}

/* Valid condition and Events; writes only when the condition changes. */
static void report(godis_input *in, const findings *fs)
{
    const cJSON *cluster = *in->cluster;
    const cJSON *old = condition(cluster, "Valid");
    if (!fs->n && !old) return;
    char msg[1024] = "";
    size_t o = 0;
    for (int i = 0; i < fs->n && o < sizeof msg; i++)
        o += (size_t)snprintf(msg + o, sizeof msg - o, "%s%s", i ? "; " : "", fs->f[i].msg);
    if (!fs->n) snprintf(msg, sizeof msg, "spec, status, ConfigMap and member objects are consistent");
    const char *reason = fs->n ? fs->f[0].reason : "AsExpected";
    if (old && !strcmp(gd_json_str_or(old, "status", ""), fs->n ? "False" : "True") &&
        !strcmp(gd_json_str_or(old, "reason", ""), reason) &&
        !strcmp(gd_json_str_or(old, "message", ""), msg))
        return;                             /* said already */
    cJSON *obj = cJSON_Duplicate(cluster, 1);
    cJSON *st = cJSON_GetObjectItemCaseSensitive(obj, "status");
    if (!cJSON_IsObject(st)) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
        st = cJSON_AddObjectToObject(obj, "status");
    }
    godis_set_condition(st, "Valid", fs->n == 0, reason, msg, gd_meta_generation(cluster));
    cJSON *written = NULL;
    if (gw_update_status_out(in->e, &K8S_RES_GODISCLUSTERS, obj, &written) == GD_OK) {
        for (int i = 0; i < fs->n; i++)
            godis_emit_event(in->e, cluster, "Warning", fs->f[i].reason, fs->f[i].msg);
        if (written) {
            godis_drop(*in->cluster);
            *in->cluster = written;             /* the planner's write needs the new rv */
        }
    }
    cJSON_Delete(obj);
}

/* Paused with another size asked for: legitimate, but the user asked for something that
 * will not happen until they unpause — a Warning Event once per change. The planner's
 * Degraded condition (reason Paused, "... N desired") says it lastingly; until it does for
 * this N, this is a change. */
static void check_paused(godis_input *in)
{
    const godis_view *v = in->v;
    if (!v->paused || !v->members_recorded || v->nmembers == v->desired) return;
    const cJSON *deg = condition(*in->cluster, "Degraded");
    char want[32];
    snprintf(want, sizeof want, " %d desired", v->desired);
    if (deg && !strcmp(gd_json_str_or(deg, "reason", ""), "Paused") &&
        strstr(gd_json_str_or(deg, "message", ""), want))
        return;
    char msg[200];
    snprintf(msg, sizeof msg, "spec.replicas is %d but spec.paused holds the cluster at %d "
             "members: no membership change until spec.paused is false", v->desired, v->nmembers);
    godis_emit_event(in->e, *in->cluster, "Warning", "ScalingPaused", msg);
}

godis_input_verdict godis_input_check(godis_input *in)
{
    findings fs = {.n = 0};
    godis_view *v = in->v;
    if (v->members_recorded) {
        for (int i = 0; i < v->nmembers; i++) check_name(in, &fs, v->members[i], "member");
        check_name(in, &fs, v->scale_out_id, "the member being added,");
        if (v->scale_out_id <= 0 && v->nmembers < v->desired && !v->paused)
            check_name(in, &fs, v->next_id, "the next member id");
    }
    check_annotations(in, &fs);
    check_configmap(in, &fs);
    check_pod_fields(in, &fs);
    check_storage(in, &fs);
    report(in, &fs);
    check_paused(in);
    if (fs.hold)
        gd_log(GD_LOG_WARN, "membership held: nonsense input", "cluster", in->name, "namespace",
               in->ns, "why", fs.f[0].msg, NULL);
    return fs.hold ? GODIS_INPUT_HOLD : GODIS_INPUT_OK;
}
