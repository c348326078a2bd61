/* The whole operator end to end: two godis-manager replicas (leader election, warm
 * standby) each supervising informers and 2 workers, on the local control plane with the
 * node agent and the godis stand-ins — the issue-7 scenarios, plus workers killed in the
 * middle of a scale-out and 50 GodisClusters at once. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "e2e_lib.h"
#include "e2e_procs.h"
#include "e2e_scenarios.h"
#include "gd_log.h"
#include "gd_time.h"

static pid_t managers[2];
static char rundir[2][256], logdir[256], lease[64];

/* SIGKILL every godis-worker whose parent is one of our managers. */
static void kill_workers(void)
{
    int killed = 0;
    for (int m = 0; m < 2; m++) {
        pid_t w[16];
        int n = e2e_children(managers[m], "godis-worker", w, 16);
        for (int i = 0; i < n; i++) kill(w[i], SIGKILL);
        killed += n;
    }
    fprintf(stderr, "e2e: killed %d workers\n", killed);
    assert_true(killed >= 2);
}

static int setup(void **state)
{
    (void)state;
    gd_log_init("itest", GD_LOG_WARN, 0, 2);
    e2e_c = e2e_client();
    if (!e2e_c || !e2e_install_crds(e2e_c)) return -1;
    e2e_kill_workers = kill_workers;
    snprintf(lease, sizeof lease, "godis-e2e-%d", (int)getpid());
    e2e_log_dir(logdir, sizeof logdir, "e2e");
    const char *kc = getenv("KUBECONFIG");
    for (int i = 0; i < 2; i++) {
        char log[512];
        snprintf(rundir[i], sizeof rundir[i], "/tmp/godis-e2e-%d-%d", (int)getpid(), i);
        snprintf(log, sizeof log, "%s/manager-%d.log", logdir, i);
        const char *argv[] = {"bin/godis-manager", "--kubeconfig", kc, "--leader-elect",
                              "--leader-elect-resource-name", lease,
                              "--leader-elect-resource-namespace", "default",
                              "--workers", "2", "--max-concurrent-reconciles", "4",
                              "--runtime-dir", rundir[i], "--health-probe-bind-address", "0",
                              "--metrics-bind-address", "0", "--log-level", "info", NULL};
        managers[i] = e2e_spawn(argv, log);
    }
    fprintf(stderr, "e2e logs in %s\n", logdir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < 2; i++) {
        int st = e2e_stop(managers[i], 15000);
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
            fprintf(stderr, "e2e: manager %d stopped with status 0x%x\n", i, st);
        e2e_remove_dir(rundir[i]);
    }
    k8s_delete_opts o;
    k8s_delete_opts_default(&o);
    k8s_delete(e2e_c, &K8S_RES_LEASES, "default", lease, &o, NULL);
    k8s_client_destroy(&e2e_c);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        E2E_SHARED_SCENARIOS,
        cmocka_unit_test(e2e_scenario_worker_killed_mid_scale),
        cmocka_unit_test(e2e_scenario_many),
    };
    return cmocka_run_group_tests_name("godis_e2e", tests, setup, teardown);
}
