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
run: deps ## the main job: both kernels, the same soak on each, the dashboard
	@$(RUN)/jobs/run.sh

nightly: deps ## the long soak (SECS, default 3600 s) on both kernels and every oracle scenario, stored
	@NIGHTLY=1 $(RUN)/jobs/run.sh

fleet: deps ## a fleet-shaped soak on both kernels (FLEET: parent slices, a job mix per slice, a rate), old soaks downsampled, the dashboard
	@SOAK='$(FLEET)' $(RUN)/jobs/soak.sh original
	@SOAK='$(FLEET)' $(RUN)/jobs/soak.sh patched
	@python3 db/downsample.py --budget $(or $(BUDGET),40) --older-than $(or $(OLDER_THAN),7)
	@$(MAKE) -s report

db-downsample: ## keep at most BUDGET (40) snapshots of the soaks older than OLDER_THAN (7) days; their figures stay
	@python3 db/downsample.py --budget $(or $(BUDGET),40) --older-than $(or $(OLDER_THAN),7)

nightly-flaky: deps ## REPEAT (20) runs of the flaky-listed kselftests on both kernels; fails when patched fails one significantly more often (reports/flaky.py)
	@$(RUN)/jobs/flaky-nightly.sh

.PHONY: oracle bench-jobs bench-offline bench-irqsoff fleet db-downsample lava lava-run lava-collect kcidb run nightly nightly-flaky help deps stress bench repeat readme-figures series-check selftests-patch kernels kernel guest kselftest soak test check report report-check db-check clean distclean shell

help: ## list the targets
	@echo "usage: make TARGET [KERNEL=original|patched|debug] [TESTS='test_kmem ...']"
	@echo
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | \
		awk -F':.*## ' '{ printf "  %-12s %s\n", $$1, $$2 }'

deps: ## install the Debian packages everything needs (or say which)
	@$(RUN)/deps.sh all

kernels: deps ## build the original and patched kernels
	@$(RUN)/kernel/build.sh original
	@$(RUN)/kernel/build.sh patched

kernel: deps ## build one kernel: KERNEL=original|patched|debug
	@$(RUN)/kernel/build.sh $(KERNEL)

guest: deps ## build the guest initramfs and the static cgroup kselftests
	@$(RUN)/guest/image.sh

kselftest: deps ## boot KERNEL in QEMU, run the cgroup kselftests, check the matrix
	@$(RUN)/jobs/kselftest.sh $(KERNEL) "$(TESTS)"

repeat: deps ## run TESTS (default the four test_memcg_reparent_* binaries) REPEAT=10 times in one boot of KERNEL, count outcomes
	@REPEAT=$(or $(REPEAT),10) $(RUN)/jobs/kselftest.sh $(KERNEL) "$(or $(TESTS),test_memcg_reparent_slab test_memcg_reparent_lru test_memcg_reparent_pins test_memcg_reparent_reclaim)"

oracle: deps ## the differential oracle: scenarios/*.scn on original and patched, live cgroups compared (SCENARIOS, ORACLE_SET=short)
	@$(RUN)/jobs/oracle.sh $(SCENARIOS)

soak: deps ## boot KERNEL, run the churn soak: GENS SECS SOAK_JOBS MIX HOG_MB SEED SAMPLE_EVERY SOAK MEM
	@$(RUN)/jobs/soak.sh $(KERNEL)

series-check: deps ## every prefix of the series applies, passes checkpatch, builds and boots (slow; SERIES_KERNEL=debug; SERIES_BUILD=objects: compile only the files each prefix changes, no boot)
	@$(RUN)/series/series-check.sh

stress: deps ## the reliability run: KERNEL (default debug) under cgroup churn, reclaim, writeback, migration, swap and OOM for STRESS_SECS (1800)
	@$(RUN)/jobs/stress.sh $(if $(filter command line,$(origin KERNEL)),$(KERNEL),debug)

bench: deps ## original vs patched, side by side: offline cost vs page cache size, fast paths, churn (ROUNDS boots each)
	@$(RUN)/jobs/bench.sh

bench-jobs: deps ## fast.jobs (a job's whole life in a memcg) and the control alone, ROUNDS (default 10) boots of each kernel: its rate moves from boot to boot, and resolves 0.5% only over many
	@ROUNDS=$(or $(ROUNDS),10) BENCH_CHURN=0 $(RUN)/jobs/bench.sh parts=fast fast_tests=jobs,spin

bench-offline: deps ## the offline cost on its axes: NODES (numa=fake, "1 2 4 8") x DEAD (dead memcgs below, "0 100 1000"), original vs patched, instruction counts
	@$(RUN)/jobs/offline-axes.sh

bench-irqsoff: deps ## the longest irqs-off section at offline on the same axes, original vs patched built with the irqsoff tracer
	@IRQSOFF=1 $(RUN)/jobs/offline-axes.sh

shell: deps ## boot KERNEL with a shell on the console (interactive)
	@$(RUN)/kernel/build.sh $(KERNEL) && $(RUN)/guest/image.sh && $(RUN)/boot/shell.sh $(KERNEL)

selftests-patch: ## regenerate the selftests patch in patches/ from selftests/, and the cover letter's shortlog and diffstat
	@$(RUN)/series/selftests-sync.sh patch
	@$(RUN)/series/cover-tail.sh

check: deps ## fast host-side checks, no kernel build
	@$(RUN)/check.sh

report: ## render the dashboard from the runs database: build/report/index.html
	@$(RUN)/deps.sh report
	@python3 reports/report.py

readme-figures: ## write the measured tables and the soak plot into README.md (docs/soak-dying.png) from the runs database; ONLY=measured-bench,... writes only those
	@$(RUN)/deps.sh report
	@python3 reports/readme.py $(if $(ONLY),--only '$(ONLY)')

report-check: report ## load the dashboard in headless Chromium: every plot and link resolves (~30 s)
	@python3 reports/tests/browser_check.py --self-test
	@python3 reports/tests/browser_check.py $(BUILD)/report/index.html --screenshot $(BUILD)/report/screenshot.png

lava: deps kernels guest ## write the LAVA job definitions (build/lava/jobs: kselftest, kselftest-v1, kselftest-numa, soak, stress, bench x both kernels) and the guest disks, each job checked with lava-common's schema
	@python3 $(RUN)/lab/lava.py write

lava-run: deps ## run one LAVA job here through lava-run (Debian's lava-dispatcher) and store it: LAVA_JOB (soak) KERNEL (patched)
	@$(RUN)/lab/lava-run.sh $(or $(LAVA_JOB),soak) $(KERNEL)

lava-collect: ## store a finished LAVA job in the runs database: JOB=job.yaml LOG=the job's log
	@python3 db/lava_collect.py --job "$(JOB)" --log "$(LOG)"

kcidb: ## export the runs database as KCIDB v5.0 JSON ($(BUILD)/kcidb/kcidb.json), checked against the schema
	@$(RUN)/deps.sh report
	@python3 reports/kcidb.py --out $(BUILD)/kcidb/kcidb.json

db-check: ## check the runs database (integrity, every run whole) and say what it holds
	@python3 db/check.py

test: deps check ## the full test: both kernels, kselftests and a short soak on each (CI runs this)
	@$(RUN)/jobs/test.sh

clean: ## remove the runs and kernel builds (keeps the extracted trees)
	rm -rf $(BUILD)/runs $(BUILD)/kernel $(BUILD)/guest

distclean: ## remove everything generated, the trees too
	rm -rf $(BUILD)
