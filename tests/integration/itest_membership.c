/* Membership safety (issue 16) with the whole operator on the local control plane and the
 * unkind godis stand-in (elections, a forgotten follower that campaigns until stopped, a
 * removed leader that exits 0 and would come back as a voter):
 *  - scale-in 5 -> 2: every forgotten member stopped right after its forget (the figures:
 *    how long each ran after it, and the elections the survivors saw), none restarted;
 *  - a removed *leader* is never restarted as a voter, in 3 -> 2 and in 2 -> 1 (where its
 *    own vote commits its removal, and the one left leads alone and takes writes);
 *  - a Godis deleted by hand (3 members: the others commit its forget alone) is stopped
 *    first — its ReplicaSet to 0, its pod deleted and its process gone — then forgotten,
 *    then the forget recorded, its finalizer last (the audit log's order against the
 *    stand-ins' own forget times): it never runs as a forgotten member;
 *  - a ConfigMap deleted while a scale-in waits for its forget is rebuilt with the victim
 *    still listed, and the forget is sent (never skipped);
 *  - a manager killed mid-removal: in 2 -> 1 between the forget and the stop, the next one
 *    stops the member first; in 5 -> 4 (each member alone on a node: two extra nodes of a
 *    node agent of the test's own) between the stop and the forget, the next one forgets
 *    the down member, which never runs after its forget;
 *  - a 1 -> 2 scale-out with the leading manager killed right after the new member's Godis
 *    appeared (before its meet), or its workers killed right after the meet was applied
 *    (before its +OK was recorded): the new member exists before it is admitted, so the
 *    next one meets (again) and records; 2 members, writes through both, no id reused;
 *  - reclaimPolicy Retain keeps the PVCs of removed members and of a deleted cluster;
 *  - deleting a GodisCluster, or its whole namespace, finishes with nothing Terminating. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <pthread.h>
#include <signal.h>
#include "e2e_lib.h"
#include "e2e_nodes.h"
#include "e2e_operator.h"
#include "e2e_procs.h"
#include "e2e_standin.h"
#include "godis_client.h"
#include "gd_json.h"
#include "gd_time.h"

static k8s_client *c;
static e2e_operator op;
static const int T = 120000;                 /* per wait */
static e2e_extra_nodes extra;                /* a test's own nodes, stopped by its teardown */
static char extra_ns[64];                    /* the namespace whose pods run there */

#define NS_START(ns) char ns[64]; assert_true(e2e_ns_create(c, "ms", ns, sizeof ns))

static void converge(const char *ns, const char *name, int n)
{
    assert_true(e2e_wait_settled(c, ns, name, n, T));
}

static void ns_done(const char *ns) { assert_true(e2e_ns_delete_wait(c, ns, T)); }

/* Creates cluster name with n members (and spec, an object's members in JSON, or NULL),
 * waits until it has converged, and fills ips[i] with the pod IP of member i+1. */
static void cluster_up_spec(const char *ns, const char *name, int n, const char *spec, char ips[][64])
{
    char json[256];
    snprintf(json, sizeof json, "{\"replicas\":%d%s%s}", n, spec ? "," : "", spec ? spec : "");
    assert_true(e2e_cluster_create_spec(c, ns, name, json));
    converge(ns, name, n);
    for (int i = 0; i < n; i++) {
        char g[128];
        snprintf(g, sizeof g, "%s-%d", name, i + 1);
        assert_true(e2e_member_ip(c, ns, g, ips[i], 64));
    }
}

static void cluster_up(const char *ns, const char *name, int n, char ips[][64])
{
    cluster_up_spec(ns, name, n, NULL, ips);
}

typedef struct {
    int64_t want[8];
    int n;
} members_q;

static bool members_are(const char *type, const cJSON *gc, void *arg)
{
    members_q *q = arg;
    int64_t ids[16];
    int n = e2e_status_members(gc, ids, 16);
    if (strcmp(type, "DELETED") == 0 || n != q->n) return false;
    for (int i = 0; i < n; i++)
        if (ids[i] != q->want[i]) return false;
    return true;
}

/* Watches the cluster until status.members is exactly want (sorted), then waits until it
 * has converged there. */
static void wait_members(const char *ns, const char *name, const int64_t *want, int n)
{
    members_q q = {.n = n};
    memcpy(q.want, want, sizeof *want * n);
    char fs[160];
    snprintf(fs, sizeof fs, "metadata.name=%s", name);
    assert_true(e2e_watch_until(c, &K8S_RES_GODISCLUSTERS, ns, NULL, fs, members_are, &q, T));
    converge(ns, name, n);
}

/* The forget time of each watched victim (from the survivors) and the end of its process:
 * both must exist, and the process must have ended within 3 s of the forget. */
