/* test_webhook_rotation.c — the order of a self-managed certificate renewal (rotation.h)
 * against a fake configuration store: the new certificate is never served before the stored
 * caBundle holds its CA beside the old one and a settle time has passed (the API server
 * loads the bundle through an informer; serving the new certificate at once let evictions
 * through unchecked in itest_webhook_certs), and the old CA leaves the bundle only after
 * the old certificate has expired.
 * The --cert-dir mode's steps (wh_rotation_dir_step) against the same fake: a ca.crt change
 * goes the same way (with failurePolicy Fail, switching first rejected requests until the
 * API server had the new caBundle), a leaf renewal under the same CA, a pair without ca.crt
 * and --no-register switch at once, a failed publish keeps the old certificate, and a
 * directory caught half-rewritten is read again instead of served. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
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
    char order[64];           /* g(enerate) l(oad) p(ublish) r(ead) s(erve), in call order */
    wh_certs disk;            /* --cert-dir: what the directory holds */
    bool disk_broken;         /* the directory cannot be read whole now */
    const char *dir;          /* a real directory instead (f_load_dir) */
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
    assert_true(wh_cert_chains_to(fresh->cert_pem, f->stored));
    f->served++;
    wh_certs_free(&f->serving);
    f->serving = *fresh;
    memset(fresh, 0, sizeof *fresh);
    return true;
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static void certs_copy(wh_certs *to, const wh_certs *from)
{
    *to = *from;
    to->ca_pem = dup_or_null(from->ca_pem);
    to->cert_pem = dup_or_null(from->cert_pem);
    to->key_pem = dup_or_null(from->key_pem);
}

static gd_err f_load(void *ud, wh_certs *out)
{
    fake *f = ud;
    note(f, 'l');
    if (f->disk_broken) return GD_ERR_CONFIG;
    certs_copy(out, &f->disk);
    return GD_OK;
}

/* What main.c's rot_load does: the real files, whole or not at all. */
static gd_err f_load_dir(void *ud, wh_certs *out)
{
    fake *f = ud;
    char why[300];
    note(f, 'l');
    gd_err e = wh_certs_load_dir(f->dir, out, why, sizeof why);
    if (e == GD_OK && (e = wh_certs_check(out, why, sizeof why)) != GD_OK) wh_certs_free(out);
    return e;
}

static const wh_rotation_ops OPS = {.generate = f_generate, .publish = f_publish,
                                    .read_bundle = f_read_bundle, .serve = f_serve};

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
    wh_certs_free(&f->disk);
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

/* --- --cert-dir ------------------------------------------------------------------------ */

/* A CA as cert-manager's CA issuer holds one: its key signs leaf after leaf. */
typedef struct {
    EVP_PKEY *key;
    X509 *cert;
} test_ca;

static X509 *sign(EVP_PKEY *subject, const char *cn, X509 *issuer, EVP_PKEY *issuer_key,
                  long validity_s)
{
    X509 *x = X509_new();
    assert_non_null(x);
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), (long)(rand() & 0x7fffffff));
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), validity_s);
    X509_set_pubkey(x, subject);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                               (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(issuer ? issuer : x));
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer ? issuer : x, x, NULL, NULL, 0);
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, NID_basic_constraints,
                                            issuer ? "critical,CA:FALSE" : "critical,CA:TRUE");
    assert_non_null(e);
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    assert_true(X509_sign(x, issuer_key, EVP_sha256()) > 0);
    return x;
}

static char *pem_x509(X509 *x)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *data = NULL;
    assert_true(PEM_write_bio_X509(b, x));
    long n = BIO_get_mem_data(b, &data);
    char *s = strndup(data, (size_t)n);
    BIO_free(b);
    return s;
}

static void ca_new(test_ca *ca, const char *cn)
{
    ca->key = EVP_EC_gen("P-256");
    assert_non_null(ca->key);
    ca->cert = sign(ca->key, cn, NULL, ca->key, 3 * 3600);
}

static void ca_free(test_ca *ca)
{
    EVP_PKEY_free(ca->key);
    X509_free(ca->cert);
}

/* A pair as the directory holds it: a fresh key and leaf signed by ca, ca.crt = ca
 * (with_ca false: no ca.crt). */
