/* godis_reconcile_cluster.c — the GodisCluster controller: takes the godis_view observed
 * from the cache (godis_cluster_observe.c), asks the planner for the next step
 * (godis_plan.c) and performs exactly that step: a status write, the ConfigMap, a Godis
 * created or removed, a `cluster meet`/`forget` through a member, a member stopped.
 * Status (phase, members, conditions) is written with optimistic concurrency, so two
 * reconciles racing on stale caches cannot both record an intent: one gets a Conflict. */
#include "godis_reconcile.h"
#include "godis_cluster_ctx.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "godis_children.h"
#include "godis_client.h"
#include "godis_input.h"
#include "godis_metrics.h"
#include "godis_plan.h"
#include "godis_retire.h"
#include "godis_rollout.h"
#include "godis_slots.h"
#include "godis_status.h"
#include "godis_status_check.h"
#include "godis_storage.h"
#include "godis_write.h"
#include "gd_json.h"
#include "gd_log.h"
#include "gd_time.h"

#define WAIT_RECHECK_MS 2000
#define PROBE_RECHECK_MS 1000
#define STRAY_RECHECK_MS 1000
#define PROBE_KEY "godis-operator-ready-probe"   /* never starts with * $ + - : (godis dies) */

static godis_result ensure_configmap(godis_cluster_ctx *c)
{
    int64_t ids[GODIS_MAX_MEMBERS];
    int n = godis_plan_configmap_ids(&c->v, ids);
    char value[GODIS_MAX_MEMBERS * 160];
    if (godis_initial_cluster(value, sizeof value, c->ns, c->name, ids, n, c->e->cluster_domain) < 0)
        return gw_result(GD_ERR_TOO_LARGE);
    cJSON *want = godis_build_configmap(c->ns, c->name, c->uid, value);
    gd_err err;
    if (!c->configmap) {
        bool adopted = false;
        err = gw_create_or_adopt(c->e, &K8S_RES_CONFIGMAPS, want, c->cluster, &adopted);
        if (!err && adopted)
            godis_emit_event(c->e, c->cluster, "Normal", "ConfigMapAdopted",
                             "ConfigMap made without this operator's labels: adopted");
        else if (!err && strcmp(c->phase, "Running") == 0)
            godis_emit_event(c->e, c->cluster, "Warning", "ConfigMapRebuilt",
                             "ConfigMap was missing: rebuilt from status.members");
    } else {
        cJSON *fixed = cJSON_Duplicate(c->configmap, 1);
        gd_json_set(fixed, "data.initial-cluster", cJSON_CreateString(value));
        err = gw_update(c->e, &K8S_RES_CONFIGMAPS, fixed);
        cJSON_Delete(fixed);
    }
    cJSON_Delete(want);
    return gw_result(err);
}

static godis_result create_godis(godis_cluster_ctx *c, int64_t id, bool preferred)
{
    char name[300];
    snprintf(name, sizeof name, "%s-%lld", c->name, (long long)id);
    godis_child_spec s = {.ns = c->ns, .cluster = c->name, .godis = name, .id = id,
                          .preferred = preferred};
    cJSON *g = godis_build_godis(&s, c->uid);
    gd_err err = gw_create(c->e, &K8S_RES_GODISES, g);
    cJSON_Delete(g);
    return gw_result(err);
}

/* While initialising, every initial member is already recorded in status.members (the
 * intent was persisted and observed before any of them exists), so the missing ones are all
 * created in this one step rather than one per reconcile: each extra reconcile waited for
 * the cache to show the previous create, 2 round trips per cluster at no gain in safety
 * (no membership change is made here; the cluster bootstraps from the ConfigMap). Stops at
 * the first failed create; the next reconcile carries on from the cache. */
static godis_result create_initial_godises(godis_cluster_ctx *c, const godis_step *s)
{
    godis_result r = create_godis(c, s->id, true);
    for (int i = 0; i < c->v.nmembers && r.kind == GODIS_REQUEUE && r.err == GD_OK; i++) {
        int64_t id = c->v.members[i];
        int idx = godis_cluster_observed_index(c, id);
        if (id == s->id || (idx >= 0 && c->v.observed[idx].godis_exists)) continue;
        r = create_godis(c, id, true);
    }
    return r;
}

