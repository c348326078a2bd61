#!/usr/bin/env bash
# make demo: the main job on the local control plane, in a way a person can follow.
#   1. start the local control plane (etcd, kube-apiserver, controller-manager, scheduler)
#      and the node agent with 3 nodes (pods run as local processes, godis as the stand-in);
#   2. install the CRDs from deploy/;
#   3. run two godis-manager replicas (one leader, one warm standby), 2 workers each;
#   4. apply deploy/samples/godiscluster.yaml and scale it 3 -> 5 -> 3, printing every
#      status change and Event as it happens;
#   5. leave everything running and say how to keep playing and how to stop.
# `tools/demo.sh stop` stops the managers and the control plane.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DEMO=$ROOT/build/demo
CTL=$ROOT/bin/godisctl
mkdir -p "$DEMO"

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

stop_managers() {
  for f in "$DEMO"/manager-*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
  done
}

if [ "${1:-}" = "stop" ]; then
  stop_managers
  tools/devcluster down
  exit 0
fi

say "1/5 local control plane (first run builds Kubernetes from Debian's source package)"
tools/devcluster up
eval "$(tools/devcluster env)"
export KUBECONFIG

say "2/5 CRDs from deploy/base/crds"
"$CTL" apply -f deploy/base/crds/godisclusters.yaml -f deploy/base/crds/godises.yaml

say "3/5 two godis-manager replicas (leader election on a Lease), 2 workers each"
stop_managers
for i in 1 2; do
  "$ROOT/bin/godis-manager" --kubeconfig "$KUBECONFIG" --leader-elect \
      --leader-elect-resource-namespace default --workers 2 \
      --health-probe-bind-address "127.0.0.1:$((18080 + 2*i))" \
      --metrics-bind-address "127.0.0.1:$((18081 + 2*i))" \
      --runtime-dir "$DEMO/run-$i" >"$DEMO/manager-$i.log" 2>&1 &
  echo $! >"$DEMO/manager-$i.pid"
  echo "manager $i: pid $!, log $DEMO/manager-$i.log, metrics http://127.0.0.1:$((18081 + 2*i))/metrics"
done
for _ in $(seq 1 100); do
  holder=$({ "$CTL" -n default get Lease godis-operator-leader 2>/dev/null || true; } |
           sed -n 's/.*"holderIdentity":[[:space:]]*"\([^"]*\)".*/\1/p')
  [ -n "$holder" ] && break
  sleep 0.2
done
echo "leader: ${holder:-none yet}"

say "4/5 GodisCluster example-godis with 3 members"
"$CTL" -n default apply -f deploy/samples/godiscluster.yaml
"$CTL" -n default follow example-godis 3 180

say "     scale out 3 -> 5 (one member at a time, each waits for the previous to be Ready)"
"$CTL" -n default scale example-godis 5
"$CTL" -n default follow example-godis 5 180

say "     scale in 5 -> 3 (cluster forget first, then the Godis is deleted)"
"$CTL" -n default scale example-godis 3
"$CTL" -n default follow example-godis 3 180

say "5/5 where things stand"
"$CTL" -n default clusters
cat <<MSG

The control plane, the node agent and both managers keep running. To keep playing:

  eval "\$(tools/devcluster env)"           # sets KUBECONFIG
  bin/godisctl -n default clusters           # phase, members, ready (kubectl get gc works too, if installed)
  bin/godisctl -n default scale example-godis 4
  bin/godisctl -n default follow example-godis 4
  bin/godisctl -n default events example-godis
  tail -f build/demo/manager-1.log

Stop everything with:  tools/demo.sh stop
MSG
