/* test_webhook_rotation.c — the order of a self-managed certificate renewal (rotation.h)
 * against a fake configuration store: the new certificate is never served before the stored
 * caBundle holds its CA beside the old one and a settle time has passed (the API server
 * loads the bundle through an informer; serving the new certificate at once let evictions
 * through unchecked in itest_webhook_certs), and the old CA leaves the bundle only after
 * the old certificate has expired. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include "../../webhook/certs.h"
#include "../../webhook/rotation.h"
#include "gd_log.h"

typedef struct {
    char *stored;             /* the caBundle as a GET answers it */
    char *written;            /* the last publish, visible after stale_reads more reads */
    int stale_reads;
    bool publish_fails;
    int generated, published, reads, served;
    wh_certs serving;         /* what the fake server serves */
    int64_t now;
    char order[64];           /* g(enerate) p(ublish) r(ead) s(erve), in call order */
} fake;

static void note(fake *f, char c)
{
    size_t n = strlen(f->order);
    if (n + 1 < sizeof f->order) { f->order[n] = c; f->order[n + 1] = '\0'; }
}

static gd_err f_generate(void *ud, wh_certs *out)
{
    fake *f = ud;
    char why[200];
    const char *hosts[] = {"127.0.0.1"};
    f->generated++;
    note(f, 'g');
    return wh_certs_generate(hosts, 1, 30, out, why, sizeof why);
}

static bool f_publish(void *ud, const char *ca_pem)
{
    fake *f = ud;
    note(f, 'p');
    if (f->publish_fails) return false;
    f->published++;
    free(f->written);
    f->written = wh_ca_bundle_merge(f->stored, ca_pem, f->now, 8);
    return true;
}

static char *f_read_bundle(void *ud)
{
    fake *f = ud;
    f->reads++;
    note(f, 'r');
    if (f->written && f->stale_reads-- <= 0) {
        free(f->stored);
        f->stored = f->written;
        f->written = NULL;
    }
    return f->stored ? strdup(f->stored) : NULL;
}

static bool f_serve(void *ud, wh_certs *fresh)
{
    fake *f = ud;
    note(f, 's');
    /* the invariant: what is served is trusted by the stored bundle */
    assert_true(wh_bundle_contains(f->stored, fresh->ca_pem));
    f->served++;
    wh_certs_free(&f->serving);
    f->serving = *fresh;
    memset(fresh, 0, sizeof *fresh);
    return true;
}

static const wh_rotation_ops OPS = {f_generate, f_publish, f_read_bundle, f_serve, NULL};

/* A fake serving a fresh 30 s pair whose CA is registered. */
static void fake_init(fake *f, wh_rotation_ops *ops)
{
    memset(f, 0, sizeof *f);
    assert_int_equal(f_generate(f, &f->serving), GD_OK);
    f->stored = wh_ca_bundle_merge(NULL, f->serving.ca_pem, (int64_t)time(NULL), 8);
    f->order[0] = '\0';
    f->generated = 0;
    *ops = OPS;
    ops->ud = f;
}

static void fake_free(fake *f)
{
    free(f->stored);
    free(f->written);
    wh_certs_free(&f->serving);
}

static bool step(wh_rotation *r, fake *f, const wh_rotation_ops *ops, int64_t now, bool no_reg)
{
    f->now = now;
    return wh_rotation_step(r, &f->serving, now, no_reg, ops);
}

static int count(const char *pem)
{
    int n = 0;
    for (const char *p = pem; p && (p = strstr(p, "BEGIN CERTIFICATE")); p++) n++;
    return n;
}

