/* store_slab.h — where the informer store keeps its packed objects (store.c).
 *
 * Why a slab: one malloc per packed object cost ~16 bytes of chunk header and rounding, and
 * after a list ~45 bytes more per object of heap pages glibc could not give back (the packed
 * copies were allocated between the JSON originals being freed, so no page of them came free
 * whole). Together ~8 % of the store's RSS per object (issue 23 item 3). Here records are
 * bump-allocated in 256 KiB blocks of their own mapping: 4 bytes of header per record, and
 * a block whose records are all gone is unmapped at once.
 *
 * Freed space in a block is not reused in place. A block left under half full is queued,
 * and slab_compact (called by the owner when no record pointer of its is held) moves its
 * live records into the current block, telling the owner each move so it updates its one
 * reference, then unmaps it. So churn never grows the slab much beyond twice its live bytes,
 * and each byte is moved at most once per half block freed around it.
 *
 * Header-only, with static inline functions: store.c and the unit test
 * (tests/unit/test_informer_slab.c) include it, so nothing else has to link it. */
#ifndef INFORMER_STORE_SLAB_H
#define INFORMER_STORE_SLAB_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define SLAB_BLOCK ((size_t)256 << 10)   /* blocks are this size and aligned to it */
#define SLAB_BIG (SLAB_BLOCK / 4)        /* larger records get a mapping of their own */
#define SLAB_DEAD 1u                     /* header bit: the record was freed */

typedef struct slab_block {
    struct slab_block *prev, *next;      /* every block */
    struct slab_block *next_sparse;      /* the compaction queue */
    size_t map_len;                      /* the mapping's length */
    size_t cap, used, live;              /* bytes of records: room, bumped, not yet freed */
    bool queued;
    _Alignas(8) unsigned char data[];    /* records: uint32 header (size | SLAB_DEAD), payload */
} slab_block;

typedef struct {
    slab_block *head;                    /* every block */
    slab_block *cur;                     /* the current one: bump allocation goes here */
    slab_block *sparse;                  /* blocks under half full, to compact */
    size_t mapped;                       /* bytes mapped */
    size_t live;                         /* bytes of live records, headers included */
    size_t blocks;
} slab;

/* Told that the record at from now lives at to (its bytes already copied). */
typedef void (*slab_move_fn)(void *ud, void *from, void *to);

static inline size_t slab_round(size_t payload)
{
    return (4 + payload + 3) & ~(size_t)3;
}

/* The block of a record: a record starts within the first SLAB_BLOCK bytes of its block
 * (a big one is the only record of its mapping), and mappings are aligned to SLAB_BLOCK. */
static inline slab_block *slab_block_of(const void *payload)
{
    return (slab_block *)((uintptr_t)payload & ~(uintptr_t)(SLAB_BLOCK - 1));
}

static inline uint32_t *slab_hdr(const void *payload)
{
    return (uint32_t *)((unsigned char *)payload - 4);
}

/* A block mapping len bytes (a multiple of the page size), aligned to SLAB_BLOCK; NULL when
 * out of memory. Maps SLAB_BLOCK more and gives back the misaligned ends. */
