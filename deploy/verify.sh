#!/usr/bin/env bash
# Checks deploy/ against the API server of the local control plane (tools/devcluster env):
#  - kustomization.yaml lists every manifest (and only existing ones); no RBAC rule has a
#    wildcard; nothing binds cluster-admin;
#  - every manifest of the kustomization applies (bin/godisctl apply, in kustomization order);
#    the Deployment, its Service and the PDB are deleted again right after (their image does
#    not run here);
#  - the CRDs' validation rejects replicas 0, 10, -1 and "3" and a bad storage size, defaults
#    replicas to 3, accepts objects shaped like the original Go controller's (spec.name);
#  - the printer columns kubectl shows: the API server's Table for `kubectl get` (the same
#    request kubectl makes) has exactly NAME STATUS REPLICAS READY MEMBERS AGE for
#    GodisClusters and NAME STATE PREFERRED AGE for Godises;
#  - the ServiceAccount may do exactly what the manager needs and no more
#    (SubjectAccessReviews: what `kubectl auth can-i --as` asks);
#  - the remote-workers overlay: what `kubectl apply -k deploy/overlays/remote-workers
#    --dry-run=server` would send passes the API server's validation (its manifests, and the
#    manager Deployment with its JSON patch, applied with dryRun=All), the worker's and the
#    patched manager's args parse, and the godis-worker ServiceAccount may read the leader
#    Lease and do the manager's work, nothing more on Leases.
# No kubectl needed: bin/godisctl and curl (deploy/verify-lib.sh). Prints one line per check,
# cmocka-style counts and "deploy: N passed, N failed". Cleans up: its temporary namespace,
# and the namespace, RBAC and CRDs when they were not installed before it ran.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/verify-lib.sh"
DV_NAME=deploy
dv_init
cd "$DV_ROOT" || exit 1
NS=deploy-verify-$$

# ------------------------------------------------------------------ static checks
resources=$(sed -n '/^resources:/,/^[a-z]/s/^  - *//p' deploy/kustomization.yaml)
files=$(cd deploy && find . -name '*.yaml' ! -name kustomization.yaml ! -path './samples/*' ! -path './overlays/*' | sed 's|^\./||' | sort)
check "kustomization lists every manifest under deploy/ (samples aside)" \
  diff <(echo "$resources" | sort) <(echo "$files")
# A rule line with "*" (comments stripped) would be a wildcard verb, resource or group.
refused "no wildcard in any RBAC rule" grep -n '^[^#]*\*' deploy/rbac/*.yaml
refused "nothing binds cluster-admin" grep -rn --include='*.yaml' '^[^#]*cluster-admin' deploy/
# PodDisruptionBudgets ship as policy/v1 (Kubernetes 1.25+ serves nothing else); the 1.20
# overlay rewrites exactly that apiVersion to policy/v1beta1 and takes everything else as is.
OVERLAY=deploy/overlays/k8s-1.20/kustomization.yaml
check "the PodDisruptionBudget ships as policy/v1" grep -qx 'apiVersion: policy/v1' deploy/manager/pdb.yaml
refused "no manifest uses policy/v1beta1" grep -rln --include='*.yaml' --exclude-dir=overlays '^apiVersion: policy/v1beta1' deploy/
overlay_ok() {
  grep -qx '  - \.\./\.\.' "$OVERLAY" && grep -q 'group: policy' "$OVERLAY" &&
    grep -q 'version: v1$' "$OVERLAY" && grep -q 'kind: PodDisruptionBudget' "$OVERLAY" &&
    grep -q 'path: /apiVersion' "$OVERLAY" && [ "$(overlay_pdb_api)" = policy/v1beta1 ]
}
overlay_pdb_api() { sed -n 's/^ *value: *//p' "$OVERLAY"; }
check "the k8s-1.20 overlay is deploy/ with the PDB patched to policy/v1beta1" overlay_ok

