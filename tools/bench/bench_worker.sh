#!/usr/bin/env bash
# bench_worker.sh — issue 5's pipeline benchmark: bench-replay (a watch stream of ConfigMaps,
# each stamped with the monotonic time it was written) → godis-informer → godis-worker with
# the "bench" reconciler set (a no-op reconcile that measures event → reconcile start).
#
#   pipeline_events_per_s    highest sustained rate: the replay streams as fast as the
#                            informer reads; events/s as the worker's mapping saw them
#                            (median of BENCH_WORKER_REPEAT runs, default 3)
#   pipeline_latency_p50_ms  at an offered 5 000 events/s (--rate 5000), from the replay
#   pipeline_latency_p99_ms  writing an event to the reconcile of its key starting
# Baselines: the same two runs through a client-go shared informer whose handler enqueues the
# key into a workqueue served by a no-op reconcile (tools/bench/clientgo_pipeline, built
# against Debian's kubernetes tree); omitted when it does not build.
#   pipeline_tcp_curve_events_per_s    the same two runs with the worker subscribed over
#   pipeline_tcp_curve_latency_p50_ms  tcp:// with CURVE (a remote worker's transport, issue
#   pipeline_tcp_curve_latency_p99_ms  22) instead of ipc://, in the same run; the baseline
#                                      field of these three is the ipc:// figure.
# The replay source is bin/pipeline-replay (tools/pipeline-replay: a list, then one watch whose
# events carry bench.godis/sent-ns, paced or as fast as read; it holds the watch stream 1 s
# so both pipelines have loaded the list first). Self-contained: run it
# directly, or from a driver that sets BENCH_OUT/BENCH_TMP.
# A run ends as soon as every object was reconciled at its last event's resourceVersion
# (the bench set knows the replay's --objects/--events), not after a count of events: a
# resync after a gap folds events together and is reported (events_missed), an object that
# never reaches its final state is a loss (complete:false) and fails the run loudly.
# GD_HOPTRACE=<dir> also records per-hop timestamps (tools/bench/hoptrace.py <dir>/<run>).
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

bench_emit() {  # name value unit [baseline [what the baseline is, printed]]
  if [ -n "${4:-}" ]; then
    printf '{"name":"%s","value":%s,"unit":"%s","baseline":%s}\n' "$1" "${2:-0}" "$3" "$4" >>"$BENCH_OUT"
  else
    printf '{"name":"%s","value":%s,"unit":"%s"}\n' "$1" "${2:-0}" "$3" >>"$BENCH_OUT"
  fi
  printf '  %-28s %12s %-9s %s %s\n' "$1" "${2:-?}" "$3" "${5:-baseline}" "${4:--}"
}
json_field() { sed -n "s/.*\"$2\":\([0-9.e+-]*\).*/\1/p" <<<"$1"; }

# Every process this script starts in the background is held in one of these variables until
# it is stopped, and the EXIT trap stops exactly those, by pid: a script interrupted or killed
# (SIGTERM, SIGINT, SIGHUP exit through the EXIT trap) leaves no replay, worker or informer
# behind. The runs therefore happen in this shell, not in $(...) subshells whose pids the trap
# could not see. A pid whose parent is not this shell any more (reaped, reused) is left alone.
# No $(...) in the trap: bash 5.2 segfaults running one in an EXIT trap entered from a signal
# trap's `exit` while `read -t` (run's wait) was timing out.
REPLAY_PID= WORKER_PID= INFORMER_PID= CLIENTGO_PID=
is_our_child() { local ppid=; read -r _ _ _ ppid _ 2>/dev/null <"/proc/$1/stat"; [ "$ppid" = "$$" ]; }
stop_started() {
  local pid
  for pid in $WORKER_PID $INFORMER_PID $CLIENTGO_PID $REPLAY_PID; do
    is_our_child "$pid" || continue
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  done
  WORKER_PID= INFORMER_PID= CLIENTGO_PID= REPLAY_PID=
}
trap stop_started EXIT
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM   # killed: the status says so

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
replay_stop() { kill "$REPLAY_PID" 2>/dev/null; wait "$REPLAY_PID" 2>/dev/null; REPLAY_PID=; }

