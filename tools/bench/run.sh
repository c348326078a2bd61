#!/usr/bin/env bash
# run.sh — `make bench`: informer benchmarks (issue 4 part 6). Every figure is printed and
# appended as one JSON line ({"name","value","unit"}) to bench/results/latest.jsonl.
#
#   informer_events_per_s             replayed watch events through the informer to a subscriber
#   informer_cpu_us_per_event         user+sys CPU of the informer process per event
#   informer_rss_bytes_per_1k_objects RSS growth for 20 000 cached ConfigMaps of 1 KiB, per 1000
#   informer_list_objects_per_s       initial paginated list of 20 000 ConfigMaps from the real
#                                     API server until SYNCED reaches a subscriber
#
# The first three run against bin/bench's replay source (a list, then a recorded watch
# streamed as fast as the informer reads it: the API server on 2 cores writes far slower
# than an informer reads). The recorded events are real: captured from the local control
# plane's watch stream while ConfigMaps are created. The client-go baseline is not built
# (no `baseline` fields yet). Uses the running devcluster, or starts one and stops it again.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT_DIR=$ROOT/bench/results
EVENTS=${BENCH_EVENTS:-200000}
LIST_OBJECTS=${BENCH_LIST_OBJECTS:-20000}
W=$(mktemp -d /tmp/bench-XXXXXX)
PIDS=()
STARTED=0
log() { printf '[bench] %s\n' "$*" >&2; }

cleanup() {
  local p; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  if [ "$STARTED" = 1 ]; then "$ROOT/tools/devcluster" down || true; fi
  rm -rf "$W"
}
trap cleanup EXIT

if ! "$ROOT/tools/devcluster" env >/dev/null 2>&1; then
  log "starting a devcluster"
  "$ROOT/tools/devcluster" up --nodes 0
  STARTED=1
fi
eval "$("$ROOT/tools/devcluster" env)"
mkdir -p "$OUT_DIR"
: >"$OUT_DIR/latest.jsonl"
emit() { tee -a "$OUT_DIR/latest.jsonl"; }

api() {  # api PATH — GET as admin
  curl -sS --fail --max-time 90 --cacert "$DEVCLUSTER_DIR/pki/ca.crt" \
    --cert "$DEVCLUSTER_DIR/pki/admin.crt" --key "$DEVCLUSTER_DIR/pki/admin.key" "$KUBE_APISERVER$1"
}
del_ns() {
  curl -sS --max-time 20 --cacert "$DEVCLUSTER_DIR/pki/ca.crt" --cert "$DEVCLUSTER_DIR/pki/admin.crt" \
    --key "$DEVCLUSTER_DIR/pki/admin.key" -X DELETE "$KUBE_APISERVER/api/v1/namespaces/$1" >/dev/null || true
}

# 1. Record a real watch stream: 200 ConfigMaps created while we watch.
NS_CAP=bench-capture-$$
"$ROOT/bin/bench" populate --namespace "$NS_CAP" --count 0
api "/api/v1/namespaces/$NS_CAP/configmaps?watch=1&timeoutSeconds=60" >"$W/events.jsonl" &
CURL=$!
sleep 0.5
"$ROOT/bin/bench" populate --namespace "$NS_CAP" --count 200 --bytes 512
sleep 1
kill "$CURL" 2>/dev/null || true; wait "$CURL" 2>/dev/null || true
del_ns "$NS_CAP"
log "recorded $(wc -l <"$W/events.jsonl") watch events"

replay() {  # replay NAME ARGS... — starts a replay source, writes its kubeconfig to $W/NAME.kc
  local name=$1; shift
  "$ROOT/bin/bench" replay --events "$W/events.jsonl" "$@" >"$W/$name.port" &
  local pid=$!; PIDS+=("$pid")
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

# 2. Events through the informer to a subscriber, and CPU per event.
pid=$(replay events --count "$EVENTS" --list-count 0)
log "replaying $EVENTS watch events"
"$ROOT/bin/bench" events --informer "$ROOT/bin/godis-informer" --kubeconfig "$W/events.kc" \
  --replay-pid "$pid" --count "$EVENTS" | emit

# 3. Memory per cached object: 20 000 ConfigMaps of 1 KiB versus an empty cache.
replay empty --count 0 --list-count 0 >/dev/null
replay full --count 0 --list-count 20000 --obj-bytes 1024 >/dev/null
rss0=$("$ROOT/bin/bench" rss --informer "$ROOT/bin/godis-informer" --kubeconfig "$W/empty.kc")
rss1=$("$ROOT/bin/bench" rss --informer "$ROOT/bin/godis-informer" --kubeconfig "$W/full.kc")
echo "{\"name\":\"informer_rss_bytes_per_1k_objects\",\"value\":$(( (rss1 - rss0) / 20 )),\"unit\":\"bytes\"}" | emit

# 4. The initial list from the real API server.
NS_LIST=bench-list-$$
log "creating $LIST_OBJECTS ConfigMaps of 1 KiB (takes a while on 2 cores)"
t0=$(date +%s)
"$ROOT/bin/bench" populate --namespace "$NS_LIST" --count "$LIST_OBJECTS" --bytes 1024
log "created in $(( $(date +%s) - t0 )) s; listing"
"$ROOT/bin/bench" list --informer "$ROOT/bin/godis-informer" --namespace "$NS_LIST" \
  --count "$LIST_OBJECTS" | emit
del_ns "$NS_LIST"
log "figures in $OUT_DIR/latest.jsonl"
