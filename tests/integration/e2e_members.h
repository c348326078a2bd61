/* e2e_members.h — a GodisCluster's members as its pods show them, for end-to-end tests that
 * check what a day-2 change (rollout, volume change) or a drain kept, replaced or moved:
 * each member's pod name, uid, IP, node, image and claim uid, and a client dialled to a
 * member. */
#ifndef E2E_MEMBERS_H
#define E2E_MEMBERS_H
#include <stdbool.h>
#include <stdint.h>
#include "godis_client.h"
#include "k8s_client.h"

typedef struct {
    int64_t id;
    char pod_uid[64], pvc_uid[64], image[128], ip[32];
    char pod[128], node[64];    /* the pod's name, the node it is bound to ("" if none) */
} e2e_member;

/* The live member pods of cluster in ns (by its cluster-name label, named <cluster>-<id> by
 * their node-name label, none being deleted), at most cap; pvc_uid is that of the claim
 * data-<godis>, "" when it has none. -1 when the pods cannot be listed. */
int e2e_members_now(k8s_client *c, const char *ns, const char *cluster, e2e_member *out, int cap);
const e2e_member *e2e_member_by_id(const e2e_member *m, int n, int64_t id);
/* A client to a member's pod IP on 6379; NULL when it cannot be made. Connect within 1 s,
 * a reply within 3 s: on a loaded 2-core machine a live member can take a second to answer,
 * and one that does not answer within 3 s is unavailable to clients too. */
godis_client *e2e_member_dial(const char *ip);

#endif
