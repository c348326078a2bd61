/* godis_plan_world.c — see godis_plan_world.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "godis_plan_world.h"
void sync_view(world *w)
{
    godis_view *v = &w->v;
    v->nobserved = 0;
    for (int id = 1; id < WORLD_IDS; id++) {
        bool member = false;
        for (int i = 0; i < v->nmembers; i++) member |= v->members[i] == id;
        if (!w->godis[id] && !member) continue;
        godis_member *m = &v->observed[v->nobserved++];
        memset(m, 0, sizeof *m);
        m->id = id;
        m->godis_exists = w->godis[id];
        m->godis_deleting = w->deleting[id];
        m->finalizer = w->finalizer[id];
        m->running = w->running[id];
        m->pod_exists = w->running[id] || w->pod_gone_in[id] > 0;
        m->ready = w->running[id] && w->ready_in[id] == 0;
        m->node_bad = w->bad[id];
        m->volume_lost = w->lost_volume[id];
        m->no_node = w->no_node[id];
        m->unschedulable = w->unsched[id];
        m->wrong_class = w->godis[id] && w->cls[id] != w->want_cls;
        if (m->unschedulable) m->ready = false;
        m->blocked_why = m->no_node ? "cannot be moved: no other schedulable node (test)"
                         : m->unschedulable ? "cannot be scheduled: 0/3 nodes are available (test)" : NULL;
    }
}

int raft_size(world *w)
{
    int n = 0;
    for (int i = 0; i < WORLD_IDS; i++) n += w->raft[i];
    return n;
}

int raft_ready(world *w)
{
    int n = 0;
    for (int i = 0; i < WORLD_IDS; i++) n += w->raft[i] && w->running[i] && w->ready_in[i] == 0;
    return n;
}

/* Ready Raft members other than id. */
static int others_ready(world *w, int64_t id)
{
    return raft_ready(w) - (w->raft[id] && w->running[id] && w->ready_in[id] == 0);
}

void set_members(world *w, const int64_t *ids, int n)
{
    memcpy(w->v.members, ids, n * sizeof *ids);
    w->v.nmembers = n;
}

void cm_from(world *w, const int64_t *ids, int n)
{
    w->v.configmap_exists = true;
    w->v.configmap_parsed = true;
    memcpy(w->v.cm_ids, ids, n * sizeof *ids);
    w->v.cm_n = n;
}

static void remove_member(world *w, int64_t id)
{
    int j = 0;
    for (int i = 0; i < w->v.nmembers; i++)
        if (w->v.members[i] != id) w->v.members[j++] = w->v.members[i];
    w->v.nmembers = j;
}

void stop(world *w, int64_t id)
{
    if (w->running[id]) w->pod_gone_in[id] = 2;
    w->running[id] = false;
}

void start(world *w, int64_t id, int ready_in)
{
    w->godis[id] = true;
    w->finalizer[id] = true;
    w->running[id] = true;
    w->ready_in[id] = ready_in;
    w->cls[id] = w->want_cls;      /* its PVC is made from today's spec */
}

/* A Godis deleted by hand: held by its finalizer, its pod still runs. */
void delete_by_hand(world *w, int64_t id)
{
    w->deleting[id] = true;
}

