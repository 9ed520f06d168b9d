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
# The guest writes samples.log (qemu-run/RECORDS.md) in the run folder.  The
# run ends with one summary line; the exit status is 0 only when the guest
# run was clean (boot.sh: no kernel report, no hang) and the soak ended with
# "@@ end rc=0".  A snapshot cut short by a crash or the deadline is counted
# as dropped, never as data.  Tests: qemu-run/tests/test_soak.py.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

# Fields of a samples.log as key=value words: snapshots complete, dropped
# (truncated or inconsistent), the "@@ end" record, the generation reached
# (last progress or complete snapshot), dying memory cgroups in the last
# complete snapshot and after drop_caches, sizes.
scan_samples() {
	awk '
	# A snapshot still open at the next record or at the end was cut short.
	function close_open(why) { if (open) { dropped++; if (why == "cut") cut = 1 } open = 0 }
	/^@@ run / {
		for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "gens") tgens = kv[2]; if (kv[1] == "secs") tsecs = kv[2] }
		next
	}
	/^@@ sample / {
		close_open("cut")
		open = 1; seq = $3; lines = 0; bytes = length($0) + 1; drop = 0; gen = ""; dy = ""; badline = 0
		for (i = 4; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "gen") gen = kv[2]; if (kv[1] == "after") drop = kv[2] }
		next
	}
	/^@@ endsample / {
		if (!open || badline || $3 != seq || $4 != "lines=" lines) { close_open("bad"); next }
		open = 0; complete++; bytes += length($0) + 1
		if (bytes > maxbytes) maxbytes = bytes
		if (lines > maxlines) maxlines = lines
		if (drop == "drop_caches") dying_drop = dy; else if (drop == "settle") dying_settle = dy; else { dying = dy; last_gen = gen }
		if (drop == 0 && gen >= reached) { reached = gen; reached_dying = dy }
		next
	}
	/^@@ progress / {
		close_open("cut")
		for (i = 3; i <= NF; i++) { split($i, kv, "="); p[kv[1]] = kv[2] }
		if (p["gen"] >= reached) { reached = p["gen"]; reached_dying = p["dying"] }
		next
	}
	/^@@ end / {
		close_open("cut")
		ended = 1
		for (i = 3; i <= NF; i++) { split($i, kv, "="); e[kv[1]] = kv[2] }
		next
	}
	/^@@ / { close_open("cut"); next }
	open {
		if ($0 !~ /^[^ ]+ [^ ]+ -?[0-9]+$/ || NF != 3) { badline = NR; next }
		lines++; bytes += length($0) + 1
		if ($1 == "cgroup.stat" && $2 == "nr_dying_subsys_memory") dy = $3
		if ($1 == "cgroup.stat" && $2 == "nr_dying_descendants" && dy == "") dy = $3
	}
	END {
		close_open("cut")
		printf "complete=%d dropped=%d cut=%d ended=%d rc=%s gens=%s t_ms=%s", complete, dropped, cut, ended, ended ? e["rc"] : "", ended ? e["gens"] : "", ended ? e["t_ms"] : ""
		printf " target_gens=%s target_secs=%s reached=%s reached_dying=%s", tgens, tsecs, reached, reached_dying
		printf " last_gen=%s dying=%s dying_settle=%s dying_drop=%s max_lines=%d max_bytes=%d\n", last_gen, dying, dying_settle, dying_drop, maxlines, maxbytes
	}' "$1"
}

# One progress line from the "@@ run" record and the newest "@@ progress"
# record ($3, empty before the first).
progress_line() {
	local f=$1 label=$2 last=$3 run
	run=$(head -n1 "$f" 2>/dev/null || true)
	awk -v run="$run" -v last="$last" -v label="$label" -v wall="$(elapsed "$t0")" 'BEGIN {
		n = split(run, w, " "); for (i = 3; i <= n; i++) { split(w[i], kv, "="); r[kv[1]] = kv[2] }
		n = split(last, w, " "); for (i = 3; i <= n; i++) { split(w[i], kv, "="); p[kv[1]] = kv[2] }
		if (last == "") { printf "%s: booting, wall %s\n", label, wall; exit }
		gen = p["gen"]; t = p["t_ms"] / 1000; rate = t > 0 ? gen / t : 0
		left = -1
		if (r["gens"] > 0 && rate > 0) left = (r["gens"] - gen) / rate
		if (r["secs"] > 0 && (left < 0 || r["secs"] - t < left)) left = r["secs"] - t
		if (left < 0 && r["secs"] > 0) left = 0
		eta = left < 0 ? "time left unknown" : sprintf("~%dm%02ds left", left / 60, left % 60)
		of = r["gens"] > 0 ? sprintf("/%d (%d%%)", r["gens"], 100 * gen / r["gens"]) : ""
		printf "%s: gen %d%s, %.1f gen/s, %d dying, %s, wall %s\n", label, gen, of, rate, p["dying"], eta, wall
	}'
}