# ------------------------------------------------------------------ apply everything
had_ns=0; ns_exists godis-system && had_ns=1
had_crds=0; crds_exist && had_crds=1
had_rbac=0; [ "$(api GET /apis/rbac.authorization.k8s.io/v1/clusterroles/godis-operator-manager)" = 200 ] && had_rbac=1
RW=deploy/overlays/remote-workers
had_rw_rbac=0; [ "$(api GET /apis/rbac.authorization.k8s.io/v1/clusterrolebindings/godis-operator-worker)" = 200 ] && had_rw_rbac=1
cleanup() {
  delete_ns "$NS"
  "$CTL" delete -f deploy/manager/deployment.yaml -f deploy/manager/metrics_service.yaml \
    -f deploy/manager/webhook_service.yaml -f deploy/manager/pdb.yaml >/dev/null 2>&1
  [ $had_rw_rbac = 1 ] || "$CTL" delete -f "$RW/worker_rbac.yaml" >/dev/null 2>&1
  [ $had_rbac = 1 ] || "$CTL" delete $(printf -- '-f %s ' deploy/rbac/*.yaml) >/dev/null 2>&1
  [ $had_ns = 1 ] || { delete_ns godis-system; wait_ns_gone godis-system 90 || echo "deploy: godis-system still Terminating"; }
  wait_ns_gone "$NS" 90 || echo "deploy: $NS still Terminating"
  [ $had_crds = 1 ] || delete_crds
  rm -rf "$DV_TMP"
}
trap cleanup EXIT

# The shipped manifests where the API server serves policy/v1; on 1.20 (this machine's local
# control plane) the PDB as deploy/overlays/k8s-1.20 makes it.
pdb_served_as=policy/v1
[ "$(api GET /apis/policy/v1)" = 200 ] || pdb_served_as=$(overlay_pdb_api)
sed "s|^apiVersion: policy/v1\$|apiVersion: $pdb_served_as|" deploy/manager/pdb.yaml >"$DV_TMP/pdb.yaml"
for r in $resources; do
  f=deploy/$r as=""
  [ "$r" != manager/pdb.yaml ] || { f=$DV_TMP/pdb.yaml; as=" (as $pdb_served_as)"; }
  check "$r applies$as" "$CTL" apply -f "$f"   # CRDs: godisctl waits for Established
done
check "the PDB is stored as $pdb_served_as" expect_code 200 GET "/apis/$pdb_served_as/namespaces/godis-system/poddisruptionbudgets/godis-operator"
check "Deployment godis-system/godis-operator stored with 2 replicas" \
  sh -c "'$CTL' -n godis-system get deployment godis-operator | grep -qP '^\\t\\t\"replicas\":\\t2,'"
"$CTL" delete -f deploy/manager/deployment.yaml -f deploy/manager/metrics_service.yaml \
  -f deploy/manager/webhook_service.yaml -f deploy/manager/pdb.yaml >/dev/null 2>&1
# The Deployment's container args, as bin/godis-manager parses them: every flag known and
# valid. The kubeconfig is one that does not exist, so the manager stops right after parsing
# (exit 2, "cannot read kubeconfig") and never binds; the binds are moved to loopback anyway.
deployment_args_parse() {
  local a args=()
  while IFS= read -r a; do
    a=${a//\$(POD_NAMESPACE)/godis-system}; a=${a//\$(POD_NAME)/verify}
    a=${a//0.0.0.0/127.0.0.1}; a=${a//\/run\/godis-operator/$DV_TMP/run}
    args+=("$a")
  done < <(sed -n '/^ *args:/,/^ *[a-z]*:$/s/^ *- *//p' deploy/manager/deployment.yaml)
  [ ${#args[@]} -gt 3 ] || { echo "no args found in deployment.yaml"; return 1; }
  echo "args: ${args[*]}"
  timeout 20 bin/godis-manager "${args[@]}" --kubeconfig "$DV_TMP/no-such-kubeconfig"
  local rc=$?
  [ $rc = 2 ] && grep -q 'cannot read kubeconfig' "$DV_TMP/out"
}
check "bin/godis-manager accepts the Deployment's args" deployment_args_parse
check "the Deployment runs the image's entrypoint (/usr/local/bin/godis-manager)" \
  grep -q 'command: \["/usr/local/bin/godis-manager"\]' deploy/manager/deployment.yaml
check "temporary namespace $NS created" create_ns "$NS"

# ------------------------------------------------------------------ CRD validation
GCS=/apis/kumkeehyun.github.com/v1/namespaces/$NS/godisclusters
gc() {  # gc NAME SPEC-JSON: a GodisCluster body
  printf '{"apiVersion":"kumkeehyun.github.com/v1","kind":"GodisCluster","metadata":{"name":"%s"}%s}' \
    "$1" "${2:+,\"spec\":$2}"
}
for r in 0 10 -1 '"3"'; do
  check "replicas $r rejected (422)" expect_code 422 POST "$GCS" "$(gc bad "{\"replicas\":$r}")"
done
check "replicas 1 accepted" expect_code 201 POST "$GCS" "$(gc one '{"replicas":1}')"
check "replicas 9 accepted" expect_code 201 POST "$GCS" "$(gc nine '{"replicas":9}')"
check "storage.size 'lots' rejected (422)" expect_code 422 POST "$GCS" "$(gc badsize '{"storage":{"size":"lots"}}')"
check "original controller's shape (spec.name) accepted" \
  expect_code 201 POST "$GCS" "$(gc example-godis '{"name":"example-godis"}')"
replicas_of() {  # replicas_of NAME: spec.replicas of a GodisCluster as stored
  expect_code 200 GET "$GCS/$1" >/dev/null && jlines | sed -n '/^"spec"/,/}/s/^"replicas": \([0-9-]*\).*/\1/p'
}
check "replicas defaults to 3" test "$(replicas_of example-godis)" = 3
check "object without spec accepted (the controller reports it)" expect_code 201 POST "$GCS" "$(gc nospec '')"
check "Godis object accepted" expect_code 201 POST "/apis/kumkeehyun.github.com/v1/namespaces/$NS/godises" \
  '{"apiVersion":"kumkeehyun.github.com/v1","kind":"Godis","metadata":{"name":"example-godis-1"},"spec":{"preferred":true}}'

# ------------------------------------------------------------------ printer columns
TABLE='application/json;as=Table;v=v1;g=meta.k8s.io'
cols_are() {  # cols_are PATH "Name Col ...": the default columns of `kubectl get` on PATH
  expect_code 200 -a "$TABLE" GET "$1" || return 1
  local got; got=$(table_columns)
  [ "$got" = "$2" ] || { echo "columns: $got"; return 1; }
}
check "GodisCluster columns: NAME STATUS REPLICAS READY UPDATED ROLLING MEMBERS AGE" \
  cols_are "$GCS/example-godis" "Name Status Replicas Ready Updated Rolling Members Age"
check "GodisCluster list (kubectl get gc) has the same columns" \
  cols_are "$GCS" "Name Status Replicas Ready Updated Rolling Members Age"
check "Godis columns: NAME STATE PREFERRED AGE" \
  cols_are "/apis/kumkeehyun.github.com/v1/namespaces/$NS/godises" "Name State Preferred Age"
check "short names gc, gdc and gd registered" sh -c \
  "'$CTL' get crd godisclusters.kumkeehyun.github.com | tr -d ' \t\n' | grep -q '\"shortNames\":\\[\"gc\",\"gdc\"\\]' &&
   '$CTL' get crd godises.kumkeehyun.github.com | tr -d ' \t\n' | grep -q '\"shortNames\":\\[\"gd\"\\]'"

# ------------------------------------------------------------------ what the SA may do
# can NS VERB [GROUP/]RESOURCE[/SUBRESOURCE]: a SubjectAccessReview for the ServiceAccount.
can() {
  local ns=$1 verb=$2 res=$3 group="" sub=""
  [[ "$res" != */* ]] || { sub=${res#*/}; res=${res%%/*}; }
  [[ "$res" != *.* ]] || { group=${res#*.}; res=${res%%.*}; }
  local body
  body=$(printf '{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"%s","groups":["system:serviceaccounts","system:serviceaccounts:%s","system:authenticated"],"resourceAttributes":{"namespace":"%s","verb":"%s","group":"%s","resource":"%s","subresource":"%s"}}}' \
    "$SA_USER" "$SA_NS" "$ns" "$verb" "$group" "$res" "$sub")
  [ "$(api POST /apis/authorization.k8s.io/v1/subjectaccessreviews "$body")" = 201 ] || return 2
  grep -q '"allowed": *true' "$DV_TMP/body"
}
# can_named NS VERB NAME: the same for one Lease by name (Role rules with resourceNames).
can_named() {
  local body
  body=$(printf '{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"%s","groups":["system:serviceaccounts","system:serviceaccounts:%s","system:authenticated"],"resourceAttributes":{"namespace":"%s","verb":"%s","group":"coordination.k8s.io","resource":"leases","name":"%s"}}}' \
    "$SA_USER" "$SA_NS" "$1" "$2" "$3")
  [ "$(api POST /apis/authorization.k8s.io/v1/subjectaccessreviews "$body")" = 201 ] || return 2
  grep -q '"allowed": *true' "$DV_TMP/body"
}
# cannot ...: the review answered, and answered no (a failed review is no proof).
cannot() { can "$@"; [ $? = 1 ]; }
G=kumkeehyun.github.com
# Exactly the verbs the code issues (see the comments in deploy/rbac/manager_role.yaml).
for v in "get godisclusters.$G" "list godisclusters.$G" "watch godisclusters.$G" \
         "update godisclusters.$G/status" "create godises.$G" "delete godises.$G" \
         "watch godises.$G" "update godises.$G/status" "update godisclusters.$G/finalizers" \
         "update godises.$G" "update godisclusters.$G" \
         "create configmaps" "update configmaps" "create services" "update services" \
         "create persistentvolumeclaims" "update persistentvolumeclaims" "create replicasets.apps" \
         "update replicasets.apps" "watch pods" "delete pods" "list nodes" "watch nodes" "create events" \
         "create poddisruptionbudgets.policy" "get pods" "patch pods" \
         "create validatingwebhookconfigurations.admissionregistration.k8s.io"; do
  check "SA may $v" can "$NS" $v
done
check "SA may create Leases in godis-system" can godis-system create leases.coordination.k8s.io
lease_lock() { local v; for v in get update watch; do can_named godis-system $v godis-operator-leader || return 1; done; }
check "SA may get, update, watch Lease godis-operator-leader" lease_lock
for v in "create godisclusters.$G" "patch godisclusters.$G" "delete godisclusters.$G" \
         "patch godisclusters.$G/status" "patch godises.$G" \
         "delete configmaps" "delete services" "delete persistentvolumeclaims" "delete replicasets.apps" \
         "patch events" "get secrets" "list secrets" "create pods" "update pods" "create pods/exec" \
         "create pods/eviction" "update nodes" "patch nodes" "delete nodes" "create deployments.apps" \
         "delete namespaces" "create clusterrolebindings.rbac.authorization.k8s.io" \
         "escalate clusterroles.rbac.authorization.k8s.io" "bind clusterroles.rbac.authorization.k8s.io" \
         "impersonate users" "create serviceaccounts/token" "delete poddisruptionbudgets.policy" \
         "delete validatingwebhookconfigurations.admissionregistration.k8s.io" \
         "update validatingwebhookconfigurations.admissionregistration.k8s.io" \
         "create mutatingwebhookconfigurations.admissionregistration.k8s.io"; do
  check "SA may not $v" cannot "$NS" $v
done
check "SA may not touch Leases outside godis-system" cannot "$NS" create leases.coordination.k8s.io
other_leases() { cannot godis-system list leases.coordination.k8s.io && { can_named godis-system update other-lease; [ $? = 1 ]; }; }
check "SA may not list Leases, nor update another Lease" other_leases
check "manager ClusterRole as stored has no wildcard" sh -c \
  "'$CTL' get clusterrole godis-operator-manager >'$DV_TMP/cr' && grep -q '\"rules\"' '$DV_TMP/cr' && ! grep -q '\"\\*\"' '$DV_TMP/cr'"

# ------------------------------------------------------------------ the remote-workers overlay
# No kustomize here builds it (Debian's kubectl 1.20 has kustomize 2.0, which knows neither
# `labels` nor `patches`), so its three parts are checked as kustomize composes them: the
# overlay's manifests, and deploy/manager/deployment.yaml with the overlay's JSON patch
# applied by Debian's kubectl (patch --local: no server involved). The API server validates
# each (server-side apply with dryRun=All): nothing is created.
rw_listed() {
  diff <(sed -n '/^resources:/,/^[a-z]/s/^  - *//p' "$RW/kustomization.yaml" | sort) \
       <({ echo ../..; cd "$RW" && ls -- *.yaml | grep -vx kustomization.yaml; } | sort)
}
check "remote-workers overlay: deploy/ plus every manifest beside its kustomization" rw_listed
refused "remote-workers overlay: no wildcard in its RBAC" grep -n '^[^#]*\*' "$RW/worker_rbac.yaml"
rw_patch_manager() {
  sed -n '/^    patch: |-$/,/^[^ #]/{/^    patch: |-$/d;/^[^ #]/d;s/^      //;p}' "$RW/kustomization.yaml" >"$DV_TMP/rw-ops.yaml"
  "$DV_ROOT/tools/kubectl-debian" patch --local -f deploy/manager/deployment.yaml --type json \
    -p "$(cat "$DV_TMP/rw-ops.yaml")" -o json >"$DV_TMP/rw-manager.json" &&
    grep -q '"--remote-port-base=7420"' "$DV_TMP/rw-manager.json" &&
    grep -q '"secretName": "godis-curve-server"' "$DV_TMP/rw-manager.json" &&
    grep -q '"secretName": "godis-curve-allow"' "$DV_TMP/rw-manager.json"
}
check "the overlay's JSON patch applies to the manager Deployment (tcp:// port, CURVE Secrets)" rw_patch_manager
# dry_run FILE: every document of FILE server-side applied with dryRun=All (what `kubectl
# apply --server-side --dry-run=server` sends; 200 or 201 each, whether or not it exists)
dry_run() {
  local f=$1 i=0 doc kind name path code
  rm -f "$DV_TMP"/rw-doc-*
  awk -v d="$DV_TMP/rw-doc" '/^---/ {n++; next} {print > (d "-" n+0)}' "$f"
  for doc in "$DV_TMP"/rw-doc-*; do
    kind=$(sed -n 's/^kind: *//p; s/^ *"kind": *"\([A-Za-z]*\)".*/\1/p' "$doc" | head -n1)
    name=$(sed -n 's/^  name: *//p; s/^ *"name": *"\([^"]*\)".*/\1/p' "$doc" | head -n1)
    case $kind in
      ServiceAccount) path=/api/v1/namespaces/godis-system/serviceaccounts ;;
      ClusterRoleBinding) path=/apis/rbac.authorization.k8s.io/v1/clusterrolebindings ;;
      Role|RoleBinding) path=/apis/rbac.authorization.k8s.io/v1/namespaces/godis-system/${kind,,}s ;;
      Deployment) path=/apis/apps/v1/namespaces/godis-system/deployments ;;
      *) echo "$f: kind '$kind' not expected"; return 1 ;;
    esac
    code=$(curl -sS --max-time 20 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
      -H "Content-Type: application/apply-patch+yaml" --data-binary "@$doc" -o "$DV_TMP/body" \
      -w '%{http_code}' -X PATCH "$SERVER$path/$name?dryRun=All&fieldManager=deploy-verify")
    case $code in 200|201) ;; *) echo "$kind $name: HTTP $code: $(grep -m1 '"message"' "$DV_TMP/body")"; return 1 ;; esac
    rm -f "$doc"; i=$((i + 1))
  done
  echo "$i objects"
}
check "the overlay's worker_rbac.yaml validates (dryRun=All)" dry_run "$RW/worker_rbac.yaml"
check "the overlay's worker_deployment.yaml validates (dryRun=All)" dry_run "$RW/worker_deployment.yaml"
check "the patched manager Deployment validates (dryRun=All)" dry_run "$DV_TMP/rw-manager.json"
# The args, with what the kubelet substitutes, key files made here, binds on loopback and a
# kubeconfig that does not exist: both programs parse everything, load the keys and stop on
# the kubeconfig (exit 2).
rw_keys() { mkdir -p "$DV_TMP/keys" && "$DV_ROOT/bin/godis-manager" keygen --out "$DV_TMP/keys" --name "$1" >/dev/null; }
rw_args_parse() {  # rw_args_parse PROGRAM ARGS-FILE
  local a args=() port; port=$(free_port) || return 1
  while IFS= read -r a; do
    a=${a//\$(POD_NAMESPACE)/godis-system}; a=${a//\$(POD_NAME)/verify}; a=${a//\$(POD_IP)/127.0.0.1}
    a=${a//0.0.0.0/127.0.0.1}; a=${a//\/run\/godis-operator/$DV_TMP/run}; a=${a//=7420/=$port}
    a=${a//\/etc\/godis-curve\/worker/$DV_TMP/keys}; a=${a//\/etc\/godis-curve\/server/$DV_TMP/keys}
    a=${a//\/etc\/godis-curve\/allow\/allow/$DV_TMP/keys/worker.pub}
    args+=("$a")
  done <"$2"
  [ ${#args[@]} -gt 3 ] || { echo "no args found"; return 1; }
  echo "args: ${args[*]}"
  timeout 20 "$DV_ROOT/bin/$1" "${args[@]}" --kubeconfig "$DV_TMP/no-such-kubeconfig"
  local rc=$?
  [ $rc = 2 ] && grep -q 'cannot read kubeconfig' "$DV_TMP/out"
}
rw_keys server && rw_keys worker
sed -n '/^ *args:/,/^ *[a-z]*:$/s/^ *- *//p' "$RW/worker_deployment.yaml" >"$DV_TMP/rw-worker.args"
sed -n '/"args": \[/,/\]/s/^ *"\(--[^"]*\)",\{0,1\}$/\1/p' "$DV_TMP/rw-manager.json" >"$DV_TMP/rw-manager.args"
check "bin/godis-worker accepts the worker Deployment's args" rw_args_parse godis-worker "$DV_TMP/rw-worker.args"
check "bin/godis-manager accepts the patched manager Deployment's args" rw_args_parse godis-manager "$DV_TMP/rw-manager.args"
# What the workers' ServiceAccount may do, with the overlay's RBAC applied for real.
check "the overlay's worker_rbac.yaml applies" "$CTL" apply -f "$RW/worker_rbac.yaml"
WSA=system:serviceaccount:godis-system:godis-worker
rw_lease() { SA_USER=$WSA can_named godis-system get godis-operator-leader; }
rw_no_lease() { local v; for v in update create delete; do SA_USER=$WSA can_named godis-system $v godis-operator-leader; [ $? = 1 ] || return 1; done; SA_USER=$WSA cannot godis-system list leases.coordination.k8s.io; }
rw_work() { SA_USER=$WSA can "$NS" create replicasets.apps && SA_USER=$WSA can "$NS" update godisclusters.$G/status && SA_USER=$WSA cannot "$NS" get secrets; }
check "godis-worker SA may get Lease godis-operator-leader" rw_lease
check "godis-worker SA may not update, create, delete or list Leases" rw_no_lease
check "godis-worker SA may do the manager's work (ReplicaSets, GodisCluster status), not read Secrets" rw_work

dv_summary deploy
[ "$fail" -eq 0 ]
