/* register.c — see register.h. */
#include "register.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <openssl/evp.h>
#include "certs.h"
#include "gd_json.h"
#include "k8s_config.h"

const k8s_resource WH_RES_VWC = {"admissionregistration.k8s.io", "v1",
                                 "validatingwebhookconfigurations",
                                 "ValidatingWebhookConfiguration", false};

static char *b64(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    if (out) EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
    return out;
}

static cJSON *strings(const char *a, const char *b)
{
    cJSON *arr = cJSON_CreateArray();
    cJSON_AddItemToArray(arr, cJSON_CreateString(a));
    if (b) cJSON_AddItemToArray(arr, cJSON_CreateString(b));
    return arr;
}

cJSON *wh_webhook_entry(const wh_reg_opts *o, const char *ca_b64)
{
    cJSON *w = cJSON_CreateObject();
    cJSON_AddStringToObject(w, "name", WH_WEBHOOK_NAME);
    cJSON *cc = cJSON_AddObjectToObject(w, "clientConfig");
    if (o->url) {
        cJSON_AddStringToObject(cc, "url", o->url);
    } else {
        cJSON *svc = cJSON_AddObjectToObject(cc, "service");
        cJSON_AddStringToObject(svc, "namespace", o->svc_ns);
        cJSON_AddStringToObject(svc, "name", o->svc_name);
        cJSON_AddStringToObject(svc, "path", "/eviction");
        cJSON_AddNumberToObject(svc, "port", o->svc_port);
    }
    if (ca_b64) cJSON_AddStringToObject(cc, "caBundle", ca_b64);
    /* pods/eviction only; no objectSelector: for a subresource it would match the Eviction's
     * labels, not the pod's, so the handler filters member pods itself. */
    cJSON *rule = cJSON_CreateObject();
    cJSON_AddItemToObject(rule, "operations", strings("CREATE", NULL));
    cJSON_AddItemToObject(rule, "apiGroups", strings("", NULL));
    cJSON_AddItemToObject(rule, "apiVersions", strings("v1", NULL));
    cJSON_AddItemToObject(rule, "resources", strings("pods/eviction", NULL));
    cJSON_AddStringToObject(rule, "scope", "Namespaced");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(w, "rules"), rule);
    cJSON_AddStringToObject(w, "failurePolicy", o->failure_policy);
    cJSON_AddStringToObject(w, "matchPolicy", "Equivalent");
    cJSON_AddStringToObject(w, "sideEffects", "NoneOnDryRun");
    cJSON_AddNumberToObject(w, "timeoutSeconds", o->timeout_s);
    cJSON_AddItemToObject(w, "admissionReviewVersions", strings("v1", "v1beta1"));
    return w;
}

/* An entry's caBundle as PEM text (malloc'd), NULL when it has none. */
static char *entry_bundle_pem(const cJSON *entry)
{
    const char *have = gd_json_str_or(entry, "clientConfig.caBundle", NULL);
    unsigned char *pem = NULL;
    size_t len = 0;
    char *prev = NULL;
    if (have && gd_base64_decode(have, strlen(have), &pem, &len) == GD_OK) {
        prev = malloc(len + 1);
        if (prev) { memcpy(prev, pem, len); prev[len] = '\0'; }
    }
    free(pem);
    return prev;
}

/* The caBundle to write: own_ca merged into what the configuration has, base64. */
static char *merged_bundle(const cJSON *existing_entry, const char *own_ca, const char *drop_ca)
{
    char *prev = entry_bundle_pem(existing_entry);
    char *bundle = wh_ca_bundle_merge_drop(prev, own_ca, drop_ca, (int64_t)time(NULL),
                                           WH_CA_BUNDLE_MAX);
    free(prev);
    char *out = bundle ? b64(bundle) : NULL;
    free(bundle);
    return out;
}

static cJSON *our_entry(const cJSON *vwc)
{
    const cJSON *w;
    cJSON_ArrayForEach(w, gd_json_path(vwc, "webhooks"))
        if (!strcmp(gd_json_str_or(w, "name", ""), WH_WEBHOOK_NAME)) return (cJSON *)w;
    return NULL;
}

static cJSON *new_config(const wh_reg_opts *o, cJSON *entry)
{
    cJSON *v = cJSON_CreateObject();
    cJSON_AddStringToObject(v, "apiVersion", "admissionregistration.k8s.io/v1");
    cJSON_AddStringToObject(v, "kind", "ValidatingWebhookConfiguration");
    cJSON *m = cJSON_AddObjectToObject(v, "metadata");
    cJSON_AddStringToObject(m, "name", o->name);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(m, "labels"), "app.kubernetes.io/name",
                            "godis-operator");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(v, "webhooks"), entry);
    return v;
}

/* One attempt: GET, then create or update. GD_ERR_CONFLICT/ALREADY_EXISTS: try again.
 * *step names the request that failed; st is cleared before each, so a failure never
 * carries the message of the request before it (a GET's NotFound on a failed create). */
