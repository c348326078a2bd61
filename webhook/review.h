/* review.h — AdmissionReview (admission.k8s.io/v1, and v1beta1 of the same shape) for the
 * pods/eviction subresource: parse what the API server sends, build what it expects back.
 *
 * Pure functions (no I/O, no globals) so the unit tests and a fuzz target can drive them
 * with any bytes: a body that is not a well-formed review is GD_ERR_INVALID with one line
 * naming the problem, which the server answers with HTTP 400. */
#ifndef WH_REVIEW_H
#define WH_REVIEW_H
#include <stdbool.h>
#include <stddef.h>
#include "gd_err.h"

#define WH_REVIEW_MAX_BODY (1u << 20)   /* the API server's reviews of an eviction are ~2 KiB */

typedef struct {
    char api_version[32];     /* "admission.k8s.io/v1" or "admission.k8s.io/v1beta1": echoed */
    char uid[128];            /* request.uid: echoed in response.uid */
    char operation[16];       /* "CREATE" */
    char group[64], version[16], resource[64], sub_resource[64];   /* request.resource */
    char ns[254], name[254];  /* the pod: request.namespace, request.name */
    char eviction_version[32];/* object.apiVersion: "policy/v1", "policy/v1beta1"; "" if none */
    bool dry_run;             /* request.dryRun, or the Eviction's deleteOptions.dryRun */
} wh_review;

/* True for a CREATE of pods/eviction in the core group (what our configuration asks for;
 * anything else the API server might send is allowed unexamined). */
bool wh_review_is_eviction(const wh_review *r);

gd_err wh_review_parse(const char *body, size_t len, wh_review *r, char *why, size_t whylen);

typedef struct {
    bool allowed;
    int code;                 /* denied: 429, 404, ...; allowed: 200 */
    const char *reason;       /* metav1.StatusReason: "TooManyRequests", "NotFound", ... */
    char message[1024];
} wh_verdict;

/* The AdmissionReview response (same apiVersion as the request, uid echoed), as a
 * malloc'd JSON string; NULL when out of memory. */
char *wh_review_response(const wh_review *r, const wh_verdict *v);

#endif
