/* test_standin.c — bin/godis-standin end to end on loopback, driven by common/godis_client:
 * the verbs, idempotent meet/forget, membership and data surviving a restart, exiting when
 * forgotten (and staying down), the crash hazards kept from godis (short command, malformed
 * meet persisted and recurring), env/flag precedence, loopback-only listening, concurrency,
 * and the fault flags. Each stand-in listens on 127.0.0.1 port 0 and reports its port
 * through --port-file, so tests never collide on ports. GODIS_STANDIN_BIN overrides the path. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "godis_client.h"

extern char **environ;

typedef struct {
    char dir[128];          /* temp dir: wal/, snap/, ports, log */
    pid_t pid;
    int port;
} standin_proc;

static const char *bin_path(void)
{
    const char *b = getenv("GODIS_STANDIN_BIN");
    return b ? b : "bin/godis-standin";
}

static void msleep(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits up to ms for the child; returns its raw status, or -1 if it is still running. */
static int wait_exit(pid_t pid, int ms)
{
    for (int waited = 0; waited <= ms; waited += 10) {
        int st = 0;
        if (waitpid(pid, &st, WNOHANG) == pid)
            return st;
        msleep(10);
    }
    return -1;
}

static void mkdir_tmp(standin_proc *p)
{
    snprintf(p->dir, sizeof(p->dir), "/tmp/standin-test-XXXXXX");
    assert_non_null(mkdtemp(p->dir));
}

static void rm_tmp(standin_proc *p)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p->dir);
    assert_int_equal(system(cmd), 0);
}

/* Starts `godis-standin cluster <args>` with extra env entries; waits for its port file.
 * Returns 0 when listening, else the exit status of a child that died first. */
static int start(standin_proc *p, const char *const *args, const char *const *extra_env)
{
    char ports[160], log[160], pf[200];
    snprintf(ports, sizeof(ports), "%s/ports", p->dir);
    snprintf(log, sizeof(log), "%s/log", p->dir);
    snprintf(pf, sizeof(pf), "--port-file=%s", ports);
    unlink(ports);
    const char *argv[32];
    int n = 0;
    argv[n++] = bin_path();
    argv[n++] = "cluster";
    argv[n++] = pf;
    for (int i = 0; args && args[i] && n < 30; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    const char *envp[256];
    int ne = 0;
    for (char **e = environ; *e && ne < 200; e++)
        if (strncmp(*e, "CLUSTER_", 8) != 0 && strncmp(*e, "GODIS_STANDIN_", 14) != 0)
            envp[ne++] = *e;
    for (int i = 0; extra_env && extra_env[i] && ne < 250; i++)
        envp[ne++] = extra_env[i];
    envp[ne] = NULL;
    p->pid = fork();
    assert_true(p->pid >= 0);
    if (p->pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0)
            dup2(fd, 2);
        execve(argv[0], (char *const *)argv, (char *const *)envp);
        _exit(127);
    }
    for (int waited = 0; waited < 5000; waited += 10) {
        FILE *f = fopen(ports, "r");
        if (f) {
            int ok = fscanf(f, "%d", &p->port) == 1;
            fclose(f);
            if (ok)
                return 0;
        }
        int st = 0;
        if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
            p->pid = 0;
            return st == 0 ? 0x10000 : st;    /* exited 0 without listening: not 0 */
        }
        msleep(10);
    }
    fail_msg("stand-in did not start; see %s", log);
    return -1;
}

/* Starts with a WAL under the temp dir and the standard two-member initial cluster. */
static int start_std(standin_proc *p, const char *id, const char *const *more)
{
    char wal[192], snap[192];
    snprintf(wal, sizeof(wal), "--waldir=%s/wal", p->dir);
    snprintf(snap, sizeof(snap), "--snapdir=%s/snap", p->dir);
    const char *args[24] = {"--id", id, "--listen-client", "http://127.0.0.1:0",
                            "--listen-peer", "http://127.0.0.1:0", wal, snap,
                            "--initial-cluster", "1@http://127.0.0.1:6300,2@http://127.0.0.2:6300"};
    int n = 10;
    for (int i = 0; more && more[i] && n < 23; i++)
        args[n++] = more[i];
    args[n] = NULL;
    return start(p, args, NULL);
}

