/* gd_tokpack.c — see gd_tokpack.h. */
#include "gd_tokpack.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { C_B64 = 1, C_HEX = 2, C_UPPER = 4, C_LOWER = 8, C_DIGIT = 16 };

static unsigned char cls[256];
static signed char b64_value[256];
static const char b64_chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char hex_chars[] = "0123456789abcdef";

static void fill_tables(void)
{
    for (int c = 0; c < 256; c++) {
        unsigned char k = 0;
        if (c >= 'A' && c <= 'Z')
            k = C_B64 | C_UPPER;
        else if (c >= 'a' && c <= 'z')
            k = C_B64 | C_LOWER | (c <= 'f' ? C_HEX : 0);
        else if (c >= '0' && c <= '9')
            k = C_B64 | C_DIGIT | C_HEX;
        else if (c == '+' || c == '/')
            k = C_B64;
        cls[c] = k;
        b64_value[c] = -1;
    }
    for (int i = 0; i < 64; i++)
        b64_value[(unsigned char)b64_chars[i]] = (signed char)i;
}

static void init_tables(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fill_tables);
}

/* A lowercase hex digit's value (the caller checked it is one). */
static int hex_value(char c)
{
    return c <= '9' ? c - '0' : c - 'a' + 10;
}

/* Where a UUID (8-4-4-4-12) has its dashes. */
static bool uuid_dash_at(int i)
{
    return i == 8 || i == 13 || i == 18 || i == 23;
}

size_t gd_tokpack_put_len(unsigned char *p, size_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (unsigned char)v;
    return n;
}

/* The token s[0..len) as its bits at side; returns the bytes written. */
static size_t pack_token(const char *s, size_t len, bool hex, unsigned char *side)
{
    size_t n = gd_tokpack_put_len(side, len);
    uint32_t acc = 0;
    int bits = 0, width = hex ? 4 : 6;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        int v = hex ? hex_value((char)c) : b64_value[c];
        acc = (acc << width) | (uint32_t)v;
        bits += width;
        while (bits >= 8) {
            bits -= 8;
            side[n++] = (unsigned char)(acc >> bits);
        }
    }
    if (bits)
        side[n++] = (unsigned char)(acc << (8 - bits));
    return n;
}

/* s[0..n) starts with a lowercase UUID (8-4-4-4-12 hex digits) that no base64 character
 * follows: every object's metadata.uid and owner references. */
static bool at_uuid(const char *s, size_t n)
{
    if (n < GD_TOKPACK_UUID_CHARS ||
        (n > GD_TOKPACK_UUID_CHARS && (cls[(unsigned char)s[GD_TOKPACK_UUID_CHARS]] & C_B64)))
        return false;
    for (int i = 0; i < GD_TOKPACK_UUID_CHARS; i++) {
        bool dash = uuid_dash_at(i);
        if (dash ? s[i] != '-' : !(cls[(unsigned char)s[i]] & C_HEX))
            return false;
    }
    return true;
}

/* A UUID's 32 digits as 16 bytes at side (no length: it is fixed). */
static size_t pack_uuid(const char *s, unsigned char *side)
{
    size_t n = 0;
    for (int i = 0; i < GD_TOKPACK_UUID_CHARS; i += 2) {
        if (s[i] == '-')
            i++;
        side[n++] = (unsigned char)(hex_value(s[i]) << 4 | hex_value(s[i + 1]));
    }
    return n;
}

typedef struct {
    size_t at, len;
    char kind;                       /* GD_TOKPACK_HEX, _B64 or _UUID */
} token;

/* The next token of in at or after *pos (false: none left); *pos moves past it. Tokens:
 * - a UUID at the start of a run of base64 characters;
 * - a whole run that looks random (long, with capitals, small letters and digits: a key or
 *   a certificate line, not a word or a path);
 * - else, inside the run, a long hex stretch with letters and digits (a digest, not a
 *   number or a word).
 * The character after a backslash (a JSON escape: "\n") never starts a run. */
