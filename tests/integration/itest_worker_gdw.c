/* itest_worker_gdw.c — the worker (bin/tests/godis-worker: bin/godis-worker's sources with
 * the test reconciler sets) end to end without an API server: the test plays
 * a GodisCluster informer (GDI1 PUB + snapshot ROUTER, docs/PROTOCOL.md §1) and, for the
 * managed cases, the manager (GDW1 ROUTER, §2). Workers run the "sleepy" test reconciler,
 * which logs the start and end of every reconcile to one file; the checker proves
 *   - every key was reconciled, and again after its last update;
 *   - no two reconciles of one key ever overlapped — within a worker (8 threads) and across
 *     workers during a shard handoff;
 *   - nothing is reconciled without a lease, PONG carries the metrics, STOP ends the worker.
 * Everything is ipc:// in a private temporary directory. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include "e2e_procs.h"
#include "fake_informer.h"
#include "gd_json.h"
#include "gd_proto.h"
#include "gd_time.h"

#define NKEYS FINF_MAX_OBJS

static void *zctx;
static char dir[128];
static void *open_socks[8];     /* closed by teardown, also after a failed assertion */
static int nopen;
static pid_t spawned[4];
static int nspawned;

static void *track(void *sock)
{
    open_socks[nopen++] = sock;
    return sock;
}
static char rec_path[200];

/* ---------------------------------------------------------------- workers */

static bool use_runtime_dir;   /* --runtime-dir instead of --informer-endpoints */

static pid_t spawn_worker(int index, bool managed, const char *shards)
{
    char eps[600], idx[16], arg[300];
    snprintf(eps, sizeof eps, "GodisCluster=ipc://%s/GodisCluster.pub,ipc://%s/GodisCluster.snap",
             dir, dir);
    snprintf(idx, sizeof idx, "%d", index);
    snprintf(arg, sizeof arg, "record=%s,sleep_ms=4", rec_path);
    char ctl[300];
    snprintf(ctl, sizeof ctl, "ipc://%s/control", dir);
    const char *bin = getenv("GODIS_WORKER_BIN") ? getenv("GODIS_WORKER_BIN") : "bin/tests/godis-worker";
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        const char *argv[24];
        int n = 0;
        argv[n++] = bin;
        argv[n++] = use_runtime_dir ? "--runtime-dir" : "--informer-endpoints";
        argv[n++] = use_runtime_dir ? dir : eps;
        argv[n++] = "--reconciler";
        argv[n++] = "sleepy";
        argv[n++] = "--reconciler-arg";
        argv[n++] = arg;
        argv[n++] = "--max-concurrent-reconciles";
        argv[n++] = "8";
        argv[n++] = "--log-level";
        argv[n++] = getenv("ITEST_VERBOSE") ? "debug" : "warn";
        if (managed) {
            argv[n++] = "--index";
            argv[n++] = idx;
            argv[n++] = "--control-endpoint";
            argv[n++] = ctl;
            argv[n++] = "--heartbeat";
            argv[n++] = "200ms";
        } else {
            argv[n++] = "--shards";
            argv[n++] = shards;
        }
        argv[n] = NULL;
        execv(bin, (char **)argv);
        _exit(127);
    }
    spawned[nspawned++] = pid;
    return pid;
}

