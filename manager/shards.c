/* shards.c — the shard assignment state machine; see shards.h. */
#include "shards.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gd_json.h"
#include "gd_log.h"

void mgr_shards_init(mgr_shards *s)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < GD_NSHARDS; i++) s->slot[i].owner = s->slot[i].last_owner = -1;
}

void mgr_shards_cleanup(mgr_shards *s)
{
    for (int i = 0; i < GD_NSHARDS; i++) {
        cJSON_Delete(s->slot[i].pending);
        s->slot[i].pending = NULL;
    }
}

static bool bad_worker(int w) { return w < 0 || w >= MGR_SHARDS_MAX_WORKERS; }

gd_err mgr_shards_worker_up(mgr_shards *s, int w)
{
    if (bad_worker(w)) return GD_ERR_ARG;
    s->w[w].live = true;
    s->w[w].retiring = false;
    return GD_OK;
}

gd_err mgr_shards_worker_retire(mgr_shards *s, int w)
{
    if (bad_worker(w)) return GD_ERR_ARG;
    s->w[w].retiring = true;
    return GD_OK;
}

gd_err mgr_shards_worker_stopping(mgr_shards *s, int w)
{
    if (bad_worker(w)) return GD_ERR_ARG;
    s->w[w].live = false;
    s->w[w].retiring = false;
    return GD_OK;
}

gd_err mgr_shards_worker_gone(mgr_shards *s, int w)
{
    if (bad_worker(w)) return GD_ERR_ARG;
    s->w[w].live = false;
    s->w[w].retiring = false;
    for (int i = 0; i < GD_NSHARDS; i++) {
        mgr_shard_slot *sl = &s->slot[i];
        if (sl->owner != w) continue;
        sl->owner = -1;
        sl->revoking = false;
        /* pending keys handed back earlier stay; the dead owner's own queue is lost and
         * recovered by the next owner's full sync of the shard */
    }
    return GD_OK;
}

void mgr_shards_freeze(mgr_shards *s, bool frozen) { s->frozen = frozen; }

/* Adds key under controller to the shard's pending set (no duplicates). */
static void pending_add(mgr_shard_slot *sl, const char *controller, const char *key)
{
    if (!sl->pending && !(sl->pending = cJSON_CreateObject())) return;
    cJSON *arr = cJSON_GetObjectItemCaseSensitive(sl->pending, controller);
    if (!arr) arr = cJSON_AddArrayToObject(sl->pending, controller);
    if (!arr) return;
    cJSON *it;
    cJSON_ArrayForEach(it, arr)
        if (cJSON_IsString(it) && strcmp(it->valuestring, key) == 0) return;
    cJSON_AddItemToArray(arr, cJSON_CreateString(key));
}

static bool in_list(const int *shards, int n, int x)
{
    for (int i = 0; i < n; i++)
        if (shards[i] == x) return true;
    return false;
}

gd_err mgr_shards_revoked(mgr_shards *s, int w, const int *shards, int n, const char *pending_json)
{
    if (bad_worker(w) || n < 0 || (n > 0 && !shards)) return GD_ERR_ARG;
    int released[GD_NSHARDS], nrel = 0;
    for (int i = 0; i < n; i++) {
        int sh = shards[i];
        if (sh < 0 || sh >= GD_NSHARDS) continue;
        mgr_shard_slot *sl = &s->slot[sh];
        if (sl->owner != w) continue;           /* stale or duplicate answer */
        sl->owner = -1;
        sl->revoking = false;
        released[nrel++] = sh;
    }
    if (!pending_json || !*pending_json) return GD_OK;
    cJSON *root = gd_json_parse(pending_json, strlen(pending_json));
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return GD_ERR_PARSE;
    }
    gd_err rc = GD_OK;
    cJSON *ctrl;
    cJSON_ArrayForEach(ctrl, root) {
        if (!cJSON_IsArray(ctrl)) { rc = GD_ERR_PARSE; continue; }
        cJSON *k;
        cJSON_ArrayForEach(k, ctrl) {
            int sh = cJSON_IsString(k) ? gd_shard_of_key(ctrl->string, k->valuestring) : -1;
            if (sh < 0 || !in_list(released, nrel, sh)) {
                /* not a key of a shard handed back here: it must not travel to a worker
                 * that does not own its shard */
                GD_WARN("dropping pending key outside the revoked shards",
                        "controller", ctrl->string,
                        "key", cJSON_IsString(k) ? k->valuestring : "(not a string)");
                continue;
            }
            pending_add(&s->slot[sh], ctrl->string, k->valuestring);
        }
    }
    cJSON_Delete(root);
    return rc;
}

static int live_workers(const mgr_shards *s, int *idx)
{
    int n = 0;
    for (int w = 0; w < MGR_SHARDS_MAX_WORKERS; w++)
        if (s->w[w].live && !s->w[w].retiring) idx[n++] = w;
    return n;
}

