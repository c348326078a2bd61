/* godis_children.h — the objects a Godis owns (DESIGN.md §1), built as cJSON, and the
 * drift check that decides whether an existing child must be repaired.
 * Pure functions: the Godis controller and its unit tests share them. */
#ifndef GODIS_CHILDREN_H
#define GODIS_CHILDREN_H
#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#define GODIS_DEFAULT_IMAGE "kbzjung359/godis"
#define GODIS_DEFAULT_STORAGE "1Gi"
#define GODIS_CLIENT_PORT 6379
#define GODIS_PEER_PORT 6300

/* On every Godis: the operator removes it only after the member was forgotten from Raft and
 * stopped (or when its GodisCluster is being deleted), so no deletion path — by hand, by a
 * tool, by garbage collection — can take a member's pod away before its forget. */
#define GODIS_FINALIZER "godis.kumkeehyun.github.com/forget"
/* On a GodisCluster with spec.storage.reclaimPolicy Retain: its PVCs are orphaned (kept)
 * before the garbage collector could delete them with the cluster. */
#define GODIS_CLUSTER_FINALIZER "godis.kumkeehyun.github.com/retain-volumes"
/* On the ReplicaSet of a forgotten member scaled to 0: it must never run again. */
#define GODIS_ANN_RETIRED "godis.kumkeehyun.github.com/retired"
/* On a GodisCluster whose every member is lost: the user asks for a fresh, empty cluster
 * with new ids (the old data is gone). Removed by the operator once acted upon. */
#define GODIS_ANN_BOOTSTRAP_FRESH "godis.kumkeehyun.github.com/bootstrap-fresh"
/* On a PVC kept by reclaimPolicy Retain: the Godis (name/uid) it belonged to. */
#define GODIS_ANN_RETAINED_FROM "godis.kumkeehyun.github.com/retained-from"

/* What a Godis needs from its cluster (spec.image / spec.storage, with defaults). */
typedef struct {
    const char *ns;
    const char *cluster;        /* GodisCluster name (label cluster-name) */
    const char *godis;          /* Godis name <cluster>-<id> */
    const char *godis_uid;      /* for the controller ownerReference */
    int64_t id;
    bool preferred;             /* initial member: CLUSTER_JOIN=false */
    const char *image;          /* NULL: default */
    const char *storage_size;   /* NULL: default */
    const char *storage_class;  /* NULL: the cluster's default StorageClass */
    const cJSON *resources;     /* spec.resources ({requests, limits}); NULL: the defaults */
    const char *anti_affinity;  /* spec.antiAffinity: "required", "none"; else preferred */
    const char *node;           /* status.volumeNode: where its data lives; NULL: not known */
} godis_child_spec;

/* Member containers' resources when spec.resources is not given: a request the scheduler can
 * plan with, a memory limit that protects the node (godis keeps its data in memory; an
 * OOM-killed member recovers from its WAL), and no CPU limit (throttling delays Raft
 * heartbeats into needless elections). */
#define GODIS_DEFAULT_CPU_REQUEST    "100m"
#define GODIS_DEFAULT_MEMORY_REQUEST "128Mi"
#define GODIS_DEFAULT_MEMORY_LIMIT   "512Mi"

/* Two Kubernetes quantities (JSON strings or numbers) denote the same amount: the API server
 * stores them canonicalised ("1024Mi" comes back as "1Gi", "0.5" as "500m"). */
bool godis_quantity_equal(const cJSON *a, const cJSON *b);

/* Parses the id from "<cluster>-<id>"; 0 when the name does not end in -<positive int>. */
int64_t godis_id_from_name(const char *cluster, const char *godis_name);

cJSON *godis_build_service(const godis_child_spec *s);
cJSON *godis_build_pvc(const godis_child_spec *s);
cJSON *godis_build_replicaset(const godis_child_spec *s);
/* The Godis object itself, owned by its GodisCluster. */
cJSON *godis_build_godis(const godis_child_spec *s, const char *cluster_uid);
/* The ConfigMap <cluster>-config with key initial-cluster. */
cJSON *godis_build_configmap(const char *ns, const char *cluster, const char *cluster_uid,
                             const char *initial_cluster);

/* Parses the ConfigMap value "1@http://...,2@http://..." into ids; -1 when malformed. */
int godis_parse_initial_cluster(const char *value, int64_t *ids, int cap);

/* True when `actual` differs from `desired` in a field we own (ports, selector, replicas,
 * image, env, probe, volumes, owner). Fields the API server fills in are ignored.
 * kind: "Service", "ReplicaSet", "PersistentVolumeClaim". */
bool godis_child_drifted(const char *kind, const cJSON *desired, const cJSON *actual);

/* Builds a merge patch that puts the owned fields of desired onto actual (the update body
 * for a drifted child: metadata.resourceVersion of actual kept). Returns a new object. */
cJSON *godis_child_repair(const char *kind, const cJSON *desired, const cJSON *actual);

#endif
