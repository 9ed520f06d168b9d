#!/usr/bin/env bash
# Build the guest userspace, the same for every kernel:
#   build/guest/initramfs.cpio.gz  busybox-static and the init in guest/init
#   build/guest/kselftest/         cgroup kselftests, static, from the
#                                  patched tree (so new tests run everywhere)
# Each boot gets a fresh ext4 data disk made from build/guest/kselftest
# (see boot.sh), so no state leaks from one run to the next.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

GUEST="$BUILD/guest"
BUSYBOX=${BUSYBOX:-/bin/busybox}
mkdir -p "$GUEST"

"$TOP/qemu-run/tree.sh"

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
rm -rf "$GUEST/kselftest"
mv "$GUEST/kselftest.new" "$GUEST/kselftest"
say "built the cgroup kselftests in $(elapsed "$t0")"

# --- initramfs
file -L "$BUSYBOX" 2>/dev/null | grep -q 'statically linked' ||
	die "$BUSYBOX is not a static busybox: install Debian's busybox-static (make deps)"
root="$GUEST/initramfs.d"
rm -rf "$root"
mkdir -p "$root/bin" "$root/dev" "$root/proc" "$root/sys" "$root/tmp" "$root/mnt"
cp "$BUSYBOX" "$root/bin/busybox"
install -m 0755 "$TOP/qemu-run/guest/init" "$root/init"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet | gzip -1) >"$GUEST/initramfs.cpio.gz.new"
mv "$GUEST/initramfs.cpio.gz.new" "$GUEST/initramfs.cpio.gz"
say "guest ready: $GUEST/initramfs.cpio.gz ($(du -k "$GUEST/initramfs.cpio.gz" | cut -f1) KiB), $(ls "$GUEST/kselftest/cgroup" | wc -l) kselftest files"
