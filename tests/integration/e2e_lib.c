/* e2e_lib.c — see e2e_lib.h. */
#include "e2e_lib.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "godis_client.h"
#include "gd_json.h"
#include "gd_time.h"
#include "gd_yaml.h"

int64_t e2e_now_ms(void) { return gd_mono_ms(); }

k8s_client *e2e_client(void)
{
    k8s_config_opts o = {0};
    k8s_config *cfg = NULL;
    char err[512];
    if (k8s_config_load(&o, &cfg, err, sizeof err) != GD_OK) {
        fprintf(stderr, "e2e: kubeconfig: %s\n", err);
        return NULL;
    }
    k8s_client_opts co;
    k8s_client_opts_default(&co);
    co.qps = -1;
    return k8s_client_new(&cfg, &co);
}

static bool apply_crd(k8s_client *c, cJSON *crd)
{
    const char *name = gd_meta_name(crd);
    cJSON *cur = NULL;
    gd_err e = k8s_get(c, &K8S_RES_CRDS, NULL, name, &cur, NULL);
    k8s_status st = {0};
    if (e == GD_OK) {
        gd_json_set(crd, "metadata.resourceVersion", cJSON_CreateString(gd_meta_rv(cur)));
        e = k8s_update(c, &K8S_RES_CRDS, crd, NULL, &st);
    } else {
        e = k8s_create(c, &K8S_RES_CRDS, NULL, crd, NULL, &st);
    }
    cJSON_Delete(cur);
    if (e) {
        fprintf(stderr, "e2e: apply CRD %s: %s %s\n", name, gd_strerror(e), st.message);
        return false;
    }
    int64_t deadline = gd_mono_ms() + 30000;
    while (gd_mono_ms() < deadline) {
        cJSON *o = NULL;
        bool ok = false;
        if (k8s_get(c, &K8S_RES_CRDS, NULL, name, &o, NULL) == GD_OK) {
            const cJSON *cond;
            cJSON_ArrayForEach(cond, gd_json_path(o, "status.conditions"))
                ok |= !strcmp(gd_json_str_or(cond, "type", ""), "Established") &&
                      !strcmp(gd_json_str_or(cond, "status", ""), "True");
        }
        cJSON_Delete(o);
        if (ok) return true;
        gd_sleep_ms(100);
    }
    fprintf(stderr, "e2e: CRD %s not Established\n", name);
    return false;
}

bool e2e_install_crds(k8s_client *c)
{
    const char *files[] = {"deploy/base/crds/godisclusters.yaml", "deploy/base/crds/godises.yaml"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        FILE *f = fopen(files[i], "rb");
        if (!f) {
            fprintf(stderr, "e2e: cannot open %s (run from the repository root)\n", files[i]);
            return false;
        }
        char *buf = malloc(1 << 20);
        size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
        fclose(f);
        cJSON *docs = NULL;
        char err[256];
        bool ok = buf && gd_yaml_to_json(buf, n, &docs, err, sizeof err) == GD_OK;
        free(buf);
        if (!ok) {
            fprintf(stderr, "e2e: %s: %s\n", files[i], err);
            return false;
        }
        cJSON *d;
        cJSON_ArrayForEach(d, docs) ok &= apply_crd(c, d);
        cJSON_Delete(docs);
        if (!ok) return false;
    }
    return true;
}

bool e2e_ns_create(k8s_client *c, const char *prefix, char *ns, size_t cap)
{
    snprintf(ns, cap, "%s-%06x", prefix, (unsigned)(gd_rand01() * 0xffffff));
    char body[300];
    snprintf(body, sizeof body, "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", ns);
    cJSON *obj = cJSON_Parse(body);
    k8s_status st = {0};
    gd_err e = k8s_create(c, &K8S_RES_NAMESPACES, NULL, obj, NULL, &st);
    cJSON_Delete(obj);
    if (e) fprintf(stderr, "e2e: create namespace %s: %s %s\n", ns, gd_strerror(e), st.message);
    return e == GD_OK;
}

