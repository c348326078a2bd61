# tools/chaos/chaos.mk — the chaos suite (issue 21.1). Included by the top Makefile.
#   make chaos CHAOS_FAULTS=N CHAOS_SEED=S   a campaign of N faults (default 200, seed 1);
#                                           ends "chaos: F faults, C checks, V violations,
#                                           converged in T s"
#   make chaos-test                         the short seeded campaign make test runs
CHAOS_FAULTS ?= 200
CHAOS_SEED ?= 1
CHAOS_TEST_FAULTS ?= 30
CHAOS_TEST_SEED ?= 21
.PHONY: chaos chaos-test
chaos: all
	@tools/chaos/chaos.sh $(CHAOS_FAULTS) $(CHAOS_SEED)
chaos-test: all
	@tools/chaos/chaos.sh $(CHAOS_TEST_FAULTS) $(CHAOS_TEST_SEED)
