/* godis_fake_children.c — see godis_fake_children.h. */
#include "godis_fake_children.h"
#include <string.h>
#include "gd_json.h"
#include "godis_children.h"
#include "../unit/godis_fake.h"
#include "godis_plan.h"

cJSON *gfc_configmap(int n)
{
    int64_t ids[16];
    char value[1024];
    for (int i = 0; i < n && i < 16; i++)
        ids[i] = i + 1;
    godis_initial_cluster(value, sizeof value, "ns", "c", ids, n < 16 ? n : 16, NULL);
    return godis_build_configmap("ns", "c", "cu", value);
}

cJSON *gfc_replicaset(const char *name, int64_t max_id)
{
    int64_t id = gf_id_of(name);
    if (id < 1 || id > max_id)
        return NULL;
    godis_child_spec s = {.ns = "ns", .cluster = "c", .godis = name, .godis_uid = "gu", .id = id};
    cJSON *rs = godis_build_replicaset(&s);
    if (rs)
        gd_json_set(rs, "metadata.resourceVersion", cJSON_CreateString("11"));
    return rs;
}

cJSON *gfc_child(const char *kind, const char *name, int members, int64_t max_rs)
{
    if (!strcmp(kind, "ConfigMap") && !strcmp(name, "c-config")) return gfc_configmap(members);
    if (!strcmp(kind, "ReplicaSet")) return gfc_replicaset(name, max_rs);
    if (!strcmp(kind, "Node")) return gf_node_ready(name);
    return NULL;
}
