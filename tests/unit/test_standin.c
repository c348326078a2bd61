/* test_standin.c — bin/godis-standin end to end on loopback, one process at a time, driven
 * by common/godis_client: the verbs, idempotent meet/forget, membership and data surviving a
 * restart, the crash hazards kept from godis (short command, malformed meet persisted and
 * recurring), env/flag precedence, loopback-only listening, concurrency, the fault flags, a
 * removed leader exiting 0, SIGTERM at once vs SIGINT clean. Several members (Raft's unkind
 * parts): test_standin_raft.c. The processes: standin_fixture.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "godis_client.h"
#include "standin_fixture.h"
#include "../support/test_wait.h"

/* ------------------------------------------------------------------------------------------ */

static void test_verbs(void **state)
{
    (void)state;
    standin_proc p = {0};
    si_mkdir_tmp(&p);
    assert_int_equal(si_start_std(&p, "1", NULL), 0);
    si_lead(&p);
    godis_client *c = si_client(&p, 2000);
    godis_hello_info hi;
    assert_int_equal(godis_hello(c, &hi), GD_OK);
    assert_string_equal(hi.server, "godis");
    assert_string_equal(hi.version, "255.255.255");
    assert_int_equal(hi.proto, 2);
    assert_int_equal(hi.id, 1);
    godis_reply *r = NULL;
    const char *hello[] = {"hello"};
    assert_int_equal(godis_command(c, &r, 1, hello), GD_OK);
    assert_int_equal(r->type, GODIS_REPLY_ARRAY);
    assert_int_equal(r->n, 14);
    godis_reply_destroy(&r);
    char *v = NULL;
    assert_int_equal(godis_get(c, "k", &v), GD_ERR_NOT_FOUND);
    assert_int_equal(godis_set(c, "k", "v1"), GD_OK);
    assert_int_equal(godis_get(c, "k", &v), GD_OK);
    assert_string_equal(v, "v1");
    free(v);
    const char *unknown[] = {"FLUSHALL"};
    assert_int_equal(godis_command(c, &r, 1, unknown), GD_OK);
    assert_int_equal(r->type, GODIS_REPLY_ERROR);
    assert_string_equal(r->str, "ERR unknown command");
    godis_reply_destroy(&r);
    const char *sub[] = {"cluster", "nodes"};
    assert_int_equal(godis_command(c, &r, 2, sub), GD_OK);
    assert_int_equal(r->type, GODIS_REPLY_ERROR);
    godis_reply_destroy(&r);
    char m[64];
    si_members_str(c, m, sizeof(m));
    assert_string_equal(m, "1");
    godis_client_destroy(&c);
    si_stop(&p);
    si_rm_tmp(&p);
}

static void test_meet_forget_idempotent_and_persisted(void **state)
{
    (void)state;
    standin_proc p = {0};
    si_mkdir_tmp(&p);
    assert_int_equal(si_start_std(&p, "1", NULL), 0);
    si_lead(&p);
    godis_client *c = si_client(&p, 2000);
    assert_int_equal(godis_forget(c, 2, 2000), GD_OK);
    assert_int_equal(godis_forget(c, 2, 2000), GD_OK);       /* unknown ids: still +OK */
    assert_int_equal(godis_forget(c, 9, 2000), GD_OK);
    assert_int_equal(godis_set(c, "kept", "yes"), GD_OK);
    /* A removed id is never re-added (raft refuses), though the answer is +OK. */
    assert_int_equal(godis_meet(c, 2, "http://127.0.0.2:6300", 2000), GD_OK);
    char m[64];
    si_members_str(c, m, sizeof(m));
    assert_string_equal(m, "1");
    assert_int_equal(godis_meet(c, 4, "http://127.0.0.4:6300", 2000), GD_OK);
    si_members_str(c, m, sizeof(m));
    assert_string_equal(m, "1,4");
    /* Member 4 never started: one of two members cannot commit anything. */
    assert_int_equal(godis_meet(c, 4, "http://127.0.0.4:6300", 2500), GD_ERR_TIMEOUT);
    assert_int_equal(godis_set(c, "lost", "write"), GD_ERR_PROTOCOL);
    assert_string_equal(godis_last_error(c), "propose canceled by context");
    godis_client_destroy(&c);
    si_stop(&p);

    /* Restart: the WAL dir wins over --initial-cluster. */
    const char *other[] = {"--initial-cluster=7@http://127.0.0.7:6300", NULL};
    assert_int_equal(si_start_std(&p, "1", other), 0);
    c = si_client(&p, 2000);
    si_members_str(c, m, sizeof(m));
    assert_string_equal(m, "1,4");
    char *v = NULL;
    assert_int_equal(godis_get(c, "kept", &v), GD_OK);
    assert_string_equal(v, "yes");
    free(v);
    godis_client_destroy(&c);
    si_stop(&p);
    si_rm_tmp(&p);
}

