#!/usr/bin/env bash
# Capture real guest logs as fixtures for the console classifier's tests
# (qemu-run/tests/fixtures).  Boots the kernels on purpose into trouble:
# a clean kselftest run, a panic, a sysrq crash, a hang, and with the debug
# kernel (LKDTM) a WARN, a BUG, a KASAN report, a list corruption and an
# atomic sleep.  Not part of make test; run it when the classifier changes.
#
#   qemu-run/tests/capture-fixtures.sh [plain|debug|all]
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
FIX="$TOP/qemu-run/tests/fixtures"
mkdir -p "$FIX"

# capture NAME KERNEL JOB [key=value...]: keep console and results as NAME.
capture() {
	local name=$1 kernel=$2 dir="$BUILD/runs/fixture-$1"
	shift 2
	rm -rf "$dir"
	RUN_DIR="$dir" DEADLINE=${DEADLINE:-300} "$TOP/qemu-run/boot/boot.sh" "$kernel" "$@" >/dev/null 2>&1
	cp "$dir/console.log" "$FIX/console-$name.log"
	cp "$dir/results.log" "$FIX/results-$name.log"
	say "captured $name"
}

what=${1:-plain}
# NOBUILD=1 uses the kernel images and guest that are there.
build() { [ "${NOBUILD:-0}" = 1 ] || "$@"; }
build "$TOP/qemu-run/guest/image.sh"
if [ "$what" = plain ] || [ "$what" = all ]; then
	build "$TOP/qemu-run/kernel/build.sh" original
	capture clean-kmem original kselftest tests=test_kmem
	APPEND="rdinit=/nonexistent root=/dev/nonexistent" capture panic-no-init original kselftest
	capture sysrq-crash original provoke what=sysrq-crash
	DEADLINE=20 capture hang original provoke what=hang
fi
if [ "$what" = debug ] || [ "$what" = all ]; then
	build "$TOP/qemu-run/kernel/build.sh" debug
	for t in WARNING BUG SLAB_USE_AFTER_FREE CORRUPT_LIST_ADD ATOMIC_SLEEP EXCEPTION; do
		capture "lkdtm-$t" debug provoke "what=lkdtm:$t"
	done
fi
