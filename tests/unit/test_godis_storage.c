/* Day-2 storage changes (issue 20.3): the expansion decisions of godis_storage.c (which PVC
 * grows, what is refused and why, what the StorageResized condition says) and the planner's
 * StorageClass change, simulated step by step on a small model of the members: every member
 * on the old class is replaced by a new id on the new class, add before remove, one change
 * at a time, started only at full strength, quorum held at every step, ids never reused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "godis_children.h"
#include "godis_plan.h"
#include "godis_storage.h"
#include "gd_json.h"
#include "gd_quantity.h"
#include "../support/godis_plan_world.h"

/* ---------- expansion decisions ---------- */

static cJSON *pvc(const char *cls, const char *request, const char *phase, const char *capacity)
{
    char buf[600];
    snprintf(buf, sizeof buf, "{\"metadata\":{\"name\":\"data-c-1\"},\"spec\":{\"storageClassName\":\"%s\","
             "\"resources\":{\"requests\":{\"storage\":\"%s\"}}},\"status\":{\"phase\":\"%s\"%s%s%s}}",
             cls, request, phase, capacity ? ",\"capacity\":{\"storage\":\"" : "",
             capacity ? capacity : "", capacity ? "\"}" : "");
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    return o;
}

static godis_vol_state state_of(const char *want, cJSON *p, const char *want_class)
{
    cJSON *w = cJSON_CreateString(want);
    godis_vol_state st = godis_volume_state(p, w, want_class);
    cJSON_Delete(w);
    cJSON_Delete(p);
    return st;
}

static void test_volume_state(void **state)
{
    (void)state;
    assert_int_equal(state_of("2Gi", NULL, NULL), GODIS_VOL_SKIP);                 /* no PVC yet */
    assert_int_equal(state_of("2Gi", pvc("std", "1Gi", "Bound", "1Gi"), NULL), GODIS_VOL_GROW);
    assert_int_equal(state_of("2Gi", pvc("std", "1Gi", "Pending", NULL), NULL), GODIS_VOL_UNBOUND);
    assert_int_equal(state_of("2Gi", pvc("std", "2Gi", "Bound", "1Gi"), NULL), GODIS_VOL_RESIZING);
    assert_int_equal(state_of("2Gi", pvc("std", "2Gi", "Bound", NULL), NULL), GODIS_VOL_RESIZING);
    /* the API server canonicalises quantities: 2048Mi is 2Gi */
    assert_int_equal(state_of("2048Mi", pvc("std", "2Gi", "Bound", "2Gi"), NULL), GODIS_VOL_OK);
    assert_int_equal(state_of("1Gi", pvc("std", "1Gi", "Bound", "5Gi"), NULL), GODIS_VOL_OK);
    assert_int_equal(state_of("512Mi", pvc("std", "1Gi", "Bound", "1Gi"), NULL), GODIS_VOL_SHRINK);
    /* a PVC of another class than the spec's is replaced, not expanded */
    assert_int_equal(state_of("2Gi", pvc("old", "1Gi", "Bound", "1Gi"), "new"), GODIS_VOL_SKIP);
    assert_int_equal(state_of("2Gi", pvc("new", "1Gi", "Bound", "1Gi"), "new"), GODIS_VOL_GROW);
    assert_int_equal(state_of("garbage", pvc("std", "1Gi", "Bound", "1Gi"), NULL), GODIS_VOL_SKIP);
    cJSON *deleting = pvc("std", "1Gi", "Bound", "1Gi");
    gd_json_set(deleting, "metadata.deletionTimestamp", cJSON_CreateString("2026-01-01T00:00:00Z"));
    assert_int_equal(state_of("2Gi", deleting, NULL), GODIS_VOL_SKIP);
    /* a size given as a number of bytes */
    cJSON *w = cJSON_CreateNumber(2147483648.0), *p = pvc("std", "2Gi", "Bound", "2Gi");
    assert_int_equal(godis_volume_state(p, w, NULL), GODIS_VOL_OK);
    cJSON_Delete(w);
    cJSON_Delete(p);
}

/* A size the CRD accepts as an integer (bytes) makes new members' claims of that size: an
 * integer read as "no size" would give them the 1Gi default, which the expansion would then
 * see as a shrink. */
static void test_integer_size(void **state)
{
    (void)state;
    cJSON *cluster = cJSON_Parse("{\"spec\":{\"storage\":{\"size\":536870912}}}");
    godis_child_spec sp = {.ns = "ns", .cluster = "c", .godis = "c-1", .godis_uid = "u", .id = 1};
    godis_child_spec_from_cluster(&sp, cluster);
    cJSON *p = godis_build_pvc(&sp);
    long double b = 0;
    assert_true(gd_quantity_parse(gd_json_path(p, "spec.resources.requests.storage"), &b));
    assert_true(b == 536870912.0L);
    gd_json_set(p, "status.phase", cJSON_CreateString("Bound"));
    gd_json_set(p, "status.capacity", cJSON_Parse("{\"storage\":\"512Mi\"}"));
    assert_int_equal(godis_volume_state(p, gd_json_path(cluster, "spec.storage.size"), NULL), GODIS_VOL_OK);
    cJSON_Delete(p);
    cJSON_Delete(cluster);
}

