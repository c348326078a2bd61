/* gd_addr.c — see gd_addr.h. */
#include "gd_addr.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

gd_err gd_parse_bind_addr(const char *s, char *host, size_t hostcap, int *port,
                          char *why, size_t whylen)
{
    if (strcmp(s, "0") == 0) {
        if (hostcap) host[0] = '\0';
        *port = 0;
        return GD_OK;
    }
    const char *colon = strrchr(s, ':');
    if (!colon) {
        snprintf(why, whylen, "expected host:port, got \"%s\"", s);
        return GD_ERR_CONFIG;
    }
    size_t hl = (size_t)(colon - s);
    char h[128];
    if (hl >= sizeof h || hl >= hostcap) {
        snprintf(why, whylen, "host too long");
        return GD_ERR_CONFIG;
    }
    memcpy(h, s, hl);
    h[hl] = '\0';
    char *end;
    errno = 0;
    long p = strtol(colon + 1, &end, 10);
    if (errno || *end || end == colon + 1 || p < 1 || p > 65535) {
        snprintf(why, whylen, "bad port in \"%s\"", s);
        return GD_ERR_CONFIG;
    }
    if (strcmp(h, "localhost") == 0) snprintf(h, sizeof h, "127.0.0.1");
    if (h[0] == '\0') snprintf(h, sizeof h, "0.0.0.0");     /* ":8080": every interface */
    struct in_addr a;
    if (inet_pton(AF_INET, h, &a) != 1) {
        snprintf(why, whylen, "\"%s\" is not an IPv4 address", h);
        return GD_ERR_CONFIG;
    }
    snprintf(host, hostcap, "%s", h);
    *port = (int)p;
    return GD_OK;
}
