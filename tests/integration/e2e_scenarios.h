/* e2e_scenarios.h — the GodisCluster end-to-end scenarios of issue 7, shared by the test
 * that runs the reconcilers in-process (itest_reconcile_direct) and the one that runs the
 * whole operator (itest_godis_e2e). Each uses its own namespace and cmocka assertions. */
#ifndef E2E_SCENARIOS_H
#define E2E_SCENARIOS_H
#include "k8s_client.h"

extern k8s_client *e2e_c;          /* set by the test binary's group setup */
extern int e2e_timeout_ms;          /* per convergence wait */

void e2e_scenario_create_scale(void **state);   /* 3 -> 6 -> 2, checked after every step */
void e2e_scenario_heal_godis(void **state);     /* Godis deleted by hand -> new id */
void e2e_scenario_heal_configmap(void **state); /* ConfigMap deleted -> rebuilt, no re-init */
void e2e_scenario_heal_children(void **state);  /* ReplicaSet, Service deleted -> restored; PVC -> member replaced */
void e2e_scenario_cordon(void **state);         /* member's node cordoned -> member moves */
void e2e_scenario_invalid(void **state);        /* invalid specs refused */
void e2e_scenario_many(void **state);           /* many clusters at once converge */



/* The scale is interrupted by SIGKILL of every worker right after the intent is recorded;
 * the restarted workers resume the recorded step. kill_workers is supplied by the test. */
extern void (*e2e_kill_workers)(void);
void e2e_scenario_worker_killed_mid_scale(void **state);

/* The scenarios every way of running the reconcilers must pass (a CMUnitTest initializer list). */
#define E2E_SHARED_SCENARIOS \
    cmocka_unit_test(e2e_scenario_invalid), \
    cmocka_unit_test(e2e_scenario_create_scale), \
    cmocka_unit_test(e2e_scenario_heal_godis), \
    cmocka_unit_test(e2e_scenario_heal_configmap), \
    cmocka_unit_test(e2e_scenario_heal_children), \
    cmocka_unit_test(e2e_scenario_cordon)
#endif
