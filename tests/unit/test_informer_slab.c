/* test_informer_slab.c — the slab the informer store keeps packed objects in
 * (informer/store_slab.h): bump allocation in aligned blocks, a freed record's space given
 * back (the current block starting over, an emptied block unmapped, a big record's own
 * mapping unmapped), compaction of blocks left under half full with every move reported to
 * the owner and every byte kept, and churn that never grows the slab past a bound of its
 * live bytes and leaves nothing mapped. Mappings are invisible to valgrind's leak check, so
 * the slab's own counters are what proves nothing is left. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "../../informer/store_slab.h"

/* A record: its id and length, then a pattern derived from both. */
typedef struct {
    uint32_t id, len;
    unsigned char bytes[];
} rec;

static rec *put(slab *s, uint32_t id, uint32_t len)
{
    rec *r = slab_alloc(s, sizeof *r + len);
    assert_non_null(r);
    assert_int_equal((uintptr_t)r & 3, 0);          /* the owner's tag bits are free */
    assert_true(slab_size(r) >= sizeof *r + len);
    r->id = id;
    r->len = len;
    for (uint32_t k = 0; k < len; k++)
        r->bytes[k] = (unsigned char)(id * 31 + k);
    return r;
}

static void check(const rec *r, uint32_t id)
{
    assert_int_equal(r->id, id);
    for (uint32_t k = 0; k < r->len; k++)
        assert_int_equal(r->bytes[k], (unsigned char)(id * 31 + k));
}

/* The owner: one reference per id, which moves follow. */
typedef struct {
    rec **by_id;
    int moves;
} owner;

static void moved(void *ud, void *from, void *to)
{
    owner *o = ud;
    rec *r = to;
    assert_ptr_equal(o->by_id[r->id], from);
    assert_int_equal(memcmp(from, to, sizeof *r + r->len), 0);
    o->by_id[r->id] = to;
    o->moves++;
}

static size_t live_bytes(rec **by_id, size_t n)
{
    size_t b = 0;
    for (size_t i = 0; i < n; i++)
        if (by_id[i])
            b += slab_round(sizeof(rec) + by_id[i]->len);
    return b;
}

static void test_alloc_free_reuse(void **state)
{
    slab s = {0};
    rec *a = put(&s, 1, 100), *b = put(&s, 2, 3);
    assert_int_equal(s.blocks, 1);
    assert_int_equal(s.mapped, SLAB_BLOCK);
    assert_int_equal(s.live, slab_round(sizeof(rec) + 100) + slab_round(sizeof(rec) + 3));
    assert_ptr_equal(slab_block_of(a), slab_block_of(b));
    assert_ptr_equal((char *)b, (char *)a + slab_round(sizeof(rec) + 100));   /* bumped */
    slab_free(&s, a);
    check(b, 2);
    slab_free(&s, b);
    assert_int_equal(s.live, 0);
    /* the current block, emptied, starts over: the next record takes the first place */
    rec *c = put(&s, 3, 50);
    assert_ptr_equal(c, a);
    assert_int_equal(s.blocks, 1);
    slab_free(&s, c);
    slab_free(&s, NULL);                             /* fine, like free(NULL) */
    slab_destroy(&s);
    assert_int_equal(s.mapped, 0);
    assert_int_equal(s.blocks, 0);
}

static void test_big_records(void **state)
{
    slab s = {0};
    rec *small = put(&s, 1, 10);
    size_t before = s.mapped;
    rec *big = put(&s, 2, (uint32_t)SLAB_BLOCK);     /* larger than a block */
    assert_int_equal(s.blocks, 2);
    assert_true(s.mapped >= before + SLAB_BLOCK);
    assert_ptr_not_equal(slab_block_of(big), slab_block_of(small));
    assert_ptr_equal(s.cur, slab_block_of(small));    /* bump allocation goes on there */
    rec *next = put(&s, 3, 10);
    assert_ptr_equal(slab_block_of(next), slab_block_of(small));
    check(big, 2);
    slab_free(&s, big);                              /* its mapping goes at once */
    assert_int_equal(s.mapped, before);
    assert_int_equal(s.blocks, 1);
    slab_free(&s, small);
    slab_free(&s, next);
    /* a big record as the very first one, then small ones */
    slab_destroy(&s);
    big = put(&s, 4, (uint32_t)SLAB_BIG + 1);
    small = put(&s, 5, 10);
    assert_int_equal(s.blocks, 2);
    slab_free(&s, big);
    assert_int_equal(s.blocks, 1);
    check(small, 5);
    slab_free(&s, small);
    slab_destroy(&s);
    assert_int_equal(s.mapped, 0);
}

