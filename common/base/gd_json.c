/* gd_json.c — typed path getters over cJSON and Kubernetes metadata helpers.
 *
 * Controllers read deeply nested, user-written objects; a getter that only says "NULL"
 * cannot tell "field not set" (use the default) from "field set to garbage" (report it on the
 * object's status). Every getter here says which it was. */
#include "gd_json.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PATH_SEG_MAX 256  /* longest key we look up; Kubernetes keys are far shorter */

/* Copies the next path segment (unescaping "\." and "\\") into seg and advances *p past it
 * and its separating dot. Returns -1 when the segment is longer than PATH_SEG_MAX. */
static int next_segment(const char **p, char seg[PATH_SEG_MAX + 1])
{
    const char *s = *p;
    size_t n = 0;
    while (*s && *s != '.') {
        if (*s == '\\' && s[1])
            s++;
        if (n >= PATH_SEG_MAX)
            return -1;
        seg[n++] = *s++;
    }
    seg[n] = 0;
    *p = *s == '.' ? s + 1 : s;
    return 0;
}

/* Walks the path. GD_ERR_MISSING when a step is absent or null, GD_ERR_TYPE when a step
 * exists but is not an object, so "metadata.name" on {"metadata":"x"} is a type error. */
static gd_err lookup(const cJSON *root, const char *path, cJSON **out)
{
    *out = NULL;
    if (!root || !path)
        return GD_ERR_MISSING;
    const cJSON *cur = root;
    const char *p = path;
    char seg[PATH_SEG_MAX + 1];
    while (*p) {
        if (cJSON_IsNull(cur))
            return GD_ERR_MISSING;
        if (!cJSON_IsObject(cur))
            return GD_ERR_TYPE;
        if (next_segment(&p, seg) < 0)
            return GD_ERR_MISSING;
        cur = cJSON_GetObjectItemCaseSensitive(cur, seg);
        if (!cur)
            return GD_ERR_MISSING;
    }
    if (cJSON_IsNull(cur))
        return GD_ERR_MISSING;
    *out = (cJSON *)cur;
    return GD_OK;
}

cJSON *gd_json_path(const cJSON *root, const char *path)
{
    cJSON *it;
    return lookup(root, path, &it) == GD_OK ? it : NULL;
}

gd_err gd_json_str(const cJSON *root, const char *path, const char **out)
{
    cJSON *it;
    gd_err e = lookup(root, path, &it);
    if (e != GD_OK)
        return e;
    if (!cJSON_IsString(it) || !it->valuestring)
        return GD_ERR_TYPE;
    if (out)
        *out = it->valuestring;
    return GD_OK;
}

gd_err gd_json_int(const cJSON *root, const char *path, int64_t *out)
{
    cJSON *it;
    gd_err e = lookup(root, path, &it);
    if (e != GD_OK)
        return e;
    if (!cJSON_IsNumber(it))
        return GD_ERR_TYPE;
    double d = it->valuedouble;
    /* 2^63 is exactly representable; anything at or beyond it does not fit int64_t. */
    if (!isfinite(d) || d != floor(d) || d >= 9223372036854775808.0 || d < -9223372036854775808.0)
        return GD_ERR_TYPE;
    if (out)
        *out = (int64_t)d;
    return GD_OK;
}

gd_err gd_json_bool(const cJSON *root, const char *path, bool *out)
{
    cJSON *it;
    gd_err e = lookup(root, path, &it);
    if (e != GD_OK)
        return e;
    if (!cJSON_IsBool(it))
        return GD_ERR_TYPE;
    if (out)
        *out = cJSON_IsTrue(it);
    return GD_OK;
}

gd_err gd_json_obj(const cJSON *root, const char *path, cJSON **out)
{
    cJSON *it;
    gd_err e = lookup(root, path, &it);
    if (e != GD_OK)
        return e;
    if (!cJSON_IsObject(it))
        return GD_ERR_TYPE;
    if (out)
        *out = it;
    return GD_OK;
}

gd_err gd_json_arr(const cJSON *root, const char *path, cJSON **out)
{
    cJSON *it;
    gd_err e = lookup(root, path, &it);
    if (e != GD_OK)
        return e;
    if (!cJSON_IsArray(it))
        return GD_ERR_TYPE;
    if (out)
        *out = it;
    return GD_OK;
}

