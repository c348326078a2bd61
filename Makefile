# godis-operator — one Makefile for the whole tree.
# Sources are discovered by folder so a new module needs no Makefile edit:
#   common/*/*.c          -> build/<v>/libgodiscommon.a (base, k8s, proto, metrics, godis)
#   manager|informer|webhook|worker/**.c -> bin/godis-<dir> (worker: main.c, runtime/, godis/)
#   tools/<name>/*.c      -> bin/<name>      (a tools/ folder with C files)
#   worker/**.c + tests/support/worker/*.c + tools/bench/worker/*.c
#                         -> bin/tests/godis-worker (the worker with the test and benchmark
#                            reconciler sets; the shipped bin/godis-worker has none of them)
#   tests/unit/test_*.c   -> build/<v>/tests/test_*  (cmocka, linked with common + helpers)
CC      ?= gcc
ifeq ($(origin CC),default)
CC      := gcc
endif
V       ?= release
PKGS    := libcurl libcjson libzmq yaml-0.1 openssl libmicrohttpd gnutls libzstd
# pkg-config is asked when a recipe first needs the flags, not when this file is parsed: on
# a fresh machine the -dev packages (and pkg-config itself) arrive with tools/deps.sh, which
# the build runs first ($(STAMP_DEPS)), so flags read at parse time were empty and the
# first link failed. Asked once per make (the eval caches the answer); a failure stops the
# build with pkg-config's own message instead of an empty link line.
define pkg_config
$(eval _pc := $(shell pkg-config $(1) $(PKGS) 2>/dev/null || echo PKG-CONFIG-FAILED))$(if $(filter PKG-CONFIG-FAILED,$(_pc)),$(error pkg-config $(1) failed: $(shell pkg-config --print-errors --exists $(PKGS) 2>&1 | head -2) -- run tools/deps.sh (make deps)),$(_pc))
endef
PKG_CFLAGS = $(eval PKG_CFLAGS := $(call pkg_config,--cflags))$(PKG_CFLAGS)
PKG_LIBS   = $(eval PKG_LIBS := $(call pkg_config,--libs))$(PKG_LIBS)
# Headers are included by name: each folder of common/ is on every include path, the worker's
# two folders on the worker's, its tests' and its benchmarks'.
COMMON_DIRS := $(patsubst %/,%,$(sort $(dir $(wildcard common/*/*.h))))
WORKER_DIRS := worker/runtime worker/godis
WORKER_INC  := $(addprefix -I,$(WORKER_DIRS))
CFLAGS_BASE = -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter \
              $(addprefix -I,$(COMMON_DIRS)) $(PKG_CFLAGS)
LIBS    = $(PKG_LIBS) -lpthread -lm
ifeq ($(V),asan)
OPT     := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
else
OPT     := -O2 -g
endif
CFLAGS  ?=
ALL_CFLAGS = $(CFLAGS_BASE) $(OPT) $(CFLAGS)
LDFLAGS_ALL := $(OPT) $(LDFLAGS)
B       ?= build/$(V)-$(notdir $(CC))

COMMON_SRC := $(wildcard common/*/*.c)
COMMON_OBJ := $(COMMON_SRC:%.c=$(B)/%.o)
COMMON_LIB := $(B)/libgodiscommon.a
PROGS      := manager informer worker webhook
PROG_BINS  := $(foreach p,$(PROGS),$(if $(wildcard $(p)/*.c),bin/godis-$(p)))
prog_src    = $(wildcard $(1)/*.c $(1)/*/*.c)
TOOL_DIRS  := $(patsubst tools/%/,%,$(sort $(dir $(wildcard tools/*/*.c))))
TOOL_BINS  := $(foreach t,$(TOOL_DIRS),bin/$(t))
TEST_SRC   := $(wildcard tests/unit/test_*.c)
TEST_HELP  := $(filter-out $(TEST_SRC),$(wildcard tests/unit/*.c))
TEST_BINS  := $(TEST_SRC:tests/unit/%.c=$(B)/tests/%)
ifeq ($(V),asan)        # jemalloc is not linked under ASan: nothing for test_heap_jemalloc to test
TEST_BINS  := $(filter-out $(B)/tests/test_heap_jemalloc,$(TEST_BINS))
endif
ITEST_SRC  := $(wildcard tests/integration/itest_*.c)
ITEST_BINS := $(ITEST_SRC:tests/integration/%.c=bin/tests/%)
# Reconciler sets for tests (noop, sleepy) and the pipeline benchmark (bench): linked only
# into bin/tests/godis-worker, never into the shipped worker.
TEST_WORKER_SRC := $(wildcard tests/support/worker/*.c tools/bench/worker/*.c)
TEST_WORKER     := bin/tests/godis-worker
STAMP_DEPS := build/.deps-ok

# --version and godis_operator_build_info, injected with -D into common/base/gd_version.c only.
# The build date is the commit's, so a rebuild of one commit is the same binary
# (SOURCE_DATE_EPOCH overrides); all three can be given on make's command line (the image
# build has no .git). The stamp changes only when they do: nothing else recompiles.
GD_VERSION    ?= $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || echo v0.1.0-dev)
GD_GIT_COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
GD_BUILD_DATE ?= $(shell date -u -d @$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null || date +%s)} +%Y-%m-%dT%H:%M:%SZ)
GD_VERSION    := $(GD_VERSION)
GD_GIT_COMMIT := $(GD_GIT_COMMIT)
GD_BUILD_DATE := $(GD_BUILD_DATE)
VERSION_STAMP := build/.version

.PHONY: FORCE all deps test unit-test asan-test clang-build integration-test bench bench-drain demo clean fresh-check doc-check
all: $(STAMP_DEPS) $(PROG_BINS) $(TOOL_BINS) $(ITEST_BINS) $(TEST_WORKER) bin/kubectl-godis

# Installs every Debian package the build, the tests and the demo need. Idempotent: it only
# calls apt-get when something is missing, so every other target can depend on it.
deps:
	@tools/deps.sh
$(STAMP_DEPS): tools/deps.sh
	@tools/deps.sh && mkdir -p build && touch $@

$(B)/%.o: %.c | $(STAMP_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(VERSION_STAMP): FORCE
	@mkdir -p build; echo '$(GD_VERSION) $(GD_GIT_COMMIT) $(GD_BUILD_DATE)' | cmp -s - $@ || \
	  echo '$(GD_VERSION) $(GD_GIT_COMMIT) $(GD_BUILD_DATE)' >$@
$(B)/common/base/gd_version.o: $(VERSION_STAMP)
$(B)/common/base/gd_version.o: ALL_CFLAGS += -DGD_VERSION='"$(GD_VERSION)"' \
  -DGD_GIT_COMMIT='"$(GD_GIT_COMMIT)"' -DGD_BUILD_DATE='"$(GD_BUILD_DATE)"'

$(COMMON_LIB): $(COMMON_OBJ)
	@rm -f $@; ar rcs $@ $^

# bin/ is shared by every variant (release, asan, clang): the stamp holds the variant that
# linked it last, so switching variant relinks bin/ instead of leaving, say, ASan binaries in
# place for `make bench` or the integration tests (their objects would look up to date).
BIN_STAMP := bin/.variant
$(BIN_STAMP): FORCE
	@mkdir -p bin; echo '$(B)' | cmp -s - $@ || echo '$(B)' >$@
FORCE:
# Objects reached only through pattern rules are "intermediate" to make, which deletes them
# after linking and then rebuilds them on every run; keep them.
.SECONDARY:

.SECONDEXPANSION:
# Static pattern rules, so bin/% (tools) can never claim bin/godis-worker; foreach rather
# than patsubst because a % in a pattern rule's prerequisites is replaced by the stem.
$(PROG_BINS): bin/godis-%: $$(foreach f,$$(call prog_src,$$*),$(B)/$$(basename $$(f)).o) $(COMMON_LIB) $(BIN_STAMP)
	@mkdir -p bin
	$(CC) $(LDFLAGS_ALL) -o $@ $(filter %.o,$^) $(COMMON_LIB) $(LIBS)

$(TOOL_BINS): bin/%: $$(foreach f,$$(wildcard tools/$$*/*.c),$(B)/$$(basename $$(f)).o) $(COMMON_LIB) $(BIN_STAMP)
	@mkdir -p bin
	$(CC) $(LDFLAGS_ALL) -o $@ $(filter %.o,$^) $(COMMON_LIB) $(LIBS)

# The worker, the test sets, the tests and the benchmarks include the worker's headers
# (reconciler.h, cache.h, godis_plan.h, ...).
$(B)/worker/%.o $(B)/tests/%.o $(B)/tools/bench/%.o: ALL_CFLAGS += $(WORKER_INC)
# The worker runs on jemalloc (Debian's libjemalloc2). Its cache holds every watched object
# as a cJSON tree: millions of 64-byte nodes and short strings, each of which glibc's malloc
# pads with its chunk header and rounding (a node takes 80 bytes), and glibc's heap
# fragments as objects are replaced
# (tools/bench/scale.sh, 10 000 clusters' objects, 2026-12-03: RSS settled 595 MB on glibc,
# 492 MB on jemalloc; the load's CPU 1.8-3.5 s -> 1.2-1.3 s; in converge.sh the workers
# took 6.5-7.7 % of the run's CPU against 7.8-8.0 %). Not under ASan, whose allocator must
# serve every malloc.
# test_heap_jemalloc checks the trim on the same allocator.
ifneq ($(V),asan)
bin/godis-worker $(TEST_WORKER) $(B)/tests/test_heap_jemalloc: LIBS += -ljemalloc
endif
$(TEST_WORKER): $(patsubst %.c,$(B)/%.o,$(call prog_src,worker) $(TEST_WORKER_SRC)) $(COMMON_LIB) $(BIN_STAMP)
	@mkdir -p bin/tests
	$(CC) $(LDFLAGS_ALL) -o $@ $(filter %.o,$^) $(COMMON_LIB) $(LIBS)

# The kubectl plugin (`kubectl godis …`) is godisctl under the name kubectl looks for.
bin/kubectl-godis: bin/godisctl
	ln -sf godisctl $@

bin/tests/%: $(B)/tests/integration/%.o $$(foreach f,$$(wildcard tests/integration/[!i]*.c),$(B)/$$(basename $$(f)).o) $(COMMON_LIB) $(BIN_STAMP)
	@mkdir -p bin/tests
	$(CC) $(LDFLAGS_ALL) -o $@ $(filter %.o,$^) $(COMMON_LIB) $(LIBS) -lcmocka

# A unit test that tests parts of the programs through their headers links their objects:
# <test>_LINK lists them (paths without .c).
test_worker_control_LINK := worker/runtime/control
test_domain_LINK := worker/runtime/worker_opts
test_manager_rundir_LINK := manager/rundir
test_manager_config_LINK := manager/config
INFORMER_STORE_LINK := informer/store informer/store_pack
test_informer_store_LINK := $(INFORMER_STORE_LINK)
test_informer_reflector_LINK := $(INFORMER_STORE_LINK) informer/counters informer/reflector informer/watchline
test_gd_sub_LINK := $(INFORMER_STORE_LINK) informer/counters informer/publisher worker/runtime/cache worker/runtime/cache_sub
test_informer_pub_LINK := $(INFORMER_STORE_LINK) informer/counters informer/publisher
test_cache_LINK := worker/runtime/cache
test_cache_view_LINK := worker/runtime/cache
test_mapping_LINK := worker/runtime/cache worker/runtime/mapping
test_workqueue_LINK := worker/runtime/workqueue worker/runtime/workqueue_metrics
test_workqueue_priority_LINK := worker/runtime/workqueue worker/runtime/workqueue_metrics
test_shards_LINK := manager/shards
test_supervisor_LINK := manager/supervisor
test_manager_control_LINK := manager/control manager/shards
test_curve_LINK := tools/node-agent/agent_atomic tools/node-agent/agent_util tools/node-agent/agent_proc
test_curve_remote_LINK := manager/control manager/shards worker/runtime/control
test_manager_promtext_LINK := manager/promtext manager/statsclient
test_leaderelection_LINK := manager/leaderelection manager/leaselock
test_informer_pack_LINK := $(INFORMER_STORE_LINK)
test_informer_watchline_LINK := $(INFORMER_STORE_LINK) informer/watchline
test_controller_LINK := worker/runtime/workqueue worker/runtime/workqueue_metrics worker/runtime/controller worker/runtime/fence worker/runtime/keymetrics worker/runtime/cache worker/runtime/reconciler
test_shard_agree_LINK := manager/shards worker/runtime/cache worker/runtime/mapping
test_webhook_LINK := webhook/review webhook/decide webhook/certs webhook/register
test_webhook_server_LINK := webhook/review webhook/certs webhook/server webhook/cert_slot
test_webhook_rotation_LINK := webhook/rotation webhook/certs
test_node_agent_pod_LINK := tools/node-agent/agent_util tools/node-agent/agent_proc tools/node-agent/agent_atomic tools/node-agent/agent_pod tools/node-agent/agent_pod_volumes tools/node-agent/agent_pod_ctr tools/node-agent/agent_pod_status tools/node-agent/agent_workers
test_node_agent_proc_LINK := tools/node-agent/agent_util tools/node-agent/agent_proc
test_node_agent_util_LINK := tools/node-agent/agent_util
# What links the GodisCluster reconciler (its unit tests call it through its headers).
GODIS_CLUSTER_LINK := worker/godis/godis_children worker/godis/godis_plan worker/godis/godis_status worker/godis/godis_write worker/godis/godis_status_check worker/godis/godis_input worker/godis/godis_place worker/godis/godis_rollout worker/godis/godis_slots worker/godis/godis_metrics worker/godis/godis_reconcile_cluster worker/godis/godis_cluster_observe worker/godis/godis_retire worker/godis/godis_storage
test_godis_bootstrap_LINK := $(GODIS_CLUSTER_LINK)
test_godis_children_LINK := worker/godis/godis_children
test_godis_dial_LINK := $(GODIS_CLUSTER_LINK)
test_godis_plan_LINK := worker/godis/godis_plan tests/support/godis_plan_world
test_godis_plan_resume_LINK := worker/godis/godis_plan tests/support/godis_plan_world
test_godis_rollout_LINK := worker/godis/godis_children worker/godis/godis_plan worker/godis/godis_status worker/godis/godis_write worker/godis/godis_rollout worker/godis/godis_slots worker/godis/godis_metrics
test_godis_state_LINK := worker/godis/godis_children worker/godis/godis_write worker/godis/godis_reconcile_godis worker/godis/godis_retire
test_godis_storage_LINK := worker/godis/godis_storage worker/godis/godis_plan worker/godis/godis_children worker/godis/godis_status worker/godis/godis_write tests/support/godis_plan_world
test_godis_status_check_LINK := worker/godis/godis_status_check
test_godis_stray_LINK := $(GODIS_CLUSTER_LINK) tests/support/godis_fake_children
test_godis_status_writes_LINK := $(test_godis_stray_LINK)
test_godis_pdb_discovery_LINK := worker/godis/godis_pdb worker/godis/godis_write
test_godis_forget_memo_LINK := $(GODIS_CLUSTER_LINK) tests/support/godis_fake_children
test_godis_stop_probe_LINK := $(GODIS_CLUSTER_LINK) tests/support/godis_fake_children
test_godis_spread_LINK := worker/godis/godis_children worker/godis/godis_pdb worker/godis/godis_place
test_chaos_checks_LINK := tools/chaos/state tools/chaos/procs tools/chaos/faults tools/chaos/membership tools/chaos/audit tools/chaos/quorum
$(B)/tests/%: $(B)/tests/unit/%.o $(TEST_HELP:%.c=$(B)/%.o) $$(foreach o,$$($$*_LINK),$(B)/$$(o).o) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $(filter %.o,$^) $(COMMON_LIB) $(LIBS) -lcmocka

unit-test: $(STAMP_DEPS) $(TEST_BINS) $(PROG_BINS) $(TOOL_BINS)
	@tests/run-unit.sh $(TEST_BINS)

asan-test: $(STAMP_DEPS)
	@$(MAKE) --no-print-directory V=asan unit-test

clang-build: $(STAMP_DEPS)
	@$(MAKE) --no-print-directory CC=clang V=release all $(patsubst build/release-$(notdir $(CC))/%,build/release-clang/%,$(TEST_BINS))

integration-test: all
	@tests/run-integration.sh

# The README and docs/ link only inside the repository, and to what exists (issue 17.4).
doc-check:
	@tools/check-doc-links --self-test && tools/check-doc-links

# The README's test command: the doc links, unit tests (gcc), the same under ASan+UBSan, a warning-free
# clang build, every fuzz target briefly over its corpus, the integration tests on the
# local control plane, the short seeded chaos campaign, then valgrind over the unit tests
# and one operator scenario.
test: $(STAMP_DEPS)
	@$(MAKE) --no-print-directory doc-check
	@$(MAKE) --no-print-directory unit-test
	@$(MAKE) --no-print-directory asan-test
	@$(MAKE) --no-print-directory clang-build
	@$(MAKE) --no-print-directory fuzz-test
	@$(MAKE) --no-print-directory integration-test
	@$(MAKE) --no-print-directory chaos-test
	@$(MAKE) --no-print-directory valgrind

bench: all
	@tools/bench/run.sh

# kubectl drain on godis clusters (issue 19.5): drain times, members unavailable, webhook p99.
bench-drain: all
	@tools/bench/drain.sh

demo: all
	@tools/demo.sh

# The README's two commands on a fresh Debian 12 root (debootstrap, cached outside the clone):
# too slow for CI; run it before resolving an issue that touches the build or the tests.
fresh-check:
	@tools/fresh-machine-check

# The devcluster's run directory is build/devcluster: stop it first, or its processes would
# outlive their pid files.
clean:
	-@tools/devcluster down 2>/dev/null
	rm -rf build bin

-include tests/fuzz/fuzz.mk
-include tests/valgrind/valgrind.mk
-include tools/chaos/chaos.mk

-include $(shell find build -name '*.d' 2>/dev/null)
