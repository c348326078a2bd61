#!/usr/bin/env bash
# Checks deploy/ against the API server in $KUBECONFIG (the local control plane):
#  - every manifest is accepted by the server (server-side dry run of the whole kustomization),
#    then the namespace, CRDs and RBAC are applied for real (the Deployment is not: no image
#    runs here);
#  - the CRDs' validation rejects replicas 0, 10, -1 and "3", defaults replicas to 3, accepts
#    objects shaped like the original Go controller's (spec.name);
#  - the printer columns show in `kubectl get`;
#  - the ServiceAccount can do exactly what the manager needs and no more (`auth can-i`).
# Prints one line per check and closes with "deploy: N passed, N failed". Objects it creates
# live in a temporary namespace that is deleted at the end; CRDs and RBAC stay installed.
# Needs kubectl; without it the checks are skipped (exit 0, said so).
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pass=0; fail=0
ok()  { pass=$((pass+1)); printf '[ OK ] %s\n' "$*"; }
bad() { fail=$((fail+1)); printf '[FAIL] %s\n' "$*"; }
check() { local what=$1; shift; if "$@" >/tmp/deploy-verify.$$ 2>&1; then ok "$what"; else bad "$what: $(tail -2 /tmp/deploy-verify.$$)"; fi; }
refused() { local what=$1; shift; if "$@" >/tmp/deploy-verify.$$ 2>&1; then bad "$what: was accepted"; else ok "$what"; fi; }

if ! command -v kubectl >/dev/null; then
  echo "deploy: kubectl not installed; skipping the manifest checks"
  echo "deploy: 0 passed, 0 failed, 1 skipped"
  exit 0
fi
: "${KUBECONFIG:?KUBECONFIG must point at the cluster to check}"
NS=deploy-verify-$$

ALL=$(mktemp); kubectl kustomize "$ROOT/deploy" >"$ALL" || { echo "deploy: kustomize failed"; exit 1; }
# CRDs first: the dry run of the rest does not need them, but the CR checks below do.
check "CRDs apply" kubectl apply -f "$ROOT/deploy/crds/"
check "CRDs established" kubectl wait --for condition=established --timeout=30s \
  crd/godisclusters.kumkeehyun.github.com crd/godises.kumkeehyun.github.com
check "namespace and RBAC apply" kubectl apply -f "$ROOT/deploy/namespace.yaml" \
  -f "$ROOT/deploy/rbac/"
check "whole kustomization accepted (server dry run)" kubectl apply --dry-run=server -f "$ALL"
rm -f "$ALL"
kubectl create namespace "$NS" >/dev/null

TMPD=$(mktemp -d)
trap 'kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1; rm -rf "$TMPD" /tmp/deploy-verify.$$' EXIT
gc() {  # gc FILE NAME SPEC-YAML: writes a GodisCluster manifest, prints its path
  printf 'apiVersion: kumkeehyun.github.com/v1\nkind: GodisCluster\nmetadata: {name: %s, namespace: %s}\n%s\n' \
    "$2" "$NS" "$3" >"$TMPD/$1.yaml"
  echo "$TMPD/$1.yaml"
}
i=0
for r in 0 10 -1 '"3"'; do
  i=$((i+1))
  refused "replicas $r rejected" kubectl apply --validate=false -f "$(gc r$i bad "spec: {replicas: $r}")"
done
refused "storage.size 'lots' rejected" kubectl apply --validate=false \
  -f "$(gc size badsize 'spec: {storage: {size: lots}}')"
check "original controller's shape accepted" kubectl apply \
  -f "$(gc orig example-godis 'spec: {name: example-godis}')"
check "replicas defaults to 3" sh -c \
  "[ \"\$(kubectl -n $NS get gc example-godis -o jsonpath='{.spec.replicas}')\" = 3 ]"
check "object without spec accepted (the controller reports it)" kubectl apply -f "$(gc nospec nospec '')"
check "GodisCluster columns" sh -c \
  "kubectl -n $NS get gc example-godis | head -1 | grep -Eq 'NAME +STATUS +REPLICAS +READY +MEMBERS +AGE'"
printf 'apiVersion: kumkeehyun.github.com/v1\nkind: Godis\nmetadata: {name: example-godis-1, namespace: %s}\nspec: {preferred: true}\n' "$NS" >"$TMPD/godis.yaml"
check "Godis object accepted" kubectl apply -f "$TMPD/godis.yaml"
check "Godis columns" sh -c "kubectl -n $NS get gd | head -1 | grep -Eq 'NAME +STATE +PREFERRED +AGE'"

SA=system:serviceaccount:godis-system:godis-operator
can() { [ "$(kubectl auth can-i "$@" --as "$SA" 2>/dev/null)" = yes ]; }
for v in "get godisclusters.kumkeehyun.github.com" "watch godisclusters.kumkeehyun.github.com" \
         "update godisclusters.kumkeehyun.github.com/status" "patch godisclusters.kumkeehyun.github.com/status" \
         "create godises.kumkeehyun.github.com" "delete godises.kumkeehyun.github.com" \
         "update godises.kumkeehyun.github.com/status" "create configmaps" "delete services" \
         "create persistentvolumeclaims" "patch replicasets.apps" "watch pods" "list nodes" \
         "create events" "patch events"; do
  check "SA may $v" can $v -n "$NS"
done
check "SA may update its Lease in godis-system" can update leases.coordination.k8s.io -n godis-system
for v in "create godisclusters.kumkeehyun.github.com" "delete godisclusters.kumkeehyun.github.com" \
         "get secrets" "list secrets" "delete pods" "create pods" "update nodes" "patch nodes" \
         "create deployments.apps" "create pods/eviction" "delete namespaces" "create clusterrolebindings.rbac.authorization.k8s.io" \
         "escalate clusterroles.rbac.authorization.k8s.io" "impersonate users"; do
  refused "SA may not $v" can $v -n "$NS"
done
refused "SA may not touch Leases outside godis-system" can update leases.coordination.k8s.io -n "$NS"
refused "no wildcard verbs or resources in the manager ClusterRole" sh -c \
  "kubectl get clusterrole godis-operator-manager -o jsonpath='{.rules[*].verbs}{.rules[*].resources}{.rules[*].apiGroups}' | grep -q '\\*'"

# cmocka-style counts (tests/run-integration.sh sums them), then the plain closing line.
echo "[  PASSED  ] $pass test(s)."
[ "$fail" -eq 0 ] || echo "[  FAILED  ] $fail test(s)."
echo "deploy: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