/* One RESP call on member via_id where a real cluster puts it: the pod IP from the Pod
 * cache first, then the member's Service name through the cluster's DNS
 * (godis_member_hosts). A failure is logged, and with event_reason also reported as a
 * Warning Event naming the member, every address tried and the cause; the step is retried
 * with backoff. */
typedef gd_err (*member_fn)(godis_client *gc, const void *arg, int timeout_ms);

static gd_err call_member(godis_cluster_ctx *c, int64_t via_id, const char *what,
                          const char *event_reason, member_fn fn, const void *arg)
{
    gd_err err = c->e->may_write ? c->e->may_write(c->e) : GD_OK;
    if (err) return err;
    char godis[300], hosts[2][GODIS_HOST_MAX], why[2][400] = {"", ""};
    snprintf(godis, sizeof godis, "%s-%lld", c->name, (long long)via_id);
    int idx = godis_cluster_observed_index(c, via_id);
    int n = godis_member_hosts(idx >= 0 ? c->pod_ip[idx] : NULL, godis, c->ns,
                               c->e->cluster_domain, hosts);
    err = GD_ERR_TRANSPORT;
    for (int i = 0; i < n && err != GD_OK; i++) {
        godis_client *gc = godis_client_new(hosts[i], c->e->godis_port, NULL);
        if (!gc) { snprintf(why[i], sizeof why[i], "%s: no memory", hosts[i]); continue; }
        err = fn(gc, arg, c->e->godis_timeout_ms);
        if (err) snprintf(why[i], sizeof why[i], "%s", godis_last_error(gc));
        godis_client_destroy(&gc);
    }
    if (err && err != GD_ERR_FENCED) {
        char msg[1000];
        snprintf(msg, sizeof msg, "%s through member %lld failed: %s%s%s", what, (long long)via_id,
                 n < 0 ? "member name too long" : why[0], why[1][0] ? "; then " : "", why[1]);
        if (event_reason) godis_emit_event(c->e, c->cluster, "Warning", event_reason, msg);
        else gd_log(GD_LOG_WARN, msg, "cluster", c->name, "namespace", c->ns, "error",
                    gd_strerror(err), NULL);
    }
    return err;
}

typedef struct {
    int64_t id;
    const char *url;
} member_arg;

static gd_err meet_fn(godis_client *gc, const void *arg, int timeout_ms)
{
    const member_arg *a = arg;
    return godis_meet(gc, a->id, a->url, timeout_ms);
}

static gd_err forget_fn(godis_client *gc, const void *arg, int timeout_ms)
{
    return godis_forget(gc, ((const member_arg *)arg)->id, timeout_ms);
}

/* A write (`set`) through a member: the cluster takes writes only once it has a leader
 * that hears a majority, which pods being Ready does not say. */
static gd_err probe_fn(godis_client *gc, const void *arg, int timeout_ms)
{
    (void)arg;
    (void)timeout_ms;
    char value[32];
    snprintf(value, sizeof value, "%lld", (long long)gd_wall_ms());
    return godis_set(gc, PROBE_KEY, value);
}

static gd_err membership_command(godis_cluster_ctx *c, int64_t via_id, bool meet, int64_t id)
{
    char url[300], what[80];
    godis_peer_url(url, sizeof url, c->ns, c->name, id, c->e->cluster_domain);
    snprintf(what, sizeof what, "cluster %s %lld", meet ? "meet" : "forget", (long long)id);
    member_arg a = {.id = id, .url = url};
    return call_member(c, via_id, what, meet ? "MeetFailed" : "ForgetFailed",
                       meet ? meet_fn : forget_fn, &a);
}

/* The meet admits a member that already runs (created with join=true, Ready; see
 * plan_scale_out); its +OK is recorded in status.members at once. A record that fails
 * (Conflict, the API server unreachable) or a worker killed before it leaves the step to be
 * resumed as it is: the meet again (idempotent: it commits in the configuration that
 * already holds the running newcomer), then the record. */
