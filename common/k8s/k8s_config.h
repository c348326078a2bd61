/* k8s_config.h — where the API server is and who we are: kubeconfig (libyaml) or in-cluster.
 *
 * Resolution order, as client-go's clientcmd: an explicit --kubeconfig path; else $KUBECONFIG
 * (colon-separated, merged first-wins per map entry and for current-context); else
 * $HOME/.kube/config; else, when allowed, in-cluster (KUBERNETES_SERVICE_HOST/PORT and the
 * service-account files). Key material stays in memory (libcurl blobs); nothing is written
 * to temporary files. */
#ifndef K8S_CONFIG_H
#define K8S_CONFIG_H
#include <stdbool.h>
#include <stddef.h>
#include "gd_err.h"

typedef struct {
    const char *kubeconfig;   /* --kubeconfig, or NULL */
    const char *context;      /* --context, or NULL for current-context */
    bool allow_in_cluster;    /* fall back to in-cluster config when no kubeconfig is found */
    const char *sa_dir;       /* service-account dir; NULL = /var/run/secrets/kubernetes.io/serviceaccount */
} k8s_config_opts;

/* users[].user.exec: run a credential plugin (client-go's exec protocol, k8s_exec.h). */
typedef enum { K8S_EXEC_NEVER = 0, K8S_EXEC_IF_AVAILABLE, K8S_EXEC_ALWAYS } k8s_exec_interactive;
typedef struct {
    char  *command;           /* as written; a relative path with a '/' resolved against
                               * the kubeconfig's directory, a bare name found in $PATH */
    char **args;   size_t nargs;
    char **env;    size_t nenv;  /* "NAME=value", added to our environment */
    char  *api_version;       /* client.authentication.k8s.io/v1 or /v1beta1 */
    char  *install_hint;      /* shown when the command is not found, or NULL */
    k8s_exec_interactive interactive;
    bool   provide_cluster_info;  /* KUBERNETES_EXEC_INFO carries spec.cluster */
    char  *where;             /* "/path/kubeconfig: users[0] (name=eks)" for messages */
} k8s_exec_config;

typedef struct {
    char  *server;            /* https://127.0.0.1:6443 (no trailing slash) */
    char  *tls_server_name;   /* SNI/verification name override, or NULL */
    bool   insecure_skip_tls_verify;
    unsigned char *ca_pem;    size_t ca_pem_len;   /* CA bundle (PEM), or NULL: system CAs */
    unsigned char *cert_pem;  size_t cert_pem_len; /* client certificate (PEM), or NULL */
    unsigned char *key_pem;   size_t key_pem_len;  /* client key (PEM), or NULL */
    char  *token;             /* static bearer token, or NULL */
    char  *token_file;        /* re-read when it changes (bound SA tokens rotate), or NULL */
    k8s_exec_config *exec;    /* credentials from a plugin, or NULL (static credentials,
                               * as in client-go, win over it) */
    char  *namespace_;        /* the context's namespace, or "default" */
    char  *context_name;      /* which context was used ("in-cluster" for in-cluster) */
    char  *source;            /* file the config came from, for messages */
} k8s_config;

/* On failure returns GD_ERR_CONFIG (or GD_ERR_NOMEM) and writes one line into err naming
 * the file, the entry and what is wrong, e.g.
 *   "/x/kubeconfig: users[0] (name=admin): client-key-data: invalid base64". */
gd_err k8s_config_load(const k8s_config_opts *opts, k8s_config **out, char *err, size_t errlen);
/* Parses an in-memory kubeconfig (used by tests and by the loader). source names it. */
gd_err k8s_config_from_yaml(const char *yaml, size_t len, const char *source,
                            const char *context, k8s_config **out, char *err, size_t errlen);
gd_err k8s_config_in_cluster(const char *sa_dir, k8s_config **out, char *err, size_t errlen);
void   k8s_config_destroy(k8s_config **cfg);
void   k8s_exec_config_destroy(k8s_exec_config **e);

/* Decodes standard base64 (whitespace ignored). GD_ERR_PARSE on bad input. */
gd_err gd_base64_decode(const char *in, size_t inlen, unsigned char **out, size_t *outlen);

#endif