static void test_class_allows_expansion(void **state)
{
    (void)state;
    char why[300];
    cJSON *yes = cJSON_Parse("{\"metadata\":{\"name\":\"fast\"},\"allowVolumeExpansion\":true}");
    cJSON *no = cJSON_Parse("{\"metadata\":{\"name\":\"standard\"}}");
    cJSON *off = cJSON_Parse("{\"metadata\":{\"name\":\"standard\"},\"allowVolumeExpansion\":false}");
    assert_true(godis_class_allows_expansion(yes, "fast", why, sizeof why));
    assert_false(godis_class_allows_expansion(no, "standard", why, sizeof why));
    assert_non_null(strstr(why, "StorageClass standard does not allow volume expansion"));
    assert_false(godis_class_allows_expansion(off, "standard", why, sizeof why));
    assert_non_null(strstr(why, "allowVolumeExpansion"));
    assert_false(godis_class_allows_expansion(NULL, "gone", why, sizeof why));
    assert_non_null(strstr(why, "StorageClass gone does not exist"));
    assert_false(godis_class_allows_expansion(NULL, "", why, sizeof why));
    assert_non_null(strstr(why, "no StorageClass"));
    cJSON_Delete(yes);
    cJSON_Delete(no);
    cJSON_Delete(off);
}

static godis_vol_report rep(int64_t id, godis_vol_state st, bool refused, const char *have)
{
    godis_vol_report r = {.id = id, .state = st, .refused = refused};
    if (refused) snprintf(r.why, sizeof r.why, "StorageClass standard does not allow volume expansion");
    if (have) snprintf(r.have, sizeof r.have, "%s", have);
    return r;
}

static void test_storage_condition(void **state)
{
    (void)state;
    const char *reason;
    char msg[900];
    godis_vol_report done[] = {rep(1, GODIS_VOL_OK, false, NULL), rep(2, GODIS_VOL_OK, false, NULL)};
    assert_true(godis_storage_condition(done, 2, "2Gi", &reason, msg, sizeof msg));
    assert_string_equal(reason, "Resized");
    assert_non_null(strstr(msg, "2Gi"));

    godis_vol_report busy[] = {rep(1, GODIS_VOL_OK, false, NULL), rep(2, GODIS_VOL_RESIZING, false, "1Gi"),
                               rep(3, GODIS_VOL_UNBOUND, false, NULL), rep(4, GODIS_VOL_SKIP, false, NULL)};
    assert_false(godis_storage_condition(busy, 4, "2Gi", &reason, msg, sizeof msg));
    assert_string_equal(reason, "Resizing");
    assert_non_null(strstr(msg, "1 of 3 member volumes have 2Gi"));
    assert_non_null(strstr(msg, "member 2 (1Gi)"));
    assert_non_null(strstr(msg, "bound: member 3"));

    /* one refusal: nothing is changed, and the condition says which class and why */
    godis_vol_report refused[] = {rep(1, GODIS_VOL_GROW, true, NULL), rep(2, GODIS_VOL_GROW, true, NULL)};
    assert_false(godis_storage_condition(refused, 2, "2Gi", &reason, msg, sizeof msg));
    assert_string_equal(reason, "ExpansionNotAllowed");
    assert_non_null(strstr(msg, "StorageClass standard does not allow volume expansion"));
    assert_non_null(strstr(msg, "nothing was changed"));

    /* a shrink wins over everything: Kubernetes cannot do it */
    godis_vol_report shrink[] = {rep(1, GODIS_VOL_SHRINK, false, "2Gi"), rep(2, GODIS_VOL_GROW, true, NULL)};
    assert_false(godis_storage_condition(shrink, 2, "1Gi", &reason, msg, sizeof msg));
    assert_string_equal(reason, "ShrinkNotSupported");
    assert_non_null(strstr(msg, "member 1 (2Gi)"));
    assert_non_null(strstr(msg, "cannot shrink"));

    /* a tiny buffer is never overrun */
    char tiny[8];
    godis_storage_condition(busy, 4, "2Gi", &reason, tiny, sizeof tiny);
    assert_int_equal(strlen(tiny), sizeof tiny - 1);
}

/* ---------- wrong class, from the cache ---------- */

static const char *fake_class;

static const cJSON *fake_get(godis_env *e, const char *kind, const char *ns, const char *name)
{
    (void)e; (void)ns;
    if (strcmp(kind, "PersistentVolumeClaim") || strcmp(name, "data-c-1") || !fake_class) return NULL;
    return pvc(fake_class, "1Gi", "Bound", "1Gi");
}

