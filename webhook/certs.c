/* certs.c — see certs.h. OpenSSL 3 (Debian's libssl): EC P-256 keys, SHA-256 signatures. */
#include "certs.h"
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

static char *bio_string(BIO *b)
{
    char *data = NULL;
    long n = BIO_get_mem_data(b, &data);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s) {
        memcpy(s, data, (size_t)n);
        s[n] = '\0';
    }
    return s;
}

static char *pem_of_cert(X509 *x)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *s = b && PEM_write_bio_X509(b, x) ? bio_string(b) : NULL;
    BIO_free(b);
    return s;
}

static char *pem_of_key(EVP_PKEY *k)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *s = b && PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL) ? bio_string(b) : NULL;
    BIO_free(b);
    return s;
}

static int add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
    if (!e) return 0;
    int ok = X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    return ok;
}

static bool is_ip(const char *h)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, h, buf) == 1 || inet_pton(AF_INET6, h, buf) == 1;
}

/* "IP:127.0.0.1,DNS:svc.ns.svc"; false when a host holds characters that would change the
 * extension's meaning (a comma or colon in a DNS name). */
static bool san_list(const char *const *hosts, int n, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        bool ip = is_ip(hosts[i]);
        if (!ip && (strpbrk(hosts[i], ",: \t\n") || !hosts[i][0])) return false;
        int w = snprintf(out + used, cap - used, "%s%s:%s", i ? "," : "", ip ? "IP" : "DNS", hosts[i]);
        if (w < 0 || (size_t)w >= cap - used) return false;
        used += (size_t)w;
    }
    return true;
}

static X509 *make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key,
                       int64_t validity_s, const char *san)
{
    X509 *x = X509_new();
    unsigned char serial[16];
    if (!x || RAND_bytes(serial, sizeof serial) != 1) goto fail;
    serial[0] &= 0x7f;                      /* a positive serial */
    BIGNUM *bn = BN_bin2bn(serial, sizeof serial, NULL);
    bool sok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));
    BN_free(bn);
    if (!sok) goto fail;
    X509_set_version(x, 2);
    /* a little in the past: the API server's clock may be slightly behind ours */
    X509_gmtime_adj(X509_getm_notBefore(x), -300);
    X509_gmtime_adj(X509_getm_notAfter(x), (long)validity_s);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer ? issuer : x, x, NULL, NULL, 0);
    int ok = issuer
        ? add_ext(x, &ctx, NID_basic_constraints, "critical,CA:FALSE") &&
          add_ext(x, &ctx, NID_key_usage, "critical,digitalSignature,keyEncipherment") &&
          add_ext(x, &ctx, NID_ext_key_usage, "serverAuth") &&
          add_ext(x, &ctx, NID_subject_alt_name, san) &&
          /* names its CA by key, not only by name: while the caBundle holds the old CA and
           * the new one (same name), an OpenSSL client otherwise checks the signature
           * against the first of them and fails (Go's client tries both) */
          add_ext(x, &ctx, NID_subject_key_identifier, "hash") &&
          add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always")
        : add_ext(x, &ctx, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") &&
          add_ext(x, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign") &&
          add_ext(x, &ctx, NID_subject_key_identifier, "hash");
    if (ok && !X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256())) ok = 0;
    if (ok) return x;
fail:
    X509_free(x);
    return NULL;
}

static int64_t asn1_time_s(const ASN1_TIME *t)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    if (!t || ASN1_TIME_to_tm(t, &tm) != 1) return 0;
    return (int64_t)timegm(&tm);
}

