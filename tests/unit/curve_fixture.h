/* curve_fixture.h — what the CURVE tests (test_curve, test_curve_remote) set up alike: a
 * temporary directory for the allow-list, three key pairs, and the teardown that closes
 * the test's sockets, the ZAP handler and the context before removing the directory. */
#ifndef CURVE_FIXTURE_H
#define CURVE_FIXTURE_H
#include <stddef.h>
#include "gd_curve.h"

/* mkdtemp("/tmp/<prefix>-XXXXXX") into dir, and three fresh key pairs. */
void cf_setup(char *dir, size_t cap, const char *prefix, gd_curve_keys *k1, gd_curve_keys *k2,
              gd_curve_keys *k3);
/* Closes socks[0..n), destroys *zap, terminates zctx, removes dir. */
void cf_teardown(void **socks, int n, gd_curve_zap **zap, void *zctx, const char *dir);
#endif
