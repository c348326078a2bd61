/* workqueue.h — client-go's rate-limited delaying work queue (util/workqueue), in C.
 *
 * The guarantees, exactly as client-go gives them:
 *  - Fair: keys are processed in the order they were added.
 *  - Stingy: a key added several times before it is processed is processed once (the dirty
 *    set), and a key is never handed to two threads at once (the processing set): a key
 *    added while it is being processed is queued again only when Done is called for it.
 *  - AddAfter: the key is added once its delay has passed (a min-heap keyed by ready time;
 *    adding a key that is already waiting keeps the earlier of the two times).
 *  - AddRateLimited = AddAfter(key, limiter.When(key)); Forget clears the key's failure
 *    history; NumRequeues reports it. The limiter is client-go's DefaultControllerRateLimiter:
 *    MaxOf(ItemExponentialFailureRateLimiter(base, max), BucketRateLimiter(qps, burst)), both
 *    configurable (defaults 5 ms → 1000 s, 10 qps burst 100).
 *  - ShutDown: new adds are ignored, getters return what is queued and then learn of the
 *    shutdown; ShutDownWithDrain also waits until every key handed out is Done — here with a
 *    timeout after which the in-flight keys are abandoned.
 *
 * No background thread: a getter waits on a condition variable until the earliest delayed
 * key is due and then moves it to the queue itself, so a queue costs nothing when idle.
 * Every time read goes through gd_mono_ns(), so tests inject a clock (gd_clock_set) and
 * drive delays with non-blocking gets instead of sleeping.
 *
 * Extension beyond client-go, controller-runtime's priority queue (v0.23+) reduced to two
 * levels: wq_add_low queues a key from an initial list or a resync behind every key added
 * normally, so tens of thousands of unchanged objects never delay a real change. A key has
 * the highest priority it was added with since it was last handed out (a normal add of a
 * key waiting at low priority moves it to the normal FIFO's tail); dedup and per-key
 * exclusivity are the same at both levels. Delayed and rate-limited adds are normal.
 *
 * Extension beyond client-go, for shard handoff: wq_extract removes the pending (queued or
 * delayed) keys that match a predicate and reports them.
 *
 * Thread-safe. */
#ifndef WORKER_WORKQUEUE_H
#define WORKER_WORKQUEUE_H
#include <stdbool.h>
#include <stdint.h>
#include "gd_err.h"
#include "gd_metrics.h"

typedef struct wq wq;

typedef struct {
    char    name[64];           /* the `name` label of the workqueue_* metrics */
    int64_t base_delay_ns;      /* ItemExponentialFailureRateLimiter base (5 ms) */
    int64_t max_delay_ns;       /* ... and cap (1000 s) */
    double  qps;                /* BucketRateLimiter rate (10); <= 0 disables the bucket */
    int     burst;              /* ... and burst (100) */
    bool    no_priority;        /* wq_add_low is wq_add: one FIFO, as client-go (benchmarks) */
} wq_config;

/* Fills client-go's DefaultControllerRateLimiter settings. name may be NULL. */
void wq_config_default(wq_config *c, const char *name);

wq  *wq_new(const wq_config *c);
void wq_destroy(wq **q);

/* Marks key as needing processing (ignored while shutting down, as in client-go).
 * The adds return GD_ERR_ARG for a NULL key, GD_ERR_NOMEM when the key could not be
 * recorded (logged), GD_OK otherwise. */
gd_err wq_add(wq *q, const char *key);
/* wq_add at low priority: for keys from an initial list or a resync of unchanged objects. */
gd_err wq_add_low(wq *q, const char *key);
/* Adds key after delay_ns (<= 0: now). Counts a retry, as client-go's delaying queue does. */
gd_err wq_add_after_ns(wq *q, const char *key, int64_t delay_ns);
gd_err wq_add_after(wq *q, const char *key, int64_t delay_ms);
gd_err wq_add_rate_limited(wq *q, const char *key);
/* The rate limiter's When(key): the next delay for key, counting one more failure. */
int64_t wq_when_ns(wq *q, const char *key);
void wq_forget(wq *q, const char *key);
int  wq_num_requeues(wq *q, const char *key);

/* Waits up to timeout_ms (< 0: forever, 0: do not wait) for a key. Returns the key, which
 * stays valid until wq_done for it; or NULL on timeout, or on shutdown once the queue is
 * empty (then *shutdown is set when shutdown is not NULL). */
const char *wq_get(wq *q, int64_t timeout_ms, bool *shutdown);
/* Marks key as processed; re-queues it when it was added again meanwhile. */
void wq_done(wq *q, const char *key);

/* Batching for a producer thread: between hold and release, the getters of the queues this
 * thread adds to are woken once, at the release (or after every 32 keys of a long batch),
 * instead of once per key (each wake-up is a context switch, ~10 µs on a VM). Keys are
 * queued at once; only the wake-up waits. Nests.
 * The queues must outlive the release. */
void wq_hold_wakeups(void);
void wq_release_wakeups(void);

void wq_shutdown(wq *q);
/* Shuts down and waits up to timeout_ms (< 0: forever) for the in-flight keys to be Done.
 * GD_OK when drained, GD_ERR_TIMEOUT when keys were abandoned. */
gd_err wq_shutdown_drain(wq *q, int64_t timeout_ms);
bool wq_shutting_down(wq *q);

int  wq_len(wq *q);             /* queued keys (due delayed keys are moved first) */
int  wq_len_low(wq *q);         /* ... of which at low priority */
int  wq_waiting(wq *q);         /* delayed keys not due yet */
int  wq_processing(wq *q);      /* keys handed out and not Done */
bool wq_is_processing(wq *q, const char *key);
/* Monotonic ns at which the earliest delayed key is due, or -1 when none waits. */
int64_t wq_next_ready_ns(wq *q);

/* Removes every pending key (queued, delayed, or re-added while processing) for which match
 * returns true, forgets its failures, and calls take for each one removed. Keys being
 * processed stay in processing; they are simply not re-queued by their Done. Returns the
 * number of keys taken. take may be NULL. */
typedef bool (*wq_match_fn)(void *ud, const char *key);
typedef void (*wq_take_fn)(void *ud, const char *key);
int wq_extract(wq *q, wq_match_fn match, wq_take_fn take, void *ud);

/* Number of keys being processed (handed out, not Done) for which match returns true. */
int wq_count_processing(wq *q, wq_match_fn match, void *ud);

/* Appends every workqueue_* family (HELP/TYPE lines included) with label name="<name>". */
void wq_metrics_render(wq *q, gd_sbuf *out);
/* The HELP/TYPE lines of one workqueue_* family; fam is the index 0..6 (returns the family
 * name, or NULL past the end) so several queues can be rendered under one header each. */
const char *wq_metrics_family(int fam, gd_sbuf *out);
/* Renders one family of this queue (fam as above). */
void wq_metrics_render_family(wq *q, int fam, gd_sbuf *out);

/* Counters for tests. */
typedef struct {
    int64_t depth;
    uint64_t adds, retries, gets, dones;
    uint64_t wakeups;   /* a getter's sleep in wq_get ended (woken, timed out, spurious) */
} wq_stats;
void wq_get_stats(wq *q, wq_stats *s);

#endif
