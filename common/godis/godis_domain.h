/* godis_domain.h — the godis domain's names: its controllers and the labels its children
 * carry. What it watches, and which keys each change wakes, is the table in
 * godis_domain.c (gd_domain_get). */
#ifndef GODIS_DOMAIN_H
#define GODIS_DOMAIN_H
#include "gd_domain.h"

/* Controllers: "godiscluster" For GodisCluster (keys ns/<cluster>), "godis" For Godis
 * (keys ns/<cluster>-<id>, sharded with their cluster). The names are queue names, metrics
 * labels and the field of pending keys in GDW1 ASSIGN/REVOKED. */
#define GODIS_CTRL_CLUSTER "godiscluster"
#define GODIS_CTRL_MEMBER  "godis"

/* Every child of a GodisCluster carries cluster-name; a member's children carry node-name
 * (the Godis name; "node" is a godis member, not a Kubernetes Node). */
#define GODIS_LABEL_CLUSTER "cluster-name"
#define GODIS_LABEL_MEMBER  "node-name"

#endif
