/* gd_curve.c — CURVE keys and sockets (the policy: no tcp:// without keys, one enforced
 * ZAP domain). The ZAP handler and the allow-list are in gd_curve_zap.c. */
#include "gd_curve.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

/* Debian's libzmq 4.3 is built with the draft options, but zmq.h declares this one only
 * under ZMQ_BUILD_DRAFT_API. The value is libzmq's; a library without it fails the
 * setsockopt, and gd_curve_bind then refuses to bind (fail closed, never unenforced). */
#ifndef ZMQ_ZAP_ENFORCE_DOMAIN
#define ZMQ_ZAP_ENFORCE_DOMAIN 93
#endif

bool gd_curve_valid_z85(const char *s)
{
    uint8_t bin[32];
    return s && strlen(s) == GD_CURVE_Z85_LEN && zmq_z85_decode(bin, s) != NULL;
}

gd_err gd_curve_keygen(gd_curve_keys *out)
{
    memset(out, 0, sizeof *out);
    if (!zmq_has("curve") || zmq_curve_keypair(out->public_z85, out->secret_z85) != 0)
        return GD_ERR_CONFIG;
    return GD_OK;
}

gd_err gd_curve_load_key(const char *path, bool as_secret, gd_curve_keys *out, char *why,
                         size_t cap)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, cap, "%s: %s", path, strerror(errno));
        return GD_ERR_IO;
    }
    char buf[128];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' ||
                     buf[n - 1] == '\t'))
        buf[--n] = '\0';
    if (!gd_curve_valid_z85(buf)) {
        snprintf(why, cap, "%s: not a CURVE key (want 40 z85 characters, see godis-manager "
                 "keygen)", path);
        return GD_ERR_PARSE;
    }
    if (!as_secret) {
        memcpy(out->public_z85, buf, GD_CURVE_Z85_LEN + 1);
        return GD_OK;
    }
    memcpy(out->secret_z85, buf, GD_CURVE_Z85_LEN + 1);
    if (zmq_curve_public(out->public_z85, out->secret_z85) != 0) {
        snprintf(why, cap, "%s: cannot derive the public key: %s", path, zmq_strerror(errno));
        return GD_ERR_CONFIG;
    }
    return GD_OK;
}

static gd_err write_new(const char *path, const char *text, mode_t mode, char *why, size_t cap)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) {
        snprintf(why, cap, "%s: %s", path, strerror(errno));
        return GD_ERR_IO;
    }
    size_t len = strlen(text);
    bool ok = write(fd, text, len) == (ssize_t)len;
    if (close(fd) != 0 || !ok) {
        snprintf(why, cap, "%s: write failed", path);
        unlink(path);
        return GD_ERR_IO;
    }
    return GD_OK;
}

gd_err gd_curve_write_pair(const char *dir, const char *name, const gd_curve_keys *k,
                           char *why, size_t cap)
{
    char sec[512], pub[512], line[GD_CURVE_Z85_LEN + 2];
    if ((size_t)snprintf(sec, sizeof sec, "%s/%s.key", dir, name) >= sizeof sec ||
        (size_t)snprintf(pub, sizeof pub, "%s/%s.pub", dir, name) >= sizeof pub) {
        snprintf(why, cap, "path too long");
        return GD_ERR_ARG;
    }
    snprintf(line, sizeof line, "%s\n", k->secret_z85);
    gd_err rc = write_new(sec, line, 0600, why, cap);
    if (rc != GD_OK)
        return rc;
    snprintf(line, sizeof line, "%s\n", k->public_z85);
    rc = write_new(pub, line, 0644, why, cap);
    if (rc != GD_OK)
        unlink(sec);
    return rc;
}

bool gd_curve_needed(const char *ep)
{
    return !(strncmp(ep, "ipc://", 6) == 0 || strncmp(ep, "inproc://", 9) == 0);
}

gd_err gd_curve_bind(void *sock, const char *endpoint, const gd_curve_keys *server)
{
    if (gd_curve_needed(endpoint)) {
        if (!server || !gd_curve_valid_z85(server->secret_z85))
            return GD_ERR_CONFIG;
        int one = 1;
        const char *dom = GD_CURVE_ZAP_DOMAIN;
        if (zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &one, sizeof one) != 0 ||
            zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, server->secret_z85, GD_CURVE_Z85_LEN) != 0 ||
            zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, dom, strlen(dom)) != 0 ||
            zmq_setsockopt(sock, ZMQ_ZAP_ENFORCE_DOMAIN, &one, sizeof one) != 0)
            return GD_ERR_ZMQ;
    }
    return zmq_bind(sock, endpoint) == 0 ? GD_OK : GD_ERR_ZMQ;
}

gd_err gd_curve_connect(void *sock, const char *endpoint, const gd_curve_keys *client,
                        const char *server_public)
{
    if (gd_curve_needed(endpoint)) {
        if (!client || !gd_curve_valid_z85(client->secret_z85) ||
            !gd_curve_valid_z85(client->public_z85) || !gd_curve_valid_z85(server_public))
            return GD_ERR_CONFIG;
        if (zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, server_public, GD_CURVE_Z85_LEN) != 0 ||
            zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, client->public_z85, GD_CURVE_Z85_LEN) != 0 ||
            zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, client->secret_z85, GD_CURVE_Z85_LEN) != 0)
            return GD_ERR_ZMQ;
    }
    return zmq_connect(sock, endpoint) == 0 ? GD_OK : GD_ERR_ZMQ;
}
