/* agent.h — the node agent: a stand-in kubelet for the loopback test cluster.
 *
 * One process plays N Nodes. It registers them, renews their Leases, and runs the pods the
 * scheduler binds to them as local processes (no containers exist here): an image → program
 * map says which program plays which image, every pod gets its own IP in 127.0.0.0/8, and
 * volumes are directories under --state-dir.
 *
 * Files:
 *   agent_util.c  pure logic (image map, IP pool, env/argv building, path rewriting, hosts
 *                 block, selectors, probe specs) — no I/O, unit-tested by #including it
 *   agent_node.c  Node registration, Lease renewal, Ready heartbeat, set-ready marker files
 *   agent_pod.c   the pod table: watch events, the tick, termination (records: agent_pod.h)
 *   agent_pod_volumes.c  a pod's volume directories (secrets as files, refreshed every
 *                        --sync-frequency), its ServiceAccount credentials, and configMap
 *                        lookups for its env
 *   agent_atomic.c       a Secret volume's files in the kubelet's layout (..data swap)
 *   agent_pod_ctr.c      a container's process: start, readiness probe, exit and restarts
 *   agent_pod_status.c   the pod status PATCHed to the API
 *   agent_watch.c the pod list+watch thread feeding the main loop through a queue
 *   agent_workers.c the pod workers: a thread pool running each pod's sync off the main loop
 *   agent_hosts.c the opt-in hosts-file block for Service names
 *   agent_resize.c PVC expansion: the kubelet's part, and a stand-in external-resizer for
 *                 host-path volumes (kube-controller-manager has no plugin that resizes them)
 *   main.c        flags, subcommands, the main loop */
#ifndef NODE_AGENT_H
#define NODE_AGENT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <cjson/cJSON.h>
#include "gd_err.h"
#include "gd_time.h"

#define NA_MAX_NODES 64
#define NA_NAME_MAX 254           /* DNS subdomain names are at most 253 characters */
#define NA_PATH_MAX 1024

/* ------------------------------------------------------------------ image map */
/* One --image-map entry. The image is matched without its tag or digest and with an optional
 * registry host in front ("docker.io/kbzjung359/godis:1.2" matches "kbzjung359/godis").
 * An empty program means "run the container's command itself on this host". */
typedef struct {
    char image[256];
    char program[NA_PATH_MAX];
} na_image_entry;

typedef struct {
    na_image_entry *v;
    size_t n, cap;
} na_image_map;

/* Parses "IMAGE=PROGRAM"; a later entry for the same image replaces the earlier one. */
gd_err na_image_map_add(na_image_map *m, const char *spec, char *err, size_t errlen);
/* The longest matching entry, or NULL. */
const na_image_entry *na_image_map_find(const na_image_map *m, const char *image);
void na_image_map_free(na_image_map *m);
/* Writes the image name without tag/digest into out; returns false when it does not fit. */
bool na_image_strip_tag(const char *image, char *out, size_t cap);

/* ------------------------------------------------------------------ IP pool */
/* Pod IPs from base+1 upwards, round-robin so an address is not handed out again soon after
 * its pod died (peers may still remember it), and never while its pod lives. */
typedef struct {
    uint32_t base;            /* host order */
    uint32_t size;            /* addresses base+1 .. base+size */
    uint32_t next;            /* offset tried first by the next allocation (1-based) */
    uint8_t *used;            /* size+1 flags */
} na_ipam;

gd_err na_ipam_init(na_ipam *p, const char *base, uint32_t size, char *err, size_t errlen);
void   na_ipam_free(na_ipam *p);
gd_err na_ipam_alloc(na_ipam *p, char out[16]);          /* GD_ERR_TOO_LARGE when full */
/* Takes a specific address (adopting a pod after an agent restart): GD_ERR_ARG outside the
 * pool, GD_ERR_ALREADY_EXISTS when taken. */
gd_err na_ipam_reserve(na_ipam *p, const char *ip);
void   na_ipam_release(na_ipam *p, const char *ip);

/* ------------------------------------------------------------------ env and argv */
typedef struct {
    char *name, *value;
} na_env_var;

typedef struct {
    na_env_var *v;
    size_t n, cap;
} na_env;

gd_err      na_env_set(na_env *e, const char *name, const char *value); /* replaces */
const char *na_env_get(const na_env *e, const char *name);
void        na_env_free(na_env *e);
/* NULL-terminated "NAME=value" array (one malloc'd block per string; free with na_strv_free). */
char      **na_env_to_envp(const na_env *e);
void        na_strv_free(char ***v);

/* Kubernetes $(VAR) expansion: $(NAME) becomes NAME's value when defined in e, stays as is
 * otherwise; $$ is a literal $. Malloc'd. */
char *na_expand(const char *in, const na_env *e);