/* Merges the pending keys of the given shards into one JSON text and frees them. */
static char *take_pending(mgr_shards *s, const int *shards, int n)
{
    cJSON *all = cJSON_CreateObject();
    for (int i = 0; i < n && all; i++) {
        mgr_shard_slot *sl = &s->slot[shards[i]];
        if (!sl->pending) continue;
        cJSON *ctrl;
        cJSON_ArrayForEach(ctrl, sl->pending) {
            cJSON *arr = cJSON_GetObjectItemCaseSensitive(all, ctrl->string);
            if (!arr) arr = cJSON_AddArrayToObject(all, ctrl->string);
            cJSON *k;
            cJSON_ArrayForEach(k, ctrl)
                if (arr) cJSON_AddItemToArray(arr, cJSON_CreateString(k->valuestring));
        }
        cJSON_Delete(sl->pending);
        sl->pending = NULL;
    }
    char *txt = all ? cJSON_PrintUnformatted(all) : NULL;
    cJSON_Delete(all);
    return txt ? txt : strdup("{}");
}

static mgr_shards_action *action_for(mgr_shards_action *out, int *nout, int cap,
                                    mgr_shards_verb verb, int w)
{
    for (int i = 0; i < *nout; i++)
        if (out[i].verb == verb && out[i].worker == w) return &out[i];
    if (*nout >= cap) return NULL;
    mgr_shards_action *a = &out[(*nout)++];
    memset(a, 0, sizeof *a);
    a->verb = verb;
    a->worker = w;
    return a;
}

int mgr_shards_plan(mgr_shards *s, mgr_shards_action *out, int cap)
{
    int live[MGR_SHARDS_MAX_WORKERS];
    int n = live_workers(s, live), nout = 0;
    int quota[MGR_SHARDS_MAX_WORKERS] = {0}, count[MGR_SHARDS_MAX_WORKERS] = {0};
    for (int r = 0; r < n; r++)
        quota[live[r]] = GD_NSHARDS / n + (r < GD_NSHARDS % n ? 1 : 0);

    /* pass 1: keep what may stay, revoke the rest (retiring owners, over quota) */
    for (int sh = 0; sh < GD_NSHARDS; sh++) {
        mgr_shard_slot *sl = &s->slot[sh];
        if (sl->owner < 0 || sl->revoking) continue;
        int w = sl->owner;
        if (!s->w[w].live) continue;            /* being stopped: keep it until the reap */
        if (!s->frozen && quota[w] > 0 && count[w] < quota[w]) {
            count[w]++;
            continue;
        }
        if (s->frozen) continue;                /* fencing stops workers; no traffic */
        mgr_shards_action *a = action_for(out, &nout, cap, MGR_SHARDS_REVOKE, w);
        if (!a) break;
        a->shards[a->n++] = sh;
        sl->revoking = true;
        s->revokes++;
    }
    if (s->frozen || n == 0) return nout;

    /* pass 2: deal free shards to the workers under quota, lowest index first */
    int r = 0;
    for (int sh = 0; sh < GD_NSHARDS; sh++) {
        mgr_shard_slot *sl = &s->slot[sh];
        if (sl->owner >= 0) continue;
        while (r < n && count[live[r]] >= quota[live[r]]) r++;
        if (r >= n) break;
        int w = live[r];
        mgr_shards_action *a = action_for(out, &nout, cap, MGR_SHARDS_ASSIGN, w);
        if (!a) break;
        a->shards[a->n++] = sh;
        count[w]++;
        if (sl->last_owner >= 0 && sl->last_owner != w) s->moves++;
        sl->owner = sl->last_owner = w;
        s->assigns++;
    }
    for (int i = 0; i < nout; i++)
        if (out[i].verb == MGR_SHARDS_ASSIGN)
            out[i].pending_json = take_pending(s, out[i].shards, out[i].n);
    return nout;
}

void mgr_shards_actions_free(mgr_shards_action *a, int n)
{
    for (int i = 0; i < n; i++) {
        free(a[i].pending_json);
        a[i].pending_json = NULL;
    }
}

int mgr_shards_owned_by(const mgr_shards *s, int w, int *out)
{
    int n = 0;
    for (int sh = 0; sh < GD_NSHARDS; sh++)
        if (s->slot[sh].owner == w) {
            if (out) out[n] = sh;
            n++;
        }
    return n;
}

int mgr_shards_unowned(const mgr_shards *s)
{
    int n = 0;
    for (int sh = 0; sh < GD_NSHARDS; sh++)
        if (s->slot[sh].owner < 0) n++;
    return n;
}

gd_err mgr_shards_parse_list(const char *txt, int *out, int cap, int *n)
{
    *n = 0;
    if (!txt) return GD_ERR_PARSE;
    if (!*txt) return GD_OK;                    /* empty list */
    const char *p = txt;
    for (;;) {
        if (!isdigit((unsigned char)*p)) return GD_ERR_PARSE;
        long v = 0;
        int digits = 0;
        while (isdigit((unsigned char)*p)) {
            v = v * 10 + (*p++ - '0');
            if (++digits > 3) return GD_ERR_PARSE;
        }
        if (v >= GD_NSHARDS) return GD_ERR_PARSE;
        if (*n >= cap) return GD_ERR_TOO_LARGE;
        out[(*n)++] = (int)v;
        if (*p == '\0') return GD_OK;
        if (*p++ != ',') return GD_ERR_PARSE;
    }
}

void mgr_shards_format_list(const int *shards, int n, char *buf, size_t cap)
{
    size_t off = 0;
    if (cap) buf[0] = '\0';
    for (int i = 0; i < n && off < cap; i++) {
        int k = snprintf(buf + off, cap - off, "%s%d", i ? "," : "", shards[i]);
        if (k < 0 || (size_t)k >= cap - off) {
            buf[off] = '\0';                    /* never a half-written number */
            return;
        }
        off += (size_t)k;
    }
}
