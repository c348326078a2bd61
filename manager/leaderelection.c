/* leaderelection.c — client-go's leader election; see leaderelection.h for the algorithm.
 *
 * One deliberate difference from client-go: the renew deadline is counted from the start
 * of the last *successful* renewal, not from the start of the current renew round. That is
 * the instant the manager's fencing uses too (mgr_le_fence_at_mono_ms), so the loop and the
 * fence agree on when leadership ends, and it is never later than client-go's. */
#include "leaderelection.h"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "gd_log.h"
#include "gd_time.h"
#include "k8s_client.h"

struct mgr_le {
    mgr_le_config cfg;
    mgr_le_lock lock;

    /* Written only by the election thread (under mu), read by others under mu. */
    mgr_le_record observed;
    bool have_observed;
    int64_t observed_mono_ms;
    mgr_le_status_t st;

    void (*notify)(void *ud);
    void *notify_ud;

    pthread_mutex_t mu;
    pthread_cond_t cv;                  /* CLOCK_MONOTONIC */
    bool stopping, wake;
};

bool mgr_le_record_equal(const mgr_le_record *a, const mgr_le_record *b)
{
    return strcmp(a->holder, b->holder) == 0 && a->lease_duration_s == b->lease_duration_s &&
           strcmp(a->acquire_time, b->acquire_time) == 0 &&
           strcmp(a->renew_time, b->renew_time) == 0 && a->transitions == b->transitions;
}

void mgr_le_config_default(mgr_le_config *c)
{
    memset(c, 0, sizeof *c);
    c->lease_duration_ms = 15000;
    c->renew_deadline_ms = 10000;
    c->retry_period_ms = 2000;
    c->release_on_cancel = true;
    snprintf(c->name, sizeof c->name, "godis-operator");
}

gd_err mgr_le_config_validate(const mgr_le_config *c, char *err, size_t errlen)
{
    const char *why = NULL;
    if (c->lease_duration_ms < 1000 || c->lease_duration_ms % 1000 != 0)
        why = "leader-elect-lease-duration must be a whole number of seconds, at least 1s";
    else if (c->renew_deadline_ms <= 0)
        why = "leader-elect-renew-deadline must be greater than zero";
    else if (c->retry_period_ms <= 0)
        why = "leader-elect-retry-period must be greater than zero";
    else if (c->lease_duration_ms <= c->renew_deadline_ms)
        why = "leader-elect-lease-duration must be greater than leader-elect-renew-deadline";
    else if ((double)c->renew_deadline_ms <= MGR_LE_JITTER_FACTOR * (double)c->retry_period_ms)
        why = "leader-elect-renew-deadline must be greater than 1.2 x leader-elect-retry-period";
    else if (c->identity[0] == '\0')
        why = "leader election identity must not be empty";
    else if (!k8s_user_agent_word_ok(c->identity))
        why = "leader election identity must be visible ASCII without ( ) ; \\ (it goes "
              "into User-Agent headers)";
    else if (c->name[0] == '\0')
        why = "leader-elect-resource-name must not be empty";
    if (!why) return GD_OK;
    if (err && errlen) snprintf(err, errlen, "%s", why);
    return GD_ERR_CONFIG;
}

void mgr_le_make_identity(char *out, size_t cap)
{
    char host[128] = "unknown";
    if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    uint64_t r = (uint64_t)(gd_rand01() * 4294967296.0) << 32 |
                 (uint64_t)(gd_rand01() * 4294967296.0);
    snprintf(out, cap, "%s_%016" PRIx64, host, r);
}

mgr_le *mgr_le_new(const mgr_le_config *cfg, const mgr_le_lock *lock)
{
    char err[160];
    if (!cfg || !lock || !lock->get || !lock->create || !lock->update) return NULL;
    if (mgr_le_config_validate(cfg, err, sizeof err) != GD_OK) {
        GD_ERROR("invalid leader election config", "error", err);
        return NULL;
    }
    mgr_le *le = calloc(1, sizeof *le);
    if (!le) return NULL;
    le->cfg = *cfg;
    le->lock = *lock;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&le->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&le->mu, NULL);
    return le;
}

