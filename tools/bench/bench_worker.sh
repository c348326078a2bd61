#!/usr/bin/env bash
# bench_worker.sh — issue 5's pipeline benchmark: bench-replay (a watch stream of ConfigMaps,
# each stamped with the monotonic time it was written) → godis-informer → godis-worker with
# the "bench" reconciler set (a no-op reconcile that measures event → reconcile start).
#
#   pipeline_events_per_s    highest sustained rate: the replay streams as fast as the
#                            informer reads; events/s as the worker's mapping saw them
#   pipeline_latency_p50_ms  at an offered 5 000 events/s (--rate 5000), from the replay
#   pipeline_latency_p99_ms  writing an event to the reconcile of its key starting
# Baselines come from the client-go informer + workqueue run (bench_informer*, issue 4),
# read from $BENCH_OUT when present (clientgo_pipeline_*), else omitted.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/bench/lib.sh
RUN="$BENCH_TMP/worker"
rm -rf "$RUN"; mkdir -p "$RUN"; chmod 0700 "$RUN"
OBJECTS=${BENCH_WORKER_OBJECTS:-2000}
EVENTS=${BENCH_WORKER_EVENTS:-100000}
RATE_EVENTS=${BENCH_WORKER_RATE_EVENTS:-40000}
PUB="ipc://$RUN/ConfigMap.pub"; SNAP="ipc://$RUN/ConfigMap.snap"

stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

# published COUNT: the informer's published events (list + watch), 0 if it does not answer.
published() {
  bin/gdi-cat stats "$SNAP" 2>/dev/null |
    sed -n 's/^godis_informer_events_published_total[^ ]* \([0-9.e+]*\)$/\1/p' |
    awk '{printf "%d", $1}'
}

# run RATE EVENTS → the worker's result JSON line on stdout
run() {
  local rate=$1 events=$2 out="$RUN/result-$1.json"
  rm -f "$out"
  replay_start --objects "$OBJECTS" --events "$events" --rate "$rate"
  bin/godis-worker --informer-endpoints "ConfigMap=$PUB,$SNAP" --reconciler bench \
    --reconciler-arg "out=$out,warmup_ms=2000" --max-concurrent-reconciles 2 --log-level warn &
  local wrk=$!
  sleep 0.3                      # the worker subscribes before the stream starts
  bin/godis-informer --kind ConfigMap --kubeconfig "$REPLAY_KUBECONFIG" --namespace bench \
    --pub-endpoint "$PUB" --snap-endpoint "$SNAP" --log-level warn &
  local inf=$!
  local want=$((OBJECTS + events)) t0=$SECONDS n=0 last=-1 still=0
  while [ $((SECONDS - t0)) -lt 300 ]; do
    n=$(published); n=${n:-0}
    [ "$n" -ge "$want" ] && break
    if [ "$n" = "$last" ]; then still=$((still + 1)); else still=0; fi
    [ $still -ge 20 ] && { echo "bench_worker: informer stalled at $n/$want" >&2; break; }
    last=$n; sleep 0.5
  done
  sleep 1                        # let the worker drain its queue
  stop_pid "$wrk"; stop_pid "$inf"; replay_stop
  cat "$out" 2>/dev/null || echo '{}'
}

baseline() { sed -n "s/.*\"name\":\"$1\",\"value\":\([0-9.e+-]*\).*/\1/p" "$BENCH_OUT" | tail -1; }

max=$(run 0 "$EVENTS")
echo "  max rate run: $max"
lat=$(run 5000 "$RATE_EVENTS")
echo "  5000/s run:   $lat"
bench_emit pipeline_events_per_s "$(json_field "$max" events_per_s)" "events/s" "$(baseline clientgo_pipeline_events_per_s)"
bench_emit pipeline_latency_p50_ms "$(json_field "$lat" latency_p50_ms)" "ms" "$(baseline clientgo_pipeline_latency_p50_ms)"
bench_emit pipeline_latency_p99_ms "$(json_field "$lat" latency_p99_ms)" "ms" "$(baseline clientgo_pipeline_latency_p99_ms)"
