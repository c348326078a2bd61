/* godis_children.h — the objects a Godis owns (docs/reconcile.md, the resources), built as
 * cJSON, and the drift check that decides whether an existing child must be repaired.
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

/* The image of members of clusters without spec.image: GODIS_DEFAULT_IMAGE unless the
 * worker's --default-godis-image says otherwise (an operator upgrade that changes it rolls
 * exactly those clusters: it is part of their rendered template). Set before any reconcile. */
void        godis_set_default_image(const char *image);
const char *godis_default_image(void);

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
    double storage_bytes;       /* > 0: the size was given as an integer (the CRD allows it) */
    const char *storage_class;  /* NULL: the cluster's default StorageClass */
    const cJSON *resources;     /* spec.resources ({requests, limits}); NULL: the defaults */
    const char *anti_affinity;  /* spec.antiAffinity: "required", "none"; else preferred */
    const char *node;           /* status.volumeNode: where its data lives; NULL: not known */
    const cJSON *pod_metadata;  /* spec.podMetadata ({labels, annotations}) for member pods */
    const cJSON *settings;      /* spec.godis: godis's own settings (goMaxProcs, goGC, goMemLimit) */
} godis_child_spec;

/* Day-2 changes (issue 20): every member ReplicaSet, and the pods it makes, carry the hash of
 * the pod template the cluster's spec renders (GODIS_ANN_TEMPLATE_HASH, on the ReplicaSet's
 * metadata and its template's). The hash covers only what the spec drives: it is computed
 * from the template rendered for a canonical member (id, name, join flag and node pin are
 * the member's own, not the spec's), so all members of a cluster share one revision and a
 * new operator version whose rendering is unchanged computes the same hash and rolls
 * nothing. A member whose ReplicaSet or pod carries another hash is out of date; the
 * rollout (godis_rollout.c) replaces such members one at a time. */
#define GODIS_ANN_TEMPLATE_HASH "godis.kumkeehyun.github.com/template-hash"
#define GODIS_HASH_LEN 10

/* Fills s's cluster-driven fields (image, storage, resources, antiAffinity, podMetadata,
 * godis settings) from the GodisCluster; pointers point into cluster. */
void godis_child_spec_from_cluster(godis_child_spec *s, const cJSON *cluster);

/* The revision of the template s's cluster fields render: GODIS_HASH_LEN hex digits. */
void godis_template_hash(const godis_child_spec *s, char out[GODIS_HASH_LEN + 1]);

/* The template hash an object (ReplicaSet or Pod) carries, or NULL. */
const char *godis_object_hash(const cJSON *obj);

/* On a ReplicaSet made before template hashes (by an earlier version of this operator, or
 * by the Go controller it replaces), stamped with the hash when adopted: the revision its
 * pods without a hash annotation count as. Adoption and operator upgrades restart nobody
 * (issue 15.3's drop-in promise, issue 20.7): such a member takes a later spec change by the
 * rollout, like any other. */
#define GODIS_ANN_UNHASHED_PODS "godis.kumkeehyun.github.com/unhashed-pods-revision"

/* Whether a pod runs the template revision want_hash (godis_template_hash): its hash
 * annotation says so, or — a pod made before template hashes, with none — the revision its
 * ReplicaSet rs (as it is; may be NULL) was adopted at. */
bool godis_pod_on_template(const cJSON *pod, const char *want_hash, const cJSON *rs);

/* What the Godis controller writes to an existing ReplicaSet (NULL: nothing). On the desired
 * revision, drift is repaired in full; a ReplicaSet from before template hashes is adopted in
 * place: the desired template and hash, GODIS_ANN_UNHASHED_PODS for the pod it runs (which
 * is not restarted, as before template hashes); one on another revision is the rollout's to
 * update, one member at a time, so only what is no rollout's business is repaired here:
 * replicas 1 and the pin to the data's node. A pin actual has and desired lacks (its PV
 * confines it: godis_pin_node) is no drift and is kept by every repair: never unpinned. */
cJSON *godis_replicaset_fix(const cJSON *desired, const cJSON *actual);

/* Where a member's ReplicaSet carries the pin to its data's node. */
#define GODIS_RS_PIN "spec.template.spec.affinity.nodeAffinity"

/* Whether PersistentVolume pv (NULL: not known) keeps every pod that mounts it on node by
 * itself: spec.nodeAffinity.required, each of whose nodeSelectorTerms requires exactly that
 * node (kubernetes.io/hostname In [node] or metadata.name In [node]), as rancher local-path,
 * local PVs, TopoLVM and OpenEBS LocalPV write it. Anything else (no affinity, a zone,
 * several nodes) is false. */
bool godis_pv_confines_to_node(const cJSON *pv, const char *node);

/* The node a member's ReplicaSet is pinned to (godis_child_spec.node): volume_node
 * (status.volumeNode), unless the PV bound to its claim data-<godis>, as e's cache has it,
 * confines it to that node already; then NULL, and the pin's ReplicaSet update (one of a
 * new member's few API requests) is saved: the scheduler places its pod there anyway.
 * Whatever is not known (claim unbound, PV not cached) keeps the pin. A ReplicaSet pinned
 * before stays pinned (godis_replicaset_fix never removes a pin). The one reader of the
 * cache here; everything else in this file is pure. */
struct godis_env;
const char *godis_pin_node(struct godis_env *e, const char *ns, const char *godis,
                           const char *volume_node);
/* The same, for a caller that holds the claim already (borrowed; NULL: not known). */
const char *godis_pin_node_for_claim(struct godis_env *e, const cJSON *pvc,
                                     const char *volume_node);

/* Whether the only change godis_replicaset_fix makes to actual is the pin to the data's
 * node that desired has and actual lacks (a member that has just recorded its volumeNode):
 * a planned update, not drift. */
bool godis_replicaset_pin_only(const cJSON *desired, const cJSON *actual);

/* Member containers' resources when spec.resources is not given: a request the scheduler can
 * plan with, a memory limit that protects the node (godis keeps its data in memory; an
 * OOM-killed member recovers from its WAL), and no CPU limit (throttling delays Raft
 * heartbeats into needless elections). */
#define GODIS_DEFAULT_CPU_REQUEST    "100m"
#define GODIS_DEFAULT_MEMORY_REQUEST "128Mi"
#define GODIS_DEFAULT_MEMORY_LIMIT   "512Mi"

/* GOMEMLIMIT's syntax: digits with an optional unit B, KiB, MiB, GiB, TiB. */
bool godis_go_memlimit_valid(const char *s);

/* Labels of member pods the operator owns: spec.podMetadata.labels cannot set them. */
bool godis_reserved_pod_label(const char *key);
/* A label or annotation key Kubernetes accepts: [prefix/]name, prefix a DNS subdomain (253),
 * name 1..63 of [A-Za-z0-9-_.] beginning and ending alphanumeric. Keys that are not are left
 * out of the pod template (the API server would refuse the whole ReplicaSet). */
bool godis_metadata_key_valid(const char *key);
/* A label value: at most 63 of [A-Za-z0-9-_.], beginning and ending alphanumeric, or "". */
bool godis_label_value_valid(const char *v);

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
