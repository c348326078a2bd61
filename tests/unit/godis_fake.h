/* godis_fake.h — cache objects for the unit tests of the GodisCluster controller
 * (test_godis_stray, test_godis_forget_memo, test_godis_dial): members of cluster "c"
 * (uid "cu") in namespace "ns", as the worker's cache replica holds them. */
#ifndef GODIS_FAKE_H
#define GODIS_FAKE_H
#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>

/* The id at the end of a Godis-derived name ("c-4" -> 4), 0 if none. */
int64_t gf_id_of(const char *name);
/* Godis c-<id>: controlled by the cluster, with the finalizer, Running. */
cJSON *gf_godis(int64_t id, bool preferred);
/* The Ready pod c-<id>-x of member id on node-1, pod IP ip. */
cJSON *gf_pod(int64_t id, const char *ip);
/* The cache's list of kind ("Godis" or "Pod") for members 1..n: all of them for the label
 * cluster-name, the one named by a node-name value otherwise. Members up to preferred_upto
 * are initial ones; pod IPs are 127.0.0.<id> with ip_per_member, else 127.0.0.1. */
cJSON *gf_list(const char *kind, const char *key, const char *value, int n,
               int preferred_upto, bool ip_per_member);
/* A Ready Node. */
cJSON *gf_node_ready(const char *name);
/* A loopback port nothing listens on (bound, then closed). */
int gf_closed_port(void);
#endif