void e2e_ns_delete(k8s_client *c, const char *ns)
{
    k8s_delete_opts o;
    k8s_delete_opts_default(&o);
    o.propagation_policy = "Background";
    k8s_delete(c, &K8S_RES_NAMESPACES, NULL, ns, &o, NULL);
}

bool e2e_cluster_create(k8s_client *c, const char *ns, const char *name, int replicas)
{
    char spec[64];
    snprintf(spec, sizeof spec, "{\"replicas\":%d}", replicas);
    return e2e_cluster_create_spec(c, ns, name, spec);
}

bool e2e_cluster_create_spec(k8s_client *c, const char *ns, const char *name, const char *spec_json)
{
    char body[1024];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"GodisCluster\","
             "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},\"spec\":%s}", name, ns, spec_json);
    cJSON *obj = cJSON_Parse(body);
    k8s_status st = {0};
    gd_err e = k8s_create(c, &K8S_RES_GODISCLUSTERS, ns, obj, NULL, &st);
    cJSON_Delete(obj);
    if (e) fprintf(stderr, "e2e: create GodisCluster %s/%s: %s %s\n", ns, name, gd_strerror(e), st.message);
    return e == GD_OK;
}

bool e2e_cluster_scale(k8s_client *c, const char *ns, const char *name, int replicas)
{
    char patch[64];
    snprintf(patch, sizeof patch, "{\"spec\":{\"replicas\":%d}}", replicas);
    k8s_status st = {0};
    gd_err e = k8s_patch(c, &K8S_RES_GODISCLUSTERS, ns, name, K8S_PATCH_MERGE, patch, NULL, NULL, &st);
    if (e) fprintf(stderr, "e2e: scale %s/%s: %s %s\n", ns, name, gd_strerror(e), st.message);
    return e == GD_OK;
}

cJSON *e2e_cluster_get(k8s_client *c, const char *ns, const char *name)
{
    cJSON *out = NULL;
    if (k8s_get(c, &K8S_RES_GODISCLUSTERS, ns, name, &out, NULL) != GD_OK) return NULL;
    return out;
}

static int cmp_id(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int e2e_status_members(const cJSON *cluster, int64_t *ids, int cap)
{
    int n = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, gd_json_path(cluster, "status.members"))
        if (n < cap && cJSON_IsNumber(m)) ids[n++] = (int64_t)m->valuedouble;
    qsort(ids, n, sizeof *ids, cmp_id);
    return n;
}

bool e2e_condition_is(const cJSON *obj, const char *type, const char *status)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, gd_json_path(obj, "status.conditions"))
        if (strcmp(gd_json_str_or(c, "type", ""), type) == 0)
            return strcmp(gd_json_str_or(c, "status", ""), status) == 0;
    return false;
}

bool e2e_wait_converged(k8s_client *c, const char *ns, const char *name, int replicas,
                        int timeout_ms)
{
    int64_t deadline = gd_mono_ms() + timeout_ms;
    cJSON *gc = NULL;
    while (gd_mono_ms() < deadline) {
        cJSON_Delete(gc);
        gc = e2e_cluster_get(c, ns, name);
        int64_t ids[64];
        if (gc && strcmp(gd_json_str_or(gc, "status.status", ""), "Running") == 0 &&
            e2e_condition_is(gc, "Ready", "True") &&
            e2e_status_members(gc, ids, 64) == replicas &&
            gd_json_int_or(gc, "status.readyReplicas", -1) == replicas &&
            gd_json_int_or(gc, "status.scaleOutID", 0) == 0 &&
            gd_json_int_or(gc, "status.scaleInID", 0) == 0 &&
            gd_json_int_or(gc, "status.observedGeneration", -1) == gd_meta_generation(gc)) {
            cJSON_Delete(gc);
            return true;
        }
        gd_sleep_ms(200);
    }
    char *s = gc ? cJSON_PrintUnformatted(cJSON_GetObjectItem(gc, "status")) : NULL;
    fprintf(stderr, "e2e: %s/%s did not converge to %d members; status: %s\n", ns, name,
            replicas, s ? s : "(no object)");
    free(s);
    cJSON_Delete(gc);
    return false;
}

