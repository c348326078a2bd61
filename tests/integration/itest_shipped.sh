#!/usr/bin/env bash
# The shipped binaries carry no test code (issue 18.2). The test and benchmark reconciler sets
# (tests/support/, tools/bench/worker/) are linked only into bin/tests/godis-worker; this
# proves it from what the linker put into each binary, not from the Makefile:
#  1. no compilation unit of the shipped programs (bin/godis-<dir> of every program folder
#     the Makefile builds: manager, informer, worker, webhook; their DWARF, built with -g)
#     comes from tests/ or tools/, and none of the test sets' symbols is in their symbol table;
#  2. the same checks find them in bin/tests/godis-worker (so the checks can fail);
#  3. bin/godis-worker refuses the test sets by name (exit 2, "unknown reconciler set") and
#     its --help lists only "godis"; bin/tests/godis-worker accepts them.
# Needs no cluster. Prints one line per check and cmocka-style counts.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../../deploy/verify-lib.sh"   # ok, bad, dv_summary
cd "$DV_ROOT" || exit 1

SHIPPED=$(sed -n 's/^PROGS *:= *//p' Makefile | tr ' ' '\n' | sed '/^$/d; s|^|bin/godis-|' | tr '\n' ' ')
[ -n "$SHIPPED" ] || SHIPPED="bin/godis-manager bin/godis-informer bin/godis-worker"
TESTW=bin/tests/godis-worker
# Symbols only the test sets define (GD_RECONCILER_SET(var) defines var and var_register).
TEST_SYMS='^(noop_set|sleepy_set|bench_set)(_register)?$|^godis_env_api_init$'

units() {  # the source files a binary was compiled from (DW_AT_name of each unit)
  readelf --debug-dump=info "$1" 2>/dev/null |
    awk '/DW_TAG_compile_unit/ {cu=1; next} cu && /DW_AT_name/ {print $NF; cu=0}'
}
syms() { nm "$1" 2>/dev/null | awk '{print $NF}' | grep -E "$TEST_SYMS"; }

for b in $SHIPPED $TESTW; do
  [ -x "$b" ] || { bad "$b is not built (make)"; continue; }
done
for b in $SHIPPED; do
  [ -x "$b" ] || continue
  n=$(units "$b" | wc -l)
  foreign=$(units "$b" | grep -E '(^|/)(tests|tools)/' | tr '\n' ' ')
  if [ "$n" -eq 0 ]; then bad "$b: no debug information to read (built without -g?)"
  elif [ -n "$foreign" ]; then bad "$b: compiled from test/tool sources: $foreign"
  else ok "$b: $n compilation units, none from tests/ or tools/"; fi
  s=$(syms "$b" | tr '\n' ' ')
  if [ -n "$s" ]; then bad "$b: test symbols: $s"; else ok "$b: no test reconciler symbol"; fi
done
if [ -x "$TESTW" ]; then
  u=$(units "$TESTW" | grep -cE 'tests/support/worker/|tools/bench/worker/')
  s=$(syms "$TESTW" | wc -l)
  if [ "$u" -ge 2 ] && [ "$s" -ge 4 ]; then ok "$TESTW: the test sets are found ($u units, $s symbols)"
  else bad "$TESTW: the checks do not find the test sets ($u units, $s symbols)"; fi
fi

if [ -x bin/godis-worker ]; then
  for set in noop sleepy bench; do
    out=$(bin/godis-worker --runtime-dir /tmp --reconciler "$set" 2>&1); rc=$?
    if [ $rc -eq 2 ] && [[ "$out" == *"unknown reconciler set \"$set\""* ]]; then
      ok "bin/godis-worker --reconciler $set: exit 2, unknown reconciler set"
    else bad "bin/godis-worker --reconciler $set: exit $rc: $out"; fi
  done
  help=$(bin/godis-worker --help 2>&1)
  line=$(printf '%s\n' "$help" | grep -A1 -- '--reconciler NAME' | tr '\n' ' ')
  if [[ "$line" == *"godis ("* ]] && ! [[ "$line" =~ (noop|sleepy|bench)\ \( ]]; then
    ok "bin/godis-worker --help: reconciler sets: godis only"
  else bad "bin/godis-worker --help lists: $line"; fi
fi
if [ -x "$TESTW" ]; then
  help=$("$TESTW" --help 2>&1)
  if [[ "$help" == *"noop ("* && "$help" == *"sleepy ("* && "$help" == *"bench ("* && "$help" == *"godis ("* ]]; then
    ok "$TESTW --help: godis, noop, sleepy, bench"
  else bad "$TESTW --help does not list the four sets"; fi
fi

dv_summary shipped
[ "$fail" -eq 0 ]
