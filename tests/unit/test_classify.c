/* test_classify.c — HTTP status + Status body → gd_err, including bodies that are not
 * Status JSON at all (proxy HTML, empty, binary garbage). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include "k8s_client.h"
#include "k8s_internal.h"

static const char *status_body(char *buf, size_t cap, long code, const char *reason,
                               const char *msg)
{
    snprintf(buf, cap,
             "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
             "\"message\":\"%s\",\"reason\":\"%s\",\"code\":%ld}", msg, reason, code);
    return buf;
}

static void test_status_table(void **state)
{
    (void)state;
    static const struct {
        long code;
        const char *reason;
        gd_err want;
    } T[] = {
        {404, "NotFound", GD_ERR_NOT_FOUND},
        {409, "AlreadyExists", GD_ERR_ALREADY_EXISTS},
        {409, "Conflict", GD_ERR_CONFLICT},
        {410, "Gone", GD_ERR_GONE},
        {410, "Expired", GD_ERR_GONE},
        {422, "Invalid", GD_ERR_INVALID},
        {429, "TooManyRequests", GD_ERR_TOO_MANY_REQUESTS},
        {401, "Unauthorized", GD_ERR_UNAUTHORIZED},
        {403, "Forbidden", GD_ERR_FORBIDDEN},
        {400, "BadRequest", GD_ERR_BAD_REQUEST},
        {405, "MethodNotAllowed", GD_ERR_METHOD},
        {500, "InternalError", GD_ERR_SERVER},
        {503, "ServiceUnavailable", GD_ERR_SERVER},
        {504, "Timeout", GD_ERR_SERVER},
        {500, "ServerTimeout", GD_ERR_SERVER},
        /* unknown reasons fall back to the status code */
        {409, "SomethingNew", GD_ERR_CONFLICT},
        {404, "", GD_ERR_NOT_FOUND},
        {502, "", GD_ERR_SERVER},
        {418, "Teapot", GD_ERR_UNEXPECTED},
        {302, "", GD_ERR_UNEXPECTED},
        {415, "UnsupportedMediaType", GD_ERR_UNEXPECTED},
    };
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        char body[512];
        status_body(body, sizeof body, T[i].code, T[i].reason, "the message");
        k8s_status st;
        gd_err e = k8s_classify(T[i].code, body, strlen(body), NULL, &st);
        if (e != T[i].want)
            fail_msg("code %ld reason %s: got %d want %d", T[i].code, T[i].reason, e,
                     T[i].want);
        assert_int_equal(st.err, e);
        assert_int_equal(st.http_status, T[i].code);
        assert_string_equal(st.reason, T[i].reason);
        assert_string_equal(st.message, "the message");
        assert_false(st.foreign);
    }
}

static void test_success(void **state)
{
    (void)state;
    k8s_status st;
    assert_int_equal(k8s_classify(200, "{}", 2, NULL, &st), GD_OK);
    assert_int_equal(st.err, GD_OK);
    assert_int_equal(st.http_status, 200);
    assert_int_equal(k8s_classify(201, NULL, 0, NULL, NULL), GD_OK);
    assert_int_equal(k8s_classify(204, NULL, 0, NULL, &st), GD_OK);
}

