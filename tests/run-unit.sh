#!/usr/bin/env bash
# Runs every cmocka unit-test binary given, lets each print its own counts, and closes with
# one "unit: N passed, N failed, N skipped" line over all of them. Exit status non-zero on
# any failure, and on any skipped test when GODIS_FAIL_ON_SKIP=1 (CI: .ci/run), where every
# dependency a test may skip for is present.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/counts.sh"
# The test environment's loopback guard: no unit test may dial outside 127.0.0.0/8.
export GODIS_LOOPBACK_ONLY=1
pass=0; fail=0; skipped=0; bad=(); skippers=()
for t in "$@"; do
  # A hung binary fails with a message instead of holding the run (and CI) until its limit.
  out=$(timeout -k 10 "${UNIT_TIMEOUT:-300}" "$t" 2>&1); rc=$?
  printf '%s\n' "$out"
  [ $rc -ne 124 ] || echo "$t: timed out after ${UNIT_TIMEOUT:-300} s" >&2
  p=$(count_of PASSED "$out")
  f=$(count_of FAILED "$out")
  k=$(count_of SKIPPED "$out")
  pass=$((pass+p)); fail=$((fail+f)); skipped=$((skipped+k))
  [ "$k" -eq 0 ] || skippers+=("$t")
  if [ $rc -ne 0 ]; then bad+=("$t"); [ "$f" -eq 0 ] && fail=$((fail+1)); fi
done
echo "unit: $pass passed, $fail failed, $skipped skipped"
[ ${#bad[@]} -eq 0 ] || { echo "failing test binaries: ${bad[*]}" >&2; exit 1; }
fail_on_skip "$skipped" ${skippers[@]+"${skippers[@]}"} || exit 1
