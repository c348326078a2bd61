/* decide.c — see decide.h. */
#include "decide.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gd_json.h"

bool wh_pod_member(const cJSON *pod, char *cluster, size_t cap)
{
    const char *c = gd_meta_label(pod, "cluster-name");
    const char *n = gd_meta_label(pod, "node-name");
    if (!c || !n || !*c) return false;
    size_t cl = strlen(c);
    if (strncmp(n, c, cl) || n[cl] != '-' || n[cl + 1] < '1' || n[cl + 1] > '9') return false;
    char *end;
    errno = 0;
    long long id = strtoll(n + cl + 1, &end, 10);
    if (errno || *end || id <= 0) return false;
    const cJSON *owner = gd_meta_controller_owner(pod);
    if (!owner || strcmp(gd_json_str_or(owner, "kind", ""), "ReplicaSet") ||
        strcmp(gd_json_str_or(owner, "name", ""), n))
        return false;
    if (cluster) snprintf(cluster, cap, "%s", c);
    return true;
}

/* ---- the limiter ---- */
typedef struct {
    char key[512];
    int64_t at_ms;
    int64_t prev_ms;     /* the mark before, restored by undo */
} lim_entry;

struct wh_limiter {
    pthread_mutex_t mu;
    int64_t interval_ms;
    int cap, n;
    lim_entry *e;
};

wh_limiter *wh_limiter_new(int64_t interval_ms, int cap)
{
    wh_limiter *l = calloc(1, sizeof *l);
    if (!l || cap <= 0 || !(l->e = calloc((size_t)cap, sizeof *l->e))) {
        free(l);
        return NULL;
    }
    pthread_mutex_init(&l->mu, NULL);
    l->interval_ms = interval_ms;
    l->cap = cap;
    return l;
}

void wh_limiter_destroy(wh_limiter **l)
{
    if (!l || !*l) return;
    pthread_mutex_destroy(&(*l)->mu);
    free((*l)->e);
    free(*l);
    *l = NULL;
}

static lim_entry *find(wh_limiter *l, const char *key)
{
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->e[i].key, key)) return &l->e[i];
    return NULL;
}

bool wh_limiter_take(wh_limiter *l, const char *key, int64_t now_ms, int64_t *wait_ms)
{
    pthread_mutex_lock(&l->mu);
    lim_entry *e = find(l, key);
    bool ok = true;
    if (e && now_ms - e->at_ms < l->interval_ms) {
        ok = false;
        if (wait_ms) *wait_ms = l->interval_ms - (now_ms - e->at_ms);
    } else if (!e && l->n < l->cap) {
        e = &l->e[l->n++];
        e->at_ms = INT64_MIN / 2;
    } else if (!e) {
        /* Full: reuse the oldest mark. If even that one is within the interval, the table
         * holds cap clusters marked in the last interval: refuse rather than forget one. */
        e = &l->e[0];
        for (int i = 1; i < l->n; i++)
            if (l->e[i].at_ms < e->at_ms) e = &l->e[i];
        if (now_ms - e->at_ms < l->interval_ms) {
            ok = false;
            if (wait_ms) *wait_ms = l->interval_ms - (now_ms - e->at_ms);
        } else {
            e->at_ms = INT64_MIN / 2;
        }
    }
    if (ok) {
        snprintf(e->key, sizeof e->key, "%s", key);
        e->prev_ms = e->at_ms;
        e->at_ms = now_ms;
    }
    pthread_mutex_unlock(&l->mu);
    return ok;
}

void wh_limiter_undo(wh_limiter *l, const char *key)
{
    pthread_mutex_lock(&l->mu);
    lim_entry *e = find(l, key);
    if (e) e->at_ms = e->prev_ms;
    pthread_mutex_unlock(&l->mu);
}

/* ---- the decision ---- */
static void say(wh_verdict *v, bool allowed, int code, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void say(wh_verdict *v, bool allowed, int code, const char *reason, const char *fmt, ...)
{
    v->allowed = allowed;
    v->code = code;
    v->reason = reason;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->message, sizeof v->message, fmt, ap);
    va_end(ap);
}

