/* test_standin.c — bin/godis-standin end to end on loopback, driven by common/godis_client:
 * the verbs, idempotent meet/forget, membership and data surviving a restart, the crash
 * hazards kept from godis (short command, malformed meet persisted and recurring), env/flag
 * precedence, loopback-only listening, concurrency, the fault flags, and the unkind parts of
 * Raft (election.c): no write without a leader, a forgotten follower campaigning and costing
 * the survivors their leader until it is stopped, a removed leader exiting 0 and coming back
 * from its WAL as a voter, a fresh voter on an empty WAL, SIGTERM at once vs SIGINT clean. Each stand-in listens on 127.0.0.1 port 0 and reports its port
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
#include "../support/test_wait.h"

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
        if (fd >= 0) {               /* never the test's own stdout: a pipe would stay open */
            dup2(fd, 1);
            dup2(fd, 2);
        }
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

/* Starts with a WAL under the temp dir as the only member of its initial cluster. */
static int start_std(standin_proc *p, const char *id, const char *const *more)
{
    char wal[192], snap[192], ic[96];
    snprintf(wal, sizeof(wal), "--waldir=%s/wal", p->dir);
    snprintf(snap, sizeof(snap), "--snapdir=%s/snap", p->dir);
    snprintf(ic, sizeof(ic), "%s@http://127.0.0.1:6300", id);
    const char *args[24] = {"--id", id, "--listen-client", "http://127.0.0.1:0",
                            "--listen-peer", "http://127.0.0.1:0", wal, snap,
                            "--initial-cluster", ic};
    int n = 10;
    for (int i = 0; more && more[i] && n < 23; i++)
        args[n++] = more[i];
    args[n] = NULL;
    return start(p, args, NULL);
}

