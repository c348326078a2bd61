/* gd_proto.h — constants and shard hashing shared by informer, worker and manager.
 * The wire formats themselves are specified in docs/PROTOCOL.md. */
#ifndef GD_PROTO_H
#define GD_PROTO_H
#include <stdint.h>
#include <stddef.h>
#include <cjson/cJSON.h>
#include "gd_hash.h"

#define GD_PROTO_INFORMER "GDI1"
#define GD_PROTO_WORKER   "GDW1"
#define GD_NSHARDS        256
#define GD_SHARD_BROADCAST (-1)

/* The one rule that places everything on a shard (docs/PROTOCOL.md, "Shards"): the shard of
 * the GodisCluster ns/name, fnv1a64("<ns>/<name>") % GD_NSHARDS (gd_hash.h). The informer
 * publishes objects by gd_shard_of_object, the worker serves and the manager hands back
 * reconcile keys by gd_shard_of_key; both reduce to gd_shard_of_cluster, so they agree
 * (tests/unit/test_shard_agree.c proves it for every kind and key shape). */
int gd_shard_of_cluster(const char *ns, const char *name);
/* Shard of any object, or GD_SHARD_BROADCAST. kind is the object's kind; where it goes is
 * the domain table's (gd_domain.h): the cluster kind by its own name, cluster-scoped kinds
 * everywhere, the rest by their cluster label or controller owner. */
int gd_shard_of_object(const char *kind, const cJSON *obj);

/* Reconcile keys. The domain's member controller (gd_domain.h) reconciles members: its keys
 * are "ns/<cluster>-<id>". Every other controller's keys are "ns/<cluster>". */
/* Namespace and name are each shorter than this (Kubernetes allows 63 and 253). */
#define GD_KEY_PART_MAX 254
/* Shard of a reconcile key of controller; -1 when the key is malformed. */
int gd_shard_of_key(const char *controller, const char *key);
/* The kinds of change, named as Kubernetes watch events and GDI1 messages name them
 * ("ADDED", "MODIFIED", "DELETED"; GDI1 adds "SYNCED": the informer finished a list).
 * Defined once here for the reflector, the informer's store and publisher, the subscriber's
 * replica (gd_sub.h), the worker's feed and the manager's lease watch. */
typedef enum { GD_EV_ADDED = 1, GD_EV_MODIFIED, GD_EV_DELETED, GD_EV_SYNCED } gd_ev;
const char *gd_ev_name(gd_ev ev);          /* "ADDED", ...; "?" for anything else */
gd_ev gd_ev_parse(const char *type);       /* 0 for any other type (BOOKMARK, ERROR, ...) */

/* "S042" or "B" into buf (cap >= 5). */
void gd_shard_topic(int shard, char *buf, size_t cap);
/* Parses "S042" → 42, "B" → GD_SHARD_BROADCAST; -2 on anything else. */
int gd_shard_parse_topic(const char *topic);

#endif
