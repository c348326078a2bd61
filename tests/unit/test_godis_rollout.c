/* test_godis_rollout.c — the rollout of a changed member pod template (godis_rollout.c,
 * issue 20): one member at a time, intent recorded first, never while the cluster is below
 * full strength or paused, a member in progress finished before any membership step, a
 * deadline that turns Progressing False (RolloutStuck) and a fixed spec that resumes, and
 * nothing touched when the rendering did not change (an operator restart or upgrade).
 *
 * The cache is a small world of objects the test owns (the cluster, three members' Godis,
 * ReplicaSets and pods); the API server is the scriptable httpd helper, whose default answer
 * is success. After each reconcile the test applies the writes it made to the world (status,
 * ReplicaSet updates, pod deletions) and plays the ReplicaSet controller and kubelet itself,
 * so every intermediate state is checked. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include "client_fixture.h"
#include "godis_children.h"
#include "godis_plan.h"
#include "godis_metrics.h"
#include "godis_rollout.h"
#include "godis_slots.h"
#include "gd_json.h"

#define N 3

typedef struct {
    cJSON *cluster;
    cJSON *rs[N + 1];
    cJSON *pod[N + 1];          /* NULL: none (deleted) */
    bool caught_up[N + 1];      /* what the member check answers */
    int pods_made;
} world;

static world W;
/* The other clusters this worker's cache holds, for the --max-concurrent-rollouts limit
 * (0: no limit, the env then lists nothing), and the replace counter the metrics saw. */
static cJSON *others;
static int limit, replaced;

static cJSON *godis_obj(int64_t id)
{
    char buf[600];
    snprintf(buf, sizeof buf, "{\"metadata\":{\"name\":\"c-%lld\",\"namespace\":\"ns\",\"uid\":\"gu%lld\"},"
             "\"spec\":{\"preferred\":true},\"status\":{\"volumeNode\":\"node-%lld\"}}",
             (long long)id, (long long)id, (long long)id);
    return cJSON_Parse(buf);
}

static godis_child_spec member_spec(int64_t id, char *name, size_t cap)
{
    snprintf(name, cap, "c-%lld", (long long)id);
    char node[32];
    snprintf(node, sizeof node, "node-%lld", (long long)id);
    godis_child_spec s = {.ns = "ns", .cluster = "c", .godis = name, .godis_uid = "gu",
                          .id = id, .preferred = true, .node = NULL};
    godis_child_spec_from_cluster(&s, W.cluster);
    return s;
}

/* The ReplicaSet controller and kubelet: a pod from the ReplicaSet's template, Ready or not. */
static void make_pod(int64_t id, bool ready)
{
    cJSON *p = cJSON_Duplicate(gd_json_path(W.rs[id], "spec.template"), 1);
    char name[64], uid[32];
    snprintf(name, sizeof name, "c-%lld-p%d", (long long)id, ++W.pods_made);
    snprintf(uid, sizeof uid, "pu%d", W.pods_made);
    gd_json_set(p, "metadata.name", cJSON_CreateString(name));
    gd_json_set(p, "metadata.uid", cJSON_CreateString(uid));
    gd_json_set(p, "status.podIP", cJSON_CreateString("127.0.0.9"));
    cJSON *conds = cJSON_CreateArray();
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "type", "Ready");
    cJSON_AddStringToObject(r, "status", ready ? "True" : "False");
    cJSON_AddItemToArray(conds, r);
    gd_json_set(p, "status.conditions", conds);
    cJSON_Delete(W.pod[id]);
    W.pod[id] = p;
}

static void set_ready(int64_t id)
{
    cJSON *c = cJSON_GetArrayItem(gd_json_path(W.pod[id], "status.conditions"), 0);
    cJSON_ReplaceItemInObject(c, "status", cJSON_CreateString("True"));
}

static bool pod_ready(int64_t id)
{
    const cJSON *c = cJSON_GetArrayItem(gd_json_path(W.pod[id], "status.conditions"), 0);
    return W.pod[id] && !strcmp(gd_json_str_or(c, "status", ""), "True");
}

