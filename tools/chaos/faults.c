/* faults.c — the campaign: at random moments (3-8 s apart) one fault of a random kind hits
 * a random target, and in between random clusters are scaled to random sizes. Faults are
 * injected one after the other; a stopped leader is continued and a killed node agent comes
 * back (after 5-40 s, like a rebooted node) before the campaign ends. Every victim member or
 * node is recorded as a hit: the quorum check does not count what a fault took down. */
#include "chaos.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gd_json.h"
#include "gd_time.h"

#define STOP_LEADER_MS 20000        /* longer than the Lease (15 s) */

void ch_hit_member(chaos *x, int cluster, int64_t id, int64_t for_ms)
{
    pthread_mutex_lock(&x->mu);
    int i = x->nhits < CH_MAX_HITS ? x->nhits++ : (int)(ch_now(x) % CH_MAX_HITS);
    x->hits[i] = (ch_hit){.cluster = cluster, .id = id, .until = ch_now(x) + for_ms};
    pthread_mutex_unlock(&x->mu);
}

void ch_hit_pod(chaos *x, int cluster, int64_t id, int64_t for_ms, int64_t pod_max_ms)
{
    pthread_mutex_lock(&x->mu);
    int i = x->nhits < CH_MAX_HITS ? x->nhits++ : (int)(ch_now(x) % CH_MAX_HITS);
    x->hits[i] = (ch_hit){.cluster = cluster, .id = id, .until = ch_now(x) + for_ms,
                          .until_pod = ch_now(x) + pod_max_ms};
    pthread_mutex_unlock(&x->mu);
}

void ch_hit_node(chaos *x, const char *node, int64_t for_ms)
{
    pthread_mutex_lock(&x->mu);
    int i = x->nhits < CH_MAX_HITS ? x->nhits++ : (int)(ch_now(x) % CH_MAX_HITS);
    x->hits[i] = (ch_hit){.cluster = -1, .until = ch_now(x) + for_ms};
    snprintf(x->hits[i].node, sizeof x->hits[i].node, "%s", node);
    pthread_mutex_unlock(&x->mu);
}

static void note_fault(chaos *x, ch_fault f, const char *target)
{
    pthread_mutex_lock(&x->mu);
    x->fault_count[f]++;
    x->faults_done++;
    snprintf(x->last_fault, sizeof x->last_fault, "#%d %s %s", x->faults_done, ch_fault_name(f), target);
    x->last_fault_at = ch_now(x);
    int n = x->faults_done;
    pthread_mutex_unlock(&x->mu);
    ch_log(x, "fault #%d: %s %s", n, ch_fault_name(f), target);
}

/* Waits ms while reaping and restarting processes. */
static void idle(chaos *x, int64_t ms)
{
    for (int64_t end = gd_mono_ms() + ms; gd_mono_ms() < end && atomic_load(&x->stop) != 2;) {
        ch_tend(x);
        gd_sleep_ms(100);
    }
}

bool ch_create_clusters(chaos *x)
{
    for (int i = 0; i < x->nclusters; i++) {
        char name[16], body[400];
        ch_cluster_name(i, name, sizeof name);
        int r = ch_rand_int(x, 1, x->max_replicas);
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"GodisCluster\","
                 "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},\"spec\":{\"replicas\":%d}}",
                 name, x->ns, r);
        cJSON *o = cJSON_Parse(body);
        k8s_status st = {0};
        gd_err e = k8s_create(x->c, &K8S_RES_GODISCLUSTERS, x->ns, o, NULL, &st);
        cJSON_Delete(o);
        if (e) {
            ch_log(x, "cannot create GodisCluster %s: %s %s", name, gd_strerror(e), st.message);
            return false;
        }
        pthread_mutex_lock(&x->mu);
        x->replicas[i] = r;
        x->created_at[i] = ch_now(x);
        pthread_mutex_unlock(&x->mu);
        ch_log(x, "created %s/%s with %d members", x->ns, name, r);
    }
    return true;
}

static void scale_one(chaos *x)
{
    int i = ch_rand_int(x, 0, x->nclusters - 1);
    int r = ch_rand_int(x, 1, x->max_replicas);
    if (r == x->replicas[i]) r = r % x->max_replicas + 1;
    char name[16], patch[64];
    ch_cluster_name(i, name, sizeof name);
    snprintf(patch, sizeof patch, "{\"spec\":{\"replicas\":%d}}", r);
    k8s_status st = {0};
    gd_err e = k8s_patch(x->c, &K8S_RES_GODISCLUSTERS, x->ns, name, K8S_PATCH_MERGE, patch,
                         NULL, NULL, &st);
    if (e) {   /* the API server may be restarting: the scale is simply skipped */
        ch_log(x, "scale %s to %d not done: %s", name, r, gd_strerror(e));
        return;
    }
    pthread_mutex_lock(&x->mu);
    int from = x->replicas[i];
    x->replicas[i] = r;
    pthread_mutex_unlock(&x->mu);
    ch_log(x, "scale %s %d -> %d", name, from, r);
}

