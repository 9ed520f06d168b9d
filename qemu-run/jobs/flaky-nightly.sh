#!/usr/bin/env bash
# The nightly watch of flaky subtests (make nightly-flaky): REPEAT (20) runs
# of the tests that have flaky entries in qemu-run/verdict/known-issues, in one boot
# per kernel and with no reruns (make repeat), on original and patched,
# stored in the runs database; then reports/flaky.py compares their first-attempt
# failure rates: patched failing a subtest significantly more often than
# original (one-sided Fisher's exact test, p < 0.05) fails the night.
# TESTS overrides the tests; NOBUILD=1 as for kselftest.sh.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
tests=${TESTS:-$(python3 "$TOP/qemu-run/verdict/tap.py" --kernel original --known "$TOP/qemu-run/verdict/known-issues" --flaky |
	tr ',' '\n' | cut -d: -f1 | sort -u | tr '\n' ' ')}
[ -n "${tests// /}" ] || die "no flaky entries in qemu-run/verdict/known-issues and no TESTS: nothing to watch"
export REPEAT=${REPEAT:-20}
for k in original patched; do
	say "kernel $k: $tests, $REPEAT times in one boot"
	# A flake is a surprise to kselftest.sh; the rates below are the verdict.
	"$TOP/qemu-run/jobs/kselftest.sh" "$k" "$tests" || warn "kernel $k: some outcomes surprised the matrix (counted below)"
done
python3 "$TOP/reports/flaky.py" --since "$since"