/* A member that applies its own removal (a removed leader) exits 0 before saving it: the
 * restart replays its WAL and it is back as a voter with its old membership. */
static void test_removed_leader_exits_0_and_comes_back(void **state)
{
    (void)state;
    standin_proc p = {0};
    si_mkdir_tmp(&p);
    assert_int_equal(si_start_std(&p, "2", NULL), 0);
    si_lead(&p);
    godis_client *c = si_client(&p, 2000);
    assert_int_equal(godis_set(c, "before", "removal"), GD_OK);
    assert_int_equal(godis_forget(c, 2, 2000), GD_OK);
    int st = si_wait_exit(p.pid, (int)test_scaled_ms(SI_BOUND_MS));
    assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    p.pid = 0;
    godis_client_destroy(&c);
    assert_int_equal(si_start_std(&p, "2", NULL), 0);
    c = si_client(&p, 2000);
    char m[64];
    si_members_str(c, m, sizeof(m));
    assert_string_equal(m, "2");                 /* the removal was never saved */
    char *v = NULL;
    assert_int_equal(godis_get(c, "before", &v), GD_OK);
    assert_string_equal(v, "removal");
    free(v);
    godis_client_destroy(&c);
    si_lead(&p);                                    /* a voter again: it elects itself */
    si_stop(&p);
    si_rm_tmp(&p);
}

/* SIGTERM (what a pod gets) stops godis at once; SIGINT is its clean shutdown. */
static void test_sigterm_at_once_sigint_clean(void **state)
{
    (void)state;
    standin_proc p = {0};
    si_mkdir_tmp(&p);
    assert_int_equal(si_start_std(&p, "1", NULL), 0);
    kill(p.pid, SIGTERM);
    int st = si_wait_exit(p.pid, (int)test_scaled_ms(SI_BOUND_MS));
    assert_true(st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    p.pid = 0;
    assert_int_equal(si_start_std(&p, "1", NULL), 0);
    kill(p.pid, SIGINT);
    st = si_wait_exit(p.pid, (int)test_scaled_ms(SI_BOUND_MS));
    assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    p.pid = 0;
    si_rm_tmp(&p);
}

static void test_propose_cancel_retry(void **state)
{
    (void)state;
    standin_proc p = {0};
    si_mkdir_tmp(&p);
    const char *fault[] = {"--fault-propose-cancel", "0.5", NULL};
    assert_int_equal(si_start_std(&p, "1", fault), 0);
    si_lead(&p);
    godis_client *c = si_client(&p, 2000);
    for (long long id = 10; id < 16; id++)
        assert_int_equal(godis_forget(c, id, 20000), GD_OK);
    /* (No meet here: a meet applied but answered "canceled" makes a second member that is
     * not running, and the retry cannot commit without it — as with godis.) */
    char m[64];
    si_members_str(c, m, sizeof(m));
    assert_string_equal(m, "1");
    godis_client_destroy(&c);
    si_stop(&p);
    si_rm_tmp(&p);
}

/* The client refuses to send a malformed meet; sent raw, it kills the stand-in for good. */
static void test_malformed_meet_crashes_forever(void **state)
{
    (void)state;
    standin_proc p = {0};
    si_mkdir_tmp(&p);
    assert_int_equal(si_start_std(&p, "1", NULL), 0);
    si_lead(&p);
    godis_client *c = si_client(&p, 2000);
    assert_int_equal(godis_meet(c, 5, "http://bad url:6300", 1000), GD_ERR_ARG);
    assert_int_equal(godis_meet(c, 0, "http://127.0.0.5:6300", 1000), GD_ERR_ARG);
    godis_hello_info hi;
    assert_int_equal(godis_hello(c, &hi), GD_OK);          /* still alive */
    godis_client_destroy(&c);
    si_send_raw(&p, "*4\r\n$7\r\ncluster\r\n$4\r\nmeet\r\n$4\r\nfive\r\n$21\r\nhttp://127.0.0.5:6300\r\n");
    int st = si_wait_exit(p.pid, (int)test_scaled_ms(SI_BOUND_MS));
    assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 2);
    p.pid = 0;
    /* The poisoned entry was persisted: every restart crashes again. */
    for (int i = 0; i < 2; i++) {
        st = si_start_std(&p, "1", NULL);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 2);
    }
    si_rm_tmp(&p);
}

