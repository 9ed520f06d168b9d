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
# cgroup (a global OOM).  Records: qemu-run/RECORDS.md; tests:
# qemu-run/tests/test_stress.py.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

# The summary of a run folder (samples.log, console.log, meta); status 1
# unless the run was clean.  $2: the label, $3: wall time.
summary() {
	local dir=$1 label=$2 wall=${3:-} verdict memcg_ooms global_ooms
	verdict=$(sed -n 's/^verdict=//p' "$dir/meta" 2>/dev/null | tail -n1)
	memcg_ooms=$(grep -ac '\] Memory cgroup out of memory: Killed process' "$dir/console.log" 2>/dev/null || true)
	global_ooms=$(grep -ac '\] Out of memory: Killed process' "$dir/console.log" 2>/dev/null || true)
	awk -v label="$label" -v wall="$wall" -v verdict="${verdict:-none}" -v mo="${memcg_ooms:-0}" \
		-v go="${global_ooms:-0}" -v f="$dir/samples.log" '
	/^@@ run stress / { for (i = 4; i <= NF; i++) { split($i, kv, "="); r[kv[1]] = kv[2] }; run = 1; next }
	/^@@ progress / { for (i = 3; i <= NF; i++) { split($i, kv, "="); p[kv[1]] = kv[2] }; next }
	/^@@ end / { for (i = 3; i <= NF; i++) { split($i, kv, "="); e[kv[1]] = kv[2] }; ended = 1; next }
	END {
		w = wall != "" ? ", wall " wall : ""
		report = verdict == "clean" ? "no kernel report" : (verdict == "bad" ? "KERNEL REPORT OR HANG (above)" : "no verdict (the guest run did not finish)")
		oom = sprintf("%d memcg OOM kills on the console, %d global", mo, go)
		if (!ended) {
			at = p["t_ms"] != "" ? sprintf("at %d s (%d cgroups created, %d removed, %d dying)", p["t_ms"] / 1000, p["cgroups_created"], p["removed"], p["dying"]) : "before its first progress record"
			printf "%s: FAILED: no \"@@ end\", stress stopped %s%s; %s; %s; records: %s\n", label, at, w, oom, report, f
			exit 1
		}
		ok = e["rc"] == 0 && verdict == "clean" && go == 0
		status = ok ? "clean" : "FAILED"
		why = ""
		if (e["rc"] != 0) why = why sprintf(" (stress rc=%d, failures=%d: see the \"stress: FAIL\" lines)", e["rc"], e["failures"])
		if (go != 0) why = why " (an OOM kill outside a memory cgroup)"
		printf "%s: %s%s: %d s of stress%s, %d workers, seed %d, %s nodes: %d cgroups created, %d removed, %d tasks (%d kept past rmdir), %d sibling OOMs (%s), %d job OOM kills, %d compactions, %d drop_caches, %d memory.reclaim, %d migration calls (%d pages moved by move_pages, %d pgmigrate_success), %d MiB swapped out (peak %d MiB in use), %d THP faults, %d MiB through %d TCP connections, %d inotify/fanotify events in %d groups, %d swap rounds (%d MiB swapped in); dying memory cgroups: %d at the end, %d after drop_caches, %d after all is deleted; parent left with %d KiB; %s; records: %s\n", \
			label, status, why, e["t_ms"] / 1000, w, r["workers"], r["seed"], r["nodes"], \
			e["cgroups_created"], e["removed"], e["tasks"], e["moved"], e["ooms"], oom, e["job_ooms"], \
			e["compactions"], e["drops"], e["reclaims"], e["migrate_calls"], e["pages_moved"], \
			e["vm_pgmigrate_success"], (e["vm_pswpout"] + e["vm_zswpout"]) * 4 / 1024, e["swap_peak_kb"] / 1024, \
			e["vm_thp_fault_alloc"], e["sock_kb"] / 1024, e["sockets"], e["notify_events"], e["notify_groups"], \
			e["swap_rounds"], (e["vm_pswpin"] + e["vm_zswpin"]) * 4 / 1024, e["dying_end"], e["dying_drop"], e["dying_root"], e["mem_end_kb"], report, f
		exit ok ? 0 : 1
	}' "$dir/samples.log"
}

