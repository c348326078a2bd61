/* itest_rollout — day-2 changes roll out one member at a time (issue 20), on the local
 * control plane with the real stand-in (tools/godis-standin: leader election, membership and
 * data replicated between members, a quorum needed for writes) and godis-manager.
 *
 * test_image_change_rolls_one_member_at_a_time: a 3-member cluster with data; spec.image
 * changes to another tag. A sampler talks RESP to the members every 100 ms the whole time
 * (a majority of the Raft membership answers at every sample, at most one member away); a
 * watch on the GodisCluster sees every status the API server stored: the member being
 * replaced (status.rollout.member) changes one member at a time, each member once, no
 * membership change meanwhile. At the end: the same member ids, every pod new and on the new
 * image, every PVC the same, the data readable on every member, an Event per member
 * replaced and updated, updatedReplicas == readyReplicas == 3, currentRevision ==
 * updateRevision; kubectl (Debian's, tools/kubectl-debian) shows the Updated and Rolling
 * columns — mid-rollout the member in progress, at the end 3 updated.
 *
 * test_restart_with_same_rendering_rolls_nothing (point 7): the manager restarted with a
 * rendering that did not change, then a scale 3 -> 4 (proof that it reconciles the cluster):
 * the API server's audit log shows no update of the existing members' ReplicaSets and no
 * pod deleted, and the revision stays.
 *
 * test_bad_image_stops_and_fix_resumes: an image no node can run (ErrImagePull) stops the
 * rollout at its first member — Progressing False, RolloutStuck, an Event — never a second
 * member down; the spec fixed, that member comes back and the rollout ends.
 *
 * test_scale_during_rollout: a scale 4 -> 5 asked for while a member is being replaced is
 * never recorded while a member is in progress (the watch sees every state), and both the
 * scale and the rollout complete with the quorum kept. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "audit_log.h"
#include "e2e_lib.h"
#include "e2e_members.h"
#include "e2e_operator.h"
#include "e2e_procs.h"
#include "e2e_sampler.h"
#include "e2e_webhook.h"
#include "gd_json.h"
#include "gd_log.h"
#include "godis_client.h"

#define CLUSTER "rollimg"
#define NEW_IMAGE "kbzjung359/godis:v2"
static k8s_client *c;
static pid_t manager;
static char ns[128], rundir[256], logdir[256], mgr_log[512];

/* ---------- kubectl ---------- */