static void test_short_or_non_string_command_crashes(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "*1\r\n$3\r\nget\r\n",
        "*1\r\n$7\r\ncluster\r\n",
        "*3\r\n$7\r\ncluster\r\n$4\r\nmeet\r\n$1\r\n4\r\n",
        "*2\r\n$7\r\ncluster\r\n$6\r\nforget\r\n",
        "*2\r\n$3\r\nget\r\n:1\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        standin_proc p = {0};
        si_mkdir_tmp(&p);
        const char *args[] = {"--listen-client=http://127.0.0.1:0",
                              "--listen-peer=http://127.0.0.1:0", NULL};
        assert_int_equal(si_start(&p, args, NULL), 0);
        si_send_raw(&p, bad[i]);
        int st = si_wait_exit(p.pid, (int)test_scaled_ms(SI_BOUND_MS));
        if (!(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 2))
            fail_msg("request %zu did not crash the stand-in (status %d)", i, st);
        si_rm_tmp(&p);
    }
    /* Not RESP at all: godis closes that connection and lives on; so does the stand-in. */
    standin_proc p = {0};
    si_mkdir_tmp(&p);
    const char *args[] = {"--listen-client=http://127.0.0.1:0", "--listen-peer=http://127.0.0.1:0",
                          NULL};
    assert_int_equal(si_start(&p, args, NULL), 0);
    si_send_raw(&p, "GARBAGE\r\n");
    si_send_raw(&p, ":1\r\n");                          /* RESP, not an array: -invalid format */
    godis_client *c = si_client(&p, 2000);
    godis_hello_info hi;
    assert_int_equal(godis_hello(c, &hi), GD_OK);
    godis_client_destroy(&c);
    si_stop(&p);
    si_rm_tmp(&p);
}

static void test_env_and_flag_precedence(void **state)
{
    (void)state;
    standin_proc p = {0};
    si_mkdir_tmp(&p);
    char wal[192], state_path[192];
    snprintf(wal, sizeof(wal), "CLUSTER_WALDIR=%s/wal", p.dir);
    snprintf(state_path, sizeof(state_path), "%s/wal/standin-membership", p.dir);
    const char *env[] = {"CLUSTER_ID=7", "CLUSTER_LISTEN-CLIENT=http://127.0.0.1:0",
                         "CLUSTER_LISTEN-PEER=http://127.0.0.1:0",
                         "CLUSTER_INITIAL-CLUSTER=7@http://127.0.0.1:6300,8@http://127.0.0.8:6300",
                         "CLUSTER_JOIN=true", wal, NULL};
    assert_int_equal(si_start(&p, NULL, env), 0);
    godis_client *c = si_client(&p, 2000);
    godis_hello_info hi;
    assert_int_equal(godis_hello(c, &hi), GD_OK);
    assert_int_equal(hi.id, 7);
    char m[64];
    si_members_str(c, m, sizeof(m));
    assert_string_equal(m, "7,8");
    godis_client_destroy(&c);
    si_stop(&p);
    FILE *f = fopen(state_path, "r");
    assert_non_null(f);
    char buf[512] = "";
    (void)!fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    assert_non_null(strstr(buf, "origin join"));
    si_rm_tmp(&p);

    /* A flag wins over the environment. */
    si_mkdir_tmp(&p);
    const char *args[] = {"--id=9", NULL};
    const char *env2[] = {"CLUSTER_ID=7", "CLUSTER_LISTEN-CLIENT=http://127.0.0.1:0",
                          "CLUSTER_LISTEN-PEER=http://127.0.0.1:0", NULL};
    assert_int_equal(si_start(&p, args, env2), 0);
    c = si_client(&p, 2000);
    assert_int_equal(godis_hello(c, &hi), GD_OK);
    assert_int_equal(hi.id, 9);
    godis_client_destroy(&c);
    si_stop(&p);
    si_rm_tmp(&p);
}

static void test_bad_configuration_refused(void **state)
{
    (void)state;
    static const char *const cases[][3] = {
        {"--listen-client=http://0.0.0.0:0", "--listen-peer=http://127.0.0.1:0", NULL},
        {"--listen-client=http://10.1.2.3:6379", "--listen-peer=http://127.0.0.1:0", NULL},
        {"--listen-client=http://127.0.0.1:0", "--listen-peer=https://127.0.0.1:0", NULL},
        {"--listen-client=http://127.0.0.1:0", "--id=abc", NULL},
        {"--listen-client=http://127.0.0.1:0", "--join=maybe", NULL},
        {"--listen-client=http://127.0.0.1:0", "--no-such-flag", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        standin_proc p = {0};
        si_mkdir_tmp(&p);
        int st = si_start(&p, cases[i], NULL);
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 2))
            fail_msg("case %zu was not refused as a configuration error (%d)", i, st);
        si_rm_tmp(&p);
    }
    standin_proc p = {0};
    si_mkdir_tmp(&p);
    const char *bad_ic[] = {"--listen-client=http://127.0.0.1:0", "--listen-peer=http://127.0.0.1:0",
                            "--initial-cluster=1@http://h:1,x@http://h:2", NULL};
    int st = si_start(&p, bad_ic, NULL);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0);
    si_rm_tmp(&p);
}

