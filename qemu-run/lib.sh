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
	original|patched) echo "$TOP/qemu-run/config/base.config" ;;
	debug) echo "$TOP/qemu-run/config/base.config $TOP/qemu-run/config/debug.config" ;;
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
