/* gd_proto.c — shard hashing and topic strings (docs/PROTOCOL.md, "Shards").
 *
 * Every reconcile key belongs to the cluster object it serves, so all objects of one cluster
 * land on one shard and one worker: a cluster is never reconciled by two workers at once. */
#include "gd_proto.h"
#include "gd_json.h"
#include "gd_domain.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* fnv1a64("<ns>/<name>") % GD_NSHARDS, hashed without building the string. */
static int shard_of_ns_name(const char *ns, size_t nslen, const char *name, size_t namelen)
{
    uint64_t h = gd_fnv1a64_add(GD_FNV1A64_INIT, ns, nslen);
    h = gd_fnv1a64_add(h, "/", 1);
    return (int)(gd_fnv1a64_add(h, name, namelen) % GD_NSHARDS);
}

int gd_shard_of_cluster(const char *ns, const char *name)
{
    if (!ns || !name)
        return GD_SHARD_BROADCAST;
    return shard_of_ns_name(ns, strlen(ns), name, strlen(name));
}

int gd_shard_of_object(const char *kind, const cJSON *obj)
{
    const gd_domain *d = gd_domain_get();
    const gd_watched_kind *wk = gd_domain_kind(d, kind);
    const char *ns = gd_meta_namespace(obj);
    const char *name = gd_meta_name(obj);
    if (!kind || !*ns || !*name || (wk && wk->place == GD_PLACE_BROADCAST))
        return GD_SHARD_BROADCAST;
    if (wk && wk->place == GD_PLACE_CLUSTER)
        return gd_shard_of_cluster(ns, name);

    const char *label = gd_meta_label(obj, d->cluster_label);
    if (label && *label)
        return gd_shard_of_cluster(ns, label);

    const cJSON *owner = gd_meta_controller_owner(obj);
    if (!owner)
        return GD_SHARD_BROADCAST;
    const char *okind = gd_json_str_or(owner, "kind", "");
    const char *oname = gd_json_str_or(owner, "name", "");
    if (!*oname)
        return GD_SHARD_BROADCAST;
    if (strcmp(okind, d->cluster_kind) == 0)
        return gd_shard_of_cluster(ns, oname);
    if (strcmp(okind, d->member_kind) == 0) {
        size_t n = gd_domain_member_cluster_len(oname);
        if (n == 0 || n >= GD_KEY_PART_MAX)
            return GD_SHARD_BROADCAST;
        return shard_of_ns_name(ns, strlen(ns), oname, n);
    }
    return GD_SHARD_BROADCAST;
}

int gd_shard_of_key(const char *controller, const char *key)
{
    if (!controller || !key)
        return -1;
    const char *slash = strchr(key, '/');
    if (!slash || slash == key || !slash[1] || strchr(slash + 1, '/'))
        return -1;
    const char *name = slash + 1;
    size_t nslen = (size_t)(slash - key), namelen = strlen(name);
    if (nslen >= GD_KEY_PART_MAX || namelen >= GD_KEY_PART_MAX)
        return -1;
    if (strcmp(controller, gd_domain_get()->member_controller) == 0 &&
        (namelen = gd_domain_member_cluster_len(name)) == 0)
        return -1;
    return shard_of_ns_name(key, nslen, name, namelen);
}

static const char *const ev_names[] = {NULL, "ADDED", "MODIFIED", "DELETED", "SYNCED"};

const char *gd_ev_name(gd_ev ev)
{
    return ev >= GD_EV_ADDED && ev <= GD_EV_SYNCED ? ev_names[ev] : "?";
}

gd_ev gd_ev_parse(const char *type)
{
    for (int ev = GD_EV_ADDED; type && ev <= GD_EV_SYNCED; ev++)
        if (strcmp(type, ev_names[ev]) == 0)
            return (gd_ev)ev;
    return 0;
}

void gd_shard_topic(int shard, char *buf, size_t cap)
{
    if (!buf || cap == 0)
        return;
    if (shard < 0 || shard >= GD_NSHARDS)
        snprintf(buf, cap, "B");
    else
        snprintf(buf, cap, "S%03d", shard);
}

int gd_shard_parse_topic(const char *topic)
{
    if (!topic)
        return -2;
    if (strcmp(topic, "B") == 0)
        return GD_SHARD_BROADCAST;
    if (topic[0] != 'S' || strlen(topic) != 4)
        return -2;
    int v = 0;
    for (int i = 1; i < 4; i++) {
        if (!isdigit((unsigned char)topic[i]))
            return -2;
        v = v * 10 + (topic[i] - '0');
    }
    return v < GD_NSHARDS ? v : -2;
}
