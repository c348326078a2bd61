/* register.h — the webhook's ValidatingWebhookConfiguration (admissionregistration.k8s.io/v1):
 * built from the flags, created or updated by every replica (no leadership needed: the
 * update is idempotent and the caBundle is merged, never overwritten, so replicas with
 * different self-made CAs are all trusted). */
#ifndef WH_REGISTER_H
#define WH_REGISTER_H
#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "gd_err.h"
#include "k8s_client.h"

#define WH_WEBHOOK_NAME "eviction.godis.kumkeehyun.github.com"
#define WH_CA_BUNDLE_MAX 8

typedef struct {
    const char *name;             /* the configuration's name */
    const char *url;              /* https://HOST:PORT/eviction, or NULL: the Service below */
    const char *svc_ns, *svc_name;
    int svc_port;
    const char *failure_policy;   /* "Ignore" or "Fail" */
    int timeout_s;                /* 1..30 */
    const char *drop_ca;          /* a retired CA the merge leaves out (rotation.h), or NULL */
} wh_reg_opts;

extern const k8s_resource WH_RES_VWC;

/* Our one webhook entry; ca_b64 may be NULL (no caBundle field: cert-manager's CA injector
 * fills it). */
cJSON *wh_webhook_entry(const wh_reg_opts *o, const char *ca_b64);
/* Creates the configuration, or updates it (optimistic concurrency, retried on conflict)
 * so its webhooks are exactly our entry with caBundle = own_ca merged into the bundle it
 * already has (wh_ca_bundle_merge_drop, without o->drop_ca). own_ca NULL: the caBundle it
 * has is kept as it is. *changed tells whether anything was written. */
gd_err wh_register(k8s_client *c, const wh_reg_opts *o, const char *own_ca, bool *changed,
                   char *why, size_t whylen);
/* Our entry's caBundle as the API server stores it now (PEM, malloc'd): the read-back of a
 * renewal (rotation.h); NULL when the configuration, the entry or its bundle is missing. */
char *wh_registered_bundle(k8s_client *c, const char *name);

/* A failed registration is retried after 0.5 s, doubling up to 5 s. Until it succeeds the
 * API server does not call this webhook (failurePolicy Ignore: evictions go through on the
 * PDB alone), so the wait is kept short: a retry costs one GET. (It was 1 s doubling up to
 * 30 s: a few failed attempts while the API server was slow to answer at start-up left the
 * configuration missing for over 30 s, itest_deploy_manager's deadline.) */
#define WH_REGISTER_BACKOFF_MIN_MS 500
#define WH_REGISTER_BACKOFF_MAX_MS 5000
int64_t wh_register_backoff_ms(int64_t prev_ms);

/* A write to the API server retried with that backoff: due at once, after each failure
 * 0.5 s, 1 s, ... 5 s later, at once again after a success. (The renewal's CA publish
 * retried every 200 ms pass, with a warning each time, while the API server was down.) */
typedef struct {
    int64_t next_ms, backoff_ms;
} wh_retry;
bool wh_retry_due(const wh_retry *r, int64_t now_ms);
/* Returns the wait before the next try, for the log. */
int64_t wh_retry_failed(wh_retry *r, int64_t now_ms);
void wh_retry_done(wh_retry *r);

/* "https://HOST[:PORT]/path" → HOST (an IPv6 literal without its brackets); false for
 * anything else (another scheme, no host, userinfo). */
bool wh_url_host(const char *url, char *host, size_t cap);

#endif
