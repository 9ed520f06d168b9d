# Dying memory cgroups on Linux 6.12: the patch series, its kselftests and
# the QEMU harness that proves them.  `make help` lists the targets.

KERNEL ?= patched
TESTS  ?=
BUILD  ?= $(CURDIR)/build
export BUILD TESTS

RUN := qemu-run
# make fleet: three slices (services, batch jobs, users), each its own mix, at 100 jobs/s
FLEET ?= gens=1500 slices=3 mix=log,read,sock/anon,tmpfs,fork/files,neg,log rate=100

.DEFAULT_GOAL := help
.PHONY: oracle bench-jobs bench-offline bench-irqsoff fleet db-downsample lava \
	lava-run lava-collect kcidb run nightly nightly-flaky help deps stress bench \
	repeat readme-figures series-check selftests-patch kernels kernel guest \
	kselftest soak test check report report-check db-check clean distclean shell deb

##@ Run: the main jobs

run: deps ## the main job: both kernels, the same soak on each, the dashboard
	@$(RUN)/jobs/run.sh

nightly: deps ## long soak (SECS, 3600) on both kernels and every oracle scenario
	@NIGHTLY=1 $(RUN)/jobs/run.sh

fleet: deps ## fleet-shaped soak (FLEET: slices, a job mix each, a rate) on both kernels
	@SOAK='$(FLEET)' $(RUN)/jobs/soak.sh original
	@SOAK='$(FLEET)' $(RUN)/jobs/soak.sh patched
	@python3 db/downsample.py --budget $(or $(BUDGET),40) --older-than $(or $(OLDER_THAN),7)
	@$(MAKE) -s report

nightly-flaky: deps ## REPEAT (20) runs of the flaky-listed kselftests on both kernels, compared
	@$(RUN)/jobs/flaky-nightly.sh

report: ## render the dashboard from the runs database: build/report/index.html
	@$(RUN)/deps.sh report
	@python3 reports/report.py

##@ Test: does it work

test: deps check ## the full test: both kernels, kselftests, oracle, short soak (CI runs it)
	@$(RUN)/jobs/test.sh

check: deps ## fast host-side checks, no kernel build
	@$(RUN)/check.sh

kselftest: deps ## boot KERNEL in QEMU, run the cgroup kselftests, check the matrix
	@$(RUN)/jobs/kselftest.sh $(KERNEL) "$(TESTS)"

repeat: deps ## run TESTS (the reparent binaries) REPEAT (10) times in one boot, count
	@REPEAT=$(or $(REPEAT),10) $(RUN)/jobs/kselftest.sh $(KERNEL) "$(or $(TESTS),test_memcg_reparent_slab test_memcg_reparent_lru test_memcg_reparent_pins test_memcg_reparent_reclaim)"

oracle: deps ## differential oracle: scenarios/*.scn on both kernels (SCENARIOS, ORACLE_SET)
	@$(RUN)/jobs/oracle.sh $(SCENARIOS)

stress: deps ## reliability run on KERNEL (debug) for STRESS_SECS (1800), with the audit
	@$(RUN)/jobs/stress.sh $(if $(filter command line,$(origin KERNEL)),$(KERNEL),debug)

series-check: deps ## every prefix applies, passes checkpatch, builds, boots (SERIES_BUILD=objects)
	@$(RUN)/series/series-check.sh

##@ Measure: original vs patched

soak: deps ## churn soak on KERNEL: GENS SECS SOAK_JOBS MIX HOG_MB SEED SAMPLE_EVERY MEM
	@$(RUN)/jobs/soak.sh $(KERNEL)

bench: deps ## original vs patched: offline cost, fast paths, churn (ROUNDS boots each)
	@$(RUN)/jobs/bench.sh

bench-jobs: deps ## a job's whole life in a memcg, ROUNDS (10) boots of each kernel
	@ROUNDS=$(or $(ROUNDS),10) BENCH_CHURN=0 $(RUN)/jobs/bench.sh parts=fast fast_tests=jobs,spin