/* A random recorded member: cluster index, id, its pod's name, IP and node ("" if none). */
typedef struct {
    int cluster;
    int64_t id;
    char name[16], godis[40], pod[128], ip[32], node[64];
} target;

/* min_members > 1 asks for a cluster that can lose one member for good and keep a quorum:
 * at least that many members, every one Ready, no step in flight, and no member lost to an
 * earlier fault still waiting to be replaced (the status lags a deletion by a moment: two
 * Godis deleted 3 s apart once both passed the first three tests). Deleting the Godis of a
 * 1- or 2-member cluster, or a second one of 3 before the first was replaced (the volumes
 * go with them), takes the quorum away for ever, and the operator rightly refuses to forget
 * a member without one: a fault beyond what any operator can heal, not a test of this one. */
static bool pick_member_of(chaos *x, target *t, int min_members)
{
    memset(t, 0, sizeof *t);
    t->cluster = ch_rand_int(x, 0, x->nclusters - 1);
    ch_cluster_name(t->cluster, t->name, sizeof t->name);
    cJSON *gc = NULL;
    if (k8s_get(x->c, &K8S_RES_GODISCLUSTERS, x->ns, t->name, &gc, NULL) != GD_OK) return false;
    cJSON *members = gd_json_path(gc, "status.members");
    int n = cJSON_GetArraySize(members);
    if (min_members > 1) {
        int64_t lost = x->lost_id[t->cluster];
        const cJSON *m;
        cJSON_ArrayForEach(m, members)
            if (lost && cJSON_IsNumber(m) && (int64_t)m->valuedouble == lost) lost = -1;
        bool ok = n >= min_members && gd_json_int_or(gc, "status.readyReplicas", 0) == n &&
                  !gd_json_int_or(gc, "status.scaleOutID", 0) &&
                  !gd_json_int_or(gc, "status.scaleInID", 0) && lost >= 0;
        if (!ok) {
            cJSON_Delete(gc);
            return false;
        }
        x->lost_id[t->cluster] = 0;         /* replaced, and the cluster whole again */
    }
    const cJSON *m = n > 0 ? cJSON_GetArrayItem(members, ch_rand_int(x, 0, n - 1)) : NULL;
    if (cJSON_IsNumber(m) && m->valuedouble >= 1 && m->valuedouble < 2147483648.0)
        t->id = (int64_t)m->valuedouble;
    cJSON_Delete(gc);
    if (t->id <= 0) return false;
    snprintf(t->godis, sizeof t->godis, "%s-%lld", t->name, (long long)t->id);
    char sel[80];
    snprintf(sel, sizeof sel, "node-name=%s", t->godis);
    k8s_list_opts lo = {.label_selector = sel};
    cJSON *pods = NULL;
    if (k8s_list(x->c, &K8S_RES_PODS, x->ns, &lo, &pods, NULL) == GD_OK) {
        const cJSON *p;
        cJSON_ArrayForEach(p, gd_json_path(pods, "items")) {
            if (gd_meta_deleting(p)) continue;
            snprintf(t->pod, sizeof t->pod, "%s", gd_meta_name(p));
            snprintf(t->ip, sizeof t->ip, "%s", gd_json_str_or(p, "status.podIP", ""));
            snprintf(t->node, sizeof t->node, "%s", gd_json_str_or(p, "spec.nodeName", ""));
        }
    }
    cJSON_Delete(pods);
    return true;
}

static bool pick_member(chaos *x, target *t) { return pick_member_of(x, t, 1); }

static pid_t leader_pid(chaos *x, int *idx)
{
    int l = ch_leader(x);
    if (idx) *idx = l;
    return l >= 0 ? x->mgr[l].pid : 0;
}

static bool kill_child(chaos *x, ch_fault f, const char *comm)
{
    int l;
    pid_t parent = leader_pid(x, &l);
    pid_t kids[16];
    int n = parent ? ch_children(parent, comm, kids, 16) : 0;
    if (!n) return false;
    pid_t victim = kids[ch_rand_int(x, 0, n - 1)];
    char what[96];
    snprintf(what, sizeof what, "pid %d (child of the leader, manager %d)", (int)victim, l);
    note_fault(x, f, what);
    kill(victim, SIGKILL);
    return true;
}

static bool delete_object(chaos *x, ch_fault f, const k8s_resource *r, const char *name,
                          const target *t, int64_t hit_ms)
{
    char what[160];
    snprintf(what, sizeof what, "%s %s/%s", r->kind, x->ns, name);
    note_fault(x, f, what);
    if (hit_ms) ch_hit_member(x, t->cluster, t->id, hit_ms);
    k8s_status st = {0};
    gd_err e = k8s_delete(x->c, r, x->ns, name, NULL, &st);
    if (e && e != GD_ERR_NOT_FOUND) ch_log(x, "  delete failed: %s %s", gd_strerror(e), st.message);
    return true;
}

