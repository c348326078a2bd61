/* main.c — bin/bench-converge, the driver of tools/bench/converge.sh (issue 7 part 7).
 *
 *   bench-converge --namespace NS [--count 100] [--replicas 3] [--threads 8]
 *                  [--timeout 300] [--detail-ms 2000] [--storage-class NAME]
 *
 * Uses $KUBECONFIG (the admin identity, not the operator's, so the referee's per-identity
 * request count of the operator stays clean). Creates the namespace, then COUNT
 * GodisClusters (bench-000...) with spec.replicas REPLICAS from THREADS threads with no
 * client-side rate limit, and watches the namespace's GodisClusters until every one has
 * converged, with e2e_wait_converged's test: status Running, REPLICAS members, readyReplicas
 * REPLICAS, no scale step pending, observedGeneration current. A cluster's time is when its
 * converged status arrived on the watch. (It used to list the 100 clusters every 200 ms:
 * those lists were ~6 % of the API server's CPU during the run — the referee loaded the
 * system it measured. A watch costs the API server one encoded event per status write.)
 *
 * To show where the time goes it also lists the namespace's Godis objects and Pods every
 * DETAIL_MS (--detail-ms, default 2000: those lists of hundreds of objects load the API
 * server too) and prints a timeline on stderr (seconds since the first create):
 *   t=  4.0 gc=100 godis=180 pods=150 running=90 ready=60 members=... converged=7
 * At the end one JSON object goes to stdout:
 *   {"converged":100,"count":100,"create_s":..,"first_s":..,"p50_s":..,"p90_s":..,
 *    "all_s":..,"pods_ready_all_s":..}
 * all_s is from the first create until the last cluster converged; pods_ready_all_s until
 * the pods' watch first saw COUNT*REPLICAS of them Ready (what the no-operator floor
 * measures, converge_floor.py; it was the detail list's time, up to DETAIL_MS late). Exit 0 when all converged, 1 on
 * timeout (the JSON still printed, all_s null), 2 on bad usage or setup failure. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "gd_json.h"
#include "gd_time.h"
#include "k8s_client.h"
#include "k8s_config.h"

#define MAX_COUNT 10000

static const char *opt(int argc, char **argv, const char *name, const char *def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name))
            return argv[i + 1];
    return def;
}

static long opt_long(int argc, char **argv, const char *name, long def, long lo, long hi)
{
    const char *s = opt(argc, argv, name, NULL);
    if (!s)
        return def;
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "bench-converge: %s wants an integer in %ld..%ld, got '%s'\n", name,
                lo, hi, s);
        exit(2);
    }
    return v;
}

/* ---- creating: threads take the next index from a shared counter */

typedef struct {
    k8s_client *c;
    const char *ns;
    const char *storage_class;  /* spec.storage.storageClassName, or NULL: the default class */
    int count, replicas;
    pthread_mutex_t mu;
    int next, failed;
    int64_t last_done_ms;       /* when the last create returned */
} creator;

static void *create_main(void *arg)
{
    creator *cr = arg;
    for (;;) {
        pthread_mutex_lock(&cr->mu);
        int i = cr->next++;
        pthread_mutex_unlock(&cr->mu);
        if (i >= cr->count)
            return NULL;
        char body[400];
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"GodisCluster\","
                 "\"metadata\":{\"name\":\"bench-%03d\",\"namespace\":\"%s\"},"
                 "\"spec\":{\"replicas\":%d}}", i, cr->ns, cr->replicas);
        cJSON *obj = cJSON_Parse(body);
        if (obj && cr->storage_class)
            gd_json_set(obj, "spec.storage.storageClassName", cJSON_CreateString(cr->storage_class));
        k8s_status st = {0};
        gd_err e = obj ? k8s_create(cr->c, &K8S_RES_GODISCLUSTERS, cr->ns, obj, NULL, &st)
                       : GD_ERR_NOMEM;
        cJSON_Delete(obj);
        pthread_mutex_lock(&cr->mu);
        if (e != GD_OK) {
            cr->failed++;
            fprintf(stderr, "bench-converge: create bench-%03d: %s %s\n", i, gd_strerror(e),
                    st.message);
        }
        cr->last_done_ms = gd_mono_ms();
        pthread_mutex_unlock(&cr->mu);
    }
}

