/* k8s_classify.c — HTTP status + Status body → gd_err, as client-go's apimachinery errors do.
 *
 * client-go trusts Status.reason first and falls back to the HTTP code only when the reason
 * is unknown (errors.IsNotFound: reason == NotFound || (reason unknown && code == 404)). We do
 * the same, which is what tells the two 409s apart: AlreadyExists (create of an existing
 * name) and Conflict (stale resourceVersion or failed precondition).
 *
 * Error bodies are not always Status JSON: a proxy answers with HTML, a crashing server with
 * nothing, a broken one with garbage. Those are classified by status alone and their text,
 * sanitised to one printable line, becomes the message. */
#include "k8s_client.h"
#include "k8s_internal.h"
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest valid UTF-8 sequence starting at s (n bytes available): its length, or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    size_t need;
    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        need = 2;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        need = 3;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        need = 4;
    else
        return 0;
    if (n < need)
        return 0;
    for (size_t i = 1; i < need; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    /* reject overlongs and surrogates, the usual suspects */
    if (need == 3 && s[0] == 0xe0 && s[1] < 0xa0)
        return 0;
    if (need == 3 && s[0] == 0xed && s[1] >= 0xa0)
        return 0;
    if (need == 4 && s[0] == 0xf0 && s[1] < 0x90)
        return 0;
    if (need == 4 && s[0] == 0xf4 && s[1] >= 0x90)
        return 0;
    return need;
}

size_t k8s_sanitize(char *dst, size_t cap, const char *src, size_t len)
{
    if (!dst || cap == 0)
        return 0;
    const unsigned char *s = (const unsigned char *)(src ? src : "");
    size_t j = 0, i = 0;
    int space = 1;                       /* drops leading whitespace, collapses runs */
    int truncated = 0;
    while (i < len) {
        size_t n = utf8_seq(s + i, len - i);
        const char *out = (const char *)s + i;
        size_t outn = n;
        int is_space = 0;
        if (n == 0) {                    /* invalid byte */
            out = "?";
            outn = 1;
            n = 1;
        } else if (n == 1 && (s[i] < 0x20 || s[i] == 0x7f || s[i] == ' ')) {
            is_space = 1;
        }
        i += n;
        if (is_space) {
            space = 1;
            continue;
        }
        size_t need = outn + (space && j > 0 ? 1 : 0);
        if (j + need + 1 > cap) {
            truncated = 1;
            break;
        }
        if (space && j > 0)
            dst[j++] = ' ';
        memcpy(dst + j, out, outn);
        j += outn;
        space = 0;
    }
    if (truncated && cap >= 8) {
        /* make room for "..." without splitting a UTF-8 sequence: step back over whole
         * characters (continuation bytes are 10xxxxxx) */
        while (j + 4 > cap) {
            j--;
            while (j > 0 && ((unsigned char)dst[j] & 0xc0) == 0x80)
                j--;
        }
        memcpy(dst + j, "...", 3);
        j += 3;
    }
    dst[j] = '\0';
    return j;
}

static void copy_field(char *dst, size_t cap, const char *s)
{
    k8s_sanitize(dst, cap, s, s ? strlen(s) : 0);
}

