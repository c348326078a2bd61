/* test_watch_decoder.c — the watch decoder must hand out exactly the whole events it has
 * seen, however the bytes are split, and never half an event. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "k8s_watch_decoder.h"

typedef struct {
    int events, errors, stop_after;
    gd_err last_err;
    char types[64][16];
    char names[64][64];
    size_t last_obj_len;
} sink;

static int on_event(void *ud, const char *type, cJSON *obj)
{
    sink *s = ud;
    if (s->events < 64) {
        snprintf(s->types[s->events], sizeof s->types[0], "%s", type);
        const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(md, "name");
        snprintf(s->names[s->events], sizeof s->names[0], "%s",
                 cJSON_IsString(n) ? n->valuestring : "");
        const cJSON *big = cJSON_GetObjectItemCaseSensitive(obj, "big");
        s->last_obj_len = cJSON_IsString(big) ? strlen(big->valuestring) : 0;
    }
    s->events++;
    return s->stop_after && s->events >= s->stop_after;
}

static void on_error(void *ud, gd_err err, const char *what)
{
    sink *s = ud;
    s->errors++;
    s->last_err = err;
    assert_non_null(what);
    assert_true(strlen(what) > 0);
}

static const char *STREAM =
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"b\"},\"spec\":{\"x\":\"{\\n}\"}}}\r\n"
    "\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"77\"}}}\n"
    "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"c\"}}}\n";

/* Number of whole events whose newline lies within the first k bytes. */
static int whole_events_in(const char *s, size_t k, size_t *end_of_last)
{
    int n = 0;
    size_t line_start = 0;
    *end_of_last = 0;
    for (size_t i = 0; i < k; i++) {
        if (s[i] == '\n') {
            if (i > line_start + 1)    /* non-blank line ("\r\n"-only would be blank too) */
                n++;
            line_start = i + 1;
            *end_of_last = i + 1;
        }
    }
    return n;
}

static void test_whole_stream_one_chunk(void **state)
{
    (void)state;
    sink s = {0};
    k8s_watch_decoder *d = k8s_watch_decoder_new(0, on_event, on_error, &s);
    assert_non_null(d);
    assert_int_equal(k8s_watch_decoder_feed(d, STREAM, strlen(STREAM)), GD_OK);
    assert_int_equal(s.events, 4);
    assert_int_equal(s.errors, 0);
    assert_string_equal(s.types[0], "ADDED");
    assert_string_equal(s.names[0], "a");
    assert_string_equal(s.types[1], "MODIFIED");
    assert_string_equal(s.names[1], "b");
    assert_string_equal(s.types[2], "BOOKMARK");
    assert_string_equal(s.types[3], "DELETED");
    assert_int_equal(k8s_watch_decoder_pending(d), 0);
    k8s_watch_decoder_destroy(&d);
    assert_null(d);
}

/* The stream cut at every byte position yields exactly the whole events before the cut,
 * and the rest is reported as pending (truncated) bytes. Fed both in one piece and byte by
 * byte. */
static void test_cut_at_every_byte(void **state)
{
    (void)state;
    size_t total = strlen(STREAM);
    for (size_t k = 0; k <= total; k++) {
        size_t end_last;
        int want = whole_events_in(STREAM, k, &end_last);
        for (int bytewise = 0; bytewise < 2; bytewise++) {
            sink s = {0};
            k8s_watch_decoder *d = k8s_watch_decoder_new(0, on_event, on_error, &s);
            if (bytewise) {
                for (size_t i = 0; i < k; i++)
                    assert_int_equal(k8s_watch_decoder_feed(d, STREAM + i, 1), GD_OK);
            } else {
                assert_int_equal(k8s_watch_decoder_feed(d, STREAM, k), GD_OK);
            }
            assert_int_equal(s.events, want);
            assert_int_equal(s.errors, 0);
            assert_int_equal(k8s_watch_decoder_pending(d), k - end_last);
            k8s_watch_decoder_destroy(&d);
        }
    }
}

/* Every two-piece split of the whole stream yields all four events, in order. */
static void test_every_two_piece_split(void **state)
{
    (void)state;
    size_t total = strlen(STREAM);
    for (size_t k = 0; k <= total; k++) {
        sink s = {0};
        k8s_watch_decoder *d = k8s_watch_decoder_new(0, on_event, on_error, &s);
        assert_int_equal(k8s_watch_decoder_feed(d, STREAM, k), GD_OK);
        assert_int_equal(k8s_watch_decoder_feed(d, STREAM + k, total - k), GD_OK);
        assert_int_equal(s.events, 4);
        assert_string_equal(s.names[0], "a");
        assert_string_equal(s.types[3], "DELETED");
        assert_int_equal(k8s_watch_decoder_pending(d), 0);
        k8s_watch_decoder_destroy(&d);
    }
}

