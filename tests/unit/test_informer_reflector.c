/* test_informer_reflector.c — the reflector's list/watch state machine against a scripted
 * HTTP server (tests/unit/httpd_helper): paginated list with limit/continue, an expired
 * continue token falling back to a full list, watch from the list's resourceVersion with
 * bookmarks and a randomised timeout, events and bookmarks advancing the rv, an ERROR 410
 * leading to a relist, a 500 leading to backoff and a re-watch from the same rv, and the
 * "too large resource version" classification. Faults of the stream itself: a server that
 * goes silent without ending the watch (the progress deadline re-watches from the last rv),
 * a stream cut inside an event, a line of garbage (re-watched before it, relisted when it
 * repeats); each end is counted by cause. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "gd_json.h"
#include "gd_time.h"
#include "gd_wake.h"
#include "httpd_helper.h"
#include "k8s_client.h"
#include "../../informer/informer.h"
#include "../support/test_wait.h"

static const char *CM_LIST_1 =
    "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"10\","
    "\"continue\":\"tok\"},\"items\":["
    "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"resourceVersion\":\"5\","
    "\"managedFields\":[{\"manager\":\"x\"}]}},"
    "{\"metadata\":{\"name\":\"b\",\"namespace\":\"ns\",\"resourceVersion\":\"6\"}}]}";
static const char *GONE =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"The "
    "provided continue parameter is too old\",\"reason\":\"Expired\",\"code\":410}";
static const char *CM_LIST_FULL =
    "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"11\"},"
    "\"items\":["
    "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"resourceVersion\":\"5\"}},"
    "{\"metadata\":{\"name\":\"b\",\"namespace\":\"ns\",\"resourceVersion\":\"6\"}},"
    "{\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\",\"resourceVersion\":\"11\"}}]}";
static const char *WATCH_1 =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"d\","
    "\"namespace\":\"ns\",\"resourceVersion\":\"12\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\","
    "\"namespace\":\"ns\",\"resourceVersion\":\"13\",\"managedFields\":[]}}}\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{"
    "\"resourceVersion\":\"14\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{"
    "\"namespace\":\"ns\",\"resourceVersion\":\"14\"}}}\n"     /* no name: dropped */
    "{\"type\":\"DELETED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"b\","
    "\"namespace\":\"ns\",\"resourceVersion\":\"15\"}}}\n"
    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":"
    "\"Failure\",\"message\":\"too old resource version: 11 (14)\",\"reason\":\"Expired\","
    "\"code\":410}}\n";
static const char *CM_LIST_2 =
    "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"16\"},"
    "\"items\":["
    "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"resourceVersion\":\"13\"}},"
    "{\"metadata\":{\"name\":\"e\",\"namespace\":\"ns\",\"resourceVersion\":\"16\"}}]}";
static const char *SERVER_ERR =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"etcd down\","
    "\"reason\":\"InternalError\",\"code\":500}";
static const char *WATCH_2 =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"f\","
    "\"namespace\":\"ns\",\"resourceVersion\":\"17\"}}}\n";

typedef struct {
    httpd *h;
    k8s_client *c;
    /* what the reflector applied, oldest first (the sink below) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    inf_update *got[64];
    int64_t got_at[64];        /* when the reflector applied each (gd_mono_ms) */
    int ngot;
    int64_t popped_at;         /* got_at of the update next_item returned last */
    inf_counters ctr;
    inf_reflector_cfg cfg;
    volatile int stop;
    pthread_t th;
} fx;

/* The reflector's apply: takes the update's contents (the reflector frees the shell). */
static gd_err sink(void *ud, inf_update *u)
{
    fx *f = ud;
    inf_update *mine = malloc(sizeof *mine);
    assert_non_null(mine);
    *mine = *u;
    u->obj = NULL;
    u->items = NULL;
    u->nitems = 0;
    pthread_mutex_lock(&f->mu);
    assert_true(f->ngot < (int)(sizeof f->got / sizeof f->got[0]));
    f->got_at[f->ngot] = gd_mono_ms();
    f->got[f->ngot++] = mine;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    return GD_OK;
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->h = httpd_start(NULL);
    assert_non_null(f->h);
    k8s_config *cfg = calloc(1, sizeof *cfg);
    cfg->server = strdup(httpd_url(f->h));
    cfg->namespace_ = strdup("default");
    k8s_client_opts o;
    k8s_client_opts_default(&o);
    o.qps = -1;
    f->c = k8s_client_new(&cfg, &o);
    assert_non_null(f->c);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    f->cfg = (inf_reflector_cfg){.client = f->c, .res = K8S_RES_CONFIGMAPS, .kind = "ConfigMap",
                                 .ns = "ns", .label_selector = "cluster-name",
                                 .page_size = 2, .min_watch_timeout_s = 300, .apply = sink, .apply_ud = f,
                                 .ctr = &f->ctr, .stop = &f->stop};
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    f->stop = 1;
    if (f->th)
        pthread_join(f->th, NULL);
    for (int i = 0; i < f->ngot; i++)
        inf_update_destroy(&f->got[i]);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    k8s_client_destroy(&f->c);
    httpd_stop(&f->h);
    free(f);
    return 0;
}