/* Runs Debian's kubectl get godisclusters in ns; its output into out. */
static int kubectl_get(char *out, size_t cap)
{
    char log[600];
    snprintf(log, sizeof log, "%s/kubectl-get.txt", logdir);
    unlink(log);
    const char *argv[] = {"tools/kubectl-debian", "--kubeconfig", getenv("KUBECONFIG"), "get",
                          "godisclusters", "-n", ns, NULL};
    pid_t p = e2e_spawn(argv, log);
    int st = 0;
    waitpid(p, &st, 0);
    FILE *f = fopen(log, "r");
    size_t n = f ? fread(out, 1, cap - 1, f) : 0;
    out[n] = '\0';
    if (f) fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The value in column `col` of the row of CLUSTER ("" when absent or empty). kubectl
 * aligns its columns: a cell starts where its header does. */
static void table_cell(const char *table, const char *col, char *out, size_t cap)
{
    out[0] = '\0';
    const char *nl = strchr(table, '\n');
    char want[40];
    snprintf(want, sizeof want, " %s ", col);
    const char *h = nl ? strstr(table, want) : NULL;
    if (!h || h > nl) return;
    size_t off = (size_t)(h + 1 - table);
    for (const char *row = nl + 1; *row; row = strchr(row, '\n') ? strchr(row, '\n') + 1 : row + strlen(row)) {
        if (strncmp(row, CLUSTER " ", strlen(CLUSTER) + 1)) continue;
        const char *eol = strchr(row, '\n');
        size_t len = eol ? (size_t)(eol - row) : strlen(row);
        if (off >= len) return;
        size_t n = strcspn(row + off, " \n");
        snprintf(out, cap, "%.*s", (int)n, row + off);
        return;
    }
}

/* ---------- the watch of the rollout ---------- */

typedef struct {
    char old_rev[32], new_rev[32];
    int64_t order[16];          /* status.rollout.member values, in the order first seen */
    int norder;
    int64_t current;            /* the member in progress in the last state seen */
    bool reentered;             /* a member came back into progress after another one */
    bool membership_changed;
    int64_t members0[8];
    int nmembers0;
    char mid_table[4096];       /* kubectl's output while the first member was in progress */
} rollout_watch;

static bool rollout_done(const char *type, const cJSON *o, void *arg)
{
    rollout_watch *w = arg;
    (void)type;
    int64_t ids[8];
    int n = e2e_status_members(o, ids, 8);
    if (n != w->nmembers0 || memcmp(ids, w->members0, sizeof(int64_t) * (size_t)n))
        w->membership_changed = true;
    int64_t m = gd_json_int_or(o, "status.rollout.member", 0);
    if (m && m != w->current) {
        for (int i = 0; i < w->norder; i++) w->reentered |= w->order[i] == m;
        if (w->norder < 16) w->order[w->norder++] = m;
        if (w->norder == 1) kubectl_get(w->mid_table, sizeof w->mid_table);
    }
    w->current = m;
    const char *upd = gd_json_str_or(o, "status.updateRevision", "");
    return !m && *upd && strcmp(upd, w->old_rev) && !strcmp(gd_json_str_or(o, "status.currentRevision", ""), upd) &&
           gd_json_int_or(o, "status.updatedReplicas", -1) == 3 &&
           gd_json_int_or(o, "status.readyReplicas", -1) == 3 &&
           (snprintf(w->new_rev, sizeof w->new_rev, "%s", upd), true);
}

typedef struct {
    int want;                   /* updatedReplicas */
    char rev[32];               /* out: the revision every member is on */
} settled_rev;

/* Every one of want members on one revision, recorded as current. */
static bool revision_recorded(const char *type, const cJSON *o, void *arg)
{
    settled_rev *r = arg;
    (void)type;
    const char *cur = gd_json_str_or(o, "status.currentRevision", "");
    if (!*cur || strcmp(cur, gd_json_str_or(o, "status.updateRevision", "")) ||
        gd_json_int_or(o, "status.updatedReplicas", -1) != r->want)
        return false;
    snprintf(r->rev, sizeof r->rev, "%s", cur);
    return true;
}

static int count_events(const char *reason)
{
    cJSON *list = NULL;
    if (k8s_list(c, &K8S_RES_EVENTS, ns, NULL, &list, NULL) != GD_OK) return -1;
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, gd_json_path(list, "items"))
        n += !strcmp(gd_json_str_or(e, "reason", ""), reason);
    cJSON_Delete(list);
    return n;
}

/* ---------- setup ---------- */

static int setup(void **state)
{
    (void)state;
    gd_log_init("itest", GD_LOG_WARN, 0, 2);
    c = e2e_client();
    if (!c || !e2e_install_crds(c) || !e2e_ns_create(c, "rollout", ns, sizeof ns)) return -1;
    e2e_log_dir(logdir, sizeof logdir, "rollout");
    snprintf(rundir, sizeof rundir, "/tmp/godis-itest-rollout-%d", (int)getpid());
    snprintf(mgr_log, sizeof mgr_log, "%s/manager.log", logdir);
    manager = e2e_start_manager(rundir, mgr_log, 2, false, NULL, 0);
    fprintf(stderr, "rollout: logs in %s\n", logdir);
    return manager > 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    e2e_stop(manager, 15000);
    e2e_ns_delete(c, ns);
    e2e_remove_dir(rundir);
    k8s_client_destroy(&c);
    return 0;
}