static char *make_event(const char *name, size_t big)
{
    char *ev = malloc(big + 128);
    assert_non_null(ev);
    int n = snprintf(ev, 128, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"%s\"},"
                              "\"big\":\"", name);
    memset(ev + n, 'x', big);
    strcpy(ev + n + big, "\"}}\n");
    return ev;
}

/* An event over the cap is skipped to its newline and reported once; the neighbours pass. */
static void test_oversized_skipped(void **state)
{
    (void)state;
    char *small1 = make_event("s1", 10), *huge = make_event("huge", 5000),
         *small2 = make_event("s2", 10);
    for (size_t piece = 1; piece <= 8192; piece *= 8) {
        sink s = {0};
        k8s_watch_decoder *d = k8s_watch_decoder_new(1024, on_event, on_error, &s);
        const char *parts[3] = {small1, huge, small2};
        for (int p = 0; p < 3; p++) {
            size_t len = strlen(parts[p]);
            for (size_t off = 0; off < len; off += piece) {
                size_t n = len - off < piece ? len - off : piece;
                assert_int_equal(k8s_watch_decoder_feed(d, parts[p] + off, n), GD_OK);
            }
        }
        assert_int_equal(s.events, 2);
        assert_string_equal(s.names[0], "s1");
        assert_string_equal(s.names[1], "s2");
        assert_int_equal(s.errors, 1);
        assert_int_equal(s.last_err, GD_ERR_TOO_LARGE);
        assert_int_equal(k8s_watch_decoder_pending(d), 0);
        k8s_watch_decoder_destroy(&d);
    }
    /* a truncated oversized event counts as pending at stream end */
    sink s = {0};
    k8s_watch_decoder *d = k8s_watch_decoder_new(1024, on_event, on_error, &s);
    assert_int_equal(k8s_watch_decoder_feed(d, huge, 3000), GD_OK);
    assert_int_equal(s.events, 0);
    assert_int_equal(k8s_watch_decoder_pending(d), 3000);
    k8s_watch_decoder_destroy(&d);
    free(small1);
    free(huge);
    free(small2);
}

/* A 1 MiB event passes whole, fed in odd-sized pieces and in one. */
static void test_one_megabyte_event(void **state)
{
    (void)state;
    char *ev = make_event("mb", 1024 * 1024);
    size_t len = strlen(ev);
    size_t pieces[] = {len, 4093, 65536, 1};
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
        sink s = {0};
        k8s_watch_decoder *d = k8s_watch_decoder_new(0, on_event, on_error, &s);
        for (size_t off = 0; off < len; off += pieces[i]) {
            size_t n = len - off < pieces[i] ? len - off : pieces[i];
            assert_int_equal(k8s_watch_decoder_feed(d, ev + off, n), GD_OK);
        }
        assert_int_equal(s.events, 1);
        assert_int_equal(s.last_obj_len, 1024 * 1024);
        assert_int_equal(s.errors, 0);
        k8s_watch_decoder_destroy(&d);
    }
    free(ev);
}

/* Bad lines are reported and dropped; the stream goes on. */
static void test_bad_lines(void **state)
{
    (void)state;
    static const char bad[] =
        "this is not json\n"
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"ok1\"}}}\n"
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"x\"}}} trailing\n"
        "{\"object\":{}}\n"
        "{\"type\":7,\"object\":{}}\n"
        "{\"type\":\"ADDED\",\"object\":\"str\"}\n"
        "{\"type\":\"ADDED\"}\n"
        "[1,2,3]\n"
        "{\"type\":\"ADDED\",\"obj\n"
        "\xff\xfe\x01\n"
        "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"ok2\"}}}\n";
    sink s = {0};
    k8s_watch_decoder *d = k8s_watch_decoder_new(0, on_event, on_error, &s);
    assert_int_equal(k8s_watch_decoder_feed(d, bad, sizeof bad - 1), GD_OK);
    assert_int_equal(s.events, 2);
    assert_string_equal(s.names[0], "ok1");
    assert_string_equal(s.names[1], "ok2");
    assert_int_equal(s.errors, 9);
    assert_int_equal(s.last_err, GD_ERR_PARSE);
    /* NUL bytes inside a line make it invalid, not a crash */
    static const char nul[] = "{\"type\":\"ADDED\",\0\"object\":{}}\n";
    assert_int_equal(k8s_watch_decoder_feed(d, nul, sizeof nul - 1), GD_OK);
    assert_int_equal(s.errors, 10);
    k8s_watch_decoder_destroy(&d);
}

