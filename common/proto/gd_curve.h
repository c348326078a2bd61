/* gd_curve.h — CURVE keys, CURVE sockets and the ZAP allow-list handler for every tcp://
 * endpoint between the processes (docs/PROTOCOL.md §3.2).
 *
 * ZeroMQ does the cryptography (CurveZMQ, RFC 26) and calls a ZAP handler (RFC 27) for
 * each new connection; this module gives the project's policy: no tcp:// without keys, one
 * ZAP domain enforced, and an allow-list of client public keys read from a file that is
 * re-read when it changes (a Secret update). ipc:// endpoints stay plaintext: they live in
 * a private 0700 directory. */
#ifndef GD_CURVE_H
#define GD_CURVE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gd_err.h"

#define GD_CURVE_ZAP_DOMAIN "godis-operator"
/* The Lease annotation where the leader writes its tcp:// endpoints (PROTOCOL.md §3.1). */
#define GD_REMOTE_ANNOTATION "godis.kumkeehyun.github.com/worker-endpoints"
#define GD_CURVE_Z85_LEN 40                 /* a 32-byte key in z85 */

typedef struct {
    char public_z85[GD_CURVE_Z85_LEN + 1];
    char secret_z85[GD_CURVE_Z85_LEN + 1];  /* "" when only the public key is known */
} gd_curve_keys;

/* A fresh key pair (zmq_curve_keypair). GD_ERR_CONFIG when libzmq lacks CURVE. */
gd_err gd_curve_keygen(gd_curve_keys *out);
/* Reads one z85 key (40 characters, optional trailing whitespace) from a file. A secret-key
 * file fills both halves (the public key is derived), a public-key file only public_z85
 * when as_secret is false. why gets "path: problem" on failure (GD_ERR_IO, GD_ERR_PARSE). */
gd_err gd_curve_load_key(const char *path, bool as_secret, gd_curve_keys *out, char *why,
                         size_t cap);
/* Writes DIR/NAME.key (secret, 0600) and DIR/NAME.pub; refuses to overwrite either. */
gd_err gd_curve_write_pair(const char *dir, const char *name, const gd_curve_keys *k,
                           char *why, size_t cap);
/* True for 40 characters that decode as z85. */
bool gd_curve_valid_z85(const char *s);

/* ---- sockets ---- */

/* Binds sock to endpoint. tcp:// (and any other non-ipc/inproc transport) needs server
 * keys: the socket becomes a CURVE server in the ZAP domain with enforcement on; without
 * keys it is GD_ERR_CONFIG. ipc:// and inproc:// are bound as they are. Bind plaintext
 * endpoints first: libzmq captures the options per bind. */
gd_err gd_curve_bind(void *sock, const char *endpoint, const gd_curve_keys *server);
/* Connects sock to endpoint; tcp:// needs the client's key pair and the server's public
 * key (client->secret_z85 set, server_public a z85 key), else GD_ERR_CONFIG. */
gd_err gd_curve_connect(void *sock, const char *endpoint, const gd_curve_keys *client,
                        const char *server_public);
/* True when the endpoint's transport needs CURVE (anything but ipc:// and inproc://). */
bool gd_curve_needed(const char *endpoint);

/* ---- the allow-list ---- */

#define GD_CURVE_ALLOW_MAX 1024

typedef struct {
    int n;
    struct { uint8_t key[32]; char name[64]; } e[GD_CURVE_ALLOW_MAX];
} gd_curve_allow;

/* Parses the file's text: one z85 public key per line, optionally followed by whitespace
 * and a name; '#' comments; empty lines ignored. why gets "line N: problem". */
gd_err gd_curve_allow_parse(const char *text, gd_curve_allow *out, char *why, size_t cap);
/* The entry's name ("" unnamed), or NULL when the 32-byte key is not on the list. */
const char *gd_curve_allow_find(const gd_curve_allow *a, const uint8_t key[32]);

/* ---- the ZAP handler ---- */

typedef struct gd_curve_zap gd_curve_zap;

/* Starts the handler thread on zctx (one per context) with the allow-list file. The file is
 * read now (an unreadable or bad file is logged and refuses everyone until it is fixed) and
 * re-read whenever its device, inode, size or mtime change. NULL on failure (logged). */
gd_curve_zap *gd_curve_zap_new(void *zctx, const char *allow_path);
/* Stops the thread and closes its socket (before zmq_ctx_term). */
void gd_curve_zap_destroy(gd_curve_zap **z);

typedef struct {
    uint64_t accepted, refused, reloads, reload_errors;
    int keys;               /* entries of the list in force */
} gd_curve_zap_stats;
void gd_curve_zap_get_stats(gd_curve_zap *z, gd_curve_zap_stats *out);

#endif
