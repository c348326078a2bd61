#!/usr/bin/env bash
# tests/valgrind/scenario.sh — one integration scenario with every operator process under
# valgrind memcheck: godis-manager (leader election on) supervising its 9 informers and one
# worker, each started through a wrapper that execs it under valgrind; a GodisCluster is
# created with 3 members, scaled to 4 and to 2 (meet, forget, ConfigMap rewrites, Godis
# created and deleted), deleted, then the manager gets SIGTERM and stops everything the
# way it does in a pod. Every process's log must say 0 errors (leaks of definitely or
# indirectly lost blocks count as errors) and must have a leak summary (a process killed
# before it could exit would hide its leaks). Closes with
#   valgrind scenario: P processes, E errors, definitely lost D bytes, indirectly lost I bytes
# Uses the running devcluster, or starts one and stops it again.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
DC=tools/devcluster
log() { printf '[valgrind-scenario] %s\n' "$*" >&2; }
started=0; mgr=0
cleanup() {
  local rc=$?
  [ "$mgr" != 0 ] && kill -KILL "$mgr" 2>/dev/null
  [ $started = 1 ] && { "$DC" down || rc=1; }
  exit $rc
}
trap cleanup EXIT
if ! "$DC" status >/dev/null 2>&1; then
  started=1
  "$DC" up >&2 || { log "tools/devcluster up failed"; exit 1; }
fi
eval "$("$DC" env)" || exit 1

dir=$ROOT/build/valgrind/scenario
rm -rf "$dir"; mkdir -p "$dir/bin"
# --soname-synonyms: the worker runs on jemalloc; memcheck replaces its malloc as it does glibc's.
VG="valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect \
--errors-for-leak-kinds=definite,indirect --num-callers=30 --child-silent-after-fork=yes \
--soname-synonyms=somalloc=*jemalloc* --suppressions=$ROOT/tests/valgrind/godis.supp"
for p in informer worker; do
  printf '#!/bin/sh\nexec %s --log-file=%s/%s-%%p.vg %s/bin/godis-%s "$@"\n' \
    "$VG" "$dir" "$p" "$ROOT" "$p" >"$dir/bin/godis-$p"
  chmod +x "$dir/bin/godis-$p"
done
name=vg-$$
ctl() { bin/godisctl -n default "$@"; }
ctl apply -f deploy/base/crds/ >/dev/null || { log "cannot install the CRDs"; exit 1; }

# Heartbeat 2s: memcheck slows a worker 20-50x, and one silent for 5 heartbeats is killed.
# Shutdown grace 60 s (and a lease long enough to allow it: the grace is capped by 4/5 of
# lease - renew deadline): a child gets SIGKILL at half the grace, and an informer under
# memcheck on a busy machine needs more than the default 2.5 s to finish its leak check;
# killed, it leaves no summary (seen on cf26d54 with 8 devclusters' worth of load).
$VG --log-file="$dir/manager-%p.vg" bin/godis-manager --kubeconfig "$KUBECONFIG" \
  --leader-elect --leader-elect-resource-name "$name" --leader-elect-resource-namespace default \
  --leader-elect-lease-duration 120s --leader-elect-renew-deadline 40s --shutdown-grace 60s \
  --workers 1 --max-concurrent-reconciles 2 --heartbeat 2s \
  --informer-bin "$dir/bin/godis-informer" --worker-bin "$dir/bin/godis-worker" \
  --runtime-dir "/tmp/godis-$name" --health-probe-bind-address 0 --metrics-bind-address 0 \
  >"$dir/manager.log" 2>&1 &
mgr=$!
log "manager pid $mgr under valgrind; logs in $dir"

manifest=$dir/cluster.yaml
printf 'apiVersion: kumkeehyun.github.com/v1\nkind: GodisCluster\nmetadata: {name: %s, namespace: default}\nspec: {replicas: 3}\n' "$name" >"$manifest"
ok=1
step() {   # step DESCRIPTION REPLICAS: wait until the cluster runs REPLICAS Ready members
  log "$1"
  ctl follow "$name" "$2" 600 >"$dir/follow-$2.log" 2>&1 || { log "did not converge to $2 (see $dir/follow-$2.log)"; ok=0; }
}
ctl apply -f "$manifest" >/dev/null || ok=0
[ $ok = 1 ] && step "create with 3 members" 3
[ $ok = 1 ] && { ctl scale "$name" 4 >/dev/null && step "scale out to 4" 4; }
[ $ok = 1 ] && { ctl scale "$name" 2 >/dev/null && step "scale in to 2" 2; }
ctl delete -f "$manifest" >/dev/null || ok=0

log "SIGTERM to the manager"
kill -TERM "$mgr"
for _ in $(seq 1 240); do kill -0 "$mgr" 2>/dev/null || break; sleep 0.5; done
if kill -0 "$mgr" 2>/dev/null; then log "manager still running after 120 s"; ok=0; fi
wait "$mgr"; mrc=$?; mgr=0
[ $mrc = 0 ] || { log "manager exit status $mrc"; ok=0; }

procs=0; errors=0; def=0; ind=0
for f in "$dir"/*.vg; do
  [ -f "$f" ] || continue
  procs=$((procs + 1))
  e=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$f" | tail -1)
  d=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$f" | tail -1 | tr -d ,)
  i=$(sed -n 's/.*indirectly lost: \([0-9,]*\) bytes.*/\1/p' "$f" | tail -1 | tr -d ,)
  if [ -z "$e" ]; then log "$(basename "$f"): no summary (killed before it exited?)"; ok=0; e=1; fi
  if ! grep -q 'HEAP SUMMARY' "$f"; then log "$(basename "$f"): no heap summary"; ok=0; fi
  errors=$((errors + e)); def=$((def + ${d:-0})); ind=$((ind + ${i:-0}))
  [ "$e" = 0 ] || { log "$(basename "$f"): $e errors"; grep -E '^==[0-9]+== (Invalid|Conditional|Syscall|Mismatched|[0-9,]+ bytes in)|^==[0-9]+==    (at|by) ' "$f" | head -20 >&2; }
done
[ $procs -ge 11 ] || { log "only $procs valgrind logs: want the manager, 9 informers and a worker"; ok=0; }
echo "valgrind scenario: $procs processes, $errors errors, definitely lost $def bytes, indirectly lost $ind bytes"
[ $ok = 1 ] && [ $errors = 0 ]
