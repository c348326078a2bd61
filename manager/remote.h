/* remote.h — workers in other pods (docs/PROTOCOL.md §3): the manager's tcp:// endpoints
 * with CURVE and the ZAP allow-list, the Lease annotation that tells remote workers where
 * the leader is, and the remote workers' life cycle (HELLO, heartbeats, the remote lease,
 * losing their shards once they are silent and their lease has run out).
 *
 * Local workers are processes the manager reaps; a remote worker is only a connection, so
 * "gone" is decided by heartbeats (Paranoid Pirate) and its shards move only once the last
 * lease it was given has expired on our clock — by then it has stopped writing. */
#ifndef MGR_REMOTE_H
#define MGR_REMOTE_H
#include <stdbool.h>
#include <stdint.h>
#include "config.h"
#include "control.h"
#include "shards.h"

#define MGR_REMOTE_ANNOTATION GD_REMOTE_ANNOTATION
#define MGR_REMOTE_MISSED_PINGS 5

typedef struct mgr_remote mgr_remote;

/* NULL with *err = GD_OK when --remote-port-base is 0 (no remote workers); NULL with an
 * error (logged) when the keys, the allow-list or the address are unusable. Starts the ZAP
 * handler on zctx. kinds: the informers' kinds in order (their ports follow it). */
mgr_remote *mgr_remote_new(const mgr_config *cfg, void *zctx, char (*kinds)[64], int nkinds,
                           const char *holder, gd_err *err);
void mgr_remote_destroy(mgr_remote **r);      /* before zmq_ctx_term */

const gd_curve_keys *mgr_remote_keys(const mgr_remote *r);
const char *mgr_remote_control_endpoint(const mgr_remote *r);
/* The informer of kind index i: its tcp:// PUB and snapshot endpoints. */
const char *mgr_remote_pub(const mgr_remote *r, int i);
const char *mgr_remote_snap(const mgr_remote *r, int i);
/* The annotation's JSON value (PROTOCOL.md §3.1). */
const char *mgr_remote_annotation(const mgr_remote *r);

/* Life cycle, all on the manager's main thread. */
bool mgr_remote_hello(mgr_remote *r, mgr_control *ctl, mgr_shards *sh, int index,
                      const char *name, bool leading, int64_t lease_deadline_wall);
/* After a PONG: a LEASE with the new stamp (remote workers only). */
void mgr_remote_pong(mgr_remote *r, mgr_control *ctl, int index, bool leading,
                     int64_t lease_deadline_wall);
void mgr_remote_lease_all(mgr_remote *r, mgr_control *ctl, int64_t lease_deadline_wall);
void mgr_remote_start_leading(mgr_remote *r, mgr_shards *sh);
/* Fencing or shutdown: STOP to every remote worker; their shards stay theirs until their
 * lease has expired (mgr_remote_tick frees them). */
void mgr_remote_stop_all(mgr_remote *r, mgr_control *ctl, mgr_shards *sh);
/* PINGs every heartbeat, declares silent workers gone, frees the shards of gone ones;
 * writes the slots freed now into freed (room for MGR_SHARDS_MAX_WORKERS) and returns how
 * many (the caller forgets what it kept about them, e.g. their metrics). */
int mgr_remote_tick(mgr_remote *r, mgr_control *ctl, mgr_shards *sh, int64_t now, int *freed);
/* When mgr_remote_tick next has something to do (monotonic ms): a PING, a silent worker's
 * last chance, a stopped one's lease running out. INT64_MAX with no remote worker. */
int64_t mgr_remote_due_ms(const mgr_remote *r, mgr_control *ctl);
/* True when no remote worker can still be writing: none holds a lease that has not run out
 * (one that joined without a lease, e.g. during shutdown, cannot write). */
bool mgr_remote_quiet(const mgr_remote *r, mgr_control *ctl, int64_t now);
int  mgr_remote_count(const mgr_remote *r);
uint64_t mgr_remote_losses(const mgr_remote *r);  /* workers declared gone */

#endif
