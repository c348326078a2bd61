/* gd_yaml.c — see gd_yaml.h. A recursive descent over libyaml's event stream. */
#include "gd_yaml.h"
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define MAX_DEPTH 64

typedef struct {
    yaml_parser_t p;
    yaml_event_t ev;
    char *err;
    size_t errlen;
} yctx;

static bool next(yctx *y)
{
    if (!yaml_parser_parse(&y->p, &y->ev)) {
        snprintf(y->err, y->errlen, "line %zu column %zu: %s",
                 y->p.problem_mark.line + 1, y->p.problem_mark.column + 1,
                 y->p.problem ? y->p.problem : "YAML syntax error");
        return false;
    }
    return true;
}

static void fail_at(yctx *y, const char *what)
{
    snprintf(y->err, y->errlen, "line %zu column %zu: %s", y->ev.start_mark.line + 1,
             y->ev.start_mark.column + 1, what);
}

static bool is_int(const char *s)
{
    if (*s == '-' || *s == '+') s++;
    if (!*s) return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return false;
    return true;
}

static bool is_float(const char *s)
{
    char *end;
    if (!*s || strchr("0123456789+-.", *s) == NULL) return false;
    errno = 0;
    strtod(s, &end);
    return *end == '\0' && errno == 0 && strpbrk(s, ".eE") != NULL;
}

static cJSON *scalar(const yaml_event_t *ev)
{
    const char *v = (const char *)ev->data.scalar.value;
    if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return cJSON_CreateString(v);
    if (!*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL"))
        return cJSON_CreateNull();
    if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE")) return cJSON_CreateTrue();
    if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE")) return cJSON_CreateFalse();
    if (is_int(v) && strlen(v) < 16) return cJSON_CreateNumber((double)strtoll(v, NULL, 10));
    if (is_float(v)) return cJSON_CreateNumber(strtod(v, NULL));
    return cJSON_CreateString(v);
}

static cJSON *node(yctx *y, int depth);

static cJSON *mapping(yctx *y, int depth)
{
    cJSON *obj = cJSON_CreateObject();
    for (;;) {
        yaml_event_delete(&y->ev);
        if (!next(y)) goto fail;
        if (y->ev.type == YAML_MAPPING_END_EVENT) return obj;
        if (y->ev.type != YAML_SCALAR_EVENT) {
            fail_at(y, "mapping keys must be scalars");
            goto fail;
        }
        char *key = strdup((const char *)y->ev.data.scalar.value);
        yaml_event_delete(&y->ev);
        if (!key || !next(y)) {
            free(key);
            goto fail;
        }
        cJSON *val = node(y, depth + 1);
        if (!val) {
            free(key);
            goto fail;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(obj, key);   /* last one wins */
        cJSON_AddItemToObject(obj, key, val);
        free(key);
    }
fail:
    cJSON_Delete(obj);
    return NULL;
}

static cJSON *sequence(yctx *y, int depth)
{
    cJSON *arr = cJSON_CreateArray();
    for (;;) {
        yaml_event_delete(&y->ev);
        if (!next(y)) goto fail;
        if (y->ev.type == YAML_SEQUENCE_END_EVENT) return arr;
        cJSON *val = node(y, depth + 1);
        if (!val) goto fail;
        cJSON_AddItemToArray(arr, val);
    }
fail:
    cJSON_Delete(arr);
    return NULL;
}

/* Builds the node whose first event is in y->ev. */
static cJSON *node(yctx *y, int depth)
{
    if (depth > MAX_DEPTH) {
        fail_at(y, "nested too deeply");
        return NULL;
    }
    switch (y->ev.type) {
    case YAML_SCALAR_EVENT:      return scalar(&y->ev);
    case YAML_MAPPING_START_EVENT:  return mapping(y, depth);
    case YAML_SEQUENCE_START_EVENT: return sequence(y, depth);
    case YAML_ALIAS_EVENT:       fail_at(y, "aliases are not supported"); return NULL;
    default:                     fail_at(y, "unexpected YAML event"); return NULL;
    }
}

gd_err gd_yaml_to_json(const char *buf, size_t len, cJSON **out, char *err, size_t errlen)
{
    yctx y = {.err = err, .errlen = errlen};
    *out = NULL;
    if (errlen) err[0] = '\0';
    if (!yaml_parser_initialize(&y.p)) return GD_ERR_NOMEM;
    yaml_parser_set_input_string(&y.p, (const unsigned char *)buf, len);
    cJSON *docs = cJSON_CreateArray();
    gd_err rc = GD_OK;
    bool done = false;
    while (!done) {
        if (!next(&y)) { rc = GD_ERR_PARSE; break; }
        switch (y.ev.type) {
        case YAML_STREAM_END_EVENT: done = true; break;
        case YAML_DOCUMENT_START_EVENT: {
            yaml_event_delete(&y.ev);
            if (!next(&y)) { rc = GD_ERR_PARSE; done = true; break; }
            if (y.ev.type == YAML_DOCUMENT_END_EVENT) break;   /* empty document */
            cJSON *doc = node(&y, 0);
            if (!doc) { rc = GD_ERR_PARSE; done = true; break; }
            if (!cJSON_IsNull(doc)) cJSON_AddItemToArray(docs, doc);
            else cJSON_Delete(doc);
            break;
        }
        default: break;
        }
        yaml_event_delete(&y.ev);
    }
    yaml_parser_delete(&y.p);
    if (rc) {
        cJSON_Delete(docs);
        return rc;
    }
    *out = docs;
    return GD_OK;
}
