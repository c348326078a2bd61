/* harness_manager.c — what the manager's integration tests (itest_manager*.c) share: stand-in
 * children built into the test binary, and the harness that starts bin/godis-manager with
 * them, reads its endpoints and cleans up (API in harness_manager.h). Linked into every itest;
 * only the manager's tests call it.
 *
 * The stand-ins: the manager is pointed at the test binary with --worker-bin and
 * --informer-bin; mgr_itest_init() recognises the child command line (docs/PROTOCOL.md
 * section 2) and runs a minimal worker or informer instead of the tests.
 *
 * The fake worker proves shard exclusivity across processes with the kernel's help: it
 * holds an fcntl write lock on byte <shard> of one shared file while it owns the shard. A
 * lock that cannot be taken means another live process still owns the shard — written to
 * the violations file. The kernel drops a process's locks when it dies, which is exactly
 * the "moves only after the old owner was reaped" rule. Environment (inherited through the
 * manager): FAKE_DIR (lock, violations, pid and write files), FAKE_HANG_INDEX (that worker
 * never answers PING), FAKE_STOP_LINGER_MS (a worker told to stop exits that much later),
 * FAKE_EXIT2_KIND (that informer exits 2), FAKE_WRITE_MS (while it
 * owns shards and holds an unexpired LEASE, the worker appends "W <wall ms> <pid> <manager pid>"
 * lines). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>
#include "e2e_procs.h"
#include "harness_manager.h"
#include "cli_run.h"
#include "gd_time.h"
#include "../support/test_wait.h"

/* ---- stand-in children ---- */
static volatile sig_atomic_t fake_term;
static void fake_on_term(int s) { (void)s; fake_term = 1; }

long long fake_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *fake_arg(int argc, char **argv, const char *flag)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], flag)) return argv[i + 1];
    return NULL;
}

static void fake_append(const char *name, const char *line)
{
    const char *dir = getenv("FAKE_DIR");
    if (!dir) return;
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd < 0) return;
    (void)!write(fd, line, strlen(line));
    close(fd);
}

static void fake_pidfile(const char *name)
{
    const char *dir = getenv("FAKE_DIR");
    if (!dir) return;
    char p[512], tmp[540], v[32];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.%d", p, (int)getpid());
    snprintf(v, sizeof v, "%d\n", (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return;
    (void)!write(fd, v, strlen(v));
    close(fd);
    rename(tmp, p);                     /* readers never see a half-written file */
}

static int fake_lock(int fd, int shard, short type)
{
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = shard, .l_len = 1};
    return fcntl(fd, F_SETLK, &fl);
}

static int recv_frames(void *s, char f[][4096], size_t *len, int max)
{
    int n = 0;
    int more = 1;
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, s, n ? 0 : ZMQ_DONTWAIT) < 0) { zmq_msg_close(&m); return n; }
        more = zmq_msg_more(&m);
        if (n < max) {
            size_t l = zmq_msg_size(&m);
            if (l > 4095) l = 4095;
            memcpy(f[n], zmq_msg_data(&m), l);
            f[n][l] = '\0';
            len[n] = l;
            n++;
        }
        zmq_msg_close(&m);
    }
    return n;
}

static void send_frames(void *s, const char **f, int n)
{
    for (int i = 0; i < n; i++) zmq_send(s, f[i], strlen(f[i]), i + 1 < n ? ZMQ_SNDMORE : 0);
}

