/* itest_bad_input.c — objects that pass the CRD schema but are nonsense to the operator
 * (issue 21.4), end to end: the real manager and workers on the local control plane. Each
 * test makes one nonsense edit to a converged 3-member cluster and proves it gets a
 * condition and a Warning Event, no membership change (a watch on the GodisCluster sees
 * every status version: status.members never moves) and no crash (the manager's worker
 * processes are the same ones afterwards); then it undoes the edit and sees the cluster
 * act again, so a test whose operator ignored the world could not pass. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "e2e_lib.h"
#include "e2e_procs.h"
#include "gd_json.h"
#include "gd_log.h"
#include "gd_time.h"

#define TIMEOUT_MS 180000

static k8s_client *C;
static char NS[64], logdir[256], rundir[256];
static pid_t manager;

/* ---- a watch on one GodisCluster: every condition it showed, every membership change ---- */

typedef struct {
    pthread_t th;
    pthread_mutex_t mu;
    char name[64], rv[64];
    volatile int stop;
    bool synced;
    char seen[64][128];         /* "Type=Status/Reason", each once */
    int nseen;
    int64_t members[16];
    int nmembers, changes;
} watcher;

static int on_event(void *ud, const char *type, cJSON *obj)
{
    watcher *w = ud;
    if (strcmp(type, "ADDED") && strcmp(type, "MODIFIED")) return w->stop;
    if (strcmp(gd_meta_name(obj), w->name)) return w->stop;
    pthread_mutex_lock(&w->mu);
    snprintf(w->rv, sizeof w->rv, "%s", gd_meta_rv(obj));
    const cJSON *c;
    cJSON_ArrayForEach(c, gd_json_path(obj, "status.conditions")) {
        char s[128];
        snprintf(s, sizeof s, "%s=%s/%s", gd_json_str_or(c, "type", ""),
                 gd_json_str_or(c, "status", ""), gd_json_str_or(c, "reason", ""));
        bool known = false;
        for (int i = 0; i < w->nseen; i++) known |= !strcmp(w->seen[i], s);
        if (!known && w->nseen < 64) snprintf(w->seen[w->nseen++], sizeof w->seen[0], "%s", s);
    }
    int64_t ids[16];
    int n = e2e_status_members(obj, ids, 16);
    bool same = n == w->nmembers;
    for (int i = 0; same && i < n; i++) same = ids[i] == w->members[i];
    if (w->synced && !same) w->changes++;
    memcpy(w->members, ids, sizeof ids);
    w->nmembers = n;
    w->synced = true;
    pthread_mutex_unlock(&w->mu);
    return w->stop;
}

static void *watch_main(void *arg)
{
    watcher *w = arg;
    while (!w->stop) {
        char sel[96];
        snprintf(sel, sizeof sel, "metadata.name=%s", w->name);
        k8s_watch_opts o = {.list = {.field_selector = sel, .resource_version = w->rv,
                                     .timeout_seconds = 30}, .stop = &w->stop};
        if (k8s_watch(C, &K8S_RES_GODISCLUSTERS, NS, &o, on_event, w, NULL) != GD_OK && !w->stop)
            gd_sleep_ms(200);
    }
    return NULL;
}

static void watch_start(watcher *w, const char *name)
{
    memset(w, 0, sizeof *w);
    pthread_mutex_init(&w->mu, NULL);
    snprintf(w->name, sizeof w->name, "%s", name);
    cJSON *gc = e2e_cluster_get(C, NS, name);
    assert_non_null(gc);
    snprintf(w->rv, sizeof w->rv, "%s", gd_meta_rv(gc));   /* from here: every later version */
    w->nmembers = e2e_status_members(gc, w->members, 16);
    w->synced = true;
    cJSON_Delete(gc);
    assert_int_equal(pthread_create(&w->th, NULL, watch_main, w), 0);
}

static int watch_stop(watcher *w)
{
    w->stop = 1;
    pthread_join(w->th, NULL);
    return w->changes;
}

