#!/usr/bin/env bash
# The full test (make test, CI): build the original and patched kernels, run
# the cgroup kselftests on each against the expectations matrix, then a short
# churn soak on each and check its direction: original piles up dying memory
# cgroups; patched, once the series carries kernel changes, does not.  Then
# the differential oracle's short set of scenarios (scenarios/short) on both,
# with its conservation audit.  Runs every step even when one fails, then
# prints one line per step.
#
# TEST_SOAK_GENS (default 300, at least 300) sets the soak's length; TEST_SOAK=0 skips the
# soaks (and says so: the summary shows them as skipped, the run fails).
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

# Checked first: a weakened test is refused before anything boots.
gens=${TEST_SOAK_GENS:-300}
case "$gens" in ''|*[!0-9]*) die "TEST_SOAK_GENS must be a number, got '$gens'" ;; esac
[ "$gens" -ge 300 ] || die "TEST_SOAK_GENS=$gens would weaken the test: at least 300"

t0=$(date +%s)
status=0
summary=()
for k in original patched; do
	kt=$(date +%s)
	if "$TOP/qemu-run/jobs/kselftest.sh" "$k"; then
		summary+=("PASS $k kselftests ($(elapsed "$kt")): $(tail -1 "$BUILD/runs/last-$k/summary" 2>/dev/null)")
	else
		summary+=("FAIL $k kselftests ($(elapsed "$kt")): $(tail -1 "$BUILD/runs/last-$k/summary" 2>/dev/null || echo 'no summary')")
		status=1
	fi
done

# Direction of the soak, judged after the guest's final sync + drop_caches,
# which leaves only the dying memcgs that memory still in use pins (tmpfs
# files, shared files kept cached by later generations' use, ...).  Measured
# (1000 generations, default mix): original kept 559 (56%), patched 0.  So
# original must keep at least 25% of its generations, and a patched kernel
# whose series changes the kernel at most 2%; without kernel changes patched
# is original and expects the same.  Before drop_caches patched plateaus at
# ~200-280 dying (cgroup writeback of dirty inodes, released once written).
series_changes_kernel() {
	[ -n "$(grep -h '^diff --git a/' "$TOP"/patches/*.patch 2>/dev/null | grep -v '^diff --git a/tools/')" ]
}
# The soak's knobs are the test's own: the environment's GENS, SOAK, MIX...
# (make soak's variables) must not weaken it (SOAK='drop=0' would leave no
# after-drop_caches figure), so they are cleared for the soak.
SOAK_ENV=(-u GENS -u SECS -u SOAK_JOBS -u MIX -u HOG_MB -u SEED -u SAMPLE_EVERY -u SOAK -u MEM -u SMP -u NODES -u DEADLINE)
for k in original patched; do
	if [ "${TEST_SOAK:-1}" = 0 ]; then
		summary+=("SKIP $k soak (TEST_SOAK=0)")
		status=1
		continue
	fi
	if [ ! -f "$BUILD/kernel/$k/.key" ]; then
		# Its build failed above: one error, not a second one from the soak.
		summary+=("SKIP $k soak: no finished $k kernel (its build failed, see above)")
		status=1
		continue
	fi
	kt=$(date +%s)
	dir="$BUILD/runs/$(date +%Y%m%d-%H%M%S)-$k-soak"
	if ! env "${SOAK_ENV[@]}" RUN_DIR="$dir" NOBUILD=1 "$TOP/qemu-run/jobs/soak.sh" "$k" gens="$gens" sample_every=50; then
		summary+=("FAIL $k soak ($(elapsed "$kt")): the run failed, logs in $dir")
		status=1
		continue
	fi
	changes=0
	[ "$k" = patched ] && series_changes_kernel && changes=1
	line=$(python3 "$TOP/reports/compare.py" direction "$k" "$changes" "$dir/samples.log")
	line="${line/ soak: / soak ($(elapsed "$kt")): }"
	summary+=("$line")
	case "$line" in PASS*) ;; *) status=1 ;; esac
done

# The differential oracle: the short set of scenarios on both kernels.
if [ -f "$BUILD/kernel/original/.key" ] && [ -f "$BUILD/kernel/patched/.key" ]; then
	kt=$(date +%s)
	if ORACLE_SET=short NOBUILD=1 "$TOP/qemu-run/jobs/oracle.sh" >"$BUILD/oracle-test.log" 2>&1; then
		summary+=("PASS oracle ($(elapsed "$kt")): $(grep '^oracle:' "$BUILD/oracle-test.log" | tail -1)")
	else
		summary+=("FAIL oracle ($(elapsed "$kt")): $(grep '^oracle:' "$BUILD/oracle-test.log" | tail -1) (log: $BUILD/oracle-test.log)")
		status=1
	fi
	# the table of what differed, in the log of the test too
	sed -n '/^scenario\|^  /p' "$BUILD/oracle-test.log" | tail -60
else
	summary+=("SKIP oracle: a kernel did not build (see above)")
	status=1
fi

echo
printf '%s\n' "${summary[@]}"
say "make test: $([ $status = 0 ] && echo passed || echo FAILED) in $(elapsed "$t0")"
exit $status
