/* test_godis_status_writes.c — how many GodisCluster status writes a reconcile makes
 * (issue 23: a 100 x 3 converge wrote ~13 statuses per cluster). The rollout's counts and
 * revisions ride on the planner's write (one write per reconcile, not two), and a change of
 * counts and messages alone waits until GODIS_PROGRESS_WRITE_MS after the cluster's last
 * status write, while a decisive change (a condition turning) goes at once. The cache is a
 * Running cluster c with members 1-3 whose pods turn Ready one by one; the API server is
 * the scriptable httpd helper (it echoes each write, which becomes the cache's copy). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include "client_fixture.h"
#include "godis_fake.h"
#include "../support/godis_fake_children.h"
#include "godis_status.h"
#include "godis_reconcile.h"
#include "gd_json.h"

static cJSON *cached;      /* the cache's GodisCluster */
static int godis_port;     /* where the members' godis answers (0: a closed port) */
static bool no_godis;      /* a new cluster's: no Godis objects yet */
static int nready;         /* members 1..nready have a Ready pod, the others a pod not Ready */

static const cJSON *fake_get(godis_env *e, const char *kind, const char *ns, const char *name)
{
    (void)e;
    (void)ns;
    if (!strcmp(kind, "GodisCluster")) return !strcmp(name, "c") ? cJSON_Duplicate(cached, 1) : NULL;
    if (!strcmp(kind, "Godis")) {
        if (no_godis) return NULL;
        int64_t id = gf_id_of(name);
        return id >= 1 && id <= 3 ? gf_godis(id, true) : NULL;
    }
    return gfc_child(kind, name, 3, 3);
}

static const cJSON *fake_list(godis_env *e, const char *kind, const char *ns, const char *k,
                        const char *v)
{
    (void)e;
    (void)ns;
    if (no_godis && !strcmp(kind, "Godis")) return cJSON_CreateArray();
    cJSON *l = gf_list(kind, k, v, 3, 3, false);    /* every pod at 127.0.0.1: one server */
    if (!strcmp(kind, "Pod")) {
        cJSON *p;
        cJSON_ArrayForEach(p, l)
            if (gf_id_of(gd_json_str_or(p, "metadata.labels.node-name", "")) > nready)
                gd_json_set(cJSON_GetArrayItem(gd_json_path(p, "status.conditions"), 0), "status",
                            cJSON_CreateString("False"));
    }
    return l;
}

/* One reconcile; returns the status writes it made, the last one becoming the cache's copy. */
static int reconcile(client_fixture *f, godis_result *r)
{
    godis_env e = {.client = f->c, .get = fake_get, .list = fake_list,
                   .godis_port = godis_port ? godis_port : gf_closed_port(),
                   .godis_timeout_ms = 100, .node_notready_grace_ms = 40000};
    int before = httpd_request_count(f->h), n = 0;
    *r = godis_reconcile_cluster(&e, "ns/c");
    for (int i = before; i < httpd_request_count(f->h); i++) {
        const httpd_req *q = httpd_request(f->h, i);
        if (strcmp(q->method, "PUT") || !strstr(q->uri, "/godisclusters/c/status")) continue;
        n++;
        cJSON_Delete(cached);
        cached = cJSON_Parse(q->body);
    }
    return n;
}

static const char *condition(const char *type, const char *field)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, gd_json_path(cached, "status.conditions"))
        if (!strcmp(gd_json_str_or(c, "type", ""), type)) return gd_json_str_or(c, field, "");
    return "";
}

