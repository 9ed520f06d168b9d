#!/usr/bin/env bash
# Boot one kernel in QEMU (TCG) with the test guest and run one job.
#
#   qemu-run/boot/boot.sh KERNEL JOB [key=value ...]
#
# Extra key=value pairs go to the guest's command line as rr.key=value
# (tests=a,b timeout=900 ...).  Environment: MEM (MiB, default 1024), SMP
# (default 2), NODES (NUMA nodes QEMU gives the guest, default 1: none
# declared; NODES=N, 2 to SMP, splits MEM evenly into N nodes, each with
# its own memory backend, and the vCPUs into N sockets of SMP/N, a socket
# a node; MEM and SMP must divide by N; the guest reads the topology from ACPI's SRAT, CONFIG_ACPI_NUMA, unlike
# numa=fake=N on APPEND, which splits one node's memory and shares the
# CPUs), CLOCK (wall or icount, see below), DEADLINE (seconds for the whole boot, default 1800), DISK
# (root disk size, default 2G), SWAP (swap disk size, default 512M, a
# sparse file: SWAP=64G costs the host nothing but the guest's swap map),
# APPEND (more kernel command line),
# GUEST_DISK (the guest root tree, default build/guest/disk),
# RUN_DIR (where the logs go; default build/runs/<id>), KERNEL_IMAGE (boot
# this bzImage of a KERNEL build made elsewhere, see series-check.sh).
#
# The console (ttyS0) goes to console.log, the guest's records (ttyS1) to
# results.log, soak samples (ttyS2) to samples.log (see RECORDS.md).  TAP
# lines are echoed on the host as they arrive.  The run
# fails when the guest hangs past the deadline, never reports "@@ done", or
# its console shows a panic, oops, BUG, WARN, KASAN, lockdep or stall report:
# then the offending lines and the end of the console are printed.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

kernel=${1:-}
job=${2:-}
[ -n "$kernel" ] && [ -n "$job" ] || die "usage: boot.sh KERNEL JOB [key=value ...]"
check_kernel_name "$kernel"
shift 2

MEM=${MEM:-1024}
SMP=${SMP:-2}
[[ "$MEM" =~ ^[0-9]+$ ]] && [ "$MEM" -ge 256 ] ||
	die "MEM=$MEM: the guest needs a number of MiB, at least 256 (the kselftests and the soak's defaults want 1024)"
[[ "$SMP" =~ ^[0-9]+$ ]] && [ "$SMP" -ge 1 ] && [ "$SMP" -le 16 ] ||
	die "SMP=$SMP: a number of vCPUs from 1 to 16 (the kernels are built with NR_CPUS=16)"
NODES=${NODES:-1}
check_nodes "$NODES" "$MEM" "$SMP"
# NODES=N: one RAM backend of MEM/N MiB and one node per backend, each a
# socket of its own with SMP/N vCPUs: a socket's vCPUs share a last-level
# cache, and one cache across two nodes makes the guest's topology_sane()
# warn at boot.
numa_args=()
smp_arg=$SMP
if [ "$NODES" -gt 1 ]; then
	per=$((SMP / NODES))
	smp_arg="$SMP,sockets=$NODES,cores=$per,threads=1"
	for ((i = 0; i < NODES; i++)); do
		cpus=$((i * per))
		[ "$per" = 1 ] || cpus="$cpus-$((i * per + per - 1))"
		numa_args+=(-object "memory-backend-ram,id=m$i,size=$((MEM / NODES))M"
			-numa "node,nodeid=$i,cpus=$cpus,memdev=m$i")
	done
fi
# CLOCK=icount drives the guest clock by the instructions executed
# (-icount shift=2,sleep=off: 4 ns each, idle time skipped, the vCPUs
# round-robin on one host thread): guest-timed figures then count CPU work
# and do not depend on the host's load, but mean nothing for I/O or for
# waiting on wall time.  wall (default): the guest clock is the host's.
CLOCK=${CLOCK:-wall}
case "$CLOCK" in
wall) clock_args=() ;;
icount) clock_args=(-icount "shift=2,sleep=off") ;;
*) die "CLOCK is wall or icount, not '$CLOCK'" ;;
esac
# PROFILE=1: count the kernel's instructions per translation block with
# the TCG plugin qemu-run/boot/plugin/insn_by_tb.c (built into $BUILD/plugin)
# into $RUN_DIR/insn.txt, in instruction-count mode (qemu-run/jobs/insn-profile.sh).
if [ "${PROFILE:-0}" = 1 ]; then
	[ "$CLOCK" = icount ] || die "PROFILE=1 needs CLOCK=icount (one vCPU at a time: the plugin's counters are not atomic)"
	build_plugin
