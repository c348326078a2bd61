/* k8s_internal.h — helpers shared by the k8s_*.c files of common/, not a public API. */
#ifndef K8S_INTERNAL_H
#define K8S_INTERNAL_H
#include <stddef.h>
#include "k8s_client.h"

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

#endif
