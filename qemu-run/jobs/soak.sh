#!/usr/bin/env bash
# Run the churn soak (guest/soak.c) on one kernel and follow it from the host.
#
#   qemu-run/jobs/soak.sh KERNEL [key=value ...]
#   make soak KERNEL=original GENS=2000 SOAK_JOBS=2 MIX=log,tmpfs HOG_MB=256 SEED=7 MEM=1024
#   qemu-run/jobs/soak.sh --summary SAMPLES.LOG    check a samples.log, print its summary
#   qemu-run/jobs/soak.sh --scan SAMPLES.LOG       the same as key=value words (tests)
#
# key=value pairs are soak's knobs (seed, gens, secs, jobs, mix, hog_mb,
# sample_every, sample_ms, log_kb, file_kb, anon_kb, tmpfs_kb, keep, drop, ...;
# the guest's "soak help" lists them all with their defaults).  Variables
# (from make or the environment) give some of them; pairs on the command line
# win:  GENS -> gens   SECS -> secs   SOAK_JOBS -> jobs (JOBS is make -j)
#       MIX -> mix     HOG_MB -> hog_mb   SEED -> seed
#       SAMPLE_EVERY -> sample_every   SOAK -> any more "key=value ..." pairs
# Unset, soak's defaults apply: 2000 generations, 2 jobs alive at once, every
# job body, no hog, seed 1, a snapshot every 100 generations.
# The knobs reach the guest as rr.soak.key=value (boot.sh adds "rr."), apart
# from init's own rr.* words; init's run_soak hands them to soak.
#
# Environment as for boot.sh: MEM (guest MiB, memory pressure), SMP,
# DEADLINE (default: secs + 300, or gens / 3 + 300 seconds), RUN_DIR.
# NOBUILD=1 boots the kernel and guest that are there, without building.
# PROGRESS_SECS (default 5): a progress line that often, plain lines, so that
# CI logs read well.
#
# The guest writes samples.log (qemu-run/records/RECORDS.md) in the run folder.  The
# run ends with one summary line; the exit status is 0 only when the guest
# run was clean (boot.sh: no kernel report, no hang) and the soak ended with
# "@@ end rc=0".  A snapshot cut short by a crash or the deadline is counted
# as dropped, never as data.  Tests: qemu-run/tests/test_soak.py.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

records_cli soak "$@"

kernel=${1:-}
[ -n "$kernel" ] || die "usage: soak.sh KERNEL [key=value ...] (KERNEL: ${KERNELS// /, })"
check_kernel_name "$kernel"
shift

# Knobs: variables first, then SOAK's words, then the command line (the guest's soak takes the last).
knobs=()
[ -n "${SEED:-}" ] && knobs+=("seed=$SEED")
[ -n "${GENS:-}" ] && knobs+=("gens=$GENS")
[ -n "${SECS:-}" ] && knobs+=("secs=$SECS")
[ -n "${SOAK_JOBS:-}" ] && knobs+=("jobs=$SOAK_JOBS")
[ -n "${MIX:-}" ] && knobs+=("mix=$MIX")
[ -n "${HOG_MB:-}" ] && knobs+=("hog_mb=$HOG_MB")
[ -n "${SAMPLE_EVERY:-}" ] && knobs+=("sample_every=$SAMPLE_EVERY")
TOOL_EXTRA=${SOAK:-} tool_knobs soak "$@"
gens=$(knob gens "")
secs=$(knob secs 0)
[ -n "$gens" ] || { [ "$secs" != 0 ] && gens=0 || gens=2000; }
[[ "$gens$secs" =~ ^[0-9]+$ ]] || die "gens and secs are numbers of generations and seconds, not '$gens' and '$secs'"
if [ -z "${DEADLINE:-}" ]; then
	if [ "$secs" != 0 ] && { [ "$gens" = 0 ] || [ "$secs" -lt $((gens / 3)) ]; }; then
		DEADLINE=$((secs + 300))
	else
		DEADLINE=$((gens / 3 + 300))
	fi
fi
export DEADLINE

if [ "${NOBUILD:-0}" != 1 ]; then
	"$TOP/qemu-run/kernel/build.sh" "$kernel"
	"$TOP/qemu-run/guest/image.sh"
fi

RUN_DIR=${RUN_DIR:-$BUILD/runs/$(date +%Y%m%d-%H%M%S)-$kernel-soak}
label="soak $kernel"
boot_rc=1 sum_rc=1 store_rc=1
tool_run "$kernel" soak "$label" || true

[ "$boot_rc" = 0 ] || die "$label: the guest run failed (see above; logs in $RUN_DIR)"
[ "$sum_rc" = 0 ] || die "$label: the soak did not finish cleanly (logs in $RUN_DIR)"
[ "$store_rc" = 0 ] || die "$label: the run was not stored in the runs database (see above; logs in $RUN_DIR, store it with db/ingest.py $RUN_DIR)"
