/* remote_pair.c — see remote_pair.h. */
#include "remote_pair.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "e2e_procs.h"
#include "gd_json.h"
#include "gd_domain.h"
#include "gd_proto.h"
#include "gd_time.h"

/* harness_manager.c (not its header: that one wants <cmocka.h> first) */
int http_get(int port, const char *path, char *buf, size_t cap);
double metric(int port, const char *series);

/* Whether a TCP listener could bind port on addr now (the devcluster's components take
 * random ports in the same range: 20000-31999). */
static bool port_free(const char *addr, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return false;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, addr, &sa.sin_addr);
    bool ok = bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(fd);
    return ok;
}

static bool block_free(int base)
{
    for (int p = base; p < base + RP_PORTS; p++)
        if (!port_free("127.0.0.1", p) || !port_free("127.0.0.2", p)) return false;
    return true;
}

bool rp_init(remote_pair *r, const char *tag, const char *lease_ns, const char *lease,
             const char *allow_name, int base)
{
    /* a block of RP_PORTS that nothing listens on yet: the next ones if base's is taken */
    for (int tries = 0; tries < 20 && !block_free(base); tries++) base += RP_PORTS;
    memset(r, 0, sizeof *r);
    int pid = (int)getpid();
    snprintf(r->dir, sizeof r->dir, "/tmp/itest-%s-%d", tag, pid);
    if (mkdir(r->dir, 0700) != 0) return false;
    e2e_log_dir(r->logdir, sizeof r->logdir, tag);
    snprintf(r->lease_ns, sizeof r->lease_ns, "%s", lease_ns);
    snprintf(r->lease, sizeof r->lease, "%s", lease);
    snprintf(r->allow, sizeof r->allow, "%s/%s", r->dir, allow_name);
    r->base = base;
    int remote_ports = 1 + 2 * gd_domain_get()->nkinds;   /* manager_remote.c's layout */
    if (remote_ports + 2 > RP_PORTS) return false;
    for (int i = 0; i < 2; i++) {
        snprintf(r->addr[i], sizeof r->addr[i], "127.0.0.%d", i + 1);
        snprintf(r->ident[i], sizeof r->ident[i], "%s-mgr-%d-%d", tag, pid, i);
        snprintf(r->mgrlog[i], sizeof r->mgrlog[i], "%s/manager-%d.log", r->logdir, i);
        snprintf(r->rundir[i], sizeof r->rundir[i], "%s/run-%d", r->dir, i);
        r->metrics[i] = base + remote_ports + i;
    }
    return true;
}

bool rp_keygen(const remote_pair *r, const char *name)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "bin/godis-manager keygen --out %s --name %s >/dev/null", r->dir, name);
    return system(cmd) == 0;
}

bool rp_spawn_manager(remote_pair *r, int i)
{
    char base[16], mt[32], key[300];
    snprintf(base, sizeof base, "%d", r->base);
    snprintf(mt, sizeof mt, "127.0.0.1:%d", r->metrics[i]);
    snprintf(key, sizeof key, "%s/server.key", r->dir);
    /* short lease timings: handovers within a few seconds keep the tests short */
    const char *argv[] = {"bin/godis-manager", "--kubeconfig", getenv("KUBECONFIG"),
                          "--leader-elect", "--leader-elect-resource-name", r->lease,
                          "--leader-elect-resource-namespace", r->lease_ns,
                          "--leader-elect-identity", r->ident[i],
                          "--leader-elect-lease-duration", "4s",
                          "--leader-elect-renew-deadline", "3s",
                          "--leader-elect-retry-period", "1s",
                          "--workers", "0", "--runtime-dir", r->rundir[i],
                          "--health-probe-bind-address", "0", "--metrics-bind-address", mt,
                          "--remote-port-base", base, "--remote-address", r->addr[i],
                          "--curve-server-key", key, "--curve-allow", r->allow, NULL};
    r->mgr[i] = e2e_spawn(argv, r->mgrlog[i]);
    return r->mgr[i] > 0;
}

int rp_leader(k8s_client *c, const remote_pair *r)
{
    cJSON *l = NULL;
    if (k8s_get(c, &K8S_RES_LEASES, r->lease_ns, r->lease, &l, NULL) != GD_OK) return -1;
    const char *h = gd_json_str_or(l, "spec.holderIdentity", "");
    int who = !strcmp(h, r->ident[0]) ? 0 : !strcmp(h, r->ident[1]) ? 1 : -1;
    cJSON_Delete(l);
    return who;
}

int rp_wait_leader(k8s_client *c, const remote_pair *r, int timeout_ms)
{
    int64_t end = gd_mono_ms() + timeout_ms;
    int ldr;
    while ((ldr = rp_leader(c, r)) < 0 && gd_mono_ms() < end) gd_sleep_ms(200);
    return ldr;
}

int rp_owning_slots(const remote_pair *r, int ldr, int *total)
{
    static char body[1 << 20];
    *total = 0;
    if (http_get(r->metrics[ldr], "/metrics", body, sizeof body) != 200) return -1;
    int n = 0;
    const char *pfx = "godis_worker_shards_active{worker=\"";
    for (char *p = strstr(body, pfx); p; p = strstr(p + 1, pfx)) {
        int slot = 0;
        double v = 0;
        if (sscanf(p + strlen(pfx), "%d\"} %lf", &slot, &v) == 2 && slot >= 32 && v > 0) {
            n++;
            *total += (int)v;
        }
    }
    return n;
}

bool rp_own_all(const remote_pair *r, int ldr, int slots, double losses, int timeout_ms)
{
    int64_t end = gd_mono_ms() + timeout_ms;
    int n = -1, total = 0;
    double l = -1;
    while (gd_mono_ms() < end) {
        n = rp_owning_slots(r, ldr, &total);
        l = metric(r->metrics[ldr], "godis_manager_remote_worker_losses_total");
        if (n == slots && total == GD_NSHARDS && (losses < 0 || l >= losses) &&
            metric(r->metrics[ldr], "godis_manager_shards_unassigned") == 0)
            return true;
        gd_sleep_ms(100);
    }
    fprintf(stderr, "%s: %d remote workers own %d shards, %.0f lost (want %d own all, %.0f lost)\n",
            r->ident[0], n, total, l, slots, losses);
    return false;
}