static void stop(standin_proc *p)
{
    if (p->pid > 0) {
        kill(p->pid, SIGTERM);
        int st = wait_exit(p->pid, 3000);
        if (st < 0) {
            kill(p->pid, SIGKILL);
            waitpid(p->pid, NULL, 0);
        }
        assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    p->pid = 0;
}

static godis_client *client(const standin_proc *p, int reply_ms)
{
    godis_opts o = {.connect_timeout_ms = 1000, .reply_timeout_ms = reply_ms};
    godis_client *c = godis_client_new("127.0.0.1", p->port, &o);
    assert_non_null(c);
    return c;
}

/* Membership as a sorted "1,4" string. */
static void members_str(godis_client *c, char *out, size_t cap)
{
    long long ids[16];
    char *urls[16];
    size_t n = 0;
    assert_int_equal(godis_members(c, ids, urls, 16, &n), GD_OK);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (ids[j] < ids[i]) {
                long long t = ids[i];
                ids[i] = ids[j];
                ids[j] = t;
            }
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        snprintf(out + strlen(out), cap - strlen(out), "%s%lld", i ? "," : "", ids[i]);
        free(urls[i]);
    }
}

/* Sends raw bytes the client would never send, then closes. */
static void send_raw(const standin_proc *p, const char *bytes)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p->port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(send(fd, bytes, strlen(bytes), MSG_NOSIGNAL), (ssize_t)strlen(bytes));
    char buf[64];
    struct timeval tv = {.tv_sec = 3};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    (void)!recv(fd, buf, sizeof(buf), 0);     /* returns when the process dies or answers */
    close(fd);
}

/* ------------------------------------------------------------------------------------------ */

static void test_verbs(void **state)
{
    (void)state;
    standin_proc p = {0};
    mkdir_tmp(&p);
    assert_int_equal(start_std(&p, "1", NULL), 0);
    godis_client *c = client(&p, 2000);
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
    members_str(c, m, sizeof(m));
    assert_string_equal(m, "1,2");
    godis_client_destroy(&c);
    stop(&p);
    rm_tmp(&p);
}

static void test_meet_forget_idempotent_and_persisted(void **state)
{
    (void)state;
    standin_proc p = {0};
    mkdir_tmp(&p);
    assert_int_equal(start_std(&p, "1", NULL), 0);
    godis_client *c = client(&p, 2000);
    assert_int_equal(godis_meet(c, 4, "http://127.0.0.4:6300", 2000), GD_OK);
    assert_int_equal(godis_meet(c, 4, "http://127.0.0.4:6300", 2000), GD_OK);
    assert_int_equal(godis_forget(c, 2, 2000), GD_OK);
    assert_int_equal(godis_forget(c, 2, 2000), GD_OK);
    assert_int_equal(godis_forget(c, 9, 2000), GD_OK);       /* unknown id: still +OK */
    assert_int_equal(godis_set(c, "kept", "yes"), GD_OK);
    char m[64];
    members_str(c, m, sizeof(m));
    assert_string_equal(m, "1,4");
    /* A removed id is never re-added (raft refuses), though the answer is +OK. */
    assert_int_equal(godis_meet(c, 2, "http://127.0.0.2:6300", 2000), GD_OK);
    members_str(c, m, sizeof(m));
    assert_string_equal(m, "1,4");
    godis_client_destroy(&c);
    stop(&p);

    /* Restart: the WAL dir wins over --initial-cluster. */
    const char *other[] = {"--initial-cluster=7@http://127.0.0.7:6300", NULL};
    assert_int_equal(start_std(&p, "1", other), 0);
    c = client(&p, 2000);
    members_str(c, m, sizeof(m));
    assert_string_equal(m, "1,4");
    char *v = NULL;
    assert_int_equal(godis_get(c, "kept", &v), GD_OK);
    assert_string_equal(v, "yes");
    free(v);
    godis_client_destroy(&c);
    stop(&p);
    rm_tmp(&p);
}