/* A converged 3-member cluster, every member on the template of spec_json's rendering. */
static void world_init(const char *spec_json)
{
    memset(&W, 0, sizeof W);
    char buf[1500];
    snprintf(buf, sizeof buf,
             "{\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"GodisCluster\",\"metadata\":{"
             "\"name\":\"c\",\"namespace\":\"ns\",\"uid\":\"cu\",\"resourceVersion\":\"5\","
             "\"generation\":1},\"spec\":%s,\"status\":{\"status\":\"Running\",\"members\":[1,2,3],"
             "\"nextID\":4,\"scaleOutID\":0,\"scaleInID\":0,\"initialReplicas\":3,\"replicas\":3,"
             "\"readyReplicas\":3,\"observedGeneration\":1,\"conditions\":[{\"type\":\"Ready\","
             "\"status\":\"True\",\"reason\":\"AllMembersReady\",\"message\":\"\"}]}}", spec_json);
    W.cluster = cJSON_Parse(buf);
    assert_non_null(W.cluster);
    for (int64_t id = 1; id <= N; id++) {
        char name[32];
        godis_child_spec s = member_spec(id, name, sizeof name);
        W.rs[id] = godis_build_replicaset(&s);
        make_pod(id, true);
        W.caught_up[id] = true;
    }
}

static void world_free(void)
{
    cJSON_Delete(others);
    others = NULL;
    limit = replaced = 0;
    godis_slots_reset();
    cJSON_Delete(W.cluster);
    for (int i = 0; i <= N; i++) {
        cJSON_Delete(W.rs[i]);
        cJSON_Delete(W.pod[i]);
    }
    memset(&W, 0, sizeof W);
}

static void set_spec(const char *path, cJSON *v)
{
    char p[128];
    snprintf(p, sizeof p, "spec.%s", path);
    gd_json_set(W.cluster, p, v);
}

static int64_t id_of(const char *name)
{
    const char *dash = strrchr(name, '-');
    return dash ? strtoll(dash + 1, NULL, 10) : 0;
}

static const cJSON *fake_get(godis_env *e, const char *kind, const char *ns, const char *name)
{
    (void)e, (void)ns;
    int64_t id = id_of(name);
    if (!strcmp(kind, "Godis")) return id >= 1 && id <= N ? godis_obj(id) : NULL;
    if (!strcmp(kind, "ReplicaSet")) return id >= 1 && id <= N ? cJSON_Duplicate(W.rs[id], 1) : NULL;
    return NULL;
}

static const cJSON *fake_list(godis_env *e, const char *kind, const char *ns, const char *k, const char *v)
{
    (void)e, (void)ns, (void)k;
    cJSON *out = cJSON_CreateArray();
    int64_t id = id_of(v);
    if (!strcmp(kind, "Pod") && id >= 1 && id <= N && W.pod[id])
        cJSON_AddItemToArray(out, cJSON_Duplicate(W.pod[id], 1));
    return out;
}

static gd_err fake_check(godis_rollout *ro, int64_t id, int64_t via, char *why, size_t cap)
{
    (void)ro;
    assert_int_not_equal(via, id);              /* caught up: written through another member */
    assert_true(pod_ready(via) || W.pod[via] != NULL);
    if (W.caught_up[id]) return GD_OK;
    snprintf(why, cap, "member %lld has not caught up", (long long)id);
    return GD_ERR_TIMEOUT;
}


static int fake_each(godis_env *e, const char *kind, int (*fn)(void *, const char *, const cJSON *), void *ud)
{
    (void)e;
    assert_string_equal(kind, "GodisCluster");
    int n = 1;
    fn(ud, "ns/c", W.cluster);
    const cJSON *o;
    cJSON_ArrayForEach(o, others) {
        char key[128];
        snprintf(key, sizeof key, "ns/%s", gd_meta_name(o));
        fn(ud, key, o);
        n++;
    }
    return n;
}

