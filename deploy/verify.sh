#!/usr/bin/env bash
# Checks deploy/ against the API server of the local control plane (tools/devcluster env):
#  - deploy/base/kustomization.yaml lists every manifest there; no RBAC rule has a wildcard;
#    nothing binds cluster-admin; no overlay lies inside its base (kustomize 3+: "cycle
#    detected");
#  - Debian's kubectl 1.20 (kustomize 2.0, tools/kubectl-debian) builds the base and both
#    overlays, and a kubectl with kustomize 4+ on PATH, where there is one, builds the same;
#  - `kubectl apply -k` of the base (the k8s-1.20 overlay where the API server has no
#    policy/v1) stores every object; the manager Deployment is deleted again right after
#    (its image does not run here);
#  - the CRDs' validation rejects replicas 0, 10, -1 and "3" and a bad storage size, defaults
#    replicas to 3, accepts objects shaped like the original Go controller's (spec.name);
#  - the printer columns kubectl shows: the API server's Table for `kubectl get` (the same
#    request kubectl makes) has exactly NAME STATUS REPLICAS READY MEMBERS AGE for
#    GodisClusters and NAME STATE PREFERRED AGE for Godises;
#  - the ServiceAccount may do exactly what the manager needs and no more
#    (SubjectAccessReviews: what `kubectl auth can-i --as` asks);
#  - the remote-workers overlay: `kubectl apply -k` of it (with the 1.20 patch on 1.20) after
#    the CURVE Secrets, and the godis-worker Deployment's pods run (the node agent); the
#    worker's and the patched manager's args parse; the godis-worker ServiceAccount may read
#    the leader Lease and do the manager's work, nothing more on Leases.
# Prints one line per check, cmocka-style counts and "deploy: N passed, N failed". Cleans
# up: its temporary namespace, and the namespace, RBAC, Secrets and CRDs when they were not
# installed before it ran.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/verify-lib.sh"
DV_NAME=deploy
dv_init
cd "$DV_ROOT" || exit 1
NS=deploy-verify-$$

# ------------------------------------------------------------------ static checks
KC="$DV_ROOT/tools/kubectl-debian"   # Debian's kubectl 1.20: kustomize 2.0 built in
resources=$(sed -n '/^resources:/,/^[a-z]/s/^  - *//p' deploy/base/kustomization.yaml)
files=$(cd deploy/base && find . -name '*.yaml' ! -name kustomization.yaml | sed 's|^\./||' | sort)
check "the base's kustomization lists every manifest under deploy/base" \
  diff <(echo "$resources" | sort) <(echo "$files")