static int fake_worker_main(int argc, char **argv)
{
    const char *idx = fake_arg(argc, argv, "--index");
    const char *ep = fake_arg(argc, argv, "--control-endpoint");
    const char *hbs = fake_arg(argc, argv, "--heartbeat");
    if (!idx || !ep || !hbs || !fake_arg(argc, argv, "--runtime-dir") ||
        !fake_arg(argc, argv, "--max-concurrent-reconciles")) return 2;
    signal(SIGTERM, fake_on_term);
    int index = atoi(idx);
    int64_t hb;
    if (gd_parse_duration_ms(hbs, &hb) != GD_OK) return 2;   /* what the manager sends */
    char name[64], id[32], pid[16];
    snprintf(name, sizeof name, "fake-w%d.pid", index);
    fake_pidfile(name);
    snprintf(id, sizeof id, "w%d-%d", index, (int)getpid());
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    const char *dir = getenv("FAKE_DIR");
    char lockp[512];
    snprintf(lockp, sizeof lockp, "%s/shards.lock", dir ? dir : "/tmp");
    int lockfd = open(lockp, O_RDWR | O_CREAT, 0600);
    const char *hang = getenv("FAKE_HANG_INDEX");
    bool hangs = hang && atoi(hang) == index;
    long write_ms = getenv("FAKE_WRITE_MS") ? atol(getenv("FAKE_WRITE_MS")) : 0;

    void *ctx = zmq_ctx_new(), *s = zmq_socket(ctx, ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(s, ZMQ_ROUTING_ID, id, strlen(id));
    zmq_connect(s, ep);
    const char *hello[] = {"GDW1", "HELLO", idx, pid};
    send_frames(s, hello, 4);
    bool owned[256] = {0};
    int nowned = 0;
    long long lease = 0, last_heard = fake_wall_ms(), next_write = 0;
    int rc = 0;
    while (!fake_term) {
        zmq_pollitem_t it = {s, 0, ZMQ_POLLIN, 0};
        zmq_poll(&it, 1, 10);
        char f[6][4096];
        size_t l[6];
        int n;
        while ((n = recv_frames(s, f, l, 6)) > 0) {
            last_heard = fake_wall_ms();
            if (n < 3 || strcmp(f[0], "GDW1")) continue;
            if (!strcmp(f[1], "ASSIGN") && n == 5) {
                for (char *sv = NULL, *t = strtok_r(f[3], ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
                    int sh = atoi(t);
                    if (sh < 0 || sh > 255 || owned[sh]) continue;
                    if (fake_lock(lockfd, sh, F_WRLCK) != 0) {
                        char line[128];
                        snprintf(line, sizeof line, "OVERLAP shard %d worker %d pid %d\n", sh, index, (int)getpid());
                        fake_append("violations", line);
                    }
                    owned[sh] = true;
                    nowned++;
                }
            } else if (!strcmp(f[1], "REVOKE") && n == 4) {
                char list[4096];
                snprintf(list, sizeof list, "%s", f[3]);
                for (char *sv = NULL, *t = strtok_r(f[3], ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
                    int sh = atoi(t);
                    if (sh < 0 || sh > 255 || !owned[sh]) continue;
                    owned[sh] = false;
                    nowned--;
                    fake_lock(lockfd, sh, F_UNLCK);
                }
                const char *r[] = {"GDW1", "REVOKED", f[2], list, "{}"};
                send_frames(s, r, 5);
            } else if (!strcmp(f[1], "PING") && !hangs) {
                char metrics[128];
                snprintf(metrics, sizeof metrics, "# TYPE fake_worker_owned_shards gauge\nfake_worker_owned_shards %d\n", nowned);
                const char *r[] = {"GDW1", "PONG", f[2], metrics};
                send_frames(s, r, 4);
            } else if (!strcmp(f[1], "LEASE") && n == 4) {
                long long d = atoll(f[3]);
                if (d > lease) lease = d;
            } else if (!strcmp(f[1], "STOP")) {
                fake_term = 1;
            }
        }
        long long now = fake_wall_ms();
        if (now - last_heard > 5 * hb) { rc = 1; break; }     /* the manager is gone */
        if (write_ms && nowned > 0 && now >= next_write) {
            next_write = now + write_ms;
            if (now < lease) {
                char line[96];
                snprintf(line, sizeof line, "W %lld %d %d\n", now, (int)getpid(), (int)getppid());
                fake_append("writes", line);
            }
        }
    }
    /* FAKE_STOP_LINGER_MS: told to stop, it takes that long to exit (in-flight reconciles
     * finishing), whatever signals come meanwhile short of SIGKILL */
    long linger = getenv("FAKE_STOP_LINGER_MS") ? atol(getenv("FAKE_STOP_LINGER_MS")) : 0;
    for (long long until = fake_wall_ms() + linger; rc == 0 && fake_wall_ms() < until;)
        gd_sleep_ms(10);
    zmq_close(s);
    zmq_ctx_term(ctx);
    return rc;
}

static int fake_informer_main(int argc, char **argv)
{
    const char *kind = fake_arg(argc, argv, "--kind");
    const char *snap = fake_arg(argc, argv, "--snap-endpoint");
    if (!kind || !snap || !fake_arg(argc, argv, "--pub-endpoint")) return 2;
    const char *bad = getenv("FAKE_EXIT2_KIND");
    if (bad && !strcmp(bad, kind)) return 2;
    signal(SIGTERM, fake_on_term);
    char name[96];
    snprintf(name, sizeof name, "fake-i-%s.pid", kind);
    fake_pidfile(name);
    void *ctx = zmq_ctx_new(), *s = zmq_socket(ctx, ZMQ_ROUTER);
    int zero = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    if (zmq_bind(s, snap) != 0) return 1;
    char stats[256];
    snprintf(stats, sizeof stats,
             "# TYPE godis_informer_synced gauge\ngodis_informer_synced{kind=\"%s\"} 1\n"
             "godis_informer_objects{kind=\"%s\"} 0\n", kind, kind);
    while (!fake_term) {
        zmq_pollitem_t it = {s, 0, ZMQ_POLLIN, 0};
        zmq_poll(&it, 1, 50);
        char f[4][4096];
        size_t l[4];
        int n;
        while ((n = recv_frames(s, f, l, 4)) > 0) {
            if (n == 3 && !strcmp(f[1], "GDI1") && !strcmp(f[2], "STATS")) {
                zmq_send(s, f[0], l[0], ZMQ_SNDMORE);
                const char *r[] = {"GDI1", "STATS", stats};
                send_frames(s, r, 3);
            }
        }
    }
    zmq_close(s);
    zmq_ctx_term(ctx);
    unlink(snap + 6);
    return 0;
}

/* Returns -1 when this is not a child invocation. */
static int fake_dispatch(int argc, char **argv)
{
    if (fake_arg(argc, argv, "--control-endpoint")) return fake_worker_main(argc, argv);
    if (fake_arg(argc, argv, "--kind")) return fake_informer_main(argc, argv);
    return -1;
}

/* ---- the harness ---- */
char self_path[512], mgr_path[512], tmpdir[256];
char informer_path[PATH_MAX], worker_path[PATH_MAX];

long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    bind(s, (struct sockaddr *)&a, sizeof a);
    socklen_t l = sizeof a;
    getsockname(s, (struct sockaddr *)&a, &l);
    close(s);
    return ntohs(a.sin_port);
}

/* GET http://127.0.0.1:port/path → status (0 on connection failure), body into buf. */
int http_get(int port, const char *path, char *buf, size_t cap)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    struct timeval tv = {2, 0};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) { close(s); return 0; }
    char req[256];
    snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
    (void)!write(s, req, strlen(req));
    size_t n = 0;
    ssize_t r;
    static char raw[1 << 20];
    while (n < sizeof raw - 1 && (r = read(s, raw + n, sizeof raw - 1 - n)) > 0) n += (size_t)r;
    raw[n] = '\0';
    close(s);
    int status = 0;
    sscanf(raw, "HTTP/1.%*d %d", &status);
    char *body = strstr(raw, "\r\n\r\n");
    snprintf(buf, cap, "%s", body ? body + 4 : "");
    return status;
}

