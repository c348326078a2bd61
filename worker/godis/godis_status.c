/* godis_status.c — see godis_status.h. */
#include "godis_status.h"
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "godis_write.h"
#include "gd_json.h"
#include "gd_time.h"

#define GODIS_STEP_MSG_MAX 600   /* "member <id> " + a blocked member's why (godis_place.h) */

static void now_rfc3339(char out[32])
{
    gd_format_rfc3339_micro(gd_wall_ms() * 1000, out);
    out[19] = 'Z';
    out[20] = '\0';
}

void godis_set_condition(cJSON *status, const char *type, bool value, const char *reason,
                         const char *message, int64_t generation)
{
    cJSON *conds = cJSON_GetObjectItemCaseSensitive(status, "conditions");
    if (!cJSON_IsArray(conds)) {
        cJSON_DeleteItemFromObjectCaseSensitive(status, "conditions");
        conds = cJSON_AddArrayToObject(status, "conditions");
    }
    const char *want = value ? "True" : "False";
    char ltt[32];
    now_rfc3339(ltt);
    cJSON *c, *old = NULL;
    int idx = 0, found = -1;
    cJSON_ArrayForEach(c, conds) {
        if (strcmp(gd_json_str_or(c, "type", ""), type) == 0) { old = c; found = idx; }
        idx++;
    }
    if (old && strcmp(gd_json_str_or(old, "status", ""), want) == 0)
        snprintf(ltt, sizeof ltt, "%s", gd_json_str_or(old, "lastTransitionTime", ltt));
    cJSON *n = cJSON_CreateObject();
    cJSON_AddStringToObject(n, "type", type);
    cJSON_AddStringToObject(n, "status", want);
    cJSON_AddStringToObject(n, "reason", reason);
    cJSON_AddStringToObject(n, "message", message);
    cJSON_AddStringToObject(n, "lastTransitionTime", ltt);
    cJSON_AddNumberToObject(n, "observedGeneration", (double)generation);
    if (found >= 0) cJSON_ReplaceItemInArray(conds, found, n);
    else cJSON_AddItemToArray(conds, n);
}

/* Whether status has condition `type` with the given reason (and message, unless NULL). */
static bool condition_is(const cJSON *status, const char *type, const char *reason,
                         const char *message)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(status, "conditions"))
        if (strcmp(gd_json_str_or(c, "type", ""), type) == 0)
            return strcmp(gd_json_str_or(c, "reason", ""), reason) == 0 &&
                   (!message || strcmp(gd_json_str_or(c, "message", ""), message) == 0);
    return false;
}

static void set_int(cJSON *status, const char *key, int64_t v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(status, key);
    cJSON_AddNumberToObject(status, key, (double)v);
}

static void set_members(cJSON *status, const int64_t *ids, int n)
{
    cJSON_DeleteItemFromObjectCaseSensitive(status, "members");
    cJSON *arr = cJSON_AddArrayToObject(status, "members");
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(arr, cJSON_CreateNumber((double)ids[i]));
    set_int(status, "replicas", n);
}

static int ready_count(const godis_view *v, const int64_t *ids, int n)
{
    int r = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < v->nobserved; j++)
            if (v->observed[j].id == ids[i] && v->observed[j].ready) r++;
    return r;
}

/* Applies the step's recorded change to the status object. Returns an Event reason and
 * message for membership intents (NULL reason: no Event). */
