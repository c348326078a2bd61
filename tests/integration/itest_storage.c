/* itest_storage — day-2 storage changes (issue 20.3) on the local control plane: the real
 * API server (PersistentVolumeClaimResize admission), kube-controller-manager's host-path
 * provisioner, the node agent as the kubelet (and as the stand-in external-resizer the
 * host-path volumes lack, tools/node-agent/agent_resize.c), the stand-in godis, godis-manager.
 *
 * test_size_expansion_allowed: a 3-member cluster on a StorageClass with
 * allowVolumeExpansion; spec.storage.size 64Mi -> 128Mi. Every member's PVC is patched in
 * place (same uid, same member ids, same pods), the condition StorageResized goes False
 * (Resizing) and back True once every PVC's status.capacity is 128Mi; an Event
 * VolumeExpanding per member; the data is still there.
 *
 * test_size_expansion_refused: on a class without allowVolumeExpansion, 64Mi -> 128Mi is
 * refused: StorageResized False, reason ExpansionNotAllowed naming the class, a Warning
 * Event, and no PVC asks for more; a smaller size (32Mi) is refused the same way
 * (ShrinkNotSupported).
 *
 * test_storage_class_change_replaces_members: a 3-member cluster with data moves to another
 * StorageClass: every member is replaced by a new id on a new PVC of the new class, one at a
 * time (a watch of the status sees members change by one id at a time, ids never reused),
 * the RESP sampler sees a quorum at every sample and at most one member away; the data is
 * readable on every new member; the old PVCs go with their members (reclaimPolicy Delete). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "e2e_lib.h"
#include "e2e_members.h"
#include "../support/test_wait.h"
#include "e2e_operator.h"
#include "e2e_procs.h"
#include "e2e_sampler.h"
#include "e2e_storage.h"
#include "e2e_webhook.h"
#include "gd_json.h"
#include "gd_log.h"
#include "godis_client.h"

static k8s_client *c;
static pid_t manager;
static char ns[128], rundir[256], logdir[256], mgr_log[512];
static char sc_grow[64], sc_fixed[64];     /* StorageClasses made for this run */

/* ---------- helpers ---------- */

static void write_data(const char *cluster, const char *prefix)
{
    e2e_member m[8];
    assert_true(e2e_members_now(c, ns, cluster, m, 8) > 0);
    godis_client *g = e2e_member_dial(m[0].ip);
    for (int i = 0; i < 10; i++) {
        char k[48], v[48];
        snprintf(k, sizeof k, "%s-key-%d", prefix, i);
        snprintf(v, sizeof v, "%s-value-%d", prefix, i);
        assert_int_equal(godis_set(g, k, v), GD_OK);
    }
    godis_client_destroy(&g);
}

/* The first key of prefix's 10 that member m does not answer with its value, or -1. */
static int missing_key(const e2e_member *m, const char *prefix)
{
    godis_client *g = e2e_member_dial(m->ip);
    int missing = -1;
    for (int i = 0; i < 10 && missing < 0; i++) {
        char k[48], want[48], *v = NULL;
        snprintf(k, sizeof k, "%s-key-%d", prefix, i);
        snprintf(want, sizeof want, "%s-value-%d", prefix, i);
        if (!(g && godis_get(g, k, &v) == GD_OK && v && !strcmp(v, want))) missing = i;
        free(v);
    }
    godis_client_destroy(&g);
    return missing;
}

/* Every live member answers every key (replicated to it). A member that joined last may
 * still be catching up on the leader's log when the cluster reports converged (a follower
 * applies what it has; fresh-machine check on e341fca: member 6 lacked a key right after a
 * class change), so each member gets up to 20 s; a member that never has the data fails. */
static void check_data(const char *cluster, const char *prefix, int want_members)
{
    e2e_member m[8];
    assert_int_equal(e2e_members_now(c, ns, cluster, m, 8), want_members);
    for (int j = 0; j < want_members; j++) {
        int missing = 0;
        WAIT_UNTIL((missing = missing_key(&m[j], prefix)) < 0, 20000);
        if (missing >= 0) fail_msg("member %lld does not have %s-key-%d after 20 s", (long long)m[j].id, prefix, missing);
    }
}

typedef struct {
    char name[128], uid[64], cls[64], request[32], capacity[32];
    bool fs_pending, deleting;
} claim;

