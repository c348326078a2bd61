/* itest_manager.c — the real bin/godis-manager with stand-in children (this binary, see
 * harness_manager.c) and leader election off: supervision (kill -9 of a worker and of
 * an informer → restarted), shards spread with no overlap (kernel-lock checker) while the
 * worker count goes 2 → 4 → 1 by SIGHUP, a silent worker killed by heartbeat, graceful
 * stop order, exit 2 from a child → manager exits 2, the HTTP endpoints. The leader
 * election tests against the API server are in itest_manager_election.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness_manager.h"

/* Shards reported by the fake workers add up to 256 and each has its even share. */
static bool balanced(mgr_proc *m, void *arg)
{
    int n = *(int *)arg;
    double total = 0;
    for (int i = 0; i < n; i++) {
        char s[64];
        snprintf(s, sizeof s, "fake_worker_owned_shards{worker=\"%d\"}", i);
        double v = metric(m->metrics, s);
        if (v < 256 / n || v > 256 / n + 1) return false;
        total += v;
    }
    char s[64];
    snprintf(s, sizeof s, "fake_worker_owned_shards{worker=\"%d\"}", n);
    return total == 256 && metric(m->metrics, "godis_manager_shards_unassigned") == 0 &&
           metric(m->metrics, s) == -1;    /* no extra worker still reporting */
}

static void assert_no_violations(void)
{
    char p[512];
    snprintf(p, sizeof p, "%s/violations", getenv("FAKE_DIR"));
    struct stat st;
    if (stat(p, &st) == 0 && st.st_size > 0) {
        char b[512] = "";
        FILE *f = fopen(p, "r");
        if (f) { (void)!fread(b, 1, sizeof b - 1, f); fclose(f); }
        fail_msg("shard held by two workers at once: %s", b);
    }
}

/* Both a worker and an informer restart are counted in the published metrics. */
static bool restarted_both(mgr_proc *m, void *arg)
{
    (void)arg;
    return metric(m->metrics, "godis_manager_child_restarts_total{role=\"worker\"}") >= 1 &&
           metric(m->metrics, "godis_manager_child_restarts_total{role=\"informer\"}") >= 1;
}

static bool pid_file_gone_dead(mgr_proc *m, void *name)
{
    (void)m;
    return !pid_alive(read_pid(name));
}

/* ---- tests ---- */

static void test_supervision_restarts_children(void **st)
{
    (void)st;
    mgr_proc m;
    start_mgr(&m, 2, NULL);
    assert_true(wait_for(is_ready, &m, NULL, 5000));
    int two = 2;
    assert_true(wait_for(balanced, &m, &two, 3000));
    assert_int_equal(metric(m.metrics, "leader_election_master_status{name=\"godis-operator-leader\"}"), 1);

    pid_t w1 = read_pid("fake-w1.pid"), inf = read_pid("fake-i-Pod.pid");
    assert_true(pid_alive(w1) && pid_alive(inf));
    kill(w1, SIGKILL);
    kill(inf, SIGKILL);
    long long end = now_ms() + 5000;
    while (now_ms() < end && (read_pid("fake-w1.pid") == w1 || read_pid("fake-i-Pod.pid") == inf))
        usleep(20000);
    assert_true(pid_alive(read_pid("fake-w1.pid")) && read_pid("fake-w1.pid") != w1);
    assert_true(pid_alive(read_pid("fake-i-Pod.pid")) && read_pid("fake-i-Pod.pid") != inf);
    assert_true(wait_for(balanced, &m, &two, 5000));
    /* the manager publishes /metrics every 250 ms: a child's new pid file can be there
     * before a snapshot that counts its restart */
    assert_true(wait_for(restarted_both, &m, NULL, 3000));
    assert_true(wait_for(is_ready, &m, NULL, 5000));
    assert_no_violations();

    /* graceful stop: exit 0, every child gone */
    pid_t w0 = read_pid("fake-w0.pid"), i0 = read_pid("fake-i-GodisCluster.pid");
    assert_int_equal(stop_mgr(&m, SIGTERM, 5000), 0);
    assert_false(pid_alive(w0));
    assert_false(pid_alive(i0));
    assert_false(pid_alive(read_pid("fake-w1.pid")));
    struct stat sb;
    assert_int_not_equal(stat(m.rundir, &sb), 0);     /* runtime dir removed */
}

