/* godis_write.c — see godis_write.h. */
#include "godis_write.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gd_json.h"
#include "gd_log.h"
#include "gd_time.h"

static gd_err fence(godis_env *e)
{
    return e->may_write ? e->may_write(e) : GD_OK;
}

/* A create refused because its namespace is being deleted is no fault (the namespace takes
 * everything with it; client-go's event recorder drops these too): an info line that is not
 * mistaken for a missing right. */
static bool namespace_terminating(const char *what, const k8s_resource *r, const char *name,
                                  const k8s_status *st)
{
    if (st->err != GD_ERR_NAMESPACE_TERMINATING) return false;
    gd_log(GD_LOG_INFO, "namespace being deleted: nothing new is created in it", "what", what,
           "resource", r->resource, "name", name, NULL);
    return true;
}

static void log_write_error(const char *verb, const k8s_resource *r, const char *name,
                            const k8s_status *st)
{
    if (namespace_terminating(verb, r, name, st)) return;
    gd_log(GD_LOG_WARN, "write failed", "verb", verb, "resource", r->resource, "name", name,
           "error", gd_strerror(st->err), "message", st->message, NULL);
}

gd_err gw_create(godis_env *e, const k8s_resource *r, const cJSON *obj)
{
    gd_err err = fence(e);
    if (err) return err;
    cJSON *out = NULL;
    k8s_status st = {0};
    err = k8s_create(e->client, r, gd_meta_namespace(obj), obj, &out, &st);
    if (err == GD_OK && e->wrote)
        e->wrote(e, r->kind, gd_meta_namespace(out), gd_meta_name(out), gd_meta_rv(out), false);
    cJSON_Delete(out);
    if (err && err != GD_ERR_ALREADY_EXISTS) log_write_error("create", r, gd_meta_name(obj), &st);
    return err;
}

static bool has_labels(const cJSON *obj, const cJSON *want)
{
    const cJSON *l;
    cJSON_ArrayForEach(l, gd_json_path(want, "metadata.labels")) {
        const char *have = gd_meta_label(obj, l->string);
        if (!have || !cJSON_IsString(l) || strcmp(have, l->valuestring) != 0) return false;
    }
    return true;
}

/* The existing object, labelled as want is: the body of the adopting update. */
static cJSON *with_labels(const cJSON *have, const cJSON *want)
{
    cJSON *fixed = cJSON_Duplicate(have, 1);
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(fixed, "metadata");
    cJSON *labels = cJSON_GetObjectItemCaseSensitive(meta, "labels");
    if (!cJSON_IsObject(labels)) {
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "labels");
        labels = cJSON_AddObjectToObject(meta, "labels");
    }
    const cJSON *l;
    cJSON_ArrayForEach(l, gd_json_path(want, "metadata.labels")) {
        cJSON_DeleteItemFromObjectCaseSensitive(labels, l->string);
        cJSON_AddItemToObject(labels, l->string, cJSON_Duplicate(l, 1));
    }
    return fixed;
}

static gd_err put(godis_env *e, const k8s_resource *r, const cJSON *obj, bool status,
                  cJSON **written);

