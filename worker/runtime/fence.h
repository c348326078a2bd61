/* fence.h — the worker's write fence (PROTOCOL.md: a write may start only while the
 * manager's LEASE holds). Shared by all of a worker's controllers. */
#ifndef WORKER_FENCE_H
#define WORKER_FENCE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* The write fence: wall-clock ms until which writes may start. 0 = no lease yet (fenced),
 * GD_FENCE_NONE = standalone mode without a manager (never fenced). The deadline is read
 * lock-free on every write; the mutex and condition only serve threads that wait for the
 * fence to open (gd_fence_wait), so a fenced worker's reconcile threads sleep until a LEASE
 * instead of looking every 20 ms (32 threads a controller: ~3 000 wake-ups a second). */
#define GD_FENCE_NONE INT64_MAX
typedef struct {
    _Atomic int64_t deadline_ms;
    pthread_mutex_t mu;
    pthread_cond_t changed;
    uint64_t gen;                   /* under mu: bumped by every extend and kick */
} gd_fence;
void gd_fence_init(gd_fence *f, int64_t deadline_ms);
void gd_fence_destroy(gd_fence *f);
/* Raises the deadline; a smaller one is ignored (PROTOCOL.md: a LEASE never shortens).
 * Wakes the waiters when it raised it. */
void gd_fence_extend(gd_fence *f, int64_t deadline_ms);
/* Drops the deadline to 0: no write may start (STOP, manager silent). */
void gd_fence_close(gd_fence *f);
bool gd_fence_open(const gd_fence *f);
/* Waiting for the fence to open without a lost wake-up: read the generation, look at the
 * fence and whatever else ends the wait (a shutdown), then wait while the generation is
 * still that one, up to timeout_ms. An extend or a kick after the read ends the wait. */
uint64_t gd_fence_gen(gd_fence *f);
void gd_fence_wait(gd_fence *f, uint64_t gen, int64_t timeout_ms);
/* Ends every wait (a controller stopping: its threads look at the queue's shutdown). */
void gd_fence_kick(gd_fence *f);

#endif
