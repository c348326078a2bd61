/* fuzz_tokpack.c — the token packer (common/base/gd_tokpack.c) that the informer's store runs
 * on every object body the API server sends before compressing it.
 *
 * Part 1: any input splits into a text and a side no longer than it, and joins back to
 * exactly the input (a lossy split would corrupt a cached object without a word), with no
 * keep set and with one that keeps some of its tokens in the text.
 * Part 2: the input read as a stored frame's text and side (cut at its first byte's value):
 * a join of garbage may fail, but never writes past the output or reads past the side, and
 * when it succeeds it wrote exactly the bytes asked for. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_util.h"
#include "gd_tokpack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    char *text = malloc(size + 1), *back = malloc(size + 1);
    unsigned char *side = malloc(size + 1);
    if (!text || !back || !side)
        abort();
    /* without a keep set, then keeping every other token the input has */
    uint64_t h[64];
    size_t nh = gd_tokpack_hashes(in, size, h, 64), nk = 0;
    for (size_t i = 0; i < nh; i += 2)
        h[nk++] = h[i];
    gd_tokpack_sort(h, nk);
    gd_tokpack_keep keep = {h, nk};
    for (int pass = 0; pass < 2; pass++) {
        size_t side_len = 0,
               tn = gd_tokpack_split(in, size, pass ? &keep : NULL, text, side, &side_len);
        if (tn > size || side_len > size)
            abort();
        if (gd_tokpack_join(text, tn, side, side_len, back, size) != 0 ||
            memcmp(back, in, size))
            abort();
    }
    free(text);
    free(back);
    free(side);

    if (size > 1) {                /* part 2: text | side, cut where byte 0 says */
        size_t cut = 1 + data[0] % (size - 1);
        size_t want = (size_t)data[size - 1] * 4;
        /* exact-size heap buffers, so ASan sees any read or write past them */
        char *t = malloc(cut), *out = malloc(want ? want : 1);
        unsigned char *s = malloc(size - cut ? size - cut : 1);
        if (!t || !out || !s)
            abort();
        memcpy(t, data, cut);
        memcpy(s, data + cut, size - cut);
        (void)gd_tokpack_join(t, cut, s, size - cut, out, want);
        free(t);
        free(out);
        free(s);
    }
    return 0;
}