gd_err gw_create_or_adopt(godis_env *e, const k8s_resource *r, const cJSON *obj,
                          const cJSON *about, bool *adopted)
{
    if (adopted) *adopted = false;
    gd_err err = gw_create(e, r, obj);
    if (err != GD_ERR_ALREADY_EXISTS) return err;
    cJSON *have = NULL;
    k8s_status st = {0};
    const char *ns = gd_meta_namespace(obj), *name = gd_meta_name(obj);
    err = k8s_get(e->client, r, ns, name, &have, &st);
    if (err == GD_ERR_NOT_FOUND) err = GD_ERR_ALREADY_EXISTS;   /* gone meanwhile: create again */
    if (err) {
        cJSON_Delete(have);
        return err;
    }
    const cJSON *want_owner = gd_meta_controller_owner(obj);
    const cJSON *owner = gd_meta_controller_owner(have);
    const char *uid = gd_json_str_or(want_owner, "uid", "");
    bool ours = owner && *uid && strcmp(gd_json_str_or(owner, "uid", ""), uid) == 0 &&
                strcmp(gd_json_str_or(owner, "kind", ""), gd_json_str_or(want_owner, "kind", "")) == 0;
    if (!ours) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s %s exists and is not controlled by %s %s: left alone",
                 r->kind, name, gd_json_str_or(want_owner, "kind", "?"),
                 gd_json_str_or(want_owner, "name", "?"));
        if (about) godis_emit_event(e, about, "Warning", "ChildNotOwned", msg);
        err = GD_ERR_ALREADY_EXISTS;
    } else if (has_labels(have, obj) || gd_meta_deleting(have)) {
        err = GD_ERR_ALREADY_EXISTS;    /* ours already: the cache is behind */
    } else {
        cJSON *fixed = with_labels(have, obj);
        err = put(e, r, fixed, false, NULL);
        cJSON_Delete(fixed);
        if (err == GD_OK) {
            if (adopted) *adopted = true;
            gd_log(GD_LOG_INFO, "adopted an unlabelled child", "kind", r->kind, "namespace", ns,
                   "name", name, NULL);
        }
    }
    cJSON_Delete(have);
    return err;
}

static gd_err put(godis_env *e, const k8s_resource *r, const cJSON *obj, bool status,
                  cJSON **written)
{
    gd_err err = fence(e);
    if (err) return err;
    cJSON *out = NULL;
    k8s_status st = {0};
    err = status ? k8s_update_status(e->client, r, obj, &out, &st)
                 : k8s_update(e->client, r, obj, &out, &st);
    /* The last finalizer dropped from an object being deleted deletes it: the cache will
     * show it gone, never at this resourceVersion. */
    bool gone = err == GD_OK && gd_meta_deleting(out) &&
                cJSON_GetArraySize(gd_json_path(out, "metadata.finalizers")) == 0;
    if (err == GD_OK && e->wrote)
        e->wrote(e, r->kind, gd_meta_namespace(out), gd_meta_name(out), gone ? "" : gd_meta_rv(out), gone);
    if (written && err == GD_OK) {
        *written = out;
        out = NULL;
    }
    cJSON_Delete(out);
    if (err && err != GD_ERR_CONFLICT) {
        log_write_error(status ? "update-status" : "update", r, gd_meta_name(obj), &st);
        if (err == GD_ERR_INVALID) {   /* our own body was refused: show it, it is a bug */
            char *body = cJSON_PrintUnformatted(obj);
            gd_log(GD_LOG_ERROR, "refused body", "body", body ? body : "", NULL);
            free(body);
        }
    }
    return err;
}

gd_err gw_update(godis_env *e, const k8s_resource *r, const cJSON *obj) { return put(e, r, obj, false, NULL); }

gd_err gw_merge_patch(godis_env *e, const k8s_resource *r, const char *ns, const char *name,
                      const cJSON *patch)
{
    gd_err err = fence(e);
    if (err) return err;
    char *body = cJSON_PrintUnformatted(patch);
    if (!body) return GD_ERR_NOMEM;
    cJSON *out = NULL;
    k8s_status st = {0};
    err = k8s_patch(e->client, r, ns, name, K8S_PATCH_MERGE, body, NULL, &out, &st);
    free(body);
    if (err == GD_OK && e->wrote)
        e->wrote(e, r->kind, gd_meta_namespace(out), gd_meta_name(out), gd_meta_rv(out), false);
    cJSON_Delete(out);
    if (err) log_write_error("patch", r, name, &st);
    return err;
}
gd_err gw_update_status(godis_env *e, const k8s_resource *r, const cJSON *obj) { return put(e, r, obj, true, NULL); }
gd_err gw_update_status_out(godis_env *e, const k8s_resource *r, const cJSON *obj, cJSON **written)
{
    return put(e, r, obj, true, written);
}

gd_err gw_delete(godis_env *e, const k8s_resource *r, const char *ns, const char *name,
                 const char *uid)
{
    return gw_delete_grace(e, r, ns, name, uid, -1);
}

