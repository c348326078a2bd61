/* remote.c — see remote.h. */
#include "remote.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "gd_log.h"
#include "gd_time.h"

typedef struct {
    bool hello;             /* connected and accepted */
    bool stopping;          /* declared gone or stopped: shards held until its lease ends */
    char name[64];
} slot_t;

struct mgr_remote {
    gd_curve_keys keys;
    gd_curve_zap *zap;
    int64_t heartbeat_ms, next_ping_ms;
    char control[300];
    char pub[MGR_MAX_KINDS][300], snap[MGR_MAX_KINDS][300];
    char *annotation;
    slot_t s[MGR_SHARDS_MAX_WORKERS];
    uint64_t losses;
};

static char *make_annotation(mgr_remote *r, const char *holder, char (*kinds)[64], int n)
{
    cJSON *o = cJSON_CreateObject(), *inf = NULL;
    if (o && cJSON_AddStringToObject(o, "holder", holder) &&
        cJSON_AddStringToObject(o, "control", r->control))
        inf = cJSON_AddObjectToObject(o, "informers");
    for (int i = 0; inf && i < n; i++) {
        cJSON *k = cJSON_AddObjectToObject(inf, kinds[i]);
        if (!k || !cJSON_AddStringToObject(k, "pub", r->pub[i]) ||
            !cJSON_AddStringToObject(k, "snap", r->snap[i]))
            inf = NULL;
    }
    char *txt = inf ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return txt;
}

mgr_remote *mgr_remote_new(const mgr_config *cfg, void *zctx, char (*kinds)[64], int nkinds,
                           const char *holder, gd_err *err)
{
    *err = GD_OK;
    if (!cfg->remote_port_base)
        return NULL;
    mgr_remote *r = calloc(1, sizeof *r);
    if (!r) {
        *err = GD_ERR_NOMEM;
        return NULL;
    }
    char why[600];
    const char *addr = cfg->remote_address[0] ? cfg->remote_address : getenv("POD_IP");
    *err = GD_ERR_CONFIG;
    if (!addr || !*addr || strlen(addr) > 253) {
        GD_ERROR("--remote-port-base: no address to bind: give --remote-address or set POD_IP");
    } else if (cfg->remote_port_base + 2 * nkinds > 65535) {
        GD_ERROR("--remote-port-base: the informers' ports would pass 65535");
    } else if (gd_curve_load_key(cfg->curve_server_key, true, &r->keys, why, sizeof why) != GD_OK) {
        GD_ERROR("--curve-server-key unusable", "error", why);
    } else if (!(r->zap = gd_curve_zap_new(zctx, cfg->curve_allow))) {
        *err = GD_ERR_ZMQ;
    } else {
        *err = GD_OK;
    }
    if (*err != GD_OK) {
        mgr_remote_destroy(&r);
        return NULL;
    }
    /* an IPv6 literal needs brackets in a tcp:// endpoint */
    bool v6 = strchr(addr, ':') != NULL;
    snprintf(r->control, sizeof r->control, v6 ? "tcp://[%s]:%d" : "tcp://%s:%d", addr,
             cfg->remote_port_base);
    for (int i = 0; i < nkinds; i++) {
        snprintf(r->pub[i], sizeof r->pub[i], v6 ? "tcp://[%s]:%d" : "tcp://%s:%d", addr,
                 cfg->remote_port_base + 1 + 2 * i);
        snprintf(r->snap[i], sizeof r->snap[i], v6 ? "tcp://[%s]:%d" : "tcp://%s:%d", addr,
                 cfg->remote_port_base + 2 + 2 * i);
    }
    r->heartbeat_ms = cfg->heartbeat_ms;
    if (!(r->annotation = make_annotation(r, holder, kinds, nkinds))) {
        *err = GD_ERR_NOMEM;
        mgr_remote_destroy(&r);
        return NULL;
    }
    GD_INFO("remote workers accepted", "control", r->control, "allow_list", cfg->curve_allow);
    return r;
}

void mgr_remote_destroy(mgr_remote **rp)
{
    if (!rp || !*rp) return;
    gd_curve_zap_destroy(&(*rp)->zap);
    free((*rp)->annotation);
    free(*rp);
    *rp = NULL;
}

const gd_curve_keys *mgr_remote_keys(const mgr_remote *r) { return &r->keys; }
const char *mgr_remote_control_endpoint(const mgr_remote *r) { return r->control; }
const char *mgr_remote_pub(const mgr_remote *r, int i) { return r->pub[i]; }
const char *mgr_remote_snap(const mgr_remote *r, int i) { return r->snap[i]; }
const char *mgr_remote_annotation(const mgr_remote *r) { return r->annotation; }
uint64_t mgr_remote_losses(const mgr_remote *r) { return r ? r->losses : 0; }

static void log_slot(const char *msg, int index, const char *name)
{
    char idx[12];
    snprintf(idx, sizeof idx, "%d", index);
    GD_INFO(msg, "worker", idx, "name", name);
}

