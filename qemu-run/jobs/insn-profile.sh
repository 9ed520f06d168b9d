#!/usr/bin/env bash
# Where a kernel's instructions go in the benchmark's fast paths: boot
# KERNEL in instruction-count mode with the TCG plugin
# qemu-run/boot/plugin/insn_by_tb.c and run the guest bench's fast part once
# (fixed work: the same operations on every kernel), then count the
# kernel's instructions per function (reports/insn_profile.py).
#
#   qemu-run/jobs/insn-profile.sh KERNEL [key=value ...]      bench knobs (default parts=fast fast_reps=1)
#   qemu-run/jobs/insn-profile.sh --diff RUN_DIR_A RUN_DIR_B  the functions whose counts differ most
#   qemu-run/jobs/insn-profile.sh --diff --a RUN... --b RUN...  with ranges, only the functions apart
#
# FROM_SYNC=K counts only from the guest's K-th sync(2) on: the bench syncs
# before each fast rep, so FROM_SYNC=2 leaves out the boot (whose entropy
# gathering and I/O timing vary from boot to boot by more than a rep's
# difference between kernels) and the first rep.  Two runs that differ only
# in fast_reps then differ by whole reps: the cost of the reps alone.
# PROFILE_USER=1 counts user space's instructions too (one entry, "(user)"):
# the total is then every instruction the guest ran, which with the guest
# time the bench measured tells CPU work from time no vCPU ran.
# EVERY_SYNC=1 (with FROM_SYNC=K) closes a window at each sync(2) after the
# K-th: with one fast test, one window per rep (insn.txt.N, the last in
# insn.txt); the windows are shown side by side with the rep's results
# (reports/insn_profile.py windows RUN_DIR), and the stored profile is
# their sum, the same as without EVERY_SYNC.  With the bench knobs
# fast_tests=jobs jobs_sync=1 (a sync either side of each rep's timed loop)
# and PROFILE_USER=1, `reports/insn_profile.py windows RUN_DIR --jobs-sync`
# sets each loop's time against its instructions: the rest is time when no
# vCPU ran:
#   FROM_SYNC=2 EVERY_SYNC=1 PROFILE_USER=1 qemu-run/jobs/insn-profile.sh KERNEL \
#       parts=fast fast_tests=jobs jobs_sync=1 fast_reps=4
# and `--diff --jobs-sync --a RUN... --b RUN...` compares the loops alone,
# each loop a sample.
# KERNEL_IMAGE boots an image built elsewhere (as for boot.sh).  The run
# folder keeps insn.txt (instructions per block address) and the System.map
# path in its meta (image=); the runs database gets the bench results and
# the instructions per function (table insn_profile).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

if [ "${1:-}" = --diff ]; then
	shift
	exec python3 "$TOP/reports/insn_profile.py" diff "$@"
fi
kernel=${1:-}
[ -n "$kernel" ] || die "usage: insn-profile.sh KERNEL [key=value ...] | --diff RUN_A RUN_B"
check_kernel_name "$kernel"
shift
build_plugin
knobs=("$@")
[ ${#knobs[@]} -gt 0 ] || knobs=(parts=fast fast_reps=1)
RUN_DIR="$BUILD/runs/$(date +%Y%m%d-%H%M%S)-$kernel-insn-profile"
export RUN_DIR
PROFILE=1 CLOCK=icount MEM=${MEM:-1536} "$TOP/qemu-run/boot/boot.sh" "$kernel" bench "${knobs[@]/#/bench.}" ||
	die "the profiling boot failed (logs in $RUN_DIR)"
[ -s "$RUN_DIR/insn.txt" ] || die "the plugin wrote no $RUN_DIR/insn.txt"
python3 "$TOP/reports/insn_profile.py" top "$RUN_DIR"
if [ "${EVERY_SYNC:-0}" = 1 ]; then
	wargs=()
	for kv in "${knobs[@]}"; do
		case "$kv" in
		jobs_sync=1) wargs+=(--jobs-sync) ;;
		jobs=*) wargs+=(--jobs "${kv#jobs=}") ;;
		esac
	done
	python3 "$TOP/reports/insn_profile.py" windows "$RUN_DIR" ${wargs[@]+"${wargs[@]}"}
fi
# The boot's bench results and the profile (table insn_profile) go into the
# runs database.
python3 "$TOP/db/ingest.py" "$RUN_DIR" || die "run $RUN_DIR not stored in the runs database"
say "profile in $RUN_DIR (compare two: qemu-run/jobs/insn-profile.sh --diff RUN_A RUN_B)"