/* Looks a ConfigMap key up through the API. *out malloc'd. GD_ERR_NOT_FOUND when the map or
 * the key is missing (err says which). */
typedef gd_err (*na_cm_lookup_fn)(void *ud, const char *ns, const char *name, const char *key,
                                  char **out, char *err, size_t errlen);

typedef struct {
    const char *pod_ip, *host_ip, *node_name;
    na_cm_lookup_fn cm_lookup;
    void *ud;
} na_env_ctx;

/* A volume mount resolved to its host directory. */
typedef struct {
    char mount_path[NA_PATH_MAX];
    char host_path[NA_PATH_MAX];
} na_mount;

/* The container's environment, in Kubernetes order (env entries in order with $(VAR)
 * expansion, valueFrom configMapKeyRef / fieldRef), then the image's extra variables for names
 * the pod did not set, then the mount rule: a value that starts with a mount's mountPath (at a
 * path boundary) gets that prefix replaced by the mount's host directory (longest mountPath
 * wins). Errors: GD_ERR_NOT_FOUND (missing ConfigMap/key), GD_ERR_INVALID (unsupported or
 * malformed entry); err says which. */
gd_err na_env_build(const cJSON *pod, const cJSON *container, const char *image,
                    const na_env_ctx *ctx, const na_mount *mounts, size_t nmounts,
                    na_env *out, char *err, size_t errlen);

/* The mount rule on its own: malloc'd rewritten value, or NULL when no mount prefix matches. */
char *na_rewrite_path(const char *value, const na_mount *m, size_t n);

/* argv for a container: a mapped program replaces the image's entrypoint, i.e. command[0]
 * (or is the whole entrypoint when command is absent); command[1..] and args follow, all
 * $(VAR)-expanded. A program ending in '/' is the directory of an image of several
 * programs (godis-operator: manager, worker, ...): command[0]'s base name is run from it
 * (command required). With an empty program, command + args run as they are (command
 * required). NULL-terminated, free with na_strv_free. */
gd_err na_argv_build(const cJSON *container, const char *program, const na_env *env,
                     char ***out, char *err, size_t errlen);
/* The mount rule for arguments (argv[1..]): an argument that is a path under a mountPath,
 * or an option "-x=PATH" / "--flag=PATH" whose PATH is, gets the host directory instead
 * ("--curve-key=/etc/keys/w.key" -> "--curve-key=<volume dir>/w.key"). In place. */
gd_err na_argv_rewrite_paths(char **argv, const na_mount *m, size_t n);

/* ------------------------------------------------------------------ probes */
typedef enum { NA_PROBE_NONE = 0, NA_PROBE_TCP, NA_PROBE_HTTP, NA_PROBE_UNSUPPORTED } na_probe_kind;

typedef struct {
    na_probe_kind kind;
    int port;
    char path[256];           /* httpGet path */
    int initial_delay_s, period_s, timeout_s, success_threshold, failure_threshold;
} na_probe;

/* Parses container[field] ("readinessProbe"). A named port is resolved through the
 * container's ports. No probe → kind NONE. Kubernetes defaults: period 10, timeout 1,
 * success 1, failure 3. */
gd_err na_probe_parse(const cJSON *container, const char *field, na_probe *out,
                      char *err, size_t errlen);

/* ------------------------------------------------------------------ services and hosts */
/* A Service selector (map) matches labels when every pair is present; an empty or missing
 * selector matches nothing (such Services have no endpoints). */
bool na_selector_matches(const cJSON *selector, const cJSON *labels);

#define NA_HOSTS_BEGIN "# BEGIN godis-node-agent"
#define NA_HOSTS_END   "# END godis-node-agent"
/* Returns old with every block of this agent removed and one new block (lines, may be "")
 * appended; malloc'd. block names the agent's block when several agents share one file
 * ("# BEGIN godis-node-agent <block>"); NULL or "" is the unnamed block. Other agents'
 * blocks are kept as they are. NULL with GD_ERR_PARSE in *e when a BEGIN has no END (the
 * file is then left alone rather than guessed at). */
char *na_hosts_rewrite(const char *old, const char *lines, const char *block, gd_err *e);

/* --taint KEY[=VALUE]:EFFECT → {"key":..,"value":..,"effect":..}; NULL on bad input. */
cJSON *na_taint_parse(const char *spec, char *err, size_t errlen);

/* Joins a directory and a name after checking the name is one safe path component. */
bool na_path_join(char *out, size_t cap, const char *dir, const char *name);
/* mkdir -p with mode 0755; false on failure (errno kept). */
bool na_mkdirs(const char *path);

