/* worker_opts.c — the worker's flags that need parsing: the informer endpoints (one
 * directory, or Kind=PUB,SNAP pairs) and the controllers' rate limits.
 *
 * Kept apart from the running worker because it is pure: it touches no socket and no
 * thread, so main.c can reject a bad flag before anything starts. */
#include "worker.h"
#include "godis_client.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void worker_opts_default(worker_opts *o)
{
    memset(o, 0, sizeof *o);
    o->index = -1;
    o->max_concurrent = 1;
    o->heartbeat_ms = 1000;
    o->reconciler = gd_domain_get()->name;
    o->stop_grace_ms = 4000;
    o->queue_base_delay_ms = 5;
    o->queue_max_delay_ms = 1000 * 1000;
    o->queue_qps = 10;
    o->queue_burst = 100;
    o->kube_api_qps = 50;
    o->kube_api_burst = 100;
    o->cluster_domain = GODIS_DEFAULT_CLUSTER_DOMAIN;
    o->max_concurrent_rollouts = 1;
}

gd_err worker_rate_limits_parse(worker_opts *o, const char *spec, char *why, size_t cap)
{
    char *copy = strdup(spec ? spec : ""), *save = NULL;
    if (!copy)
        return GD_ERR_NOMEM;
    gd_err rc = GD_OK;
    for (char *tok = strtok_r(copy, ",", &save); tok && rc == GD_OK;
         tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '='), *end = NULL;
        double v = eq ? strtod(eq + 1, &end) : -1;
        if (!eq || end == eq + 1 || *end || v < 0 || v > 1e12) {
            rc = GD_ERR_CONFIG;
        } else if (!strncmp(tok, "base-ms=", 8) && v >= 1) {
            o->queue_base_delay_ms = (int64_t)v;
        } else if (!strncmp(tok, "max-ms=", 7) && v >= 1) {
            o->queue_max_delay_ms = (int64_t)v;
        } else if (!strncmp(tok, "qps=", 4)) {
            o->queue_qps = v;               /* 0: no overall bucket */
        } else if (!strncmp(tok, "burst=", 6) && v >= 1 && v <= 1000000) {
            o->queue_burst = (int)v;
        } else if (!strncmp(tok, "priority=", 9) && (v == 0 || v == 1)) {
            o->queue_no_priority = v == 0;
        } else {
            rc = GD_ERR_CONFIG;
        }
        if (rc != GD_OK)
            snprintf(why, cap, "\"%.40s\": want base-ms=N,max-ms=N,qps=N,burst=N,priority=0|1", tok);
    }
    if (rc == GD_OK && o->queue_base_delay_ms > o->queue_max_delay_ms) {
        snprintf(why, cap, "base-ms is larger than max-ms");
        rc = GD_ERR_CONFIG;
    }
    free(copy);
    return rc;
}

/* ipc:// or tcp:// (the latter only with CURVE keys, checked once they are loaded). */
static gd_err check_endpoint(const char *ep)
{
    if ((strncmp(ep, "ipc://", 6) == 0 && ep[6]) || (strncmp(ep, "tcp://", 6) == 0 && ep[6]))
        return GD_OK;
    return GD_ERR_CONFIG;
}

bool worker_opts_need_curve(const worker_opts *o)
{
    bool need = o->control_endpoint && gd_curve_needed(o->control_endpoint);
    for (int i = 0; i < o->ninformers; i++)
        need |= gd_curve_needed(o->informers[i].pub) || gd_curve_needed(o->informers[i].snap);
    return need;
}

gd_err worker_curve_load(worker_opts *o, const char *key_file, const char *server_file,
                         char *why, size_t cap)
{
    if (!key_file || !server_file) {
        snprintf(why, cap, "tcp:// endpoints need --curve-key and --curve-server-public "
                 "(there is no plaintext tcp)");
        return GD_ERR_CONFIG;
    }
    gd_err rc = gd_curve_load_key(key_file, true, &o->curve, why, cap);
    gd_curve_keys server;
    if (rc == GD_OK)
        rc = gd_curve_load_key(server_file, false, &server, why, cap);
    if (rc == GD_OK)
        memcpy(o->server_public, server.public_z85, sizeof o->server_public);
    return rc;
}

static gd_err add_endpoint(worker_opts *o, const char *kind, const char *pub, const char *snap)
{
    if (o->ninformers >= WORKER_MAX_KINDS)
        return GD_ERR_CONFIG;
    worker_endpoint *e = &o->informers[o->ninformers];
    if ((size_t)snprintf(e->kind, sizeof e->kind, "%s", kind) >= sizeof e->kind ||
        (size_t)snprintf(e->pub, sizeof e->pub, "%s", pub) >= sizeof e->pub ||
        (size_t)snprintf(e->snap, sizeof e->snap, "%s", snap) >= sizeof e->snap)
        return GD_ERR_CONFIG;
    if (check_endpoint(e->pub) != GD_OK || check_endpoint(e->snap) != GD_OK)
        return GD_ERR_CONFIG;
    o->ninformers++;
    return GD_OK;
}

gd_err worker_endpoints_from_dir(worker_opts *o, const char *dir)
{
    o->ninformers = 0;
    const gd_domain *d = gd_domain_get();
    for (int i = d->nkinds - 1; i >= 0; i--) {
        const char *kind = d->kinds[i].kind;
        char pub[300], snap[300];
        snprintf(pub, sizeof pub, "ipc://%s/%s.pub", dir, kind);
        snprintf(snap, sizeof snap, "ipc://%s/%s.snap", dir, kind);
        if (add_endpoint(o, kind, pub, snap) != GD_OK)
            return GD_ERR_CONFIG;
    }
    return GD_OK;
}

gd_err worker_endpoints_parse(worker_opts *o, const char *spec, char *why, size_t cap)
{
    char *copy = strdup(spec ? spec : ""), *save = NULL;
    if (!copy)
        return GD_ERR_NOMEM;
    gd_err rc = GD_OK;
    o->ninformers = 0;
    for (char *tok = strtok_r(copy, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(tok, '='), *comma = eq ? strchr(eq, ',') : NULL;
        if (!eq || !comma) {
            snprintf(why, cap, "\"%.60s\": want Kind=PUB,SNAP", tok);
            rc = GD_ERR_CONFIG;
            break;
        }
        *eq = *comma = '\0';
        if (!gd_domain_kind(gd_domain_get(), tok)) {
            snprintf(why, cap, "unknown kind \"%.40s\"", tok);
            rc = GD_ERR_CONFIG;
            break;
        }
        if (add_endpoint(o, tok, eq + 1, comma + 1) != GD_OK) {
            snprintf(why, cap, "%s: endpoints must be ipc://… or tcp://… (at most %d kinds)", tok,
                     WORKER_MAX_KINDS);
            rc = GD_ERR_CONFIG;
            break;
        }
    }
    if (rc == GD_OK && o->ninformers == 0) {
        snprintf(why, cap, "no endpoints given");
        rc = GD_ERR_CONFIG;
    }
    free(copy);
    return rc;
}

