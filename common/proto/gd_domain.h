/* gd_domain.h — what a database domain watches and how its objects reach reconcilers: the
 * one table the framework reads.
 *
 * The framework (manager, informers' flags, the shard rule of gd_proto, the worker's mapping,
 * cache indexes and subscriptions) never names a domain's kinds or labels: it asks the table.
 * A domain is a "cluster" kind (one object per database cluster, the unit of sharding), a
 * "member" kind (one object per database member, named <cluster>-<id>), two labels its
 * children carry (the cluster's name, the member's name), and the kinds it watches, each with
 * the reconcile keys an event on it wakes (controller-runtime's For / Owns / Watches).
 *
 * The godis domain's table is common/godis/godis_domain.c; a new watched kind is one row
 * there (plus RBAC for the informer's list/watch in deploy/base/rbac, and a k8s_resources row if
 * the kind is new to the Kubernetes client). */
#ifndef GD_DOMAIN_H
#define GD_DOMAIN_H
#include <stdbool.h>
#include <stddef.h>

/* How an event on a watched kind names the keys it wakes. */
typedef enum {
    GD_WAKE_NONE = 0,
    GD_WAKE_SELF,       /* For: the object's own ns/name; updates count when its generation
                         * or metadata changed */
    GD_WAKE_OWNER,      /* Owns: its controller owner of owner_kind, else the object named by
                         * label; old and new owner both on a change; updates count unless
                         * only resourceVersion/managedFields changed (and the status too
                         * with ignore_status) */
    GD_WAKE_LABEL,      /* the object named by label, old and new (same update rule as Owns) */
    GD_WAKE_NODE_PODS,  /* Watches(Node): the object named by label on every Pod on the node;
                         * updates count when schedulability, taints or Ready changed */
} gd_wake_rule;

typedef struct {
    gd_wake_rule rule;
    const char *controller; /* whose queue: a controller name of the domain's reconcilers */
    const char *owner_kind; /* GD_WAKE_OWNER */
    const char *label;      /* GD_WAKE_OWNER (fallback), GD_WAKE_LABEL, GD_WAKE_NODE_PODS */
    bool ignore_status;     /* GD_WAKE_OWNER: an update of the status alone wakes nothing (a
                             * child whose status no reconcile reads; controller-runtime's
                             * Owns with a generation-or-metadata predicate) */
} gd_wake;

/* Which shard an object of the kind belongs to (gd_shard_of_object). */
typedef enum {
    GD_PLACE_OWNED = 0, /* the cluster named by the cluster label, else by its controller
                         * owner (the cluster kind, or a member kind named <cluster>-<id>) */
    GD_PLACE_CLUSTER,   /* the cluster kind itself: its own ns/name */
    GD_PLACE_BROADCAST, /* cluster-scoped objects every shard needs (Node, PersistentVolume) */
} gd_place;

#define GD_DOMAIN_MAX_WAKES 3
#define GD_DOMAIN_MAX_KINDS 16   /* = MGR_MAX_KINDS: the manager runs one informer each */

typedef struct {
    const char *kind;       /* "ReplicaSet" */
    gd_place place;
    bool label_selected;    /* its informer lists only objects with the cluster label (the
                             * domain's children), not every object of the kind */
    gd_wake wakes[GD_DOMAIN_MAX_WAKES];   /* none: only read (cached, never a reconcile's
                                           * trigger) */
} gd_watched_kind;

typedef struct {
    const char *name;               /* "godis": the default --reconciler set */
    const char *cluster_kind;       /* "GodisCluster" */
    const char *member_kind;        /* "Godis", named <cluster>-<id> */
    const char *cluster_label;      /* label naming a child's cluster */
    const char *member_label;       /* label naming a child's member */
    const char *member_controller;  /* the controller whose keys are member names: their
                                     * shard is their cluster's */
    int nkinds;
    gd_watched_kind kinds[GD_DOMAIN_MAX_KINDS];
} gd_domain;

/* The operator's domain (the godis one; linked from common/godis/godis_domain.c). */
const gd_domain *gd_domain_get(void);
/* The row of kind, NULL when the domain does not watch it. */
const gd_watched_kind *gd_domain_kind(const gd_domain *d, const char *kind);
/* "A,B,C": the watched kinds, comma-separated in table order; 0 or -1 when cap is short. */
int gd_domain_kind_list(const gd_domain *d, char *buf, size_t cap);
/* The length of the <cluster> part of a member name "<cluster>-<digits>", 0 when name does
 * not look like one. */
size_t gd_domain_member_cluster_len(const char *member);

#endif