/* agent_atomic.c: one file of a volume's payload (path relative to the volume, may hold '/'). */
typedef struct {
    const char *path;
    const void *data;
    size_t len;
    int mode;
} na_payload_file;
/* Makes dir hold exactly these files, as the kubelet's AtomicWriter does: the files in a new
 * DIR/..<timestamp>.<random>/, the symlink DIR/..data swapped to it by one rename, DIR/<name>
 * -> ..data/<name> for each top-level name, names no longer in the payload removed, the old
 * version removed. A payload equal to what ..data holds (contents, modes, no other file)
 * writes nothing: *changed says whether a new version was written. */
gd_err na_atomic_write(const char *dir, const na_payload_file *f, size_t n, bool *changed,
                       char *err, size_t errlen);

/* agent_proc.c: processes, probes, directories */
bool  na_resolve_program(const char *prog, char *out, size_t cap);  /* PATH search; X_OK */
/* fork+execve in a new process group, stdin /dev/null, stdout+stderr appended to log_path. */
pid_t na_spawn(const char *path, char *const argv[], char *const envp[], const char *cwd,
               const char *log_path, char *err, size_t errlen);
bool  na_probe_tcp(const char *ip, int port, int timeout_ms);
bool  na_probe_http(const char *ip, int port, const char *path, int timeout_ms);
void  na_rmtree(const char *path);

/* ------------------------------------------------------------------ the agent */
typedef struct k8s_client k8s_client;

typedef struct {
    char name[NA_NAME_MAX];
    char uid[64];
    bool ready_reported;      /* what the last heartbeat said */
    int64_t ready_since_wall_ms;
    bool registered;
    bool lease_created;
} na_node;

typedef struct na_pod na_pod;
typedef struct na_queue na_queue;
typedef struct na_pool na_pool;
typedef struct na_exit na_exit;

typedef struct {
    k8s_client *api;
    na_node nodes[NA_MAX_NODES];
    int nnodes;
    char node_prefix[64];
    na_image_map images;
    na_ipam ipam;
    char state_dir[NA_PATH_MAX];
    const char *hosts_file;   /* NULL: off */
    const char *hosts_block;  /* its block's name in a shared hosts file; NULL: unnamed */
    cJSON *taints;            /* array for new Nodes */
    int heartbeat_s;          /* Lease renewal and Ready heartbeat period */
    int64_t sync_frequency_ms;/* Secret volumes re-read this often (0: the kubelet's 1 min) */
    volatile int stop;
    bool synced;              /* the first full pod list has been applied */
    na_pod *pods;             /* linked list */
    na_queue *queue;          /* watch thread → main loop */
    na_pool *workers;         /* pod workers (NULL: pods are synced inline, as in tests) */
    na_exit *exits;           /* reaped exits of busy pods' containers, matched later */
    size_t nexits, cap_exits;
    char last_hosts[65536];   /* last block written, to skip identical rewrites */
} na_agent;

/* agent_node.c */
gd_err na_node_register_all(na_agent *a);
void   na_node_heartbeat_all(na_agent *a);
bool   na_node_marked_notready(const na_agent *a, const char *node);
gd_err na_node_set_ready(k8s_client *api, const char *state_dir, const char *node, bool ready);
int    na_node_index(const na_agent *a, const char *node);

/* agent_watch.c */
typedef struct {
    char type[16];            /* ADDED MODIFIED DELETED, SYNC_BEGIN, SYNC_END */
    cJSON *pod;               /* owned; NULL for SYNC_* */
} na_event;
na_queue *na_queue_new(void);
void      na_queue_destroy(na_queue **q);
void      na_queue_push(na_queue *q, const char *type, cJSON **pod);
/* Pops one event; false when empty. */
bool      na_queue_pop(na_queue *q, na_event *ev);
gd_err    na_watch_start(na_agent *a);
void      na_watch_join(na_agent *a);

/* agent_workers.c */
#define NA_POOL_MAX_THREADS 64
#define NA_POD_WORKERS 16
typedef void (*na_job_fn)(void *arg);
na_pool *na_pool_new(int nthreads);
bool     na_pool_submit(na_pool *p, na_job_fn fn, void *arg);   /* false: out of memory */
void     na_pool_wait_idle(na_pool *p);                          /* no job queued or running */
void     na_pool_destroy(na_pool **p);                           /* runs what is queued, joins */

/* agent_pod.c (and agent_pod_*.c) */
void na_pods_apply(na_agent *a, const na_event *ev);
void na_pods_tick(na_agent *a);
void na_pods_stop_all(na_agent *a, int grace_s);
void na_pods_free_all(na_agent *a);
/* For the hosts file: calls fn for every pod with an IP that is running. */
typedef void (*na_pod_visit_fn)(void *ud, const cJSON *pod, const char *ip, bool ready);
void na_pods_visit(na_agent *a, na_pod_visit_fn fn, void *ud);

/* agent_hosts.c */
void na_hosts_sync(na_agent *a);

/* agent_resize.c: one pass over the PVCs of this agent's Nodes (main loop). */
void na_resize_sync(na_agent *a);

#endif
