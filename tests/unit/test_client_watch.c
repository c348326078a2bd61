/* test_client_watch.c — k8s_watch against the libmicrohttpd helper on 127.0.0.1: events
 * split across reads in any way, 410 and other ERROR events, streams cut mid-event, big and
 * oversized events, the ways to stop a watch (the flag, alone or with a wake fd, and the
 * callback), the progress deadline on a stream that goes silent without ending, and
 * end_on_bad_event on a line that is no event. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#include "k8s_client.h"
#include "gd_time.h"
#include "gd_wake.h"
#include "client_fixture.h"
#include "../support/test_wait.h"

typedef struct {
    int n, stop_after;
    char types[16][16];
    char names[16][32];
} watch_sink;

static int on_watch(void *ud, const char *type, cJSON *obj)
{
    watch_sink *w = ud;
    if (w->n < 16) {
        snprintf(w->types[w->n], sizeof w->types[0], "%s", type);
        const cJSON *n = cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "metadata"), "name");
        snprintf(w->names[w->n], sizeof w->names[0], "%s", cJSON_IsString(n) ? n->valuestring : "");
    }
    w->n++;
    return w->stop_after && w->n >= w->stop_after;
}

/* Queues r, then watches the pods of ns1 into w. */
static gd_err watch_pods(client_fixture *f, const httpd_resp *r, const k8s_watch_opts *o,
                         watch_sink *w, k8s_status *st)
{
    httpd_push(f->h, r);
    return k8s_watch(f->c, &K8S_RES_PODS, "ns1", o, on_watch, w, st);
}

static const char *WATCH_STREAM =
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"101\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"b\",\"resourceVersion\":\"102\"}}}\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"150\"}}}\n"
    "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"c\",\"resourceVersion\":\"103\"}}}\n";

static void test_watch_stream(void **state)
{
    client_fixture *f = *state;
    httpd_resp r = {.status = 200, .body = WATCH_STREAM, .chunk = 7};
    watch_sink w = {0};
    k8s_watch_opts o = {.list = {.resource_version = "100", .timeout_seconds = 30,
                                 .label_selector = "cluster-name"},
                        .allow_bookmarks = true};
    k8s_status st;
    assert_int_equal(watch_pods(f, &r, &o, &w, &st), GD_OK);
    assert_int_equal(w.n, 4);
    assert_string_equal(w.types[0], "ADDED");
    assert_string_equal(w.names[1], "b");
    assert_string_equal(w.types[2], "BOOKMARK");
    assert_string_equal(w.types[3], "DELETED");
    assert_string_equal(httpd_request(f->h, -1)->uri,
                        "/api/v1/namespaces/ns1/pods?watch=1&allowWatchBookmarks=true"
                        "&resourceVersion=100&timeoutSeconds=30&labelSelector=cluster-name");

    /* all events in one chunk, several per read */
    httpd_resp r2 = {.status = 200, .body = WATCH_STREAM, .chunk = 65536};
    httpd_push(f->h, &r2);
    watch_sink w2 = {0};
    assert_int_equal(k8s_watch(f->c, &K8S_RES_NODES, NULL, NULL, on_watch, &w2, &st), GD_OK);
    assert_int_equal(w2.n, 4);
    assert_string_equal(httpd_request(f->h, -1)->uri,
                        "/api/v1/nodes?watch=1&allowWatchBookmarks=true");
}

static void test_watch_gone(void **state)
{
    client_fixture *f = *state;
    const char *s =
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n"
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":"
        "\"Failure\",\"message\":\"too old resource version: 5 (90)\",\"reason\":\"Expired\","
        "\"code\":410}}\n"
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"never\"}}}\n";
    httpd_resp r = {.status = 200, .body = s, .chunk = 30};
    watch_sink w = {0};
    k8s_status st;
    assert_int_equal(watch_pods(f, &r, NULL, &w, &st), GD_ERR_GONE);
    assert_int_equal(w.n, 2);
    assert_string_equal(w.types[1], "ERROR");
    assert_int_equal(st.http_status, 410);
    assert_string_equal(st.reason, "Expired");
    assert_string_equal(st.message, "too old resource version: 5 (90)");

    /* a non-410 ERROR event ends the watch with its classification */
    const char *s2 = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"reason\":"
                     "\"InternalError\",\"message\":\"boom\",\"code\":500}}\n";
    httpd_resp r2 = {.status = 200, .body = s2, .chunk = 1000};
    assert_int_equal(watch_pods(f, &r2, NULL, &w, &st), GD_ERR_SERVER);

    /* the watch request itself refused */
    client_push(f->h, 403, NULL, "{\"kind\":\"Status\",\"reason\":\"Forbidden\",\"message\":\"no\","
                          "\"code\":403}");
    assert_int_equal(k8s_watch(f->c, &K8S_RES_PODS, "ns1", NULL, on_watch, &w, &st),
                     GD_ERR_FORBIDDEN);
    assert_string_equal(st.message, "no");
}

