/* godis_rollout.c — see godis_rollout.h. */
#include "godis_rollout.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "godis_children.h"
#include "godis_client.h"
#include "godis_metrics.h"
#include "godis_slots.h"
#include "godis_status.h"
#include "godis_write.h"
#include "gd_json.h"
#include "gd_log.h"
#include "gd_time.h"

#define ROLLOUT_RECHECK_MS 2000
#define CHECK_RECHECK_MS 1000
#define STUCK_RECHECK_MS 10000
#define CATCHUP_TRIES 20
#define CATCHUP_STEP_MS 50

typedef struct {
    int64_t id;
    char name[300];
    cJSON *desired;          /* the member's ReplicaSet on the spec's revision: built only
                                when it is written (ro_desired) */
    const cJSON *rs;         /* as the cache has it (lent: godis_drop), or NULL */
    bool rs_current;         /* its ReplicaSet is on the spec's revision */
    bool pod_current;        /* a pod (not being deleted) runs the spec's revision */
    bool stale_pods;         /* a pod (not being deleted) runs another revision */
    bool ready;              /* the current pod is Ready */
    bool serving;            /* a pod of it (on any revision) is Ready */
    bool unhashed;           /* its ReplicaSet predates template hashes: not adopted yet */
    char pod_ip[64];         /* of a Ready pod, the current one first */
} ro_member;

typedef struct {
    godis_rollout *ro;
    char hash[GODIS_HASH_LEN + 1];
    ro_member m[GODIS_MAX_MEMBERS];
    int n, updated, ready;
    int64_t in_progress;     /* status.rollout.member */
    const char *recorded;    /* status.rollout.revision */
    cJSON *ident;            /* the cluster as this reconcile found it: what Events are about */
} ro_rollout_ctx;

static bool ro_pod_is_ready(const cJSON *pod)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, gd_json_path(pod, "status.conditions"))
        if (!strcmp(gd_json_str_or(c, "type", ""), "Ready"))
            return !strcmp(gd_json_str_or(c, "status", ""), "True");
    return false;
}

static void ro_observe_member(ro_rollout_ctx *x, ro_member *m, int64_t id)
{
    godis_rollout *ro = x->ro;
    godis_env *e = ro->e;
    memset(m, 0, sizeof *m);
    m->id = id;
    snprintf(m->name, sizeof m->name, "%s-%lld", ro->name, (long long)id);
    /* Whether it is on the spec's revision needs only the revision's hash (x->hash): every
     * reconcile of every cluster observes every member, and building each one's desired
     * ReplicaSet here (its Godis, claim and PV read, the template hashed again) was a sixth
     * of the worker's CPU in a 100 x 3 converge. */
    m->rs = e->get(e, "ReplicaSet", ro->ns, m->name);
    const char *h = m->rs ? godis_object_hash(m->rs) : NULL;
    m->rs_current = h && !strcmp(h, x->hash);
    const cJSON *pods = e->list(e, "Pod", ro->ns, "node-name", m->name);
    const cJSON *p;
    cJSON_ArrayForEach(p, pods) {
        if (gd_meta_deleting(p)) continue;
        bool current = godis_pod_on_template(p, x->hash, m->rs), ready = ro_pod_is_ready(p);
        m->stale_pods |= !current;
        m->pod_current |= current;
        if (ready && (!m->serving || (current && !m->ready)))
            snprintf(m->pod_ip, sizeof m->pod_ip, "%s", gd_json_str_or(p, "status.podIP", ""));
        m->serving |= ready;
        m->ready |= current && ready;
    }
    godis_drop(pods);
    m->unhashed = m->rs && !h;
}

/* The member's ReplicaSet on the spec's revision, pinned as the Godis controller pins it;
 * built once, when the rollout writes it. NULL when out of memory. */
static const cJSON *ro_desired(ro_rollout_ctx *x, ro_member *m)
{
    if (m->desired) return m->desired;
    godis_rollout *ro = x->ro;
    godis_env *e = ro->e;
    const cJSON *g = e->get(e, "Godis", ro->ns, m->name);
    bool preferred = false;
    gd_json_bool(g, "spec.preferred", &preferred);
    godis_child_spec s = {.ns = ro->ns, .cluster = ro->name, .godis = m->name,
                          .godis_uid = gd_meta_uid(g), .id = m->id, .preferred = preferred,
                          .node = godis_pin_node(e, ro->ns, m->name,
                                                 gd_json_str_or(g, "status.volumeNode", NULL))};
    godis_child_spec_from_cluster(&s, *ro->cluster);
    m->desired = godis_build_replicaset(&s);
    godis_drop(g);
    return m->desired;
}

