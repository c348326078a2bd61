/* itest_manager_election.c — leader election of real bin/godis-manager processes on a Lease
 * of the local control plane (KUBECONFIG from `tools/devcluster env`; skipped without it),
 * with stand-in children (itest_manager_fakes.inc) whose workers log every "write" with
 * the wall-clock time, their pid and their manager's pid.
 *
 * Short timings keep it quick: lease 4 s, renew deadline 3 s, retry 500 ms.
 *   - two and three managers: exactly one leader at any moment (polled continuously from
 *     every manager's leader_election_master_status, and the Lease's holder agrees);
 *   - graceful stop of the leader: a standby's workers write within 1 s;
 *   - SIGKILL of the leader: a new leader within leaseDuration + 1 s;
 *   - SIGSTOP of the leader: its workers' last write comes before the new leader's first
 *     (fenced by the LEASE deadline), and after SIGCONT it steps down without writing.
 * Failover times are printed, and appended to $FAILOVER_JSONL when set. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
#include "itest_manager_fakes.inc"
#include "itest_manager_harness.inc"
#include "k8s_client.h"
#include "gd_json.h"

#define NMGR 3
static k8s_client *kc;
static char lease_name[64];

static const char *ids[NMGR] = {"mgr-a", "mgr-b", "mgr-c"};

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

static void test_sigstop_leader_is_fenced(void **st)
{
    (void)st;
    mgr_proc m[NMGR];
    bool alive[NMGR] = {true, true, false};
    start_le(&m[0], 0);
    start_le(&m[1], 1);
    int l = watch_leaders(m, alive, 8000, -1);
    assert_true(l >= 0);
    hold_leader(m, alive, 1000, l);
    assert_true(wait_writes(m[l].pid, 5000));                  /* its workers are writing */
    kill(m[l].pid, SIGSTOP);
    bool only_s[NMGR] = {false, false, false};
    only_s[1 - l] = true;
    int nl = watch_leaders(m, only_s, 8000, -1);
    assert_int_equal(nl, 1 - l);
    long long first, last, ofirst, olast;
    long long end = now_ms() + 2000;
    while (now_ms() < end && writes_of(m[nl].pid, &first, &last) == 0) usleep(5000);
    assert_true(writes_of(m[nl].pid, &first, &last) > 0);
    assert_true(writes_of(m[l].pid, &ofirst, &olast) > 0);
    printf("sigstop: old leader's last write %lld ms before the new leader's first\n", first - olast);
    assert_true(olast < first);                                 /* fenced before the takeover */
    /* SIGCONT: the old manager steps down without writing again */
    kill(m[l].pid, SIGCONT);
    usleep(2500000);
    long long olast2;
    writes_of(m[l].pid, &ofirst, &olast2);
    assert_true(olast2 == olast);
    assert_int_equal(leading(&m[l]), 0);
    assert_int_equal(leading(&m[nl]), 1);
    assert_true(metric(m[l].metrics, "godis_manager_fencings_total") >= 1);
    for (int i = 0; i < 2; i++) assert_int_equal(stop_mgr(&m[i], SIGTERM, 5000), 0);
}

int main(int argc, char **argv)
{
    int rc = fake_dispatch(argc, argv);
    if (rc >= 0) return rc;
    ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    if (n <= 0) return 1;
    self_path[n] = '\0';
    const char *bindir = getenv("GODIS_BIN_DIR");
    snprintf(mgr_path, sizeof mgr_path, "%s/godis-manager", bindir ? bindir : "bin");
    if (!getenv("KUBECONFIG") || access(mgr_path, X_OK) != 0) {
        printf("itest_manager_election: skipped (needs KUBECONFIG of a running devcluster and %s)\n", mgr_path);
        printf("[  PASSED  ] 0 test(s).\n");
        return 0;
    }
    k8s_config_opts o = {.kubeconfig = getenv("KUBECONFIG")};
    k8s_config *cfg = NULL;
    char err[512];
    if (k8s_config_load(&o, &cfg, err, sizeof err) != GD_OK || !(kc = k8s_client_new(&cfg, NULL))) {
        fprintf(stderr, "itest_manager_election: %s\n", err);
        return 1;
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/itest-manager-election-%d", (int)getpid());
    mkdir(tmpdir, 0700);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_two_managers_graceful_handover, setup, kill_started),
        cmocka_unit_test_setup_teardown(test_crash_failover_within_lease, setup, kill_started),
        cmocka_unit_test_setup_teardown(test_sigstop_leader_is_fenced, setup, kill_started),
    };
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    k8s_client_destroy(&kc);
    char cmd[300];
    if (rc == 0) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        (void)!system(cmd);
    } else {
        fprintf(stderr, "itest_manager_election: logs kept in %s\n", tmpdir);
    }
    return rc;
}