static void ca_leaf(test_ca *ca, long validity_s, bool with_ca, wh_certs *out)
{
    memset(out, 0, sizeof *out);
    EVP_PKEY *k = EVP_EC_gen("P-256");
    X509 *x = sign(k, "127.0.0.1", ca->cert, ca->key, validity_s);
    BIO *b = BIO_new(BIO_s_mem());
    char *data = NULL;
    assert_true(PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL));
    long n = BIO_get_mem_data(b, &data);
    out->key_pem = strndup(data, (size_t)n);
    BIO_free(b);
    out->cert_pem = pem_x509(x);
    out->ca_pem = with_ca ? pem_x509(ca->cert) : NULL;
    assert_int_equal(wh_pem_validity(out->cert_pem, &out->not_before_s, &out->not_after_s), GD_OK);
    X509_free(x);
    EVP_PKEY_free(k);
}

/* A fake serving a 1 h leaf of ca whose CA is registered, the directory holding the same. */
static void dir_init(fake *f, wh_rotation *r, wh_rotation_ops *ops, test_ca *ca)
{
    memset(f, 0, sizeof *f);
    memset(r, 0, sizeof *r);
    ca_leaf(ca, 3600, true, &f->serving);
    certs_copy(&f->disk, &f->serving);
    f->stored = wh_ca_bundle_merge(NULL, f->serving.ca_pem, (int64_t)time(NULL), 8);
    *ops = OPS;
    ops->generate = NULL;
    ops->load = f_load;
    ops->ud = f;
    r->dir_stamp = 1;
}

static bool dir_step(wh_rotation *r, fake *f, const wh_rotation_ops *ops, int64_t stamp,
                     int64_t now, bool no_reg)
{
    f->now = now;
    return wh_rotation_dir_step(r, &f->serving, stamp, now, no_reg, ops);
}

static void test_dir_ca_change_publishes_then_settles_then_switches(void **st)
{
    (void)st;
    fake f;
    wh_rotation r;
    wh_rotation_ops ops;
    test_ca a, b;
    ca_new(&a, "ca-a");
    ca_new(&b, "ca-b");
    dir_init(&f, &r, &ops, &a);
    int64_t t = (int64_t)time(NULL);
    char *old_ca = strdup(f.serving.ca_pem);
    /* nothing changed on disk: nothing read, nothing done (and no self-made renewal) */
    assert_false(dir_step(&r, &f, &ops, 1, t, false));
    assert_string_equal(f.order, "");
    /* cert-manager rotated the CA: the new bundle reads back stale twice */
    wh_certs_free(&f.disk);
    ca_leaf(&b, 3600, true, &f.disk);
    f.stale_reads = 2;
    for (int i = 0; i < 3; i++) assert_false(dir_step(&r, &f, &ops, 2, t + i, false));
    assert_string_equal(f.order, "lprprpr");            /* read once, published, read back */
    assert_true(r.confirmed);
    assert_int_equal(count(f.stored), 2);
    assert_true(wh_bundle_contains(f.stored, old_ca));
    /* the old certificate (3600 s left) is served for the full settle time */
    int64_t at = t + 2 + WH_ROTATION_SETTLE_MAX_S;
    assert_false(dir_step(&r, &f, &ops, 2, at - 1, false));
    assert_int_equal(f.served, 0);
    assert_string_equal(f.serving.ca_pem, old_ca);
    assert_true(dir_step(&r, &f, &ops, 2, at, false));
    assert_int_equal(f.served, 1);
    assert_string_equal(strchr(f.order, 's'), "s");
    assert_string_equal(f.serving.cert_pem, f.disk.cert_pem);
    assert_false(dir_step(&r, &f, &ops, 2, at + 1, false));   /* once */
    /* the old CA leaves WH_ROTATION_DIR_DROP_OLD_S after the switch (its leaf has an hour) */
    assert_false(wh_rotation_old_ca_expired(&r, at + WH_ROTATION_DIR_DROP_OLD_S - 1));
    assert_true(wh_rotation_old_ca_expired(&r, at + WH_ROTATION_DIR_DROP_OLD_S));
    char *retired = wh_rotation_take_retired_ca(&r);
    assert_non_null(retired);
    assert_string_equal(retired, old_ca);
    assert_null(wh_rotation_take_retired_ca(&r));
    char *dropped = wh_ca_bundle_merge_drop(f.stored, f.serving.ca_pem, retired, at + 600, 8);
    assert_int_equal(count(dropped), 1);
    assert_false(wh_bundle_contains(dropped, old_ca));
    assert_true(wh_bundle_contains(dropped, f.serving.ca_pem));
    free(dropped);
    /* the CA served is never the one left out */
    dropped = wh_ca_bundle_merge_drop(f.stored, f.serving.ca_pem, f.serving.ca_pem, at, 8);
    assert_true(wh_bundle_contains(dropped, f.serving.ca_pem));
    free(dropped);
    free(retired);
    free(old_ca);
    wh_rotation_free(&r);
    fake_free(&f);
    ca_free(&a);
    ca_free(&b);
}

