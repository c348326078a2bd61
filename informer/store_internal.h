/* store_internal.h — the informer store's layout, shared by store.c and its unit tests
 * (test_informer_pack checks the packing: dictionary training, corrupt bodies). Other files
 * use informer.h. */
#ifndef INFORMER_STORE_INTERNAL_H
#define INFORMER_STORE_INTERNAL_H
#include <stdbool.h>
#include <stdint.h>
#include <zstd.h>
#include "gd_map.h"
#include "informer.h"
#include "store_slab.h"

enum {
    PACK_TRAIN_AT = 256,            /* objects cached before the dictionary is trained */
    PACK_SAMPLE_BYTES = 1 << 20,    /* at most this much of them is used for training */
    PACK_DICT_BYTES = 8 << 10,      /* 16 KiB measured no better on ConfigMaps and Pods */
    /* Level 3 keeps 5.5 % fewer bytes than 1 (728 against 771 a 1 KiB-data ConfigMap) for
     * ~1.6x its CPU; levels 4-19 gain at most 3 % more for 2-10x. Affordable since watch
     * updates are packed late (young objects): hot objects are not packed at all. */
    PACK_LEVEL = 3,
    PACK_HASH_LOG = 13,             /* the CDict's hash and chain tables (store_pack.c) */
    PACK_KEEP_SHARE = 32,           /* a token in 1/32 of the samples stays in the text */
    PACK_MIN_BYTES = 64,            /* smaller bodies are kept as they are */
    /* Watch updates stay uncompressed until this many later updates went by (store.c,
     * "young objects"): an object changed again within the window is never packed. */
    PACK_YOUNG_DEFAULT = 512,
};
#define PACK_MAX_BYTES ((size_t)UINT32_MAX)   /* raw_len is 32 bits */

/* A packed object, in the store's slab (issue 23 item 3: 16 bytes of header instead of
 * inf_obj's 48, no NULs, the namespace as an id): the sizes, mark and shard of its inf_obj,
 * then the name (the whole key when ns is 0), the rv and the frame (store_pack.c), back to
 * back. */
enum {
    REC_NAME_MAX = 511,     /* nlen's 9 bits; keys are < 512 bytes anyway (gd_meta_key) */
    REC_RV_MAX = 255,       /* rvlen's 8 bits */
    REC_NS_MAX = 16383,     /* ns's 14 bits: namespaces past that keep their keys whole */
};
#define REC_Z_MAX ((1u << 24) - 1)   /* zlen's 24 bits: larger frames are kept as JSON */
typedef struct {
    uint32_t raw_len;                /* the JSON's length */
    uint32_t mark;                   /* relist generation, as inf_obj.mark */
    uint32_t zlen : 24, rvlen : 8;
    uint32_t nlen : 9, shard1 : 9, ns : 14;   /* shard1: shard + 1 (GD_SHARD_BROADCAST is -1) */
    char data[];
} pk_rec;

/* The namespaces of packed records, each stored once and referenced by id (1..): a
 * namespace's objects share it, so a key costs its name only. */
typedef struct {
    const char *name;                /* the id map's copy; NULL: a free id */
    uint32_t len, refs;
} ns_ent;
typedef struct {
    gd_map *ids;                     /* namespace → id */
    ns_ent *v;                       /* by id - 1 */
    size_t n, cap;
    uint16_t *free_ids;              /* ids whose namespace lost its last record */
    size_t nfree;
} store_ns;

/* An index slot: an inf_obj * (JSON: young, small or incompressible objects, or every
 * object before the dictionary exists), or a pk_rec * with bit 0 set. */
typedef uintptr_t store_ent;
#define ENT_PACKED ((uintptr_t)1)

/* Open addressing with linear probing; deletion shifts the run back (no tombstones). */
typedef struct {
    store_ent *slot;                /* 0: empty */
    size_t cap;                     /* power of two (0 before the first insert) */
    size_t count;
    const store_ns *ns;             /* the packed records' namespaces */
} obj_table;

typedef struct {
    size_t train_at;                /* 0: never compress */
    bool trained;                   /* tried once, successfully or not: never again */
    ZSTD_CDict *cdict;
    ZSTD_DDict *ddict;
    ZSTD_CCtx *cctx;
    ZSTD_DCtx *dctx;
    size_t dict_len;
    const char *dict_how;           /* "trained" or "raw samples" (logs, tests) */
    char *zbuf;                     /* compression output */
    size_t zcap;
    /* a body with its tokens split out (gd_tokpack), and the tokens; both tcap bytes. Packing
     * and unpacking share them: a store is used by one thread at a time (the publisher's
     * lock), as it shares its zstd contexts */
    char *text;
    unsigned char *side;
    uint64_t *keep;                 /* tokens left in the text (gd_tokpack_keep), sorted */
    size_t nkeep;
    size_t tcap;
} store_pack;

/* The young objects: a ring of references to the last `cap` objects upserted while a
 * dictionary exists, oldest first. Replaced or deleted ones stay referenced until their turn
 * (then just let go): bounded by cap objects. */
typedef struct {
    inf_obj **ring;
    size_t cap;            /* the window (0: pack at once); the ring is allocated lazily */
    size_t head, len;
} store_young;

struct inf_store {
    obj_table t;
    store_pack pk;
    store_young young;
    slab slab;             /* the packed objects */
    store_ns ns;
    inf_obj *view;         /* inf_store_get's answer for a packed object (rec_view_buf) */
    uint32_t generation;   /* bumped per replace; objects seen in the list carry it */
};

/* The JSON of a packed object (a new reference), or NULL with the reason in *why when the
 * packed body is corrupt or does not inflate to exactly raw_len bytes. */
inf_obj *inf_store_unpack(store_pack *pk, const inf_obj *o, const char **why);

/* store_pack.c: the dictionary and the frames (a packed record's body). */
/* Trains the dictionary on the table's JSON objects and makes the contexts: the dictionary's
 * size, or 0 (and pk freed) when that fails; the store then stays uncompressed. */
size_t store_pack_train(store_pack *pk, const obj_table *t);
void store_pack_free(store_pack *pk);
/* body's frame, in pk->zbuf: its length, or 0 when it is not worth keeping (no smaller than
 * body, too large for a record, out of memory). */
size_t store_pack_frame(store_pack *pk, const char *body, size_t n);
/* A frame's JSON into out, exactly raw_len bytes: NULL, or what is wrong with the frame. */
const char *store_pack_inflate(store_pack *pk, const unsigned char *f, size_t flen, char *out,
                               size_t raw_len);

#define MARK_LOOSE UINT32_MAX           /* inf_obj.mark of a loose object */
#define TRIM_AFTER_BYTES (4u << 20)     /* loose bytes after which the heap is trimmed */
/* Objects handed out loose (outside every store) and not yet freed, and whether a trim is
 * due once the last of them is freed. */
long inf_store_loose_live(void);
bool inf_store_trim_wanted(void);

#endif
