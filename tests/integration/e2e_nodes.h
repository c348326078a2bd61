/* e2e_nodes.h — extra nodes for a test that needs more of them than the devcluster's
 * three: a second node agent (bin/node-agent, several nodes per process, as tools/chaos
 * runs them) registering n more Nodes, torn down again (its pods, its Node objects, its
 * volumes) so the tests after it see the devcluster as it was. */
#ifndef E2E_NODES_H
#define E2E_NODES_H
#include <stdbool.h>
#include <sys/types.h>
#include "k8s_client.h"

typedef struct {
    pid_t pid;                /* 0: not running */
    int n;
    char prefix[32];          /* Node names are <prefix>1..<prefix>n */
    char state_dir[256];
} e2e_extra_nodes;

/* Starts the agent (its log in log_dir/<prefix>agent.log), its pods' IPs from 127.X.192.0
 * (X: the devcluster's own pod block, tools/devcluster pod_ip_base; the devcluster's agent
 * hands out from 127.X.0.1 up), its Service names in $GODIS_HOSTS_FILE under a block of its
 * own; waits until its n Nodes are Ready. false (and a message) when they did not become so. */
bool e2e_extra_nodes_start(k8s_client *c, e2e_extra_nodes *x, const char *prefix, int n,
                           const char *log_dir, int timeout_ms);
/* Stops the agent (TERM; 40 s for its pods, as tools/devcluster down), deletes its Node
 * objects and removes its state directory. Call after the pods on its nodes are gone
 * (their namespace deleted): a pod left there stays Terminating with nobody to end it.
 * Safe to call when nothing was started. */
void e2e_extra_nodes_stop(k8s_client *c, e2e_extra_nodes *x);
/* Nodes a pod without tolerations can be scheduled on now: Ready, not cordoned, no
 * NoSchedule/NoExecute taint. -1 when the list failed. */
int e2e_schedulable_nodes(k8s_client *c);

#endif
