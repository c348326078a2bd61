/* godis_write.h — the reconcilers' writes: fenced, recorded for read-your-writes, and
 * tolerant of the idempotency answers (AlreadyExists on create, NotFound on delete). */
#ifndef GODIS_WRITE_H
#define GODIS_WRITE_H
#include "godis_reconcile.h"

/* GD_ERR_ALREADY_EXISTS when it exists (idempotent: callers treat it as done but wait
 * for the cache before the next step). */
gd_err gw_create(godis_env *e, const k8s_resource *r, const cJSON *obj);
/* PUT with obj's resourceVersion; GD_ERR_CONFLICT when the cache was stale. */
gd_err gw_update(godis_env *e, const k8s_resource *r, const cJSON *obj);
gd_err gw_update_status(godis_env *e, const k8s_resource *r, const cJSON *obj);
/* The same; on success *written is the object the API server returned (caller frees). */
gd_err gw_update_status_out(godis_env *e, const k8s_resource *r, const cJSON *obj,
                            cJSON **written);
/* Background propagation with a uid precondition; GD_OK also for NotFound. */
gd_err gw_delete(godis_env *e, const k8s_resource *r, const char *ns, const char *name,
                 const char *uid);
/* Maps an error of a write to a reconcile result (Conflict/NotFound: requeue at once). */
godis_result gw_result(gd_err err);

#endif