/* The oldest update the reflector applied, waiting up to timeout_ms for one. */
static inf_update *next_item(fx *f, int timeout_ms)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += timeout_ms / 1000;
    dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    inf_update *it = NULL;
    pthread_mutex_lock(&f->mu);
    while (f->ngot == 0 && pthread_cond_timedwait(&f->cv, &f->mu, &dl) == 0)
        ;
    if (f->ngot > 0) {
        it = f->got[0];
        f->popped_at = f->got_at[0];
        memmove(f->got, f->got + 1, (size_t)(f->ngot - 1) * sizeof f->got[0]);
        memmove(f->got_at, f->got_at + 1, (size_t)(f->ngot - 1) * sizeof f->got_at[0]);
        f->ngot--;
    }
    pthread_mutex_unlock(&f->mu);
    if (!it)
        fail_msg("no update applied within %d ms", timeout_ms);
    return it;
}

static const char *query(fx *f, int i)
{
    const httpd_req *r = httpd_request(f->h, i);
    assert_non_null(r);
    return r->uri;
}

static void expect_replace(inf_update *it, const char *rv, const char *const *keys, size_t n)
{
    assert_int_equal(it->type, INF_UPD_REPLACE);
    assert_string_equal(it->rv, rv);
    assert_int_equal(it->nitems, n);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(it->items[i]->key, keys[i]);
        assert_null(strstr(it->items[i]->body, "managedFields"));
        /* list items get the kind and apiVersion a watch event would carry */
        assert_non_null(strstr(it->items[i]->body, "\"kind\":\"ConfigMap\""));
        assert_non_null(strstr(it->items[i]->body, "\"apiVersion\":\"v1\""));
    }
}

static void expect_item(inf_update *it, inf_update_kind t, const char *key, const char *rv)
{
    assert_int_equal(it->type, t);
    assert_string_equal(it->rv, rv);
    if (key)
        assert_string_equal(it->obj->key, key);
}

