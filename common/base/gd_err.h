/* gd_err.h — the one error enum of the whole project (curl's CURLcode is the model).
 *
 * Every fallible function returns gd_err. API failures are classified from the HTTP status
 * and the Status body's `reason` (see k8s_client.h); the API's own message travels beside
 * the code in a k8s_status so logs and conditions can quote it. */
#ifndef GD_ERR_H
#define GD_ERR_H

typedef enum {
    GD_OK = 0,
    /* local failures */
    GD_ERR_NOMEM,           /* allocation failed */
    GD_ERR_ARG,             /* caller passed something invalid */
    GD_ERR_CONFIG,          /* configuration (kubeconfig, flags, YAML) is unusable */
    GD_ERR_IO,              /* file or socket I/O failed */
    GD_ERR_PARSE,           /* input was not what its format requires (JSON, YAML, base64, RESP) */
    GD_ERR_MISSING,         /* a required field/path is absent (JSON getters) */
    GD_ERR_TYPE,            /* a field is present but of the wrong type (JSON getters) */
    GD_ERR_TOO_LARGE,       /* input exceeds a cap (watch event, buffer) */
    GD_ERR_CLOSED,          /* stream ended / peer closed */
    GD_ERR_CANCELLED,       /* stopped on request */
    GD_ERR_TIMEOUT,         /* a deadline passed */
    GD_ERR_PROTOCOL,        /* a peer broke a wire protocol (ZeroMQ frames, RESP) */
    GD_ERR_ZMQ,             /* ZeroMQ call failed */
    GD_ERR_FENCED,          /* a write was refused because the lease deadline has passed */
    /* transport */
    GD_ERR_TRANSPORT,       /* connect/TLS/DNS/reset: no HTTP status */
    /* API server answers, by Status.reason / HTTP status */
    GD_ERR_BAD_REQUEST,     /* 400 BadRequest */
    GD_ERR_UNAUTHORIZED,    /* 401 */
    GD_ERR_FORBIDDEN,       /* 403 */
    GD_ERR_NAMESPACE_TERMINATING, /* 403 with the cause NamespaceTerminating: a create in a
                                     namespace being deleted (expected; not a missing right) */
    GD_ERR_NOT_FOUND,       /* 404 NotFound */
    GD_ERR_METHOD,          /* 405 MethodNotAllowed */
    GD_ERR_ALREADY_EXISTS,  /* 409 AlreadyExists */
    GD_ERR_CONFLICT,        /* 409 Conflict (stale resourceVersion, precondition failed) */
    GD_ERR_GONE,            /* 410 Gone / Expired: resourceVersion too old */
    GD_ERR_INVALID,         /* 422 Invalid */
    GD_ERR_TOO_MANY_REQUESTS, /* 429 (Retry-After in k8s_status.retry_after_s) */
    GD_ERR_SERVER,          /* 5xx, InternalError, ServiceUnavailable, Timeout */
    GD_ERR_UNEXPECTED,      /* any other HTTP status */
    GD_ERR__COUNT
} gd_err;

/* Stable short name, e.g. "NotFound", "Transport". Never NULL. */
const char *gd_strerror(gd_err e);

/* True for errors worth retrying with backoff (transport, timeout, 429, 5xx). */
int gd_err_retryable(gd_err e);

/* Process exit codes shared by every program (nginx's "fatal, do not respawn" idea). */
enum {
    GD_EXIT_OK = 0,
    GD_EXIT_FAILURE = 1,      /* transient: a supervisor restarts it with backoff */
    GD_EXIT_FATAL_CONFIG = 2, /* fatal configuration error: do not restart */
};

#endif