static void test_retry_after(void **state)
{
    (void)state;
    char body[512];
    k8s_status st;
    status_body(body, sizeof body, 429, "TooManyRequests", "slow down");
    /* the header wins */
    assert_int_equal(k8s_classify(429, body, strlen(body), "7", &st),
                     GD_ERR_TOO_MANY_REQUESTS);
    assert_int_equal(st.retry_after_s, 7);
    /* details.retryAfterSeconds when there is no header */
    const char *b2 = "{\"kind\":\"Status\",\"reason\":\"TooManyRequests\",\"message\":\"m\","
                     "\"details\":{\"retryAfterSeconds\":3},\"code\":429}";
    assert_int_equal(k8s_classify(429, b2, strlen(b2), NULL, &st), GD_ERR_TOO_MANY_REQUESTS);
    assert_int_equal(st.retry_after_s, 3);
    /* an HTTP-date or junk header is ignored, details still used */
    assert_int_equal(k8s_classify(429, b2, strlen(b2), "Wed, 21 Oct 2026 07:28:00 GMT", &st),
                     GD_ERR_TOO_MANY_REQUESTS);
    assert_int_equal(st.retry_after_s, 3);
    assert_int_equal(k8s_classify(429, "", 0, " 12 \r\n", &st), GD_ERR_TOO_MANY_REQUESTS);
    assert_int_equal(st.retry_after_s, 12);
    assert_int_equal(k8s_classify(429, "", 0, "-5", &st), GD_ERR_TOO_MANY_REQUESTS);
    assert_int_equal(st.retry_after_s, 0);
    assert_int_equal(k8s_classify(429, "", 0, "99999999999999999999", &st),
                     GD_ERR_TOO_MANY_REQUESTS);
    assert_int_equal(st.retry_after_s, 0);
    int raw = 5;
    k8s_classify_ex(429, "", 0, NULL, &st, &raw);
    assert_int_equal(raw, -1);
    k8s_classify_ex(429, "", 0, "0", &st, &raw);
    assert_int_equal(raw, 0);
    /* Retry-After on a 503 is kept too */
    assert_int_equal(k8s_classify(503, "", 0, "2", &st), GD_ERR_SERVER);
    assert_int_equal(st.retry_after_s, 2);
}

/* A create in a namespace being deleted: 403 Forbidden like a missing right, told apart by
 * its cause (the body as kube-apiserver sends it). */
static void test_namespace_terminating(void **state)
{
    (void)state;
    const char *b = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                    "\"status\":\"Failure\",\"message\":\"configmaps \\\"b\\\" is forbidden: unable "
                    "to create new content in namespace x because it is being terminated\","
                    "\"reason\":\"Forbidden\",\"details\":{\"name\":\"b\",\"kind\":\"configmaps\","
                    "\"causes\":[{\"reason\":\"NamespaceTerminating\",\"message\":\"namespace x "
                    "is being terminated\",\"field\":\"metadata.namespace\"}]},\"code\":403}";
    k8s_status st;
    assert_int_equal(k8s_classify(403, b, strlen(b), NULL, &st), GD_ERR_NAMESPACE_TERMINATING);
    assert_int_equal(st.err, GD_ERR_NAMESPACE_TERMINATING);
    assert_string_equal(gd_strerror(st.err), "NamespaceTerminating");
    char plain[512];
    status_body(plain, sizeof plain, 403, "Forbidden", "no right");
    assert_int_equal(k8s_classify(403, plain, strlen(plain), NULL, &st), GD_ERR_FORBIDDEN);
}

