# lib.sh — what the benchmark scripts share, sourced by them (". "$ROOT/tools/bench/lib.sh")
# once they are at the repository root. One copy, so two benchmarks that run the operator
# the same way keep doing so when its flags change.

# bench_emit NAME VALUE UNIT [BASELINE [LABEL]]: one figure, appended to $BENCH_OUT as
# {"name","value","unit"[,"baseline"],"load1"} and printed as a line of the table. load1 is
# the machine's 1-minute load average when it was written: on a shared machine a figure means
# little without it. LABEL names the baseline in the printed line (default "baseline").
bench_emit() {
  local load; read -r load _ </proc/loadavg
  if [ -n "${4:-}" ]; then
    printf '{"name":"%s","value":%s,"unit":"%s","baseline":%s,"load1":%s}\n' "$1" "${2:-0}" "$3" "$4" "$load" >>"$BENCH_OUT"
  else
    printf '{"name":"%s","value":%s,"unit":"%s","load1":%s}\n' "$1" "${2:-0}" "$3" "$load" >>"$BENCH_OUT"
  fi
  local base=""
  [ -n "${4:-}" ] && base=$(printf '%s %-9s ' "${5:-baseline}" "$4")
  printf '  %-36s %14s %-9s %sload %s\n' "$1" "${2:-?}" "$3" "$base" "$load"
}

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

# The process table of a benchmark that starts processes: every background process is started
# in the calling shell (never in a $(...) subshell, which the EXIT trap would not cover) and
# remembered in PIDS; on exit the trap stops those still our children, and the devcluster
# when the script set STARTED=1 after starting one. Sets PIDS=() STARTED=0 and the traps.
bench_process_table() {
  PIDS=() STARTED=0
  trap bench_stop_all EXIT
  trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM
}
bench_is_our_child() { local ppid=; read -r _ _ _ ppid _ 2>/dev/null <"/proc/$1/stat"; [ "$ppid" = "$$" ]; }
bench_stop_all() {
  local p
  for p in ${PIDS[@]+"${PIDS[@]}"}; do bench_is_our_child "$p" && { kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; }; done
  PIDS=()
  if [ "$STARTED" = 1 ]; then "$ROOT/tools/devcluster" down >/dev/null 2>&1; STARTED=0; fi
}
stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
# until_true SECONDS CMD...: polls CMD every 50 ms; false when it never held
until_true() {
  local end=$((SECONDS + $1)); shift
  while ! "$@"; do [ $SECONDS -lt $end ] || return 1; sleep 0.05; done
}

# bench_replay_start ARGS...: starts bin/pipeline-replay ARGS in the calling shell (RPID, and
# PIDS) and, once it printed its port, writes $RUN/replay.kc for it (namespace NS when
# BENCH_REPLAY_NS is set). Needs RUN.
bench_replay_start() {
  rm -f "$RUN/replay.port"          # the previous run's port must not be read for this one's
  "$ROOT/bin/pipeline-replay" "$@" >"$RUN/replay.port" &
  RPID=$!; PIDS+=("$RPID")
  until_true 10 test -s "$RUN/replay.port" || return 1
  cat >"$RUN/replay.kc" <<KC
apiVersion: v1
kind: Config
clusters: [{name: replay, cluster: {server: "http://127.0.0.1:$(cat "$RUN/replay.port")"}}]
users: [{name: nobody, user: {}}]
contexts: [{name: replay, context: {cluster: replay, user: nobody${BENCH_REPLAY_NS:+, namespace: $BENCH_REPLAY_NS}}}]
current-context: replay
KC
}