static void test_exits_when_forgotten(void **state)
{
    (void)state;
    standin_proc p = {0};
    mkdir_tmp(&p);
    assert_int_equal(start_std(&p, "2", NULL), 0);
    godis_client *c = client(&p, 2000);
    assert_int_equal(godis_forget(c, 2, 2000), GD_OK);
    int st = wait_exit(p.pid, 3000);
    assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    p.pid = 0;
    godis_client_destroy(&c);
    /* It stays removed: a restart exits 0 at once without listening. */
    assert_int_equal(start_std(&p, "2", NULL), 0x10000);
    rm_tmp(&p);
}

static void test_propose_cancel_retry(void **state)
{
    (void)state;
    standin_proc p = {0};
    mkdir_tmp(&p);
    const char *fault[] = {"--fault-propose-cancel", "0.5", NULL};
    assert_int_equal(start_std(&p, "1", fault), 0);
    godis_client *c = client(&p, 2000);
    for (long long id = 10; id < 16; id++) {
        char url[64];
        snprintf(url, sizeof(url), "http://127.0.0.%lld:6300", id);
        assert_int_equal(godis_meet(c, id, url, 20000), GD_OK);
    }
    assert_int_equal(godis_forget(c, 2, 20000), GD_OK);
    char m[64];
    members_str(c, m, sizeof(m));
    assert_string_equal(m, "1,10,11,12,13,14,15");
    godis_client_destroy(&c);
    stop(&p);
    rm_tmp(&p);
}

/* The client refuses to send a malformed meet; sent raw, it kills the stand-in for good. */
static void test_malformed_meet_crashes_forever(void **state)
{
    (void)state;
    standin_proc p = {0};
    mkdir_tmp(&p);
    assert_int_equal(start_std(&p, "1", NULL), 0);
    godis_client *c = client(&p, 2000);
    assert_int_equal(godis_meet(c, 5, "http://bad url:6300", 1000), GD_ERR_ARG);
    assert_int_equal(godis_meet(c, 0, "http://127.0.0.5:6300", 1000), GD_ERR_ARG);
    godis_hello_info hi;
    assert_int_equal(godis_hello(c, &hi), GD_OK);          /* still alive */
    godis_client_destroy(&c);
    send_raw(&p, "*4\r\n$7\r\ncluster\r\n$4\r\nmeet\r\n$4\r\nfive\r\n$21\r\nhttp://127.0.0.5:6300\r\n");
    int st = wait_exit(p.pid, 3000);
    assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 2);
    p.pid = 0;
    /* The poisoned entry was persisted: every restart crashes again. */
    for (int i = 0; i < 2; i++) {
        st = start_std(&p, "1", NULL);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 2);
    }
    rm_tmp(&p);
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
        mkdir_tmp(&p);
        const char *args[] = {"--listen-client=http://127.0.0.1:0",
                              "--listen-peer=http://127.0.0.1:0", NULL};
        assert_int_equal(start(&p, args, NULL), 0);
        send_raw(&p, bad[i]);
        int st = wait_exit(p.pid, 3000);
        if (!(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 2))
            fail_msg("request %zu did not crash the stand-in (status %d)", i, st);
        rm_tmp(&p);
    }
    /* Not RESP at all: godis closes that connection and lives on; so does the stand-in. */
    standin_proc p = {0};
    mkdir_tmp(&p);
    const char *args[] = {"--listen-client=http://127.0.0.1:0", "--listen-peer=http://127.0.0.1:0",
                          NULL};
    assert_int_equal(start(&p, args, NULL), 0);
    send_raw(&p, "GARBAGE\r\n");
    send_raw(&p, ":1\r\n");                          /* RESP, not an array: -invalid format */
    godis_client *c = client(&p, 2000);
    godis_hello_info hi;
    assert_int_equal(godis_hello(c, &hi), GD_OK);
    godis_client_destroy(&c);
    stop(&p);
    rm_tmp(&p);
}

