#!/usr/bin/env bash
# Boot KERNEL with the test guest and a shell on the console, for poking
# around by hand (the root is a fresh ext4 disk, kselftests in
# /kselftest/cgroup).  Leave with "reboot -f" or Ctrl-a x.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
kernel=${1:-patched}
check_kernel_name "$kernel"
dir=$(mktemp -d "$BUILD/shell.XXXXXX")
trap 'rm -rf "$dir"' EXIT
mke2fs -q -F -t ext4 -d "$BUILD/guest/disk" "$dir/root.img" 2G
truncate -s 512M "$dir/swap.img"
exec qemu-system-x86_64 -m "${MEM:-1024}" -smp "${SMP:-2}" -nographic -no-reboot -nic none \
	-kernel "$KBUILD/$kernel/arch/x86/boot/bzImage" \
	-append "root=/dev/vda rw rootfstype=ext4 init=/init console=ttyS0 panic=-1 acpi=noirq rr.job=shell ${APPEND:-}" \
	-drive file="$dir/root.img",if=virtio,format=raw -drive file="$dir/swap.img",if=virtio,format=raw \
	-serial mon:stdio -serial null
