/* itest_informer.c — bin/godis-informer against the real API server of the devcluster
 * (eval "$(tools/devcluster env)" first; without it every test is skipped).
 *
 * Each test runs the real informer binary in its own namespace and follows it with the
 * gd_sub library, as a worker does:
 *  - concurrent writes (with watches restarting every few seconds) are all observed, per key
 *    in write order, and the final replica equals a fresh list;
 *  - pagination: 2000 ConfigMaps listed in pages of 500;
 *  - a label selector keeps foreign objects out, and relabelling moves objects in and out;
 *  - a late subscriber and a deliberately lagged one (tiny high-water marks) end equal to the
 *    informer's own snapshot and to a fresh list;
 *  - a private API server (tests/integration/informer-apiserver.sh, watch cache off) is
 *    killed and restarted: the informer survives and catches up; killed again while objects
 *    are deleted and etcd is compacted: the informer gets 410, relists and reports the
 *    deletions that happened while it was away. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <zmq.h>
#include "gd_json.h"
#include "gd_log.h"
#include "gd_map.h"
#include "gd_sub.h"
#include "gd_time.h"
#include "k8s_client.h"
#include "k8s_config.h"

static struct {
    k8s_client *c;
    void *zctx;
    char root[PATH_MAX];        /* repository root */
    char tmp[256];              /* per-run scratch dir */
    int seq;
    /* what a failed test left behind (cmocka longjmps out of it): cleaned by test_teardown */
    pid_t pids[8];
    gd_sub *subs[8];
    bool private_apiserver;
} G;

static void track_pid(pid_t pid, bool add)
{
    for (int i = 0; i < 8; i++)
        if (add ? G.pids[i] == 0 : G.pids[i] == pid) {
            G.pids[i] = add ? pid : 0;
            return;
        }
}

static void track_sub(gd_sub *s, bool add)
{
    for (int i = 0; i < 8; i++)
        if (add ? G.subs[i] == NULL : G.subs[i] == s) {
            G.subs[i] = add ? s : NULL;
            return;
        }
}

/* ------------------------------------------------------------------ API helpers */

static const k8s_resource *CM = &K8S_RES_CONFIGMAPS;

static void make_ns(char *ns, size_t cap, const char *what)
{
    snprintf(ns, cap, "itest-inf-%s-%d-%d", what, (int)getpid(), ++G.seq);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", "v1");
    cJSON_AddStringToObject(o, "kind", "Namespace");
    cJSON *md = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(md, "name", ns);
    k8s_status st;
    gd_err e = k8s_create(G.c, &K8S_RES_NAMESPACES, NULL, o, NULL, &st);
    cJSON_Delete(o);
    if (e != GD_OK)
        fail_msg("create namespace %s: %s %s", ns, gd_strerror(e), st.message);
}

static void del_ns(const char *ns)
{
    k8s_delete_opts o;
    k8s_delete_opts_default(&o);
    k8s_delete(G.c, &K8S_RES_NAMESPACES, NULL, ns, &o, NULL);
}

static cJSON *cm_obj(const char *ns, const char *name, const char *label, const char *val)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", "v1");
    cJSON_AddStringToObject(o, "kind", "ConfigMap");
    cJSON *md = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", ns);
    if (label) {
        cJSON *l = cJSON_AddObjectToObject(md, "labels");
        cJSON_AddStringToObject(l, "cluster-name", label);
    }
    cJSON *d = cJSON_AddObjectToObject(o, "data");
    cJSON_AddStringToObject(d, "v", val);
    return o;
}

/* Creates; rv of the result into rv (may be NULL). Retries transient failures. */
static gd_err cm_create(const char *ns, const char *name, const char *label, const char *val,
                        char *rv, size_t cap)
{
    cJSON *o = cm_obj(ns, name, label, val), *out = NULL;
    k8s_status st;
    gd_err e;
    for (int i = 0; i < 20; i++) {
        e = k8s_create(G.c, CM, ns, o, &out, &st);
        if (e == GD_OK || !gd_err_retryable(e))
            break;
        gd_sleep_ms(200);
    }
    if (e == GD_OK && rv)
        snprintf(rv, cap, "%s", gd_meta_rv(out));
    cJSON_Delete(out);
    cJSON_Delete(o);
    return e;
}

