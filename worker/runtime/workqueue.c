/* workqueue.c — see workqueue.h for the guarantees; this file says how.
 *
 * One entry per known key carries all of the key's state, so the client-go sets become flags:
 *   dirty       the key needs processing (client-go's dirty set)
 *   processing  handed out by get, not yet done (the processing set)
 *   queued      linked into the FIFO (every queued key is dirty and not processing)
 *   heap_idx    position in the delay heap, -1 when not waiting
 *   failures    the exponential limiter's count for the key
 * An entry is freed as soon as none of these hold, so memory follows the live key count. */
#include "workqueue_internal.h"
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gd_log.h"
#include "gd_time.h"

/* The timer re-reads the clock at least this often: an injected clock (gd_clock_set, tests)
 * moves without waking anyone. One thread per queue, so it costs 5 wake-ups a second. */
#define TIMER_RECHECK_NS (200LL * 1000000)

void wq_config_default(wq_config *c, const char *name)
{
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name ? name : "");
    c->base_delay_ns = 5LL * 1000000;           /* 5 ms */
    c->max_delay_ns = 1000LL * 1000000000;      /* 1000 s */
    c->qps = 10;
    c->burst = 100;
}

wq *wq_new(const wq_config *c)
{
    wq *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->cfg = *c;
    q->entries = gd_map_new(free);
    if (!q->entries) {
        free(q);
        return NULL;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    /* Adaptive: the critical sections are a few hundred ns, so a contender spins briefly
     * instead of sleeping in the kernel (a sleep + wake-up costs ~10 µs on a VM). */
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&q->mu, &ma);
    pthread_mutexattr_destroy(&ma);
    pthread_cond_init(&q->cond, &ca);
    pthread_cond_init(&q->timer_cond, &ca);
    pthread_cond_init(&q->drained, &ca);
    pthread_condattr_destroy(&ca);
    gd_bucket_init(&q->bucket, c->qps, c->burst);
    /* workqueue metrics buckets: prometheus.ExponentialBuckets(10e-9, 10, 10) */
    gd_hist_init_exponential(&q->queue_dur, 10e-9, 10, 10);
    gd_hist_init_exponential(&q->work_dur, 10e-9, 10, 10);
    return q;
}

void wq_destroy(wq **pq)
{
    if (!pq || !*pq)
        return;
    wq *q = *pq;
    gd_map_destroy(&q->entries);
    free(q->heap);
    gd_bucket_destroy(&q->bucket);
    pthread_cond_destroy(&q->cond);
    pthread_cond_destroy(&q->timer_cond);
    pthread_cond_destroy(&q->drained);
    pthread_mutex_destroy(&q->mu);
    free(q);
    *pq = NULL;
}

/* ---- entries ---- */

static entry *lookup(wq *q, const char *key) { return gd_map_get(q->entries, key); }

static entry *lookup_or_create(wq *q, const char *key)
{
    entry *e = gd_map_get(q->entries, key);
    if (e)
        return e;
    e = calloc(1, sizeof *e);
    if (!e || gd_map_put(q->entries, key, e, NULL) != GD_OK) {
        free(e);
        gd_log(GD_LOG_ERROR, "workqueue: out of memory, key dropped", "queue", q->cfg.name,
               "key", key, NULL);
        return NULL;
    }
    e->key = gd_map_key(q->entries, key);
    e->heap_idx = -1;
    return e;
}

static void maybe_free(wq *q, entry *e)
{
    if (!e->dirty && !e->processing && e->heap_idx < 0 && e->failures == 0)
        gd_map_del(q->entries, e->key);     /* frees e and the key */
}

/* ---- FIFOs (e->low picks the one) ---- */

static void fifo_push(wq *q, entry *e)
{
    int f = e->low;
    e->qnext = NULL;
    e->qprev = q->fifo[f].tail;
    if (q->fifo[f].tail)
        q->fifo[f].tail->qnext = e;
    else
        q->fifo[f].head = e;
    q->fifo[f].tail = e;
    e->queued = true;
    q->nqueued++;
    q->nqueued_low += f;
}