static bool same_ids(bool verbose, const char *what, const int64_t *a, int na, const int64_t *b, int nb)
{
    bool same = na == nb;
    for (int i = 0; same && i < na; i++) same = a[i] == b[i];
    if (!same && verbose) {
        fprintf(stderr, "e2e: %s differs: [", what);
        for (int i = 0; i < na; i++) fprintf(stderr, "%s%lld", i ? "," : "", (long long)a[i]);
        fprintf(stderr, "] vs [");
        for (int i = 0; i < nb; i++) fprintf(stderr, "%s%lld", i ? "," : "", (long long)b[i]);
        fprintf(stderr, "]\n");
    }
    return same;
}

/* The stand-in's own membership, over RESP (a stand-in extension command). */
static int standin_members(const char *ip, int64_t *ids, int cap)
{
    godis_client *gc = godis_client_new(ip, 6379, NULL);
    if (!gc) return -1;
    long long raw[64];
    char *urls[64];
    size_t n = 0;
    gd_err e = godis_members(gc, raw, urls, 64, &n);
    godis_client_destroy(&gc);
    if (e) return -1;
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k < cap) ids[k++] = raw[i];
        free(urls[i]);
    }
    qsort(ids, k, sizeof *ids, cmp_id);
    return k;
}

static int configmap_ids(k8s_client *c, const char *ns, const char *name, int64_t *ids, int cap)
{
    char cm[300];
    snprintf(cm, sizeof cm, "%s-config", name);
    cJSON *obj = NULL;
    if (k8s_get(c, &K8S_RES_CONFIGMAPS, ns, cm, &obj, NULL) != GD_OK) return -1;
    const char *v = gd_json_str_or(obj, "data.initial-cluster", "");
    int n = 0;
    while (*v && n < cap) {
        ids[n++] = strtoll(v, NULL, 10);
        v = strchr(v, ',');
        if (!v) break;
        v++;
    }
    cJSON_Delete(obj);
    qsort(ids, n, sizeof *ids, cmp_id);
    return n;
}

bool e2e_check_consistent_v(k8s_client *c, const char *ns, const char *name, bool verbose)
{
    cJSON *gc = e2e_cluster_get(c, ns, name);
    if (!gc) return false;
    int64_t st[64], cm[64];
    int nst = e2e_status_members(gc, st, 64);
    cJSON_Delete(gc);
    int ncm = configmap_ids(c, ns, name, cm, 64);
    bool ok = same_ids(verbose, "status.members vs ConfigMap", st, nst, cm, ncm);
    char sel[300];
    snprintf(sel, sizeof sel, "cluster-name=%s", name);
    k8s_list_opts lo = {.label_selector = sel};
    cJSON *pods = NULL;
    if (k8s_list(c, &K8S_RES_PODS, ns, &lo, &pods, NULL) != GD_OK) return false;
    int seen = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, gd_json_path(pods, "items")) {
        if (gd_meta_deleting(p)) continue;
        const char *ip = gd_json_str_or(p, "status.podIP", "");
        int64_t own[64];
        int n = *ip ? standin_members(ip, own, 64) : -1;
        char what[200];
        snprintf(what, sizeof what, "status.members vs stand-in %s (%s)", gd_meta_name(p), ip);
        if (n < 0) {
            if (verbose) fprintf(stderr, "e2e: stand-in %s (%s) did not answer\n", gd_meta_name(p), ip);
            ok = false;
        } else {
            ok &= same_ids(verbose, what, st, nst, own, n);
        }
        seen++;
    }
    cJSON_Delete(pods);
    if (seen != nst) {
        if (verbose) fprintf(stderr, "e2e: %d member pods for %d members\n", seen, nst);
        ok = false;
    }
    return ok;
}

bool e2e_check_consistent(k8s_client *c, const char *ns, const char *name)
{
    return e2e_check_consistent_v(c, ns, name, true);
}

bool e2e_wait_settled(k8s_client *c, const char *ns, const char *name, int replicas,
                      int timeout_ms)
{
    return e2e_wait_converged(c, ns, name, replicas, timeout_ms) &&
           e2e_wait_consistent(c, ns, name, timeout_ms) &&
           e2e_wait_converged(c, ns, name, replicas, timeout_ms);
}