static void ro_observe(ro_rollout_ctx *x)
{
    godis_rollout *ro = x->ro;
    godis_child_spec s = {.ns = ro->ns, .cluster = ro->name};
    godis_child_spec_from_cluster(&s, *ro->cluster);
    godis_template_hash(&s, x->hash);
    const godis_view *v = ro->v;
    for (int i = 0; i < v->nmembers && x->n < GODIS_MAX_MEMBERS; i++) {
        ro_member *m = &x->m[x->n++];
        ro_observe_member(x, m, v->members[i]);
        if (m->rs_current && m->pod_current && !m->stale_pods) x->updated++;
        for (int j = 0; j < v->nobserved; j++)
            if (v->observed[j].id == m->id && v->observed[j].ready) x->ready++;
    }
    x->ident = cJSON_Duplicate(*ro->cluster, 1);
    x->in_progress = gd_json_int_or(x->ident, "status.rollout.member", 0);
    x->recorded = gd_json_str_or(x->ident, "status.rollout.revision", "");
}

static void ro_release(ro_rollout_ctx *x)
{
    cJSON_Delete(x->ident);
    for (int i = 0; i < x->n; i++) {
        cJSON_Delete(x->m[i].desired);
        godis_drop(x->m[i].rs);
    }
}

static ro_member *ro_find(ro_rollout_ctx *x, int64_t id)
{
    for (int i = 0; i < x->n; i++)
        if (x->m[i].id == id) return &x->m[i];
    return NULL;
}

/* ---- status ---- */

typedef struct {
    int64_t member;          /* status.rollout.member to record; 0: none (removed) */
    bool start;              /* a new deadline starts (startTime now) */
    const char *cond_reason; /* Progressing to set, or NULL */
    bool cond_value;
    const char *cond_msg;
} ro_status_change;

static void ro_set_num(cJSON *st, const char *key, double v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(st, key);
    cJSON_AddNumberToObject(st, key, v);
}

static void ro_set_str(cJSON *st, const char *key, const char *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(st, key);
    cJSON_AddStringToObject(st, key, v);
}

static void ro_apply(ro_rollout_ctx *x, cJSON *st, const ro_status_change *c)
{
    ro_set_num(st, "updatedReplicas", x->updated);
    ro_set_num(st, "readyReplicas", x->ready);
    ro_set_str(st, "updateRevision", x->hash);
    if (!c->member && x->updated == x->n && x->n > 0) ro_set_str(st, "currentRevision", x->hash);
    if (c->member) {
        cJSON *r = cJSON_GetObjectItemCaseSensitive(st, "rollout");
        char started[32];
        snprintf(started, sizeof started, "%s", gd_json_str_or(r, "startTime", ""));
        if (c->start || !*started) {
            gd_format_rfc3339_micro(gd_wall_ms() * 1000, started);
            started[19] = 'Z';
            started[20] = '\0';
        }
        cJSON *n = cJSON_CreateObject();
        cJSON_AddNumberToObject(n, "member", (double)c->member);
        cJSON_AddStringToObject(n, "revision", x->hash);
        cJSON_AddStringToObject(n, "startTime", started);
        cJSON_DeleteItemFromObjectCaseSensitive(st, "rollout");
        cJSON_AddItemToObject(st, "rollout", n);
    } else if (x->updated < x->n && cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(st, "rollout"))) {
        /* Between two members: the rollout goes on and keeps its slot (godis_slots.h). */
        cJSON *r = cJSON_GetObjectItemCaseSensitive(st, "rollout");
        cJSON_DeleteItemFromObjectCaseSensitive(r, "member");
        ro_set_str(r, "revision", x->hash);
    } else {
        cJSON_DeleteItemFromObjectCaseSensitive(st, "rollout");
    }
    if (c->cond_reason)
        godis_set_condition(st, "Progressing", c->cond_value, c->cond_reason, c->cond_msg,
                            gd_meta_generation(*x->ro->cluster));
}