static void test_image_change_rolls_one_member_at_a_time(void **state)
{
    (void)state;
    assert_true(e2e_cluster_create(c, ns, CLUSTER, 3));
    assert_true(e2e_wait_converged(c, ns, CLUSTER, 3, 180000));
    rollout_watch w = {0};
    settled_rev r0 = {.want = 3};
    assert_true(e2e_watch_until(c, &K8S_RES_GODISCLUSTERS, ns, NULL, "metadata.name=" CLUSTER,
                                revision_recorded, &r0, 60000));
    snprintf(w.old_rev, sizeof w.old_rev, "%s", r0.rev);
    cJSON *gc = e2e_cluster_get(c, ns, CLUSTER);
    w.nmembers0 = e2e_status_members(gc, w.members0, 8);
    cJSON_Delete(gc);
    assert_int_equal(w.nmembers0, 3);
    e2e_member before[8];
    assert_int_equal(e2e_members_now(c, ns, CLUSTER, before, 8), 3);
    godis_client *g = e2e_member_dial(before[0].ip);        /* written through one member: replicated */
    for (int i = 0; i < 20; i++) {
        char k[32], v[32];
        snprintf(k, sizeof k, "roll-key-%d", i);
        snprintf(v, sizeof v, "value-%d", i);
        assert_int_equal(godis_set(g, k, v), GD_OK);
    }
    godis_client_destroy(&g);

    e2e_sampler s;
    assert_true(e2e_sampler_start(&s, ns, CLUSTER));
    int64_t t0 = e2e_now_ms();
    assert_int_equal(k8s_patch(c, &K8S_RES_GODISCLUSTERS, ns, CLUSTER, K8S_PATCH_MERGE,
                               "{\"spec\":{\"image\":\"" NEW_IMAGE "\"}}", NULL, NULL, NULL), GD_OK);
    bool done = e2e_watch_until(c, &K8S_RES_GODISCLUSTERS, ns, NULL, "metadata.name=" CLUSTER,
                                rollout_done, &w, 240000);
    int64_t ms = e2e_now_ms() - t0;
    e2e_sampler_stop(&s, "rollout");
    fprintf(stderr, "rollout-figure: image-3-members rollout_ms=%lld order=%lld,%lld,%lld "
            "samples=%d without_quorum=%d max_unavailable=%d revision %s -> %s\n", (long long)ms,
            (long long)w.order[0], (long long)w.order[1], (long long)w.order[2], s.samples,
            s.no_quorum, s.max_unavailable, w.old_rev, w.new_rev);
    assert_true(done);
    assert_int_equal(s.no_quorum, 0);
    assert_true(s.max_unavailable <= 1);
    assert_int_equal(w.norder, 3);               /* each member once, one at a time */
    assert_false(w.reentered);
    assert_false(w.membership_changed);

    e2e_member after[8];
    assert_int_equal(e2e_members_now(c, ns, CLUSTER, after, 8), 3);
    for (int i = 0; i < 3; i++) {
        const e2e_member *b = e2e_member_by_id(before, 3, after[i].id);
        assert_non_null(b);                       /* the same ids */
        assert_string_not_equal(b->pod_uid, after[i].pod_uid);   /* a new pod */
        assert_string_equal(b->pvc_uid, after[i].pvc_uid);       /* on the same volume */
        assert_string_equal(after[i].image, NEW_IMAGE);
        godis_client *m = e2e_member_dial(after[i].ip);
        for (int k = 0; k < 20; k++) {
            char key[32], want[32], *v = NULL;
            snprintf(key, sizeof key, "roll-key-%d", k);
            snprintf(want, sizeof want, "value-%d", k);
            bool ok = m && godis_get(m, key, &v) == GD_OK && v && !strcmp(v, want);
            free(v);
            if (!ok) fail_msg("member %lld lost %s in the rollout", (long long)after[i].id, key);
        }
        godis_client_destroy(&m);
    }
    assert_int_equal(count_events("MemberReplaced"), 3);
    assert_int_equal(count_events("MemberUpdated"), 3);

    char cell[64], table[4096];
    fprintf(stderr, "kubectl mid-rollout:\n%s", w.mid_table);
    table_cell(w.mid_table, "ROLLING", cell, sizeof cell);
    assert_int_equal(atoll(cell), w.order[0]);
    assert_int_equal(kubectl_get(table, sizeof table), 0);
    fprintf(stderr, "kubectl after:\n%s", table);
    table_cell(table, "UPDATED", cell, sizeof cell);
    assert_string_equal(cell, "3");
    table_cell(table, "READY", cell, sizeof cell);
    assert_string_equal(cell, "3");
    table_cell(table, "ROLLING", cell, sizeof cell);
    assert_string_equal(cell, "");               /* no member in progress */
}

