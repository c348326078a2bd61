#!/usr/bin/env bash
# failover.sh — manager failover times on the local control plane (issue 6 part 8), with
# client-go's default timings (lease 15 s, renew deadline 10 s, retry 2 s) unless
# FAILOVER_FAST=1 (4 s / 3 s / 0.5 s). Appends two JSON lines to bench/results/latest.jsonl:
#
#   failover_graceful_s  SIGTERM to the leader → first write by a worker of the standby
#   failover_crash_s     SIGKILL of the leader → first write by a worker of the standby
#
# beside client-go's figures as `baseline`: a graceful handover with ReleaseOnCancel costs a
# standby up to one jittered retry period (2 s × up to 2.2 = 4.4 s); a crash costs the lease
# duration plus up to a jittered retry (15–24 s, baseline 24 = the upper end).
#
# Two real bin/godis-manager processes run with stand-in children (bin/tests/itest_manager
# acts as informer and worker, see tests/integration/harness_manager.c); the workers
# log a "write" every 10 ms while they hold shards and an unexpired LEASE, so "first write"
# is when the new leader's workers really work. Uses the running devcluster, or starts one
# and stops it again.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
OUT=$ROOT/bench/results/latest.jsonl
FAKE=$ROOT/bin/tests/itest_manager
MGR=$ROOT/bin/godis-manager
W=$(mktemp -d /tmp/bench-failover-XXXXXX)
PIDS=()
STARTED=0
log() { printf '[failover] %s\n' "$*" >&2; }

cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  if [ "$STARTED" = 1 ]; then tools/devcluster down >/dev/null 2>&1 || true; fi
  rm -rf "$W"
}
trap cleanup EXIT

[ -x "$MGR" ] && [ -x "$FAKE" ] || { log "build first: make"; exit 1; }
if ! tools/devcluster status >/dev/null 2>&1; then
  log "starting a devcluster"
  tools/devcluster up --nodes 0 >&2
  STARTED=1
fi
eval "$(tools/devcluster env)"

if [ "${FAILOVER_FAST:-0}" = 1 ]; then LD=4s RD=3s RP=500ms; else LD=15s RD=10s RP=2s; fi
LEASE=bench-failover-$$
export FAKE_DIR=$W FAKE_WRITE_MS=10
now_ms() { date +%s%3N; }
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

declare -A MPORT
start_mgr() {   # name → pid in $!
  local name=$1 hp mp
  hp=$(free_port); mp=$(free_port); MPORT[$name]=$mp
  echo "workers: 2" >"$W/$name.yaml"
  "$MGR" --config="$W/$name.yaml" --kubeconfig="$KUBECONFIG" --leader-elect=true \
    --leader-elect-resource-namespace=default --leader-elect-resource-name="$LEASE" \
    --leader-elect-identity="$name" --leader-elect-lease-duration=$LD \
    --leader-elect-renew-deadline=$RD --leader-elect-retry-period=$RP \
    --worker-bin="$FAKE" --informer-bin="$FAKE" --informer-kinds=GodisCluster,Pod \
    --runtime-dir="$W/run-$name" --health-probe-bind-address=127.0.0.1:$hp \
    --metrics-bind-address=127.0.0.1:$mp >"$W/$name.log" 2>&1 &
  PIDS+=($!)
  eval "PID_$name=$!"
}
leads() { curl -s "127.0.0.1:${MPORT[$1]}/metrics" | grep -q "^leader_election_master_status{name=\"$LEASE\"} 1"; }
wait_leader() {   # name timeout_s
  local end=$(( $(now_ms) + $2 * 1000 ))
  while [ "$(now_ms)" -lt $end ]; do leads "$1" && return 0; sleep 0.05; done
  return 1
}
# first write (wall ms) by the workers of manager pid $1 at or after $2, polling up to $3 s
first_write() {
  local end=$(( $(now_ms) + $3 * 1000 )) t
  while [ "$(now_ms)" -lt $end ]; do
    t=$(awk -v p="$1" -v s="$2" '$1=="W" && $4==p && $2>=s {print $2; exit}' "$W/writes" 2>/dev/null || true)
    [ -n "$t" ] && { echo "$t"; return 0; }
    sleep 0.01
  done
  return 1
}
emit() {   # name value baseline note
  printf '{"name":"%s","value":%s,"unit":"s","baseline":%s,"lease_duration":"%s","renew_deadline":"%s","retry_period":"%s","note":"%s"}\n' \
    "$1" "$2" "$3" "$LD" "$RD" "$RP" "$4" | tee -a "$OUT"
}
secs() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", (b-a)/1000}'; }

mkdir -p "$(dirname "$OUT")"
log "lease $LD / renew deadline $RD / retry $RP"
start_mgr a
wait_leader a 30 || { log "manager a never led"; exit 1; }
start_mgr b
sleep 3   # b: informers synced, warm workers connected

log "graceful: SIGTERM to the leader"
t0=$(now_ms)
kill -TERM "$PID_a"
t1=$(first_write "$PID_b" "$t0" 30) || { log "no write by the standby"; exit 1; }
wait "$PID_a" || true
emit failover_graceful_s "$(secs "$t0" "$t1")" 4.4 "SIGTERM to first write of the new leader's worker; client-go: up to one jittered retry with ReleaseOnCancel"

start_mgr a
sleep 3
log "crash: SIGKILL of the leader"
t0=$(now_ms)
kill -9 "$PID_b"
t1=$(first_write "$PID_a" "$t0" 60) || { log "no write by the standby"; exit 1; }
emit failover_crash_s "$(secs "$t0" "$t1")" 24 "SIGKILL to first write of the new leader's worker; client-go: lease duration plus up to a jittered retry (15-24 s)"
kill -TERM "$PID_a"; wait "$PID_a" || true
