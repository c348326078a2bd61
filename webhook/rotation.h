/* rotation.h — the order of a self-managed certificate renewal, apart from the I/O so a unit
 * test can drive it (tests/unit/test_webhook_rotation.c).
 *
 * Each renewal makes a new CA, so the API server must trust the new CA before the webhook
 * serves a certificate it signed: with failurePolicy Ignore a call that fails TLS is let
 * through unchecked (an eviction the webhook never saw; itest_webhook_certs caught one
 * right after a renewal on a loaded machine). The order, as cert-manager's CA injector and
 * controller-runtime's cert rotator keep it:
 *   1. make the new pair and keep serving the old one;
 *   2. publish a caBundle holding both CAs (the old one is still being served);
 *   3. read the configuration back until the stored bundle holds both;
 *   4. keep serving the old certificate for a settle time: kube-apiserver loads webhook
 *      configurations through an informer, so "stored" is not yet "used" — the old
 *      certificate is valid and its CA trusted meanwhile, so waiting costs nothing;
 *   5. serve the new certificate;
 *   6. once the old certificate has expired, register again: the merge drops the old CA
 *      (wh_ca_bundle_merge keeps every CA that has not expired).
 * A pair that cannot get into the bundle is still switched to when the old certificate
 * expires (serving an expired certificate helps nobody). */
#ifndef WH_ROTATION_H
#define WH_ROTATION_H
#include <stdbool.h>
#include <stdint.h>
#include "certs.h"

/* The settle time of step 4: at most this long, and at most half of what the old
 * certificate has left (a 30 s validity renews with 10 s left: 5 s). */
#define WH_ROTATION_SETTLE_MAX_S 30

typedef struct {
    gd_err (*generate)(void *ud, wh_certs *out);
    /* merge ca_pem into the configuration's caBundle (true: written or already there) */
    bool (*publish)(void *ud, const char *ca_pem);
    /* the caBundle as stored now (malloc'd PEM), NULL when it cannot be read */
    char *(*read_bundle)(void *ud);
    /* serve fresh (taken over on success) */
    bool (*serve)(void *ud, wh_certs *fresh);
    void *ud;
} wh_rotation_ops;

typedef struct {
    wh_certs pending;          /* made, not yet served */
    bool have_pending;
    bool confirmed;            /* the stored bundle holds both CAs */
    int64_t switch_at_s;       /* when confirmed: when to serve pending */
    int64_t drop_old_at_s;     /* after a switch: when the old CA has expired (0: none) */
} wh_rotation;

/* One pass at wall time now_s. serving: the pair served now. no_register: nothing to
 * publish (the configuration is managed elsewhere): switch at once. Returns true when the
 * pass switched the served pair. */
bool wh_rotation_step(wh_rotation *r, const wh_certs *serving, int64_t now_s, bool no_register,
                      const wh_rotation_ops *ops);
/* True once the old CA has expired since the last switch (then register again to drop it);
 * clears the mark. */
bool wh_rotation_old_ca_expired(wh_rotation *r, int64_t now_s);
void wh_rotation_free(wh_rotation *r);
int64_t wh_rotation_settle_s(const wh_certs *serving, int64_t now_s);

#endif