static void test_non_json_bodies(void **state)
{
    (void)state;
    k8s_status st;
    const char *html = "<html>\r\n<head><title>502 Bad Gateway</title></head>\n"
                       "<body>\t<center><h1>502 Bad Gateway</h1></center></body></html>\n";
    assert_int_equal(k8s_classify(502, html, strlen(html), NULL, &st), GD_ERR_SERVER);
    assert_string_equal(st.reason, "");
    assert_string_equal(st.message, "<html> <head><title>502 Bad Gateway</title></head> "
                                    "<body> <center><h1>502 Bad Gateway</h1></center></body>"
                                    "</html>");
    assert_true(st.foreign);                  /* godisctl says: not an API server */
    /* empty body */
    assert_int_equal(k8s_classify(404, "", 0, NULL, &st), GD_ERR_NOT_FOUND);
    assert_non_null(strstr(st.message, "404"));
    assert_false(st.foreign);
    assert_int_equal(k8s_classify(403, NULL, 0, NULL, &st), GD_ERR_FORBIDDEN);
    /* binary garbage becomes printable */
    const char garbage[] = "\x01\x02\xff\xfe ok \x00\x80 end";
    assert_int_equal(k8s_classify(409, garbage, sizeof garbage - 1, NULL, &st),
                     GD_ERR_CONFLICT);
    assert_string_equal(st.message, "?? ok ? end");
    for (const char *p = st.message; *p; p++)
        assert_true(*p >= 0x20 && *p < 0x7f);
    /* JSON that is not a Status: the raw text is the message */
    assert_int_equal(k8s_classify(500, "[1,2]", 5, NULL, &st), GD_ERR_SERVER);
    assert_string_equal(st.message, "[1,2]");
    /* truncated JSON */
    assert_int_equal(k8s_classify(422, "{\"reason\":\"Inv", 14, NULL, &st), GD_ERR_INVALID);
    assert_string_equal(st.reason, "");
    /* status 0 is a transport failure */
    assert_int_equal(k8s_classify(0, NULL, 0, NULL, &st), GD_ERR_TRANSPORT);
}

static void test_long_messages_truncated_safely(void **state)
{
    (void)state;
    /* 2000 bytes of 3-byte UTF-8 characters (U+00E9 is 2 bytes; use U+20AC, 3 bytes) */
    char msg[3000] = "";
    for (int i = 0; i < 600; i++)
        strcat(msg, "\xe2\x82\xac");
    char body[4000];
    snprintf(body, sizeof body, "{\"kind\":\"Status\",\"reason\":\"%s\",\"message\":\"%s\"}",
             "AVeryLongReasonThatIsLongerThanSixtyFourCharactersForSureYesIndeedItIs", msg);
    k8s_status st;
    assert_int_equal(k8s_classify(400, body, strlen(body), NULL, &st), GD_ERR_BAD_REQUEST);
    size_t n = strlen(st.message);
    assert_true(n < sizeof st.message);
    assert_memory_equal(st.message + n - 3, "...", 3);
    assert_int_equal((n - 3) % 3, 0);          /* cut on a character boundary */
    assert_true(strlen(st.reason) < sizeof st.reason);
    assert_memory_equal(st.reason, "AVeryLong", 9);

    /* a newline or escape in the API's message cannot break a log line */
    const char *b = "{\"reason\":\"NotFound\",\"message\":\"a\\nb\\u001b[31mc\"}";
    assert_int_equal(k8s_classify(404, b, strlen(b), NULL, &st), GD_ERR_NOT_FOUND);
    assert_string_equal(st.message, "a b [31mc");
}

static void test_sanitize_edges(void **state)
{
    (void)state;
    char out[8];
    assert_int_equal(k8s_sanitize(out, sizeof out, "abc", 3), 3);
    assert_string_equal(out, "abc");
    k8s_sanitize(out, sizeof out, "abcdefghijkl", 12);
    assert_string_equal(out, "abcd...");
    k8s_sanitize(out, sizeof out, NULL, 0);
    assert_string_equal(out, "");
    k8s_sanitize(out, sizeof out, "   \n\t  ", 7);
    assert_string_equal(out, "");
    char tiny[2];
    k8s_sanitize(tiny, sizeof tiny, "xyz", 3);
    assert_string_equal(tiny, "x");
    assert_int_equal(k8s_sanitize(NULL, 0, "x", 1), 0);
    /* overlong encodings and surrogates are invalid */
    k8s_sanitize(out, sizeof out, "\xc0\xaf\xed\xa0\x80", 5);
    assert_string_equal(out, "?????");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_table),
        cmocka_unit_test(test_success),
        cmocka_unit_test(test_retry_after),
        cmocka_unit_test(test_namespace_terminating),
        cmocka_unit_test(test_non_json_bodies),
        cmocka_unit_test(test_long_messages_truncated_safely),
        cmocka_unit_test(test_sanitize_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
