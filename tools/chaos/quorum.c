/* quorum.c — a quorum of every cluster's members answers, sampled through RESP every 2 s:
 * a `set` through one of its members succeeds only when a leader hears a majority (godis
 * answers "-propose canceled by context" otherwise), so a successful write is the proof.
 * A cluster is not sampled while it is being created (no members recorded, or phase
 * Initializing). A cluster that cannot be written is a violation only when the members no
 * fault took down have been a majority for QUORUM_GRACE_MS (an election after a membership
 * change or a member's return takes a moment) without a write going through: a fault that
 * kills two members of three takes the quorum away by itself; the operator must never be
 * the one who does.
 * Which configuration Raft is in is not always known: the scale-out member gets its Godis
 * and pod before its `cluster meet`, and the meet is recorded in status.members only after
 * its +OK, so until then the cluster must have a quorum both with and without it; and the
 * member being forgotten counts until its forget commits, which a node fault can hold up
 * (c03 7 -> 1 reached {1, 9} as member 9's node was killed: the forget of 9 needs 9's vote).
 * A member that has not run yet since its `cluster meet` is excused while it has no pod
 * IP — also after the operator recorded it in status.members: creating its pod is
 * kube-controller-manager's part (after back-to-back kube-apiserver restarts its pod
 * informer was refused by RBAC and backed off: pods came 75 s after their ReplicaSets), and
 * so is a member whose pod a fault deleted, until a replacement pod exists and the
 * scheduler has bound it (or found no node for it): kube-controller-manager and
 * kube-scheduler recovering from kube-apiserver restarts took up to 3 min for that. */
#include "chaos.h"
#include "chaos_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gd_json.h"
#include "gd_time.h"
#include "godis_client.h"

#define SAMPLE_MS 2000
#define QUORUM_GRACE_MS 15000

static bool has_run(const ch_ran_set *r, int64_t id)
{
    return !r || id >= CH_RAN_IDS || id < 1 || (r->w[id / 64] >> (id % 64)) & 1;
}

void ch_mark_run(ch_ran_set *r, int64_t id)
{
    if (id >= 1 && id < CH_RAN_IDS) r->w[id / 64] |= (uint64_t)1 << (id % 64);
}

bool ch_excused(chaos *x, int cluster, const ch_member *m)
{
    bool yes = false;
    pthread_mutex_lock(&x->mu);
    int64_t now = ch_now(x);
    for (int i = 0; i < x->nhits && !yes; i++) {
        const ch_hit *h = &x->hits[i];
        bool pod_gone = h->until_pod >= now && !m->has_pod;
        if (h->until < now && !pod_gone) continue;
        yes = (h->cluster == cluster && (h->id == 0 || h->id == m->id)) ||
              (h->node[0] && !strcmp(h->node, m->node));
    }
    pthread_mutex_unlock(&x->mu);
    /* After `cluster meet` the new member counts in the Raft quorum before its pod runs
     * (1 -> 2 members cannot write until member 2 is up): that is godis and the control
     * plane creating its pod, not the operator. */
    return yes || (m->joining && !m->ip[0]);
}

static bool writable(const ch_member *m, int64_t seq)
{
    godis_opts o = {.connect_timeout_ms = 500, .reply_timeout_ms = 2500, .loopback_only = 1};
    godis_client *c = godis_client_new(m->ip, 6379, &o);
    if (!c) return false;
    char v[32];
    snprintf(v, sizeof v, "v%lld", (long long)seq);
    bool ok = godis_set(c, "chaos-quorum-probe", v) == GD_OK;   /* not starting with * $ + - : */
    godis_client_destroy(&c);
    return ok;
}

/* Its pod's IP and node; without a pod, the node its pods are pinned to (the Godis's
 * status.volumeNode, where its data is): a fault on that node keeps it down too. */
