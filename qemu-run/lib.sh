# Shared helpers for the qemu-run scripts.  Source it, do not run it.
# shellcheck disable=SC2034
# shellcheck shell=bash

: "${TOP:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${BUILD:=$TOP/build}"
: "${JOBS:=$(nproc)}"
: "${LINUX_TARBALL:=/usr/src/linux-source-6.12.tar.xz}"

SRC="$BUILD/src"
BASE_TREE="$SRC/original"     # pristine extract, git repo, tag "base"
PATCHED_TREE="$SRC/patched"   # git worktree of the above with patches/ applied
# Out-of-tree kernel builds, one folder per kernel; KERNEL_BUILDS puts a
# set of kernels built with other fragments (KCONFIG_EXTRA) elsewhere.
KBUILD="${KERNEL_BUILDS:-$BUILD/kernel}"

# The one list of kernels; everything else reads it.
KERNELS="original patched debug"

say()  { printf '==> %s\n' "$*" >&2; }
warn() { printf 'warning: %s\n' "$*" >&2; }
die()  { printf 'error: %s\n' "$*" >&2; exit 1; }

# build_plugin: $BUILD/plugin/insn_by_tb.so, the TCG plugin of PROFILE=1
# boots (qemu-run/boot/plugin/insn_by_tb.c), built when it is missing or
# older than its source; each builder writes its own file, then renames it.
build_plugin() {
	local src="$TOP/qemu-run/boot/plugin/insn_by_tb.c" so="$BUILD/plugin/insn_by_tb.so"
	[ -f "$so" ] && [ "$so" -nt "$src" ] && return 0
	mkdir -p "$BUILD/plugin"
	cc -O2 -Wall -Wextra -shared -fPIC -o "$so.new.$$" "$src" ||
		die "cannot build the TCG plugin $so from $src (a C compiler: qemu-run/deps.sh)"
	mv "$so.new.$$" "$so"
}

# check_scenarios FILE.scn,...: the guest's scenario player, built for the
# host, reads the files without doing anything (check=1): a scenario that
# does not read is refused before anything boots.
check_scenarios() {
	mkdir -p "$BUILD/host"
	cc -O2 -Wall -o "$BUILD/host/scenario" "$TOP/qemu-run/guest/scenario.c" ||
		die "cannot build the scenario player for the host (qemu-run/guest/scenario.c)"
	"$BUILD/host/scenario" check=1 dir="$TOP/scenarios" files="$1" ||
		die "a scenario does not read (above): scenarios/README.md has the language"
}

# check_nodes NODES MEM SMP: boot.sh's NODES (QEMU's NUMA nodes) fits the
# guest's MEM (MiB) and SMP (vCPUs), or die saying why: a number from 1 to
# SMP, MEM and SMP multiples of NODES (each node a socket, split evenly).
# Jobs call it before they build anything; boot.sh again.
check_nodes() {
	local nodes=$1 mem=$2 smp=$3
	[[ "$nodes" =~ ^[1-9][0-9]*$ ]] ||
		die "NODES=$nodes: a number of NUMA nodes, 1 (the default: none declared) or 2 to SMP"
	[[ "$mem$smp" =~ ^[0-9]+$ ]] || return 0	# boot.sh says what is wrong with them
	[ "$nodes" -le "$smp" ] ||
		die "NODES=$nodes with SMP=$smp: every NUMA node needs a vCPU of its own, so NODES is at most SMP (raise SMP to $nodes or more)"
	[ $((smp % nodes)) = 0 ] ||
		die "NODES=$nodes with SMP=$smp: every node is a socket with the same number of vCPUs, so SMP must be a multiple of $nodes"
	[ $((mem % nodes)) = 0 ] ||
		die "NODES=$nodes with MEM=$mem: the guest memory is split evenly between the nodes, so MEM must be a multiple of $nodes MiB (such as $((mem / nodes * nodes)) or $(((mem / nodes + 1) * nodes)))"
}

check_kernel_name() {
	local k
	for k in $KERNELS; do [ "$1" = "$k" ] && return 0; done
	die "unknown kernel '$1'; valid names: ${KERNELS// /, }"
}

# Elapsed wall time since $1 (seconds since the epoch) as "3m07s".
elapsed() {
	local s=$(( $(date +%s) - $1 ))
	printf '%dm%02ds' $((s / 60)) $((s % 60))
}

sha() { sha256sum | cut -c1-16; }

# Fragments each kernel is built from, in order; then KCONFIG_EXTRA's
# (build.sh takes them only with KERNEL_BUILDS or KERNEL_OUT set).
fragments_of() {
	case "$1" in
	original|patched) echo "$TOP/qemu-run/kernel/config/base.config" ${KCONFIG_EXTRA:-} ;;
	debug) echo "$TOP/qemu-run/kernel/config/base.config $TOP/qemu-run/kernel/config/debug.config" ${KCONFIG_EXTRA:-} ;;
	esac
}

# Source tree each kernel is built from.
tree_of() {
	case "$1" in
	original) echo "$BASE_TREE" ;;
	patched|debug) echo "$PATCHED_TREE" ;;
	esac
}

