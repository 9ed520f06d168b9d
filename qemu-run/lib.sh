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
KBUILD="$BUILD/kernel"        # out-of-tree kernel builds, one folder per kernel

# The one list of kernels; everything else reads it.
KERNELS="original patched debug"

say()  { printf '==> %s\n' "$*" >&2; }
warn() { printf 'warning: %s\n' "$*" >&2; }
die()  { printf 'error: %s\n' "$*" >&2; exit 1; }

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

# Fragments each kernel is built from, in order.
fragments_of() {
	case "$1" in
	original|patched) echo "$TOP/qemu-run/kernel/config/base.config" ;;
	debug) echo "$TOP/qemu-run/kernel/config/base.config $TOP/qemu-run/kernel/config/debug.config" ;;
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
KSELFTESTS="test_core test_kmem test_memcontrol test_zswap test_hugetlb_memcg test_memcg_reparent"

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

# The verdict on a test soak's direction (test.sh): soak_direction KERNEL
# CHANGES SCAN, where CHANGES is 1 when KERNEL carries kernel changes of the
# series and SCAN is soak.sh --scan's key=value words.  Prints one line,
# "PASS|FAIL KERNEL soak: ...".  Judged on the dying memcgs after the
# guest's final drop_caches: original must keep at least 25% of its
# generations, a kernel with the series' changes at most 2%.  A missing or
# non-numeric figure fails: it never reads as 0.
soak_direction() {
	local kernel=$1 changes=$2 dying reached want ok
	dying=$(tr ' ' '\n' <<<"$3" | sed -n 's/^dying_drop=//p')
	reached=$(tr ' ' '\n' <<<"$3" | sed -n 's/^reached=//p')
	case "$dying" in ''|*[!0-9]*)
		echo "FAIL $kernel soak: no dying count after drop_caches in the samples (got '$dying')"; return ;;
	esac
	case "$reached" in ''|*[!0-9]*|0)
		echo "FAIL $kernel soak: no generation reached in the samples (got '$reached')"; return ;;
	esac
	if [ "$changes" = 1 ]; then
		want="at most $((reached / 50)) (2%)"
		ok=$((dying <= reached / 50))
	else
		want="at least $((reached / 4)) (25%)"
		ok=$((dying >= reached / 4))
	fi
	echo "$([ "$ok" = 1 ] && echo PASS || echo FAIL) $kernel soak: $dying dying memory cgroups after $reached generations and drop_caches, want $want"
}

# The series version an image was built from (kernel.sh writes it into the
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
		cmdline+=" panic_on_warn=1 kasan.fault=panic"
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