static void fifo_unlink(wq *q, entry *e)
{
    int f = e->low;
    if (e->qprev)
        e->qprev->qnext = e->qnext;
    else
        q->fifo[f].head = e->qnext;
    if (e->qnext)
        e->qnext->qprev = e->qprev;
    else
        q->fifo[f].tail = e->qprev;
    e->qprev = e->qnext = NULL;
    e->queued = false;
    q->nqueued--;
    q->nqueued_low -= f;
}

/* The next key to hand out: normal before low. */
static entry *fifo_first(wq *q)
{
    return q->fifo[0].head ? q->fifo[0].head : q->fifo[1].head;
}

/* ---- delay heap (min by ready_ns, then insertion order) ---- */

static bool heap_less(const entry *a, const entry *b)
{
    return a->ready_ns < b->ready_ns || (a->ready_ns == b->ready_ns && a->heap_seq < b->heap_seq);
}

static void heap_set(wq *q, int i, entry *e)
{
    q->heap[i] = e;
    e->heap_idx = i;
}

static void sift_up(wq *q, int i)
{
    entry *e = q->heap[i];
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!heap_less(e, q->heap[p]))
            break;
        heap_set(q, i, q->heap[p]);
        i = p;
    }
    heap_set(q, i, e);
}

static void sift_down(wq *q, int i)
{
    entry *e = q->heap[i];
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        const entry *best = e;
        if (l < q->nheap && heap_less(q->heap[l], best)) {
            m = l;
            best = q->heap[l];
        }
        if (r < q->nheap && heap_less(q->heap[r], best))
            m = r;
        if (m == i)
            break;
        heap_set(q, i, q->heap[m]);
        i = m;
    }
    heap_set(q, i, e);
}

static gd_err heap_push(wq *q, entry *e)
{
    if (q->nheap == q->heap_cap) {
        int cap = q->heap_cap ? q->heap_cap * 2 : 64;
        entry **h = realloc(q->heap, (size_t)cap * sizeof *h);
        if (!h)
            return GD_ERR_NOMEM;
        q->heap = h;
        q->heap_cap = cap;
    }
    e->heap_seq = q->heap_seq++;
    heap_set(q, q->nheap++, e);
    sift_up(q, e->heap_idx);
    return GD_OK;
}

static void heap_remove(wq *q, entry *e)
{
    int i = e->heap_idx;
    entry *last = q->heap[--q->nheap];
    e->heap_idx = -1;
    if (i == q->nheap)
        return;
    heap_set(q, i, last);
    sift_up(q, i);
    sift_down(q, last->heap_idx);
}

/* ---- deferred wake-ups (wq_hold_wakeups) ---- */

#define MAX_HELD 16
/* Held keys per queue after which its getters are woken anyway. A subscriber's batch is up
 * to 1000 messages (several ms); holding every wake-up to its end made the first keys of a
 * batch wait for the last ones: at 20 000 events/s the enqueue -> reconcile-start p99 was
 * 7-45 ms with the batch held whole, 1-2 ms woken every 32 keys (hop traces, same load). */
#define HOLD_MAX_KEYS 32
static __thread int hold_depth;
static __thread wq *held[MAX_HELD];
static __thread int held_adds[MAX_HELD];   /* keys queued meanwhile: getters to wake */
static __thread int nheld;

/* Under q->mu: wakes a getter for each of n keys just queued, idle ones first and then the
 * timer (which, when every other getter is busy, is the only one that can take them). A
 * getter signalled but not yet running counts as busy: a second signal to it would be lost. */
static void wake_getters_locked(wq *q, int n)
{
    for (; n > 0; n--) {
        if (q->idle > q->pending) {
            q->pending++;
            pthread_cond_signal(&q->cond);
        } else {
            if (q->timer_taken)
                pthread_cond_signal(&q->timer_cond);
            return;
        }
    }
}

/* Under q->mu: wakes one getter now, or at wq_release_wakeups when this thread holds them
 * (and has room to remember the queue; otherwise now). */
