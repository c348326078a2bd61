/* test_cache_view.c — the cache's view sections (reconciles read cached objects without a
 * copy): an object the feed replaces or removes stays readable, unchanged, until every
 * section that could have seen it ends, and is freed then; sections that began later hold
 * nothing back; readers under a writer never read freed memory (ASan runs this); and with
 * GODIS_CACHE_VERIFY=1 a reader that modifies a lent object is caught. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "gd_json.h"
#include "cache.h"

static void put(cache *c, const char *key, const char *val)
{
    char buf[256];
    snprintf(buf, sizeof buf, "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\"},\"v\":\"%s\"}",
             key + 3, val);
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    assert_int_equal(cache_apply(c, CACHE_UPSERT, "Pod", key, 1, o), GD_OK);
    cJSON_Delete(o);
}

static void lend(void *ud, const cJSON *o) { *(const cJSON **)ud = o; }

static const cJSON *borrow(cache *c, const char *key)
{
    const cJSON *o = NULL;
    assert_true(cache_read(c, "Pod", key, lend, &o));
    return o;
}

static void test_replaced_object_lives_until_its_sections_end(void **st)
{
    (void)st;
    cache *c = cache_new();
    put(c, "ns/a", "one");
    int s1 = cache_view_begin(c);
    const cJSON *a1 = borrow(c, "ns/a");
    put(c, "ns/a", "two");                              /* replaced under the section */
    assert_int_equal(cache_retired_count(c), 1);
    assert_string_equal(gd_json_str_or(a1, "v", ""), "one");
    int s2 = cache_view_begin(c);                       /* began after: sees only "two" */
    assert_string_equal(gd_json_str_or(borrow(c, "ns/a"), "v", ""), "two");
    assert_int_not_equal(s1, s2);
    cache_view_end(c, s1);
    assert_int_equal(cache_retired_count(c), 0);        /* s2 cannot hold "one" back */
    /* a delete is a replacement by nothing */
    const cJSON *a2 = borrow(c, "ns/a");
    assert_int_equal(cache_apply(c, CACHE_DELETE, "Pod", "ns/a", 1, NULL), GD_OK);
    assert_int_equal(cache_retired_count(c), 1);
    assert_string_equal(gd_json_str_or(a2, "v", ""), "two");
    cache_view_end(c, s2);
    assert_int_equal(cache_retired_count(c), 0);
    /* without a section, a replaced object goes at once */
    put(c, "ns/b", "x");
    put(c, "ns/b", "y");
    assert_int_equal(cache_retired_count(c), 0);
    cache_destroy(&c);
}

/* What a write hands back (the feed's old object) and dropped shards are retired too. */
static void test_handed_back_and_dropped_are_retired(void **st)
{
    (void)st;
    cache *c = cache_new();
    put(c, "ns/a", "one");
    put(c, "ns/b", "one");
    int s = cache_view_begin(c);
    const cJSON *a = borrow(c, "ns/a"), *b = borrow(c, "ns/b");
    cJSON *fresh = cJSON_Parse("{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\"},\"v\":\"two\"}");
    cJSON *old = NULL;
    assert_int_equal(cache_apply_take(c, CACHE_UPSERT, "Pod", "ns/a", 1, &fresh, &old), GD_OK);
    assert_ptr_equal(old, a);
    cache_retire(c, old);                               /* the feed is done with it */
    assert_int_equal(cache_drop_shards(c, "Pod", (int[]){1}, 1), 2);
    assert_int_equal(cache_retired_count(c), 3);        /* one, one (b), two (a, dropped) */
    assert_string_equal(gd_json_str_or(a, "v", ""), "one");
    assert_string_equal(gd_json_str_or(b, "v", ""), "one");
    cache_view_end(c, s);
    assert_int_equal(cache_retired_count(c), 0);
    cache_destroy(&c);
}

/* ---- readers in sections beside a writer that replaces everything they read ---- */

#define KEYS 16

typedef struct {
    cache *c;
    atomic_bool stop;
    atomic_long reads;
} race;

static int collect(void *ud, const char *key, const cJSON *o)
{
    const cJSON **seen = ud;
    for (int i = 0; i < KEYS; i++)
        if (!seen[i]) {
            seen[i] = o;
            break;
        }
    return 0;
}

static void *reader(void *arg)
{
    race *r = arg;
    while (!atomic_load(&r->stop)) {
        int s = cache_view_begin(r->c);
        const cJSON *seen[KEYS] = {0};
        cache_each(r->c, "Pod", collect, seen);
        sched_yield();                                  /* let the writer replace them */
        for (int i = 0; i < KEYS && seen[i]; i++) {
            char *txt = cJSON_PrintUnformatted(seen[i]); /* reads every byte: ASan checks */
            assert_non_null(strstr(txt, "\"v\":\"gen-"));
            free(txt);
            atomic_fetch_add(&r->reads, 1);
        }
        cache_view_end(r->c, s);
    }
    return NULL;
}

static void test_readers_beside_replacing_writer(void **st)
{
    (void)st;
    race r = {.c = cache_new()};
    char key[16], val[32];
    for (int k = 0; k < KEYS; k++) {
        snprintf(key, sizeof key, "ns/p%d", k);
        put(r.c, key, "gen-0");
    }
    pthread_t t[3];
    for (int i = 0; i < 3; i++) assert_int_equal(pthread_create(&t[i], NULL, reader, &r), 0);
    /* at least 3000 replacements, and on until the readers have read a while (under
     * valgrind the threads run one at a time) */
    for (int gen = 1; gen <= 3000 || atomic_load(&r.reads) < 200; gen++) {
        snprintf(key, sizeof key, "ns/p%d", gen % KEYS);
        snprintf(val, sizeof val, "gen-%d", gen);
        put(r.c, key, val);
    }
    atomic_store(&r.stop, true);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    assert_true(atomic_load(&r.reads) > 0);
    /* every section has ended: the next reclamation frees everything retired */
    int s = cache_view_begin(r.c);
    cache_view_end(r.c, s);
    assert_int_equal(cache_retired_count(r.c), 0);
    cache_destroy(&r.c);
}

/* GODIS_CACHE_VERIFY=1: a reader that writes into a lent object is fatal when the object
 * leaves the cache (in a child process: it aborts). */
static void test_verify_catches_a_modifying_reader(void **st)
{
    (void)st;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("GODIS_CACHE_VERIFY", "1", 1);
        cache *c = cache_new();
        put(c, "ns/a", "one");
        put(c, "ns/a", "two");                          /* unchanged: passes */
        int s = cache_view_begin(c);
        cJSON *lent = (cJSON *)borrow(c, "ns/a");
        cJSON_AddStringToObject(lent, "scribble", "x"); /* the bug it catches */
        cache_view_end(c, s);
        put(c, "ns/a", "three");                        /* leaves the cache changed: abort */
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replaced_object_lives_until_its_sections_end),
        cmocka_unit_test(test_handed_back_and_dropped_are_retired),
        cmocka_unit_test(test_readers_beside_replacing_writer),
        cmocka_unit_test(test_verify_catches_a_modifying_reader),
    };
    return cmocka_run_group_tests_name("cache_view", tests, NULL, NULL);
}
