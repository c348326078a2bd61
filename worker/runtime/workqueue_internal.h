/* workqueue_internal.h — the queue's state, shared by workqueue.c (the queue) and
 * workqueue_metrics.c (client-go's queue metrics read from it under q->mu). Not for other
 * files: they use workqueue.h. */
#ifndef WORKER_WORKQUEUE_INTERNAL_H
#define WORKER_WORKQUEUE_INTERNAL_H
#include <pthread.h>
#include "gd_map.h"
#include "gd_time.h"
#include "workqueue.h"

typedef struct entry {
    const char *key;            /* the map's copy */
    bool dirty, processing, queued, has_add_time;
    bool low;                   /* its pending add is low priority only (wq_add_low): it sits,
                                 * or will sit after Done, in the low FIFO */
    struct entry *qprev, *qnext;
    int heap_idx;
    int64_t ready_ns;
    uint64_t heap_seq;          /* FIFO among equal ready times */
    int failures;
    int64_t add_ns;             /* when it became dirty (queue duration metric) */
    int64_t start_ns;           /* when get handed it out (work duration metric) */
} entry;

struct wq {
    pthread_mutex_t mu;
    pthread_cond_t  cond;       /* a key was queued (or a timer is wanted), or shutdown */
    pthread_cond_t  timer_cond; /* the timer: the heap head changed, or nobody else is idle */
    int idle;                   /* getters waiting on cond */
    int pending;                /* of those, signalled and not yet running */
    bool timer_taken;           /* a getter waits on timer_cond for the heap's head */
    pthread_cond_t  drained;    /* processing became empty */
    wq_config cfg;
    gd_bucket bucket;
    gd_map *entries;            /* key -> entry */
    /* FIFOs by priority: [0] normal, [1] low. A getter takes from [1] only when [0] is
     * empty; each entry is in at most one (entry.low says which). */
    struct { entry *head, *tail; } fifo[2];
    int nqueued, nqueued_low, nprocessing;
    entry **heap;
    int nheap, heap_cap;
    uint64_t heap_seq;
    bool shutting_down, drain;
    /* metrics, as client-go's queueMetrics */
    int64_t depth;
    uint64_t adds, retries, gets, dones;
    uint64_t wakeups;           /* wq_stats */
    gd_hist queue_dur, work_dur;
};

#endif
