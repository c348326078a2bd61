/* status.c — what someone running many GodisClusters looks at first: per cluster its phase,
 * conditions and members (id, Godis, pod, node, Ready, last change); and follow, which
 * prints a cluster's changes until it runs N Ready members. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "godisctl.h"
#include "gd_json.h"
#include "gd_time.h"

/* ---- status ---- */

static const cJSON *condition(const cJSON *obj, const char *type)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, gd_json_path(obj, "status.conditions"))
        if (!strcmp(gd_json_str_or(c, "type", ""), type)) return c;
    return NULL;
}

/* The live pod of Godis `godis` (label node-name), the newest when a replacement exists. */
static const cJSON *pod_of(const cJSON *pods, const char *ns, const char *godis)
{
    const cJSON *p, *best = NULL;
    cJSON_ArrayForEach(p, gd_json_path(pods, "items")) {
        const char *l = gd_meta_label(p, "node-name");
        if (!l || strcmp(l, godis) || strcmp(gd_meta_namespace(p), ns)) continue;
        if (!best || (gd_meta_deleting(best) && !gd_meta_deleting(p)) ||
            strcmp(gd_json_str_or(p, "metadata.creationTimestamp", ""),
                   gd_json_str_or(best, "metadata.creationTimestamp", "")) > 0)
            best = p;
    }
    return best;
}

static const cJSON *godis_named(const cJSON *godises, const char *ns, const char *name)
{
    const cJSON *g;
    cJSON_ArrayForEach(g, gd_json_path(godises, "items"))
        if (!strcmp(gd_meta_name(g), name) && !strcmp(gd_meta_namespace(g), ns)) return g;
    return NULL;
}

static bool is_member(const cJSON *gc, long long id)
{
    const cJSON *m;
    cJSON_ArrayForEach(m, gd_json_path(gc, "status.members"))
        if ((long long)m->valuedouble == id) return true;
    return false;
}

static void print_member(const cJSON *gc, long long id, const cJSON *godises, const cJSON *pods)
{
    const char *ns = gd_meta_namespace(gc);
    char gname[300], ready[64], age[32];
    snprintf(gname, sizeof gname, "%s-%lld", gd_meta_name(gc), id);
    const cJSON *g = godis_named(godises, ns, gname), *p = pod_of(pods, ns, gname);
    const cJSON *rc = p ? condition(p, "Ready") : NULL;
    const char *phase = p ? gd_json_str_or(p, "status.phase", "?") : "";
    if (!p) snprintf(ready, sizeof ready, "no pod");
    else if (gd_meta_deleting(p)) snprintf(ready, sizeof ready, "Terminating");
    else if (strcmp(phase, "Running")) snprintf(ready, sizeof ready, "%s", phase);
    else snprintf(ready, sizeof ready, "%s", gd_json_str_or(rc, "status", "Unknown"));
    gdctl_age(rc ? gd_json_str_or(rc, "lastTransitionTime", "") : NULL, age, sizeof age);
    printf("    %-4lld %-26s %-34s %-14s %-11s %s\n", id, g ? gname : "(missing)",
           p ? gd_meta_name(p) : "-", p ? gd_json_str_or(p, "spec.nodeName", "-") : "-", ready, age);
}

