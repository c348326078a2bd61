/* k8s_client.c — the verbs (get/list/create/update/patch/delete) and watch, on top of
 * k8s_http.c. Paths come from k8s_path, query values are percent-encoded here, bodies are
 * cJSON printed compactly. */
#include "k8s_client.h"
#include "k8s_internal.h"
#include "k8s_watch_decoder.h"
#include "gd_log.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_CAP 8192

static gd_err fail(k8s_status *st, gd_err e, const char *msg)
{
    if (st) {
        memset(st, 0, sizeof *st);
        st->err = e;
        snprintf(st->message, sizeof st->message, "%s", msg);
    }
    return e;
}

/* ---- query strings ---- */

typedef struct {
    char *buf;
    size_t len, cap;
    bool ok;
} qbuf;

static void q_add(qbuf *q, const char *key, const char *val)
{
    if (!q->ok || !val || !val[0])
        return;
    char enc[4096];
    if (k8s_urlencode(enc, sizeof enc, val) < 0) {
        q->ok = false;
        return;
    }
    int n = snprintf(q->buf + q->len, q->cap - q->len, "%c%s=%s",
                     strchr(q->buf, '?') ? '&' : '?', key, enc);
    if (n < 0 || (size_t)n >= q->cap - q->len) {
        q->ok = false;
        return;
    }
    q->len += (size_t)n;
}

static void q_add_long(qbuf *q, const char *key, long v)
{
    char s[32];
    snprintf(s, sizeof s, "%ld", v);
    q_add(q, key, s);
}

static void q_list_opts(qbuf *q, const k8s_list_opts *o)
{
    if (!o)
        return;
    q_add(q, "labelSelector", o->label_selector);
    q_add(q, "fieldSelector", o->field_selector);
    if (o->limit > 0)
        q_add_long(q, "limit", o->limit);
    q_add(q, "continue", o->continue_token);
    q_add(q, "resourceVersion", o->resource_version);
    q_add(q, "resourceVersionMatch", o->resource_version_match);
}

/* ---- plain requests ---- */

static gd_err request_stoppable(k8s_client *c, const char *method, const char *path,
                                const char *body, const char *content_type,
                                const k8s_list_opts *o, cJSON **out, k8s_status *st)
{
    if (out)
        *out = NULL;
    k8s_http_req rq = {
        .method = method, .path = path, .body = body,
        .body_len = body ? strlen(body) : 0,
        .content_type = body ? (content_type ? content_type : "application/json") : NULL,
        .stop = o ? o->stop : NULL, .stop_fd = o ? o->stop_fd : NULL,
    };
    k8s_http_resp rs;
    gd_err e = k8s_http_do(c, &rq, &rs, st);
    if (e != GD_OK)
        return e;
    if (out && rs.len > 0) {
        *out = cJSON_ParseWithLength(rs.body, rs.len);
        if (!*out) {
            char msg[200];
            snprintf(msg, sizeof msg, "%s %s: response body (%zu bytes) is not valid JSON",
                     method, path, rs.len);
            free(rs.body);
            long code = rs.status;
            fail(st, GD_ERR_PARSE, msg);
            if (st)
                st->http_status = code;
            return GD_ERR_PARSE;
        }
    }
    free(rs.body);
    return GD_OK;
}

gd_err k8s_request(k8s_client *c, const char *method, const char *path, const char *body,
                   const char *content_type, cJSON **out, k8s_status *st)
{
    return request_stoppable(c, method, path, body, content_type, NULL, out, st);
}

static gd_err request_json(k8s_client *c, const char *method, const char *path,
                           const cJSON *obj, const char *content_type, cJSON **out,
                           k8s_status *st)
{
    char *body = obj ? cJSON_PrintUnformatted(obj) : NULL;
    if (obj && !body)
        return fail(st, GD_ERR_NOMEM, "cannot serialise the request body");
    gd_err e = k8s_request(c, method, path, body, content_type, out, st);
    free(body);
    return e;
}

