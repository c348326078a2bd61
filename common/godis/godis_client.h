/* godis_client.h — a small RESP2 client for godis (docs/godis.md).
 *
 * godis trusts its input: a short or malformed command kills the member process, and a
 * `cluster meet` with a non-numeric id or a malformed URL is committed to the Raft log and
 * then crashes every member on every restart. So this client is deliberately narrow:
 *  - godis_meet / godis_forget validate their arguments (positive integer id, a plain
 *    `http://host:port` URL) before anything is written to the socket, and only ever send
 *    complete arrays of bulk strings;
 *  - they retry on `-propose canceled by context` (which does not mean the change failed:
 *    both verbs are idempotent) and on transport errors, until `+OK` or their deadline;
 *  - it dials what a real cluster offers: an IP, or a name resolved by the system resolver
 *    (/etc/hosts, then the cluster's DNS) — see godis_member_hosts for the order the operator
 *    tries a member's addresses in. $GODIS_HOSTS_FILE, when set, is read before the resolver
 *    (the local control plane has no DNS; its node agent keeps Service names there);
 *  - the loopback guard belongs to the test environment, not to the product: with
 *    $GODIS_LOOPBACK_ONLY=1 (exported by `tools/devcluster env`, set by the test harnesses)
 *    or opts.loopback_only, it refuses every address outside 127.0.0.0/8 and ::1 before
 *    connecting, and never asks DNS (names come from hosts files only);
 *  - every error names the host, the address dialled and the cause (godis_last_error).
 *
 * The RESP2 reply parser is exposed (godis_reply_parse) because the godis stand-in parses
 * requests with it too, and so the hostile-input tests can reach it without a socket.
 * A godis_client is not thread-safe: use one per thread (they are cheap). */
#ifndef GODIS_CLIENT_H
#define GODIS_CLIENT_H
#include <stddef.h>
#include <stdint.h>
#include "gd_err.h"

/* Caps: a reply over any of them is refused with GD_ERR_TOO_LARGE (never allocated). */
#define GODIS_MAX_LINE     65536     /* simple string / error / integer / length line */
#define GODIS_MAX_BULK     (1 << 20) /* one bulk string */
#define GODIS_MAX_ARRAY    4096      /* elements of one array */
#define GODIS_MAX_ELEMS    65536     /* elements in one whole reply, all levels together */
#define GODIS_MAX_DEPTH    8         /* nesting of arrays */
#define GODIS_MAX_ID       2147483647LL  /* largest member id we send (godis parses an int) */
#define GODIS_MAX_URL      300

typedef enum {
    GODIS_REPLY_STATUS = 1,  /* +OK */
    GODIS_REPLY_ERROR,       /* -ERR ... */
    GODIS_REPLY_INTEGER,     /* :42 */
    GODIS_REPLY_BULK,        /* $3 foo */
    GODIS_REPLY_NIL,         /* $-1 or *-1 */
    GODIS_REPLY_ARRAY,       /* *N ... */
} godis_reply_type;

typedef struct godis_reply {
    godis_reply_type type;
    long long integer;              /* INTEGER */
    char *str;                      /* STATUS, ERROR, BULK: NUL-terminated copy (may hold NULs) */
    size_t len;
    struct godis_reply **elems;     /* ARRAY */
    size_t n;
} godis_reply;

void godis_reply_destroy(godis_reply **r);

/* Parses one RESP2 value from buf[0..len).
 *   GD_OK with *out set and *consumed = bytes used: a complete value;
 *   GD_OK with *out == NULL and *consumed == 0: the value is incomplete, read more;
 *   GD_ERR_PARSE: not RESP2; GD_ERR_TOO_LARGE: over a cap; GD_ERR_NOMEM. */
gd_err godis_reply_parse(const char *buf, size_t len, godis_reply **out, size_t *consumed);

/* Encodes argv as a RESP2 array of bulk strings into a malloc'd buffer (*out, *outlen).
 * argvlen may be NULL (strlen is used). */
gd_err godis_encode_command(int argc, const char *const *argv, const size_t *argvlen,
                            char **out, size_t *outlen);

/* Validation used by godis_meet/godis_forget; exposed for callers and tests. */
int godis_valid_id(long long id);                  /* 1..GODIS_MAX_ID */
int godis_valid_peer_url(const char *url);         /* http://host:port, nothing else */
/* Parses a decimal id string with godis_valid_id's rules; 0 if it is not one. */
long long godis_parse_id(const char *s);