static void wake_getter(wq *q)
{
    if (hold_depth > 0) {
        for (int i = 0; i < nheld; i++)
            if (held[i] == q) {
                if (++held_adds[i] >= HOLD_MAX_KEYS) {
                    wake_getters_locked(q, held_adds[i]);
                    held_adds[i] = 0;
                }
                return;
            }
        if (nheld < MAX_HELD) {
            held_adds[nheld] = 1;
            held[nheld++] = q;
            return;
        }
    }
    wake_getters_locked(q, 1);
}

void wq_hold_wakeups(void) { hold_depth++; }

void wq_release_wakeups(void)
{
    if (hold_depth == 0 || --hold_depth > 0)
        return;
    for (int i = 0; i < nheld; i++) {
        /* one getter per key queued: waking all of them for one key would make the others
         * wake for nothing and sleep again */
        pthread_mutex_lock(&held[i]->mu);
        wake_getters_locked(held[i], held_adds[i]);
        pthread_mutex_unlock(&held[i]->mu);
    }
    nheld = 0;
}

/* ---- the queue proper (all *_locked run under q->mu) ---- */

/* wake: whether to wake a getter for it (not when the caller is a getter that takes it). */
static gd_err add_locked(wq *q, entry *e, int64_t now, bool low, bool wake)
{
    if (q->shutting_down)
        return GD_OK;
    if (e->dirty) {
        /* deduplicated, at the higher of the two priorities (controller-runtime keeps the
         * max): a real change of a key waiting behind a resync goes to the normal FIFO */
        if (!low && e->low) {
            if (e->queued)
                fifo_unlink(q, e);
            e->low = false;
            if (!e->processing) {
                fifo_push(q, e);
                if (wake)
                    wake_getter(q);
            }
        }
        return GD_OK;
    }
    q->adds++;
    q->depth++;
    if (!e->has_add_time) {
        e->add_ns = now;
        e->has_add_time = true;
    }
    e->dirty = true;
    e->low = low && !q->cfg.no_priority;
    if (e->processing)
        return GD_OK;   /* wq_done re-queues it: never two threads on one key */
    fifo_push(q, e);
    if (wake)
        wake_getter(q);
    return GD_OK;
}

/* Moves every delayed key that is due into the queue (client-go's waitingLoop, run inline).
 * A getter calling it takes the first key itself (taker): nobody is woken for that one. */
static void promote_locked(wq *q, int64_t now, bool taker)
{
    while (q->nheap > 0 && q->heap[0]->ready_ns <= now) {
        entry *e = q->heap[0];
        heap_remove(q, e);
        add_locked(q, e, now, false, !taker || fifo_first(q) != NULL);
        maybe_free(q, e);
    }
}