static void test_counts_batched_then_coalesced(void **state)
{
    client_fixture *f = *state;
    godis_status_memo_reset();
    /* just initialised: members recorded, no pod Ready, no counts of the rollout yet */
    cached = cJSON_Parse(
        "{\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"GodisCluster\",\"metadata\":{"
        "\"name\":\"c\",\"namespace\":\"ns\",\"uid\":\"cu\",\"resourceVersion\":\"5\","
        "\"generation\":1},\"spec\":{\"replicas\":3},\"status\":{\"status\":\"Running\","
        "\"members\":[1,2,3],\"replicas\":3,\"nextID\":4,\"scaleOutID\":0,\"scaleInID\":0,"
        "\"initialReplicas\":3,\"observedGeneration\":1,\"readyReplicas\":0}}");
    godis_result r;
    /* member 1 Ready: the rollout's counts and the planner's readiness, one write */
    nready = 1;
    assert_int_equal(reconcile(f, &r), 1);
    assert_int_equal(gd_json_int_or(cached, "status.readyReplicas", -1), 1);
    assert_non_null(gd_json_path(cached, "status.updatedReplicas"));
    assert_non_null(gd_json_path(cached, "status.updateRevision"));
    assert_string_equal(condition("Degraded", "status"), "True");
    /* member 2 Ready right after: counts and messages only, so nothing yet; the reconcile
     * asks to come back when the write is due */
    nready = 2;
    assert_int_equal(reconcile(f, &r), 0);
    assert_int_equal(r.kind, GODIS_REQUEUE_AFTER);
    assert_true(r.after_ms > 0 && r.after_ms <= GODIS_PROGRESS_WRITE_MS);
    assert_int_equal(gd_json_int_or(cached, "status.readyReplicas", -1), 1);
    /* member 3 Ready: Degraded turns False, written at once with the counts */
    nready = 3;
    assert_int_equal(reconcile(f, &r), 1);
    assert_int_equal(gd_json_int_or(cached, "status.readyReplicas", -1), 3);
    assert_string_equal(condition("Degraded", "status"), "False");
    /* nothing changed since: nothing written */
    assert_int_equal(reconcile(f, &r), 0);
    /* all Ready but no write through a member yet (nothing listens): a progress-only
     * change left for later must not push the probe's next try out to the write's turn */
    cJSON_DeleteItemFromObject(gd_json_path(cached, "status"), "updateRevision");
    assert_int_equal(reconcile(f, &r), 0);
    assert_int_equal(r.kind, GODIS_REQUEUE_AFTER);
    assert_true(r.after_ms <= 1000);
    assert_string_equal(condition("Ready", "status"), "False");
    /* and once the interval has passed (a worker that never wrote it: the memo forgotten),
     * a progress-only change is written */
    nready = 2;
    assert_int_equal(reconcile(f, &r), 1);     /* Degraded True again: decisive */
    nready = 1;
    assert_int_equal(reconcile(f, &r), 0);     /* 2 -> 1 Ready: progress only, within the interval */
    godis_status_memo_reset();
    assert_int_equal(reconcile(f, &r), 1);
    assert_int_equal(gd_json_int_or(cached, "status.readyReplicas", -1), 1);
    cJSON_Delete(cached);
    cached = NULL;
}

/* A godis that takes every write: each request read is answered +OK (one command a
 * connection, as the write probe sends), except on connection number probe_refuse_conn
 * (counting from 1), answered as a member with no leader answers. Listens on 127.0.0.1,
 * the fake pods' IP: every member's connection comes here. */
static atomic_int probe_conns, probe_refuse_conn;

static void *ok_server(void *arg)
{
    int ls = *(int *)arg, c;
    while ((c = accept(ls, NULL, NULL)) >= 0) {
        bool refuse = ++probe_conns == probe_refuse_conn;
        const char *reply = refuse ? "-propose canceled by context\r\n" : "+OK\r\n";
        char buf[512];
        while (read(c, buf, sizeof buf) > 0)
            if (write(c, reply, strlen(reply)) != (ssize_t)strlen(reply)) break;
        close(c);
    }
    return NULL;
}

static int start_ok_server(int *ls, pthread_t *t)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    *ls = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(*ls >= 0);
    assert_int_equal(bind(*ls, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(*ls, 8), 0);
    assert_int_equal(getsockname(*ls, (struct sockaddr *)&a, &len), 0);
    assert_int_equal(pthread_create(t, NULL, ok_server, ls), 0);
    return ntohs(a.sin_port);
}

static void stop_ok_server(int ls, pthread_t t)
{
    shutdown(ls, SHUT_RDWR);       /* wakes accept() */
    close(ls);
    pthread_join(t, NULL);
    godis_port = 0;
}

/* A new cluster: the first reconcile writes its intent (members 1-3, phase Initializing)
 * and creates its members' Godis, which the cache has from then on. */
#define NEW_CLUSTER_META                                                                     \
    "\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"GodisCluster\",\"metadata\":{"   \
    "\"name\":\"c\",\"namespace\":\"ns\",\"uid\":\"cu\",\"resourceVersion\":\"5\","         \
    "\"generation\":1},\"spec\":{\"replicas\":3}"

