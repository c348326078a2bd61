/* k8s_client.h — the Kubernetes REST client every process uses (libcurl + cJSON).
 *
 * Thread-safety: one k8s_client may be shared by many threads. Each request borrows a curl
 * easy handle from the client's pool (so a handle is never used by two threads at once and
 * keeps its connections alive for reuse), and all requests pass one QPS/burst token bucket.
 * TLS is verified with OpenSSL unless the config says insecure-skip-tls-verify. HTTP/2 is
 * negotiated over TLS where libcurl offers it (watches: HTTP/1.1, watch_http2 says why).
 * Bearer tokens from a token file are re-read when the file changes.
 *
 * Errors: every verb returns gd_err classified from the HTTP status and the Status body's
 * `reason`; k8s_status (optional, may be NULL) keeps the status code, reason, the API's
 * message and Retry-After for logs and conditions. A 429 is retried by the client itself
 * after Retry-After (at most max_retries times) before it is returned. */
#ifndef K8S_CLIENT_H
#define K8S_CLIENT_H
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <cjson/cJSON.h>
#include "gd_err.h"
#include "k8s_config.h"

typedef struct k8s_client k8s_client;

typedef struct {
    double qps;                 /* client-side rate limit; default 50 (<0: unlimited) */
    int    burst;               /* default 100 */
    long   connect_timeout_ms;  /* default 5000 */
    long   request_timeout_ms;  /* whole non-watch request; default 30000 */
    int    max_retries_429;     /* default 3 */
    const char *user_agent;     /* default "godis-operator/<version> (<role>)" */
    bool   http2;               /* default true: negotiate h2 over TLS */
    /* Watches too (default false: a watch speaks HTTP/1.1). A watch never shares its
     * connection (each runs in a multi handle of its own), so h2 multiplexes nothing for
     * it, and against kube-apiserver 1.20 it costs: under a burst of writes the server's
     * per-event h2 write path falls behind and its watch cache drops the watcher ("Forcing
     * watcher close due to unresponsiveness") far more often than over HTTP/1.1 (30-53 of
     * 30-40 watchers against 0-1 in the same burst), and a dropped watcher's response is
     * then left open and silent (docs/architecture.md, informer). */
    bool   watch_http2;
    long   exec_timeout_ms;     /* an exec credential plugin's run; default 60000 */
} k8s_client_opts;
void k8s_client_opts_default(k8s_client_opts *o);
/* True when s may stand as one word in a User-Agent comment, e.g. the manager identity in
 * "godis-operator (worker; manager=<s>)": 1..253 visible ASCII characters, none of ( ) ; \
 * (so it can neither inject a header line nor end the comment early). */
bool k8s_user_agent_word_ok(const char *s);

/* Takes ownership of *cfg (set to NULL). NULL on failure. */
k8s_client *k8s_client_new(k8s_config **cfg, const k8s_client_opts *opts);
void        k8s_client_destroy(k8s_client **c);
const k8s_config *k8s_client_config(const k8s_client *c);
/* Counts every request sent (for api_requests_per_cluster and metrics). */
uint64_t    k8s_client_request_count(const k8s_client *c);

/* What the API server said, kept for logs and conditions. */
typedef struct {
    long http_status;           /* 0 for transport errors */
    gd_err err;
    char reason[64];            /* Status.reason, e.g. "NotFound" ("" when none) */
    char message[512];          /* Status.message or curl's error text (truncated) */
    int  retry_after_s;         /* from Retry-After or Status.details.retryAfterSeconds */
    bool foreign;               /* an error answer with a body that is no Kubernetes Status
                                   (a proxy's or a login page): message is that body */
} k8s_status;