static godis_result do_meet(godis_cluster_ctx *c, const godis_step *s)
{
    gd_err err = membership_command(c, s->via_id, true, s->id);
    if (err) return gw_result(err == GD_ERR_FENCED ? err : GD_ERR_TRANSPORT);
    char msg[200];
    snprintf(msg, sizeof msg, "member %lld joined through member %lld (cluster meet)",
             (long long)s->id, (long long)s->via_id);
    godis_emit_event(c->e, c->cluster, "Normal", "MemberAdded", msg);
    godis_metrics_change(c->e, c->ns, c->name, "add");
    godis_step rec = *s;
    rec.kind = GP_FINISH_SCALE_OUT;
    rec.reason = "ScaledOut";
    rec.why = "new member admitted and recorded";
    return godis_status_step(c->e, c->cluster, &c->v, &rec, &c->written);
}

static gd_err stop_member(godis_cluster_ctx *c, int64_t id)
{
    char name[300];
    snprintf(name, sizeof name, "%s-%lld", c->name, (long long)id);
    return godis_stop_member(c->e, c->ns, name);
}

/* The forget; then, at once, the ConfigMap that records it as confirmed (one write, so a
 * worker killed after it resumes with the stop, not another forget) and the stop — a
 * forgotten follower starts campaigning after one election timeout, and a removed leader
 * has exited 0 and its kubelet restarts it. (Where the others commit without it, the member
 * was stopped before its forget already: the stop then writes nothing.) The stop is
 * attempted even if the record failed: the forget is done either way, and this worker
 * remembers its +OK (godis_forget_memo_note), so while the API server is unreachable the
 * retry goes on with the stop and the record instead of forgetting again. */
/* A forget sent while the victim runs (2 -> 1: its vote commits it) must be followed by the
 * stop at once, and the stop needs the API server: it must answer just before the forget
 * (one GET of the victim's ReplicaSet), or the forget waits. This narrows, not closes, the
 * window in which a removed leader exits 0 and its kubelet restarts it while the API server
 * is down; the memo of the +OK covers the rest. */
static gd_err api_answers(godis_cluster_ctx *c, int64_t id)
{
    char name[300];
    snprintf(name, sizeof name, "%s-%lld", c->name, (long long)id);
    cJSON *rs = NULL;
    gd_err err = k8s_get(c->e->client, &K8S_RES_REPLICASETS, c->ns, name, &rs, NULL);
    cJSON_Delete(rs);
    return err == GD_ERR_NOT_FOUND ? GD_OK : err;
}

static godis_result do_forget(godis_cluster_ctx *c, const godis_step *s)
{
    int idx = godis_cluster_observed_index(c, s->id);
    gd_err err = idx >= 0 && c->v.observed[idx].running ? api_answers(c, s->id) : GD_OK;
    if (err) return gw_result(err);
    err = membership_command(c, s->via_id, false, s->id);
    if (err) return gw_result(err == GD_ERR_FENCED ? err : GD_ERR_TRANSPORT);
    int64_t t0 = gd_mono_ms();
    godis_forget_memo_note(c->uid, s->id);
    c->v.forget_acked = true;
    godis_result rec = ensure_configmap(c);
    err = stop_member(c, s->id);
    char msg[200], ms[24], ids[24];
    snprintf(ms, sizeof ms, "%lld", (long long)(gd_mono_ms() - t0));
    snprintf(ids, sizeof ids, "%lld", (long long)s->id);
    gd_log(err ? GD_LOG_WARN : GD_LOG_INFO, "forgotten member stopped", "cluster", c->name,
           "namespace", c->ns, "id", ids, "stop-ms", ms, "error", err ? gd_strerror(err) : "", NULL);
    snprintf(msg, sizeof msg, "member %lld forgotten through member %lld (cluster forget)%s",
             (long long)s->id, (long long)s->via_id, err ? "" : " and stopped");
    godis_emit_event(c->e, c->cluster, "Normal", "MemberRemoved", msg);
    godis_metrics_change(c->e, c->ns, c->name, "remove");
    return err ? gw_result(err) : rec;
}

