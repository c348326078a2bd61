/* keymetrics.h — per-object metrics a reconciler publishes (issue 20.6): samples such as
 * godis_cluster_members{namespace="a",cluster="b"} 3, kept under the reconcile key of the
 * object they describe, so the runtime can drop every series of an object at once:
 *   - when the reconciler says the object is gone (rec_metrics_forget, reconciler.h);
 *   - when the key's shard leaves this worker (controller_revoke_finish): the new owner
 *     publishes the object's series under its own worker label, and a series left here
 *     would be a stale duplicate that never changes again.
 * The families (name, type, help) are the reconciler set's table (gd_reconciler_set
 * key_metrics); the worker renders them in its PONG text with the controller-runtime
 * families, and the manager serves them on /metrics. Thread-safe (one mutex): reconcile
 * threads write, the worker's main thread renders. */
#ifndef WORKER_KEYMETRICS_H
#define WORKER_KEYMETRICS_H
#include <stdbool.h>
#include "gd_metrics.h"

typedef struct keymetrics keymetrics;

keymetrics *keymetrics_new(void);
void        keymetrics_destroy(keymetrics **k);
/* Sets (add false) or adds to (add true) the sample family{labels} of key; labels are
 * preformatted (`namespace="a",cluster="b"`, escaped by the caller). */
void keymetrics_put(keymetrics *k, const char *key, const char *family, const char *labels,
                    double v, bool add);
/* Drops every sample of key. */
void keymetrics_forget(keymetrics *k, const char *key);
/* Drops every sample of the keys for which drop(ud, key) is true; returns how many keys. */
int  keymetrics_forget_if(keymetrics *k, bool (*drop)(void *ud, const char *key), void *ud);
/* Appends the samples of family (no # HELP/# TYPE: the caller writes those once). */
void keymetrics_render_family(keymetrics *k, const char *family, gd_sbuf *out);
/* Number of keys with samples (for tests). */
int  keymetrics_keys(keymetrics *k);

#endif
