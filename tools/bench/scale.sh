#!/usr/bin/env bash
# scale.sh — issue 23 item 4: the operator's processes holding a large fleet in cache, with no
# control plane. bin/pipeline-replay --fleet K --members M serves every kind the operator
# watches as K GodisClusters of M members leave them (tools/pipeline-replay/fleet.c: per
# cluster the GodisCluster and its ConfigMap, per member its Godis, ReplicaSet, Service, PVC
# and Pod; 10 Nodes); a manager (no leader election) runs the 8 informers and one worker
# (bin/tests/godis-worker, the bench reconciler: every object's key is queued and reconciled
# once, a no-op) until the worker has every object cached. Then:
#
#   scale_objects                        objects cached (K=10 000, M=1: 70 010)
#   scale_informers_rss_bytes            VmRSS of the 8 informer processes together
#   scale_informers_anon_bytes           their RssAnon: VmRSS counts the shared libraries'
#                                        pages (~12 MB) in every process; this is what each
#                                        really holds (heap, stacks)
#   scale_informers_rss_bytes_per_object  the same less an empty fleet's, per object
#   scale_informers_cpu_s                their CPU (user+sys) from start until all is cached
#   scale_worker_rss_bytes               VmRSS of the worker holding every shard
#   scale_worker_anon_bytes              its RssAnon
#   scale_worker_rss_bytes_per_object    the same less an empty fleet's, per object
#   scale_worker_cpu_s                   its CPU from start until all is cached
#   scale_worker_rss_settled_bytes       its VmRSS BENCH_SCALE_SETTLE_S (8) s later, idle:
#                                        what it keeps once the heap was trimmed (the
#                                        worker trims 1 s and 5 s into a quiet spell,
#                                        common/base/gd_heap_trim.h), not what the load left
#   scale_list_load_s                    manager start → the worker has every object (lists)
#   scale_worker_snapshot_load_s         a fresh worker (standalone, all shards) started beside
#                                        the warm informers: start → every kind SYNCED, i.e.
#                                        all of its shards loaded from the informers' snapshots
#   scale_worker_snapshot_load_cpu_s     that worker's CPU for it
# Every line also carries "load1", the 1-minute load average when it was measured (the
# machine is shared: CPU seconds are the load-proof figures, wall times are not).
# BENCH_SCALE_CLUSTERS / BENCH_SCALE_MEMBERS change K and M; INFORMER_BIN runs another
# informer build (before/after figures). Appends to BENCH_OUT; every
# process it starts is stopped by pid on exit.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
. "$ROOT/tools/bench/lib.sh"
BENCH_OUT=${BENCH_OUT:-$ROOT/bench/results/latest.jsonl}
RUN=${BENCH_TMP:-$ROOT/build/bench}/scale
K=${BENCH_SCALE_CLUSTERS:-10000}
M=${BENCH_SCALE_MEMBERS:-1}
KINDS=GodisCluster,Godis,ConfigMap,ReplicaSet,Service,PersistentVolumeClaim,Pod,Node
mkdir -p "$(dirname "$BENCH_OUT")"
rm -rf "$RUN"; mkdir -p "$RUN"; chmod 0700 "$RUN"

bench_process_table     # PIDS, the EXIT trap, stop_pid, until_true (lib.sh)

PORT=$((24000 + ($$ % 400) * 20))
metrics() { curl -s --max-time 5 "http://127.0.0.1:$((PORT + 19))/metrics"; }
rss() { awk '/^VmRSS:/ {print $2 * 1024}' "/proc/$1/status" 2>/dev/null || echo 0; }
anon() { awk '/^RssAnon:/ {print $2 * 1024}' "/proc/$1/status" 2>/dev/null || echo 0; }
cpu_s() {  # utime + stime of PID, in seconds
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f\n", ($12 + $13) / hz }' "/proc/$1/stat"
}
sum() { awk '{s += $1} END {printf "%.2f", s}'; }

replay_start() {  # CLUSTERS — sets RPID, writes $RUN/replay.kc
  bench_replay_start --fleet "$1" --members "$M" --events 0
}
cached_all() {  # WANT: the worker holds WANT objects over all kinds and every shard is dealt
  local m; m=$(metrics) || return 1
  grep -q '^godis_manager_shards_unassigned 0$' <<<"$m" || return 1
  [ "$(awk '/^godis_worker_cache_objects\{/ {s += $2} END {print s + 0}' <<<"$m")" = "$1" ]
}

