/* standin_fixture.c — bin/godis-standin processes for the stand-in's unit tests
 * (test_standin.c, test_standin_raft.c). See standin_fixture.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "standin_fixture.h"
#include "../support/test_wait.h"

extern char **environ;

const char *si_bin_path(void)
{
    const char *b = getenv("GODIS_STANDIN_BIN");
    return b ? b : "bin/godis-standin";
}

const char *si_host(void)
{
    static char host[24];
    if (!host[0]) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        unsigned int r = (unsigned int)getpid() * 2654435761u ^ (unsigned int)ts.tv_nsec;
        snprintf(host, sizeof(host), "127.%u.%u.%u", 240 + r % 15, (r >> 4) % 256,
                 1 + (r >> 12) % 254);
    }
    return host;
}

int si_reserve_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    assert_true(fd >= 0);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in sa = {.sin_family = AF_INET};
    assert_int_equal(inet_pton(AF_INET, si_host(), &sa.sin_addr), 1);
    socklen_t sl = sizeof(sa);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
    return ntohs(sa.sin_port);              /* fd stays open: the reservation */
}

void si_msleep(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits up to ms for the child; returns its raw status, or -1 if it is still running. */
int si_wait_exit(pid_t pid, int ms)
{
    for (int waited = 0; waited <= ms; waited += 10) {
        int st = 0;
        if (waitpid(pid, &st, WNOHANG) == pid)
            return st;
        si_msleep(10);
    }
    return -1;
}

void si_mkdir_tmp(standin_proc *p)
{
    snprintf(p->dir, sizeof(p->dir), "/tmp/standin-test-XXXXXX");
    assert_non_null(mkdtemp(p->dir));
}

void si_rm_tmp(standin_proc *p)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p->dir);
    assert_int_equal(system(cmd), 0);
}

/* Starts `godis-standin cluster <args>` with extra env entries; waits for its port file.
 * Returns 0 when listening, else the exit status of a child that died first. */
int si_start(standin_proc *p, const char *const *args, const char *const *extra_env)
{
    char ports[160], log[160], pf[200];
    snprintf(ports, sizeof(ports), "%s/ports", p->dir);
    snprintf(log, sizeof(log), "%s/log", p->dir);
    snprintf(pf, sizeof(pf), "--port-file=%s", ports);
    unlink(ports);
    const char *argv[32];
    int n = 0;
    argv[n++] = si_bin_path();
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
    pid_t parent = getpid();
    p->pid = fork();
    assert_true(p->pid >= 0);
    if (p->pid == 0) {
        /* A failed assertion leaves its stand-ins running; they die with the test binary
         * instead of campaigning for ever at addresses later runs get. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {               /* never the test's own stdout: a pipe would stay open */
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execve(argv[0], (char *const *)argv, (char *const *)envp);
        _exit(127);
    }
    for (int64_t end = test_real_ms() + test_scaled_ms(SI_BOUND_MS); test_real_ms() < end;) {
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
        si_msleep(10);
    }
    fail_msg("stand-in did not start; see %s", log);
    return -1;
}

/* Starts with a WAL under the temp dir as the only member of its initial cluster. */
int si_start_std(standin_proc *p, const char *id, const char *const *more)
{
    char wal[192], snap[192], ic[96];
    snprintf(wal, sizeof(wal), "--waldir=%s/wal", p->dir);
    snprintf(snap, sizeof(snap), "--snapdir=%s/snap", p->dir);
    char lc[64], lp[64];
    snprintf(ic, sizeof(ic), "%s@http://127.0.0.1:6300", id);
    snprintf(lc, sizeof(lc), "http://%s:0", si_host());
    snprintf(lp, sizeof(lp), "http://%s:0", si_host());
    const char *args[24] = {"--id", id, "--listen-client", lc, "--listen-peer", lp, wal, snap,
                            "--initial-cluster", ic};
    int n = 10;
    for (int i = 0; more && more[i] && n < 23; i++)
        args[n++] = more[i];
    args[n] = NULL;
    p->host = si_host();
    return si_start(p, args, NULL);
}

/* SIGINT: godis's clean shutdown, exit 0. It waits for a membership save in progress
 * (fsync under the state lock, as godis finishes its WAL write), which took more than 3 s on
 * a loaded disk: the bound is SI_BOUND_MS, what is asserted is the exit status. */
void si_stop(standin_proc *p)
{
    if (p->pid > 0) {
        kill(p->pid, SIGINT);
        int st = si_wait_exit(p->pid, (int)test_scaled_ms(SI_BOUND_MS));
        if (st < 0) {
            kill(p->pid, SIGKILL);
            waitpid(p->pid, NULL, 0);
        }
        if (!(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0))
            fail_msg("stand-in %d: status %d after SIGINT, not exit 0; see %s/log", (int)p->pid,
                     st, p->dir);
    }
    p->pid = 0;
}

godis_client *si_client(const standin_proc *p, int reply_ms)
{
    godis_opts o = {.connect_timeout_ms = 1000, .reply_timeout_ms = reply_ms};
    godis_client *c = godis_client_new(p->host ? p->host : "127.0.0.1", p->port, &o);
    assert_non_null(c);
    return c;
}

/* `standin stats` field `key` (an integer), or -1. */
long long si_stat_of(const standin_proc *p, const char *key)
{
    godis_client *c = si_client(p, 2000);
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
void si_lead(const standin_proc *p)
{
    godis_client *c = si_client(p, 2000);
    const char *argv[] = {"standin", "campaign"};
    godis_reply *r = NULL;
    assert_int_equal(godis_command(c, &r, 2, argv), GD_OK);
    godis_reply_destroy(&r);
    godis_client_destroy(&c);
    long long id = si_stat_of(p, "id");
    for (int64_t end = test_real_ms() + test_scaled_ms(SI_BOUND_MS); test_real_ms() < end;) {
        if (si_stat_of(p, "leader") == id)
            return;
        si_msleep(20);
    }
    fail_msg("stand-in %lld did not become leader", id);
}

/* How many of p's events start with `prefix` and were recorded at or after since_us. */
int si_count_events(const standin_proc *p, const char *prefix, long long since_us)
{
    godis_client *c = si_client(p, 2000);
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

long long si_wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Membership as a sorted "1,4" string. */
void si_members_str(godis_client *c, char *out, size_t cap)
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
void si_send_raw(const standin_proc *p, const char *bytes)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p->port)};
    assert_int_equal(inet_pton(AF_INET, p->host ? p->host : "127.0.0.1", &sa.sin_addr), 1);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(send(fd, bytes, strlen(bytes), MSG_NOSIGNAL), (ssize_t)strlen(bytes));
    char buf[64];
    struct timeval tv = {.tv_sec = 3};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    (void)!recv(fd, buf, sizeof(buf), 0);     /* returns when the process dies or answers */
    close(fd);
}