# The cgroup kselftests the harness runs, in this order (memory-related ones).
KSELFTESTS="test_core test_kmem test_memcontrol test_zswap test_hugetlb_memcg test_memcg_reparent_slab test_memcg_reparent_lru test_memcg_reparent_pins test_memcg_reparent_reclaim census_check"
# The ones that need the memory controller on a cgroup v1 hierarchy: they
# run on a boot of their own (rr.cgroup=v1, see guest/init).
KSELFTESTS_V1="test_memcg_reparent_v1"
# The ones that need two NUMA nodes: a boot of their own (numa=fake=2).
KSELFTESTS_NUMA="test_memcg_reparent_numa"

# The patches of the series, in order: patches/*.patch but the cover letter
# (0000-cover-letter.patch, no diff).
series_patches() {
	local p
	for p in "$TOP"/patches/*.patch; do
		[ -e "$p" ] || continue
		case "$(basename "$p")" in 0000-*) continue ;; esac
		echo "$p"
	done
}

# Commit the patches given (files, in order) on top of base without touching
# any work tree: in a scratch index, apply each patch and commit it.  Prints
# the last commit.
commit_series() {
	local parent p info msg diff tree
	parent=$(git -C "$BASE_TREE" rev-parse base)
	export GIT_INDEX_FILE="$BUILD/series.$$.index"
	rm -f "$GIT_INDEX_FILE"
	git -C "$BASE_TREE" read-tree base
	msg=$(mktemp)
	diff=$(mktemp)
	for p in "$@"; do
		info=$(git -C "$BASE_TREE" mailinfo "$msg" "$diff" <"$p")
		if ! git -C "$BASE_TREE" apply --cached "$diff" 2>"$BUILD/am.err"; then
			sed 's/^/    /' "$BUILD/am.err" >&2
			rm -f "$msg" "$diff" "$GIT_INDEX_FILE"
			die "patch does not apply: patches/$(basename "$p")"
		fi
		tree=$(git -C "$BASE_TREE" write-tree)
		parent=$(
			GIT_AUTHOR_NAME=$(sed -n 's/^Author: //p' <<<"$info") \
			GIT_AUTHOR_EMAIL=$(sed -n 's/^Email: //p' <<<"$info") \
			GIT_AUTHOR_DATE=$(sed -n 's/^Date: //p' <<<"$info") \
			GIT_COMMITTER_NAME=qemu-run GIT_COMMITTER_EMAIL=qemu-run@localhost \
			git -C "$BASE_TREE" commit-tree "$tree" -p "$parent" \
				-F <(sed -n 's/^Subject: //p' <<<"$info"; echo; cat "$msg"))
		printf '    applied %s\n' "$(basename "$p")" >&2
	done
	rm -f "$msg" "$diff" "$GIT_INDEX_FILE"
	unset GIT_INDEX_FILE
	echo "$parent"
}

# ---- the one runner of the guest tools (jobs/soak.sh, stress.sh, bench.sh)

RECORDS="$TOP/qemu-run/records/records.py"

# records_cli TOOL "$@": a job's --summary SAMPLES.LOG and --scan SAMPLES.LOG
# (the summary line, or its key=value words) come from the records module;
# any other first word returns, for the job to go on.
records_cli() {
	local tool=$1
	shift
	case "${1:-}" in
	--summary|--scan)
		[ -f "${2:-}" ] || die "usage: $tool.sh $1 SAMPLES.LOG"
		if [ "$1" = --scan ]; then exec python3 "$RECORDS" scan "$tool" "$2"; fi
		exec python3 "$RECORDS" summary "$tool" "$2" "$tool"
		;;
	esac
}

# tool_knobs TOOL [key=value ...]: the knobs of a run, in knobs=(): those
# the caller put there first (from its variables), then the words of
# $TOOL_EXTRA (make's SOAK=, STRESS=, BENCH=), then the arguments; the guest
# takes the last of each.  Each is key=value without spaces, and the whole
# set is checked on the host against the tool's own table (guest/knobs.py)
# before anything boots.
tool_knobs() {
	local tool=$1 kv
	shift
	# shellcheck disable=SC2206
	[ -n "${TOOL_EXTRA:-}" ] && knobs+=(${TOOL_EXTRA})
	knobs+=("$@")
	for kv in ${knobs[@]+"${knobs[@]}"}; do
		[[ "$kv" =~ ^[a-z_]+=[^[:space:]]+$ ]] || die "$tool knobs are key=value without spaces, not '$kv'"
	done
	python3 "$TOP/qemu-run/guest/knobs.py" "$tool" ${knobs[@]+"${knobs[@]}"} ||
		die "bad $tool knobs (see above): nothing was booted"
}

# knob NAME DEFAULT: the value of a knob as the guest will see it (the last one).
knob() {
	local kv v=$2
	for kv in ${knobs[@]+"${knobs[@]}"}; do [ "${kv%%=*}" = "$1" ] && v=${kv#*=}; done
	echo "$v"
}

# tool_run KERNEL TOOL LABEL [boot words ...]: boot KERNEL for the guest
# tool TOOL into $RUN_DIR with its knobs as TOOL.key=value (boot.sh adds
# "rr."), a progress line every PROGRESS_SECS (default 5) while it runs,
# then its summary line (also in $RUN_DIR/summary), the guest's last words
# when it failed, and the run stored in the database (failed runs too; in
# batch $RUN_BATCH when set).  The records are read by records.py only.  Sets
# boot_rc, sum_rc and store_rc; returns 0 only when all three are 0.
tool_run() {
	local kernel=$1 tool=$2 label=$3 t0 monitor target
	shift 3
	t0=$(date +%s)
	mkdir -p "$RUN_DIR"
	(
		while sleep "${PROGRESS_SECS:-5}"; do
			python3 "$RECORDS" progress "$tool" "$RUN_DIR/samples.log" "$label" "$(elapsed "$t0")" \
				${TOOL_SECS:+"$TOOL_SECS"} >&2 || true
		done
	) &
	monitor=$!
	boot_rc=0
	RUN_DIR=$RUN_DIR "$TOP/qemu-run/boot/boot.sh" "$kernel" "$tool" \
		${knobs[@]+"${knobs[@]/#/$tool.}"} "$@" || boot_rc=$?
	kill "$monitor" 2>/dev/null || true
	wait "$monitor" 2>/dev/null || true

	echo
	target=$RUN_DIR/samples.log
	[ "$tool" = stress ] && target=$RUN_DIR
	sum_rc=0
	python3 "$RECORDS" summary "$tool" "$target" "$label" "$(elapsed "$t0")" | tee "$RUN_DIR/summary" || sum_rc=$?
	if [ "$boot_rc" != 0 ] || [ "$sum_rc" != 0 ]; then
		python3 "$RECORDS" last-words "$tool" "$RUN_DIR" >&2 || true
	fi
	store_rc=0
	python3 "$TOP/db/ingest.py" ${RUN_BATCH:+--batch "$RUN_BATCH"} "$RUN_DIR" || store_rc=$?
	[ "$boot_rc" = 0 ] && [ "$sum_rc" = 0 ] && [ "$store_rc" = 0 ]
}

# The series version an image was built from (kernel/build.sh writes it into the
# build folder as .series: the hash of the series' patches, the cover letter
# aside, empty for original) and its config, as meta lines for boot.sh:
# every stored figure carries them, so two versions of the series never mix
# under "patched".
series_key_of() {
	case "$1" in
	original) echo "" ;;
	*) series_patches | while read -r p; do cat "$p"; done | sha ;;
	esac
}
# The guest's kernel command line: guest_cmdline KERNEL JOB [key=value ...]
# (each pair becomes rr.key=value; APPEND is added).  boot.sh and the LAVA
# jobs (lava.py) boot with it.
guest_cmdline() {
	local kernel=$1 job=$2 kv cmdline
	shift 2
	# acpi=noirq: under KASAN and lockdep the emulated ACPI interpreter times
	# out evaluating _PRT (AE_AML_LOOP_TIMEOUT), leaving virtio without
	# interrupts.
	cmdline="root=/dev/vda rw rootfstype=ext4 init=/init console=ttyS0 panic=-1 oops=panic loglevel=6"
	cmdline+=" acpi=noirq rcupdate.rcu_cpu_stall_timeout=300"
	cmdline+=" rr.job=$job"
	for kv in "$@"; do cmdline+=" rr.$kv"; done
	if [ "$kernel" = debug ]; then
		# Any report ends the run at once, so it cannot be missed.
		cmdline+=" panic_on_warn=1 kasan.fault=panic page_owner=on"
	fi
	cmdline+=" ${APPEND:-}"
	# x86's COMMAND_LINE_SIZE: the kernel would cut a longer line silently,
	# and the guest would run fewer tests than were asked for.
	[ "${#cmdline}" -lt 2048 ] ||
		die "the kernel command line has ${#cmdline} bytes, more than x86's 2047 (fewer tests, a smaller REPEAT or a shorter APPEND)"
	echo "$cmdline"
}
build_ids() {
	[ -f "$1/.series" ] && echo "series_key=$(cat "$1/.series")"
	[ -f "$1/.config" ] && echo "config_key=$(sha <"$1/.config")"
	return 0
}

# The census module (census/) against the kernel build folder OUT of source
# TREE: OUT/census/memcg_census.ko (boot.sh puts it on the guest's disk).
# Seconds; a warning fails it.  build_census_module TREE OUT LABEL
build_census_module() {
	local tree=$1 out=$2 label=$3
	rm -rf "$out/census"
	mkdir -p "$out/census"
	cp "$TOP"/census/Kbuild "$TOP"/census/*.c "$out/census/"
	make -C "$tree" O="$out" M="$out/census" modules >"$out/census/build.log" 2>&1 ||
		{ tail -20 "$out/census/build.log" >&2; die "the census module failed to build against $label (log: $out/census/build.log)"; }
	if grep -q 'warning:' "$out/census/build.log"; then
		grep 'warning:' "$out/census/build.log" >&2
		die "the census module builds with warnings against $label"
	fi
}