static void fake_metric(godis_env *e, const char *family, const char *labels, double v, bool add)
{
    (void)e;
    if (!strcmp(family, GODIS_M_CHANGES) && strstr(labels, "kind=\"replace\"")) {
        assert_true(add);
        assert_non_null(strstr(labels, "namespace=\"ns\",cluster=\"c\""));
        replaced += (int)v;
    }
}

/* What one reconcile wrote. */
typedef struct {
    bool took;
    godis_result r;
    int status_writes, rs_updates, pod_deletes;
    int64_t recheck_ms;
    char events[8][40];
    int nevents;
} outcome;

static outcome run(client_fixture *f, int desired, bool paused)
{
    godis_view v = {.desired = desired, .paused = paused, .phase = "Running", .next_id = 4,
                    .nmembers = N, .members_recorded = true, .configmap_exists = true,
                    .configmap_parsed = true, .cm_n = N, .initial_replicas = 3};
    for (int i = 0; i < N; i++) {
        v.members[i] = v.cm_ids[i] = i + 1;
        v.observed[i] = (godis_member){.id = i + 1, .godis_exists = true, .finalizer = true,
                                       .ready = pod_ready(i + 1), .running = true,
                                       .pod_exists = W.pod[i + 1] != NULL};
    }
    v.nobserved = N;
    godis_env e = {.client = f->c, .get = fake_get, .list = fake_list, .godis_port = 6379,
                   .each = limit ? fake_each : NULL, .max_concurrent_rollouts = limit,
                   .metric = fake_metric};
    const cJSON *cluster = cJSON_Duplicate(W.cluster, 1);
    godis_rollout ro = {.e = &e, .ns = "ns", .name = "c", .cluster = &cluster, .v = &v,
                        .phase = "Running", .writable = true, .member_check = fake_check};
    int before = httpd_request_count(f->h);
    outcome o = {0};
    o.took = godis_rollout_run(&ro, &o.r);
    o.recheck_ms = ro.recheck_ms;
    /* The counts and revisions staged for the planner's status write (godis_status_step
     * writes them when they differ from the status the API server has): one status write. */
    if (ro.status_base && !cJSON_Compare(ro.status_base, gd_json_path(cluster, "status"), 1)) {
        o.status_writes++;
        cJSON_Delete(W.cluster);
        W.cluster = (cJSON *)cluster;       /* the rollout's own copy, staged: the test's now */
        cluster = NULL;
    }
    cJSON_Delete(ro.status_base);
    godis_drop(cluster);
    for (int i = before; i < httpd_request_count(f->h); i++) {
        const httpd_req *q = httpd_request(f->h, i);
        cJSON *body = q->body ? cJSON_Parse(q->body) : NULL;
        if (!strcmp(q->method, "PUT") && strstr(q->uri, "/godisclusters/c/status")) {
            o.status_writes++;
            cJSON_Delete(W.cluster);
            W.cluster = body;
            body = NULL;
        } else if (!strcmp(q->method, "PUT") && strstr(q->uri, "/replicasets/")) {
            o.rs_updates++;
            int64_t id = id_of(gd_meta_name(body));
            cJSON_Delete(W.rs[id]);
            W.rs[id] = body;
            body = NULL;
        } else if (!strcmp(q->method, "DELETE") && strstr(q->uri, "/pods/")) {
            o.pod_deletes++;
            const char *name = strrchr(q->uri, '/') + 1;
            for (int id = 1; id <= N; id++)
                if (W.pod[id] && !strncmp(gd_meta_name(W.pod[id]), name, strlen(gd_meta_name(W.pod[id])))) {
                    cJSON_Delete(W.pod[id]);
                    W.pod[id] = NULL;
                }
        } else if (!strcmp(q->method, "POST") && strstr(q->uri, "/events") && o.nevents < 8) {
            snprintf(o.events[o.nevents++], 40, "%s", gd_json_str_or(body, "reason", ""));
        } else {
            fail_msg("unexpected request %s %s", q->method, q->uri);
        }
        cJSON_Delete(body);
    }
    return o;
}

static const char *progressing(const char *field)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, gd_json_path(W.cluster, "status.conditions"))
        if (!strcmp(gd_json_str_or(c, "type", ""), "Progressing")) return gd_json_str_or(c, field, "");
    return "";
}

