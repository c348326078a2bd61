/* membership.c — the one-change and id-reuse invariants, from watches on the GodisClusters,
 * their ConfigMaps and the Godis objects. A watch delivers every version of an object in
 * order, so consecutive versions are consecutive states: between two of them membership
 * may change by one member at most. A watch that had to relist (410 Gone after a compaction,
 * or an API server restart) leaves a gap: the next state is not compared for one-change, but
 * ids that disappeared meanwhile still count as removed. Removed ids must never come back:
 * not in status.members, not as scaleOutID, not in the ConfigMap, not as a new Godis. */
#include "chaos.h"
#include "chaos_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gd_json.h"
#include "gd_time.h"

#define MAX_IDS 64
#define MAX_REMOVED 512

typedef struct {
    bool known, cm_known;
    int64_t members[MAX_IDS];
    int n;
    int64_t next_id;
    int64_t cm[MAX_IDS];
    int ncm;
    int64_t removed[MAX_REMOVED];
    int nremoved;
} cstate;

static pthread_mutex_t mm = PTHREAD_MUTEX_INITIALIZER;
static cstate states[CH_MAX_CLUSTERS];

void ch_membership_reset(void)
{
    pthread_mutex_lock(&mm);
    memset(states, 0, sizeof states);
    pthread_mutex_unlock(&mm);
}

static bool has(const int64_t *v, int n, int64_t id)
{
    for (int i = 0; i < n; i++)
        if (v[i] == id) return true;
    return false;
}

static void ids_text(const int64_t *v, int n, char *buf, size_t cap)
{
    size_t o = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < n && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? "," : "", (long long)v[i]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
}

static int status_members(const cJSON *obj, int64_t *out)
{
    int n = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, gd_json_path(obj, "status.members"))
        if (n < MAX_IDS && cJSON_IsNumber(m) && m->valuedouble >= 1 && m->valuedouble < 2147483648.0)
            out[n++] = (int64_t)m->valuedouble;
    return n;
}

/* "1@http://...,2@http://..." → ids; -1 when malformed. */
static int cm_members(const cJSON *cm, int64_t *out)
{
    const char *v = gd_json_str_or(cm, "data.initial-cluster", "");
    int n = 0;
    while (*v && n < MAX_IDS) {
        char *end;
        long long id = strtoll(v, &end, 10);
        if (end == v || *end != '@' || id <= 0) return -1;
        out[n++] = id;
        v = strchr(end, ',');
        if (!v) break;
        v++;
    }
    return n;
}

static void check_reuse(chaos *x, cstate *s, const char *name, int64_t id, const char *where)
{
    ch_check(x, I_ID_REUSE);
    if (id > 0 && has(s->removed, s->nremoved, id))
        ch_violation(x, I_ID_REUSE, "GodisCluster %s/%s: member id %lld, removed earlier, is "
                     "used again (%s)", x->ns, name, (long long)id, where);
}

void ch_on_cluster(chaos *x, const char *type, const cJSON *obj, bool gap)
{
    const char *name = gd_meta_name(obj);
    int ci = ch_cluster_index(x, name);
    if (ci < 0) return;
    if (!strcmp(type, "DELETED")) {
        pthread_mutex_lock(&mm);
        states[ci].known = false;
        pthread_mutex_unlock(&mm);
        return;
    }
    int64_t ids[MAX_IDS];
    int n = status_members(obj, ids);
    int64_t out = gd_json_int_or(obj, "status.scaleOutID", 0), in = gd_json_int_or(obj, "status.scaleInID", 0);
    int64_t next = gd_json_int_or(obj, "status.nextID", 0);
    char now[300], before[300];
    ids_text(ids, n, now, sizeof now);
    pthread_mutex_lock(&mm);
    cstate *s = &states[ci];
    ids_text(s->members, s->n, before, sizeof before);
    ch_check(x, I_ONE_CHANGE);
    if (out > 0 && in > 0)
        ch_violation(x, I_ONE_CHANGE, "GodisCluster %s/%s (rv %s): scaleOutID %lld and scaleInID "
                     "%lld in flight at once", x->ns, name, gd_meta_rv(obj), (long long)out, (long long)in);
    if (s->known) {
        int added = 0, gone = 0;
        for (int i = 0; i < n; i++) added += !has(s->members, s->n, ids[i]);
        for (int i = 0; i < s->n; i++) {
            if (has(ids, n, s->members[i])) continue;
            gone++;
            if (s->nremoved < MAX_REMOVED) s->removed[s->nremoved++] = s->members[i];
        }
        if (!gap && s->n > 0 && added + gone > 1)
            ch_violation(x, I_ONE_CHANGE, "GodisCluster %s/%s (rv %s): status.members went from "
                         "%s to %s in one step", x->ns, name, gd_meta_rv(obj), before, now);
        ch_check(x, I_ID_REUSE);
        if (next < s->next_id)
            ch_violation(x, I_ID_REUSE, "GodisCluster %s/%s (rv %s): status.nextID went down "
                         "from %lld to %lld", x->ns, name, gd_meta_rv(obj),
                         (long long)s->next_id, (long long)next);
    }
    for (int i = 0; i < n; i++) check_reuse(x, s, name, ids[i], "status.members");
    check_reuse(x, s, name, out, "status.scaleOutID");
    memcpy(s->members, ids, sizeof(int64_t) * (size_t)n);
    s->n = n;
    if (next > s->next_id) s->next_id = next;
    s->known = true;
    pthread_mutex_unlock(&mm);
}

