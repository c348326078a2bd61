/* certs.h — the webhook's serving certificate: generated with OpenSSL (self-managed mode),
 * or read from a directory that cert-manager fills (tls.crt, tls.key, ca.crt: the keys of a
 * kubernetes.io/tls Secret it writes, mounted as files).
 *
 * Self-managed: each (re)generation makes a fresh CA and a serving certificate it signs,
 * both valid for the same period; renewal happens at two thirds of it. The old CA stays in
 * the webhook configuration's caBundle until it expires (wh_ca_bundle_merge), so the API
 * server trusts the old certificate and the new one alike while replicas switch over. */
#ifndef WH_CERTS_H
#define WH_CERTS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gd_err.h"

typedef struct {
    char *ca_pem;             /* may be NULL (a cert dir without ca.crt) */
    char *cert_pem, *key_pem; /* the serving pair */
    int64_t not_before_s, not_after_s;   /* of the serving certificate, Unix seconds */
    int64_t renew_at_s;       /* when to replace it (wh_certs_renew_at) */
} wh_certs;

/* hosts: IPv4/IPv6 literals become IP SANs, anything else DNS SANs (the first is the CN). */
gd_err wh_certs_generate(const char *const *hosts, int nhosts, int64_t validity_s,
                         wh_certs *out, char *why, size_t whylen);
gd_err wh_certs_load_dir(const char *dir, wh_certs *out, char *why, size_t whylen);
void   wh_certs_free(wh_certs *c);
/* A text file of at most 1 MiB, NUL-terminated, malloc'd; NULL when it cannot be read. */
char  *wh_read_text(const char *path);
/* When to renew: two thirds into the validity — counted from when a generated pair was made
 * (its notBefore is backdated 5 minutes for clock skew, which must not shorten a short
 * validity to nothing), from notBefore for a pair read from a directory. */
int64_t wh_certs_renew_at(const wh_certs *c);
/* notBefore/notAfter of the first certificate of a PEM text. */
gd_err wh_pem_validity(const char *pem, int64_t *not_before_s, int64_t *not_after_s);
/* The caBundle to register: own_ca first, then every certificate of existing (PEM, may be
 * NULL) that is not expired at now_s and not own_ca itself, at most max in all. malloc'd. */
char  *wh_ca_bundle_merge(const char *existing, const char *own_ca, int64_t now_s, int max);
/* The same, leaving out the (first) certificate of drop_ca too (a retired CA; NULL: none):
 * own_ca itself is never left out. */
char  *wh_ca_bundle_merge_drop(const char *existing, const char *own_ca, const char *drop_ca,
                               int64_t now_s, int max);
/* Whether the PEM bundle holds the (first) certificate of ca_pem. */
bool   wh_bundle_contains(const char *bundle, const char *ca_pem);
/* Whether the first certificate of cert_pem (the rest of it as intermediates) chains to a
 * certificate of ca_pem; validity times are not checked. */
bool   wh_cert_chains_to(const char *cert_pem, const char *ca_pem);
/* A pair read from a directory is whole: tls.key is tls.crt's key, and tls.crt chains to
 * ca.crt when there is one. A directory caught half-rewritten (a new tls.crt beside the old
 * tls.key or the old ca.crt) fails with why, and is read again later. */
gd_err wh_certs_check(const wh_certs *c, char *why, size_t whylen);

#endif