/* Merge-patches data.v (and the label when label is not NULL); rv of the result into rv. */
static gd_err cm_patch(const char *ns, const char *name, const char *label, const char *val,
                       char *rv, size_t cap)
{
    cJSON *p = cJSON_CreateObject(), *out = NULL;
    cJSON *d = cJSON_AddObjectToObject(p, "data");
    cJSON_AddStringToObject(d, "v", val);
    if (label) {
        cJSON *md = cJSON_AddObjectToObject(p, "metadata");
        cJSON *l = cJSON_AddObjectToObject(md, "labels");
        cJSON_AddStringToObject(l, "cluster-name", label);
    }
    char *body = cJSON_PrintUnformatted(p);
    cJSON_Delete(p);
    gd_err e;
    for (int i = 0; i < 20; i++) {
        e = k8s_patch(G.c, CM, ns, name, K8S_PATCH_MERGE, body, NULL, &out, NULL);
        if (e == GD_OK || !gd_err_retryable(e))
            break;
        gd_sleep_ms(200);
    }
    if (e == GD_OK && rv)
        snprintf(rv, cap, "%s", gd_meta_rv(out));
    cJSON_Delete(out);
    free(body);
    return e;
}

static gd_err cm_delete(const char *ns, const char *name)
{
    k8s_delete_opts o;
    k8s_delete_opts_default(&o);
    gd_err e;
    for (int i = 0; i < 20; i++) {
        e = k8s_delete(G.c, CM, ns, name, &o, NULL);
        if (e == GD_OK || !gd_err_retryable(e))
            break;
        gd_sleep_ms(200);
    }
    return e;
}

/* A fresh list (consistent read) as key → rv. */
static gd_map *fresh_list(const char *ns, const char *selector)
{
    gd_map *m = gd_map_new(free);
    char cont[4096] = "";
    do {
        k8s_list_opts lo = {.label_selector = selector, .limit = 500,
                            .continue_token = cont[0] ? cont : NULL};
        cJSON *page = NULL;
        k8s_status st;
        gd_err e = k8s_list(G.c, CM, ns, &lo, &page, &st);
        if (e != GD_OK)
            fail_msg("list: %s %s", gd_strerror(e), st.message);
        cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItem(page, "items")) {
            char key[300];
            gd_meta_key(it, key, sizeof key);
            gd_map_put(m, key, strdup(gd_meta_rv(it)), NULL);
        }
        snprintf(cont, sizeof cont, "%s", gd_json_str_or(page, "metadata.continue", ""));
        cJSON_Delete(page);
    } while (cont[0]);
    return m;
}

/* ------------------------------------------------------------------ the informer process */

typedef struct {
    pid_t pid;
    char pub[400], snap[400], log[400];
} informer;

