/* gd_time.c — clocks, backoff with jitter, token bucket.
 *
 * Everything that measures time goes through gd_mono_ns() so tests can inject a fake clock
 * and check backoff and rate limits without sleeping. */
#include "gd_time.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static _Atomic(int64_t (*)(void)) injected_clock;

static int64_t ts_ns(const struct timespec *ts)
{
    return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

int64_t gd_mono_ns(void)
{
    int64_t (*fn)(void) = atomic_load(&injected_clock);
    if (fn)
        return fn();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts_ns(&ts);
}

int64_t gd_mono_ms(void) { return gd_mono_ns() / 1000000; }

int64_t gd_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts_ns(&ts) / 1000000;
}

void gd_clock_set(int64_t (*now_ns)(void)) { atomic_store(&injected_clock, now_ns); }

void gd_sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    /* The real monotonic clock, not the injected one: sleeping is always real time. */
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += ms / 1000;
    deadline.tv_nsec += (ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, NULL) == EINTR)
        ;
}

void gd_format_rfc3339_micro(int64_t wall_us, char out[32])
{
    int64_t secs = wall_us / 1000000, us = wall_us % 1000000;
    if (us < 0) {          /* floor division for times before the epoch */
        us += 1000000;
        secs--;
    }
    time_t t = (time_t)secs;
    struct tm tm;
    if (!gmtime_r(&t, &tm)) {
        snprintf(out, 32, "1970-01-01T00:00:00.000000Z");
        return;
    }
    char date[24];
    if (strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
        snprintf(date, sizeof date, "1970-01-01T00:00:00");
    snprintf(out, 32, "%.23s.%06dZ", date, (int)us);
}

/* xorshift64* per thread: no lock, no shared state, seeded lazily. */
static _Thread_local uint64_t rng_state;

double gd_rand01(void)
{
    if (rng_state == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t seed = (uint64_t)ts_ns(&ts) ^ ((uint64_t)getpid() << 32) ^
                        (uint64_t)(uintptr_t)&rng_state;
        /* splitmix64 step so close seeds give unrelated streams */
        seed += 0x9E3779B97F4A7C15ULL;
        seed = (seed ^ (seed >> 30)) * 0xBF58476D1CE4E5B9ULL;
        seed = (seed ^ (seed >> 27)) * 0x94D049BB133111EBULL;
        seed ^= seed >> 31;
        rng_state = seed ? seed : 0x2545F4914F6CDD1DULL;
    }
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return (double)((x * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0; /* 2^53 */
}

/* ---- backoff ---- */

void gd_backoff_init(gd_backoff *b, int64_t initial_ms, int64_t max_ms, double factor,
                     double jitter, int64_t reset_after_ms)
{
    b->initial_ms = initial_ms > 0 ? initial_ms : 1;
    b->max_ms = max_ms >= b->initial_ms ? max_ms : b->initial_ms;
    b->factor = factor >= 1.0 ? factor : 1.0;
    b->jitter = jitter < 0 ? 0 : (jitter > 1.0 ? 1.0 : jitter);
    b->reset_after_ms = reset_after_ms;
    b->current_ms = 0;
    b->last_failure_ms = 0;
}

void gd_backoff_reset(gd_backoff *b)
{
    b->current_ms = 0;
    b->last_failure_ms = 0;
}

int64_t gd_backoff_next(gd_backoff *b)
{
    int64_t now = gd_mono_ms();
    /* A long quiet period since the last failure means things were healthy: start over
     * (client-go's exponentialBackoffManagerImpl resetDuration). */
    if (b->current_ms > 0 && b->reset_after_ms > 0 &&
        now - b->last_failure_ms >= b->reset_after_ms)
        b->current_ms = 0;
    if (b->current_ms == 0) {
        b->current_ms = b->initial_ms;
    } else {
        double next = (double)b->current_ms * b->factor;
        b->current_ms = next >= (double)b->max_ms ? b->max_ms : (int64_t)next;
    }
    b->last_failure_ms = now;
    double j = 1.0 + b->jitter * (2.0 * gd_rand01() - 1.0);  /* [1-j, 1+j) */
    int64_t d = (int64_t)((double)b->current_ms * j);
    return d < 1 ? 1 : d;
}

/* ---- token bucket ---- */

void gd_bucket_init(gd_bucket *b, double qps, int burst)
{
    pthread_mutex_init(&b->mu, NULL);
    b->qps = qps;
    b->burst = burst > 0 ? burst : 1;
    b->tokens = b->burst;               /* starts full, as rate.NewLimiter */
    b->last_ns = gd_mono_ns();
}

void gd_bucket_destroy(gd_bucket *b) { pthread_mutex_destroy(&b->mu); }

/* rate.Limiter.reserveN: advance the refill to now, take one token (possibly going negative),
 * and tell the caller how long until that debt is paid back. Later callers queue behind it
 * because the debt is visible to them. */
int64_t gd_bucket_reserve_ns(gd_bucket *b)
{
    if (b->qps <= 0)
        return 0;
    pthread_mutex_lock(&b->mu);
    int64_t now = gd_mono_ns();
    if (now > b->last_ns) {
        b->tokens += (double)(now - b->last_ns) * b->qps / 1e9;
        if (b->tokens > b->burst)
            b->tokens = b->burst;
        b->last_ns = now;
    }
    b->tokens -= 1.0;
    int64_t wait = 0;
    if (b->tokens < 0) {
        double w = -b->tokens / b->qps * 1e9;
        wait = (int64_t)(w + 0.5);
    }
    pthread_mutex_unlock(&b->mu);
    return wait;
}

void gd_bucket_wait(gd_bucket *b)
{
    int64_t ns = gd_bucket_reserve_ns(b);
    if (ns > 0)
        gd_sleep_ms((ns + 999999) / 1000000);
}