static int down_now(void)
{
    int n = 0;
    for (int id = 1; id <= N; id++) n += !pod_ready(id);
    return n;
}

/* One member to the end: intent, ReplicaSet, pod, waits, done. Returns the member's id. */
static int64_t roll_one(client_fixture *f)
{
    outcome o = run(f, 3, false);                /* intent first, nothing else touched */
    assert_true(o.took);
    assert_int_equal(o.status_writes, 1);
    assert_int_equal(o.rs_updates + o.pod_deletes, 0);
    int64_t id = gd_json_int_or(W.cluster, "status.rollout.member", 0);
    assert_true(id >= 1 && id <= N);
    assert_string_equal(progressing("reason"), "RollingUpdate");
    o = run(f, 3, false);                        /* its ReplicaSet */
    assert_int_equal(o.rs_updates, 1);
    assert_int_equal(o.pod_deletes, 0);
    assert_string_equal(godis_object_hash(W.rs[id]), gd_json_str_or(W.cluster, "status.updateRevision", ""));
    o = run(f, 3, false);                        /* its pod */
    assert_int_equal(o.pod_deletes, 1);
    assert_string_equal(o.events[0], "MemberReplaced");
    assert_int_equal(down_now(), 1);
    o = run(f, 3, false);                        /* no pod yet: wait */
    assert_true(o.took);
    assert_int_equal(o.r.kind, GODIS_REQUEUE_AFTER);
    assert_int_equal(o.status_writes + o.rs_updates + o.pod_deletes, 0);
    make_pod(id, false);
    o = run(f, 3, false);                        /* not Ready: wait */
    assert_int_equal(o.status_writes + o.rs_updates + o.pod_deletes, 0);
    set_ready(id);
    W.caught_up[id] = false;
    o = run(f, 3, false);                        /* Ready, not caught up: wait */
    assert_true(o.took);
    assert_int_equal(o.status_writes + o.rs_updates + o.pod_deletes, 0);
    assert_int_equal(gd_json_int_or(W.cluster, "status.rollout.member", 0), id);
    W.caught_up[id] = true;
    o = run(f, 3, false);                        /* back: done */
    assert_int_equal(o.status_writes, 1);
    assert_string_equal(o.events[0], "MemberUpdated");
    assert_int_equal(gd_json_int_or(W.cluster, "status.rollout.member", 0), 0);
    assert_int_equal(down_now(), 0);
    return id;
}

static void test_image_change_rolls_one_member_at_a_time(void **state)
{
    client_fixture *f = *state;
    world_init("{\"replicas\":3}");
    char old[GODIS_HASH_LEN + 1];
    snprintf(old, sizeof old, "%s", godis_object_hash(W.rs[1]));
    set_spec("image", cJSON_CreateString("kbzjung359/godis:v2"));
    int64_t order[N];
    for (int i = 0; i < N; i++) {
        order[i] = roll_one(f);
        assert_int_equal(gd_json_int_or(W.cluster, "status.updatedReplicas", -1), i + 1);
        for (int j = 0; j < i; j++) assert_int_not_equal(order[j], order[i]);
    }
    assert_int_equal(order[0], 1);              /* deterministic: by id */
    outcome o = run(f, 3, false);                /* all on it: the planner's turn */
    assert_false(o.took);
    const char *rev = gd_json_str_or(W.cluster, "status.updateRevision", "");
    assert_string_not_equal(rev, old);
    assert_string_equal(gd_json_str_or(W.cluster, "status.currentRevision", ""), rev);
    assert_int_equal(gd_json_int_or(W.cluster, "status.updatedReplicas", -1), 3);
    assert_string_equal(progressing("reason"), "RolloutComplete");
    for (int id = 1; id <= N; id++)
        assert_string_equal(gd_json_str_or(cJSON_GetArrayItem(gd_json_path(W.pod[id], "spec.containers"), 0),
                                           "image", ""), "kbzjung359/godis:v2");
    world_free();
}