/* The consumer can stop the stream; nothing after the stopping event is delivered. */
static void test_stop_on_request(void **state)
{
    (void)state;
    sink s = {.stop_after = 2};
    k8s_watch_decoder *d = k8s_watch_decoder_new(0, on_event, on_error, &s);
    assert_int_equal(k8s_watch_decoder_feed(d, STREAM, strlen(STREAM)), GD_ERR_CANCELLED);
    assert_int_equal(s.events, 2);
    k8s_watch_decoder_destroy(&d);

    /* same when the stopping event was assembled from pieces */
    sink s2 = {.stop_after = 1};
    d = k8s_watch_decoder_new(0, on_event, on_error, &s2);
    assert_int_equal(k8s_watch_decoder_feed(d, STREAM, 10), GD_OK);
    assert_int_equal(k8s_watch_decoder_feed(d, STREAM + 10, strlen(STREAM) - 10),
                     GD_ERR_CANCELLED);
    assert_int_equal(s2.events, 1);
    k8s_watch_decoder_destroy(&d);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    assert_null(k8s_watch_decoder_new(0, NULL, NULL, NULL));
    sink s = {0};
    k8s_watch_decoder *d = k8s_watch_decoder_new(0, on_event, NULL, &s);
    assert_int_equal(k8s_watch_decoder_feed(d, NULL, 5), GD_ERR_ARG);
    assert_int_equal(k8s_watch_decoder_feed(d, NULL, 0), GD_OK);
    assert_int_equal(k8s_watch_decoder_feed(NULL, "x", 1), GD_ERR_ARG);
    /* no on_error: bad lines are still dropped quietly and safely */
    assert_int_equal(k8s_watch_decoder_feed(d, "junk\n", 5), GD_OK);
    assert_int_equal(s.events, 0);
    assert_int_equal(k8s_watch_decoder_pending(NULL), 0);
    k8s_watch_decoder_destroy(&d);
    k8s_watch_decoder_destroy(&d);
    k8s_watch_decoder_destroy(NULL);
}

/* The line hook: lines it consumes (1) never reach on_event, lines it declines (0) are
 * parsed as usual, -1 stops the feed; a split line reaches it whole, trimmed. */
static int line_calls;
static char line_seen[8][160];
static int on_line(void *ud, const char *line, size_t n)
{
    (void)ud;
    if (line_calls < 8)
        snprintf(line_seen[line_calls], sizeof line_seen[0], "%.*s", (int)n, line);
    line_calls++;
    if (memmem(line, n, "\"DELETED\"", 9))
        return -1;
    return memmem(line, n, "\"ADDED\"", 7) ? 1 : 0;
}

static void test_line_hook(void **state)
{
    (void)state;
    sink s = {0};
    line_calls = 0;
    k8s_watch_decoder *d = k8s_watch_decoder_new(0, on_event, on_error, &s);
    k8s_watch_decoder_set_line_fn(d, on_line);
    size_t n = strlen(STREAM), half = 30;
    assert_int_equal(k8s_watch_decoder_feed(d, STREAM, half), GD_OK);
    assert_int_equal(k8s_watch_decoder_feed(d, STREAM + half, n - half), GD_ERR_CANCELLED);
    assert_int_equal(line_calls, 4);              /* the blank line is no event */
    assert_string_equal(line_seen[0],
                        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"}}}");
    assert_int_equal(line_seen[1][strlen(line_seen[1]) - 1], '}');   /* \r trimmed */
    assert_int_equal(s.events, 2);                /* MODIFIED and BOOKMARK, parsed */
    assert_string_equal(s.types[0], "MODIFIED");
    assert_string_equal(s.types[1], "BOOKMARK");
    assert_int_equal(s.errors, 0);
    k8s_watch_decoder_destroy(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_stream_one_chunk),
        cmocka_unit_test(test_cut_at_every_byte),
        cmocka_unit_test(test_every_two_piece_split),
        cmocka_unit_test(test_oversized_skipped),
        cmocka_unit_test(test_one_megabyte_event),
        cmocka_unit_test(test_bad_lines),
        cmocka_unit_test(test_stop_on_request),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_line_hook),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