const char *gd_json_str_or(const cJSON *root, const char *path, const char *def)
{
    const char *s;
    return gd_json_str(root, path, &s) == GD_OK ? s : def;
}

int64_t gd_json_int_or(const cJSON *root, const char *path, int64_t def)
{
    int64_t v;
    return gd_json_int(root, path, &v) == GD_OK ? v : def;
}

gd_err gd_json_set(cJSON *root, const char *path, cJSON *item)
{
    gd_err e = GD_OK;
    if (!item)
        return GD_ERR_ARG;
    if (!root || !path || !*path || !cJSON_IsObject(root)) {
        e = GD_ERR_ARG;
        goto fail;
    }
    cJSON *cur = root;
    const char *p = path;
    char seg[PATH_SEG_MAX + 1];
    for (;;) {
        if (next_segment(&p, seg) < 0) {
            e = GD_ERR_ARG;
            goto fail;
        }
        cJSON *child = cJSON_GetObjectItemCaseSensitive(cur, seg);
        if (!*p) {  /* leaf */
            if (child) {
                if (!cJSON_ReplaceItemInObjectCaseSensitive(cur, seg, item)) {
                    e = GD_ERR_NOMEM;
                    goto fail;
                }
            } else if (!cJSON_AddItemToObject(cur, seg, item)) {
                e = GD_ERR_NOMEM;
                goto fail;
            }
            return GD_OK;
        }
        if (child && cJSON_IsNull(child)) {  /* null intermediate: replace by an object */
            cJSON *obj = cJSON_CreateObject();
            if (!obj || !cJSON_ReplaceItemInObjectCaseSensitive(cur, seg, obj)) {
                cJSON_Delete(obj);
                e = GD_ERR_NOMEM;
                goto fail;
            }
            child = obj;
        } else if (!child) {
            child = cJSON_AddObjectToObject(cur, seg);
            if (!child) {
                e = GD_ERR_NOMEM;
                goto fail;
            }
        } else if (!cJSON_IsObject(child)) {
            e = GD_ERR_TYPE;
            goto fail;
        }
        cur = child;
    }
fail:
    cJSON_Delete(item);  /* we own it whatever happens */
    return e;
}

bool gd_json_equal(const cJSON *a, const cJSON *b)
{
    if (!a || !b)
        return false;
    if (a == b)
        return true;
    if ((a->type & 0xFF) != (b->type & 0xFF))
        return false;
    if (!cJSON_IsObject(a) && !cJSON_IsArray(a))
        return cJSON_Compare(a, b, true);
    const cJSON *x = a->child, *y = b->child;
    for (; x && y; x = x->next, y = y->next) {
        if (cJSON_IsObject(a) && (!x->string || !y->string || strcmp(x->string, y->string) != 0))
            return cJSON_Compare(a, b, true);   /* another order: match members by name */
        if (!gd_json_equal(x, y))
            return false;
    }
    return !x && !y;
}

cJSON *gd_json_parse(const char *buf, size_t len)
{
    if (!buf)
        return NULL;
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
    if (!j)
        return NULL;
    /* trailing garbage makes the whole document invalid */
    for (const char *p = end; p && p < buf + len; p++) {
        if (!isspace((unsigned char)*p) && *p != 0) {
            cJSON_Delete(j);
            return NULL;
        }
    }
    return j;
}

char *gd_json_print(const cJSON *item)
{
    return item ? cJSON_PrintUnformatted(item) : NULL;
}

/* ---- metadata ---- */

static const cJSON *meta(const cJSON *obj)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    return cJSON_IsObject(m) ? m : NULL;
}

static const char *meta_str(const cJSON *obj, const char *field)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(meta(obj), field);
    return cJSON_IsString(s) && s->valuestring ? s->valuestring : "";
}

const char *gd_meta_name(const cJSON *obj) { return meta_str(obj, "name"); }
const char *gd_meta_namespace(const cJSON *obj) { return meta_str(obj, "namespace"); }
const char *gd_meta_uid(const cJSON *obj) { return meta_str(obj, "uid"); }
const char *gd_meta_rv(const cJSON *obj) { return meta_str(obj, "resourceVersion"); }

int64_t gd_meta_generation(const cJSON *obj)
{
    return gd_json_int_or(meta(obj), "generation", 0);
}