static void check_stopped_after_forget(e2e_member_watch *w, int nw, char surv[][64], int ns)
{
    for (int i = 0; i < nw; i++) {
        int64_t forget = e2e_forget_time_us(surv, ns, w[i].id);
        int64_t end = e2e_member_watch_end(&w[i], T);
        if (!forget || !end)
            fail_msg("member %lld: forget at %lld, process end at %lld", (long long)w[i].id,
                     (long long)forget, (long long)end);
        e2e_note_forgotten_runtime(w[i].id, forget, end);
        assert_true(end - forget < 3000000);
        /* nothing it did after its forget disturbed the survivors */
        assert_int_equal(e2e_vote_requests_from(surv, ns, w[i].id, forget), 0);
    }
}

/* ---- scale-in ---- */

/* Watches the cluster in a thread and notes when Progressing first shows False for the
 * scaled spec (2 members, the spec's generation observed). */
typedef struct {
    pthread_t th;
    char ns[64], name[64];
    int64_t settled_us;
} progress_watch;

static bool progressing_false(const char *type, const cJSON *gc, void *arg)
{
    progress_watch *p = arg;
    int64_t ids[16];
    if (strcmp(type, "DELETED") == 0 || !e2e_condition_is(gc, "Progressing", "False") ||
        gd_json_int_or(gc, "status.scaleInID", 0) != 0 || e2e_status_members(gc, ids, 16) != 2 ||
        gd_json_int_or(gc, "status.observedGeneration", -1) != gd_meta_generation(gc))
        return false;
    p->settled_us = e2e_wall_us();
    return true;
}

static void *progress_main(void *arg)
{
    progress_watch *p = arg;
    k8s_client *own = e2e_client();
    char fs[160];
    snprintf(fs, sizeof fs, "metadata.name=%s", p->name);
    e2e_watch_until(own, &K8S_RES_GODISCLUSTERS, p->ns, NULL, fs, progressing_false, p, T);
    k8s_client_destroy(&own);
    return NULL;
}


static void test_scale_in_5_to_2(void **state)
{
    (void)state;
    NS_START(ns);
    int64_t ids[] = {1, 2, 3, 4, 5};
    char ips[5][64];
    cluster_up(ns, "ms-scale", 5, ips);
    e2e_member_watch w[3];
    for (int i = 0; i < 3; i++) assert_true(e2e_member_watch_start(&w[i], ids[2 + i], ips[2 + i]));
    e2e_pod_recorder rec;
    assert_true(e2e_pod_recorder_start(&rec, ns, "ms-scale"));
    int64_t t0 = e2e_wall_us();
    assert_true(e2e_cluster_scale(c, ns, "ms-scale", 2));
    /* Progressing goes False only once the operator saw its own status say so, after the
     * scale: the watch starts now, while the first step is under way */
    progress_watch pw = {0};
    snprintf(pw.ns, sizeof pw.ns, "%s", ns);
    snprintf(pw.name, sizeof pw.name, "ms-scale");
    assert_int_equal(pthread_create(&pw.th, NULL, progress_main, &pw), 0);
    int64_t want[] = {1, 2};
    wait_members(ns, "ms-scale", want, 2);
    pthread_join(pw.th, NULL);
    int64_t t1 = e2e_wall_us();
    check_stopped_after_forget(w, 3, ips, 2);
    fprintf(stderr, "figure: elections the survivors saw during the 5->2 scale-in: %d\n",
            e2e_elections_seen(ips, 2, t0, t1));
    e2e_pod_recorder_stop(&rec);
    assert_true(pw.settled_us > 0);
    for (int i = 3; i <= 5; i++) {
        char g[64];
        snprintf(g, sizeof g, "ms-scale-%d", i);
        assert_int_equal(e2e_pod_recorder_restarts(&rec, g), 0);   /* never back as a voter */
        int64_t gone = e2e_pod_recorder_gone_us(&rec, g);
        /* Progressing stayed True until the forgotten member's pod was gone */
        if (!gone || gone > pw.settled_us)
            fail_msg("%s: pod gone at %lld, Progressing False at %lld", g, (long long)gone,
                     (long long)pw.settled_us);
    }
    ns_done(ns);
}

/* The member being removed is the Raft leader: it exits 0 as it applies its removal; the
 * operator's stop must come before its kubelet restarts it (as a voter, from its WAL).
 * From n members to n-1: for 3 -> 2 the survivors elect one of themselves; for 2 -> 1 the
 * leader's own vote is needed to commit its removal (the forget goes while it runs), and
 * the one left must lead alone and take writes (converge waits for Ready=True, which
 * means a write went through). */
