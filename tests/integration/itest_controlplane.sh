#!/usr/bin/env bash
# Smoke test of the devcluster's control plane itself, with curl and the admin / alice
# certificates only: does each controller we rely on really run? Needs the environment of
# `tools/devcluster env` (tests/run-integration.sh provides it). Prints cmocka-style lines
# so tests/run-integration.sh counts its tests.
set -u
: "${DEVCLUSTER_DIR:?run through tests/run-integration.sh or eval \"\$(tools/devcluster env)\"}"
PKI=$DEVCLUSTER_DIR/pki
NS=itest-cp-$$-$RANDOM
passed=0; failed=0; failed_names=()

# kapi USER METHOD PATH [BODY] — prints "<http code>\n<body>"; USER is admin or alice.
kapi() {
  local user=$1 m=$2 p=$3 args
  args=(-sS --max-time 10 --cacert "$PKI/ca.crt" --cert "$PKI/$user.crt" --key "$PKI/$user.key"
        -X "$m" -w '\n%{http_code}')
  [ $# -lt 4 ] || args+=(-H "Content-Type: ${CT:-application/json}" --data-binary "$4")
  local out; out=$(curl "${args[@]}" "$KUBE_APISERVER$p") || return 1
  printf '%s\n%s\n' "${out##*$'\n'}" "${out%$'\n'*}"
}
code() { kapi "$@" | head -n1; }
body() { kapi "$@" | tail -n +2; }
api() { body admin "$@"; }

# eventually SECONDS CMD... — retries CMD every 0.2 s until it succeeds or time runs out.
eventually() {
  local end=$(( $(date +%s) + $1 )); shift
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt $end ] || return 1
    sleep 0.2
  done
}

run() {  # run NAME FUNCTION
  echo "[ RUN      ] $1"
  if "$2"; then echo "[       OK ] $1"; passed=$((passed + 1))
  else echo "[  FAILED  ] $1"; failed=$((failed + 1)); failed_names+=("$1"); fi
}
expect() {  # expect WHAT GOT WANT
  [ "$2" = "$3" ] && return 0
  echo "  $1: got '$2', want '$3'"; return 1
}

t_ready() {
  expect readyz "$(api GET /readyz)" ok &&
    expect version "$(api GET /version | jq -r .gitVersion)" v1.20.2
}

t_namespace() {
  expect create "$(code admin POST /api/v1/namespaces "{\"metadata\":{\"name\":\"$NS\"}}")" 201 &&
    expect phase "$(api GET "/api/v1/namespaces/$NS" | jq -r .status.phase)" Active
}

sa_has_token() { api GET "/api/v1/namespaces/$NS/serviceaccounts/default" | jq -e '.secrets | length > 0'; }
t_serviceaccount() {
  eventually 30 sa_has_token || { echo "  no default ServiceAccount with a token in $NS"; return 1; }
}

t_configmap() {
  local p=/api/v1/namespaces/$NS/configmaps rv
  expect create "$(code admin POST $p '{"metadata":{"name":"cm1"},"data":{"k":"v1"}}')" 201 || return 1
  rv=$(api GET $p/cm1 | jq -r .metadata.resourceVersion)
  expect update "$(code admin PUT $p/cm1 "{\"metadata\":{\"name\":\"cm1\",\"resourceVersion\":\"$rv\"},\"data\":{\"k\":\"v2\"}}")" 200 &&
    expect stale-update "$(code admin PUT $p/cm1 "{\"metadata\":{\"name\":\"cm1\",\"resourceVersion\":\"$rv\"},\"data\":{\"k\":\"v3\"}}")" 409 &&
    expect value "$(api GET $p/cm1 | jq -r .data.k)" v2 &&
    expect missing "$(code admin GET $p/nope)" 404 &&
    expect duplicate "$(code admin POST $p '{"metadata":{"name":"cm1"}}')" 409
}

t_rbac() {
  local ns=/apis/rbac.authorization.k8s.io/v1/namespaces/$NS
  expect alice-forbidden "$(code alice GET "/api/v1/namespaces/$NS/configmaps/cm1")" 403 || return 1
  expect role "$(code admin POST $ns/roles '{"metadata":{"name":"cm-reader"},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}]}')" 201 &&
    expect binding "$(code admin POST $ns/rolebindings '{"metadata":{"name":"alice-cm-reader"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"cm-reader"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"alice"}]}')" 201 &&
    eventually 10 alice_can_get &&
    expect alice-still-no-list "$(code alice GET "/api/v1/namespaces/$NS/configmaps")" 403
}
alice_can_get() { [ "$(code alice GET "/api/v1/namespaces/$NS/configmaps/cm1")" = 200 ]; }

