/* gd_time.c — clocks, backoff with jitter, token bucket.
 *
 * Everything that measures time goes through gd_mono_ns() so tests can inject a fake clock
 * and check backoff and rate limits without sleeping. */
#include "gd_time.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
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

/* Civil date from days since 1970-01-01 (proleptic Gregorian; H. Hinnant's algorithm).
 * Plain arithmetic on purpose: gmtime_r takes glibc's time-zone lock, and gd_log formats
 * timestamps with this — a child forked while another thread held that lock deadlocked on
 * its first log line (test_log's test_fork_while_logging, seen on a fresh Debian root). */
static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;                                    /* [0, 146096] */
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;  /* [0, 399] */
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* [0, 365] */
    int64_t mp = (5 * doy + 2) / 153;                                   /* [0, 11] */
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

void gd_format_rfc3339_micro(int64_t wall_us, char out[32])
{
    int64_t secs = wall_us / 1000000, us = wall_us % 1000000;
    if (us < 0) {          /* floor division for times before the epoch */
        us += 1000000;
        secs--;
    }
    int64_t days = secs / 86400, sod = secs % 86400;
    if (sod < 0) {
        sod += 86400;
        days--;
    }
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    if (y < 0 || y > 9999) {
        snprintf(out, 32, "1970-01-01T00:00:00.000000Z");
        return;
    }
    /* every field is in range by construction; the modulos say so to the compiler */
    snprintf(out, 32, "%04u-%02u-%02uT%02u:%02u:%02u.%06uZ", (unsigned)y % 10000u,
             (unsigned)m % 100u, (unsigned)d % 100u, (unsigned)(sod / 3600) % 100u,
             (unsigned)(sod / 60 % 60), (unsigned)(sod % 60), (unsigned)us % 1000000u);
}

/* Kubernetes writes metav1.Time as "2006-01-02T15:04:05Z" and MicroTime with six fraction
 * digits; other writers (exec plugins) may use an offset instead of Z. */
gd_err gd_parse_rfc3339_ms(const char *s, int64_t *wall_ms)
{
    if (!s || !wall_ms)
        return GD_ERR_ARG;
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int n = 0;
    if (sscanf(s, "%4d-%2d-%2d%*1[Tt]%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
               &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6 || n != 19)
        return GD_ERR_PARSE;
    if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
        tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
        return GD_ERR_PARSE;
    const char *p = s + n;
    int64_t frac_ms = 0;
    if (*p == '.') {
        int digits = 0;
        for (p++; isdigit((unsigned char)*p); p++, digits++)
            if (digits < 3)
                frac_ms = frac_ms * 10 + (*p - '0');
        if (digits == 0)
            return GD_ERR_PARSE;
        for (; digits < 3; digits++)
            frac_ms *= 10;
    }
    int64_t offset_s = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om, m = 0;
        if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &m) != 2 || m != 5 || oh > 23 || om > 59)
            return GD_ERR_PARSE;
        offset_s = (*p == '-' ? -1 : 1) * (int64_t)(oh * 3600 + om * 60);
        p += 6;
    } else {
        return GD_ERR_PARSE;
    }
    if (*p)
        return GD_ERR_PARSE;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    time_t t = timegm(&tm);
    *wall_ms = ((int64_t)t - offset_s) * 1000 + frac_ms;
    return GD_OK;
}

/* ---- durations (Go's time.ParseDuration / Duration.String) ---- */

static int64_t unit_ns(const char **p)
{
    static const struct { const char *name; int64_t ns; } units[] = {
        {"ns", 1}, {"us", 1000}, {"\xc2\xb5s", 1000}, {"\xce\xbcs", 1000}, {"ms", 1000000},
        {"s", 1000000000LL}, {"m", 60000000000LL}, {"h", 3600000000000LL}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        size_t len = strlen(units[i].name);
        /* "m" must not take the "m" of "ms": the table lists ms first */
        if (strncmp(*p, units[i].name, len) == 0) {
            *p += len;
            return units[i].ns;
        }
    }
    return 0;
}

gd_err gd_parse_duration_ms(const char *s, int64_t *out_ms)
{
    if (!s || !*s || !out_ms)
        return GD_ERR_PARSE;
    if (strcmp(s, "0") == 0) {
        *out_ms = 0;
        return GD_OK;
    }
    const double cap_ns = 1e12 * 1e6;
    double total_ns = 0;
    const char *p = s;
    while (*p) {
        if (!isdigit((unsigned char)*p) && !(*p == '.' && isdigit((unsigned char)p[1])))
            return GD_ERR_PARSE;
        double v = 0, scale = 1;
        bool frac = false;
        for (; isdigit((unsigned char)*p) || (*p == '.' && !frac); p++) {
            if (*p == '.') { frac = true; continue; }
            if (frac) scale /= 10;
            v = v * 10 + (*p - '0');
            if (v > cap_ns)
                return GD_ERR_PARSE;
        }
        int64_t u = unit_ns(&p);
        if (u == 0)
            return GD_ERR_PARSE;           /* a unit is required, as in Go */
        total_ns += v * scale * (double)u;
        if (total_ns > cap_ns)
            return GD_ERR_PARSE;
    }
    *out_ms = (int64_t)(total_ns / 1e6);
    return GD_OK;
}

void gd_format_duration_ms(int64_t ms, char *out, size_t cap)
{
    if (ms == 0) {
        snprintf(out, cap, "0s");
        return;
    }
    const char *sign = ms < 0 ? "-" : "";
    uint64_t a = ms < 0 ? (uint64_t)(-(ms + 1)) + 1 : (uint64_t)ms;
    if (a < 1000) {
        snprintf(out, cap, "%s%llums", sign, (unsigned long long)a);
        return;
    }
    char secs[32];
    uint64_t s = a / 1000 % 60, frac = a % 1000;
    if (frac) {
        snprintf(secs, sizeof secs, "%llu.%03llu", (unsigned long long)s, (unsigned long long)frac);
        char *end = secs + strlen(secs);
        while (end[-1] == '0') *--end = '\0';
    } else {
        snprintf(secs, sizeof secs, "%llu", (unsigned long long)s);
    }
    uint64_t h = a / 3600000, m = a / 60000 % 60;
    if (h)
        snprintf(out, cap, "%s%lluh%llum%ss", sign, (unsigned long long)h, (unsigned long long)m, secs);
    else if (m)
        snprintf(out, cap, "%s%llum%ss", sign, (unsigned long long)m, secs);
    else
        snprintf(out, cap, "%s%ss", sign, secs);
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
