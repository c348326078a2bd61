/* main.c — `godis-standin cluster [flags]`: configuration, listeners, the accept loop.
 *
 * Configuration follows godis (cobra + viper): flags --id --listen-client --listen-peer
 * --initial-cluster --join --waldir --snapdir, each also read from the environment as
 * CLUSTER_<NAME> with the dash kept (CLUSTER_LISTEN-CLIENT, CLUSTER_INITIAL-CLUSTER, ...):
 * such names cannot be set from a shell, but Kubernetes sets them, so getenv reads them. A
 * flag given on the command line wins over the environment. As with pflag, a bare `--join`
 * means true and `--join false` leaves "false" as an ignored positional argument.
 * Unlike godis, listen addresses must be loopback (127.0.0.0/8): everything here runs on
 * one machine's loopback. Port 0 picks a free port (see --port-file). */
#include "standin.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gd_err.h"
#include "gd_log.h"

#define MAX_CONNS 512

standin g_standin = {.mu = PTHREAD_MUTEX_INITIALIZER, .kv_fd = -1, .wake_fd = -1};
static int g_wake[2] = {-1, -1};

static const char usage[] =
    "usage: godis-standin cluster [flags]\n"
    "\n"
    "A stand-in for `godis cluster` (RESP2 subset: hello, set, get, mget, cluster meet,\n"
    "cluster forget) used to test godis-operator without containers. Each flag can also be\n"
    "given as an environment variable CLUSTER_<FLAG> (e.g. CLUSTER_LISTEN-CLIENT); flags win.\n"
    "\n"
    "  --id N                  member id, a positive integer (default 1)\n"
    "  --listen-client URL     client address, http://127.x.y.z:port (default\n"
    "                          http://127.0.0.1:6379); only loopback hosts are accepted\n"
    "  --listen-peer URL       peer address (default http://127.0.0.1:6300); stand-ins\n"
    "                          elect a leader and replicate membership changes here\n"
    "  --initial-cluster LIST  id@http://host:port,... used when the WAL dir is fresh\n"
    "  --join[=BOOL]           join an existing cluster (default false)\n"
    "  --waldir DIR            membership and data are kept here (memory only if unset)\n"
    "  --snapdir DIR           created if missing; otherwise unused\n"
    "\n"
    "Stand-in extensions (not godis):\n"
    "  --port-file PATH        write \"<client port> <peer port>\" here once listening\n"
    "  --fault-delay-ms N      delay every client-port reply by N ms\n"
    "                          (env GODIS_STANDIN_FAULT_DELAY_MS)\n"
    "  --fault-refuse          close every client-port connection at once; SIGUSR1 toggles\n"
    "                          it (env GODIS_STANDIN_FAULT_REFUSE=1)\n"
    "  --fault-propose-cancel P  answer meet/forget/set with `-propose canceled by context`\n"
    "                          with probability P, after applying them, as godis sometimes\n"
    "                          does (env GODIS_STANDIN_FAULT_PROPOSE_CANCEL)\n"
    "  commands `standin members|stats|events|campaign`, `standin fault refuse on|off`,\n"
    "                          `standin fault delay-ms N`, `standin fault delay-membership-ms N`\n"
    "                          (cluster meet/forget replies only; see tools/godis-standin/standin.h)\n"
    "\n"
    "Like godis: members elect a leader over the peer port (a write needs one: without it\n"
    "the answer is `-propose canceled by context` after about 1 s); a forgotten follower\n"
    "keeps starting elections that disturb the others until it is stopped; a removed leader\n"
    "exits 0 before saving its removal, so a restart brings it back as a voter.\n"
    "SIGINT: clean exit (0). SIGTERM: stops at once (killed by the signal), recovering from\n"
    "the WAL dir on restart. Malformed or short command: exit 2, as godis crashes; a\n"
    "malformed meet is persisted first, so it recurs on restart.\n";

/* ------------------------------------------------------------------------------------------
 * Configuration */