static const char *apply_step(cJSON *st, const godis_view *v, const godis_step *s,
                              int64_t *members, int *n, char *msg, size_t cap)
{
    memcpy(members, v->members, sizeof(int64_t) * v->nmembers);
    *n = v->nmembers;
    const char *phase = v->phase && *v->phase ? v->phase : "Running";
    const char *reason = NULL;
    switch (s->kind) {
    case GP_RECORD_INIT: {
        int64_t base = v->next_id > 0 ? v->next_id : 1;
        *n = v->desired;
        for (int i = 0; i < *n; i++) members[i] = base + i;
        set_int(st, "nextID", base + *n);
        if (v->initial_replicas <= 0) set_int(st, "initialReplicas", *n);
        set_int(st, "scaleOutID", 0);
        set_int(st, "scaleInID", 0);
        phase = "Initializing";
        reason = s->reason;
        snprintf(msg, cap, "initialising %d members, ids %lld..%lld", *n, (long long)base,
                 (long long)(base + *n - 1));
        break;
    }
    case GP_ADOPT: {
        *n = 0;
        for (int i = 0; i < v->nobserved && *n < GODIS_MAX_MEMBERS; i++)
            if (v->observed[i].godis_exists && !v->observed[i].godis_deleting &&
                v->observed[i].id != v->scale_out_id)
                members[(*n)++] = v->observed[i].id;
        int64_t next = v->next_id > v->max_seen_id ? v->next_id : v->max_seen_id + 1;
        set_int(st, "nextID", next);
        reason = "Adopted";
        snprintf(msg, cap, "adopted %d existing members; next id %lld", *n, (long long)next);
        break;
    }
    case GP_FINISH_INIT:
        /* No Event: Initializing said it; this was one more request per new cluster. */
        phase = "Running";
        break;
    case GP_RECORD_SCALE_OUT:
        set_int(st, "scaleOutID", s->id);
        set_int(st, "nextID", s->id + 1);
        phase = "Scaling";
        reason = s->reason;
        snprintf(msg, cap, "adding member %lld (%d -> %d members)", (long long)s->id, *n, *n + 1);
        break;
    case GP_FINISH_SCALE_OUT: {
        bool present = false;
        for (int i = 0; i < *n; i++) present |= members[i] == s->id;
        if (!present && *n < GODIS_MAX_MEMBERS) members[(*n)++] = s->id;
        set_int(st, "scaleOutID", 0);
        phase = "Running";
        break;
    }
    case GP_RECORD_SCALE_IN:
        set_int(st, "scaleInID", s->id);
        phase = "Scaling";
        reason = s->reason;
        snprintf(msg, cap, "removing member %lld (%d -> %d members): %s", (long long)s->id, *n,
                 *n - 1, s->why);
        break;
    case GP_FINISH_SCALE_IN: {
        int j = 0;
        for (int i = 0; i < *n; i++)
            if (members[i] != s->id) members[j++] = members[i];
        *n = j;
        set_int(st, "scaleInID", 0);
        phase = "Running";
        break;
    }
    default:
        break;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(st, "status");
    cJSON_AddStringToObject(st, "status", phase);
    return reason;
}

/* Ready=True means the cluster takes writes: every member Ready and a write through every
 * member succeeded (v->writable) — pods turn Ready seconds before godis has a leader. */
static void set_conditions(cJSON *st, const godis_view *v, const godis_step *s,
                           const char *pmsg, int n, int ready, int64_t gen)
{
    const char *phase = gd_json_str_or(st, "status", "");
    bool lost = s->kind == GP_ALL_LOST;
    bool busy = strcmp(phase, "Running") != 0 || n != v->desired;
    char m[200];
    snprintf(m, sizeof m, "%d/%d members Ready, %d desired", ready, n, v->desired);
    bool serving = !busy && !lost && ready == n && n > 0;
    bool ready_ok = serving && v->writable;
    if (serving && !v->writable)
        snprintf(m, sizeof m, "%d/%d members Ready, but a write through a member did not succeed yet", ready, n);
    godis_set_condition(st, "Ready", ready_ok,
                        ready_ok ? "AllMembersReady" : serving ? "NotWritable" : s->reason, m, gen);
    bool progressing = !lost && (busy || s->kind == GP_WAIT);
    godis_set_condition(st, "Progressing", progressing, progressing ? s->reason : lost ? s->reason : "Converged",
                        pmsg, gen);
    bool degraded = lost || ready < n || (v->paused && n != v->desired);
    const char *why = lost ? s->reason : v->paused && ready == n ? "Paused" : "MembersNotReady";
    godis_set_condition(st, "Degraded", degraded, degraded ? why : "AsExpected", lost ? s->why : m, gen);
}

/* ---- progress writes ---- */

/* When this worker last wrote each cluster's status (by uid). Open addressing over a window
 * of STATUS_MEMO_PROBE slots: one slot per uid, as it was, let clusters whose uids hashed
 * alike evict each other, and each of them then wrote every count at once (100 x 3 converge:
 * 8 clusters with 6-8 status writes instead of 2; 300 x 3: 4.75 a cluster). An entry older
 * than GODIS_PROGRESS_WRITE_MS says nothing any more and is free; a window full of recent
 * ones (thousands of clusters written within the interval) gives up its oldest: a write
 * too many, never one lost. */
#define STATUS_MEMO 4096
#define STATUS_MEMO_PROBE 32
static struct {
    char uid[40];                       /* a uid is 36 characters */
    int64_t at_ms;
} status_memo[STATUS_MEMO];
static pthread_mutex_t status_memo_mu = PTHREAD_MUTEX_INITIALIZER;

static unsigned status_memo_slot(const char *uid)
{
    unsigned h = 2166136261u;
    for (const char *p = uid; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
    return h % STATUS_MEMO;
}

/* uid's slot in its window, or -1; call with the lock held. */
static int status_memo_find(const char *uid)
{
    unsigned first = status_memo_slot(uid);
    for (unsigned j = 0; j < STATUS_MEMO_PROBE; j++) {
        unsigned i = (first + j) % STATUS_MEMO;
        if (!strcmp(status_memo[i].uid, uid)) return (int)i;
    }
    return -1;
}

void godis_status_memo_note(const char *uid, int64_t now)
{
    if (!uid || !*uid || strlen(uid) >= sizeof status_memo[0].uid) return;
    pthread_mutex_lock(&status_memo_mu);
    int at = status_memo_find(uid);
    if (at < 0) {
        unsigned first = status_memo_slot(uid), oldest = first;
        for (unsigned j = 0; j < STATUS_MEMO_PROBE && at < 0; j++) {
            unsigned i = (first + j) % STATUS_MEMO;
            if (!status_memo[i].uid[0] || status_memo[i].at_ms + GODIS_PROGRESS_WRITE_MS <= now)
                at = (int)i;
            else if (status_memo[i].at_ms < status_memo[oldest].at_ms)
                oldest = i;
        }
        if (at < 0) at = (int)oldest;
        snprintf(status_memo[at].uid, sizeof status_memo[at].uid, "%s", uid);
    }
    status_memo[at].at_ms = now;
    pthread_mutex_unlock(&status_memo_mu);
}

int64_t godis_status_memo_due_in(const char *uid, int64_t now)
{
    if (!uid || !*uid) return 0;
    pthread_mutex_lock(&status_memo_mu);
    int at = status_memo_find(uid);
    int64_t left = at < 0 ? 0 : status_memo[at].at_ms + GODIS_PROGRESS_WRITE_MS - now;
    pthread_mutex_unlock(&status_memo_mu);
    return left > 0 ? left : 0;
}

void godis_status_memo_reset(void)
{
    pthread_mutex_lock(&status_memo_mu);
    memset(status_memo, 0, sizeof status_memo);
    pthread_mutex_unlock(&status_memo_mu);
}

/* The status without what only reports progress: the counts, the revisions and the
 * conditions' messages and reasons. What is left is what a write must not wait for: the
 * recorded membership and intents, the phase, observedGeneration, the rollout, and each
 * condition's True/False. */
static cJSON *decisive(const cJSON *status)
{
    cJSON *d = cJSON_Duplicate(status, 1);
    static const char *progress[] = {"readyReplicas", "updatedReplicas", "updateRevision",
                                     "currentRevision"};
    for (size_t i = 0; i < sizeof progress / sizeof progress[0]; i++)
        cJSON_DeleteItemFromObjectCaseSensitive(d, progress[i]);
    cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(d, "conditions")) {
        cJSON_DeleteItemFromObjectCaseSensitive(c, "message");
        cJSON_DeleteItemFromObjectCaseSensitive(c, "reason");
    }
    return d;
}

static bool progress_only(const cJSON *before, const cJSON *after)
{
    cJSON *a = decisive(before), *b = decisive(after);
    bool same = cJSON_Compare(a, b, 1);
    cJSON_Delete(a);
    cJSON_Delete(b);
    return same;
}

/* The bootstrap's last record (FINISH_INIT: phase Running, every initial member created)
 * waits, like a progress write, for the members to serve, so that one write says both: it
 * was a write of its own 0.3 s after the intent's, then a third once the members were
 * Ready (100 x 3 converge: 3.3 status writes per cluster). Nothing waits on it: the
 * children exist whatever the phase says, a spec change meanwhile (a new generation)
 * writes it at once, and so does GODIS_PROGRESS_WRITE_MS after the intent's write, so a
 * cluster whose members never turn Ready still reads Running, as before. An initial member
 * deleted meanwhile writes it at once too (reason MemberDeleted, godis_plan.c): from then on
 * the member is a lost one, replaced under a new id, never re-created under its own. */
static bool init_waits_for_ready(const cJSON *base, const cJSON *st, const godis_step *s, int64_t gen)
{
    return s->kind == GP_FINISH_INIT && !s->at_once &&
           !condition_is(st, "Ready", "AllMembersReady", NULL) &&
           gd_json_int_or(base, "observedGeneration", -1) == gen;
}

godis_result godis_status_step(godis_env *e, const cJSON *cluster, const godis_view *v,
                               const godis_step *s, cJSON **written)
{
    cJSON *obj = cJSON_Duplicate(cluster, 1);
    cJSON *st = cJSON_GetObjectItemCaseSensitive(obj, "status");
    if (!cJSON_IsObject(st)) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
        st = cJSON_AddObjectToObject(obj, "status");
    }
    cJSON *before = cJSON_Duplicate(st, 1);
    int64_t members[GODIS_MAX_MEMBERS];
    int n = 0;
    char msg[GODIS_STEP_MSG_MAX] = "";
    const char *reason = apply_step(st, v, s, members, &n, msg, sizeof msg);
    set_members(st, members, n);
    int ready = ready_count(v, members, n);
    set_int(st, "readyReplicas", ready);
    int64_t gen = gd_meta_generation(cluster);
    set_int(st, "observedGeneration", gen);
    /* A blocked member is named in the condition the webhook quotes to kubectl drain. */
    char pmsg[GODIS_STEP_MSG_MAX];
    if (s->warn) snprintf(pmsg, sizeof pmsg, "member %lld %s", (long long)s->id, s->why);
    else snprintf(pmsg, sizeof pmsg, "%s", s->why);
    set_conditions(st, v, s, pmsg, n, ready, gen);
    bool settled = s->kind == GP_NOTHING || s->kind == GP_WAIT || s->kind == GP_ALL_LOST;
    godis_result r = {.kind = settled ? GODIS_DONE : GODIS_REQUEUE};
    if (s->kind == GP_ALL_LOST && !condition_is(before, "Degraded", s->reason, NULL)) {
        reason = s->reason;                  /* once, when the condition appears */
        snprintf(msg, sizeof msg, "%s", s->why);
    }
    if (s->warn && !condition_is(before, "Progressing", s->reason, pmsg)) {
        reason = s->reason;                  /* once per blocked member and cause */
        snprintf(msg, sizeof msg, "%s", pmsg);
    }
    /* Compared with the status the API server has: the object may carry the rollout's
     * counts, left for this write to carry (one write per reconcile, not two). */
    const cJSON *base = v->status_base ? v->status_base : before;
    const char *uid = gd_meta_uid(cluster);
    int64_t now = gd_mono_ms(), due = 0;
    /* Counts and messages alone (a member's pod appearing, turning Ready) wait until
     * GODIS_PROGRESS_WRITE_MS after this cluster's last status write: a 100 x 3 bootstrap
     * wrote ~13 statuses per cluster, one per pod event, while the API server was busiest.
     * Any decisive change (a condition turning, an intent, the phase), a blocked member's
     * warning and an Event go at once and carry the counts with them. */
    if (!cJSON_Compare(base, st, 1) && !reason && !s->warn &&
        (progress_only(base, st) || init_waits_for_ready(base, st, s, gen)))
        due = godis_status_memo_due_in(uid, now);
    if (due > 0) {
        /* (FINISH_INIT is no settled step: asking for REQUEUE would spin until due) */
        if (r.kind == GODIS_DONE || s->kind == GP_FINISH_INIT)
            r = (godis_result){.kind = GODIS_REQUEUE_AFTER, .after_ms = due};
    } else if (!cJSON_Compare(base, st, 1)) {
        gd_err err = gw_update_status_out(e, &K8S_RES_GODISCLUSTERS, obj, written);
        if (err) r = gw_result(err);
        else godis_status_memo_note(uid, now);
        if (!err && reason)
            godis_emit_event(e, cluster, s->kind == GP_ALL_LOST || s->warn ? "Warning" : "Normal",
                             reason, msg);
    }
    cJSON_Delete(before);
    cJSON_Delete(obj);
    return r;
}

godis_result godis_status_invalid(godis_env *e, const cJSON *cluster, const char *reason,
                                  const char *msg)
{
    cJSON *obj = cJSON_Duplicate(cluster, 1);
    cJSON *st = cJSON_GetObjectItemCaseSensitive(obj, "status");
    if (!cJSON_IsObject(st)) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
        st = cJSON_AddObjectToObject(obj, "status");
    }
    cJSON *before = cJSON_Duplicate(st, 1);
    int64_t gen = gd_meta_generation(cluster);
    godis_set_condition(st, "Ready", false, reason, msg, gen);
    godis_set_condition(st, "Progressing", false, reason, msg, gen);
    godis_set_condition(st, "Degraded", true, reason, msg, gen);
    set_int(st, "observedGeneration", gen);
    godis_result r = {.kind = GODIS_DONE};
    if (!cJSON_Compare(before, st, 1)) {
        gd_err err = gw_update_status(e, &K8S_RES_GODISCLUSTERS, obj);
        if (err) r = gw_result(err);
        else godis_emit_event(e, cluster, "Warning", reason, msg);
    }
    cJSON_Delete(before);
    cJSON_Delete(obj);
    return r;
}
