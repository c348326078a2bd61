/* gd_time.h — monotonic clock helpers, exponential backoff with jitter, a token bucket.
 * All durations are in milliseconds unless the name says otherwise. The clock can be
 * replaced for tests (gd_clock_set) so timing logic is tested without sleeping. */
#ifndef GD_TIME_H
#define GD_TIME_H
#include <stdint.h>
#include <pthread.h>
#include <stddef.h>
#include "gd_err.h"

int64_t gd_mono_ns(void);          /* CLOCK_MONOTONIC, or the injected clock */
int64_t gd_mono_ms(void);
int64_t gd_wall_ms(void);          /* CLOCK_REALTIME */
void    gd_sleep_ms(int64_t ms);   /* restarts on EINTR until the time has passed */
/* Test hook: a function returning monotonic ns; NULL restores the real clock. */
void    gd_clock_set(int64_t (*now_ns)(void));
/* RFC 3339 UTC with microseconds, as Kubernetes MicroTime: 2026-11-22T11:02:03.123456Z */
void    gd_format_rfc3339_micro(int64_t wall_us, char out[32]);
/* RFC 3339 (Kubernetes Time and MicroTime, "2026-11-22T11:02:03Z", fraction and offset
 * optional) → wall ms. GD_ERR_PARSE unless the whole string is one. */
gd_err  gd_parse_rfc3339_ms(const char *s, int64_t *wall_ms);

/* Durations, the one syntax of every flag and file: Go's time.ParseDuration — a sequence of
 * decimal numbers each with a unit (ns, us, µs, ms, s, m, h), e.g. "15s", "1m30s", "1.5h",
 * "250ms". A bare number has no unit and is refused ("15" is not 15 s), except "0", as in
 * Go. No sign: nothing we configure is negative. Result in ms (sub-ms parts truncated);
 * GD_ERR_PARSE on anything else or beyond 10^12 ms. */
gd_err  gd_parse_duration_ms(const char *s, int64_t *out_ms);
/* The way Go prints a time.Duration: "0s", "250ms", "1.5s", "15s", "5m0s", "1h0m0s". */
void    gd_format_duration_ms(int64_t ms, char *out, size_t cap);

/* Thread-safe xorshift PRNG in [0,1); seeded per thread from time and pid. */
double  gd_rand01(void);

/* Exponential backoff with jitter, reset after a healthy period (client-go's
 * wait.Backoff + BackoffManager): next = min(cur*factor, max), then +/- jitter. */
typedef struct {
    int64_t initial_ms, max_ms, reset_after_ms;
    double factor, jitter;         /* jitter 0.2 → [0.8,1.2)*delay */
    int64_t current_ms;            /* 0 until the first failure */
    int64_t last_failure_ms;       /* gd_mono_ms() of the last failure */
} gd_backoff;
void    gd_backoff_init(gd_backoff *b, int64_t initial_ms, int64_t max_ms, double factor,
                        double jitter, int64_t reset_after_ms);
int64_t gd_backoff_next(gd_backoff *b);   /* delay to wait before the next attempt */
void    gd_backoff_reset(gd_backoff *b);

/* Token bucket (client-go flowcontrol / golang.org/x/time/rate): qps tokens per second,
 * up to burst stored. Thread-safe. qps <= 0 means unlimited. */
typedef struct {
    pthread_mutex_t mu;
    double qps, burst, tokens;
    int64_t last_ns;
} gd_bucket;
void    gd_bucket_init(gd_bucket *b, double qps, int burst);
void    gd_bucket_destroy(gd_bucket *b);
/* Reserves one token; returns how many ns the caller must wait before using it (0: now). */
int64_t gd_bucket_reserve_ns(gd_bucket *b);
/* Reserves and sleeps as needed. */
void    gd_bucket_wait(gd_bucket *b);

#endif