typedef struct {
    int port, idx, ok;
} worker_arg;

static void *worker(void *arg)
{
    worker_arg *w = arg;
    godis_opts o = {.connect_timeout_ms = 1000, .reply_timeout_ms = 3000};
    godis_client *c = godis_client_new(si_host(), w->port, &o);
    w->ok = 1;
    for (int i = 0; i < 50 && w->ok; i++) {
        char k[32], v[32];
        snprintf(k, sizeof(k), "k%d-%d", w->idx, i);
        snprintf(v, sizeof(v), "v%d", i);
        char *got = NULL;
        w->ok = godis_set(c, k, v) == GD_OK && godis_get(c, k, &got) == GD_OK && !strcmp(got, v);
        free(got);
    }
    godis_client_destroy(&c);
    return NULL;
}

static void test_concurrent_clients(void **state)
{
    (void)state;
    standin_proc p = {0};
    si_mkdir_tmp(&p);
    assert_int_equal(si_start_std(&p, "1", NULL), 0);
    si_lead(&p);
    pthread_t th[8];
    worker_arg w[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (worker_arg){.port = p.port, .idx = i};
        pthread_create(&th[i], NULL, worker, &w[i]);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        assert_true(w[i].ok);
    }
    si_stop(&p);
    si_rm_tmp(&p);
}

static void test_fault_refuse_and_delay(void **state)
{
    (void)state;
    standin_proc p = {0};
    si_mkdir_tmp(&p);
    const char *refuse[] = {"--fault-refuse", NULL};
    assert_int_equal(si_start_std(&p, "1", refuse), 0);
    godis_client *c = si_client(&p, 1000);
    godis_hello_info hi;
    gd_err e = godis_hello(c, &hi);
    assert_true(e == GD_ERR_CLOSED || e == GD_ERR_TRANSPORT);
    kill(p.pid, SIGUSR1);                      /* toggles refusing off (asynchronously) */
    WAIT_UNTIL((e = godis_hello(c, &hi)) == GD_OK, 5000);
    assert_int_equal(e, GD_OK);
    godis_client_destroy(&c);
    si_stop(&p);

    const char *delay[] = {"--fault-delay-ms=400", NULL};
    assert_int_equal(si_start_std(&p, "1", delay), 0);
    c = si_client(&p, 100);
    assert_int_equal(godis_hello(c, &hi), GD_ERR_TIMEOUT);
    godis_client_destroy(&c);
    c = si_client(&p, 2000);
    assert_int_equal(godis_hello(c, &hi), GD_OK);
    /* at run time: membership replies only held back, everything else answered at once */
    const char *nodelay[] = {"standin", "fault", "delay-ms", "0"};
    const char *memb[] = {"standin", "fault", "delay-membership-ms", "400"};
    godis_reply *r = NULL;
    assert_int_equal(godis_command(c, &r, 4, nodelay), GD_OK);
    godis_reply_destroy(&r);
    assert_int_equal(godis_command(c, &r, 4, memb), GD_OK);
    assert_int_equal(r->type, GODIS_REPLY_STATUS);
    godis_reply_destroy(&r);
    godis_client_destroy(&c);
    c = si_client(&p, 100);
    assert_int_equal(godis_hello(c, &hi), GD_OK);
    const char *forget[] = {"cluster", "forget", "7"};
    assert_int_equal(godis_command(c, &r, 3, forget), GD_ERR_TIMEOUT);
    godis_client_destroy(&c);
    si_stop(&p);
    si_rm_tmp(&p);
}


int main(void)
{
    if (access(si_bin_path(), X_OK) != 0) {
        fprintf(stderr, "test_standin: %s not built (make first)\n", si_bin_path());
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verbs),
        cmocka_unit_test(test_meet_forget_idempotent_and_persisted),
        cmocka_unit_test(test_removed_leader_exits_0_and_comes_back),
        cmocka_unit_test(test_sigterm_at_once_sigint_clean),
        cmocka_unit_test(test_propose_cancel_retry),
        cmocka_unit_test(test_malformed_meet_crashes_forever),
        cmocka_unit_test(test_short_or_non_string_command_crashes),
        cmocka_unit_test(test_env_and_flag_precedence),
        cmocka_unit_test(test_bad_configuration_refused),
        cmocka_unit_test(test_concurrent_clients),
        cmocka_unit_test(test_fault_refuse_and_delay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