static void test_watch_cut_mid_event(void **state)
{
    client_fixture *f = *state;
    size_t cut = strlen(WATCH_STREAM) - 20;     /* inside the last event */
    httpd_resp r = {.status = 200, .body = WATCH_STREAM, .chunk = 16, .cut = true, .cut_at = cut};
    watch_sink w = {0};
    k8s_status st;
    assert_int_equal(watch_pods(f, &r, NULL, &w, &st),
                     GD_ERR_CLOSED);
    assert_int_equal(w.n, 3);
    assert_non_null(strstr(st.message, "bytes of it discarded"));

    /* the server ends the stream cleanly, but inside an event */
    char partial[512];
    snprintf(partial, sizeof partial, "%.*s", (int)cut, WATCH_STREAM);
    httpd_resp r2 = {.status = 200, .body = partial, .chunk = 64};
    watch_sink w2 = {0};
    assert_int_equal(watch_pods(f, &r2, NULL, &w2, &st),
                     GD_ERR_CLOSED);
    assert_int_equal(w2.n, 3);
    char want[64];
    snprintf(want, sizeof want, "%zu bytes", cut - (strlen(WATCH_STREAM) -
             strlen(strstr(WATCH_STREAM, "{\"type\":\"DELETED\""))));
    assert_non_null(strstr(st.message, want));
    assert_string_equal(st.reason, K8S_REASON_TRUNCATED);
}

/* A server that sends some events and then nothing, holding the stream open: with a
 * progress deadline the watch ends that long after the last byte, not at the hang's end. */
static void test_watch_progress_deadline(void **state)
{
    client_fixture *f = *state;
    /* four lines of 60..80 bytes, 150 ms apart: 450 ms of stream, longer than the 300 ms
     * deadline, so only a deadline measured from the last byte lets it through (stretched
     * under valgrind, where the gaps between pieces stay 150 ms) */
    long deadline = (long)test_scaled_ms(300);
    httpd_resp r = {.status = 200, .body = WATCH_STREAM, .chunk = 60, .chunk_delay_ms = 150,
                    .hang_ms = 30000};
    watch_sink w = {0};
    k8s_watch_opts o = {.idle_timeout_ms = deadline};
    k8s_status st;
    int64_t t0 = gd_mono_ms();
    assert_int_equal(watch_pods(f, &r, &o, &w, &st), GD_ERR_TIMEOUT);
    int64_t took = gd_mono_ms() - t0;
    assert_int_equal(w.n, 4);                           /* every event before the silence */
    assert_string_equal(st.reason, K8S_REASON_STALLED);
    char want[80];
    snprintf(want, sizeof want, "no byte from the server for %ld ms", deadline);
    assert_non_null(strstr(st.message, want));
    assert_true(took >= 450 + deadline - 50);           /* the stream, then the deadline */
    assert_true(took < 450 + deadline + 5000);          /* not the 30 s hang */

    /* a server that never even sends the response's headers */
    httpd_resp r2 = {.status = 200, .body = "", .delay_ms = 30000};
    watch_sink w2 = {0};
    t0 = gd_mono_ms();
    assert_int_equal(watch_pods(f, &r2, &o, &w2, &st), GD_ERR_TIMEOUT);
    assert_true(gd_mono_ms() - t0 < deadline + 5000);
    assert_string_equal(st.reason, K8S_REASON_STALLED);
    assert_non_null(strstr(st.message, "no response yet"));
}

/* end_on_bad_event: the first line that is no event ends the watch, and nothing after it
 * reaches the callback (the line may have been an event: a consumer resumes before it). */
static void test_watch_garbage_ends(void **state)
{
    client_fixture *f = *state;
    const char *s =
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"101\"}}}\n"
        "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"na\x01\x02 garbage\n"
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"c\",\"resourceVersion\":\"103\"}}}\n";
    k8s_watch_opts o = {.end_on_bad_event = true};
    k8s_status st;
    size_t chunks[] = {4096, 7};            /* the bad line and the next in one read, or apart */
    for (size_t i = 0; i < 2; i++) {
        httpd_resp r = {.status = 200, .body = s, .chunk = chunks[i], .hang_ms = 10000};
        watch_sink w = {0};
        int64_t t0 = gd_mono_ms();
        assert_int_equal(watch_pods(f, &r, &o, &w, &st), GD_ERR_PARSE);
        assert_true(gd_mono_ms() - t0 < 5000);           /* at once, not after the hang */
        assert_int_equal(w.n, 1);
        assert_string_equal(w.names[0], "a");
        assert_string_equal(st.reason, K8S_REASON_GARBAGE);
        assert_non_null(strstr(st.message, "not valid JSON"));
    }
    /* an oversized event is garbage too */
    httpd_resp r = {.status = 200, .body = WATCH_STREAM, .chunk = 4096};
    watch_sink w = {0};
    k8s_watch_opts o2 = {.end_on_bad_event = true, .max_event_bytes = 40};
    assert_int_equal(watch_pods(f, &r, &o2, &w, &st), GD_ERR_TOO_LARGE);
    assert_int_equal(w.n, 0);
    assert_string_equal(st.reason, K8S_REASON_GARBAGE);
    assert_non_null(strstr(st.message, "exceeds the cap"));

    /* without the option the line is dropped and the stream goes on */
    httpd_resp r3 = {.status = 200, .body = s, .chunk = 4096};
    watch_sink w3 = {0};
    assert_int_equal(watch_pods(f, &r3, NULL, &w3, &st), GD_OK);
    assert_int_equal(w3.n, 2);
}

