/* review.c — see review.h. Field names follow k8s.io/api/admission/v1 AdmissionRequest and
 * AdmissionResponse; the Eviction body is policy/v1 or policy/v1beta1 (same fields). */
#include "review.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "gd_json.h"

bool wh_review_is_eviction(const wh_review *r)
{
    return !strcmp(r->operation, "CREATE") && r->group[0] == '\0' &&
           !strcmp(r->resource, "pods") && !strcmp(r->sub_resource, "eviction");
}

typedef struct {
    const cJSON *root;
    char *why;
    size_t whylen;
} ctx;

/* Copies the string at path into dst. A missing field is "" unless required; a field of
 * another type, or one longer than dst allows, is an error naming the field. */
static bool take(ctx *c, const char *path, char *dst, size_t cap, bool required)
{
    const char *s = NULL;
    gd_err e = gd_json_str(c->root, path, &s);
    dst[0] = '\0';
    if (e == GD_ERR_MISSING && !required) return true;
    if (e == GD_ERR_MISSING) {
        snprintf(c->why, c->whylen, "%s is missing", path);
        return false;
    }
    if (e != GD_OK) {
        snprintf(c->why, c->whylen, "%s is not a string", path);
        return false;
    }
    if (strlen(s) >= cap) {
        snprintf(c->why, c->whylen, "%s is longer than %zu bytes", path, cap - 1);
        return false;
    }
    snprintf(dst, cap, "%s", s);
    return true;
}

static bool dry_run_all(const cJSON *arr)
{
    const cJSON *v;
    cJSON_ArrayForEach(v, arr)
        if (cJSON_IsString(v) && !strcmp(v->valuestring, "All")) return true;
    return false;
}

/* The Eviction in request.object: its kind and version, the pod it names (must be the
 * request's), and deleteOptions.dryRun. A review without an object (an API server sends one
 * for every CREATE, but a hand-made request may not) is taken by request.name alone. */
static bool parse_eviction(ctx *c, wh_review *r)
{
    const cJSON *obj = gd_json_path(c->root, "request.object");
    if (!obj || cJSON_IsNull(obj)) return true;
    if (!cJSON_IsObject(obj)) {
        snprintf(c->why, c->whylen, "request.object is not an object");
        return false;
    }
    char kind[32], name[254], ns[254];
    if (!take(c, "request.object.apiVersion", r->eviction_version, sizeof r->eviction_version, true) ||
        !take(c, "request.object.kind", kind, sizeof kind, true) ||
        !take(c, "request.object.metadata.name", name, sizeof name, false) ||
        !take(c, "request.object.metadata.namespace", ns, sizeof ns, false))
        return false;
    if (!wh_review_is_eviction(r)) return true;     /* not ours to check further */
    if (strcmp(kind, "Eviction") ||
        (strcmp(r->eviction_version, "policy/v1") && strcmp(r->eviction_version, "policy/v1beta1"))) {
        snprintf(c->why, c->whylen, "request.object is %s %s, expected an Eviction of policy/v1 "
                 "or policy/v1beta1", r->eviction_version, kind);
        return false;
    }
    if ((name[0] && strcmp(name, r->name)) || (ns[0] && strcmp(ns, r->ns))) {
        snprintf(c->why, c->whylen, "the Eviction names pod %s/%s but the request is for %s/%s",
                 ns[0] ? ns : r->ns, name[0] ? name : r->name, r->ns, r->name);
        return false;
    }
    const cJSON *dr = gd_json_path(obj, "deleteOptions.dryRun");
    if (dr && !cJSON_IsNull(dr) && !cJSON_IsArray(dr)) {
        snprintf(c->why, c->whylen, "request.object.deleteOptions.dryRun is not a list");
        return false;
    }
    if (dry_run_all(dr)) r->dry_run = true;
    return true;
}