static void start_informer(informer *inf, const char *ns, const char *kubeconfig,
                           const char *const *extra)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/inf%d", G.tmp, ++G.seq);
    mkdir(dir, 0700);
    snprintf(inf->pub, sizeof inf->pub, "ipc://%s/cm.pub", dir);
    snprintf(inf->snap, sizeof inf->snap, "ipc://%s/cm.snap", dir);
    snprintf(inf->log, sizeof inf->log, "%s/informer.log", dir);
    char bin[PATH_MAX + 32];
    snprintf(bin, sizeof bin, "%s/bin/godis-informer", G.root);
    const char *argv[40] = {bin, "--kind", "ConfigMap", "--namespace", ns, "--pub-endpoint",
                            inf->pub, "--snap-endpoint", inf->snap, "--heartbeat-ms", "200"};
    int n = 11;
    if (kubeconfig) {
        argv[n++] = "--kubeconfig";
        argv[n++] = kubeconfig;
    }
    for (int i = 0; extra && extra[i] && n < 38; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    inf->pid = fork();
    assert_true(inf->pid >= 0);
    if (inf->pid == 0) {
        int fd = open(inf->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0) {
            dup2(fd, 2);
            dup2(fd, 1);
        }
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    track_pid(inf->pid, true);
}

static void stop_informer(informer *inf)
{
    if (inf->pid <= 0)
        return;
    track_pid(inf->pid, false);
    kill(inf->pid, SIGTERM);
    int status = 0;
    for (int i = 0; i < 100; i++) {
        if (waitpid(inf->pid, &status, WNOHANG) == inf->pid) {
            inf->pid = 0;
            assert_true(WIFEXITED(status));
            assert_int_equal(WEXITSTATUS(status), 0);
            return;
        }
        gd_sleep_ms(100);
    }
    kill(inf->pid, SIGKILL);
    waitpid(inf->pid, &status, 0);
    inf->pid = 0;
    fail_msg("informer did not stop on SIGTERM");
}

static bool log_contains(const informer *inf, const char *needle)
{
    FILE *f = fopen(inf->log, "r");
    if (!f)
        return false;
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

/* One request on the ROUTER; collects OBJ key → rv into m (if given); returns the last
 * reply's frame 2 (STATS text or END seq) malloc'd. */
static char *router_request(const informer *inf, const char *cmd, const char *arg, gd_map *m)
{
    void *d = zmq_socket(G.zctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(d, ZMQ_LINGER, &linger, sizeof linger);
    assert_int_equal(zmq_connect(d, inf->snap), 0);
    zmq_send(d, "GDI1", 4, ZMQ_SNDMORE);
    zmq_send(d, cmd, strlen(cmd), arg ? ZMQ_SNDMORE : 0);
    if (arg)
        zmq_send(d, arg, strlen(arg), 0);
    char *result = NULL;
    for (;;) {
        zmq_pollitem_t pi = {.socket = d, .events = ZMQ_POLLIN};
        if (zmq_poll(&pi, 1, 10000) <= 0)
            fail_msg("no answer to %s", cmd);
        zmq_msg_t f[6];
        int n = 0, more = 1;
        while (more) {
            zmq_msg_t x;
            zmq_msg_init(&x);
            zmq_msg_recv(&x, d, 0);
            more = zmq_msg_more(&x);
            if (n < 6)
                f[n++] = x;
            else
                zmq_msg_close(&x);
        }
        char c[8] = "";
        memcpy(c, zmq_msg_data(&f[1]), zmq_msg_size(&f[1]) < 7 ? zmq_msg_size(&f[1]) : 7);
        bool done = strcmp(c, "OBJ") != 0;
        if (!done && m) {
            char key[512];
            snprintf(key, sizeof key, "%.*s", (int)zmq_msg_size(&f[2]), (char *)zmq_msg_data(&f[2]));
            gd_map_put(m, key, strndup(zmq_msg_data(&f[3]), zmq_msg_size(&f[3])), NULL);
        }
        if (done && n > 2)
            result = strndup(zmq_msg_data(&f[2]), zmq_msg_size(&f[2]));
        for (int i = 0; i < n; i++)
            zmq_msg_close(&f[i]);
        if (done)
            break;
    }
    zmq_close(d);
    return result;
}

static long long stat_value(const informer *inf, const char *metric)
{
    char *t = router_request(inf, "STATS", NULL, NULL);
    assert_non_null(t);
    char *p = strstr(t, metric);
    long long v = -1;
    while (p && p[strlen(metric)] != '{')
        p = strstr(p + 1, metric);
    if (p)
        p = strchr(p, '}');
    if (p)
        v = atoll(p + 1);
    free(t);
    return v;
}

/* ------------------------------------------------------------------ following it */

typedef struct {
    pthread_mutex_t mu;
    gd_map *log;         /* key → "A:rv,M:rv,D," */
    int deleted;
} recorder;

static void record(void *ud, gd_sub_event ev, const char *key, int shard, const cJSON *old,
                   const cJSON *new_obj, bool resync)
{
    recorder *r = ud;
    if (ev == GD_SUB_SYNCED)
        return;
    char add[96];
    if (ev == GD_SUB_DELETED)
        snprintf(add, sizeof add, "D,");
    else
        snprintf(add, sizeof add, "%s:%s,", ev == GD_SUB_ADDED ? "A" : "M", gd_meta_rv(new_obj));
    pthread_mutex_lock(&r->mu);
    if (ev == GD_SUB_DELETED)
        r->deleted++;
    char *prev = gd_map_get(r->log, key);
    size_t pl = prev ? strlen(prev) : 0;
    char *s = malloc(pl + strlen(add) + 1);
    memcpy(s, prev ? prev : "", pl);
    strcpy(s + pl, add);
    gd_map_put(r->log, key, s, NULL);
    pthread_mutex_unlock(&r->mu);
}

static gd_sub *follow(const informer *inf, recorder *r, int rcvhwm)
{
    if (r) {
        pthread_mutex_init(&r->mu, NULL);
        r->log = gd_map_new(free);
        r->deleted = 0;
    }
    gd_sub_opts o;
    gd_sub_opts_default(&o);
    o.kind = "ConfigMap";
    o.pub_endpoint = inf->pub;
    o.snap_endpoint = inf->snap;
    o.on_event = r ? record : NULL;
    o.ud = r;
    o.snapshot_timeout_ms = 3000;
    if (rcvhwm)
        o.rcvhwm = rcvhwm;
    gd_sub *s = gd_sub_new(G.zctx, &o);
    assert_non_null(s);
    track_sub(s, true);
    gd_sub_set_all(s);   /* may time out while the informer starts: dispatch retries */
    return s;
}

static void unfollow(gd_sub **s)
{
    track_sub(*s, false);
    gd_sub_destroy(s);
}

static void recorder_free(recorder *r)
{
    gd_map_destroy(&r->log);
    pthread_mutex_destroy(&r->mu);
}

/* Is the replica exactly the map (key → rv)? */
static bool replica_equals(gd_sub *s, gd_map *want, bool verbose)
{
    if (gd_sub_count(s) != gd_map_count(want)) {
        if (verbose)
            print_message("replica has %zu objects, expected %zu\n", gd_sub_count(s),
                          gd_map_count(want));
        return false;
    }
    gd_map_iter it;
    const char *key;
    void *rv;
    gd_map_iter_init(&it, want);
    while (gd_map_next(&it, &key, &rv)) {
        char have[64];
        if (!gd_sub_get_rv(s, key, have, sizeof have) || strcmp(have, rv) != 0) {
            if (verbose)
                print_message("%s: replica %s, expected %s\n", key, have, (char *)rv);
            return false;
        }
    }
    return true;
}

/* Polls until the replica equals a fresh list (re-listed every second). */
static void converge(gd_sub *s, const char *ns, const char *selector, int timeout_ms)
{
    int64_t until = gd_mono_ms() + timeout_ms;
    gd_map *want = fresh_list(ns, selector);
    int64_t relist_at = gd_mono_ms() + 1000;
    while (gd_mono_ms() < until) {
        gd_sub_poll(s, 50);
        if (gd_sub_synced(s) && replica_equals(s, want, false)) {
            gd_map_destroy(&want);
            return;
        }
        if (gd_mono_ms() > relist_at) {
            gd_map_destroy(&want);
            want = fresh_list(ns, selector);
            relist_at = gd_mono_ms() + 1000;
        }
    }
    replica_equals(s, want, true);
    gd_map_destroy(&want);
    fail_msg("replica did not converge to a fresh list in %d ms", timeout_ms);
}

static void wait_synced(gd_sub *s, int timeout_ms)
{
    int64_t until = gd_mono_ms() + timeout_ms;
    while (!gd_sub_synced(s) && gd_mono_ms() < until)
        gd_sub_poll(s, 50);
    assert_true(gd_sub_synced(s));
}

/* ------------------------------------------------------------------ tests */

#define WRITERS 4
#define KEYS_PER_WRITER 5
#define ROUNDS 7

typedef struct {
    const char *ns;
    int id;
    char expect[KEYS_PER_WRITER][ROUNDS * 24];
    gd_err err;
} writer;

/* Per key: create, update, update, delete, create, update, update — logged as the
 * subscriber will record it. */
static void *write_loop(void *arg)
{
    writer *w = arg;
    for (int r = 0; r < ROUNDS && w->err == GD_OK; r++) {
        for (int k = 0; k < KEYS_PER_WRITER && w->err == GD_OK; k++) {
            char name[64], rv[64] = "", val[32];
            snprintf(name, sizeof name, "w%d-k%d", w->id, k);
            snprintf(val, sizeof val, "r%d", r);
            char *e = w->expect[k] + strlen(w->expect[k]);
            switch (r % 4) {
            case 0:
                w->err = cm_create(w->ns, name, NULL, val, rv, sizeof rv);
                sprintf(e, "A:%s,", rv);
                break;
            case 1:
            case 2:
                w->err = cm_patch(w->ns, name, NULL, val, rv, sizeof rv);
                sprintf(e, "M:%s,", rv);
                break;
            case 3:
                w->err = cm_delete(w->ns, name);
                sprintf(e, "D,");
                break;
            }
        }
        gd_sleep_ms(700);   /* ~5 s in all: several watch timeouts (2-4 s) fall inside */
    }
    return NULL;
}

static void test_concurrent_writes(void **state)
{
    if (!G.c)
        skip();
    char ns[96];
    make_ns(ns, sizeof ns, "writes");
    informer inf = {0};
    const char *extra[] = {"--min-watch-timeout", "2s", NULL};   /* watches restart often */
    start_informer(&inf, ns, NULL, extra);
    recorder rec;
    gd_sub *s = follow(&inf, &rec, 0);
    wait_synced(s, 30000);

    writer w[WRITERS];
    pthread_t th[WRITERS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < WRITERS; i++) {
        w[i].ns = ns;
        w[i].id = i;
        pthread_create(&th[i], NULL, write_loop, &w[i]);
    }
    /* keep consuming while they write */
    bool joined[WRITERS] = {false};
    for (int left = WRITERS; left > 0;) {
        gd_sub_poll(s, 50);
        for (int i = 0; i < WRITERS; i++)
            if (!joined[i] && pthread_tryjoin_np(th[i], NULL) == 0) {
                joined[i] = true;
                left--;
            }
    }
    for (int i = 0; i < WRITERS; i++)
        assert_int_equal(w[i].err, GD_OK);
    converge(s, ns, NULL, 30000);
    /* every write observed, per key in write order */
    for (int i = 0; i < WRITERS; i++)
        for (int k = 0; k < KEYS_PER_WRITER; k++) {
            char key[160];
            snprintf(key, sizeof key, "%s/w%d-k%d", ns, i, k);
            pthread_mutex_lock(&rec.mu);
            const char *got = gd_map_get(rec.log, key);
            pthread_mutex_unlock(&rec.mu);
            if (!got || strcmp(got, w[i].expect[k]) != 0)
                fail_msg("%s: observed %s\n expected %s", key, got ? got : "(nothing)",
                         w[i].expect[k]);
        }
    gd_sub_stats st;
    gd_sub_get_stats(s, &st);
    assert_int_equal(st.gaps, 0);
    /* the watch was restarted while we wrote (timeouts of 2-4 s), without losing anything */
    assert_true(stat_value(&inf, "godis_informer_watch_restarts_total") >= 1);
    assert_int_equal(stat_value(&inf, "godis_informer_relists_total"), 0);
    unfollow(&s);
    recorder_free(&rec);
    stop_informer(&inf);
    del_ns(ns);
}

typedef struct {
    const char *ns;
    int from, to;
    gd_err err;
} creator;

static void *create_range(void *arg)
{
    creator *c = arg;
    for (int i = c->from; i < c->to && c->err == GD_OK; i++) {
        char name[32];
        snprintf(name, sizeof name, "p%05d", i);
        c->err = cm_create(c->ns, name, i % 2 ? "odd" : "even", "x", NULL, 0);
    }
    return NULL;
}

static void test_pagination(void **state)
{
    if (!G.c)
        skip();
    char ns[96];
    make_ns(ns, sizeof ns, "pages");
    enum { N = 2000, T = 4 };
    creator c[T];
    pthread_t th[T];
    for (int i = 0; i < T; i++) {
        c[i] = (creator){.ns = ns, .from = i * N / T, .to = (i + 1) * N / T};
        pthread_create(&th[i], NULL, create_range, &c[i]);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(c[i].err, GD_OK);
    }
    informer inf = {0};
    const char *extra[] = {"--page-size", "500", NULL};
    int64_t t0 = gd_mono_ms();
    start_informer(&inf, ns, NULL, extra);
    gd_sub *s = follow(&inf, NULL, 0);
    wait_synced(s, 60000);
    print_message("listed %d ConfigMaps in pages of 500: synced at the subscriber after %lld ms\n",
                  N, (long long)(gd_mono_ms() - t0));
    assert_int_equal(gd_sub_count(s), N);
    assert_true(log_contains(&inf, "pages=4"));
    assert_int_equal(stat_value(&inf, "godis_informer_lists_total"), 1);
    assert_int_equal(stat_value(&inf, "godis_informer_objects"), N);
    converge(s, ns, NULL, 30000);
    unfollow(&s);
    stop_informer(&inf);
    del_ns(ns);
}

static void test_label_selector(void **state)
{
    if (!G.c)
        skip();
    char ns[96];
    make_ns(ns, sizeof ns, "labels");
    for (int i = 0; i < 5; i++) {
        char name[32];
        snprintf(name, sizeof name, "a%d", i);
        assert_int_equal(cm_create(ns, name, "a", "x", NULL, 0), GD_OK);
        snprintf(name, sizeof name, "b%d", i);
        assert_int_equal(cm_create(ns, name, "b", "x", NULL, 0), GD_OK);
        snprintf(name, sizeof name, "foreign%d", i);
        assert_int_equal(cm_create(ns, name, NULL, "x", NULL, 0), GD_OK);
    }
    informer inf = {0};
    const char *extra[] = {"--label-selector", "cluster-name=a", NULL};
    start_informer(&inf, ns, NULL, extra);
    recorder rec;
    gd_sub *s = follow(&inf, &rec, 0);
    converge(s, ns, "cluster-name=a", 30000);
    assert_int_equal(gd_sub_count(s), 5);
    /* b0 joins the selection, a0 leaves it, a foreign one changes (not seen) */
    assert_int_equal(cm_patch(ns, "b0", "a", "y", NULL, 0), GD_OK);
    assert_int_equal(cm_patch(ns, "a0", "b", "y", NULL, 0), GD_OK);
    assert_int_equal(cm_patch(ns, "foreign0", NULL, "y", NULL, 0), GD_OK);
    converge(s, ns, "cluster-name=a", 30000);
    char key[160];
    snprintf(key, sizeof key, "%s/a0", ns);
    assert_null(gd_sub_get(s, key));
    snprintf(key, sizeof key, "%s/foreign0", ns);
    assert_null(gd_sub_get(s, key));
    assert_int_equal(rec.deleted, 1);
    unfollow(&s);
    recorder_free(&rec);
    stop_informer(&inf);
    del_ns(ns);
}

static void *update_range(void *arg)
{
    creator *c = arg;
    char val[4096];
    for (int i = c->from; i < c->to && c->err == GD_OK; i++) {
        char name[32];
        memset(val, 'a' + i % 26, sizeof val - 1);
        val[sizeof val - 1] = 0;
        snprintf(name, sizeof name, "l%03d", i % 100);
        c->err = cm_patch(c->ns, name, NULL, val, NULL, 0);
    }
    return NULL;
}

static void test_late_and_lagged(void **state)
{
    if (!G.c)
        skip();
    char ns[96];
    make_ns(ns, sizeof ns, "lag");
    for (int i = 0; i < 100; i++) {
        char name[32];
        snprintf(name, sizeof name, "l%03d", i);
        assert_int_equal(cm_create(ns, name, i % 3 ? "c1" : "c2", "x", NULL, 0), GD_OK);
    }
    informer inf = {0};
    const char *extra[] = {"--pub-hwm", "10", NULL};
    start_informer(&inf, ns, NULL, extra);
    gd_sub *lagged = follow(&inf, NULL, 5);
    converge(lagged, ns, NULL, 30000);
    /* 600 writes of 4 KiB bodies while the lagged subscriber does not read at all */
    enum { T = 4, N = 600 };
    creator c[T];
    pthread_t th[T];
    for (int i = 0; i < T; i++) {
        c[i] = (creator){.ns = ns, .from = i * N / T, .to = (i + 1) * N / T};
        pthread_create(&th[i], NULL, update_range, &c[i]);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(c[i].err, GD_OK);
    }
    gd_sub *late = follow(&inf, NULL, 0);
    converge(late, ns, NULL, 30000);
    converge(lagged, ns, NULL, 30000);
    gd_sub_stats st;
    gd_sub_get_stats(lagged, &st);
    print_message("lagged subscriber: %llu gaps, %llu snapshots\n",
                  (unsigned long long)st.gaps, (unsigned long long)st.snapshots);
    assert_true(st.gaps > 0);
    /* and both equal the informer's own cache */
    gd_map *snap = gd_map_new(free);
    free(router_request(&inf, "SNAPSHOT", "*", snap));
    assert_true(replica_equals(late, snap, true));
    assert_true(replica_equals(lagged, snap, true));
    gd_map_destroy(&snap);
    unfollow(&late);
    unfollow(&lagged);
    stop_informer(&inf);
    del_ns(ns);
}

/* ---- the private API server */

static int run(const char *cmd, char *out, size_t cap)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = out ? fread(out, 1, cap - 1, p) : 0;
    if (out)
        out[n] = 0;
    else {
        char junk[256];
        while (fread(junk, 1, sizeof junk, p) > 0)
            ;
    }
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int apiserver(const char *verb)
{
    char cmd[PATH_MAX * 3], out[64] = "";
    snprintf(cmd, sizeof cmd, "%s/tests/integration/informer-apiserver.sh %s %s/apiserver",
             G.root, verb, G.tmp);
    int rc = run(cmd, out, sizeof out);
    G.private_apiserver = strcmp(verb, "start") == 0;
    if (rc != 0)
        fail_msg("informer-apiserver.sh %s failed (%d)", verb, rc);
    return atoi(out);
}

/* admin.kubeconfig with the server replaced by the private API server. */
static void private_kubeconfig(char *path, size_t cap, int port)
{
    const char *src = getenv("KUBECONFIG"), *server = getenv("KUBE_APISERVER");
    assert_non_null(src);
    assert_non_null(server);
    FILE *in = fopen(src, "r");
    assert_non_null(in);
    snprintf(path, cap, "%s/private.kubeconfig", G.tmp);
    FILE *out = fopen(path, "w");
    char line[65536], mine[64];
    snprintf(mine, sizeof mine, "https://127.0.0.1:%d", port);
    while (fgets(line, sizeof line, in)) {
        char *p = strstr(line, server);
        if (p) {
            fwrite(line, 1, (size_t)(p - line), out);
            fputs(mine, out);
            fputs(p + strlen(server), out);
        } else
            fputs(line, out);
    }
    fclose(in);
    fclose(out);
    chmod(path, 0600);
}

static void test_apiserver_restart_and_compaction(void **state)
{
    if (!G.c)
        skip();
    if (!getenv("ETCD_ENDPOINTS") || !getenv("KUBE_APISERVER"))
        skip();
    char ns[96], kc[400], name[32], cmd[1024], rv[64] = "";
    make_ns(ns, sizeof ns, "restart");
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof name, "r%02d", i);
        assert_int_equal(cm_create(ns, name, NULL, "x", NULL, 0), GD_OK);
    }
    int port = apiserver("start");
    private_kubeconfig(kc, sizeof kc, port);
    informer inf = {0};
    start_informer(&inf, ns, kc, NULL);
    recorder rec;
    gd_sub *s = follow(&inf, &rec, 0);
    converge(s, ns, NULL, 60000);

    /* 1. the API server dies; writes go on through the other one; it comes back */
    apiserver("stop");
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "r%02d", i);
        assert_int_equal(cm_patch(ns, name, NULL, "y", NULL, 0), GD_OK);
        snprintf(name, sizeof name, "r%02d", 5 + i);
        assert_int_equal(cm_delete(ns, name), GD_OK);
        snprintf(name, sizeof name, "n%02d", i);
        assert_int_equal(cm_create(ns, name, NULL, "x", NULL, 0), GD_OK);
    }
    for (int i = 0; i < 20; i++)        /* let it fail and back off a few times */
        gd_sub_poll(s, 100);
    assert_int_equal(kill(inf.pid, 0), 0);       /* still running */
    apiserver("start");
    converge(s, ns, NULL, 90000);
    assert_true(stat_value(&inf, "godis_informer_watch_errors_total") >= 1);
    assert_int_equal(rec.deleted, 5);

    /* 2. dies again; objects are deleted and etcd compacted past the informer's rv: the
     *    watch gets 410, the informer relists and reports the deletions it missed */
    long long relists = stat_value(&inf, "godis_informer_relists_total");
    apiserver("stop");
    for (int i = 10; i < 13; i++) {
        snprintf(name, sizeof name, "r%02d", i);
        assert_int_equal(cm_delete(ns, name), GD_OK);
    }
    snprintf(name, sizeof name, "r%02d", 13);
    assert_int_equal(cm_patch(ns, name, NULL, "z", rv, sizeof rv), GD_OK);
    snprintf(cmd, sizeof cmd, "ETCDCTL_API=3 etcdctl --endpoints=%s compact %s",
             getenv("ETCD_ENDPOINTS"), rv);
    assert_int_equal(run(cmd, NULL, 0), 0);
    apiserver("start");
    converge(s, ns, NULL, 90000);
    assert_int_equal(rec.deleted, 8);
    assert_true(stat_value(&inf, "godis_informer_relists_total") > relists);
    assert_true(log_contains(&inf, "relisting"));
    unfollow(&s);
    recorder_free(&rec);
    stop_informer(&inf);
    apiserver("stop");
    del_ns(ns);
}