RUN="$BENCH_TMP/worker"
rm -rf "$RUN"; mkdir -p "$RUN"; chmod 0700 "$RUN"
mkfifo "$RUN/idle.fifo"   # see run(): a wait that forks nothing
OBJECTS=${BENCH_WORKER_OBJECTS:-2000}
EVENTS=${BENCH_WORKER_EVENTS:-100000}
RATE_EVENTS=${BENCH_WORKER_RATE_EVENTS:-40000}
REPEAT=${BENCH_WORKER_REPEAT:-3}
TIMEOUT=${BENCH_WORKER_TIMEOUT:-60}   # per run; the max-rate run takes a few seconds
PUB="ipc://$RUN/ConfigMap.pub"; SNAP="ipc://$RUN/ConfigMap.snap"
# tcp+CURVE: the informer binds these too (as the manager's informers do for remote workers),
# the worker dials them with its key; ports below the ephemeral range
TPORT=$((21000 + ($$ % 1000) * 2))
TPUB="tcp://127.0.0.1:$TPORT"; TSNAP="tcp://127.0.0.1:$((TPORT + 1))"
mkdir -p "$RUN/keys" && bin/godis-manager keygen --out "$RUN/keys" --name server >/dev/null &&
  bin/godis-manager keygen --out "$RUN/keys" --name worker >/dev/null || echo "bench_worker: keygen failed" >&2

stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

# run RATE EVENTS [tcp] → the worker's result JSON line in RESULT (the bench set writes it
# once every object was reconciled at its final state; after TIMEOUT s the worker is stopped
# and writes what it has, "complete":false). With tcp the worker subscribes over tcp:// with
# CURVE instead of ipc://.
run() {
  local rate=$1 events=$2 out="$RUN/result-$1.json" trace= eps="ConfigMap=$PUB,$SNAP" wkeys=() ikeys=()
  if [ "${3:-}" = tcp ]; then
    eps="ConfigMap=$TPUB,$TSNAP"
    wkeys=(--curve-key "$RUN/keys/worker.key" --curve-server-public "$RUN/keys/server.pub")
    ikeys=(--tcp-pub-endpoint "$TPUB" --tcp-snap-endpoint "$TSNAP"
           --curve-server-key "$RUN/keys/server.key" --curve-allow "$RUN/keys/worker.pub")
  fi
  rm -f "$out"
  if [ -n "${GD_HOPTRACE:-}" ]; then
    trace="$GD_HOPTRACE/rate-$rate-$(date +%s%N)"; mkdir -p "$trace"
  fi
  replay_start --objects "$OBJECTS" --events "$events" --rate "$rate" --start-delay-ms 1000
  GD_HOPTRACE=$trace bin/tests/godis-worker --informer-endpoints "$eps" ${wkeys[@]+"${wkeys[@]}"} \
    --reconciler bench --max-concurrent-reconciles 2 --log-level error \
    --reconciler-arg "out=$out,warmup_ms=2000,expect=$events,objects=$OBJECTS" &
  WORKER_PID=$!
  sleep 0.3                      # the worker subscribes before the stream starts
  GD_HOPTRACE=$trace bin/godis-informer --kind ConfigMap --kubeconfig "$REPLAY_KUBECONFIG" \
    --namespace bench --pub-endpoint "$PUB" --snap-endpoint "$SNAP" ${ikeys[@]+"${ikeys[@]}"} --log-level error &
  INFORMER_PID=$!
  local t0=$SECONDS
  # Wait without forking: a `sleep` child every 100 ms (fork, exec, exit on a 2-vCPU VM) showed
  # up as a 110 ms-periodic stall in the measured hop; read -t on an idle FIFO is a builtin.
  while [ ! -s "$out" ] && [ $((SECONDS - t0)) -lt "$TIMEOUT" ]; do
    read -r -t 0.2 _ <>"$RUN/idle.fifo" || true
  done
  stop_pid "$WORKER_PID"; WORKER_PID=; stop_pid "$INFORMER_PID"; INFORMER_PID=; replay_stop
  local line; line=$(cat "$out" 2>/dev/null || echo '{}')
  case $line in
    *'"complete":true'*) ;;
    *) echo "bench_worker: run at rate $rate did not complete in $TIMEOUT s: $line" >&2 ;;
  esac
  case $line in
    *'"events_missed":0,'*|'{}') ;;
    *) echo "bench_worker: run at rate $rate resynced (events folded by a snapshot): $line" >&2 ;;
  esac
  RESULT=$line
}