/* Writes the status when it changed (optimistic concurrency: a Conflict retries the whole
 * reconcile on fresh state). *wrote says whether it did. */
static gd_err ro_write_status(ro_rollout_ctx *x, const ro_status_change *c, bool *wrote)
{
    godis_rollout *ro = x->ro;
    cJSON *obj = cJSON_Duplicate(*ro->cluster, 1);
    cJSON *st = cJSON_GetObjectItemCaseSensitive(obj, "status");
    if (!cJSON_IsObject(st)) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
        st = cJSON_AddObjectToObject(obj, "status");
    }
    cJSON *before = cJSON_Duplicate(st, 1);
    ro_apply(x, st, c);
    gd_err err = GD_OK;
    *wrote = !cJSON_Compare(before, st, 1);
    if (*wrote) {
        cJSON *written = NULL;
        err = gw_update_status_out(ro->e, &K8S_RES_GODISCLUSTERS, obj, &written);
        if (!err && written) {
            godis_drop(*ro->cluster);
            *ro->cluster = written;
        }
    }
    cJSON_Delete(before);
    cJSON_Delete(obj);
    return err;
}

/* ro_apply on *cluster, unwritten; the status before goes to ro->status_base. The cluster
 * the reconcile read is lent by the cache (godis_env.get): it becomes a copy of the
 * reconcile's own first. */
static void ro_stage_status(ro_rollout_ctx *x, const ro_status_change *c)
{
    godis_rollout *ro = x->ro;
    cJSON *own = cJSON_Duplicate(*ro->cluster, 1);
    if (!own) return;                     /* nothing staged: the next reconcile does it */
    godis_drop(*ro->cluster);
    *ro->cluster = own;
    cJSON *st = cJSON_GetObjectItemCaseSensitive(own, "status");
    if (!cJSON_IsObject(st)) {
        cJSON_DeleteItemFromObjectCaseSensitive(own, "status");
        st = cJSON_AddObjectToObject(own, "status");
    }
    cJSON_Delete(ro->status_base);
    ro->status_base = cJSON_Duplicate(st, 1);
    ro_apply(x, st, c);
}

