#!/usr/bin/env bash
# The differential oracle: play the same scenario files on original and
# patched and compare every live cgroup's counters, each action's outcome
# and the conservation audit (reports/oracle.py).
#
#   qemu-run/jobs/oracle.sh [SCENARIO ...]      names of scenarios/*.scn, without .scn
#   make oracle [SCENARIOS='swapin-sibling sock-last-memcg'] [ORACLE_SET=short] [ORACLE_REPEAT=3]
#
# Without names: every scenarios/*.scn, or with ORACLE_SET=short the ones
# scenarios/short lists (make test's set).  A scenario whose file says
# "needs cgroup-v1" runs on a boot of its own with the memory controller on
# a v1 hierarchy (rr.cgroup=v1); the rest share one boot per kernel.
#
# Each kernel plays the files ORACLE_REPEAT times (default 3) in its boot,
# one round after the other: the same kernel does not do quite the same
# thing twice (disk I/O completes at other instructions), so values are
# compared as ranges over the plays (reports/oracle.py).
#
# Environment as for boot.sh: MEM (default 1024), SMP (default 2), CLOCK
# (default icount: guest time counts instructions, so both kernels play the
# same sequence whatever the host's load), SEED (default 1), DEADLINE
# (default 1800 s a boot), NOBUILD=1 (boot what is there), KERNELS_UNDER_TEST
# (default "original patched": the first is the reference; "original
# original" measures the noise the tolerances must cover).
#
# Each boot is stored in the runs database; the comparison is stored too
# and printed as a table of what differs.  Exit status 0 only when every
# boot was clean and complete and the comparison passed (scenarios/expected
# lists the deliberate differences and the known findings).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

SCEN_DIR="$TOP/scenarios"
names=("$@")
if [ ${#names[@]} = 0 ]; then
	if [ "${ORACLE_SET:-all}" = short ]; then
		mapfile -t names < <(sed 's/#.*//; /^[[:space:]]*$/d' "$SCEN_DIR/short")
	elif [ "${ORACLE_SET:-all}" = all ]; then
		for f in "$SCEN_DIR"/*.scn; do names+=("$(basename "$f" .scn)"); done
	else
		die "ORACLE_SET is short or all, not '${ORACLE_SET}'"
	fi
fi
[ ${#names[@]} -gt 0 ] || die "no scenarios to play (scenarios/*.scn)"
# "needs first-in-boot": played first in its boot (it wants the machine's
# cgroups as the boot left them: no other memory cgroup).
first=() rest=()
for n in "${names[@]}"; do
	if grep -qE '^[[:space:]]*needs[[:space:]]+first-in-boot' "$SCEN_DIR/${n%.scn}.scn" 2>/dev/null; then
		first+=("$n")
	else
		rest+=("$n")
	fi
done
names=(${first[@]+"${first[@]}"} ${rest[@]+"${rest[@]}"})
v2=() v1=()
for n in "${names[@]}"; do
	n=${n%.scn}
	[ -f "$SCEN_DIR/$n.scn" ] || die "no scenario '$n': the scenarios are $(cd "$SCEN_DIR" && ls ./*.scn | sed 's|^\./||; s/\.scn$//' | tr '\n' ' ')"
	if grep -qE '^[[:space:]]*needs[[:space:]]+cgroup-v1' "$SCEN_DIR/$n.scn"; then
		v1+=("$n.scn")
	else
		v2+=("$n.scn")
	fi
done
all=(${v2[@]+"${v2[@]}"} ${v1[@]+"${v1[@]}"})
check_scenarios "$(IFS=,; echo "${all[*]}")"
read -r -a under_test <<<"${KERNELS_UNDER_TEST:-original patched}"
[ ${#under_test[@]} = 2 ] || die "KERNELS_UNDER_TEST names two kernels, the reference first, not '${KERNELS_UNDER_TEST:-}'"
for k in "${under_test[@]}"; do check_kernel_name "$k"; done

if [ "${NOBUILD:-0}" != 1 ]; then
	for k in "${under_test[@]}"; do "$TOP/qemu-run/kernel/build.sh" "$k"; done
	"$TOP/qemu-run/guest/image.sh"
fi

export CLOCK=${CLOCK:-icount}
export DEADLINE=${DEADLINE:-1800}
stamp=$(date +%Y%m%d-%H%M%S)
t0=$(date +%s)
status=0
results=()
# boot_group GROUP FILES KERNEL SUFFIX [boot words]: one boot of KERNEL
# playing FILES; its run folder in last_dir.
boot_group() {
	local group=$1 files=$2 kernel=$3 suffix=$4
	shift 4
	RUN_DIR="$BUILD/runs/$stamp-$kernel-oracle-$group$suffix"
	# shellcheck disable=SC2034 # knobs: read by tool_knobs and tool_run (lib.sh)
	knobs=("files=$files" "seed=${SEED:-1}")
	tool_knobs scenario
	sum_rc=1 store_rc=1
	tool_run "$kernel" scenario "oracle $group $kernel" "$@" || true
	[ "$store_rc" = 0 ] || status=1
	# A boot that was not clean (a WARNING, say) is a finding when the
	# scenarios ran to their end: the comparison names it; a boot that
	# never finished is a failure of its own.
	if [ "$sum_rc" != 0 ]; then
		warn "oracle $group $kernel: the scenarios did not run to their end (logs in $RUN_DIR)"
		status=1
	fi
	last_dir=$RUN_DIR
}
repeat=${ORACLE_REPEAT:-3}
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || die "ORACLE_REPEAT is a number of plays from 1, not '$repeat'"
for group in v2 v1; do
	if [ "$group" = v2 ]; then one=$(IFS=,; echo "${v2[*]:-}"); else one=$(IFS=,; echo "${v1[*]:-}"); fi
	[ -n "$one" ] || continue
	files=$one
	for _ in $(seq 2 "$repeat"); do files="$files,$one"; done
	words=()
	[ "$group" = v1 ] && words=(cgroup=v1)
	dirs=()
	suffix=""
	for k in "${under_test[@]}"; do
		say "oracle: $group scenarios on $k: $files"
		boot_group "$group" "$files" "$k" "$suffix" ${words[@]+"${words[@]}"}
		dirs+=("$last_dir")
		suffix=-2	# the same kernel twice (a noise run) gets two folders
	done
	cmp_rc=0
	python3 "$TOP/reports/oracle.py" compare --store --kernels "${under_test[0]},${under_test[1]}" \
		"${dirs[0]}" "${dirs[1]}" \
		--json "${dirs[1]}/oracle.json" | tee "${dirs[1]}/oracle.txt" || cmp_rc=$?
	[ "$cmp_rc" = 0 ] || status=1
	results+=("$(tail -1 "${dirs[1]}/oracle.txt") [$group]")
done

echo
printf '%s\n' "${results[@]}"
say "oracle: $([ $status = 0 ] && echo passed || echo FAILED) in $(elapsed "$t0")"
exit $status
