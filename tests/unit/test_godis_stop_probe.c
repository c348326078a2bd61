/* test_godis_stop_probe.c — a stop first asks the survivors it counts on whether they answer
 * (godis_probe_survivors), the GodisCluster controller end to end against a fixed cache, the
 * scriptable httpd helper as the API server and a fake godis on 127.0.0.<id>.
 *
 * The state: 5 -> 4, member 5 is the scaleInID, its forget not sent yet, every pod Ready,
 * each member alone on its node: the others (1..4, one a node) commit its forget with a node's
 * worth to spare, so member 5 is stopped first. But a pod stays Ready for the node grace
 * period (~40 s) after its node died: the chaos campaign's c03 stopped a member first while a
 * node holding two of the others had just died, 3 of 6 voters up, no quorum for the forget.
 * Here a member whose node died is one whose address nobody answers on. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "client_fixture.h"
#include "godis_fake.h"
#include "../support/godis_fake_children.h"
#include "gd_json.h"
#include "gd_time.h"
#include "godis_client.h"
#include "godis_reconcile.h"
#include "godis_retire.h"

#define N 5

/* ---- the fake godis members: `hello` answered, any other command refused and noted ---- */

static int port;                      /* every member's client port */
static int lfd[N + 1];                /* listening on 127.0.0.<id>, or -1: that member is dead */
static pthread_t th[N + 1];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char heard[N + 1][256];        /* the last command other than hello, per member */

static void *serve(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (;;) {
        int fd = accept(lfd[id], NULL, NULL);
        if (fd < 0) return NULL;                      /* closed: the test is over */
        char buf[1024];
        size_t len = 0;
        for (;;) {
            ssize_t r = recv(fd, buf + len, sizeof buf - 1 - len, 0);
            if (r <= 0) break;
            len += (size_t)r;
            godis_reply *req = NULL;
            size_t used = 0;
            if (godis_reply_parse(buf, len, &req, &used) != GD_OK || !req) continue;
            const char *ans = "-ERR test: not now\r\n";
            if (req->type == GODIS_REPLY_ARRAY && req->n >= 1 && !strcmp(req->elems[0]->str, "hello")) {
                ans = "*2\r\n$6\r\nserver\r\n$5\r\ngodis\r\n";
            } else if (req->type == GODIS_REPLY_ARRAY) {
                pthread_mutex_lock(&mu);
                heard[id][0] = '\0';
                for (size_t i = 0; i < req->n; i++)
                    snprintf(heard[id] + strlen(heard[id]), sizeof heard[id] - strlen(heard[id]),
                             "%s%s", i ? " " : "", req->elems[i]->str);
                pthread_mutex_unlock(&mu);
            }
            godis_reply_destroy(&req);
            memmove(buf, buf + used, len - used);
            len -= used;
            if (send(fd, ans, strlen(ans), MSG_NOSIGNAL) < 0) break;
        }
        close(fd);
    }
}

static int listen_on(int id, int p)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p)};
    char ip[32];
    snprintf(ip, sizeof ip, "127.0.0.%d", id);
    inet_pton(AF_INET, ip, &a.sin_addr);
    socklen_t l = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 8) ||
        getsockname(fd, (struct sockaddr *)&a, &l)) {
        if (fd >= 0) close(fd);
        return -1;
    }
    if (!port) port = ntohs(a.sin_port);
    return fd;
}

/* Members 1..N listen on 127.0.0.<id>:port, except those in dead[] (nobody answers there). */
static void members_up(const bool *dead)
{
    for (int tries = 0; tries < 20; tries++) {
        port = 0;
        bool ok = true;
        for (int id = 1; id <= N; id++) {
            lfd[id] = -1;
            if (dead[id] || !ok) continue;
            lfd[id] = listen_on(id, port);
            ok = lfd[id] >= 0;
        }
        if (ok && port) break;
        for (int id = 1; id <= N; id++)
            if (lfd[id] >= 0) close(lfd[id]);
    }
    assert_true(port > 0);
    memset(heard, 0, sizeof heard);
    for (int id = 1; id <= N; id++)
        if (lfd[id] >= 0) assert_int_equal(pthread_create(&th[id], NULL, serve, (void *)(intptr_t)id), 0);
}

static void members_down(void)
{
    for (int id = 1; id <= N; id++) {
        if (lfd[id] < 0) continue;
        shutdown(lfd[id], SHUT_RDWR);
        close(lfd[id]);
        pthread_join(th[id], NULL);
        lfd[id] = -1;
    }
}

/* ---- the cache: 5 -> 4, member 5 being removed, each pod Ready on a node of its own ---- */