bool mgr_remote_hello(mgr_remote *r, mgr_control *ctl, mgr_shards *sh, int index,
                      const char *name, bool leading, int64_t lease_deadline_wall)
{
    if (!r || index < MGR_REMOTE_FIRST || index >= MGR_SHARDS_MAX_WORKERS) return false;
    slot_t *s = &r->s[index];
    if (s->stopping) return false;      /* its old lease has not run out yet */
    bool again = s->hello;
    s->hello = true;
    snprintf(s->name, sizeof s->name, "%s", name);
    if (leading) {
        mgr_shards_worker_up(sh, index);
        if (lease_deadline_wall) mgr_control_lease(ctl, index, lease_deadline_wall);
    }
    if (again) {
        int owned[GD_NSHARDS];
        int n = mgr_shards_owned_by(sh, index, owned);
        if (n) mgr_control_assign(ctl, index, owned, n, "{}", NULL);
    }
    log_slot(again ? "remote worker said HELLO again" : "remote worker joined", index, name);
    return true;
}

void mgr_remote_pong(mgr_remote *r, mgr_control *ctl, int index, bool leading,
                     int64_t lease_deadline_wall)
{
    if (!r || !mgr_control_is_remote(ctl, index)) return;
    if (leading && lease_deadline_wall && r->s[index].hello && !r->s[index].stopping)
        mgr_control_lease(ctl, index, lease_deadline_wall);
}

void mgr_remote_lease_all(mgr_remote *r, mgr_control *ctl, int64_t lease_deadline_wall)
{
    for (int i = MGR_REMOTE_FIRST; r && i < MGR_SHARDS_MAX_WORKERS; i++)
        if (r->s[i].hello && !r->s[i].stopping) mgr_control_lease(ctl, i, lease_deadline_wall);
}

void mgr_remote_start_leading(mgr_remote *r, mgr_shards *sh)
{
    for (int i = MGR_REMOTE_FIRST; r && i < MGR_SHARDS_MAX_WORKERS; i++)
        if (r->s[i].hello && !r->s[i].stopping) mgr_shards_worker_up(sh, i);
}

static void stop_one(mgr_remote *r, mgr_control *ctl, mgr_shards *sh, int i)
{
    mgr_control_stop(ctl, i, gd_wall_ms());     /* best effort: it may be gone */
    r->s[i].stopping = true;
    mgr_shards_worker_stopping(sh, i);
}

void mgr_remote_stop_all(mgr_remote *r, mgr_control *ctl, mgr_shards *sh)
{
    for (int i = MGR_REMOTE_FIRST; r && i < MGR_SHARDS_MAX_WORKERS; i++)
        if (r->s[i].hello && !r->s[i].stopping) stop_one(r, ctl, sh, i);
}

/* When a live remote worker that has not answered is declared gone (tick and due agree). */
static int64_t silent_until(const mgr_remote *r, mgr_control *ctl, int i)
{
    return mgr_control_last_heard(ctl, i) + MGR_REMOTE_MISSED_PINGS * r->heartbeat_ms + 1;
}

int mgr_remote_tick(mgr_remote *r, mgr_control *ctl, mgr_shards *sh, int64_t now, int *freed)
{
    int nfreed = 0;
    if (!r) return 0;
    bool ping = now >= r->next_ping_ms;
    if (ping) r->next_ping_ms = now + r->heartbeat_ms;
    for (int i = MGR_REMOTE_FIRST; i < MGR_SHARDS_MAX_WORKERS; i++) {
        slot_t *s = &r->s[i];
        if (!s->hello) continue;
        if (s->stopping) {
            /* its last lease has run out on our clock: it writes no more, the shards move */
            if (now >= mgr_control_remote_lease_end(ctl, i)) {
                mgr_shards_worker_gone(sh, i);
                mgr_control_forget(ctl, i);
                log_slot("remote worker gone: its shards are free", i, s->name);
                memset(s, 0, sizeof *s);
                freed[nfreed++] = i;
            }
            continue;
        }
        if (ping) mgr_control_ping(ctl, i);
        if (now >= silent_until(r, ctl, i)) {
            char idx[12];
            snprintf(idx, sizeof idx, "%d", i);
            GD_ERROR("remote worker stopped answering heartbeats: its shards move once its "
                     "lease has run out", "worker", idx, "name", s->name);
            r->losses++;
            stop_one(r, ctl, sh, i);
        }
    }
    return nfreed;
}

int64_t mgr_remote_due_ms(const mgr_remote *r, mgr_control *ctl)
{
    int64_t due = INT64_MAX;
    for (int i = MGR_REMOTE_FIRST; r && i < MGR_SHARDS_MAX_WORKERS; i++) {
        const slot_t *s = &r->s[i];
        if (!s->hello) continue;
        int64_t at = s->stopping ? mgr_control_remote_lease_end(ctl, i) : silent_until(r, ctl, i);
        if (!s->stopping && r->next_ping_ms < at) at = r->next_ping_ms;
        if (at < due) due = at;
    }
    return due;
}

bool mgr_remote_quiet(const mgr_remote *r, mgr_control *ctl, int64_t now)
{
    for (int i = MGR_REMOTE_FIRST; r && i < MGR_SHARDS_MAX_WORKERS; i++)
        if (r->s[i].hello && mgr_control_remote_lease_end(ctl, i) > now) return false;
    return true;
}

int mgr_remote_count(const mgr_remote *r)
{
    int n = 0;
    for (int i = MGR_REMOTE_FIRST; r && i < MGR_SHARDS_MAX_WORKERS; i++)
        n += r->s[i].hello;
    return n;
}
