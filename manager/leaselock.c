/* leaselock.c — Lease-backed store for the leader elector, and the standby's Lease watch.
 *
 * As client-go's LeaseLock, the store keeps the whole Lease object last returned by the
 * API server; update() writes the new spec into a copy of it and PUTs it, so the request
 * carries that object's resourceVersion and the API server refuses it (Conflict) when
 * anyone else wrote in between. */
#include "leaselock.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gd_json.h"
#include "gd_log.h"
#include "gd_proto.h"
#include "gd_time.h"
#include "gd_wake.h"

struct mgr_leaselock {
    k8s_client *client;
    char ns[254], name[254];
    cJSON *lease;                       /* last object seen; NULL before the first get */
    char *anno_key, *anno_value;        /* written with every acquire/renew (PROTOCOL.md §3.1) */
};

gd_err mgr_leaselock_set_annotation(mgr_leaselock *l, const char *key, const char *value)
{
    free(l->anno_key);
    free(l->anno_value);
    l->anno_key = strdup(key);
    l->anno_value = strdup(value);
    return l->anno_key && l->anno_value ? GD_OK : GD_ERR_NOMEM;
}

/* The leader's endpoints travel in the same write as the holder: set while we hold the
 * Lease, removed by the write that releases it. */
static gd_err write_annotation(const mgr_leaselock *l, cJSON *obj, const mgr_le_record *rec)
{
    if (!l->anno_key) return GD_OK;
    cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    if (!cJSON_IsObject(md)) return GD_ERR_TYPE;
    cJSON *an = cJSON_GetObjectItemCaseSensitive(md, "annotations");
    if (!cJSON_IsObject(an)) {
        cJSON_DeleteItemFromObjectCaseSensitive(md, "annotations");
        if (!(an = cJSON_AddObjectToObject(md, "annotations"))) return GD_ERR_NOMEM;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(an, l->anno_key);
    if (rec->holder[0] && !cJSON_AddStringToObject(an, l->anno_key, l->anno_value))
        return GD_ERR_NOMEM;
    return GD_OK;
}

mgr_leaselock *mgr_leaselock_new(k8s_client *client, const char *ns, const char *name)
{
    if (!client || !ns || !name || !*ns || !*name || strlen(ns) >= 254 || strlen(name) >= 254)
        return NULL;
    mgr_leaselock *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->client = client;
    snprintf(l->ns, sizeof l->ns, "%s", ns);
    snprintf(l->name, sizeof l->name, "%s", name);
    return l;
}

void mgr_leaselock_destroy(mgr_leaselock **lp)
{
    if (!lp || !*lp) return;
    cJSON_Delete((*lp)->lease);
    free((*lp)->anno_key);
    free((*lp)->anno_value);
    free(*lp);
    *lp = NULL;
}

static gd_err copy_str(const cJSON *spec, const char *key, char *out, size_t cap)
{
    const char *s = NULL;
    gd_err e = gd_json_str(spec, key, &s);
    if (e == GD_ERR_MISSING) { out[0] = '\0'; return GD_OK; }
    if (e != GD_OK) return e;
    if (strlen(s) >= cap) return GD_ERR_TOO_LARGE;
    snprintf(out, cap, "%s", s);
    return GD_OK;
}

static gd_err copy_int(const cJSON *spec, const char *key, int64_t *out)
{
    gd_err e = gd_json_int(spec, key, out);
    if (e == GD_ERR_MISSING) { *out = 0; return GD_OK; }
    return e;
}

gd_err mgr_leaselock_record_from_lease(const cJSON *lease, mgr_le_record *rec)
{
    memset(rec, 0, sizeof *rec);
    if (!cJSON_IsObject(lease)) return GD_ERR_TYPE;
    cJSON *spec = gd_json_path(lease, "spec");
    if (!spec || cJSON_IsNull(spec)) return GD_OK;
    if (!cJSON_IsObject(spec)) return GD_ERR_TYPE;
    gd_err e;
    if ((e = copy_str(spec, "holderIdentity", rec->holder, sizeof rec->holder))) return e;
    if ((e = copy_str(spec, "acquireTime", rec->acquire_time, sizeof rec->acquire_time))) return e;
    if ((e = copy_str(spec, "renewTime", rec->renew_time, sizeof rec->renew_time))) return e;
    if ((e = copy_int(spec, "leaseDurationSeconds", &rec->lease_duration_s))) return e;
    return copy_int(spec, "leaseTransitions", &rec->transitions);
}

static cJSON *time_or_null(const char *t)
{
    return t[0] ? cJSON_CreateString(t) : cJSON_CreateNull();
}

gd_err mgr_leaselock_record_to_lease(cJSON *lease, const mgr_le_record *rec)
{
    cJSON *spec = cJSON_CreateObject();
    if (!spec) return GD_ERR_NOMEM;
    cJSON_AddItemToObject(spec, "holderIdentity", cJSON_CreateString(rec->holder));
    cJSON_AddItemToObject(spec, "leaseDurationSeconds",
                          cJSON_CreateNumber((double)rec->lease_duration_s));
    cJSON_AddItemToObject(spec, "acquireTime", time_or_null(rec->acquire_time));
    cJSON_AddItemToObject(spec, "renewTime", time_or_null(rec->renew_time));
    cJSON_AddItemToObject(spec, "leaseTransitions", cJSON_CreateNumber((double)rec->transitions));
    return gd_json_set(lease, "spec", spec);
}

static void keep(mgr_leaselock *l, cJSON *obj)
{
    cJSON_Delete(l->lease);
    l->lease = obj;
}

static gd_err lock_get(void *ud, mgr_le_record *out)
{
    mgr_leaselock *l = ud;
    cJSON *obj = NULL;
    k8s_status st;
    gd_err e = k8s_get(l->client, &K8S_RES_LEASES, l->ns, l->name, &obj, &st);
    if (e != GD_OK) {
        cJSON_Delete(obj);
        if (e != GD_ERR_NOT_FOUND)
            GD_WARN("lease get failed", "lease", l->name, "error", gd_strerror(e),
                    "message", st.message);
        return e;
    }
    e = mgr_leaselock_record_from_lease(obj, out);
    if (e != GD_OK) {
        GD_WARN("lease has a malformed spec", "lease", l->name, "error", gd_strerror(e));
        cJSON_Delete(obj);
        return e;
    }
    keep(l, obj);
    return GD_OK;
}

static gd_err lock_create(void *ud, const mgr_le_record *rec)
{
    mgr_leaselock *l = ud;
    cJSON *obj = cJSON_CreateObject();
    if (!obj) return GD_ERR_NOMEM;
    cJSON_AddStringToObject(obj, "apiVersion", "coordination.k8s.io/v1");
    cJSON_AddStringToObject(obj, "kind", "Lease");
    cJSON *md = cJSON_AddObjectToObject(obj, "metadata");
    cJSON_AddStringToObject(md, "name", l->name);
    cJSON_AddStringToObject(md, "namespace", l->ns);
    gd_err e = mgr_leaselock_record_to_lease(obj, rec);
    if (e == GD_OK) e = write_annotation(l, obj, rec);
    cJSON *out = NULL;
    k8s_status st;
    if (e == GD_OK) e = k8s_create(l->client, &K8S_RES_LEASES, l->ns, obj, &out, &st);
    cJSON_Delete(obj);
    if (e != GD_OK) {
        cJSON_Delete(out);
        return e;
    }
    keep(l, out);
    return GD_OK;
}

static gd_err lock_update(void *ud, const mgr_le_record *rec)
{
    mgr_leaselock *l = ud;
    if (!l->lease) return GD_ERR_ARG;   /* client-go: "lease not initialized, call get or create first" */
    cJSON *obj = cJSON_Duplicate(l->lease, 1);
    if (!obj) return GD_ERR_NOMEM;
    gd_err e = mgr_leaselock_record_to_lease(obj, rec);
    if (e == GD_OK) e = write_annotation(l, obj, rec);
    cJSON *out = NULL;
    k8s_status st;
    if (e == GD_OK) e = k8s_update(l->client, &K8S_RES_LEASES, obj, &out, &st);
    cJSON_Delete(obj);
    if (e != GD_OK) {
        cJSON_Delete(out);
        return e;
    }
    keep(l, out);
    return GD_OK;
}

void mgr_leaselock_ops(mgr_leaselock *l, mgr_le_lock *out)
{
    out->get = lock_get;
    out->create = lock_create;
    out->update = lock_update;
    out->ud = l;
}

/* ---- the standby's watch ---- */

struct mgr_lease_watch {
    k8s_client *client;
    char ns[254], fsel[300];
    mgr_le *le;
    volatile int stop;
    int stop_fd;        /* poked once stop is set: ends the watch's idle wait and the backoff */
    pthread_t th;
};

static int on_lease_event(void *ud, const char *type, cJSON *obj)
{
    mgr_lease_watch *w = ud;
    mgr_le_status_t st;
    mgr_le_status(w->le, &st);
    if (st.leading) return 0;
    gd_ev ev = gd_ev_parse(type);
    if (ev == GD_EV_DELETED) {
        mgr_le_wake(w->le);
        return 0;
    }
    mgr_le_record rec;
    if (ev != GD_EV_ADDED && ev != GD_EV_MODIFIED) return 0;
    if (mgr_leaselock_record_from_lease(obj, &rec) != GD_OK) return 0;
    if (rec.holder[0] == '\0')
        GD_INFO("lease released by its holder: trying now", "lease", mgr_le_get_config(w->le)->name);
    mgr_le_observe(w->le, &rec);     /* renewals timed as they happen; a release wakes us */
    return 0;
}

static void *watch_main(void *arg)
{
    mgr_lease_watch *w = arg;
    gd_backoff bo;
    gd_backoff_init(&bo, 500, 10000, 2.0, 0.2, 30000);
    while (!w->stop) {
        k8s_watch_opts o;
        memset(&o, 0, sizeof o);
        o.list.field_selector = w->fsel;
        o.list.timeout_seconds = 240 + (int)(gd_rand01() * 120);
        o.stop = &w->stop;
        o.stop_fd = &w->stop_fd;
        o.max_event_bytes = 1 << 20;
        k8s_status st;
        int64_t started = gd_mono_ms();
        gd_err e = k8s_watch(w->client, &K8S_RES_LEASES, w->ns, &o, on_lease_event, w, &st);
        if (w->stop) break;
        if (e == GD_OK || e == GD_ERR_CLOSED) {
            if (gd_mono_ms() - started > 1000) continue;   /* a normal server-side end */
        } else {
            GD_WARN("lease watch failed", "error", gd_strerror(e), "message", st.message);
        }
        int64_t until = gd_mono_ms() + gd_backoff_next(&bo);
        for (int64_t left; !w->stop && (left = until - gd_mono_ms()) > 0;)
            gd_wake_wait(w->stop_fd, left);
    }
    return NULL;
}

mgr_lease_watch *mgr_lease_watch_start(k8s_client *client, const char *ns, const char *name,
                                     mgr_le *le)
{
    if (!client || !ns || !name || !le || strlen(ns) >= 254 || strlen(name) >= 254) return NULL;
    mgr_lease_watch *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->client = client;
    w->le = le;
    snprintf(w->ns, sizeof w->ns, "%s", ns);
    snprintf(w->fsel, sizeof w->fsel, "metadata.name=%s", name);
    w->stop_fd = gd_wake_open();
    if (w->stop_fd < 0 || pthread_create(&w->th, NULL, watch_main, w) != 0) {
        gd_wake_close(&w->stop_fd);
        free(w);
        return NULL;
    }
    return w;
}

void mgr_lease_watch_cancel(mgr_lease_watch *w)
{
    if (!w) return;
    w->stop = 1;
    gd_wake_poke(w->stop_fd);
}

void mgr_lease_watch_stop(mgr_lease_watch **wp)
{
    if (!wp || !*wp) return;
    mgr_lease_watch_cancel(*wp);
    pthread_join((*wp)->th, NULL);
    gd_wake_close(&(*wp)->stop_fd);
    free(*wp);
    *wp = NULL;
}
