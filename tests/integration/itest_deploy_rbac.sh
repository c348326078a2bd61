#!/usr/bin/env bash
# deploy/base/rbac is enough, and no more, for the manager — proven on the local control plane:
#  1. the namespace, ServiceAccount and (Cluster)Roles + bindings from deploy/ are applied;
#     the ServiceAccount's token (its token Secret: Kubernetes 1.20) goes into a kubeconfig
#     with the devcluster's CA and nothing else;
#  2. with that token, requests the roles do not grant are refused with 403 (Secrets, Node
#     deletion, PV deletion, ClusterRole creation, GodisCluster creation, Pods, Leases elsewhere,
#     impersonation), and a granted one (list GodisClusters) is allowed;
#  3. bin/godis-manager runs OUTSIDE the cluster with that kubeconfig (leader election on a
#     Lease in the ServiceAccount's namespace, loopback ports, private runtime dir; a second
#     one as standby, which takes over half way, as the Deployment's 2 replicas do) and, while
#     the admin creates a GodisCluster (3 replicas), scales it to 4, deletes a member's PVC,
#     scales back to 3 and deletes the cluster, brings it to Running with 3, then 4 Ready
#     members (again after the PVC: that member is replaced and stopped), then 3, and lets
#     its Godis objects go; its log shows no request refused for lack of a permission; it
#     wrote Events.
# The node agent of tools/devcluster runs the pods (godis stand-ins). No kubectl: bin/godisctl
# and curl (deploy/verify-lib.sh). Prints one line per check, cmocka-style counts and
# "deploy-rbac: N passed, N failed". Cleans up: the managers (by pid, their process groups),
# the test namespace, and godis-system, RBAC and CRDs when they were not there before.
# DEPLOY_RBAC_TIMEOUT: seconds to wait for each phase (default 180); DEPLOY_RBAC_LOG=FILE keeps
# a copy of the manager's log.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../../deploy/verify-lib.sh"
DV_NAME=deploy-rbac
dv_init
cd "$DV_ROOT" || exit 1
dv_need_manager
WAIT=${DEPLOY_RBAC_TIMEOUT:-180}
NS=deploy-rbac-$$
GC=example-godis
declare -A MGR_PID=() MGR_HP=()   # by manager id (a: first leader, b: standby)
t_start=$(date +%s)
since() { echo "$(( $(date +%s) - $1 )) s"; }