/* Applies one step to the model; asserts the safety invariants. Returns the step kind. */
godis_step_kind apply(world *w)
{
    sync_view(w);
    godis_step s = godis_plan_next(&w->v);
    godis_view *v = &w->v;
    if (w->check) w->check(w, &s);
    w->last = s;
    int before = raft_size(w);
    switch (s.kind) {
    case GP_RECORD_INIT: {
        int64_t base = v->next_id > 0 ? v->next_id : 1;
        int64_t ids[GODIS_MAX_MEMBERS];
        for (int i = 0; i < v->desired; i++) {
            ids[i] = base + i;
            assert_false(w->ever_used[ids[i]]);
            w->ever_used[ids[i]] = true;
        }
        set_members(w, ids, v->desired);
        v->members_recorded = true;
        v->next_id = base + v->desired;
        v->phase = "Initializing";
        v->bootstrap_fresh = false;
        break;
    }
    case GP_ENSURE_CONFIGMAP: {
        int64_t ids[GODIS_MAX_MEMBERS];
        int n = godis_plan_configmap_ids(v, ids);
        cm_from(w, ids, n);
        break;
    }
    case GP_CREATE_GODIS:
        assert_false(w->godis[s.id]);
        start(w, s.id, 2);       /* a member being added: join=true, no Raft change */
        if (s.preferred) {
            w->raft[s.id] = true;   /* initial members form the cluster */
            w->ever_member[s.id] = true;
        }
        break;
    case GP_FINISH_INIT:
        v->phase = "Running";
        break;
    case GP_RECORD_SCALE_OUT:
        assert_false(w->ever_used[v->next_id]);   /* never reuse an id */
        w->ever_used[v->next_id] = true;
        v->scale_out_id = v->next_id++;
        v->phase = "Scaling";
        break;
    case GP_MEET: {
        assert_int_not_equal(s.via_id, s.id);
        assert_true(w->raft[s.via_id]);
        assert_int_equal(s.id, v->scale_out_id);
        /* the member it admits exists and runs (created with join=true, inert until now)
         * and is Ready; or it went bad, or the user no longer wants it (replicas lowered
         * while it could not start), and the others alone keep the bigger cluster's quorum
         * (checked below) until the scale-in forgets it */
        bool unwanted = v->desired <= v->nmembers;
        for (int i = 0; i < v->nobserved && unwanted; i++)
            unwanted = !(v->observed[i].node_bad || v->observed[i].reschedule ||
                         v->observed[i].volume_lost || v->observed[i].wrong_class);
        assert_true(w->godis[s.id] && (w->running[s.id] || unwanted));
        if (w->ready_in[s.id] > 0 || !w->running[s.id])
            assert_true(w->bad[s.id] || w->lost_volume[s.id] || unwanted);
        /* meet commits in the current Raft membership (a re-sent one, after a +OK that was
         * never recorded, in the one that holds the newcomer already) */
        assert_true(raft_ready(w) >= raft_size(w) / 2 + 1);
        w->raft[s.id] = true;
        w->ever_member[s.id] = true;
        /* ...and never leaves a configuration without a Ready majority */
        assert_true(raft_ready(w) >= raft_size(w) / 2 + 1);
        if (w->crash_after_meet) {      /* +OK, then the worker died: nothing recorded */
            w->crash_after_meet = false;
            break;
        }
        v->members[v->nmembers++] = v->scale_out_id;   /* the executor records it at once */
        v->scale_out_id = 0;
        v->phase = "Running";
        break;
    }
    case GP_FINISH_SCALE_OUT:
        v->members[v->nmembers++] = v->scale_out_id;
        v->scale_out_id = 0;
        v->phase = "Running";
        break;
    case GP_RECORD_SCALE_IN:
        v->scale_in_id = s.id;
        v->phase = "Scaling";
        break;
    case GP_FORGET: {
        assert_int_not_equal(s.via_id, s.id);
        /* the forget commits in the current configuration, the victim voting if it runs */
        assert_true(raft_ready(w) >= raft_size(w) / 2 + 1);
        /* where the others commit it alone with a vote to spare, the victim was stopped
         * first and is gone */
        if (others_ready(w, s.id) >= raft_size(w) / 2 + 2)
            assert_false(w->running[s.id] || w->pod_gone_in[s.id] > 0);
        w->raft[s.id] = false;
        stop(w, s.id);             /* the executor stops it right after +OK */
        v->forget_acked = true;    /* ...then rewrites the ConfigMap, as the executor does */
        int64_t ids[GODIS_MAX_MEMBERS];
        int n = godis_plan_configmap_ids(v, ids);
        v->forget_acked = false;
        cm_from(w, ids, n);
        for (int i = 0; i < n; i++) assert_int_not_equal(ids[i], s.id);
        break;
    }
    case GP_STOP_MEMBER:
        /* stopped while still a member only if the others commit its forget without it,
         * with a vote to spare */
        if (w->raft[s.id]) assert_true(others_ready(w, s.id) >= raft_size(w) / 2 + 2);
        stop(w, s.id);
        break;
    case GP_DELETE_GODIS:
        assert_false(w->raft[s.id]);   /* forget before delete */
        assert_false(w->running[s.id]);
        assert_int_equal(w->pod_gone_in[s.id], 0);
        w->godis[s.id] = false;
        w->finalizer[s.id] = false;
        w->deleting[s.id] = false;
        break;
    case GP_FINISH_SCALE_IN:
        remove_member(w, v->scale_in_id);
        v->scale_in_id = 0;
        v->phase = "Running";
        w->scaled_in++;
        break;
    case GP_ADOPT:
    case GP_NOTHING:
    case GP_WAIT:
    case GP_ALL_LOST:
        break;
    }
    int after = raft_size(w);
    assert_true(after - before <= 1 && before - after <= 1);   /* one change at a time */
    if (after > w->max_raft) w->max_raft = after;
    for (int i = 1; i < WORLD_IDS; i++) {
        /* a forgotten member never runs into the next step */
        if (w->ever_member[i] && !w->raft[i]) assert_false(w->running[i]);
        if (w->godis[i] && w->ready_in[i] > 0) w->ready_in[i]--;
        if (w->pod_gone_in[i] > 0) w->pod_gone_in[i]--;
    }
    w->steps++;
    return s.kind;
}

void run_until_converged(world *w)
{
    int quiet = 0;
    for (int i = 0; i < 500 && quiet < 5; i++) {
        godis_step_kind k = apply(w);
        quiet = (k == GP_NOTHING) ? quiet + 1 : 0;
    }
    assert_int_equal(quiet, 5);
}

void assert_consistent(world *w, int want)
{
    godis_view *v = &w->v;
    assert_int_equal(v->nmembers, want);
    assert_int_equal(raft_size(w), want);
    assert_int_equal(v->cm_n, want);
    for (int i = 0; i < v->nmembers; i++) {
        int64_t id = v->members[i];
        assert_true(w->raft[id]);
        assert_true(w->godis[id]);
        bool in_cm = false;
        for (int j = 0; j < v->cm_n; j++) in_cm |= v->cm_ids[j] == id;
        assert_true(in_cm);
    }
    int godis_count = 0, running = 0;
    for (int i = 0; i < WORLD_IDS; i++) {
        godis_count += w->godis[i];
        running += w->running[i] || w->pod_gone_in[i] > 0;
    }
    assert_int_equal(godis_count, want);
    assert_int_equal(running, want);
}

void world_new(world *w, int desired)
{
    memset(w, 0, sizeof *w);
    w->v.desired = desired;
    w->v.phase = "";
}