/* Waits until the watch has shown the condition "Type=Status/Reason". */
static bool saw(watcher *w, const char *cond, int timeout_ms)
{
    for (int64_t end = gd_mono_ms() + timeout_ms; gd_mono_ms() < end; gd_sleep_ms(100)) {
        pthread_mutex_lock(&w->mu);
        bool yes = false;
        for (int i = 0; i < w->nseen; i++) yes |= !strcmp(w->seen[i], cond);
        pthread_mutex_unlock(&w->mu);
        if (yes) return true;
    }
    fprintf(stderr, "bad-input: %s never showed condition %s\n", w->name, cond);
    return false;
}

/* ---- helpers ---- */

/* An Event about `name` with this reason exists (Events are kept: a final state). */
static bool event(const char *name, const char *reason, char *msg, size_t cap, int timeout_ms)
{
    char sel[200];
    snprintf(sel, sizeof sel, "involvedObject.name=%s,reason=%s", name, reason);
    for (int64_t end = gd_mono_ms() + timeout_ms; gd_mono_ms() < end; gd_sleep_ms(200)) {
        k8s_list_opts lo = {.field_selector = sel};
        cJSON *l = NULL;
        bool yes = false;
        if (k8s_list(C, &K8S_RES_EVENTS, NS, &lo, &l, NULL) == GD_OK) {
            const cJSON *e = cJSON_GetArrayItem(gd_json_path(l, "items"), 0);
            if ((yes = e != NULL) && msg) snprintf(msg, cap, "%s", gd_json_str_or(e, "message", ""));
            yes &= !strcmp(gd_json_str_or(e, "type", ""), "Warning");
        }
        cJSON_Delete(l);
        if (yes) return true;
    }
    fprintf(stderr, "bad-input: no Warning Event %s about %s\n", reason, name);
    return false;
}

/* The manager's worker processes: the same set afterwards = no crash. */
static int workers(pid_t *out) { return e2e_children(manager, "godis-worker", out, 8); }

static void patch(const k8s_resource *r, const char *name, const char *json)
{
    k8s_status st = {0};
    gd_err e = k8s_patch(C, r, NS, name, K8S_PATCH_MERGE, json, NULL, NULL, &st);
    if (e) fail_msg("patch %s %s: %s %s", r->kind, name, gd_strerror(e), st.message);
}

typedef struct {
    char name[32];
    int64_t before[16];
    int n;
    pid_t w[8];
    int nw;
} scene;

static void converged_cluster(scene *s, const char *name)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    assert_true(e2e_cluster_create(C, NS, name, 3));
    assert_true(e2e_wait_converged(C, NS, name, 3, TIMEOUT_MS));
    cJSON *gc = e2e_cluster_get(C, NS, name);
    s->n = e2e_status_members(gc, s->before, 16);
    cJSON_Delete(gc);
    s->nw = workers(s->w);
    assert_true(s->nw >= 1);
}

/* Same members as before, the workers never restarted. */
static void untouched(const scene *s, watcher *w)
{
    cJSON *gc = e2e_cluster_get(C, NS, s->name);
    int64_t now[16];
    int n = e2e_status_members(gc, now, 16);
    cJSON_Delete(gc);
    assert_int_equal(n, s->n);
    assert_memory_equal(now, s->before, sizeof(int64_t) * (size_t)n);
    pthread_mutex_lock(&w->mu);
    int changes = w->changes;
    pthread_mutex_unlock(&w->mu);
    assert_int_equal(changes, 0);
    pid_t again[8];
    assert_int_equal(workers(again), s->nw);
    assert_memory_equal(again, s->w, sizeof(pid_t) * (size_t)s->nw);
    assert_int_equal(kill(manager, 0), 0);
}

/* ---- the cases ---- */

static void test_replicas_changed_while_paused(void **state)
{
    (void)state;
    scene s;
    watcher w;
    converged_cluster(&s, "paused");
    watch_start(&w, s.name);
    patch(&K8S_RES_GODISCLUSTERS, s.name, "{\"spec\":{\"paused\":true}}");
    patch(&K8S_RES_GODISCLUSTERS, s.name, "{\"spec\":{\"replicas\":5}}");
    char msg[400];
    assert_true(event(s.name, "ScalingPaused", msg, sizeof msg, 60000));
    assert_non_null(strstr(msg, "spec.replicas is 5"));
    assert_true(saw(&w, "Degraded=True/Paused", 60000));
    untouched(&s, &w);
    watch_stop(&w);
    /* unpaused, it scales: the test would see a change if one had happened */
    patch(&K8S_RES_GODISCLUSTERS, s.name, "{\"spec\":{\"paused\":false}}");
    assert_true(e2e_wait_converged(C, NS, s.name, 5, TIMEOUT_MS));
}

