/* config.h — the manager's configuration: command-line flags and a YAML file (--config)
 * with the same keys (the flag name without "--"). Precedence: defaults < file < flags.
 * Every problem is reported as one line naming the flag or the file and key. */
#ifndef MGR_CONFIG_H
#define MGR_CONFIG_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "gd_err.h"
#include "gd_addr.h"
#include "gd_flags.h"

#define MGR_MAX_KINDS 16

#define MGR_STR 512

typedef struct {
    char config[MGR_STR];
    char kubeconfig[MGR_STR];
    char context[MGR_STR];
    char namespace_[254];               /* where the Lease lives; "" = kubeconfig's namespace */
    bool leader_elect;
    int64_t lease_duration_ms, renew_deadline_ms, retry_period_ms;
    char lease_name[254];
    char lease_namespace[254];
    char identity[256];                 /* "" = hostname_<random> */
    int workers;
    int max_concurrent_reconciles;
    char informer_bin[MGR_STR];
    char worker_bin[MGR_STR];
    char informer_kinds[MGR_STR];    /* comma list; default: the domain table's kinds */
    char worker_args[MGR_STR];       /* extra worker flags, split on spaces (tests) */
    char runtime_dir[MGR_STR];
    char cluster_domain[254];           /* workers' --cluster-domain */
    int max_concurrent_rollouts;        /* workers' --max-concurrent-rollouts */
    char default_godis_image[512];      /* workers' --default-godis-image ("": theirs) */
    char health_addr[128];
    char metrics_addr[128];
    char webhook_addr[128];             /* "0": no eviction webhook (godis-webhook) */
    char webhook_url[MGR_STR];       /* registered instead of the Service when set */
    char webhook_cert_dir[MGR_STR];  /* "" = self-managed certificates */
    char webhook_client_ca[MGR_STR];
    char webhook_bin[MGR_STR];
    /* remote workers (PROTOCOL.md §3): tcp:// endpoints from remote_port_base (0: none) */
    int remote_port_base;
    char remote_address[254];           /* bind and advertise; "" = $POD_IP */
    char curve_server_key[MGR_STR];
    char curve_allow[MGR_STR];
    int64_t heartbeat_ms;
    int64_t shutdown_grace_ms;
    char log_level[16];
    char log_format[16];
    bool help;                          /* --help or -h was given */
    bool version;                       /* --version was given */
} mgr_config;

void mgr_config_default(mgr_config *c, const char *argv0);
/* Parses argv (and the --config file it names). On error returns GD_ERR_CONFIG with one
 * line in err. --help sets c->help (the caller prints mgr_config_usage), --version
 * c->version. Flags follow gd_flags.h. */
gd_err mgr_config_parse(mgr_config *c, int argc, char **argv, char *err, size_t errlen);
/* Applies a YAML text (a mapping of flag names to scalars). source names it in errors. */
gd_err mgr_config_yaml(mgr_config *c, const char *yaml, size_t len, const char *source,
                          char *err, size_t errlen);
/* Checks a --informer-kinds list (known kinds, each once); with out (MGR_MAX_KINDS
 * entries) also writes each entry's canonical kind ("pods" → "Pod"). */
gd_err mgr_informer_kinds(const char *list, char (*out)[64], char *err, size_t errlen);
/* Cross-field checks (lease timings, bind addresses, counts). */
gd_err mgr_config_validate(const mgr_config *c, char *err, size_t errlen);
void   mgr_config_usage(FILE *out);

#endif