static bool next_token(const char *in, size_t n, size_t *pos, token *t)
{
    size_t i = *pos;
    while (i < n) {
        unsigned char c = (unsigned char)in[i];
        if (c == '\\') {
            i += 2;
            continue;
        }
        if (!(cls[c] & C_B64)) {
            i++;
            continue;
        }
        if (at_uuid(in + i, n - i)) {
            *t = (token){i, GD_TOKPACK_UUID_CHARS, GD_TOKPACK_UUID};
            *pos = i + GD_TOKPACK_UUID_CHARS;
            return true;
        }
        size_t j = i;
        unsigned char seen = 0;
        while (j < n && (cls[(unsigned char)in[j]] & C_B64))
            seen |= cls[(unsigned char)in[j++]];
        if (j - i >= GD_TOKPACK_MIN &&
            (seen & (C_UPPER | C_LOWER | C_DIGIT)) == (C_UPPER | C_LOWER | C_DIGIT)) {
            *t = (token){i, j - i, GD_TOKPACK_B64};
            *pos = j;
            return true;
        }
        for (size_t k = i; k < j;) {
            size_t e = k;
            unsigned char kinds = 0;
            while (e < j && (cls[(unsigned char)in[e]] & C_HEX))
                kinds |= cls[(unsigned char)in[e++]];
            if (e - k >= GD_TOKPACK_MIN && (kinds & (C_LOWER | C_DIGIT)) == (C_LOWER | C_DIGIT)) {
                *t = (token){k, e - k, GD_TOKPACK_HEX};
                *pos = e;
                return true;
            }
            k = e > k ? e : k + 1;
        }
        i = j;
    }
    *pos = n;
    return false;
}

uint64_t gd_tokpack_hash(const char *tok, size_t len)
{
    uint64_t h = 14695981039346656037ull;          /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)tok[i]) * 1099511628211ull;
    return h;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void gd_tokpack_sort(uint64_t *hash, size_t n)
{
    if (n > 1)
        qsort(hash, n, sizeof *hash, cmp_u64);
}

size_t gd_tokpack_hashes(const char *in, size_t n, uint64_t *out, size_t max)
{
    init_tables();
    size_t pos = 0, k = 0;
    token t;
    while (k < max && next_token(in, n, &pos, &t))
        out[k++] = gd_tokpack_hash(in + t.at, t.len);
    return k;
}

static bool kept(const gd_tokpack_keep *keep, uint64_t h)
{
    size_t lo = 0, hi = keep->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (keep->hash[mid] == h)
            return true;
        if (keep->hash[mid] < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* The index of an earlier packed token of in with t's characters, or -1. */
static int earlier(const char *in, const token *packed, int npacked, const token *t)
{
    for (int k = 0; k < npacked; k++)
        if (packed[k].len == t->len && !memcmp(in + packed[k].at, in + t->at, t->len))
            return k;
    return -1;
}

/* in holds one of our marker bytes (0x01-0x04): one pass, not one memchr a marker. */
static bool has_marker(const char *in, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)(in[i] - GD_TOKPACK_HEX) <= GD_TOKPACK_REF - GD_TOKPACK_HEX)
            return true;
    return false;
}

size_t gd_tokpack_split(const char *in, size_t n, const gd_tokpack_keep *keep, char *text,
                        unsigned char *side, size_t *side_len)
{
    init_tables();
    *side_len = 0;
    if (has_marker(in, n)) {
        memcpy(text, in, n);
        return n;
    }
    token packed[GD_TOKPACK_REFS], t;
    int npacked = 0;
    size_t tn = 0, sn = 0, pos = 0, from = 0;
    while (next_token(in, n, &pos, &t)) {
        if (keep && keep->n && kept(keep, gd_tokpack_hash(in + t.at, t.len)))
            continue;                       /* common to the kind: the dictionary has it */
        memcpy(text + tn, in + from, t.at - from);
        tn += t.at - from;
        from = t.at + t.len;
        int ref = earlier(in, packed, npacked, &t);
        if (ref >= 0) {                     /* the same token again: a reference to it */
            text[tn++] = GD_TOKPACK_REF;
            sn += gd_tokpack_put_len(side + sn, (size_t)ref);
            continue;
        }
        if (npacked < GD_TOKPACK_REFS)
            packed[npacked++] = t;
        text[tn++] = t.kind;
        if (t.kind == GD_TOKPACK_UUID)
            sn += pack_uuid(in + t.at, side + sn);
        else
            sn += pack_token(in + t.at, t.len, t.kind == GD_TOKPACK_HEX, side + sn);
    }
    memcpy(text + tn, in + from, n - from);
    tn += n - from;
    *side_len = sn;
    return tn;
}

