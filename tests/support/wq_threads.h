/* wq_threads.h — the workqueue's exclusivity harness (test_workqueue, test_workqueue_priority).
 *
 * Threads serve a wq as a controller's MaxConcurrentReconciles threads do (get, work, done)
 * while the test adds keys "k0".."k63" at random, and record what the checks need: how
 * often a thread started a key another thread was still inside (overlaps: client-go's
 * "a key is never processed by two threads at once"), and per key the sequence number of
 * its last add and of its latest processing start (a key added again while it waits or is
 * processed must be processed again after that add). The tests assert on these figures.
 *
 * Header only, as test_wait.h: both tests link the workqueue's objects already, and a
 * tests/support/ object would have to be named in each test's link list. */
#ifndef WQ_THREADS_H
#define WQ_THREADS_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "gd_err.h"
#include "workqueue.h"

#define WQT_KEYS 64
#define WQT_MAX_THREADS 16

typedef struct {
    wq *q;
    bool jitter;                       /* a processing sleeps 0-49 µs one time in four */
    int nthreads;
    pthread_t th[WQT_MAX_THREADS];
    atomic_int in_flight[WQT_KEYS];
    atomic_int overlaps;               /* starts while another thread held the same key */
    atomic_int bad_exits;              /* wq_get gave NULL while the queue was not shut down */
    atomic_long seq;                   /* global event counter */
    atomic_long last_add[WQT_KEYS];    /* seq of the last add of each key (0: never added) */
    atomic_long last_start[WQT_KEYS];  /* seq of the latest processing start of each key */
    atomic_long processed;
} wqt;

static inline void *wqt_serve(void *arg)
{
    wqt *t = arg;
    unsigned seed = (unsigned)(uintptr_t)pthread_self();
    for (;;) {
        bool shutdown = false;
        const char *k = wq_get(t->q, -1, &shutdown);
        if (!k) {
            if (!shutdown)
                atomic_fetch_add(&t->bad_exits, 1);
            return NULL;
        }
        int i = atoi(k + 1);
        if (atomic_fetch_add(&t->in_flight[i], 1) != 0)
            atomic_fetch_add(&t->overlaps, 1);
        long now = atomic_fetch_add(&t->seq, 1) + 1;
        long prev = atomic_load(&t->last_start[i]);
        while (prev < now && !atomic_compare_exchange_weak(&t->last_start[i], &prev, now))
            ;
        if (t->jitter && rand_r(&seed) % 4 == 0)
            usleep((useconds_t)(rand_r(&seed) % 50));
        atomic_fetch_sub(&t->in_flight[i], 1);
        atomic_fetch_add(&t->processed, 1);
        wq_done(t->q, k);
    }
}

/* t zeroed (calloc): starts nthreads (<= WQT_MAX_THREADS) threads serving q, which t then
 * holds. 0, or pthread_create's error. */
static inline int wqt_start(wqt *t, wq *q, int nthreads, bool jitter)
{
    t->q = q;
    t->jitter = jitter;
    if (nthreads > WQT_MAX_THREADS)
        return -1;
    for (; t->nthreads < nthreads; t->nthreads++) {
        int err = pthread_create(&t->th[t->nthreads], NULL, wqt_serve, t);
        if (err)
            return err;
    }
    return 0;
}

/* Stamps key i's add, then adds "k<i>" (with wq_add_low when low). */
static inline void wqt_add(wqt *t, int i, bool low)
{
    char key[16];
    snprintf(key, sizeof key, "k%d", i);
    atomic_store(&t->last_add[i], atomic_fetch_add(&t->seq, 1) + 1);
    if (low)
        wq_add_low(t->q, key);
    else
        wq_add(t->q, key);
}

/* Shuts the queue down, draining for up to drain_ms, and joins the threads:
 * wq_shutdown_drain's result. */
static inline gd_err wqt_stop(wqt *t, int drain_ms)
{
    gd_err err = wq_shutdown_drain(t->q, drain_ms);
    for (int i = 0; i < t->nthreads; i++)
        pthread_join(t->th[i], NULL);
    return err;
}

#endif
