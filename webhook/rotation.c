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

bool wh_rotation_step(wh_rotation *r, const wh_certs *serving, int64_t now_s, bool no_register,
                      const wh_rotation_ops *ops)
{
    if (!r->have_pending) {
        if (now_s < wh_certs_renew_at(serving)) return false;
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
    int64_t old_not_after = serving->not_after_s;
    if (!ops->serve(ops->ud, &r->pending)) return false;
    memset(&r->pending, 0, sizeof r->pending);
    r->have_pending = false;
    r->confirmed = false;
    r->drop_old_at_s = old_not_after > now_s ? old_not_after + 1 : now_s;
    return true;
}

bool wh_rotation_old_ca_expired(wh_rotation *r, int64_t now_s)
{
    if (!r->drop_old_at_s || now_s < r->drop_old_at_s) return false;
    r->drop_old_at_s = 0;
    return true;
}

void wh_rotation_free(wh_rotation *r)
{
    if (r->have_pending) wh_certs_free(&r->pending);
    memset(r, 0, sizeof *r);
}
