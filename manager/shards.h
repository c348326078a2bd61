/* shards.h — which worker owns which of the GD_NSHARDS shards (a pure state machine).
 *
 * The one invariant: a shard is owned by at most one worker at a time, *as the workers
 * see it*. So a shard changes hands in two steps: REVOKE to the old owner, then ASSIGN to
 * the new one only after the old owner answered REVOKED (its in-flight keys are done), or
 * after the old owner's process was reaped (it cannot be running anything).
 *
 * Target assignment: the live workers (said HELLO, not retiring), ordered by index, get
 * quotas 256/n (the first 256%n one more). A shard stays with its owner while the owner is
 * under quota (sticky: few moves); the rest are revoked and then dealt, in shard order, to
 * the workers under quota. Deterministic for a given state.
 *
 * Pending keys (queued but not yet processed, handed back in REVOKED) are split by shard
 * and travel with the shard to its next owner in ASSIGN. */
#ifndef MGR_SHARDS_H
#define MGR_SHARDS_H
#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "gd_err.h"
#include "gd_proto.h"

#define MGR_SHARDS_MAX_WORKERS 64

typedef struct {
    int owner;              /* worker index, -1 none */
    int last_owner;         /* previous owner, to count moves */
    bool revoking;          /* REVOKE sent, REVOKED not yet received */
    cJSON *pending;         /* {"controller":["key",...]} handed back, or NULL */
} mgr_shard_slot;

typedef struct {
    bool live;              /* HELLO received, process alive */
    bool retiring;          /* to be stopped: no new shards, owned ones revoked */
} mgr_shard_worker;

typedef enum { MGR_SHARDS_ASSIGN, MGR_SHARDS_REVOKE } mgr_shards_verb;

typedef struct {
    mgr_shards_verb verb;
    int worker;
    int n;
    int shards[GD_NSHARDS];
    char *pending_json;     /* ASSIGN: merged pending keys ("{}" when none), malloc'd */
} mgr_shards_action;

typedef struct {
    mgr_shard_slot slot[GD_NSHARDS];
    mgr_shard_worker w[MGR_SHARDS_MAX_WORKERS];
    bool frozen;            /* not leading: assign nothing */
    uint64_t moves;         /* shards that changed owner */
    uint64_t assigns, revokes;
} mgr_shards;

void mgr_shards_init(mgr_shards *s);
void mgr_shards_cleanup(mgr_shards *s);       /* frees pending keys */

/* Events. Out-of-range worker indexes are GD_ERR_ARG. */
gd_err mgr_shards_worker_up(mgr_shards *s, int w);
gd_err mgr_shards_worker_retire(mgr_shards *s, int w);
/* The worker is being stopped (STOP sent, fencing, missed heartbeats): no new shards,
 * no REVOKE; its shards stay owned until mgr_shards_worker_gone. */
gd_err mgr_shards_worker_stopping(mgr_shards *s, int w);
/* The worker's process was reaped: its shards are free at once (pending keys are lost;
 * the next owner's full sync of the shard re-enqueues every key). */
gd_err mgr_shards_worker_gone(mgr_shards *s, int w);
/* REVOKED from worker w. Shards it does not own (or not being revoked from it) are
 * ignored; pending_json may be NULL or "{}". GD_ERR_PARSE on malformed pending JSON (the
 * shards are released all the same). */
gd_err mgr_shards_revoked(mgr_shards *s, int w, const int *shards, int n, const char *pending_json);
void   mgr_shards_freeze(mgr_shards *s, bool frozen);

/* Computes the next messages and applies them to the state (ASSIGN sets the owner,
 * REVOKE marks revoking). At most one ASSIGN and one REVOKE per worker. Returns the count
 * written to out (cap 2 × MGR_SHARDS_MAX_WORKERS suffices). Free with mgr_shards_actions_free. */
int  mgr_shards_plan(mgr_shards *s, mgr_shards_action *out, int cap);
void mgr_shards_actions_free(mgr_shards_action *a, int n);

int  mgr_shards_owned_by(const mgr_shards *s, int w, int *out);   /* out may be NULL */
int  mgr_shards_unowned(const mgr_shards *s);

/* "3,17,200" → shards; GD_ERR_PARSE on anything but comma-separated numbers < GD_NSHARDS. */
gd_err mgr_shards_parse_list(const char *txt, int *out, int cap, int *n);
/* shards → "3,17,200" (cap ≥ 4 × n + 1). */
void   mgr_shards_format_list(const int *shards, int n, char *buf, size_t cap);

#endif
