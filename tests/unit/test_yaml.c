/* gd_yaml: manifests to JSON, typed scalars, multi-document streams, hostile input. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <cmocka.h>
#include "gd_yaml.h"
#include "gd_json.h"

static cJSON *parse_ok(const char *y)
{
    cJSON *out = NULL;
    char err[200];
    assert_int_equal(gd_yaml_to_json(y, strlen(y), &out, err, sizeof err), GD_OK);
    return out;
}

static void test_types(void **st)
{
    (void)st;
    cJSON *d = parse_ok("a: 1\nb: true\nc: \"1\"\nd: ~\ne: 1.5\nf: text here\ng: '010'\nh: [x, 2]\n");
    cJSON *o = cJSON_GetArrayItem(d, 0);
    int64_t i;
    assert_int_equal(gd_json_int(o, "a", &i), GD_OK);
    assert_int_equal(i, 1);
    bool b;
    assert_int_equal(gd_json_bool(o, "b", &b), GD_OK);
    assert_true(b);
    assert_string_equal(gd_json_str_or(o, "c", ""), "1");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "d")));
    assert_true(cJSON_GetObjectItem(o, "e")->valuedouble == 1.5);
    assert_string_equal(gd_json_str_or(o, "f", ""), "text here");
    assert_string_equal(gd_json_str_or(o, "g", ""), "010");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "h")), 2);
    cJSON_Delete(d);
}

static void test_multi_doc(void **st)
{
    (void)st;
    cJSON *d = parse_ok("---\nkind: A\n---\n# only a comment\n---\nkind: B\nspec:\n  x:\n    - {y: 1}\n");
    assert_int_equal(cJSON_GetArraySize(d), 2);
    assert_string_equal(gd_json_str_or(cJSON_GetArrayItem(d, 1), "kind", ""), "B");
    assert_int_equal(gd_json_int_or(cJSON_GetArrayItem(gd_json_path(cJSON_GetArrayItem(d, 1), "spec.x"), 0), "y", 0), 1);
    cJSON_Delete(d);
}

static void test_errors(void **st)
{
    (void)st;
    const char *bad[] = {"a: [1, 2\n", "a: b: c\n", "a: &x 1\nb: *x\n", "? [a]\n: 1\n", "\t- x\n"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cJSON *out = NULL;
        char err[200] = "";
        assert_int_equal(gd_yaml_to_json(bad[i], strlen(bad[i]), &out, err, sizeof err), GD_ERR_PARSE);
        assert_null(out);
        assert_non_null(strstr(err, "line "));
    }
}

static void test_deep_nesting_refused(void **st)
{
    (void)st;
    char buf[1000];
    size_t n = 0;
    for (int i = 0; i < 200; i++) buf[n++] = '[';
    for (int i = 0; i < 200; i++) buf[n++] = ']';
    buf[n] = '\0';
    cJSON *out = NULL;
    char err[200];
    assert_int_equal(gd_yaml_to_json(buf, n, &out, err, sizeof err), GD_ERR_PARSE);
    assert_non_null(strstr(err, "deeply"));
}

static void test_truncated_everywhere(void **st)
{
    (void)st;
    const char *y = "kind: GodisCluster\nmetadata:\n  name: x\nspec:\n  replicas: 3\n  list: [1, \"two\"]\n";
    size_t len = strlen(y);
    for (size_t cut = 0; cut <= len; cut++) {
        cJSON *out = NULL;
        char err[200];
        gd_err e = gd_yaml_to_json(y, cut, &out, err, sizeof err);
        assert_true(e == GD_OK || e == GD_ERR_PARSE);
        cJSON_Delete(out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_types),
        cmocka_unit_test(test_multi_doc),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_deep_nesting_refused),
        cmocka_unit_test(test_truncated_everywhere),
    };
    return cmocka_run_group_tests_name("yaml", tests, NULL, NULL);
}
