/* godis_plan_world.h — a small model of the API objects and of godis's Raft membership, for
 * the planner's tests (tests/unit/test_godis_plan*.c). apply() asks the planner for the next
 * step, performs it on the model as the executor would, and asserts the safety invariants
 * after every one: ids never reused, one membership change at a time, a member admitted only
 * while it runs and never into a configuration without a Ready majority, a member stopped
 * before its forget only where the others commit without it (with a vote to spare) and
 * forgotten only once its process is gone, forget before delete, a forgotten member never
 * running into the next step. A crash is modelled by what a step left behind: the next
 * apply() plans from the same state, as a new worker would. */
#ifndef GODIS_PLAN_WORLD_H
#define GODIS_PLAN_WORLD_H
#include <stdbool.h>
#include <stdint.h>
#include "godis_plan.h"

#define WORLD_IDS 128

typedef struct world {
    godis_view v;
    bool raft[WORLD_IDS];        /* godis membership as the members themselves know it */
    bool godis[WORLD_IDS];       /* Godis objects */
    bool deleting[WORLD_IDS];    /* the Godis has a deletionTimestamp (held by its finalizer) */
    bool finalizer[WORLD_IDS];
    bool running[WORLD_IDS];     /* its ReplicaSet wants a pod / a pod of it runs */
    int pod_gone_in[WORLD_IDS];  /* steps until a stopped member's pod object is gone */
    int ready_in[WORLD_IDS];     /* steps until a created Godis's pod is Ready (0 = Ready) */
    bool bad[WORLD_IDS];
    bool lost_volume[WORLD_IDS];
    bool no_node[WORLD_IDS];     /* no other node could take its replacement (godis_place.c) */
    bool unsched[WORLD_IDS];     /* its pod is Unschedulable (never Ready while set) */
    bool ever_used[WORLD_IDS];   /* ids handed out so far */
    bool ever_member[WORLD_IDS]; /* ids that were Raft members once */
    char cls[WORLD_IDS];         /* the StorageClass of its PVC (0: the default) */
    char want_cls;               /* the spec's StorageClass: a member on another one is
                                    replaced (wrong_class), its replacement made on this */
    /* Called with each planned step before the model performs it: a test's own checks of
     * the state the step was chosen in (NULL: none). */
    void (*check)(struct world *w, const godis_step *s);
    godis_step last;             /* the step apply() performed last */
    int max_raft;                /* the largest Raft membership so far */
    int scaled_in;               /* scale-ins finished */
    bool crash_after_meet;       /* the next meet gets +OK, and the worker dies before the
                                    record in status.members (then this is cleared) */
    int steps;
} world;

void world_new(world *w, int desired);
void sync_view(world *w);
int raft_size(world *w);
int raft_ready(world *w);
void set_members(world *w, const int64_t *ids, int n);
void cm_from(world *w, const int64_t *ids, int n);
void stop(world *w, int64_t id);
void start(world *w, int64_t id, int ready_in);
void delete_by_hand(world *w, int64_t id);
godis_step_kind apply(world *w);
void run_until_converged(world *w);
void assert_consistent(world *w, int want);

#endif
