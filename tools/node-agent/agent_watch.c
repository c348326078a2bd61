/* agent_watch.c — one thread lists and watches the pods bound to this agent's nodes and
 * hands them to the main loop through a queue, so the main loop never blocks on a watch.
 *
 * One cluster-wide watch filtered here (a field selector cannot say "nodeName is one of
 * these"); the test cluster is small. Each list is framed by SYNC_BEGIN/SYNC_END so the main
 * loop can stop pods that vanished while no watch was open. */
#include "agent.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gd_json.h"
#include "gd_log.h"
#include "k8s_client.h"

typedef struct qnode {
    na_event ev;
    struct qnode *next;
} qnode;

struct na_queue {
    pthread_mutex_t mu;
    qnode *head, *tail;
};

na_queue *na_queue_new(void)
{
    na_queue *q = calloc(1, sizeof *q);
    if (q) pthread_mutex_init(&q->mu, NULL);
    return q;
}

void na_queue_destroy(na_queue **qp)
{
    if (!qp || !*qp) return;
    na_event ev;
    while (na_queue_pop(*qp, &ev)) cJSON_Delete(ev.pod);
    pthread_mutex_destroy(&(*qp)->mu);
    free(*qp);
    *qp = NULL;
}

void na_queue_push(na_queue *q, const char *type, cJSON **pod)
{
    qnode *n = calloc(1, sizeof *n);
    if (!n) {
        gd_log(GD_LOG_ERROR, "out of memory queueing a pod event", "type", type, NULL);
        if (pod) { cJSON_Delete(*pod); *pod = NULL; }
        return;
    }
    snprintf(n->ev.type, sizeof n->ev.type, "%s", type);
    if (pod) { n->ev.pod = *pod; *pod = NULL; }
    pthread_mutex_lock(&q->mu);
    if (q->tail) q->tail->next = n; else q->head = n;
    q->tail = n;
    pthread_mutex_unlock(&q->mu);
}

bool na_queue_pop(na_queue *q, na_event *ev)
{
    pthread_mutex_lock(&q->mu);
    qnode *n = q->head;
    if (n) {
        q->head = n->next;
        if (!q->head) q->tail = NULL;
    }
    pthread_mutex_unlock(&q->mu);
    if (!n) return false;
    *ev = n->ev;
    free(n);
    return true;
}

static bool ours(const na_agent *a, const cJSON *pod)
{
    const char *node = gd_json_str_or(pod, "spec.nodeName", "");
    return *node && na_node_index(a, node) >= 0;
}

static int on_event(void *ud, const char *type, cJSON *obj)
{
    na_agent *a = ud;
    if (strcmp(type, "ADDED") && strcmp(type, "MODIFIED") && strcmp(type, "DELETED"))
        return 0;                                  /* BOOKMARK; ERROR is returned by k8s_watch */
    if (!ours(a, obj)) return 0;
    cJSON *copy = cJSON_Duplicate(obj, 1);
    if (copy) na_queue_push(a->queue, type, &copy);
    return 0;
}

/* Lists every pod (paginated), queues ours, and returns the list's resourceVersion. */
static gd_err relist(na_agent *a, char *rv, size_t rvcap)
{
    char cont[1024] = "";
    na_queue_push(a->queue, "SYNC_BEGIN", NULL);
    for (;;) {
        k8s_list_opts lo = { .limit = 500, .continue_token = *cont ? cont : NULL };
        cJSON *list = NULL;
        k8s_status st;
        gd_err e = k8s_list(a->api, &K8S_RES_PODS, NULL, &lo, &list, &st);
        if (e != GD_OK) {
            gd_log(GD_LOG_WARN, "listing pods failed", "err", gd_strerror(e), "message", st.message, NULL);
            return e;
        }
        cJSON *items = gd_json_path(list, "items"), *it;
        cJSON_ArrayForEach(it, items) on_event(a, "ADDED", it);
        snprintf(rv, rvcap, "%s", gd_json_str_or(list, "metadata.resourceVersion", ""));
        snprintf(cont, sizeof cont, "%s", gd_json_str_or(list, "metadata.continue", ""));
        cJSON_Delete(list);
        if (!*cont) break;
    }
    na_queue_push(a->queue, "SYNC_END", NULL);
    return GD_OK;
}

/* Watch callback context: keeps rv current (bookmarks included) so a re-watch resumes where
 * the previous one ended instead of relisting. */
typedef struct {
    na_agent *a;
    char *rv;
    size_t cap;
} watch_ctx;

static int on_event_rv(void *ud, const char *type, cJSON *obj)
{
    watch_ctx *w = ud;
    const char *rv = gd_meta_rv(obj);
    if (*rv && strlen(rv) < w->cap) strcpy(w->rv, rv);
    return on_event(w->a, type, obj);
}

static pthread_t watch_thread;
static bool watch_running;

static void *watch_main(void *arg)
{
    na_agent *a = arg;
    gd_backoff bo;
    gd_backoff_init(&bo, 500, 10000, 2.0, 0.2, 30000);
    char rv[64] = "";
    bool need_list = true;
    while (!a->stop) {
        if (need_list) {
            if (relist(a, rv, sizeof rv) != GD_OK) {
                int64_t d = gd_backoff_next(&bo);
                for (int64_t t = 0; t < d && !a->stop; t += 100) gd_sleep_ms(100);
                continue;
            }
            need_list = false;
        }
        k8s_watch_opts wo;
        memset(&wo, 0, sizeof wo);
        wo.list.resource_version = rv;
        wo.list.timeout_seconds = 300;
        wo.allow_bookmarks = true;
        wo.stop = &a->stop;
        k8s_status st;
        memset(&st, 0, sizeof st);
        watch_ctx ctx = { a, rv, sizeof rv };
        gd_err e = k8s_watch(a->api, &K8S_RES_PODS, NULL, &wo, on_event_rv, &ctx, &st);
        if (a->stop) break;
        if (e == GD_OK || e == GD_ERR_CLOSED) { gd_backoff_reset(&bo); continue; }
        if (e == GD_ERR_GONE) { need_list = true; continue; }
        gd_log(GD_LOG_WARN, "pod watch failed; relisting", "err", gd_strerror(e), "message", st.message, NULL);
        need_list = true;
        int64_t d = gd_backoff_next(&bo);
        for (int64_t t = 0; t < d && !a->stop; t += 100) gd_sleep_ms(100);
    }
    return NULL;
}

gd_err na_watch_start(na_agent *a)
{
    if (pthread_create(&watch_thread, NULL, watch_main, a) != 0) return GD_ERR_NOMEM;
    watch_running = true;
    return GD_OK;
}

void na_watch_join(na_agent *a)
{
    (void)a;
    if (watch_running) pthread_join(watch_thread, NULL);
    watch_running = false;
}
