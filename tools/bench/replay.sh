#!/usr/bin/env bash
# replay.sh — the informer's replay figures alone (issue 23 item 3), with no control plane:
# bin/bench's replay source serves a list and streams a recorded watch (tools/bench/replay.c),
# and the same runs go through bin/godis-informer and through the client-go baseline.
#
#   informer_events_per_s             replayed watch events through the informer to a subscriber
#   informer_cpu_us_per_event         user+sys CPU of the informer process per event
#   informer_rss_bytes_per_1k_objects RSS growth for 20 000 cached ConfigMaps of 1 KiB, per 1000
# Same names and meaning as in tools/bench/run.sh (which records a fresh watch stream from the
# devcluster first and then runs this part); here the stream is BENCH_EVENTS_FILE, by default
# tools/bench/fixtures/configmap-watch.jsonl: 200 ADDED events of 512-byte ConfigMaps generated in
# the shape kube-apiserver 1.20 writes (selfLink, managedFields). GO_BIN: a prebuilt client-go
# baseline (else tools/bench/build-clientgo.sh builds it). BENCH_REPEAT (default 1) repeats
# each measure, ours and client-go's back to back, and reports the median. INFORMER_BIN: the
# informer to measure (default bin/godis-informer; an older build for before/after figures).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BENCH_OUT=${BENCH_OUT:-$ROOT/bench/results/latest.jsonl}
EVENTS=${BENCH_EVENTS:-200000}
REPEAT=${BENCH_REPEAT:-1}
EVFILE=${BENCH_EVENTS_FILE:-$ROOT/tools/bench/fixtures/configmap-watch.jsonl}
INFORMER=${INFORMER_BIN:-$ROOT/bin/godis-informer}
W=$(mktemp -d /tmp/bench-replay-XXXXXX)
log() { printf '[replay] %s\n' "$*" >&2; }
cleanup() {
  local p; for p in $(cat "$W/pids" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
  rm -rf "$W"
}
trap cleanup EXIT
mkdir -p "$(dirname "$BENCH_OUT")"

GO_BIN=${GO_BIN:-}
if [ -z "$GO_BIN" ]; then
  GO_BIN=$W/bench-clientgo
  "$ROOT/tools/bench/build-clientgo.sh" "$GO_BIN" >&2 || { log "no client-go baseline"; GO_BIN=; }
fi

replay() {  # replay NAME ARGS... — starts a replay source, writes its kubeconfig to $W/NAME.kc
  local name=$1; shift
  rm -f "$W/$name.port"
  "$ROOT/bin/bench" replay --events "$EVFILE" "$@" >"$W/$name.port" &
  local pid=$!; echo "$pid" >>"$W/pids"
  for _ in $(seq 100); do [ -s "$W/$name.port" ] && break; sleep 0.1; done
  cat >"$W/$name.kc" <<KC
apiVersion: v1
kind: Config
clusters: [{name: replay, cluster: {server: "http://127.0.0.1:$(cat "$W/$name.port")"}}]
users: [{name: nobody, user: {}}]
contexts: [{name: replay, context: {cluster: replay, user: nobody}}]
current-context: replay
KC
  echo "$pid"
}
stop_replay() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print 0}'; }
val() { grep "\"name\":\"$1\"" <<<"$2" | sed -n 's/.*"value":\([0-9.e+-]*\).*/\1/p'; }
emit() {  # name value unit [baseline]
  local line
  if [ -n "${4:-}" ]; then line=$(printf '{"name":"%s","value":%s,"unit":"%s","baseline":%s}' "$1" "$2" "$3" "$4")
  else line=$(printf '{"name":"%s","value":%s,"unit":"%s"}' "$1" "$2" "$3"); fi
  echo "$line" | tee -a "$BENCH_OUT"
}

# events KIND(--informer|--clientgo) BIN → the two figure lines. The list caches 1000
# ConfigMaps first so the store has trained its dictionary (as in production).
events() {
  local pid out
  pid=$(replay "ev$RANDOM" --count "$EVENTS" --list-count 1000)
  out=$("$ROOT/bin/bench" events "$1" "$2" --kubeconfig "$(ls -t "$W"/ev*.kc | head -1)" \
        --replay-pid "$pid" --count "$EVENTS")
  stop_replay "$pid"
  echo "$out"
}
# rss_per_1k KIND BIN → bytes per 1000 objects: RSS over 20 000 ConfigMaps of 1 KiB less empty
rss_per_1k() {
  local r0 r1
  r0=$("$ROOT/bin/bench" rss "$1" "$2" --kubeconfig "$W/empty.kc")
  r1=$("$ROOT/bin/bench" rss "$1" "$2" --kubeconfig "$W/full.kc")
  echo $(( (r1 - r0) / 20 ))
}

log "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
eps=() cpu=() geps=() gcpu=()
for _ in $(seq "$REPEAT"); do
  o=$(events --informer "$INFORMER")
  eps+=("$(val informer_events_per_s "$o")"); cpu+=("$(val informer_cpu_us_per_event "$o")")
  log "ours:      $(tr '\n' ' ' <<<"$o")"
  if [ -n "$GO_BIN" ]; then
    o=$(events --clientgo "$GO_BIN")
    geps+=("$(val informer_events_per_s "$o")"); gcpu+=("$(val informer_cpu_us_per_event "$o")")
    log "client-go: $(tr '\n' ' ' <<<"$o")"
  fi
done
replay empty --count 0 --list-count 0 >/dev/null
replay full --count 0 --list-count 20000 --obj-bytes 1024 >/dev/null
rss=() grss=()
for _ in $(seq "$REPEAT"); do
  rss+=("$(rss_per_1k --informer "$INFORMER")"); log "ours rss/1k: ${rss[-1]}"
  if [ -n "$GO_BIN" ]; then grss+=("$(rss_per_1k --clientgo "$GO_BIN")"); log "client-go rss/1k: ${grss[-1]}"; fi
done
m() { [ $# -gt 0 ] && printf '%s\n' "$@" | median; }
emit informer_events_per_s "$(m "${eps[@]}")" events/s "$(m ${geps[@]+"${geps[@]}"})"
emit informer_cpu_us_per_event "$(m "${cpu[@]}")" us/event "$(m ${gcpu[@]+"${gcpu[@]}"})"
emit informer_rss_bytes_per_1k_objects "$(m "${rss[@]}")" bytes "$(m ${grss[@]+"${grss[@]}"})"
log "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