# The summary line of a finished (or failed) run; status 1 unless it ended with rc=0.
summary() {
	local f=$1 label=$2 s
	s=$(scan_samples "$f")
	awk -v label="$label" -v f="$f" -v s="$s" 'BEGIN {
		n = split(s, w, " "); for (i = 1; i <= n; i++) { split(w[i], kv, "="); v[kv[1]] = kv[2] }
		snaps = sprintf("snapshots: %d complete (up to %d lines, %.1f KB)", v["complete"], v["max_lines"], v["max_bytes"] / 1000)
		if (v["dropped"]) snaps = snaps sprintf(", %d dropped (%s)", v["dropped"], v["cut"] ? "cut short" : "inconsistent")
		if (v["ended"]) {
			t = v["t_ms"] / 1000
			drop = v["dying_settle"] != "" ? sprintf(", %d after settling", v["dying_settle"]) : ""
			drop = drop (v["dying_drop"] != "" ? sprintf(", %d after drop_caches", v["dying_drop"]) : "")
			status = v["rc"] == 0 ? "done" : ("done with errors (rc=" v["rc"] ")")
			rate = t > 0 ? v["gens"] / t : 0
			printf "%s: %s: %d generations in %.1f s (%.1f gen/s), %d dying memory cgroups at the end%s; %s; samples: %s\n", \
				label, status, v["gens"], t, rate, v["dying"], drop, snaps, f
			exit (v["rc"] == 0 ? 0 : 1)
		}
		at = v["reached"] != "" ? sprintf("after generation %d (%d dying)", v["reached"], v["reached_dying"]) : "before the first generation"
		printf "%s: FAILED: no \"@@ end\", the soak stopped %s; %s; samples: %s\n", label, at, snaps, f
		exit 1
	}'
}

case "${1:-}" in
--summary|--scan)
	[ -f "${2:-}" ] || die "usage: soak.sh $1 SAMPLES.LOG"
	if [ "$1" = --scan ]; then scan_samples "$2"; else summary "$2" soak; fi
	exit
	;;
esac

kernel=${1:-}
[ -n "$kernel" ] || die "usage: soak.sh KERNEL [key=value ...] (KERNEL: ${KERNELS// /, })"
check_kernel_name "$kernel"
shift

# Knobs: variables first, then the command line (the guest's soak takes the last).
knobs=()
[ -n "${SEED:-}" ] && knobs+=("seed=$SEED")
[ -n "${GENS:-}" ] && knobs+=("gens=$GENS")
[ -n "${SECS:-}" ] && knobs+=("secs=$SECS")
[ -n "${SOAK_JOBS:-}" ] && knobs+=("jobs=$SOAK_JOBS")
[ -n "${MIX:-}" ] && knobs+=("mix=$MIX")
[ -n "${HOG_MB:-}" ] && knobs+=("hog_mb=$HOG_MB")
[ -n "${SAMPLE_EVERY:-}" ] && knobs+=("sample_every=$SAMPLE_EVERY")
# shellcheck disable=SC2206
[ -n "${SOAK:-}" ] && knobs+=(${SOAK})
for kv in "$@"; do
	[[ "$kv" =~ ^[a-z_]+=[^[:space:]]+$ ]] || die "soak knobs are key=value without spaces, not '$kv'"
	knobs+=("$kv")
done
# Checked on the host against soak.c's own table before anything boots.
python3 "$TOP/qemu-run/guest/knobs.py" soak ${knobs[@]+"${knobs[@]}"} || die "bad soak knobs (see above): nothing was booted"
knob() { # the value of knob $1 as the guest will see it (the last one), or $2
	local kv v=$2
	for kv in ${knobs[@]+"${knobs[@]}"}; do [ "${kv%%=*}" = "$1" ] && v=${kv#*=}; done
	echo "$v"
}
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
export RUN_DIR
mkdir -p "$RUN_DIR"
label="soak $kernel"
t0=$(date +%s)
(
	last=
	while sleep "${PROGRESS_SECS:-5}"; do
		# The newest progress record is near the end: snapshots are ~21 KB.
		new=$(tail -c 262144 "$RUN_DIR/samples.log" 2>/dev/null | grep -a '^@@ progress ' | tail -n1 || true)
		last=${new:-$last}
		progress_line "$RUN_DIR/samples.log" "$label" "$last" >&2
	done
) &
monitor=$!
boot_rc=0
# As rr.soak.key=value on the guest's command line, apart from init's own rr.*.
"$TOP/qemu-run/boot/boot.sh" "$kernel" soak ${knobs[@]+"${knobs[@]/#/soak.}"} || boot_rc=$?
kill "$monitor" 2>/dev/null || true
wait "$monitor" 2>/dev/null || true

echo
sum_rc=0
summary "$RUN_DIR/samples.log" "$label (wall $(elapsed "$t0"))" | tee "$RUN_DIR/summary" || sum_rc=$?
if [ "$boot_rc" != 0 ] || [ "$sum_rc" != 0 ]; then
	grep -a '^soak' "$RUN_DIR/console.log" 2>/dev/null | tail -n 5 | sed 's/^/    guest: /' >&2 || true
fi

# Store the run (failed ones too) in the runs database (db/ingest.py).
# A run that is not stored fails the job: a cron job must know.
store_rc=0
python3 "$TOP/db/ingest.py" "$RUN_DIR" || store_rc=$?

[ "$boot_rc" = 0 ] || die "$label: the guest run failed (see above; logs in $RUN_DIR)"
[ "$sum_rc" = 0 ] || die "$label: the soak did not finish cleanly (logs in $RUN_DIR)"
[ "$store_rc" = 0 ] || die "$label: the run was not stored in the runs database (see above; logs in $RUN_DIR, store it with db/ingest.py $RUN_DIR)"