/* A resource type: group "" is the core group (/api/v1), others /apis/<group>/<version>. */
typedef struct {
    const char *group, *version, *resource, *kind;
    bool namespaced;
} k8s_resource;
extern const k8s_resource K8S_RES_CONFIGMAPS, K8S_RES_PODS, K8S_RES_SERVICES,
    K8S_RES_PVCS, K8S_RES_NODES, K8S_RES_EVENTS, K8S_RES_NAMESPACES, K8S_RES_REPLICASETS,
    K8S_RES_LEASES, K8S_RES_GODISCLUSTERS, K8S_RES_GODISES, K8S_RES_PVS,
    K8S_RES_STORAGECLASSES, K8S_RES_CRDS, K8S_RES_SERVICEACCOUNTS, K8S_RES_SECRETS,
    K8S_RES_DEPLOYMENTS, K8S_RES_ROLES, K8S_RES_ROLEBINDINGS, K8S_RES_CLUSTERROLES,
    K8S_RES_CLUSTERROLEBINDINGS, K8S_RES_PDBS;
/* Looks a resource up by kind ("Pod"), plural ("pods") or short name; NULL if unknown. */
const k8s_resource *k8s_resource_lookup(const char *name);

/* Builds "/api/v1/namespaces/ns/pods/name/status" style paths; returns length or -1 when it
 * does not fit. ns may be NULL/"" (all namespaces or cluster-scoped); name and sub may be NULL.
 * Path segments are percent-encoded. */
int k8s_path(char *buf, size_t cap, const k8s_resource *r, const char *ns, const char *name,
             const char *subresource);

typedef struct {
    const char *label_selector, *field_selector;
    const char *resource_version;       /* "" or NULL: most recent (quorum read) */
    const char *resource_version_match; /* "NotOlderThan" / "Exact" or NULL */
    long limit;                         /* 0: no paging */
    const char *continue_token;
    int  timeout_seconds;               /* server-side timeout (watch) */
    const volatile int *stop;           /* list only: non-zero (set atomically) cancels a
                                         * request in flight within ~100 ms (GD_ERR_CANCELLED),
                                         * so a list the server is slow to answer does not
                                         * hold up a shutdown */
    const int *stop_fd;                 /* optional, with stop: a wake fd (gd_wake.h) made
                                         * readable when *stop is set; the request then
                                         * sleeps on it instead of looking every 100 ms */
} k8s_list_opts;

typedef struct {
    const char *precondition_uid, *precondition_rv; /* NULL: none */
    const char *propagation_policy;     /* "Foreground", "Background", "Orphan" or NULL */
    long grace_period_seconds;          /* -1: server default */
    bool dry_run;
} k8s_delete_opts;
void k8s_delete_opts_default(k8s_delete_opts *o);

typedef enum { K8S_PATCH_MERGE, K8S_PATCH_JSON, K8S_PATCH_STRATEGIC } k8s_patch_type;

/* Generic request: method, path (with query), optional body and content type. On success
 * *out (if out) receives the parsed body (NULL when the body is empty). */
gd_err k8s_request(k8s_client *c, const char *method, const char *path, const char *body,
                   const char *content_type, cJSON **out, k8s_status *st);

gd_err k8s_get(k8s_client *c, const k8s_resource *r, const char *ns, const char *name,
               cJSON **out, k8s_status *st);
/* One page; *out is the List object (items, metadata.resourceVersion, metadata.continue). */
gd_err k8s_list(k8s_client *c, const k8s_resource *r, const char *ns,
                const k8s_list_opts *o, cJSON **out, k8s_status *st);
/* k8s_list's request, with the response body as it came (malloc'd, *len bytes, NUL after
 * them; NULL when empty) for a caller that decodes it itself (the informer's list path). */
gd_err k8s_list_raw(k8s_client *c, const k8s_resource *r, const char *ns,
                    const k8s_list_opts *o, char **body, size_t *len, k8s_status *st);
gd_err k8s_create(k8s_client *c, const k8s_resource *r, const char *ns, const cJSON *obj,
                  cJSON **out, k8s_status *st);
/* PUT with the object's metadata.resourceVersion (optimistic concurrency → Conflict). */
gd_err k8s_update(k8s_client *c, const k8s_resource *r, const cJSON *obj, cJSON **out,
                  k8s_status *st);
gd_err k8s_update_status(k8s_client *c, const k8s_resource *r, const cJSON *obj,
                         cJSON **out, k8s_status *st);
