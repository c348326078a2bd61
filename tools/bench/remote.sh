#!/usr/bin/env bash
# remote.sh — issue 22's figures for workers spread over pods (tcp+CURVE versus ipc is in
# bench_worker.sh, on the same run as the ipc figures):
#
#   worker_cache_rss_bytes_1w   cache memory per worker: a manager with N local workers
#   worker_cache_rss_bytes_2w   (bin/tests/godis-worker, the bench reconciler) and one
#   worker_cache_rss_bytes_4w   ConfigMap informer over bin/pipeline-replay's 20 000
#                               ConfigMaps of 1 KiB, each of its own godis cluster so they
#                               spread over the 256 shards; once every object is cached, the
#                               mean VmRSS of the N workers minus that of one worker over an
#                               empty list (the process itself). Each worker caches only its
#                               shards' objects, so it should fall roughly as 1/N.
#   remote_shard_move_after_kill_ms  a manager (--workers 0, tcp:// with CURVE, Lease on the
#                               devcluster) and two remote workers (godis-worker
#                               --leader-lease); one is kill -9'd: the time until the other
#                               owns all 256 shards (the manager's /metrics, polled every
#                               50 ms). Median of BENCH_REMOTE_KILLS (default 3) kills.
#                               Heartbeat 1 s: the bound is 5 missed heartbeats plus the
#                               rest of the last lease (docs/PROTOCOL.md §3.4).
#
# Appends JSON lines to BENCH_OUT like bench_worker.sh; BENCH_REMOTE_PARTS="rss kill" (the
# default) selects the parts. The kill figure needs a Lease: it
# uses the running devcluster, or starts one (--nodes 0) and stops it again. Every process it
# starts is stopped by pid on exit.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
. "$ROOT/tools/bench/lib.sh"
BENCH_OUT=${BENCH_OUT:-$ROOT/bench/results/latest.jsonl}
RUN=${BENCH_TMP:-$ROOT/build/bench}/remote
OBJECTS=${BENCH_REMOTE_OBJECTS:-20000}
KILLS=${BENCH_REMOTE_KILLS:-3}
mkdir -p "$(dirname "$BENCH_OUT")"
rm -rf "$RUN"; mkdir -p "$RUN"; chmod 0700 "$RUN"

bench_process_table     # PIDS, STARTED, the EXIT trap (lib.sh)

# A port below the ephemeral range, for this run only.
PORT=$((23000 + ($$ % 400) * 20))
metrics() { curl -s --max-time 2 "http://127.0.0.1:$((PORT + 19))/metrics"; }

# ------------------------------------------------------------------ cache memory per worker
replay_start() {  # OBJECTS — sets RPID and writes $RUN/replay.kc
  BENCH_REPLAY_NS=bench bench_replay_start --objects "$1" --events 0 --bytes 1024 --clusters "$1"
}
cached_all() {  # WANT: every worker connected, the shards dealt, WANT objects cached in all
  local m; m=$(metrics) || return 1
  grep -q '^godis_manager_shards_unassigned 0$' <<<"$m" || return 1
  [ "$(awk '/^godis_worker_cache_objects\{.*kind="ConfigMap"/ {s += $2} END {print s + 0}' <<<"$m")" = "$1" ]
}
# mean_rss N OBJECTS → RSS: the mean VmRSS (bytes) of the N workers once all objects are
# cached ("" when the run failed)
mean_rss() {
  local n=$1 objects=$2 mgr p sum=0 k=0
  RSS=
  replay_start "$objects" || { echo "remote: the replay source did not start" >&2; return 1; }
  rm -rf "$RUN/rt"
  bench_replay_manager "$RUN/rss-manager.log" ConfigMap "$n"
  mgr=$BENCH_MGR
  if until_true 120 cached_all "$objects"; then
    sleep 2                                      # the snapshot's transient buffers settle
    for p in $(pgrep -P "$mgr" -f godis-worker); do
      sum=$((sum + $(awk '/^VmRSS:/ {print $2}' "/proc/$p/status") * 1024)); k=$((k + 1))
    done
  else
    echo "remote: $n workers did not cache $objects objects in 120 s" >&2
  fi
  stop_pid "$mgr"; stop_pid "$RPID"
  [ "$k" = "$n" ] && RSS=$((sum / k))
}