dv_save_install_state
stop_manager() {  # stop_manager ID
  stop_group "${MGR_PID[$1]:-}"
  MGR_PID[$1]=""
}
cleanup() {
  delete_ns "$NS"               # while a manager runs: it drops its Godis finalizers
  wait_ns_gone "$NS" 90 || echo "deploy-rbac: namespace $NS still Terminating"
  stop_manager a; stop_manager b
  dv_restore_install_state
  [ -z "${DEPLOY_RBAC_LOG:-}" ] || cat "$DV_TMP"/manager-*.log >"$DEPLOY_RBAC_LOG" 2>/dev/null
  rm -rf "$DV_TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------------ 1. RBAC and the token
check "CRDs apply" "$CTL" apply -f deploy/base/crds/godisclusters.yaml -f deploy/base/crds/godises.yaml
wait_ns_gone "$SA_NS" 90 >/dev/null || true   # a Terminating one from an earlier run
check "namespace, ServiceAccount, Roles and bindings apply" "$CTL" apply -f deploy/base/namespace.yaml \
  -f deploy/base/rbac/service_account.yaml -f deploy/base/rbac/leader_election_role.yaml -f deploy/base/rbac/manager_role.yaml

TOKEN=$(sa_token) || true
[ -n "$TOKEN" ] || die "no token Secret for ServiceAccount $SA_NS/$SA_NAME after 30 s (is the serviceaccount-token controller running?)"
ok "ServiceAccount token read from its token Secret"
SAKC="$DV_TMP/sa.kubeconfig"
( umask 077; cat >"$SAKC" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: devcluster
  cluster:
    server: $SERVER
    certificate-authority: $PKI/ca.crt
users:
- name: $SA_NAME
  user:
    token: $TOKEN
contexts:
- name: $SA_NAME
  context: {cluster: devcluster, user: $SA_NAME, namespace: $SA_NS}
current-context: $SA_NAME
EOF
)
check "test namespace $NS created (admin)" create_ns "$NS"

# ------------------------------------------------------------------ 2. not too wide
G=/apis/kumkeehyun.github.com/v1
check "SA token works: list GodisClusters in all namespaces (200)" expect_code 200 -t "$TOKEN" GET "$G/godisclusters"
check "SA token works: list Godises in the test namespace (200)" expect_code 200 -t "$TOKEN" GET "$G/namespaces/$NS/godises"
check "SA token works: list PersistentVolumes (200: the informer's)" expect_code 200 -t "$TOKEN" GET /api/v1/persistentvolumes
# Writes are dry runs (dryRun=All): authorization comes first, so a 403 is the proof; were a
# request wrongly allowed, the server would still change nothing.
DRY='?dryRun=All'
refused_403() { local what=$1; shift; check "SA refused: $what (403)" expect_code 403 -t "$TOKEN" "$@"; }
refused_403 "list Secrets in all namespaces" GET /api/v1/secrets
refused_403 "list Secrets in its own namespace" GET "/api/v1/namespaces/$SA_NS/secrets"
refused_403 "delete a Node" DELETE "/api/v1/nodes/node-1$DRY"
refused_403 "patch a Node" PATCH "/api/v1/nodes/node-1$DRY" '{}'
refused_403 "delete a PersistentVolume" DELETE "/api/v1/persistentvolumes/any$DRY"
refused_403 "create a ClusterRole" POST "/apis/rbac.authorization.k8s.io/v1/clusterroles$DRY" \
  '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"godis-itest-escalate"},"rules":[]}'
refused_403 "create a ClusterRoleBinding" POST "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings$DRY" \
  '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"godis-itest-escalate"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},"subjects":[{"kind":"ServiceAccount","name":"godis-operator","namespace":"godis-system"}]}'
refused_403 "create a GodisCluster (people do that, not the operator)" POST "$G/namespaces/$NS/godisclusters$DRY" \
  '{"apiVersion":"kumkeehyun.github.com/v1","kind":"GodisCluster","metadata":{"name":"x"}}'
refused_403 "create a Pod" POST "/api/v1/namespaces/$NS/pods$DRY" \
  '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[{"name":"x","image":"x"}]}}'
refused_403 "create a Lease outside $SA_NS" POST "/apis/coordination.k8s.io/v1/namespaces/$NS/leases$DRY" \
  '{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"x"}}'
refused_403 "delete a Namespace" DELETE "/api/v1/namespaces/$NS$DRY"
refused_403 "create a Deployment" POST "/apis/apps/v1/namespaces/$NS/deployments$DRY" '{}'
# Impersonation needs the header, which api() does not send: one curl of its own.
imp=$(curl -sS --max-time 20 --cacert "$PKI/ca.crt" -H "Authorization: Bearer $TOKEN" -H "Impersonate-User: admin" \
  -o /dev/null -w '%{http_code}' "$SERVER/api/v1/namespaces")
[ "$imp" = 403 ] && ok "SA refused: impersonate admin (403)" || bad "SA refused: impersonate admin: HTTP $imp"

# ------------------------------------------------------------------ 3. the manager, its own token
start_manager() {  # start_manager ID: a manager with the SA's kubeconfig, identity itest-ID
  local id=$1 hp mp
  hp=$(free_port) && mp=$(free_port) || return 1
  mkdir -m 700 "$DV_TMP/run-$id"
  setsid bin/godis-manager --kubeconfig "$SAKC" --leader-elect --leader-elect-identity "itest-$id" \
    --leader-elect-resource-namespace "$SA_NS" --leader-elect-resource-name godis-operator-leader \
    --workers 2 --health-probe-bind-address "127.0.0.1:$hp" --metrics-bind-address "127.0.0.1:$mp" \
    --runtime-dir "$DV_TMP/run-$id" --log-level info </dev/null >"$DV_TMP/manager-$id.log" 2>&1 &
  MGR_PID[$id]=$!; MGR_HP[$id]=$hp
  echo "manager $id: pid $!, health 127.0.0.1:$hp, log $DV_TMP/manager-$id.log"
}
http_ok() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${MGR_HP[$1]}/$2")" = 200 ]; }
holder_is() {
  "$CTL" -n "$SA_NS" get lease godis-operator-leader 2>/dev/null | jlines /dev/stdin |
    grep -q "^\"holderIdentity\": \"$1\""
}
LIVE=a   # wait_for gives up early when this manager died
wait_for() {  # wait_for SECONDS CMD...
  local end=$(( $(date +%s) + $1 )); shift
  until "$@"; do
    [ "$(date +%s)" -lt "$end" ] || return 1
    kill -0 "${MGR_PID[$LIVE]}" 2>/dev/null || { echo "manager $LIVE exited"; return 1; }
    sleep 0.5
  done
}
t0=$(date +%s)
start_manager a
check "manager a (SA token) holds the Lease in $SA_NS" wait_for 60 holder_is itest-a
check "manager a /readyz 200 ($(since "$t0") after start)" wait_for 60 http_ok a readyz
start_manager b
check "manager b (standby) /healthz 200" wait_for 60 http_ok b healthz
check "the Lease stays with a" holder_is itest-a

