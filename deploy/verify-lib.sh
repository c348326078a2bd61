# verify-lib.sh — shell helpers shared by deploy/verify.sh and
# tests/integration/itest_deploy_rbac.sh. Sourced, not run.
#
# Why no kubectl (but tools/kubectl-debian in verify.sh, which needs kustomize): a fresh
# Debian machine has none on PATH, and a check that silently skips proves
# nothing. Everything goes through bin/godisctl (YAML manifests) and curl (raw API calls with
# the devcluster's admin certificate, or a bearer token). JSON is read with sed/awk from the
# API server's ?pretty=true output (one "key": value per line), so no jq is needed either.

DV_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CTL="$DV_ROOT/bin/godisctl"
pass=0; fail=0
DV_TMP=$(mktemp -d "${TMPDIR:-/tmp}/deploy-verify.XXXXXX")
trap 'rm -rf "$DV_TMP"' EXIT   # the scripts' own cleanup replaces this once it has work to do

ok()  { pass=$((pass+1)); printf '[ OK ] %s\n' "$*"; }
bad() { fail=$((fail+1)); printf '[FAIL] %s\n' "$*"; }
# check WHAT CMD...: passes when CMD succeeds; on failure shows the end of its output.
check() {
  local what=$1; shift
  if "$@" >"$DV_TMP/out" 2>&1; then ok "$what"; else bad "$what: $(tail -3 "$DV_TMP/out" | tr '\n' ' ')"; fi
}
# refused WHAT CMD...: passes when CMD fails.
refused() {
  local what=$1; shift
  if "$@" >"$DV_TMP/out" 2>&1; then bad "$what: was accepted"; else ok "$what"; fi
}
# cmocka-style counts (tests/run-integration.sh sums them), then the plain closing line.
dv_summary() {
  echo "[  PASSED  ] $pass test(s)."
  [ "$fail" -eq 0 ] || echo "[  FAILED  ] $fail test(s)."
  echo "$1: $pass passed, $fail failed"
}
die() { bad "$*"; dv_summary "${DV_NAME:-deploy}"; exit 1; }

# dv_init: finds the API server, the CA and the admin client certificate. No skip: a
# missing prerequisite is a failure with the reason.
dv_init() {
  [ -x "$CTL" ] || die "bin/godisctl not built (run make)"
  command -v curl >/dev/null || die "curl not installed (tools/deps.sh installs it)"
  [ -n "${KUBECONFIG:-}" ] || die "KUBECONFIG must point at the local control plane (eval \"\$(tools/devcluster env)\")"
  [ -n "${DEVCLUSTER_DIR:-}" ] || die "DEVCLUSTER_DIR must be set (eval \"\$(tools/devcluster env)\")"
  PKI="$DEVCLUSTER_DIR/pki"
  SERVER=${KUBE_APISERVER:-$(sed -n 's/^ *server: *//p' "$KUBECONFIG" | head -n1)}
  [ -n "$SERVER" ] || die "no API server address in KUBECONFIG or KUBE_APISERVER"
  local f; for f in ca.crt admin.crt admin.key; do [ -r "$PKI/$f" ] || die "$PKI/$f missing"; done
}

# dv_need_manager: the operator's programs are built (the tests that run the manager).
dv_need_manager() {
  local b; for b in godis-manager godis-informer godis-worker; do
    [ -x "$DV_ROOT/bin/$b" ] || die "bin/$b not built (run make)"
  done
}

# api [-t TOKEN] [-a ACCEPT] METHOD PATH [JSON-BODY]: the HTTP status on stdout, the pretty
# response body in $DV_TMP/body. Authenticates as admin unless a token is given.
api() {
  local auth=(--cert "$PKI/admin.crt" --key "$PKI/admin.key") accept=application/json
  while [ $# -gt 0 ]; do
    case $1 in
      -t) auth=(-H "Authorization: Bearer $2"); shift 2 ;;
      -a) accept=$2; shift 2 ;;
      *) break ;;
    esac
  done
  local method=$1 path=$2 body=${3:-} sep='?'
  [[ "$path" != *'?'* ]] || sep='&'
  local data=(); [ -z "$body" ] || data=(-H 'Content-Type: application/json' --data-binary "$body")
  curl -sS --max-time 20 --cacert "$PKI/ca.crt" "${auth[@]}" -H "Accept: $accept" \
    -o "$DV_TMP/body" -w '%{http_code}' -X "$method" "${data[@]}" "$SERVER$path${sep}pretty=true" 2>"$DV_TMP/curl.err" ||
    { echo "curl-failed"; cat "$DV_TMP/curl.err" >&2; }
}
# expect_code WANT [api args...]: succeeds when the call answers HTTP WANT.
expect_code() {
  local want=$1; shift
  local got; got=$(api "$@")
  [ "$got" = "$want" ] && return 0
  echo "HTTP $got, want $want: $(grep -m1 '"message"' "$DV_TMP/body")"
  return 1
}
# jlines [FILE]: JSON (pretty or compact; built-in kinds honour ?pretty=true, custom
# resources do not) as one "key": value per line, good enough for sed on scalar fields.
jlines() { tr '\t' ' ' <"${1:-$DV_TMP/body}" | sed 's/\([{,[]\) *"/\1\n"/g; s/" *: */": /g' | sed 's/^ *//'; }
# First value of "KEY" in the last response body (or FILE), strings unquoted.
body_field() { jlines "${2:-}" | sed -n "s/^ *\"$1\": \"\{0,1\}\([^\",}]*\).*/\1/p" | head -n1; }

