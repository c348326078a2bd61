/* godis_plan.h — the GodisCluster membership state machine as a pure function.
 *
 * Why a pure planner: every rule that keeps a Raft cluster safe (intent before side
 * effects, ids never reused, one membership change at a time, forget before delete,
 * add before remove) lives here, where it can be unit-tested exhaustively without an API
 * server. The reconciler (godis_reconcile_cluster.c) builds a godis_view from its cache,
 * asks for the next step, performs exactly that step, and requeues. A crash between two
 * steps is safe because every multi-step operation is first recorded in status
 * (scaleOutID / scaleInID / nextID) and the planner resumes a recorded step before it
 * considers a new one.
 *
 * Removing a member, in every case (scale-in, a Godis deleted by hand, a lost member), goes
 * in one of two orders, chosen by whether the others can commit its forget without it:
 *  - they can, with a node's worth of votes to spare (godis_plan_stop_first: 5 -> 4 and up
 *    with everyone Ready, one member a node), and the survivors counted answer right now
 *    (godis_probe_survivors): the member is stopped FIRST — its
 *    ReplicaSet to 0 replicas, marked retired (nothing scales it up again), its pods deleted
 *    — and the forget is sent only once its pods are gone. A forgotten member then never
 *    runs: no campaign disturbs the survivors, a removed leader cannot exit 0 and be
 *    restarted by its kubelet as a voter, and a manager killed between the stop and the
 *    forget leaves a down voter, which the next one forgets. The Godis, its ReplicaSet and
 *    its volume stay (the Godis's finalizer) until the forget is confirmed: what goes first
 *    is only the process, as in a crash, which Raft is built to survive.
 *  - they cannot (2 -> 1, or too few Ready): `cluster forget` first, sent to a surviving
 *    member while the victim still runs — the conf change commits in the old configuration
 *    and needs the victim's vote — then, in the same step, the stop. A worker remembers each
 *    +OK (godis_forget_memo_has), so a stop or record that failed after it (the API server
 *    unreachable) is retried as such, never by forgetting again.
 * After the forget the ConfigMap rewrite records it; a forgotten member still running is
 * stopped before anything else (a worker killed in between resumes there); then the
 * operator waits until its pods are gone (Progressing stays True), then the Godis goes
 * (finalizer last), then status. godis has no command that names its leader, so the victim
 * cannot be chosen to avoid it; the order above is what keeps a removed leader down. */
#ifndef GODIS_PLAN_H
#define GODIS_PLAN_H
#include <stdbool.h>
#include <stdint.h>

#define GODIS_MAX_REPLICAS 9
#define GODIS_MAX_MEMBERS  32      /* status.members cap (desired ≤ 9, +1 during migration) */

/* What the planner knows about one member id (a Godis of ours, or a recorded member). */
typedef struct {
    int64_t id;
    bool godis_exists;     /* the Godis object <cluster>-<id> is in the cache */
    bool godis_deleting;   /* it has a deletionTimestamp */
    bool finalizer;        /* it carries GODIS_FINALIZER (forget before it goes) */
    bool ready;            /* its pod is Ready */
    bool node_bad;         /* its pod's node is cordoned, or NotReady past the grace period */
    bool reschedule;       /* the pod/Godis asks to be moved (annotation) */
    bool volume_lost;      /* its PVC is gone (Godis status.volumeLost): never restart it */
    bool wrong_class;      /* its PVC is not of spec.storage.storageClassName: replaced (new id,
                              new PVC), one at a time, only at full strength (godis_storage.h) */
    bool running;          /* its ReplicaSet wants a pod, or one of its pods is not deleting */
    bool pod_exists;       /* any pod of it exists, even one being deleted */
    bool no_node;          /* to move, but no other node could take its replacement (godis_place.h) */
    bool unschedulable;    /* its pod is Pending: PodScheduled=False, reason Unschedulable */
    const char *blocked_why; /* for no_node / unschedulable: "cannot be ...: <why>" */
    const char *node;      /* the node its running pod is on; NULL: not known */
    bool silent;           /* Ready, but did not answer a liveness probe just now (the
                              survivors a stop first counts on are asked first: a pod stays
                              Ready for the node grace period after its node died): not
                              counted for a stop first, not sent a forget */
} godis_member;

typedef struct {
    /* spec, already validated by godis_spec_validate() */
    int desired;
    bool paused;
    /* status as recorded */
    const char *phase;                 /* "", Initializing, Running, Scaling */
    int64_t next_id, scale_out_id, scale_in_id, initial_replicas;
    int64_t members[GODIS_MAX_MEMBERS];
    int nmembers;
    bool members_recorded;             /* status.members present (false: adopting an old object) */
    /* observed */
    bool configmap_exists;
    bool configmap_parsed;             /* initial-cluster parsed as id@url,... */
    int64_t cm_ids[GODIS_MAX_MEMBERS]; /* ids listed in the ConfigMap, in order */
    int cm_n;
    godis_member observed[GODIS_MAX_MEMBERS]; /* one per member id, plus stray Godis objects */
    int nobserved;
    int64_t max_seen_id;               /* highest id of any Godis object seen (adoption safety) */
    bool bootstrap_fresh;              /* annotation GODIS_ANN_BOOTSTRAP_FRESH: the user asks
                                          for a fresh empty cluster once every member is lost */
    bool writable;                     /* a write through every member succeeded (Ready=True) */
    bool forget_acked;                 /* the forget of scale_in_id got +OK (just now, or
                                          earlier in this worker: godis_forget_memo_has) and
                                          the ConfigMap may not record it yet */
    const void *status_base;           /* cJSON: the status as the API server has it, when the
                                          cluster object given to a status write carries edits
                                          not written yet (the rollout's counts, batched into
                                          the planner's write); NULL: the object's own */
} godis_view;