void ch_on_configmap(chaos *x, const char *type, const cJSON *obj, bool gap)
{
    char name[64];
    snprintf(name, sizeof name, "%s", gd_meta_name(obj));
    char *dash = strstr(name, "-config");
    if (!dash || dash[7]) return;
    *dash = '\0';
    int ci = ch_cluster_index(x, name);
    if (ci < 0) return;
    pthread_mutex_lock(&mm);
    cstate *s = &states[ci];
    if (!strcmp(type, "DELETED")) {
        s->cm_known = false;        /* deleted by hand: the rebuild starts from nothing */
        pthread_mutex_unlock(&mm);
        return;
    }
    int64_t ids[MAX_IDS];
    int n = cm_members(obj, ids);
    if (n >= 0) {
        ch_check(x, I_ONE_CHANGE);
        if (s->cm_known && !gap && s->ncm > 0) {
            int changed = 0;
            for (int i = 0; i < n; i++) changed += !has(s->cm, s->ncm, ids[i]);
            for (int i = 0; i < s->ncm; i++) changed += !has(ids, n, s->cm[i]);
            char a[300], b[300];
            ids_text(s->cm, s->ncm, a, sizeof a);
            ids_text(ids, n, b, sizeof b);
            if (changed > 1)
                ch_violation(x, I_ONE_CHANGE, "ConfigMap %s/%s-config (rv %s): initial-cluster "
                             "went from %s to %s in one step", x->ns, name, gd_meta_rv(obj), a, b);
        }
        for (int i = 0; i < n; i++) check_reuse(x, s, name, ids[i], "ConfigMap initial-cluster");
        memcpy(s->cm, ids, sizeof(int64_t) * (size_t)n);
        s->ncm = n;
        s->cm_known = true;
    }
    pthread_mutex_unlock(&mm);
}

void ch_on_godis(chaos *x, const char *type, const cJSON *obj, bool gap)
{
    if (strcmp(type, "ADDED") != 0) return;     /* a create seen by the watch, not a relist */
    char name[64];
    snprintf(name, sizeof name, "%s", gd_meta_name(obj));
    char *dash = strrchr(name, '-');
    if (!dash) return;
    *dash = '\0';
    int ci = ch_cluster_index(x, name);
    long long id = atoll(dash + 1);
    if (ci < 0 || id <= 0) return;
    pthread_mutex_lock(&mm);
    check_reuse(x, &states[ci], name, id, "a new Godis object");
    pthread_mutex_unlock(&mm);
}

/* ---- a watch that survives API server restarts and 410 ---- */

typedef void (*event_fn)(chaos *x, const char *type, const cJSON *obj, bool gap);
typedef struct {
    chaos *x;
    const k8s_resource *r;
    const char *selector;
    event_fn fn;
    char rv[64];
} watcher;

static int on_watch_event(void *ud, const char *type, cJSON *obj)
{
    watcher *w = ud;
    const char *rv = gd_meta_rv(obj);
    if (*rv && strlen(rv) < sizeof w->rv) snprintf(w->rv, sizeof w->rv, "%s", rv);
    if (strcmp(type, "BOOKMARK") && strcmp(type, "ERROR")) w->fn(w->x, type, obj, false);
    return atomic_load(&w->x->stop) ? 1 : 0;
}

static bool relist(watcher *w, k8s_client *c)
{
    k8s_list_opts lo = {.label_selector = w->selector};
    cJSON *list = NULL;
    if (k8s_list(c, w->r, w->x->ns, &lo, &list, NULL) != GD_OK) return false;
    snprintf(w->rv, sizeof w->rv, "%s", gd_json_str_or(list, "metadata.resourceVersion", ""));
    const cJSON *it;
    cJSON_ArrayForEach(it, gd_json_path(list, "items")) w->fn(w->x, "SYNC", it, true);
    cJSON_Delete(list);
    return true;
}

static void *watch_main(void *arg)
{
    watcher *w = arg;
    chaos *x = w->x;
    k8s_client *c = ch_client(x);
    bool need_list = true;
    while (c && !atomic_load(&x->stop)) {
        if (need_list) {
            if (!relist(w, c)) {
                gd_sleep_ms(500);
                continue;
            }
            need_list = false;
        }
        k8s_watch_opts o = {.list = {.label_selector = w->selector, .resource_version = w->rv,
                                     .timeout_seconds = 60},
                            .allow_bookmarks = true, .stop = &x->halt};
        gd_err e = k8s_watch(c, w->r, x->ns, &o, on_watch_event, w, NULL);
        if (e == GD_ERR_GONE) need_list = true;      /* a gap: the next state is not compared */
        else if (e != GD_OK && e != GD_ERR_CANCELLED) gd_sleep_ms(300);
    }
    k8s_client_destroy(&c);
    return NULL;
}

void *ch_membership_thread(void *arg)
{
    chaos *x = arg;
    watcher w[3] = {
        {.x = x, .r = &K8S_RES_GODISCLUSTERS, .fn = ch_on_cluster},
        {.x = x, .r = &K8S_RES_CONFIGMAPS, .selector = "cluster-name", .fn = ch_on_configmap},
        {.x = x, .r = &K8S_RES_GODISES, .fn = ch_on_godis},
    };
    pthread_t th[3];
    for (int i = 0; i < 3; i++) pthread_create(&th[i], NULL, watch_main, &w[i]);
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    return NULL;
}