/* Not below full strength, not while scaling is asked for, not paused: no member is taken. */
static void test_waits_for_full_strength(void **state)
{
    client_fixture *f = *state;
    world_init("{\"replicas\":3}");
    set_spec("image", cJSON_CreateString("kbzjung359/godis:v2"));
    cJSON *c = cJSON_GetArrayItem(gd_json_path(W.pod[2], "status.conditions"), 0);
    cJSON_ReplaceItemInObject(c, "status", cJSON_CreateString("False"));
    outcome o = run(f, 3, false);
    assert_false(o.took);
    assert_int_equal(o.rs_updates + o.pod_deletes, 0);
    assert_int_equal(gd_json_int_or(W.cluster, "status.rollout.member", 0), 0);
    /* a pod turning Ready wakes the cluster's key (mapping.h): no poll for it */
    assert_int_equal(o.recheck_ms, 0);
    set_ready(2);
    /* a member's ReplicaSet wakes only its Godis: while one is missing, it looks again */
    cJSON *rs3 = W.rs[3];
    W.rs[3] = NULL;
    o = run(f, 3, false);
    assert_false(o.took);
    assert_int_equal(o.recheck_ms, 2000);
    W.rs[3] = rs3;
    o = run(f, 4, false);                        /* a scale asked for: the planner first */
    assert_false(o.took);
    assert_int_equal(gd_json_int_or(W.cluster, "status.rollout.member", 0), 0);
    o = run(f, 3, true);                         /* paused */
    assert_false(o.took);
    assert_int_equal(o.recheck_ms, 0);           /* a paused cluster waits for its spec */
    assert_int_equal(gd_json_int_or(W.cluster, "status.rollout.member", 0), 0);
    assert_int_equal(gd_json_int_or(W.cluster, "status.updatedReplicas", 0), 0);  /* none touched */
    for (int id = 1; id <= N; id++) assert_true(pod_ready(id));
    o = run(f, 3, false);                        /* full strength: it starts */
    assert_true(o.took);
    assert_int_equal(gd_json_int_or(W.cluster, "status.rollout.member", 0), 1);
    world_free();
}

/* A scale request while a member is replaced waits for it (the planner does not run). */
static void test_scale_waits_for_the_member_in_progress(void **state)
{
    client_fixture *f = *state;
    world_init("{\"replicas\":3}");
    set_spec("image", cJSON_CreateString("kbzjung359/godis:v2"));
    assert_true(run(f, 3, false).took);         /* member 1 recorded */
    outcome o = run(f, 4, false);                /* user asks for 4 meanwhile */
    assert_true(o.took);
    assert_int_equal(o.rs_updates, 1);           /* member 1 goes on */
    o = run(f, 4, true);                         /* and paused: the member in progress finishes */
    assert_true(o.took);
    assert_int_equal(o.pod_deletes, 1);
    make_pod(1, true);
    o = run(f, 4, false);
    assert_true(o.took);
    assert_string_equal(o.events[0], "MemberUpdated");
    o = run(f, 4, false);                        /* then the scale goes first */
    assert_false(o.took);
    assert_int_equal(gd_json_int_or(W.cluster, "status.rollout.member", 0), 0);
    world_free();
}

/* A member that is not back within the deadline stops the rollout (Progressing False,
 * RolloutStuck, one Warning Event); fixing the spec gives that member the new revision at
 * once, with a new deadline, and the rollout goes on. */
