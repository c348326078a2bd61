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
 * The storage is behind mgr_le_lock so the decision logic is tested with a fake store and
 * an injected clock (gd_clock_set). The real store is manager/leaselock.c.
 *
 * Threads: mgr_le_run() is the election loop (client-go's acquire + renew); it runs on its
 * own thread. Other threads read mgr_le_status() and may mgr_le_wake() it (the Lease watch
 * does, when the lease is released). */
#ifndef MGR_LEADERELECTION_H
#define MGR_LEADERELECTION_H
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <pthread.h>
#include "gd_err.h"

#define MGR_LE_JITTER_FACTOR 1.2     /* client-go's JitterFactor */
#define MGR_LE_HOLDER_MAX 256
#define MGR_LE_TIME_MAX 40

/* coordination.k8s.io/v1 LeaseSpec, as client-go's LeaderElectionRecord. Times are the
 * MicroTime strings exactly as stored (compared, never interpreted). */
typedef struct {
    char holder[MGR_LE_HOLDER_MAX];      /* "" = nobody holds it */
    int64_t lease_duration_s;
    char acquire_time[MGR_LE_TIME_MAX];
    char renew_time[MGR_LE_TIME_MAX];
    int64_t transitions;
} mgr_le_record;

bool mgr_le_record_equal(const mgr_le_record *a, const mgr_le_record *b);

/* The lock store. Every call is one request; update() must carry the resourceVersion of
 * the object the last successful get/create/update returned and fail with
 * GD_ERR_CONFLICT when the object changed since. get() answers GD_ERR_NOT_FOUND when the
 * Lease does not exist. */
typedef struct {
    gd_err (*get)(void *ud, mgr_le_record *out);
    gd_err (*create)(void *ud, const mgr_le_record *rec);
    gd_err (*update)(void *ud, const mgr_le_record *rec);
    void *ud;
} mgr_le_lock;

typedef struct {
    int64_t lease_duration_ms;          /* default 15000 */
    int64_t renew_deadline_ms;          /* default 10000 */
    int64_t retry_period_ms;            /* default 2000 */
    char identity[MGR_LE_HOLDER_MAX];    /* hostname_<random> */
    char name[254];                     /* Lease name, for logs and metrics */
    bool release_on_cancel;             /* default true */
} mgr_le_config;

void mgr_le_config_default(mgr_le_config *c);
/* client-go's NewLeaderElector checks: lease > renew deadline > JitterFactor × retry,
 * all positive, identity set, lease a whole number of seconds ≥ 1 (the record stores
 * seconds). GD_ERR_CONFIG with one line in err. */
gd_err mgr_le_config_validate(const mgr_le_config *c, char *err, size_t errlen);
/* "<hostname>_<16 hex random>" into out. */
void mgr_le_make_identity(char *out, size_t cap);

/* What other threads may read. */
typedef struct {
    bool leading;                       /* we hold the lease (as last confirmed) */
    int64_t valid_from_mono_ms;         /* start of the last successful acquire/renew */
    int64_t valid_from_wall_ms;         /* same instant on the wall clock */
    uint64_t renewals;                  /* counts successful acquires + renews */
    uint64_t acquisitions;              /* counts transitions to leading */
    char leader[MGR_LE_HOLDER_MAX];      /* holder last observed ("" none) */
} mgr_le_status_t;

typedef struct mgr_le mgr_le;

/* Copies the config; the lock's ud stays the caller's. NULL on allocation failure or an
 * invalid config. */
mgr_le *mgr_le_new(const mgr_le_config *cfg, const mgr_le_lock *lock);
void   mgr_le_destroy(mgr_le **le);

/* One client-go tryAcquireOrRenew. deadline_mono_ms (0 = none): no further request is
 * started after it. Returns true when we hold the lease afterwards. */
bool mgr_le_try_acquire_or_renew(mgr_le *le, int64_t deadline_mono_ms);
/* The observed record says we hold it (client-go IsLeader). */
bool mgr_le_is_leader(mgr_le *le);
/* observed time + observed leaseDurationSeconds is still ahead of now (local clock). */
bool mgr_le_lease_valid(mgr_le *le, int64_t now_mono_ms);
/* client-go release(): when we hold it, write holder "", leaseDurationSeconds 1 and keep
 * leaseTransitions, so a candidate takes it on its next try instead of after expiry. */
bool mgr_le_release(mgr_le *le);
/* The observed record and its local observation time (tests, logs). */
void mgr_le_observed(mgr_le *le, mgr_le_record *rec, int64_t *observed_mono_ms);

/* ---- the loop ---- */
/* Runs acquire → renew → (lost) → acquire … until mgr_le_stop(); on stop, releases the
 * lease when it holds it and release_on_cancel is set. Blocking: run it on a thread. */
void  mgr_le_run(mgr_le *le);
void *mgr_le_thread_main(void *le);
/* Ask the loop to end (and release). Safe from any thread, not from a signal handler. */
void  mgr_le_stop(mgr_le *le);
/* Cut the current wait short: try now (the Lease watch saw it released). */
void  mgr_le_wake(mgr_le *le);
/* A record seen by the Lease watch while we do not lead: when it differs from the one
 * observed last, it becomes the observed record at the local time now (exactly what a
 * get in tryAcquireOrRenew would do, only sooner), so expiry is measured from the moment
 * the holder really renewed, and the acquire loop wakes to re-plan its next try. */
void  mgr_le_observe(mgr_le *le, const mgr_le_record *rec);
void  mgr_le_status(mgr_le *le, mgr_le_status_t *out);
/* fn(ud) is called on the election thread whenever leading changes or a renewal succeeds
 * (the manager wakes its main loop with it). Set before starting the loop. */
void  mgr_le_set_notify(mgr_le *le, void (*fn)(void *ud), void *ud);
/* The instant (monotonic ms) after which we must assume we no longer hold the lease:
 * valid_from + renew deadline; 0 when not leading. Used for fencing. */
int64_t mgr_le_fence_at_mono_ms(mgr_le *le);
const mgr_le_config *mgr_le_get_config(const mgr_le *le);

#endif