static void test_watch_big_and_oversized(void **state)
{
    client_fixture *f = *state;
    size_t big = 1024 * 1024;
    char *s = malloc(big + 512);
    int n = sprintf(s, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"big\"},\"x\":\"");
    memset(s + n, 'y', big);
    n += (int)big;
    n += sprintf(s + n, "\"}}\n{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"after\"}}}\n");
    httpd_resp r = {.status = 200, .body = s, .body_len = (size_t)n, .chunk = 50000};
    watch_sink w = {0};
    k8s_status st;
    assert_int_equal(watch_pods(f, &r, NULL, &w, &st), GD_OK);
    assert_int_equal(w.n, 2);
    assert_string_equal(w.names[0], "big");

    /* the same with a 64 KiB cap: the big one is skipped, the next one arrives */
    watch_sink w2 = {0};
    k8s_watch_opts o = {.max_event_bytes = 65536};
    assert_int_equal(watch_pods(f, &r, &o, &w2, &st), GD_OK);
    assert_int_equal(w2.n, 1);
    assert_string_equal(w2.names[0], "after");
    free(s);
}

/* The stop flag is raised once the stream's four events were delivered (observed), while
 * the server holds the stream open. */
typedef struct {
    watch_sink w;
    atomic_int seen;
    volatile int stop;
    _Atomic int64_t stop_at;
    int stop_fd;                /* > 0: poked after the flag is set (stop_fd's test) */
} stopper;

static int on_watch_counted(void *ud, const char *type, cJSON *obj)
{
    stopper *c = ud;
    int r = on_watch(&c->w, type, obj);
    atomic_fetch_add(&c->seen, 1);
    return r;
}

static void *set_stop_later(void *arg)
{
    stopper *c = arg;
    WAIT_UNTIL(atomic_load(&c->seen) >= 4, 5000);
    atomic_store(&c->stop_at, gd_mono_ms());
    __atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
    if (c->stop_fd > 0)
        gd_wake_poke(c->stop_fd);
    return NULL;
}

/* Watches a stream the server then holds open for 10 s while another thread raises c's
 * stop (and pokes its fd, if any) after the four events: the watch ends on the stop. */
static void watch_until_stopped(client_fixture *f, stopper *c)
{
    httpd_resp r = {.status = 200, .body = WATCH_STREAM, .chunk = 4096, .hang_ms = 10000};
    pthread_t t;
    pthread_create(&t, NULL, set_stop_later, c);
    k8s_watch_opts o = {.stop = &c->stop, .stop_fd = c->stop_fd > 0 ? &c->stop_fd : NULL};
    k8s_status st;
    httpd_push(f->h, &r);
    assert_int_equal(k8s_watch(f->c, &K8S_RES_PODS, "ns1", &o, on_watch_counted, c, &st),
                     GD_ERR_CANCELLED);
    int64_t returned = gd_mono_ms();
    pthread_join(t, NULL);
    assert_int_equal(c->w.n, 4);
    int64_t stop_at = atomic_load(&c->stop_at);
    assert_true(stop_at > 0 && returned >= stop_at);    /* it ended on the flag, */
    assert_true(returned - stop_at < 2500);              /* not the stream's 10 s hang */
}

static void test_watch_stop_flag_and_callback_stop(void **state)
{
    client_fixture *f = *state;
    stopper c = {.w = {0}};
    watch_until_stopped(f, &c);
    k8s_status st;

    /* the callback asks to stop after the second event */
    httpd_resp r2 = {.status = 200, .body = WATCH_STREAM, .chunk = 4096, .hang_ms = 10000};
    watch_sink w2 = {.stop_after = 2};
    int64_t t0 = gd_mono_ms();
    assert_int_equal(watch_pods(f, &r2, NULL, &w2, &st), GD_ERR_CANCELLED);
    assert_int_equal(w2.n, 2);
    assert_true(gd_mono_ms() - t0 < 5000);
}

/* The same stop with a wake fd beside the flag (the informer's way): the idle stream's wait
 * includes the fd, so the flag is seen when it is poked, not at the next look. */
static void test_watch_stop_fd(void **state)
{
    client_fixture *f = *state;
    stopper c = {.stop_fd = gd_wake_open()};
    assert_true(c.stop_fd > 0);
    watch_until_stopped(f, &c);
    gd_wake_close(&c.stop_fd);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, client_setup, client_teardown)
    const struct CMUnitTest plain[] = {
        T(test_watch_stream), T(test_watch_gone), T(test_watch_cut_mid_event),
        T(test_watch_big_and_oversized), T(test_watch_stop_flag_and_callback_stop),
        T(test_watch_progress_deadline), T(test_watch_garbage_ends), T(test_watch_stop_fd),
    };
#undef T
    return cmocka_run_group_tests_name("plain_http", plain, NULL, NULL);
}
