/* test_worker_control.c — GDW1 parsing on the worker side (every frame checked, hostile
 * input answered with a reason), shard lists, and the informer endpoint flags. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <cmocka.h>
#include "control.h"

static gd_err parse(gdw_msg *m, char *why, int n, ...)
{
    gdw_frame f[8];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        f[i].data = va_arg(ap, const char *);
        f[i].len = strlen(f[i].data);
    }
    va_end(ap);
    return gdw_parse(f, n, m, why, 200);
}

static void test_messages(void **state)
{
    gdw_msg m;
    char why[200];
    assert_int_equal(parse(&m, why, 3, "GDW1", "PING", "7"), GD_OK);
    assert_int_equal(m.type, GDW_PING);
    assert_int_equal(m.seq, 7);
    assert_int_equal(parse(&m, why, 4, "GDW1", "LEASE", "8", "1795345323123"), GD_OK);
    assert_int_equal(m.type, GDW_LEASE);
    assert_int_equal(m.deadline_ms, 1795345323123LL);
    assert_int_equal(parse(&m, why, 4, "GDW1", "STOP", "9", "0"), GD_OK);
    assert_int_equal(m.type, GDW_STOP);
    assert_int_equal(parse(&m, why, 4, "GDW1", "REVOKE", "10", "200,3,17"), GD_OK);
    assert_int_equal(m.type, GDW_REVOKE);
    assert_int_equal(m.nshards, 3);
    assert_int_equal(m.shards[0], 3);
    assert_int_equal(m.shards[2], 200);
    assert_int_equal(parse(&m, why, 4, "GDW1", "REVOKE", "10", ""), GD_OK);
    assert_int_equal(m.nshards, 0);
    assert_int_equal(parse(&m, why, 5, "GDW1", "ASSIGN", "11", "5",
                           "{\"godiscluster\":[\"ns/a\"],\"godis\":[\"ns/a-1\",\"ns/a-2\"]}"),
                     GD_OK);
    assert_int_equal(m.type, GDW_ASSIGN);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(m.pending, "godis")), 2);
    gdw_msg_clear(&m);
    assert_null(m.pending);
    assert_int_equal(parse(&m, why, 5, "GDW1", "ASSIGN", "12", "5", ""), GD_OK);
    assert_null(m.pending);
    assert_int_equal(parse(&m, why, 3, "GDW1", "ERROR", "bad thing"), GD_OK);
    assert_int_equal(m.type, GDW_ERROR);
    assert_string_equal(m.text, "bad thing");
}

static void test_hostile(void **state)
{
    gdw_msg m;
    char why[200];
    assert_int_equal(parse(&m, why, 0), GD_ERR_PROTOCOL);
    assert_int_equal(parse(&m, why, 3, "GDW2", "PING", "1"), GD_ERR_PROTOCOL);
    assert_int_equal(parse(&m, why, 2, "GDW1", "PING"), GD_ERR_PROTOCOL);
    assert_int_equal(parse(&m, why, 3, "GDW1", "PING", "-1"), GD_ERR_PROTOCOL);
    assert_int_equal(parse(&m, why, 3, "GDW1", "PING", "1x"), GD_ERR_PROTOCOL);
    assert_int_equal(parse(&m, why, 3, "GDW1", "PING", "99999999999999999999999"),
                     GD_ERR_PROTOCOL);
    assert_int_equal(parse(&m, why, 4, "GDW1", "PING", "1", "extra"), GD_ERR_PROTOCOL);
    assert_int_equal(parse(&m, why, 3, "GDW1", "DANCE", "1"), GD_ERR_PROTOCOL);
    assert_string_equal(why, "unknown command");
    assert_int_equal(parse(&m, why, 3, "GDW1", "LEASE", "1"), GD_ERR_PROTOCOL);
    assert_int_equal(parse(&m, why, 4, "GDW1", "LEASE", "1", "soon"), GD_ERR_PROTOCOL);
    assert_int_equal(parse(&m, why, 4, "GDW1", "LEASE", "1", "18446744073709551615"),
                     GD_ERR_PROTOCOL);
    assert_int_equal(parse(&m, why, 4, "GDW1", "REVOKE", "1", "256"), GD_ERR_PROTOCOL);
    assert_int_equal(parse(&m, why, 4, "GDW1", "REVOKE", "1", "all"), GD_ERR_PROTOCOL);
    assert_int_equal(parse(&m, why, 4, "GDW1", "REVOKE", "1", "1,,2"), GD_ERR_PROTOCOL);
    assert_int_equal(parse(&m, why, 4, "GDW1", "REVOKE", "1", "1,"), GD_ERR_PROTOCOL);
    assert_int_equal(parse(&m, why, 4, "GDW1", "REVOKE", "1", " 1"), GD_ERR_PROTOCOL);
    assert_int_equal(parse(&m, why, 5, "GDW1", "ASSIGN", "1", "1", "{not json"),
                     GD_ERR_PROTOCOL);
    assert_int_equal(parse(&m, why, 5, "GDW1", "ASSIGN", "1", "1", "[]"), GD_ERR_PROTOCOL);
    assert_int_equal(parse(&m, why, 5, "GDW1", "ASSIGN", "1", "1", "{\"a\":\"b\"}"),
                     GD_ERR_PROTOCOL);
    assert_int_equal(parse(&m, why, 5, "GDW1", "ASSIGN", "1", "1", "{\"a\":[1]}"),
                     GD_ERR_PROTOCOL);
    assert_int_equal(parse(&m, why, 5, "GDW1", "ASSIGN", "1", "1", "{\"a\":[\"\"]}"),
                     GD_ERR_PROTOCOL);
    assert_null(m.pending);
    assert_int_equal(parse(&m, why, 4, "GDW1", "ASSIGN", "1", "1"), GD_ERR_PROTOCOL);
    /* embedded NUL in a number frame */
    gdw_frame f[3] = {{"GDW1", 4}, {"PING", 4}, {"1\0002", 3}};
    assert_int_equal(gdw_parse(f, 3, &m, why, sizeof why), GD_ERR_PROTOCOL);
    /* a shard list longer than any valid one */
    char big[3000];
    memset(big, '1', sizeof big - 1);
    big[sizeof big - 1] = 0;
    assert_int_equal(parse(&m, why, 4, "GDW1", "REVOKE", "1", big), GD_ERR_PROTOCOL);
}