static void test_env_and_flag_precedence(void **state)
{
    (void)state;
    standin_proc p = {0};
    mkdir_tmp(&p);
    char wal[192], state_path[192];
    snprintf(wal, sizeof(wal), "CLUSTER_WALDIR=%s/wal", p.dir);
    snprintf(state_path, sizeof(state_path), "%s/wal/standin-membership", p.dir);
    const char *env[] = {"CLUSTER_ID=7", "CLUSTER_LISTEN-CLIENT=http://127.0.0.1:0",
                         "CLUSTER_LISTEN-PEER=http://127.0.0.1:0",
                         "CLUSTER_INITIAL-CLUSTER=7@http://127.0.0.1:6300,8@http://127.0.0.8:6300",
                         "CLUSTER_JOIN=true", wal, NULL};
    assert_int_equal(start(&p, NULL, env), 0);
    godis_client *c = client(&p, 2000);
    godis_hello_info hi;
    assert_int_equal(godis_hello(c, &hi), GD_OK);
    assert_int_equal(hi.id, 7);
    char m[64];
    members_str(c, m, sizeof(m));
    assert_string_equal(m, "7,8");
    godis_client_destroy(&c);
    stop(&p);
    FILE *f = fopen(state_path, "r");
    assert_non_null(f);
    char buf[512] = "";
    (void)!fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    assert_non_null(strstr(buf, "origin join"));
    rm_tmp(&p);

    /* A flag wins over the environment. */
    mkdir_tmp(&p);
    const char *args[] = {"--id=9", NULL};
    const char *env2[] = {"CLUSTER_ID=7", "CLUSTER_LISTEN-CLIENT=http://127.0.0.1:0",
                          "CLUSTER_LISTEN-PEER=http://127.0.0.1:0", NULL};
    assert_int_equal(start(&p, args, env2), 0);
    c = client(&p, 2000);
    assert_int_equal(godis_hello(c, &hi), GD_OK);
    assert_int_equal(hi.id, 9);
    godis_client_destroy(&c);
    stop(&p);
    rm_tmp(&p);
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
        mkdir_tmp(&p);
        int st = start(&p, cases[i], NULL);
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 2))
            fail_msg("case %zu was not refused as a configuration error (%d)", i, st);
        rm_tmp(&p);
    }
    standin_proc p = {0};
    mkdir_tmp(&p);
    const char *bad_ic[] = {"--listen-client=http://127.0.0.1:0", "--listen-peer=http://127.0.0.1:0",
                            "--initial-cluster=1@http://h:1,x@http://h:2", NULL};
    int st = start(&p, bad_ic, NULL);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0);
    rm_tmp(&p);
}

typedef struct {
    int port, idx, ok;
} worker_arg;

static void *worker(void *arg)
{
    worker_arg *w = arg;
    godis_opts o = {.connect_timeout_ms = 1000, .reply_timeout_ms = 3000};
    godis_client *c = godis_client_new("127.0.0.1", w->port, &o);
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
    mkdir_tmp(&p);
    assert_int_equal(start_std(&p, "1", NULL), 0);
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
    stop(&p);
    rm_tmp(&p);
}

static void test_fault_refuse_and_delay(void **state)
{
    (void)state;
    standin_proc p = {0};
    mkdir_tmp(&p);
    const char *refuse[] = {"--fault-refuse", NULL};
    assert_int_equal(start_std(&p, "1", refuse), 0);
    godis_client *c = client(&p, 1000);
    godis_hello_info hi;
    gd_err e = godis_hello(c, &hi);
    assert_true(e == GD_ERR_CLOSED || e == GD_ERR_TRANSPORT);
    kill(p.pid, SIGUSR1);                      /* toggles refusing off */
    msleep(100);
    assert_int_equal(godis_hello(c, &hi), GD_OK);
    godis_client_destroy(&c);
    stop(&p);

    const char *delay[] = {"--fault-delay-ms=400", NULL};
    assert_int_equal(start_std(&p, "1", delay), 0);
    c = client(&p, 100);
    assert_int_equal(godis_hello(c, &hi), GD_ERR_TIMEOUT);
    godis_client_destroy(&c);
    c = client(&p, 2000);
    assert_int_equal(godis_hello(c, &hi), GD_OK);
    godis_client_destroy(&c);
    stop(&p);
    rm_tmp(&p);
}


static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof(sa);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    close(fd);
    return ntohs(sa.sin_port);
}

