/* bench.h — bin/bench: informer benchmarks (issue 4 part 6). See tools/bench/run.sh. */
#ifndef BENCH_H
#define BENCH_H
#include <stdint.h>
/* Serves the list and the replayed watch (replay.c); prints the port; never returns. */
int bench_replay(const char *events_file, long count, long list_count, int obj_bytes, int port);
#endif