static void scale_in_removing_the_leader(const char *name, int n)
{
    NS_START(ns);
    int64_t ids[] = {1, 2, 3};
    char ips[3][64];
    cluster_up(ns, name, n, ips);
    const char *campaign[] = {"campaign"};
    assert_true(e2e_standin_cmd(ips[n - 1], 6379, 1, campaign));
    int64_t deadline = gd_mono_ms() + T;
    while (e2e_standin_stat(ips[0], "leader") != n && gd_mono_ms() < deadline) gd_sleep_ms(50);
    assert_int_equal(e2e_standin_stat(ips[0], "leader"), n);
    e2e_member_watch w;
    assert_true(e2e_member_watch_start(&w, n, ips[n - 1]));
    e2e_pod_recorder rec;
    assert_true(e2e_pod_recorder_start(&rec, ns, name));
    int64_t t0 = e2e_wall_us();
    assert_true(e2e_cluster_scale(c, ns, name, n - 1));
    wait_members(ns, name, ids, n - 1);
    int64_t t1 = e2e_wall_us();
    check_stopped_after_forget(&w, 1, ips, n - 1);
    e2e_pod_recorder_stop(&rec);
    char victim[64];
    snprintf(victim, sizeof victim, "%s-%d", name, n);
    assert_int_equal(e2e_pod_recorder_restarts(&rec, victim), 0);
    /* the survivors lost their leader once and elected one of themselves */
    long long leader = e2e_standin_stat(ips[0], "leader");
    fprintf(stderr, "%s: %d -> %d, the leader removed: elections the survivors saw: %d; "
            "leader now %lld\n", name, n, n - 1, e2e_elections_seen(ips, n - 1, t0, t1), leader);
    assert_true(leader >= 1 && leader < n);
    ns_done(ns);
}

static void test_removed_leader_never_restarts(void **state)
{
    (void)state;
    scale_in_removing_the_leader("ms-leader", 3);
}

static void test_two_to_one_removing_the_leader(void **state)
{
    (void)state;
    scale_in_removing_the_leader("ms-two", 2);
}

/* ---- deletion ---- */

/* A Godis deleted by hand, in a cluster of 3 (the other two would commit its forget
 * without it, but with no vote to spare, so it is forgotten first): it is forgotten while
 * it runs (the stand-ins' own clock), then at once its ReplicaSet goes to 0 and its pod is
 * deleted and its process ends (within the issue's 3 s), the forget is recorded in the
 * ConfigMap, and only then is the finalizer dropped (the API server's audit log, same
 * machine clock): forgotten before its ReplicaSet and pod are touched. */
static void test_hand_deleted_godis_forgotten_before_it_goes(void **state)
{
    (void)state;
    NS_START(ns);
    char ips[3][64], surv[2][64];
    cluster_up(ns, "ms-hand", 3, ips);
    memcpy(surv[0], ips[0], 64);
    memcpy(surv[1], ips[2], 64);
    e2e_member_watch w;
    assert_true(e2e_member_watch_start(&w, 2, ips[1]));
    e2e_pod_recorder rec;
    assert_true(e2e_pod_recorder_start(&rec, ns, "ms-hand"));
    int64_t t0 = e2e_wall_us();
    assert_true(e2e_delete(c, &K8S_RES_GODISES, ns, "ms-hand-2", -1));
    int64_t want[] = {1, 3, 4};
    wait_members(ns, "ms-hand", want, 3);
    int64_t forget = e2e_forget_time_us(surv, 2, 2);
    check_stopped_after_forget(&w, 1, surv, 2);
    int64_t end = w.end_us;                    /* the watch saw its process end */
    e2e_pod_recorder_stop(&rec);
    assert_int_equal(e2e_pod_recorder_restarts(&rec, "ms-hand-2"), 0);
    audit_event *evs = NULL;
    int n = e2e_operator_writes(t0, &evs);
    assert_true(n > 0);
    const audit_event *cm = e2e_first_write(evs, n, "update", "configmaps", "ms-hand-config");
    const audit_event *rs = e2e_first_write(evs, n, "", "replicasets", "ms-hand-2");
    /* The pod goes by the operator's delete, or by the ReplicaSet controller's when the
     * scale to 0 reached it first (then the operator's cache has no pod left to delete):
     * either way after the ReplicaSet was touched. */
    audit_event *every = NULL;
    int nevery = e2e_writes_by(t0, "", &every);
    const audit_event *pod = e2e_first_write(every, nevery, "delete", "pods", "ms-hand-2-");
    const audit_event *fin = e2e_first_write(evs, n, "update", "godises", "ms-hand-2");
    assert_non_null(cm);
    assert_non_null(rs);
    assert_non_null(pod);
    assert_non_null(fin);
    fprintf(stderr, "ms-hand: ReplicaSet %s +%.3f s, pod delete +%.3f s (%.40s), process end +%.3f s, "
            "forget +%.3f s, ConfigMap +%.3f s, finalizer dropped +%.3f s\n", rs->verb,
            (rs->recv_us - t0) / 1e6, (pod->recv_us - t0) / 1e6, pod->user_agent, (end - t0) / 1e6,
            (forget - t0) / 1e6, (cm->recv_us - t0) / 1e6, (fin->recv_us - t0) / 1e6);
    assert_true(forget < rs->recv_us);         /* forgotten before its ReplicaSet is touched */
    assert_true(rs->recv_us <= pod->recv_us);  /* nothing recreates the pod */
    assert_true(end > 0 && end - forget < 3 * 1000000);   /* stopped at once after it */
    assert_true(forget < cm->recv_us);         /* the record follows the forget */
    assert_true(cm->recv_us < fin->recv_us);   /* and the finalizer goes last */
    free(evs);
    free(every);
    ns_done(ns);
}

