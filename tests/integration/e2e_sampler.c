/* e2e_sampler.c — see e2e_sampler.h. */
#include "e2e_sampler.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "e2e_lib.h"
#include "gd_json.h"
#include "godis_client.h"

typedef struct {
    int64_t id;
    char ip[32];
} pod_ip;

static int member_pods(e2e_sampler *s, pod_ip *out, int cap)
{
    char sel[160];
    snprintf(sel, sizeof sel, "cluster-name=%s", s->cluster);
    k8s_list_opts lo = {.label_selector = sel};
    cJSON *list = NULL;
    if (k8s_list(s->k, &K8S_RES_PODS, s->ns, &lo, &list, NULL) != GD_OK) return -1;
    int n = 0;
    size_t cl = strlen(s->cluster);
    const cJSON *p;
    cJSON_ArrayForEach(p, gd_json_path(list, "items")) {
        const char *nn = gd_meta_label(p, "node-name");
        if (n >= cap || gd_meta_deleting(p) || !nn || strncmp(nn, s->cluster, cl) || nn[cl] != '-') continue;
        out[n].id = atoll(nn + cl + 1);
        snprintf(out[n].ip, sizeof out[n].ip, "%s", gd_json_str_or(p, "status.podIP", ""));
        n++;
    }
    cJSON_Delete(list);
    return n;
}

/* Generous timeouts: on a loaded 2-core machine a live member can take a second to answer. */
static godis_client *dial(const char *ip)
{
    godis_opts o = {.connect_timeout_ms = 1000, .reply_timeout_ms = 3000, .loopback_only = 1};
    return ip[0] ? godis_client_new(ip, 6379, &o) : NULL;
}

static bool answers(const char *ip)
{
    godis_client *g = dial(ip);
    godis_hello_info h;
    bool ok = g && godis_hello(g, &h) == GD_OK;
    godis_client_destroy(&g);
    return ok;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int by_id(const void *a, const void *b)
{
    return cmp64(&((const pod_ip *)a)->id, &((const pod_ip *)b)->id);
}

/* The membership as Raft counts it: a live member's own list (the stand-in's `standin
 * members`; a meet counts before the new pod runs, a forget removes at once), sorted.
 * Asked of the lowest id that answers, so consecutive samples read the same member's view
 * (members learn a change a moment apart). */
static int raft_members(pod_ip *m, int n, int64_t *ids)
{
    qsort(m, (size_t)n, sizeof *m, by_id);
    for (int i = 0; i < n; i++) {
        godis_client *g = dial(m[i].ip);
        char *urls[E2E_SAMPLER_MAXM] = {0};
        size_t got = 0;
        long long lids[E2E_SAMPLER_MAXM];
        gd_err e = g ? godis_members(g, lids, urls, E2E_SAMPLER_MAXM, &got) : GD_ERR_ARG;
        godis_client_destroy(&g);
        for (size_t k = 0; k < got; k++) free(urls[k]);
        if (e != GD_OK) continue;
        for (size_t k = 0; k < got; k++) ids[k] = lids[k];
        qsort(ids, got, sizeof *ids, cmp64);
        return (int)got;
    }
    return -1;
}

/* Two ids added, or two removed, between samples 100 ms apart is two membership changes at
 * once. One removed and one added is the end of one move and the start of the next (a
 * forget, then the next member's meet): sequential. */
static void count_changes(e2e_sampler *s, const int64_t *ids, int nr)
{
    if (s->nlast) {
        int added = 0, removed = 0;
        for (int i = 0; i < nr; i++)
            if (!bsearch(&ids[i], s->last_ids, (size_t)s->nlast, sizeof *ids, cmp64)) added++;
        for (int i = 0; i < s->nlast; i++)
            if (!bsearch(&s->last_ids[i], ids, (size_t)nr, sizeof *ids, cmp64)) removed++;
        if (added > 1 || removed > 1) {
            s->multi_change++;
            snprintf(s->violation, sizeof s->violation,
                     "sample %d: %d members added and %d removed at once", s->samples, added,
                     removed);
        }
    }
    memcpy(s->last_ids, ids, sizeof(int64_t) * (size_t)nr);
    s->nlast = nr;
}

static void sample_once(e2e_sampler *s)
{
    pod_ip m[E2E_SAMPLER_MAXM];
    int n = member_pods(s, m, E2E_SAMPLER_MAXM);
    if (n < 0) return;                       /* the API server did not answer: no sample */
    int64_t ids[E2E_SAMPLER_MAXM];
    int nr = raft_members(m, n, ids);
    s->samples++;
    if (nr <= 0) {
        s->no_quorum++;
        snprintf(s->violation, sizeof s->violation, "sample %d: no member answers", s->samples);
        return;
    }
    int alive = 0;
    for (int i = 0; i < nr; i++)
        for (int j = 0; j < n; j++)
            if (m[j].id == ids[i] && answers(m[j].ip)) { alive++; break; }
    if (nr - alive > s->max_unavailable) s->max_unavailable = nr - alive;
    if (alive * 2 <= nr) {
        s->no_quorum++;
        snprintf(s->violation, sizeof s->violation, "sample %d: %d of %d members answer",
                 s->samples, alive, nr);
    }
    count_changes(s, ids, nr);
}

static void *sampler_main(void *arg)
{
    e2e_sampler *s = arg;
    while (!__atomic_load_n(&s->stop, __ATOMIC_SEQ_CST)) {
        int64_t t0 = e2e_now_ms();
        sample_once(s);
        int64_t left = 100 - (e2e_now_ms() - t0);
        if (left > 0) usleep((useconds_t)left * 1000);
    }
    return NULL;
}

bool e2e_sampler_start(e2e_sampler *s, const char *ns, const char *cluster)
{
    memset(s, 0, sizeof *s);
    snprintf(s->ns, sizeof s->ns, "%s", ns);
    snprintf(s->cluster, sizeof s->cluster, "%s", cluster);
    s->k = e2e_client();
    if (!s->k) return false;
    sample_once(s);
    if (s->no_quorum || !s->samples || pthread_create(&s->t, NULL, sampler_main, s) != 0) {
        fprintf(stderr, "sampler: %s/%s: no quorum before the start: %s\n", ns, cluster, s->violation);
        k8s_client_destroy(&s->k);
        return false;
    }
    return true;
}

void e2e_sampler_stop(e2e_sampler *s, const char *what)
{
    __atomic_store_n(&s->stop, 1, __ATOMIC_SEQ_CST);
    pthread_join(s->t, NULL);
    k8s_client_destroy(&s->k);
    fprintf(stderr, "%s: %s: %d samples, %d without quorum, %d multi-member changes, at most %d "
            "unavailable%s%s\n", what, s->cluster, s->samples, s->no_quorum, s->multi_change,
            s->max_unavailable, s->violation[0] ? ": " : "", s->violation);
}
