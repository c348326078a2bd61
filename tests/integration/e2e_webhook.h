/* e2e_webhook.h — a godis-manager with the eviction webhook for end-to-end tests:
 * the webhook bound to a free loopback port and registered under --webhook-url, as the
 * local control plane (no Service routing) needs. */
#ifndef E2E_WEBHOOK_H
#define E2E_WEBHOOK_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "k8s_client.h"

#define E2E_WEBHOOK_CONFIG "godis-operator-eviction"

/* A free TCP port on 127.0.0.1 (bound once and released). */
int e2e_free_port(void);
/* Starts bin/godis-manager (no leader election, `workers` workers, no health/metrics
 * servers) with its log at log; with webhook, also --webhook-bind-address on a free port
 * and --webhook-url https://127.0.0.1:<port>/eviction, written into url (may be NULL). */
pid_t e2e_start_manager(const char *rundir, const char *log, int workers, bool webhook,
                        char *url, size_t urlcap);
/* Deletes the webhook's ValidatingWebhookConfiguration: it outlives its manager by design,
 * and later evictions must not call a webhook that is gone. */
void e2e_delete_webhook_config(k8s_client *c);

#endif
