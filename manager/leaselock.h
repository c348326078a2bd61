/* leaselock.h — the gd_le_lock store on a coordination.k8s.io/v1 Lease (client-go's
 * resourcelock.LeaseLock), and the Lease watch that lets a standby take a released lease
 * at once instead of at its next retry tick. */
#ifndef GD_LEASELOCK_H
#define GD_LEASELOCK_H
#include <pthread.h>
#include "k8s_client.h"
#include "leaderelection.h"

typedef struct gd_leaselock gd_leaselock;

/* client is borrowed and must outlive the lock. NULL on bad arguments or no memory. */
gd_leaselock *gd_leaselock_new(k8s_client *client, const char *ns, const char *name);
void gd_leaselock_destroy(gd_leaselock **l);
/* Fills the store callbacks for gd_le_new(). */
void gd_leaselock_ops(gd_leaselock *l, gd_le_lock *out);

/* Lease spec (JSON) ↔ record. Missing fields read as empty/zero; wrong types are
 * GD_ERR_TYPE. */
gd_err gd_leaselock_record_from_lease(const cJSON *lease, gd_le_record *rec);
/* Writes rec into lease.spec (creating it), replacing the five fields. */
gd_err gd_leaselock_record_to_lease(cJSON *lease, const gd_le_record *rec);

/* Watch thread: streams the one Lease (fieldSelector metadata.name=<name>) and wakes the
 * elector when it is released (empty holder) or deleted while we do not lead. */
typedef struct gd_lease_watch gd_lease_watch;
gd_lease_watch *gd_lease_watch_start(k8s_client *client, const char *ns, const char *name,
                                     gd_le *le);
/* Asks the watch to end without waiting (it polls its flag every ~100 ms). */
void gd_lease_watch_cancel(gd_lease_watch *w);
void gd_lease_watch_stop(gd_lease_watch **w);

#endif