static void test_list_watch_relist(void **state)
{
    fx *f = *state;
    httpd_push(f->h, &(httpd_resp){.body = CM_LIST_1});
    httpd_push(f->h, &(httpd_resp){.status = 410, .body = GONE});
    httpd_push(f->h, &(httpd_resp){.body = CM_LIST_FULL});
    httpd_push(f->h, &(httpd_resp){.body = WATCH_1, .chunk = 100});
    httpd_push(f->h, &(httpd_resp){.body = CM_LIST_2});
    httpd_push(f->h, &(httpd_resp){.status = 500, .body = SERVER_ERR});
    httpd_push(f->h, &(httpd_resp){.body = WATCH_2, .hang_ms = 60000, .chunk = 1000});
    assert_int_equal(pthread_create(&f->th, NULL, inf_reflector_run, &f->cfg), 0);

    /* page 1 + expired continue → one full list: REPLACE a, b, c at rv 11 */
    inf_update *it = next_item(f, 5000);
    const char *k1[] = {"ns/a", "ns/b", "ns/c"};
    expect_replace(it, "11", k1, 3);
    inf_update_destroy(&it);
    /* watch events in order; the bookmark moves the rv; the nameless object is dropped */
    it = next_item(f, 5000);
    expect_item(it, INF_UPD_UPSERT, "ns/d", "12");
    inf_update_destroy(&it);
    it = next_item(f, 5000);
    expect_item(it, INF_UPD_UPSERT, "ns/a", "13");
    assert_null(strstr(it->obj->body, "managedFields"));
    inf_update_destroy(&it);
    it = next_item(f, 5000);
    expect_item(it, INF_UPD_RV, NULL, "14");
    inf_update_destroy(&it);
    it = next_item(f, 5000);
    expect_item(it, INF_UPD_DELETE, "ns/b", "15");
    inf_update_destroy(&it);
    /* ERROR 410 → relist (consistent, paginated again) */
    it = next_item(f, 5000);
    const char *k2[] = {"ns/a", "ns/e"};
    expect_replace(it, "16", k2, 2);
    inf_update_destroy(&it);
    /* 500 on the watch → backoff (~0.8 s) → watch again from rv 16 */
    int64_t t0 = gd_mono_ms();
    it = next_item(f, 10000);
    expect_item(it, INF_UPD_UPSERT, "ns/f", "17");
    inf_update_destroy(&it);
    assert_true(gd_mono_ms() - t0 >= 500);

    /* what was asked, in order */
    const char *q0 = query(f, 0);
    assert_non_null(strstr(q0, "/api/v1/namespaces/ns/configmaps"));
    assert_non_null(strstr(q0, "limit=2"));
    assert_non_null(strstr(q0, "labelSelector=cluster-name"));
    assert_null(strstr(q0, "continue="));
    assert_null(strstr(q0, "resourceVersion="));      /* consistent read */
    assert_non_null(strstr(query(f, 1), "continue=tok"));
    assert_null(strstr(query(f, 2), "limit="));        /* full-list fallback */
    assert_null(strstr(query(f, 2), "continue="));
    const char *w = query(f, 3);
    assert_non_null(strstr(w, "watch=1"));
    assert_non_null(strstr(w, "allowWatchBookmarks=true"));
    assert_non_null(strstr(w, "resourceVersion=11"));
    assert_non_null(strstr(w, "labelSelector=cluster-name"));
    const char *ts = strstr(w, "timeoutSeconds=");
    assert_non_null(ts);
    int t = atoi(ts + 15);
    assert_in_range(t, 300, 599);
    assert_non_null(strstr(query(f, 4), "limit=2"));
    assert_null(strstr(query(f, 4), "watch="));
    assert_non_null(strstr(query(f, 5), "resourceVersion=16"));
    assert_non_null(strstr(query(f, 6), "resourceVersion=16"));

    assert_int_equal(f->ctr.lists, 2);
    assert_int_equal(f->ctr.relists, 1);
    assert_int_equal(f->ctr.watch_errors, 1);
    assert_int_equal(f->ctr.watch_restarts, 2);
    assert_int_equal(f->ctr.bad_objects, 1);
    assert_int_equal(f->ctr.last_rv, 17);
    /* the ends, by cause: the ERROR 410, then the 500 */
    assert_int_equal(f->ctr.watch_ends[INF_END_EXPIRED], 1);
    assert_int_equal(f->ctr.watch_ends[INF_END_ERROR], 1);
    assert_int_equal(f->ctr.watch_ends[INF_END_STALLED], 0);
    /* stop is honoured promptly inside a hanging watch */
    t0 = gd_mono_ms();
    f->stop = 1;
    pthread_join(f->th, NULL);
    f->th = 0;
    assert_true(gd_mono_ms() - t0 < 2000);
}

static void test_list_failure_backoff(void **state)
{
    fx *f = *state;
    /* API server unreachable first (500s), then fine */
    httpd_push(f->h, &(httpd_resp){.status = 500, .body = SERVER_ERR});
    httpd_push(f->h, &(httpd_resp){.status = 500, .body = SERVER_ERR});
    httpd_push(f->h, &(httpd_resp){.body = CM_LIST_2});
    httpd_push(f->h, &(httpd_resp){.body = "", .hang_ms = 60000, .chunk = 10});
    f->cfg.page_size = 0;
    int64_t t0 = gd_mono_ms();
    assert_int_equal(pthread_create(&f->th, NULL, inf_reflector_run, &f->cfg), 0);
    inf_update *it = next_item(f, 15000);
    const char *k[] = {"ns/a", "ns/e"};
    expect_replace(it, "16", k, 2);
    inf_update_destroy(&it);
    /* two backoffs: ~0.8 s then ~1.6 s, each +/- 20 % */
    int64_t took = gd_mono_ms() - t0;
    assert_true(took >= 1500);
    assert_int_equal(f->ctr.watch_errors, 2);
    assert_null(strstr(query(f, 0), "limit="));
}

/* The informer's stop: the flag and a poke on the wake fd. It ends a backoff nap (a failed
 * list waits ~0.8 s, then ~1.6 s, ...) and, in the second case, an idle watch held open
 * for a minute; neither makes another request. */
