/* test_gd_intern.c — the shared member names: one copy per name, trees that print, copy,
 * compare and free as before (ASan and valgrind see every free), concurrent interning of
 * the same names agreeing on one copy, long names and a full table left alone. The full
 * table is the last test: the table is the process's and never empties. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "gd_intern.h"

static void test_one_copy_per_name(void **state)
{
    char a[] = "metadata", b[] = "metadata";
    const char *x = gd_intern(a), *y = gd_intern(b);
    assert_non_null(x);
    assert_ptr_equal(x, y);
    assert_ptr_not_equal(x, a);                 /* a copy, not the caller's buffer */
    assert_string_equal(x, "metadata");
    const char *z = gd_intern("metadatA");
    assert_non_null(z);
    assert_ptr_not_equal(x, z);
    assert_string_equal(z, "metadatA");
    assert_non_null(gd_intern(""));
    assert_ptr_equal(gd_intern(""), gd_intern(""));
    assert_null(gd_intern(NULL));
}

static const char *POD =
    "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a-0\",\"labels\":{\"app\":\"godis\","
    "\"x.example.com/k\":\"v\"}},\"spec\":{\"containers\":[{\"name\":\"godis\",\"ports\":"
    "[{\"containerPort\":6399}]},{\"name\":\"side\"}]},\"status\":{\"phase\":\"Running\"}}";

static void test_tree_names_shared(void **state)
{
    cJSON *p = cJSON_Parse(POD), *q = cJSON_Parse(POD);
    assert_non_null(p);
    char *before = cJSON_PrintUnformatted(p);
    /* kind, metadata, name, labels, app, x.example.com/k, spec, containers, name, ports,
     * containerPort, name, status, phase: the root and the array elements have none */
    assert_int_equal(gd_json_intern_names(p), 14);
    assert_int_equal(gd_json_intern_names(p), 0);       /* already shared */
    assert_int_equal(gd_json_intern_names(q), 14);
    char *after = cJSON_PrintUnformatted(p);
    assert_string_equal(after, before);
    assert_true(cJSON_Compare(p, q, true));
    cJSON *lp = cJSON_GetObjectItem(cJSON_GetObjectItem(p, "metadata"), "labels");
    cJSON *lq = cJSON_GetObjectItem(cJSON_GetObjectItem(q, "metadata"), "labels");
    assert_true(lp->child->type & cJSON_StringIsConst);
    assert_ptr_equal(lp->child->string, lq->child->string);
    assert_ptr_equal(lp->child->string, gd_intern("app"));
    assert_true(cJSON_IsObject(lp) && cJSON_IsString(lp->child));
    /* a copy shares the names; changing the copy leaves the original alone */
    cJSON *c = cJSON_Duplicate(p, true);
    cJSON *cl = cJSON_GetObjectItem(cJSON_GetObjectItem(c, "metadata"), "labels");
    assert_ptr_equal(cl->child->string, lp->child->string);
    cJSON_ReplaceItemInObject(cl, "app", cJSON_CreateString("other"));
    cJSON_DeleteItemFromObject(cl, "x.example.com/k");
    cJSON_AddItemToObject(cl, lp->child->next->string, cJSON_CreateString("w"));
    assert_string_equal(cJSON_GetObjectItem(lp, "app")->valuestring, "godis");
    assert_string_equal(cJSON_GetObjectItem(lp, "x.example.com/k")->valuestring, "v");
    assert_string_equal(cJSON_GetObjectItem(cl, "x.example.com/k")->valuestring, "w");
    cJSON_Delete(c);
    assert_string_equal(gd_intern("x.example.com/k"), "x.example.com/k");
    cJSON_Delete(p);
    cJSON_Delete(q);
    assert_int_equal(gd_json_intern_names(NULL), 0);
    free(before);
    free(after);
}

static void test_long_names_kept(void **state)
{
    char name[GD_INTERN_MAX_LEN + 2];
    memset(name, 'k', sizeof name - 1);
    name[sizeof name - 1] = '\0';                       /* MAX_LEN + 1 characters */
    assert_null(gd_intern(name));
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, name, 1);
    name[GD_INTERN_MAX_LEN] = '\0';                     /* exactly MAX_LEN: interned */
    cJSON_AddNumberToObject(o, name, 2);
    assert_int_equal(gd_json_intern_names(o), 1);
    assert_false(o->child->type & cJSON_StringIsConst);
    assert_true(o->child->next->type & cJSON_StringIsConst);
    cJSON_Delete(o);
}

enum { NTHREADS = 4, NNAMES = 2000 };
static const char *seen[NTHREADS][NNAMES];

static void *intern_all(void *arg)
{
    int t = (int)(intptr_t)arg;
    char buf[32];
    for (int k = 0; k < NNAMES; k++) {
        int i = (k * 7 + t * 13) % NNAMES;      /* each thread in its own order */
        snprintf(buf, sizeof buf, "field-%d", i);
        seen[t][i] = gd_intern(buf);
    }
    return NULL;
}

static void test_threads_agree(void **state)
{
    size_t before = gd_intern_count();
    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; t++)
        assert_int_equal(pthread_create(&th[t], NULL, intern_all, (void *)(intptr_t)t), 0);
    for (int t = 0; t < NTHREADS; t++)
        pthread_join(th[t], NULL);
    char buf[32];
    for (int i = 0; i < NNAMES; i++) {
        snprintf(buf, sizeof buf, "field-%d", i);
        assert_non_null(seen[0][i]);
        assert_string_equal(seen[0][i], buf);
        for (int t = 1; t < NTHREADS; t++)
            assert_ptr_equal(seen[t][i], seen[0][i]);
    }
    assert_int_equal(gd_intern_count() - before, NNAMES);   /* no name held twice */
}

static void test_full_table(void **state)
{
    const char *early = gd_intern("metadata");
    char buf[32];
    int i = 0;
    while (gd_intern_count() < GD_INTERN_MAX) {
        snprintf(buf, sizeof buf, "fill-%d", i++);
        assert_non_null(gd_intern(buf));
    }
    assert_int_equal(gd_intern_count(), GD_INTERN_MAX);
    assert_null(gd_intern("one-name-too-many"));
    assert_int_equal(gd_intern_count(), GD_INTERN_MAX);
    assert_ptr_equal(gd_intern("metadata"), early);     /* what it holds is still found */
    assert_string_equal(gd_intern("fill-0"), "fill-0");
    cJSON *o = cJSON_Parse("{\"metadata\":1,\"brand-new\":2}");
    assert_int_equal(gd_json_intern_names(o), 1);
    assert_false(cJSON_GetObjectItem(o, "brand-new")->type & cJSON_StringIsConst);
    cJSON_Delete(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_copy_per_name),
        cmocka_unit_test(test_tree_names_shared),
        cmocka_unit_test(test_long_names_kept),
        cmocka_unit_test(test_threads_agree),
        cmocka_unit_test(test_full_table),      /* last: fills the process's table */
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
