#!/usr/bin/env bash
# Build the guest's root filesystem tree, the same for every kernel:
#   build/guest/disk/bin/          busybox-static and the guest tools (C, static)
#   build/guest/disk/init          qemu-run/guest/init
#   build/guest/disk/kselftest/    cgroup kselftests, static, from the patched
#                                  tree (so new tests run on every kernel)
# Each boot gets a fresh ext4 root disk made from it (boot.sh), so the tests
# meet a real filesystem and no state leaks from one run to the next.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

GUEST="$BUILD/guest"
BUSYBOX=${BUSYBOX:-/bin/busybox}
mkdir -p "$GUEST"

"$TOP/qemu-run/kernel/tree.sh"

# --- static cgroup kselftests from the patched tree
t0=$(date +%s)
log="$GUEST/kselftest-build.log"
rm -rf "$GUEST/kselftest.new"
if ! make -C "$PATCHED_TREE/tools/testing/selftests" O="$GUEST/kselftest-obj" \
	TARGETS=cgroup EXTRA_CFLAGS=-static LDFLAGS=-static \
	INSTALL_PATH="$GUEST/kselftest.new" install >"$log" 2>&1; then
	grep -E 'error|warning' "$log" | head -20 >&2 || true
	die "the cgroup kselftests failed to build (log: $log)"
fi
rm -rf "$GUEST/disk"
mkdir -p "$GUEST/disk"
mv "$GUEST/kselftest.new" "$GUEST/disk/kselftest"
# qemu-run/verdict/plans gives the binaries that print no TAP plan theirs: it must
# match their tests[] tables, or a lost subtest would go unnoticed.
while read -r t n; do
	case "$t" in ''|'#'*) continue ;; esac
	src="$PATCHED_TREE/tools/testing/selftests/cgroup/$t.c"
	[ -f "$src" ] || die "qemu-run/verdict/plans names $t, which has no source $src"
	got=$(grep -cE '^[[:space:]]*T\(' "$src" || true)
	# A test with no tests[] table reports its results by name.
	[ "$got" = 0 ] && got=$(grep -oE 'ksft_test_result_(pass|fail|skip)\("[a-z_0-9]+' "$src" | cut -d'"' -f2 | sort -u | wc -l)
	[ "$got" = "$n" ] || die "qemu-run/verdict/plans says $t has $n subtests, its tests[] table has $got: fix qemu-run/verdict/plans"
done <"$TOP/qemu-run/verdict/plans"
say "built the cgroup kselftests in $(elapsed "$t0")"

# --- the root filesystem: busybox, guest tools, init
file -L "$BUSYBOX" 2>/dev/null | grep -q 'statically linked' ||
	die "$BUSYBOX is not a static busybox: install Debian's busybox-static (make deps)"
root="$GUEST/disk"
mkdir -p "$root/bin" "$root/sbin" "$root/dev" "$root/proc" "$root/sys" "$root/tmp" "$root/etc"
cp "$BUSYBOX" "$root/bin/busybox"
for tool in "$TOP"/qemu-run/guest/*.c; do
	gcc -Wall -Wextra -O2 -static -o "$root/bin/$(basename "$tool" .c)" "$tool" ||
		die "guest tool $(basename "$tool") failed to build"
done
install -m 0755 "$TOP/qemu-run/guest/init" "$root/init"
# The differential oracle's scenario files (guest/scenario.c plays them).
mkdir -p "$root/scenarios"
cp "$TOP"/scenarios/*.scn "$root/scenarios/"
# bench's fast.jobs runs on an ext4 with a journal on the RAM disk
# /dev/ram1 (jobs_fs=ext4): busybox's mke2fs makes no journal, so the
# file system is made here, as large as the RAM disk (base.config
# CONFIG_BLK_DEV_RAM_SIZE), and written there by the guest.  Its inode
# tables and journal are zeroed here (lazy_itable_init=0): otherwise the
# guest's ext4lazyinit thread zeroes them after the mount, at a random
# moment of the first 5 s, inside whichever rep it falls (+6M
# instructions, -2% on that rep; docs/history.md).  4 KiB blocks, as on
# the root and any real system: mke2fs gives a disk this small 1 KiB ones.
ramkb=$(sed -n 's/^CONFIG_BLK_DEV_RAM_SIZE=//p' "$TOP/qemu-run/kernel/config/base.config")
[[ "$ramkb" =~ ^[0-9]+$ ]] || die "base.config sets no CONFIG_BLK_DEV_RAM_SIZE"
rm -f "$GUEST/jobs-ext4.img"
mke2fs -q -F -t ext4 -L fast-jobs -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 \
	"$GUEST/jobs-ext4.img" "${ramkb}k" ||
	die "mke2fs of the fast.jobs image failed"
gzip -9 -c "$GUEST/jobs-ext4.img" >"$root/jobs-ext4.img.gz"
rm -f "$GUEST/jobs-ext4.img"
install -m 0644 "$TOP/qemu-run/guest/lava-demux.awk" "$root/lava-demux.awk"
# test_memcontrol's socket test resolves "localhost" with getaddrinfo():
# static glibc loads the NSS "files" backend from the shared libraries.
printf '127.0.0.1\tlocalhost\n::1\tlocalhost\n' >"$root/etc/hosts"
printf 'hosts: files\n' >"$root/etc/nsswitch.conf"
libdir=/lib/x86_64-linux-gnu
mkdir -p "$root$libdir" "$root/lib64"
for lib in libc.so.6 libnss_files.so.2 ld-linux-x86-64.so.2; do
	cp -L "$libdir/$lib" "$root$libdir/$lib" || die "cannot copy $libdir/$lib into the guest"
done
ln -sf "$libdir/ld-linux-x86-64.so.2" "$root/lib64/ld-linux-x86-64.so.2"
say "guest root ready in $root: $(find "$root/kselftest/cgroup" -type f | wc -l) kselftest files, $(du -sk "$root" | cut -f1) KiB"