static int claims(const char *cluster, claim *out, int cap)
{
    char sel[96];
    snprintf(sel, sizeof sel, "cluster-name=%s", cluster);
    k8s_list_opts lo = {.label_selector = sel};
    cJSON *list = NULL;
    if (k8s_list(c, &K8S_RES_PVCS, ns, &lo, &list, NULL) != GD_OK) return -1;
    int n = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, gd_json_path(list, "items")) {
        if (n >= cap) break;
        claim *q = &out[n++];
        memset(q, 0, sizeof *q);
        snprintf(q->name, sizeof q->name, "%s", gd_meta_name(p));
        snprintf(q->uid, sizeof q->uid, "%s", gd_meta_uid(p));
        snprintf(q->cls, sizeof q->cls, "%s", gd_json_str_or(p, "spec.storageClassName", ""));
        snprintf(q->request, sizeof q->request, "%s", gd_json_str_or(p, "spec.resources.requests.storage", ""));
        snprintf(q->capacity, sizeof q->capacity, "%s", gd_json_str_or(p, "status.capacity.storage", ""));
        q->deleting = gd_meta_deleting(p);
        const cJSON *cd;
        cJSON_ArrayForEach(cd, gd_json_path(p, "status.conditions"))
            q->fs_pending |= !strcmp(gd_json_str_or(cd, "type", ""), "FileSystemResizePending");
    }
    cJSON_Delete(list);
    return n;
}

static const cJSON *condition(const cJSON *o, const char *type)
{
    const cJSON *cd;
    cJSON_ArrayForEach(cd, gd_json_path(o, "status.conditions"))
        if (!strcmp(gd_json_str_or(cd, "type", ""), type)) return cd;
    return NULL;
}

typedef struct {
    const char *status, *reason, *message_has;
    bool saw_resizing;          /* StorageResized False/Resizing seen on the way */
    char message[600];
} storage_cond;

static bool storage_cond_is(const char *type, const cJSON *o, void *arg)
{
    (void)type;
    storage_cond *w = arg;
    const cJSON *cd = condition(o, "StorageResized");
    if (!cd) return false;
    const char *reason = gd_json_str_or(cd, "reason", "");
    w->saw_resizing |= !strcmp(reason, "Resizing");
    snprintf(w->message, sizeof w->message, "%s", gd_json_str_or(cd, "message", ""));
    return !strcmp(gd_json_str_or(cd, "status", ""), w->status) && !strcmp(reason, w->reason) &&
           (!w->message_has || strstr(w->message, w->message_has));
}

static int count_events(const char *reason, const char *type)
{
    cJSON *list = NULL;
    if (k8s_list(c, &K8S_RES_EVENTS, ns, NULL, &list, NULL) != GD_OK) return -1;
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, gd_json_path(list, "items"))
        n += !strcmp(gd_json_str_or(e, "reason", ""), reason) &&
             (!type || !strcmp(gd_json_str_or(e, "type", ""), type));
    cJSON_Delete(list);
    return n;
}

static bool any_event(const char *type, const cJSON *o, void *arg)
{
    (void)type, (void)arg;
    return !strcmp(gd_json_str_or(o, "type", ""), "Warning");
}

/* A Warning Event with this reason (it follows the status write that carries the condition). */
static bool wait_warning(const char *reason)
{
    char field[96];
    snprintf(field, sizeof field, "reason=%s", reason);
    return e2e_watch_until(c, &K8S_RES_EVENTS, ns, NULL, field, any_event, NULL, 30000);
}

static void patch_spec(const char *cluster, const char *spec_json)
{
    char body[400];
    snprintf(body, sizeof body, "{\"spec\":%s}", spec_json);
    assert_int_equal(k8s_patch(c, &K8S_RES_GODISCLUSTERS, ns, cluster, K8S_PATCH_MERGE, body, NULL,
                               NULL, NULL), GD_OK);
}

static bool wait_storage(const char *cluster, storage_cond *w, int timeout_ms)
{
    char field[160];
    snprintf(field, sizeof field, "metadata.name=%s", cluster);
    bool ok = e2e_watch_until(c, &K8S_RES_GODISCLUSTERS, ns, NULL, field, storage_cond_is, w, timeout_ms);
    if (!ok) fprintf(stderr, "storage: StorageResized never %s/%s; last message: %s\n", w->status,
                     w->reason, w->message);
    return ok;
}

/* ---------- setup ---------- */

