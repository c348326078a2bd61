/* gd_tokpack.c — see gd_tokpack.h. */
#include "gd_tokpack.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
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
        int v = hex ? (c <= '9' ? c - '0' : c - 'a' + 10) : b64_value[c];
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

/* A run of base64 characters r[0..len): packed whole as base64 when it looks random (long,
 * with capitals, small letters and digits: a token, not a word or a path), else its long hex
 * stretches with letters and digits (digests, not numbers or words) are packed, the rest
 * copied. */
static void split_run(const char *r, size_t len, char *text, size_t *tn, unsigned char *side,
                      size_t *sn)
{
    unsigned char seen = 0;
    for (size_t i = 0; i < len; i++)
        seen |= cls[(unsigned char)r[i]];
    if (len >= GD_TOKPACK_MIN && (seen & (C_UPPER | C_LOWER | C_DIGIT)) ==
                                     (C_UPPER | C_LOWER | C_DIGIT)) {
        text[(*tn)++] = GD_TOKPACK_B64;
        *sn += pack_token(r, len, false, side + *sn);
        return;
    }
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        unsigned char kinds = 0;
        while (j < len && (cls[(unsigned char)r[j]] & C_HEX))
            kinds |= cls[(unsigned char)r[j++]];
        if (j - i >= GD_TOKPACK_MIN && (kinds & (C_LOWER | C_DIGIT)) == (C_LOWER | C_DIGIT)) {
            text[(*tn)++] = GD_TOKPACK_HEX;
            *sn += pack_token(r + i, j - i, true, side + *sn);
        } else {
            j = j > i ? j : i + 1;
            memcpy(text + *tn, r + i, j - i);
            *tn += j - i;
        }
        i = j;
    }
}

/* s[0..n) starts with a lowercase UUID (8-4-4-4-12 hex digits) that no base64 character
 * follows: every object's metadata.uid and owner references. */
static bool at_uuid(const char *s, size_t n)
{
    if (n < GD_TOKPACK_UUID_CHARS ||
        (n > GD_TOKPACK_UUID_CHARS && (cls[(unsigned char)s[GD_TOKPACK_UUID_CHARS]] & C_B64)))
        return false;
    for (int i = 0; i < GD_TOKPACK_UUID_CHARS; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
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
        int hi = s[i] <= '9' ? s[i] - '0' : s[i] - 'a' + 10;
        int lo = s[i + 1] <= '9' ? s[i + 1] - '0' : s[i + 1] - 'a' + 10;
        side[n++] = (unsigned char)(hi << 4 | lo);
    }
    return n;
}

size_t gd_tokpack_split(const char *in, size_t n, char *text, unsigned char *side,
                        size_t *side_len)
{
    init_tables();
    *side_len = 0;
    if (memchr(in, GD_TOKPACK_HEX, n) || memchr(in, GD_TOKPACK_B64, n) ||
        memchr(in, GD_TOKPACK_UUID, n)) {
        memcpy(text, in, n);
        return n;
    }
    size_t tn = 0, sn = 0, i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)in[i];
        if (c == '\\' && i + 1 < n) {   /* a JSON escape: "\n" is not the start of a token */
            text[tn++] = in[i++];
            text[tn++] = in[i++];
        } else if (!(cls[c] & C_B64)) {
            text[tn++] = in[i++];
        } else if (at_uuid(in + i, n - i)) {
            text[tn++] = GD_TOKPACK_UUID;
            sn += pack_uuid(in + i, side + sn);
            i += GD_TOKPACK_UUID_CHARS;
        } else {
            size_t j = i;
            while (j < n && (cls[(unsigned char)in[j]] & C_B64))
                j++;
            split_run(in + i, j - i, text, &tn, side, &sn);
            i = j;
        }
    }
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

int gd_tokpack_join(const char *text, size_t text_len, const unsigned char *side,
                    size_t side_len, char *out, size_t out_len)
{
    if (!side_len) {
        if (text_len != out_len)
            return -1;
        memcpy(out, text, text_len);
        return 0;
    }
    size_t sp = 0, op = 0;
    for (size_t i = 0; i < text_len; i++) {
        char c = text[i];
        if (c == GD_TOKPACK_UUID) {
            if (side_len - sp < 16 || out_len - op < GD_TOKPACK_UUID_CHARS)
                return -1;
            for (int k = 0; k < GD_TOKPACK_UUID_CHARS; k += 2) {
                if (k == 8 || k == 13 || k == 18 || k == 23) {
                    out[op++] = '-';
                    k++;
                }
                out[op++] = hex_chars[side[sp] >> 4];
                out[op++] = hex_chars[side[sp++] & 15];
            }
        } else if (c == GD_TOKPACK_HEX || c == GD_TOKPACK_B64) {
            if (!join_token(c == GD_TOKPACK_HEX, side, side_len, &sp, out, out_len, &op))
                return -1;
        } else {
            if (op == out_len)
                return -1;
            out[op++] = c;
        }
    }
    return sp == side_len && op == out_len ? 0 : -1;
}