fi
DEADLINE=${DEADLINE:-1800}
image=${KERNEL_IMAGE:-$KBUILD/$kernel/arch/x86/boot/bzImage}
disk=${GUEST_DISK:-$BUILD/guest/disk}
if [ -n "${KERNEL_IMAGE:-}" ]; then
	[ -f "$image" ] || die "KERNEL_IMAGE=$image does not exist"
	[[ "$image" == */arch/x86/boot/bzImage ]] && [ -f "${image%/arch/x86/boot/bzImage}/.key" ] ||
		die "KERNEL_IMAGE=$image was not built by qemu-run/kernel/build.sh (no .key in its build folder): build it with KERNEL_OUT=DIR [KERNEL_TREE=TREE] qemu-run/kernel/build.sh $kernel"
else
	[ -f "$image" ] || die "no image for kernel $kernel: run 'make kernel KERNEL=$kernel' (or 'make kernels') first"
	# kernel/build.sh removes .key before it builds and writes it once the image is
	# whole: without it the image is a stale one from before an interrupted
	# build (NOBUILD=1 would boot it silently).
	[ -f "${image%/arch/x86/boot/bzImage}/.key" ] ||
		die "the image of kernel $kernel is stale or half built (no .key next to it): run 'make kernel KERNEL=$kernel'"
fi
[ -x "$disk/init" ] || die "no guest root in $disk: run qemu-run/guest/image.sh first"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 not found: install Debian's qemu-system-x86 (make deps)"

id=$(date +%Y%m%d-%H%M%S)-$kernel-$job
RUN_DIR=${RUN_DIR:-$BUILD/runs/$id}
mkdir -p "$RUN_DIR"

# Fresh disks for every boot: the ext4 root with the kselftests, and swap.
mke2fs -q -F -t ext4 -L root -d "$disk" "$RUN_DIR/root.img" "${DISK:-2G}" ||
	die "cannot create the ext4 root disk"
# The census module built against this kernel (kernel/build.sh), at /.
census_ko=${image%/arch/x86/boot/bzImage}/census/memcg_census.ko
if [ -f "$census_ko" ]; then
	debugfs -w -R "write $census_ko memcg_census.ko" "$RUN_DIR/root.img" >/dev/null 2>&1 ||
		die "cannot put $census_ko on the root disk"
fi
SWAP=${SWAP:-512M}
[[ "$SWAP" =~ ^[1-9][0-9]*[MG]$ ]] || die "SWAP=$SWAP: a size in M or G, such as 512M or 64G"
truncate -s "$SWAP" "$RUN_DIR/swap.img"

# LAVA=1 boots as a LAVA lab does (qemu-run/lab/lava.py): the console is the
# only serial port and the guest puts its records there (rr.lava=1).
# shellcheck disable=SC2054 # commas separate QEMU's suboptions
serials=(-chardev "file,id=con,path=$RUN_DIR/console.log" -serial chardev:con)
lava=()
if [ "${LAVA:-0}" = 1 ]; then
	lava=(lava=1)
else
	serials+=(-chardev "file,id=res,path=$RUN_DIR/results.log" -serial chardev:res
		-chardev "file,id=smp,path=$RUN_DIR/samples.log" -serial chardev:smp)
fi
cmdline=$(guest_cmdline "$kernel" "$job" ${lava[@]+"${lava[@]}"} "$@") || exit 1
# Without MP-table support (Debian's configuration, qemu-run/kernel/deb.sh)
# acpi=noirq leaves the guest one CPU: the CPUs come from ACPI alone there.
grep -q '^CONFIG_X86_MPPARSE=y' "${image%/arch/x86/boot/bzImage}/.config" 2>/dev/null ||
	cmdline=${cmdline/ acpi=noirq/}
profile=()
profile_from=
if [ "${PROFILE:-0}" = 1 ]; then
	plugin="$BUILD/plugin/insn_by_tb.so,out=$RUN_DIR/insn.txt"
	# FROM_SYNC=K: count from the guest's K-th sync(2) on (the plugin zeroes
	# its counters there), leaving out the boot and what came before.
	if [ -n "${FROM_SYNC:-}" ]; then
		[[ "$FROM_SYNC" =~ ^[1-9][0-9]*$ ]] || die "FROM_SYNC is a count of sync(2) calls from 1, not '$FROM_SYNC'"
		smap="${image%/arch/x86/boot/bzImage}/System.map"
		addr=$(awk '$3 == "__x64_sys_sync" && $2 ~ /^[tT]$/ { print $1; exit }' "$smap" 2>/dev/null) || true
		[ -n "$addr" ] || die "no __x64_sys_sync in $smap: FROM_SYNC cannot place its mark"
		plugin+=",mark=0x$addr,from=$FROM_SYNC"
		profile_from="sync:$FROM_SYNC"
		# EVERY_SYNC=1: each later sync(2) closes a window of its own
		# (insn.txt.N; insn.txt is the last, to the end).
		if [ "${EVERY_SYNC:-0}" = 1 ]; then
			plugin+=",every=1"
			profile_from+=",every"
		fi
	elif [ "${EVERY_SYNC:-0}" = 1 ]; then
		die "EVERY_SYNC=1 needs FROM_SYNC=K: the first window starts at the K-th sync(2)"
	fi
	# PROFILE_USER=1: count user space's blocks too (one entry, "(user)"):
	# with the kernel's, every instruction the guest executed.
	if [ "${PROFILE_USER:-0}" = 1 ]; then
		plugin+=",min=0"
		profile_from+="${profile_from:+,}user"
	fi
	profile=(-plugin "$plugin")