/* ---- observing */

static bool converged(const cJSON *gc, int replicas)
{
    const cJSON *members = gd_json_path(gc, "status.members");
    return strcmp(gd_json_str_or(gc, "status.status", ""), "Running") == 0 &&
           cJSON_IsArray(members) && cJSON_GetArraySize(members) == replicas &&
           gd_json_int_or(gc, "status.readyReplicas", -1) == replicas &&
           gd_json_int_or(gc, "status.scaleOutID", 0) == 0 &&
           gd_json_int_or(gc, "status.scaleInID", 0) == 0 &&
           gd_json_int_or(gc, "status.observedGeneration", -1) == gd_meta_generation(gc);
}

/* The items of one unpaged list, or NULL (the error printed). Caller frees the list. */
static cJSON *list_items(k8s_client *c, const k8s_resource *r, const char *ns, cJSON **list)
{
    k8s_status st = {0};
    /* resourceVersion 0: served from the API server's watch cache, not a quorum read of
     * etcd — the observer must cost the API server as little as possible */
    k8s_list_opts lo = {.resource_version = "0"};
    *list = NULL;
    gd_err e = k8s_list(c, r, ns, &lo, list, &st);
    if (e != GD_OK) {
        fprintf(stderr, "bench-converge: list %s: %s %s\n", r->resource, gd_strerror(e),
                st.message);
        return NULL;
    }
    return cJSON_GetObjectItem(*list, "items");
}

static bool pod_is_ready(const cJSON *p)
{
    const cJSON *cond;
    cJSON_ArrayForEach(cond, gd_json_path(p, "status.conditions"))
        if (strcmp(gd_json_str_or(cond, "type", ""), "Ready") == 0)
            return strcmp(gd_json_str_or(cond, "status", ""), "True") == 0;
    return false;
}

typedef struct {
    int pods, running, ready;
} pod_counts;

static pod_counts count_pods(k8s_client *c, const char *ns)
{
    pod_counts pc = {0};
    cJSON *list, *items = list_items(c, &K8S_RES_PODS, ns, &list), *p;
    cJSON_ArrayForEach(p, items) {
        pc.pods++;
        if (strcmp(gd_json_str_or(p, "status.phase", ""), "Running") == 0)
            pc.running++;
        pc.ready += pod_is_ready(p);
    }
    cJSON_Delete(list);
    return pc;
}