/* SIGINT: godis's clean shutdown, exit 0. */
static void stop(standin_proc *p)
{
    if (p->pid > 0) {
        kill(p->pid, SIGINT);
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

/* `standin stats` field `key` (an integer), or -1. */
static long long stat_of(const standin_proc *p, const char *key)
{
    godis_client *c = client(p, 2000);
    const char *argv[] = {"standin", "stats"};
    godis_reply *r = NULL;
    long long v = -1;
    if (godis_command(c, &r, 2, argv) == GD_OK && r->type == GODIS_REPLY_ARRAY)
        for (size_t i = 0; i + 1 < r->n; i += 2)
            if (!strcmp(r->elems[i]->str, key) && r->elems[i + 1]->type == GODIS_REPLY_INTEGER)
                v = r->elems[i + 1]->integer;
    godis_reply_destroy(&r);
    godis_client_destroy(&c);
    return v;
}

/* Makes p the leader now (`standin campaign`, as a leader transfer would) and waits for it. */
static void lead(const standin_proc *p)
{
    godis_client *c = client(p, 2000);
    const char *argv[] = {"standin", "campaign"};
    godis_reply *r = NULL;
    assert_int_equal(godis_command(c, &r, 2, argv), GD_OK);
    godis_reply_destroy(&r);
    godis_client_destroy(&c);
    long long id = stat_of(p, "id");
    for (int waited = 0; waited < 5000; waited += 20) {
        if (stat_of(p, "leader") == id)
            return;
        msleep(20);
    }
    fail_msg("stand-in %lld did not become leader", id);
}

/* How many of p's events start with `prefix` and were recorded at or after since_us. */
static int count_events(const standin_proc *p, const char *prefix, long long since_us)
{
    godis_client *c = client(p, 2000);
    const char *argv[] = {"standin", "events"};
    godis_reply *r = NULL;
    int n = 0;
    if (godis_command(c, &r, 2, argv) == GD_OK && r->type == GODIS_REPLY_ARRAY)
        for (size_t i = 0; i < r->n; i++) {
            char *sp = strchr(r->elems[i]->str, ' ');
            n += sp && atoll(r->elems[i]->str) >= since_us && !strncmp(sp + 1, prefix, strlen(prefix));
        }
    godis_reply_destroy(&r);
    godis_client_destroy(&c);
    return n;
}

static long long wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
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
    lead(&p);
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
    assert_string_equal(m, "1");
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
    lead(&p);
    godis_client *c = client(&p, 2000);
    assert_int_equal(godis_forget(c, 2, 2000), GD_OK);
    assert_int_equal(godis_forget(c, 2, 2000), GD_OK);       /* unknown ids: still +OK */
    assert_int_equal(godis_forget(c, 9, 2000), GD_OK);
    assert_int_equal(godis_set(c, "kept", "yes"), GD_OK);
    /* A removed id is never re-added (raft refuses), though the answer is +OK. */
    assert_int_equal(godis_meet(c, 2, "http://127.0.0.2:6300", 2000), GD_OK);
    char m[64];
    members_str(c, m, sizeof(m));
    assert_string_equal(m, "1");
    assert_int_equal(godis_meet(c, 4, "http://127.0.0.4:6300", 2000), GD_OK);
    members_str(c, m, sizeof(m));
    assert_string_equal(m, "1,4");
    /* Member 4 never started: one of two members cannot commit anything. */
    assert_int_equal(godis_meet(c, 4, "http://127.0.0.4:6300", 2500), GD_ERR_TIMEOUT);
    assert_int_equal(godis_set(c, "lost", "write"), GD_ERR_PROTOCOL);
    assert_string_equal(godis_last_error(c), "propose canceled by context");
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

/* A member that applies its own removal (a removed leader) exits 0 before saving it: the
 * restart replays its WAL and it is back as a voter with its old membership. */
static void test_removed_leader_exits_0_and_comes_back(void **state)
{
    (void)state;
    standin_proc p = {0};
    mkdir_tmp(&p);
    assert_int_equal(start_std(&p, "2", NULL), 0);
    lead(&p);
    godis_client *c = client(&p, 2000);
    assert_int_equal(godis_set(c, "before", "removal"), GD_OK);
    assert_int_equal(godis_forget(c, 2, 2000), GD_OK);
    int st = wait_exit(p.pid, 3000);
    assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    p.pid = 0;
    godis_client_destroy(&c);
    assert_int_equal(start_std(&p, "2", NULL), 0);
    c = client(&p, 2000);
    char m[64];
    members_str(c, m, sizeof(m));
    assert_string_equal(m, "2");                 /* the removal was never saved */
    char *v = NULL;
    assert_int_equal(godis_get(c, "before", &v), GD_OK);
    assert_string_equal(v, "removal");
    free(v);
    godis_client_destroy(&c);
    lead(&p);                                    /* a voter again: it elects itself */
    stop(&p);
    rm_tmp(&p);
}

/* SIGTERM (what a pod gets) stops godis at once; SIGINT is its clean shutdown. */
static void test_sigterm_at_once_sigint_clean(void **state)
{
    (void)state;
    standin_proc p = {0};
    mkdir_tmp(&p);
    assert_int_equal(start_std(&p, "1", NULL), 0);
    kill(p.pid, SIGTERM);
    int st = wait_exit(p.pid, 3000);
    assert_true(st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    p.pid = 0;
    assert_int_equal(start_std(&p, "1", NULL), 0);
    kill(p.pid, SIGINT);
    st = wait_exit(p.pid, 3000);
    assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    p.pid = 0;
    rm_tmp(&p);
}

static void test_propose_cancel_retry(void **state)
{
    (void)state;
    standin_proc p = {0};
    mkdir_tmp(&p);
    const char *fault[] = {"--fault-propose-cancel", "0.5", NULL};
    assert_int_equal(start_std(&p, "1", fault), 0);
    lead(&p);
    godis_client *c = client(&p, 2000);
    for (long long id = 10; id < 16; id++)
        assert_int_equal(godis_forget(c, id, 20000), GD_OK);
    /* (No meet here: a meet applied but answered "canceled" makes a second member that is
     * not running, and the retry cannot commit without it — as with godis.) */
    char m[64];
    members_str(c, m, sizeof(m));
    assert_string_equal(m, "1");
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
    lead(&p);
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
    lead(&p);
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
    kill(p.pid, SIGUSR1);                      /* toggles refusing off (asynchronously) */
    WAIT_UNTIL((e = godis_hello(c, &hi)) == GD_OK, 5000);
    assert_int_equal(e, GD_OK);
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

/* Starts member i+1 of an n-member cluster whose peer ports are peer[]. */
static void start_member(standin_proc *p, int i, const int *peer, int n)
{
    char ic[256] = "";
    for (int k = 0; k < n; k++)
        snprintf(ic + strlen(ic), sizeof(ic) - strlen(ic), "%s%d@http://127.0.0.1:%d",
                 k ? "," : "", k + 1, peer[k]);
    char id[24], lp[64], wal[600], icf[300];
    snprintf(id, sizeof(id), "--id=%d", i + 1);
    snprintf(lp, sizeof(lp), "--listen-peer=http://127.0.0.1:%d", peer[i]);
    snprintf(wal, sizeof(wal), "--waldir=%s/wal", p->dir);
    snprintf(icf, sizeof(icf), "--initial-cluster=%s", ic);
    const char *args[] = {id, "--listen-client=http://127.0.0.1:0", lp, wal, icf, NULL};
    assert_int_equal(start(p, args, NULL), 0);
}

static void start_cluster(standin_proc *p, int *peer, int n)
{
    for (int i = 0; i < n; i++)
        peer[i] = free_port();
    for (int i = 0; i < n; i++) {
        memset(&p[i], 0, sizeof(p[i]));
        mkdir_tmp(&p[i]);
        start_member(&p[i], i, peer, n);
    }
}

static void stop_cluster(standin_proc *p, int n)
{
    for (int i = 0; i < n; i++) {
        stop(&p[i]);
        rm_tmp(&p[i]);
    }
}

/* A forgotten follower is not told: it keeps campaigning, every campaign costs the
 * survivors their leader (a write in that moment fails), until its process is stopped. */
static void test_forgotten_follower_disrupts_until_stopped(void **state)
{
    (void)state;
    standin_proc p[3];
    int peer[3];
    start_cluster(p, peer, 3);
    lead(&p[0]);
    godis_client *c = client(&p[0], 3000);
    assert_int_equal(godis_set(c, "k", "v"), GD_OK);
    long long t0 = wall_us();
    assert_int_equal(godis_forget(c, 3, 3000), GD_OK);
    /* Within a few election timeouts member 3 has campaigned more than once, and member 2
     * (a survivor) saw each campaign as a new election and lost its leader. */
    int seen = 0;
    for (int waited = 0; waited < 15000 && seen < 2; waited += 100) {
        msleep(100);
        seen = count_events(&p[1], "vote-request 3 ", t0);
    }
    assert_true(seen >= 2);
    assert_true(count_events(&p[1], "leader-lost", t0) >= 1);
    assert_true(count_events(&p[2], "campaign", t0) >= 2);
    assert_true(wait_exit(p[2].pid, 0) < 0);               /* it keeps running */
    /* Stopped: the survivors settle down and accept writes again. */
    kill(p[2].pid, SIGTERM);
    assert_true(wait_exit(p[2].pid, 3000) >= 0);
    p[2].pid = 0;
    long long t1 = wall_us();
    gd_err e = GD_ERR_TIMEOUT;
    WAIT_UNTIL((e = godis_set(c, "after", "stop")) == GD_OK, 15000);   /* the survivors re-elect */
    assert_int_equal(e, GD_OK);
    /* the quiet period is the behaviour under test: more than an election timeout, and the
     * stopped member's vote requests have stopped */
    msleep(2500);
    assert_int_equal(count_events(&p[1], "vote-request 3 ", t1), 0);
    godis_client_destroy(&c);
    stop_cluster(p, 3);
}

/* A removed leader exits 0 at once without saving its removal; the survivors elect a new
 * leader. Restarted on its WAL it is a voter again, and its campaigns disturb them. */
static void test_removed_leader_returns_as_voter(void **state)
{
    (void)state;
    standin_proc p[3];
    int peer[3];
    start_cluster(p, peer, 3);
    lead(&p[2]);
    godis_client *c = client(&p[0], 3000);
    assert_int_equal(godis_forget(c, 3, 3000), GD_OK);
    int st = wait_exit(p[2].pid, 3000);
    assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    p[2].pid = 0;
    assert_true(wait_members(&p[1], "1,2", 3000));
    long long t0 = wall_us();
    start_member(&p[2], 2, peer, 3);
    assert_true(wait_members(&p[2], "1,2,3", 0));           /* its old membership */
    int seen = 0;
    for (int waited = 0; waited < 10000 && !seen; waited += 100) {
        msleep(100);
        seen = count_events(&p[0], "vote-request 3 ", t0) + count_events(&p[1], "vote-request 3 ", t0);
    }
    assert_true(seen >= 1);
    godis_client_destroy(&c);
    stop_cluster(p, 3);
}

/* A follower forwards a write to its leader: with the leader dead the write fails at once
 * (before the follower's election timeout notices), and succeeds again once the survivors
 * elected a new leader. */
static void test_write_needs_a_live_leader(void **state)
{
    (void)state;
    standin_proc p[3];
    int peer[3];
    start_cluster(p, peer, 3);
    lead(&p[0]);
    godis_client *c = client(&p[1], 3000);
    assert_int_equal(godis_set(c, "k", "v"), GD_OK);
    kill(p[0].pid, SIGKILL);
    assert_true(wait_exit(p[0].pid, 3000) >= 0);
    p[0].pid = 0;
    assert_int_equal(godis_set(c, "k", "v2"), GD_ERR_PROTOCOL);
    assert_string_equal(godis_last_error(c), "propose canceled by context");
    gd_err e = GD_ERR_PROTOCOL;
    WAIT_UNTIL((e = godis_set(c, "k", "v3")) == GD_OK, 15000);   /* 2 of 3 elect a new leader */
    assert_int_equal(e, GD_OK);
    godis_client_destroy(&c);
    stop_cluster(p, 3);
}

/* The same id restarted on an empty WAL dir: a fresh voter with no term and no vote. */
static void test_empty_wal_is_a_fresh_voter(void **state)
{
    (void)state;
    standin_proc p[3];
    int peer[3];
    start_cluster(p, peer, 3);
    lead(&p[0]);
    lead(&p[1]);
    assert_true(stat_of(&p[2], "term") >= 2);
    assert_int_equal(stat_of(&p[2], "fresh"), 1);
    stop(&p[2]);
    start_member(&p[2], 2, peer, 3);
    assert_int_equal(stat_of(&p[2], "fresh"), 0);           /* replayed its WAL */
    stop(&p[2]);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s/wal'", p[2].dir);
    assert_int_equal(system(cmd), 0);
    start_member(&p[2], 2, peer, 3);
    assert_int_equal(stat_of(&p[2], "fresh"), 1);           /* no term, no vote remembered */
    stop_cluster(p, 3);
}

/* Stand-in extension: a change applied on one member reaches the others over the peer
 * port; a forgotten member, like a forgotten godis follower, does not learn it. */
static void test_membership_replicates(void **state)
{
    (void)state;
    standin_proc p[3];
    int peer[3];
    start_cluster(p, peer, 3);
    lead(&p[0]);
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
    /* the quiet period is the behaviour under test: more than one push period, and the
     * forgotten member has not learnt of its removal */
    msleep(700);
    assert_true(wait_members(&p[2], "1,2,3,4", 0));
    assert_true(wait_exit(p[2].pid, 0) < 0);      /* still running, campaigning */
    /* Restarted member 2 keeps the replicated membership (it was persisted). */
    stop(&p[1]);
    start_member(&p[1], 1, peer, 3);
    assert_true(wait_members(&p[1], "1,2,4", 0));
    stop_cluster(p, 3);
}

/* Only the leader applies a membership change: a follower that just restarted behind the
 * others (a member was added while it was down) forwards the forget it is sent to its leader,
 * so both end with the same membership. Applied to its own stale membership, the change
 * diverged for good: the member added meanwhile was missing on it, the leader never adopted
 * a change at an index it already had, and the cluster split its idea of who votes (seen in
 * the chaos campaign: a survivor left waiting for a majority that included a stopped member). */
static void test_follower_behind_forwards_to_leader(void **state)
{
    (void)state;
    standin_proc p[3];
    int peer[3];
    start_cluster(p, peer, 3);
    lead(&p[0]);
    stop(&p[1]);
    godis_client *c = client(&p[0], 3000);
    char url4[64];
    snprintf(url4, sizeof(url4), "http://127.0.0.1:%d", free_port());
    assert_int_equal(godis_meet(c, 4, url4, 3000), GD_OK);
    godis_client_destroy(&c);
    assert_true(wait_members(&p[2], "1,2,3,4", 5000));
    start_member(&p[1], 1, peer, 3);                        /* back with 1,2,3 */
    c = client(&p[1], 5000);
    assert_int_equal(godis_forget(c, 3, 5000), GD_OK);
    godis_client_destroy(&c);
    assert_true(wait_members(&p[0], "1,2,4", 3000));
    assert_true(wait_members(&p[1], "1,2,4", 3000));
    stop_cluster(p, 3);
}

/* Waits until key reads want on the member (replication is asynchronous). */
static int wait_value(const standin_proc *p, const char *key, const char *want, int ms)
{
    for (int waited = 0; waited <= ms; waited += 50) {
        godis_client *c = client(p, 1000);
        char *v = NULL;
        int ok = c && godis_get(c, key, &v) == GD_OK && v && !strcmp(v, want);
        free(v);
        godis_client_destroy(&c);
        if (ok)
            return 1;
        msleep(50);
    }
    fprintf(stderr, "port %d: %s is not %s\n", p->port, key, want);
    return 0;
}

/* As godis replicates writes through Raft: a key set through one member becomes readable
 * on the others; a member that was down while keys were written has them once it is back
 * (from the others, not from its own log), and keeps them across a restart. */
static void test_data_replicates_and_catches_up(void **state)
{
    (void)state;
    standin_proc p[3];
    int peer[3];
    start_cluster(p, peer, 3);
    lead(&p[0]);
    godis_client *c = client(&p[0], 2000);
    assert_int_equal(godis_set(c, "k1", "v1"), GD_OK);
    assert_true(wait_value(&p[1], "k1", "v1", 5000));
    assert_true(wait_value(&p[2], "k1", "v1", 5000));
    stop(&p[2]);                                   /* down: 2 of 3 keep writing */
    assert_int_equal(godis_set(c, "k2", "v2"), GD_OK);
    assert_int_equal(godis_set(c, "k1", "v1b"), GD_OK);
    godis_client_destroy(&c);
    start_member(&p[2], 2, peer, 3);
    assert_true(wait_value(&p[2], "k2", "v2", 5000));
    assert_true(wait_value(&p[2], "k1", "v1b", 5000));
    c = client(&p[2], 2000);                       /* a write through it reaches the rest */
    assert_int_equal(godis_set(c, "k3", "v3"), GD_OK);
    godis_client_destroy(&c);
    assert_true(wait_value(&p[0], "k3", "v3", 5000));
    assert_true(wait_value(&p[1], "k3", "v3", 5000));
    stop(&p[1]);
    start_member(&p[1], 1, peer, 3);
    assert_true(wait_value(&p[1], "k1", "v1b", 0));    /* replayed from its own log */
    stop_cluster(p, 3);
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
        cmocka_unit_test(test_removed_leader_exits_0_and_comes_back),
        cmocka_unit_test(test_sigterm_at_once_sigint_clean),
        cmocka_unit_test(test_propose_cancel_retry),
        cmocka_unit_test(test_malformed_meet_crashes_forever),
        cmocka_unit_test(test_short_or_non_string_command_crashes),
        cmocka_unit_test(test_env_and_flag_precedence),
        cmocka_unit_test(test_bad_configuration_refused),
        cmocka_unit_test(test_concurrent_clients),
        cmocka_unit_test(test_fault_refuse_and_delay),
        cmocka_unit_test(test_membership_replicates),
        cmocka_unit_test(test_follower_behind_forwards_to_leader),
        cmocka_unit_test(test_forgotten_follower_disrupts_until_stopped),
        cmocka_unit_test(test_removed_leader_returns_as_voter),
        cmocka_unit_test(test_empty_wal_is_a_fresh_voter),
        cmocka_unit_test(test_write_needs_a_live_leader),
        cmocka_unit_test(test_data_replicates_and_catches_up),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
