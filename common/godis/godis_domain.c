/* godis_domain.c — the godis domain's one table: what the operator watches, how each
 * change reaches the two controllers, and where each object is sharded. The framework
 * reads it through gd_domain_get (gd_domain.h); nothing else names these kinds.
 *
 *   For(GodisCluster)            → godiscluster, its own key
 *   For(Godis)                   → godis, its own key
 *   Owns(Godis)                  → godiscluster: its owner GodisCluster, else cluster-name
 *   Owns(ConfigMap)              → godiscluster: its owner GodisCluster, else cluster-name
 *   Owns(ReplicaSet/Service/PVC) → godis: their owner Godis, else node-name (a ReplicaSet's
 *                                  update only when more than its status changed)
 *   Pod                          → godis: the Godis its node-name label names; and
 *                                  godiscluster: its cluster-name (readiness gates the next
 *                                  membership step)
 *   Watches(Node)                → godiscluster: every cluster with a member pod on the node
 *   PersistentVolume             → nothing: only read, by the Godis controller (whether a
 *                                  member's PV names its node, so its ReplicaSet needs no
 *                                  pin: godis_pin_node); the reconcile that uses it runs on
 *                                  the member's pod and Godis events
 *
 * The children's informers list by the cluster-name label (only the operator's objects);
 * GodisCluster, Godis, Node and PersistentVolume are listed whole (a PV carries no label of
 * ours: the provisioner or an administrator made it). */
#include "godis_domain.h"

#define OWNED_BY(ctrl, owner, label) {GD_WAKE_OWNER, ctrl, owner, label, false}
/* A ReplicaSet's status (kube-controller-manager's replica counts, written as its pod is
 * created, turns Ready, turns available) is read by no reconcile: the Godis controller reads
 * the pods themselves. Those writes were about 900 of the ~3 300 Godis reconciles of a
 * 100 x 3 converge. */
#define OWNED_SPEC_BY(ctrl, owner, label) {GD_WAKE_OWNER, ctrl, owner, label, true}

static const gd_domain GODIS = {
    .name = "godis",
    .cluster_kind = "GodisCluster",
    .member_kind = "Godis",
    .cluster_label = GODIS_LABEL_CLUSTER,
    .member_label = GODIS_LABEL_MEMBER,
    .member_controller = GODIS_CTRL_MEMBER,
    .nkinds = 9,
    .kinds = {
        {"GodisCluster", GD_PLACE_CLUSTER, false,
         {{GD_WAKE_SELF, GODIS_CTRL_CLUSTER, NULL, NULL, false}}},
        {"Godis", GD_PLACE_OWNED, false,
         {{GD_WAKE_SELF, GODIS_CTRL_MEMBER, NULL, NULL, false},
          OWNED_BY(GODIS_CTRL_CLUSTER, "GodisCluster", GODIS_LABEL_CLUSTER)}},
        {"ConfigMap", GD_PLACE_OWNED, true,
         {OWNED_BY(GODIS_CTRL_CLUSTER, "GodisCluster", GODIS_LABEL_CLUSTER)}},
        {"ReplicaSet", GD_PLACE_OWNED, true,
         {OWNED_SPEC_BY(GODIS_CTRL_MEMBER, "Godis", GODIS_LABEL_MEMBER)}},
        {"Service", GD_PLACE_OWNED, true,
         {OWNED_BY(GODIS_CTRL_MEMBER, "Godis", GODIS_LABEL_MEMBER)}},
        {"PersistentVolumeClaim", GD_PLACE_OWNED, true,
         {OWNED_BY(GODIS_CTRL_MEMBER, "Godis", GODIS_LABEL_MEMBER)}},
        {"Pod", GD_PLACE_OWNED, true,
         {{GD_WAKE_LABEL, GODIS_CTRL_MEMBER, NULL, GODIS_LABEL_MEMBER, false},
          {GD_WAKE_LABEL, GODIS_CTRL_CLUSTER, NULL, GODIS_LABEL_CLUSTER, false}}},
        {"Node", GD_PLACE_BROADCAST, false,
         {{GD_WAKE_NODE_PODS, GODIS_CTRL_CLUSTER, NULL, GODIS_LABEL_CLUSTER, false}}},
        {"PersistentVolume", GD_PLACE_BROADCAST, false, {{GD_WAKE_NONE, NULL, NULL, NULL, false}}},
    },
};

const gd_domain *gd_domain_get(void) { return &GODIS; }