static godis_result do_stop(godis_cluster_ctx *c, const godis_step *s)
{
    gd_err err = stop_member(c, s->id);
    if (!err) {
        char msg[200];
        snprintf(msg, sizeof msg, "member %lld stopped (%s)", (long long)s->id, s->reason);
        godis_emit_event(c->e, c->cluster, "Normal", "MemberStopped", msg);
    }
    return gw_result(err);
}

static godis_result execute(godis_cluster_ctx *c, const godis_step *s);

/* A stop first counts on the survivors' votes for the forget that follows, and their pods
 * stay Ready for the node grace period after their node died: the survivors are asked now
 * (bounded: godis_probe_survivors), and the step is planned again without those that did
 * not answer — still the stop, or the forget first (sent to a member that answered). */
static godis_result stop_first_checked(godis_cluster_ctx *c, const godis_step *s)
{
    if (!godis_probe_survivors(c->e, c->ns, c->name, &c->v, (const char (*)[64])c->pod_ip, s->id))
        return do_stop(c, s);
    godis_step again = godis_plan_next(&c->v);
    gd_log(GD_LOG_WARN, "stop first reconsidered: survivors did not answer", "cluster", c->name,
           "namespace", c->ns, "step", godis_step_name(again.kind), "why", again.why, NULL);
    if (again.kind == GP_STOP_MEMBER && again.stop_first) return do_stop(c, &again);
    return execute(c, &again);
}

/* A stray (a Godis of ours that status.members does not list) is judged from the cache,
 * where the GodisCluster may lag its Godis objects: a worker that just took the shard
 * over, an informer relisting one kind. A member just added — meet done, its Godis created,
 * the status that names it not yet seen — then looks like a stray, and stopping it and
 * deleting its Godis without a forget would take a Raft member away unforgotten (and the
 * scale-out, resumed from the real status, would bring its id back on an empty volume).
 * So before a stray is touched, the API server's own copy of the GodisCluster must not
 * name it either. Strays are rare: one GET each. */
static bool stray_confirmed(godis_cluster_ctx *c, int64_t id)
{
    cJSON *live = NULL;
    if (k8s_get(c->e->client, &K8S_RES_GODISCLUSTERS, c->ns, c->name, &live, NULL) != GD_OK)
        return false;
    bool named = strcmp(gd_meta_uid(live), c->uid) != 0 ||
                 gd_json_int_or(live, "status.scaleOutID", 0) == id ||
                 gd_json_int_or(live, "status.scaleInID", 0) == id;
    const cJSON *m;
    cJSON_ArrayForEach(m, gd_json_path(live, "status.members"))
        named |= cJSON_IsNumber(m) && (int64_t)m->valuedouble == id;
    cJSON_Delete(live);
    if (named) {
        char ids[24];
        snprintf(ids, sizeof ids, "%lld", (long long)id);
        gd_log(GD_LOG_INFO, "stray left alone: the API server's status names it (the cache lags)",
               "cluster", c->name, "namespace", c->ns, "id", ids, NULL);
    }
    return !named;
}

/* A ConfigMap write is computed from status.members but checked only against the
 * ConfigMap's resourceVersion: a lagging GodisCluster cache (a manager that just took the
 * Lease, chaos seed 7: c02 [2..7] -> [1..6]) would list forgotten ids again. So outside the
 * bootstrap the API server's status must say what the cache says (one GET a write). */
static bool status_confirmed(godis_cluster_ctx *c)
{
    if (strcmp(c->phase, "Initializing") == 0) return true;
    cJSON *live = NULL;
    if (k8s_get(c->e->client, &K8S_RES_GODISCLUSTERS, c->ns, c->name, &live, NULL) != GD_OK)
        return false;
    const godis_view *v = &c->v;
    bool same = strcmp(gd_meta_uid(live), c->uid) == 0 &&
                gd_json_int_or(live, "status.scaleOutID", 0) == v->scale_out_id &&
                gd_json_int_or(live, "status.scaleInID", 0) == v->scale_in_id;
    int n = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, gd_json_path(live, "status.members"))
        same &= cJSON_IsNumber(m) && n < v->nmembers && (int64_t)m->valuedouble == v->members[n++];
    same &= n == v->nmembers;
    cJSON_Delete(live);
    if (!same)
        gd_log(GD_LOG_INFO, "ConfigMap left alone: the API server's status differs (the cache lags)",
               "cluster", c->name, "namespace", c->ns, NULL);
    return same;
}