static void test_dir_leaf_renewal_switches_at_once(void **st)
{
    (void)st;
    fake f;
    wh_rotation r;
    wh_rotation_ops ops;
    test_ca a;
    ca_new(&a, "ca-a");
    dir_init(&f, &r, &ops, &a);
    int64_t t = (int64_t)time(NULL);
    wh_certs_free(&f.disk);
    ca_leaf(&a, 3600, true, &f.disk);                  /* same CA, new key and leaf */
    assert_true(dir_step(&r, &f, &ops, 2, t, false));
    assert_string_equal(f.order, "ls");                 /* nothing published, no wait */
    assert_string_equal(f.serving.cert_pem, f.disk.cert_pem);
    /* nothing retired: the CA stays in the bundle */
    assert_false(wh_rotation_old_ca_expired(&r, t + 100000));
    assert_null(wh_rotation_take_retired_ca(&r));
    /* the same files read again (a new stamp, same content): nothing served again */
    assert_false(dir_step(&r, &f, &ops, 3, t + 1, false));
    assert_int_equal(f.served, 1);
    wh_rotation_free(&r);
    fake_free(&f);
    ca_free(&a);
}

/* No ca.crt (the caBundle injected by someone else) and --no-register: served at once, as
 * before; the webhook has nothing it may publish. */
static void test_dir_without_ca_or_registration_switches_at_once(void **st)
{
    (void)st;
    fake f;
    wh_rotation r;
    wh_rotation_ops ops;
    test_ca a, b, c;
    ca_new(&a, "ca-a");
    ca_new(&b, "ca-b");
    ca_new(&c, "ca-c");
    dir_init(&f, &r, &ops, &a);
    int64_t t = (int64_t)time(NULL);
    wh_certs_free(&f.disk);
    ca_leaf(&b, 3600, false, &f.disk);
    free(f.stored);                                     /* the injector's doing */
    f.stored = pem_x509(b.cert);
    assert_true(dir_step(&r, &f, &ops, 2, t, false));
    assert_string_equal(f.order, "ls");
    assert_null(wh_rotation_take_retired_ca(&r));       /* not ours to drop */
    wh_certs_free(&f.disk);
    ca_leaf(&c, 3600, true, &f.disk);
    free(f.stored);
    f.stored = pem_x509(c.cert);
    f.order[0] = '\0';
    assert_true(dir_step(&r, &f, &ops, 3, t + 1, true));
    assert_string_equal(f.order, "ls");
    wh_rotation_free(&r);
    fake_free(&f);
    ca_free(&a);
    ca_free(&b);
    ca_free(&c);
}