void mgr_le_destroy(mgr_le **lep)
{
    if (!lep || !*lep) return;
    mgr_le *le = *lep;
    pthread_cond_destroy(&le->cv);
    pthread_mutex_destroy(&le->mu);
    free(le);
    *lep = NULL;
}

const mgr_le_config *mgr_le_get_config(const mgr_le *le) { return &le->cfg; }

static void set_observed(mgr_le *le, const mgr_le_record *rec)
{
    pthread_mutex_lock(&le->mu);
    le->observed = *rec;
    le->have_observed = true;
    le->observed_mono_ms = gd_mono_ms();
    snprintf(le->st.leader, sizeof le->st.leader, "%s", rec->holder);
    pthread_mutex_unlock(&le->mu);
}

void mgr_le_observed(mgr_le *le, mgr_le_record *rec, int64_t *observed_mono_ms)
{
    pthread_mutex_lock(&le->mu);
    if (rec) *rec = le->observed;
    if (observed_mono_ms) *observed_mono_ms = le->observed_mono_ms;
    pthread_mutex_unlock(&le->mu);
}

bool mgr_le_is_leader(mgr_le *le)
{
    pthread_mutex_lock(&le->mu);
    bool r = le->have_observed && strcmp(le->observed.holder, le->cfg.identity) == 0;
    pthread_mutex_unlock(&le->mu);
    return r;
}

bool mgr_le_lease_valid(mgr_le *le, int64_t now_mono_ms)
{
    pthread_mutex_lock(&le->mu);
    bool r = le->have_observed &&
             le->observed_mono_ms + le->observed.lease_duration_s * 1000 > now_mono_ms;
    pthread_mutex_unlock(&le->mu);
    return r;
}

static void now_micro(char out[MGR_LE_TIME_MAX])
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char buf[32];
    gd_format_rfc3339_micro((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000, buf);
    snprintf(out, MGR_LE_TIME_MAX, "%s", buf);
}

static bool past(int64_t deadline_mono_ms)
{
    return deadline_mono_ms > 0 && gd_mono_ms() >= deadline_mono_ms;
}

bool mgr_le_try_acquire_or_renew(mgr_le *le, int64_t deadline_mono_ms)
{
    int64_t now = gd_mono_ms();
    mgr_le_record rec;
    memset(&rec, 0, sizeof rec);
    snprintf(rec.holder, sizeof rec.holder, "%s", le->cfg.identity);
    rec.lease_duration_s = le->cfg.lease_duration_ms / 1000;
    now_micro(rec.renew_time);
    memcpy(rec.acquire_time, rec.renew_time, sizeof rec.acquire_time);

    /* 1. fast path: we led and our view is fresh, so our resourceVersion is probably too. */
    if (mgr_le_is_leader(le) && mgr_le_lease_valid(le, now)) {
        mgr_le_record old;
        mgr_le_observed(le, &old, NULL);
        memcpy(rec.acquire_time, old.acquire_time, sizeof rec.acquire_time);
        rec.transitions = old.transitions;
        gd_err e = le->lock.update(le->lock.ud, &rec);
        if (e == GD_OK) {
            set_observed(le, &rec);
            return true;
        }
        GD_WARN("optimistic lease update failed, falling back to slow path",
                "lease", le->cfg.name, "error", gd_strerror(e));
    }
    if (past(deadline_mono_ms)) return false;

    /* 2. obtain or create the record */
    mgr_le_record old;
    memset(&old, 0, sizeof old);
    gd_err e = le->lock.get(le->lock.ud, &old);
    if (e != GD_OK) {
        if (e != GD_ERR_NOT_FOUND) {
            GD_WARN("error retrieving lease", "lease", le->cfg.name, "error", gd_strerror(e));
            return false;
        }
        if (past(deadline_mono_ms)) return false;
        e = le->lock.create(le->lock.ud, &rec);
        if (e != GD_OK) {
            GD_WARN("error creating lease", "lease", le->cfg.name, "error", gd_strerror(e));
            return false;
        }
        set_observed(le, &rec);
        return true;
    }

    /* 3. a changed record restarts the expiry clock, measured on OUR clock */
    pthread_mutex_lock(&le->mu);
    bool changed = !le->have_observed || !mgr_le_record_equal(&le->observed, &old);
    pthread_mutex_unlock(&le->mu);
    if (changed) set_observed(le, &old);
    if (old.holder[0] != '\0' && mgr_le_lease_valid(le, now) && !mgr_le_is_leader(le))
        return false;                   /* held by someone else, not expired */

    /* 4. take it over (or renew on the slow path) */
    if (mgr_le_is_leader(le)) {
        memcpy(rec.acquire_time, old.acquire_time, sizeof rec.acquire_time);
        rec.transitions = old.transitions;
    } else {
        rec.transitions = old.transitions + 1;
    }
    if (past(deadline_mono_ms)) return false;
    e = le->lock.update(le->lock.ud, &rec);
    if (e != GD_OK) {
        GD_WARN("failed to update lease", "lease", le->cfg.name, "error", gd_strerror(e));
        return false;
    }
    set_observed(le, &rec);
    return true;
}