# The names of a Table response's columns that kubectl shows by default (priority 0), in
# order, space separated. A column without "priority" has priority 0.
table_columns() {
  awk '
    /"columnDefinitions"/ { in_cols = 1; next }
    in_cols && /"rows"/ { in_cols = 0 }
    in_cols && /^ *"name":/ { flush(); n = $0; sub(/^ *"name": *"/, "", n); sub(/".*/, "", n); prio = 0 }
    in_cols && /^ *"priority":/ { p = $0; gsub(/[^0-9]/, "", p); prio = p + 0 }
    function flush() { if (n != "" && prio == 0) out = out (out == "" ? "" : " ") n; n = "" }
    END { flush(); print out }' <(jlines)
}

# ns_exists NAME / wait_ns_gone NAME SECONDS
ns_exists() { [ "$(api GET "/api/v1/namespaces/$1")" = 200 ]; }
wait_ns_gone() {
  local i; for ((i = 0; i < $2 * 2; i++)); do ns_exists "$1" || return 0; sleep 0.5; done
  return 1
}
# create_ns NAME: waits out a Terminating namespace of the same name first.
create_ns() {
  wait_ns_gone "$1" 90 || { echo "namespace $1 still exists (Terminating?)"; return 1; }
  expect_code 201 POST /api/v1/namespaces "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$1\"}}"
}
delete_ns() { api DELETE "/api/v1/namespaces/$1" >/dev/null; }
CRD_PATH=/apis/apiextensions.k8s.io/v1/customresourcedefinitions
crds_exist() { [ "$(api GET "$CRD_PATH/godisclusters.kumkeehyun.github.com")" = 200 ]; }
# delete_crds: deletes both CRDs and waits until they are gone (their objects with them), so
# a test right after can install them afresh.
delete_crds() {
  "$CTL" delete -f "$DV_ROOT/deploy/base/crds/godisclusters.yaml" -f "$DV_ROOT/deploy/base/crds/godises.yaml" >/dev/null 2>&1
  local i; for ((i = 0; i < 120; i++)); do
    [ "$(api GET "$CRD_PATH/godisclusters.kumkeehyun.github.com")" = 404 ] &&
      [ "$(api GET "$CRD_PATH/godises.kumkeehyun.github.com")" = 404 ] && return 0
    sleep 0.5
  done
  echo "CRDs still there after 60 s"
}

# free_port: a loopback port nothing listens on (bash's /dev/tcp connect fails)
free_port() {
  local p; for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % 20000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
  done
  return 1
}

# The ServiceAccount's identity, as the API server sees a request with its token.
SA_NS=godis-system
SA_NAME=godis-operator
SA_USER="system:serviceaccount:$SA_NS:$SA_NAME"

# The serviceaccount-token controller adds the token Secret's name to the SA, then fills it.
sa_token() {
  local i secret tok
  for ((i = 0; i < 60; i++)); do
    "$CTL" -n "$SA_NS" get serviceaccount "$SA_NAME" >"$DV_TMP/sa" 2>/dev/null
    secret=$(jlines "$DV_TMP/sa" | sed -n "s/^\"name\": \"\($SA_NAME-token-[a-z0-9]*\)\".*/\1/p" | head -n1)
    if [ -n "$secret" ] && "$CTL" -n "$SA_NS" get secret "$secret" >"$DV_TMP/secret" 2>/dev/null; then
      tok=$(body_field token "$DV_TMP/secret")
      [ -z "$tok" ] || { echo "$tok" | base64 -d; return; }
    fi
    sleep 0.5
  done
  return 1
}

# dv_save_install_state / dv_restore_install_state: the tests that install deploy/'s
# namespace, RBAC and CRDs remove afterwards only what was not there before they ran.
dv_save_install_state() {
  had_ns=0; ns_exists "$SA_NS" && had_ns=1
  had_rbac=0; [ "$(api GET /apis/rbac.authorization.k8s.io/v1/clusterroles/godis-operator-manager)" = 200 ] && had_rbac=1
  had_crds=0; crds_exist && had_crds=1
}
dv_restore_install_state() {
  [ "$had_rbac" = 1 ] || "$CTL" delete $(printf -- '-f %s ' "$DV_ROOT"/deploy/base/rbac/*.yaml) >/dev/null 2>&1
  if [ "$had_ns" = 0 ]; then
    delete_ns "$SA_NS"; wait_ns_gone "$SA_NS" 90 || echo "$DV_NAME: namespace $SA_NS still Terminating"
  fi
  [ "$had_crds" = 1 ] || delete_crds
}

# stop_group PID: TERM (a manager releases its Lease on it), up to 15 s, then KILL the
# process group (setsid made PID its leader: a manager's informers and workers are in it).
stop_group() {
  [ -n "${1:-}" ] || return 0
  kill -TERM "$1" 2>/dev/null
  local i; for ((i = 0; i < 150; i++)); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$1" 2>/dev/null
  wait "$1" 2>/dev/null
}