static void new_cluster(client_fixture *f)
{
    godis_status_memo_reset();
    no_godis = true;
    cJSON_Delete(cached);
    cached = cJSON_Parse("{" NEW_CLUSTER_META "}");
    /* the intent's answer (the bootstrap goes on from what the API server returned) */
    client_push(f->h, 200, NULL,
                "{" NEW_CLUSTER_META ",\"status\":{\"status\":\"Initializing\",\"members\":[1,2,3],"
                "\"nextID\":4,\"initialReplicas\":3,\"replicas\":3,\"readyReplicas\":0,"
                "\"scaleOutID\":0,\"scaleInID\":0,\"observedGeneration\":1}}");
}

/* The bootstrap's last record (phase Running) rides on the write that says the members
 * serve: a 100 x 3 converge wrote it 0.3 s after the intent, then again for Ready. */
static void test_bootstrap_phase_rides_on_readiness(void **state)
{
    client_fixture *f = *state;
    int ls;
    pthread_t t;
    godis_port = start_ok_server(&ls, &t);
    new_cluster(f);
    nready = 0;
    godis_result r;
    assert_int_equal(reconcile(f, &r), 1);                    /* the intent */
    no_godis = false;
    assert_string_equal(gd_json_str_or(cached, "status.status", ""), "Initializing");
    assert_int_equal(r.kind, GODIS_REQUEUE_AFTER);            /* the phase is left for later */
    assert_true(r.after_ms > 1000 && r.after_ms <= GODIS_PROGRESS_WRITE_MS);
    nready = 2;                                               /* not all Ready: still later */
    assert_int_equal(reconcile(f, &r), 0);
    assert_int_equal(r.kind, GODIS_REQUEUE_AFTER);
    assert_string_equal(gd_json_str_or(cached, "status.status", ""), "Initializing");
    nready = 3;                       /* all Ready and a write through member 1 succeeds */
    assert_int_equal(reconcile(f, &r), 1);
    assert_string_equal(gd_json_str_or(cached, "status.status", ""), "Running");
    assert_string_equal(condition("Ready", "status"), "True");
    assert_int_equal(gd_json_int_or(cached, "status.readyReplicas", -1), 3);
    /* and it carries what the next reconcile would otherwise write 30 s later, alone: the
     * rollout's counts and revision, and the steady state's Progressing message */
    assert_non_null(gd_json_path(cached, "status.updatedReplicas"));
    assert_non_null(gd_json_path(cached, "status.updateRevision"));
    assert_string_equal(condition("Progressing", "message"), "membership matches spec");
    /* (what comes next is the fake world's: its ReplicaSets carry no template hash, so a
     * rollout would start) */
    stop_ok_server(ls, t);
}

/* Ready=True needs a write through every member, not one: a member that has not heard the
 * leader yet takes none (clients reach any member). The probe stops at the first that
 * fails and tries again within a second. */
static void test_ready_needs_a_write_through_every_member(void **state)
{
    client_fixture *f = *state;
    int ls;
    pthread_t t;
    godis_port = start_ok_server(&ls, &t);
    probe_conns = 0;
    probe_refuse_conn = 2;                  /* member 2 answers as one with no leader */
    new_cluster(f);
    nready = 0;
    godis_result r;
    assert_int_equal(reconcile(f, &r), 1);  /* the intent */
    no_godis = false;
    nready = 3;
    assert_int_equal(reconcile(f, &r), 0);  /* the phase's write waits for Ready */
    assert_int_equal(probe_conns, 2);       /* members 1 and 2; not 3 after 2 failed */
    assert_string_not_equal(condition("Ready", "status"), "True");
    assert_int_equal(r.kind, GODIS_REQUEUE_AFTER);
    assert_true(r.after_ms <= 1000);
    assert_int_equal(reconcile(f, &r), 1);  /* every member takes the write now */
    assert_int_equal(probe_conns, 5);
    assert_string_equal(condition("Ready", "status"), "True");
    reconcile(f, &r);                       /* Ready: no more probes (what it writes is the
                                             * fake world's rollout, as above) */
    assert_int_equal(probe_conns, 5);
    probe_refuse_conn = 0;
    stop_ok_server(ls, t);
}

/* It never waits on a cluster whose spec changed meanwhile, nor longer than
 * GODIS_PROGRESS_WRITE_MS after the intent (members that never serve: Running, as before). */
