#!/usr/bin/env bash
# tests/valgrind/run-unit.sh TEST... — every cmocka unit-test binary under valgrind memcheck.
# A binary passes when its tests pass and memcheck reports 0 errors and 0 bytes definitely
# or indirectly lost (--errors-for-leak-kinds=definite,indirect makes a leak an error, so
# "ERROR SUMMARY: 0 errors" covers both). Still-reachable blocks (library singletons: libcurl,
# OpenSSL, ZeroMQ contexts kept for the process) and "possibly lost" are not errors.
# Closes with "valgrind unit: N binaries clean, N with errors, E errors".
set -u
export GODIS_LOOPBACK_ONLY=1
# Tests with deadlines stretch them by this factor: the code runs 20-50x slower under
# memcheck, more on a busy machine.
export GD_TEST_TIME_SCALE=${GD_TEST_TIME_SCALE:-10}
dir=build/valgrind; mkdir -p "$dir"
clean=0; dirty=0; errors=0; bad=()
for t in "$@"; do
  name=$(basename "$t"); log=$dir/$name.vg
  # --soname-synonyms: test_heap_jemalloc links jemalloc, as the worker does.
  # A hung binary fails the stage with a message instead of holding CI until its limit.
  out=$(timeout -k 10 "${VALGRIND_TIMEOUT:-900}" valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect \
        --errors-for-leak-kinds=definite,indirect --track-origins=yes --num-callers=30 \
        --error-exitcode=99 --child-silent-after-fork=yes '--soname-synonyms=somalloc=*jemalloc*' \
        --suppressions=tests/valgrind/godis.supp --log-file="$log" "$t" 2>&1); rc=$?
  [ $rc -ne 124 ] || echo "valgrind $name: timed out after ${VALGRIND_TIMEOUT:-900} s" >&2
  e=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$log" | tail -1)
  def=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$log" | tail -1)
  ind=$(sed -n 's/.*indirectly lost: \([0-9,]*\) bytes.*/\1/p' "$log" | tail -1)
  failed=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
  if [ "$rc" -eq 0 ] && [ "${e:-x}" = 0 ]; then
    clean=$((clean + 1))
    echo "valgrind $name: 0 errors, definitely lost ${def:-0} bytes, indirectly lost ${ind:-0} bytes"
  else
    dirty=$((dirty + 1)); errors=$((errors + ${e:-1})); bad+=("$name")
    echo "valgrind $name: exit $rc, ${e:-?} errors, ${failed:-0} failed tests (log $log)"
    printf '%s\n' "$out" | grep -E '^\[  (FAILED|ERROR) ' | head -5
    grep -E '^==[0-9]+== (Invalid|Conditional|Syscall|Mismatched|Source|[0-9,]+ bytes in)|^==[0-9]+==    (at|by) ' "$log" | head -20
  fi
done
echo "valgrind unit: $clean binaries clean, $dirty with errors, $errors errors"
[ $dirty -eq 0 ] || { echo "valgrind: errors in ${bad[*]}" >&2; exit 1; }
