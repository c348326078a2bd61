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
 * expires (serving an expired certificate helps nobody).
 *
 * --cert-dir (cert-manager's tls.crt, tls.key, ca.crt; wh_rotation_dir_step) keeps the same
 * order when a re-read directory brings a leaf the registered CA does not sign (a CA
 * change): that pair becomes the pending one of steps 2-5, and the old CA leaves the bundle
 * at the old certificate's expiry or WH_ROTATION_DIR_DROP_OLD_S after the switch, whichever
 * comes first (a cert-manager CA may be valid for years; the other replicas read the same
 * Secret within the kubelet's sync period and switch within their own settle time, and a
 * replica that still serves the old certificate registers its CA again every minute).
 * Served at once, as before: a new leaf the served CA signs (cert-manager's usual renewal),
 * a directory without ca.crt (the caBundle is someone else's, e.g. cert-manager's CA
 * injector: the webhook cannot order what it does not publish), and --no-register (nothing
 * to publish, and perhaps no right to read the configuration back). */
#ifndef WH_ROTATION_H
#define WH_ROTATION_H
#include <stdbool.h>
#include <stdint.h>
#include "certs.h"

/* The settle time of step 4: at most this long, and at most half of what the old
 * certificate has left (a 30 s validity renews with 10 s left: 5 s). */
#define WH_ROTATION_SETTLE_MAX_S 30
/* --cert-dir: the old CA leaves the bundle at most this long after the switch. */
#define WH_ROTATION_DIR_DROP_OLD_S 600

typedef struct {
    /* self-managed: make a new pair; NULL in --cert-dir mode */
    gd_err (*generate)(void *ud, wh_certs *out);
    /* merge ca_pem into the configuration's caBundle (true: written or already there) */
    bool (*publish)(void *ud, const char *ca_pem);
    /* the caBundle as stored now (malloc'd PEM), NULL when it cannot be read */
    char *(*read_bundle)(void *ud);
    /* serve fresh (taken over on success) */
    bool (*serve)(void *ud, wh_certs *fresh);
    /* --cert-dir: read the directory; fails on a pair that is not whole (wh_certs_check) */
    gd_err (*load)(void *ud, wh_certs *out);
    void *ud;
} wh_rotation_ops;

typedef struct {
    wh_certs pending;          /* made, not yet served */
    bool have_pending;
    bool confirmed;            /* the stored bundle holds both CAs */
    int64_t switch_at_s;       /* when confirmed: when to serve pending */
    int64_t drop_old_at_s;     /* after a switch: when the old CA has expired (0: none) */
    char *retired_ca;          /* that old CA (PEM), to leave out of the bundle then */
    int64_t dir_stamp;         /* --cert-dir: the change stamp of the files last loaded */
    int64_t next_load_s;       /* --cert-dir: a load that failed is tried again from then */
} wh_rotation;

/* One pass at wall time now_s. serving: the pair served now. no_register: nothing to
 * publish (the configuration is managed elsewhere): switch at once. Returns true when the
 * pass switched the served pair. */
bool wh_rotation_step(wh_rotation *r, const wh_certs *serving, int64_t now_s, bool no_register,
                      const wh_rotation_ops *ops);
/* One pass of the --cert-dir mode. stamp: the files' change stamp now; when it differs from
 * the one last loaded the directory is read (a read that fails, e.g. a half-written update,
 * is tried again a second later) and the pair is served at once or made pending as the top
 * of this file says; then wh_rotation_step. Returns true when the pass switched. */
bool wh_rotation_dir_step(wh_rotation *r, const wh_certs *serving, int64_t stamp, int64_t now_s,
                          bool no_register, const wh_rotation_ops *ops);
/* True once the old CA's time is up since the last switch to another CA (then register
 * again, leaving out wh_rotation_take_retired_ca); clears the mark. */
bool wh_rotation_old_ca_expired(wh_rotation *r, int64_t now_s);
/* The retired CA (malloc'd PEM, the caller frees), NULL when none; clears it. */
char *wh_rotation_take_retired_ca(wh_rotation *r);
void wh_rotation_free(wh_rotation *r);
int64_t wh_rotation_settle_s(const wh_certs *serving, int64_t now_s);

#endif