static void test_dir_failed_publish_keeps_the_old_certificate(void **st)
{
    (void)st;
    fake f;
    wh_rotation r;
    wh_rotation_ops ops;
    test_ca a, b;
    ca_new(&a, "ca-a");
    ca_new(&b, "ca-b");
    dir_init(&f, &r, &ops, &a);
    int64_t t = (int64_t)time(NULL);
    char *old_cert = strdup(f.serving.cert_pem);
    wh_certs_free(&f.disk);
    ca_leaf(&b, 3600, true, &f.disk);
    f.publish_fails = true;
    for (int i = 0; i < 120; i++) assert_false(dir_step(&r, &f, &ops, 2, t + i, false));
    assert_int_equal(f.served, 0);
    assert_string_equal(f.serving.cert_pem, old_cert);
    assert_int_equal(count(f.stored), 1);
    assert_string_equal(f.order + 1, "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp");
    /* the API server takes writes again: published, read back, settled, switched */
    f.publish_fails = false;
    assert_false(dir_step(&r, &f, &ops, 2, t + 120, false));
    assert_true(r.confirmed);
    assert_false(dir_step(&r, &f, &ops, 2, t + 120 + WH_ROTATION_SETTLE_MAX_S - 1, false));
    assert_true(dir_step(&r, &f, &ops, 2, t + 120 + WH_ROTATION_SETTLE_MAX_S, false));
    assert_int_equal(f.served, 1);
    free(old_cert);
    wh_rotation_free(&r);
    fake_free(&f);
    ca_free(&a);
    ca_free(&b);
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

/* Files rewritten one by one (not cert-manager's atomic swap of the Secret volume): a new
 * tls.crt beside the old tls.key, then beside the old ca.crt, is never served nor published;
 * the read is tried again (the same stamp too) until the directory is whole. */
static void test_dir_half_written_is_read_again(void **st)
{
    (void)st;
    fake f;
    wh_rotation r;
    wh_rotation_ops ops;
    test_ca a, b;
    ca_new(&a, "ca-a");
    ca_new(&b, "ca-b");
    dir_init(&f, &r, &ops, &a);
    char dir[] = "/tmp/gd-whrot-XXXXXX";
    assert_non_null(mkdtemp(dir));
    f.dir = dir;
    ops.load = f_load_dir;
    write_file(dir, "tls.crt", f.serving.cert_pem);
    write_file(dir, "tls.key", f.serving.key_pem);
    write_file(dir, "ca.crt", f.serving.ca_pem);
    wh_certs next;
    ca_leaf(&b, 3600, true, &next);
    int64_t t = (int64_t)time(NULL);
    write_file(dir, "tls.crt", next.cert_pem);
    assert_false(dir_step(&r, &f, &ops, 2, t, false));          /* the old key */
    assert_false(dir_step(&r, &f, &ops, 2, t, false));          /* not again this second */
    assert_string_equal(f.order, "l");
    write_file(dir, "tls.key", next.key_pem);
    assert_false(dir_step(&r, &f, &ops, 3, t + 1, false));      /* the old ca.crt */
    assert_string_equal(f.order, "ll");
    assert_false(r.have_pending);
    write_file(dir, "ca.crt", next.ca_pem);
    /* the same stamp as the failed read (a coarse mtime): read again all the same */
    assert_false(dir_step(&r, &f, &ops, 3, t + 2, false));
    assert_string_equal(f.order, "lllpr");
    assert_true(r.confirmed);
    assert_true(dir_step(&r, &f, &ops, 3, t + 2 + WH_ROTATION_SETTLE_MAX_S, false));
    assert_string_equal(f.serving.cert_pem, next.cert_pem);
    const char *names[] = {"tls.crt", "tls.key", "ca.crt"};
    char p[512];
    for (int i = 0; i < 3; i++) { snprintf(p, sizeof p, "%s/%s", dir, names[i]); unlink(p); }
    rmdir(dir);
    wh_certs_free(&next);
    wh_rotation_free(&r);
    fake_free(&f);
    ca_free(&a);
    ca_free(&b);
}

static void test_certs_check(void **st)
{
    (void)st;
    test_ca a, b;
    ca_new(&a, "ca-a");
    ca_new(&b, "ca-b");
    wh_certs p, q;
    char why[200];
    ca_leaf(&a, 600, true, &p);
    ca_leaf(&b, 600, true, &q);
    assert_int_equal(wh_certs_check(&p, why, sizeof why), GD_OK);
    assert_true(wh_cert_chains_to(p.cert_pem, p.ca_pem));
    assert_false(wh_cert_chains_to(p.cert_pem, q.ca_pem));
    char *both = wh_ca_bundle_merge(q.ca_pem, p.ca_pem, (int64_t)time(NULL), 8);
    assert_true(wh_cert_chains_to(q.cert_pem, both));
    free(both);
    char *k = p.key_pem;
    p.key_pem = q.key_pem;
    assert_int_equal(wh_certs_check(&p, why, sizeof why), GD_ERR_CONFIG);
    assert_string_equal(why, "tls.key is not the key of tls.crt");
    p.key_pem = k;
    char *ca = p.ca_pem;
    p.ca_pem = q.ca_pem;
    assert_int_equal(wh_certs_check(&p, why, sizeof why), GD_ERR_CONFIG);
    assert_string_equal(why, "tls.crt is not signed by ca.crt");
    p.ca_pem = ca;
    wh_certs_free(&p);
    wh_certs_free(&q);
    ca_free(&a);
    ca_free(&b);
}

int main(void)
{
    gd_log_init("test", GD_LOG_ERROR, 0, 2);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_ca_stored_before_the_switch),
        cmocka_unit_test(test_unpublished_ca_waits_for_the_old_expiry),
        cmocka_unit_test(test_no_register_switches_at_once),
        cmocka_unit_test(test_bundle_contains),
        cmocka_unit_test(test_dir_ca_change_publishes_then_settles_then_switches),
        cmocka_unit_test(test_dir_leaf_renewal_switches_at_once),
        cmocka_unit_test(test_dir_without_ca_or_registration_switches_at_once),
        cmocka_unit_test(test_dir_failed_publish_keeps_the_old_certificate),
        cmocka_unit_test(test_dir_half_written_is_read_again),
        cmocka_unit_test(test_certs_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