static void test_stuck_then_fixed(void **state)
{
    client_fixture *f = *state;
    world_init("{\"replicas\":3,\"progressDeadlineSeconds\":30}");
    set_spec("image", cJSON_CreateString("kbzjung359/godis:broken"));
    assert_true(run(f, 3, false).took);
    assert_int_equal(run(f, 3, false).rs_updates, 1);
    assert_int_equal(run(f, 3, false).pod_deletes, 1);
    make_pod(1, false);                          /* the bad image never gets Ready */
    outcome o = run(f, 3, false);
    assert_int_equal(o.status_writes, 0);        /* within the deadline */
    gd_json_set(W.cluster, "status.rollout.startTime", cJSON_CreateString("2020-01-01T00:00:00Z"));
    o = run(f, 3, false);
    assert_true(o.took);
    assert_int_equal(o.status_writes, 1);
    assert_string_equal(progressing("status"), "False");
    assert_string_equal(progressing("reason"), "RolloutStuck");
    assert_int_equal(o.nevents, 1);
    assert_string_equal(o.events[0], "RolloutStuck");
    assert_int_equal(o.r.kind, GODIS_REQUEUE_AFTER);
    o = run(f, 3, false);                        /* said once */
    assert_int_equal(o.status_writes + o.nevents + o.rs_updates + o.pod_deletes, 0);
    assert_int_equal(down_now(), 1);             /* and no second member taken */
    set_spec("image", cJSON_CreateString("kbzjung359/godis:v3"));
    o = run(f, 3, false);                        /* the fix: same member, new revision, new deadline */
    assert_int_equal(o.status_writes, 1);
    assert_int_equal(gd_json_int_or(W.cluster, "status.rollout.member", 0), 1);
    assert_string_equal(progressing("reason"), "RollingUpdate");
    assert_string_not_equal(gd_json_str_or(W.cluster, "status.rollout.startTime", ""), "2020-01-01T00:00:00Z");
    assert_int_equal(run(f, 3, false).rs_updates, 1);
    assert_int_equal(run(f, 3, false).pod_deletes, 1);   /* the broken pod */
    make_pod(1, true);
    o = run(f, 3, false);
    assert_string_equal(o.events[0], "MemberUpdated");
    world_free();
}

/* Point 7: the same rendering (an operator restarted, or upgraded with a default that does
 * not reach the template) touches nothing: no write at all once the status says so. */
static void test_same_rendering_touches_nothing(void **state)
{
    client_fixture *f = *state;
    world_init("{\"replicas\":3,\"image\":\"kbzjung359/godis:v2\",\"podMetadata\":{\"labels\":{\"team\":\"a\"}}}");
    outcome o = run(f, 3, false);                /* the counts and revisions, once */
    assert_false(o.took);
    assert_int_equal(o.status_writes, 1);
    assert_int_equal(gd_json_int_or(W.cluster, "status.updatedReplicas", -1), 3);
    o = run(f, 3, false);
    assert_false(o.took);
    assert_int_equal(o.status_writes + o.rs_updates + o.pod_deletes + o.nevents, 0);
    for (int id = 1; id <= N; id++) {            /* and the Godis controller repairs nothing */
        char name[32];
        godis_child_spec s = member_spec(id, name, sizeof name);
        cJSON *want = godis_build_replicaset(&s);
        assert_null(godis_replicaset_fix(want, W.rs[id]));
        cJSON_Delete(want);
    }
    world_free();
}

/* Members from before template hashes (an earlier operator version, or the Go controller
 * it replaces): no rollout until the Godis controller adopted their ReplicaSets in place,
 * and then their running pods count as on the adopted revision — nobody is restarted. */
static void test_adopted_members_are_not_restarted(void **state)
{
    client_fixture *f = *state;
    world_init("{\"replicas\":3}");
    for (int id = 1; id <= N; id++) {
        cJSON_DeleteItemFromObject(gd_json_path(W.rs[id], "metadata"), "annotations");
        cJSON_DeleteItemFromObject(gd_json_path(W.rs[id], "spec.template.metadata"), "annotations");
        cJSON_DeleteItemFromObject(gd_json_path(W.pod[id], "metadata"), "annotations");
    }
    outcome o = run(f, 3, false);
    assert_false(o.took);
    assert_int_equal(o.rs_updates + o.pod_deletes, 0);
    assert_int_equal(gd_json_int_or(W.cluster, "status.rollout.member", 0), 0);
    for (int id = 1; id <= N; id++) {            /* the Godis controller adopts them */
        char name[32];
        godis_child_spec s = member_spec(id, name, sizeof name);
        cJSON *want = godis_build_replicaset(&s);
        cJSON *fixed = godis_replicaset_fix(want, W.rs[id]);
        assert_non_null(fixed);
        cJSON_Delete(W.rs[id]);
        W.rs[id] = fixed;
        cJSON_Delete(want);
    }
    o = run(f, 3, false);
    assert_false(o.took);
    assert_int_equal(o.rs_updates + o.pod_deletes, 0);
    assert_int_equal(gd_json_int_or(W.cluster, "status.updatedReplicas", -1), 3);
    set_spec("image", cJSON_CreateString("kbzjung359/godis:v2"));   /* a later change rolls */
    assert_int_equal(roll_one(f), 1);
    world_free();
}