static void test_new_ca_stored_before_the_switch(void **st)
{
    (void)st;
    fake f;
    wh_rotation_ops ops;
    fake_init(&f, &ops);
    wh_rotation r = {0};
    char *old_ca = strdup(f.serving.ca_pem);
    int64_t renew = wh_certs_renew_at(&f.serving), old_end = f.serving.not_after_s;
    assert_false(step(&r, &f, &ops, renew - 1, false));
    assert_int_equal(f.generated, 0);
    /* the stored bundle lags three reads behind the write: no switch while it does */
    f.stale_reads = 3;
    for (int64_t t = renew; t < renew + 3; t++) {
        assert_false(step(&r, &f, &ops, t, false));
        assert_false(r.confirmed);
    }
    assert_string_equal(f.order, "gprprpr");
    assert_int_equal(f.served, 0);
    /* read back with both CAs: still the old certificate for the settle time */
    assert_false(step(&r, &f, &ops, renew + 3, false));
    assert_true(r.confirmed);
    assert_int_equal(count(f.stored), 2);
    assert_true(wh_bundle_contains(f.stored, old_ca));
    int64_t settle = wh_rotation_settle_s(&f.serving, renew + 3);
    assert_true(settle >= 2 && settle <= 5);          /* ~7 s left of 30: about half */
    assert_false(step(&r, &f, &ops, renew + 3 + settle - 1, false));
    assert_int_equal(f.served, 0);
    assert_true(step(&r, &f, &ops, renew + 3 + settle, false));
    assert_int_equal(f.served, 1);
    assert_int_equal(f.generated, 1);
    /* the order: generate, publish (and retry it), read back, and only then serve */
    const char *s = strchr(f.order, 's');
    assert_non_null(s);
    assert_string_equal(s, "s");
    assert_non_null(strstr(f.order, "gprprprpr"));
    /* the old CA is dropped only once the old certificate has expired */
    assert_false(wh_rotation_old_ca_expired(&r, old_end - 1));
    assert_true(wh_bundle_contains(f.stored, old_ca));
    assert_true(wh_rotation_old_ca_expired(&r, old_end + 1));
    assert_false(wh_rotation_old_ca_expired(&r, old_end + 2));   /* once */
    char *dropped = wh_ca_bundle_merge(f.stored, f.serving.ca_pem, old_end + 1, 8);
    assert_int_equal(count(dropped), 1);
    assert_false(wh_bundle_contains(dropped, old_ca));
    free(dropped);
    free(old_ca);
    wh_rotation_free(&r);
    fake_free(&f);
}

static void test_unpublished_ca_waits_for_the_old_expiry(void **st)
{
    (void)st;
    fake f;
    wh_rotation_ops ops;
    fake_init(&f, &ops);
    wh_rotation r = {0};
    int64_t renew = wh_certs_renew_at(&f.serving), old_end = f.serving.not_after_s;
    f.publish_fails = true;
    for (int64_t t = renew; t < old_end; t++) assert_false(step(&r, &f, &ops, t, false));
    assert_int_equal(f.served, 0);
    assert_int_equal(f.generated, 1);                 /* one pair, kept across the retries */
    /* the old certificate has expired: serving it helps nobody; f_serve's invariant is not
     * the point here */
    free(f.stored);
    f.stored = wh_ca_bundle_merge(NULL, r.pending.ca_pem, old_end, 8);
    assert_true(step(&r, &f, &ops, old_end, false));
    assert_int_equal(f.served, 1);
    wh_rotation_free(&r);
    fake_free(&f);
}

static void test_no_register_switches_at_once(void **st)
{
    (void)st;
    fake f;
    wh_rotation_ops ops;
    fake_init(&f, &ops);
    wh_rotation r = {0};
    int64_t renew = wh_certs_renew_at(&f.serving);
    f.publish_fails = true;
    /* --no-register: the configuration is managed elsewhere (it trusts the new CA by other
     * means; given here so f_serve's invariant holds) */
    f.now = renew;
    r.have_pending = true;
    assert_int_equal(f_generate(&f, &r.pending), GD_OK);
    free(f.stored);
    f.stored = wh_ca_bundle_merge(NULL, r.pending.ca_pem, renew, 8);
    f.order[0] = '\0';
    assert_true(step(&r, &f, &ops, renew, true));
    assert_null(strchr(f.order, 'p'));                /* nothing published, nothing read */
    assert_null(strchr(f.order, 'r'));
    wh_rotation_free(&r);
    fake_free(&f);
}

static void test_bundle_contains(void **st)
{
    (void)st;
    const char *hosts[] = {"127.0.0.1"};
    char why[200];
    wh_certs a, b;
    assert_int_equal(wh_certs_generate(hosts, 1, 60, &a, why, sizeof why), GD_OK);
    assert_int_equal(wh_certs_generate(hosts, 1, 60, &b, why, sizeof why), GD_OK);
    char *both = wh_ca_bundle_merge(a.ca_pem, b.ca_pem, (int64_t)time(NULL), 8);
    assert_true(wh_bundle_contains(both, a.ca_pem));
    assert_true(wh_bundle_contains(both, b.ca_pem));
    assert_false(wh_bundle_contains(a.ca_pem, b.ca_pem));
    assert_false(wh_bundle_contains(NULL, a.ca_pem));
    assert_false(wh_bundle_contains("garbage", a.ca_pem));
    free(both);
    wh_certs_free(&a);
    wh_certs_free(&b);
}

int main(void)
{
    gd_log_init("test", GD_LOG_ERROR, 0, 2);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_ca_stored_before_the_switch),
        cmocka_unit_test(test_unpublished_ca_waits_for_the_old_expiry),
        cmocka_unit_test(test_no_register_switches_at_once),
        cmocka_unit_test(test_bundle_contains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