static int count_items(k8s_client *c, const k8s_resource *r, const char *ns)
{
    cJSON *list, *items = list_items(c, r, ns, &list);
    int n = cJSON_GetArraySize(items);
    cJSON_Delete(list);
    return n;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void print_s(const char *name, int64_t ms, bool last)
{
    if (ms < 0)
        printf("\"%s\":null%s", name, last ? "" : ",");
    else
        printf("\"%s\":%.3f%s", name, ms / 1000.0, last ? "" : ",");
}

/* ---- watching: one thread follows the GodisClusters and stamps each convergence, one
 * follows the pods and stamps when the last of them turned Ready */

typedef struct {
    k8s_client *c;              /* its own client: a watch holds its connection */
    const k8s_resource *res;
    k8s_watch_fn on_event;      /* called with mu not held; takes it itself */
    void *tally;                /* what on_event records: cluster_tally or pod_tally */
    const char *ns;
    int64_t t0;
    pthread_mutex_t mu;         /* guards rv and the tally */
    char rv[64];                /* resume point after the server ends a watch */
    volatile int stop;
} watcher;

/* GodisClusters, by index */
typedef struct {
    int count, replicas;
    int64_t *done_at;           /* ms since t0, 0 = not yet */
    int *members;               /* status.members size */
    char *seen;                 /* 1 while the cluster exists */
    int ndone, ngc;             /* converged; existing (so no list is needed to count them) */
} cluster_tally;

/* pods: the names of those Ready now (a pod's name is not an index: it has the
 * ReplicaSet's hash), and when `want` of them first were */
typedef struct {
    int want;
    char **ready;
    int nready, ready_cap;
    int64_t all_ready_ms;       /* -1 = not yet */
} pod_tally;

/* Records the resume point; true when the event is about an object (not a bookmark or an
 * error). Called with w->mu held. */
static bool note_event(watcher *w, const char *type, const cJSON *obj)
{
    const char *rv = gd_json_str_or(obj, "metadata.resourceVersion", NULL);
    if (rv) snprintf(w->rv, sizeof w->rv, "%s", rv);
    return strcmp(type, "BOOKMARK") != 0 && strcmp(type, "ERROR") != 0;
}

static int on_cluster(void *ud, const char *type, cJSON *gc)
{
    watcher *w = ud;
    cluster_tally *t = w->tally;
    pthread_mutex_lock(&w->mu);
    int idx;
    if (note_event(w, type, gc) && sscanf(gd_meta_name(gc), "bench-%d", &idx) == 1 &&
        idx >= 0 && idx < t->count) {
        int64_t now = gd_mono_ms() - w->t0;
        bool deleted = strcmp(type, "DELETED") == 0;
        t->ngc += (int)!deleted - (int)t->seen[idx];
        t->seen[idx] = !deleted;
        t->members[idx] = cJSON_GetArraySize(gd_json_path(gc, "status.members"));
        if (t->done_at[idx] == 0 && !deleted && converged(gc, t->replicas)) {
            t->done_at[idx] = now > 0 ? now : 1;
            t->ndone++;
        }
    }
    pthread_mutex_unlock(&w->mu);
    return 0;
}

/* (a linear search: a few thousand pods at most, a few events each) */
static int ready_index(const pod_tally *t, const char *name)
{
    for (int i = 0; i < t->nready; i++)
        if (!strcmp(t->ready[i], name)) return i;
    return -1;
}

static int on_pod(void *ud, const char *type, cJSON *pod)
{
    watcher *w = ud;
    pod_tally *t = w->tally;
    const char *name = gd_meta_name(pod);
    pthread_mutex_lock(&w->mu);
    if (note_event(w, type, pod) && name && *name) {
        int at = ready_index(t, name);
        bool ready = strcmp(type, "DELETED") != 0 && pod_is_ready(pod);
        if (ready && at < 0 && t->nready < t->ready_cap) {
            t->ready[t->nready] = strdup(name);
            t->nready += t->ready[t->nready] != NULL;
        } else if (!ready && at >= 0) {
            free(t->ready[at]);
            t->ready[at] = t->ready[--t->nready];
        }
        if (t->all_ready_ms < 0 && t->nready >= t->want)
            t->all_ready_ms = gd_mono_ms() - w->t0;
    }
    pthread_mutex_unlock(&w->mu);
    return 0;
}

/* Watches from the list's resourceVersion; a watch the server ends (its timeout) resumes
 * from the last version seen, so no event is missed. 410 Gone cannot happen within a run
 * of minutes (the watch cache keeps far more history); if it does, the run says so. */
static void *watch_main(void *arg)
{
    watcher *w = arg;
    while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
        k8s_watch_opts o = {.allow_bookmarks = true, .stop = &w->stop};
        char rv[64];
        pthread_mutex_lock(&w->mu);
        snprintf(rv, sizeof rv, "%s", w->rv);
        pthread_mutex_unlock(&w->mu);
        o.list.resource_version = rv;
        o.list.timeout_seconds = 300;
        k8s_status st = {0};
        gd_err e = k8s_watch(w->c, w->res, w->ns, &o, w->on_event, w, &st);
        if (e == GD_ERR_CANCELLED) break;
        if (e != GD_OK && e != GD_ERR_CLOSED) {
            fprintf(stderr, "bench-converge: watch %s: %s %s\n", w->res->resource,
                    gd_strerror(e), st.message);
            if (e == GD_ERR_GONE) break;
            gd_sleep_ms(200);
        }
    }
    return NULL;
}