static bool scaling_in(const char *type, const cJSON *gc, void *arg)
{
    return strcmp(type, "DELETED") != 0 && gd_json_int_or(gc, "status.scaleInID", 0) == *(int64_t *)arg;
}

typedef struct {
    int64_t id;
    char old_uid[64];
} rebuilt_q;

/* A ConfigMap other than the one deleted, listing member q->id. */
static bool rebuilt_listing(const char *type, const cJSON *cm, void *arg)
{
    const rebuilt_q *q = arg;
    if (strcmp(type, "DELETED") == 0 || strcmp(gd_meta_uid(cm), q->old_uid) == 0) return false;
    char v[1024], want[32];
    snprintf(v, sizeof v, ",%s", gd_json_str_or(cm, "data.initial-cluster", ""));
    snprintf(want, sizeof want, ",%lld@", (long long)q->id);
    return strstr(v, want) != NULL;
}

/* The ConfigMap (the record of a confirmed forget) vanishes while a scale-in is waiting to
 * send its forget: rebuilt from status.members with the victim, then the forget goes out. */
static void test_configmap_missing_mid_scale_in(void **state)
{
    (void)state;
    NS_START(ns);
    char ips[3][64];
    cluster_up(ns, "ms-cm", 3, ips);
    const char *refuse[] = {"fault", "refuse", "on"}, *accept[] = {"fault", "refuse", "off"};
    assert_true(e2e_standin_cmd(ips[0], E2E_STANDIN_PEER_PORT, 3, refuse));   /* the forget's via */
    e2e_member_watch w;
    assert_true(e2e_member_watch_start(&w, 3, ips[2]));
    e2e_pod_recorder rec;
    assert_true(e2e_pod_recorder_start(&rec, ns, "ms-cm"));
    assert_true(e2e_cluster_scale(c, ns, "ms-cm", 2));
    int64_t victim = 3;
    assert_true(e2e_watch_until(c, &K8S_RES_GODISCLUSTERS, ns, NULL, "metadata.name=ms-cm",
                                scaling_in, &victim, T));
    rebuilt_q q = {.id = 3};
    cJSON *cm = NULL;
    assert_int_equal(k8s_get(c, &K8S_RES_CONFIGMAPS, ns, "ms-cm-config", &cm, NULL), GD_OK);
    snprintf(q.old_uid, sizeof q.old_uid, "%s", gd_meta_uid(cm));
    cJSON_Delete(cm);
    assert_true(e2e_delete(c, &K8S_RES_CONFIGMAPS, ns, "ms-cm-config", -1));
    assert_true(e2e_watch_until(c, &K8S_RES_CONFIGMAPS, ns, NULL, "metadata.name=ms-cm-config",
                                rebuilt_listing, &q, T));         /* rebuilt, member 3 in it */
    assert_int_equal(e2e_forget_time_us(ips, 2, 3), 0);           /* not forgotten yet */
    assert_true(e2e_standin_cmd(ips[0], E2E_STANDIN_PEER_PORT, 3, accept));
    int64_t want[] = {1, 2};
    wait_members(ns, "ms-cm", want, 2);
    check_stopped_after_forget(&w, 1, ips, 2);                     /* the forget was sent */
    e2e_pod_recorder_stop(&rec);
    assert_int_equal(e2e_pod_recorder_restarts(&rec, "ms-cm-3"), 0);
    ns_done(ns);
}

static bool forgotten_by(char ips[][64], int n, int64_t id, int timeout_ms)
{
    int64_t deadline = gd_mono_ms() + timeout_ms;
    while (!e2e_forget_time_us(ips, n, id) && gd_mono_ms() < deadline) gd_sleep_ms(20);
    return e2e_forget_time_us(ips, n, id) != 0;
}