/* Value of the first sample line starting with `series` (e.g. "x{a=\"1\"}"); -1 if none. */
double metric(int port, const char *series)
{
    static char body[1 << 20];
    if (http_get(port, "/metrics", body, sizeof body) != 200) return -1;
    size_t l = strlen(series);
    for (char *p = body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, series, l) && p[l] == ' ') return atof(p + l + 1);
    return -1;
}

/* Every manager a test started, so a failed test cannot leave one running. */
static pid_t started[16];
static int started_n;

int mgr_children(pid_t mgr, const char *prog, const char *what, pid_t *out, int cap)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)) && n < cap) {
        int pid = atoi(e->d_name);
        if (pid <= 0) continue;
        char p[64], buf[4096], state = 0;
        snprintf(p, sizeof p, "/proc/%d/stat", pid);
        FILE *f = fopen(p, "r");
        if (!f) continue;
        int ppid = 0;
        if (fscanf(f, "%*d (%*[^)]) %c %d", &state, &ppid) != 2) ppid = 0;
        fclose(f);
        if (ppid != mgr || state == 'Z' || state == 'X') continue;
        snprintf(p, sizeof p, "/proc/%d/cmdline", pid);
        f = fopen(p, "r");
        if (!f) continue;
        size_t l = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        for (size_t i = 0; i < l; i++) if (!buf[i]) buf[i] = ' ';
        buf[l] = '\0';
        if ((!prog || strstr(buf, prog)) && (!what || strstr(buf, what))) out[n++] = pid;
    }
    if (d) closedir(d);
    return n;
}