static void test_shard_lists(void **state)
{
    int s[GD_NSHARDS], n;
    char why[200];
    assert_int_equal(gdw_parse_shards("0-255", s, &n, why, sizeof why), GD_OK);
    assert_int_equal(n, 256);
    assert_int_equal(gdw_parse_shards("all", s, &n, why, sizeof why), GD_OK);
    assert_int_equal(n, 256);
    assert_int_equal(gdw_parse_shards("17,3,3,5-7", s, &n, why, sizeof why), GD_OK);
    assert_int_equal(n, 5);
    assert_int_equal(s[0], 3);
    assert_int_equal(s[4], 17);
    char *f = gdw_format_shards(s, n);
    assert_string_equal(f, "3,5,6,7,17");
    free(f);
    f = gdw_format_shards(s, 0);
    assert_string_equal(f, "");
    free(f);
    assert_int_equal(gdw_parse_shards("", s, &n, why, sizeof why), GD_OK);
    assert_int_equal(n, 0);
    assert_int_equal(gdw_parse_shards(NULL, s, &n, why, sizeof why), GD_OK);
    const char *bad[] = {"7-3", "0-256", "-1", "a", "1;2", "1-", "1,2,", "300"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(gdw_parse_shards(bad[i], s, &n, why, sizeof why), GD_ERR_PARSE);
        assert_int_equal(n, 0);
        assert_true(strlen(why) > 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_messages),
        cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_shard_lists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