bool mgr_le_release(mgr_le *le)
{
    if (!mgr_le_is_leader(le)) return true;
    mgr_le_record old, rec;
    mgr_le_observed(le, &old, NULL);
    memset(&rec, 0, sizeof rec);
    rec.lease_duration_s = 1;
    rec.transitions = old.transitions;
    now_micro(rec.renew_time);
    memcpy(rec.acquire_time, rec.renew_time, sizeof rec.acquire_time);
    gd_err e = le->lock.update(le->lock.ud, &rec);
    if (e != GD_OK) {
        GD_ERROR("failed to release lease", "lease", le->cfg.name, "error", gd_strerror(e));
        return false;
    }
    set_observed(le, &rec);
    GD_INFO("released lease", "lease", le->cfg.name);
    return true;
}

/* ---- the loop ---- */

/* Waits up to ms (real monotonic time). Returns early on stop, and on wake when
 * wakeable. Returns true when stopping. */
static bool wait_ms(mgr_le *le, int64_t ms, bool wakeable)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (ms < 0) ms = 0;
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
    pthread_mutex_lock(&le->mu);
    while (!le->stopping && !(wakeable && le->wake)) {
        if (pthread_cond_timedwait(&le->cv, &le->mu, &ts) == ETIMEDOUT) break;
    }
    if (wakeable) le->wake = false;
    bool stopping = le->stopping;
    pthread_mutex_unlock(&le->mu);
    return stopping;
}

static bool stopping(mgr_le *le)
{
    pthread_mutex_lock(&le->mu);
    bool s = le->stopping;
    pthread_mutex_unlock(&le->mu);
    return s;
}

static void mark_valid(mgr_le *le, int64_t start_mono, int64_t start_wall, bool acquired)
{
    pthread_mutex_lock(&le->mu);
    le->st.leading = true;
    le->st.valid_from_mono_ms = start_mono;
    le->st.valid_from_wall_ms = start_wall;
    le->st.renewals++;
    if (acquired) le->st.acquisitions++;
    pthread_mutex_unlock(&le->mu);
    if (le->notify) le->notify(le->notify_ud);
}

static void mark_lost(mgr_le *le)
{
    pthread_mutex_lock(&le->mu);
    le->st.leading = false;
    le->st.valid_from_mono_ms = 0;
    le->st.valid_from_wall_ms = 0;
    pthread_mutex_unlock(&le->mu);
    if (le->notify) le->notify(le->notify_ud);
}

void mgr_le_set_notify(mgr_le *le, void (*fn)(void *ud), void *ud)
{
    le->notify = fn;
    le->notify_ud = ud;
}

