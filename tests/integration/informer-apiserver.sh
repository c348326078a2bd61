#!/usr/bin/env bash
# informer-apiserver.sh — a second, private kube-apiserver on the devcluster's etcd, for the
# informer's integration tests (tests/integration/itest_informer.c).
#
#   informer-apiserver.sh start STATE_DIR   starts it (or restarts it on the port it had),
#                                           waits until ready, prints the port
#   informer-apiserver.sh stop STATE_DIR    kills it (SIGKILL: an abrupt "API server down")
#
# Why a private one: the tests must take an API server down and bring it back, and must see
# 410 Gone after an etcd compaction. The devcluster's own API server is shared by every
# test, and its watch cache serves watches from memory (a compaction does not make an old
# resourceVersion "too old" there). This one runs with --watch-cache=false, so watches go to
# etcd and a compacted revision answers 410, exactly the path the reflector must handle.
set -euo pipefail
cmd=${1:?usage: $0 start|stop STATE_DIR}; S=${2:?usage: $0 start|stop STATE_DIR}
: "${DEVCLUSTER_DIR:?run eval \"\$(tools/devcluster env)\" first}"
: "${ETCD_ENDPOINTS:?run eval \"\$(tools/devcluster env)\" first}"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
D=$DEVCLUSTER_DIR
mkdir -p "$S"

stop() {
  if [ -f "$S/pid" ]; then
    local pid; pid=$(cat "$S/pid")
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$S/pid"
  fi
}

ready() {
  curl -sS --max-time 3 --cacert "$D/pki/ca.crt" --cert "$D/pki/admin.crt" \
    --key "$D/pki/admin.key" "https://127.0.0.1:$1/readyz" 2>/dev/null | grep -qx ok
}

start() {
  stop
  local port
  # The caller normally picks the port and holds it (harness_informer.c: a socket bound with
  # SO_REUSEPORT for its whole run, which --permit-port-sharing lets the API server share),
  # so a restart finds it free. Else one below the ephemeral range, where no outgoing
  # connection can take it between a stop and the next start.
  if [ -f "$S/port" ]; then port=$(cat "$S/port"); else
    while :; do
      port=$((20000 + RANDOM % 12000))
      ss -Hltan "sport = :$port" 2>/dev/null | grep -q . || break
    done
    echo "$port" >"$S/port"
  fi
  local kbin=${DEVCLUSTER_K8S_BIN:-$("$ROOT/tools/k8s-build.sh")}
  setsid "$kbin/kube-apiserver" \
    --etcd-servers "$ETCD_ENDPOINTS" --watch-cache=false \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$port" --insecure-port 0 \
    --tls-cert-file "$D/pki/apiserver.crt" --tls-private-key-file "$D/pki/apiserver.key" \
    --client-ca-file "$D/pki/ca.crt" --authorization-mode RBAC \
    --service-cluster-ip-range 10.96.0.0/16 --endpoint-reconciler-type none \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --api-audiences https://kubernetes.default.svc.cluster.local \
    --service-account-signing-key-file "$D/pki/sa.key" --service-account-key-file "$D/pki/sa.pub" \
    --permit-port-sharing --profiling=false --v 1 </dev/null >>"$S/apiserver.log" 2>&1 &
  echo $! >"$S/pid"
  for _ in $(seq 600); do
    if ready "$port"; then echo "$port"; return 0; fi
    kill -0 "$(cat "$S/pid")" 2>/dev/null || { tail -20 "$S/apiserver.log" >&2; exit 1; }
    sleep 0.2
  done
  tail -20 "$S/apiserver.log" >&2
  stop
  exit 1
}

case $cmd in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop STATE_DIR" >&2; exit 2 ;;
esac
