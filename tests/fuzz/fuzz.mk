# tests/fuzz/fuzz.mk — libFuzzer targets for every parser fed from outside (issue 21.2).
# Included by the top Makefile. Each tests/fuzz/fuzz_<t>.c is one target, built with clang
# -fsanitize=fuzzer,address,undefined against its own sanitised copy of common/ (the
# runtime is Debian's libclang-rt-14-dev, installed by tools/deps.sh). Product files of
# manager/, informer/ and worker/ are #included by the targets: each needs them compiled
# with the fuzzer instrumentation, which the programs' own objects do not have.
#   make fuzz FUZZ_SECONDS=N   every target N seconds; ends "fuzz: T targets, E execs, K crashes"
#   make fuzz-test             every target over its corpus plus FUZZ_TEST_SECONDS (make test)
# Corpora: tests/fuzz/corpus/<t>/ (seeds and every crash as a regression input) is read,
# new inputs go to build/fuzz/corpus/<t>/, crashes to build/fuzz/artifacts/<t>/.
FUZZ_CC      := clang
FUZZ_B       := build/fuzz
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS   = -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter \
                $(addprefix -I,$(COMMON_DIRS)) $(WORKER_INC) $(PKG_CFLAGS) -O1 -g $(FUZZ_SAN)
FUZZ_SRC     := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS    := $(FUZZ_SRC:tests/fuzz/%.c=$(FUZZ_B)/%)
FUZZ_COMMON  := $(COMMON_SRC:%.c=$(FUZZ_B)/%.o)
FUZZ_SECONDS ?= 60
FUZZ_TEST_SECONDS ?= 3

.PHONY: fuzz fuzz-build fuzz-test
$(FUZZ_B)/common/%.o: common/%.c | $(STAMP_DEPS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@
$(FUZZ_B)/libcommon.a: $(FUZZ_COMMON)
	@rm -f $@; ar rcs $@ $^
$(FUZZ_B)/%.o: tests/fuzz/%.c | $(STAMP_DEPS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@
$(FUZZ_B)/fuzz_%: $(FUZZ_B)/fuzz_%.o $(FUZZ_B)/libcommon.a
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $< $(FUZZ_B)/libcommon.a $(PKG_LIBS) -lpthread -lm

fuzz-build: $(STAMP_DEPS) $(FUZZ_BINS)
fuzz: fuzz-build
	@tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_BINS)
fuzz-test: fuzz-build
	@tests/fuzz/run.sh $(FUZZ_TEST_SECONDS) $(FUZZ_BINS)