static void print_cluster(const cJSON *gc, const cJSON *godises, const cJSON *pods)
{
    const char *ns = gd_meta_namespace(gc), *name = gd_meta_name(gc);
    printf("GodisCluster %s/%s\n", ns, name);
    printf("  Phase:      %s (generation %lld, observed %lld)%s\n",
           gd_json_str_or(gc, "status.status", "") [0] ? gd_json_str_or(gc, "status.status", "") : "(none yet)",
           (long long)gd_meta_generation(gc), (long long)gd_json_int_or(gc, "status.observedGeneration", 0),
           cJSON_IsTrue(gd_json_path(gc, "spec.paused")) ? ", paused" : "");
    printf("  Replicas:   %lld wanted, %d members, %lld Ready; next id %lld\n",
           (long long)gd_json_int_or(gc, "spec.replicas", 0),
           cJSON_GetArraySize(gd_json_path(gc, "status.members")),
           (long long)gd_json_int_or(gc, "status.readyReplicas", 0),
           (long long)gd_json_int_or(gc, "status.nextID", 0));
    long long out = gd_json_int_or(gc, "status.scaleOutID", 0), in = gd_json_int_or(gc, "status.scaleInID", 0);
    if (out) printf("  Changing:   adding member %lld (status.scaleOutID)\n", out);
    if (in) printf("  Changing:   removing member %lld (status.scaleInID)\n", in);
    printf("  Conditions:\n");
    const cJSON *c;
    int nc = 0;
    cJSON_ArrayForEach(c, gd_json_path(gc, "status.conditions")) {
        char age[32];
        gdctl_age(gd_json_str_or(c, "lastTransitionTime", ""), age, sizeof age);
        if (!nc++) printf("    %-12s %-7s %-24s %-12s %s\n", "TYPE", "STATUS", "REASON", "LAST CHANGE", "MESSAGE");
        printf("    %-12s %-7s %-24s %-12s %s\n", gd_json_str_or(c, "type", ""),
               gd_json_str_or(c, "status", ""), gd_json_str_or(c, "reason", ""), age,
               gd_json_str_or(c, "message", ""));
    }
    if (!nc) printf("    (none yet)\n");
    printf("  Members:\n");
    int nm = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, gd_json_path(gc, "status.members")) {
        if (!nm++) printf("    %-4s %-26s %-34s %-14s %-11s %s\n", "ID", "GODIS", "POD", "NODE", "READY", "LAST CHANGE");
        print_member(gc, (long long)m->valuedouble, godises, pods);
    }
    if (!nm) printf("    (none yet)\n");
    /* Godis objects of the cluster that are not members (being added or removed) */
    const cJSON *g;
    size_t plen = strlen(name);
    cJSON_ArrayForEach(g, gd_json_path(godises, "items")) {
        const char *gn = gd_meta_name(g), *cl = gd_meta_label(g, "cluster-name");
        if (!cl || strcmp(cl, name) || strcmp(gd_meta_namespace(g), ns)) continue;
        long long id = strncmp(gn, name, plen) == 0 && gn[plen] == '-' ? atoll(gn + plen + 1) : 0;
        if (id > 0 && is_member(gc, id)) continue;
        printf("  Not a member: Godis %s%s\n", gn, id == out ? " (being added)" : id == in ? " (being removed)" : "");
    }
}

/* One list of kind in scope, or the API error printed. */
static int list_scope(ctl *x, const k8s_resource *r, const char *selector, cJSON **out)
{
    k8s_list_opts lo = {.label_selector = selector};
    k8s_status st = {0};
    gd_err e = k8s_list(x->c, r, x->all_ns ? NULL : x->ns, &lo, out, &st);
    if (e) {
        char what[100];
        snprintf(what, sizeof what, "status: list %s", r->resource);
        return gdctl_api_fail(x, what, e, &st);
    }
    return 0;
}

int gdctl_status(ctl *x, const char *name)
{
    cJSON *clusters = NULL, *godises = NULL, *pods = NULL;
    int rc;
    if (name) {
        cJSON *gc = NULL;
        k8s_status st = {0};
        gd_err e = k8s_get(x->c, &K8S_RES_GODISCLUSTERS, x->ns, name, &gc, &st);
        if (e) {
            char what[300];
            snprintf(what, sizeof what, "status %s/%s", x->ns, name);
            return gdctl_api_fail(x, what, e, &st);
        }
        clusters = cJSON_CreateObject();
        cJSON_AddItemToArray(cJSON_AddArrayToObject(clusters, "items"), gc);
        x->all_ns = false;
        rc = 0;
    } else {
        rc = list_scope(x, &K8S_RES_GODISCLUSTERS, NULL, &clusters);
    }
    if (!rc) rc = list_scope(x, &K8S_RES_GODISES, "cluster-name", &godises);
    if (!rc) rc = list_scope(x, &K8S_RES_PODS, "cluster-name", &pods);
    if (!rc) {
        const cJSON *gc;
        int n = 0;
        cJSON_ArrayForEach(gc, gd_json_path(clusters, "items")) {
            if (n++) putchar('\n');
            print_cluster(gc, godises, pods);
        }
        if (!n) printf("No GodisClusters in %s%s.\n", x->all_ns ? "any namespace" : "namespace ",
                       x->all_ns ? "" : x->ns);
    }
    cJSON_Delete(clusters);
    cJSON_Delete(godises);
    cJSON_Delete(pods);
    return rc;
}

