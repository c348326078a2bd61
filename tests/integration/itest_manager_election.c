/* itest_manager_election.c — leader election of real bin/godis-manager processes on a Lease
 * of the local control plane (KUBECONFIG from `tools/devcluster env`; skipped without it).
 *
 * Short timings keep it quick: lease 4 s, renew deadline 3 s, retry 500 ms.
 *   - two and three managers: exactly one leader at any moment (polled continuously from
 *     every manager's leader_election_master_status, and the Lease's holder agrees);
 *   - graceful stop of the leader: a standby's workers write within 1 s;
 *   - SIGKILL of the leader: a new leader within leaseDuration + 1 s;
 *   - SIGSTOP of the leader: its workers stop writing before the new leader starts, and
 *     after SIGCONT it steps down without writing.
 * The first three use stand-in children (harness_manager.c) whose workers log every
 * "write" with the wall-clock time, their pid and their manager's pid. The SIGSTOP test is
 * proved from the API server's own record instead: real bin/godis-informer and
 * bin/godis-worker processes (the "sleepy" test reconciler, patching status of a few
 * GodisClusters every 100 ms through the fenced write path), whose requests carry
 * "godis-operator (worker; manager=<identity>)" as User-Agent, and the audit log of
 * tools/devcluster ($DEVCLUSTER_AUDIT_LOG), whose server-side timestamps order the writes.
 * Failover times and the fencing margin are printed; failover times are appended to
 * $FAILOVER_JSONL when set. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness_manager.h"
#include "k8s_client.h"
#include "gd_json.h"
#include "audit_log.h"
#include "e2e_lib.h"
#include "gd_time.h"

#define NMGR 3
static k8s_client *kc;
static char lease_name[64];

/* Unique per test and run: the audit log outlives runs, and names writers by identity. */
static char ids[NMGR][64];

static void start_le(mgr_proc *m, int i)
{
    char kcfg[600], name[100], id[64];
    snprintf(kcfg, sizeof kcfg, "--kubeconfig=%s", getenv("KUBECONFIG"));
    snprintf(name, sizeof name, "--leader-elect-resource-name=%s", lease_name);
    snprintf(id, sizeof id, "--leader-elect-identity=%s", ids[i]);
    const char *x[] = {"--leader-elect=true", kcfg, name, id,
                       "--leader-elect-resource-namespace=default",
                       "--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s",
                       "--leader-elect-retry-period=500ms", "--heartbeat=1s", NULL};
    start_mgr_v(m, 1, x);
}

static int leading(mgr_proc *m)
{
    char s[128];
    snprintf(s, sizeof s, "leader_election_master_status{name=\"%s\"}", lease_name);
    return (int)metric(m->metrics, s);     /* 1, 0, or -1 when it does not answer */
}

/* The manager no longer leads and has counted the fencing of its workers. */
static bool stepped_down(mgr_proc *m, void *arg)
{
    (void)arg;
    return leading(m) == 0 && metric(m->metrics, "godis_manager_fencings_total") >= 1;
}

/* The Lease's holderIdentity ("" released, "?" unreadable). */
static void lease_holder(char *out, size_t cap)
{
    cJSON *l = NULL;
    snprintf(out, cap, "?");
    if (k8s_get(kc, &K8S_RES_LEASES, "default", lease_name, &l, NULL) == GD_OK)
        snprintf(out, cap, "%s", gd_json_str_or(l, "spec.holderIdentity", ""));
    cJSON_Delete(l);
}

/* Polls every manager until exactly one leads (returns its index) or ms pass; fails the
 * test the moment two lead at once. alive[i] false: not polled. */
static int watch_leaders(mgr_proc *m, const bool *alive, int ms, int want_not)
{
    long long end = now_ms() + ms;
    int leader = -1;
    while (now_ms() < end) {
        int n = 0;
        leader = -1;
        for (int i = 0; i < NMGR; i++) {
            if (!alive[i]) continue;
            if (leading(&m[i]) == 1) { n++; leader = i; }
        }
        if (n > 1) fail_msg("two managers lead at the same time");
        if (n == 1 && leader != want_not) return leader;
        usleep(10000);
    }
    return -1;
}

