/* fuzz_apistatus.c — what the API server (or whatever answers on its address: a proxy, a
 * load balancer's HTML page) sends back when a request fails: the HTTP status, the
 * Retry-After header and the body, into common/k8s/k8s_classify.c (Status objects, reasons,
 * details.retryAfterSeconds, bodies that are not JSON) and its k8s_sanitize, which turns
 * every untrusted text into the one printable line that logs, conditions and godisctl show.
 *
 * Input: two bytes of HTTP status (0..999), the Retry-After value up to a record separator,
 * then the body. Checked: the error is one of gd_err's, retry_after_s is within 0..86400, and
 * reason and message are NUL-terminated single lines of valid UTF-8 without control
 * characters. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_util.h"
#include "k8s_internal.h"

static void check_line(const char *s, size_t cap)
{
    size_t n = strnlen(s, cap);
    if (n == cap) abort();
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        if (u[i] < 0x20 || u[i] == 0x7f) abort();
        size_t need = u[i] < 0x80 ? 1 : u[i] >= 0xf0 ? 4 : u[i] >= 0xe0 ? 3 : u[i] >= 0xc2 ? 2 : 0;
        if (!need || i + need > n) abort();
        for (size_t k = 1; k < need; k++)
            if ((u[i + k] & 0xc0) != 0x80) abort();
        i += need;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t len)
{
    fz_quiet_logs();
    if (len < 2) return 0;
    long code = ((long)d[0] << 8 | d[1]) % 1000;
    const char *s = (const char *)d + 2;
    size_t rest = len - 2;
    const char *rs = memchr(s, FZ_RS, rest);
    char *retry = rs ? fz_strndup(s, (size_t)(rs - s)) : NULL;
    const char *body = rs ? rs + 1 : s;
    size_t blen = rest - (size_t)(body - s);
    k8s_status st;
    int raw = 0;
    gd_err e = k8s_classify_ex(code, blen ? body : NULL, blen, retry, &st, &raw);
    if (e < GD_OK || e >= GD_ERR__COUNT || st.err != e) abort();
    if ((code >= 200 && code <= 299) != (e == GD_OK)) abort();
    if (st.retry_after_s < 0 || st.retry_after_s > 86400 || raw > 86400) abort();
    check_line(st.reason, sizeof st.reason);
    check_line(st.message, sizeof st.message);
    /* the sanitiser alone, into a small buffer: cut on a character boundary */
    char small[24];
    size_t n = k8s_sanitize(small, sizeof small, body, blen);
    if (n != strlen(small)) abort();
    check_line(small, sizeof small);
    free(retry);
    return 0;
}
