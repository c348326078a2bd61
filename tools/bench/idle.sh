#!/usr/bin/env bash
# idle.sh — what an idle operator costs the machine it runs on: the context switches (voluntary
# and involuntary, over all threads, from /proc/PID/task/*/status) of a manager with its 9
# informers and 2 workers that have nothing to do, over BENCH_IDLE_SECONDS (10) once every
# shard is active. A thread that wakes on a timer to look at a flag shows up here; one that
# sleeps until it is told does not. Appends to BENCH_OUT (bench/results/latest.jsonl):
#
#   idle_ctxsw_per_s_manager    the manager process
#   idle_ctxsw_per_s_informer   one informer process (the mean of the 9)
#   idle_ctxsw_per_s_worker     one worker process (the mean of the 2)
#
# The workers run --max-concurrent-reconciles BENCH_IDLE_MCR (32, as converge.sh: an operator
# of many clusters raises it, and each of those threads is one that must sleep quietly).
# BENCH_IDLE_BIN (bin) runs another build's godis-manager (its informers and workers are the
# ones beside it): before/after figures. Uses the running devcluster, or starts one (--nodes
# 0) and stops it again. Every process it starts is stopped by pid on exit.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
. "$ROOT/tools/bench/lib.sh"
BENCH_OUT=${BENCH_OUT:-$ROOT/bench/results/latest.jsonl}
BIN=${BENCH_IDLE_BIN:-$ROOT/bin}
SECS=${BENCH_IDLE_SECONDS:-10}
MCR=${BENCH_IDLE_MCR:-32}
RUN=${BENCH_TMP:-$ROOT/build/bench}/idle
mkdir -p "$(dirname "$BENCH_OUT")"
rm -rf "$RUN"; mkdir -p "$RUN"; chmod 0700 "$RUN"
bench_process_table

if ! tools/devcluster env >/dev/null 2>&1; then
  tools/devcluster up --nodes 0 >/dev/null || { echo "idle: no devcluster" >&2; exit 1; }
  STARTED=1
fi
eval "$(tools/devcluster env)"
bin/godisctl apply -f deploy/base/crds/godisclusters.yaml -f deploy/base/crds/godises.yaml >/dev/null ||
  { echo "idle: cannot install the CRDs" >&2; exit 1; }

PORT=$((25000 + ($$ % 400) * 20))
GODIS_LOOPBACK_ONLY=1 "$BIN/godis-manager" --kubeconfig "$KUBECONFIG" --leader-elect=true \
  --leader-elect-resource-namespace default --leader-elect-resource-name "bench-idle-$$" \
  --workers 2 --max-concurrent-reconciles "$MCR" --runtime-dir "$RUN/rt" --metrics-bind-address "127.0.0.1:$((PORT + 19))" \
  --health-probe-bind-address "127.0.0.1:$((PORT + 18))" --log-level warn >"$RUN/manager.log" 2>&1 &
MGR=$!; PIDS+=("$MGR")
all_active() {
  [ "$(curl -s --max-time 2 "http://127.0.0.1:$((PORT + 19))/metrics" |
       awk '/^godis_worker_shards_active/ {s += $2} END {print s + 0}')" -ge 256 ]
}
until_true 60 all_active || { echo "idle: the workers never held every shard (log $RUN/manager.log)" >&2; exit 1; }
sleep 2   # the first resyncs and lease renewals behind us

# snap ROLE PID...: "ROLE CTXSW" a line per process, its threads summed
snap() {
  local role=$1 p; shift
  for p in "$@"; do
    cat "/proc/$p/task/"*/status 2>/dev/null | awk -v r="$role" '/ctxt_switches/ {s += $2} END {print r, s + 0}'
  done
}
kids() { pgrep -P "$MGR" -f "$1" | tr '\n' ' '; }
INF=$(kids godis-informer) WRK=$(kids godis-worker)
# shellcheck disable=SC2086  # lists of pids
take() { snap manager "$MGR"; snap informer $INF; snap worker $WRK; }
take >"$RUN/a"; sleep "$SECS"; take >"$RUN/b"
# shellcheck disable=SC2086
[ "$(wc -w <<<"$INF")" = 9 ] && [ "$(wc -w <<<"$WRK")" = 2 ] ||
  { echo "idle: expected 9 informers and 2 workers, found '$INF' and '$WRK'" >&2; exit 1; }
paste -d' ' "$RUN/a" "$RUN/b" | awk -v s="$SECS" -v mcr="$MCR" -v out="$BENCH_OUT" '
  { d[$1] += $4 - $2; n[$1]++ }
  END { for (r in d) {
          v = d[r] / n[r] / s
          printf "{\"name\":\"idle_ctxsw_per_s_%s\",\"value\":%.1f,\"unit\":\"1/s\",\"processes\":%d,\"seconds\":%d,\"max_concurrent_reconciles\":%d}\n", r, v, n[r], s, mcr >>out
          printf "  idle_ctxsw_per_s_%-10s %8.1f /s (mean of %d)\n", r, v, n[r] } }'