/* subresource may be NULL or "status". */
gd_err k8s_patch(k8s_client *c, const k8s_resource *r, const char *ns, const char *name,
                 k8s_patch_type type, const char *patch, const char *subresource,
                 cJSON **out, k8s_status *st);
gd_err k8s_delete(k8s_client *c, const k8s_resource *r, const char *ns, const char *name,
                  const k8s_delete_opts *o, k8s_status *st);

/* ---- watch ---- */
/* Called once per whole event. type: "ADDED" "MODIFIED" "DELETED" "BOOKMARK" "ERROR".
 * object is borrowed (freed after the call; cJSON_DetachItem… to keep it).
 * Return 0 to continue, non-zero to stop the watch (k8s_watch then returns GD_ERR_CANCELLED). */
typedef int (*k8s_watch_fn)(void *ud, const char *type, cJSON *object);

typedef struct {
    k8s_list_opts list;                 /* selectors, resource_version, timeout_seconds */
    bool allow_bookmarks;
    size_t max_event_bytes;             /* cap per event; default 16 MiB */
    const volatile int *stop;           /* polled ~every 100 ms; non-zero aborts the watch
                                         * (read atomically: set it with __atomic_store_n) */
    const int *stop_fd;                 /* optional: as k8s_list_opts.stop_fd; an idle
                                         * watch then sleeps until a byte, its progress
                                         * deadline or the stop, not 10 times a second */
    /* > 0: the progress deadline. No byte (event, bookmark, blank keep-alive) for this long
     * ends the watch with GD_ERR_TIMEOUT, st->reason K8S_REASON_STALLED. A server that
     * stopped feeding a watch without ending it (or a response end we never saw) then
     * costs this long, not the whole timeoutSeconds. */
    long idle_timeout_ms;
    /* Optional: read on every pass instead of idle_timeout_ms, so the caller's event
     * handlers (which run on the watching thread) may shorten it while a burst flows. */
    const long *idle_timeout_live;
    /* A line that is no watch event (bad JSON, no type/object, over max_event_bytes) ends
     * the watch with GD_ERR_PARSE / GD_ERR_TOO_LARGE, st->reason K8S_REASON_GARBAGE, and no
     * event after it is delivered. Without it the line is logged and dropped: a consumer
     * that resumes from its last resourceVersion wants the end, because the line may have
     * been the one event that told it about a change. */
    bool end_on_bad_event;
    /* Optional fast path, called with the callback's ud and each whole event line before
     * it is parsed: 1 = consumed (no parse, no callback), 0 = parse and call the callback
     * as usual, -1 = stop (as the callback's non-zero). ERROR events must be left to the
     * callback (return 0): k8s_watch classifies them. */
    int (*on_line)(void *ud, const char *line, size_t n);
} k8s_watch_opts;

/* k8s_status.reason values k8s_watch sets for endings that are not the server's Status. */
#define K8S_REASON_STALLED   "WatchStalled"     /* progress deadline passed */
#define K8S_REASON_TRUNCATED "WatchTruncated"   /* the stream ended inside an event */
#define K8S_REASON_GARBAGE   "WatchGarbage"     /* a line that is no event (end_on_bad_event) */

/* Streams until the server ends the watch (GD_OK or GD_ERR_CLOSED), the callback stops it,
 * *stop is set (GD_ERR_CANCELLED), or an error. GD_ERR_CLOSED: the stream broke (between
 * events: the transport's reason in st->message; inside one: st->reason
 * K8S_REASON_TRUNCATED, the partial bytes discarded and counted in st->message). An ERROR
 * event whose Status is 410 returns GD_ERR_GONE (after calling the callback with it). */
gd_err k8s_watch(k8s_client *c, const k8s_resource *r, const char *ns,
                 const k8s_watch_opts *o, k8s_watch_fn fn, void *ud, k8s_status *st);

/* Classification used by the client, exposed for tests: status + body → error. Fills st. */
gd_err k8s_classify(long http_status, const char *body, size_t len, const char *retry_after,
                    k8s_status *st);

#endif
