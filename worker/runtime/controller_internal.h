/* controller_internal.h — a controller's state, shared by controller.c and its unit test
 * (test_controller sets an option mid-test and reads the queue). Other files use
 * controller.h. */
#ifndef WORKER_CONTROLLER_INTERNAL_H
#define WORKER_CONTROLLER_INTERNAL_H
#include <pthread.h>
#include <stdatomic.h>
#include "controller.h"
#include "keymetrics.h"
#include "gd_map.h"

/* One recorded write: the cache must show kind/objkey at rv or newer (or gone). */
typedef struct {
    char kind[48];
    char *objkey;
    char rv[32];
    bool deleted;
    bool was_cached;    /* the cache had the object when we wrote it: an update, so its
                         * absence later means it was deleted, not that it is late */
    int64_t at_ns;
} expectation;

typedef struct {
    int n, cap;
    expectation *v;
} exp_list;

struct controller {
    char name[64];
    controller_opts o;
    gd_worker_env *env;
    wq *q;
    pthread_t *threads;
    int nthreads;
    atomic_bool stopping;       /* STOP: queued keys are no longer taken */
    pthread_mutex_t mu;         /* everything below */
    bool own_all;
    bool owned[GD_NSHARDS];
    /* written under mu; atomic so that a reconcile thread can see, without mu, whether
     * the key it just finished belongs to a shard being revoked (reconcile_thread) */
    atomic_bool revoking[GD_NSHARDS];
    gd_map *pending;            /* key -> (void *)(intptr_t)(shard + 1) of revoking shards */
    gd_map *expect;             /* reconcile key -> exp_list */
    atomic_int nexpect;         /* keys in expect (read without mu: the common "none" case) */
    controller_stats stats;
    gd_hist reconcile_time;
    keymetrics *km;             /* per-object series (rec_metric_set); own lock */
};

#endif
