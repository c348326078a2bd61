/* itest_worker.c — informer → worker → API server on the devcluster (tools/devcluster):
 * 500 GodisClusters, bin/godis-informer for the kind, bin/godis-worker standalone with the
 * "sleepy" reconciler (8 threads, random sleeps) writing status.observedGeneration through
 * the fenced read-your-own-writes path, and spec edits while it runs. Checked:
 *   - every key reconciled, never two reconciles of one key at once (the record file);
 *   - every final state right: each object's status.observedGeneration equals its
 *     metadata.generation on the API server.
 * Needs KUBECONFIG (run-integration.sh sets it); the CRDs come from deploy/base/crds. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include "e2e_procs.h"
#include "gd_json.h"
#include "gd_time.h"
#include "k8s_client.h"
#include "k8s_config.h"
#include "../support/test_wait.h"

#define NKEYS 500
#define NEDITS 100

static k8s_client *client;
static char dir[128], rec_path[200], ns[64];
static pid_t informer_pid, worker_pid;

/* ---- YAML (the CRD files) → cJSON: plain scalars that look like numbers, booleans or
 * null become those; everything else stays a string. Enough for CRD manifests. */

static cJSON *scalar(const yaml_node_t *n)
{
    const char *v = (const char *)n->data.scalar.value;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return cJSON_CreateString(v);
    if (!strcmp(v, "true"))
        return cJSON_CreateTrue();
    if (!strcmp(v, "false"))
        return cJSON_CreateFalse();
    if (!strcmp(v, "null") || !strcmp(v, "~") || !*v)
        return cJSON_CreateNull();
    char *end;
    double d = strtod(v, &end);
    if (*end == '\0' && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9')))
        return cJSON_CreateNumber(d);
    return cJSON_CreateString(v);
}

static cJSON *node_json(yaml_document_t *doc, yaml_node_t *n)
{
    if (!n)
        return cJSON_CreateNull();
    if (n->type == YAML_SCALAR_NODE)
        return scalar(n);
    if (n->type == YAML_SEQUENCE_NODE) {
        cJSON *a = cJSON_CreateArray();
        for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++)
            cJSON_AddItemToArray(a, node_json(doc, yaml_document_get_node(doc, *i)));
        return a;
    }
    cJSON *o = cJSON_CreateObject();
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        cJSON_AddItemToObject(o, (const char *)k->data.scalar.value,
                              node_json(doc, yaml_document_get_node(doc, p->value)));
    }
    return o;
}

static cJSON *yaml_file_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    yaml_parser_t p;
    yaml_document_t doc;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_file(&p, f);
    assert_true(yaml_parser_load(&p, &doc));
    cJSON *j = node_json(&doc, yaml_document_get_root_node(&doc));
    yaml_document_delete(&doc);
    yaml_parser_delete(&p);
    fclose(f);
    return j;
}

/* ---- cluster setup ---- */

static void ensure_crd(const char *path)
{
    cJSON *crd = yaml_file_json(path);
    k8s_status st;
    gd_err rc = k8s_create(client, &K8S_RES_CRDS, NULL, crd, NULL, &st);
    assert_true(rc == GD_OK || rc == GD_ERR_ALREADY_EXISTS);
    cJSON_Delete(crd);
}

static void wait_crd_served(void)
{
    for (int i = 0; i < 300; i++) {
        cJSON *out = NULL;
        k8s_list_opts lo = {.limit = 1};
        if (k8s_list(client, &K8S_RES_GODISCLUSTERS, "default", &lo, &out, NULL) == GD_OK) {
            cJSON_Delete(out);
            return;
        }
        gd_sleep_ms(100);
    }
    fail_msg("the GodisCluster CRD is not served");
}

static void create_cluster(int i)
{
    char name[32], body[256];
    snprintf(name, sizeof name, "c%d", i);
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"GodisCluster\","
             "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},\"spec\":{\"replicas\":3}}",
             name, ns);
    cJSON *obj = cJSON_Parse(body);
    k8s_status st;
    gd_err rc;
    for (int attempt = 0; attempt < 5; attempt++) {
        rc = k8s_create(client, &K8S_RES_GODISCLUSTERS, ns, obj, NULL, &st);
        if (rc == GD_OK || rc == GD_ERR_ALREADY_EXISTS || !gd_err_retryable(rc))
            break;
        gd_sleep_ms(200);
    }
    if (rc != GD_OK && rc != GD_ERR_ALREADY_EXISTS)
        fail_msg("create %s: %s %s", name, gd_strerror(rc), st.message);
    cJSON_Delete(obj);
}

