#!/usr/bin/env bash
# The full test (make test, CI): build the original and patched kernels, run
# the cgroup kselftests on each against the expectations matrix.  Runs every
# kernel even when one fails, then prints one line per kernel.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

t0=$(date +%s)
status=0
summary=()
for k in original patched; do
	kt=$(date +%s)
	if "$TOP/qemu-run/kselftest.sh" "$k"; then
		summary+=("PASS $k kselftests ($(elapsed "$kt")): $(tail -1 "$BUILD/runs/last-$k/summary" 2>/dev/null)")
	else
		summary+=("FAIL $k kselftests ($(elapsed "$kt")): $(tail -1 "$BUILD/runs/last-$k/summary" 2>/dev/null || echo 'no summary')")
		status=1
	fi
done
echo
printf '%s\n' "${summary[@]}"
say "make test: $([ $status = 0 ] && echo passed || echo FAILED) in $(elapsed "$t0")"
exit $status