static int setup(void **state)
{
    (void)state;
    gd_log_init("itest", GD_LOG_WARN, 0, 2);
    c = e2e_client();
    if (!c || !e2e_install_crds(c) || !e2e_ns_create(c, "storage", ns, sizeof ns)) return -1;
    snprintf(sc_grow, sizeof sc_grow, "itest-expandable-%d", (int)getpid());
    snprintf(sc_fixed, sizeof sc_fixed, "itest-fixed-%d", (int)getpid());
    if (!e2e_storage_class_create(c, sc_grow, "kubernetes.io/host-path", "Delete", true) ||
        !e2e_storage_class_create(c, sc_fixed, "kubernetes.io/host-path", "Delete", false))
        return -1;
    e2e_log_dir(logdir, sizeof logdir, "storage");
    snprintf(rundir, sizeof rundir, "/tmp/godis-itest-storage-%d", (int)getpid());
    snprintf(mgr_log, sizeof mgr_log, "%s/manager.log", logdir);
    manager = e2e_start_manager(rundir, mgr_log, 2, false, NULL, 0);
    fprintf(stderr, "storage: logs in %s\n", logdir);
    return manager > 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    e2e_stop(manager, 15000);
    e2e_ns_delete(c, ns);
    k8s_delete(c, &K8S_RES_STORAGECLASSES, NULL, sc_grow, NULL, NULL);
    k8s_delete(c, &K8S_RES_STORAGECLASSES, NULL, sc_fixed, NULL, NULL);
    e2e_remove_dir(rundir);
    k8s_client_destroy(&c);
    return 0;
}

/* ---------- tests ---------- */

static void test_size_expansion_allowed(void **state)
{
    (void)state;
    char spec[300];
    snprintf(spec, sizeof spec, "{\"replicas\":3,\"storage\":{\"size\":\"64Mi\",\"storageClassName\":\"%s\"}}", sc_grow);
    assert_true(e2e_cluster_create_spec(c, ns, "grow", spec));
    assert_true(e2e_wait_converged(c, ns, "grow", 3, 180000));
    storage_cond at64 = {.status = "True", .reason = "Resized", .message_has = "64Mi"};
    assert_true(wait_storage("grow", &at64, 60000));
    write_data("grow", "grow");
    claim before[8];
    assert_int_equal(claims("grow", before, 8), 3);
    e2e_member mb[8];
    assert_int_equal(e2e_members_now(c, ns, "grow", mb, 8), 3);

    int64_t t0 = e2e_now_ms();
    patch_spec("grow", "{\"storage\":{\"size\":\"128Mi\"}}");
    storage_cond at128 = {.status = "True", .reason = "Resized", .message_has = "128Mi"};
    assert_true(wait_storage("grow", &at128, 120000));
    fprintf(stderr, "storage-figure: expand 3 PVCs 64Mi -> 128Mi in %lld ms (Resizing seen: %d)\n",
            (long long)(e2e_now_ms() - t0), at128.saw_resizing);
    assert_true(at128.saw_resizing);             /* progress showed until capacity came */

    claim after[8];
    assert_int_equal(claims("grow", after, 8), 3);
    for (int i = 0; i < 3; i++) {
        bool same = false;
        for (int j = 0; j < 3; j++) same |= !strcmp(after[i].uid, before[j].uid);
        assert_true(same);                        /* expanded in place, not replaced */
        assert_string_equal(after[i].request, "128Mi");
        assert_string_equal(after[i].capacity, "128Mi");
        assert_false(after[i].fs_pending);
    }
    e2e_member ma[8];
    assert_int_equal(e2e_members_now(c, ns, "grow", ma, 8), 3);
    for (int i = 0; i < 3; i++) {
        bool same = false;
        for (int j = 0; j < 3; j++) same |= ma[i].id == mb[j].id && !strcmp(ma[i].pod_uid, mb[j].pod_uid);
        assert_true(same);                        /* same members, same pods: no restart */
    }
    assert_int_equal(count_events("VolumeExpanding", "Normal"), 3);
    check_data("grow", "grow", 3);
    assert_true(e2e_wait_converged(c, ns, "grow", 3, 30000));
}

static void test_size_expansion_refused(void **state)
{
    (void)state;
    char spec[300];
    snprintf(spec, sizeof spec, "{\"replicas\":3,\"storage\":{\"size\":\"64Mi\",\"storageClassName\":\"%s\"}}", sc_fixed);
    assert_true(e2e_cluster_create_spec(c, ns, "fixed", spec));
    assert_true(e2e_wait_converged(c, ns, "fixed", 3, 180000));
    storage_cond at64 = {.status = "True", .reason = "Resized"};
    assert_true(wait_storage("fixed", &at64, 60000));

    patch_spec("fixed", "{\"storage\":{\"size\":\"128Mi\"}}");
    storage_cond refused = {.status = "False", .reason = "ExpansionNotAllowed",
                            .message_has = "does not allow volume expansion"};
    assert_true(wait_storage("fixed", &refused, 60000));
    fprintf(stderr, "storage: refused: %s\n", refused.message);
    assert_non_null(strstr(refused.message, sc_fixed));
    assert_true(wait_warning("ExpansionNotAllowed"));
    claim q[8];
    assert_int_equal(claims("fixed", q, 8), 3);
    for (int i = 0; i < 3; i++) assert_string_equal(q[i].request, "64Mi");   /* nothing patched */

    patch_spec("fixed", "{\"storage\":{\"size\":\"32Mi\"}}");
    storage_cond shrink = {.status = "False", .reason = "ShrinkNotSupported", .message_has = "cannot shrink"};
    assert_true(wait_storage("fixed", &shrink, 60000));
    assert_true(wait_warning("ShrinkNotSupported"));
    assert_int_equal(claims("fixed", q, 8), 3);
    for (int i = 0; i < 3; i++) assert_string_equal(q[i].request, "64Mi");
    /* back to the size the volumes have: the condition clears */
    patch_spec("fixed", "{\"storage\":{\"size\":\"64Mi\"}}");
    storage_cond back = {.status = "True", .reason = "Resized"};
    assert_true(wait_storage("fixed", &back, 60000));
    assert_true(e2e_wait_converged(c, ns, "fixed", 3, 30000));
}