gd_err wh_certs_generate(const char *const *hosts, int nhosts, int64_t validity_s,
                         wh_certs *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    char san[2048];
    if (nhosts < 1 || !san_list(hosts, nhosts, san, sizeof san)) {
        snprintf(why, whylen, "cannot put the host names into a certificate (need 1..n plain "
                 "DNS names or IP addresses)");
        return GD_ERR_ARG;
    }
    EVP_PKEY *cak = EVP_EC_gen("P-256"), *k = EVP_EC_gen("P-256");
    X509 *ca = cak ? make_cert(cak, "godis-operator-webhook-ca", NULL, NULL, validity_s, NULL) : NULL;
    X509 *x = ca && k ? make_cert(k, hosts[0], ca, cak, validity_s, san) : NULL;
    if (x) {
        out->ca_pem = pem_of_cert(ca);
        out->cert_pem = pem_of_cert(x);
        out->key_pem = pem_of_key(k);
        out->not_before_s = asn1_time_s(X509_get0_notBefore(x));
        out->not_after_s = asn1_time_s(X509_get0_notAfter(x));
        out->renew_at_s = (int64_t)time(NULL) + validity_s * 2 / 3;
    }
    X509_free(x);
    X509_free(ca);
    EVP_PKEY_free(k);
    EVP_PKEY_free(cak);
    if (!out->ca_pem || !out->cert_pem || !out->key_pem) {
        wh_certs_free(out);
        snprintf(why, whylen, "OpenSSL could not make the certificates");
        return GD_ERR_NOMEM;
    }
    return GD_OK;
}

char *wh_read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (buf) buf[n] = '\0';
    return buf;
}

static char *read_file(const char *dir, const char *name, bool *missing)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *text = wh_read_text(path);
    *missing = !text;
    return text;
}

gd_err wh_certs_load_dir(const char *dir, wh_certs *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    bool m1, m2, m3;
    out->cert_pem = read_file(dir, "tls.crt", &m1);
    out->key_pem = read_file(dir, "tls.key", &m2);
    out->ca_pem = read_file(dir, "ca.crt", &m3);
    if (m1 || m2) {
        snprintf(why, whylen, "%s: %s is missing (a cert-manager Certificate's Secret mounted "
                 "there has tls.crt and tls.key)", dir, m1 ? "tls.crt" : "tls.key");
        wh_certs_free(out);
        return GD_ERR_CONFIG;
    }
    if (wh_pem_validity(out->cert_pem, &out->not_before_s, &out->not_after_s) != GD_OK) {
        snprintf(why, whylen, "%s/tls.crt: not a PEM certificate", dir);
        wh_certs_free(out);
        return GD_ERR_CONFIG;
    }
    if (out->ca_pem && !out->ca_pem[0]) { free(out->ca_pem); out->ca_pem = NULL; }
    return GD_OK;
}

void wh_certs_free(wh_certs *c)
{
    if (!c) return;
    free(c->ca_pem);
    free(c->cert_pem);
    free(c->key_pem);
    memset(c, 0, sizeof *c);
}

int64_t wh_certs_renew_at(const wh_certs *c)
{
    if (c->renew_at_s) return c->renew_at_s;
    return c->not_before_s + (c->not_after_s - c->not_before_s) * 2 / 3;
}

gd_err wh_pem_validity(const char *pem, int64_t *not_before_s, int64_t *not_after_s)
{
    BIO *b = pem ? BIO_new_mem_buf(pem, -1) : NULL;
    X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    if (!x) return GD_ERR_PARSE;
    *not_before_s = asn1_time_s(X509_get0_notBefore(x));
    *not_after_s = asn1_time_s(X509_get0_notAfter(x));
    X509_free(x);
    return GD_OK;
}

static X509 *first_cert(const char *pem)
{
    BIO *b = pem ? BIO_new_mem_buf(pem, -1) : NULL;
    X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    return x;
}

char *wh_ca_bundle_merge(const char *existing, const char *own_ca, int64_t now_s, int max)
{
    return wh_ca_bundle_merge_drop(existing, own_ca, NULL, now_s, max);
}