static void stop_with_fd(fx *f, int requests)
{
    WAIT_UNTIL(httpd_request_count(f->h) >= requests, 10000);
    int fd = *f->cfg.stop_fd;
    __atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
    gd_wake_poke(fd);
    assert_int_equal(pthread_join(f->th, NULL), 0);
    f->th = 0;
    assert_int_equal(httpd_request_count(f->h), requests);
}

static void test_stop_fd_ends_nap_and_watch(void **state)
{
    fx *f = *state;
    int fd = gd_wake_open();
    assert_true(fd >= 0);
    f->cfg.stop_fd = &fd;
    f->cfg.page_size = 0;
    for (int i = 0; i < 2; i++)
        httpd_push(f->h, &(httpd_resp){.status = 500, .body = SERVER_ERR});
    assert_int_equal(pthread_create(&f->th, NULL, inf_reflector_run, &f->cfg), 0);
    stop_with_fd(f, 2);                 /* in the nap after the second failed list */
    assert_int_equal(f->ngot, 0);

    gd_wake_drain(fd);                  /* a new run of the reflector on the same server */
    f->stop = 0;
    httpd_push(f->h, &(httpd_resp){.body = CM_LIST_2});
    httpd_push(f->h, &(httpd_resp){.body = "", .chunk = 10, .hang_ms = 60000});
    assert_int_equal(pthread_create(&f->th, NULL, inf_reflector_run, &f->cfg), 0);
    inf_update *it = next_item(f, 15000);
    assert_int_equal(it->type, INF_UPD_REPLACE);
    inf_update_destroy(&it);
    stop_with_fd(f, 4);                 /* in the idle watch */
    gd_wake_close(&fd);
    f->cfg.stop_fd = NULL;
}

/* ------------------------------------------------------------ faults of the stream */

#define EV(type, name, rv)                                                                 \
    "{\"type\":\"" type "\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\""  \
    name "\",\"namespace\":\"ns\",\"resourceVersion\":\"" rv "\"}}}\n"