# median of the numbers on stdin
median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print 0}'; }

# run_clientgo RATE EVENTS → the client-go informer + workqueue baseline's JSON line in RESULT
run_clientgo() {
  local rate=$1 events=$2 out="$RUN/clientgo-$1.json"
  rm -f "$out"
  replay_start --objects "$OBJECTS" --events "$events" --rate "$rate" --start-delay-ms 1000
  timeout "$TIMEOUT" "$GO_BIN" --kubeconfig "$REPLAY_KUBECONFIG" --namespace bench --workers 2 \
    --warmup-ms 2000 --count "$events" --out "$out" >/dev/null 2>&1 &
  CLIENTGO_PID=$!
  wait "$CLIENTGO_PID"; CLIENTGO_PID=
  replay_stop
  RESULT=$(cat "$out" 2>/dev/null || echo '{}')
}

GO_BIN="$RUN/clientgo-pipeline"
if ! tools/bench/build-clientgo.sh "$GO_BIN" clientgo_pipeline >&2; then
  echo "bench_worker: the client-go baseline did not build; figures without baseline" >&2
  GO_BIN=
fi

maxes=(); bmaxes=()
for _ in $(seq 1 "$REPEAT"); do
  run 0 "$EVENTS"; max=$RESULT; echo "  max rate run: $max"; maxes+=("$(json_field "$max" events_per_s)")
done
run 5000 "$RATE_EVENTS"; lat=$RESULT
echo "  5000/s run:   $lat"
tmaxes=()
for _ in $(seq 1 "$REPEAT"); do
  run 0 "$EVENTS" tcp; echo "  tcp+CURVE max rate run: $RESULT"; tmaxes+=("$(json_field "$RESULT" events_per_s)")
done
run 5000 "$RATE_EVENTS" tcp; tlat=$RESULT
echo "  tcp+CURVE 5000/s run:   $tlat"
blat='{}'
if [ -n "$GO_BIN" ]; then
  for _ in $(seq 1 "$REPEAT"); do
    run_clientgo 0 "$EVENTS"; bmax=$RESULT; echo "  client-go max rate run: $bmax"
    bmaxes+=("$(json_field "$bmax" events_per_s)")
  done
  run_clientgo 5000 "$RATE_EVENTS"; blat=$RESULT; echo "  client-go 5000/s run:   $blat"
fi
bmed=
[ ${#bmaxes[@]} -gt 0 ] && bmed=$(printf '%s\n' "${bmaxes[@]}" | median)
bench_emit pipeline_events_per_s "$(printf '%s\n' "${maxes[@]}" | median)" "events/s" "$bmed"
bench_emit pipeline_latency_p50_ms "$(json_field "$lat" latency_p50_ms)" "ms" "$(json_field "$blat" latency_p50_ms)"
bench_emit pipeline_latency_p99_ms "$(json_field "$lat" latency_p99_ms)" "ms" "$(json_field "$blat" latency_p99_ms)"
imed=$(printf '%s\n' "${maxes[@]}" | median)
bench_emit pipeline_tcp_curve_events_per_s "$(printf '%s\n' "${tmaxes[@]}" | median)" "events/s" "$imed" ipc
bench_emit pipeline_tcp_curve_latency_p50_ms "$(json_field "$tlat" latency_p50_ms)" "ms" "$(json_field "$lat" latency_p50_ms)" ipc
bench_emit pipeline_tcp_curve_latency_p99_ms "$(json_field "$tlat" latency_p99_ms)" "ms" "$(json_field "$lat" latency_p99_ms)" ipc