int gd_tokpack_get_len(const unsigned char *p, size_t n, size_t *v)
{
    size_t len = 0;
    for (size_t i = 0; i < n && i < 5; i++) {
        len |= (size_t)(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80)) {
            *v = len;
            return (int)i + 1;
        }
    }
    return -1;
}

/* One token from side at *sp into out at *op; false when side or out is too short. */
static bool join_token(bool hex, const unsigned char *side, size_t side_len, size_t *sp,
                       char *out, size_t out_len, size_t *op)
{
    size_t len = 0;
    int used = gd_tokpack_get_len(side + *sp, side_len - *sp, &len);
    if (used < 0)
        return false;
    *sp += (size_t)used;
    int width = hex ? 4 : 6;
    size_t bytes = (len * (size_t)width + 7) / 8;
    if (!len || bytes > side_len - *sp || len > out_len - *op)
        return false;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        if (bits < width) {
            acc = (acc << 8) | side[(*sp)++];
            bits += 8;
        }
        bits -= width;
        unsigned v = (acc >> bits) & ((1u << width) - 1);
        out[(*op)++] = hex ? hex_chars[v] : b64_chars[v];
    }
    return true;
}

/* A UUID's 16 bytes from side at *sp into out at *op; false when either is too short. */
static bool join_uuid(const unsigned char *side, size_t side_len, size_t *sp, char *out,
                      size_t out_len, size_t *op)
{
    if (side_len - *sp < 16 || out_len - *op < GD_TOKPACK_UUID_CHARS)
        return false;
    for (int k = 0; k < GD_TOKPACK_UUID_CHARS; k += 2) {
        if (uuid_dash_at(k)) {
            out[(*op)++] = '-';
            k++;
        }
        out[(*op)++] = hex_chars[side[*sp] >> 4];
        out[(*op)++] = hex_chars[side[(*sp)++] & 15];
    }
    return true;
}

/* A reference (side: the index of an earlier packed token): that token's characters again. */
static bool join_ref(const token *packed, int npacked, const unsigned char *side,
                     size_t side_len, size_t *sp, char *out, size_t out_len, size_t *op)
{
    size_t k = 0;
    int used = gd_tokpack_get_len(side + *sp, side_len - *sp, &k);
    if (used < 0 || k >= (size_t)npacked || packed[k].len > out_len - *op)
        return false;
    *sp += (size_t)used;
    memcpy(out + *op, out + packed[k].at, packed[k].len);
    *op += packed[k].len;
    return true;
}

int gd_tokpack_join(const char *text, size_t text_len, const unsigned char *side,
                    size_t side_len, char *out, size_t out_len)
{
    if (!side_len) {
        if (text_len != out_len)
            return -1;
        memcpy(out, text, text_len);
        return 0;
    }
    token packed[GD_TOKPACK_REFS];     /* where the packed tokens went in out, for references */
    int npacked = 0;
    size_t sp = 0, op = 0;
    for (size_t i = 0; i < text_len; i++) {
        char c = text[i];
        size_t at = op;
        bool ok = true;
        if (c == GD_TOKPACK_UUID)
            ok = join_uuid(side, side_len, &sp, out, out_len, &op);
        else if (c == GD_TOKPACK_HEX || c == GD_TOKPACK_B64)
            ok = join_token(c == GD_TOKPACK_HEX, side, side_len, &sp, out, out_len, &op);
        else if (c == GD_TOKPACK_REF)
            ok = join_ref(packed, npacked, side, side_len, &sp, out, out_len, &op);
        else if (op < out_len)
            out[op++] = c;
        else
            ok = false;
        if (!ok)
            return -1;
        if ((c == GD_TOKPACK_UUID || c == GD_TOKPACK_HEX || c == GD_TOKPACK_B64) &&
            npacked < GD_TOKPACK_REFS)
            packed[npacked++] = (token){at, op - at, c};
    }
    return sp == side_len && op == out_len ? 0 : -1;
}
