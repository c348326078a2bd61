/* test_err.c — error names and retry classes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "gd_err.h"

static void test_names(void **state)
{
    assert_string_equal(gd_strerror(GD_OK), "OK");
    assert_string_equal(gd_strerror(GD_ERR_NOT_FOUND), "NotFound");
    assert_string_equal(gd_strerror(GD_ERR_TRANSPORT), "Transport");
    assert_string_equal(gd_strerror(GD_ERR_CONFLICT), "Conflict");
    /* every code has a distinct, non-empty name */
    for (int i = 0; i < GD_ERR__COUNT; i++) {
        assert_true(strlen(gd_strerror((gd_err)i)) > 0);
        assert_string_not_equal(gd_strerror((gd_err)i), "Unknown");
        for (int j = 0; j < i; j++)
            assert_string_not_equal(gd_strerror((gd_err)i), gd_strerror((gd_err)j));
    }
}

static void test_out_of_range(void **state)
{
    assert_string_equal(gd_strerror(GD_ERR__COUNT), "Unknown");
    assert_string_equal(gd_strerror((gd_err)-1), "Unknown");
    assert_string_equal(gd_strerror((gd_err)100000), "Unknown");
}

static void test_retryable(void **state)
{
    assert_true(gd_err_retryable(GD_ERR_TRANSPORT));
    assert_true(gd_err_retryable(GD_ERR_TIMEOUT));
    assert_true(gd_err_retryable(GD_ERR_TOO_MANY_REQUESTS));
    assert_true(gd_err_retryable(GD_ERR_SERVER));
    assert_false(gd_err_retryable(GD_OK));
    assert_false(gd_err_retryable(GD_ERR_NOT_FOUND));
    assert_false(gd_err_retryable(GD_ERR_CONFLICT));
    assert_false(gd_err_retryable(GD_ERR_INVALID));
    assert_false(gd_err_retryable(GD_ERR_CONFIG));
    assert_false(gd_err_retryable(GD_ERR_FORBIDDEN));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_out_of_range),
        cmocka_unit_test(test_retryable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