/* The watch starts from the (still empty) namespace's list, taken before the first
 * create. Returns false with the error printed. */
static bool watch_from_list(watcher *w, k8s_client *lc)
{
    cJSON *list = NULL;
    k8s_status st = {0};
    k8s_list_opts lo = {.resource_version = "0"};
    gd_err e = k8s_list(lc, w->res, w->ns, &lo, &list, &st);
    if (e != GD_OK) {
        fprintf(stderr, "bench-converge: list %s: %s %s\n", w->res->resource, gd_strerror(e),
                st.message);
        return false;
    }
    snprintf(w->rv, sizeof w->rv, "%s", gd_json_str_or(list, "metadata.resourceVersion", "0"));
    cJSON_Delete(list);
    return true;
}

static k8s_client *client_new(void)
{
    k8s_config_opts co = {0};
    k8s_config *cfg = NULL;
    char err[300];
    if (k8s_config_load(&co, &cfg, err, sizeof err) != GD_OK) {
        fprintf(stderr, "bench-converge: %s\n", err);
        return NULL;
    }
    k8s_client_opts o;
    k8s_client_opts_default(&o);
    o.qps = -1;                 /* the driver must not be what limits the run */
    o.user_agent = "bench-converge";
    k8s_client *c = k8s_client_new(&cfg, &o);
    if (!c) fprintf(stderr, "bench-converge: cannot create the API client\n");
    return c;
}

