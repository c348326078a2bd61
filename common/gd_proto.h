/* gd_proto.h — constants and shard hashing shared by informer, worker and manager.
 * The wire formats themselves are specified in docs/PROTOCOL.md. */
#ifndef GD_PROTO_H
#define GD_PROTO_H
#include <stdint.h>
#include <stddef.h>
#include <cjson/cJSON.h>

#define GD_PROTO_INFORMER "GDI1"
#define GD_PROTO_WORKER   "GDW1"
#define GD_NSHARDS        256
#define GD_SHARD_BROADCAST (-1)

uint64_t gd_fnv1a64(const char *s, size_t len);
/* Shard of a cluster key "namespace/name". */
int gd_shard_of_cluster(const char *ns, const char *name);
/* Shard of any object per docs/PROTOCOL.md, or GD_SHARD_BROADCAST. kind is the object's
 * kind (e.g. "GodisCluster", "Node"). */
int gd_shard_of_object(const char *kind, const cJSON *obj);
/* "S042" or "B" into buf (cap >= 5). */
void gd_shard_topic(int shard, char *buf, size_t cap);
/* Parses "S042" → 42, "B" → GD_SHARD_BROADCAST; -2 on anything else. */
int gd_shard_parse_topic(const char *topic);

#endif
