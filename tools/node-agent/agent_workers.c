/* agent_workers.c — a fixed pool of threads that run pod jobs, the node agent's "pod
 * workers". kubelet syncs every pod in its own goroutine, so one slow API round trip (a PVC
 * or ConfigMap read, a status PATCH) never holds the other pods back; a single loop that did
 * all of that inline made the 300th pod of a burst wait for ~1 200 round trips before it.
 *
 * The pool knows nothing about pods: agent_pod.c marks a pod busy, submits a job, and the
 * job clears the mark when it is done. Threads live until na_pool_destroy, which matters:
 * containers are forked from these threads with PR_SET_PDEATHSIG, which fires when the
 * forking *thread* exits. */
#include "agent.h"
#include <pthread.h>
#include <stdlib.h>

typedef struct na_job {
    na_job_fn fn;
    void *arg;
    struct na_job *next;
} na_job;

struct na_pool {
    pthread_mutex_t mu;
    pthread_cond_t more, idle;
    na_job *head, *tail;
    int running;                  /* jobs being run right now */
    bool stopping;
    int nthreads;
    pthread_t threads[NA_POOL_MAX_THREADS];
};

static void *pool_main(void *arg)
{
    na_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->head && !p->stopping) pthread_cond_wait(&p->more, &p->mu);
        if (!p->head) break;                       /* stopping and drained */
        na_job *j = p->head;
        p->head = j->next;
        if (!p->head) p->tail = NULL;
        p->running++;
        pthread_mutex_unlock(&p->mu);
        j->fn(j->arg);
        free(j);
        pthread_mutex_lock(&p->mu);
        p->running--;
        if (!p->head && p->running == 0) pthread_cond_broadcast(&p->idle);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

na_pool *na_pool_new(int nthreads)
{
    if (nthreads < 1 || nthreads > NA_POOL_MAX_THREADS) return NULL;
    na_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->more, NULL);
    pthread_cond_init(&p->idle, NULL);
    for (int i = 0; i < nthreads; i++) {
        if (pthread_create(&p->threads[i], NULL, pool_main, p) != 0) break;
        p->nthreads++;
    }
    if (p->nthreads == 0) {
        na_pool_destroy(&p);
        return NULL;
    }
    return p;
}

bool na_pool_submit(na_pool *p, na_job_fn fn, void *arg)
{
    na_job *j = calloc(1, sizeof *j);
    if (!j) return false;
    j->fn = fn;
    j->arg = arg;
    pthread_mutex_lock(&p->mu);
    if (p->tail) p->tail->next = j; else p->head = j;
    p->tail = j;
    pthread_cond_signal(&p->more);
    pthread_mutex_unlock(&p->mu);
    return true;
}

void na_pool_wait_idle(na_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    while (p->head || p->running > 0) pthread_cond_wait(&p->idle, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void na_pool_destroy(na_pool **pp)
{
    if (!pp || !*pp) return;
    na_pool *p = *pp;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;                            /* queued jobs still run */
    pthread_cond_broadcast(&p->more);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->more);
    pthread_cond_destroy(&p->idle);
    free(p);
    *pp = NULL;
}