/* Gone: no such process, or a zombie (an orphan's zombie waits for init, not for us). */
static bool proc_gone(pid_t pid)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
    char st = test_proc_state(p);
    return st == 0 || st == 'Z' || st == 'X';
}

/* Per-test teardown: SIGKILL what is left; its children follow by PDEATHSIG, and the next
 * test starts once they are gone (observed, 10 s at most), not after a guessed time. */
int kill_started(void **st)
{
    (void)st;
    for (int i = 0; i < started_n; i++) {
        pid_t kids[64];
        int nk = mgr_children(started[i], NULL, NULL, kids, 64);
        if (kill(started[i], SIGKILL) == 0) waitpid(started[i], NULL, 0);
        for (int k = 0; k < nk; k++) {
            WAIT_UNTIL(proc_gone(kids[k]), 10000);
            if (!proc_gone(kids[k])) kill(kids[k], SIGKILL);    /* a stuck child: still gone */
        }
    }
    started_n = 0;
    return 0;
}

/* Per-test setup: a fresh FAKE_DIR (locks, pid files, violations) under tmpdir. */
int fresh_fake_dir(void **st)
{
    (void)st;
    static int n;
    char d[400];
    snprintf(d, sizeof d, "%s/t%d", tmpdir, ++n);
    mkdir(d, 0700);
    setenv("FAKE_DIR", d, 1);
    return 0;
}

void write_file(const char *path, const char *text)
{
    assert_true(cli_put(path, text, 0644));
}

/* Starts the manager with stand-in children and the extra flags given. */
void start_mgr_v(mgr_proc *m, int workers, const char *const *extra)
{
    static int seq;
    memset(m, 0, sizeof *m);
    m->health = free_port();
    m->metrics = free_port();
    snprintf(m->rundir, sizeof m->rundir, "%s/run%d", tmpdir, ++seq);
    snprintf(m->cfg, sizeof m->cfg, "%s/mgr%d.yaml", tmpdir, seq);
    snprintf(m->log, sizeof m->log, "%s/mgr%d.log", tmpdir, seq);
    char y[256];
    snprintf(y, sizeof y, "workers: %d\n", workers);
    write_file(m->cfg, y);
    char hp[64], mp[64], wb[600], ib[600], rd[400], cf[400];
    snprintf(hp, sizeof hp, "--health-probe-bind-address=127.0.0.1:%d", m->health);
    snprintf(mp, sizeof mp, "--metrics-bind-address=127.0.0.1:%d", m->metrics);
    snprintf(wb, sizeof wb, "--worker-bin=%s", self_path);
    snprintf(ib, sizeof ib, "--informer-bin=%s", self_path);
    snprintf(rd, sizeof rd, "--runtime-dir=%s", m->rundir);
    snprintf(cf, sizeof cf, "--config=%s", m->cfg);
    m->pid = fork();
    assert_true(m->pid >= 0);
    if (m->pid > 0 && started_n < 16) started[started_n++] = m->pid;
    if (m->pid == 0) {
        int fd = open(m->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 1);
        dup2(fd, 2);
        prctl(PR_SET_PDEATHSIG, SIGKILL);   /* a test killed by its timeout takes them along */
        const char *argv[40] = {mgr_path, cf, hp, mp, wb, ib, rd,
                                "--informer-kinds=GodisCluster,Pod", "--shutdown-grace=1s"};
        int n = 9;
        for (int i = 0; extra && extra[i] && n < 39; i++) argv[n++] = extra[i];
        argv[n] = NULL;
        execv(mgr_path, (char *const *)argv);
        _exit(127);
    }
}

