/* gd_addr.h — bind addresses given on command lines (--health-probe-bind-address,
 * --webhook-bind-address, ...): one syntax and one error text for every program. */
#ifndef GD_ADDR_H
#define GD_ADDR_H
#include <stddef.h>
#include "gd_err.h"

/* "127.0.0.1:8080" → host/port (IPv4 literal or "localhost"; ":8080" = 0.0.0.0); "0"
 * means disabled (port 0). The defaults are loopback; anything wider must be asked for.
 * GD_ERR_CONFIG with a reason. */
gd_err gd_parse_bind_addr(const char *s, char *host, size_t hostcap, int *port,
                          char *why, size_t whylen);

#endif
