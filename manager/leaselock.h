/* leaselock.h — the mgr_le_lock store on a coordination.k8s.io/v1 Lease (client-go's
 * resourcelock.LeaseLock), and the Lease watch that lets a standby take a released lease
 * at once instead of at its next retry tick. */
#ifndef MGR_LEASELOCK_H
#define MGR_LEASELOCK_H
#include <pthread.h>
#include "k8s_client.h"
#include "leaderelection.h"

typedef struct mgr_leaselock mgr_leaselock;

/* client is borrowed and must outlive the lock. NULL on bad arguments or no memory. */
mgr_leaselock *mgr_leaselock_new(k8s_client *client, const char *ns, const char *name);
void mgr_leaselock_destroy(mgr_leaselock **l);
/* An annotation written into the Lease with every acquire and renew, and removed by the
 * release (the leader's endpoints for remote workers, PROTOCOL.md §3.1). Set it before the
 * election starts. */
gd_err mgr_leaselock_set_annotation(mgr_leaselock *l, const char *key, const char *value);
/* Fills the store callbacks for mgr_le_new(). */
void mgr_leaselock_ops(mgr_leaselock *l, mgr_le_lock *out);

/* Lease spec (JSON) ↔ record. Missing fields read as empty/zero; wrong types are
 * GD_ERR_TYPE. */
gd_err mgr_leaselock_record_from_lease(const cJSON *lease, mgr_le_record *rec);
/* Writes rec into lease.spec (creating it), replacing the five fields. */
gd_err mgr_leaselock_record_to_lease(cJSON *lease, const mgr_le_record *rec);

/* Watch thread: streams the one Lease (fieldSelector metadata.name=<name>) and wakes the
 * elector when it is released (empty holder) or deleted while we do not lead. */
typedef struct mgr_lease_watch mgr_lease_watch;
mgr_lease_watch *mgr_lease_watch_start(k8s_client *client, const char *ns, const char *name,
                                     mgr_le *le);
/* Asks the watch to end without waiting (the poke ends its wait or its stream at once). */
void mgr_lease_watch_cancel(mgr_lease_watch *w);
void mgr_lease_watch_stop(mgr_lease_watch **w);

#endif
