#!/usr/bin/env bash
# The reliability run (guest/stress.c): cgroups created and removed while
# their memory is under reclaim, writeback, mmap, migration and compaction,
# the guest in swap, OOM kills in a sibling.  Zero kernel reports allowed.
#
#   qemu-run/jobs/stress.sh [KERNEL] [key=value ...]      KERNEL: debug (default)
#   make stress [KERNEL=patched] STRESS_SECS=1800 STRESS='workers=4 hog_pct=30'
#   qemu-run/jobs/stress.sh --summary RUN_DIR        print the summary line of a run again
#
# key=value pairs are stress's knobs (the guest's "stress help" lists them).
# Variables give some of them; pairs on the command line win:
#   STRESS_SECS -> secs (default 1800)   SEED -> seed   STRESS -> "key=value ..."
# The knobs reach the guest as rr.stress.key=value (boot.sh adds "rr.").
#
# Environment as for boot.sh: MEM (default 1024 MiB), SMP, APPEND (this
# script adds numa=fake=2: two nodes to migrate pages between), RUN_DIR,
# DEADLINE (default secs + secs/4 + 600: the debug kernel is slow under TCG,
# and the end -- stopping, removing, draining -- takes time).
# NOBUILD=1 boots the kernel and guest that are there, without building.
# PROGRESS_SECS (default 30): a progress line that often.
#
# The run ends with one summary line: kernel, seconds of stress, counters,
# dying cgroups at the end, and boot.sh's verdict on the console.  Exit
# status 0 only when the guest run was clean (no kernel report, no hang),
# stress ended with "@@ end rc=0" and no OOM kill happened outside a memory
# cgroup (a global OOM).  Records: qemu-run/records/RECORDS.md; tests:
# qemu-run/tests/test_stress.py.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

if [ "${1:-}" = --summary ]; then
	[ -f "${2:-}/samples.log" ] || die "usage: stress.sh --summary RUN_DIR (a folder with samples.log)"
	exec python3 "$RECORDS" summary stress "$2" "stress $(sed -n 's/^kernel=//p' "$2/meta" 2>/dev/null || echo '?')"
fi

kernel=debug
if [ $# -gt 0 ] && [[ "$1" != *=* ]]; then
	kernel=$1
	shift
fi
check_kernel_name "$kernel"

# Knobs: variables first, then STRESS's words, then the command line (the guest's stress takes the last).
knobs=("secs=${STRESS_SECS:-1800}")
[ -n "${SEED:-}" ] && knobs+=("seed=$SEED")
TOOL_EXTRA=${STRESS:-} tool_knobs stress "$@"
secs=$(knob secs "")
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [ "$secs" = 0 ]; then
	die "secs (STRESS_SECS) is a number of seconds, not '$secs'"
fi
export DEADLINE=${DEADLINE:-$((secs + secs / 4 + 600))}
export MEM=${MEM:-1024}
export APPEND="numa=fake=2${APPEND:+ $APPEND}"

if [ "${NOBUILD:-0}" != 1 ]; then
	"$TOP/qemu-run/kernel/build.sh" "$kernel"
	"$TOP/qemu-run/guest/image.sh"
fi

RUN_DIR=${RUN_DIR:-$BUILD/runs/$(date +%Y%m%d-%H%M%S)-$kernel-stress}
label="stress $kernel"
say "$label: ${secs}s of stress, then cleanup (deadline ${DEADLINE}s; knobs: ${knobs[*]})"
boot_rc=1 sum_rc=1 store_rc=1
PROGRESS_SECS=${PROGRESS_SECS:-30} TOOL_SECS=$secs tool_run "$kernel" stress "$label" || true
[ "$boot_rc" = 0 ] || die "$label: the guest run failed (see above; logs in $RUN_DIR)"
[ "$sum_rc" = 0 ] || die "$label: the stress run did not end clean (logs in $RUN_DIR)"
[ "$store_rc" = 0 ] || die "$label: the run was not stored in the runs database (see above; logs in $RUN_DIR, store it with db/ingest.py $RUN_DIR)"
