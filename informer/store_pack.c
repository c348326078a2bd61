/* store_pack.c — the informer store's compression: the dictionary, and a body's frame.
 *
 * A frame is what a packed record keeps of its JSON (store.c says when objects are packed):
 *   the side's length (a varint) | the side | a zstd frame of the text
 * where text and side are the body split by gd_tokpack: its long random tokens (hex
 * digests, base64 keys, UUIDs) as their bits in the side, the rest as text. Only the text
 * goes through zstd and the dictionary: the tokens are incompressible, and out of the text
 * its matches run on across them. Tokens common to the kind (in 1/32 of the training
 * samples: an image digest, a CA certificate) stay in the text, and so in the dictionary.
 * On the replay benchmark's ConfigMap (1 KiB of random hex and base64 values) a frame went
 * from 725 to ~593 bytes; on a converge's objects 6-14 % less (Pods 12.6 %, Services and
 * PVCs 14 %), mostly their UIDs.
 *
 * The zstd frames carry no magic, content size, checksum or dictionary id (~13 bytes an
 * object): the record has the sizes, and frames never leave the store. */
/* for ZSTD_c_format / ZSTD_d_format (magicless frames) and ZSTD_createCDict_advanced */
#define ZSTD_STATIC_LINKING_ONLY
#include "store_internal.h"
#include "store_index.h"
#include <stdlib.h>
#include <string.h>
#include <zdict.h>
#include <zstd.h>
#include "gd_tokpack.h"

void store_pack_free(store_pack *pk)
{
    ZSTD_freeCDict(pk->cdict);
    ZSTD_freeDDict(pk->ddict);
    ZSTD_freeCCtx(pk->cctx);
    ZSTD_freeDCtx(pk->dctx);
    free(pk->zbuf);
    free(pk->text);
    free(pk->side);
    free(pk->keep);
    size_t train_at = pk->train_at;
    bool trained = pk->trained;
    *pk = (store_pack){.train_at = train_at, .trained = trained};
}

/* Grows the scratch buffers for a body of n bytes; false when memory is short. zbuf holds
 * a whole frame: the side's length, the side (at most n) and zstd's bound for the text. */
static bool pack_scratch(store_pack *pk, size_t n)
{
    size_t bound = 10 + n + ZSTD_compressBound(n);
    if (bound > pk->zcap) {
        char *nb = realloc(pk->zbuf, bound);
        if (!nb)
            return false;
        pk->zbuf = nb;
        pk->zcap = bound;
    }
    if (n > pk->tcap) {
        char *t = realloc(pk->text, n);
        if (t)
            pk->text = t;
        unsigned char *sd = t ? realloc(pk->side, n) : NULL;
        if (!sd)
            return false;
        pk->side = sd;
        pk->tcap = n;
    }
    return true;
}

/* body split into pk->text (the length returned; 0: out of memory) and pk->side. */
static size_t split_tokens(store_pack *pk, const char *body, size_t n, size_t *side_len)
{
    if (!pack_scratch(pk, n))
        return 0;
    gd_tokpack_keep keep = {pk->keep, pk->nkeep};
    return gd_tokpack_split(body, n, &keep, pk->text, pk->side, side_len);
}

size_t store_pack_frame(store_pack *pk, const char *body, size_t n)
{
    size_t side_len = 0, text_len = split_tokens(pk, body, n, &side_len);
    if (!text_len)
        return 0;
    unsigned char *f = (unsigned char *)pk->zbuf;
    size_t hl = gd_tokpack_put_len(f, side_len);
    memcpy(f + hl, pk->side, side_len);
    size_t at = hl + side_len;
    size_t z = ZSTD_compress2(pk->cctx, pk->zbuf + at, pk->zcap - at, pk->text, text_len);
    if (ZSTD_isError(z) || at + z >= n || at + z > REC_Z_MAX)
        return 0;
    return at + z;
}

const char *store_pack_inflate(store_pack *pk, const unsigned char *f, size_t flen, char *out,
                               size_t raw_len)
{
    size_t side_len = 0;
    int hl = gd_tokpack_get_len(f, flen, &side_len);
    if (hl < 0 || side_len > flen - (size_t)hl)
        return "packed body's token length is past its end";
    const unsigned char *side = f + hl, *z = side + side_len;
    size_t zlen = flen - (size_t)hl - side_len;
    if (!side_len) {       /* nothing was split out: the frame inflates to the JSON itself */
        size_t r = ZSTD_decompress_usingDDict(pk->dctx, out, raw_len, z, zlen, pk->ddict);
        if (ZSTD_isError(r))
            return ZSTD_getErrorName(r);
        return r == raw_len ? NULL : "body shorter than recorded";
    }
    if (!pack_scratch(pk, raw_len))
        return "out of memory";
    size_t r = ZSTD_decompress_usingDDict(pk->dctx, pk->text, raw_len, z, zlen, pk->ddict);
    if (ZSTD_isError(r))
        return ZSTD_getErrorName(r);
    if (gd_tokpack_join(pk->text, r, side, side_len, out, raw_len))
        return "packed body's tokens do not rebuild it";
    return NULL;
}

/* The training samples: the cached JSON objects, in table order, as many as fit in
 * PACK_SAMPLE_BYTES (*total: their bytes so far). NULL after the last. */
static const inf_obj *next_sample(const obj_table *t, size_t *i, size_t *total)
{
    for (; *i < t->cap; (*i)++) {
        store_ent e = t->slot[*i];
        if (e && !ent_packed(e) && *total + ent_obj(e)->body_len <= PACK_SAMPLE_BYTES) {
            *total += ent_obj(e)->body_len;
            return ent_obj(t->slot[(*i)++]);
        }
    }
    return NULL;
}

