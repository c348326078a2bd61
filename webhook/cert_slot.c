/* cert_slot.c — see cert_slot.h. */
#include "cert_slot.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WH_CHAIN_MAX 8   /* serving certificate and intermediates */

struct wh_keypair {
    gnutls_pcert_st chain[WH_CHAIN_MAX];
    unsigned nchain;
    gnutls_privkey_t key;
    int refs;                  /* connections that took it */
    bool replaced;
    wh_keypair *next;          /* the replaced pairs still held */
};

struct wh_cert_slot {
    pthread_mutex_t lock;
    wh_keypair *current;
    wh_keypair *held;
};

static void keypair_free(wh_keypair *kp)
{
    if (!kp) return;
    for (unsigned i = 0; i < kp->nchain; i++) gnutls_pcert_deinit(&kp->chain[i]);
    if (kp->key) gnutls_privkey_deinit(kp->key);
    free(kp);
}

static gd_err fail(char *why, size_t whylen, const char *what, int rc)
{
    snprintf(why, whylen, "%s: %s", what, gnutls_strerror(rc));
    return GD_ERR_PARSE;
}

/* The key must be the certificate's: GnuTLS would otherwise fail every handshake later, each
 * with a message the API server's caller never sees. */
static gd_err key_matches(wh_keypair *kp, char *why, size_t whylen)
{
    unsigned char want[64], have[64];
    size_t nw = sizeof want, nh = sizeof have;
    gnutls_pubkey_t pub = NULL;
    int rc = gnutls_pubkey_init(&pub);
    if (rc == 0) rc = gnutls_pubkey_import_privkey(pub, kp->key, 0, 0);
    if (rc == 0) rc = gnutls_pubkey_get_key_id(pub, 0, have, &nh);
    if (rc == 0) rc = gnutls_pubkey_get_key_id(kp->chain[0].pubkey, 0, want, &nw);
    if (pub) gnutls_pubkey_deinit(pub);
    if (rc != 0) return fail(why, whylen, "cannot compare the key with the certificate", rc);
    if (nw != nh || memcmp(want, have, nw) != 0) {
        snprintf(why, whylen, "the private key is not the serving certificate's key");
        return GD_ERR_ARG;
    }
    return GD_OK;
}

static gd_err keypair_new(const char *cert_pem, const char *key_pem, wh_keypair **out, char *why,
                          size_t whylen)
{
    *out = NULL;
    if (!cert_pem || !key_pem) {
        snprintf(why, whylen, "no serving certificate or key");
        return GD_ERR_ARG;
    }
    wh_keypair *kp = calloc(1, sizeof *kp);
    if (!kp) {
        snprintf(why, whylen, "out of memory");
        return GD_ERR_NOMEM;
    }
    gnutls_datum_t cert = {(unsigned char *)cert_pem, (unsigned)strlen(cert_pem)};
    gnutls_datum_t key = {(unsigned char *)key_pem, (unsigned)strlen(key_pem)};
    unsigned n = WH_CHAIN_MAX;
    int rc = gnutls_pcert_list_import_x509_raw(kp->chain, &n, &cert, GNUTLS_X509_FMT_PEM, 0);
    gd_err e = GD_OK;
    if (rc < 0 || n == 0)
        e = fail(why, whylen, "cannot read the serving certificate",
                 rc < 0 ? rc : GNUTLS_E_NO_CERTIFICATE_FOUND);
    else
        kp->nchain = n;
    if (e == GD_OK && (rc = gnutls_privkey_init(&kp->key)) < 0)
        e = fail(why, whylen, "cannot read the private key", rc);
    if (e == GD_OK &&
        (rc = gnutls_privkey_import_x509_raw(kp->key, &key, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0)
        e = fail(why, whylen, "cannot read the private key", rc);
    if (e == GD_OK) e = key_matches(kp, why, whylen);
    if (e != GD_OK) {
        keypair_free(kp);
        return e;
    }
    *out = kp;
    return GD_OK;
}

wh_cert_slot *wh_cert_slot_new(const char *cert_pem, const char *key_pem, char *why,
                               size_t whylen)
{
    wh_keypair *kp = NULL;
    if (keypair_new(cert_pem, key_pem, &kp, why, whylen) != GD_OK) return NULL;
    wh_cert_slot *s = calloc(1, sizeof *s);
    if (!s || pthread_mutex_init(&s->lock, NULL) != 0) {
        snprintf(why, whylen, "out of memory");
        free(s);
        keypair_free(kp);
        return NULL;
    }
    s->current = kp;
    return s;
}

/* Caller holds the lock. A pair no connection holds goes at once. */
static void retire(wh_cert_slot *s, wh_keypair *kp)
{
    if (kp->refs == 0) {
        keypair_free(kp);
        return;
    }
    kp->replaced = true;
    kp->next = s->held;
    s->held = kp;
}

gd_err wh_cert_slot_set(wh_cert_slot *s, const char *cert_pem, const char *key_pem, char *why,
                        size_t whylen)
{
    wh_keypair *kp = NULL;
    gd_err e = keypair_new(cert_pem, key_pem, &kp, why, whylen);
    if (e != GD_OK) return e;
    pthread_mutex_lock(&s->lock);
    wh_keypair *old = s->current;
    s->current = kp;
    retire(s, old);
    pthread_mutex_unlock(&s->lock);
    return GD_OK;
}

wh_keypair *wh_cert_slot_take(wh_cert_slot *s, gnutls_pcert_st **pcert, unsigned *npcert,
                              gnutls_privkey_t *key)
{
    if (!s) return NULL;
    pthread_mutex_lock(&s->lock);
    wh_keypair *kp = s->current;
    kp->refs++;
    *pcert = kp->chain;
    *npcert = kp->nchain;
    *key = kp->key;
    pthread_mutex_unlock(&s->lock);
    return kp;
}

void wh_cert_slot_release(wh_cert_slot *s, wh_keypair **kpp)
{
    if (!s || !kpp || !*kpp) return;
    wh_keypair *kp = *kpp;
    *kpp = NULL;
    pthread_mutex_lock(&s->lock);
    if (--kp->refs == 0 && kp->replaced) {
        wh_keypair **p = &s->held;
        while (*p && *p != kp) p = &(*p)->next;
        if (*p) *p = kp->next;
        keypair_free(kp);
    }
    pthread_mutex_unlock(&s->lock);
}

int wh_cert_slot_alive(wh_cert_slot *s)
{
    if (!s) return 0;
    pthread_mutex_lock(&s->lock);
    int n = s->current ? 1 : 0;
    for (wh_keypair *kp = s->held; kp; kp = kp->next) n++;
    pthread_mutex_unlock(&s->lock);
    return n;
}

void wh_cert_slot_destroy(wh_cert_slot **sp)
{
    if (!sp || !*sp) return;
    wh_cert_slot *s = *sp;
    keypair_free(s->current);
    while (s->held) {
        wh_keypair *next = s->held->next;
        keypair_free(s->held);
        s->held = next;
    }
    pthread_mutex_destroy(&s->lock);
    free(s);
    *sp = NULL;
}