/* client-go acquire(): try every retry period with jitter until it succeeds. */
static bool acquire(mgr_le *le)
{
    GD_INFO("attempting to acquire leader lease", "lease", le->cfg.name,
            "identity", le->cfg.identity);
    for (;;) {
        if (stopping(le)) return false;
        int64_t m = gd_mono_ms(), w = gd_wall_ms();
        if (mgr_le_try_acquire_or_renew(le, 0)) {
            mark_valid(le, m, w, true);
            GD_INFO("successfully acquired lease", "lease", le->cfg.name,
                    "identity", le->cfg.identity);
            return true;
        }
        double f = 1.0 + gd_rand01() * MGR_LE_JITTER_FACTOR;
        int64_t wait = (int64_t)((double)le->cfg.retry_period_ms * f);
        /* a held lease: try again right when it expires on our clock, not up to a whole
         * jittered retry period later */
        int64_t obs;
        mgr_le_record rec;
        mgr_le_observed(le, &rec, &obs);
        if (rec.holder[0] && rec.lease_duration_s > 0) {
            int64_t until = obs + rec.lease_duration_s * 1000 + 10 - gd_mono_ms();
            if (until >= 0 && until < wait) wait = until;
        }
        if (wait_ms(le, wait, true)) return false;
    }
}

/* client-go renew(): every retry period; give up when no try succeeded before the renew
 * deadline. Returns when the lease is lost or on stop. */
static void renew(mgr_le *le)
{
    for (;;) {
        if (wait_ms(le, le->cfg.retry_period_ms, false)) return;
        int64_t fence_at = mgr_le_fence_at_mono_ms(le);
        for (;;) {
            int64_t m = gd_mono_ms(), w = gd_wall_ms();
            if (m >= fence_at) break;
            if (mgr_le_try_acquire_or_renew(le, fence_at)) {
                mark_valid(le, m, w, false);
                goto renewed;
            }
            if (!mgr_le_is_leader(le)) break;    /* someone else holds it now */
            int64_t next = m + le->cfg.retry_period_ms;
            if (next > fence_at) next = fence_at;
            if (wait_ms(le, next - gd_mono_ms(), false)) return;
        }
        mark_lost(le);
        GD_ERROR("failed to renew lease before the renew deadline: leadership lost",
                 "lease", le->cfg.name);
        return;
    renewed:;
    }
}

void mgr_le_run(mgr_le *le)
{
    while (!stopping(le)) {
        if (!acquire(le)) break;
        renew(le);
    }
    if (le->cfg.release_on_cancel) mgr_le_release(le);
    mark_lost(le);
}

void *mgr_le_thread_main(void *arg)
{
    mgr_le_run((mgr_le *)arg);
    return NULL;
}

void mgr_le_stop(mgr_le *le)
{
    pthread_mutex_lock(&le->mu);
    le->stopping = true;
    pthread_cond_broadcast(&le->cv);
    pthread_mutex_unlock(&le->mu);
}

void mgr_le_observe(mgr_le *le, const mgr_le_record *rec)
{
    pthread_mutex_lock(&le->mu);
    bool apply = !le->st.leading && (!le->have_observed || !mgr_le_record_equal(&le->observed, rec));
    pthread_mutex_unlock(&le->mu);
    if (!apply) return;
    set_observed(le, rec);
    mgr_le_wake(le);
}

void mgr_le_wake(mgr_le *le)
{
    pthread_mutex_lock(&le->mu);
    le->wake = true;
    pthread_cond_broadcast(&le->cv);
    pthread_mutex_unlock(&le->mu);
}

void mgr_le_status(mgr_le *le, mgr_le_status_t *out)
{
    pthread_mutex_lock(&le->mu);
    *out = le->st;
    pthread_mutex_unlock(&le->mu);
}

int64_t mgr_le_fence_at_mono_ms(mgr_le *le)
{
    pthread_mutex_lock(&le->mu);
    int64_t r = le->st.leading ? le->st.valid_from_mono_ms + le->cfg.renew_deadline_ms : 0;
    pthread_mutex_unlock(&le->mu);
    return r;
}