/* Point 7: a manager restarted with the same rendering touches no member. */
static void test_restart_with_same_rendering_rolls_nothing(void **state)
{
    (void)state;
    settled_rev r3 = {.want = 3};
    assert_true(e2e_watch_until(c, &K8S_RES_GODISCLUSTERS, ns, NULL, "metadata.name=" CLUSTER,
                                revision_recorded, &r3, 60000));
    e2e_member before[8];
    assert_int_equal(e2e_members_now(c, ns, CLUSTER, before, 8), 3);
    e2e_stop(manager, 15000);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t since_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
    manager = e2e_start_manager(rundir, mgr_log, 2, false, NULL, 0);
    assert_true(manager > 0);
    assert_true(e2e_cluster_scale(c, ns, CLUSTER, 4));
    assert_true(e2e_wait_converged(c, ns, CLUSTER, 4, 180000));
    audit_event *ev = NULL;
    int n = e2e_operator_writes(since_us, &ev);
    assert_true(n > 0);                           /* it did reconcile: the scale-out's writes */
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) {
            char rs[96];
            snprintf(rs, sizeof rs, "%s-%lld", CLUSTER, (long long)before[k].id);
            if (!strcmp(ev[i].resource, "replicasets") && !strcmp(ev[i].name, rs) &&
                strcmp(ev[i].verb, "get") && strcmp(ev[i].verb, "list") && strcmp(ev[i].verb, "watch"))
                fail_msg("the restarted operator wrote ReplicaSet %s (%s)", rs, ev[i].verb);
        }
        if (!strcmp(ev[i].resource, "pods") && !strcmp(ev[i].verb, "delete"))
            fail_msg("the restarted operator deleted pod %s", ev[i].name);
    }
    free(ev);
    e2e_member after[8];
    assert_int_equal(e2e_members_now(c, ns, CLUSTER, after, 8), 4);
    for (int k = 0; k < 3; k++) {
        const e2e_member *a = e2e_member_by_id(after, 4, before[k].id);
        assert_non_null(a);
        assert_string_equal(a->pod_uid, before[k].pod_uid);
    }
    settled_rev r4 = {.want = 4};                 /* the new member on the same revision */
    assert_true(e2e_watch_until(c, &K8S_RES_GODISCLUSTERS, ns, NULL, "metadata.name=" CLUSTER,
                                revision_recorded, &r4, 60000));
    assert_string_equal(r4.rev, r3.rev);
}

/* ---------- a bad image, then the fix ---------- */

typedef struct {
    int64_t stuck_member;       /* status.rollout.member when RolloutStuck showed */
    int64_t members_rolled[8];  /* distinct status.rollout.member values */
    int nrolled;
} stuck_watch;

static const cJSON *condition(const cJSON *o, const char *type)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, gd_json_path(o, "status.conditions"))
        if (!strcmp(gd_json_str_or(c, "type", ""), type)) return c;
    return NULL;
}

static void note_member(stuck_watch *w, int64_t m)
{
    if (!m) return;
    for (int i = 0; i < w->nrolled; i++)
        if (w->members_rolled[i] == m) return;
    if (w->nrolled < 8) w->members_rolled[w->nrolled++] = m;
}

static bool is_stuck(const char *type, const cJSON *o, void *arg)
{
    stuck_watch *w = arg;
    (void)type;
    note_member(w, gd_json_int_or(o, "status.rollout.member", 0));
    const cJSON *p = condition(o, "Progressing");
    if (!p || strcmp(gd_json_str_or(p, "status", ""), "False") ||
        strcmp(gd_json_str_or(p, "reason", ""), "RolloutStuck"))
        return false;
    w->stuck_member = gd_json_int_or(o, "status.rollout.member", 0);
    return true;
}

typedef struct {
    stuck_watch *w;
    int want;
    char rev[32];
} done_watch;

static bool settled_again(const char *type, const cJSON *o, void *arg)
{
    done_watch *d = arg;
    note_member(d->w, gd_json_int_or(o, "status.rollout.member", 0));
    settled_rev r = {.want = d->want};
    if (gd_json_int_or(o, "status.rollout.member", 0) || !revision_recorded(type, o, &r)) return false;
    snprintf(d->rev, sizeof d->rev, "%s", r.rev);
    return true;
}

static bool any_event(const char *type, const cJSON *o, void *arg)
{
    (void)type, (void)o, (void)arg;
    return true;
}

/* Point 2/5: an image that cannot run stops the rollout at its first member (the deadline:
 * Progressing False, RolloutStuck, a Warning Event) with the quorum kept; the spec fixed
 * (the image of the other members), that member comes back and the rollout ends. */