gd_err gw_delete_grace(godis_env *e, const k8s_resource *r, const char *ns, const char *name,
                       const char *uid, long grace_seconds)
{
    gd_err err = fence(e);
    if (err) return err;
    k8s_delete_opts o;
    k8s_delete_opts_default(&o);
    o.grace_period_seconds = grace_seconds;
    o.propagation_policy = "Background";
    o.precondition_uid = (uid && *uid) ? uid : NULL;
    k8s_status st = {0};
    err = k8s_delete(e->client, r, ns, name, &o, &st);
    if (err == GD_OK && e->wrote) e->wrote(e, r->kind, ns, name, "", true);
    if (err == GD_ERR_NOT_FOUND) return GD_OK;
    if (err) log_write_error("delete", r, name, &st);
    return err;
}

godis_result gw_result(gd_err err)
{
    godis_result res = {.kind = GODIS_REQUEUE, .err = err};
    /* AlreadyExists/Conflict/NotFound: our cache is behind the API server. Requeue, with
     * err set so the requeue is rate-limited instead of spinning until the cache catches up. */
    if (err == GD_OK || err == GD_ERR_CONFLICT || err == GD_ERR_NOT_FOUND ||
        err == GD_ERR_ALREADY_EXISTS)
        return res;
    /* not ours to write any more, or nothing to create in a namespace being deleted (its
     * deletion wakes the reconcile that lets go): stop quietly */
    if (err == GD_ERR_FENCED || err == GD_ERR_NAMESPACE_TERMINATING) {
        res.kind = GODIS_DONE;
        return res;
    }
    res.kind = GODIS_ERROR;
    return res;
}

void godis_emit_event(godis_env *e, const cJSON *obj, const char *type, const char *reason,
                      const char *message)
{
    if (fence(e) != GD_OK) return;
    char now[32], name[320];
    gd_format_rfc3339_micro(gd_wall_ms() * 1000, now);
    now[19] = 'Z';          /* Event timestamps are RFC 3339 seconds (metav1.Time) */
    now[20] = '\0';
    snprintf(name, sizeof name, "%s.%llx", gd_meta_name(obj),
             (unsigned long long)gd_wall_ms() * 1000000ULL + (unsigned long long)(gd_rand01() * 1e6));
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "apiVersion", "v1");
    cJSON_AddStringToObject(ev, "kind", "Event");
    cJSON *m = cJSON_AddObjectToObject(ev, "metadata");
    cJSON_AddStringToObject(m, "name", name);
    cJSON_AddStringToObject(m, "namespace", gd_meta_namespace(obj));
    cJSON *io = cJSON_AddObjectToObject(ev, "involvedObject");
    cJSON_AddStringToObject(io, "apiVersion", gd_json_str_or(obj, "apiVersion", ""));
    cJSON_AddStringToObject(io, "kind", gd_json_str_or(obj, "kind", ""));
    cJSON_AddStringToObject(io, "name", gd_meta_name(obj));
    cJSON_AddStringToObject(io, "namespace", gd_meta_namespace(obj));
    cJSON_AddStringToObject(io, "uid", gd_meta_uid(obj));
    cJSON_AddStringToObject(ev, "reason", reason);
    cJSON_AddStringToObject(ev, "message", message);
    cJSON_AddStringToObject(ev, "type", type);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(ev, "source"), "component", "godis-operator");
    cJSON_AddStringToObject(ev, "firstTimestamp", now);
    cJSON_AddStringToObject(ev, "lastTimestamp", now);
    cJSON_AddNumberToObject(ev, "count", 1);
    cJSON_AddStringToObject(ev, "reportingComponent", "godis-operator");
    k8s_status st = {0};
    if (k8s_create(e->client, &K8S_RES_EVENTS, gd_meta_namespace(obj), ev, NULL, &st) != GD_OK &&
        !namespace_terminating("event", &K8S_RES_EVENTS, reason, &st))
        gd_log(GD_LOG_WARN, "event not recorded", "reason", reason, "error", gd_strerror(st.err),
               "message", st.message, NULL);
    gd_log(strcmp(type, "Warning") == 0 ? GD_LOG_WARN : GD_LOG_INFO, message, "object",
           gd_meta_name(obj), "reason", reason, NULL);
    cJSON_Delete(ev);
}