# A rule line with "*" (comments stripped) would be a wildcard verb, resource or group.
refused "no wildcard in any RBAC rule" grep -n '^[^#]*\*' deploy/base/rbac/*.yaml
refused "nothing binds cluster-admin" grep -rn --include='*.yaml' '^[^#]*cluster-admin' deploy/
check "the PodDisruptionBudget ships as policy/v1" grep -qx 'apiVersion: policy/v1' deploy/base/manager/pdb.yaml
refused "no manifest uses policy/v1beta1" grep -rln --include='*.yaml' --exclude-dir=overlays '^apiVersion: policy/v1beta1' deploy/
# Kustomize 3+ refuses an overlay inside the directory of its base ("cycle detected"), which
# kustomize 2.0 lets pass: every base an overlay names must not contain the overlay.
outside_bases() {
  local o b
  for o in deploy/overlays/*/; do
    for b in $(sed -n '/^bases:/,/^[a-z]/s/^  - *//p' "$o/kustomization.yaml"); do
      b=$(realpath "$o/$b") || return 1
      case $(realpath "$o")/ in "$b"/*) echo "$o: its base $b contains it"; return 1 ;; esac
    done
  done
}
check "no overlay lies inside its base" outside_bases
KUSTOMIZATIONS="deploy/base deploy/overlays/k8s-1.20 deploy/overlays/remote-workers"
built() { echo "$DV_TMP/built-${1//\//_}.yaml"; }
for k in $KUSTOMIZATIONS; do
  check "kubectl 1.20 (kustomize 2.0) builds $k" sh -c "'$KC' kustomize '$k' >'$(built "$k")'"
done
# A current kubectl (kustomize 4+), where this machine has one, builds the same objects
# (it warns that `bases` and `patchesJson6902` are deprecated, on stderr).
MODERN=""
if command -v kubectl >/dev/null && kubectl version --client 2>/dev/null | grep -q 'Kustomize Version: v[4-9]'; then
  MODERN=$(command -v kubectl)
fi
if [ -n "$MODERN" ]; then
  for k in $KUSTOMIZATIONS; do
    check "$MODERN ($(kubectl version --client 2>/dev/null | sed -n 's/^Kustomize Version: //p')) builds $k alike" \
      sh -c "'$MODERN' kustomize '$k' 2>/dev/null | diff '$(built "$k")' -"
  done
else
  echo "deploy: no kubectl with kustomize 4+ on PATH: the overlays are built with kustomize 2.0 only"
fi
check "k8s-1.20 overlay: the base with the PDB as policy/v1beta1, nothing else" sh -c \
  "sed 's#^apiVersion: policy/v1\$#apiVersion: policy/v1beta1#' '$(built deploy/base)' | diff - '$(built deploy/overlays/k8s-1.20)'"
# doc NAME KIND FILE: one object of a build (documents split on ---).
doc() { awk -v k="kind: $2" -v n="  name: $1" '/^---/ {if (hk && hn) exit; d=""; hk=hn=0; next}
  {d = d $0 "\n"} $0 == k {hk=1} $0 == n {hn=1} END {if (hk && hn) printf "%s", d}' "$3"; }

# ------------------------------------------------------------------ apply everything
had_ns=0; ns_exists godis-system && had_ns=1
had_crds=0; crds_exist && had_crds=1
had_rbac=0; [ "$(api GET /apis/rbac.authorization.k8s.io/v1/clusterroles/godis-operator-manager)" = 200 ] && had_rbac=1
RW=deploy/overlays/remote-workers
had_rw_rbac=0; [ "$(api GET /apis/rbac.authorization.k8s.io/v1/clusterrolebindings/godis-operator-worker)" = 200 ] && had_rw_rbac=1
had_rw_secrets=0; [ "$(api GET /api/v1/namespaces/godis-system/secrets/godis-curve-worker)" = 200 ] && had_rw_secrets=1
delete_deployments() {
  "$CTL" delete -f deploy/base/manager/deployment.yaml -f deploy/base/manager/metrics_service.yaml \
    -f deploy/base/manager/webhook_service.yaml -f deploy/base/manager/pdb.yaml >/dev/null 2>&1
  "$CTL" delete -f "$RW/worker_deployment.yaml" >/dev/null 2>&1
}
cleanup() {
  delete_ns "$NS"
  delete_deployments
  [ $had_rw_secrets = 1 ] || for s in server worker allow; do api DELETE "/api/v1/namespaces/godis-system/secrets/godis-curve-$s" >/dev/null 2>&1; done
  [ $had_rw_rbac = 1 ] || "$CTL" delete -f "$RW/worker_rbac.yaml" >/dev/null 2>&1
  [ $had_rbac = 1 ] || "$CTL" delete $(printf -- '-f %s ' deploy/base/rbac/*.yaml) >/dev/null 2>&1
  [ $had_ns = 1 ] || { delete_ns godis-system; wait_ns_gone godis-system 90 || echo "deploy: godis-system still Terminating"; }
  wait_ns_gone "$NS" 90 || echo "deploy: $NS still Terminating"
  [ $had_crds = 1 ] || delete_crds
  rm -rf "$DV_TMP"
}
trap cleanup EXIT

# `kubectl apply -k` as a user runs it: the base where the API server serves policy/v1, the
# k8s-1.20 overlay on 1.20 (this machine's local control plane).
pdb_served_as=policy/v1 K=deploy/base
[ "$(api GET /apis/policy/v1)" = 200 ] || { pdb_served_as=policy/v1beta1 K=deploy/overlays/k8s-1.20; }
check "kubectl apply -k $K" "$KC" apply -k "$K"
all_stored() {  # every object of the build, as the API server has it now
  local want got; want=$(grep -c '^kind: ' "$(built "$K")")
  got=$("$KC" get -f "$(built "$K")" -o name | wc -l)
  echo "$got of $want"; [ "$got" = "$want" ]
}
check "every object of $K is stored" all_stored
check "the PDB is stored as $pdb_served_as" expect_code 200 GET "/apis/$pdb_served_as/namespaces/godis-system/poddisruptionbudgets/godis-operator"
check "Deployment godis-system/godis-operator stored with 2 replicas" \
  sh -c "'$CTL' -n godis-system get deployment godis-operator | grep -qP '^\\t\\t\"replicas\":\\t2,'"
check "its image is tagged 0.1.0 (the kustomization's images:)" \
  sh -c "'$CTL' -n godis-system get deployment godis-operator | grep -q '\"image\":.*\"godis-operator:0.1.0\"'"
delete_deployments
# The Deployment's container args, as bin/godis-manager parses them: every flag known and
# valid. The kubeconfig is one that does not exist, so the manager stops right after parsing
# (exit 2, "cannot read kubeconfig") and never binds; the binds are moved to loopback anyway.
deployment_args_parse() {
  local a args=()
  while IFS= read -r a; do
    a=${a//\$(POD_NAMESPACE)/godis-system}; a=${a//\$(POD_NAME)/verify}
    a=${a//0.0.0.0/127.0.0.1}; a=${a//\/run\/godis-operator/$DV_TMP/run}
    args+=("$a")
  done < <(sed -n '/^ *args:/,/^ *[a-z]*:$/s/^ *- *//p' deploy/base/manager/deployment.yaml)
  [ ${#args[@]} -gt 3 ] || { echo "no args found in deployment.yaml"; return 1; }
  echo "args: ${args[*]}"
  timeout 20 bin/godis-manager "${args[@]}" --kubeconfig "$DV_TMP/no-such-kubeconfig"
  local rc=$?
  [ $rc = 2 ] && grep -q 'cannot read kubeconfig' "$DV_TMP/out"
}
check "bin/godis-manager accepts the Deployment's args" deployment_args_parse
check "the Deployment runs the image's entrypoint (/usr/local/bin/godis-manager)" \
  grep -q 'command: \["/usr/local/bin/godis-manager"\]' deploy/base/manager/deployment.yaml
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
# Exactly the verbs the code issues (see the comments in deploy/base/rbac/manager_role.yaml).
for v in "get godisclusters.$G" "list godisclusters.$G" "watch godisclusters.$G" \
         "update godisclusters.$G/status" "create godises.$G" "delete godises.$G" \
         "watch godises.$G" "update godises.$G/status" "update godisclusters.$G/finalizers" \
         "update godises.$G" "update godisclusters.$G" \
         "create configmaps" "update configmaps" "create services" "update services" \
         "create persistentvolumeclaims" "update persistentvolumeclaims" "create replicasets.apps" \
         "update replicasets.apps" "watch pods" "delete pods" "list nodes" "watch nodes" "list persistentvolumes" "watch persistentvolumes" "create events" \
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
         "create pods/eviction" "update nodes" "patch nodes" "delete nodes" "update persistentvolumes" "delete persistentvolumes" "create deployments.apps" \
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
# Built by kustomize 2.0 above; here its parts are checked, then `kubectl apply -k` installs it
# (on 1.20 with the k8s-1.20 patch on top, as a user of 1.20 would compose them) with the
# CURVE Secrets made as deploy/README.md says, and the godis-worker pods must run.
RWB=$(built $RW)
rw_listed() {
  diff <(sed -n '/^resources:/,/^[a-z]/s/^  - *//p' "$RW/kustomization.yaml" | sort) \
       <(cd "$RW" && ls -- *.yaml | grep -vx -e kustomization.yaml -e "$(sed -n 's/^ *path: *//p' kustomization.yaml)" | sort)
}
check "remote-workers overlay: lists every manifest beside its kustomization (its patch aside)" rw_listed
refused "remote-workers overlay: no wildcard in its RBAC" grep -n '^[^#]*\*' "$RW/worker_rbac.yaml"
rw_patch_manager() {
  doc godis-operator Deployment "$RWB" >"$DV_TMP/rw-manager.yaml" &&
    grep -q -- '- --remote-port-base=7420' "$DV_TMP/rw-manager.yaml" &&
    grep -q 'secretName: godis-curve-server' "$DV_TMP/rw-manager.yaml" &&
    grep -q 'secretName: godis-curve-allow' "$DV_TMP/rw-manager.yaml"
}
check "the built manager Deployment listens on tcp:// with the CURVE Secrets (the overlay's JSON patch)" rw_patch_manager
rw_worker_built() { doc godis-worker Deployment "$RWB" >"$DV_TMP/rw-worker.yaml" && grep -q 'image: godis-operator:0.1.0' "$DV_TMP/rw-worker.yaml"; }
check "the built godis-worker Deployment is there, image godis-operator:0.1.0" rw_worker_built
rw_keys() { mkdir -p "$DV_TMP/keys" && "$DV_ROOT/bin/godis-manager" keygen --out "$DV_TMP/keys" --name "$1" >/dev/null; }
rw_keys server && rw_keys worker && cp "$DV_TMP/keys/worker.pub" "$DV_TMP/keys/allow"
rw_secrets() {
  [ $had_rw_secrets = 1 ] && return 0
  "$KC" -n godis-system create secret generic godis-curve-server --from-file="$DV_TMP/keys/server.key" &&
    "$KC" -n godis-system create secret generic godis-curve-worker --from-file="$DV_TMP/keys/worker.key" --from-file="$DV_TMP/keys/server.pub" &&
    "$KC" -n godis-system create secret generic godis-curve-allow --from-file="$DV_TMP/keys/allow"
}
check "the three CURVE Secrets (kubectl create secret, as deploy/README.md says)" rw_secrets
RWK=$RW as=""
if [ $pdb_served_as != policy/v1 ]; then
  RWK=$DV_TMP/remote-workers-1.20
  mkdir -p "$RWK" && cp deploy/overlays/k8s-1.20/pdb_v1beta1.yaml "$RWK/"
  cat >"$RWK/kustomization.yaml" <<EOF
bases:
  - $(realpath --relative-to="$RWK" "$RW")
patchesJson6902:
  - target: {group: policy, version: v1, kind: PodDisruptionBudget, name: godis-operator}
    path: pdb_v1beta1.yaml
EOF
  as=" (with the k8s-1.20 patch: $RWK)"
fi
check "kubectl apply -k $RW$as" "$KC" apply -k "$RWK"
# pods_of COMPONENT: "PHASE NODE STARTED" per pod of that Deployment
pods_of() {
  "$KC" -n godis-system get pods -l "app.kubernetes.io/component=$1" -o \
    jsonpath='{range .items[*]}{.status.phase} {.spec.nodeName} {.status.containerStatuses[0].state.running.startedAt}{"\n"}{end}'
}
# wait_pods COMPONENT N PATTERN: N pods whose line matches PATTERN, within 120 s
wait_pods() {
  local end=$((SECONDS + 120)) n=0
  while [ $SECONDS -lt $end ]; do
    n=$(pods_of "$1" | grep -c "$3")
    [ "$n" = "$2" ] && return 0
    sleep 1   # a poll with a deadline: the pods' state is only in the API server
  done
  echo "$n of $2 pods: $(pods_of "$1" | tr '\n' ';')"; return 1
}
check "the godis-worker Deployment runs: 2 pods Running, their containers started" wait_pods worker 2 '^Running [^ ]* [0-9]'
# The manager's pods are scheduled; what runs them here is the node agent, which runs image
# godis-operator as godis-worker (that refuses the manager's flags): itest_deploy_manager
# runs the manager's container as the kubelet would.
check "the manager Deployment's 2 pods are scheduled onto nodes" wait_pods manager 2 '^[A-Za-z]* [a-z0-9.-]\+ '
delete_deployments
# The args, with what the kubelet substitutes, key files made here, binds on loopback and a
# kubeconfig that does not exist: both programs parse everything, load the keys and stop on
# the kubeconfig (exit 2).
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
# kustomize writes a container's keys sorted, "- args:" first
built_args() { sed -n '/^ *\(- \)\{0,1\}args:$/,/^ *[a-z]*:$/{/args:$/d;s/^ *- *//p}' "$1"; }
built_args "$DV_TMP/rw-worker.yaml" >"$DV_TMP/rw-worker.args"
built_args "$DV_TMP/rw-manager.yaml" >"$DV_TMP/rw-manager.args"
check "bin/godis-worker accepts the worker Deployment's args" rw_args_parse godis-worker "$DV_TMP/rw-worker.args"
check "bin/godis-manager accepts the patched manager Deployment's args" rw_args_parse godis-manager "$DV_TMP/rw-manager.args"
# What the workers' ServiceAccount may do, with the overlay's RBAC as kubectl applied it.
WSA=system:serviceaccount:godis-system:godis-worker
rw_lease() { SA_USER=$WSA can_named godis-system get godis-operator-leader; }
rw_no_lease() { local v; for v in update create delete; do SA_USER=$WSA can_named godis-system $v godis-operator-leader; [ $? = 1 ] || return 1; done; SA_USER=$WSA cannot godis-system list leases.coordination.k8s.io; }
rw_work() { SA_USER=$WSA can "$NS" create replicasets.apps && SA_USER=$WSA can "$NS" update godisclusters.$G/status && SA_USER=$WSA cannot "$NS" get secrets; }
check "godis-worker SA may get Lease godis-operator-leader" rw_lease
check "godis-worker SA may not update, create, delete or list Leases" rw_no_lease
check "godis-worker SA may do the manager's work (ReplicaSets, GodisCluster status), not read Secrets" rw_work

dv_summary deploy
[ "$fail" -eq 0 ]
