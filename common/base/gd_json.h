/* gd_json.h — typed getters over cJSON that say what is wrong, and Kubernetes metadata
 * helpers. Paths are dot-separated object keys ("metadata.labels"); a key containing a dot
 * is escaped with a backslash ("metadata.annotations.example\\.com/x"). */
#ifndef GD_JSON_H
#define GD_JSON_H
#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "gd_err.h"

/* Lookup: NULL when any step is missing. */
cJSON *gd_json_path(const cJSON *root, const char *path);

/* Typed getters: GD_OK, GD_ERR_MISSING (path absent or JSON null) or GD_ERR_TYPE.
 * Strings are borrowed (valid as long as root). */
gd_err gd_json_str(const cJSON *root, const char *path, const char **out);
gd_err gd_json_int(const cJSON *root, const char *path, int64_t *out); /* integral numbers only */
gd_err gd_json_bool(const cJSON *root, const char *path, bool *out);
gd_err gd_json_obj(const cJSON *root, const char *path, cJSON **out);
gd_err gd_json_arr(const cJSON *root, const char *path, cJSON **out);
/* With defaults: missing → def; wrong type → def as well, but returns GD_ERR_TYPE. */
const char *gd_json_str_or(const cJSON *root, const char *path, const char *def);
int64_t     gd_json_int_or(const cJSON *root, const char *path, int64_t def);

/* Creates intermediate objects as needed and replaces the leaf (takes ownership of item). */
gd_err gd_json_set(cJSON *root, const char *path, cJSON *item);

/* cJSON_Compare(a, b, true)'s answer (for objects without repeated member names), in linear
 * time for the common case: two encodings of one object by one server list members in the
 * same order, so objects are walked pair by pair, and only one whose member names stop
 * lining up is compared by name (cJSON_Compare looks every member up, twice: quadratic in
 * an object's size, 8 us for a pod). */
bool gd_json_equal(const cJSON *a, const cJSON *b);

/* Parses bytes (not necessarily NUL-terminated). NULL on invalid JSON. */
cJSON *gd_json_parse(const char *buf, size_t len);
/* Compact serialisation, malloc'd. */
char  *gd_json_print(const cJSON *item);

/* ---- Kubernetes object metadata ---- */
const char *gd_meta_name(const cJSON *obj);        /* "" when absent */
const char *gd_meta_namespace(const cJSON *obj);   /* "" for cluster-scoped */
const char *gd_meta_uid(const cJSON *obj);
const char *gd_meta_rv(const cJSON *obj);          /* resourceVersion, "" when absent */
int64_t     gd_meta_generation(const cJSON *obj);  /* 0 when absent */
/* "namespace/name", or "name" for cluster-scoped objects (client-go MetaNamespaceKeyFunc).
 * Returns the length written, or -1 when it does not fit or the name is missing. */
int         gd_meta_key(const cJSON *obj, char *buf, size_t cap);
const char *gd_meta_label(const cJSON *obj, const char *key);      /* NULL when absent */
const char *gd_meta_annotation(const cJSON *obj, const char *key); /* NULL when absent */
/* The ownerReference with controller: true, or NULL. */
const cJSON *gd_meta_controller_owner(const cJSON *obj);
/* True when obj has an ownerReference of the given kind and uid (uid may be NULL: any). */
bool        gd_meta_owned_by(const cJSON *obj, const char *kind, const char *uid);
bool        gd_meta_deleting(const cJSON *obj);    /* deletionTimestamp set */
bool        gd_meta_has_finalizer(const cJSON *obj, const char *finalizer);
/* The first entry of status.conditions with this type, or NULL; and whether its status is
 * "True" (false when absent, as for a Node or Pod that reports no condition yet). */
const cJSON *gd_meta_condition(const cJSON *obj, const char *type);
bool        gd_meta_condition_true(const cJSON *obj, const char *type);

/* Compares resourceVersions as client-go does for "is my cache at least this new":
 * both are decimal etcd revisions in practice; returns <0, 0, >0, or -2 when either is not
 * a plain integer (callers then treat them as incomparable). */
int         gd_rv_compare(const char *a, const char *b);

#endif