static inline slab_block *slab_map(slab *s, size_t len)
{
    unsigned char *m = mmap(NULL, len + SLAB_BLOCK, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    uintptr_t a = ((uintptr_t)m + SLAB_BLOCK - 1) & ~(uintptr_t)(SLAB_BLOCK - 1);
    size_t head = a - (uintptr_t)m;
    if (head)
        munmap(m, head);
    if (SLAB_BLOCK - head)
        munmap((unsigned char *)a + len, SLAB_BLOCK - head);
    slab_block *b = (slab_block *)a;
    *b = (slab_block){.map_len = len, .cap = len - offsetof(slab_block, data)};
    s->mapped += len;
    s->blocks++;
    return b;
}

static inline void slab_unlink(slab *s, slab_block *b)
{
    if (s->cur == b)
        s->cur = NULL;
    if (b->prev)
        b->prev->next = b->next;
    else
        s->head = b->next;
    if (b->next)
        b->next->prev = b->prev;
}

static inline void slab_unmap(slab *s, slab_block *b)
{
    slab_unlink(s, b);
    s->mapped -= b->map_len;
    s->blocks--;
    munmap(b, b->map_len);
}

static inline void slab_queue(slab *s, slab_block *b)
{
    if (!b->queued && b != s->cur && b->live * 2 < b->used) {
        b->queued = true;
        b->next_sparse = s->sparse;
        s->sparse = b;
    }
}

static inline void slab_push(slab *s, slab_block *b)
{
    b->next = s->head;
    if (s->head)
        s->head->prev = b;
    s->head = b;
}

/* Room for `n` bytes, 4-aligned (the low two bits of the pointer are free for the owner's
 * tags), or NULL when out of memory. */
static inline void *slab_alloc(slab *s, size_t n)
{
    if (n > UINT32_MAX - 64)
        return NULL;
    size_t total = slab_round(n);
    slab_block *b = s->cur;
    if (total > SLAB_BIG) {                  /* a mapping of its own, never current */
        size_t len = (offsetof(slab_block, data) + total + 4095) & ~(size_t)4095;
        if (!(b = slab_map(s, len)))
            return NULL;
        slab_push(s, b);
    } else if (!b || b->used + total > b->cap) {
        slab_block *nb = slab_map(s, SLAB_BLOCK);
        if (!nb)
            return NULL;
        slab_push(s, nb);
        s->cur = nb;
        if (b)
            slab_queue(s, b);                /* no longer current: may be compacted */
        b = nb;
    }
    uint32_t *h = (uint32_t *)(b->data + b->used);
    *h = (uint32_t)total;
    b->used += total;
    b->live += total;
    s->live += total;
    return h + 1;
}

/* The payload bytes a record has room for (its allocation rounded up). */
static inline size_t slab_size(const void *p)
{
    return (*slab_hdr(p) & ~SLAB_DEAD) - 4;
}

static inline void slab_free(slab *s, void *p)
{
    if (!p)
        return;
    uint32_t *h = slab_hdr(p);
    size_t total = *h & ~SLAB_DEAD;
    *h |= SLAB_DEAD;
    slab_block *b = slab_block_of(h);
    b->live -= total;
    s->live -= total;
    if (b->live == 0 && b == s->cur)
        b->used = 0;                         /* the current block starts over */
    else if (b->live == 0 && !b->queued)
        slab_unmap(s, b);
    else
        slab_queue(s, b);
}

/* Moves the live records of every queued block into the current one (move says where each
 * went) and unmaps the emptied blocks. Out of memory: stops, the rest stays queued. */
static inline void slab_compact(slab *s, slab_move_fn move, void *ud)
{
    while (s->sparse) {
        slab_block *b = s->sparse;
        s->sparse = b->next_sparse;          /* b->queued stays set: nothing requeues it */
        for (size_t off = 0; off < b->used && b->live;) {
            uint32_t *h = (uint32_t *)(b->data + off);
            size_t total = *h & ~SLAB_DEAD;
            if (!(*h & SLAB_DEAD)) {
                void *to = slab_alloc(s, total - 4);
                if (!to) {                   /* b goes back in the queue: done next time */
                    b->next_sparse = s->sparse;
                    s->sparse = b;
                    return;
                }
                memcpy(to, h + 1, total - 4);
                move(ud, h + 1, to);
                *h |= SLAB_DEAD;
                b->live -= total;
                s->live -= total;
            }
            off += total;
        }
        slab_unmap(s, b);
    }
}

static inline void slab_destroy(slab *s)
{
    while (s->head)
        slab_unmap(s, s->head);
    *s = (slab){0};
}

#endif
