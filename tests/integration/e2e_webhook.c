/* e2e_webhook.c — see e2e_webhook.h. */
#include "e2e_webhook.h"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "e2e_procs.h"

static const k8s_resource VWC = {"admissionregistration.k8s.io", "v1",
                                 "validatingwebhookconfigurations",
                                 "ValidatingWebhookConfiguration", false};

int e2e_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof sa;
    int port = 0;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &l) == 0)
        port = ntohs(sa.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

pid_t e2e_start_manager(const char *rundir, const char *log, int workers, bool webhook,
                        char *url, size_t urlcap)
{
    char w[16], bind[64], u[128];
    snprintf(w, sizeof w, "%d", workers);
    int port = webhook ? e2e_free_port() : 0;
    snprintf(bind, sizeof bind, "127.0.0.1:%d", port);
    snprintf(u, sizeof u, "https://127.0.0.1:%d/eviction", port);
    if (url) snprintf(url, urlcap, "%s", u);
    const char *argv[] = {"bin/godis-manager", "--kubeconfig", getenv("KUBECONFIG"),
                          "--leader-elect=false", "--workers", w, "--runtime-dir", rundir,
                          "--health-probe-bind-address", "0", "--metrics-bind-address", "0",
                          webhook ? "--webhook-bind-address" : NULL, bind, "--webhook-url", u, NULL};
    return e2e_spawn(argv, log);
}

void e2e_delete_webhook_config(k8s_client *c)
{
    k8s_delete_opts o;
    k8s_delete_opts_default(&o);
    k8s_delete(c, &VWC, NULL, E2E_WEBHOOK_CONFIG, &o, NULL);
}
