#!/usr/bin/env bash
# bench_worker.sh — issue 5's pipeline benchmark: bench-replay (a watch stream of ConfigMaps,
# each stamped with the monotonic time it was written) → godis-informer → godis-worker with
# the "bench" reconciler set (a no-op reconcile that measures event → reconcile start).
#
#   pipeline_events_per_s    highest sustained rate: the replay streams as fast as the
#                            informer reads; events/s as the worker's mapping saw them
#   pipeline_latency_p50_ms  at an offered 5 000 events/s (--rate 5000), from the replay
#   pipeline_latency_p99_ms  writing an event to the reconcile of its key starting
# Baselines come from the client-go informer + workqueue run (issue 4's bench), read from
# $BENCH_OUT when present (clientgo_pipeline_*), else omitted.
# The replay source is bin/pipeline-replay (tools/pipeline-replay: a list, then one watch whose
# events carry bench.godis/sent-ns, paced or as fast as read). Self-contained: run it
# directly, or from a driver that sets BENCH_OUT/BENCH_TMP.
set -uo pipefail
cd "$(dirname "$0")/../.."
BENCH_OUT=${BENCH_OUT:-$PWD/bench/results/latest.jsonl}
BENCH_TMP=${BENCH_TMP:-$PWD/build/bench}
mkdir -p "$(dirname "$BENCH_OUT")" "$BENCH_TMP"
REPLAY_BIN=bin/pipeline-replay
if [ ! -x "$REPLAY_BIN" ]; then
  echo "bench_worker: $REPLAY_BIN is not built (make); skipped" >&2
  exit 0
fi

bench_emit() {  # name value unit [baseline]
  if [ -n "${4:-}" ]; then
    printf '{"name":"%s","value":%s,"unit":"%s","baseline":%s}\n' "$1" "${2:-0}" "$3" "$4" >>"$BENCH_OUT"
  else
    printf '{"name":"%s","value":%s,"unit":"%s"}\n' "$1" "${2:-0}" "$3" >>"$BENCH_OUT"
  fi
  printf '  %-28s %12s %-9s baseline %s\n' "$1" "${2:-?}" "$3" "${4:--}"
}
json_field() { sed -n "s/.*\"$2\":\([0-9.e+-]*\).*/\1/p" <<<"$1"; }

replay_start() {  # ARGS... — sets REPLAY_PID and REPLAY_KUBECONFIG
  local portfile="$BENCH_TMP/replay.port"
  rm -f "$portfile"
  "$REPLAY_BIN" "$@" >"$portfile" &
  REPLAY_PID=$!
  for _ in $(seq 1 100); do [ -s "$portfile" ] && break; sleep 0.1; done
  REPLAY_KUBECONFIG="$BENCH_TMP/replay.kubeconfig"
  cat >"$REPLAY_KUBECONFIG" <<KC
apiVersion: v1
kind: Config
clusters: [{name: replay, cluster: {server: "http://127.0.0.1:$(cat "$portfile")"}}]
users: [{name: nobody, user: {}}]
contexts: [{name: replay, context: {cluster: replay, user: nobody, namespace: bench}}]
current-context: replay
KC
}
replay_stop() { kill "$REPLAY_PID" 2>/dev/null; wait "$REPLAY_PID" 2>/dev/null; }

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

baseline() { sed -n "s/.*\"name\":\"$1\",\"value\":\([0-9.e+-]*\).*/\1/p" "$BENCH_OUT" 2>/dev/null | tail -1; }

max=$(run 0 "$EVENTS")
echo "  max rate run: $max"
lat=$(run 5000 "$RATE_EVENTS")
echo "  5000/s run:   $lat"
bench_emit pipeline_events_per_s "$(json_field "$max" events_per_s)" "events/s" "$(baseline clientgo_pipeline_events_per_s)"
bench_emit pipeline_latency_p50_ms "$(json_field "$lat" latency_p50_ms)" "ms" "$(baseline clientgo_pipeline_latency_p50_ms)"
bench_emit pipeline_latency_p99_ms "$(json_field "$lat" latency_p99_ms)" "ms" "$(baseline clientgo_pipeline_latency_p99_ms)"