/* Polls for ms: manager l leads the whole time and nobody else does. */
static void hold_leader(mgr_proc *m, const bool *alive, int ms, int l)
{
    long long end = now_ms() + ms;
    while (now_ms() < end) {
        for (int i = 0; i < NMGR; i++) {
            if (!alive[i]) continue;
            int v = leading(&m[i]);
            if (i == l && v != 1) fail_msg("leader %d stopped leading", l);
            if (i != l && v == 1) fail_msg("manager %d leads beside %d", i, l);
        }
        usleep(20000);
    }
}

/* Writes logged by the workers of manager pid mgr: first and last wall ms. */
static int writes_of(pid_t mgr, long long *first, long long *last)
{
    char p[512], line[128];
    snprintf(p, sizeof p, "%s/writes", getenv("FAKE_DIR"));
    FILE *f = fopen(p, "r");
    *first = *last = 0;
    int n = 0;
    if (!f) return 0;
    while (fgets(line, sizeof line, f)) {
        long long t;
        int pid, ppid;
        if (sscanf(line, "W %lld %d %d", &t, &pid, &ppid) != 3 || ppid != mgr) continue;
        if (!n++) *first = t;
        *last = t;
    }
    fclose(f);
    return n;
}

static long long wall_ms(void) { return fake_wall_ms(); }

/* Waits (up to ms) until the workers of manager pid mgr have written. */
static bool wait_writes(pid_t mgr, int ms)
{
    long long f, l, end = now_ms() + ms;
    while (now_ms() < end) {
        if (writes_of(mgr, &f, &l) > 0) return true;
        usleep(10000);
    }
    return false;
}

static void record(const char *name, double seconds)
{
    printf("%s %.3f s\n", name, seconds);
    const char *out = getenv("FAILOVER_JSONL");
    if (!out) return;
    FILE *f = fopen(out, "a");
    if (!f) return;
    fprintf(f, "{\"name\":\"%s\",\"value\":%.3f,\"unit\":\"s\",\"lease_duration_s\":4,"
               "\"renew_deadline_s\":3,\"retry_period_s\":0.5}\n", name, seconds);
    fclose(f);
}

static int setup(void **st)
{
    static int n;
    snprintf(lease_name, sizeof lease_name, "itest-mgr-%d-%d", (int)getpid(), ++n);
    for (int i = 0; i < NMGR; i++)
        snprintf(ids[i], sizeof ids[i], "itest-%d-%d-%c", (int)getpid(), n, 'a' + i);
    setenv("FAKE_WRITE_MS", "20", 1);
    return fresh_fake_dir(st);
}

static void test_two_managers_graceful_handover(void **st)
{
    (void)st;
    mgr_proc m[NMGR];
    bool alive[NMGR] = {true, true, false};
    start_le(&m[0], 0);
    start_le(&m[1], 1);
    int l = watch_leaders(m, alive, 8000, -1);
    assert_true(l >= 0);
    hold_leader(m, alive, 1500, l);                            /* stays put */
    char holder[256];
    lease_holder(holder, sizeof holder);
    assert_string_equal(holder, ids[l]);
    long long last;
    assert_true(wait_writes(m[l].pid, 5000));                  /* its workers work */

    int s = 1 - l;
    long long t0 = wall_ms();
    kill(m[l].pid, SIGTERM);
    int nl = watch_leaders(m, alive, 3000, l);
    assert_int_equal(nl, s);
    long long took_lead = wall_ms() - t0;
    /* the standby's workers reconcile (write) within 1 s of the leader's SIGTERM */
    long long first = 0, end = now_ms() + 2000;
    while (now_ms() < end && writes_of(m[s].pid, &first, &last) == 0) usleep(5000);
    assert_true(first > 0);
    assert_int_equal(stop_mgr(&m[l], 0, 5000), 0);
    long long old_first, old_last;
    writes_of(m[l].pid, &old_first, &old_last);
    assert_true(old_last < first);                             /* never both at once */
    record("failover_graceful_s", (double)(first - t0) / 1000.0);
    printf("graceful: new leader after %lld ms, first write after %lld ms\n", took_lead, first - t0);
    assert_true(first - t0 < 1000);
    lease_holder(holder, sizeof holder);
    assert_string_equal(holder, ids[s]);
    assert_int_equal(stop_mgr(&m[s], SIGTERM, 5000), 0);
    lease_holder(holder, sizeof holder);
    assert_string_equal(holder, "");                           /* released on exit */
}