/* The leading manager (workers and all) is killed in the middle of a removal, after the
 * forget was applied and before the operator heard +OK (the via member holds its answer
 * back). Member 1 leads, so the victim is a follower that does not learn its removal.
 *  - 2 -> 1, forget first (the victim votes for its own removal): it is still running,
 *    forgotten, until the manager that takes over stops it — before that one writes
 *    anything else about this cluster. It runs until the Lease changes hands.
 *  - 5 -> 4, stop first (1 to 4 commit its forget alone with a node's worth of votes to
 *    spare: each member alone on its node, antiAffinity required on five nodes — the
 *    devcluster's three have two of the four on one node, and forget first): it was stopped
 *    before its forget, so the next manager only records the forget (its first write about
 *    the cluster) and never needs to stop it: it never ran forgotten.
 * (3 -> 2 and 4 -> 3 forget first, as 2 -> 1: a stop first would leave no failure to spare.) */
static void manager_killed_mid_removal(const char *name, int n)
{
    NS_START(ns);
    char ips[5][64];
    bool stop_first = n >= 5;
    if (stop_first) {
        snprintf(extra_ns, sizeof extra_ns, "%s", ns);
        int have = e2e_schedulable_nodes(c);
        assert_true(have > 0);
        char dir[256];
        e2e_log_dir(dir, sizeof dir, "membership-nodes");
        if (have < n) assert_true(e2e_extra_nodes_start(c, &extra, "ms-extra-node", n - have, dir, T));
        cluster_up_spec(ns, name, n, "\"antiAffinity\":\"required\"", ips);
        /* one member a node: what makes this removal stop first */
        char sel[96];
        snprintf(sel, sizeof sel, "cluster-name=%s", name);
        k8s_list_opts lo = {.label_selector = sel};
        cJSON *pods = NULL;
        assert_int_equal(k8s_list(c, &K8S_RES_PODS, ns, &lo, &pods, NULL), GD_OK);
        const cJSON *p, *q;
        cJSON_ArrayForEach(p, gd_json_path(pods, "items"))
            cJSON_ArrayForEach(q, gd_json_path(pods, "items"))
                if (p != q && !strcmp(gd_json_str_or(p, "spec.nodeName", "?"), gd_json_str_or(q, "spec.nodeName", "!")))
                    fail_msg("%s and %s share node %s", gd_meta_name(p), gd_meta_name(q),
                             gd_json_str_or(p, "spec.nodeName", ""));
        cJSON_Delete(pods);
    } else {
        cluster_up(ns, name, n, ips);
    }
    int leader = e2e_operator_leader(&op, c);
    assert_true(leader >= 0);
    const char *campaign[] = {"campaign"};
    assert_true(e2e_standin_cmd(ips[0], 6379, 1, campaign));
    int64_t until = gd_mono_ms() + T;
    while (e2e_standin_stat(ips[1], "leader") != 1 && gd_mono_ms() < until) gd_sleep_ms(50);
    assert_int_equal(e2e_standin_stat(ips[1], "leader"), 1);
    /* Member 1 holds back its answers to membership commands only: before a stop first the
     * operator asks the survivors whether they answer, and one slow to answer is not
     * counted (member 1 slow to answer everything would make this removal forget first). */
    const char *delay = stop_first ? "delay-membership-ms" : "delay-ms";
    const char *slow[] = {"fault", delay, "6000"}, *fast[] = {"fault", delay, "0"};
    assert_true(e2e_standin_cmd(ips[0], E2E_STANDIN_PEER_PORT, 3, slow));
    e2e_member_watch w;
    assert_true(e2e_member_watch_start(&w, n, ips[n - 1]));
    assert_true(e2e_cluster_scale(c, ns, name, n - 1));
    assert_true(forgotten_by(ips, n - 1, n, T));
    int64_t forget = e2e_forget_time_us(ips, n - 1, n);
    e2e_operator_kill(&op, leader);
    int64_t killed = e2e_wall_us();
    assert_true(e2e_standin_cmd(ips[0], E2E_STANDIN_PEER_PORT, 3, fast));
    int64_t want[] = {1, 2, 3, 4};
    wait_members(ns, name, want, n - 1);
    int64_t end = e2e_member_watch_end(&w, T);
    assert_true(end > 0);
    fprintf(stderr, "figure: %d -> %d with the leading manager killed %s, member %d ran %.3f s "
            "after its forget (the Lease takeover included) and started %d elections\n", n, n - 1,
            stop_first ? "between stop and forget" : "between forget and stop", n,
            end > forget ? (end - forget) / 1e6 : 0.0, e2e_vote_requests_from(ips, n - 1, n, forget));
    if (stop_first) assert_true(end <= forget);      /* stopped before its forget */
    /* the new leader's writes about this cluster */
    audit_event *evs = NULL;
    int nev = e2e_operator_writes(killed, &evs);
    char who[128], victim[64], cm[64];
    snprintf(who, sizeof who, "manager=%s", op.ident[1 - leader]);
    snprintf(victim, sizeof victim, "%s-%d", name, n);
    snprintf(cm, sizeof cm, "%s-config", name);
    int k = 0;
    for (int i = 0; i < nev; i++)
        if (strstr(evs[i].user_agent, who) && !strncmp(evs[i].name, name, strlen(name))) evs[k++] = evs[i];
    const audit_event *rs = e2e_first_write(evs, k, "update", "replicasets", victim);
    const audit_event *first = !stop_first ? rs : e2e_first_write(evs, k, "update", "configmaps", cm);
    assert_non_null(first);
    if (stop_first) assert_null(rs);                  /* nothing left to stop */
    for (int i = 0; i < k && &evs[i] != first; i++) {
        fprintf(stderr, "%s: before the %s: %s %s %s\n", name, stop_first ? "record" : "stop",
                evs[i].verb, evs[i].resource, evs[i].name);
        assert_true(strcmp(evs[i].resource, "godisclusters/status") != 0);
        assert_true(strcmp(evs[i].resource, "godises") != 0 || strcmp(evs[i].name, victim) != 0);
        assert_true(strcmp(evs[i].resource, "pods") != 0);
    }
    free(evs);
    e2e_operator_spawn(&op, leader);                  /* a standby again for what follows */
    ns_done(ns);
}