t0=$(date +%s)
check "admin creates GodisCluster $GC (replicas 3)" "$CTL" -n "$NS" apply -f deploy/samples/godiscluster.yaml
if "$CTL" -n "$NS" follow "$GC" 3 "$WAIT" >"$DV_TMP/follow3" 2>&1; then
  ok "Running with 3 Ready members in $(since "$t0")"
else
  bad "Running with 3 Ready members: $(tail -3 "$DV_TMP/follow3" | tr '\n' ' ')"
fi
t0=$(date +%s)
check "admin scales $GC to 4" "$CTL" -n "$NS" scale "$GC" 4
if "$CTL" -n "$NS" follow "$GC" 4 "$WAIT" >"$DV_TMP/follow4" 2>&1; then
  ok "Running with 4 Ready members in $(since "$t0")"
else
  bad "Running with 4 Ready members: $(tail -3 "$DV_TMP/follow4" | tr '\n' ' ')"
fi
# A member's deleted PVC (held by pvc-protection while its pod runs) makes it a lost member:
# a new member is added, then the lost one is forgotten and stopped (its ReplicaSet scaled to
# 0, its pod deleted), and its claim goes for good — never recreated under the old id.
PVC=/api/v1/namespaces/$NS/persistentvolumeclaims/data-$GC-4
pvc_gone() { expect_code 404 GET "$PVC" >/dev/null; }
t0=$(date +%s)
check "admin deletes PVC data-$GC-4 (in use by its pod)" expect_code 200 DELETE "$PVC"
if wait_for "$WAIT" pvc_gone; then ok "member 4 replaced, stopped, its PVC gone in $(since "$t0")"; else bad "PVC data-$GC-4 still there"; fi
if "$CTL" -n "$NS" follow "$GC" 4 "$WAIT" >"$DV_TMP/follow4b" 2>&1; then
  ok "Running with 4 Ready members again $(since "$t0") after the PVC deletion"
else
  bad "Running with 4 Ready members after the PVC deletion: $(tail -3 "$DV_TMP/follow4b" | tr '\n' ' ')"
fi
t0=$(date +%s)
stop_manager a
LIVE=b
check "standby b takes the Lease once a stops" wait_for 60 holder_is itest-b
check "manager b /readyz 200 ($(since "$t0") after a stopped)" wait_for 60 http_ok b readyz
t0=$(date +%s)
check "admin scales $GC back to 3" "$CTL" -n "$NS" scale "$GC" 3
if "$CTL" -n "$NS" follow "$GC" 3 "$WAIT" >"$DV_TMP/follow3b" 2>&1; then
  ok "Running with 3 Ready members in $(since "$t0") (scale-in)"
else
  bad "Running with 3 Ready members after scale-in: $(tail -3 "$DV_TMP/follow3b" | tr '\n' ' ')"
fi
godises() { "$CTL" -n "$NS" get godis 2>/dev/null | jlines /dev/stdin | grep -c "^\"name\": \"$GC-[0-9]*\""; }
test_godises() { [ "$(godises)" = "$1" ]; }
check "3 Godis objects left after the scale-in" wait_for 60 test_godises 3
check "the manager wrote Events about $GC" sh -c "'$CTL' -n '$NS' events '$GC' | grep -q 'GodisCluster/$GC'"
t0=$(date +%s)
check "admin deletes $GC" "$CTL" -n "$NS" delete -f deploy/samples/godiscluster.yaml
gone() { [ "$(godises)" = 0 ] && ! "$CTL" -n "$NS" get godiscluster "$GC" >/dev/null 2>&1; }
if wait_for "$WAIT" gone; then ok "$GC and its Godis objects gone in $(since "$t0")"; else bad "$GC or Godis objects still there: $(godises) Godis"; fi
check "manager b still running" kill -0 "${MGR_PID[b]}"
# A missing permission shows as a refused request (403, "forbidden") in a manager's log.
for id in a b; do
  refused "manager $id log has no 403 / forbidden" grep -Eiw '403|forbidden' "$DV_TMP/manager-$id.log"
done
if [ "$fail" -gt 0 ]; then
  for id in a b; do
    echo "--- manager $id log: refusals, then the last 10 lines"
    grep -Eiw '403|forbidden' "$DV_TMP/manager-$id.log" | head -5; tail -10 "$DV_TMP/manager-$id.log"
  done
fi
stop_manager b
echo "deploy-rbac: total $(since "$t_start")"
dv_summary deploy-rbac
[ "$fail" -eq 0 ]
