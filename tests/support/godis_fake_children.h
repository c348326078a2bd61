/* godis_fake_children.h — the children of cluster "c" (uid "cu", namespace "ns") as the
 * worker's cache holds them, built by the product's own builders (godis_children.c,
 * godis_plan.c), for the GodisCluster controller's unit tests that fake its cache
 * (test_godis_stray, test_godis_forget_memo). Linked through their <test>_LINK: the
 * builders are worker objects, which tests/unit's helpers (linked everywhere) cannot call. */
#ifndef GODIS_FAKE_CHILDREN_H
#define GODIS_FAKE_CHILDREN_H
#include <stdint.h>
#include <cjson/cJSON.h>

/* ConfigMap c-config whose initial cluster names members 1..n. */
cJSON *gfc_configmap(int n);
/* The ReplicaSet of member c-<id> (resourceVersion "11") for ids 1..max_id, else NULL. */
cJSON *gfc_replicaset(const char *name, int64_t max_id);
/* A fake cache's answer for the children kinds: ConfigMap c-config (members 1..members),
 * ReplicaSet (gfc_replicaset up to max_rs), a Ready Node; NULL for anything else. */
cJSON *gfc_child(const char *kind, const char *name, int members, int64_t max_rs);
#endif