typedef struct {
    const char *name;
    const char *value;           /* from the command line, NULL if not given */
} flag_val;

enum { F_ID, F_CLIENT, F_PEER, F_INITIAL, F_JOIN, F_WAL, F_SNAP, F_PORTFILE, F_DELAY,
       F_REFUSE, F_CANCEL, F__COUNT };
static flag_val g_flags[F__COUNT] = {
    {"id", NULL}, {"listen-client", NULL}, {"listen-peer", NULL}, {"initial-cluster", NULL},
    {"join", NULL}, {"waldir", NULL}, {"snapdir", NULL}, {"port-file", NULL},
    {"fault-delay-ms", NULL}, {"fault-refuse", NULL}, {"fault-propose-cancel", NULL},
};
static const char *const g_env[F__COUNT] = {
    "CLUSTER_ID", "CLUSTER_LISTEN-CLIENT", "CLUSTER_LISTEN-PEER", "CLUSTER_INITIAL-CLUSTER",
    "CLUSTER_JOIN", "CLUSTER_WALDIR", "CLUSTER_SNAPDIR", NULL,
    "GODIS_STANDIN_FAULT_DELAY_MS", "GODIS_STANDIN_FAULT_REFUSE",
    "GODIS_STANDIN_FAULT_PROPOSE_CANCEL",
};

static int is_bool_flag(int i)
{
    return i == F_JOIN || i == F_REFUSE;
}

static int parse_args(int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0) {
            GD_WARN("ignoring positional argument (godis ignores it too)", "arg", a);
            continue;
        }
        a += 2;
        const char *eq = strchr(a, '=');
        size_t nl = eq ? (size_t)(eq - a) : strlen(a);
        int f = -1;
        for (int k = 0; k < F__COUNT; k++)
            if (strlen(g_flags[k].name) == nl && !strncmp(g_flags[k].name, a, nl))
                f = k;
        if (f < 0) {
            fprintf(stderr, "godis-standin: unknown flag --%.*s\n%s", (int)nl, a, usage);
            return -1;
        }
        if (eq)
            g_flags[f].value = eq + 1;
        else if (is_bool_flag(f))
            g_flags[f].value = "true";
        else if (i + 1 < argc)
            g_flags[f].value = argv[++i];
        else {
            fprintf(stderr, "godis-standin: flag --%s needs a value\n", g_flags[f].name);
            return -1;
        }
    }
    return 0;
}

/* Flag, else environment, else the default. */
static const char *cfg(int f, const char *def)
{
    if (g_flags[f].value)
        return g_flags[f].value;
    const char *e = g_env[f] ? getenv(g_env[f]) : NULL;
    return e ? e : def;
}

/* strconv.ParseBool's spellings. */
static int parse_bool(const char *s, int *out)
{
    static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const f[] = {"0", "f", "F", "FALSE", "false", "False"};
    for (size_t i = 0; i < 6; i++) {
        if (!strcmp(s, t[i]))
            return *out = 1, 0;
        if (!strcmp(s, f[i]))
            return *out = 0, 0;
    }
    return -1;
}

/* http://127.x.y.z:port or http://localhost:port → host/port; loopback only. */
static int parse_listen_url(const char *url, char *host, size_t hcap, int *port)
{
    if (strncmp(url, "http://", 7) != 0)
        return -1;
    const char *h = url + 7, *colon = strrchr(h, ':');
    if (!colon || (size_t)(colon - h) >= hcap || colon == h)
        return -1;
    memcpy(host, h, (size_t)(colon - h));
    host[colon - h] = '\0';
    if (!strcmp(host, "localhost"))
        snprintf(host, hcap, "127.0.0.1");
    struct in_addr a;
    if (inet_pton(AF_INET, host, &a) != 1 || (ntohl(a.s_addr) >> 24) != 127)
        return -1;
    char *end = NULL;
    long p = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || p < 0 || p > 65535)
        return -1;
    *port = (int)p;
    return 0;
}

