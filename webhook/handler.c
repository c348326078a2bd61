/* handler.c — see handler.h. */
#include "handler.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gd_json.h"
#include "gd_log.h"
#include "gd_time.h"

static const char *action_name(wh_action a)
{
    switch (a) {
    case WH_ACT_ALLOW: return "allow";
    case WH_ACT_GONE: return "gone";
    case WH_ACT_WAIT: return "wait";
    case WH_ACT_MARK: return "mark";
    }
    return "?";
}

/* Sets the annotation, with the pod's resourceVersion as a precondition: if the pod changed
 * since we read it, we decided on stale facts and the eviction is simply retried. */
static gd_err mark(k8s_client *c, const wh_review *r, const cJSON *pod, k8s_status *st)
{
    cJSON *p = cJSON_CreateObject();
    cJSON *m = cJSON_AddObjectToObject(p, "metadata");
    cJSON_AddStringToObject(m, "resourceVersion", gd_meta_rv(pod));
    cJSON_AddStringToObject(cJSON_AddObjectToObject(m, "annotations"), WH_ANN_RESCHEDULE, "true");
    char *body = gd_json_print(p);
    cJSON_Delete(p);
    if (!body) return GD_ERR_NOMEM;
    gd_err e = k8s_patch(c, &K8S_RES_PODS, r->ns, r->name, K8S_PATCH_MERGE, body, NULL, NULL, st);
    free(body);
    return e;
}

static void decide_and_act(wh_handler *h, const wh_review *r, wh_verdict *v, wh_action *act)
{
    cJSON *pod = NULL;
    k8s_status st;
    memset(&st, 0, sizeof st);
    gd_err e = k8s_get(h->client, &K8S_RES_PODS, r->ns, r->name, &pod, &st);
    if (e != GD_OK && e != GD_ERR_NOT_FOUND) {
        /* Not knowing whether it is a member, refuse for now: kubectl retries in 5 s. */
        *act = WH_ACT_WAIT;
        memset(v, 0, sizeof *v);
        wh_verdict_mark_failed(r, false, st.message[0] ? st.message : gd_strerror(e), v);
        return;
    }
    int64_t now = gd_mono_ms();
    *act = wh_decide(r, pod, h->lim, now, v);
    char cluster[254] = "";
    if ((*act == WH_ACT_MARK || *act == WH_ACT_WAIT) && wh_pod_member(pod, cluster, sizeof cluster)) {
        cJSON *gc = NULL;
        k8s_get(h->client, &K8S_RES_GODISCLUSTERS, r->ns, cluster, &gc, NULL);
        bool was_mark = *act == WH_ACT_MARK;
        wh_explain(gc, r->name, act, v);
        if (was_mark && *act != WH_ACT_MARK && h->lim && !r->dry_run) {
            char key[512];
            snprintf(key, sizeof key, "%s/%s", r->ns, cluster);
            wh_limiter_undo(h->lim, key);          /* nothing marked: the slot is not used */
        }
        cJSON_Delete(gc);
    }
    if (*act == WH_ACT_MARK && !r->dry_run) {
        memset(&st, 0, sizeof st);
        e = mark(h->client, r, pod, &st);
        if (e != GD_OK) {
            char key[512];
            snprintf(key, sizeof key, "%s/%s", r->ns, cluster);
            if (h->lim) wh_limiter_undo(h->lim, key);
            wh_verdict_mark_failed(r, e == GD_ERR_NOT_FOUND, st.message[0] ? st.message : gd_strerror(e), v);
            *act = e == GD_ERR_NOT_FOUND ? WH_ACT_GONE : WH_ACT_WAIT;
        }
    }
    cJSON_Delete(pod);
}

int wh_handle_review(void *ud, const char *body, size_t len, char **out, const char **type)
{
    wh_handler *h = ud;
    int64_t t0 = gd_mono_ms();
    atomic_fetch_add(&h->reviews, 1);
    wh_review r;
    char why[300];
    if (wh_review_parse(body, len, &r, why, sizeof why) != GD_OK) {
        atomic_fetch_add(&h->bad, 1);
        GD_WARN("malformed AdmissionReview", "error", why);
        size_t n = strlen(why) + 40;
        *out = malloc(n);
        if (*out) snprintf(*out, n, "invalid AdmissionReview: %s\n", why);
        *type = "text/plain; charset=utf-8";
        return 400;
    }
    wh_verdict v;
    wh_action act = WH_ACT_ALLOW;
    if (!wh_review_is_eviction(&r)) wh_decide(&r, NULL, NULL, 0, &v);
    else decide_and_act(h, &r, &v, &act);
    switch (act) {
    case WH_ACT_ALLOW: atomic_fetch_add(&h->allowed, 1); break;
    case WH_ACT_GONE: atomic_fetch_add(&h->gone, 1); break;
    case WH_ACT_WAIT: atomic_fetch_add(&h->waited, 1); break;
    case WH_ACT_MARK: atomic_fetch_add(&h->marked, 1); break;
    }
    char code[8], ms[24];
    snprintf(code, sizeof code, "%d", v.allowed ? 200 : v.code);
    snprintf(ms, sizeof ms, "%lld", (long long)(gd_mono_ms() - t0));
    GD_INFO("eviction reviewed", "namespace", r.ns, "pod", r.name, "action", action_name(act),
            "code", code, "dry_run", r.dry_run ? "true" : "false", "ms", ms, "message", v.message);
    *out = wh_review_response(&r, &v);
    *type = "application/json";
    return 200;
}