static bool inject(chaos *x, ch_fault f)
{
    target t;
    char what[400];
    int l;
    pid_t pid;
    switch (f) {
    case F_KILL_LEADER:
        if (!(pid = leader_pid(x, &l))) return false;
        snprintf(what, sizeof what, "manager %d (pid %d)", l, (int)pid);
        note_fault(x, f, what);
        kill(pid, SIGKILL);
        return true;
    case F_STOP_LEADER:
        if (!(pid = leader_pid(x, &l))) return false;
        snprintf(what, sizeof what, "manager %d (pid %d) for %d s", l, (int)pid, STOP_LEADER_MS / 1000);
        note_fault(x, f, what);
        x->mgr[l].stopped = true;
        kill(pid, SIGSTOP);
        idle(x, STOP_LEADER_MS);
        kill(pid, SIGCONT);
        x->mgr[l].stopped = false;
        ch_log(x, "  manager %d continued", l);
        return true;
    case F_KILL_INFORMER: return kill_child(x, f, "godis-informer");
    case F_KILL_WORKER: return kill_child(x, f, "godis-worker");
    case F_KILL_MEMBER:
        if (!pick_member(x, &t) || !t.ip[0] || !(pid = ch_member_process(t.ip))) return false;
        snprintf(what, sizeof what, "%s/%s (pod %s, %s, pid %d)", x->ns, t.godis, t.pod, t.ip, (int)pid);
        note_fault(x, f, what);
        ch_hit_member(x, t.cluster, t.id, 60000);
        kill(pid, SIGKILL);
        return true;
    case F_RESTART_APISERVER:
    case F_RESTART_ETCD: {
        const char *comp = f == F_RESTART_ETCD ? "etcd" : "kube-apiserver";
        note_fault(x, f, comp);
        if (!ch_devcluster_restart(x, comp)) ch_log(x, "  tools/devcluster restart %s failed", comp);
        return true;
    }
    case F_EXPIRE_WATCH:
        note_fault(x, f, "etcd compacted to its current revision, kube-apiserver restarted");
        if (!ch_etcd_compact(x)) ch_log(x, "  etcd compaction failed");
        if (!ch_devcluster_restart(x, "kube-apiserver")) ch_log(x, "  restart failed");
        return true;
    case F_KILL_NODE_AGENT: {
        for (int i = 0; i < x->nagents; i++)
            if (!x->agent[i].pid) return false;             /* one node down at a time */
        int i = ch_rand_int(x, 0, x->nagents - 1);
        char node[64];
        ch_agent_node(i, node, sizeof node);
        int down = ch_rand_int(x, 5, 40);
        snprintf(what, sizeof what, "%d (node %s, pid %d) for %d s", i, node, (int)x->agent[i].pid, down);
        note_fault(x, f, what);
        ch_hit_node(x, node, (int64_t)down * 1000 + 120000);
        pthread_mutex_lock(&x->mu);
        x->agent[i].restart_at = ch_now(x) + (int64_t)down * 1000;
        pthread_mutex_unlock(&x->mu);
        kill(x->agent[i].pid, SIGKILL);
        return true;
    }
    case F_DELETE_GODIS:
        if (!pick_member_of(x, &t, 3)) return false;
        x->lost_id[t.cluster] = t.id;
        /* excused while Raft still counts it: until it leaves status.members */
        return delete_object(x, f, &K8S_RES_GODISES, t.godis, &t, 3600000);
    case F_DELETE_CONFIGMAP: {
        char cm[40];
        if (!pick_member(x, &t)) return false;
        snprintf(cm, sizeof cm, "%s-config", t.name);
        return delete_object(x, f, &K8S_RES_CONFIGMAPS, cm, &t, 0);
    }
    case F_DELETE_POD:
        if (!pick_member(x, &t) || !t.pod[0]) return false;
        ch_hit_pod(x, t.cluster, t.id, 90000, 600000);
        return delete_object(x, f, &K8S_RES_PODS, t.pod, &t, 0);
    default:
        return false;
    }
}

int ch_campaign(chaos *x)
{
    int done = 0;
    while (done < x->faults && atomic_load(&x->stop) != 2) {
        int64_t wait = ch_rand_int(x, 3000, 8000), scale_at = ch_rand_int(x, 0, (int)wait);
        bool scale = ch_rand_int(x, 0, 9) < 6;
        idle(x, scale_at);
        if (scale) scale_one(x);
        idle(x, wait - scale_at);
        ch_fault f = (ch_fault)ch_rand_int(x, 0, F__COUNT - 1);
        for (int tries = 0; tries < 24 && !inject(x, f); tries++)
            f = (ch_fault)ch_rand_int(x, 0, F__COUNT - 1);   /* no target for it right now */
        done = x->faults_done;
    }
    /* the faults stop: whatever is down comes back (as after a reboot) */
    for (int64_t end = gd_mono_ms() + 60000; gd_mono_ms() < end; gd_sleep_ms(200)) {
        ch_tend(x);
        bool all = true;
        for (int i = 0; i < CH_MANAGERS; i++) all &= x->mgr[i].pid > 0;
        for (int i = 0; i < x->nagents; i++) all &= x->agent[i].pid > 0;
        if (all || atomic_load(&x->stop) == 2) break;
    }
    return done;        /* convergence is timed from the last fault (last_fault_at) */
}