static int configure(standin *s)
{
    s->self_id = godis_parse_id(cfg(F_ID, "1"));
    if (!s->self_id) {
        GD_ERROR("--id must be a positive integer", "id", cfg(F_ID, "1"));
        return -1;
    }
    const char *cu = cfg(F_CLIENT, "http://127.0.0.1:6379");
    const char *pu = cfg(F_PEER, "http://127.0.0.1:6300");
    if (parse_listen_url(cu, s->client_host, sizeof(s->client_host), &s->client_port) ||
        parse_listen_url(pu, s->peer_host, sizeof(s->peer_host), &s->peer_port)) {
        GD_ERROR("listen URLs must be http://<127.x.y.z>:<port> (loopback only)",
                 "listen-client", cu, "listen-peer", pu);
        return -1;
    }
    snprintf(s->initial_cluster, sizeof(s->initial_cluster), "%s",
             cfg(F_INITIAL, "1@http://127.0.0.1:6300"));
    if (parse_bool(cfg(F_JOIN, "false"), &s->join) != 0) {
        GD_ERROR("--join must be a boolean", "join", cfg(F_JOIN, ""));
        return -1;
    }
    snprintf(s->waldir, sizeof(s->waldir), "%s", cfg(F_WAL, ""));
    snprintf(s->snapdir, sizeof(s->snapdir), "%s", cfg(F_SNAP, ""));
    snprintf(s->port_file, sizeof(s->port_file), "%s", cfg(F_PORTFILE, ""));
    int refuse = 0;
    s->fault_delay_ms = atoi(cfg(F_DELAY, "0"));
    s->fault_propose_cancel = atof(cfg(F_CANCEL, "0"));
    if (parse_bool(cfg(F_REFUSE, "false"), &refuse) != 0 || s->fault_delay_ms < 0 ||
        s->fault_propose_cancel < 0 || s->fault_propose_cancel > 1) {
        GD_ERROR("bad fault flag (delay >= 0, 0 <= propose-cancel <= 1, refuse boolean)");
        return -1;
    }
    s->fault_refuse = refuse;
    return 0;
}

/* ------------------------------------------------------------------------------------------
 * Sockets and signals */

static int listen_on(const char *host, int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)*port)};
    inet_pton(AF_INET, host, &sa.sin_addr);
    socklen_t sl = sizeof(sa);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 128) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

void standin_request_exit(standin *s, char why)
{
    if (write(s->wake_fd, &why, 1) < 0) {
        /* the pipe can only be full if an exit is already under way */
    }
}

/* SIGINT is godis's clean shutdown; SIGTERM is left at its default (the process dies at
 * once, as godis does), which is why every file it writes is replaced atomically. */
static void on_signal(int sig)
{
    int saved = errno;
    if (sig == SIGUSR1)
        g_standin.fault_refuse = !g_standin.fault_refuse;
    else
        standin_request_exit(&g_standin, 'T');
    errno = saved;
}

static int write_port_file(standin *s)
{
    if (!s->port_file[0])
        return 0;
    char tmp[1100];
    snprintf(tmp, sizeof(tmp), "%s.tmp", s->port_file);
    FILE *f = fopen(tmp, "we");
    if (!f)
        return -1;
    fprintf(f, "%d %d\n", s->client_port, s->peer_port);
    if (fclose(f) != 0 || rename(tmp, s->port_file) != 0)
        return -1;
    return 0;
}

/* peer: accepted on the peer port (faults apply to the client port only, so a test can
 * still reach a refusing member over its peer port). */
static void accept_client(standin *s, int lfd, int peer)
{
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return;
    if ((s->fault_refuse && !peer) || __atomic_load_n(&s->nconns, __ATOMIC_SEQ_CST) >= MAX_CONNS) {
        close(fd);
        return;
    }
    int *arg = malloc(2 * sizeof(int));
    if (arg) {
        arg[0] = fd;
        arg[1] = peer;
        __atomic_add_fetch(&s->nconns, 1, __ATOMIC_SEQ_CST);
        if (standin_spawn(standin_conn_thread, arg) == 0)
            arg = NULL;
        else
            __atomic_sub_fetch(&s->nconns, 1, __ATOMIC_SEQ_CST);
    }
    if (arg) {
        free(arg);
        close(fd);
    }
}