static godis_result do_delete_godis(godis_cluster_ctx *c, int64_t id)
{
    char name[300];
    snprintf(name, sizeof name, "%s-%lld", c->name, (long long)id);
    const cJSON *g;
    cJSON_ArrayForEach(g, c->godises)
        if (strcmp(gd_meta_name(g), name) == 0)
            return gw_result(godis_remove_godis(c->e, g, godis_retain_volumes(c->cluster)));
    return gw_result(GD_OK);
}

/* The one annotation a user sets to ask for a fresh bootstrap is removed once served (or
 * when it is moot: the cluster is not lost), so it can never act twice by accident. */
static godis_result drop_bootstrap_annotation(godis_cluster_ctx *c, const cJSON *cluster)
{
    if (!gd_meta_annotation(cluster, GODIS_ANN_BOOTSTRAP_FRESH)) return gw_result(GD_OK);
    cJSON *copy = cJSON_Duplicate(cluster, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(gd_json_path(copy, "metadata.annotations"),
                                            GODIS_ANN_BOOTSTRAP_FRESH);
    gd_err err = gw_update(c->e, &K8S_RES_GODISCLUSTERS, copy);
    cJSON_Delete(copy);
    return gw_result(err);
}

/* A write through every member, in status order, stopping at the first that fails. Each
 * one, not one for all: clients reach any member (the Service), and a member that has not
 * heard the leader yet (it came up last, or the leader cannot reach it yet) takes no write,
 * and its campaign when its election timer runs out takes the leader away from the others
 * (CI once saw the write through member 1 make the cluster Ready, and one through member 2
 * fail a second later). A member that took a write follows a leader that confirmed it. */
static bool writable_through_every_member(godis_cluster_ctx *c)
{
    for (int i = 0; i < c->v.nmembers; i++)
        if (call_member(c, c->v.members[i], "write probe", NULL, probe_fn, NULL) != GD_OK)
            return false;
    return true;
}

/* Converged: Ready=True only once a write through every member succeeded. Probed while the
 * condition is not True yet (a converged cluster that is already Ready costs nothing). */
static godis_result settle(godis_cluster_ctx *c, const godis_step *s)
{
    godis_view *v = &c->v;
    bool all_ready = v->nmembers > 0;
    for (int i = 0; i < v->nmembers; i++) {
        int idx = godis_cluster_observed_index(c, v->members[i]);
        all_ready &= idx >= 0 && v->observed[idx].ready;
    }
    /* (FINISH_INIT: the phase turns Running with this very write, which waits for Ready) */
    bool running = strcmp(c->phase, "Running") == 0 || s->kind == GP_FINISH_INIT;
    bool probe = all_ready && v->nmembers == v->desired && running;
    v->writable = gd_meta_condition_true(c->cluster, "Ready") ||
                  (probe && writable_through_every_member(c));
    godis_result r = godis_status_step(c->e, c->cluster, v, s, &c->written);
    /* (also sooner than a status write left for later: the probe is what Ready waits on) */
    if (probe && !v->writable && r.err == GD_OK &&
        (r.kind == GODIS_DONE || (r.kind == GODIS_REQUEUE_AFTER && r.after_ms > PROBE_RECHECK_MS)))
        r = (godis_result){.kind = GODIS_REQUEUE_AFTER, .after_ms = PROBE_RECHECK_MS};
    if (r.kind == GODIS_DONE && v->bootstrap_fresh)
        r = drop_bootstrap_annotation(c, c->written ? c->written : c->cluster);
    return r;
}

static godis_result execute(godis_cluster_ctx *c, const godis_step *s)
{
    switch (s->kind) {
    case GP_ENSURE_CONFIGMAP:
        if (!status_confirmed(c))
            return (godis_result){.kind = GODIS_REQUEUE_AFTER, .after_ms = STRAY_RECHECK_MS};
        return ensure_configmap(c);
    case GP_CREATE_GODIS:
        if (s->preferred && strcmp(c->phase, "Initializing") == 0) return create_initial_godises(c, s);
        return create_godis(c, s->id, s->preferred);
    case GP_MEET:             return do_meet(c, s);
    case GP_FORGET:           return do_forget(c, s);
    case GP_STOP_MEMBER:
    case GP_DELETE_GODIS:
        if (s->id != c->v.scale_in_id && !stray_confirmed(c, s->id))
            return (godis_result){.kind = GODIS_REQUEUE_AFTER, .after_ms = STRAY_RECHECK_MS};
        if (s->kind == GP_STOP_MEMBER) return s->stop_first ? stop_first_checked(c, s) : do_stop(c, s);
        return do_delete_godis(c, s->id);
    case GP_NOTHING:
    case GP_FINISH_INIT:      return settle(c, s);   /* (its write waits for Ready: probed) */
    case GP_RECORD_INIT:
        if (strcmp(s->reason, "FreshBootstrap") == 0) {
            godis_result r = godis_status_step(c->e, c->cluster, &c->v, s, &c->written);
            if (r.err || !c->written) return r;
            godis_result a = drop_bootstrap_annotation(c, c->written);
            return a.err ? a : r;
        }
        return godis_status_step(c->e, c->cluster, &c->v, s, &c->written);
    default:                  return godis_status_step(c->e, c->cluster, &c->v, s, &c->written);
    }
}

/* After a step of the bootstrap succeeded, what the next one sees without waiting for the
 * cache: the status the API server returned for the recorded intent, or the ConfigMap we
 * just created. Returns false when the next step must wait for the cache after all. */
static bool absorb_own_write(godis_cluster_ctx *c, const godis_step *s)
{
    if (s->kind == GP_RECORD_INIT) {
        if (!c->written) return false;
        godis_drop(c->cluster);
        c->cluster = c->written;
        c->written = NULL;
        c->uid = gd_meta_uid(c->cluster);   /* pointed into the object just freed */
        c->v.status_base = NULL;         /* the written object is the API server's */
        c->v.nmembers = 0;               /* status fields again, from what was written */
        c->v.members_recorded = false;
        godis_cluster_read_status(c);
        return strcmp(c->phase, "Initializing") == 0;
    }
    if (s->kind == GP_CREATE_GODIS && strcmp(c->phase, "Initializing") == 0) {
        /* create_initial_godises created every initial member that was missing (it stops
         * at the first failure, which ends the chain): the view holds them as the cache
         * will, and the next step is FINISH_INIT. */
        godis_view *v = &c->v;
        for (int i = 0; i < v->nmembers; i++) {
            int idx = godis_cluster_observed_index(c, v->members[i]);
            if (idx < 0 && v->nobserved < GODIS_MAX_MEMBERS) {
                idx = v->nobserved++;
                memset(&v->observed[idx], 0, sizeof v->observed[idx]);
                v->observed[idx].id = v->members[i];
            }
            if (idx >= 0) v->observed[idx].godis_exists = v->observed[idx].finalizer = true;
        }
        return true;
    }
    if (s->kind == GP_ENSURE_CONFIGMAP && !c->configmap) {
        /* The view takes the ids ensure_configmap wrote, computed as it computed them:
         * with the ConfigMap still missing. Computed after the view claims a ConfigMap,
         * its empty id list read as the record of the forget in flight (a forget is
         * confirmed when the ConfigMap no longer lists the member), and the next chained
         * step stopped an unforgotten member: the 200-fault chaos campaign had c07 2 -> 1
         * with its ConfigMap deleted stop member 2 after a failed forget, leaving member 1
         * in a 2-member Raft configuration with nobody to vote for it. */
        int64_t ids[GODIS_MAX_MEMBERS];
        int n = godis_plan_configmap_ids(&c->v, ids);
        memcpy(c->v.cm_ids, ids, sizeof ids);
        c->v.cm_n = n;
        c->v.configmap_exists = true;
        c->v.configmap_parsed = true;
        return true;
    }
    return false;
}

static godis_result reconcile_cluster_ctx(godis_cluster_ctx *c)
{
    godis_spec spec;
    char msg[256] = "";
    if (!godis_spec_validate(c->cluster, &spec, msg, sizeof msg))
        return godis_status_invalid(c->e, c->cluster, "InvalidSpec", msg);
    if (!godis_status_check(c->cluster, msg, sizeof msg))
        return godis_status_invalid(c->e, c->cluster, "InvalidStatus", msg);
    c->v.desired = spec.replicas;
    c->v.paused = spec.paused;
    godis_cluster_read_status(c);
    godis_cluster_observe(c);
    godis_input in = {.e = c->e, .ns = c->ns, .name = c->name, .uid = c->uid, .cluster = &c->cluster,
                      .v = &c->v, .godises = c->godises, .configmap = c->configmap};
    if (godis_input_check(&in) == GODIS_INPUT_HOLD)
        return (godis_result){.kind = GODIS_REQUEUE_AFTER, .after_ms = WAIT_RECHECK_MS};
    c->uid = gd_meta_uid(c->cluster);       /* the check may have replaced the object */
    godis_storage sto = {.e = c->e, .ns = c->ns, .name = c->name, .cluster = &c->cluster, .v = &c->v};
    godis_storage_run(&sto);                /* volume expansion: never a membership step */
    c->storage_wait_ms = sto.wait_ms;
    c->uid = gd_meta_uid(c->cluster);
    godis_step s;
    godis_result r;
    /* Day-2 changes: a member being replaced is finished before any membership step. */
    godis_rollout ro = {.e = c->e, .ns = c->ns, .name = c->name, .cluster = &c->cluster, .v = &c->v,
                        .phase = c->phase, .writable = gd_meta_condition_true(c->cluster, "Ready")};
    bool rolling = godis_rollout_run(&ro, &r);
    c->uid = gd_meta_uid(c->cluster);
    c->updated = ro.updated;
    c->observed = true;                 /* the figures are whole from here on */
    c->status_base = ro.status_base;    /* the rollout's counts ride on the planner's write */
    c->v.status_base = c->status_base;
    if (rolling) return r;
    /* A new cluster's bootstrap — record the members, write the ConfigMap, create the
     * members' Godis, record that they all exist (phase Running) — runs as one reconcile:
     * each step waits for nothing but the API server's answer to the previous one (the
     * intent is persisted before any side effect, as always), instead of for the cache to
     * show it. Under a 100-cluster burst each wait was 3-4 s. Every later step, and any
     * failure, goes back to the queue as usual. */
    for (int chained = 0;; chained++) {
        s = godis_plan_next(&c->v);
        gd_log(s.kind == GP_NOTHING ? GD_LOG_DEBUG : GD_LOG_INFO, "reconcile step",
               "cluster", c->name, "namespace", c->ns, "step", godis_step_name(s.kind),
               "reason", s.reason, "why", s.why, NULL);
        r = execute(c, &s);
        if (chained >= 3 || r.kind != GODIS_REQUEUE || r.err != GD_OK || !absorb_own_write(c, &s))
            break;
    }
    if (s.kind == GP_WAIT && r.kind == GODIS_DONE) {
        r.kind = GODIS_REQUEUE_AFTER;
        r.after_ms = WAIT_RECHECK_MS;
    }
    /* A NotReady node's grace ends without any event, and nor does a rollout slot freeing
     * in another cluster (godis_slots.h): look again then. */
    int64_t again = c->grace_wait_ms;
    if (ro.recheck_ms > 0 && (again <= 0 || ro.recheck_ms < again)) again = ro.recheck_ms;
    if (again > 0 && r.err == GD_OK &&
        (r.kind == GODIS_DONE || (r.kind == GODIS_REQUEUE_AFTER && r.after_ms > again))) {
        r.kind = GODIS_REQUEUE_AFTER;
        r.after_ms = again;
    }
    return r;
}

/* The cluster's series for /metrics, from what this reconcile observed and wrote last. */
static void publish_figures(godis_cluster_ctx *c)
{
    if (!c->observed) return;
    const godis_view *v = &c->v;
    godis_cluster_figures f = {.members = v->nmembers, .updated = c->updated};
    for (int i = 0; i < v->nmembers; i++) {
        int idx = godis_cluster_observed_index(c, v->members[i]);
        f.ready += idx >= 0 && v->observed[idx].ready;
    }
    const cJSON *now = c->written ? c->written : c->cluster;
    f.rollout = cJSON_IsObject(gd_json_path(now, "status.rollout"));
    godis_metrics_publish(c->e, c->ns, c->name, &f);
}

/* The cluster finalizer exists for Retain only (its PVCs must be orphaned before the
 * garbage collector could take them with the cluster); with Delete there is nothing the
 * garbage collector should not do, and a finalizer would only add a write per cluster. */
static godis_result ensure_cluster_finalizer(godis_env *e, const cJSON *cluster, bool *wrote)
{
    bool want = godis_retain_volumes(cluster);
    *wrote = want != gd_meta_has_finalizer(cluster, GODIS_CLUSTER_FINALIZER);
    if (!*wrote) return (godis_result){.kind = GODIS_DONE};
    gd_err err = want ? godis_add_finalizer(e, &K8S_RES_GODISCLUSTERS, cluster, GODIS_CLUSTER_FINALIZER)
                      : godis_drop_finalizer(e, &K8S_RES_GODISCLUSTERS, cluster, GODIS_CLUSTER_FINALIZER);
    return gw_result(err);
}

godis_result godis_reconcile_cluster(godis_env *e, const char *key)
{
    char ns[256], name[256];
    const char *slash = strchr(key, '/');
    if (!slash || slash - key >= (int)sizeof ns || strlen(slash + 1) >= sizeof name) {
        gd_log(GD_LOG_ERROR, "malformed reconcile key", "key", key, NULL);
        return (godis_result){.kind = GODIS_DONE};
    }
    snprintf(ns, sizeof ns, "%.*s", (int)(slash - key), key);
    snprintf(name, sizeof name, "%s", slash + 1);
    godis_cluster_ctx c = {.e = e, .ns = ns, .name = name};
    c.cluster = e->get(e, "GodisCluster", ns, name);
    if (!c.cluster || gd_meta_deleting(c.cluster)) {
        godis_metrics_forget(e);            /* no stale series of a cluster that is gone */
        godis_slot_forget(key);
    }
    if (!c.cluster) return godis_release_orphans(e, ns, name);   /* the rest goes by GC */
    if (gd_meta_deleting(c.cluster)) {
        godis_result r = godis_release_cluster(e, c.cluster);
        godis_drop(c.cluster);
        return r;
    }
    if (e->cluster_read) e->cluster_read(e, c.cluster);
    bool wrote = false;
    godis_result r = ensure_cluster_finalizer(e, c.cluster, &wrote);
    if (wrote) {
        godis_drop(c.cluster);
        return r;
    }
    c.uid = gd_meta_uid(c.cluster);
    r = reconcile_cluster_ctx(&c);
    publish_figures(&c);
    /* A PVC's capacity wakes only its Godis's controller: look again while a resize runs. */
    if (c.storage_wait_ms > 0 && r.err == GD_OK &&
        (r.kind == GODIS_DONE || (r.kind == GODIS_REQUEUE_AFTER && r.after_ms > c.storage_wait_ms)))
        r = (godis_result){.kind = GODIS_REQUEUE_AFTER, .after_ms = c.storage_wait_ms};
    godis_drop(c.cluster);
    cJSON_Delete(c.written);
    cJSON_Delete(c.godises);              /* references first, then what they refer to */
    godis_drop(c.godises_list);
    godis_drop(c.configmap);
    cJSON_Delete(c.status_base);
    return r;
}