static void test_crash_failover_within_lease(void **st)
{
    (void)st;
    mgr_proc m[NMGR];
    bool alive[NMGR] = {true, true, true};
    for (int i = 0; i < NMGR; i++) start_le(&m[i], i);
    int l = watch_leaders(m, alive, 8000, -1);
    assert_true(l >= 0);
    hold_leader(m, alive, 1000, l);
    long long t0 = wall_ms();
    kill(m[l].pid, SIGKILL);
    waitpid(m[l].pid, NULL, 0);
    alive[l] = false;
    int nl = watch_leaders(m, alive, 6000, -1);
    long long took = wall_ms() - t0;
    assert_true(nl >= 0 && nl != l);
    record("failover_crash_s", (double)took / 1000.0);
    assert_true(took <= 4000 + 1000);                          /* leaseDuration + 1 s */
    assert_true(took >= 2500);                                 /* it did wait for expiry */
    char holder[256];
    lease_holder(holder, sizeof holder);
    assert_string_equal(holder, ids[nl]);
    /* and again from the new leader, still never two at once */
    kill(m[nl].pid, SIGTERM);
    assert_int_equal(stop_mgr(&m[nl], 0, 5000), 0);
    alive[nl] = false;
    int third = watch_leaders(m, alive, 3000, -1);
    assert_true(third >= 0 && third != l && third != nl);
    for (int i = 0; i < NMGR; i++)
        if (alive[i]) assert_int_equal(stop_mgr(&m[i], SIGTERM, 5000), 0);
}

/* ---- SIGSTOP: proved from the API server's audit log ---- */

#define FENCE_OBJS 4

/* A manager with the real informer and workers, writing status of the GodisClusters of ns
 * every 100 ms (requeue_ms) for as long as its write lease lasts. */
static void start_writing_le(mgr_proc *m, int i, const char *ns)
{
    char kcfg[600], name[100], id[100], ib[PATH_MAX + 20], wb[PATH_MAX + 20], wa[300];
    snprintf(kcfg, sizeof kcfg, "--kubeconfig=%s", getenv("KUBECONFIG"));
    snprintf(name, sizeof name, "--leader-elect-resource-name=%s", lease_name);
    snprintf(id, sizeof id, "--leader-elect-identity=%s", ids[i]);
    snprintf(ib, sizeof ib, "--informer-bin=%s", informer_path);
    snprintf(wb, sizeof wb, "--worker-bin=%s", worker_path);
    snprintf(wa, sizeof wa, "--worker-arg=--reconciler sleepy --reconciler-arg "
             "ns=%s,sleep_ms=0,write=status,requeue_ms=100", ns);
    /* later flags win: the real programs instead of the stand-ins */
    const char *x[] = {"--leader-elect=true", kcfg, name, id, ib, wb, wa,
                       "--informer-kinds=GodisCluster", "--max-concurrent-reconciles=2",
                       "--leader-elect-resource-namespace=default",
                       "--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s",
                       "--leader-elect-retry-period=500ms", "--heartbeat=1s", NULL};
    start_mgr_v(m, 2, x);
}

/* What the audit log says about one manager identity. */
typedef struct {
    int writes;                 /* requests of its workers (any verb the policy records) */
    int64_t first_recv, last_recv, last_done;
    int64_t acquired;           /* first successful write of our Lease by the manager, or 0 */
    int lease_ok, lease_refused;
    int64_t lease_last_ok;      /* last successful Lease write by the manager */
} writer_record;

static void audit_record_of(const char *identity, writer_record *r)
{
    memset(r, 0, sizeof *r);
    char worker_ua[128], mgr_ua[128];
    snprintf(worker_ua, sizeof worker_ua, "(worker; manager=%s)", identity);
    snprintf(mgr_ua, sizeof mgr_ua, "(manager; identity=%s)", identity);
    audit_event *ev = NULL;
    int bad = 0, n = audit_events(getenv("DEVCLUSTER_AUDIT_LOG"), identity, &ev, &bad);
    assert_true(n >= 0);
    assert_int_equal(bad, 0);
    for (int i = 0; i < n; i++) {
        const audit_event *e = &ev[i];
        if (strstr(e->user_agent, worker_ua)) {
            if (!r->writes++ || e->recv_us < r->first_recv) r->first_recv = e->recv_us;
            if (e->recv_us > r->last_recv) r->last_recv = e->recv_us;
            if (e->done_us > r->last_done) r->last_done = e->done_us;
        } else if (strstr(e->user_agent, mgr_ua) && !strcmp(e->resource, "leases") &&
                   !strcmp(e->name, lease_name)) {
            bool ok = e->code >= 200 && e->code < 300;
            if (!ok) { r->lease_refused++; continue; }
            r->lease_ok++;
            if (!r->acquired || e->recv_us < r->acquired) r->acquired = e->recv_us;
            if (e->done_us > r->lease_last_ok) r->lease_last_ok = e->done_us;
        }
    }
    free(ev);
}

