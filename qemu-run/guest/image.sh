#!/usr/bin/env bash
# Build the guest's root filesystem tree, the same for every kernel:
#   build/guest/disk/bin/          busybox-static and the guest tools (C, static)
#   build/guest/disk/init          qemu-run/guest/init
#   build/guest/disk/kselftest/    cgroup kselftests, static, from the patched
#                                  tree (so new tests run on every kernel)
#   build/guest/disk/usr/bin/stress-ng, lib/...  Debian's stress-ng (bench's
#                                  part stressng) and every library it links,
#                                  at the host's paths; /bin/stress-ng links to it
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
# The census's loader (the module itself is built per kernel: boot.sh), and
# its check, which runs among the cgroup kselftests.
install -m 0755 "$TOP/census/memcg-census-load" "$root/bin/memcg-census-load"
cp "$root/bin/census_check" "$root/kselftest/cgroup/census_check"
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
# stress-ng (bench's part stressng: guest/bench.c runs /bin/stress-ng), as
# Debian builds it, dynamic: the binary and every library ldd names, at the
# same paths as on the host.  One already there (glibc's, above) stays: a
# copy through its absolute symlink would land on the host's file.
STRESS_NG=${STRESS_NG:-/usr/bin/stress-ng}
[ -x "$STRESS_NG" ] || die "no $STRESS_NG: install Debian's stress-ng (make deps)"
libs=$(ldd "$STRESS_NG") || die "ldd $STRESS_NG failed: cannot tell which libraries it needs"
if grep -q 'not found' <<<"$libs"; then
	die "$STRESS_NG needs libraries this host does not have: $(grep 'not found' <<<"$libs" | tr -s '\t\n' '  ')"
fi
# "libm.so.6 => /lib/.../libm.so.6 (0x...)", "/lib64/ld-linux-x86-64.so.2 (0x...)";
# linux-vdso.so.1 is the kernel's, no file.
paths=$(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$libs")
[ -n "$paths" ] || die "ldd $STRESS_NG named no library: is it a static binary? (then drop this copy)"
mkdir -p "$root/usr/bin"
cp -L "$STRESS_NG" "$root/usr/bin/stress-ng" || die "cannot copy $STRESS_NG into the guest"
ln -sf /usr/bin/stress-ng "$root/bin/stress-ng"
for lib in $paths; do
	if [ -e "$root$lib" ] || [ -L "$root$lib" ]; then
		continue
	fi
	if ! mkdir -p "$root$(dirname "$lib")" || ! cp -L "$lib" "$root$lib"; then
		die "cannot copy $lib (a library of $STRESS_NG) into the guest as $root$lib"
	fi
done
# Check: each library resolves inside the guest root, as the guest's loader
# will find it (the root's loader, the root's library folders first, no
# ld.so.cache: a library left on the host only would show as a host path).
ldso="$root$libdir/ld-linux-x86-64.so.2"
libpath=$(for lib in $paths; do echo "$root$(dirname "$lib")"; done | sort -u | paste -sd:)
resolved=$("$ldso" --inhibit-cache --library-path "$libpath" --list "$root/usr/bin/stress-ng") ||
	die "the guest's loader cannot load stress-ng: $resolved"
outside=$(awk '$2 == "=>" && $3 ~ /^\// { print $3 }' <<<"$resolved" | grep -v "^$root/" || true)
[ -z "$outside" ] || die "stress-ng in the guest would not find these (not in $root): $(tr '\n' ' ' <<<"$outside")"
for lib in $paths; do
	[ -e "$root$lib" ] || die "$lib, a library of stress-ng, is missing from the guest root ($root$lib)"
done
say "guest root ready in $root: $(find "$root/kselftest/cgroup" -type f | wc -l) kselftest files, $(du -sk "$root" | cut -f1) KiB"