PARTS=${BENCH_REMOTE_PARTS:-rss kill}
empty=
if [[ " $PARTS " == *" rss "* ]]; then mean_rss 1 1; empty=$RSS; fi
if [ -n "$empty" ]; then
  echo "  worker RSS with an empty cache: $empty bytes"
  for n in 1 2 4; do
    mean_rss "$n" "$OBJECTS"
    [ -n "$RSS" ] || { echo "remote: the $n-worker run failed" >&2; continue; }
    echo "  $n workers, $OBJECTS objects: mean RSS $RSS bytes per worker"
    bench_emit "worker_cache_rss_bytes_${n}w" $((RSS - empty)) bytes
  done
fi

# ------------------------------------------------------------------ shards after a kill -9
[[ " $PARTS " == *" kill "* ]] || exit 0
if ! tools/devcluster env >/dev/null 2>&1; then
  tools/devcluster up --nodes 0 >&2 || { echo "remote: no devcluster" >&2; exit 1; }
  STARTED=1
fi
eval "$(tools/devcluster env)"
# the informers of GodisCluster and Godis need their CRDs (a fresh devcluster has none)
"$ROOT/bin/godisctl" apply -f deploy/base/crds/godisclusters.yaml -f deploy/base/crds/godises.yaml >/dev/null ||
  { echo "remote: cannot install the CRDs" >&2; exit 1; }
K=$RUN/keys; mkdir -p "$K"
for k in server w1 w2; do "$ROOT/bin/godis-manager" keygen --out "$K" --name "$k" >/dev/null || exit 1; done
cat "$K/w1.pub" "$K/w2.pub" >"$K/allow"
LEASE=bench-remote-$$
"$ROOT/bin/godis-manager" --kubeconfig "$KUBECONFIG" --leader-elect --leader-elect-resource-name "$LEASE" \
  --leader-elect-resource-namespace default --workers 0 --runtime-dir "$RUN/rt-remote" \
  --remote-port-base "$PORT" --remote-address 127.0.0.1 --curve-server-key "$K/server.key" \
  --curve-allow "$K/allow" --metrics-bind-address "127.0.0.1:$((PORT + 19))" \
  --health-probe-bind-address 0 >"$RUN/manager.log" 2>&1 &
MGR=$!; PIDS+=($MGR)
worker() {  # NAME — starts a remote worker, its pid in WPID
  "$ROOT/bin/godis-worker" --kubeconfig "$KUBECONFIG" --leader-lease "default/$LEASE" \
    --curve-key "$K/$1.key" --curve-server-public "$K/server.pub" --worker-name "$1" \
    --log-level warn >>"$RUN/$1.log" 2>&1 &
  WPID=$!; PIDS+=($WPID)
}
owners() {  # SLOTS: exactly SLOTS remote workers own all 256 shards, none unassigned
  local m; m=$(metrics) || return 1
  grep -q '^godis_manager_shards_unassigned 0$' <<<"$m" || return 1
  awk -v want="$1" '/^godis_worker_shards_active\{worker="[0-9]+"\}/ {
      split($1, a, "\""); if (a[2] + 0 >= 32 && $2 > 0) { n++; s += $2 } }
    END { exit !(n == want && s == 256) }' <<<"$m"
}
worker w1; W1=$WPID
worker w2; W2=$WPID
moves=()
for i in $(seq 1 "$KILLS"); do
  until_true 60 owners 2 || { echo "remote: two remote workers never owned all shards:" >&2
                               metrics | grep -E '^godis_(worker_shards_active|manager_shards_unassigned|manager_remote)' >&2; break; }
  t0=$(date +%s%N)
  kill -9 "$W2"; wait "$W2" 2>/dev/null
  until_true 30 owners 1 || { echo "remote: the shards did not move within 30 s" >&2; break; }
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  echo "  kill -9 #$i: shards moved after $ms ms"
  moves+=("$ms")
  worker w2; W2=$WPID
done
stop_pid "$W1"; stop_pid "$W2"; stop_pid "$MGR"
curl -s --max-time 10 --cacert "$DEVCLUSTER_DIR/pki/ca.crt" --cert "$DEVCLUSTER_DIR/pki/admin.crt" \
  --key "$DEVCLUSTER_DIR/pki/admin.key" -X DELETE \
  "$KUBE_APISERVER/apis/coordination.k8s.io/v1/namespaces/default/leases/$LEASE" >/dev/null
if [ ${#moves[@]} -gt 0 ]; then
  bench_emit remote_shard_move_after_kill_ms \
    "$(printf '%s\n' "${moves[@]}" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')" ms
fi
[ ${#moves[@]} = "$KILLS" ]
