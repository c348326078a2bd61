#!/usr/bin/env bash
# The shipped manager Deployment starts (issue 15.4): bin/godis-manager run the way the
# kubelet runs deploy/base/manager/deployment.yaml's container, as far as one machine without a
# container runtime can:
#  - its uid/gid 65532 (runAsUser/runAsGroup, no fsGroup), no capabilities, no privilege
#    escalation (setpriv --no-new-privs, empty bounding and inheritable sets);
#  - a read-only root filesystem (a private mount namespace whose root is a read-only bind
#    of this machine's), writable only where the Deployment mounts its emptyDirs:
#    /run/godis-operator (medium Memory: a tmpfs, root-owned, mode 0777, as the kubelet
#    makes it) and /tmp;
#  - its ServiceAccount token, CA and namespace at /var/run/secrets/kubernetes.io/
#    serviceaccount (read-only) and KUBERNETES_SERVICE_HOST/PORT: in-cluster
#    configuration, no --kubeconfig;
#  - the image's programs at /usr/local/bin (a read-only bind of bin/);
#  - the container's args from deployment.yaml, with what the kubelet substitutes
#    ($(POD_NAME), $(POD_NAMESPACE)) and, for this machine's rule that tests bind only
#    loopback, the two 0.0.0.0 listen addresses moved to free 127.0.0.1 ports.
# Then: it runs as 65532, becomes ready, leads (the Lease), made its private 0700 runtime
# subdirectory inside the root-owned emptyDir, takes a GodisCluster to Running (its
# informers and workers talk over that directory), and stops cleanly on SIGTERM.
# Needs root (mount namespace, setpriv), as `make test` runs. No kubectl: bin/godisctl and
# curl (deploy/verify-lib.sh). Prints one line per check, cmocka-style counts and
# "deploy-manager: N passed, N failed".
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../../deploy/verify-lib.sh"
DV_NAME=deploy-manager
dv_init
cd "$DV_ROOT" || exit 1
dv_need_manager
[ "$(id -u)" = 0 ] || die "needs root: a mount namespace and setpriv, to run the manager as the kubelet would"
for t in unshare setpriv chroot; do command -v "$t" >/dev/null || die "$t not found (util-linux, coreutils)"; done
WAIT=${DEPLOY_MANAGER_TIMEOUT:-180}
NS=deploy-mgr-$$
GC=example-godis
POD_NAME=godis-operator-itest-$$
UID_=$(sed -n 's/^ *runAsUser: *//p' deploy/base/manager/deployment.yaml | head -n1)
GID_=$(sed -n 's/^ *runAsGroup: *//p' deploy/base/manager/deployment.yaml | head -n1)
RUNDIR=$(sed -n 's/^ *- --runtime-dir=//p' deploy/base/manager/deployment.yaml)
COMMAND=$(sed -n 's/^ *command: \["\([^"]*\)"\]$/\1/p' deploy/base/manager/deployment.yaml)
API_PORT=${SERVER##*:}
MGR=""
t_start=$(date +%s)

dv_save_install_state
cleanup() {
  stop_group "$MGR"; MGR=""
  # the manager's eviction webhook registered its configuration (pointing at the Service,
  # which nothing routes here): it outlives the manager by design, so remove it
  api DELETE /apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/godis-operator-eviction >/dev/null 2>&1
  delete_ns "$NS"
  wait_ns_gone "$NS" 90 || echo "deploy-manager: namespace $NS still Terminating"
  dv_restore_install_state
  [ -z "${DEPLOY_MANAGER_LOG:-}" ] || cp "$DV_TMP/manager.log" "$DEPLOY_MANAGER_LOG" 2>/dev/null
  rm -rf "$DV_TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

check "deployment.yaml: uid $UID_, gid $GID_, --runtime-dir $RUNDIR on an emptyDir, no fsGroup" \
  sh -c "[ -n '$UID_' ] && [ -n '$GID_' ] && [ -n '$RUNDIR' ] && ! grep -q '^ *fsGroup:' deploy/base/manager/deployment.yaml"
check "CRDs apply" "$CTL" apply -f deploy/base/crds/godisclusters.yaml -f deploy/base/crds/godises.yaml
wait_ns_gone "$SA_NS" 90 >/dev/null || true
check "namespace, ServiceAccount, Roles and bindings apply" "$CTL" apply -f deploy/base/namespace.yaml \
  -f deploy/base/rbac/service_account.yaml -f deploy/base/rbac/leader_election_role.yaml -f deploy/base/rbac/manager_role.yaml \
  -f deploy/base/rbac/webhook_role.yaml
TOKEN=$(sa_token) || true
[ -n "$TOKEN" ] || die "no token Secret for ServiceAccount $SA_NS/$SA_NAME after 30 s"
ok "ServiceAccount token read from its token Secret"
check "test namespace $NS created (admin)" create_ns "$NS"

# ------------------------------------------------------------------ the container
SA_FILES=$DV_TMP/serviceaccount
mkdir -p "$SA_FILES"
printf '%s' "$TOKEN" >"$SA_FILES/token"
cp "$PKI/ca.crt" "$SA_FILES/ca.crt"
printf '%s' "$SA_NS" >"$SA_FILES/namespace"
chmod 0644 "$SA_FILES"/*        # the projected volume's defaultMode
HP=$(free_port) && MP=$(free_port) && WP=$(free_port) || die "no free loopback port"
args=()
while IFS= read -r a; do
  a=${a//\$(POD_NAMESPACE)/$SA_NS}; a=${a//\$(POD_NAME)/$POD_NAME}
  a=${a/--health-probe-bind-address=0.0.0.0:8081/--health-probe-bind-address=127.0.0.1:$HP}
  a=${a/--metrics-bind-address=0.0.0.0:8080/--metrics-bind-address=127.0.0.1:$MP}
  a=${a/--webhook-bind-address=0.0.0.0:9443/--webhook-bind-address=127.0.0.1:$WP}
  args+=("$a")
done < <(sed -n '/^ *args:/,/^ *[a-zA-Z]*:$/s/^ *- *//p' deploy/base/manager/deployment.yaml)
echo "args: ${args[*]}"
ROOT=$DV_TMP/root
mkdir -p "$ROOT"
# Inside a private mount namespace (nothing of it is seen outside; it goes when the manager
# exits): the container's filesystem, then the manager under setpriv.
inner() {
  set -e
  mount --rbind / "$ROOT"
  mount -o remount,bind,ro "$ROOT"                              # readOnlyRootFilesystem
  # The image's programs at the image's path (command: /usr/local/bin/godis-manager, its
  # informer and worker beside it), read-only: the clone may live anywhere, /tmp included,
  # which the container's own /tmp below hides.
  mount --bind "$DV_ROOT/bin" "$ROOT/usr/local/bin"
  mount -o remount,bind,ro "$ROOT/usr/local/bin"
  mount -t tmpfs -o mode=0755 tmpfs "$ROOT/run"                  # the container's own /run
  mkdir -p "$ROOT$RUNDIR" "$ROOT/run/secrets/kubernetes.io/serviceaccount"
  mount -t tmpfs -o mode=0777,size=16m tmpfs "$ROOT$RUNDIR"      # emptyDir {medium: Memory}
  mount -t tmpfs -o mode=0777,size=64m tmpfs "$ROOT/tmp"         # emptyDir tmp
  cp "$SA_FILES"/* "$ROOT/run/secrets/kubernetes.io/serviceaccount/"
  mount --bind "$ROOT/run/secrets/kubernetes.io/serviceaccount" "$ROOT/run/secrets/kubernetes.io/serviceaccount"
  mount -o remount,bind,ro "$ROOT/run/secrets/kubernetes.io/serviceaccount"
  # The devcluster's Service names (its stand-in for cluster DNS), followed as they change.
  mkdir -p "$ROOT/run/devcluster"
  [ -z "${GODIS_HOSTS_FILE:-}" ] || mount --bind "$(dirname "$GODIS_HOSTS_FILE")" "$ROOT/run/devcluster"
  exec chroot "$ROOT" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOSTNAME="$POD_NAME" POD_NAME="$POD_NAME" POD_NAMESPACE="$SA_NS" \
    KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$API_PORT" \
    GODIS_LOOPBACK_ONLY=1 GODIS_HOSTS_FILE="/run/devcluster/$(basename "${GODIS_HOSTS_FILE:-hosts}")" \
    setpriv --reuid="$UID_" --regid="$GID_" --clear-groups --no-new-privs \
      --inh-caps=-all --bounding-set=-all \
      "$COMMAND" "${args[@]}"
}
export -f inner
[ "$COMMAND" = /usr/local/bin/godis-manager ] || die "deployment.yaml's command is \"$COMMAND\", not the image's /usr/local/bin/godis-manager"
export COMMAND ROOT RUNDIR SA_FILES POD_NAME SA_NS API_PORT UID_ GID_ DV_ROOT
ARGS_FILE=$DV_TMP/args; printf '%s\n' "${args[@]}" >"$ARGS_FILE"
# The namespace's mounts must not propagate back. Private propagation needs "/" to be a mount
# point, which it is not in a chroot (tools/fresh-machine-check runs `make test` in one);
# there, unchanged propagation is as safe as long as no mount is shared.
PROPAGATION=private
if ! unshare --mount --propagation private true 2>/dev/null; then
  grep -q ' shared:' /proc/self/mountinfo &&
    die "cannot make a private mount namespace here (\"/\" is no mount point) and shared mounts would leak to the host"
  PROPAGATION=unchanged
fi
setsid unshare --mount --propagation "$PROPAGATION" bash -c 'mapfile -t args <"$0"; inner' "$ARGS_FILE" \
  </dev/null >"$DV_TMP/manager.log" 2>&1 &
MGR=$!
echo "manager: pid $MGR, health 127.0.0.1:$HP, log $DV_TMP/manager.log"

http_ok() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$HP/$1")" = 200 ]; }
holder_is() {
  "$CTL" -n "$SA_NS" get lease godis-operator-leader 2>/dev/null | jlines /dev/stdin |
    grep -q "^\"holderIdentity\": \"$1\""
}
is_manager() { [ "$(cat "/proc/$MGR/comm" 2>/dev/null)" = godis-manager ]; }
wait_for() {  # wait_for SECONDS CMD...: until CMD holds, the manager alive, a deadline
  local end=$(( $(date +%s) + $1 )); shift
  until "$@"; do
    [ "$(date +%s)" -lt "$end" ] || return 1
    kill -0 "$MGR" 2>/dev/null || { echo "the manager exited"; tail -5 "$DV_TMP/manager.log"; return 1; }
    sleep 0.5
  done
}
t0=$(date +%s)
check "the container's process is godis-manager" wait_for 30 is_manager
uid_is() { grep -Eq "^Uid:[[:space:]]+$UID_[[:space:]]+$UID_[[:space:]]+$UID_[[:space:]]+$UID_$" "/proc/$MGR/status" &&
           grep -Eq "^Gid:[[:space:]]+$GID_[[:space:]]+$GID_[[:space:]]+$GID_[[:space:]]+$GID_$" "/proc/$MGR/status"; }
check "it runs as uid/gid $UID_ (runAsUser/runAsGroup)" uid_is
check "with no capabilities and no_new_privs" sh -c \
  "grep -q '^CapEff:[[:space:]]*0000000000000000' /proc/$MGR/status && grep -q '^CapBnd:[[:space:]]*0000000000000000' /proc/$MGR/status && grep -q '^NoNewPrivs:[[:space:]]*1' /proc/$MGR/status"
root_ro() { awk '$5 == "/" { split($6, o, ","); if (o[1] == "ro") ok = 1 } END { exit !ok }' "/proc/$MGR/mountinfo"; }
check "on a read-only root filesystem" root_ro
check "/readyz 200 (the kubelet's readiness probe, on the health port)" wait_for 60 http_ok readyz
echo "ready $(( $(date +%s) - t0 )) s after start"
check "it holds the Lease as $POD_NAME" wait_for 60 holder_is "$POD_NAME"
# The eviction webhook (--webhook-bind-address, no --webhook-url): registered as the deploy/
# Service, with the caBundle of the CA it made, by the ServiceAccount's own rights.
vwc_registered() {
  [ "$(api GET /apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/godis-operator-eviction)" = 200 ] &&
    grep -Eq '"name": *"godis-operator-webhook"' "$DV_TMP/body" && grep -Eq '"namespace": *"godis-system"' "$DV_TMP/body" &&
    grep -Eq '"path": *"/eviction"' "$DV_TMP/body" && grep -Eq '"caBundle": *"LS0t' "$DV_TMP/body"
}
# The webhook registers within a second when the API server answers; a failed attempt is
# retried within 5 s (it was up to 30 s, and its client gave up after 4 s: the one failure
# seen under load). If it still fails, the webhook's own log lines say why.
webhook_registered() {
  wait_for 30 vwc_registered && return 0
  grep 'role=webhook' "$DV_TMP/manager.log" | grep -v 'eviction reviewed' | tail -3 | cut -c1-400
  return 1
}
check "its webhook registered godis-operator-eviction: Service godis-system/godis-operator-webhook, path /eviction, caBundle" \
  webhook_registered
# Its view of the emptyDir, through /proc/PID/root: the volume stays root's 0777, the
# manager's endpoints live in its own 0700 subdirectory.
VOL=/proc/$MGR/root$RUNDIR
SUB=$VOL/godis-operator-$UID_
check "the emptyDir $RUNDIR is root-owned, mode 777 (as the kubelet makes it)" \
  sh -c "[ \"\$(stat -c '%u %a' '$VOL')\" = '0 777' ]"
check "the manager made $RUNDIR/godis-operator-$UID_: owner $UID_, mode 700" \
  sh -c "[ \"\$(stat -c '%u %a' '$SUB')\" = '$UID_ 700' ]"
check "its ipc endpoints are there (control, informer sockets)" \
  sh -c "[ -S '$SUB/control' ] && [ -S '$SUB/GodisCluster.pub' ]"
check "the log names the private subdirectory" grep -q 'using a private subdirectory' "$DV_TMP/manager.log"

t0=$(date +%s)
check "admin creates GodisCluster $GC (replicas 1)" sh -c \
  "sed 's/replicas: [0-9]*/replicas: 1/' deploy/samples/godiscluster.yaml >'$DV_TMP/gc.yaml' && '$CTL' -n '$NS' apply -f '$DV_TMP/gc.yaml'"
if "$CTL" -n "$NS" follow "$GC" 1 "$WAIT" >"$DV_TMP/follow" 2>&1; then
  ok "the manager took it to Running with 1 Ready member in $(( $(date +%s) - t0 )) s"
else
  bad "Running with 1 Ready member: $(tail -3 "$DV_TMP/follow" | tr '\n' ' ')"
fi
delete_ns "$NS"
check "namespace $NS deleted while it runs: gone, its Godis finalizers dropped" wait_ns_gone "$NS" 90
refused "its log has no refused request (403 / forbidden)" grep -Eiw '403|forbidden' "$DV_TMP/manager.log"

kill -TERM "$MGR"
rc=0; for ((i = 0; i < 300; i++)); do kill -0 "$MGR" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$MGR" 2>/dev/null; then rc=timeout; else wait "$MGR"; rc=$?; MGR=""; fi
check "SIGTERM: it stops with exit code 0 (got $rc)" test "$rc" = 0
check "and releases the Lease" sh -c "! '$CTL' -n '$SA_NS' get lease godis-operator-leader 2>/dev/null | grep -q '\"holderIdentity\": \"$POD_NAME\"'"
if [ "$fail" -gt 0 ]; then echo "--- the manager's log, last 15 lines"; tail -15 "$DV_TMP/manager.log"; fi
echo "deploy-manager: total $(( $(date +%s) - t_start )) s"
dv_summary deploy-manager
[ "$fail" -eq 0 ]