static void test_bootstrap_phase_waits_no_longer(void **state)
{
    client_fixture *f = *state;
    godis_result r;
    new_cluster(f);
    nready = 3;                                  /* Ready pods, but no godis answers */
    assert_int_equal(reconcile(f, &r), 1);
    no_godis = false;
    assert_int_equal(reconcile(f, &r), 0);
    assert_int_equal(r.kind, GODIS_REQUEUE_AFTER);
    assert_true(r.after_ms <= 1000);             /* the probe's next try is not pushed out */
    gd_json_set(cached, "metadata.generation", cJSON_CreateNumber(2));
    assert_int_equal(reconcile(f, &r), 1);
    assert_string_equal(gd_json_str_or(cached, "status.status", ""), "Running");
    assert_int_equal(gd_json_int_or(cached, "status.observedGeneration", -1), 2);
    assert_string_equal(condition("Ready", "status"), "False");

    new_cluster(f);
    nready = 0;
    assert_int_equal(reconcile(f, &r), 1);
    no_godis = false;
    assert_int_equal(reconcile(f, &r), 0);
    godis_status_memo_reset();                   /* as if GODIS_PROGRESS_WRITE_MS passed */
    assert_int_equal(reconcile(f, &r), 1);
    assert_string_equal(gd_json_str_or(cached, "status.status", ""), "Running");
    assert_string_equal(condition("Ready", "status"), "False");
    /* the bootstrap's last write said what the steady state says: nothing is left to write,
     * now or later (its conditions' reasons and messages were a write of their own) */
    assert_int_equal(reconcile(f, &r), 0);
    godis_status_memo_reset();
    assert_int_equal(reconcile(f, &r), 0);

    /* the members' Godis gone outright (finalizers stripped) while their pods are still
     * there: recorded at once, so that they are replaced under new ids (godis_plan.c) */
    new_cluster(f);
    nready = 0;
    assert_int_equal(reconcile(f, &r), 1);       /* (the cache never shows the creates) */
    assert_int_equal(reconcile(f, &r), 1);
    assert_string_equal(gd_json_str_or(cached, "status.status", ""), "Running");
    no_godis = false;
    cJSON_Delete(cached);
    cached = NULL;
}

/* Every cluster written recently is remembered, however its uid hashes: one slot per uid let
 * clusters evict each other, and 8 of 100 (300 x 3: most) then wrote every count at once.
 * 2 000 clusters written within the interval all wait; an entry past the interval frees its
 * slot; and a uid never written is due at once. */
static void test_memo_keeps_every_recent_cluster(void **state)
{
    (void)state;
    godis_status_memo_reset();
    char uid[64];
    for (int i = 0; i < 2000; i++) {
        snprintf(uid, sizeof uid, "5f0c%04d-aaaa-bbbb-cccc-%012d", i % 10000, i * 7919);
        godis_status_memo_note(uid, 1000000 + i);
    }
    int waiting = 0;
    for (int i = 0; i < 2000; i++) {
        snprintf(uid, sizeof uid, "5f0c%04d-aaaa-bbbb-cccc-%012d", i % 10000, i * 7919);
        waiting += godis_status_memo_due_in(uid, 1002000) == 1000000 + i + GODIS_PROGRESS_WRITE_MS - 1002000;
    }
    assert_int_equal(waiting, 2000);
    assert_int_equal(godis_status_memo_due_in("never-written", 1002000), 0);
    /* past the interval: due, and its slot taken by the next cluster of its window */
    int64_t later = 1000000 + 2000 + GODIS_PROGRESS_WRITE_MS;
    assert_int_equal(godis_status_memo_due_in("5f0c0000-aaaa-bbbb-cccc-000000000000", later), 0);
    for (int i = 0; i < 2000; i++) {
        snprintf(uid, sizeof uid, "6e1d%04d-aaaa-bbbb-cccc-%012d", i % 10000, i * 104729);
        godis_status_memo_note(uid, later + i);
    }
    waiting = 0;
    for (int i = 0; i < 2000; i++) {
        snprintf(uid, sizeof uid, "6e1d%04d-aaaa-bbbb-cccc-%012d", i % 10000, i * 104729);
        waiting += godis_status_memo_due_in(uid, later + 2000) > 0;
    }
    assert_int_equal(waiting, 2000);
    godis_status_memo_reset();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_counts_batched_then_coalesced, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_bootstrap_phase_rides_on_readiness, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_ready_needs_a_write_through_every_member, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_bootstrap_phase_waits_no_longer, client_setup, client_teardown),
        cmocka_unit_test(test_memo_keeps_every_recent_cluster),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
