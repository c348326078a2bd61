/* e2e_lib.h — helpers for end-to-end tests on the local control plane: namespaces,
 * GodisCluster create/scale/wait, and the consistency check that matters for a database
 * operator — the stand-ins' own membership == the ConfigMap == status.members. */
#ifndef E2E_LIB_H
#define E2E_LIB_H
#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>
#include <cjson/cJSON.h>
#include "k8s_client.h"

/* From $KUBECONFIG (tools/devcluster env); NULL (and a message) when unusable. */
k8s_client *e2e_client(void);
/* Creates or updates the CRDs from deploy/base/crds/ (paths relative to the repository root,
 * where the tests run) and waits until they are Established. */
bool e2e_install_crds(k8s_client *c);
/* Creates a namespace "<prefix>-<random>" and writes its name into ns. */
bool e2e_ns_create(k8s_client *c, const char *prefix, char *ns, size_t cap);
void e2e_ns_delete(k8s_client *c, const char *ns);

bool e2e_cluster_create(k8s_client *c, const char *ns, const char *name, int replicas);
/* Creates GodisCluster ns/name with spec `spec_json` (an object). */
bool e2e_cluster_create_spec(k8s_client *c, const char *ns, const char *name, const char *spec_json);
bool e2e_cluster_scale(k8s_client *c, const char *ns, const char *name, int replicas);
cJSON *e2e_cluster_get(k8s_client *c, const char *ns, const char *name);

/* Whether obj has condition `type` with status "True"/"False". */
bool e2e_condition_is(const cJSON *obj, const char *type, const char *status);
/* Waits until status says Running with `replicas` members all Ready, condition Ready=True (a
 * write through a member succeeded), no pending step and observedGeneration == generation.
 * Returns false on timeout (and prints the last status). */
bool e2e_wait_converged(k8s_client *c, const char *ns, const char *name, int replicas,
                        int timeout_ms);
/* Members from status (sorted), the ConfigMap's ids (sorted) and every member stand-in's
 * own view (sorted) must be the same set; prints the difference when not. */
bool e2e_check_consistent(k8s_client *c, const char *ns, const char *name);
bool e2e_check_consistent_v(k8s_client *c, const char *ns, const char *name, bool verbose);
/* Polls until e2e_check_consistent holds (forgotten members' pods gone, new pods up),
 * printing the differences only if it still fails at the deadline. */
bool e2e_wait_consistent(k8s_client *c, const char *ns, const char *name, int timeout_ms);
int  e2e_status_members(const cJSON *cluster, int64_t *ids, int cap);
/* A cluster that has settled: converged, consistent, and still converged after that (status
 * may be ahead of the pods: a forgotten member's pod still terminating, a replaced pod not
 * started yet; the stand-ins must agree within the timeout, and status must still say
 * converged afterwards). */
bool e2e_wait_settled(k8s_client *c, const char *ns, const char *name, int replicas,
                      int timeout_ms);

/* Watches a GodisCluster's status in a thread and checks every recorded transition:
 * status.members changes by at most one id at a time, a new id is always larger than any
 * id seen before (never reused), and nextID never decreases. It sees every state the API
 * server stored, in order (a watch resumed from the last resourceVersion, never a poll), so
 * tests read intermediate states from it: a poll can miss a state the operator has already
 * left. */
typedef struct {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    k8s_client *c;
    char ns[128], name[128];
    volatile int stop;
    char rv[64];           /* last resourceVersion seen: where a new watch resumes */
    bool synced;           /* the watch delivered the object's state at least once */
    int gaps;              /* watches that could not resume (410 Gone): states may be missed */
    int64_t max_id_seen, last_next_id;
    int64_t last[64];
    int nlast;
    int transitions;
    int64_t scale_out_ids[32];   /* every distinct non-zero status.scaleOutID, in order */
    int nscale_out;
    char violation[256];   /* "" while all is well */
} e2e_history;
/* Starts the watch and returns once it has delivered the current state (false when it did
 * not within 30 s): a change made after this returns is seen. */
bool e2e_history_start(e2e_history *h, k8s_client *c, const char *ns, const char *name);
/* Waits until the watch has seen at least n distinct scale-out intents (status.scaleOutID);
 * returns the n-th (1-based), 0 on timeout. */
int64_t e2e_history_wait_scale_out(e2e_history *h, int n, int timeout_ms);
/* Stops the watch; returns true when no violation was seen and no state was missed. */
bool e2e_history_stop(e2e_history *h);

/* Watches objects of r in ns (label/field selectors may be NULL) until pred returns true for
 * an event (type "ADDED", "MODIFIED" or "DELETED"; the current objects come first as ADDED);
 * false when timeout_ms passes first. */
typedef bool (*e2e_watch_pred)(const char *type, const cJSON *obj, void *arg);
bool e2e_watch_until(k8s_client *c, const k8s_resource *r, const char *ns, const char *label_sel,
                     const char *field_sel, e2e_watch_pred pred, void *arg, int timeout_ms);

/* Label selector helpers */
int  e2e_count(k8s_client *c, const k8s_resource *r, const char *ns, const char *selector);
bool e2e_wait_count(k8s_client *c, const k8s_resource *r, const char *ns, const char *sel,
                    int want, int timeout_ms);
int64_t e2e_now_ms(void);

#endif