/* Three blocks' worth, then 3 of every 4 records freed: the full blocks go under half and
 * are queued; compaction moves the survivors, reports each move, and unmaps them. */
static void test_compaction_moves_and_unmaps(void **state)
{
    enum { N = 2400 };
    slab s = {0};
    owner o = {.by_id = calloc(N, sizeof(rec *))};
    for (uint32_t i = 0; i < N; i++)
        o.by_id[i] = put(&s, i, 200 + i % 300);
    size_t blocks = s.blocks, mapped = s.mapped;
    assert_true(blocks >= 3);
    for (uint32_t i = 0; i < N; i++)
        if (i % 4) {
            slab_free(&s, o.by_id[i]);
            o.by_id[i] = NULL;
        }
    assert_non_null(s.sparse);
    assert_int_equal(s.live, live_bytes(o.by_id, N));
    slab_compact(&s, moved, &o);
    assert_null(s.sparse);
    assert_true(o.moves > 0);
    assert_true(s.blocks < blocks);
    assert_true(s.mapped < mapped);
    assert_int_equal(s.live, live_bytes(o.by_id, N));
    for (uint32_t i = 0; i < N; i += 4)
        check(o.by_id[i], i);
    /* nothing left to do: a second pass moves nothing */
    int moves = o.moves;
    slab_compact(&s, moved, &o);
    assert_int_equal(o.moves, moves);
    for (uint32_t i = 0; i < N; i += 4)
        slab_free(&s, o.by_id[i]);
    assert_int_equal(s.live, 0);
    slab_compact(&s, moved, &o);
    assert_true(s.blocks <= 1);                      /* at most the current block */
    slab_destroy(&s);
    free(o.by_id);
}

/* Random puts, replacements and frees of mixed sizes (big ones included), compacting as the
 * store does after each change: every record keeps its bytes, the slab stays within a bound
 * of its live bytes, and freeing everything leaves at most the current block. */
static void test_churn_bounded(void **state)
{
    enum { K = 3000, OPS = 60000 };
    slab s = {0};
    owner o = {.by_id = calloc(K, sizeof(rec *))};
    uint64_t x = 11;
    size_t peak = 0;
    for (int op = 0; op < OPS; op++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t id = (uint32_t)((x >> 33) % K);
        uint32_t len = (x >> 20) % 97 == 0 ? (uint32_t)(SLAB_BIG + (x >> 40) % 5000)
                                            : (uint32_t)(16 + (x >> 24) % 1500);
        if (o.by_id[id]) {
            check(o.by_id[id], id);
            slab_free(&s, o.by_id[id]);
            o.by_id[id] = NULL;
        }
        if ((x >> 50) % 4)
            o.by_id[id] = put(&s, id, len);           /* an update, or a new record */
        slab_compact(&s, moved, &o);
        if (op % 1000 == 0) {
            size_t live = live_bytes(o.by_id, K);
            assert_int_equal(s.live, live);
            size_t big = 0;
            for (slab_block *b = s.head; b; b = b->next)
                big += b->map_len > SLAB_BLOCK ? b->map_len : 0;
            /* blocks not queued are at least half full once their bump pointer got past
             * the last record that would fit: ~2.7x the live bytes at worst, plus the
             * current block */
            assert_true(s.mapped - big <= 3 * live + 2 * SLAB_BLOCK);
            if (s.mapped > peak)
                peak = s.mapped;
        }
    }
    assert_true(o.moves > 0);
    for (uint32_t i = 0; i < K; i++)
        if (o.by_id[i]) {
            check(o.by_id[i], i);
            slab_free(&s, o.by_id[i]);
        }
    slab_compact(&s, moved, &o);
    assert_int_equal(s.live, 0);
    assert_true(s.blocks <= 1);
    assert_true(s.mapped <= SLAB_BLOCK);
    slab_destroy(&s);
    assert_int_equal(s.mapped, 0);
    assert_int_equal(s.blocks, 0);
    free(o.by_id);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_free_reuse),
        cmocka_unit_test(test_big_records),
        cmocka_unit_test(test_compaction_moves_and_unmaps),
        cmocka_unit_test(test_churn_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
