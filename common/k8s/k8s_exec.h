/* k8s_exec.h — client-go's exec credential plugin protocol (client.authentication.k8s.io
 * v1 and v1beta1 ExecCredential), what EKS (aws eks get-token), GKE
 * (gke-gcloud-auth-plugin), AKS (kubelogin) and OIDC logins put into kubeconfigs.
 *
 * The plugin runs with our environment plus the kubeconfig's env entries and
 * KUBERNETES_EXEC_INFO (an ExecCredential whose spec says whether it may talk to the user
 * and, with provideClusterInfo, which cluster: server, tls-server-name,
 * insecure-skip-tls-verify, certificate-authority-data). Its stdout is an ExecCredential
 * whose status holds a bearer token or a client certificate and key (PEM), and optionally
 * expirationTimestamp. As in client-go:
 *   - the credential is cached until expirationTimestamp (for ever without one), and the
 *     plugin runs once at a time (a mutex), so concurrent requests share one run;
 *   - after a 401 the plugin runs again unless another request already replaced the
 *     credential that was refused (k8s_exec_refresh);
 *   - interactiveMode Never: no stdin; IfAvailable: stdin when it is a terminal; Always:
 *     an error unless stdin is a terminal. An interactive plugin's stderr goes to ours
 *     (it may prompt); otherwise stderr is captured and quoted when the plugin fails.
 * Added here: a timeout (k8s_client_opts.exec_timeout_ms, 60 s by default, the process
 * group killed when it passes), and every failure names the plugin, the kubeconfig entry,
 * the exit status and the plugin's last stderr line(s). */
#ifndef K8S_EXEC_H
#define K8S_EXEC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gd_err.h"
#include "k8s_config.h"

typedef struct k8s_exec k8s_exec;

/* An immutable credential; shared by reference (k8s_cred_release drops one). */
typedef struct {
    char *token;                        /* or NULL */
    unsigned char *cert_pem, *key_pem;  /* both or neither */
    size_t cert_len, key_len;
    int64_t expiry_wall_ms;             /* 0: none */
    int refs;
} k8s_cred;

/* cfg->exec must be set; copies what it needs (also the cluster, for provideClusterInfo). */
k8s_exec *k8s_exec_new(const k8s_config *cfg, long timeout_ms);
void      k8s_exec_destroy(k8s_exec **x);

/* The cached credential, or a fresh one when there is none or it expired. NULL on failure
 * with the reason in err (one line). */
k8s_cred *k8s_exec_get(k8s_exec *x, char *err, size_t errlen);
/* The server refused `used` (401): runs the plugin again unless the cache already holds a
 * newer credential. Returns that credential (a new reference) or NULL (err set). */
k8s_cred *k8s_exec_refresh(k8s_exec *x, const k8s_cred *used, char *err, size_t errlen);
void      k8s_cred_release(k8s_cred **c);
/* How often the plugin ran (tests, logs). */
uint64_t  k8s_exec_runs(const k8s_exec *x);

#endif
