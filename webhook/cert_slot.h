/* cert_slot.h — the serving pair the webhook hands to each TLS handshake, replaceable while
 * the server runs.
 *
 * Why a slot and not a new server: the webhook keeps one HTTPS server (one listening socket)
 * for the life of the process and changes the pair it serves, as controller-runtime's
 * certwatcher does with GetCertificate. A certificate change then touches no connection. The
 * earlier way, a second server taking over the port and a stop of the first, cut the answers
 * in progress: MHD_stop_daemon closes every connection, and the API server does not retry a
 * POST that ends in EOF, so with failurePolicy Fail an eviction was refused.
 *
 * A handshake takes a reference to the current pair, because GnuTLS keeps pointers to the
 * certificates and the key for the life of the session. A replaced pair is freed when the last
 * connection that took it closes. */
#ifndef WH_CERT_SLOT_H
#define WH_CERT_SLOT_H
#include <stddef.h>
#include <gnutls/gnutls.h>
#include <gnutls/abstract.h>
#include "gd_err.h"

typedef struct wh_cert_slot wh_cert_slot;
typedef struct wh_keypair wh_keypair;

/* cert_pem: the serving certificate first, then any intermediates. NULL and why when the PEM
 * does not parse or the key is not the certificate's. */
wh_cert_slot *wh_cert_slot_new(const char *cert_pem, const char *key_pem, char *why,
                               size_t whylen);
/* Serves a new pair to the handshakes that start from now on; connections already open keep
 * theirs. On failure (why) the current pair stays. */
gd_err wh_cert_slot_set(wh_cert_slot *s, const char *cert_pem, const char *key_pem, char *why,
                        size_t whylen);
/* The current pair, for GnuTLS's retrieve callback, with a reference the caller gives back
 * with wh_cert_slot_release when the connection closes. NULL: none (out of memory never
 * happens here; a NULL slot does). */
wh_keypair *wh_cert_slot_take(wh_cert_slot *s, gnutls_pcert_st **pcert, unsigned *npcert,
                              gnutls_privkey_t *key);
void wh_cert_slot_release(wh_cert_slot *s, wh_keypair **kp);
/* Pairs alive: the current one and the replaced ones a connection still holds. */
int  wh_cert_slot_alive(wh_cert_slot *s);
/* Every connection must have released its pair (the server is stopped first). */
void wh_cert_slot_destroy(wh_cert_slot **s);

#endif