int gd_meta_key(const cJSON *obj, char *buf, size_t cap)
{
    const char *name = gd_meta_name(obj), *ns = gd_meta_namespace(obj);
    if (!*name || !buf || cap == 0)
        return -1;
    size_t need = (*ns ? strlen(ns) + 1 : 0) + strlen(name);
    if (need + 1 > cap)
        return -1;
    if (*ns) {
        size_t nl = strlen(ns);
        memcpy(buf, ns, nl);
        buf[nl] = '/';
        memcpy(buf + nl + 1, name, strlen(name) + 1);
    } else {
        memcpy(buf, name, strlen(name) + 1);
    }
    return (int)need;
}

/* Label and annotation keys contain dots and slashes, so no path syntax here. */
static const char *meta_map_get(const cJSON *obj, const char *map, const char *key)
{
    if (!key)
        return NULL;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(meta(obj), map);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

const char *gd_meta_label(const cJSON *obj, const char *key)
{
    return meta_map_get(obj, "labels", key);
}

const char *gd_meta_annotation(const cJSON *obj, const char *key)
{
    return meta_map_get(obj, "annotations", key);
}

const cJSON *gd_meta_controller_owner(const cJSON *obj)
{
    const cJSON *refs = cJSON_GetObjectItemCaseSensitive(meta(obj), "ownerReferences");
    const cJSON *r;
    if (!cJSON_IsArray(refs))
        return NULL;
    cJSON_ArrayForEach(r, refs) {
        if (cJSON_IsObject(r) && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "controller")))
            return r;
    }
    return NULL;
}

static bool str_field_is(const cJSON *o, const char *field, const char *want)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, field);
    return cJSON_IsString(s) && s->valuestring && strcmp(s->valuestring, want) == 0;
}

bool gd_meta_owned_by(const cJSON *obj, const char *kind, const char *uid)
{
    const cJSON *refs = cJSON_GetObjectItemCaseSensitive(meta(obj), "ownerReferences");
    const cJSON *r;
    if (!kind || !cJSON_IsArray(refs))
        return false;
    cJSON_ArrayForEach(r, refs) {
        if (str_field_is(r, "kind", kind) && (!uid || str_field_is(r, "uid", uid)))
            return true;
    }
    return false;
}

bool gd_meta_deleting(const cJSON *obj)
{
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(meta(obj), "deletionTimestamp");
    return ts && !cJSON_IsNull(ts);
}

bool gd_meta_has_finalizer(const cJSON *obj, const char *finalizer)
{
    const cJSON *fins = cJSON_GetObjectItemCaseSensitive(meta(obj), "finalizers");
    const cJSON *f;
    if (!finalizer || !cJSON_IsArray(fins))
        return false;
    cJSON_ArrayForEach(f, fins) {
        if (cJSON_IsString(f) && f->valuestring && strcmp(f->valuestring, finalizer) == 0)
            return true;
    }
    return false;
}

/* Arbitrary-length decimal comparison, so a revision beyond 2^64 cannot overflow. */
int gd_rv_compare(const char *a, const char *b)
{
    if (!a || !b || !*a || !*b)
        return -2;
    for (const char *p = a; *p; p++)
        if (!isdigit((unsigned char)*p))
            return -2;
    for (const char *p = b; *p; p++)
        if (!isdigit((unsigned char)*p))
            return -2;
    while (*a == '0' && a[1])
        a++;
    while (*b == '0' && b[1])
        b++;
    size_t la = strlen(a), lb = strlen(b);
    if (la != lb)
        return la < lb ? -1 : 1;
    int c = strcmp(a, b);
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

const cJSON *gd_meta_condition(const cJSON *obj, const char *type)
{
    const cJSON *conds = gd_json_path(obj, "status.conditions"), *c;
    if (!cJSON_IsArray(conds))
        return NULL;
    cJSON_ArrayForEach(c, conds)
        if (strcmp(gd_json_str_or(c, "type", ""), type) == 0)
            return c;
    return NULL;
}

bool gd_meta_condition_true(const cJSON *obj, const char *type)
{
    const cJSON *c = gd_meta_condition(obj, type);
    return c && strcmp(gd_json_str_or(c, "status", ""), "True") == 0;
}
