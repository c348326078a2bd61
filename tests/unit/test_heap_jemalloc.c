/* test_heap_jemalloc.c — the heap release on jemalloc, the worker's allocator (the Makefile
 * links this test with it, as it links the worker): the allocator is found at run time, and
 * memory freed in a fragmented way comes back to the system at the release the heap trim
 * calls, not 10 s later.
 * Not built under ASan (whose allocator serves every malloc; jemalloc is not linked). Under
 * valgrind, whose allocator replaces jemalloc's, there is no jemalloc heap to purge: the
 * purge test skips. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "gd_heap_trim.h"

static long resident_kb(void)
{
    int64_t b = gd_heap_resident_bytes();
    assert_true(b > 0);
    return (long)(b / 1024);
}

static void test_purge_gives_memory_back(void **state)
{
    assert_true(gd_heap_on_jemalloc());     /* linked as the worker is */
    assert_string_equal(gd_heap_allocator(), "jemalloc");
    enum { N = 200000 };
    char **p = malloc(N * sizeof *p);
    assert_non_null(p);
    long before = resident_kb();
    for (int i = 0; i < N; i++) {
        p[i] = malloc(1000);
        assert_non_null(p[i]);
        memset(p[i], 1, 1000);
    }
    if (resident_kb() - before < 150 * 1024 || gd_heap_jemalloc_allocated() < (uint64_t)N * 1000) {
        /* valgrind's allocator took the mallocs: no jemalloc heap behind them */
        for (int i = 0; i < N; i++)
            free(p[i]);
        free(p);
        skip();
    }
    for (int i = 0; i < N; i++)
        if (i % 64)                 /* keep every 64th: no large run is free as a whole */
            free(p[i]);
    /* jemalloc's own decay would hand back a part within a second; the release, all of the
     * free pages now. gd_heap_trim_tick calls it when due (test_gd_heap_trim: when). */
    long held = resident_kb();
    gd_heap_release();
    assert_true(held - resident_kb() > 100 * 1000);     /* KiB, of ~195 MB freed */
    for (int i = 0; i < N; i += 64)
        free(p[i]);
    free(p);
}

/* A release with nothing freed is harmless, and the allocator's name is stable. */
static void test_release_idempotent(void **state)
{
    const char *a = gd_heap_allocator();
    assert_true(!strcmp(a, "jemalloc") || !strcmp(a, "glibc"));
    gd_heap_release();
    gd_heap_release();
    assert_string_equal(gd_heap_allocator(), a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_purge_gives_memory_back),
        cmocka_unit_test(test_release_idempotent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
