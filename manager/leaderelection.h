/* leaderelection.h — client-go's leader election (tools/leaderelection) on a Lease.
 *
 * The algorithm is client-go's tryAcquireOrRenew, kept step for step so its reasoning
 * carries over:
 *   1. fast path: a leader whose observed lease is still valid updates optimistically with
 *      the resourceVersion it last saw (a Conflict falls through to the slow path);
 *   2. get the record (create it when NotFound);
 *   3. when the record differs from the one observed last, remember it and the LOCAL
 *      monotonic time of that observation — the record's own timestamps are written by
 *      other machines' clocks and are never trusted;
 *   4. a record held by someone else whose lease has not expired (observed time +
 *      leaseDurationSeconds, on our clock) is left alone;
 *   5. otherwise update it with our identity (the update carries the resourceVersion that
 *      was read, so two candidates racing for an expired lease cannot both win).
 *
 * The storage is behind gd_le_lock so the decision logic is tested with a fake store and
 * an injected clock (gd_clock_set). The real store is manager/leaselock.c.
 *
 * Threads: gd_le_run() is the election loop (client-go's acquire + renew); it runs on its
 * own thread. Other threads read gd_le_status() and may gd_le_wake() it (the Lease watch
 * does, when the lease is released). */
#ifndef GD_LEADERELECTION_H
#define GD_LEADERELECTION_H
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <pthread.h>
#include "gd_err.h"

#define GD_LE_JITTER_FACTOR 1.2     /* client-go's JitterFactor */
#define GD_LE_HOLDER_MAX 256
#define GD_LE_TIME_MAX 40

/* coordination.k8s.io/v1 LeaseSpec, as client-go's LeaderElectionRecord. Times are the
 * MicroTime strings exactly as stored (compared, never interpreted). */
typedef struct {
    char holder[GD_LE_HOLDER_MAX];      /* "" = nobody holds it */
    int64_t lease_duration_s;
    char acquire_time[GD_LE_TIME_MAX];
    char renew_time[GD_LE_TIME_MAX];
    int64_t transitions;
} gd_le_record;

bool gd_le_record_equal(const gd_le_record *a, const gd_le_record *b);

/* The lock store. Every call is one request; update() must carry the resourceVersion of
 * the object the last successful get/create/update returned and fail with
 * GD_ERR_CONFLICT when the object changed since. get() answers GD_ERR_NOT_FOUND when the
 * Lease does not exist. */
typedef struct {
    gd_err (*get)(void *ud, gd_le_record *out);
    gd_err (*create)(void *ud, const gd_le_record *rec);
    gd_err (*update)(void *ud, const gd_le_record *rec);
    void *ud;
} gd_le_lock;

typedef struct {
    int64_t lease_duration_ms;          /* default 15000 */
    int64_t renew_deadline_ms;          /* default 10000 */
    int64_t retry_period_ms;            /* default 2000 */
    char identity[GD_LE_HOLDER_MAX];    /* hostname_<random> */
    char name[254];                     /* Lease name, for logs and metrics */
    bool release_on_cancel;             /* default true */
} gd_le_config;

void gd_le_config_default(gd_le_config *c);
/* client-go's NewLeaderElector checks: lease > renew deadline > JitterFactor × retry,
 * all positive, identity set, lease a whole number of seconds ≥ 1 (the record stores
 * seconds). GD_ERR_CONFIG with one line in err. */
gd_err gd_le_config_validate(const gd_le_config *c, char *err, size_t errlen);
/* "<hostname>_<16 hex random>" into out. */
void gd_le_make_identity(char *out, size_t cap);

/* What other threads may read. */
typedef struct {
    bool leading;                       /* we hold the lease (as last confirmed) */
    int64_t valid_from_mono_ms;         /* start of the last successful acquire/renew */
    int64_t valid_from_wall_ms;         /* same instant on the wall clock */
    uint64_t renewals;                  /* counts successful acquires + renews */
    uint64_t acquisitions;              /* counts transitions to leading */
    char leader[GD_LE_HOLDER_MAX];      /* holder last observed ("" none) */
} gd_le_status_t;

typedef struct gd_le gd_le;

/* Copies the config; the lock's ud stays the caller's. NULL on allocation failure or an
 * invalid config. */
gd_le *gd_le_new(const gd_le_config *cfg, const gd_le_lock *lock);
void   gd_le_destroy(gd_le **le);

/* One client-go tryAcquireOrRenew. deadline_mono_ms (0 = none): no further request is
 * started after it. Returns true when we hold the lease afterwards. */
bool gd_le_try_acquire_or_renew(gd_le *le, int64_t deadline_mono_ms);
/* The observed record says we hold it (client-go IsLeader). */
bool gd_le_is_leader(gd_le *le);
/* observed time + observed leaseDurationSeconds is still ahead of now (local clock). */
bool gd_le_lease_valid(gd_le *le, int64_t now_mono_ms);
/* client-go release(): when we hold it, write holder "", leaseDurationSeconds 1 and keep
 * leaseTransitions, so a candidate takes it on its next try instead of after expiry. */
bool gd_le_release(gd_le *le);
/* The observed record and its local observation time (tests, logs). */
void gd_le_observed(gd_le *le, gd_le_record *rec, int64_t *observed_mono_ms);

/* ---- the loop ---- */
/* Runs acquire → renew → (lost) → acquire … until gd_le_stop(); on stop, releases the
 * lease when it holds it and release_on_cancel is set. Blocking: run it on a thread. */
void  gd_le_run(gd_le *le);
void *gd_le_thread_main(void *le);
/* Ask the loop to end (and release). Safe from any thread, not from a signal handler. */
void  gd_le_stop(gd_le *le);
/* Cut the current wait short: try now (the Lease watch saw it released). */
void  gd_le_wake(gd_le *le);
/* A record seen by the Lease watch while we do not lead: when it differs from the one
 * observed last, it becomes the observed record at the local time now (exactly what a
 * get in tryAcquireOrRenew would do, only sooner), so expiry is measured from the moment
 * the holder really renewed, and the acquire loop wakes to re-plan its next try. */
void  gd_le_observe(gd_le *le, const gd_le_record *rec);
void  gd_le_status(gd_le *le, gd_le_status_t *out);
/* fn(ud) is called on the election thread whenever leading changes or a renewal succeeds
 * (the manager wakes its main loop with it). Set before starting the loop. */
void  gd_le_set_notify(gd_le *le, void (*fn)(void *ud), void *ud);
/* The instant (monotonic ms) after which we must assume we no longer hold the lease:
 * valid_from + renew deadline; 0 when not leading. Used for fencing. */
int64_t gd_le_fence_at_mono_ms(gd_le *le);
const gd_le_config *gd_le_get_config(const gd_le *le);

#endif
