#!/usr/bin/env bash
# Runs the integration tests against the local control plane (tools/devcluster).
# Builds nothing: `make integration-test` has built bin/ and bin/tests/ already.
#
# - A devcluster that already runs (tools/devcluster status succeeds) is reused and left
#   running. Otherwise one is started here and torn down on exit, unless DEVCLUSTER_KEEP=1
#   (then it stays up for debugging; `tools/devcluster down` stops it).
# - Runs every bin/tests/itest_* binary (cmocka) and every tests/integration/itest_*.sh
#   (other scripts there are helpers the tests call), each with the devcluster's environment
#   (KUBECONFIG, ETCD_ENDPOINTS, ...) and a time limit (ITEST_TIMEOUT seconds, default 900). Shell tests print cmocka-style count lines; one
#   that prints none counts as one test, passed or failed by its exit status.
# - ITEST_FILTER=substring runs only the tests whose file name contains it.
# - Closes with one "integration: N passed, N failed, N skipped" line; exit status non-zero
#   on failure, and on any skipped test when GODIS_FAIL_ON_SKIP=1 (CI: .ci/run).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/counts.sh"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
DC="$ROOT/tools/devcluster"
TIMEOUT=${ITEST_TIMEOUT:-900}

log() { printf '[integration] %s\n' "$*" >&2; }

started=0
teardown() {
  local rc=$?
  if [ $started = 1 ]; then
    if [ "${DEVCLUSTER_KEEP:-0}" = 1 ]; then
      log "DEVCLUSTER_KEEP=1: leaving the devcluster running (tools/devcluster down stops it)"
    else
      "$DC" down || rc=1
    fi
  fi
  exit $rc
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if "$DC" status >/dev/null 2>&1; then
  log "reusing the running devcluster"
else
  started=1
  t0=$(date +%s)
  "$DC" up || { log "tools/devcluster up failed"; exit 1; }
  log "devcluster up in $(( $(date +%s) - t0 )) s"
fi
eval "$("$DC" env)" || exit 1

tests=()
for t in bin/tests/itest_* tests/integration/itest_*.sh; do
  [ -f "$t" ] || continue
  case $t in *.o|*.d) continue ;; esac
  [ -z "${ITEST_FILTER:-}" ] || [[ "$t" == *"$ITEST_FILTER"* ]] || continue
  tests+=("$t")
done
[ ${#tests[@]} -gt 0 ] || log "no integration tests found"

# Reconciles read the cache's objects lent, not copied; a worker that modified one aborts
# in this mode (worker/runtime/cache.h). The manager respawns it, which a test may not
# notice, so this run's logs are searched at the end.
export GODIS_CACHE_VERIFY=1
run_marker=$(mktemp)
pass=0; fail=0; skipped=0; bad=(); skippers=()
for t in ${tests[@]+"${tests[@]}"}; do
  log "running $t"
  s=$(date +%s)
  if [[ "$t" == *.sh ]]; then cmd=(bash "$t"); else cmd=("./$t"); fi
  out=$(timeout -k 10 "$TIMEOUT" "${cmd[@]}" 2>&1); rc=$?
  printf '%s\n' "$out"
  [ $rc -ne 124 ] || log "$t timed out after ${TIMEOUT}s"
  p=$(count_of PASSED "$out")
  f=$(count_of FAILED "$out")
  k=$(count_of SKIPPED "$out")
  if [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$k" -eq 0 ]; then
    if [ $rc -eq 0 ]; then p=1; else f=1; fi
  fi
  pass=$((pass + p)); fail=$((fail + f)); skipped=$((skipped + k))
  [ "$k" -eq 0 ] || skippers+=("$t")
  if [ $rc -ne 0 ]; then bad+=("$t"); [ "$f" -gt 0 ] || fail=$((fail + 1)); fi
  log "$t: exit $rc in $(( $(date +%s) - s )) s"
done
verify_hits=$(find build/itest-logs -type f -newer "$run_marker" \
                -exec grep -l "a reader modified a cached object" {} + 2>/dev/null | head -3)
rm -f "$run_marker"
if [ -n "$verify_hits" ]; then
  log "a reconcile modified a cached object it was lent (GODIS_CACHE_VERIFY): $verify_hits"
  fail=$((fail + 1)); bad+=("GODIS_CACHE_VERIFY")
fi
echo "integration: $pass passed, $fail failed, $skipped skipped"
[ ${#bad[@]} -eq 0 ] || { echo "failing integration tests: ${bad[*]}" >&2; exit 1; }
fail_on_skip "$skipped" ${skippers[@]+"${skippers[@]}"} || exit 1
exit 0