static void test_manager_killed_between_forget_and_stop(void **state)
{
    (void)state;
    manager_killed_mid_removal("ms-crash", 2);
}

static void test_manager_killed_between_stop_and_forget(void **state)
{
    (void)state;
    manager_killed_mid_removal("ms-crash5", 5);
}

/* ---- scale-out ---- */

/* When the stand-in at ip applied `cluster meet id` (µs since the epoch), or 0. */
static int64_t meet_time_us(const char *ip, int64_t id)
{
    static e2e_sev evs[4096];
    char want[32];
    snprintf(want, sizeof want, "applied-meet %lld", (long long)id);
    int n = e2e_standin_events(ip, evs, 4096);
    for (int i = 0; i < n; i++)
        if (!strcmp(evs[i].text, want)) return evs[i].wall_us;
    return 0;
}

static bool appeared(const char *type, const cJSON *obj, void *arg)
{
    if (strcmp(type, "DELETED") == 0) return false;
    snprintf(arg, 64, "%s", gd_meta_uid(obj));
    return true;
}

/* The Godis <name>-2's uid now ("" when there is none). */
static void godis_uid(const char *ns, const char *name, char *uid)
{
    char g[80];
    snprintf(g, sizeof g, "%s-2", name);
    cJSON *obj = NULL;
    uid[0] = '\0';
    if (k8s_get(c, &K8S_RES_GODISES, ns, g, &obj, NULL) == GD_OK) snprintf(uid, 64, "%s", gd_meta_uid(obj));
    cJSON_Delete(obj);
}

/* After an interrupted 1 -> 2 step: members 1 and 2, Ready (a write went through), a write
 * through each member succeeds, member 2 is the Godis created before the interruption
 * (never recreated), and no other id was handed out. */
static void scale_out_finished(const char *ns, const char *name, const char *uid, int64_t killed)
{
    int64_t want[] = {1, 2};
    wait_members(ns, name, want, 2);
    int64_t done = e2e_wall_us();
    cJSON *gc = e2e_cluster_get(c, ns, name);
    assert_non_null(gc);
    assert_int_equal(gd_json_int_or(gc, "status.nextID", 0), 3);
    cJSON_Delete(gc);
    char sel[80], now[64];
    snprintf(sel, sizeof sel, "cluster-name=%s", name);
    assert_int_equal(e2e_count_all(c, &K8S_RES_GODISES, ns, sel), 2);
    godis_uid(ns, name, now);
    assert_string_equal(now, uid);
    for (int id = 1; id <= 2; id++) {
        char g[80], ip[64];
        snprintf(g, sizeof g, "%s-%d", name, id);
        assert_true(e2e_member_ip(c, ns, g, ip, sizeof ip));
        godis_client *gcl = godis_client_new(ip, 6379, NULL);
        assert_non_null(gcl);
        gd_err e = GD_ERR_TIMEOUT;
        for (int64_t until = gd_mono_ms() + T; e != GD_OK && gd_mono_ms() < until;)
            if ((e = godis_set(gcl, "itest-scale-out", g)) != GD_OK) gd_sleep_ms(200);
        if (e != GD_OK) fail_msg("write through %s: %s", g, godis_last_error(gcl));
        godis_client_destroy(&gcl);
    }
    fprintf(stderr, "%s: 1 -> 2 converged %.3f s after the kill\n", name, (done - killed) / 1e6);
}

