/* fence.c — see fence.h. */
#include "fence.h"
#include <time.h>
#include "gd_time.h"

void gd_fence_init(gd_fence *f, int64_t deadline_ms)
{
    atomic_store(&f->deadline_ms, deadline_ms);
    pthread_mutex_init(&f->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&f->changed, &ca);
    pthread_condattr_destroy(&ca);
    f->gen = 0;
}

void gd_fence_destroy(gd_fence *f)
{
    pthread_cond_destroy(&f->changed);
    pthread_mutex_destroy(&f->mu);
}

void gd_fence_kick(gd_fence *f)
{
    pthread_mutex_lock(&f->mu);
    f->gen++;
    pthread_cond_broadcast(&f->changed);
    pthread_mutex_unlock(&f->mu);
}

void gd_fence_extend(gd_fence *f, int64_t deadline_ms)
{
    int64_t cur = atomic_load(&f->deadline_ms);
    bool raised = false;
    while (deadline_ms > cur &&
           !(raised = atomic_compare_exchange_weak(&f->deadline_ms, &cur, deadline_ms)))
        ;
    if (raised)
        gd_fence_kick(f);
}

uint64_t gd_fence_gen(gd_fence *f)
{
    pthread_mutex_lock(&f->mu);
    uint64_t g = f->gen;
    pthread_mutex_unlock(&f->mu);
    return g;
}

void gd_fence_wait(gd_fence *f, uint64_t gen, int64_t timeout_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t ns = ts.tv_nsec + (timeout_ms > 0 ? timeout_ms : 0) % 1000 * 1000000;
    ts.tv_sec += (timeout_ms > 0 ? timeout_ms : 0) / 1000 + ns / 1000000000;
    ts.tv_nsec = ns % 1000000000;
    pthread_mutex_lock(&f->mu);
    while (f->gen == gen && pthread_cond_timedwait(&f->changed, &f->mu, &ts) == 0)
        ;
    pthread_mutex_unlock(&f->mu);
}

void gd_fence_close(gd_fence *f) { atomic_store(&f->deadline_ms, 0); }

bool gd_fence_open(const gd_fence *f)
{
    int64_t d = atomic_load(&f->deadline_ms);
    return d == GD_FENCE_NONE || gd_wall_ms() < d;
}
