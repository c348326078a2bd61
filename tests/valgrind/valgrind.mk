# tests/valgrind/valgrind.mk — valgrind memcheck over the unit tests and one integration
# scenario (issue 21.3). Included by the top Makefile.
#   make valgrind   every unit-test binary (gcc, -O2 -g), then tests/valgrind/scenario.sh
#                   (manager, 9 informers and a worker under memcheck on the devcluster)
# Each closes with a "valgrind unit: ..." / "valgrind scenario: ..." line; 0 errors and 0 bytes
# definitely or indirectly lost are required.
.PHONY: valgrind valgrind-unit valgrind-scenario
valgrind-unit: $(STAMP_DEPS) $(TEST_BINS) $(PROG_BINS) $(TOOL_BINS)
	@tests/valgrind/run-unit.sh $(TEST_BINS)
valgrind-scenario: all
	@tests/valgrind/scenario.sh
valgrind:
	@$(MAKE) --no-print-directory valgrind-unit
	@$(MAKE) --no-print-directory valgrind-scenario