static const char *meta_str(const cJSON *obj, const char *key)
{
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(md, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

gd_err k8s_get(k8s_client *c, const k8s_resource *r, const char *ns, const char *name,
               cJSON **out, k8s_status *st)
{
    if (out)
        *out = NULL;
    char path[PATH_CAP];
    if (!name || !name[0] || k8s_path(path, sizeof path, r, ns, name, NULL) < 0)
        return fail(st, GD_ERR_ARG, "get: bad resource, namespace or name");
    return k8s_request(c, "GET", path, NULL, NULL, out, st);
}

static gd_err list_path(char *path, const k8s_resource *r, const char *ns,
                        const k8s_list_opts *o, k8s_status *st)
{
    if (k8s_path(path, PATH_CAP, r, ns, NULL, NULL) < 0)
        return fail(st, GD_ERR_ARG, "list: bad resource or namespace");
    qbuf q = {path, strlen(path), PATH_CAP, true};
    q_list_opts(&q, o);
    if (o && o->timeout_seconds > 0)
        q_add_long(&q, "timeoutSeconds", o->timeout_seconds);
    if (!q.ok)
        return fail(st, GD_ERR_ARG, "list: query does not fit");
    return GD_OK;
}

gd_err k8s_list(k8s_client *c, const k8s_resource *r, const char *ns,
                const k8s_list_opts *o, cJSON **out, k8s_status *st)
{
    if (out)
        *out = NULL;
    char path[PATH_CAP];
    gd_err e = list_path(path, r, ns, o, st);
    if (e != GD_OK)
        return e;
    return request_stoppable(c, "GET", path, NULL, NULL, o, out, st);
}

gd_err k8s_list_raw(k8s_client *c, const k8s_resource *r, const char *ns,
                    const k8s_list_opts *o, char **body, size_t *len, k8s_status *st)
{
    *body = NULL;
    *len = 0;
    char path[PATH_CAP];
    gd_err e = list_path(path, r, ns, o, st);
    if (e != GD_OK)
        return e;
    k8s_http_req rq = {.method = "GET", .path = path, .stop = o ? o->stop : NULL,
                       .stop_fd = o ? o->stop_fd : NULL};
    k8s_http_resp rs;
    if ((e = k8s_http_do(c, &rq, &rs, st)) != GD_OK)
        return e;
    if (rs.len == 0) {
        free(rs.body);
        return GD_OK;
    }
    *body = rs.body;                   /* NUL-terminated by k8s_http_do */
    *len = rs.len;
    return GD_OK;
}

gd_err k8s_create(k8s_client *c, const k8s_resource *r, const char *ns, const cJSON *obj,
                  cJSON **out, k8s_status *st)
{
    if (out)
        *out = NULL;
    if (!cJSON_IsObject(obj))
        return fail(st, GD_ERR_ARG, "create: object is not a JSON object");
    if (!ns || !ns[0])
        ns = meta_str(obj, "namespace");
    char path[PATH_CAP];
    if (k8s_path(path, sizeof path, r, ns, NULL, NULL) < 0 ||
        (r->namespaced && (!ns || !ns[0])))
        return fail(st, GD_ERR_ARG, "create: bad resource or missing namespace");
    return request_json(c, "POST", path, obj, "application/json", out, st);
}

static gd_err put_object(k8s_client *c, const k8s_resource *r, const cJSON *obj,
                         const char *sub, cJSON **out, k8s_status *st)
{
    if (out)
        *out = NULL;
    if (!cJSON_IsObject(obj))
        return fail(st, GD_ERR_ARG, "update: object is not a JSON object");
    const char *name = meta_str(obj, "name");
    const char *ns = meta_str(obj, "namespace");
    char path[PATH_CAP];
    if (!r || !name || !name[0] || (r->namespaced && (!ns || !ns[0])) ||
        k8s_path(path, sizeof path, r, ns, name, sub) < 0)
        return fail(st, GD_ERR_ARG, "update: object lacks metadata.name or .namespace");
    return request_json(c, "PUT", path, obj, "application/json", out, st);
}

gd_err k8s_update(k8s_client *c, const k8s_resource *r, const cJSON *obj, cJSON **out,
                  k8s_status *st)
{
    return put_object(c, r, obj, NULL, out, st);
}

gd_err k8s_update_status(k8s_client *c, const k8s_resource *r, const cJSON *obj,
                         cJSON **out, k8s_status *st)
{
    return put_object(c, r, obj, "status", out, st);
}

gd_err k8s_patch(k8s_client *c, const k8s_resource *r, const char *ns, const char *name,
                 k8s_patch_type type, const char *patch, const char *subresource,
                 cJSON **out, k8s_status *st)
{
    if (out)
        *out = NULL;
    static const char *const CT[] = {
        [K8S_PATCH_MERGE] = "application/merge-patch+json",
        [K8S_PATCH_JSON] = "application/json-patch+json",
        [K8S_PATCH_STRATEGIC] = "application/strategic-merge-patch+json",
    };
    if ((unsigned)type > K8S_PATCH_STRATEGIC || !patch)
        return fail(st, GD_ERR_ARG, "patch: bad patch type or no patch");
    char path[PATH_CAP];
    if (!name || !name[0] || k8s_path(path, sizeof path, r, ns, name, subresource) < 0)
        return fail(st, GD_ERR_ARG, "patch: bad resource, namespace or name");
    return k8s_request(c, "PATCH", path, patch, CT[type], out, st);
}

/* DeleteOptions as the API expects it; NULL opts sends no body. */
static cJSON *delete_options(const k8s_delete_opts *o)
{
    cJSON *d = cJSON_CreateObject();
    if (!d)
        return NULL;
    bool ok = cJSON_AddStringToObject(d, "kind", "DeleteOptions") &&
              cJSON_AddStringToObject(d, "apiVersion", "v1");
    if (ok && (o->precondition_uid || o->precondition_rv)) {
        cJSON *pre = cJSON_AddObjectToObject(d, "preconditions");
        ok = pre && (!o->precondition_uid ||
                     cJSON_AddStringToObject(pre, "uid", o->precondition_uid)) &&
             (!o->precondition_rv ||
              cJSON_AddStringToObject(pre, "resourceVersion", o->precondition_rv));
    }
    if (ok && o->propagation_policy)
        ok = cJSON_AddStringToObject(d, "propagationPolicy", o->propagation_policy) != NULL;
    if (ok && o->grace_period_seconds >= 0)
        ok = cJSON_AddNumberToObject(d, "gracePeriodSeconds",
                                     (double)o->grace_period_seconds) != NULL;
    if (ok && o->dry_run) {
        cJSON *dr = cJSON_AddArrayToObject(d, "dryRun");
        cJSON *all = cJSON_CreateString("All");
        ok = dr && all;
        if (ok)
            cJSON_AddItemToArray(dr, all);
        else
            cJSON_Delete(all);
    }
    if (!ok) {
        cJSON_Delete(d);
        return NULL;
    }
    return d;
}

gd_err k8s_delete(k8s_client *c, const k8s_resource *r, const char *ns, const char *name,
                  const k8s_delete_opts *o, k8s_status *st)
{
    char path[PATH_CAP];
    if (!name || !name[0] || k8s_path(path, sizeof path, r, ns, name, NULL) < 0)
        return fail(st, GD_ERR_ARG, "delete: bad resource, namespace or name");
    /* The answer (a Status or the object) is read even though nobody needs it: a 2xx that
     * is not JSON came from something that is not an API server (a proxy's page), and the
     * delete did not happen. */
    cJSON *resp = NULL, *opts = NULL;
    if (o && !(opts = delete_options(o)))
        return fail(st, GD_ERR_NOMEM, "delete: cannot build DeleteOptions");
    gd_err e = opts ? request_json(c, "DELETE", path, opts, "application/json", &resp, st)
                    : k8s_request(c, "DELETE", path, NULL, NULL, &resp, st);
    cJSON_Delete(opts);
    cJSON_Delete(resp);
    return e;
}

/* ---- watch ---- */

typedef struct {
    k8s_watch_fn fn;
    void *ud;
    k8s_watch_decoder *dec;
    gd_err stop_err;              /* why the stream was stopped from our side */
    k8s_status error_status;      /* the Status of an ERROR event */
    unsigned long bad_events;
    bool end_on_bad;              /* k8s_watch_opts.end_on_bad_event */
    int (*on_line)(void *ud, const char *line, size_t n);   /* k8s_watch_opts.on_line */
    char path[PATH_CAP];
} watch_ctx;

static int watch_on_event(void *ud, const char *type, cJSON *obj)
{
    watch_ctx *w = ud;
    if (w->stop_err != GD_OK)
        return 1;                 /* a bad line ended the watch: nothing after it counts */
    if (strcmp(type, "ERROR") == 0) {
        /* a Status: 410 Expired/Gone means relist; anything else ends this watch too */
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(obj, "code");
        char *txt = cJSON_PrintUnformatted(obj);
        /* an HTTP status from the stream: anything else (1e999, -3) is not one, and
         * converting it would be undefined behaviour (found by fuzzing: fuzz_watch) */
        long http = cJSON_IsNumber(code) && code->valuedouble >= 100 && code->valuedouble <= 599
                        ? (long)code->valuedouble : 500;
        gd_err e = k8s_classify(http, txt, txt ? strlen(txt) : 0, NULL, &w->error_status);
        free(txt);
        if (e == GD_OK)
            e = w->error_status.err = GD_ERR_UNEXPECTED;
        w->fn(w->ud, type, obj);
        w->stop_err = e;
        return 1;
    }
    if (w->fn(w->ud, type, obj) != 0) {
        w->stop_err = GD_ERR_CANCELLED;
        return 1;
    }
    return 0;
}

static int watch_on_line(void *ud, const char *line, size_t n)
{
    watch_ctx *w = ud;
    if (w->stop_err != GD_OK)
        return -1;                /* as watch_on_event: nothing after the end counts */
    int r = w->on_line(w->ud, line, n);
    if (r < 0)
        w->stop_err = GD_ERR_CANCELLED;
    return r;
}

static void watch_on_error(void *ud, gd_err err, const char *what)
{
    watch_ctx *w = ud;
    w->bad_events++;
    if (w->end_on_bad) {
        if (w->stop_err == GD_OK) {   /* the first bad line is the reason; the caller logs it */
            w->stop_err = err;
            memset(&w->error_status, 0, sizeof w->error_status);
            w->error_status.err = err;
            snprintf(w->error_status.reason, sizeof w->error_status.reason, "%s",
                     K8S_REASON_GARBAGE);
            snprintf(w->error_status.message, sizeof w->error_status.message, "%s", what);
        }
        return;
    }
    gd_log(GD_LOG_WARN, "dropped a bad watch event", "path", w->path, "error",
           err == GD_ERR_TOO_LARGE ? "TooLarge" : "Parse", "detail", what, NULL);
}

static int watch_sink(void *ud, const char *p, size_t n)
{
    watch_ctx *w = ud;
    if (w->stop_err != GD_OK)
        return 1;
    gd_err e = k8s_watch_decoder_feed(w->dec, p, n);
    if (e != GD_OK && e != GD_ERR_CANCELLED) {    /* the decoder itself failed (memory) */
        w->stop_err = e;
        w->error_status.err = e;
        snprintf(w->error_status.message, sizeof w->error_status.message,
                 "watch decoder failed: out of memory");
    }
    /* a bad line with end_on_bad (no event followed it in this piece) */
    return e == GD_OK && w->stop_err == GD_OK ? 0 : 1;
}

gd_err k8s_watch(k8s_client *c, const k8s_resource *r, const char *ns,
                 const k8s_watch_opts *o, k8s_watch_fn fn, void *ud, k8s_status *st)
{
    if (!c || !fn)
        return fail(st, GD_ERR_ARG, "watch: no client or callback");
    watch_ctx *w = calloc(1, sizeof *w);
    if (!w)
        return fail(st, GD_ERR_NOMEM, "watch: out of memory");
    w->fn = fn;
    w->ud = ud;
    w->end_on_bad = o && o->end_on_bad_event;
    if (k8s_path(w->path, sizeof w->path, r, ns, NULL, NULL) < 0) {
        free(w);
        return fail(st, GD_ERR_ARG, "watch: bad resource or namespace");
    }
    qbuf q = {w->path, strlen(w->path), sizeof w->path, true};
    q_add(&q, "watch", "1");
    if (!o || o->allow_bookmarks)
        q_add(&q, "allowWatchBookmarks", "true");
    const k8s_list_opts *lo = o ? &o->list : NULL;
    if (lo) {
        q_add(&q, "resourceVersion", lo->resource_version);
        if (lo->timeout_seconds > 0)
            q_add_long(&q, "timeoutSeconds", lo->timeout_seconds);
        q_add(&q, "labelSelector", lo->label_selector);
        q_add(&q, "fieldSelector", lo->field_selector);
    }
    w->dec = q.ok ? k8s_watch_decoder_new(o ? o->max_event_bytes : 0, watch_on_event,
                                          watch_on_error, w)
                  : NULL;
    if (!w->dec) {
        free(w);
        return fail(st, q.ok ? GD_ERR_NOMEM : GD_ERR_ARG, "watch: cannot set up");
    }
    w->on_line = o ? o->on_line : NULL;
    if (w->on_line)
        k8s_watch_decoder_set_line_fn(w->dec, watch_on_line);
    k8s_http_req rq = {
        .method = "GET", .path = w->path, .watch = true,
        .watch_timeout_s = lo ? lo->timeout_seconds : 0,
        .sink = watch_sink, .sink_ud = w, .stop = o ? o->stop : NULL,
        .stop_fd = o ? o->stop_fd : NULL,
        .idle_timeout_ms = o ? o->idle_timeout_ms : 0,
        .idle_timeout_live = o ? o->idle_timeout_live : NULL,
    };
    k8s_status local;
    if (!st)
        st = &local;
    gd_err e = k8s_http_do(c, &rq, NULL, st);
    size_t pending = k8s_watch_decoder_pending(w->dec);

    if (e == GD_ERR_CANCELLED && w->stop_err != GD_OK) {
        e = w->stop_err;               /* ERROR event (410 → Gone) or the callback's stop */
        if (e != GD_ERR_CANCELLED) {
            long code = st->http_status;
            *st = w->error_status;
            if (!st->http_status)
                st->http_status = code;
        } else {
            st->err = e;
            snprintf(st->message, sizeof st->message, "stopped by the watch callback");
        }
    } else if ((e == GD_OK || e == GD_ERR_CLOSED) && pending > 0) {
        char why[200] = "";
        if (e != GD_OK) {       /* curl's reason for the cut, shortened to fit beside ours */
            size_t wl = strnlen(st->message, sizeof why - 1);
            memcpy(why, st->message, wl);
            why[wl] = '\0';
        }
        e = GD_ERR_CLOSED;
        st->err = e;
        snprintf(st->reason, sizeof st->reason, "%s", K8S_REASON_TRUNCATED);
        snprintf(st->message, sizeof st->message,
                 "watch stream ended inside an event: %zu bytes of it discarded%s%s", pending,
                 why[0] ? "; " : "", why);
    }
    k8s_watch_decoder_destroy(&w->dec);
    free(w);
    return e;
}
