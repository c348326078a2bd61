/* godis_storage.h — day-2 storage changes (issue 20.3, docs/reconcile.md rule 10).
 *
 * spec.storage.size made larger: every member's PVC is expanded in place (its
 * spec.resources.requests.storage raised to the spec's size) — only when the StorageClass of
 * each PVC to grow says allowVolumeExpansion: true (the API server's PersistentVolumeClaimResize
 * admission would refuse it otherwise, and on a cluster without that plugin the claim would
 * wait forever for a resizer). Kubernetes cannot shrink a PVC, so a smaller size is refused
 * as well. A refusal changes nothing (not one PVC is patched) and says why in the condition
 * StorageResized=False (reason ExpansionNotAllowed or ShrinkNotSupported) with a Warning
 * Event. While the storage system works (request raised, status.capacity not there yet) the
 * condition is False with reason Resizing and names the members still waiting; once every
 * member's capacity reached the spec's size it turns True (reason Resized). A cluster without
 * spec.storage.size (made before the field, or by the Go controller) gets no condition and
 * its PVCs are never touched.
 *
 * spec.storage.storageClassName changed: a volume cannot move between classes, so a member
 * whose PVC is of another class is replaced by a new member (new id, new PVC of the new class)
 * through the migration machinery of godis_plan.c, add before remove, one at a time and only
 * at full strength (godis_member.wrong_class). An unset storageClassName means "whatever the
 * PVCs have": it never moves anybody (the default class is the API server's business). */
#ifndef GODIS_STORAGE_H
#define GODIS_STORAGE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "godis_plan.h"
#include "godis_reconcile.h"

#define GODIS_COND_STORAGE "StorageResized"
#define GODIS_STORAGE_RECHECK_MS 2000   /* capacity changes wake the Godis controller only */
#define GODIS_STORAGE_REFUSED_RECHECK_MS 60000  /* StorageClasses are read, not watched */

/* One member's PVC against spec.storage.size. */
typedef enum {
    GODIS_VOL_OK = 0,     /* request and capacity are at least the spec's size */
    GODIS_VOL_GROW,       /* request below the spec's size: to expand (if its class allows) */
    GODIS_VOL_RESIZING,   /* request reached, status.capacity not yet */
    GODIS_VOL_SHRINK,     /* request above the spec's size: Kubernetes cannot shrink it */
    GODIS_VOL_UNBOUND,    /* to grow but not Bound yet: only bound claims can be expanded */
    GODIS_VOL_SKIP,       /* no PVC, being deleted, or of another class (it is replaced) */
} godis_vol_state;

/* pvc may be NULL. want: spec.storage.size (a quantity); want_class: the spec's class or NULL. */
godis_vol_state godis_volume_state(const cJSON *pvc, const cJSON *want, const char *want_class);

/* Whether a StorageClass (sc: the object, NULL when not found) lets a PVC of class name
 * `cls` grow; why says what stops it otherwise. */
bool godis_class_allows_expansion(const cJSON *sc, const char *cls, char *why, size_t cap);

/* One member's outcome, for the condition. */
typedef struct {
    int64_t id;
    godis_vol_state state;
    bool refused;              /* GROW, but its class does not allow expansion */
    char why[240];             /* refused: the class's reason */
    char have[40];             /* its request (SHRINK) or capacity (RESIZING) */
} godis_vol_report;

/* The StorageResized condition for n members' outcomes and the spec's size (text):
 * returns its status; *reason is static text; msg the message. Precedence: a shrink, then
 * a refused expansion (both: nothing is patched), then members still resizing. */
bool godis_storage_condition(const godis_vol_report *r, int n, const char *want,
                             const char **reason, char *msg, size_t cap);

/* True when member godis's PVC (from the cache) is not of spec.storage.storageClassName:
 * it must be replaced on a new volume. False when the spec names no class, the PVC is
 * missing or being deleted. */
bool godis_storage_wrong_class(godis_env *e, const cJSON *cluster, const char *ns,
                               const char *godis);

typedef struct {
    godis_env *e;
    const char *ns, *name;
    const cJSON **cluster;     /* replaced by the written object after a status write */
    const godis_view *v;
    int64_t wait_ms;           /* out: > 0: look again then (a resize under way, or refused
                                * by a class that may be edited: it is not watched) */
} godis_storage;

/* One reconcile's share: decides, patches PVCs (all or none), writes the condition when it
 * changed and emits the Events. Never takes the reconcile: the planner runs after it. */
void godis_storage_run(godis_storage *s);

#endif
