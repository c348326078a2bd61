/* procs.c — the processes of the campaign: two godis-manager replicas (leader election on,
 * the workers and informers their children) and one node agent per node, all children of
 * this program with PR_SET_PDEATHSIG so nothing outlives it; restarted when they die, as a
 * Deployment and a rebooted node would; found and signalled by pid, never by name. */
#include "chaos.h"
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "gd_json.h"
#include "gd_time.h"

#define RESTART_DELAY_MS 2000

static pid_t spawn(chaos *x, char *const *argv, const char *log)
{
    pid_t pid = fork();
    if (pid != 0) return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int in = open("/dev/null", O_RDONLY);
    if (fd >= 0) { dup2(fd, 1); dup2(fd, 2); }
    if (in >= 0) dup2(in, 0);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    execv(argv[0], argv);
    fprintf(stderr, "chaos: exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

bool ch_start_manager(chaos *x, int i)
{
    char bin[PATH_MAX + 32], id[32], rundir[128], workers[8], log[PATH_MAX + 32];
    snprintf(bin, sizeof bin, "%s/bin/godis-manager", x->root);
    /* a new identity per start, as a restarted pod gets (hostname_random by default) */
    snprintf(id, sizeof id, "chaos-m%d-%d", i, x->mgr[i].restarts);
    /* ipc:// paths must stay short (108 bytes): /tmp, and a new one per start */
    snprintf(rundir, sizeof rundir, "/tmp/godis-chaos-%d-m%d-%d", (int)getpid(), i, x->mgr[i].restarts);
    snprintf(workers, sizeof workers, "%d", x->workers);
    snprintf(log, sizeof log, "%s/manager-%d.log", x->dir, i);
    char *argv[] = {bin, "--kubeconfig", x->kubeconfig, "--leader-elect",
                    "--leader-elect-resource-name", CH_LEASE,
                    "--leader-elect-resource-namespace", CH_LEASE_NS,
                    "--leader-elect-identity", id, "--workers", workers,
                    "--max-concurrent-reconciles", "4", "--runtime-dir", rundir,
                    "--health-probe-bind-address", "0", "--metrics-bind-address", "0",
                    "--log-level", "info", NULL};
    pid_t pid = spawn(x, argv, log);
    pthread_mutex_lock(&x->mu);
    x->mgr[i].pid = pid > 0 ? pid : 0;
    x->mgr[i].restart_at = 0;
    x->mgr[i].stopped = false;
    pthread_mutex_unlock(&x->mu);
    ch_log(x, "manager %s started (pid %d)", id, (int)pid);
    return pid > 0;
}

void ch_agent_node(int i, char *buf, size_t cap) { snprintf(buf, cap, "chaos%d-node1", i); }

bool ch_start_agent(chaos *x, int i)
{
    char bin[PATH_MAX + 32], prefix[32], state[PATH_MAX + 32], ip[32], block[16],
        log[PATH_MAX + 32];
    snprintf(bin, sizeof bin, "%s/bin/node-agent", x->root);
    snprintf(prefix, sizeof prefix, "chaos%d-node", i);
    snprintf(state, sizeof state, "%s/agent-%d", x->dir, i);
    snprintf(ip, sizeof ip, "127.%d.%d.0", x->ip_octet, 32 * i);
    snprintf(block, sizeof block, "chaos%d", i);
    snprintf(log, sizeof log, "%s/agent-%d.log", x->dir, i);
    char *argv[] = {bin, "--kubeconfig", x->kubeconfig, "--nodes", "1", "--node-prefix", prefix,
                    "--state-dir", state, "--ip-base", ip, "--hosts-file", x->hosts_file,
                    "--hosts-block", block, "--heartbeat", "5s", NULL};
    pid_t pid = spawn(x, argv, log);
    pthread_mutex_lock(&x->mu);
    x->agent[i].pid = pid > 0 ? pid : 0;
    x->agent[i].restart_at = 0;
    pthread_mutex_unlock(&x->mu);
    ch_log(x, "node agent %d (node %s1) started (pid %d)", i, prefix, (int)pid);
    return pid > 0;
}

void ch_tend(chaos *x)
{
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
        pthread_mutex_lock(&x->mu);
        for (int i = 0; i < CH_MANAGERS; i++) {
            if (x->mgr[i].pid != pid) continue;
            x->mgr[i].pid = 0;
            x->mgr[i].restarts++;
            if (!x->mgr[i].restart_at) x->mgr[i].restart_at = ch_now(x) + RESTART_DELAY_MS;
        }
        for (int i = 0; i < x->nagents; i++) {
            if (x->agent[i].pid != pid) continue;
            x->agent[i].pid = 0;
            x->agent[i].restarts++;
            if (!x->agent[i].restart_at) x->agent[i].restart_at = ch_now(x) + RESTART_DELAY_MS;
        }
        pthread_mutex_unlock(&x->mu);
    }
    if (atomic_load(&x->stop)) return;
    for (int i = 0; i < CH_MANAGERS; i++)
        if (!x->mgr[i].pid && x->mgr[i].restart_at && ch_now(x) >= x->mgr[i].restart_at)
            ch_start_manager(x, i);
    for (int i = 0; i < x->nagents; i++)
        if (!x->agent[i].pid && x->agent[i].restart_at && ch_now(x) >= x->agent[i].restart_at)
            ch_start_agent(x, i);
}

int ch_leader(chaos *x)
{
    cJSON *lease = NULL;
    int who = -1;
    if (k8s_get(x->c, &K8S_RES_LEASES, CH_LEASE_NS, CH_LEASE, &lease, NULL) == GD_OK) {
        const char *h = gd_json_str_or(lease, "spec.holderIdentity", "");
        int i, gen;
        char id[32];
        if (sscanf(h, "chaos-m%d-%d", &i, &gen) == 2 && i >= 0 && i < CH_MANAGERS) {
            snprintf(id, sizeof id, "chaos-m%d-%d", i, x->mgr[i].restarts);
            if (!strcmp(h, id)) who = i;        /* not a previous, dead generation */
        }
    }
    cJSON_Delete(lease);
    return who >= 0 && x->mgr[who].pid > 0 ? who : -1;
}

bool ch_pid_alive(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *rp = strrchr(buf, ')');
    return rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

int ch_children(pid_t parent, const char *comm, pid_t *out, int cap)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    int n = 0;
    while (d && (de = readdir(d)) && n < cap) {
        char path[300], buf[512], c[64];
        snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = '\0';
        int pid, ppid;
        char state;
        if (sscanf(buf, "%d (%63[^)]) %c %d", &pid, c, &state, &ppid) != 4) continue;
        if (ppid == parent && !strcmp(c, comm) && state != 'Z') out[n++] = pid;
    }
    if (d) closedir(d);
    return n;
}

pid_t ch_member_process(const char *pod_ip)
{
    char want[96];
    snprintf(want, sizeof want, "CLUSTER_LISTEN-CLIENT=http://%s:6379", pod_ip);
    DIR *d = opendir("/proc");
    struct dirent *de;
    pid_t found = 0;
    static char env[1 << 16];
    while (d && (de = readdir(d)) && !found) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/%s/environ", de->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        ssize_t n = read(fd, env, sizeof env - 1);
        close(fd);
        if (n <= 0) continue;
        env[n] = '\0';
        for (char *e = env; e < env + n; e += strlen(e) + 1)   /* NUL-separated entries */
            if (!strcmp(e, want)) {
                found = atoi(de->d_name);
                break;
            }
    }
    if (d) closedir(d);
    return found && ch_pid_alive(found) ? found : 0;
}

