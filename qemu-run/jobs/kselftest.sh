#!/usr/bin/env bash
# Build KERNEL and the guest, boot it, run the cgroup kselftests and compare
# the outcomes with the expectations matrix.
#
#   qemu-run/jobs/kselftest.sh KERNEL [test,test,...]
#
# Ends with "KERNEL: N passed, N failed, N skipped; ..." and exits non-zero
# when the guest run was not clean or an outcome surprised the matrix.
# NOBUILD=1 boots the kernel image that is there, without building it (the
# guest, with the kselftests of the patched tree, is always rebuilt).
# REPEAT=N runs the tests N times over in the same boot and adds a table of
# how often each subtest gave the outcome the matrix wants (make repeat).
# RETRIES=N (default 5; 0 with REPEAT) reruns a test binary in the same boot,
# up to N more times, when it fails a subtest that qemu-run/verdict/known-issues
# lists as flaky on KERNEL; the summary line names each flaky subtest with
# its count, and it fails only when every attempt failed.  A test with a
# needs-cpus=N entry runs again on its own N-CPU boot (CPUS_BOOT=0 skips
# that boot, and its entry then reports the failure as a skip), where a
# failure of that subtest is rerun and counted as a flaky one's is.
# DEB=1 boots the kernel built from Debian's own configuration instead
# (qemu-run/kernel/deb.sh, DEB_FLAVOUR, default cloud-amd64; never built
# here).  A kernel without CONFIG_MEMCG_V1 (Debian's 6.12 has none) runs
# no v1 boot, and says so; one without CONFIG_NUMA_EMU gets its two nodes
# from QEMU (NODES=2) instead of numa=fake=2.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

kernel=${1:-}
[ -n "$kernel" ] || die "usage: kselftest.sh KERNEL [tests] (KERNEL: ${KERNELS// /, })"
check_kernel_name "$kernel"
tests=${2:-${TESTS:-$KSELFTESTS $KSELFTESTS_V1 $KSELFTESTS_NUMA}}
tests=$(echo "$tests" | tr ' ' ',' | sed 's/^,*//; s/,*$//')
[ -n "$tests" ] || die "no tests to run"
# The cgroup v1 tests (KSELFTESTS_V1) and the two-node ones (KSELFTESTS_NUMA)
# go to boots of their own.
v1_tests=""
numa_tests=""
v2_tests=""
for t in ${tests//,/ }; do
	case " $KSELFTESTS_V1 " in
	*" $t "*) v1_tests="$v1_tests,$t"; continue ;;
	esac
	case " $KSELFTESTS_NUMA " in
	*" $t "*) numa_tests="$numa_tests,$t" ;;
	*) v2_tests="$v2_tests,$t" ;;
	esac