fi

cat >"$RUN_DIR/meta" <<META
kernel=$kernel
job=$job
args=$*
mem=$MEM
smp=$SMP
nodes=$NODES
clock=$CLOCK
swap=$SWAP
deadline=$DEADLINE
image_key=$(cat "${image%/arch/x86/boot/bzImage}/.key" 2>/dev/null || echo unknown)
image=$image
$(build_ids "${image%/arch/x86/boot/bzImage}")
cmdline=$cmdline
append=${APPEND:-}
profile_from=$profile_from
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
META

say "booting $kernel, job $job (deadline ${DEADLINE}s, logs in $RUN_DIR)"
: >"$RUN_DIR/console.log"
: >"$RUN_DIR/results.log"
: >"$RUN_DIR/samples.log"
# Echo TAP as it arrives; the records themselves stay in results.log.
tail -n +1 -F "$RUN_DIR/results.log" 2>/dev/null | grep --line-buffered -vE '^@@ ' &
tailer=$!
t0=$(date +%s)
set +e
# The harness owns its QEMU: setpriv's parent-death signal kills timeout
# when this script dies, and QEMU when timeout dies, however they are
# killed, so no QEMU goes on writing into a run that was judged.
setpriv --pdeathsig KILL timeout -k 10 "$DEADLINE" setpriv --pdeathsig KILL qemu-system-x86_64 \
	-m "$MEM" -smp "$smp_arg" ${numa_args[@]+"${numa_args[@]}"} ${clock_args[@]+"${clock_args[@]}"} -display none -no-reboot -monitor none -nic none \
	-kernel "$image" -append "$cmdline" \
	-drive file="$RUN_DIR/root.img",if=virtio,format=raw \
	-drive file="$RUN_DIR/swap.img",if=virtio,format=raw \
	"${serials[@]}" ${profile[@]+"${profile[@]}"} \
	</dev/null >"$RUN_DIR/qemu.log" 2>&1
qrc=$?
set -e
sleep 0.5
kill "$tailer" 2>/dev/null || true
wait "$tailer" 2>/dev/null || true
secs=$(($(date +%s) - t0))
echo "wall_secs=$secs" >>"$RUN_DIR/meta"
echo "qemu_rc=$qrc" >>"$RUN_DIR/meta"
rm -f "$RUN_DIR/root.img" "$RUN_DIR/swap.img"
mkdir -p "$BUILD/runs"
ln -sfn "$RUN_DIR" "$BUILD/runs/last-$kernel"

timed_out=()
# timeout(1) exits 124 at the deadline, 137 when QEMU then needed a KILL;
# 128+N before the deadline means QEMU (or timeout) was killed by signal N.
if [ "$qrc" = 124 ] || { [ "$qrc" = 137 ] && [ "$secs" -ge "$DEADLINE" ]; }; then
	timed_out=(--timed-out "$DEADLINE")
elif [ "$qrc" -gt 128 ] && [ "$qrc" -lt 160 ]; then
	echo "verdict=killed" >>"$RUN_DIR/meta"
	die "kernel $kernel: QEMU was killed by SIG$(kill -l $((qrc - 128)) 2>/dev/null || echo $((qrc - 128))) after ${secs}s, before the ${DEADLINE}s deadline: the run is incomplete (logs: $RUN_DIR)"
fi
if [ "$qrc" != 0 ] && [ ${#timed_out[@]} = 0 ]; then
	sed 's/^/    /' "$RUN_DIR/qemu.log" >&2
	die "qemu failed to run (exit $qrc; log: $RUN_DIR/qemu.log)"
fi
if [ "${LAVA:-0}" = 1 ]; then
	python3 "$TOP/db/lava_collect.py" --split "$RUN_DIR" >/dev/null ||
		die "cannot split the console of the LAVA-mode run $RUN_DIR"
fi
if ! python3 "$TOP/qemu-run/boot/console.py" "${timed_out[@]}" "$RUN_DIR/console.log" "$RUN_DIR/results.log"; then
	echo "verdict=bad" >>"$RUN_DIR/meta"
	die "kernel $kernel: guest run failed after ${secs}s (logs: $RUN_DIR)"
fi
echo "verdict=clean" >>"$RUN_DIR/meta"
say "guest run clean in ${secs}s (logs: $RUN_DIR)"
