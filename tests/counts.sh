# counts.sh — sourced by run-unit.sh and run-integration.sh: one test binary's cmocka
# counts, and the closing rule for skipped tests.

# count_of WORD OUTPUT: the sum of cmocka's "[  WORD  ] N test(s)" lines in OUTPUT.
count_of() {
  printf '%s\n' "$2" | sed -n "s/^\[ *$1 *\] \([0-9]*\) test.*/\1/p" | awk '{s+=$1} END{print s+0}'
}

# fail_on_skip N WHERE...: with GODIS_FAIL_ON_SKIP=1 (CI, where every dependency a test may
# skip for is present) any skipped test fails the run.
fail_on_skip() {
  local n=$1; shift
  if [ "$n" -gt 0 ] && [ "${GODIS_FAIL_ON_SKIP:-0}" = 1 ]; then
    echo "GODIS_FAIL_ON_SKIP=1: tests were skipped in $*" >&2
    return 1
  fi
  return 0
}
