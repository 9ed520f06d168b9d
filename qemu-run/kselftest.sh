#!/usr/bin/env bash
# Build KERNEL and the guest, boot it, run the cgroup kselftests and compare
# the outcomes with the expectations matrix.
#
#   qemu-run/kselftest.sh KERNEL [test,test,...]
#
# Ends with "KERNEL: N passed, N failed, N skipped; ..." and exits non-zero
# when the guest run was not clean or an outcome surprised the matrix.
# NOBUILD=1 boots the kernel image that is there, without building it (the
# guest, with the kselftests of the patched tree, is always rebuilt).
# REPEAT=N runs the tests N times over in the same boot and adds a table of
# how often each subtest gave the outcome the matrix wants (make repeat).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kernel=${1:-}
[ -n "$kernel" ] || die "usage: kselftest.sh KERNEL [tests] (KERNEL: ${KERNELS// /, })"
check_kernel_name "$kernel"
tests=${2:-${TESTS:-$KSELFTESTS}}
tests=$(echo "$tests" | tr ' ' ',' | sed 's/^,*//; s/,*$//')
[ -n "$tests" ] || die "no tests to run"
repeat=${REPEAT:-1}
case "$repeat" in ''|*[!0-9]*|0) die "REPEAT must be a positive number, got '$repeat'" ;; esac
if [ "$repeat" -gt 1 ]; then
	one=$tests
	for _ in $(seq 2 "$repeat"); do tests="$tests,$one"; done
	export DEADLINE=${DEADLINE:-$((1800 * repeat))}
fi

if [ "${NOBUILD:-0}" != 1 ]; then
	"$TOP/qemu-run/kernel.sh" "$kernel"
fi
"$TOP/qemu-run/guest.sh"

RUN_DIR="$BUILD/runs/$(date +%Y%m%d-%H%M%S)-$kernel-kselftest"
export RUN_DIR
boot_rc=0
"$TOP/qemu-run/boot.sh" "$kernel" kselftest tests="$tests" timeout="${TEST_TIMEOUT:-900}" || boot_rc=$?

echo
tap_rc=0
python3 "$TOP/qemu-run/tap.py" --kernel "$kernel" \
	--known "$TOP/qemu-run/known-issues" --expect "$TOP/qemu-run/expectations" \
	--tests "$tests" "$RUN_DIR/results.log" | tee "$RUN_DIR/summary" || tap_rc=$?

# Store the run (failed ones too) in the runs database (db/ingest.py).
python3 "$TOP/db/ingest.py" "$RUN_DIR" || warn "run $RUN_DIR not stored in the runs database (see above)"

[ "$boot_rc" = 0 ] || die "kernel $kernel: the guest run failed (see above; logs in $RUN_DIR)"
[ "$tap_rc" = 0 ] || die "kernel $kernel: kselftest outcomes differ from qemu-run/expectations (table above)"
