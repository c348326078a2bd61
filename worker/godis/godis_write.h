/* godis_write.h — the reconcilers' writes: fenced, recorded for read-your-writes, and
 * tolerant of the idempotency answers (AlreadyExists on create, NotFound on delete). */
#ifndef GODIS_WRITE_H
#define GODIS_WRITE_H
#include "godis_reconcile.h"

/* GD_ERR_ALREADY_EXISTS when it exists (idempotent: callers treat it as done but wait
 * for the cache before the next step). */
gd_err gw_create(godis_env *e, const k8s_resource *r, const cJSON *obj);
/* Creates obj, or adopts the object of that name when it exists already without our labels
 * but is controlled by obj's controller owner (same uid): a child the original Go controller
 * made. Its labels are what the informers select on, so the cache never showed it and a
 * plain create would answer AlreadyExists forever. Adopting adds obj's labels and nothing
 * else (one optimistic-concurrency update); the caller's next reconcile sees it in the
 * cache and repairs what else differs. Returns GD_OK when created or adopted (*adopted
 * says which; may be NULL); GD_ERR_ALREADY_EXISTS when it is ours and labelled (the cache
 * is behind) or when it is not ours to take — then a Warning Event on `about` says so, and
 * the caller retries with backoff. */
gd_err gw_create_or_adopt(godis_env *e, const k8s_resource *r, const cJSON *obj,
                          const cJSON *about, bool *adopted);
/* PUT with obj's resourceVersion; GD_ERR_CONFLICT when the cache was stale. */
gd_err gw_update(godis_env *e, const k8s_resource *r, const cJSON *obj);
gd_err gw_update_status(godis_env *e, const k8s_resource *r, const cJSON *obj);
/* A JSON merge patch (RFC 7386) of ns/name, without a resourceVersion: for a change that
 * holds whatever else was written meanwhile (a field only ever added, never read back). */
gd_err gw_merge_patch(godis_env *e, const k8s_resource *r, const char *ns, const char *name,
                      const cJSON *patch);
/* The same; on success *written is the object the API server returned (caller frees). */
gd_err gw_update_status_out(godis_env *e, const k8s_resource *r, const cJSON *obj,
                            cJSON **written);
/* Background propagation with a uid precondition; GD_OK also for NotFound. */
gd_err gw_delete(godis_env *e, const k8s_resource *r, const char *ns, const char *name,
                 const char *uid);
/* The same with gracePeriodSeconds (-1: the object's own). */
gd_err gw_delete_grace(godis_env *e, const k8s_resource *r, const char *ns, const char *name,
                       const char *uid, long grace_seconds);
/* Maps an error of a write to a reconcile result (Conflict/NotFound: requeue at once). */
godis_result gw_result(gd_err err);

#endif