static void edit_cluster(int i, int replicas)
{
    char name[32], patch[64];
    snprintf(name, sizeof name, "c%d", i);
    snprintf(patch, sizeof patch, "{\"spec\":{\"replicas\":%d}}", replicas);
    k8s_status st;
    gd_err rc = k8s_patch(client, &K8S_RES_GODISCLUSTERS, ns, name, K8S_PATCH_MERGE, patch,
                          NULL, NULL, &st);
    if (rc != GD_OK)
        fail_msg("patch %s: %s %s", name, gd_strerror(rc), st.message);
}

static pid_t spawn(const char *const *argv)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static void stop(pid_t *pid)
{
    if (*pid <= 0)
        return;
    kill(*pid, SIGTERM);
    for (int i = 0; i < 500; i++) {
        if (waitpid(*pid, NULL, WNOHANG) == *pid) {
            *pid = 0;
            return;
        }
        usleep(10000);
    }
    kill(*pid, SIGKILL);
    waitpid(*pid, NULL, 0);
    *pid = 0;
}

/* ---- checks ---- */

/* Number of objects whose observedGeneration equals generation (list pages of 500). */
static int count_converged(int *total)
{
    int ok = 0;
    *total = 0;
    char cont[1024] = "";
    do {
        k8s_list_opts lo = {.limit = 500, .continue_token = cont[0] ? cont : NULL};
        cJSON *list = NULL;
        k8s_status st;
        if (k8s_list(client, &K8S_RES_GODISCLUSTERS, ns, &lo, &list, &st) != GD_OK)
            return -1;
        cJSON *items = cJSON_GetObjectItem(list, "items"), *it;
        cJSON_ArrayForEach(it, items) {
            (*total)++;
            if (gd_json_int_or(it, "status.observedGeneration", -1) == gd_meta_generation(it))
                ok++;
        }
        snprintf(cont, sizeof cont, "%s", gd_json_str_or(list, "metadata.continue", ""));
        cJSON_Delete(list);
    } while (cont[0]);
    return ok;
}

/* Per key: starts and ends alternate within one process, and spans never overlap. */
static void check_record(int *keys_seen, int *overlaps, int *reconciles)
{
    static long long last_end[NKEYS];
    static bool open[NKEYS], seen[NKEYS];
    memset(open, 0, sizeof open);
    memset(seen, 0, sizeof seen);
    memset(last_end, 0, sizeof last_end);
    *keys_seen = *overlaps = *reconciles = 0;
    FILE *f = fopen(rec_path, "r");
    if (!f)
        return;
    char line[700], ctrl[64], key[128];
    long long mono, wall;
    int pid;
    while (fgets(line, sizeof line, f)) {
        int k = -1;
        if (line[0] == 'S' && sscanf(line, "S %63s %127s %lld %lld %d", ctrl, key, &mono, &wall,
                                     &pid) == 5) {
            k = atoi(strchr(key, '/') + 2);
            assert_true(k >= 0 && k < NKEYS);
            if (open[k] || mono < last_end[k])
                (*overlaps)++;
            open[k] = true;
        } else if (line[0] == 'E' && sscanf(line, "E %63s %127s %lld %d", ctrl, key, &mono,
                                            &pid) == 4) {
            k = atoi(strchr(key, '/') + 2);
            assert_true(k >= 0 && k < NKEYS);
            open[k] = false;
            last_end[k] = mono;
            seen[k] = true;
            (*reconciles)++;
        }
    }
    fclose(f);
    for (int k = 0; k < NKEYS; k++)
        *keys_seen += seen[k];
}

/* ---- the test ---- */

static int setup(void **state)
{
    const char *kc = getenv("KUBECONFIG");
    if (!kc)
        return 0;
    k8s_config_opts co = {.kubeconfig = kc};
    k8s_config *cfg = NULL;
    char err[300];
    if (k8s_config_load(&co, &cfg, err, sizeof err) != GD_OK) {
        fprintf(stderr, "kubeconfig: %s\n", err);
        return -1;
    }
    k8s_client_opts o;
    k8s_client_opts_default(&o);
    o.qps = 200;
    o.burst = 200;
    client = k8s_client_new(&cfg, &o);
    k8s_config_destroy(&cfg);
    snprintf(dir, sizeof dir, "/tmp/itest-worker-api-XXXXXX");
    if (!client || !mkdtemp(dir))
        return -1;
    chmod(dir, 0700);
    snprintf(rec_path, sizeof rec_path, "%s/record.log", dir);
    snprintf(ns, sizeof ns, "itest-worker-%d", (int)getpid());
    return 0;
}

