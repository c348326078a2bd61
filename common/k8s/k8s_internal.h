/* k8s_internal.h — helpers shared by the k8s_*.c files of common/, not a public API. */
#ifndef K8S_INTERNAL_H
#define K8S_INTERNAL_H
#include <stdbool.h>
#include <stddef.h>
#include "k8s_client.h"
#include "k8s_exec.h"

/* Copies len bytes of untrusted text into dst as one printable line: control characters
 * and whitespace runs become one space, invalid UTF-8 becomes '?', and a text that does not
 * fit is cut on a character boundary and ends in "...". Returns the length written. */
size_t k8s_sanitize(char *dst, size_t cap, const char *src, size_t len);

/* k8s_classify, also giving the Retry-After delay as sent (-1 when there was none). */
gd_err k8s_classify_ex(long http_status, const char *body, size_t len,
                       const char *retry_after, k8s_status *st, int *retry_after_raw);

/* Percent-encodes s into out (RFC 3986 unreserved characters pass through). Returns the
 * length written, or -1 when it does not fit. */
int k8s_urlencode(char *out, size_t cap, const char *s);

/* ---- authentication (k8s_auth.c): who we are on each request ----
 * A bearer token from the kubeconfig, or from its tokenFile (re-read when it changes, at
 * most once a second, at once after a 401), or from an exec plugin (k8s_exec.h). Client
 * certificates from the kubeconfig are set on the TLS handle by k8s_http.c. */
typedef struct k8s_auth k8s_auth;
k8s_auth *k8s_auth_new(const k8s_config *cfg, long exec_timeout_ms);  /* NULL: no memory */
void      k8s_auth_destroy(k8s_auth **a);
/* The exec plugin's credential for one request (*cred: a reference to release; NULL
 * without a plugin). On failure st says why, as a transport-class error (client-go's
 * "getting credentials: …"), so callers retry it like a connection that failed. */
gd_err    k8s_auth_cred(k8s_auth *a, k8s_cred **cred, k8s_status *st);
/* "Authorization: Bearer <token>" (malloc'd; the caller wipes and frees it), or NULL when
 * there is no token (*nomem tells an allocation failure apart). */
char     *k8s_auth_header(k8s_auth *a, const k8s_cred *cred, bool *nomem);
/* The server answered 401 to a request made with `used` (NULL: static credentials). The
 * token file is read again at the next request; with an exec plugin, it runs again and the
 * new credential is returned (a reference), else NULL. */
k8s_cred *k8s_auth_unauthorized(k8s_auth *a, const k8s_cred *used);

/* One HTTP exchange, as k8s_client.c asks k8s_http.c for it. */
typedef struct {
    const char *method;          /* "GET", "POST", "PUT", "PATCH", "DELETE" */
    const char *path;            /* "/api/v1/...?query", already encoded */
    const char *body;            /* NULL: none */
    size_t body_len;
    const char *content_type;    /* for the body */
    bool watch;                  /* no total timeout (only timeoutSeconds + slack) */
    int watch_timeout_s;
    /* Streaming: a 2xx body goes to sink as it arrives (non-zero return aborts the transfer
     * with GD_ERR_CANCELLED); an error body is still collected and classified. */
    int (*sink)(void *ud, const char *p, size_t n);
    void *sink_ud;
    const volatile int *stop;    /* polled every 100 ms; non-zero cancels */
    const int *stop_fd;          /* NULL, or a wake fd readable once *stop is set: the
                                  * transfer's wait includes it and stops polling */
    /* > 0: a progress deadline. No byte of the response (header or body) for this long
     * ends the transfer with GD_ERR_TIMEOUT and K8S_REASON_STALLED in st->reason: a watch
     * whose server stopped sending must end even when the connection stays up. */
    long idle_timeout_ms;
    const long *idle_timeout_live;   /* k8s_watch_opts.idle_timeout_live */
} k8s_http_req;

typedef struct {
    long status;
    char *body;                  /* malloc'd, NUL-terminated, or NULL when empty */
    size_t len;
} k8s_http_resp;

/* Sends rq (honouring the token bucket, retrying 429 as configured) and classifies the
 * answer. On GD_OK, rs (if given) owns the body. After a stream that broke mid-way the
 * result is GD_ERR_CLOSED (GD_ERR_TIMEOUT when our own deadline cut it). */
gd_err k8s_http_do(k8s_client *c, const k8s_http_req *rq, k8s_http_resp *rs, k8s_status *st);

#endif