static void test_garbage_annotation(void **state)
{
    (void)state;
    scene s;
    watcher w;
    converged_cluster(&s, "annotated");
    watch_start(&w, s.name);
    char godis[64];
    snprintf(godis, sizeof godis, "%s-2", s.name);
    patch(&K8S_RES_GODISES, godis,
          "{\"metadata\":{\"annotations\":{\"godis.kumkeehyun.github.com/reschedule\":\"banana\"}}}");
    char msg[400];
    assert_true(event(s.name, "InvalidAnnotation", msg, sizeof msg, 60000));
    assert_non_null(strstr(msg, "banana"));
    assert_true(saw(&w, "Valid=False/InvalidAnnotation", 60000));
    untouched(&s, &w);
    /* the same annotation with a value that means it: member 2 is moved (replaced) */
    patch(&K8S_RES_GODISES, godis,
          "{\"metadata\":{\"annotations\":{\"godis.kumkeehyun.github.com/reschedule\":\"true\"}}}");
    assert_true(saw(&w, "Valid=True/AsExpected", 60000));
    for (int64_t end = gd_mono_ms() + TIMEOUT_MS; gd_mono_ms() < end && w.changes < 2;)
        gd_sleep_ms(200);
    assert_true(watch_stop(&w) >= 2);           /* added a member, then removed member 2 */
    assert_true(e2e_wait_converged(C, NS, s.name, 3, TIMEOUT_MS));
}

static void test_configmap_edited_into_garbage(void **state)
{
    (void)state;
    scene s;
    watcher w;
    converged_cluster(&s, "edited");
    char cm[64], want[600];
    snprintf(cm, sizeof cm, "%s-config", s.name);
    cJSON *obj = NULL;
    assert_int_equal(k8s_get(C, &K8S_RES_CONFIGMAPS, NS, cm, &obj, NULL), GD_OK);
    snprintf(want, sizeof want, "%s", gd_json_str_or(obj, "data.initial-cluster", ""));
    cJSON_Delete(obj);
    watch_start(&w, s.name);
    const char *garbage[] = {"{\"data\":{\"initial-cluster\":\"garbage,,@@1\"}}",
                             "{\"data\":{\"initial-cluster\":\"1@http://evil.example:6300\"}}"};
    for (int i = 0; i < 2; i++) {
        patch(&K8S_RES_CONFIGMAPS, cm, garbage[i]);
        /* rewritten from status.members: the same text as before the edit */
        bool back = false;
        for (int64_t end = gd_mono_ms() + 60000; gd_mono_ms() < end && !back; gd_sleep_ms(200)) {
            assert_int_equal(k8s_get(C, &K8S_RES_CONFIGMAPS, NS, cm, &obj, NULL), GD_OK);
            back = !strcmp(gd_json_str_or(obj, "data.initial-cluster", ""), want);
            cJSON_Delete(obj);
        }
        assert_true(back);
    }
    char msg[400];
    assert_true(event(s.name, "ConfigMapEdited", msg, sizeof msg, 60000));
    assert_non_null(strstr(msg, "rewritten from status.members"));
    assert_true(saw(&w, "Valid=False/ConfigMapEdited", 60000));
    assert_true(saw(&w, "Valid=True/AsExpected", 60000));
    untouched(&s, &w);
    watch_stop(&w);
    assert_true(e2e_check_consistent(C, NS, s.name));
}