static void test_rescale_2_4_1_without_overlap(void **st)
{
    (void)st;
    mgr_proc m;
    start_mgr(&m, 2, NULL);
    int n = 2;
    assert_true(wait_for(balanced, &m, &n, 5000));
    write_file(m.cfg, "workers: 4\n");
    kill(m.pid, SIGHUP);
    n = 4;
    assert_true(wait_for(balanced, &m, &n, 5000));
    assert_true(metric(m.metrics, "godis_manager_shard_moves_total") >= 128);
    write_file(m.cfg, "workers: 1\n");
    kill(m.pid, SIGHUP);
    n = 1;
    assert_true(wait_for(balanced, &m, &n, 5000));
    assert_no_violations();
    assert_true(wait_for(pid_file_gone_dead, &m, "fake-w3.pid", 3000));  /* retired workers were stopped */
    assert_int_equal(stop_mgr(&m, SIGTERM, 5000), 0);
}

static bool killed_once(mgr_proc *m, void *arg)
{
    (void)arg;
    return metric(m->metrics, "godis_manager_heartbeat_kills_total") >= 1;
}

static void test_silent_worker_is_killed(void **st)
{
    (void)st;
    setenv("FAKE_HANG_INDEX", "1", 1);
    mgr_proc m;
    start_mgr(&m, 2, NULL);
    unsetenv("FAKE_HANG_INDEX");
    assert_true(wait_for(killed_once, &m, NULL, 5000));
    assert_true(metric(m.metrics, "godis_manager_child_restarts_total{role=\"worker\"}") >= 0);
    assert_int_equal(stop_mgr(&m, SIGTERM, 5000), 0);
    assert_no_violations();
}

static void test_fatal_child_exits_2(void **st)
{
    (void)st;
    setenv("FAKE_EXIT2_KIND", "Pod", 1);
    mgr_proc m;
    start_mgr(&m, 1, NULL);
    unsetenv("FAKE_EXIT2_KIND");
    assert_int_equal(stop_mgr(&m, 0, 8000), 2);
}

static void test_http_endpoints(void **st)
{
    (void)st;
    mgr_proc m;
    start_mgr(&m, 1, NULL);
    assert_true(wait_for(is_ready, &m, NULL, 5000));
    char b[4096];
    assert_int_equal(http_get(m.health, "/healthz", b, sizeof b), 200);
    assert_int_equal(http_get(m.health, "/nope", b, sizeof b), 404);
    assert_int_equal(http_get(m.health, "/metrics", b, sizeof b), 404);  /* other port */
    assert_int_equal(http_get(m.metrics, "/readyz", b, sizeof b), 404);
    static char body[1 << 20];
    assert_int_equal(http_get(m.metrics, "/metrics", body, sizeof body), 200);
    assert_non_null(strstr(body, "# TYPE leader_election_master_status gauge"));
    assert_non_null(strstr(body, "godis_informer_synced{kind=\"Pod\"} 1"));
    /* HELP/TYPE once even with two informers reporting the same family */
    char *t = strstr(body, "# TYPE godis_informer_synced");
    assert_non_null(t);
    assert_null(strstr(t + 1, "# TYPE godis_informer_synced"));
    assert_int_equal(stop_mgr(&m, SIGTERM, 5000), 0);
}

static void test_bad_config_exits_2(void **st)
{
    (void)st;
    char log[300];
    snprintf(log, sizeof log, "%s/bad.log", tmpdir);
    pid_t p = fork();
    if (p == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        execl(mgr_path, mgr_path, "--workers=0", (char *)NULL);
        _exit(127);
    }
    int s;
    waitpid(p, &s, 0);
    assert_true(WIFEXITED(s));
    assert_int_equal(WEXITSTATUS(s), 2);
    char b[512] = "";
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    (void)!fread(b, 1, sizeof b - 1, f);
    fclose(f);
    assert_non_null(strstr(b, "--workers: must be between 1 and 64"));
    assert_ptr_equal(strchr(b, '\n'), b + strlen(b) - 1);   /* exactly one line */
}

int main(int argc, char **argv)
{
    int rc = mgr_itest_init(argc, argv, "itest_manager");
    if (rc >= 0) return rc;
    if (access(mgr_path, X_OK) != 0) {
        fprintf(stderr, "itest_manager: %s not found (run from the repository root)\n", mgr_path);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bad_config_exits_2, fresh_fake_dir, kill_started),
        cmocka_unit_test_setup_teardown(test_http_endpoints, fresh_fake_dir, kill_started),
        cmocka_unit_test_setup_teardown(test_supervision_restarts_children, fresh_fake_dir, kill_started),
        cmocka_unit_test_setup_teardown(test_rescale_2_4_1_without_overlap, fresh_fake_dir, kill_started),
        cmocka_unit_test_setup_teardown(test_silent_worker_is_killed, fresh_fake_dir, kill_started),
        cmocka_unit_test_setup_teardown(test_fatal_child_exits_2, fresh_fake_dir, kill_started),
    };
    return MGR_ITEST_RUN(tests, "itest_manager");
}
