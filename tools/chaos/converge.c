/* converge.c — the end of a campaign: every cluster must reach, within the bound, `replicas`
 * Ready members with the ConfigMap == status.members == the Godis objects == the membership
 * each member itself knows (the godis stand-in's `standin members`). Times are measured from
 * the moment the faults stopped (everything that was down is up again). */
#include "chaos.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gd_json.h"
#include "gd_time.h"
#include "godis_client.h"

#define MAX_IDS 64

static int cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void text(const int64_t *v, int n, char *buf, size_t cap)
{
    size_t o = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < n && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? "," : "", (long long)v[i]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
}

static bool same(const int64_t *a, int na, int64_t *b, int nb)
{
    qsort(b, (size_t)nb, sizeof *b, cmp);
    if (na != nb) return false;
    for (int i = 0; i < na; i++)
        if (a[i] != b[i]) return false;
    return true;
}

/* Whether cluster i has converged; why not into why. */
static bool converged(chaos *x, k8s_client *c, int i, char *why, size_t cap)
{
    char name[16], sel[64], a[300], b[300];
    ch_cluster_name(i, name, sizeof name);
    int want = x->replicas[i];
    cJSON *gc = NULL, *cm = NULL, *gds = NULL, *pods = NULL;
    bool ok = false;
    int64_t st[MAX_IDS], other[MAX_IDS];
    int n = 0, no = 0;
    if (k8s_get(c, &K8S_RES_GODISCLUSTERS, x->ns, name, &gc, NULL) != GD_OK) {
        snprintf(why, cap, "cannot read the GodisCluster");
        goto out;
    }
    const cJSON *m;
    cJSON_ArrayForEach(m, gd_json_path(gc, "status.members"))
        if (n < MAX_IDS && cJSON_IsNumber(m)) st[n++] = (int64_t)m->valuedouble;
    qsort(st, (size_t)n, sizeof *st, cmp);
    text(st, n, a, sizeof a);
    const char *phase = gd_json_str_or(gc, "status.status", "");
    if (strcmp(phase, "Running") || n != want || gd_json_int_or(gc, "status.readyReplicas", -1) != want ||
        gd_json_int_or(gc, "status.scaleOutID", 0) || gd_json_int_or(gc, "status.scaleInID", 0) ||
        gd_json_int_or(gc, "status.observedGeneration", -1) != gd_meta_generation(gc)) {
        snprintf(why, cap, "status: phase %s, members %s, ready %lld, want %d", phase, a,
                 (long long)gd_json_int_or(gc, "status.readyReplicas", -1), want);
        goto out;
    }
    char cmn[40];
    snprintf(cmn, sizeof cmn, "%s-config", name);
    if (k8s_get(c, &K8S_RES_CONFIGMAPS, x->ns, cmn, &cm, NULL) != GD_OK) {
        snprintf(why, cap, "no ConfigMap");
        goto out;
    }
    const char *v = gd_json_str_or(cm, "data.initial-cluster", "");
    for (no = 0; *v && no < MAX_IDS;) {
        other[no++] = strtoll(v, NULL, 10);
        if (!(v = strchr(v, ','))) break;
        v++;
    }
    if (!same(st, n, other, no)) {
        text(other, no, b, sizeof b);
        snprintf(why, cap, "ConfigMap %s, status.members %s", b, a);
        goto out;
    }
    snprintf(sel, sizeof sel, "cluster-name=%s", name);
    k8s_list_opts lo = {.label_selector = sel};
    if (k8s_list(c, &K8S_RES_GODISES, x->ns, &lo, &gds, NULL) != GD_OK ||
        k8s_list(c, &K8S_RES_PODS, x->ns, &lo, &pods, NULL) != GD_OK) {
        snprintf(why, cap, "cannot list its Godis objects or pods");
        goto out;
    }
    no = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, gd_json_path(gds, "items")) {
        const char *dash = strrchr(gd_meta_name(o), '-');
        if (!gd_meta_deleting(o) && dash && no < MAX_IDS) other[no++] = atoll(dash + 1);
    }
    if (!same(st, n, other, no)) {
        text(other, no, b, sizeof b);
        snprintf(why, cap, "Godis objects %s, status.members %s", b, a);
        goto out;
    }
    int running = 0;
    cJSON_ArrayForEach(o, gd_json_path(pods, "items")) {
        if (gd_meta_deleting(o)) continue;
        running++;
        const char *ip = gd_json_str_or(o, "status.podIP", "");
        godis_opts go = {.connect_timeout_ms = 500, .reply_timeout_ms = 2000, .loopback_only = 1};
        godis_client *g = *ip ? godis_client_new(ip, 6379, &go) : NULL;
        long long ids[MAX_IDS];
        char *urls[MAX_IDS];
        size_t k = 0;
        gd_err e = g ? godis_members(g, ids, urls, MAX_IDS, &k) : GD_ERR_TRANSPORT;
        godis_client_destroy(&g);
        no = 0;
        for (size_t j = 0; e == GD_OK && j < k; j++) {
            other[no++] = ids[j];
            free(urls[j]);
        }
        if (e != GD_OK || !same(st, n, other, no)) {
            text(other, no, b, sizeof b);
            snprintf(why, cap, "member pod %s (%s) knows %s, status.members %s", gd_meta_name(o),
                     ip, e == GD_OK ? b : gd_strerror(e), a);
            goto out;
        }
    }
    if (running != n) {
        snprintf(why, cap, "%d member pods for status.members %s", running, a);
        goto out;
    }
    ok = true;
out:
    cJSON_Delete(gc);
    cJSON_Delete(cm);
    cJSON_Delete(gds);
    cJSON_Delete(pods);
    return ok;
}

int ch_converge(chaos *x, int64_t *times)
{
    k8s_client *c = ch_client(x);
    pthread_mutex_lock(&x->mu);
    int64_t from = x->last_fault_at > 0 ? x->last_fault_at : ch_now(x);
    pthread_mutex_unlock(&x->mu);
    int left = x->nclusters;
    char why[CH_MAX_CLUSTERS][1024];
    for (int i = 0; i < x->nclusters; i++) {
        times[i] = -1;
        why[i][0] = '\0';
    }
    while (c && left > 0 && ch_now(x) - from < x->converge_bound_ms && atomic_load(&x->stop) != 2) {
        for (int i = 0; i < x->nclusters; i++) {
            if (times[i] >= 0) continue;
            if (converged(x, c, i, why[i], sizeof why[i])) {
                times[i] = ch_now(x) - from;
                left--;
                ch_log(x, "c%02d converged: %d members, %.1f s after the faults stopped", i,
                       x->replicas[i], (double)times[i] / 1000);
            }
        }
        ch_tend(x);
        if (left > 0) gd_sleep_ms(1000);
    }
    for (int i = 0; i < x->nclusters; i++) {
        ch_check(x, I_CONVERGE);
        if (times[i] < 0)
            ch_violation(x, I_CONVERGE, "GodisCluster %s/c%02d did not converge to %d members "
                         "within %.0f s: %s", x->ns, i, x->replicas[i],
                         (double)x->converge_bound_ms / 1000, why[i]);
    }
    k8s_client_destroy(&c);
    return left;
}