wh_action wh_decide(const wh_review *r, const cJSON *pod, wh_limiter *lim, int64_t now_ms,
                    wh_verdict *v)
{
    memset(v, 0, sizeof *v);
    if (!wh_review_is_eviction(r)) {
        say(v, true, 200, NULL, "not a pod eviction");
        return WH_ACT_ALLOW;
    }
    if (!pod) {
        say(v, false, 404, "NotFound", "pods \"%s\" not found (a godis member that was "
            "moved runs in a new pod under a new name)", r->name);
        return WH_ACT_GONE;
    }
    char cluster[254];
    if (!wh_pod_member(pod, cluster, sizeof cluster)) {
        say(v, true, 200, NULL, "not a godis member pod");
        return WH_ACT_ALLOW;
    }
    if (gd_meta_deleting(pod)) {
        say(v, false, 429, "TooManyRequests", "godis member pod %s/%s of GodisCluster %s has "
            "been moved and is being deleted; retry", r->ns, r->name, cluster);
        return WH_ACT_WAIT;
    }
    const char *ann = gd_meta_annotation(pod, WH_ANN_RESCHEDULE);
    if (ann && (!*ann || !strcmp(ann, "true") || !strcmp(ann, "True"))) {
        say(v, false, 429, "TooManyRequests", "godis member pod %s/%s of GodisCluster %s is "
            "being moved to another node by the operator (a new member joins before this one "
            "leaves); retry", r->ns, r->name, cluster);
        return WH_ACT_WAIT;
    }
    char key[512];
    snprintf(key, sizeof key, "%s/%s", r->ns, cluster);
    int64_t wait_ms = 0;
    /* A dry run asks what a real eviction would get; it takes no slot of the limiter. */
    if (lim && !r->dry_run && !wh_limiter_take(lim, key, now_ms, &wait_ms)) {
        say(v, false, 429, "TooManyRequests", "another member of GodisCluster %s/%s was marked "
            "for a move just now: members move one at a time, the next in %lld ms; retry",
            r->ns, cluster, (long long)wait_ms);
        return WH_ACT_WAIT;
    }
    say(v, false, 429, "TooManyRequests", "godis member pod %s/%s of GodisCluster %s is being "
        "moved to another node by the operator (a new member joins before this one leaves)%s; "
        "retry", r->ns, r->name, cluster, r->dry_run ? " [dry run: nothing was changed]" : "");
    return WH_ACT_MARK;
}

static int member_count(const cJSON *cluster)
{
    const cJSON *m = gd_json_path(cluster, "status.members");
    if (cJSON_IsArray(m) && cJSON_GetArraySize(m) > 0) return cJSON_GetArraySize(m);
    return (int)gd_json_int_or(cluster, "spec.replicas", 0);
}

void wh_explain(const cJSON *cluster, const char *pod_name, wh_action *act, wh_verdict *v)
{
    if (!cluster || (*act != WH_ACT_MARK && *act != WH_ACT_WAIT)) return;
    const char *name = gd_meta_name(cluster);
    if (member_count(cluster) == 1) {
        *act = WH_ACT_WAIT;
        say(v, false, 429, "TooManyRequests", "GodisCluster %s/%s has a single member: it cannot "
            "be moved without stopping it (the move adds a member first, and 1 Ready of 2 is no "
            "quorum), so it is not evicted; scale the cluster to 3 first, or delete the pod "
            "yourself to accept the outage", gd_meta_namespace(cluster), name);
        return;
    }
    const cJSON *c;
    cJSON_ArrayForEach(c, gd_json_path(cluster, "status.conditions")) {
        const char *type = gd_json_str_or(c, "type", ""), *reason = gd_json_str_or(c, "reason", "");
        if (strcmp(type, "Progressing")) continue;
        if (!strcmp(reason, "CannotMoveMember") || !strcmp(reason, "MemberUnschedulable")) {
            /* The move cannot happen now: say so first, not "is being moved". The pod stays
             * marked (or is marked), so the move starts once a node can take it. */
            say(v, false, 429, "TooManyRequests", "godis member pod %s/%s is not evicted: GodisCluster "
                "%s cannot move it now (%s: %.300s); it moves once a node can take its "
                "replacement (uncordon or add one); retry", gd_meta_namespace(cluster), pod_name,
                name, reason, gd_json_str_or(c, "message", ""));
            return;
        }
        if (strncmp(reason, "Waiting", 7) && strcmp(reason, "QuorumLost"))
            continue;
        size_t n = strlen(v->message);
        snprintf(v->message + n, sizeof v->message - n, " (GodisCluster %s: %s: %.200s)", name,
                 reason, gd_json_str_or(c, "message", ""));
        return;
    }
}

void wh_verdict_mark_failed(const wh_review *r, bool gone, const char *error, wh_verdict *v)
{
    if (gone)
        say(v, false, 404, "NotFound", "pods \"%s\" not found", r->name);
    else
        say(v, false, 429, "TooManyRequests", "could not mark godis member pod %s/%s for a move: "
            "%s; retry", r->ns, r->name, error);
}