/* A member that left the cluster while it was in progress: the record is cleared. */
static void test_member_gone_clears_the_record(void **state)
{
    client_fixture *f = *state;
    world_init("{\"replicas\":3}");
    gd_json_set(W.cluster, "status.rollout", cJSON_Parse("{\"member\":7,\"revision\":\"x\"}"));
    outcome o = run(f, 3, false);
    assert_true(o.took);
    assert_int_equal(o.status_writes, 1);
    assert_null(gd_json_path(W.cluster, "status.rollout"));
    world_free();
}

static cJSON *other(const char *name, bool holding, bool paused)
{
    char buf[300];
    snprintf(buf, sizeof buf, "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\"},\"spec\":{\"paused\":%s},"
             "\"status\":{%s}}", name, paused ? "true" : "false", holding ? "\"rollout\":{\"revision\":\"r\"}" : "");
    return cJSON_Parse(buf);
}

static int count_reason(const outcome *o, const char *reason)
{
    int n = 0;
    for (int i = 0; i < o->nevents; i++) n += !strcmp(o->events[i], reason);
    return n;
}

/* Point 7: at most --max-concurrent-rollouts clusters of this worker roll at once. A cluster
 * without a slot waits (the planner still runs: it scales and heals), says so once, and
 * looks again; a paused holder holds none; the slot is held from the first member to the
 * last (status.rollout without a member between two); several holders (a moved shard, a
 * lower limit) go on in key order. */
static void test_rollout_slots(void **state)
{
    client_fixture *f = *state;
    world_init("{\"replicas\":3}");
    set_spec("image", cJSON_CreateString("kbzjung359/godis:v2"));
    limit = 1;
    others = cJSON_CreateArray();
    cJSON_AddItemToArray(others, other("a", true, false));
    outcome o = run(f, 3, false);
    assert_false(o.took);                        /* waits; the planner's turn */
    assert_int_equal(o.rs_updates + o.pod_deletes, 0);
    assert_null(gd_json_path(W.cluster, "status.rollout"));
    assert_int_equal(count_reason(&o, "RolloutQueued"), 1);
    assert_int_equal(o.recheck_ms, 2000);
    o = run(f, 3, false);
    assert_int_equal(count_reason(&o, "RolloutQueued"), 0);   /* said once */
    assert_null(gd_json_path(W.cluster, "status.rollout"));
    cJSON_ReplaceItemInArray(others, 0, other("a", true, true));   /* paused: holds none */
    int64_t first = roll_one(f);
    assert_int_equal(first, 1);
    assert_int_equal(replaced, 1);
    const cJSON *r = gd_json_path(W.cluster, "status.rollout");   /* between two members */
    assert_true(cJSON_IsObject(r));
    assert_null(gd_json_path(r, "member"));
    assert_string_equal(gd_json_str_or(r, "revision", ""), gd_json_str_or(W.cluster, "status.updateRevision", ""));
    cJSON_ReplaceItemInArray(others, 0, other("a", true, false));  /* "ns/a" < "ns/c" holds too */
    o = run(f, 3, false);
    assert_false(o.took);
    assert_int_equal(gd_json_int_or(W.cluster, "status.rollout.member", 0), 0);
    assert_int_equal(o.recheck_ms, 2000);
    cJSON_ReplaceItemInArray(others, 0, other("z", true, false));  /* "ns/z" comes after */
    assert_int_equal(roll_one(f), 2);
    limit = 2;                                   /* a second slot: both go on */
    cJSON_ReplaceItemInArray(others, 0, other("a", true, false));
    assert_int_equal(roll_one(f), 3);
    assert_int_equal(replaced, 3);
    assert_null(gd_json_path(W.cluster, "status.rollout"));      /* every member on it: released */
    assert_string_equal(gd_json_str_or(W.cluster, "status.currentRevision", ""),
                        gd_json_str_or(W.cluster, "status.updateRevision", ""));
    world_free();
}