bench-offline: deps ## offline cost over NODES ("1 2 4 8") x DEAD ("0 100 1000"), instructions
	@$(RUN)/jobs/offline-axes.sh

bench-irqsoff: deps ## longest irqs-off section at offline on the same axes (irqsoff tracer)
	@IRQSOFF=1 $(RUN)/jobs/offline-axes.sh

##@ Lab and results: other systems, the database

lava: deps kernels guest ## write the LAVA job definitions and guest disks, checked with the schema
	@python3 $(RUN)/lab/lava.py write

lava-run: deps ## run one LAVA job here through lava-run and store it: LAVA_JOB KERNEL
	@$(RUN)/lab/lava-run.sh $(or $(LAVA_JOB),soak) $(KERNEL)

lava-collect: ## store a finished LAVA job in the runs database: JOB=job.yaml LOG=log
	@python3 db/lava_collect.py --job "$(JOB)" --log "$(LOG)"

kcidb: ## export the runs database as KCIDB v5.3 JSON (build/kcidb/kcidb.json), checked
	@$(RUN)/deps.sh report
	@python3 reports/kcidb.py --out $(BUILD)/kcidb/kcidb.json

db-check: ## check the runs database (integrity, every run whole), say what it holds
	@python3 db/check.py

db-downsample: ## keep BUDGET (40) snapshots of soaks older than OLDER_THAN (7) days
	@python3 db/downsample.py --budget $(or $(BUDGET),40) --older-than $(or $(OLDER_THAN),7)

readme-figures: ## write RESULTS.md's measured tables and soak plot from the runs database (ONLY)
	@$(RUN)/deps.sh report
	@python3 reports/readme.py $(if $(ONLY),--only '$(ONLY)')

report-check: report ## load the dashboard in headless Chromium: every plot and link resolves
	@python3 reports/tests/browser_check.py --self-test
	@python3 reports/tests/browser_check.py $(BUILD)/report/index.html --screenshot $(BUILD)/report/screenshot.png

##@ Develop: build, boot, edit the series

deps: ## install the Debian packages everything needs (or say which)
	@$(RUN)/deps.sh all

kernels: deps ## build the original and patched kernels (about 11 min each)
	@$(RUN)/kernel/build.sh original
	@$(RUN)/kernel/build.sh patched

deb: ## original, patched from Debian's config (DEB_FLAVOUR) as .debs: 52 min (original)
	@$(RUN)/kernel/deb.sh original
	@$(RUN)/kernel/deb.sh patched

kernel: deps ## build one kernel: KERNEL=original|patched|debug
	@$(RUN)/kernel/build.sh $(KERNEL)

guest: deps ## build the guest initramfs and the static cgroup kselftests
	@$(RUN)/guest/image.sh

shell: deps ## boot KERNEL with a shell on the console (interactive)
	@$(RUN)/kernel/build.sh $(KERNEL) && $(RUN)/guest/image.sh && $(RUN)/boot/shell.sh $(KERNEL)

selftests-patch: ## regenerate patch 1 from selftests/, and the cover letter's diffstat
	@$(RUN)/series/selftests-sync.sh patch
	@$(RUN)/series/cover-tail.sh

clean: ## remove the runs and kernel builds (keeps the extracted trees)
	rm -rf $(BUILD)/runs $(BUILD)/kernel $(BUILD)/guest

distclean: ## remove everything generated, the trees too
	rm -rf $(BUILD)

help: ## list the targets by task
	@echo "usage: make TARGET [KERNEL=original|patched|debug] [TESTS='test_kmem ...']"
	@awk '/^##@ / { sub(/^##@ /, ""); printf "\n%s\n", $$0; next } \
		/^[a-z-]+:.*## / { t = $$0; sub(/:.*/, "", t); h = $$0; sub(/^[^#]*## /, "", h); \
		printf "  %-17s%s\n", t, h }' $(MAKEFILE_LIST)
