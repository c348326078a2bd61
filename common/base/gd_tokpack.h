/* gd_tokpack.h — moves the long random tokens of a text (hashes, digests, ids, keys, tokens,
 * certificates: runs of hex or base64 characters) out of it, packed into their bits.
 *
 * Why: a general-purpose compressor codes such a token's characters with one literal table
 * for the whole text, so a hex digit costs ~5 bits instead of 4 and a base64 character ~7
 * instead of 6, and every token breaks the matches around it. Kubernetes objects are full
 * of them (containerID and imageID digests, Secret data, PEM certificates in ConfigMaps).
 * Split first, compress only the text (the tokens are incompressible anyway), and each token
 * costs its entropy plus a byte or two; a UUID (every object's uid) its 16 bytes. On the
 * informer's benchmark ConfigMap (1 KiB of random hex and base64 values) zstd with a
 * dictionary went from 725 to 593 bytes.
 *
 * The split is lossless for any input. Which runs are packed is a heuristic (long enough,
 * random-looking); the join only follows the markers. */
#ifndef GD_TOKPACK_H
#define GD_TOKPACK_H
#include <stddef.h>
#include <stdint.h>

enum {
    GD_TOKPACK_MIN = 16,          /* shorter runs stay in the text */
    GD_TOKPACK_HEX = 0x01,        /* the markers: bytes that valid JSON never holds raw */
    GD_TOKPACK_B64 = 0x02,
    GD_TOKPACK_UUID = 0x03,       /* a lowercase UUID: 16 bytes, no length */
    GD_TOKPACK_REF = 0x04,        /* a token packed earlier in the same text, again */
    GD_TOKPACK_UUID_CHARS = 36,
    GD_TOKPACK_REFS = 64,         /* the first this many packed tokens can be referred to */
};

/* Tokens to leave in the text: their gd_tokpack_hash, sorted ascending. Tokens that recur
 * across the objects of a kind (one image digest in every Pod, the cluster's CA certificate
 * in every namespace's kube-root-ca.crt) are better left to a dictionary, where they cost a
 * match of a few bytes instead of their bits. A hash collision only keeps a token in the
 * text: the split stays lossless. */
typedef struct {
    const uint64_t *hash;
    size_t n;
} gd_tokpack_keep;

/* Splits in[0..n) into text (in with each packed token replaced by its marker byte) and
 * side, per token in order:
 * - HEX or B64: its length in characters (a varint), then its bits (4 a hex digit, 6 a base64
 *   character, the last byte padded with zeros);
 * - UUID: its 16 bytes;
 * - REF, a token equal to one packed before it in the same text: that one's index (a varint).
 * Tokens in keep (may be NULL) stay in the text. text and side must each have room for n
 * bytes: neither can be longer than in. Returns the text's length. *side_len is 0 when
 * nothing was packed; the text is then in itself, also when in holds a marker byte (which
 * could not be told apart from one of ours). */
size_t gd_tokpack_split(const char *in, size_t n, const gd_tokpack_keep *keep, char *text,
                        unsigned char *side, size_t *side_len);

/* The hashes of the tokens of in that a split without a keep set would take out, in order
 * (repeats included), at most max of them: their number. */
size_t gd_tokpack_hashes(const char *in, size_t n, uint64_t *out, size_t max);
uint64_t gd_tokpack_hash(const char *tok, size_t len);
/* Sorts n hashes ascending, the order a gd_tokpack_keep wants. */
void gd_tokpack_sort(uint64_t *hash, size_t n);

/* The inverse: writes exactly out_len bytes to out. With side_len 0 the text is copied as
 * it is. Returns 0, or -1 when text and side do not make exactly out_len bytes (a marker
 * without its token, a bad length, side bytes left over, too much or too little output). */
int gd_tokpack_join(const char *text, size_t text_len, const unsigned char *side,
                    size_t side_len, char *out, size_t out_len);

/* The varint the side data uses for lengths (7 bits a byte, low first), for callers that
 * store the side's own length before it: put writes at most 10 bytes and returns how many;
 * get returns the bytes read, or -1 when p[0..n) holds no complete length of 5 bytes or
 * fewer. */
size_t gd_tokpack_put_len(unsigned char *p, size_t v);
int gd_tokpack_get_len(const unsigned char *p, size_t n, size_t *v);

#endif
