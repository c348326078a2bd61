/* e2e_members.h — a GodisCluster's members as its pods show them, for end-to-end tests that
 * check what a day-2 change (rollout, volume change) kept or replaced: each member's pod
 * uid, IP, image and claim uid, and a client dialled to a member. */
#ifndef E2E_MEMBERS_H
#define E2E_MEMBERS_H
#include <stdbool.h>
#include <stdint.h>
#include "godis_client.h"
#include "k8s_client.h"

typedef struct {
    int64_t id;
    char pod_uid[64], pvc_uid[64], image[128], ip[32];
} e2e_member;

/* The live member pods of cluster in ns (by its cluster-name label, none being deleted),
 * at most cap; pvc_uid is that of the claim data-<godis>, "" when it has none. -1 when the
 * pods cannot be listed. */
int e2e_members_now(k8s_client *c, const char *ns, const char *cluster, e2e_member *out, int cap);
const e2e_member *e2e_member_by_id(const e2e_member *m, int n, int64_t id);
/* A client to a member's pod IP on 6379 (short timeouts); NULL when it cannot be made. */
godis_client *e2e_member_dial(const char *ip);

#endif