static void test_godis_with_a_foreign_owner(void **state)
{
    (void)state;
    scene s;
    watcher w;
    converged_cluster(&s, "foreign");
    /* the foreign controller: an object that exists, so the garbage collector keeps the
     * Godis (an owner that does not exist would get it deleted: a lost member, not this) */
    char body[300], godis[64], fix[600];
    snprintf(body, sizeof body, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
             "{\"name\":\"someone-else\",\"namespace\":\"%s\"}}", NS);
    cJSON *o = cJSON_Parse(body), *made = NULL;
    assert_int_equal(k8s_create(C, &K8S_RES_CONFIGMAPS, NS, o, &made, NULL), GD_OK);
    cJSON_Delete(o);
    snprintf(godis, sizeof godis, "%s-2", s.name);
    cJSON *g = NULL;
    assert_int_equal(k8s_get(C, &K8S_RES_GODISES, NS, godis, &g, NULL), GD_OK);
    char *ours = cJSON_PrintUnformatted(gd_json_path(g, "metadata.ownerReferences"));
    cJSON_Delete(g);
    watch_start(&w, s.name);
    snprintf(body, sizeof body, "{\"metadata\":{\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":"
             "\"ConfigMap\",\"name\":\"someone-else\",\"uid\":\"%s\",\"controller\":true}]}}",
             gd_meta_uid(made));
    cJSON_Delete(made);
    patch(&K8S_RES_GODISES, godis, body);
    char msg[600];
    assert_true(event(s.name, "ForeignGodis", msg, sizeof msg, 60000));
    assert_non_null(strstr(msg, "someone-else"));
    assert_true(saw(&w, "Valid=False/ForeignGodis", 60000));
    /* while it holds, a scale-out is not started either */
    assert_true(e2e_cluster_scale(C, NS, s.name, 4));
    cJSON *gc = NULL;
    for (int64_t end = gd_mono_ms() + 60000; gd_mono_ms() < end; gd_sleep_ms(200)) {
        cJSON_Delete(gc);
        gc = e2e_cluster_get(C, NS, s.name);   /* the spec change has been seen ... */
        if (gd_json_int_or(gc, "metadata.generation", 0) == gd_json_int_or(gc, "status.observedGeneration", -1)) break;
        const cJSON *c;
        bool seen = false;
        cJSON_ArrayForEach(c, gd_json_path(gc, "status.conditions"))
            seen |= !strcmp(gd_json_str_or(c, "type", ""), "Valid") &&
                    gd_json_int_or(c, "observedGeneration", 0) == gd_meta_generation(gc);
        if (seen) break;
    }
    assert_int_equal(gd_json_int_or(gc, "status.scaleOutID", 0), 0);   /* ... and held */
    cJSON_Delete(gc);
    untouched(&s, &w);
    /* ownership restored: the held scale-out goes ahead */
    snprintf(fix, sizeof fix, "{\"metadata\":{\"ownerReferences\":%s}}", ours);
    free(ours);
    patch(&K8S_RES_GODISES, godis, fix);
    assert_true(saw(&w, "Valid=True/AsExpected", 60000));
    watch_stop(&w);
    assert_true(e2e_wait_converged(C, NS, s.name, 4, TIMEOUT_MS));
}

/* ---- setup ---- */

static int setup(void **state)
{
    (void)state;
    gd_log_init("itest", GD_LOG_WARN, 0, 2);
    if (!(C = e2e_client()) || !e2e_install_crds(C) || !e2e_ns_create(C, "bad-input", NS, sizeof NS))
        return -1;
    e2e_log_dir(logdir, sizeof logdir, "bad-input");
    snprintf(rundir, sizeof rundir, "/tmp/godis-bad-input-%d", (int)getpid());
    char log[512];
    snprintf(log, sizeof log, "%s/manager.log", logdir);
    const char *argv[] = {"bin/godis-manager", "--kubeconfig", getenv("KUBECONFIG"),
                          "--leader-elect=false", "--workers", "1", "--max-concurrent-reconciles",
                          "4", "--runtime-dir", rundir, "--health-probe-bind-address", "0",
                          "--metrics-bind-address", "0", "--log-level", "info", NULL};
    manager = e2e_spawn(argv, log);
    fprintf(stderr, "bad-input: namespace %s, logs in %s\n", NS, logdir);
    return manager > 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    e2e_stop(manager, 10000);
    e2e_ns_delete(C, NS);
    k8s_client_destroy(&C);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replicas_changed_while_paused),
        cmocka_unit_test(test_garbage_annotation),
        cmocka_unit_test(test_configmap_edited_into_garbage),
        cmocka_unit_test(test_godis_with_a_foreign_owner),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