rs_pods() { api GET "/api/v1/namespaces/$NS/pods?labelSelector=app%3Dsmoke" | jq '.items | length'; }
t_replicaset() {
  local rs='{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"smoke"},
    "spec":{"replicas":2,"selector":{"matchLabels":{"app":"smoke"}},
    "template":{"metadata":{"labels":{"app":"smoke"}},
    "spec":{"terminationGracePeriodSeconds":1,"containers":[{"name":"c","image":"busybox","args":["sleep","3600"]}]}}}}'
  expect create "$(code admin POST "/apis/apps/v1/namespaces/$NS/replicasets" "$rs")" 201 || return 1
  eventually 30 pods_are 2 || { echo "  the ReplicaSet did not get 2 pods (has $(rs_pods))"; return 1; }
  local owner; owner=$(api GET "/api/v1/namespaces/$NS/pods?labelSelector=app%3Dsmoke" | jq -r '.items[0].metadata.ownerReferences[0].kind')
  expect owner "$owner" ReplicaSet
}
pods_are() { [ "$(rs_pods)" = "$1" ]; }

pvc_user_scheduled() { [ -n "$(api GET "/api/v1/namespaces/$NS/pods/pvc-user" | jq -r '.spec.nodeName // empty')" ]; }
pvc_bound() { [ "$(api GET "/api/v1/namespaces/$NS/persistentvolumeclaims/data" | jq -r .status.phase)" = Bound ]; }
t_pvc() {
  expect create "$(code admin POST "/api/v1/namespaces/$NS/persistentvolumeclaims" \
    '{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}')" 201 || return 1
  # The default class binds on first use (WaitForFirstConsumer, as kind/GKE/EKS): no pod, no PV.
  expect binding-mode "$(api GET /apis/storage.k8s.io/v1/storageclasses/standard | jq -r .volumeBindingMode)" \
    WaitForFirstConsumer || return 1
  sleep 1
  expect pending-without-pod "$(api GET "/api/v1/namespaces/$NS/persistentvolumeclaims/data" | jq -r .status.phase)" \
    Pending || return 1
  expect pod "$(code admin POST "/api/v1/namespaces/$NS/pods" '{"metadata":{"name":"pvc-user"},
    "spec":{"terminationGracePeriodSeconds":1,"containers":[{"name":"c","image":"busybox","args":["sleep","3600"],
    "volumeMounts":[{"name":"d","mountPath":"/data"}]}],
    "volumes":[{"name":"d","persistentVolumeClaim":{"claimName":"data"}}]}}')" 201 || return 1
  eventually 30 pvc_bound || { echo "  PVC not Bound: $(api GET "/api/v1/namespaces/$NS/persistentvolumeclaims/data" | jq -c .status)"; return 1; }
  eventually 30 pvc_user_scheduled || { echo "  the PVC's pod was not scheduled"; return 1; }
  local pv sc
  pv=$(api GET "/api/v1/namespaces/$NS/persistentvolumeclaims/data" | jq -r .spec.volumeName)
  sc=$(api GET "/api/v1/namespaces/$NS/persistentvolumeclaims/data" | jq -r .spec.storageClassName)
  expect default-class "$sc" standard &&
    expect pv-bound "$(api GET "/api/v1/persistentvolumes/$pv" | jq -r .status.phase)" Bound
}

t_garbage_collector() {
  expect delete "$(code admin DELETE "/apis/apps/v1/namespaces/$NS/replicasets/smoke" '{"propagationPolicy":"Background"}')" 200 || return 1
  eventually 30 pods_are 0 || { echo "  the ReplicaSet's pods were not collected ($(rs_pods) left)"; return 1; }
}

t_etcd() {
  [ -n "${ETCD_ENDPOINTS:-}" ] || { echo "  ETCD_ENDPOINTS not set"; return 1; }
  if command -v etcdctl >/dev/null; then
    ETCDCTL_API=3 etcdctl --endpoints "$ETCD_ENDPOINTS" endpoint health >/dev/null 2>&1 || { echo "  etcdctl endpoint health failed"; return 1; }
  fi
  curl -sf "$ETCD_ENDPOINTS/health" | grep -q '"health":"true"'
}

ns_gone() { [ "$(code admin GET "/api/v1/namespaces/$NS")" = 404 ]; }
t_namespace_deletion() {
  expect delete "$(code admin DELETE "/api/v1/namespaces/$NS")" 200 || return 1
  eventually 60 ns_gone || { echo "  namespace $NS still there: $(api GET "/api/v1/namespaces/$NS" | jq -c .status)"; return 1; }
}

echo "[==========] Running control-plane smoke tests in namespace $NS"
run ready t_ready
run namespace t_namespace
run serviceaccount t_serviceaccount
run configmap_verbs t_configmap
run rbac_non_admin t_rbac
run replicaset_creates_pods t_replicaset
run pvc_bound_by_default_storageclass t_pvc
run garbage_collector t_garbage_collector
run etcd_endpoint t_etcd
run namespace_deletion t_namespace_deletion
# Leave nothing behind even when a test failed half-way.
[ "$(code admin GET "/api/v1/namespaces/$NS")" = 404 ] || code admin DELETE "/api/v1/namespaces/$NS" >/dev/null
echo "[==========] $((passed + failed)) test(s) run."
echo "[  PASSED  ] $passed test(s)."
if [ $failed -gt 0 ]; then
  echo "[  FAILED  ] $failed test(s), listed below:"
  for n in "${failed_names[@]}"; do echo "[  FAILED  ] $n"; done
  exit 1
fi
