/* e2e_storage.h — storage an administrator sets up before a test: StorageClasses and, for
 * node-local storage, static `local` PersistentVolumes that name their node (as the static
 * provisioner, rancher local-path, TopoLVM and OpenEBS LocalPV write them). Made by one test
 * binary for its run and deleted by it. */
#ifndef E2E_STORAGE_H
#define E2E_STORAGE_H
#include <stdbool.h>
#include "k8s_client.h"

/* Creates StorageClass `name`: provisioner, volumeBindingMode WaitForFirstConsumer,
 * reclaimPolicy `reclaim` (NULL: none written, the API's default), allowVolumeExpansion when
 * expand. One that exists already counts as made (a name reused by a run that died). */
bool e2e_storage_class_create(k8s_client *c, const char *name, const char *provisioner,
                              const char *reclaim, bool expand);

#define E2E_LOCAL_PVS_MAX 32
typedef struct {
    char class_name[64];          /* local-static-<pid>: no provisioner */
    char dir[256];                /* /tmp/godis-itest-<tag>-vols-<pid>: the PVs' paths below it */
    char names[E2E_LOCAL_PVS_MAX][128];
    int n;                        /* PVs made */
    int nodes;                    /* nodes they were made on */
} e2e_local_pvs;

/* The class (no provisioner, so nothing but these PVs can bind its claims) and, on every
 * node the cluster has now, per_node PVs of `capacity`, each requiring its node by
 * kubernetes.io/hostname, Retain (no provisioner could delete them; e2e_local_pvs_delete
 * does), their paths directories below v->dir (the node agent keeps a claim's data per node
 * whatever the path says). false (and a message) on the first failure; what was made is
 * still in *v for e2e_local_pvs_delete. */
bool e2e_local_pvs_create(k8s_client *c, e2e_local_pvs *v, const char *tag, int per_node,
                          const char *capacity);
/* Deletes the PVs, the class and the directories. Safe on a zeroed *v. */
void e2e_local_pvs_delete(k8s_client *c, e2e_local_pvs *v);

#endif