static void test_bad_flags(void **state)
{
    char cmd[PATH_MAX * 2];
    const char *bad[] = {"", "--kind Nope", "--kind ConfigMap --page-size x",
                         "--kind ConfigMap --kubeconfig /nonexistent/kubeconfig",
                         "--kind ConfigMap --resync-period 5parsecs", "--kind ConfigMap --bogus",
                         "--kind ConfigMap --pub-endpoint tcp://127.0.0.1:1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char out[1024];
        snprintf(cmd, sizeof cmd, "%s/bin/godis-informer %s 2>&1", G.root, bad[i]);
        int rc = run(cmd, out, sizeof out);
        if (rc != 2)
            fail_msg("'%s' exited %d (want 2): %s", bad[i], rc, out);
        assert_non_null(strstr(out, "godis-informer"));
        char *nl = strchr(out, '\n');           /* exactly one line */
        if (!nl || nl[1] != '\0')
            fail_msg("'%s': not one line: %s", bad[i], out);
    }
    char out[8192];
    snprintf(cmd, sizeof cmd, "%s/bin/godis-informer --help", G.root);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "--label-selector"));
}

/* ------------------------------------------------------------------ setup */

/* After every test, passed or failed: nothing of it may outlive it. */
static int test_teardown(void **state)
{
    for (int i = 0; i < 8; i++) {
        if (G.subs[i])
            gd_sub_destroy(&G.subs[i]);
        if (G.pids[i] > 0) {
            kill(G.pids[i], SIGKILL);
            waitpid(G.pids[i], NULL, 0);
            G.pids[i] = 0;
        }
    }
    if (G.private_apiserver) {
        char cmd[PATH_MAX * 2];
        snprintf(cmd, sizeof cmd, "%s/tests/integration/informer-apiserver.sh stop %s/apiserver",
                 G.root, G.tmp);
        run(cmd, NULL, 0);
        G.private_apiserver = false;
    }
    return 0;
}