static gd_err attempt(k8s_client *c, const wh_reg_opts *o, const char *own_ca, bool *changed,
                      k8s_status *st, const char **step)
{
    cJSON *cur = NULL;
    *step = "get";
    gd_err e = k8s_get(c, &WH_RES_VWC, NULL, o->name, &cur, st);
    if (e != GD_OK && e != GD_ERR_NOT_FOUND) return e;
    const cJSON *old = cur ? our_entry(cur) : NULL;
    char *ca = NULL;
    if (own_ca) ca = merged_bundle(old, own_ca, o->drop_ca);
    else if (old) {
        const char *keep = gd_json_str_or(old, "clientConfig.caBundle", NULL);
        ca = keep ? strdup(keep) : NULL;
    }
    cJSON *entry = wh_webhook_entry(o, ca);
    free(ca);
    memset(st, 0, sizeof *st);
    if (!cur) {
        cJSON *obj = new_config(o, entry);
        *step = "create";
        e = k8s_create(c, &WH_RES_VWC, NULL, obj, NULL, st);
        cJSON_Delete(obj);
        *changed = e == GD_OK;
        return e;
    }
    cJSON *webhooks = cJSON_CreateArray();
    cJSON_AddItemToArray(webhooks, entry);
    /* The API server fills defaults (namespaceSelector, objectSelector, service port) into
     * what it stores, so compare the fields we set, not the whole entry. */
    bool same = old && cJSON_GetArraySize(gd_json_path(cur, "webhooks")) == 1;
    const cJSON *f;
    cJSON_ArrayForEach(f, entry) {
        if (!same) break;
        const cJSON *have = cJSON_GetObjectItemCaseSensitive(old, f->string);
        if (!strcmp(f->string, "clientConfig")) {
            const cJSON *g;
            cJSON_ArrayForEach(g, f)
                if (!cJSON_Compare(g, cJSON_GetObjectItemCaseSensitive(have, g->string), 1)) same = false;
        } else if (!cJSON_Compare(f, have, 1)) {
            same = false;
        }
    }
    e = GD_OK;
    if (!same) {
        cJSON_ReplaceItemInObjectCaseSensitive(cur, "webhooks", webhooks);
        webhooks = NULL;
        *step = "update";
        e = k8s_update(c, &WH_RES_VWC, cur, NULL, st);
        *changed = e == GD_OK;
    }
    cJSON_Delete(webhooks);
    cJSON_Delete(cur);
    return e;
}

gd_err wh_register(k8s_client *c, const wh_reg_opts *o, const char *own_ca, bool *changed,
                   char *why, size_t whylen)
{
    k8s_status st;
    gd_err e = GD_OK;
    const char *step = "get";
    *changed = false;
    for (int i = 0; i < 8; i++) {
        memset(&st, 0, sizeof st);
        e = attempt(c, o, own_ca, changed, &st, &step);
        if (e != GD_ERR_CONFLICT && e != GD_ERR_ALREADY_EXISTS) break;
    }
    if (e != GD_OK)
        snprintf(why, whylen, "ValidatingWebhookConfiguration %s: %s: HTTP %ld %s: %s", o->name,
                 step, st.http_status, gd_strerror(e), st.message[0] ? st.message : "(no message)");
    return e;
}

char *wh_registered_bundle(k8s_client *c, const char *name)
{
    cJSON *cur = NULL;
    k8s_status st;
    memset(&st, 0, sizeof st);
    if (k8s_get(c, &WH_RES_VWC, NULL, name, &cur, &st) != GD_OK) return NULL;
    const cJSON *entry = our_entry(cur);
    char *pem = entry ? entry_bundle_pem(entry) : NULL;
    cJSON_Delete(cur);
    return pem;
}

int64_t wh_register_backoff_ms(int64_t prev_ms)
{
    int64_t next = prev_ms > 0 ? prev_ms * 2 : WH_REGISTER_BACKOFF_MIN_MS;
    return next > WH_REGISTER_BACKOFF_MAX_MS ? WH_REGISTER_BACKOFF_MAX_MS : next;
}

bool wh_retry_due(const wh_retry *r, int64_t now_ms) { return now_ms >= r->next_ms; }

int64_t wh_retry_failed(wh_retry *r, int64_t now_ms)
{
    r->backoff_ms = wh_register_backoff_ms(r->backoff_ms);
    r->next_ms = now_ms + r->backoff_ms;
    return r->backoff_ms;
}

void wh_retry_done(wh_retry *r) { *r = (wh_retry){0}; }

/* "https://HOST[:PORT]/path" → HOST (brackets of an IPv6 literal removed). */
bool wh_url_host(const char *url, char *host, size_t cap)
{
    if (strncmp(url, "https://", 8)) return false;
    const char *h = url + 8, *end;
    if (*h == '[') {
        end = strchr(h, ']');
        if (!end) return false;
        h++;
    } else {
        end = h + strcspn(h, ":/?#");
    }
    size_t n = (size_t)(end - h);
    if (n == 0 || n >= cap || memchr(h, '@', n)) return false;
    memcpy(host, h, n);
    host[n] = '\0';
    return true;
}
