/* gd_err.c — names and retry classes of the project's one error enum. */
#include "gd_err.h"

/* Indexed by gd_err; the names follow Kubernetes' Status.reason where one exists so a log
 * line reads the same as the API's own vocabulary. */
static const char *const err_names[GD_ERR__COUNT] = {
    [GD_OK] = "OK",
    [GD_ERR_NOMEM] = "OutOfMemory",
    [GD_ERR_ARG] = "InvalidArgument",
    [GD_ERR_CONFIG] = "Config",
    [GD_ERR_IO] = "IO",
    [GD_ERR_PARSE] = "Parse",
    [GD_ERR_MISSING] = "Missing",
    [GD_ERR_TYPE] = "WrongType",
    [GD_ERR_TOO_LARGE] = "TooLarge",
    [GD_ERR_CLOSED] = "Closed",
    [GD_ERR_CANCELLED] = "Cancelled",
    [GD_ERR_TIMEOUT] = "Timeout",
    [GD_ERR_PROTOCOL] = "Protocol",
    [GD_ERR_ZMQ] = "ZMQ",
    [GD_ERR_FENCED] = "Fenced",
    [GD_ERR_TRANSPORT] = "Transport",
    [GD_ERR_BAD_REQUEST] = "BadRequest",
    [GD_ERR_UNAUTHORIZED] = "Unauthorized",
    [GD_ERR_FORBIDDEN] = "Forbidden",
    [GD_ERR_NAMESPACE_TERMINATING] = "NamespaceTerminating",
    [GD_ERR_NOT_FOUND] = "NotFound",
    [GD_ERR_METHOD] = "MethodNotAllowed",
    [GD_ERR_ALREADY_EXISTS] = "AlreadyExists",
    [GD_ERR_CONFLICT] = "Conflict",
    [GD_ERR_GONE] = "Gone",
    [GD_ERR_INVALID] = "Invalid",
    [GD_ERR_TOO_MANY_REQUESTS] = "TooManyRequests",
    [GD_ERR_SERVER] = "ServerError",
    [GD_ERR_UNEXPECTED] = "Unexpected",
};

const char *gd_strerror(gd_err e)
{
    if ((int)e < 0 || e >= GD_ERR__COUNT || !err_names[e])
        return "Unknown";
    return err_names[e];
}

int gd_err_retryable(gd_err e)
{
    switch (e) {
    case GD_ERR_TRANSPORT:
    case GD_ERR_TIMEOUT:
    case GD_ERR_TOO_MANY_REQUESTS:
    case GD_ERR_SERVER:
    case GD_ERR_IO:
    case GD_ERR_CLOSED:
        return 1;
    default:
        return 0;
    }
}