typedef enum {
    GP_NOTHING = 0,        /* converged: update readiness/conditions only */
    GP_WAIT,               /* wait (e.g. for a member to be Ready); requeue */
    GP_RECORD_INIT,        /* status: phase Initializing, members 1..n, nextID n+1, initialReplicas n */
    GP_ADOPT,              /* status: members from existing Godis ids (old controller objects) */
    GP_ENSURE_CONFIGMAP,   /* create or update the ConfigMap from status.members (+ pending out id) */
    GP_CREATE_GODIS,       /* create Godis id (preferred = initial member; a member being
                              added is created with join=true before its meet) */
    GP_FINISH_INIT,        /* status: phase Running */
    GP_RECORD_SCALE_OUT,   /* status: phase Scaling, scaleOutID = nextID, nextID++ */
    GP_MEET,               /* `cluster meet id url` to a Ready member other than id, once
                              id's pod is Ready; on +OK, at once GP_FINISH_SCALE_OUT's record */
    GP_FINISH_SCALE_OUT,   /* status: members += id, scaleOutID = 0, phase Running */
    GP_RECORD_SCALE_IN,    /* status: phase Scaling, scaleInID = victim */
    GP_FORGET,             /* `cluster forget id` to a Ready member other than id, then at
                              once rewrite the ConfigMap and stop it (if it still runs) */
    GP_STOP_MEMBER,        /* ReplicaSet of id to 0 replicas (marked retired), its pods deleted:
                              before its forget where the others commit without it, else
                              right after */
    GP_DELETE_GODIS,       /* (Retain: orphan its PVC) drop the finalizer, delete Godis id */
    GP_FINISH_SCALE_IN,    /* status: members -= id, scaleInID = 0, phase Running */
    GP_ALL_LOST,           /* every member (AllMembersLost) or a majority (QuorumLost) is lost:
                              Degraded, an Event, nothing created until bootstrap-fresh */
} godis_step_kind;

typedef struct {
    godis_step_kind kind;
    int64_t id;            /* the member the step is about (0 if none) */
    bool preferred;        /* GP_CREATE_GODIS: spec.preferred */
    int64_t via_id;        /* GP_MEET / GP_FORGET: the member to send the command to */
    const char *reason;    /* short CamelCase reason for Events/conditions */
    const char *why;       /* human sentence for logs/conditions */
    bool stop_first;       /* GP_STOP_MEMBER before the forget (godis_plan_stop_first):
                              the executor first confirms the survivors answer
                              (godis_probe_survivors) and plans again with those that do not
                              marked silent */
    bool warn;             /* GP_WAIT that needs the user (the member cannot be moved or
                              scheduled): condition message "member <id> <why>", and a
                              Warning Event when it appears or changes */
    bool at_once;          /* GP_FINISH_INIT: written without waiting for readiness (an
                              initial member deleted mid-bootstrap, godis_status.c) */
} godis_step;

godis_step godis_plan_next(const godis_view *v);

/* Deterministic scale-in victim: members on bad nodes (or asking to be rescheduled), then
 * not-Ready members, then the highest id. Returns 0 when there are no members. */
int64_t godis_plan_victim(const godis_view *v);

/* The others commit victim's forget without its vote: it is stopped before its forget. */
bool godis_plan_stop_first(const godis_view *v, int64_t victim);

const char *godis_step_name(godis_step_kind k);

/* The ids the ConfigMap must list in this state (members + a member being added − a member
 * whose forget is confirmed). out must hold GODIS_MAX_MEMBERS. Returns the count. */
int godis_plan_configmap_ids(const godis_view *v, int64_t *out);

/* Spec validation as the CRD does it, for objects that bypassed it (old CRD, no schema).
 * Writes a message on failure. replicas_json_type: the cJSON type name for messages. */
typedef struct { int replicas; bool paused; } godis_spec;
bool godis_spec_validate(const void *cluster_json, godis_spec *out, char *msg, int msgcap);

/* The ConfigMap value: comma-joined <id>@http://<cluster>-<id>-endpoint.<ns>.svc.<domain>:6300
 * for ids (in the given order); domain is the cluster's DNS domain (--cluster-domain; NULL or
 * "": cluster.local), since the members dial each other by these names through the cluster's
 * DNS. Returns length or -1 if it does not fit. */
int godis_initial_cluster(char *buf, int cap, const char *ns, const char *cluster,
                          const int64_t *ids, int n, const char *domain);
int godis_peer_url(char *buf, int cap, const char *ns, const char *cluster, int64_t id,
                   const char *domain);

/* Is val a ConfigMap value as above: every entry id@<that member's peer URL>, in domain or in
 * cluster.local? The second is what the Go controller of seed 000 always wrote: an adopted
 * cluster's ConfigMap is not garbage because the operator was given another domain. */
bool godis_initial_cluster_valid(const char *val, const char *ns, const char *cluster,
                                 const char *domain);

#endif