static void ro_event(ro_rollout_ctx *x, const char *type, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void ro_event(ro_rollout_ctx *x, const char *type, const char *reason, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    godis_emit_event(x->ro->e, x->ident, type, reason, msg);   /* logged there too */
}

/* ---- the member check over RESP ---- */

static godis_client *ro_dial(ro_rollout_ctx *x, const ro_member *m, char *why, size_t cap)
{
    godis_env *e = x->ro->e;
    char hosts[2][GODIS_HOST_MAX];
    int n = godis_member_hosts(m->pod_ip, m->name, x->ro->ns, e->cluster_domain, hosts);
    for (int i = 0; i < n; i++) {
        godis_client *gc = godis_client_new(hosts[i], e->godis_port, NULL);
        godis_hello_info info;
        if (gc && godis_hello(gc, &info) == GD_OK) return gc;
        snprintf(why, cap, "member %lld does not answer hello: %s", (long long)m->id,
                 gc ? godis_last_error(gc) : "no memory");
        godis_client_destroy(&gc);
    }
    return NULL;
}

static gd_err ro_resp_check(godis_rollout *ro, int64_t id, int64_t via, char *why, size_t cap,
                         ro_rollout_ctx *x)
{
    gd_err err = ro->e->may_write ? ro->e->may_write(ro->e) : GD_OK;
    if (err) return err;
    godis_client *on = ro_dial(x, ro_find(x, id), why, cap);
    godis_client *through = on ? ro_dial(x, ro_find(x, via), why, cap) : NULL;
    err = on && through ? GD_OK : GD_ERR_TRANSPORT;
    char value[64];
    snprintf(value, sizeof value, "m%lld-%lld", (long long)id, (long long)gd_wall_ms());
    if (!err && godis_set(through, GODIS_ROLLOUT_KEY, value) != GD_OK) {
        snprintf(why, cap, "a write through member %lld failed: %s", (long long)via,
                 godis_last_error(through));
        err = GD_ERR_TRANSPORT;
    }
    /* Reads are served from the member's own state: it has caught up once it has applied
     * the write just committed. */
    for (int i = 0; !err && i < CATCHUP_TRIES; i++) {
        char *got = NULL;
        gd_err g = godis_get(on, GODIS_ROLLOUT_KEY, &got);
        bool same = g == GD_OK && got && !strcmp(got, value);
        free(got);
        if (same) break;
        if (i == CATCHUP_TRIES - 1) {
            snprintf(why, cap, "member %lld has not caught up: a write through member %lld is "
                     "not readable on it after %d ms", (long long)id, (long long)via,
                     CATCHUP_TRIES * CATCHUP_STEP_MS);
            err = GD_ERR_TIMEOUT;
        } else {
            gd_sleep_ms(CATCHUP_STEP_MS);
        }
    }
    godis_client_destroy(&on);
    godis_client_destroy(&through);
    return err;
}

static gd_err ro_check_member(ro_rollout_ctx *x, int64_t id, char *why, size_t cap)
{
    int64_t via = 0;
    for (int i = 0; i < x->n && !via; i++)
        if (x->m[i].id != id && x->m[i].serving) via = x->m[i].id;
    if (!via && x->n > 1) {
        snprintf(why, cap, "no other Ready member to write through");
        return GD_ERR_TRANSPORT;
    }
    if (!via) via = id;                     /* a single member: its own write */
    godis_rollout *ro = x->ro;
    if (ro->member_check) return ro->member_check(ro, id, via, why, cap);
    return ro_resp_check(ro, id, via, why, cap, x);
}

/* ---- driving the member in progress ---- */

static godis_result ro_requeue_after(int64_t ms)
{
    return (godis_result){.kind = GODIS_REQUEUE_AFTER, .after_ms = ms};
}

/* Not back yet: within the deadline keep waiting; past it, say so once. */
static godis_result ro_not_back(ro_rollout_ctx *x, const ro_member *m, const char *why)
{
    const cJSON *cl = *x->ro->cluster;
    int64_t started = 0, deadline_s = gd_json_int_or(cl, "spec.progressDeadlineSeconds",
                                                     GODIS_DEFAULT_PROGRESS_DEADLINE_S);
    if (deadline_s <= 0) deadline_s = GODIS_DEFAULT_PROGRESS_DEADLINE_S;
    if (gd_parse_rfc3339_ms(gd_json_str_or(cl, "status.rollout.startTime", ""), &started) != GD_OK ||
        gd_wall_ms() - started < deadline_s * 1000) {
        int64_t left = started ? deadline_s * 1000 - (gd_wall_ms() - started) + 100 : ROLLOUT_RECHECK_MS;
        return ro_requeue_after(left < ROLLOUT_RECHECK_MS ? left : ROLLOUT_RECHECK_MS);
    }
    char msg[600];
    snprintf(msg, sizeof msg, "member %lld is not back on revision %s within %llds: %s; the rollout "
             "holds (no other member is replaced) until it is, or the spec is fixed",
             (long long)m->id, x->hash, (long long)deadline_s, why);
    ro_status_change c = {.member = m->id, .cond_reason = "RolloutStuck", .cond_value = false,
                       .cond_msg = msg};
    bool wrote = false;
    gd_err err = ro_write_status(x, &c, &wrote);
    if (err) return gw_result(err);
    if (wrote) ro_event(x, "Warning", "RolloutStuck", "%s", msg);
    return ro_requeue_after(STUCK_RECHECK_MS);
}

static godis_result ro_drive(ro_rollout_ctx *x, ro_member *m)
{
    godis_env *e = x->ro->e;
    char msg[400];
    if (strcmp(x->recorded, x->hash) != 0) {
        /* The spec changed while this member was in progress (a fix of a bad image, say):
         * it gets the new revision at once — it is the one member down — on a new deadline. */
        snprintf(msg, sizeof msg, "member %lld: rolling out revision %s", (long long)m->id, x->hash);
        ro_status_change c = {.member = m->id, .start = true, .cond_reason = "RollingUpdate",
                           .cond_value = true, .cond_msg = msg};
        bool wrote;
        return gw_result(ro_write_status(x, &c, &wrote));
    }
    if (!m->rs_current && m->rs) {
        const cJSON *desired = ro_desired(x, m);
        if (!desired) return gw_result(GD_ERR_NOMEM);
        cJSON *fixed = godis_child_repair("ReplicaSet", desired, m->rs);
        gd_err err = gw_update(e, &K8S_RES_REPLICASETS, fixed);
        cJSON_Delete(fixed);
        return err ? gw_result(err) : (godis_result){.kind = GODIS_REQUEUE};
    }
    if (!m->rs) return ro_requeue_after(ROLLOUT_RECHECK_MS);   /* the Godis controller makes it */
    if (m->stale_pods) {
        const cJSON *pods = e->list(e, "Pod", x->ro->ns, "node-name", m->name);
        gd_err err = GD_OK;
        const cJSON *p;
        cJSON_ArrayForEach(p, pods) {
            if (gd_meta_deleting(p) || godis_pod_on_template(p, x->hash, m->rs)) continue;
            gd_err d = gw_delete(e, &K8S_RES_PODS, x->ro->ns, gd_meta_name(p), NULL);
            if (d && d != GD_ERR_NOT_FOUND) err = d;
            else ro_event(x, "Normal", "MemberReplaced", "member %lld: pod %s replaced to roll out "
                       "revision %s (same id, same volume)", (long long)m->id, gd_meta_name(p), x->hash);
        }
        godis_drop(pods);
        if (!err) godis_metrics_change(e, x->ro->ns, x->ro->name, "replace");
        return err ? gw_result(err) : ro_requeue_after(ROLLOUT_RECHECK_MS);
    }
    if (!m->ready) {
        snprintf(msg, sizeof msg, "its pod on revision %s is not Ready", x->hash);
        return ro_not_back(x, m, msg);
    }
    char why[300] = "";
    gd_err err = ro_check_member(x, m->id, why, sizeof why);
    if (err == GD_ERR_FENCED) return gw_result(err);
    if (err) {
        gd_log(GD_LOG_INFO, "rollout: member not caught up yet", "cluster", x->ro->name,
               "namespace", x->ro->ns, "why", why, NULL);
        godis_result r = ro_not_back(x, m, why);
        return r.kind == GODIS_REQUEUE_AFTER && r.after_ms > CHECK_RECHECK_MS ? ro_requeue_after(CHECK_RECHECK_MS) : r;
    }
    snprintf(msg, sizeof msg, "%d/%d members on revision %s", x->updated, x->n, x->hash);
    ro_status_change c = {.member = 0, .cond_reason = "RollingUpdate", .cond_value = x->updated < x->n,
                       .cond_msg = msg};
    if (x->updated == x->n) c.cond_reason = "RolloutComplete";
    bool wrote;
    err = ro_write_status(x, &c, &wrote);
    if (err) return gw_result(err);
    ro_event(x, "Normal", "MemberUpdated", "member %lld is back on revision %s: Ready, answering and "
          "caught up (%s)", (long long)m->id, x->hash, msg);
    return (godis_result){.kind = GODIS_REQUEUE};
}

/* ---- starting ---- */

/* Full strength, nothing else in flight: the planner has nothing to do, every member is
 * Ready, the cluster took a write, and it is not paused. */
static bool ro_may_start(ro_rollout_ctx *x)
{
    for (int i = 0; i < x->n; i++)
        if (!x->m[i].rs) return false;      /* the Godis controller makes or adopts it first */
    godis_rollout *ro = x->ro;
    const godis_view *v = ro->v;
    if (v->paused || !ro->writable || strcmp(ro->phase, "Running") != 0) return false;
    if (v->nmembers != v->desired || v->scale_out_id || v->scale_in_id) return false;
    if (x->ready != x->n) return false;
    /* A member whose ReplicaSet predates template hashes is adopted in place by the Godis
     * controller first (godis_replicaset_fix): until then what it runs is not known. */
    for (int i = 0; i < x->n; i++)
        if (x->m[i].unhashed) return false;
    return godis_plan_next(v).kind == GP_NOTHING;
}

/* A slot (godis_slots.h) for the next member; without one the cluster waits, with an Event
 * the first time, and looks again after ROLLOUT_RECHECK_MS. */
static bool ro_slot(ro_rollout_ctx *x, const char *key)
{
    godis_rollout *ro = x->ro;
    int holders = 0;
    bool holding = cJSON_IsObject(gd_json_path(x->ident, "status.rollout"));
    bool ok = godis_slot_may_roll(ro->e, key, holding, &holders);
    if (godis_slot_note_waiting(key, !ok))
        ro_event(x, "Normal", "RolloutQueued", "revision %s waits for a rollout slot: %d of this "
                 "worker's clusters are rolling out (--max-concurrent-rollouts %d)", x->hash, holders,
                 ro->e->max_concurrent_rollouts);
    if (!ok) ro->recheck_ms = ROLLOUT_RECHECK_MS;
    return ok;
}

bool godis_rollout_run(godis_rollout *ro, godis_result *r)
{
    ro_rollout_ctx x = {.ro = ro};
    ro_observe(&x);
    char key[520];
    snprintf(key, sizeof key, "%s/%s", ro->ns, ro->name);
    bool took = true;
    ro_member *m = x.in_progress ? ro_find(&x, x.in_progress) : NULL;
    if (x.in_progress && !m) {
        /* The member left the cluster meanwhile (lost, migrated): nothing to finish. */
        ro_status_change c = {0};
        bool wrote;
        *r = gw_result(ro_write_status(&x, &c, &wrote));
        if (r->kind == GODIS_DONE) r->kind = GODIS_REQUEUE;
    } else if (m) {
        *r = ro_drive(&x, m);
    } else {
        ro_member *next = NULL;
        for (int i = 0; i < x.n && !next; i++)
            if (!x.m[i].rs_current || !x.m[i].pod_current || x.m[i].stale_pods) next = &x.m[i];
        bool may = next && ro_may_start(&x);
        /* What holds a rollout back wakes this key when it changes — pods (Ready), Godis
         * objects, the planner's inputs, and the cluster's own Ready condition (mapping.h:
         * the write that turns it True after a scale ends the reconcile that made it; a
         * scale 4 -> 5 asked for mid-rollout waited for good in itest_rollout before that
         * status change woke the key) — except a member's ReplicaSet, which wakes only its
         * Godis: while one is missing or not yet adopted, look again. */
        bool rs_wait = false;
        for (int i = 0; i < x.n; i++) rs_wait |= !x.m[i].rs || x.m[i].unhashed;
        if (next && !may && rs_wait && !ro->v->paused) ro->recheck_ms = ROLLOUT_RECHECK_MS;
        if (may && ro_slot(&x, key)) {
            char msg[300];
            snprintf(msg, sizeof msg, "member %lld: rolling out revision %s (%d/%d members on it)",
                     (long long)next->id, x.hash, x.updated, x.n);
            ro_status_change c = {.member = next->id, .start = true, .cond_reason = "RollingUpdate",
                               .cond_value = true, .cond_msg = msg};
            bool wrote;
            *r = gw_result(ro_write_status(&x, &c, &wrote));
            if (!r->err) {
                r->kind = GODIS_REQUEUE;
                const char *rs_rev = next->rs ? godis_object_hash(next->rs) : NULL;
                gd_log(GD_LOG_INFO, "rollout: member next", "cluster", ro->name, "namespace", ro->ns,
                       "why", msg, "replicaset-revision", rs_rev ? rs_rev : "(none)",
                       "pods", next->stale_pods ? "on another revision" : next->pod_current ? "current" : "none",
                       NULL);
            }
        } else {
            /* The counts and revisions only, and only when the planner has nothing to do:
             * a membership step's own status write must come first and alone. They ride on
             * the planner's status write (settle): written here, they were a second write
             * in most reconciles of a new cluster. The write that ends a bootstrap (phase
             * Running) carries them too: left to the next reconcile, they were a change of
             * counts alone, written GODIS_PROGRESS_WRITE_MS later, a third status write per
             * new cluster. */
            ro_status_change c = {0};
            godis_step_kind next_step = godis_plan_next(ro->v).kind;
            bool settled = ro->v->members_recorded &&
                           ((!strcmp(ro->phase, "Running") && next_step == GP_NOTHING) ||
                            next_step == GP_FINISH_INIT);
            if (settled) ro_stage_status(&x, &c);
            took = false;
        }
    }
    /* The reservation of a slot is needed only until the status shows the rollout. */
    if (!cJSON_IsObject(gd_json_path(*ro->cluster, "status.rollout"))) godis_slot_release(key);
    ro->updated = x.updated;
    ro_release(&x);
    return took;
}
