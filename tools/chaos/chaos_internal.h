/* chaos_internal.h — the checks' parts that the chaos suite's unit test
 * (tests/unit/test_chaos_checks.c) feeds directly: the watch handlers of the one-change and
 * id-reuse checks (membership.c), the trace and audit-log line readers of the exclusive and
 * fenced checks (audit.c), and the quorum check's member selection and excuses (quorum.c).
 * Not part of chaos.h: only the checker threads and that test use them. */
#ifndef CHAOS_INTERNAL_H
#define CHAOS_INTERNAL_H
#include "chaos.h"
#include "gd_map.h"

/* ---- membership.c: one event of a watch; gap: the first state after a relist ---- */
void ch_on_cluster(chaos *x, const char *type, const cJSON *obj, bool gap);
void ch_on_configmap(chaos *x, const char *type, const cJSON *obj, bool gap);
void ch_on_godis(chaos *x, const char *type, const cJSON *obj, bool gap);
void ch_membership_reset(void);                 /* forgets every cluster's recorded state */

/* ---- audit.c ---- */
/* One line of the reconcile trace; open maps "ctrl key" to the reconcile in progress. */
void ch_trace_line(chaos *x, gd_map *open, char *line);

/* The Lease's holders over time, from the audit log. */
#define CH_MAX_TAKEOVERS 4096
typedef struct {
    int64_t at[CH_MAX_TAKEOVERS];       /* stageTimestamp of the holder's first write */
    char who[CH_MAX_TAKEOVERS][32];
    int n;
} ch_holders;
/* One line (a JSON audit event) of the API server's audit log. */
void ch_audit_line(chaos *x, ch_holders *h, const char *line);

/* ---- quorum.c ---- */
#define CH_MAX_MEMBERS 32
typedef struct {
    int64_t id;
    bool joining;           /* met, but not run yet: the scale-out member, or one just recorded */
    bool unconfirmed;       /* the scale-out member before status.members records its meet */
    bool leaving;           /* the member being forgotten, its forget maybe not committed */
    bool has_pod;           /* a pod of it (not being deleted) is bound, or unschedulable */
    char ip[32], node[64];
} ch_member;

/* The ids of one cluster that were ever seen with a pod IP (ids past the set count as run). */
#define CH_RAN_IDS 256
typedef struct { uint64_t w[CH_RAN_IDS / 64]; } ch_ran_set;
void ch_mark_run(ch_ran_set *r, int64_t id);

/* The members of one cluster as Raft may count them — status.members (the one being
 * forgotten flagged leaving, listed last), plus the one being added — with their pods' IPs and nodes (without a pod, the
 * Godis's status.volumeNode); a recorded member that has not run yet (ran: NULL when
 * unknown) is still joining. out holds CH_MAX_MEMBERS; returns how many. */
int ch_members_of(const cJSON *gc, const cJSON *pods, const cJSON *godises, const ch_ran_set *ran,
                  ch_member *out);
/* A fault took it down (a hit on its cluster and id, or on its node, not over yet; a
 * deleted pod not replaced yet), or it joined and its pod has no IP yet. */
bool ch_excused(chaos *x, int cluster, const ch_member *m);
/* Should this cluster accept writes, given what faults took down? The members no fault
 * excuses are a majority of every configuration Raft may be in: with the scale-out member
 * and, while its meet is not recorded (the operator creates the newcomer before its meet),
 * also without it; with and without the member being forgotten. */
bool ch_quorum_expected(chaos *x, int cluster, const ch_member *ms, int n);

#endif
