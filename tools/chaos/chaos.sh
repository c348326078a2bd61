#!/usr/bin/env bash
# tools/chaos/chaos.sh FAULTS SEED [chaos flags...] — what `make chaos` runs: a devcluster
# of its own (build/chaos/devcluster, without node agents: bin/chaos runs one per node so a
# node can be lost alone), bin/chaos on it (logs in build/chaos/run), then the devcluster
# stopped again. The last line is bin/chaos's
#   chaos: F faults, C checks, V violations, converged in T s
# and the exit status is non-zero when there was a violation or a cluster did not converge.
set -u
faults=${1:?usage: chaos.sh FAULTS SEED [flags]}; seed=${2:?usage: chaos.sh FAULTS SEED [flags]}; shift 2
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
export DEVCLUSTER_DIR=$ROOT/build/chaos/devcluster
out=$ROOT/build/chaos/run
# The control plane's logs (the API server's audit log: who deleted what; the
# controller-manager's) are kept beside the campaign's, compressed: the devcluster's own
# directory goes at its teardown, and a violation is explained only from them.
keep_logs() {
  [ -d "$DEVCLUSTER_DIR/logs" ] && [ -d "$out" ] || return 0
  mkdir -p "$out/controlplane" &&
    for f in "$DEVCLUSTER_DIR"/logs/*.log; do gzip -c "$f" >"$out/controlplane/$(basename "$f").gz"; done
}
down() { keep_logs; tools/devcluster down >>"$ROOT/build/chaos/devcluster-down.log" 2>&1 || true; }
trap down EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir -p "$ROOT/build/chaos"
tools/devcluster down >>"$ROOT/build/chaos/devcluster-down.log" 2>&1 || true
rm -rf "$out"
echo "[chaos] starting a devcluster without node agents in $DEVCLUSTER_DIR" >&2
tools/devcluster up --nodes 0 >"$ROOT/build/chaos/devcluster-up.log" 2>&1 ||
  { tail -20 "$ROOT/build/chaos/devcluster-up.log" >&2; echo "chaos: 0 faults, 0 checks, 1 violations, converged in 0.0 s"; exit 1; }
eval "$(tools/devcluster env)" || exit 1
# Reconciles read the cache's objects lent, not copied; a worker that modified one aborts
# in this mode (worker/runtime/cache.h). The manager respawns it, so the logs say it.
export GODIS_CACHE_VERIFY=1
bin/chaos --faults "$faults" --seed "$seed" --out "$out" "$@"
rc=$?
if grep -rl "a reader modified a cached object" "$out" >/dev/null 2>&1; then
  echo "[chaos] a reconcile modified a cached object it was lent (GODIS_CACHE_VERIFY):" \
    "$(grep -rl "a reader modified a cached object" "$out" | head -3)" >&2
  exit 1
fi
exit $rc