static bool wait_audit_writes(const char *identity, int min, int ms)
{
    writer_record r;
    long long end = now_ms() + ms;
    do {
        audit_record_of(identity, &r);
        if (r.writes >= min) return true;
        usleep(100000);
    } while (now_ms() < end);
    return false;
}

static long long wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void test_audit_time_parsing(void **st)
{
    (void)st;
    assert_int_equal(audit_time_us("1970-01-01T00:00:01.5Z"), 1500000);
    assert_int_equal(audit_time_us("2026-11-22T14:00:09.782450Z"), 1795356009782450LL);
    assert_int_equal(audit_time_us("2026-11-22T14:00:09Z"), 1795356009000000LL);
    assert_int_equal(audit_time_us("2026-11-22T14:00:09.782450+01:00"), -1);
    assert_int_equal(audit_time_us("2026-11-22 14:00:09Z"), -1);
    assert_int_equal(audit_time_us(""), -1);
    assert_int_equal(audit_time_us(NULL), -1);
}

/* The test's namespace goes even when an assertion ends the test early: its objects would
 * otherwise be reconciled by other tests' workers (informers watch the whole cluster). */
static char fence_ns[64];

static int fence_teardown(void **st)
{
    kill_started(st);
    if (fence_ns[0]) e2e_ns_delete(kc, fence_ns);
    fence_ns[0] = '\0';
    return 0;
}

static void test_sigstop_leader_is_fenced(void **st)
{
    (void)st;
    const char *audit = getenv("DEVCLUSTER_AUDIT_LOG");
    if (!audit || !*audit || access(informer_path, X_OK) || access(worker_path, X_OK)) {
        printf("sigstop: skipped (needs DEVCLUSTER_AUDIT_LOG and bin/godis-informer, bin/godis-worker)\n");
        skip();
    }
    char *ns = fence_ns;
    assert_true(e2e_install_crds(kc));
    assert_true(e2e_ns_create(kc, "itest-fence", ns, sizeof fence_ns));
    for (int i = 0; i < FENCE_OBJS; i++) {
        char name[32];
        snprintf(name, sizeof name, "fence-%d", i);
        assert_true(e2e_cluster_create(kc, ns, name, 1));
    }
    mgr_proc m[NMGR];
    bool alive[NMGR] = {true, true, false};
    start_writing_le(&m[0], 0, ns);
    start_writing_le(&m[1], 1, ns);
    int l = watch_leaders(m, alive, 8000, -1);
    assert_true(l >= 0);
    int s = 1 - l;
    hold_leader(m, alive, 1000, l);
    assert_true(wait_audit_writes(ids[l], 20, 20000));         /* its workers are writing */

    long long stopped_us = wall_us();
    kill(m[l].pid, SIGSTOP);
    bool only_s[NMGR] = {false, false, false};
    only_s[s] = true;
    assert_int_equal(watch_leaders(m, only_s, 8000, -1), s);
    assert_true(wait_audit_writes(ids[s], 5, 5000));           /* the new leader's write */

    /* SIGCONT: the old manager finds its lease gone and steps down */
    kill(m[l].pid, SIGCONT);
    long long cont_us = wall_us();
    /* a condition with a deadline, not a sleep that guesses how long stepping down takes */
    assert_true(wait_for(stepped_down, &m[l], NULL, 30000));
    assert_int_equal(leading(&m[l]), 0);
    assert_int_equal(leading(&m[s]), 1);
    assert_true(metric(m[l].metrics, "godis_manager_fencings_total") >= 1);

    writer_record old, nu;
    audit_record_of(ids[l], &old);
    audit_record_of(ids[s], &nu);
    assert_true(old.writes > 0 && nu.writes > 0 && old.lease_ok > 0 && nu.acquired > 0);
    /* In the API server's clock: every request of the old leader's workers was complete
     * before the new leader even asked for the Lease, so before its first write too.
     * (A request is logged after it completes; SIGCONT came after both were seen, and the
     * old leader has stepped down since: its workers stopped writing at their lease
     * deadline, long before.) */
    assert_true(old.last_done < nu.acquired);
    assert_true(old.last_done < nu.first_recv);
    assert_true(nu.acquired < nu.first_recv);
    /* and after SIGCONT the old manager did not write: its Lease writes ended before the
     * new leader's (it may try once more and be refused: 409 Conflict) */
    assert_true(old.lease_last_ok < nu.acquired);
    printf("sigstop: margin %.1f ms between the old leader's workers' last write (done, "
           "API server clock) and the new leader's Lease acquisition; %.1f ms to its "
           "workers' first write\n",
           (double)(nu.acquired - old.last_done) / 1000.0,
           (double)(nu.first_recv - old.last_done) / 1000.0);
    printf("sigstop: old workers wrote %d times, the last %.1f ms after SIGSTOP (received); "
           "new workers %d times; old manager's Lease writes refused after SIGCONT: %d; "
           "SIGCONT %.1f ms after the acquisition\n",
           old.writes, (double)(old.last_recv - stopped_us) / 1000.0, nu.writes,
           old.lease_refused, (double)(cont_us - nu.acquired) / 1000.0);
    for (int i = 0; i < 2; i++) assert_int_equal(stop_mgr(&m[i], SIGTERM, 10000), 0);
}

