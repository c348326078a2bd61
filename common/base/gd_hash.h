/* gd_hash.h — the one string hash of the project: 64-bit FNV-1a.
 *
 * The shard of a GodisCluster (gd_proto.c) and the buckets of every string map (gd_map.c,
 * the informer's object index) hash with it. The shard hash is part of the wire contract
 * (docs/PROTOCOL.md, "Shards": informer, manager and worker must agree), so it is written
 * once, here; the incremental form hashes "<ns>/<name>" without building the string. */
#ifndef GD_HASH_H
#define GD_HASH_H
#include <stddef.h>
#include <stdint.h>

#define GD_FNV1A64_INIT 0xcbf29ce484222325ULL

/* Continues hash h over len bytes of s. */
static inline uint64_t gd_fnv1a64_add(uint64_t h, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
    return h;
}

/* Continues hash h over the NUL-terminated s. */
static inline uint64_t gd_fnv1a64_str(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

static inline uint64_t gd_fnv1a64(const char *s, size_t len)
{
    return gd_fnv1a64_add(GD_FNV1A64_INIT, s, len);
}

#endif