static void test_wrong_class(void **state)
{
    (void)state;
    godis_env e = {.get = fake_get};
    cJSON *with = cJSON_Parse("{\"spec\":{\"storage\":{\"storageClassName\":\"fast\"}}}");
    cJSON *without = cJSON_Parse("{\"spec\":{\"storage\":{\"size\":\"1Gi\"}}}");
    cJSON *empty = cJSON_Parse("{\"spec\":{\"storage\":{\"storageClassName\":\"\"}}}");
    fake_class = "standard";
    assert_true(godis_storage_wrong_class(&e, with, "ns", "c-1"));
    assert_false(godis_storage_wrong_class(&e, without, "ns", "c-1"));   /* unset moves nobody */
    assert_false(godis_storage_wrong_class(&e, empty, "ns", "c-1"));
    assert_false(godis_storage_wrong_class(&e, with, "ns", "c-2"));      /* no PVC yet */
    fake_class = "fast";
    assert_false(godis_storage_wrong_class(&e, with, "ns", "c-1"));
    cJSON_Delete(with);
    cJSON_Delete(without);
    cJSON_Delete(empty);
}

/* ---------- the class change, on the planner's world model ---------- */

/* tests/support/godis_plan_world.c performs the steps and asserts the membership rules;
 * these are the class change's own, checked in the state each step was chosen in. */
static void class_checks(world *w, const godis_step *s)
{
    godis_view *v = &w->v;
    assert_true(raft_ready(w) >= raft_size(w) / 2 + 1);              /* quorum at every step */
    if (s->kind == GP_RECORD_SCALE_OUT && !strcmp(s->reason, "StorageClassChanged")) {
        /* only at full strength: every member Ready, nothing else in flight */
        assert_int_equal(raft_ready(w), v->nmembers);
        assert_int_equal(v->nmembers, v->desired);
    }
    if (s->kind == GP_RECORD_SCALE_IN && !strcmp(s->reason, "StorageClassChanged"))
        assert_true(w->cls[s->id] != w->want_cls);
}

/* n members on the default class, converged, the class checks on. */
static void class_world(world *w, int n)
{
    world_new(w, n);
    run_until_converged(w);
    w->check = class_checks;
}

static void test_class_change_replaces_one_at_a_time(void **state)
{
    (void)state;
    for (int n = 2; n <= 5; n++) {
        world w;
        class_world(&w, n);
        run_until_converged(&w);
        assert_int_equal(w.scaled_in, 0);                 /* same class: nothing moves */
        w.want_cls = 'n';
        assert_int_equal(apply(&w), GP_RECORD_SCALE_OUT); /* add before remove */
        assert_string_equal(w.last.reason, "StorageClassChanged");
        run_until_converged(&w);
        assert_consistent(&w, n);
        assert_int_equal(w.scaled_in, n);
        assert_int_equal(w.max_raft, n + 1);              /* never two replaced at once */
        for (int i = 0; i < w.v.nmembers; i++) {
            int64_t id = w.v.members[i];
            assert_true(id > n);                          /* a fresh id for every member */
            assert_int_equal(w.cls[id], 'n');
        }
        assert_int_equal(w.v.next_id, 2 * n + 1);
    }
}

static void test_class_change_waits_for_full_strength(void **state)
{
    (void)state;
    world w;
    class_world(&w, 3);
    w.want_cls = 'n';
    w.ready_in[2] = 1000;                                  /* member 2 is not Ready */
    w.check = NULL;                                        /* no quorum to spare: checked here */
    assert_int_equal(apply(&w), GP_WAIT);
    assert_string_equal(w.last.reason, "WaitingForReady");
    assert_false(w.v.scale_out_id);
    w.ready_in[2] = 0;
    w.check = class_checks;
    assert_int_equal(apply(&w), GP_RECORD_SCALE_OUT);
    /* a single member cannot keep quorum while its replacement starts: it says so */
    world one;
    class_world(&one, 1);
    one.want_cls = 'n';
    assert_int_equal(apply(&one), GP_WAIT);
    assert_true(one.last.warn);
    assert_string_equal(one.last.reason, "CannotMoveMember");
    assert_non_null(strstr(one.last.why, "scale the cluster to 3 first"));
    /* paused: no replacement starts */
    world p;
    class_world(&p, 3);
    p.v.paused = true;
    p.want_cls = 'n';
    assert_int_equal(apply(&p), GP_NOTHING);
}

/* A scale-in takes members on the old class first. */
static void test_class_change_order(void **state)
{
    (void)state;
    world w;
    class_world(&w, 4);
    w.want_cls = 'n';
    w.cls[3] = 'n';
    w.v.desired = 3;
    assert_int_equal(apply(&w), GP_RECORD_SCALE_IN);
    assert_int_equal(w.last.id, 4);                        /* old class, highest id */
    run_until_converged(&w);
    assert_consistent(&w, 3);
    for (int i = 0; i < w.v.nmembers; i++) assert_int_equal(w.cls[w.v.members[i]], 'n');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_volume_state),
        cmocka_unit_test(test_integer_size),
        cmocka_unit_test(test_class_allows_expansion),
        cmocka_unit_test(test_storage_condition),
        cmocka_unit_test(test_wrong_class),
        cmocka_unit_test(test_class_change_replaces_one_at_a_time),
        cmocka_unit_test(test_class_change_waits_for_full_strength),
        cmocka_unit_test(test_class_change_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