static void pod_of(const cJSON *pods, const cJSON *godises, const char *cluster, ch_member *e)
{
    char godis[80];
    snprintf(godis, sizeof godis, "%s-%lld", cluster, (long long)e->id);
    const cJSON *p;
    cJSON_ArrayForEach(p, gd_json_path(godises, "items"))
        if (!strcmp(gd_meta_name(p), godis))
            snprintf(e->node, sizeof e->node, "%s", gd_json_str_or(p, "status.volumeNode", ""));
    cJSON_ArrayForEach(p, gd_json_path(pods, "items")) {
        const char *nn = gd_meta_label(p, "node-name");
        if (gd_meta_deleting(p) || !nn || strcmp(nn, godis)) continue;
        /* a replacement counts once the scheduler has had its say: bound to a node, or
         * judged unschedulable (then placing it is the operator's and the faults' business) */
        const cJSON *sched = gd_meta_condition(p, "PodScheduled");
        e->has_pod = *gd_json_str_or(p, "spec.nodeName", "") ||
                     (sched && !strcmp(gd_json_str_or(sched, "status", ""), "False"));
        snprintf(e->ip, sizeof e->ip, "%s", gd_json_str_or(p, "status.podIP", ""));
        snprintf(e->node, sizeof e->node, "%s", gd_json_str_or(p, "spec.nodeName", ""));
    }
}

/* The members of one cluster as Raft may count them — status.members, the one being
 * added, and the one being forgotten (flagged: its forget may or may not have committed)
 * — with their pods' IPs and nodes; a recorded member that has not run yet (ran: NULL when
 * unknown) is still joining. */
int ch_members_of(const cJSON *gc, const cJSON *pods, const cJSON *godises, const ch_ran_set *ran,
                  ch_member *out)
{
    int n = 0;
    int64_t leaving = gd_json_int_or(gc, "status.scaleInID", 0);
    int64_t joining = gd_json_int_or(gc, "status.scaleOutID", 0);
    bool recorded = false;          /* the scale-out member's meet is in status.members */
    bool leaver = false;            /* the member being forgotten is still in status.members */
    const cJSON *m;
    cJSON_ArrayForEach(m, gd_json_path(gc, "status.members")) {
        if (n >= CH_MAX_MEMBERS || !cJSON_IsNumber(m) || m->valuedouble < 1 || m->valuedouble >= 2147483648.0)
            continue;
        int64_t id = (int64_t)m->valuedouble;
        recorded = recorded || id == joining;
        leaver = leaver || (id == leaving && id != joining);
        if (id == leaving || id == joining) continue;
        out[n] = (ch_member){.id = id, .joining = !has_run(ran, id)};
        pod_of(pods, godises, gd_meta_name(gc), &out[n++]);
    }
    if (n > 0 && joining > 0 && n < CH_MAX_MEMBERS) {
        out[n] = (ch_member){.id = joining, .joining = true, .unconfirmed = !recorded};
        pod_of(pods, godises, gd_meta_name(gc), &out[n++]);
    }
    if (n > 0 && leaver && n < CH_MAX_MEMBERS) {
        out[n] = (ch_member){.id = leaving, .leaving = true};
        pod_of(pods, godises, gd_meta_name(gc), &out[n++]);
    }
    return n;
}

bool ch_quorum_expected(chaos *x, int cluster, const ch_member *ms, int n)
{
    int voters = 0, voters_up = 0;
    bool newcomer = false, newcomer_up = false, leaver = false, leaver_up = false;
    for (int i = 0; i < n; i++) {
        bool up = !ch_excused(x, cluster, &ms[i]);
        if (ms[i].leaving) {
            leaver = true;
            leaver_up = up;
        } else if (ms[i].unconfirmed) {
            newcomer = true;
            newcomer_up = up;
        } else {
            voters++;
            voters_up += up;
        }
    }
    /* every configuration Raft may be in: the newcomer in or not yet, the leaver still in
     * or already out */
    for (int in_new = 0; in_new <= newcomer; in_new++)
        for (int in_old = 0; in_old <= leaver; in_old++) {
            int size = voters + in_new + in_old;
            int up = voters_up + (in_new && newcomer_up) + (in_old && leaver_up);
            if (size > 0 && up < size / 2 + 1) return false;
        }
    return true;
}