/* ---- follow ---- */

/* Prints the Events about name not printed yet; seen remembers them by name. */
static gd_err new_events(ctl *x, const char *name, cJSON *seen, bool print, k8s_status *st)
{
    cJSON *list = NULL;
    char sel[300];
    snprintf(sel, sizeof sel, "involvedObject.name=%s", name);
    k8s_list_opts lo = {.field_selector = sel};
    gd_err e = k8s_list(x->c, &K8S_RES_EVENTS, x->ns, &lo, &list, st);
    const cJSON *ev;
    cJSON_ArrayForEach(ev, gd_json_path(list, "items")) {
        if (cJSON_GetObjectItemCaseSensitive(seen, gd_meta_name(ev))) continue;
        cJSON_AddTrueToObject(seen, gd_meta_name(ev));
        if (print) printf("    event  %-7s %-18s %s\n", gd_json_str_or(ev, "type", ""),
                          gd_json_str_or(ev, "reason", ""), gd_json_str_or(ev, "message", ""));
    }
    cJSON_Delete(list);
    return e;
}

static void status_line(const cJSON *gc, char *line, size_t cap)
{
    char members[128] = "";
    size_t off = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, gd_json_path(gc, "status.members")) {
        int w = snprintf(members + off, sizeof members - off, "%s%lld", off ? "," : "", (long long)m->valuedouble);
        if (w < 0 || (size_t)w >= sizeof members - off) break;
        off += (size_t)w;
    }
    snprintf(line, cap, "phase=%-12s members=[%s] ready=%lld/%lld scaleOut=%lld scaleIn=%lld",
             gd_json_str_or(gc, "status.status", "-"), members,
             (long long)gd_json_int_or(gc, "status.readyReplicas", 0),
             (long long)gd_json_int_or(gc, "spec.replicas", 0),
             (long long)gd_json_int_or(gc, "status.scaleOutID", 0),
             (long long)gd_json_int_or(gc, "status.scaleInID", 0));
}

static bool reached(const cJSON *gc, int want)
{
    return !strcmp(gd_json_str_or(gc, "status.status", ""), "Running") &&
           cJSON_GetArraySize(gd_json_path(gc, "status.members")) == want &&
           gd_json_int_or(gc, "status.readyReplicas", -1) == want;
}

/* What follow knows: the last line printed, where its watch resumes, the Events shown. */
typedef struct {
    ctl *x;
    const char *name;
    int want;
    int64_t t0;
    char last[512], rv[64];
    cJSON *seen;
    bool done, deleted;
    gd_err ev_err;                  /* the last Events list's result */
    k8s_status ev_st;
} follow_state;

/* One state of the cluster: its line when it changed, then the Events not shown yet. */
static void follow_show(follow_state *f, const cJSON *gc)
{
    char line[512];
    status_line(gc, line, sizeof line);
    if (strcmp(line, f->last)) {
        printf("%6.1fs %s\n", (gd_mono_ms() - f->t0) / 1000.0, line);
        snprintf(f->last, sizeof f->last, "%s", line);
    }
    snprintf(f->rv, sizeof f->rv, "%s", gd_meta_rv(gc) ? gd_meta_rv(gc) : "");
    f->ev_err = new_events(f->x, f->name, f->seen, true, &f->ev_st);
    fflush(stdout);
    f->done = reached(gc, f->want);
}

static int follow_event(void *ud, const char *type, cJSON *obj)
{
    follow_state *f = ud;
    if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED")) follow_show(f, obj);
    else if (!strcmp(type, "DELETED")) f->deleted = true;
    return f->done || f->deleted;
}