/* Waits until the member's own membership reads want (replication is asynchronous). */
static int wait_members(const standin_proc *p, const char *want, int ms)
{
    char m[128] = "";
    for (int waited = 0; waited <= ms; waited += 50) {
        godis_client *c = client(p, 1000);
        members_str(c, m, sizeof(m));
        godis_client_destroy(&c);
        if (!strcmp(m, want))
            return 1;
        msleep(50);
    }
    fprintf(stderr, "members of port %d: %s, want %s\n", p->port, m, want);
    return 0;
}

/* Stand-in extension: a change applied on one member reaches the others over the peer
 * port; a forgotten member, like a forgotten godis follower, does not learn it. */
static void test_membership_replicates(void **state)
{
    (void)state;
    standin_proc p[3];
    memset(p, 0, sizeof(p));
    int peer[3];
    char ic[128] = "";
    for (int i = 0; i < 3; i++) {
        peer[i] = free_port();
        snprintf(ic + strlen(ic), sizeof(ic) - strlen(ic), "%s%d@http://127.0.0.1:%d",
                 i ? "," : "", i + 1, peer[i]);
    }
    for (int i = 0; i < 3; i++) {
        mkdir_tmp(&p[i]);
        char id[24], lp[64], wal[600], icf[160];
        snprintf(id, sizeof(id), "--id=%d", i + 1);
        snprintf(lp, sizeof(lp), "--listen-peer=http://127.0.0.1:%d", peer[i]);
        snprintf(wal, sizeof(wal), "--waldir=%s/wal", p[i].dir);
        snprintf(icf, sizeof(icf), "--initial-cluster=%s", ic);
        const char *args[] = {id, "--listen-client=http://127.0.0.1:0", lp, wal, icf, NULL};
        assert_int_equal(start(&p[i], args, NULL), 0);
    }
    godis_client *c = client(&p[0], 2000);
    char url4[64];
    snprintf(url4, sizeof(url4), "http://127.0.0.1:%d", free_port());
    assert_int_equal(godis_meet(c, 4, url4, 2000), GD_OK);
    for (int i = 0; i < 3; i++)
        assert_true(wait_members(&p[i], "1,2,3,4", 5000));
    assert_int_equal(godis_forget(c, 3, 2000), GD_OK);
    godis_client_destroy(&c);
    assert_true(wait_members(&p[0], "1,2,4", 5000));
    assert_true(wait_members(&p[1], "1,2,4", 5000));
    msleep(700);                                   /* more than one push period */
    assert_true(wait_members(&p[2], "1,2,3,4", 0));
    assert_true(wait_exit(p[2].pid, 0) < 0);      /* still running, still campaigning */
    /* Restarted member 2 keeps the replicated membership (it was persisted). */
    stop(&p[1]);
    char id[8] = "--id=2", lp[64], wal[600];
    snprintf(lp, sizeof(lp), "--listen-peer=http://127.0.0.1:%d", peer[1]);
    snprintf(wal, sizeof(wal), "--waldir=%s/wal", p[1].dir);
    const char *args[] = {id, "--listen-client=http://127.0.0.1:0", lp, wal, NULL};
    assert_int_equal(start(&p[1], args, NULL), 0);
    assert_true(wait_members(&p[1], "1,2,4", 0));
    for (int i = 0; i < 3; i++) {
        stop(&p[i]);
        rm_tmp(&p[i]);
    }
}

int main(void)
{
    if (access(bin_path(), X_OK) != 0) {
        fprintf(stderr, "test_standin: %s not built (make first)\n", bin_path());
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verbs),
        cmocka_unit_test(test_meet_forget_idempotent_and_persisted),
        cmocka_unit_test(test_exits_when_forgotten),
        cmocka_unit_test(test_propose_cancel_retry),
        cmocka_unit_test(test_malformed_meet_crashes_forever),
        cmocka_unit_test(test_short_or_non_string_command_crashes),
        cmocka_unit_test(test_env_and_flag_precedence),
        cmocka_unit_test(test_bad_configuration_refused),
        cmocka_unit_test(test_concurrent_clients),
        cmocka_unit_test(test_fault_refuse_and_delay),
        cmocka_unit_test(test_membership_replicates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
