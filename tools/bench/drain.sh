#!/usr/bin/env bash
# drain.sh — `make bench-drain` (issue 19.5): the figures of `kubectl drain` on godis clusters,
# from one run of bin/tests/itest_drain (tests/integration/itest_drain.c: Debian's kubectl,
# 3 nodes, godis-manager with the eviction webhook), each printed and appended as one JSON
# line ({"name","value","unit"}) to bench/results/drain.jsonl:
#
#   drain_node_1_member_ms          kubectl drain of a node holding 1 member of a 3-member cluster
#   drain_node_2_members_ms         ... holding 2 members of it (anti-affinity could not spread it)
#   drain_node_10_clusters_ms       ... holding a member of each of 10 clusters
#   drain_members_unavailable_max   members of one cluster's Raft membership not answering, at
#                                   most, over every 100 ms sample of the three drains above
#   drain_pdb_alone_samples_without_quorum  the same drain with the webhook down (PDB alone):
#                                   samples in which a majority did not answer (not promised)
#   webhook_eviction_p99_ms         API server's answer to an eviction (webhook call included),
#                                   99th percentile of 100 evictions sent at once
#   webhook_answer_p99_ms           the webhook's own answer time (its log), 99th percentile
#                                   over every review of the run
# Uses the running devcluster, or starts one (3 nodes) and stops it again.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
OUT=$ROOT/bench/results/drain.jsonl
STARTED=0
log() { printf '[bench-drain] %s\n' "$*" >&2; }
cleanup() { if [ "$STARTED" = 1 ]; then tools/devcluster down || true; fi; }
trap cleanup EXIT
if ! tools/devcluster status >/dev/null 2>&1; then
  log "starting a devcluster"
  tools/devcluster up --nodes 3
  STARTED=1
fi
eval "$(tools/devcluster env)"
out=$(bin/tests/itest_drain 2>&1) || { printf '%s\n' "$out" | tail -40 >&2; log "itest_drain failed"; exit 1; }
mkdir -p "$(dirname "$OUT")"
: >"$OUT"
emit() { printf '{"name":"%s","value":%s,"unit":"%s"}\n' "$1" "$2" "$3" | tee -a "$OUT"; }
fig() {  # fig SCENARIO FIELD
  printf '%s\n' "$out" | sed -n "s/^drain-figure: $1 .*$2=\([0-9]*\).*/\1/p" | head -1
}
emit drain_node_1_member_ms "$(fig one-member-on-node drain_ms)" ms
emit drain_node_2_members_ms "$(fig two-members-on-node drain_ms)" ms
emit drain_node_10_clusters_ms "$(fig ten-clusters drain_ms)" ms
worst=0
for s in one-member-on-node two-members-on-node ten-clusters; do
  v=$(fig "$s" max_unavailable); [ "${v:-0}" -gt "$worst" ] && worst=$v
done
emit drain_members_unavailable_max "$worst" members
emit drain_pdb_alone_samples_without_quorum "$(fig pdb-alone-one-member-on-node samples_without_quorum)" samples
emit webhook_eviction_p99_ms "$(fig webhook-100-evictions p99_ms)" ms
logdir=$(printf '%s\n' "$out" | sed -n 's/^drain: logs in //p' | head -1)
p99=$(grep -o 'msg="eviction reviewed".* ms=[0-9]*' "$logdir/manager.log" | sed 's/.* ms=//' | sort -n |
      awk '{a[NR]=$1} END {if (NR) print a[int((NR-1)*0.99)+1]; else print 0}')
emit webhook_answer_p99_ms "$p99" ms
