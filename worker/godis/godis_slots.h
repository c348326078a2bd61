/* godis_slots.h — at most --max-concurrent-rollouts GodisClusters roll out a changed member
 * template at once, per worker (issue 20.7): an operator upgrade that changes the template
 * of many clusters replaces their members a few clusters at a time, not all at once.
 *
 * The limit is per worker, over the clusters of the shards it owns (its cache holds exactly
 * those), and each worker enforces it alone: the shards partition the clusters, so no two
 * workers ever count the same cluster and no coordination is needed. With W workers at most
 * W x N clusters roll at once.
 *
 * A cluster holds a slot from the status write that starts its first member (status.rollout,
 * the intent, written before anything is touched) until every member is on the revision
 * (status.rollout removed). The holders are read from the cache — so a restarted worker, or
 * the new owner of a moved shard, counts the rollouts that were in progress — plus the
 * slots this worker granted whose status write the cache does not show yet (reserved here
 * in memory, so two reconcile threads, or one right after the other, cannot both take the
 * last slot). Paused clusters and clusters being deleted hold none.
 *
 * A cluster that holds a slot may go on with its next member only while fewer than N holders
 * come before it by key: after a shard moved, or a restart with a lower limit, there can be
 * more holders than N; they then finish in key order instead of all waiting for each other.
 * A member in progress is always finished (godis_rollout.c never stops half-way). */
#ifndef GODIS_SLOTS_H
#define GODIS_SLOTS_H
#include <stdbool.h>
#include "godis_reconcile.h"

/* May cluster key ("ns/name") start replacing a member now? holding: its status shows a
 * rollout in progress. When a new slot is granted it is reserved for key. *holders gets the
 * number of other clusters holding a slot. Always true without a limit (0) or without a
 * way to list the cache (e->each NULL). */
bool godis_slot_may_roll(godis_env *e, const char *key, bool holding, int *holders);
/* key's rollout finished or never started, or the cluster is gone: drop its reservation. */
void godis_slot_release(const char *key);
/* Remembers whether key waits for a slot; true when it just started waiting (an Event then). */
bool godis_slot_note_waiting(const char *key, bool waiting);
/* The cluster is gone: forget everything about key. */
void godis_slot_forget(const char *key);
/* Forgets every reservation (tests). */
void godis_slots_reset(void);

#endif
