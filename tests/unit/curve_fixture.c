/* curve_fixture.c — see curve_fixture.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <zmq.h>
#include "curve_fixture.h"

void cf_setup(char *dir, size_t cap, const char *prefix, gd_curve_keys *k1, gd_curve_keys *k2,
              gd_curve_keys *k3)
{
    snprintf(dir, cap, "/tmp/%s-XXXXXX", prefix);
    assert_non_null(mkdtemp(dir));
    assert_int_equal(gd_curve_keygen(k1), GD_OK);
    assert_int_equal(gd_curve_keygen(k2), GD_OK);
    assert_int_equal(gd_curve_keygen(k3), GD_OK);
}

void cf_teardown(void **socks, int n, gd_curve_zap **zap, void *zctx, const char *dir)
{
    for (int i = 0; i < n; i++)
        zmq_close(socks[i]);
    gd_curve_zap_destroy(zap);
    zmq_ctx_term(zctx);
    char cmd[100];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}