static int group_setup(void **state)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = 0;
    /* <root>/bin/tests/itest_informer */
    snprintf(G.root, sizeof G.root, "%s", dirname(dirname(dirname(exe))));
    snprintf(G.tmp, sizeof G.tmp, "/tmp/itest-informer-XXXXXX");
    assert_non_null(mkdtemp(G.tmp));
    G.zctx = zmq_ctx_new();
    gd_log_init("itest", GD_LOG_WARN, 0, 2);
    if (!getenv("KUBECONFIG") || !getenv("DEVCLUSTER_DIR")) {
        print_message("no devcluster (eval \"$(tools/devcluster env)\"): API tests skipped\n");
        return 0;
    }
    k8s_config_opts co = {.kubeconfig = getenv("KUBECONFIG")};
    k8s_config *cfg = NULL;
    char err[512];
    if (k8s_config_load(&co, &cfg, err, sizeof err) != GD_OK) {
        print_message("kubeconfig: %s\n", err);
        return -1;
    }
    k8s_client_opts ko;
    k8s_client_opts_default(&ko);
    ko.qps = -1;
    G.c = k8s_client_new(&cfg, &ko);
    return G.c ? 0 : -1;
}

static int group_teardown(void **state)
{
    k8s_client_destroy(&G.c);
    zmq_ctx_term(G.zctx);
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", G.tmp);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_bad_flags, test_teardown),
        cmocka_unit_test_teardown(test_concurrent_writes, test_teardown),
        cmocka_unit_test_teardown(test_label_selector, test_teardown),
        cmocka_unit_test_teardown(test_late_and_lagged, test_teardown),
        cmocka_unit_test_teardown(test_pagination, test_teardown),
        cmocka_unit_test_teardown(test_apiserver_restart_and_compaction, test_teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
