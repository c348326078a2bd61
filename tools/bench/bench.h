/* bench.h — bin/bench: informer benchmarks (issue 4 part 6). See tools/bench/run.sh. */
#ifndef BENCH_H
#define BENCH_H
#include <stddef.h>
#include <stdint.h>
/* Serves the list and the replayed watch (replay.c); prints the port; never returns. */
int bench_replay(const char *events_file, long count, long list_count, int obj_bytes, int port);
/* payload.c: a generated config file of exactly `bytes` bytes (random values, see there),
 * NUL-terminated (out holds bytes + 1); the same seed gives the same text. */
void bench_config_text(char *out, size_t bytes, uint64_t seed);
/* A UUID-shaped metadata.uid, deterministic per seed. */
void bench_uid(char out[37], uint64_t seed);
#endif