/* Every state the API server stored is seen, in order: a watch on the one cluster resumed
 * from the last resourceVersion (as kubectl get -w), never a poll that can miss one. Each
 * watch lasts at most 5 s, after which the Events are listed again, so an Event that comes
 * without a status change (a failed meet being retried) shows within 5 s. */
int gdctl_follow(ctl *x, const char *name, int want)
{
    char what[300], lasterr[600] = "", dur[32], sel[300];
    snprintf(what, sizeof what, "follow %s/%s", x->ns, name);
    snprintf(sel, sizeof sel, "metadata.name=%s", name);
    gd_format_duration_ms(x->timeout_ms, dur, sizeof dur);
    follow_state f = {.x = x, .name = name, .want = want, .t0 = gd_mono_ms(),
                      .seen = cJSON_CreateObject()};
    int64_t deadline = f.t0 + x->timeout_ms;
    cJSON *gc = NULL;
    k8s_status st = {0};
    /* The first answers decide whether there is anything to follow: an unreachable or
     * refusing server, or no such cluster, is said at once, not after the timeout. */
    gd_err e = k8s_get(x->c, &K8S_RES_GODISCLUSTERS, x->ns, name, &gc, &st);
    if (!e) e = new_events(x, name, f.seen, false, &st);   /* old events are not news */
    if (e) {
        cJSON_Delete(gc);
        cJSON_Delete(f.seen);
        return gdctl_api_fail(x, what, e, &st);
    }
    follow_show(&f, gc);
    cJSON_Delete(gc);
    while (!f.done && !f.deleted) {
        e = f.ev_err;
        if (!e) {
            int64_t left = deadline - gd_mono_ms();
            if (left <= 0) break;
            k8s_watch_opts o = {0};
            o.list.field_selector = sel;
            o.list.resource_version = f.rv;
            o.list.timeout_seconds = left >= 5000 ? 5 : (int)((left + 999) / 1000);
            e = k8s_watch(x->c, &K8S_RES_GODISCLUSTERS, x->ns, &o, follow_event, &f, &st);
            if (e == GD_ERR_CANCELLED || e == GD_ERR_CLOSED) e = GD_OK;   /* we stopped it, or it ended */
            if (e == GD_ERR_GONE) {         /* too old to resume: start again from now */
                e = k8s_get(x->c, &K8S_RES_GODISCLUSTERS, x->ns, name, &gc, &st);
                if (!e) follow_show(&f, gc);
                cJSON_Delete(gc);
                gc = NULL;
            } else if (!e && !f.done && !f.deleted) {
                f.ev_err = new_events(x, name, f.seen, true, &f.ev_st);
            }
        } else {
            st = f.ev_st;
        }
        if (e) {                        /* said once per distinct problem, then retried */
            char msg[600];
            snprintf(msg, sizeof msg, "%ld %s %s", st.http_status, gd_strerror(e), st.message);
            if (strcmp(msg, lasterr)) {
                char retry[400];
                snprintf(retry, sizeof retry, "%s (retrying until %s have passed)", what, dur);
                gdctl_api_fail(x, retry, e, &st);
                snprintf(lasterr, sizeof lasterr, "%s", msg);
            }
            if (gd_mono_ms() + 1000 >= deadline) break;
            gd_sleep_ms(1000);
            f.ev_err = new_events(x, name, f.seen, true, &f.ev_st);
        } else {
            lasterr[0] = '\0';
        }
    }
    int rc = f.done ? 0 : 1;
    if (f.deleted)
        fprintf(stderr, "%s: %s: the GodisCluster was deleted\n", x->prog, what);
    else if (rc && lasterr[0])
        fprintf(stderr, "%s: %s: gave up after %s: the last request failed (see above)\n", x->prog, what, dur);
    else if (rc) {
        char now[512];                  /* the last line without its column padding */
        size_t n = 0;
        for (const char *p = f.last; *p && n + 1 < sizeof now; p++)
            if (*p != ' ' || (n && now[n - 1] != ' ')) now[n++] = *p;
        now[n] = '\0';
        fprintf(stderr, "%s: %s: did not reach %d Ready members within %s (now: %s)\n", x->prog,
                what, want, dur, now);
    }
    cJSON_Delete(f.seen);
    return rc;
}
