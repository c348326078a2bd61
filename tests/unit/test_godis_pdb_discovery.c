/* test_godis_pdb_discovery.c — the PodDisruptionBudget's API version is asked once per
 * process (godis_ensure_pdb), also when many reconciles want it at once: a 100-cluster
 * converge had 30 reconciles send GET /apis/policy/v1 together. Eight threads ensure the
 * PDBs of eight clusters at the same moment while the API server (the scriptable httpd
 * helper) takes 300 ms to answer the discovery: one GET, eight creates. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "client_fixture.h"
#include "godis_pdb.h"
#include "gd_json.h"

#define THREADS 8

static const cJSON *fake_get(godis_env *e, const char *kind, const char *ns, const char *name)
{
    (void)e;
    char buf[300];
    snprintf(buf, sizeof buf, "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"uid-%s\"},"
             "\"status\":{\"members\":[1,2,3]}}", name, ns, name);
    return strcmp(kind, "GodisCluster") ? NULL : cJSON_Parse(buf);
}

/* The cluster's member pods: 1..3, the first `ready` of them Ready; member 1 also has a
 * second Ready pod (a rollout's), which must not count twice. */
static int ready = 3;

static const cJSON *fake_list(godis_env *e, const char *kind, const char *ns, const char *k,
                        const char *v)
{
    (void)e;
    (void)ns;
    cJSON *l = cJSON_CreateArray();
    if (strcmp(kind, "Pod") || strcmp(k, "cluster-name")) return l;
    for (int i = 0; i <= 3; i++) {
        int id = i ? i : 1;
        char buf[400];
        snprintf(buf, sizeof buf,
                 "{\"metadata\":{\"name\":\"%s-%d-p%d\",\"labels\":{\"cluster-name\":\"%s\","
                 "\"node-name\":\"%s-%d\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\","
                 "\"status\":\"%s\"}]}}", v, id, i, v, v, id, id <= ready ? "True" : "False");
        cJSON_AddItemToArray(l, cJSON_Parse(buf));
    }
    return l;
}

typedef struct {
    godis_env *e;
    pthread_barrier_t *go;
    char key[32];
} worker_arg;

static void *ensure(void *p)
{
    worker_arg *a = p;
    pthread_barrier_wait(a->go);
    godis_ensure_pdb(a->e, a->key);
    return NULL;
}

static void test_discovery_asked_once(void **state)
{
    client_fixture *f = *state;
    /* the discovery's answer, slow: everyone asks before it comes (1.20: no policy/v1) */
    httpd_resp slow = {.status = 404, .delay_ms = 300,
                       .body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"code\":404}"};
    httpd_push(f->h, &slow);
    godis_env e = {.client = f->c, .get = fake_get, .list = fake_list};
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, THREADS);
    pthread_t t[THREADS];
    worker_arg a[THREADS];
    for (int i = 0; i < THREADS; i++) {
        a[i] = (worker_arg){.e = &e, .go = &go};
        snprintf(a[i].key, sizeof a[i].key, "ns/c%d", i);
        assert_int_equal(pthread_create(&t[i], NULL, ensure, &a[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&go);
    int discovery = 0, creates = 0;
    for (int i = 0; i < httpd_request_count(f->h); i++) {
        const httpd_req *q = httpd_request(f->h, i);
        if (!strcmp(q->method, "GET") && !strcmp(q->uri, "/apis/policy/v1")) discovery++;
        if (!strcmp(q->method, "POST") && strstr(q->uri, "/apis/policy/v1beta1/namespaces/ns/poddisruptionbudgets"))
            creates++;
    }
    assert_int_equal(discovery, 1);
    assert_int_equal(creates, THREADS);
}

static int pdb_creates(client_fixture *f)
{
    int n = 0;
    for (int i = 0; i < httpd_request_count(f->h); i++)
        n += !strcmp(httpd_request(f->h, i)->method, "POST");
    return n;
}

/* No budget before a quorum of the members serves (it protects nothing yet, and the
 * disruption controller rewrote its status for every pod of the bootstrap); created then,
 * once. The API version is known from the test above (one process). */
static void test_pdb_waits_for_a_quorum(void **state)
{
    client_fixture *f = *state;
    godis_env e = {.client = f->c, .get = fake_get, .list = fake_list};
    ready = 0;
    godis_ensure_pdb(&e, "ns/q");
    ready = 1;                     /* member 1 Ready with two pods: still one member */
    godis_ensure_pdb(&e, "ns/q");
    assert_int_equal(pdb_creates(f), 0);
    ready = 2;                     /* 2 of 3: a quorum */
    godis_ensure_pdb(&e, "ns/q");
    assert_int_equal(pdb_creates(f), 1);
    const httpd_req *q = httpd_request(f->h, httpd_request_count(f->h) - 1);
    assert_non_null(strstr(q->uri, "/namespaces/ns/poddisruptionbudgets"));
    cJSON *b = cJSON_Parse(q->body);
    assert_string_equal(gd_meta_name(b), "q");
    cJSON_Delete(b);
    ready = 3;
    godis_ensure_pdb(&e, "ns/q");  /* made: not asked again */
    assert_int_equal(pdb_creates(f), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_discovery_asked_once, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_pdb_waits_for_a_quorum, client_setup, client_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