/* The leading manager (its workers and informers) is SIGKILLed the moment member 2's Godis
 * appears: the step created it and had not met it yet (it waits for the pod to be Ready).
 * The manager that takes over meets it and records it. */
static void test_scale_out_manager_killed_after_godis(void **state)
{
    (void)state;
    NS_START(ns);
    char ips[1][64], uid[64] = "";
    cluster_up(ns, "ms-out", 1, ips);
    int leader = e2e_operator_leader(&op, c);
    assert_true(leader >= 0);
    assert_true(e2e_cluster_scale(c, ns, "ms-out", 2));
    assert_true(e2e_watch_until(c, &K8S_RES_GODISES, ns, NULL, "metadata.name=ms-out-2", appeared, uid, T));
    e2e_operator_kill(&op, leader);
    int64_t killed = e2e_wall_us();
    assert_int_equal(meet_time_us(ips[0], 2), 0);        /* created, not admitted yet */
    scale_out_finished(ns, "ms-out", uid, killed);
    int64_t met = meet_time_us(ips[0], 2);
    fprintf(stderr, "ms-out: member 2 met %.3f s after the kill (the Lease takeover included)\n",
            (met - killed) / 1e6);
    assert_true(met > killed);
    e2e_operator_spawn(&op, leader);                 /* a standby again for what follows */
    ns_done(ns);
}

/* The leading manager's workers are SIGKILLed right after member 1 applied the meet of
 * member 2, before its +OK reached the worker (member 1 holds its answers back): admitted,
 * not recorded. Member 2 is a voter of a 2-member cluster that needs it for quorum — it
 * runs, created before its meet — and the worker that takes the shard meets it again
 * (idempotent) and records it. With the meet before the Godis, this was a cluster without
 * quorum for good. */
static void test_scale_out_workers_killed_after_meet(void **state)
{
    (void)state;
    NS_START(ns);
    char ips[1][64], uid[64];
    cluster_up(ns, "ms-outw", 1, ips);
    int leader = e2e_operator_leader(&op, c);
    assert_true(leader >= 0);
    const char *slow[] = {"fault", "delay-ms", "6000"}, *fast[] = {"fault", "delay-ms", "0"};
    assert_true(e2e_standin_cmd(ips[0], E2E_STANDIN_PEER_PORT, 3, slow));
    assert_true(e2e_cluster_scale(c, ns, "ms-outw", 2));
    int64_t until = gd_mono_ms() + T;
    while (!meet_time_us(ips[0], 2) && gd_mono_ms() < until) gd_sleep_ms(20);
    pid_t kids[32];
    int n = e2e_children(op.pid[leader], "godis-worker", kids, 32);
    for (int i = 0; i < n; i++) kill(kids[i], SIGKILL);
    int64_t killed = e2e_wall_us();
    assert_true(n > 0);
    assert_true(meet_time_us(ips[0], 2) > 0);
    cJSON *gc = e2e_cluster_get(c, ns, "ms-outw");     /* admitted, not recorded */
    int64_t ids[16];
    assert_int_equal(e2e_status_members(gc, ids, 16), 1);
    assert_int_equal(gd_json_int_or(gc, "status.scaleOutID", 0), 2);
    cJSON_Delete(gc);
    godis_uid(ns, "ms-outw", uid);
    assert_true(uid[0] != '\0');                      /* it exists: created before the meet */
    assert_true(e2e_standin_cmd(ips[0], E2E_STANDIN_PEER_PORT, 3, fast));
    scale_out_finished(ns, "ms-outw", uid, killed);
    ns_done(ns);
}

/* ---- Retain, and deletions that finish ---- */

static bool retained(const cJSON *pvc)
{
    return pvc && !gd_meta_deleting(pvc) && !gd_json_path(pvc, "metadata.ownerReferences") &&
           gd_meta_annotation(pvc, "godis.kumkeehyun.github.com/retained-from");
}

static void assert_retained(const char *ns, const char *claim)
{
    cJSON *pvc = NULL;
    assert_int_equal(k8s_get(c, &K8S_RES_PVCS, ns, claim, &pvc, NULL), GD_OK);
    if (!retained(pvc)) fail_msg("PVC %s/%s was not retained", ns, claim);
    cJSON_Delete(pvc);
}

