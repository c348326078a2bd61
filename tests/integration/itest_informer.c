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
 *    deletions that happened while it was away;
 *  - every watch asks for timeoutSeconds and the API server ends it there (counted as
 *    cause "timeout", re-watched without a relist); a watch that delivers nothing within
 *    the progress deadline is ended by the informer and resumed from its resourceVersion.
 * The helpers (API writes, the informer process, the subscriber) are in harness_informer.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "gd_time.h"
#include "harness_informer.h"
#include "../support/test_wait.h"

/* ------------------------------------------------------------------ tests */

#define WRITERS 4
#define KEYS_PER_WRITER 5
#define ROUNDS 7

/* Set by the consuming thread once the informer reports a watch restart. */
static atomic_int watch_restarted;

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
        if (r == ROUNDS - 1)                /* a watch restart falls inside the writes: seen */
            WAIT_UNTIL(atomic_load(&watch_restarted), 30000);
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
        gd_sleep_ms(700);   /* pacing: ~5 s in all, so several watch timeouts (2-4 s) fall inside */
    }
    return NULL;
}

static void test_concurrent_writes(void **state)
{
    char ns[96];
    api_test_ns(ns, sizeof ns, "writes");
    informer inf = {0};
    const char *extra[] = {"--min-watch-timeout", "2s", NULL};   /* watches restart often */
    start_informer(&inf, ns, NULL, extra);
    recorder rec;
    gd_sub *s = follow(&inf, &rec, 0);
    wait_synced(s, 30000);

    atomic_store(&watch_restarted, 0);
    long long restarts0 = stat_value(&inf, "godis_informer_watch_restarts_total");
    writer w[WRITERS];
    pthread_t th[WRITERS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < WRITERS; i++) {
        w[i].ns = ns;
        w[i].id = i;
        pthread_create(&th[i], NULL, write_loop, &w[i]);
    }
    /* keep consuming while they write, and tell them when the watch has restarted */
    bool joined[WRITERS] = {false};
    for (int left = WRITERS; left > 0;) {
        gd_sub_poll(s, 50);
        if (!atomic_load(&watch_restarted) && stat_value(&inf, "godis_informer_watch_restarts_total") > restarts0)
            atomic_store(&watch_restarted, 1);
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
    char ns[96];
    api_test_ns(ns, sizeof ns, "pages");
    enum { N = 2000 };
    run_ranges(create_range, ns, N, 4);
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
    char ns[96];
    api_test_ns(ns, sizeof ns, "labels");
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
    char ns[96];
    api_test_ns(ns, sizeof ns, "lag");
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
    run_ranges(update_range, ns, 600, 4);
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

/* ------------------------------------------------------------------ the private API server */

/* admin.kubeconfig with the server replaced by the private API server. */
static void private_kubeconfig(char *path, size_t cap, int port)
{
    const char *src = getenv("KUBECONFIG"), *server = getenv("KUBE_APISERVER");
    assert_non_null(src);
    assert_non_null(server);
    FILE *in = fopen(src, "r");
    assert_non_null(in);
    snprintf(path, cap, "%s/private.kubeconfig", IT.tmp);
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

/* Could another program bind 127.0.0.1:port now (as a listener does, without
 * SO_REUSEPORT)? */
static bool port_bindable(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    if (fd >= 0) close(fd);
    return ok;
}

static void test_apiserver_restart_and_compaction(void **state)
{
    if (!getenv("ETCD_ENDPOINTS") || !getenv("KUBE_APISERVER"))
        skip();
    char ns[96], kc[400], name[32], cmd[1024], rv[64] = "";
    api_test_ns(ns, sizeof ns, "restart");
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
    /* meanwhile somebody else wants its port (issue 21.5): it is held, the restart below
     * finds it free */
    assert_false(port_bindable(port));
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
    assert_int_equal(run_cmd(cmd, NULL, 0), 0);
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

/* One sample of godis_informer_watch_ends_total: the cause's count, -1 when absent. */
static long long watch_ends(const informer *inf, const char *cause)
{
    char *t = router_request(inf, "STATS", NULL, NULL);
    assert_non_null(t);
    char want[96];
    snprintf(want, sizeof want, ",cause=\"%s\"} ", cause);
    long long v = -1;
    for (char *p = strstr(t, "godis_informer_watch_ends_total{"); p;
         p = strstr(p + 1, "godis_informer_watch_ends_total{")) {
        char *eol = strchr(p, '\n'), *m = strstr(p, want);
        if (m && (!eol || m < eol)) {
            v = atoll(m + strlen(want));
            break;
        }
    }
    free(t);
    return v;
}

/* Issue 21: a watch can never sit on a dead stream. Against the real API server: the
 * informer asks for timeoutSeconds in [D, 2D) and kube-apiserver ends the watch there (a
 * clean end at that time is cause "timeout": the server, not our deadline or libcurl's
 * limit, ended it), after which the informer watches again from its rv, no relist. Then a
 * quiet namespace with a 2 s progress deadline: no byte (no event; bookmarks come about
 * once a minute) ends the watch from our side ("stalled"), and the next one still
 * delivers a change. */
static void test_watch_ends_by_timeout_and_deadline(void **state)
{
    char ns[96];
    api_test_ns(ns, sizeof ns, "wend");
    assert_int_equal(cm_create(ns, "w0", NULL, "x", NULL, 0), GD_OK);
    informer inf = {0};
    const char *extra[] = {"--min-watch-timeout", "2s", "--watch-progress-deadline", "60s", NULL};
    start_informer(&inf, ns, NULL, extra);
    recorder rec;
    gd_sub *s = follow(&inf, &rec, 0);
    wait_synced(s, 30000);
    int64_t t0 = gd_mono_ms();
    while (watch_ends(&inf, "timeout") < 2 && gd_mono_ms() - t0 < test_scaled_ms(30000))
        gd_sub_poll(s, 100);
    assert_true(watch_ends(&inf, "timeout") >= 2);       /* 2-4 s each: ended by the server */
    assert_int_equal(watch_ends(&inf, "stalled"), 0);
    assert_int_equal(watch_ends(&inf, "error"), 0);
    assert_true(stat_value(&inf, "godis_informer_watch_restarts_total") >= 2);
    assert_int_equal(stat_value(&inf, "godis_informer_relists_total"), 0);
    assert_int_equal(cm_create(ns, "w1", NULL, "x", NULL, 0), GD_OK);
    converge(s, ns, NULL, 30000);
    unfollow(&s);
    recorder_free(&rec);
    stop_informer(&inf);

    informer quiet = {0};
    const char *extra2[] = {"--min-watch-timeout", "5m", "--watch-progress-deadline", "2s", NULL};
    start_informer(&quiet, ns, NULL, extra2);
    s = follow(&quiet, &rec, 0);
    wait_synced(s, 30000);
    t0 = gd_mono_ms();
    while (watch_ends(&quiet, "stalled") < 1 && gd_mono_ms() - t0 < test_scaled_ms(30000))
        gd_sub_poll(s, 100);
    assert_true(watch_ends(&quiet, "stalled") >= 1);
    assert_true(log_contains(&quiet, "watch made no progress"));
    assert_int_equal(stat_value(&quiet, "godis_informer_relists_total"), 0);
    assert_int_equal(cm_create(ns, "w2", NULL, "x", NULL, 0), GD_OK);
    converge(s, ns, NULL, 30000);                    /* the resumed watch delivers */
    unfollow(&s);
    recorder_free(&rec);
    stop_informer(&quiet);
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
        snprintf(cmd, sizeof cmd, "%s/bin/godis-informer %s 2>&1", IT.root, bad[i]);
        int rc = run_cmd(cmd, out, sizeof out);
        if (rc != 2)
            fail_msg("'%s' exited %d (want 2): %s", bad[i], rc, out);
        assert_non_null(strstr(out, "godis-informer"));
        char *nl = strchr(out, '\n');           /* exactly one line */
        if (!nl || nl[1] != '\0')
            fail_msg("'%s': not one line: %s", bad[i], out);
    }
    char out[8192];
    snprintf(cmd, sizeof cmd, "%s/bin/godis-informer --help", IT.root);
    assert_int_equal(run_cmd(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "--label-selector"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_bad_flags, test_teardown),
        cmocka_unit_test_teardown(test_concurrent_writes, test_teardown),
        cmocka_unit_test_teardown(test_label_selector, test_teardown),
        cmocka_unit_test_teardown(test_late_and_lagged, test_teardown),
        cmocka_unit_test_teardown(test_pagination, test_teardown),
        cmocka_unit_test_teardown(test_watch_ends_by_timeout_and_deadline, test_teardown),
        cmocka_unit_test_teardown(test_apiserver_restart_and_compaction, test_teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