static cJSON *pod_on_own_node(int64_t id)
{
    char ip[32], node[32];
    snprintf(ip, sizeof ip, "127.0.0.%lld", (long long)id);
    snprintf(node, sizeof node, "node-%lld", (long long)id);
    cJSON *pod = gf_pod(id, ip);
    gd_json_set(pod, "spec.nodeName", cJSON_CreateString(node));
    return pod;
}

static const cJSON *fake_get(godis_env *e, const char *kind, const char *ns, const char *name)
{
    (void)e;
    (void)ns;
    int64_t id = gf_id_of(name);
    if (!strcmp(kind, "GodisCluster") && !strcmp(name, "c"))
        return cJSON_Parse(
            "{\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"GodisCluster\",\"metadata\":{"
            "\"name\":\"c\",\"namespace\":\"ns\",\"uid\":\"cu\",\"resourceVersion\":\"5\","
            "\"generation\":2},\"spec\":{\"replicas\":4},\"status\":{\"status\":\"Scaling\","
            "\"members\":[1,2,3,4,5],\"nextID\":6,\"scaleOutID\":0,\"scaleInID\":5,"
            "\"initialReplicas\":5,\"observedGeneration\":2}}");
    if (!strcmp(kind, "Godis")) return id >= 1 && id <= N ? gf_godis(id, true) : NULL;
    return gfc_child(kind, name, N, N);
}

static const cJSON *fake_list(godis_env *e, const char *kind, const char *ns, const char *k,
                        const char *v)
{
    (void)e;
    (void)ns;
    if (strcmp(kind, "Pod")) return gf_list(kind, k, v, N, N, true);
    cJSON *out = cJSON_CreateArray();
    bool all = !strcmp(k ? k : "", "cluster-name");
    for (int64_t id = 1; id <= N; id++)
        if (all || gf_id_of(v ? v : "") == id) cJSON_AddItemToArray(out, pod_on_own_node(id));
    return out;
}

static godis_result reconcile(client_fixture *f)
{
    setenv(GODIS_LOOPBACK_ENV, "1", 1);       /* the test environment: never ask DNS */
    unsetenv("GODIS_HOSTS_FILE");
    godis_env e = {.client = f->c, .get = fake_get, .list = fake_list, .godis_port = port,
                   .godis_timeout_ms = 200, .node_notready_grace_ms = 40000};
    return godis_reconcile_cluster(&e, "ns/c");
}

static bool wrote_to(client_fixture *f, const char *method, const char *uri_part)
{
    for (int i = 0; i < httpd_request_count(f->h); i++) {
        const httpd_req *q = httpd_request(f->h, i);
        if (!strcmp(q->method, method) && strstr(q->uri, uri_part)) return true;
    }
    return false;
}

static bool forgotten_through(int id)
{
    pthread_mutex_lock(&mu);
    bool yes = !strcmp(heard[id], "cluster forget 5");
    pthread_mutex_unlock(&mu);
    return yes;
}

/* Every survivor answers: member 5 is stopped first (its ReplicaSet to 0), no forget yet. */
static void test_all_answer_stop_first(void **state)
{
    client_fixture *f = *state;
    bool dead[N + 1] = {0};
    members_up(dead);
    godis_result r = reconcile(f);
    members_down();
    assert_int_equal(r.err, GD_OK);
    assert_true(wrote_to(f, "PUT", "/namespaces/ns/replicasets/c-5"));
    for (int id = 1; id <= N; id++) assert_string_equal(heard[id], "");
}

/* Member 1's node just died (its pod still Ready): the others that answer, 2..4, are one
 * short of a node's worth to spare, so the forget goes first — while member 5 runs, its
 * vote counting — sent to member 2 (member 1, the lowest id, would never answer), and
 * member 5 is not touched before it. Without the probe member 5 was stopped: 3 of 5 voters
 * up, and the one more failure the stop first counted on to spare already spent. */
static void test_silent_survivor_forget_first(void **state)
{
    client_fixture *f = *state;
    bool dead[N + 1] = {[1] = true};
    members_up(dead);
    int64_t t0 = gd_mono_ms();
    godis_result r = reconcile(f);
    int64_t took = gd_mono_ms() - t0;
    members_down();
    assert_int_equal(r.kind, GODIS_ERROR);        /* the fake refuses the forget */
    assert_true(forgotten_through(2));
    assert_false(wrote_to(f, "PUT", "/namespaces/ns/replicasets/c-5"));
    assert_false(wrote_to(f, "DELETE", "/namespaces/ns/pods/c-5-x"));
    /* the probe is bounded (the forget's own retries, 200 ms, come on top) */
    assert_true(took < GODIS_PROBE_BUDGET_MS + 2000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_all_answer_stop_first, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_silent_survivor_forget_first, client_setup, client_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