static cJSON *slot_world;

static int slot_each(godis_env *e, const char *kind, int (*fn)(void *, const char *, const cJSON *), void *ud)
{
    (void)e, (void)kind;
    const cJSON *o;
    cJSON_ArrayForEach(o, slot_world) {
        char key[128];
        snprintf(key, sizeof key, "ns/%s", gd_meta_name(o));
        fn(ud, key, o);
    }
    return cJSON_GetArraySize(slot_world);
}

/* The slots themselves: a slot granted is reserved until the status shows it (two reconcile
 * threads cannot both take the last one), released when the rollout ends, forgotten when its
 * cluster leaves the cache; holders beyond the limit go on in key order; 0 is no limit. */
static void test_slot_reservations(void **state)
{
    (void)state;
    godis_slots_reset();
    slot_world = cJSON_CreateArray();
    cJSON_AddItemToArray(slot_world, other("a", false, false));
    cJSON_AddItemToArray(slot_world, other("b", false, false));
    cJSON_AddItemToArray(slot_world, other("c", false, false));
    godis_env e = {.each = slot_each, .max_concurrent_rollouts = 1};
    int holders = -1;
    assert_true(godis_slot_may_roll(&e, "ns/a", false, &holders));
    assert_int_equal(holders, 0);
    assert_false(godis_slot_may_roll(&e, "ns/b", false, &holders));  /* a's status not seen yet */
    assert_int_equal(holders, 1);
    godis_slot_release("ns/a");                  /* a's rollout ended (or its write failed) */
    assert_true(godis_slot_may_roll(&e, "ns/b", false, NULL));
    cJSON_DeleteItemFromArray(slot_world, 1);    /* b left this worker's cache */
    assert_true(godis_slot_may_roll(&e, "ns/c", false, &holders));
    assert_int_equal(holders, 0);
    godis_slots_reset();
    cJSON_Delete(slot_world);
    slot_world = cJSON_CreateArray();
    cJSON_AddItemToArray(slot_world, other("a", true, false));
    cJSON_AddItemToArray(slot_world, other("b", true, false));
    cJSON_AddItemToArray(slot_world, other("c", true, true));     /* paused */
    assert_true(godis_slot_may_roll(&e, "ns/a", true, NULL));
    assert_false(godis_slot_may_roll(&e, "ns/b", true, &holders));
    assert_int_equal(holders, 1);
    assert_false(godis_slot_may_roll(&e, "ns/d", false, &holders));
    assert_int_equal(holders, 2);
    e.max_concurrent_rollouts = 2;
    assert_true(godis_slot_may_roll(&e, "ns/b", true, NULL));
    assert_false(godis_slot_may_roll(&e, "ns/d", false, NULL));
    e.max_concurrent_rollouts = 0;
    assert_true(godis_slot_may_roll(&e, "ns/d", false, NULL));
    assert_true(godis_slot_note_waiting("ns/d", true));
    assert_false(godis_slot_note_waiting("ns/d", true));
    assert_false(godis_slot_note_waiting("ns/d", false));
    godis_slots_reset();
    cJSON_Delete(slot_world);
    slot_world = NULL;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_image_change_rolls_one_member_at_a_time, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_waits_for_full_strength, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_scale_waits_for_the_member_in_progress, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_stuck_then_fixed, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_same_rendering_touches_nothing, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_member_gone_clears_the_record, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_adopted_members_are_not_restarted, client_setup, client_teardown),
        cmocka_unit_test_setup_teardown(test_rollout_slots, client_setup, client_teardown),
        cmocka_unit_test(test_slot_reservations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
