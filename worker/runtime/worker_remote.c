/* worker_remote.c — a worker in another pod (docs/PROTOCOL.md §3.1): find the leader in
 * its Lease's annotation, run against its tcp:// endpoints with CURVE, and when the manager
 * stops it or goes silent, drop everything and find the leader again — no process exit, so
 * a leader change costs no pod restart.
 *
 * Each connection is a fresh worker_run: empty cache filled by snapshots, no shard, no
 * lease, a new DEALER identity. Nothing of the old leader's state is carried over. */
#include "worker_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gd_json.h"
#include "gd_log.h"
#include "gd_time.h"
#include "k8s_client.h"
#include "k8s_config.h"

typedef struct {
    char holder[256];
    char control[256];
    worker_endpoint informers[WORKER_MAX_KINDS];
    int ninformers;
} leader_info;

/* Reads the annotation of a Lease object; GD_ERR_MISSING while nobody leads or the
 * annotation belongs to another holder (a leader without remote endpoints, or mid-change). */
static gd_err parse_lease(const cJSON *lease, leader_info *out, char *why, size_t cap)
{
    memset(out, 0, sizeof *out);
    const char *holder = gd_json_str_or(lease, "spec.holderIdentity", "");
    cJSON *an = gd_json_path(lease, "metadata.annotations");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(an, GD_REMOTE_ANNOTATION);
    if (!*holder || !cJSON_IsString(a)) {
        snprintf(why, cap, !*holder ? "nobody leads" : "the leader publishes no endpoints");
        return GD_ERR_MISSING;
    }
    cJSON *j = cJSON_Parse(a->valuestring);
    const char *ah = gd_json_str_or(j, "holder", ""), *ctl = gd_json_str_or(j, "control", "");
    gd_err rc = GD_OK;
    if (!j || strcmp(ah, holder) != 0) {
        snprintf(why, cap, j ? "annotation of another holder" : "annotation is not JSON");
        rc = j ? GD_ERR_MISSING : GD_ERR_PARSE;
    } else if (strncmp(ctl, "tcp://", 6) != 0 || strlen(ctl) >= sizeof out->control ||
               strlen(holder) >= sizeof out->holder) {
        snprintf(why, cap, "bad control endpoint");
        rc = GD_ERR_PARSE;
    }
    const gd_domain *d = gd_domain_get();
    for (int i = 0; rc == GD_OK && i < d->nkinds && i < WORKER_MAX_KINDS; i++) {
        char path[96];
        snprintf(path, sizeof path, "informers.%s", d->kinds[i].kind);
        cJSON *k = gd_json_path(j, path);
        const char *pub = gd_json_str_or(k, "pub", "");
        const char *snap = gd_json_str_or(k, "snap", "");
        worker_endpoint *e = &out->informers[out->ninformers];
        if (strncmp(pub, "tcp://", 6) || strncmp(snap, "tcp://", 6) ||
            strlen(pub) >= sizeof e->pub || strlen(snap) >= sizeof e->snap) {
            snprintf(why, cap, "no tcp:// endpoints for %s", d->kinds[i].kind);
            rc = GD_ERR_PARSE;
            break;
        }
        snprintf(e->kind, sizeof e->kind, "%s", d->kinds[i].kind);
        snprintf(e->pub, sizeof e->pub, "%s", pub);
        snprintf(e->snap, sizeof e->snap, "%s", snap);
        out->ninformers++;
    }
    if (rc == GD_OK) {
        snprintf(out->holder, sizeof out->holder, "%s", holder);
        snprintf(out->control, sizeof out->control, "%s", ctl);
    }
    cJSON_Delete(j);
    return rc;
}

static k8s_client *lease_client(const worker_opts *o)
{
    k8s_config_opts co = {.kubeconfig = o->kubeconfig, .context = o->context,
                          .allow_in_cluster = true};
    k8s_config *cfg = NULL;
    char err[512] = "";
    if (k8s_config_load(&co, &cfg, err, sizeof err) != GD_OK) {
        fprintf(stderr, "godis-worker: %s\n", err);
        return NULL;
    }
    k8s_client_opts ko;
    k8s_client_opts_default(&ko);
    ko.user_agent = "godis-operator (worker; leader discovery)";
    k8s_client *c = k8s_client_new(&cfg, &ko);
    k8s_config_destroy(&cfg);
    return c;
}

int worker_remote_main(worker_opts *o, const char *lease_ns, const char *lease_name)
{
    k8s_client *c = lease_client(o);
    if (!c)
        return GD_EXIT_FATAL_CONFIG;
    static leader_info li;
    char last_why[200] = "";
    int rc = GD_EXIT_OK;
    while (!worker_signalled()) {
        cJSON *lease = NULL;
        k8s_status st;
        char why[200] = "";
        gd_err e = k8s_get(c, &K8S_RES_LEASES, lease_ns, lease_name, &lease, &st);
        if (e == GD_OK)
            e = parse_lease(lease, &li, why, sizeof why);
        else
            snprintf(why, sizeof why, "get Lease %s/%s: %s", lease_ns, lease_name, gd_strerror(e));
        cJSON_Delete(lease);
        if (e != GD_OK) {
            if (strcmp(why, last_why) != 0)     /* once per change, not once a second */
                gd_log(GD_LOG_INFO, "waiting for a leader", "reason", why, NULL);
            snprintf(last_why, sizeof last_why, "%s", why);
            gd_sleep_ms(1000);
            continue;
        }
        last_why[0] = '\0';
        o->control_endpoint = li.control;
        memcpy(o->informers, li.informers, sizeof li.informers);
        o->ninformers = li.ninformers;
        o->manager_identity = li.holder;
        gd_log(GD_LOG_INFO, "joining the leader", "holder", li.holder, "control", li.control,
               NULL);
        rc = worker_run(o);
        if (rc != WORKER_RECONNECT)
            break;
        rc = GD_EXIT_OK;
    }
    k8s_client_destroy(&c);
    return rc;
}