char *wh_ca_bundle_merge_drop(const char *existing, const char *own_ca, const char *drop_ca,
                              int64_t now_s, int max)
{
    BIO *out = BIO_new(BIO_s_mem());
    if (!out) return NULL;
    int n = 0;
    if (own_ca) { BIO_puts(out, own_ca); n++; }
    BIO *in = existing ? BIO_new_mem_buf(existing, -1) : NULL;
    X509 *own = first_cert(own_ca), *drop = first_cert(drop_ca);
    X509 *x;
    while (in && n < max && (x = PEM_read_bio_X509(in, NULL, NULL, NULL))) {
        bool expired = asn1_time_s(X509_get0_notAfter(x)) <= now_s;
        if (!expired && !(own && X509_cmp(x, own) == 0) && !(drop && X509_cmp(x, drop) == 0)) {
            PEM_write_bio_X509(out, x);
            n++;
        }
        X509_free(x);
    }
    X509_free(own);
    X509_free(drop);
    BIO_free(in);
    char *s = bio_string(out);
    BIO_free(out);
    return s;
}

bool wh_bundle_contains(const char *bundle, const char *ca_pem)
{
    X509 *want = first_cert(ca_pem);
    BIO *in = want && bundle ? BIO_new_mem_buf(bundle, -1) : NULL;
    bool found = false;
    X509 *x;
    while (in && !found && (x = PEM_read_bio_X509(in, NULL, NULL, NULL))) {
        found = X509_cmp(x, want) == 0;
        X509_free(x);
    }
    BIO_free(in);
    X509_free(want);
    return found;
}

/* Every certificate of a PEM text pushed onto a new stack (skip: leave out the first). */
static STACK_OF(X509) *cert_stack(const char *pem, bool skip_first)
{
    STACK_OF(X509) *sk = sk_X509_new_null();
    BIO *b = pem && sk ? BIO_new_mem_buf(pem, -1) : NULL;
    X509 *x;
    for (int i = 0; b && (x = PEM_read_bio_X509(b, NULL, NULL, NULL)); i++)
        if ((i == 0 && skip_first) || !sk_X509_push(sk, x)) X509_free(x);
    BIO_free(b);
    return sk;
}

/* The certificate of sk whose key signed x, NULL when none did. */
static X509 *signer_of(X509 *x, STACK_OF(X509) *sk)
{
    for (int i = 0; sk && i < sk_X509_num(sk); i++) {
        X509 *c = sk_X509_value(sk, i);
        EVP_PKEY *k = X509_get0_pubkey(c);
        if (c != x && k && X509_check_issued(c, x) == X509_V_OK && X509_verify(x, k) == 1) return c;
    }
    return NULL;
}

/* Signatures only, as "signed by" means: not X509_verify_cert, whose checks of validity
 * times, CA flags and purposes are stricter than some CAs people make by hand, and a
 * directory refused here would never be served. */
bool wh_cert_chains_to(const char *cert_pem, const char *ca_pem)
{
    X509 *cur = first_cert(cert_pem);
    STACK_OF(X509) *cas = cert_stack(ca_pem, false), *mid = cert_stack(cert_pem, true);
    X509 *leaf = cur;
    bool ok = false;
    for (int depth = 0; cur && !ok && depth < 8; depth++) {
        ok = signer_of(cur, cas) != NULL;
        if (!ok) cur = signer_of(cur, mid);   /* an intermediate tls.crt carries */
    }
    sk_X509_pop_free(cas, X509_free);
    sk_X509_pop_free(mid, X509_free);
    X509_free(leaf);
    return ok;
}

gd_err wh_certs_check(const wh_certs *c, char *why, size_t whylen)
{
    X509 *leaf = first_cert(c->cert_pem);
    BIO *b = c->key_pem ? BIO_new_mem_buf(c->key_pem, -1) : NULL;
    EVP_PKEY *key = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    gd_err e = GD_OK;
    if (!leaf || !key || X509_check_private_key(leaf, key) != 1) {
        snprintf(why, whylen, "tls.key is not the key of tls.crt");
        e = GD_ERR_CONFIG;
    } else if (c->ca_pem && !wh_cert_chains_to(c->cert_pem, c->ca_pem)) {
        snprintf(why, whylen, "tls.crt is not signed by ca.crt");
        e = GD_ERR_CONFIG;
    }
    EVP_PKEY_free(key);
    X509_free(leaf);
    return e;
}
