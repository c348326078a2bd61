#!/usr/bin/env bash
# converge_rounds.sh — goal 1 of issue 23 as a ratio that a 5 % change can move: converge.sh
# CONVERGE_ROUNDS times (3) in a row, each round the operator's run, then its floor, then
# floor_writes, every one on a fresh control plane (converge.sh does that), so the three
# measurements of a round share the machine's state of that minute. One run's ratio swung
# by more than the 15 % the goal allows (2026-12-07's make bench: floor_writes 21.45 s, the
# operator 20.84, the floor 14.68 in one run; 15.92 / 23.98 / 15.07 in the next), so a
# single round cannot tell a 5 % gain from noise; the median of per-round ratios can
# see more, and the spread of the rounds says how much.
#
# Appends to bench/results/latest.jsonl every round's lines as converge.sh writes them (with
# "round": k and "rounds": N added), then, per figure pair, the median of the rounds'
# ratios and every round's ratio:
#
#   converge_ratio_<tag>                converge_<tag>_s / converge_floor_<tag>_s (goal 1)
#   converge_ratio_writable_<tag>       converge_<tag>_s / converge_floor_writable_<tag>_s:
#                                       both wait for every member to take a write
#   converge_ratio_pods_ready_<tag>     the run's pods_ready_all_s / converge_floor_<tag>_s:
#                                       the same end event (the last pod Ready)
#   converge_ratio_writes_<tag>         converge_<tag>_s / converge_floor_writes_<tag>_s: the
#                                       operator process's share (the same objects and writes)
#   converge_ratio_floor_writes_<tag>   converge_floor_writes_<tag>_s / converge_floor_<tag>_s:
#                                       the objects' share, no operator process
#   converge_ratio_equal_latency_<tag>  goal 1 with the machine's noise taken out: one fit of
#                                       every run's time on its pv_write_ms (the PV
#                                       controller's write latency, which sets every run's
#                                       pace and moves 6-14 ms between runs of one hour),
#                                       the operator's offset at the floors' median latency
#                                       (tools/bench/converge_fit.py says how)
#
# <tag> as in converge.sh (100x3, 100x3_local, 30x7, ...); its CONVERGE_* settings pass
# through. A round whose run did not converge or whose floor did not finish gives no ratio
# for that pair (the line says how many rounds did); exit 1 if any round failed.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=$ROOT/bench/results/latest.jsonl
ROUNDS=${CONVERGE_ROUNDS:-3}
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "[converge_rounds] CONVERGE_ROUNDS must be a positive integer, not '$ROUNDS'" >&2; exit 2; }
W=$(mktemp -d /tmp/bench-converge-rounds-XXXXXX)
trap 'rm -rf "$W"' EXIT
log() { printf '[converge_rounds] %s\n' "$*" >&2; }

failed=0
for k in $(seq 1 "$ROUNDS"); do
  log "round $k of $ROUNDS: the operator, its floor, floor_writes"
  CONVERGE_OUT=$W/round-$k.jsonl "$ROOT/tools/bench/converge.sh" || { failed=1; log "round $k: converge.sh failed"; }
  [ -s "$W/round-$k.jsonl" ] || continue
  jq -c --argjson k "$k" --argjson n "$ROUNDS" '. + {round: $k, rounds: $n}' "$W/round-$k.jsonl" >>"$W/all.jsonl"
done
[ -s "$W/all.jsonl" ] || { log "no round gave a figure"; exit 1; }
mkdir -p "$(dirname "$OUT")"
cat "$W/all.jsonl" >>"$OUT"
# The size's tag as converge.sh named its first figure (converge_<tag>_s), not derived again
# from the CONVERGE_* settings here.
TAG=$(jq -rs 'map(.name | select(startswith("converge_") and (startswith("converge_floor") | not) and endswith("_s")))
              | first // empty | ltrimstr("converge_") | rtrimstr("_s")' "$W/all.jsonl")
[ -n "$TAG" ] || { log "no round has the operator's figure (converge_<tag>_s)"; exit 1; }

# ratio NAME NUMERATOR_NAME[.FIELD] DENOMINATOR_NAME NOTE — per round: numerator / denominator
# when both lines are there; the summary line carries the median and every round's ratio.
ratio() {
  local name=$1 num=$2 den=$3 note=$4 field=value
  [[ "$num" == *.* ]] && { field=${num#*.}; num=${num%%.*}; }
  jq -cs --arg name "$name" --arg num "$num" --arg field "$field" --arg den "$den" \
    --arg note "$note" --argjson n "$ROUNDS" '
    def med: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
             else (.[length / 2 - 1] + .[length / 2]) / 2 end;
    [group_by(.round)[] |
      (map(select(.name == $num))[0][$field]) as $a | (map(select(.name == $den))[0].value) as $b |
      select($a != null and $b != null and $b > 0) |
      {round: .[0].round, ratio: ($a / $b * 1000 | round / 1000), numerator_s: $a, denominator_s: $b}] as $r |
    {name: $name, value: ($r | map(.ratio) | med | if . == null then null else . * 1000 | round / 1000 end), unit: "ratio", rounds: $n, rounds_with_ratio: ($r | length),
     min: ($r | map(.ratio) | min), max: ($r | map(.ratio) | max), per_round: $r,
     numerator: ($num + (if $field == "value" then "" else "." + $field end)), denominator: $den,
     note: $note}' "$W/all.jsonl"
}
for spec in \
  "converge_ratio_$TAG|converge_${TAG}_s|converge_floor_${TAG}_s|goal 1: the operator's convergence over the no-operator floor, median of interleaved rounds" \
  "converge_ratio_writable_$TAG|converge_${TAG}_s|converge_floor_writable_${TAG}_s|the operator's convergence over the floor's every-member-writable time (the same end test), median of rounds" \
  "converge_ratio_pods_ready_$TAG|converge_${TAG}_s.pods_ready_all_s|converge_floor_${TAG}_s|the operator run's last pod Ready over the floor's (the same end event), median of rounds" \
  "converge_ratio_writes_$TAG|converge_${TAG}_s|converge_floor_writes_${TAG}_s|the operator over its own objects and writes replayed with no operator process: the process's share, median of rounds" \
  "converge_ratio_floor_writes_$TAG|converge_floor_writes_${TAG}_s|converge_floor_${TAG}_s|the operator's objects and writes with no operator process over the floor: the objects' share, median of rounds"; do
  IFS='|' read -r name num den note <<<"$spec"
  line=$(ratio "$name" "$num" "$den" "$note")
  if [ "$(jq -r '.rounds_with_ratio' <<<"$line")" = 0 ]; then log "$name: no round has both figures"; continue; fi
  tee -a "$OUT" <<<"$line"
done
if line=$(python3 "$ROOT/tools/bench/converge_fit.py" "$TAG" "$W/all.jsonl"); then
  tee -a "$OUT" <<<"$(jq -c --argjson n "$ROUNDS" '. + {rounds: $n}' <<<"$line")"
else
  why=$(jq -r '.error // empty' <<<"$line" 2>/dev/null) || why=
  log "converge_ratio_equal_latency_$TAG: ${why:-converge_fit.py gave no line}"
fi
exit "$failed"