#define BOOKMARK(rv)                                                                       \
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{"             \
    "\"resourceVersion\":\"" rv "\"}}}\n"

static uint64_t ends(fx *f, inf_watch_end e) { return atomic_load(&f->ctr.watch_ends[e]); }

/* The benchmark's dead watch: a server that sent a few events and then nothing, holding
 * the stream open. The progress deadline ends it that long after the last byte, and the
 * reflector watches again from the last resourceVersion (the bookmark's), without a
 * relist. Without the deadline the reflector sits in the first watch for its 60 s. */
static void test_silent_watch_rewatches(void **state)
{
    fx *f = *state;
    int64_t deadline = test_scaled_ms(400);
    f->cfg.page_size = 0;
    f->cfg.watch_idle_timeout_ms = deadline;
    httpd_push(f->h, &(httpd_resp){.body = CM_LIST_2});
    httpd_push(f->h, &(httpd_resp){.body = EV("ADDED", "g", "17") BOOKMARK("18"),
                                   .chunk = 4096, .hang_ms = 60000});
    /* the second watch ends cleanly long before its timeoutSeconds: "closed" */
    httpd_push(f->h, &(httpd_resp){.body = EV("ADDED", "h", "19"), .chunk = 4096});
    httpd_push(f->h, &(httpd_resp){.body = "", .chunk = 10, .hang_ms = 60000});
    assert_int_equal(pthread_create(&f->th, NULL, inf_reflector_run, &f->cfg), 0);

    inf_update *it = next_item(f, 5000);
    assert_int_equal(it->type, INF_UPD_REPLACE);
    inf_update_destroy(&it);
    it = next_item(f, 5000);
    expect_item(it, INF_UPD_UPSERT, "ns/g", "17");
    inf_update_destroy(&it);
    it = next_item(f, 5000);
    expect_item(it, INF_UPD_RV, NULL, "18");
    int64_t silent_from = f->popped_at;
    inf_update_destroy(&it);
    it = next_item(f, (int)deadline + 5000);
    expect_item(it, INF_UPD_UPSERT, "ns/h", "19");
    int64_t gap = f->popped_at - silent_from;
    inf_update_destroy(&it);
    assert_true(gap >= deadline - 50);                 /* the deadline, measured from the */
    assert_true(gap < deadline + 3000);                /* last byte: not the 60 s hang */
    assert_non_null(strstr(query(f, 2), "resourceVersion=18"));   /* resumed, not relisted */
    WAIT_UNTIL(httpd_request_count(f->h) >= 4, 5000);
    assert_non_null(strstr(query(f, 3), "resourceVersion=19"));
    assert_non_null(strstr(query(f, 3), "watch=1"));
    assert_int_equal(ends(f, INF_END_STALLED), 1);
    assert_int_equal(ends(f, INF_END_CLOSED), 1);
    assert_int_equal(f->ctr.lists, 1);
    assert_int_equal(f->ctr.relists, 0);
    assert_int_equal(f->ctr.watch_errors, 0);          /* no backoff: the deadline spaced it */
    assert_int_equal(f->ctr.watch_restarts, 2);
    char *t = inf_counters_render(&f->ctr, "ConfigMap");
    assert_non_null(strstr(t, "godis_informer_watch_ends_total{kind=\"ConfigMap\","
                              "cause=\"stalled\"} 1\n"));
    assert_non_null(strstr(t, "godis_informer_watch_ends_total{kind=\"ConfigMap\","
                              "cause=\"timeout\"} 0\n"));
    free(t);
}

/* Silence right after a burst ends the watch at the burst deadline ("quiet"), not the
 * progress deadline: kube-apiserver 1.20's cacher drops a watcher that falls behind in a
 * burst and leaves its response open. A watch that had a few events only keeps the long
 * deadline. */
static void test_silence_after_burst_rewatches_soon(void **state)
{
    fx *f = *state;
    int64_t quick = test_scaled_ms(300);
    f->cfg.page_size = 0;
    f->cfg.watch_idle_timeout_ms = 60000;           /* never reached in this test */
    f->cfg.burst_events = 3;
    f->cfg.burst_window_ms = 10000;
    f->cfg.burst_deadline_ms = quick;
    httpd_push(f->h, &(httpd_resp){.body = CM_LIST_2});
    httpd_push(f->h, &(httpd_resp){.body = EV("ADDED", "g", "17") EV("ADDED", "h", "18")
                                               EV("ADDED", "i", "19"),
                                   .chunk = 4096, .hang_ms = 60000});
    httpd_push(f->h, &(httpd_resp){.body = EV("ADDED", "j", "20") EV("ADDED", "k", "21"),
                                   .chunk = 4096, .hang_ms = 60000});
    assert_int_equal(pthread_create(&f->th, NULL, inf_reflector_run, &f->cfg), 0);
    inf_update *it = next_item(f, 5000);
    assert_int_equal(it->type, INF_UPD_REPLACE);
    inf_update_destroy(&it);
    for (int i = 0; i < 3; i++) inf_update_destroy((it = next_item(f, 5000), &it));
    int64_t silent_from = f->popped_at;
    it = next_item(f, (int)quick + 5000);
    expect_item(it, INF_UPD_UPSERT, "ns/j", "20");
    int64_t gap = f->popped_at - silent_from;
    inf_update_destroy(&it);
    assert_true(gap >= quick - 50);
    assert_true(gap < quick + 3000);                   /* not the 60 s */
    assert_non_null(strstr(query(f, 2), "resourceVersion=19"));   /* resumed, not relisted */
    assert_int_equal(ends(f, INF_END_QUIET), 1);
    assert_int_equal(ends(f, INF_END_STALLED), 0);
    inf_update_destroy((it = next_item(f, 5000), &it));
    /* two events are no burst: this watch keeps the long deadline */
    gd_sleep_ms((int)quick * 3);
    assert_int_equal(httpd_request_count(f->h), 3);
    assert_int_equal(ends(f, INF_END_QUIET), 1);
    assert_int_equal(f->ctr.relists, 0);
    assert_int_equal(f->ctr.watch_errors, 0);
    char *t = inf_counters_render(&f->ctr, "ConfigMap");
    assert_non_null(strstr(t, "cause=\"quiet\"} 1\n"));
    free(t);
}

/* A stream cut inside an event: the whole events before the cut count, the partial one
 * is discarded, and the watch resumes from the last whole event, so the server sends the
 * cut one again. Counted and logged as "truncated". */
static void test_cut_watch_rewatches(void **state)
{
    fx *f = *state;
    f->cfg.page_size = 0;
    static const char STREAM[] = EV("ADDED", "g", "17") EV("ADDED", "h", "18");
    httpd_push(f->h, &(httpd_resp){.body = CM_LIST_2});
    httpd_push(f->h, &(httpd_resp){.body = STREAM, .chunk = 20, .cut = true,
                                   .cut_at = sizeof STREAM - 1 - 25});
    httpd_push(f->h, &(httpd_resp){.body = EV("ADDED", "h", "18"), .chunk = 4096,
                                   .hang_ms = 60000});
    assert_int_equal(pthread_create(&f->th, NULL, inf_reflector_run, &f->cfg), 0);
    inf_update *it = next_item(f, 5000);
    assert_int_equal(it->type, INF_UPD_REPLACE);
    inf_update_destroy(&it);
    it = next_item(f, 5000);
    expect_item(it, INF_UPD_UPSERT, "ns/g", "17");
    inf_update_destroy(&it);
    it = next_item(f, 5000);
    expect_item(it, INF_UPD_UPSERT, "ns/h", "18");
    inf_update_destroy(&it);
    assert_non_null(strstr(query(f, 2), "resourceVersion=17"));
    assert_int_equal(ends(f, INF_END_TRUNCATED), 1);
    assert_int_equal(f->ctr.relists, 0);
}

/* A line that is no event, between two events: nothing after it is applied (it may have
 * been an event, and the rv must not move past it); the watch resumes before it. The same
 * garbage at the same rv three times is no passing fault: relist. */
static void test_garbage_rewatches_then_relists(void **state)
{
    fx *f = *state;
    f->cfg.page_size = 0;
    const char *junk = "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":\x01 junk\n";
    char first[512];
    snprintf(first, sizeof first, "%s%s%s", EV("ADDED", "g", "17"), junk,
             EV("ADDED", "h", "19"));
    httpd_push(f->h, &(httpd_resp){.body = CM_LIST_2});
    httpd_push(f->h, &(httpd_resp){.body = first, .chunk = 4096});
    httpd_push(f->h, &(httpd_resp){.body = junk, .chunk = 4096});
    httpd_push(f->h, &(httpd_resp){.body = junk, .chunk = 4096});
    httpd_push(f->h, &(httpd_resp){.body = CM_LIST_FULL});
    httpd_push(f->h, &(httpd_resp){.body = "", .chunk = 10, .hang_ms = 60000});
    assert_int_equal(pthread_create(&f->th, NULL, inf_reflector_run, &f->cfg), 0);
    inf_update *it = next_item(f, 5000);
    assert_int_equal(it->type, INF_UPD_REPLACE);
    inf_update_destroy(&it);
    it = next_item(f, 5000);
    expect_item(it, INF_UPD_UPSERT, "ns/g", "17");
    inf_update_destroy(&it);
    /* next: the relist (two backoffs, ~0.8 s and ~1.6 s), never ns/h from behind the junk */
    it = next_item(f, 15000);
    const char *k[] = {"ns/a", "ns/b", "ns/c"};
    expect_replace(it, "11", k, 3);
    inf_update_destroy(&it);
    assert_non_null(strstr(query(f, 2), "resourceVersion=17"));
    assert_non_null(strstr(query(f, 3), "resourceVersion=17"));
    assert_null(strstr(query(f, 4), "watch="));
    assert_int_equal(ends(f, INF_END_GARBAGE), 3);
    WAIT_UNTIL(atomic_load(&f->ctr.relists) == 1, 5000);    /* counted after the apply */
    assert_int_equal(f->ctr.relists, 1);
    assert_int_equal(f->ctr.watch_errors, 2);
}

static void test_needs_relist(void **state)
{
    k8s_status st;
    memset(&st, 0, sizeof st);
    assert_true(inf_needs_relist(GD_ERR_GONE, NULL));
    assert_false(inf_needs_relist(GD_ERR_SERVER, NULL));
    st.http_status = 504;
    snprintf(st.reason, sizeof st.reason, "Timeout");
    snprintf(st.message, sizeof st.message, "Too large resource version: 99, current: 50");
    assert_true(inf_needs_relist(GD_ERR_SERVER, &st));
    snprintf(st.message, sizeof st.message, "etcd timeout");
    assert_false(inf_needs_relist(GD_ERR_SERVER, &st));
    snprintf(st.reason, sizeof st.reason, "Expired");
    assert_true(inf_needs_relist(GD_ERR_UNEXPECTED, &st));
    memset(&st, 0, sizeof st);
    st.http_status = 410;
    assert_true(inf_needs_relist(GD_ERR_UNEXPECTED, &st));
    memset(&st, 0, sizeof st);
    assert_false(inf_needs_relist(GD_ERR_TRANSPORT, &st));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_needs_relist),
        cmocka_unit_test_setup_teardown(test_list_watch_relist, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_failure_backoff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_fd_ends_nap_and_watch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_silent_watch_rewatches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_silence_after_burst_rewatches_soon, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cut_watch_rewatches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage_rewatches_then_relists, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