gd_err wh_review_parse(const char *body, size_t len, wh_review *r, char *why, size_t whylen)
{
    memset(r, 0, sizeof *r);
    if (!body || len == 0) {
        snprintf(why, whylen, "empty body: expected an AdmissionReview");
        return GD_ERR_INVALID;
    }
    if (len > WH_REVIEW_MAX_BODY) {
        snprintf(why, whylen, "body of %zu bytes is larger than %u", len, WH_REVIEW_MAX_BODY);
        return GD_ERR_INVALID;
    }
    cJSON *root = gd_json_parse(body, len);
    if (!root || !cJSON_IsObject(root)) {
        snprintf(why, whylen, root ? "the body is JSON but not an object" : "the body is not valid JSON");
        cJSON_Delete(root);
        return GD_ERR_INVALID;
    }
    ctx c = {root, why, whylen};
    char kind[32];
    bool ok = take(&c, "apiVersion", r->api_version, sizeof r->api_version, true) &&
              take(&c, "kind", kind, sizeof kind, true);
    if (ok && (strcmp(kind, "AdmissionReview") ||
               (strcmp(r->api_version, "admission.k8s.io/v1") &&
                strcmp(r->api_version, "admission.k8s.io/v1beta1")))) {
        snprintf(why, whylen, "expected an AdmissionReview of admission.k8s.io/v1 or v1beta1, "
                 "got %s %s", r->api_version, kind);
        ok = false;
    }
    if (ok && !cJSON_IsObject(gd_json_path(root, "request"))) {
        snprintf(why, whylen, "request is missing or not an object");
        ok = false;
    }
    ok = ok && take(&c, "request.uid", r->uid, sizeof r->uid, true);
    if (ok && !r->uid[0]) {
        snprintf(why, whylen, "request.uid is empty");
        ok = false;
    }
    ok = ok && take(&c, "request.operation", r->operation, sizeof r->operation, true) &&
         take(&c, "request.resource.group", r->group, sizeof r->group, false) &&
         take(&c, "request.resource.version", r->version, sizeof r->version, false) &&
         take(&c, "request.resource.resource", r->resource, sizeof r->resource, true) &&
         take(&c, "request.subResource", r->sub_resource, sizeof r->sub_resource, false) &&
         take(&c, "request.namespace", r->ns, sizeof r->ns, false) &&
         take(&c, "request.name", r->name, sizeof r->name, false);
    if (ok && wh_review_is_eviction(r) && (!r->ns[0] || !r->name[0])) {
        snprintf(why, whylen, "an eviction review needs request.namespace and request.name");
        ok = false;
    }
    bool dry = false;
    if (ok && gd_json_bool(root, "request.dryRun", &dry) == GD_ERR_TYPE) {
        snprintf(why, whylen, "request.dryRun is not a boolean");
        ok = false;
    }
    r->dry_run = dry;
    ok = ok && parse_eviction(&c, r);
    cJSON_Delete(root);
    return ok ? GD_OK : GD_ERR_INVALID;
}

char *wh_review_response(const wh_review *r, const wh_verdict *v)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", r->api_version[0] ? r->api_version : "admission.k8s.io/v1");
    cJSON_AddStringToObject(o, "kind", "AdmissionReview");
    cJSON *resp = cJSON_AddObjectToObject(o, "response");
    cJSON_AddStringToObject(resp, "uid", r->uid);
    cJSON_AddBoolToObject(resp, "allowed", v->allowed);
    if (!v->allowed) {
        /* The API server turns this Status into the eviction's answer as it is (code and
         * reason kept: webhook errors.ToStatusErr), which is what kubectl's drain reads:
         * 429 → wait 5 s and retry, 404 → the pod is gone, done. */
        cJSON *st = cJSON_AddObjectToObject(resp, "status");
        cJSON_AddStringToObject(st, "status", "Failure");
        cJSON_AddNumberToObject(st, "code", v->code);
        if (v->reason) cJSON_AddStringToObject(st, "reason", v->reason);
        cJSON_AddStringToObject(st, "message", v->message);
    }
    char *s = gd_json_print(o);
    cJSON_Delete(o);
    return s;
}