int standin_spawn(void *(*fn)(void *), void *arg)
{
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, 256 * 1024);
    int rc = pthread_create(&th, &at, fn, arg);
    pthread_attr_destroy(&at);
    return rc == 0 ? 0 : -1;
}

static int serve(standin *s, int cfd, int pfd)
{
    struct pollfd p[3] = {{.fd = cfd, .events = POLLIN}, {.fd = pfd, .events = POLLIN},
                          {.fd = g_wake[0], .events = POLLIN}};
    for (;;) {
        if (poll(p, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            return GD_EXIT_FAILURE;
        }
        if (p[0].revents & POLLIN)
            accept_client(s, cfd, 0);
        if (p[1].revents & POLLIN)
            accept_client(s, pfd, 1);  /* peers: sync, vote, heartbeat */
        if (p[2].revents & POLLIN) {
            char why = 0;
            if (read(g_wake[0], &why, 1) == 1) {
                pthread_mutex_lock(&s->mu);    /* never exit half-way through a save */
                GD_INFO(why == 'F' ? "removed from the cluster; exiting"
                                   : "SIGINT received; clean shutdown");
                return GD_EXIT_OK;
            }
        }
    }
}

int main(int argc, char **argv)
{
    gd_log_init("godis-standin", GD_LOG_INFO, 0, 2);
    if (argc < 2 || strcmp(argv[1], "cluster") != 0) {
        int help = argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"));
        fputs(usage, help ? stdout : stderr);
        return help ? 0 : GD_EXIT_FATAL_CONFIG;
    }
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 0;
        }
    }
    standin *s = &g_standin;
    if (parse_args(argc - 2, argv + 2) != 0 || configure(s) != 0)
        return GD_EXIT_FATAL_CONFIG;
    if (pipe2(g_wake, O_CLOEXEC | O_NONBLOCK) != 0)
        return GD_EXIT_FAILURE;
    s->wake_fd = g_wake[1];
    struct sigaction sa = {.sa_handler = on_signal};
    signal(SIGTERM, SIG_DFL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (standin_state_load(s) != 0)
        return GD_EXIT_FAILURE;
    int cfd = listen_on(s->client_host, &s->client_port);
    int pfd = cfd < 0 ? -1 : listen_on(s->peer_host, &s->peer_port);
    if (cfd < 0 || pfd < 0) {
        GD_ERROR("cannot listen", "host", cfd < 0 ? s->client_host : s->peer_host,
                 "error", strerror(errno));
        return GD_EXIT_FAILURE;
    }
    if (write_port_file(s) != 0) {
        GD_ERROR("cannot write --port-file", "path", s->port_file);
        return GD_EXIT_FAILURE;
    }
    char id[24], cp[8], pp[8], nm[8];
    snprintf(id, sizeof(id), "%lld", s->self_id);
    snprintf(cp, sizeof(cp), "%d", s->client_port);
    snprintf(pp, sizeof(pp), "%d", s->peer_port);
    snprintf(nm, sizeof(nm), "%d", s->nmembers);
    GD_INFO("start server", "id", id, "client", s->client_host, "client_port", cp,
            "peer_port", pp, "join", s->join ? "true" : "false", "members", nm);
    if (standin_replicate_start(s) != 0 || standin_kv_replicate_start(s) != 0 ||
        standin_election_start(s) != 0)
        return GD_EXIT_FAILURE;
    int rc = serve(s, cfd, pfd);
    close(cfd);
    close(pfd);
    /* Connection threads may still run; _exit skips freeing what they use. */
    _exit(rc);
}
