/* The godis reconcilers on their own, against the real control plane: a small in-process
 * loop reconciles every GodisCluster and Godis it lists from the API server (no cache, no
 * informer, no queue), and the issue-7 scenarios run against it. It checks the reconcile
 * rules in isolation, so a failure here is the reconcilers' and not the pipeline's. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>
#include "e2e_lib.h"
#include "e2e_scenarios.h"
#include "gd_json.h"
#include "gd_log.h"
#include "gd_time.h"
#include "godis_plan.c"
#include "godis_children.c"
#include "godis_write.c"
#include "godis_status.c"
#include "godis_status_check.c"
#include "godis_input.c"
#include "godis_place.c"
#include "godis_storage.c"
#include "godis_rollout.c"
#include "godis_slots.c"
#include "godis_metrics.c"
#include "godis_cluster_observe.c"
#include "godis_reconcile_cluster.c"
#include "godis_reconcile_godis.c"
#include "godis_retire.c"
#include "../support/godis_env_api.c"

static volatile int loop_stop;
static pthread_t loop_thread;
static k8s_client *loop_client;

static void reconcile_all(godis_env *env, const k8s_resource *r,
                          godis_result (*fn)(godis_env *, const char *))
{
    cJSON *list = NULL;
    k8s_list_opts lo = {0};
    if (k8s_list(env->client, r, NULL, &lo, &list, NULL) != GD_OK) return;
    const cJSON *it;
    cJSON_ArrayForEach(it, gd_json_path(list, "items")) {
        char key[600];
        snprintf(key, sizeof key, "%s/%s", gd_meta_namespace(it), gd_meta_name(it));
        for (int i = 0; i < 8 && !loop_stop; i++) {   /* follow requeues a few steps */
            godis_result res = fn(env, key);
            if (res.kind != GODIS_REQUEUE) break;
        }
    }
    cJSON_Delete(list);
}

static void *loop_main(void *arg)
{
    (void)arg;
    godis_env env;
    godis_env_api_init(&env, loop_client);
    env.node_notready_grace_ms = 5000;
    while (!loop_stop) {
        reconcile_all(&env, &K8S_RES_GODISCLUSTERS, godis_reconcile_cluster);
        reconcile_all(&env, &K8S_RES_GODISES, godis_reconcile_godis);
        gd_sleep_ms(100);
    }
    return NULL;
}

static int setup(void **state)
{
    (void)state;
    gd_log_init("itest", getenv("E2E_DEBUG") ? GD_LOG_DEBUG : GD_LOG_WARN, 0, 2);
    e2e_c = e2e_client();
    loop_client = e2e_client();
    if (!e2e_c || !loop_client || !e2e_install_crds(e2e_c)) return -1;
    return pthread_create(&loop_thread, NULL, loop_main, NULL);
}

static int teardown(void **state)
{
    (void)state;
    loop_stop = 1;
    pthread_join(loop_thread, NULL);
    k8s_client_destroy(&e2e_c);
    k8s_client_destroy(&loop_client);
    return 0;
}

int main(void)
{
    if (getenv("E2E_MANY") == NULL) setenv("E2E_MANY", "10", 1);
    const struct CMUnitTest tests[] = {
        E2E_SHARED_SCENARIOS,
        cmocka_unit_test(e2e_scenario_many),
    };
    return cmocka_run_group_tests_name("reconcile_direct", tests, setup, teardown);
}