static bool run(chaos *x, const char *cmd)
{
    char full[PATH_MAX * 2 + 512];
    snprintf(full, sizeof full, "%s >>'%s/devcluster.log' 2>&1", cmd, x->dir);
    int rc = system(full);
    return rc == 0;
}

bool ch_devcluster_restart(chaos *x, const char *component)
{
    char cmd[PATH_MAX + 128];
    snprintf(cmd, sizeof cmd, "'%s/tools/devcluster' restart %s", x->root, component);
    return run(x, cmd);
}

bool ch_etcd_compact(chaos *x)
{
    char cmd[512], out[4096] = "";
    snprintf(cmd, sizeof cmd, "ETCDCTL_API=3 etcdctl --endpoints=%s endpoint status -w json 2>/dev/null", x->etcd);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    if (p) pclose(p);
    out[n] = '\0';
    cJSON *j = cJSON_Parse(out);
    cJSON *first = cJSON_IsArray(j) ? cJSON_GetArrayItem(j, 0) : j;
    int64_t rev = gd_json_int_or(first, "Status.header.revision", 0);
    cJSON_Delete(j);
    if (rev <= 0) return false;
    snprintf(cmd, sizeof cmd, "ETCDCTL_API=3 etcdctl --endpoints=%s compact %lld", x->etcd, (long long)rev);
    return run(x, cmd);
}

bool ch_hold_api_port(chaos *x)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)x->api_port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        ch_log(x, "cannot hold the API server's port %d (%s): is kube-apiserver running with "
               "--permit-port-sharing?", x->api_port, strerror(errno));
        if (fd >= 0) close(fd);
        return false;
    }
    return true;        /* kept open until exit */
}

static void stop_procs(ch_proc *p, int n, int grace_ms)
{
    for (int i = 0; i < n; i++)
        if (p[i].pid > 0) {
            kill(p[i].pid, SIGCONT);
            kill(p[i].pid, SIGTERM);
        }
    for (int64_t end = gd_mono_ms() + grace_ms; gd_mono_ms() < end;) {
        bool any = false;
        for (int i = 0; i < n; i++) {
            if (p[i].pid > 0 && waitpid(p[i].pid, NULL, WNOHANG) == p[i].pid) p[i].pid = 0;
            any |= p[i].pid > 0;
        }
        if (!any) return;
        gd_sleep_ms(100);
    }
    for (int i = 0; i < n; i++)
        if (p[i].pid > 0) {
            kill(p[i].pid, SIGKILL);
            waitpid(p[i].pid, NULL, 0);
            p[i].pid = 0;
        }
}

void ch_stop_all(chaos *x)
{
    atomic_store(&x->stop, atomic_load(&x->stop) ? atomic_load(&x->stop) : 1);
    stop_procs(x->mgr, CH_MANAGERS, 15000);
    stop_procs(x->agent, x->nagents, 25000);
}