# fleet CLUSTERS — a manager over that fleet until the worker has it all; sets MGR, INF_PIDS,
# WORKER, LOAD_S (manager start → all cached). The manager stays up (stop it with stop_fleet).
fleet() {
  local want=$(( $1 * (2 + 5 * M) + 10 )) t0
  replay_start "$1" || { echo "scale: the replay source did not start" >&2; return 1; }
  t0=$(date +%s%N)
  bench_replay_manager "$RUN/manager.log" "$KINDS" 1 --informer-bin "${INFORMER_BIN:-$ROOT/bin/godis-informer}"
  MGR=$BENCH_MGR
  if ! until_true 900 cached_all "$want"; then
    echo "scale: the worker did not cache $want objects in 900 s" >&2
    metrics | grep -E '^godis_worker_cache_objects' >&2
    return 1
  fi
  LOAD_S=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN {printf "%.2f", (b - a) / 1e9}')
  OBJECTS=$want
  INF_PIDS=$(pgrep -P "$MGR" -f -- '--kind ' | tr '\n' ' ')     # INFORMER_BIN may be any name
  WORKER=$(pgrep -P "$MGR" -f godis-worker | head -1)
  [ "$(wc -w <<<"$INF_PIDS")" = 8 ] && [ -n "$WORKER" ] ||
    { echo "scale: expected 8 informers and a worker under the manager" >&2; return 1; }
  sleep 2                       # the snapshot's and the lists' transient buffers settle
}
stop_fleet() { stop_pid "$MGR"; stop_pid "$RPID"; rm -rf "$RUN/rt"; }

echo "scale: load before $(cut -d' ' -f1-3 /proc/loadavg)"
fleet 0 || exit 1
inf_rss0=$(for p in $INF_PIDS; do rss "$p"; done | sum)
wrk_rss0=$(rss "$WORKER")
stop_fleet
echo "  empty fleet: informers $inf_rss0 B, worker $wrk_rss0 B"

fleet "$K" || exit 1
inf_rss=$(for p in $INF_PIDS; do rss "$p"; done | sum)
inf_anon=$(for p in $INF_PIDS; do anon "$p"; done | sum)
inf_cpu=$(for p in $INF_PIDS; do cpu_s "$p"; done | sum)
wrk_rss=$(rss "$WORKER"); wrk_anon=$(anon "$WORKER"); wrk_cpu=$(cpu_s "$WORKER")
for p in $INF_PIDS; do
  printf '  informer %-24s rss %6d KiB anon %6d KiB cpu %6s s\n' "$(tr '\0' ' ' <"/proc/$p/cmdline" | sed -n 's/.*--kind \([A-Za-z]*\).*/\1/p')" \
    "$(( $(rss "$p") / 1024 ))" "$(( $(anon "$p") / 1024 ))" "$(cpu_s "$p")"
done
bench_emit scale_objects "$OBJECTS" objects
bench_emit scale_informers_rss_bytes "${inf_rss%.*}" bytes
bench_emit scale_informers_anon_bytes "${inf_anon%.*}" bytes
bench_emit scale_informers_rss_bytes_per_object "$(awk -v a="$inf_rss" -v b="$inf_rss0" -v n="$OBJECTS" 'BEGIN {printf "%.0f", (a - b) / n}')" bytes
bench_emit scale_informers_cpu_s "$inf_cpu" s
bench_emit scale_worker_rss_bytes "$wrk_rss" bytes
bench_emit scale_worker_anon_bytes "$wrk_anon" bytes
bench_emit scale_worker_rss_bytes_per_object "$(awk -v a="$wrk_rss" -v b="$wrk_rss0" -v n="$OBJECTS" 'BEGIN {printf "%.0f", (a - b) / n}')" bytes
bench_emit scale_worker_cpu_s "$wrk_cpu" s
bench_emit scale_list_load_s "$LOAD_S" s
sleep "${BENCH_SCALE_SETTLE_S:-8}"
bench_emit scale_worker_rss_settled_bytes "$(rss "$WORKER")" bytes

# A fresh worker beside the warm informers: every shard from snapshots.
LOG=$RUN/fresh.log
t0=$(date +%s%N)
bin/tests/godis-worker --runtime-dir "$RUN/rt" --reconciler bench \
  --reconciler-arg "out=$RUN/fresh.json,expect=0" --log-level info >"$LOG" 2>&1 &
FRESH=$!; PIDS+=($FRESH)
synced_all() { [ "$(grep -c 'informer synced' "$LOG")" -ge 8 ]; }
if until_true 600 synced_all; then
  t1=$(date +%s%N)
  bench_emit scale_worker_snapshot_load_s "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", (b - a) / 1e9}')" s
  bench_emit scale_worker_snapshot_load_cpu_s "$(cpu_s "$FRESH")" s
else
  echo "scale: the fresh worker did not sync every kind in 600 s" >&2
fi
stop_pid "$FRESH"
stop_fleet
echo "scale: load after $(cut -d' ' -f1-3 /proc/loadavg)"