static void test_retain_keeps_pvcs(void **state)
{
    (void)state;
    NS_START(ns);
    assert_true(e2e_cluster_create_spec(c, ns, "ms-keep",
                                        "{\"replicas\":3,\"storage\":{\"reclaimPolicy\":\"Retain\"}}"));
    converge(ns, "ms-keep", 3);
    assert_true(e2e_cluster_scale(c, ns, "ms-keep", 2));
    int64_t want[] = {1, 2};
    wait_members(ns, "ms-keep", want, 2);
    assert_int_equal(e2e_count_all(c, &K8S_RES_GODISES, ns, "cluster-name=ms-keep"), 2);
    assert_retained(ns, "data-ms-keep-3");            /* the removed member's volume */
    assert_true(e2e_delete(c, &K8S_RES_GODISCLUSTERS, ns, "ms-keep", -1));
    assert_true(e2e_wait_gone(c, &K8S_RES_GODISCLUSTERS, ns, "ms-keep", T));
    assert_true(e2e_wait_count(c, &K8S_RES_GODISES, ns, "cluster-name=ms-keep", 0, T));
    assert_true(e2e_wait_count(c, &K8S_RES_PODS, ns, "cluster-name=ms-keep", 0, T));
    for (int i = 1; i <= 3; i++) {
        char claim[64];
        snprintf(claim, sizeof claim, "data-ms-keep-%d", i);
        assert_retained(ns, claim);
    }
    ns_done(ns);
}

static void test_cluster_and_namespace_deletion_finish(void **state)
{
    (void)state;
    NS_START(ns);
    assert_true(e2e_cluster_create(c, ns, "ms-del", 3));
    converge(ns, "ms-del", 3);
    assert_true(e2e_delete(c, &K8S_RES_GODISCLUSTERS, ns, "ms-del", -1));
    const k8s_resource *kinds[] = {&K8S_RES_GODISES, &K8S_RES_REPLICASETS, &K8S_RES_PODS,
                                   &K8S_RES_PVCS, &K8S_RES_SERVICES, &K8S_RES_CONFIGMAPS};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
        int64_t deadline = gd_mono_ms() + T;
        int n = -1;
        while ((n = e2e_count_all(c, kinds[i], ns, "cluster-name=ms-del")) != 0 && gd_mono_ms() < deadline)
            gd_sleep_ms(200);
        if (n != 0) fail_msg("%d %s of ms-del left (Terminating included)", n, kinds[i]->resource);
    }
    /* the whole namespace, with a running cluster in it */
    assert_true(e2e_cluster_create(c, ns, "ms-ns", 3));
    converge(ns, "ms-ns", 3);
    ns_done(ns);
}

/* After every test, pass or fail: the managers a test killed run again, and a test's own
 * nodes go — after the namespace whose pods ran there (their Godis finalizers need the
 * manager) — so each test after it finds the operator and the devcluster as they were. */
static int restore(void **state)
{
    (void)state;
    for (int i = 0; i < 2; i++)
        if (op.pid[i] <= 0) {
            fprintf(stderr, "teardown: manager %d was left killed; started again\n", i);
            e2e_operator_spawn(&op, i);
        }
    if (extra_ns[0]) {
        if (!e2e_ns_delete_wait(c, extra_ns, T))
            fprintf(stderr, "teardown: namespace %s not gone\n", extra_ns);
        extra_ns[0] = '\0';
    }
    e2e_extra_nodes_stop(c, &extra);
    return 0;
}

static int setup(void **state)
{
    (void)state;
    return e2e_operator_suite_setup(&c, &op, "membership", NULL);
}

static int teardown(void **state)
{
    (void)state;
    return e2e_operator_suite_teardown(&c, &op, "scale-in and heal (itest_membership)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_scale_in_5_to_2, restore),
        cmocka_unit_test_teardown(test_removed_leader_never_restarts, restore),
        cmocka_unit_test_teardown(test_two_to_one_removing_the_leader, restore),
        cmocka_unit_test_teardown(test_hand_deleted_godis_forgotten_before_it_goes, restore),
        cmocka_unit_test_teardown(test_configmap_missing_mid_scale_in, restore),
        cmocka_unit_test_teardown(test_manager_killed_between_forget_and_stop, restore),
        cmocka_unit_test_teardown(test_manager_killed_between_stop_and_forget, restore),
        cmocka_unit_test_teardown(test_scale_out_manager_killed_after_godis, restore),
        cmocka_unit_test_teardown(test_scale_out_workers_killed_after_meet, restore),
        cmocka_unit_test_teardown(test_retain_keeps_pvcs, restore),
        cmocka_unit_test_teardown(test_cluster_and_namespace_deletion_finish, restore),
    };
    return cmocka_run_group_tests_name("membership", tests, setup, teardown);
}