typedef struct {
    int connect_timeout_ms;     /* default 1000 */
    int reply_timeout_ms;       /* default 3000 (godis answers a stuck proposal after ~1 s) */
    int loopback_only;          /* the test environment's guard (see above); default 0, and
                                   on whatever this says when $GODIS_LOOPBACK_ONLY is 1 */
} godis_opts;

#define GODIS_LOOPBACK_ENV "GODIS_LOOPBACK_ONLY"
#define GODIS_HOST_MAX 256
#define GODIS_DEFAULT_CLUSTER_DOMAIN "cluster.local"

/* A DNS name as a --cluster-domain: dot-separated labels of 1..63 letters, digits and '-'
 * (not first or last), 253 characters at most. */
int godis_valid_dns_name(const char *s);

/* 1 when $GODIS_LOOPBACK_ONLY turns the guard on for this process ("1", "true", "yes"). */
int godis_loopback_guard_env(void);

/* The hosts the operator dials for a member, best first, into hosts[]: the member pod's IP
 * from the Pod cache (skipped when pod_ip is NULL or ""), then the member's Service name
 * <godis_name>-endpoint.<ns>.svc.<cluster_domain> (NULL or "": cluster.local), which the
 * cluster's DNS resolves to the pod. Returns the count (1 or 2), -1 when a name is too long. */
int godis_member_hosts(const char *pod_ip, const char *godis_name, const char *ns,
                       const char *cluster_domain, char hosts[2][GODIS_HOST_MAX]);

typedef struct godis_client godis_client;

/* Creates a client for host:port (host: an IP or a DNS name). It connects lazily, on the
 * first command, and reconnects after a transport error. opts may be NULL for defaults.
 * Returns NULL on bad arguments or no memory. */
godis_client *godis_client_new(const char *host, int port, const godis_opts *opts);
void godis_client_destroy(godis_client **c);

/* Sends argv (array of bulk strings) and reads one reply into *reply (caller destroys).
 * A `-ERR` answer is GD_OK with reply->type == GODIS_REPLY_ERROR. Transport failures
 * (GD_ERR_TRANSPORT, GD_ERR_TIMEOUT, GD_ERR_CLOSED, GD_ERR_PROTOCOL) close the connection so
 * the next call starts clean. */
gd_err godis_command(godis_client *c, godis_reply **reply, int argc, const char *const *argv);

/* The last error text (an `-ERR` line, or a resolution/transport error naming the host, the
 * address and the cause), "" if none. */
const char *godis_last_error(const godis_client *c);

/* Resolves the host as a connect would, guard included, without connecting: the first
 * address into addr ("ip:port", "[ip6]:port"). GD_ERR_ARG when the guard refuses it,
 * GD_ERR_TRANSPORT when it does not resolve (godis_last_error says why). */
gd_err godis_client_resolve(godis_client *c, char *addr, size_t cap);
/* 1 when the client runs under the loopback guard. */
int godis_client_loopback_only(const godis_client *c);

/* `hello`: checks it is a godis (or stand-in) and fills what it says. server/version are
 * NUL-terminated, truncated to their size. */
typedef struct {
    char server[32];
    char version[32];
    long long proto;
    long long id;
    char mode[32];
    char role[32];
} godis_hello_info;
gd_err godis_hello(godis_client *c, godis_hello_info *info);

/* `cluster meet <id> <url>` / `cluster forget <id>`: validated first (GD_ERR_ARG, nothing
 * sent), then retried on `-propose canceled by context` and on transport errors until `+OK`
 * (GD_OK) or timeout_ms passes (GD_ERR_TIMEOUT). Any other error reply ends the call with
 * GD_ERR_PROTOCOL; godis_last_error() quotes it. */
gd_err godis_meet(godis_client *c, long long id, const char *peer_url, int timeout_ms);
gd_err godis_forget(godis_client *c, long long id, int timeout_ms);

/* `set` / `get` (tests and demos). godis_get: GD_ERR_NOT_FOUND for `-redis: nil`;
 * *value is malloc'd. */
gd_err godis_set(godis_client *c, const char *key, const char *value);
gd_err godis_get(godis_client *c, const char *key, char **value);

/* STAND-IN EXTENSION, not a godis command: `standin members` returns the stand-in's own
 * membership as an array of "id@url". Fills ids[]/urls[] (urls malloc'd, caller frees each)
 * up to cap entries and sets *n. Real godis answers `-ERR unknown command` (GD_ERR_PROTOCOL). */
gd_err godis_members(godis_client *c, long long *ids, char **urls, size_t cap, size_t *n);

#endif