bool e2e_wait_consistent(k8s_client *c, const char *ns, const char *name, int timeout_ms)
{
    int64_t deadline = gd_mono_ms() + timeout_ms;
    while (gd_mono_ms() < deadline) {
        if (e2e_check_consistent_v(c, ns, name, false)) return true;
        gd_sleep_ms(250);
    }
    return e2e_check_consistent_v(c, ns, name, true);
}

/* ---- waiting on a watch ---- */

typedef struct {
    e2e_watch_pred pred;
    void *arg;
    bool done;
} watch_wait;

static int watch_wait_event(void *ud, const char *type, cJSON *obj)
{
    watch_wait *w = ud;
    if (strcmp(type, "BOOKMARK") != 0 && strcmp(type, "ERROR") != 0 && w->pred(type, obj, w->arg))
        w->done = true;
    return w->done;
}

bool e2e_watch_until(k8s_client *c, const k8s_resource *r, const char *ns, const char *label_sel,
                     const char *field_sel, e2e_watch_pred pred, void *arg, int timeout_ms)
{
    watch_wait w = {.pred = pred, .arg = arg};
    int64_t deadline = gd_mono_ms() + timeout_ms;
    while (!w.done) {
        int64_t left = deadline - gd_mono_ms();
        if (left <= 0) break;
        k8s_watch_opts o = {0};
        o.list.label_selector = label_sel;
        o.list.field_selector = field_sel;
        o.list.timeout_seconds = (int)(left + 999) / 1000;
        /* Without a resourceVersion the watch starts with every current object as ADDED,
         * so a state reached before the call counts too. */
        k8s_watch(c, r, ns, &o, watch_wait_event, &w, NULL);
    }
    return w.done;
}

/* ---- history watch ---- */

static void history_record(e2e_history *h, const cJSON *obj)
{
    int64_t ids[64];
    int n = e2e_status_members(obj, ids, 64);
    int64_t next = gd_json_int_or(obj, "status.nextID", 0);
    if (next < h->last_next_id && !h->violation[0])
        snprintf(h->violation, sizeof h->violation, "nextID went down: %lld -> %lld",
                 (long long)h->last_next_id, (long long)next);
    if (next > h->last_next_id) h->last_next_id = next;
    int added = 0, removed = 0;
    for (int i = 0; i < n; i++) {
        bool old = false;
        for (int j = 0; j < h->nlast; j++) old |= h->last[j] == ids[i];
        if (!old) {
            added++;
            if (h->nlast > 0 && ids[i] <= h->max_id_seen && !h->violation[0])
                snprintf(h->violation, sizeof h->violation, "id %lld reused (max seen %lld)",
                         (long long)ids[i], (long long)h->max_id_seen);
        }
    }
    for (int j = 0; j < h->nlast; j++) {
        bool still = false;
        for (int i = 0; i < n; i++) still |= h->last[j] == ids[i];
        removed += !still;
    }
    if (h->nlast > 0 && added + removed > 1 && !h->violation[0])
        snprintf(h->violation, sizeof h->violation, "%d ids added and %d removed in one step",
                 added, removed);
    if (added + removed > 0) h->transitions++;
    for (int i = 0; i < n; i++)
        if (ids[i] > h->max_id_seen) h->max_id_seen = ids[i];
    memcpy(h->last, ids, n * sizeof *ids);
    h->nlast = n;
}

static void history_scale_out(e2e_history *h, const cJSON *obj)
{
    int64_t id = gd_json_int_or(obj, "status.scaleOutID", 0);
    if (id > 0 && (h->nscale_out == 0 || h->scale_out_ids[h->nscale_out - 1] != id) &&
        h->nscale_out < (int)(sizeof h->scale_out_ids / sizeof *h->scale_out_ids))
        h->scale_out_ids[h->nscale_out++] = id;
}

static int history_event(void *ud, const char *type, cJSON *obj)
{
    e2e_history *h = ud;
    pthread_mutex_lock(&h->mu);
    if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0) {
        history_record(h, obj);
        history_scale_out(h, obj);
        h->synced = true;
    }
    if (strcmp(type, "ERROR") != 0 && *gd_meta_rv(obj))
        snprintf(h->rv, sizeof h->rv, "%s", gd_meta_rv(obj));
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    return h->stop;
}