static int teardown(void **state)
{
    stop(&worker_pid);
    stop(&informer_pid);
    if (client) {
        k8s_delete_opts d;
        k8s_delete_opts_default(&d);
        k8s_delete(client, &K8S_RES_NAMESPACES, NULL, ns, &d, NULL);
        k8s_client_destroy(&client);
    }
    if (dir[0])
        e2e_remove_dir(dir);
    return 0;
}

static void test_500_keys_against_api(void **state)
{
    if (!client) {
        fprintf(stderr, "  KUBECONFIG not set: skipped (run through tests/run-integration.sh)\n");
        skip();
    }
    ensure_crd("deploy/base/crds/godisclusters.yaml");
    ensure_crd("deploy/base/crds/godises.yaml");
    wait_crd_served();
    char body[160];
    snprintf(body, sizeof body, "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
                                "\"metadata\":{\"name\":\"%s\"}}", ns);
    cJSON *nsobj = cJSON_Parse(body);
    assert_int_equal(k8s_create(client, &K8S_RES_NAMESPACES, NULL, nsobj, NULL, NULL), GD_OK);
    cJSON_Delete(nsobj);
    int64_t t0 = gd_mono_ms();
    for (int i = 0; i < NKEYS; i++)
        create_cluster(i);
    fprintf(stderr, "  created %d GodisClusters in %lld ms\n", NKEYS,
            (long long)(gd_mono_ms() - t0));

    char pub[200], snap[200], eps[500], arg[300];
    snprintf(pub, sizeof pub, "ipc://%s/GodisCluster.pub", dir);
    snprintf(snap, sizeof snap, "ipc://%s/GodisCluster.snap", dir);
    snprintf(eps, sizeof eps, "GodisCluster=%s,%s", pub, snap);
    snprintf(arg, sizeof arg, "record=%s,sleep_ms=20,write=status", rec_path);
    const char *kc = getenv("KUBECONFIG");
    const char *level = getenv("ITEST_VERBOSE") ? "info" : "warn";
    const char *inf[] = {"bin/godis-informer", "--kind", "GodisCluster", "--pub-endpoint", pub,
                         "--snap-endpoint", snap, "--namespace", ns, "--kubeconfig", kc,
                         "--log-level", level, NULL};
    const char *wrk[] = {"bin/tests/godis-worker", "--informer-endpoints", eps, "--reconciler",
                         "sleepy", "--reconciler-arg", arg, "--max-concurrent-reconciles", "8",
                         "--kubeconfig", kc, "--log-level", level, NULL};
    informer_pid = spawn(inf);
    worker_pid = spawn(wrk);
    t0 = gd_mono_ms();
    /* spec edits while the first reconciles run (the record shows they began, whenever that
     * is): generation 2 must be observed too */
    struct stat rs;
    WAIT_UNTIL(stat(rec_path, &rs) == 0 && rs.st_size > 0, 60000);
    assert_true(stat(rec_path, &rs) == 0 && rs.st_size > 0);
    for (int i = 0; i < NEDITS; i++)
        edit_cluster((i * 7) % NKEYS, 5);
    int converged = 0, total = 0;
    for (int i = 0; i < 1200; i++) {
        converged = count_converged(&total);
        if (converged == NKEYS && total == NKEYS)
            break;
        gd_sleep_ms(250);
        int st;
        assert_int_equal(waitpid(worker_pid, &st, WNOHANG), 0);     /* still running */
    }
    fprintf(stderr, "  %d/%d converged after %lld ms\n", converged, total,
            (long long)(gd_mono_ms() - t0));
    assert_int_equal(total, NKEYS);
    assert_int_equal(converged, NKEYS);
    stop(&worker_pid);
    int keys, overlaps, reconciles;
    check_record(&keys, &overlaps, &reconciles);
    fprintf(stderr, "  %d reconciles of %d keys, %d overlaps\n", reconciles, keys, overlaps);
    assert_int_equal(keys, NKEYS);
    assert_int_equal(overlaps, 0);
    assert_true(reconciles >= NKEYS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_500_keys_against_api, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
