# lib.sh — what the benchmark scripts share, sourced by them (". "$ROOT/tools/bench/lib.sh")
# once they are at the repository root. One copy, so two benchmarks that run the operator
# the same way keep doing so when its flags change.

# bench_replay_manager LOG KINDS WORKERS [FLAG...]: starts a manager, in the background of
# the calling shell (so its EXIT trap can stop it by pid), over the replay source's
# kubeconfig $RUN/replay.kc, without leader election: informers for KINDS (comma-separated)
# and WORKERS local workers of bin/tests/godis-worker running the bench reconciler (which
# writes $RUN/bench.json), its runtime in $RUN/rt, /metrics on 127.0.0.1:$((PORT + 19)),
# warnings appended to LOG. FLAGs are more manager flags. Its pid goes to BENCH_MGR and to
# the caller's PIDS array. Needs ROOT, RUN, PORT and PIDS.
bench_replay_manager() {
  local log=$1 kinds=$2 workers=$3
  shift 3
  "$ROOT/bin/godis-manager" --kubeconfig "$RUN/replay.kc" --leader-elect=false --informer-kinds "$kinds" \
    --workers "$workers" --worker-bin "$ROOT/bin/tests/godis-worker" "$@" \
    --worker-arg "--reconciler bench --reconciler-arg out=$RUN/bench.json,expect=0" \
    --runtime-dir "$RUN/rt" --metrics-bind-address "127.0.0.1:$((PORT + 19))" \
    --health-probe-bind-address 0 --log-level warn >>"$log" 2>&1 &
  BENCH_MGR=$!
  PIDS+=("$BENCH_MGR")
}