static int stop_worker(pid_t pid, int sig)
{
    if (sig)
        kill(pid, sig);
    int st = 0;
    for (int i = 0; i < 500; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

/* ---------------------------------------------------------------- the checker */

typedef struct {
    int64_t start_mono, end_mono, start_wall_us;
    int pid;
} span;

typedef struct {
    span *v;
    int n, cap;
    int64_t open_start, open_wall;
    int open_pid;
    bool open;
} key_log;

typedef struct {
    key_log keys[NKEYS];
    int overlaps, unmatched, lines;
} record;

static int key_index(const char *key)
{
    const char *c = strchr(key, '/');
    return c ? atoi(c + 2) : -1;
}

/* Reads the record file; per key the spans must follow one another without overlap. */
static void read_record(record *r)
{
    memset(r, 0, sizeof *r);
    FILE *f = fopen(rec_path, "r");
    if (!f)
        return;
    char line[700], ctrl[64], key[128];
    long long mono, wall;
    int pid;
    while (fgets(line, sizeof line, f)) {
        r->lines++;
        if (line[0] == 'S' &&
            sscanf(line, "S %63s %127s %lld %lld %d", ctrl, key, &mono, &wall, &pid) == 5) {
            int k = key_index(key);
            assert_true(k >= 0 && k < NKEYS);
            key_log *kl = &r->keys[k];
            if (kl->open)
                r->overlaps++;          /* a second start before the first ended */
            kl->open = true;
            kl->open_start = mono;
            kl->open_wall = wall;
            kl->open_pid = pid;
        } else if (line[0] == 'E' && sscanf(line, "E %63s %127s %lld %d", ctrl, key, &mono, &pid) == 4) {
            int k = key_index(key);
            assert_true(k >= 0 && k < NKEYS);
            key_log *kl = &r->keys[k];
            if (!kl->open || kl->open_pid != pid) {
                r->unmatched++;
                continue;
            }
            if (kl->n == kl->cap) {
                kl->cap = kl->cap ? kl->cap * 2 : 4;
                kl->v = realloc(kl->v, (size_t)kl->cap * sizeof *kl->v);
            }
            kl->v[kl->n++] = (span){kl->open_start, mono, kl->open_wall, pid};
            kl->open = false;
        }
    }
    fclose(f);
    /* Lines are appended in order per process, but two processes may interleave a start
     * of one with the end of the other; verify overlap on sorted spans too. */
    for (int k = 0; k < NKEYS; k++)
        for (int i = 1; i < r->keys[k].n; i++)
            if (r->keys[k].v[i].start_mono < r->keys[k].v[i - 1].end_mono)
                r->overlaps++;
}

static void free_record(record *r)
{
    for (int k = 0; k < NKEYS; k++)
        free(r->keys[k].v);
}

/* True when every key has a finished reconcile that started at or after since_wall_us[k]. */
static bool all_done_after(record *r, const int64_t *since_wall_us, int *missing)
{
    *missing = 0;
    for (int k = 0; k < NKEYS; k++) {
        bool ok = false;
        for (int i = 0; i < r->keys[k].n && !ok; i++)
            ok = r->keys[k].v[i].start_wall_us >= since_wall_us[k];
        if (!ok)
            (*missing)++;
    }
    return *missing == 0;
}

static int64_t wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Serves the informer until every key was reconciled after since[] or the time is up. */
static bool wait_all(finf *fi, const int64_t *since, int timeout_ms, void (*tick)(void *),
                     void *ud)
{
    int64_t until = gd_mono_ms() + timeout_ms;
    int missing = NKEYS;
    while (gd_mono_ms() < until) {
        finf_serve(fi, 100);
        if (tick)
            tick(ud);
        record r;
        read_record(&r);
        bool done = all_done_after(&r, since, &missing);
        free_record(&r);
        if (done)
            return true;
    }
    fprintf(stderr, "  %d keys not reconciled in time\n", missing);
    return false;
}

static int setup(void **state)
{
    snprintf(dir, sizeof dir, "/tmp/itest-worker-XXXXXX");
    assert_non_null(mkdtemp(dir));
    chmod(dir, 0700);
    snprintf(rec_path, sizeof rec_path, "%s/record.log", dir);
    zctx = zmq_ctx_new();
    return 0;
}

static int teardown(void **state)
{
    for (int i = 0; i < nspawned; i++)
        if (kill(spawned[i], 0) == 0) {
            kill(spawned[i], SIGKILL);
            waitpid(spawned[i], NULL, 0);
        }
    nspawned = 0;
    for (int i = 0; i < nopen; i++)
        zmq_close(open_socks[i]);
    nopen = 0;
    zmq_ctx_term(zctx);
    e2e_remove_dir(dir);
    return 0;
}

/* ---------------------------------------------------------------- tests */

/* Every key at generation 1, then the informer's SYNCED; since[] all 0 (any reconcile). */
static void put_all_synced(finf *fi, int64_t *since)
{
    for (int i = 0; i < NKEYS; i++) {
        finf_put_cluster(fi, i, 1);
        since[i] = 0;
    }
    finf_heartbeat(fi, "SYNCED");
}

/* 500 keys, 8 reconcile threads, random sleeps, updates while running. */
static void test_standalone_500_keys(void **state)
{
    unlink(rec_path);
    finf *fi = finf_new(zctx, dir, track);
    int64_t since[NKEYS];
    put_all_synced(fi, since);
    pid_t w = spawn_worker(0, false, "0-255");
    assert_true(wait_all(fi, since, 20000, NULL, NULL));
    /* updates while it runs: every updated key must be reconciled again afterwards */
    for (int round = 0; round < 3; round++) {
        for (int i = round; i < NKEYS; i += 3) {
            since[i] = wall_us();
            finf_put_cluster(fi, i, 2 + round);
        }
        finf_serve(fi, 30);
    }
    /* a status-only change (same generation) is filtered by the predicate: no new reconcile */
    assert_true(wait_all(fi, since, 20000, NULL, NULL));
    record r;
    read_record(&r);
    assert_int_equal(r.overlaps, 0);
    assert_int_equal(r.unmatched, 0);
    int total = 0;
    for (int k = 0; k < NKEYS; k++) {
        assert_true(r.keys[k].n >= 1);
        total += r.keys[k].n;
    }
    fprintf(stderr, "  standalone: %d reconciles of %d keys, no overlap\n", total, NKEYS);
    assert_true(fi->heartbeat_requests >= 1);      /* its first snapshot asked for one */
    free_record(&r);
    assert_int_equal(stop_worker(w, SIGTERM), 0);
    finf_destroy(fi);
}

/* ---- fake manager ---- */

typedef struct {
    void *router;
    char ids[2][64];
    int nids;
    uint64_t seq;
    char revoked[32768];
    char pong[8192];
} fmgr;

static fmgr *fmgr_new(void)
{
    fmgr *m = calloc(1, sizeof *m);
    m->router = track(zmq_socket(zctx, ZMQ_ROUTER));
    int linger = 0;
    zmq_setsockopt(m->router, ZMQ_LINGER, &linger, sizeof linger);
    char ep[256];
    snprintf(ep, sizeof ep, "ipc://%s/control", dir);
    assert_int_equal(zmq_bind(m->router, ep), 0);
    return m;
}

/* Reads what the workers sent: HELLO (remember identities), REVOKED, PONG. */
static void fmgr_poll(fmgr *m, int ms)
{
    zmq_pollitem_t pi = {.socket = m->router, .events = ZMQ_POLLIN};
    while (zmq_poll(&pi, 1, ms) > 0) {
        char f[6][8192];
        int n = 0, more = 1;
        size_t sz = sizeof more;
        while (more) {
            int r = zmq_recv(m->router, f[n < 6 ? n : 5], 8191, 0);
            f[n < 6 ? n : 5][r < 0 ? 0 : (r < 8191 ? r : 8191)] = 0;
            n++;
            zmq_getsockopt(m->router, ZMQ_RCVMORE, &more, &sz);
        }
        if (n >= 3 && strcmp(f[2], "HELLO") == 0) {
            bool known = false;
            for (int i = 0; i < m->nids; i++)
                known |= strcmp(m->ids[i], f[0]) == 0;
            if (!known && m->nids < 2)
                snprintf(m->ids[m->nids++], sizeof m->ids[0], "%.60s", f[0]);
        } else if (n >= 6 && strcmp(f[2], "REVOKED") == 0) {
            snprintf(m->revoked, sizeof m->revoked, "%.8000s|%.8000s|%.8000s", f[3], f[4], f[5]);
        } else if (n >= 5 && strcmp(f[2], "PONG") == 0) {
            snprintf(m->pong, sizeof m->pong, "%s", f[4]);
        }
        ms = 0;
    }
}

static int worker_of(fmgr *m, int index)
{
    char prefix[16];
    snprintf(prefix, sizeof prefix, "w%d-", index);
    for (int i = 0; i < m->nids; i++)
        if (strncmp(m->ids[i], prefix, strlen(prefix)) == 0)
            return i;
    return -1;
}

static void fmgr_send(fmgr *m, int index, const char *cmd, const char *a, const char *b)
{
    int w = worker_of(m, index);
    assert_true(w >= 0);
    char seq[24];
    snprintf(seq, sizeof seq, "%llu", (unsigned long long)++m->seq);
    const char *f[] = {m->ids[w], "GDW1", cmd, seq, a, b};
    int n = 4 + (a != NULL) + (b != NULL);
    finf_sendv(m->router, n, f);
}

static void lease(fmgr *m, int index)
{
    char d[24];
    snprintf(d, sizeof d, "%lld", (long long)(gd_wall_ms() + 60000));
    fmgr_send(m, index, "LEASE", d, NULL);
}

typedef struct {
    fmgr *m;
} tick_ctx;

/* Keeps the workers alive while waiting: PING both, LEASE both. */
static void manager_tick(void *ud)
{
    fmgr *m = ud;
    fmgr_poll(m, 0);
    for (int i = 0; i < 2; i++)
        if (worker_of(m, i) >= 0) {
            fmgr_send(m, i, "PING", NULL, NULL);
            lease(m, i);
        }
}

/* ASSIGN with pending keys, revoked before the shard became active: the keys go back. */
static void revoke_before_active(finf *fi, fmgr *m)
{
    char key[64] = "", shard_s[8];
    int shard = -1;
    for (int i = 0; i < 10000 && shard < 0; i++) {
        char name[32];
        snprintf(name, sizeof name, "ghost%d", i);
        int s0 = gd_shard_of_cluster("zz", name);
        bool used = false;
        for (int k = 0; k < NKEYS; k++)
            used |= fi->objs[k].shard == s0;
        if (!used) {        /* a shard with no objects: nothing else runs there */
            shard = s0;
            snprintf(key, sizeof key, "zz/%s", name);
        }
    }
    assert_true(shard >= 0);
    snprintf(shard_s, sizeof shard_s, "%d", shard);
    char pend[128];
    snprintf(pend, sizeof pend, "{\"godiscluster\":[\"%s\"]}", key);
    m->revoked[0] = 0;
    fmgr_send(m, 1, "ASSIGN", shard_s, pend);
    fmgr_send(m, 1, "REVOKE", shard_s, NULL);
    for (int i = 0; i < 100 && !m->revoked[0]; i++) {
        finf_serve(fi, 20);
        manager_tick(m);
    }
    assert_non_null(strstr(m->revoked, key));
}

/* "from,...,to-1" into buf. */
static char *shard_list(char *buf, size_t cap, int from, int to)
{
    buf[0] = '\0';
    for (int s = from; s < to; s++)
        snprintf(buf + strlen(buf), cap - strlen(buf), s > from ? ",%d" : "%d", s);
    return buf;
}

static void test_managed_handoff(void **state)
{
    unlink(rec_path);
    finf *fi = finf_new(zctx, dir, track);
    fmgr *m = fmgr_new();
    int64_t since[NKEYS];
    for (int i = 0; i < NKEYS; i++) {
        finf_put_cluster(fi, i, 1);
        since[i] = 0;
    }
    finf_heartbeat(fi, "SYNCED");
    pid_t w0 = spawn_worker(0, true, NULL), w1 = spawn_worker(1, true, NULL);
    for (int i = 0; i < 100 && m->nids < 2; i++) {
        fmgr_poll(m, 50);
        finf_serve(fi, 10);
    }
    assert_int_equal(m->nids, 2);
    /* shards without a lease: nothing may be reconciled */
    char list[1024];
    fmgr_send(m, 0, "ASSIGN", shard_list(list, sizeof list, 0, 128), "{}");
    fmgr_send(m, 1, "ASSIGN", shard_list(list, sizeof list, 128, 256), "{}");
    for (int i = 0; i < 8; i++) {
        finf_serve(fi, 50);
        fmgr_send(m, 0, "PING", NULL, NULL);
        fmgr_send(m, 1, "PING", NULL, NULL);
        fmgr_poll(m, 0);
    }
    record r;
    read_record(&r);
    assert_int_equal(r.lines, 0);               /* fenced: no lease yet */
    free_record(&r);
    lease(m, 0);
    lease(m, 1);
    assert_true(wait_all(fi, since, 20000, manager_tick, m));
    /* PONG carries the controller-runtime metrics */
    fmgr_send(m, 0, "PING", NULL, NULL);
    for (int i = 0; i < 20 && !strstr(m->pong, "controller_runtime_reconcile_total"); i++)
        fmgr_poll(m, 50);
    assert_non_null(strstr(m->pong, "controller_runtime_reconcile_total{controller=\"godiscluster\",result=\"success\"}"));
    assert_non_null(strstr(m->pong, "workqueue_depth{name=\"godiscluster\"}"));
    /* handoff of shards 0-63 from w0 to w1 while their keys keep changing */
    shard_list(list, sizeof list, 0, 64);
    for (int i = 0; i < NKEYS; i++)
        if (fi->objs[i].shard < 64) {
            since[i] = wall_us();
            finf_put_cluster(fi, i, 2);
        }
    finf_serve(fi, 5);                               /* some of them are in flight now */
    fmgr_send(m, 0, "REVOKE", list, NULL);
    for (int i = 0; i < NKEYS; i += 2)          /* more changes during the revocation */
        if (fi->objs[i].shard < 64) {
            since[i] = wall_us();
            finf_put_cluster(fi, i, 3);
        }
    for (int i = 0; i < 200 && !m->revoked[0]; i++) {
        finf_serve(fi, 20);
        manager_tick(m);
    }
    assert_true(m->revoked[0] != 0);
    int64_t revoked_seen = wall_us();
    char *bar1 = strchr(m->revoked, '|'), *bar2 = bar1 ? strchr(bar1 + 1, '|') : NULL;
    assert_non_null(bar2);
    *bar2 = 0;
    assert_string_equal(bar1 + 1, list);
    fprintf(stderr, "  REVOKED pending keys: %.200s%s\n", bar2 + 1,
            strlen(bar2 + 1) > 200 ? "…" : "");
    cJSON *pending = cJSON_Parse(bar2 + 1);
    assert_non_null(pending);
    cJSON_Delete(pending);
    /* w0 may have reconciled the latest change before the REVOKE reached it, which
     * satisfies the change; w1's full sync of the moved shards must still reconcile
     * every moved key, so wait for a reconcile started after the ASSIGN. */
    for (int i = 0; i < NKEYS; i++)
        if (fi->objs[i].shard < 64)
            since[i] = wall_us();
    fmgr_send(m, 1, "ASSIGN", list, bar2 + 1);
    assert_true(wait_all(fi, since, 20000, manager_tick, m));
    read_record(&r);
    assert_int_equal(r.overlaps, 0);
    assert_int_equal(r.unmatched, 0);
    /* after the handoff the moved keys' last reconciles ran on w1, and w0 started none
     * of them after it answered REVOKED */
    for (int k = 0; k < NKEYS; k++)
        if (fi->objs[k].shard < 64) {
            assert_int_equal(r.keys[k].v[r.keys[k].n - 1].pid, w1);
            for (int i = 0; i < r.keys[k].n; i++)
                if (r.keys[k].v[i].pid == w0)
                    assert_true(r.keys[k].v[i].start_wall_us < revoked_seen);
        }
    free_record(&r);
    revoke_before_active(fi, m);
    /* STOP ends a worker with 0 */
    char d[24];
    snprintf(d, sizeof d, "%lld", (long long)(gd_wall_ms() + 2000));
    fmgr_send(m, 0, "STOP", d, NULL);
    fmgr_send(m, 1, "STOP", d, NULL);
    assert_int_equal(stop_worker(w0, 0), 0);
    assert_int_equal(stop_worker(w1, 0), 0);
    free(m);
    finf_destroy(fi);
}

/* A worker the manager stops talking to stops writing and exits 1 within 5 heartbeats. */
static void test_manager_silence(void **state)
{
    finf *fi = finf_new(zctx, dir, track);
    fmgr *m = fmgr_new();
    finf_heartbeat(fi, "SYNCED");
    pid_t w = spawn_worker(0, true, NULL);
    for (int i = 0; i < 100 && m->nids < 1; i++)
        fmgr_poll(m, 50);
    assert_int_equal(m->nids, 1);
    int64_t t0 = gd_mono_ms();
    int rc = stop_worker(w, 0);                 /* no PING ever: 5 × 200 ms */
    assert_int_equal(rc, 1);
    assert_true(gd_mono_ms() - t0 < 4000);
    free(m);
    finf_destroy(fi);
}

/* An informer older than the HEARTBEAT request answers it with ERROR: the worker's first
 * snapshot then waits for the periodic heartbeat, as before the request existed, and every
 * key is reconciled all the same. */
static void test_informer_without_heartbeat_request(void **state)
{
    unlink(rec_path);
    finf *fi = finf_new(zctx, dir, track);
    fi->predates_heartbeat_request = true;
    int64_t since[NKEYS];
    put_all_synced(fi, since);
    pid_t w = spawn_worker(0, false, "0-255");
    assert_true(wait_all(fi, since, 20000, NULL, NULL));
    assert_int_equal(fi->heartbeat_requests, 1);   /* asked once; ERROR: not again */
    assert_int_equal(stop_worker(w, SIGTERM), 0);
    finf_destroy(fi);
}

/* --runtime-dir with an informer for one kind only (the manager's --informer-kinds): the
 * missing kinds do not hold the shards back once their grace has passed. */
static void test_runtime_dir_missing_informers(void **state)
{
    unlink(rec_path);
    finf *fi = finf_new(zctx, dir, track);
    int64_t since[NKEYS];
    for (int i = 0; i < NKEYS; i++) {
        finf_put_cluster(fi, i, 1);
        since[i] = 0;
    }
    finf_heartbeat(fi, "SYNCED");
    use_runtime_dir = true;
    pid_t w = spawn_worker(0, false, "all");
    use_runtime_dir = false;
    assert_true(wait_all(fi, since, 30000, NULL, NULL));
    assert_int_equal(stop_worker(w, SIGTERM), 0);
    finf_destroy(fi);
}

/* Flags: --help succeeds, everything malformed is a fatal configuration error (exit 2). */
static int run_flags(const char *const *args)
{
    const char *bin = getenv("GODIS_WORKER_BIN") ? getenv("GODIS_WORKER_BIN") : "bin/tests/godis-worker";
    const char *argv[16];
    int n = 0;
    argv[n++] = bin;
    for (; *args && n < 15; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        dup2(devnull, 2);
        execv(bin, (char **)argv);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_flags(void **state)
{
    const char *help[] = {"--help", NULL};
    assert_int_equal(run_flags(help), 0);
    const char *bad[][8] = {
        {"--bogus", NULL},
        {NULL},                                                      /* no endpoints */
        {"--runtime-dir", "/tmp/x", "--informer-endpoints", "Pod=ipc://a,ipc://b", NULL},
        {"--informer-endpoints", "Pod=tcp://127.0.0.1:1,ipc://b", NULL},
        {"--informer-endpoints", "Pod=ipc://a", NULL},
        {"--informer-endpoints", "Secret=ipc://a,ipc://b", NULL},
        {"--runtime-dir", "/tmp/x", "--shards", "7-3", NULL},
        {"--runtime-dir", "/tmp/x", "--shards", "3", "--control-endpoint", "ipc:///tmp/c", NULL},
        {"--runtime-dir", "/tmp/x", "--control-endpoint", "tcp://127.0.0.1:5", NULL},
        {"--runtime-dir", "/tmp/x", "--max-concurrent-reconciles", "0", NULL},
        {"--runtime-dir", "/tmp/x", "--log-level", "loud", NULL},
        {"--runtime-dir", "/tmp/x", "--reconciler", "nope", NULL},
        {"--runtime-dir", "/tmp/x", "--reconciler", "sleepy", "--reconciler-arg", "x=1", NULL},
        {"--runtime-dir", "/tmp/x", "extra", NULL},
        {"--runtime-dir", "/tmp/x", "--queue-rate-limits", "base-ms=0", NULL},
        {"--runtime-dir", "/tmp/x", "--queue-rate-limits", "qps=x", NULL},
        {"--runtime-dir", "/tmp/x", "--queue-rate-limits", "base-ms=10,max-ms=5", NULL},
        {"--runtime-dir", "/tmp/x", "--queue-rate-limits", "speed=3", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = run_flags(bad[i]);
        if (rc != 2)
            fail_msg("case %zu (%s %s): exit %d, want 2", i, bad[i][0] ? bad[i][0] : "",
                     bad[i][0] && bad[i][1] ? bad[i][1] : "", rc);
    }
}

int main(void)
{
    if (access(getenv("GODIS_WORKER_BIN") ? getenv("GODIS_WORKER_BIN") : "bin/tests/godis-worker",
               X_OK) != 0) {
        fprintf(stderr, "bin/tests/godis-worker not built (run from the repository root)\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flags),
        cmocka_unit_test_setup_teardown(test_standalone_500_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_informer_without_heartbeat_request, setup, teardown),
        cmocka_unit_test_setup_teardown(test_managed_handoff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_manager_silence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_runtime_dir_missing_informers, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
