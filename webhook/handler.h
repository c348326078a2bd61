/* handler.h — one AdmissionReview in, one answer out: parse (review.h), read the pod from
 * the API server, decide (decide.h), mark the pod when the decision says so. Thread-safe:
 * the server calls it from a thread per connection. */
#ifndef WH_HANDLER_H
#define WH_HANDLER_H
#include <stdatomic.h>
#include <stddef.h>
#include "decide.h"
#include "k8s_client.h"

typedef struct {
    k8s_client *client;
    wh_limiter *lim;
    atomic_ulong reviews, allowed, marked, waited, gone, bad;
} wh_handler;

/* wh_review_fn for server.h: 200 with the review's answer, or 400 with one line saying
 * what is wrong with the body. */
int wh_handle_review(void *ud, const char *body, size_t len, char **out, const char **type);

#endif