/* The keep set (gd_tokpack_keep): the tokens found in at least 1/PACK_KEEP_SHARE of the
 * samples (and in 2): an image digest every Pod has, the CA certificate of every
 * kube-root-ca.crt. Left in the text, they go into the dictionary and cost a match; split
 * out, each copy would cost its bits. A token that only its own object has is split out. */
static void pack_make_keep(store_pack *pk, const obj_table *t)
{
    uint64_t one[256], *all = NULL;
    size_t n = 0, cap = 0, samples = 0, i = 0, total = 0;
    for (const inf_obj *o; (o = next_sample(t, &i, &total)); samples++) {
        size_t k = gd_tokpack_hashes(o->body, o->body_len, one, 256), u = 0;
        gd_tokpack_sort(one, k);
        for (size_t j = 0; j < k; j++)       /* each token counts once a sample */
            if (!j || one[j] != one[j - 1])
                one[u++] = one[j];
        if (!u)
            continue;
        if (n + u > cap) {
            uint64_t *na = realloc(all, (cap = 2 * (n + u)) * sizeof *all);
            if (!na)
                break;
            all = na;
        }
        memcpy(all + n, one, u * sizeof *one);
        n += u;
    }
    gd_tokpack_sort(all, n);
    size_t need = samples / PACK_KEEP_SHARE > 2 ? samples / PACK_KEEP_SHARE : 2, kept = 0;
    for (size_t j = 0; j < n;) {
        size_t e = j;
        while (e < n && all[e] == all[j])
            e++;
        if (e - j >= need)
            all[kept++] = all[j];
        j = e;
    }
    /* sorted, as gd_tokpack_keep wants; the samples' other hashes are let go (on the
     * benchmark's random values nothing is kept, and 17 000 hashes were 7 bytes an object) */
    uint64_t *fit = kept ? realloc(all, kept * sizeof *all) : NULL;
    if (!fit)
        free(all);
    pk->keep = fit;
    pk->nkeep = fit ? kept : 0;
}

/* The dictionary: trained (zstd's cover algorithm) on the samples' texts, or, when the
 * samples are too few or too alike for training, the texts themselves as raw content
 * (zstd then references them as a prefix; still a large gain). */
static size_t pack_make_dict(store_pack *pk, const obj_table *t, char *dict, size_t cap,
                             const char **how)
{
    size_t total = 0, n = 0, i = 0;
    while (next_sample(t, &i, &total))
        n++;
    char *buf = malloc(total ? total : 1);
    size_t *sizes = calloc(n ? n : 1, sizeof *sizes);
    size_t len = 0, k = 0, side_len;
    if (!buf || !sizes) {
        free(buf);
        free(sizes);
        return 0;
    }
    i = total = 0;
    for (const inf_obj *o; (o = next_sample(t, &i, &total));) {
        size_t tl = split_tokens(pk, o->body, o->body_len, &side_len);
        if (tl) {        /* the dictionary is of the texts that will be compressed */
            memcpy(buf + len, pk->text, tl);
            len += tl;
            sizes[k++] = tl;
        }
    }
    size_t d = ZDICT_trainFromBuffer(dict, cap, buf, sizes, (unsigned)k);
    *how = "trained";
    if (ZDICT_isError(d)) {
        *how = "raw samples";
        d = len < cap ? len : cap;
        memcpy(dict, buf + len - d, d);
    }
    free(buf);
    free(sizes);
    return d;
}

size_t store_pack_train(store_pack *pk, const obj_table *t)
{
    char dict[PACK_DICT_BYTES];
    const char *how = "";
    pack_make_keep(pk, t);
    size_t d = pack_make_dict(pk, t, dict, sizeof dict, &how);
    if (d) {
        /* level 3's tables are sized for unknown inputs (220 KB of CDict); an object is a
         * few KB against an 8 KB dictionary, which 2^13 slots cover as well (the benchmark's
         * frames came out the same size) for 88 KB: every informer kind holds one */
        ZSTD_compressionParameters cp = ZSTD_getCParams(PACK_LEVEL, ZSTD_CONTENTSIZE_UNKNOWN, d);
        cp.hashLog = cp.hashLog < PACK_HASH_LOG ? cp.hashLog : PACK_HASH_LOG;
        cp.chainLog = cp.chainLog < PACK_HASH_LOG ? cp.chainLog : PACK_HASH_LOG;
        pk->cdict = ZSTD_createCDict_advanced(dict, d, ZSTD_dlm_byCopy, ZSTD_dct_auto, cp,
                                              ZSTD_defaultCMem);
        pk->ddict = ZSTD_createDDict(dict, d);
        pk->cctx = ZSTD_createCCtx();
        pk->dctx = ZSTD_createDCtx();
    }
    if (!pk->cdict || !pk->ddict || !pk->cctx || !pk->dctx ||
        ZSTD_isError(ZSTD_CCtx_refCDict(pk->cctx, pk->cdict)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(pk->cctx, ZSTD_c_contentSizeFlag, 0)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(pk->cctx, ZSTD_c_checksumFlag, 0)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(pk->cctx, ZSTD_c_dictIDFlag, 0)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(pk->cctx, ZSTD_c_format, ZSTD_f_zstd1_magicless)) ||
        ZSTD_isError(ZSTD_DCtx_setParameter(pk->dctx, ZSTD_d_format, ZSTD_f_zstd1_magicless))) {
        store_pack_free(pk);
        return 0;
    }
    pk->dict_len = d;
    pk->dict_how = how;
    return d;
}
