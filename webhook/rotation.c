/* rotation.c — see rotation.h. */
#include "rotation.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gd_log.h"

int64_t wh_rotation_settle_s(const wh_certs *serving, int64_t now_s)
{
    int64_t left = serving->not_after_s - now_s;
    int64_t s = left > 0 ? left / 2 : 0;
    return s > WH_ROTATION_SETTLE_MAX_S ? WH_ROTATION_SETTLE_MAX_S : s;
}

/* Step 3: the stored bundle trusts the new CA and still trusts the one being served. */
static bool bundle_holds_both(const wh_rotation_ops *ops, const char *new_ca, const char *old_ca)
{
    char *stored = ops->read_bundle(ops->ud);
    bool ok = stored && wh_bundle_contains(stored, new_ca) &&
              (!old_ca || wh_bundle_contains(stored, old_ca));
    free(stored);
    return ok;
}

/* Step 5: serve pending. The CA served until now is retired when the new pair's ca.crt
 * does not hold it; its drop time is the old certificate's expiry. */
static bool switch_now(wh_rotation *r, const wh_certs *serving, int64_t now_s,
                       const wh_rotation_ops *ops)
{
    int64_t old_not_after = serving->not_after_s;
    char *old_ca = serving->ca_pem && r->pending.ca_pem &&
                   !wh_bundle_contains(r->pending.ca_pem, serving->ca_pem)
                   ? strdup(serving->ca_pem) : NULL;
    if (!ops->serve(ops->ud, &r->pending)) {
        free(old_ca);
        r->switch_at_s = now_s + 1;            /* logged by serve; again a second later */
        return false;
    }
    memset(&r->pending, 0, sizeof r->pending);
    r->have_pending = false;
    r->confirmed = false;
    if (old_ca) {
        free(r->retired_ca);
        r->retired_ca = old_ca;
        r->drop_old_at_s = old_not_after > now_s ? old_not_after + 1 : now_s;
    }
    return true;
}

bool wh_rotation_step(wh_rotation *r, const wh_certs *serving, int64_t now_s, bool no_register,
                      const wh_rotation_ops *ops)
{
    if (!r->have_pending) {
        if (!ops->generate || now_s < wh_certs_renew_at(serving)) return false;
        if (ops->generate(ops->ud, &r->pending) != GD_OK) return false;   /* next pass */
        r->have_pending = true;
        r->confirmed = false;
    }
    bool old_expired = now_s >= serving->not_after_s;
    if (!r->confirmed) {
        if (no_register) {
            r->confirmed = true;
            r->switch_at_s = now_s;
        } else if (ops->publish(ops->ud, r->pending.ca_pem) &&
                   bundle_holds_both(ops, r->pending.ca_pem, serving->ca_pem)) {
            r->confirmed = true;
            r->switch_at_s = now_s + wh_rotation_settle_s(serving, now_s);
            char settle[24];
            snprintf(settle, sizeof settle, "%lld", (long long)(r->switch_at_s - now_s));
            GD_INFO("new webhook CA registered; serving the new certificate after the settle time",
                    "settle_s", settle);
        } else if (!old_expired) {
            return false;             /* published or read back on a later pass */
        }
    }
    if (!old_expired && now_s < r->switch_at_s) return false;
    return switch_now(r, serving, now_s, ops);
}

static bool same_text(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

/* A pair just read from the directory (taken over): nothing to do when it is the one
 * served or the one already pending (its progress stands); served on the next step when
 * the API server already trusts it; else pending, to be published first. */
static void offer(wh_rotation *r, const wh_certs *serving, wh_certs *fresh, int64_t now_s,
                  bool no_register)
{
    bool served = same_text(fresh->cert_pem, serving->cert_pem) &&
                  same_text(fresh->ca_pem, serving->ca_pem);
    if (served || (r->have_pending && same_text(fresh->cert_pem, r->pending.cert_pem) &&
                   same_text(fresh->ca_pem, r->pending.ca_pem))) {
        if (served && r->have_pending) {
            GD_INFO("the certificate directory is back to the pair served; the pending one is dropped");
            wh_certs_free(&r->pending);
            r->have_pending = false;
        }
        wh_certs_free(fresh);
        return;
    }
    if (r->have_pending) wh_certs_free(&r->pending);
    r->pending = *fresh;
    memset(fresh, 0, sizeof *fresh);
    r->have_pending = true;
    /* a leaf the registered CA signs, a pair without ca.crt, --no-register: at once */
    r->confirmed = !r->pending.ca_pem || no_register ||
                   (serving->ca_pem && wh_cert_chains_to(r->pending.cert_pem, serving->ca_pem));
    r->switch_at_s = now_s;
    if (!r->confirmed)
        GD_INFO("the certificate directory brings a new CA: registering it beside the old one "
                "before serving the new certificate");
}

bool wh_rotation_dir_step(wh_rotation *r, const wh_certs *serving, int64_t stamp, int64_t now_s,
                          bool no_register, const wh_rotation_ops *ops)
{
    if (stamp != r->dir_stamp && now_s >= r->next_load_s) {
        wh_certs fresh;
        if (ops->load(ops->ud, &fresh) != GD_OK) {
            r->next_load_s = now_s + 1;          /* half-written: read again later */
        } else {
            r->dir_stamp = stamp;
            r->next_load_s = 0;
            offer(r, serving, &fresh, now_s, no_register);
        }
    }
    if (!r->have_pending) return false;
    bool switched = wh_rotation_step(r, serving, now_s, no_register, ops);
    /* after a CA change the old CA leaves the bundle at its certificate's expiry or after
     * WH_ROTATION_DIR_DROP_OLD_S, whichever comes first (an earlier retirement's drop time
     * was capped at its own switch, so capping it again changes nothing) */
    if (switched && r->drop_old_at_s > now_s + WH_ROTATION_DIR_DROP_OLD_S)
        r->drop_old_at_s = now_s + WH_ROTATION_DIR_DROP_OLD_S;
    return switched;
}

bool wh_rotation_old_ca_expired(wh_rotation *r, int64_t now_s)
{
    if (!r->drop_old_at_s || now_s < r->drop_old_at_s) return false;
    r->drop_old_at_s = 0;
    return true;
}

char *wh_rotation_take_retired_ca(wh_rotation *r)
{
    char *ca = r->retired_ca;
    r->retired_ca = NULL;
    return ca;
}

void wh_rotation_free(wh_rotation *r)
{
    if (r->have_pending) wh_certs_free(&r->pending);
    free(r->retired_ca);
    memset(r, 0, sizeof *r);
}