static gd_err add_prio(wq *q, const char *key, bool low)
{
    if (!key)
        return GD_ERR_ARG;
    pthread_mutex_lock(&q->mu);
    gd_err rc = GD_OK;
    if (!q->shutting_down) {
        entry *e = lookup_or_create(q, key);
        rc = e ? add_locked(q, e, gd_mono_ns(), low, true) : GD_ERR_NOMEM;
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

gd_err wq_add(wq *q, const char *key) { return add_prio(q, key, false); }
gd_err wq_add_low(wq *q, const char *key) { return add_prio(q, key, true); }

gd_err wq_add_after_ns(wq *q, const char *key, int64_t delay_ns)
{
    if (!key)
        return GD_ERR_ARG;
    gd_err rc = GD_OK;
    pthread_mutex_lock(&q->mu);
    if (q->shutting_down)
        goto out;
    q->retries++;
    int64_t now = gd_mono_ns();
    entry *e = lookup_or_create(q, key);
    if (!e) {
        rc = GD_ERR_NOMEM;
        goto out;
    }
    if (delay_ns <= 0) {
        add_locked(q, e, now, false, true);
        goto out;
    }
    int64_t ready = now + delay_ns;
    if (e->heap_idx >= 0) {
        if (ready < e->ready_ns) {      /* keep the earlier time, as knownEntries does */
            e->ready_ns = ready;
            sift_up(q, e->heap_idx);
        }
    } else {
        e->ready_ns = ready;
        rc = heap_push(q, e);
        if (rc != GD_OK)
            maybe_free(q, e);
    }
    if (rc == GD_OK && q->heap[0] == e) {
        /* the timer must shorten its wait; with none, an idle getter becomes it */
        if (q->timer_taken)
            pthread_cond_signal(&q->timer_cond);
        else
            wake_getters_locked(q, 1);
    }
out:
    pthread_mutex_unlock(&q->mu);
    return rc;
}

gd_err wq_add_after(wq *q, const char *key, int64_t delay_ms)
{
    return wq_add_after_ns(q, key, delay_ms * 1000000);
}

/* MaxOf(ItemExponentialFailureRateLimiter, BucketRateLimiter).When(key): both limiters are
 * consulted every time (each counts the call), the larger delay wins. */
static int64_t when_locked(wq *q, entry *e)
{
    int exp = e->failures++;
    double backoff = (double)q->cfg.base_delay_ns * pow(2.0, (double)exp);
    int64_t d = (backoff >= (double)q->cfg.max_delay_ns) ? q->cfg.max_delay_ns : (int64_t)backoff;
    int64_t b = gd_bucket_reserve_ns(&q->bucket);
    return b > d ? b : d;
}

int64_t wq_when_ns(wq *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    entry *e = lookup_or_create(q, key);
    int64_t d = e ? when_locked(q, e) : q->cfg.max_delay_ns;
    pthread_mutex_unlock(&q->mu);
    return d;
}

gd_err wq_add_rate_limited(wq *q, const char *key)
{
    if (!key)
        return GD_ERR_ARG;
    pthread_mutex_lock(&q->mu);
    if (q->shutting_down) {     /* client-go still counts the failure; nothing observes it */
        pthread_mutex_unlock(&q->mu);
        return GD_OK;
    }
    entry *e = lookup_or_create(q, key);
    int64_t d = e ? when_locked(q, e) : 0;
    pthread_mutex_unlock(&q->mu);
    return e ? wq_add_after_ns(q, key, d) : GD_ERR_NOMEM;
}

void wq_forget(wq *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    entry *e = lookup(q, key);
    if (e) {
        e->failures = 0;
        maybe_free(q, e);
    }
    pthread_mutex_unlock(&q->mu);
}

int wq_num_requeues(wq *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    entry *e = lookup(q, key);
    int n = e ? e->failures : 0;
    pthread_mutex_unlock(&q->mu);
    return n;
}

static int64_t real_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void wait_until(pthread_cond_t *c, pthread_mutex_t *mu, int64_t real_deadline_ns)
{
    struct timespec ts = {.tv_sec = real_deadline_ns / 1000000000LL,
                          .tv_nsec = real_deadline_ns % 1000000000LL};
    pthread_cond_timedwait(c, mu, &ts);
}

/* Under q->mu: sleeps until woken or until real_deadline (< 0: no deadline) on cond, as one of
 * the idle getters. */
static void wait_idle(wq *q, int64_t real_deadline)
{
    q->idle++;
    if (real_deadline < 0)
        pthread_cond_wait(&q->cond, &q->mu);
    else
        wait_until(&q->cond, &q->mu, real_deadline);
    q->idle--;
    if (q->pending > 0)
        q->pending--;
    q->wakeups++;
}

/* Under q->mu: sleeps as the queue's timer, until the heap's head is due (or real_deadline,
 * or TIMER_RECHECK_NS). Only one getter waits for the head: when every sleeper waited for it,
 * each due key and each new head woke all of them (up to --max-concurrent-reconciles) for one
 * to take it, and those futile wake-ups were a quarter of a converging worker's CPU. */
static void wait_timer(wq *q, int64_t now, int64_t real, int64_t real_deadline)
{
    int64_t wait = q->heap[0]->ready_ns - now;
    if (wait > TIMER_RECHECK_NS)
        wait = TIMER_RECHECK_NS;
    int64_t until = real + (wait > 0 ? wait : 0);
    if (real_deadline >= 0 && real_deadline < until)
        until = real_deadline;
    q->timer_taken = true;
    wait_until(&q->timer_cond, &q->mu, until);
    q->timer_taken = false;
    q->wakeups++;
}

const char *wq_get(wq *q, int64_t timeout_ms, bool *shutdown)
{
    if (shutdown)
        *shutdown = false;
    pthread_mutex_lock(&q->mu);
    int64_t give_up = timeout_ms > 0 ? real_mono_ns() + timeout_ms * 1000000 : -1;
    for (;;) {
        int64_t now = gd_mono_ns();
        if (!q->shutting_down)
            promote_locked(q, now, true);
        if (fifo_first(q))
            break;
        if (q->shutting_down) {
            if (shutdown)
                *shutdown = true;
            pthread_mutex_unlock(&q->mu);
            return NULL;
        }
        int64_t real = real_mono_ns();
        if (timeout_ms == 0 || (give_up >= 0 && real >= give_up)) {
            if (q->nheap > 0 && !q->timer_taken)
                wake_getters_locked(q, 1);      /* (this getter may have been the timer) */
            pthread_mutex_unlock(&q->mu);
            return NULL;
        }
        if (q->nheap > 0 && !q->timer_taken)
            wait_timer(q, now, real, give_up);
        else
            wait_idle(q, give_up);
    }
    entry *e = fifo_first(q);
    fifo_unlink(q, e);
    /* Delayed keys with nobody timing them (this getter was the timer): another takes over. */
    if (q->nheap > 0 && !q->timer_taken)
        wake_getters_locked(q, 1);
    int64_t now = gd_mono_ns();
    q->depth--;
    q->gets++;
    if (e->has_add_time) {
        gd_hist_observe(&q->queue_dur, (double)(now - e->add_ns) / 1e9);
        e->has_add_time = false;
    }
    e->start_ns = now;
    e->processing = true;
    e->dirty = false;
    e->low = false;
    q->nprocessing++;
    const char *key = e->key;
    pthread_mutex_unlock(&q->mu);
    return key;
}

void wq_done(wq *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    entry *e = lookup(q, key);
    if (!e || !e->processing) {
        pthread_mutex_unlock(&q->mu);
        gd_log(GD_LOG_WARN, "workqueue: done for a key that is not processing", "queue",
               q->cfg.name, "key", key, NULL);
        return;
    }
    q->dones++;
    gd_hist_observe(&q->work_dur, (double)(gd_mono_ns() - e->start_ns) / 1e9);
    e->processing = false;
    q->nprocessing--;
    if (e->dirty) {
        fifo_push(q, e);
        wake_getters_locked(q, 1);
    } else {
        maybe_free(q, e);
    }
    if (q->nprocessing == 0)
        pthread_cond_broadcast(&q->drained);
    pthread_mutex_unlock(&q->mu);
}

/* Delayed keys are dropped at shutdown, as client-go's waiting loop exits with them. */
static void shutdown_locked(wq *q)
{
    q->shutting_down = true;
    while (q->nheap > 0) {
        entry *e = q->heap[q->nheap - 1];
        heap_remove(q, e);
        maybe_free(q, e);
    }
    pthread_cond_broadcast(&q->cond);
    pthread_cond_broadcast(&q->timer_cond);
}

void wq_shutdown(wq *q)
{
    pthread_mutex_lock(&q->mu);
    q->drain = false;
    shutdown_locked(q);
    pthread_cond_broadcast(&q->drained);
    pthread_mutex_unlock(&q->mu);
}

gd_err wq_shutdown_drain(wq *q, int64_t timeout_ms)
{
    pthread_mutex_lock(&q->mu);
    q->drain = true;
    shutdown_locked(q);
    int64_t give_up = timeout_ms >= 0 ? real_mono_ns() + timeout_ms * 1000000 : -1;
    gd_err rc = GD_OK;
    while (q->nprocessing > 0 && q->drain) {
        if (give_up < 0) {
            pthread_cond_wait(&q->drained, &q->mu);
        } else if (real_mono_ns() >= give_up) {
            rc = GD_ERR_TIMEOUT;
            break;
        } else {
            wait_until(&q->drained, &q->mu, give_up);
        }
    }
    if (rc == GD_OK && q->nprocessing > 0)
        rc = GD_ERR_TIMEOUT;    /* a plain shutdown cut the drain short */
    q->drain = false;
    pthread_mutex_unlock(&q->mu);
    if (rc != GD_OK)
        gd_log(GD_LOG_WARN, "workqueue: drain deadline passed, abandoning in-flight keys",
               "queue", q->cfg.name, NULL);
    return rc;
}

bool wq_shutting_down(wq *q)
{
    pthread_mutex_lock(&q->mu);
    bool s = q->shutting_down;
    pthread_mutex_unlock(&q->mu);
    return s;
}

int wq_len(wq *q)
{
    pthread_mutex_lock(&q->mu);
    if (!q->shutting_down)
        promote_locked(q, gd_mono_ns(), false);
    int n = q->nqueued;
    pthread_mutex_unlock(&q->mu);
    return n;
}

int wq_len_low(wq *q)
{
    pthread_mutex_lock(&q->mu);
    int n = q->nqueued_low;
    pthread_mutex_unlock(&q->mu);
    return n;
}

int wq_waiting(wq *q)
{
    pthread_mutex_lock(&q->mu);
    int n = q->nheap;
    pthread_mutex_unlock(&q->mu);
    return n;
}

int wq_processing(wq *q)
{
    pthread_mutex_lock(&q->mu);
    int n = q->nprocessing;
    pthread_mutex_unlock(&q->mu);
    return n;
}

bool wq_is_processing(wq *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    entry *e = lookup(q, key);
    bool p = e && e->processing;
    pthread_mutex_unlock(&q->mu);
    return p;
}

int64_t wq_next_ready_ns(wq *q)
{
    pthread_mutex_lock(&q->mu);
    int64_t t = q->nheap > 0 ? q->heap[0]->ready_ns : -1;
    pthread_mutex_unlock(&q->mu);
    return t;
}

/* ---- shard handoff ---- */

typedef struct {
    entry **v;
    int n, cap;
    wq_match_fn match;
    void *ud;
    bool oom;
} collect_ctx;

static int collect_matching(void *ud, const char *key, void *val)
{
    collect_ctx *c = ud;
    if (!c->match(c->ud, key))
        return 0;
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 32;
        entry **v = realloc(c->v, (size_t)cap * sizeof *v);
        if (!v) {
            c->oom = true;
            return 1;
        }
        c->v = v;
        c->cap = cap;
    }
    c->v[c->n++] = val;
    return 0;
}

int wq_extract(wq *q, wq_match_fn match, wq_take_fn take, void *ud)
{
    collect_ctx c = {.match = match, .ud = ud};
    int taken = 0;
    pthread_mutex_lock(&q->mu);
    gd_map_each(q->entries, collect_matching, &c);
    if (c.oom)
        gd_log(GD_LOG_ERROR, "workqueue: out of memory while extracting keys", "queue",
               q->cfg.name, NULL);
    for (int i = 0; i < c.n; i++) {
        entry *e = c.v[i];
        bool pending = e->dirty || e->heap_idx >= 0;
        if (e->queued)
            fifo_unlink(q, e);
        if (e->dirty) {
            e->dirty = false;
            e->low = false;
            e->has_add_time = false;
            q->depth--;
        }
        if (e->heap_idx >= 0)
            heap_remove(q, e);
        e->failures = 0;
        if (pending) {
            if (take)
                take(ud, e->key);
            taken++;
        }
        maybe_free(q, e);
    }
    pthread_mutex_unlock(&q->mu);
    free(c.v);
    return taken;
}

typedef struct {
    wq_match_fn match;
    void *ud;
    int n;
} count_ctx;

static int count_processing(void *ud, const char *key, void *val)
{
    count_ctx *c = ud;
    const entry *e = val;
    if (e->processing && c->match(c->ud, key))
        c->n++;
    return 0;
}

int wq_count_processing(wq *q, wq_match_fn match, void *ud)
{
    count_ctx c = {match, ud, 0};
    pthread_mutex_lock(&q->mu);
    gd_map_each(q->entries, count_processing, &c);
    pthread_mutex_unlock(&q->mu);
    return c.n;
}