/* Retry-After as delay-seconds; an HTTP-date or garbage gives -1. */
static int parse_retry_after(const char *v)
{
    if (!v)
        return -1;
    while (*v == ' ' || *v == '\t')
        v++;
    if (!isdigit((unsigned char)*v))
        return -1;
    errno = 0;
    char *end;
    long s = strtol(v, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
        end++;
    if (errno || *end)
        return -1;
    return s > 86400 ? 86400 : (int)s;
}

static const struct {
    const char *reason;
    gd_err err;
} REASONS[] = {
    {"NotFound", GD_ERR_NOT_FOUND},
    {"AlreadyExists", GD_ERR_ALREADY_EXISTS},
    {"Conflict", GD_ERR_CONFLICT},
    {"Gone", GD_ERR_GONE},
    {"Expired", GD_ERR_GONE},
    {"Invalid", GD_ERR_INVALID},
    {"TooManyRequests", GD_ERR_TOO_MANY_REQUESTS},
    {"Unauthorized", GD_ERR_UNAUTHORIZED},
    {"Forbidden", GD_ERR_FORBIDDEN},
    {"BadRequest", GD_ERR_BAD_REQUEST},
    {"MethodNotAllowed", GD_ERR_METHOD},
    {"InternalError", GD_ERR_SERVER},
    {"ServiceUnavailable", GD_ERR_SERVER},
    {"Timeout", GD_ERR_SERVER},
    {"ServerTimeout", GD_ERR_SERVER},
};

static gd_err by_status(long code)
{
    switch (code) {
    case 400: return GD_ERR_BAD_REQUEST;
    case 401: return GD_ERR_UNAUTHORIZED;
    case 403: return GD_ERR_FORBIDDEN;
    case 404: return GD_ERR_NOT_FOUND;
    case 405: return GD_ERR_METHOD;
    case 409: return GD_ERR_CONFLICT;
    case 410: return GD_ERR_GONE;
    case 422: return GD_ERR_INVALID;
    case 429: return GD_ERR_TOO_MANY_REQUESTS;
    default:
        if (code >= 500 && code <= 599)
            return GD_ERR_SERVER;
        if (code <= 0)
            return GD_ERR_TRANSPORT;
        return GD_ERR_UNEXPECTED;
    }
}

gd_err k8s_classify_ex(long http_status, const char *body, size_t len,
                       const char *retry_after, k8s_status *st, int *retry_after_raw)
{
    k8s_status local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    st->http_status = http_status;
    if (retry_after_raw)
        *retry_after_raw = -1;
    if (http_status >= 200 && http_status <= 299) {
        st->err = GD_OK;
        return GD_OK;
    }

    int ra = parse_retry_after(retry_after);
    cJSON *root = (body && len) ? cJSON_ParseWithLength(body, len) : NULL;
    const cJSON *reason = cJSON_GetObjectItemCaseSensitive(root, "reason");
    const cJSON *message = cJSON_GetObjectItemCaseSensitive(root, "message");
    int is_status = cJSON_IsObject(root) && (cJSON_IsString(reason) || cJSON_IsString(message));

    gd_err err = GD_ERR__COUNT;
    if (is_status) {
        if (cJSON_IsString(reason)) {
            copy_field(st->reason, sizeof st->reason, reason->valuestring);
            for (size_t i = 0; i < sizeof REASONS / sizeof REASONS[0]; i++)
                if (strcmp(reason->valuestring, REASONS[i].reason) == 0)
                    err = REASONS[i].err;
        }
        if (cJSON_IsString(message))
            copy_field(st->message, sizeof st->message, message->valuestring);
        const cJSON *details = cJSON_GetObjectItemCaseSensitive(root, "details");
        const cJSON *ras = cJSON_GetObjectItemCaseSensitive(details, "retryAfterSeconds");
        if (ra < 0 && cJSON_IsNumber(ras) && ras->valuedouble >= 0)
            ra = ras->valuedouble > 86400 ? 86400 : (int)ras->valuedouble;
        /* a create in a namespace being deleted is refused 403 Forbidden, told apart from a
         * missing right by its cause (StatusCause.Type is "reason" on the wire) */
        const cJSON *cause;
        cJSON_ArrayForEach(cause, cJSON_GetObjectItemCaseSensitive(details, "causes")) {
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(cause, "reason");
            if (err == GD_ERR_FORBIDDEN && cJSON_IsString(t) &&
                strcmp(t->valuestring, "NamespaceTerminating") == 0)
                err = GD_ERR_NAMESPACE_TERMINATING;
        }
    } else if (body && len) {
        st->foreign = true;
        k8s_sanitize(st->message, sizeof st->message, body, len);
    }
    if (!st->message[0])
        snprintf(st->message, sizeof st->message, "HTTP status %ld with %s body", http_status,
                 (body && len) ? "an unreadable" : "an empty");
    cJSON_Delete(root);

    if (err == GD_ERR__COUNT)
        err = by_status(http_status);
    st->retry_after_s = ra > 0 ? ra : 0;
    if (retry_after_raw)
        *retry_after_raw = ra;
    st->err = err;
    return err;
}

gd_err k8s_classify(long http_status, const char *body, size_t len, const char *retry_after,
                    k8s_status *st)
{
    return k8s_classify_ex(http_status, body, len, retry_after, st, NULL);
}
