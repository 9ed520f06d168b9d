#!/usr/bin/env bash
# The main job (make run) and the nightly one (make nightly): build the
# original and patched kernels, run the same churn soak (same knobs, same
# seed) on each, store both runs in the runs database and render the
# dashboard.  Both soaks run even when one fails; the exit status says
# whether both were clean.
#
#   qemu-run/jobs/run.sh [key=value ...]        soak knobs, as for soak.sh
#   NIGHTLY=1 qemu-run/jobs/run.sh              the long soak (SECS, default 3600 s each),
#                                               then every scenario of the differential oracle
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

t0=$(date +%s)
"$TOP/qemu-run/kernel/build.sh" original || exit 1
"$TOP/qemu-run/kernel/build.sh" patched || exit 1
"$TOP/qemu-run/guest/image.sh" || exit 1
if [ "${NIGHTLY:-0}" = 1 ]; then
	export SECS=${SECS:-3600}
fi
status=0
for k in original patched; do
	NOBUILD=1 "$TOP/qemu-run/jobs/soak.sh" "$k" "$@" || status=1
done
if [ "${NIGHTLY:-0}" = 1 ]; then
	NOBUILD=1 "$TOP/qemu-run/jobs/oracle.sh" || status=1
fi
"$TOP/qemu-run/deps.sh" report || exit 1
python3 "$TOP/reports/report.py" || status=1
verdict=finished; [ $status = 0 ] || verdict=FAILED
say "main job $verdict in $(elapsed "$t0"); dashboard: $BUILD/report/index.html"
exit $status