done
v1_tests=${v1_tests#,}
numa_tests=${numa_tests#,}
tests=${v2_tests#,}
repeat=${REPEAT:-1}
case "$repeat" in ''|*[!0-9]*|0) die "REPEAT must be a positive number, got '$repeat'" ;; esac
# make repeat counts raw failure rates: no reruns there.
retries=${RETRIES:-$([ "$repeat" -gt 1 ] && echo 0 || echo 5)}
case "$retries" in ''|*[!0-9]*) die "RETRIES must be a number, got '$retries'" ;; esac
known="$TOP/qemu-run/verdict/known-issues"
flaky=$(python3 "$TOP/qemu-run/verdict/tap.py" --kernel "$kernel" --known "$known" --flaky) ||
	die "cannot read $known (see above)"
if [ "$repeat" -gt 1 ]; then
	one=$tests
	one_v1=$v1_tests
	one_numa=$numa_tests
	for _ in $(seq 2 "$repeat"); do
		tests="$tests${one:+,$one}"
		v1_tests="$v1_tests${one_v1:+,$one_v1}"
		numa_tests="$numa_tests${one_numa:+,$one_numa}"
	done
	tests=${tests#,}
	v1_tests=${v1_tests#,}
	numa_tests=${numa_tests#,}
	export DEADLINE=${DEADLINE:-$((1800 * repeat))}
fi

if [ "${DEB:-0}" = 1 ]; then
	case "$kernel" in original|patched) ;; *) die "DEB=1: Debian-config kernels are original and patched, not $kernel" ;; esac
	export KERNEL_IMAGE="$BUILD/deb/${DEB_FLAVOUR:-cloud-amd64}/$kernel/arch/x86/boot/bzImage"
	[ -f "$KERNEL_IMAGE" ] || die "DEB=1: no $KERNEL_IMAGE: build it with qemu-run/kernel/deb.sh $kernel"
elif [ "${NOBUILD:-0}" != 1 ]; then
	"$TOP/qemu-run/kernel/build.sh" "$kernel"
fi
kconfig="${KERNEL_IMAGE:-$KBUILD/$kernel/arch/x86/boot/bzImage}"
kconfig="${kconfig%/arch/x86/boot/bzImage}/.config"
has_option() { grep -q "^$1=y" "$kconfig" 2>/dev/null; }
"$TOP/qemu-run/guest/image.sh"

# Boot once and judge: run_tests SUFFIX TESTS [VAR=value...] (environment
# for boot.sh; the global boot_args go to the guest's command line).  Sets
# RUN_DIR; returns non-zero when the guest run was not clean or an outcome
# surprised the matrix.
boot_args=()
run_tests() {
	local suffix=$1 list=$2 boot_rc=0 tap_rc=0 store_rc=0
	shift 2
	RUN_DIR="$BUILD/runs/$(date +%Y%m%d-%H%M%S)-$kernel-kselftest$suffix"
	export RUN_DIR
	env "$@" "$TOP/qemu-run/boot/boot.sh" "$kernel" kselftest tests="$list" timeout="${TEST_TIMEOUT:-900}" \
		${flaky:+flaky="$flaky"} retries="$retries" ${boot_args[@]+"${boot_args[@]}"} || boot_rc=$?
	echo
	# boot.sh refused before it booted (its error is above): nothing to judge.
	if [ ! -f "$RUN_DIR/meta" ]; then
		warn "kernel $kernel: boot.sh stopped before booting (see above); nothing was run or stored"
		return 1
	fi
	python3 "$TOP/qemu-run/verdict/tap.py" --kernel "$kernel" --known "$known" \
		--expect "$TOP/qemu-run/verdict/expectations" --plans "$TOP/qemu-run/verdict/plans" \
		--tests "$list" --verdict "$RUN_DIR/verdict.json" "$RUN_DIR/results.log" | tee "$RUN_DIR/summary" || tap_rc=$?
	# Store the run (failed ones too) and its verdict in the runs database (db/ingest.py).
	python3 "$TOP/db/ingest.py" "$RUN_DIR" || store_rc=$?
	[ "$boot_rc" = 0 ] || { warn "kernel $kernel: the guest run failed (see above; logs in $RUN_DIR)"; return 1; }
	[ "$tap_rc" = 0 ] || { warn "kernel $kernel: kselftest outcomes differ from qemu-run/verdict/expectations (table above)"; return 1; }
	[ "$store_rc" = 0 ] || { warn "run $RUN_DIR not stored in the runs database (see above)"; return 1; }
}

status=0
main_dir=""
summary=""
if [ -n "$tests" ]; then
	run_tests "" "$tests" || status=1
	main_dir=$RUN_DIR
	summary=$(tail -1 "$main_dir/summary" 2>/dev/null || echo "no summary")
fi

# Tests whose tolerance needs more CPUs than the main boot has run again on
# a boot with enough (needs-cpus=N in known-issues), once, with only them.
if [ -n "$tests" ] && [ "$repeat" = 1 ] && [ "${CPUS_BOOT:-1}" != 0 ]; then
	while read -r cpus list; do
		[ -n "$list" ] || continue
		say "kernel $kernel: $list again on a $cpus-CPU boot (needs-cpus in known-issues)"
		flaky=$(python3 "$TOP/qemu-run/verdict/tap.py" --kernel "$kernel" --known "$known" --flaky --cpus "$cpus") ||
			die "cannot read $known (see above)"
		if run_tests "-${cpus}cpus" "$list" SMP="$cpus"; then
			summary+=" | ${cpus} CPUs: $(tail -1 "$RUN_DIR/summary")"
		else
			summary+=" | ${cpus} CPUs: $(tail -1 "$RUN_DIR/summary" 2>/dev/null || echo 'no summary')"
			status=1
		fi
	done < <(python3 "$TOP/qemu-run/verdict/tap.py" --kernel "$kernel" --known "$known" --cpu-boots --tests "$tests")
fi
# The cgroup v1 tests, on their own boot with the memory controller on a v1
# hierarchy.
if [ -n "$v1_tests" ] && ! has_option CONFIG_MEMCG_V1; then
	warn "kernel $kernel has no CONFIG_MEMCG_V1 ($kconfig): $v1_tests not run"
	summary=${summary:+$summary | }"cgroup v1: not run, no CONFIG_MEMCG_V1"
	v1_tests=""
fi
if [ -n "$v1_tests" ]; then
	say "kernel $kernel: $v1_tests on a cgroup v1 boot"
	flaky=$(python3 "$TOP/qemu-run/verdict/tap.py" --kernel "$kernel" --known "$known" --flaky) ||
		die "cannot read $known (see above)"
	boot_args=(cgroup=v1)
	if run_tests "-v1" "$v1_tests"; then
		line="cgroup v1: $(tail -1 "$RUN_DIR/summary")"
	else
		line="cgroup v1: $(tail -1 "$RUN_DIR/summary" 2>/dev/null || echo 'no summary')"
		status=1
	fi
	boot_args=()
	summary=${summary:+$summary | }$line
	[ -n "$main_dir" ] || main_dir=$RUN_DIR
fi
# The tests that move memory between nodes, on a boot with two (numa=fake=2
# splits the guest's memory in halves) of one QEMU node (NODES=1, whatever
# the environment's NODES, boot.sh: that boot is always the same machine).
if [ -n "$numa_tests" ]; then
	say "kernel $kernel: $numa_tests on a two-node boot"
	flaky=$(python3 "$TOP/qemu-run/verdict/tap.py" --kernel "$kernel" --known "$known" --flaky) ||
		die "cannot read $known (see above)"
	numa_env=(NODES=1 APPEND="numa=fake=2${APPEND:+ $APPEND}")
	has_option CONFIG_NUMA_EMU || numa_env=(NODES=2)
	if run_tests "-numa" "$numa_tests" "${numa_env[@]}"; then
		line="2 nodes: $(tail -1 "$RUN_DIR/summary")"
	else
		line="2 nodes: $(tail -1 "$RUN_DIR/summary" 2>/dev/null || echo 'no summary')"
		status=1
	fi
	summary=${summary:+$summary | }$line
	[ -n "$main_dir" ] || main_dir=$RUN_DIR
fi
# The summary of every boot, in the main run's folder (make test reads it).
[ -d "$main_dir" ] || die "kernel $kernel: no guest run (see above)"
echo "$summary" >>"$main_dir/summary"
# The main run was stored before the other boots ran: store it again, which
# brings its stored summary up to this line (db/ingest.py).
python3 "$TOP/db/ingest.py" "$main_dir" >/dev/null ||
	{ warn "run $main_dir: its summary not brought up to date in the runs database (see above)"; status=1; }
ln -sfn "$main_dir" "$BUILD/runs/last-$kernel"
[ "$status" = 0 ] || die "kernel $kernel: $summary"