static void test_bad_image_stops_and_fix_resumes(void **state)
{
    (void)state;
    settled_rev r0 = {.want = 4};
    assert_true(e2e_watch_until(c, &K8S_RES_GODISCLUSTERS, ns, NULL, "metadata.name=" CLUSTER,
                                revision_recorded, &r0, 60000));
    e2e_sampler s;
    assert_true(e2e_sampler_start(&s, ns, CLUSTER));
    assert_int_equal(k8s_patch(c, &K8S_RES_GODISCLUSTERS, ns, CLUSTER, K8S_PATCH_MERGE,
                               "{\"spec\":{\"image\":\"example.invalid/not-godis:1\","
                               "\"progressDeadlineSeconds\":10}}", NULL, NULL, NULL), GD_OK);
    stuck_watch w = {0};
    bool stuck = e2e_watch_until(c, &K8S_RES_GODISCLUSTERS, ns, NULL, "metadata.name=" CLUSTER,
                                 is_stuck, &w, 120000);
    assert_true(stuck);
    assert_int_equal(w.nrolled, 1);              /* one member down, no other touched */
    assert_true(w.stuck_member > 0);
    int dummy = 0;                               /* the Event follows the status write */
    assert_true(e2e_watch_until(c, &K8S_RES_EVENTS, ns, NULL, "reason=RolloutStuck", any_event,
                                &dummy, 30000));
    assert_int_equal(k8s_patch(c, &K8S_RES_GODISCLUSTERS, ns, CLUSTER, K8S_PATCH_MERGE,
                               "{\"spec\":{\"image\":\"" NEW_IMAGE "\"}}", NULL, NULL, NULL), GD_OK);
    done_watch d = {.w = &w, .want = 4};
    bool done = e2e_watch_until(c, &K8S_RES_GODISCLUSTERS, ns, NULL, "metadata.name=" CLUSTER,
                                settled_again, &d, 120000);
    e2e_sampler_stop(&s, "bad-image");
    assert_true(done);
    assert_int_equal(s.no_quorum, 0);
    assert_true(s.max_unavailable <= 1);
    assert_int_equal(w.nrolled, 1);              /* only that member was ever replaced */
    assert_string_equal(d.rev, r0.rev);          /* back on the others' revision */
    fprintf(stderr, "rollout-figure: bad-image stuck member %lld, fixed, %d samples, max_unavailable=%d\n",
            (long long)w.stuck_member, s.samples, s.max_unavailable);
}

/* ---------- a scale during a rollout ---------- */

typedef struct {
    bool scaled;                /* the scale was asked for */
    int64_t scale_during;       /* a scale-out recorded while a member was being replaced */
    int64_t seen_rollout;
} scale_watch;

static bool rollout_started(const char *type, const cJSON *o, void *arg)
{
    (void)type;
    scale_watch *w = arg;
    w->seen_rollout = gd_json_int_or(o, "status.rollout.member", 0);
    return w->seen_rollout != 0;
}

static bool scaled_and_rolled(const char *type, const cJSON *o, void *arg)
{
    (void)type;
    scale_watch *w = arg;
    if (gd_json_int_or(o, "status.rollout.member", 0) && gd_json_int_or(o, "status.scaleOutID", 0))
        w->scale_during = gd_json_int_or(o, "status.scaleOutID", 0);
    settled_rev r = {.want = 5};
    return gd_json_int_or(o, "status.readyReplicas", 0) == 5 && !gd_json_int_or(o, "status.rollout.member", 0) &&
           revision_recorded(type, o, &r);
}

/* Point 2: a scale asked for while a member is being replaced waits for that member, then
 * goes first; the rollout then finishes, the new member made on the new template already. */
static void test_scale_during_rollout(void **state)
{
    (void)state;
    e2e_sampler s;
    assert_true(e2e_sampler_start(&s, ns, CLUSTER));
    assert_int_equal(k8s_patch(c, &K8S_RES_GODISCLUSTERS, ns, CLUSTER, K8S_PATCH_MERGE,
                               "{\"spec\":{\"image\":\"kbzjung359/godis:v3\"}}", NULL, NULL, NULL), GD_OK);
    scale_watch w = {0};
    assert_true(e2e_watch_until(c, &K8S_RES_GODISCLUSTERS, ns, NULL, "metadata.name=" CLUSTER,
                                rollout_started, &w, 60000));
    assert_true(e2e_cluster_scale(c, ns, CLUSTER, 5));
    bool done = e2e_watch_until(c, &K8S_RES_GODISCLUSTERS, ns, NULL, "metadata.name=" CLUSTER,
                                scaled_and_rolled, &w, 240000);
    e2e_sampler_stop(&s, "scale-during-rollout");
    assert_true(done);
    assert_int_equal(w.scale_during, 0);         /* never a membership change mid-member */
    assert_int_equal(s.no_quorum, 0);
    assert_true(s.max_unavailable <= 1);
    assert_true(e2e_wait_converged(c, ns, CLUSTER, 5, 60000));
    e2e_member m[8];
    assert_int_equal(e2e_members_now(c, ns, CLUSTER, m, 8), 5);
    for (int i = 0; i < 5; i++) assert_string_equal(m[i].image, "kbzjung359/godis:v3");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_image_change_rolls_one_member_at_a_time),
        cmocka_unit_test(test_restart_with_same_rendering_rolls_nothing),
        cmocka_unit_test(test_bad_image_stops_and_fix_resumes),
        cmocka_unit_test(test_scale_during_rollout),
    };
    return cmocka_run_group_tests_name("itest_rollout", tests, setup, teardown);
}
