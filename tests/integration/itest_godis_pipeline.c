/* The godis reconcilers behind the real pipeline, without a manager: one godis-informer
 * per kind and two standalone godis-worker processes splitting the shards (0-127 and
 * 128-255), each with MaxConcurrentReconciles 4 — the issue-7 scenarios against it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "e2e_lib.h"
#include "e2e_procs.h"
#include "e2e_scenarios.h"
#include "gd_log.h"

static pid_t informers[9], workers[2];   /* e2e_start_informers: the domain's 9 kinds */
static int ninformers;
static char rundir[256], logdir[256];

static int setup(void **state)
{
    (void)state;
    gd_log_init("itest", GD_LOG_WARN, 0, 2);
    e2e_c = e2e_client();
    if (!e2e_c || !e2e_install_crds(e2e_c)) return -1;
    snprintf(rundir, sizeof rundir, "/tmp/godis-itest-%d", (int)getpid());
    mkdir(rundir, 0700);
    e2e_log_dir(logdir, sizeof logdir, "pipeline");
    ninformers = e2e_start_informers(rundir, logdir, informers);
    const char *kc = getenv("KUBECONFIG");
    const char *shards[2] = {"0-127", "128-255"};
    for (int i = 0; i < 2; i++) {
        char log[512];
        snprintf(log, sizeof log, "%s/worker-%d.log", logdir, i);
        const char *argv[] = {"bin/godis-worker", "--runtime-dir", rundir, "--shards", shards[i],
                              "--max-concurrent-reconciles", "4", "--kubeconfig", kc,
                              "--reconciler-arg", "node-grace-ms=5000", "--log-level", "info", NULL};
        workers[i] = e2e_spawn(argv, log);
    }
    fprintf(stderr, "pipeline logs in %s\n", logdir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < 2; i++) e2e_stop(workers[i], 5000);
    for (int i = 0; i < ninformers; i++) e2e_stop(informers[i], 5000);
    e2e_remove_dir(rundir);
    k8s_client_destroy(&e2e_c);
    return 0;
}

int main(void)
{
    if (getenv("E2E_MANY") == NULL) setenv("E2E_MANY", "10", 1);   /* 50 run in itest_godis_e2e */
    const struct CMUnitTest tests[] = {
        E2E_SHARED_SCENARIOS,
        cmocka_unit_test(e2e_scenario_many),
    };
    return cmocka_run_group_tests_name("godis_pipeline", tests, setup, teardown);
}