void *ch_quorum_thread(void *arg)
{
    chaos *x = arg;
    k8s_client *c = ch_client(x);
    int64_t bad_since[CH_MAX_CLUSTERS] = {0};
    bool reported[CH_MAX_CLUSTERS] = {false};
    static ch_ran_set ran[CH_MAX_CLUSTERS];        /* one quorum thread per run */
    int64_t seq = 0;
    while (c && !atomic_load(&x->stop)) {
        int64_t round = gd_mono_ms();
        cJSON *gcs = NULL, *pods = NULL, *gds = NULL;
        if (k8s_list(c, &K8S_RES_GODISCLUSTERS, x->ns, NULL, &gcs, NULL) != GD_OK ||
            k8s_list(c, &K8S_RES_PODS, x->ns, NULL, &pods, NULL) != GD_OK ||
            k8s_list(c, &K8S_RES_GODISES, x->ns, NULL, &gds, NULL) != GD_OK) {
            cJSON_Delete(gcs);              /* the API server is restarting: sample later */
            cJSON_Delete(pods);
            gd_sleep_ms(500);
            continue;
        }
        const cJSON *gc;
        cJSON_ArrayForEach(gc, gd_json_path(gcs, "items")) {
            int ci = ch_cluster_index(x, gd_meta_name(gc));
            const char *phase = gd_json_str_or(gc, "status.status", "");
            ch_member ms[CH_MAX_MEMBERS];
            int n = ci < 0 ? 0 : ch_members_of(gc, pods, gds, &ran[ci], ms);
            for (int i = 0; i < n; i++)
                if (ms[i].ip[0]) ch_mark_run(&ran[ci], ms[i].id);
            if (ci < 0 || n == 0 || !*phase || !strcmp(phase, "Initializing")) {
                if (ci >= 0) bad_since[ci] = 0;
                continue;
            }
            ch_check(x, I_QUORUM);
            bool ok = false;
            int down = 0;
            for (int i = 0; i < n && !ok; i++) ok = ms[i].ip[0] && writable(&ms[i], ++seq);
            if (ok) {
                bad_since[ci] = 0;
                reported[ci] = false;
                continue;
            }
            for (int i = 0; i < n; i++) down += ch_excused(x, ci, &ms[i]);
            int64_t now = ch_now(x);
            /* the grace runs from when the cluster should have a quorum again: a member
             * back from a fault needs its moment (start, election) like any other */
            if (!bad_since[ci] || !ch_quorum_expected(x, ci, ms, n)) bad_since[ci] = now;
            if (now - bad_since[ci] >= QUORUM_GRACE_MS && !reported[ci]) {
                char list[400] = "";
                size_t o = 0;
                for (int i = 0; i < n && o < sizeof list; i++)
                    o += (size_t)snprintf(list + o, sizeof list - o, "%s%lld@%s", i ? "," : "",
                                          (long long)ms[i].id, ms[i].ip[0] ? ms[i].ip : "no-pod");
                ch_violation(x, I_QUORUM, "GodisCluster %s/%s (phase %s): no write through any "
                             "of its members [%s] for %.0f s, though only %d of %d were taken "
                             "down by faults", x->ns, gd_meta_name(gc), phase, list,
                             (double)(now - bad_since[ci]) / 1000, down, n);
                reported[ci] = true;
            }
        }
        cJSON_Delete(gcs);
        cJSON_Delete(pods);
        cJSON_Delete(gds);
        int64_t left = SAMPLE_MS - (gd_mono_ms() - round);
        if (left > 0) gd_sleep_ms(left);
    }
    k8s_client_destroy(&c);
    return NULL;
}
