/* payload.c — the data of a benchmark ConfigMap: a generated config file.
 *
 * Why not memset 'x': any compressor shrinks a run of one byte to nothing, so a cache that
 * compresses would look free. Real ConfigMaps hold config files; we generate the
 * pessimistic end of those: `key_N = <value>` lines whose values are random, alternately
 * hex (hashes, ids) and base64 (tokens, keys). Random values carry 4 and 6 bits per
 * character, which no compressor can remove; only the line scaffolding and the object's
 * metadata are redundant. Deterministic per seed, so every run and both informers (ours and
 * client-go's) see the same bytes. */
#include "bench.h"
#include <stdio.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void bench_config_text(char *out, size_t bytes, uint64_t seed)
{
    static const char hex[] = "0123456789abcdef";
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    uint64_t s = seed * 0x2545F4914F6CDD1Dull + 1;
    size_t n = 0;
    for (int line = 0; n < bytes; line++) {
        char buf[128];
        int len = snprintf(buf, sizeof buf, "key_%d = ", line);
        int vlen = 16 + (int)(splitmix64(&s) % 49);           /* 16..64 characters */
        for (int i = 0; i < vlen; i++) {
            uint64_t r = splitmix64(&s);
            buf[len++] = line % 2 ? b64[r & 63] : hex[r & 15];
        }
        buf[len++] = '\n';
        size_t take = (size_t)len < bytes - n ? (size_t)len : bytes - n;
        memcpy(out + n, buf, take);
        n += take;
    }
    if (bytes)
        out[bytes - 1] = '\n';     /* a cut last line still ends the file properly */
    out[bytes] = '\0';
}

void bench_uid(char out[37], uint64_t seed)
{
    uint64_t s = seed ^ 0xA0761D6478BD642Full, a = splitmix64(&s), b = splitmix64(&s);
    snprintf(out, 37, "%08x-%04x-4%03x-%04x-%012llx", (unsigned)(a >> 32),
             (unsigned)(a >> 16) & 0xffff, (unsigned)a & 0xfff,
             0x8000u | ((unsigned)(b >> 48) & 0x3fff), (unsigned long long)b & 0xffffffffffffull);
}