# One progress line from the newest "@@ progress" record ($2, empty before the first).
progress_line() {
	local label=$1 last=$2 secs=$3
	awk -v last="$last" -v label="$label" -v secs="$secs" -v wall="$(elapsed "$t0")" 'BEGIN {
		if (last == "") { printf "%s: booting, wall %s\n", label, wall; exit }
		n = split(last, w, " "); for (i = 3; i <= n; i++) { split(w[i], kv, "="); p[kv[1]] = kv[2] }
		t = p["t_ms"] / 1000
		left = secs - t
		phase = left > 0 ? sprintf("%d/%d s (%d%%), ~%dm%02ds left", t, secs, 100 * t / secs, left / 60, left % 60) : sprintf("%d s, stopping and cleaning up", t)
		printf "%s: %s: %d cgroups created, %d removed, %d OOMs, %d dying, swap %d MiB, %d failures, wall %s\n", \
			label, phase, p["cgroups_created"], p["removed"], p["ooms"], p["dying"], p["swap_kb"] / 1024, p["failures"], wall
	}'
}

if [ "${1:-}" = --summary ]; then
	[ -f "${2:-}/samples.log" ] || die "usage: stress.sh --summary RUN_DIR (a folder with samples.log)"
	summary "$2" "stress $(sed -n 's/^kernel=//p' "$2/meta" 2>/dev/null || echo '?')"
	exit
fi

kernel=debug
if [ $# -gt 0 ] && [[ "$1" != *=* ]]; then
	kernel=$1
	shift
fi
check_kernel_name "$kernel"

# Knobs: variables first, then the command line (the guest's stress takes the last).
knobs=("secs=${STRESS_SECS:-1800}")
[ -n "${SEED:-}" ] && knobs+=("seed=$SEED")
# shellcheck disable=SC2206
[ -n "${STRESS:-}" ] && knobs+=(${STRESS})
for kv in "$@"; do knobs+=("$kv"); done
for kv in "${knobs[@]}"; do
	[[ "$kv" =~ ^[a-z_]+=[^[:space:]]+$ ]] || die "stress knobs are key=value without spaces, not '$kv'"
done
secs=
for kv in "${knobs[@]}"; do [ "${kv%%=*}" = secs ] && secs=${kv#*=}; done
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [ "$secs" = 0 ]; then
	die "secs (STRESS_SECS) is a number of seconds, not '$secs'"
fi
# Checked on the host against stress.c's own table before anything boots.
python3 "$TOP/qemu-run/guest/knobs.py" stress ${knobs[@]+"${knobs[@]}"} || die "bad stress knobs (see above): nothing was booted"
export DEADLINE=${DEADLINE:-$((secs + secs / 4 + 600))}
export MEM=${MEM:-1024}
export APPEND="numa=fake=2${APPEND:+ $APPEND}"

if [ "${NOBUILD:-0}" != 1 ]; then
	"$TOP/qemu-run/kernel/build.sh" "$kernel"
	"$TOP/qemu-run/guest/image.sh"
fi

RUN_DIR=${RUN_DIR:-$BUILD/runs/$(date +%Y%m%d-%H%M%S)-$kernel-stress}
export RUN_DIR
mkdir -p "$RUN_DIR"
label="stress $kernel"
say "$label: ${secs}s of stress, then cleanup (deadline ${DEADLINE}s; knobs: ${knobs[*]})"
t0=$(date +%s)
(
	last=
	while sleep "${PROGRESS_SECS:-30}"; do
		new=$(grep -a '^@@ progress ' "$RUN_DIR/samples.log" 2>/dev/null | tail -n1 || true)
		last=${new:-$last}
		progress_line "$label" "$last" "$secs" >&2
	done
) &
monitor=$!
boot_rc=0
# As rr.stress.key=value on the guest's command line.
"$TOP/qemu-run/boot/boot.sh" "$kernel" stress "${knobs[@]/#/stress.}" || boot_rc=$?
kill "$monitor" 2>/dev/null || true
wait "$monitor" 2>/dev/null || true

echo
sum_rc=0
summary "$RUN_DIR" "$label" "$(elapsed "$t0")" | tee "$RUN_DIR/summary" || sum_rc=$?
if [ "$sum_rc" != 0 ]; then
	# What the guest said: its failures, or else its last words.
	{ grep -a '^stress: FAIL' "$RUN_DIR/console.log" | head -n 20 ||
		grep -a '^stress: ' "$RUN_DIR/console.log" | tail -n 3; } 2>/dev/null | sed 's/^/    guest: /' >&2 || true
	grep -a '\] Out of memory: Killed process' "$RUN_DIR/console.log" 2>/dev/null | head -n 5 | sed 's/^/    global OOM: /' >&2 || true
fi
# Store the run (failed ones too); a run that is not stored fails the job.
store_rc=0
python3 "$TOP/db/ingest.py" "$RUN_DIR" || store_rc=$?
[ "$boot_rc" = 0 ] || die "$label: the guest run failed (see above; logs in $RUN_DIR)"
[ "$sum_rc" = 0 ] || die "$label: the stress run did not end clean (logs in $RUN_DIR)"
[ "$store_rc" = 0 ] || die "$label: the run was not stored in the runs database (see above; logs in $RUN_DIR)"
