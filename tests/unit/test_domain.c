/* test_domain.c — the godis domain's table (common/godis/godis_domain.c) is complete and
 * consistent, so the framework sites that read it (manager informers, informer label
 * selectors, shard rule, worker subscriptions, mapping, cache indexes) need no godis names.
 *
 * Behaviour of the table-driven sites is tested where they live (test_mapping, test_shard_agree,
 * test_manager_config, test_cache); this file checks the table itself. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "godis_domain.h"
#include "k8s_client.h"
#include "worker.h"

static bool is_controller(const char *c)
{
    return c && (strcmp(c, GODIS_CTRL_CLUSTER) == 0 || strcmp(c, GODIS_CTRL_MEMBER) == 0);
}

/* Every row names a kind the Kubernetes client can list, and every wake a controller of the
 * "godis" reconciler set with what its rule needs. */
static void test_rows_are_complete(void **state)
{
    const gd_domain *d = gd_domain_get();
    assert_string_equal(d->name, "godis");
    assert_true(d->nkinds > 0 && d->nkinds <= GD_DOMAIN_MAX_KINDS);
    assert_true(d->nkinds <= WORKER_MAX_KINDS);
    for (int i = 0; i < d->nkinds; i++) {
        const gd_watched_kind *k = &d->kinds[i];
        assert_non_null(k8s_resource_lookup(k->kind));
        assert_ptr_equal(gd_domain_kind(d, k->kind), k);
        /* A kind that wakes nothing is only read by the reconcilers: a cluster-scoped object
         * any shard may need (PersistentVolume). */
        if (k->wakes[0].rule == GD_WAKE_NONE)
            assert_int_equal(k->place, GD_PLACE_BROADCAST);
        for (int w = 0; w < GD_DOMAIN_MAX_WAKES && k->wakes[w].rule != GD_WAKE_NONE; w++) {
            const gd_wake *wk = &k->wakes[w];
            assert_true(is_controller(wk->controller));
            if (wk->rule == GD_WAKE_OWNER)
                assert_non_null(gd_domain_kind(d, wk->owner_kind));
            if (wk->rule != GD_WAKE_SELF)
                assert_non_null(wk->label);
        }
        /* A kind listed by label must carry the label that places it on a shard. */
        if (k->label_selected)
            assert_int_equal(k->place, GD_PLACE_OWNED);
    }
    assert_null(gd_domain_kind(d, "Secret"));
    assert_null(gd_domain_kind(d, NULL));
}

static void test_cluster_and_member_kinds(void **state)
{
    const gd_domain *d = gd_domain_get();
    const gd_watched_kind *c = gd_domain_kind(d, d->cluster_kind);
    const gd_watched_kind *m = gd_domain_kind(d, d->member_kind);
    assert_non_null(c);
    assert_non_null(m);
    assert_int_equal(c->place, GD_PLACE_CLUSTER);
    assert_int_equal(c->wakes[0].rule, GD_WAKE_SELF);
    assert_string_equal(c->wakes[0].controller, GODIS_CTRL_CLUSTER);
    assert_int_equal(m->wakes[0].rule, GD_WAKE_SELF);
    assert_string_equal(m->wakes[0].controller, d->member_controller);
}

static void test_kind_list(void **state)
{
    const gd_domain *d = gd_domain_get();
    char buf[256], small[8];
    int n = gd_domain_kind_list(d, buf, sizeof buf);
    assert_int_equal(n, (int)strlen(buf));
    assert_string_equal(buf,
        "GodisCluster,Godis,ConfigMap,ReplicaSet,Service,PersistentVolumeClaim,Pod,Node,"
        "PersistentVolume");
    assert_int_equal(gd_domain_kind_list(d, small, sizeof small), -1);
    assert_int_equal(gd_domain_kind_list(d, NULL, 4), -1);
}

static void test_member_cluster_len(void **state)
{
    assert_int_equal(gd_domain_member_cluster_len("web-3"), 3);
    assert_int_equal(gd_domain_member_cluster_len("a-b-12"), 3);
    assert_int_equal(gd_domain_member_cluster_len("web"), 0);
    assert_int_equal(gd_domain_member_cluster_len("web-"), 0);
    assert_int_equal(gd_domain_member_cluster_len("-3"), 0);
    assert_int_equal(gd_domain_member_cluster_len("web-3a"), 0);
    assert_int_equal(gd_domain_member_cluster_len(NULL), 0);
}

/* The worker loads children before parents: the endpoints from a runtime directory are the
 * table's kinds in reverse. */
static void test_worker_loads_children_first(void **state)
{
    const gd_domain *d = gd_domain_get();
    worker_opts o;
    worker_opts_default(&o);
    assert_string_equal(o.reconciler, d->name);
    assert_int_equal(worker_endpoints_from_dir(&o, "/run/x"), GD_OK);
    assert_int_equal(o.ninformers, d->nkinds);
    for (int i = 0; i < d->nkinds; i++)
        assert_string_equal(o.informers[i].kind, d->kinds[d->nkinds - 1 - i].kind);
    assert_string_equal(o.informers[0].kind, "PersistentVolume");
    assert_string_equal(o.informers[0].pub, "ipc:///run/x/PersistentVolume.pub");
    char why[128] = "";
    assert_int_equal(worker_endpoints_parse(&o, "Secret=ipc://a,ipc://b", why, sizeof why),
                     GD_ERR_CONFIG);
    assert_non_null(strstr(why, "unknown kind"));
    assert_int_equal(worker_endpoints_parse(&o, "Pod=ipc://a,ipc://b", why, sizeof why), GD_OK);
}

/* --queue-rate-limits priority=0|1: the switch the resync benchmark flips (default on). */
static void test_queue_priority_switch(void **state)
{
    (void)state;
    worker_opts o;
    char why[128] = "";
    worker_opts_default(&o);
    assert_false(o.queue_no_priority);
    assert_int_equal(worker_rate_limits_parse(&o, "qps=5,priority=0", why, sizeof why), GD_OK);
    assert_true(o.queue_no_priority);
    assert_int_equal(worker_rate_limits_parse(&o, "priority=1", why, sizeof why), GD_OK);
    assert_false(o.queue_no_priority);
    assert_int_equal(worker_rate_limits_parse(&o, "priority=2", why, sizeof why), GD_ERR_CONFIG);
    assert_non_null(strstr(why, "priority=0|1"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_are_complete),
        cmocka_unit_test(test_cluster_and_member_kinds),
        cmocka_unit_test(test_kind_list),
        cmocka_unit_test(test_member_cluster_len),
        cmocka_unit_test(test_worker_loads_children_first),
        cmocka_unit_test(test_queue_priority_switch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