static void *history_main(void *arg)
{
    e2e_history *h = arg;
    char sel[200], rv[64];
    snprintf(sel, sizeof sel, "metadata.name=%s", h->name);
    while (!h->stop) {
        pthread_mutex_lock(&h->mu);
        snprintf(rv, sizeof rv, "%s", h->rv);
        pthread_mutex_unlock(&h->mu);
        k8s_watch_opts o = {0};
        o.list.field_selector = sel;
        o.list.timeout_seconds = 30;
        o.list.resource_version = rv[0] ? rv : NULL;   /* resume: no state in between is lost */
        o.stop = &h->stop;
        gd_err e = k8s_watch(h->c, &K8S_RES_GODISCLUSTERS, h->ns, &o, history_event, h, NULL);
        if (e == GD_ERR_GONE) {
            /* Too old to resume: start over from the current state, and say states may
             * have been missed (the checks above cannot vouch for them). */
            pthread_mutex_lock(&h->mu);
            h->rv[0] = '\0';
            h->gaps++;
            pthread_mutex_unlock(&h->mu);
        } else if (e != GD_OK && e != GD_ERR_CLOSED && !h->stop) {
            gd_sleep_ms(100);   /* transient: retry (the API server may be busy) */
        }
    }
    return NULL;
}

bool e2e_history_start(e2e_history *h, k8s_client *c, const char *ns, const char *name)
{
    memset(h, 0, sizeof *h);
    h->c = c;
    snprintf(h->ns, sizeof h->ns, "%s", ns);
    snprintf(h->name, sizeof h->name, "%s", name);
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    if (pthread_create(&h->thread, NULL, history_main, h) != 0) return false;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    pthread_mutex_lock(&h->mu);
    while (!h->synced && pthread_cond_timedwait(&h->cv, &h->mu, &until) == 0) {
    }
    bool ok = h->synced;
    pthread_mutex_unlock(&h->mu);
    if (!ok) fprintf(stderr, "e2e: no watch event for %s/%s within 30 s\n", ns, name);
    return ok;
}

int64_t e2e_history_wait_scale_out(e2e_history *h, int n, int timeout_ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) { until.tv_sec++; until.tv_nsec -= 1000000000; }
    pthread_mutex_lock(&h->mu);
    while (h->nscale_out < n && pthread_cond_timedwait(&h->cv, &h->mu, &until) == 0) {
    }
    int64_t id = h->nscale_out >= n ? h->scale_out_ids[n - 1] : 0;
    pthread_mutex_unlock(&h->mu);
    return id;
}

bool e2e_history_stop(e2e_history *h)
{
    h->stop = 1;
    pthread_join(h->thread, NULL);
    if (h->violation[0]) fprintf(stderr, "e2e: history of %s/%s: %s\n", h->ns, h->name, h->violation);
    if (h->gaps) fprintf(stderr, "e2e: history of %s/%s: %d watch gaps\n", h->ns, h->name, h->gaps);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    return h->violation[0] == '\0' && h->gaps == 0;
}

int e2e_count(k8s_client *c, const k8s_resource *r, const char *ns, const char *selector)
{
    k8s_list_opts lo = {.label_selector = selector};
    cJSON *list = NULL;
    if (k8s_list(c, r, ns, &lo, &list, NULL) != GD_OK) return -1;
    int n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, gd_json_path(list, "items")) n += !gd_meta_deleting(it);
    cJSON_Delete(list);
    return n;
}

bool e2e_wait_count(k8s_client *c, const k8s_resource *r, const char *ns, const char *sel,
                    int want, int timeout_ms)
{
    int64_t deadline = gd_mono_ms() + timeout_ms;
    int n = -1;
    while (gd_mono_ms() < deadline) {
        n = e2e_count(c, r, ns, sel);
        if (n == want) return true;
        gd_sleep_ms(200);
    }
    fprintf(stderr, "e2e: %s %s in %s: %d, want %d\n", r->resource, sel ? sel : "", ns, n, want);
    return false;
}
