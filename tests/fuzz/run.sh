#!/usr/bin/env bash
# tests/fuzz/run.sh SECONDS TARGET... — runs each libFuzzer target for SECONDS (its corpus
# first: every seed and regression input of tests/fuzz/corpus/<t>/ is executed before any
# mutation), prints one line per target and closes with
#   fuzz: T targets, E execs, K crashes
# Exit status non-zero when any target crashed (ASan, UBSan, leak, timeout, OOM) or did not
# run. New interesting inputs go to build/fuzz/corpus/<t>/ (not the repo), crash inputs to
# build/fuzz/artifacts/<t>/: copy one into tests/fuzz/corpus/<t>/ once its bug is fixed.
set -u
secs=${1:?usage: run.sh SECONDS TARGET...}; shift
# The test environment's loopback guard: the RESP target dials its own 127.0.0.1 listener.
export GODIS_LOOPBACK_ONLY=1
# A leak is a crash; a UBSan report aborts (the targets are built -fno-sanitize-recover).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
targets=0; execs=0; crashes=0; bad=()
for bin in "$@"; do
  name=$(basename "$bin"); t=${name#fuzz_}
  seed=tests/fuzz/corpus/$t; work=build/fuzz/corpus/$t; art=build/fuzz/artifacts/$t
  mkdir -p "$seed" "$work" "$art"
  log=build/fuzz/$name.log
  opts=(-max_total_time="$secs" -print_final_stats=1 -timeout=25 -rss_limit_mb=2560
        -max_len=65536 -artifact_prefix="$art/" -close_fd_mask=0)
  [ -f "tests/fuzz/$t.dict" ] && opts+=(-dict="tests/fuzz/$t.dict")
  start=$(date +%s)
  "$bin" "${opts[@]}" "$work" "$seed" </dev/null >"$log" 2>&1
  rc=$?
  n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  corp=$(find "$work" "$seed" -type f | wc -l)
  targets=$((targets + 1)); execs=$((execs + ${n:-0}))
  if [ $rc -ne 0 ] || [ -z "$n" ]; then
    crashes=$((crashes + 1)); bad+=("$t")
    echo "fuzz $t: CRASH (exit $rc) after ${n:-?} execs; input in $art/, log $log:" >&2
    grep -E 'ERROR: |runtime error|SUMMARY|^ +#[0-9]+ ' "$log" | head -30 >&2
  fi
  echo "fuzz $t: ${n:-0} execs in $(( $(date +%s) - start )) s (${rate:-0}/s), corpus $corp inputs, $([ $rc -eq 0 ] && echo 0 || echo 1) crashes"
done
echo "fuzz: $targets targets, $execs execs, $crashes crashes"
[ $crashes -eq 0 ] || { echo "crashed targets: ${bad[*]}" >&2; exit 1; }
