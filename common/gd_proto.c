/* gd_proto.c — shard hashing and topic strings (docs/PROTOCOL.md, "Shards").
 *
 * Every reconcile key belongs to the GodisCluster it serves, so all objects of one cluster
 * land on one shard and one worker: a cluster is never reconciled by two workers at once. */
#include "gd_proto.h"
#include "gd_json.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define CLUSTER_LABEL "cluster-name"

uint64_t gd_fnv1a64(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* Hashes "<ns>/<name>" without building the string. */
int gd_shard_of_cluster(const char *ns, const char *name)
{
    if (!ns || !name)
        return GD_SHARD_BROADCAST;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const char *p = ns; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
    h = (h ^ (unsigned char)'/') * 0x100000001b3ULL;
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
    return (int)(h % GD_NSHARDS);
}

/* The cluster a Godis named "<cluster>-<id>" belongs to: the name up to its last '-' when
 * a non-empty run of digits follows. Returns the prefix length, or 0 when it does not
 * look like a Godis name. */
static size_t cluster_prefix_of_godis(const char *godis)
{
    const char *dash = strrchr(godis, '-');
    if (!dash || dash == godis || !dash[1])
        return 0;
    for (const char *p = dash + 1; *p; p++)
        if (!isdigit((unsigned char)*p))
            return 0;
    return (size_t)(dash - godis);
}

int gd_shard_of_object(const char *kind, const cJSON *obj)
{
    const char *ns = gd_meta_namespace(obj);
    const char *name = gd_meta_name(obj);
    if (!kind || !*ns || !*name || strcmp(kind, "Node") == 0)
        return GD_SHARD_BROADCAST;
    if (strcmp(kind, "GodisCluster") == 0)
        return gd_shard_of_cluster(ns, name);

    const char *label = gd_meta_label(obj, CLUSTER_LABEL);
    if (label && *label)
        return gd_shard_of_cluster(ns, label);

    const cJSON *owner = gd_meta_controller_owner(obj);
    if (!owner)
        return GD_SHARD_BROADCAST;
    const char *okind = gd_json_str_or(owner, "kind", "");
    const char *oname = gd_json_str_or(owner, "name", "");
    if (!*oname)
        return GD_SHARD_BROADCAST;
    if (strcmp(okind, "GodisCluster") == 0)
        return gd_shard_of_cluster(ns, oname);
    if (strcmp(okind, "Godis") == 0) {
        size_t n = cluster_prefix_of_godis(oname);
        char cluster[256];
        if (n == 0 || n >= sizeof cluster)
            return GD_SHARD_BROADCAST;
        memcpy(cluster, oname, n);
        cluster[n] = 0;
        return gd_shard_of_cluster(ns, cluster);
    }
    return GD_SHARD_BROADCAST;
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