bool wait_for(bool (*cond)(mgr_proc *, void *), mgr_proc *m, void *arg, int ms)
{
    long long end = now_ms() + ms;
    while (now_ms() < end) {
        if (cond(m, arg)) return true;
        usleep(20000);
    }
    return cond(m, arg);
}

bool is_ready(mgr_proc *m, void *arg)
{
    (void)arg;
    char b[256];
    return http_get(m->health, "/readyz", b, sizeof b) == 200;
}

int stop_mgr(mgr_proc *m, int sig, int ms)
{
    if (sig) kill(m->pid, sig);
    long long end = now_ms() + ms;
    int st;
    while (now_ms() < end) {
        if (waitpid(m->pid, &st, WNOHANG) == m->pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        usleep(10000);
    }
    kill(m->pid, SIGKILL);
    waitpid(m->pid, &st, 0);
    return -1;
}

/* Leader election off, fast heartbeats. */
void start_mgr(mgr_proc *m, int workers, const char *extra)
{
    const char *x[] = {"--leader-elect=false", "--heartbeat=100ms", extra, NULL};
    start_mgr_v(m, workers, x);
}

pid_t read_pid(const char *name)
{
    char p[512], v[32] = "";
    snprintf(p, sizeof p, "%s/%s", getenv("FAKE_DIR"), name);
    FILE *f = fopen(p, "r");
    if (!f) return 0;
    if (!fgets(v, sizeof v, f)) v[0] = '\0';
    fclose(f);
    return (pid_t)atoi(v);
}

bool pid_alive(pid_t p) { return p > 0 && kill(p, 0) == 0; }

/* Absolute path of bin/<prog> (GODIS_BIN_DIR overrides bin/), "" when it does not exist. */
static void bin_path(const char *bindir, const char *prog, char *out)
{
    char rel[PATH_MAX];
    snprintf(rel, sizeof rel, "%s/%s", bindir, prog);
    if (!realpath(rel, out)) out[0] = '\0';
}

int mgr_itest_init(int argc, char **argv, const char *name)
{
    int rc = fake_dispatch(argc, argv);
    if (rc >= 0) return rc;
    ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    if (n <= 0) return 1;
    self_path[n] = '\0';
    const char *bindir = getenv("GODIS_BIN_DIR");
    if (!bindir) bindir = "bin";
    snprintf(mgr_path, sizeof mgr_path, "%s/godis-manager", bindir);
    bin_path(bindir, "godis-informer", informer_path);
    bin_path(bindir, "tests/godis-worker", worker_path);   /* with the test reconcilers */
    /* itest_manager_load → /tmp/itest-manager-load-<pid> */
    int len = snprintf(tmpdir, sizeof tmpdir, "/tmp/%s-%d", name, (int)getpid());
    for (int i = 5; i < len; i++) if (tmpdir[i] == '_') tmpdir[i] = '-';
    return -1;
}

int mgr_itest_run(const struct CMUnitTest *tests, size_t n, const char *name)
{
    mkdir(tmpdir, 0700);
    /* the group name cmocka prints is the one cmocka_run_group_tests(tests, ...) gives */
    int rc = _cmocka_run_group_tests("tests", tests, n, NULL, NULL);
    if (rc == 0) {
        e2e_remove_dir(tmpdir);
    } else {
        fprintf(stderr, "%s: logs kept in %s\n", name, tmpdir);
    }
    return rc;
}