static bool worker_back(mgr_proc *m, void *arg)
{
    pid_t old = *(pid_t *)arg, now = read_pid("fake-w0.pid");
    return leading(m) == 1 && now != old && pid_alive(now) &&
           metric(m->metrics, "godis_manager_children_running{role=\"worker\"}") == 1 &&
           metric(m->metrics, "godis_manager_shards_unassigned") == 0;
}

static bool fenced(mgr_proc *m, void *arg)
{
    (void)arg;
    return metric(m->metrics, "godis_manager_fencings_total") >= 1;
}

/* One manager stopped past its renew deadline (SIGSTOP, as a machine too loaded to renew in
 * time) fences its workers and wins its own lease back before they exited (they take 2.5 s
 * to finish). The workers come back as this leader's and get every shard; they used to be
 * left down: a leader with no worker, reconciling nothing (300 x 3 benchmark, 2026-12-03). */
static void test_lease_won_back_before_workers_exit(void **st)
{
    (void)st;
    setenv("FAKE_STOP_LINGER_MS", "2500", 1);
    mgr_proc m;
    start_le(&m, 0);
    unsetenv("FAKE_STOP_LINGER_MS");
    bool alive[NMGR] = {true, false, false};
    assert_int_equal(watch_leaders(&m, alive, 8000, -1), 0);
    pid_t w0 = 0;
    long long end = now_ms() + 5000;
    while (now_ms() < end && !pid_alive(w0 = read_pid("fake-w0.pid"))) usleep(20000);
    assert_true(pid_alive(w0));
    kill(m.pid, SIGSTOP);
    gd_sleep_ms(3500);                          /* past the renew deadline (3 s) */
    kill(m.pid, SIGCONT);
    assert_true(wait_for(fenced, &m, NULL, 10000));
    assert_true(wait_for(worker_back, &m, &w0, 20000));
    assert_false(pid_alive(w0));
    assert_int_equal(stop_mgr(&m, SIGTERM, 10000), 0);
}

int main(int argc, char **argv)
{
    int rc = mgr_itest_init(argc, argv, "itest_manager_election");
    if (rc >= 0) return rc;
    if (!getenv("KUBECONFIG") || access(mgr_path, X_OK) != 0) {
        printf("itest_manager_election: skipped (needs KUBECONFIG of a running devcluster and %s)\n", mgr_path);
        printf("[  SKIPPED ] 1 test(s), listed below:\n");   /* counted by run-integration.sh */
        return 0;
    }
    if (!(kc = e2e_client())) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_audit_time_parsing),
        cmocka_unit_test_setup_teardown(test_two_managers_graceful_handover, setup, kill_started),
        cmocka_unit_test_setup_teardown(test_crash_failover_within_lease, setup, kill_started),
        cmocka_unit_test_setup_teardown(test_sigstop_leader_is_fenced, setup, fence_teardown),
        cmocka_unit_test_setup_teardown(test_lease_won_back_before_workers_exit, setup, kill_started),
    };
    rc = MGR_ITEST_RUN(tests, "itest_manager_election");
    k8s_client_destroy(&kc);
    return rc;
}