int main(int argc, char **argv)
{
    const char *ns = opt(argc, argv, "--namespace", NULL);
    int count = (int)opt_long(argc, argv, "--count", 100, 1, MAX_COUNT);
    int replicas = (int)opt_long(argc, argv, "--replicas", 3, 1, 9);
    int nthreads = (int)opt_long(argc, argv, "--threads", 8, 1, 64);
    int64_t timeout_ms = opt_long(argc, argv, "--timeout", 300, 1, 86400) * 1000;
    int detail_ms = (int)opt_long(argc, argv, "--detail-ms", 2000, 100, 60000);
    const char *storage_class = opt(argc, argv, "--storage-class", NULL);
    if (!ns || !*ns || (storage_class && strlen(storage_class) > 253)) {
        fprintf(stderr, "usage: bench-converge --namespace NS [--count N] [--replicas R] "
                        "[--threads T] [--timeout S] [--detail-ms MS] [--storage-class NAME]\n");
        return 2;
    }

    k8s_client *c = client_new(), *wc = client_new(), *pc = client_new();
    if (!c || !wc || !pc) return 2;

    char body[200];
    snprintf(body, sizeof body, "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
                                "\"metadata\":{\"name\":\"%s\"}}", ns);
    cJSON *nso = cJSON_Parse(body);
    k8s_status st = {0};
    gd_err e = k8s_create(c, &K8S_RES_NAMESPACES, NULL, nso, NULL, &st);
    cJSON_Delete(nso);
    if (e != GD_OK && e != GD_ERR_ALREADY_EXISTS) {
        fprintf(stderr, "bench-converge: create namespace %s: %s %s\n", ns, gd_strerror(e),
                st.message);
        return 2;
    }

    int npods = count * replicas;
    cluster_tally ct = {.count = count, .replicas = replicas,
                        .done_at = calloc(count, sizeof(int64_t)),
                        .members = calloc(count, sizeof(int)), .seen = calloc(count, 1)};
    pod_tally pt = {.want = npods, .ready = calloc(2 * npods, sizeof(char *)),
                    .ready_cap = 2 * npods, .all_ready_ms = -1};
    watcher w = {.c = wc, .res = &K8S_RES_GODISCLUSTERS, .on_event = on_cluster, .tally = &ct,
                 .ns = ns};
    watcher pw = {.c = pc, .res = &K8S_RES_PODS, .on_event = on_pod, .tally = &pt, .ns = ns};
    pthread_mutex_init(&w.mu, NULL);
    pthread_mutex_init(&pw.mu, NULL);
    if (!ct.done_at || !ct.members || !ct.seen || !pt.ready) {
        fprintf(stderr, "bench-converge: no memory\n");
        return 2;
    }
    if (!watch_from_list(&w, c) || !watch_from_list(&pw, c)) return 2;

    creator cr = {.c = c, .ns = ns, .storage_class = storage_class, .count = count, .replicas = replicas};
    pthread_mutex_init(&cr.mu, NULL);
    pthread_t th[64], wt, ptid;
    int64_t t0 = gd_mono_ms();
    w.t0 = pw.t0 = t0;
    if (pthread_create(&wt, NULL, watch_main, &w) || pthread_create(&ptid, NULL, watch_main, &pw)) {
        fprintf(stderr, "bench-converge: cannot start the watch threads\n");
        return 2;
    }
    for (int i = 0; i < nthreads; i++)
        pthread_create(&th[i], NULL, create_main, &cr);

    int ndone = 0;
    int64_t next_detail = t0;
    while (gd_mono_ms() - t0 < timeout_ms) {
        pthread_mutex_lock(&w.mu);
        ndone = ct.ndone;
        int ngc = ct.ngc, members = 0;
        for (int i = 0; i < count; i++) members += ct.members[i];
        pthread_mutex_unlock(&w.mu);
        int64_t now = gd_mono_ms() - t0;
        if (ndone == count || gd_mono_ms() >= next_detail) {
            pod_counts counts = count_pods(c, ns);
            int godis = count_items(c, &K8S_RES_GODISES, ns);
            fprintf(stderr, "t=%6.1f gc=%d godis=%d pods=%d running=%d ready=%d members=%d "
                            "converged=%d\n", now / 1000.0, ngc, godis, counts.pods, counts.running,
                    counts.ready, members, ndone);
            next_detail = gd_mono_ms() + detail_ms;
        }
        if (ndone == count)
            break;
        gd_sleep_ms(50);        /* no request: only reads what the watch thread recorded */
    }
    __atomic_store_n(&w.stop, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&pw.stop, 1, __ATOMIC_RELAXED);
    pthread_join(wt, NULL);
    pthread_join(ptid, NULL);
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    int64_t *done_at = ct.done_at;
    int64_t sorted[MAX_COUNT];
    int n = 0;
    for (int i = 0; i < count; i++)
        if (done_at[i])
            sorted[n++] = done_at[i];
    qsort(sorted, n, sizeof *sorted, cmp_i64);
    printf("{\"converged\":%d,\"count\":%d,\"replicas\":%d,\"create_failures\":%d,", n, count,
           replicas, cr.failed);
    print_s("create_s", cr.last_done_ms ? cr.last_done_ms - t0 : -1, false);
    print_s("first_s", n ? sorted[0] : -1, false);
    print_s("p50_s", n * 2 >= count ? sorted[(count - 1) / 2] : -1, false);
    print_s("p90_s", n * 10 >= count * 9 ? sorted[(count * 9 - 1) / 10] : -1, false);
    print_s("pods_ready_all_s", pt.all_ready_ms, false);
    print_s("all_s", n == count ? sorted[n - 1] : -1, true);
    printf("}\n");
    free(done_at);
    free(ct.members);
    free(ct.seen);
    for (int i = 0; i < pt.nready; i++)
        free(pt.ready[i]);
    free(pt.ready);
    pthread_mutex_destroy(&cr.mu);
    pthread_mutex_destroy(&w.mu);
    pthread_mutex_destroy(&pw.mu);
    k8s_client_destroy(&c);
    k8s_client_destroy(&wc);
    k8s_client_destroy(&pc);
    return n == count ? 0 : 1;
}