static bool all_on_class(const char *cluster, const char *cls, int want)
{
    claim q[16];
    int n = claims(cluster, q, 16), live = 0;
    for (int i = 0; i < n; i++) {
        if (q[i].deleting) continue;
        if (strcmp(q[i].cls, cls)) return false;
        live++;
    }
    return live == want;
}

static void test_storage_class_change_replaces_members(void **state)
{
    (void)state;
    char spec[300];
    snprintf(spec, sizeof spec, "{\"replicas\":3,\"storage\":{\"storageClassName\":\"%s\"}}", sc_fixed);
    assert_true(e2e_cluster_create_spec(c, ns, "mover", spec));
    assert_true(e2e_wait_converged(c, ns, "mover", 3, 180000));
    write_data("mover", "mover");
    cJSON *gc = e2e_cluster_get(c, ns, "mover");
    int64_t before[8];
    int nb = e2e_status_members(gc, before, 8);
    cJSON_Delete(gc);
    assert_int_equal(nb, 3);

    e2e_history h;
    assert_true(e2e_history_start(&h, c, ns, "mover"));
    e2e_sampler s;
    assert_true(e2e_sampler_start(&s, ns, "mover"));
    int64_t t0 = e2e_now_ms();
    char patch[200];
    snprintf(patch, sizeof patch, "{\"storage\":{\"storageClassName\":\"%s\"}}", sc_grow);
    patch_spec("mover", patch);
    bool moved = false;
    for (int64_t end = e2e_now_ms() + 300000; !moved && e2e_now_ms() < end;) {
        gc = e2e_cluster_get(c, ns, "mover");
        int64_t now[8];
        int n = gc ? e2e_status_members(gc, now, 8) : 0;
        bool fresh = n == 3;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < nb; j++) fresh &= now[i] != before[j];
        cJSON_Delete(gc);
        moved = fresh && all_on_class("mover", sc_grow, 3);
        if (!moved) usleep(200 * 1000);           /* poll interval of a deadline loop */
    }
    assert_true(e2e_wait_converged(c, ns, "mover", 3, 120000));
    int64_t ms = e2e_now_ms() - t0;
    e2e_sampler_stop(&s, "class-change");
    bool history_ok = e2e_history_stop(&h);
    fprintf(stderr, "storage-figure: class change of 3 members in %lld ms, %d samples, "
            "without_quorum=%d max_unavailable=%d transitions=%d %s\n", (long long)ms, s.samples,
            s.no_quorum, s.max_unavailable, h.transitions, h.violation);
    assert_true(moved);
    assert_true(history_ok);                      /* one id at a time, never reused */
    assert_int_equal(s.no_quorum, 0);
    assert_true(s.max_unavailable <= 1);
    gc = e2e_cluster_get(c, ns, "mover");
    int64_t after[8];
    assert_int_equal(e2e_status_members(gc, after, 8), 3);
    for (int i = 0; i < 3; i++) assert_true(after[i] > 3 && after[i] <= 6);   /* 4, 5, 6 */
    assert_int_equal(gd_json_int_or(gc, "status.nextID", 0), 7);
    cJSON_Delete(gc);
    /* an Event per member added and per member removed */
    assert_int_equal(count_events("StorageClassChanged", NULL), 6);
    check_data("mover", "mover", 3);
    /* (the last forget is committed when the leader answers it; a follower applies it a
     * moment later: member 6 still listed 1 right after the status said [4,5,6]) */
    assert_true(e2e_wait_consistent(c, ns, "mover", 30000));
    for (int j = 0; j < nb; j++) {                /* the old volumes went with their members */
        char name[64];
        snprintf(name, sizeof name, "data-mover-%lld", (long long)before[j]);
        assert_true(e2e_wait_gone(c, &K8S_RES_PVCS, ns, name, 60000));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_size_expansion_allowed),
        cmocka_unit_test(test_size_expansion_refused),
        cmocka_unit_test(test_storage_class_change_replaces_members),
    };
    return cmocka_run_group_tests_name("itest_storage", tests, setup, teardown);
}
