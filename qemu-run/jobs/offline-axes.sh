#!/usr/bin/env bash
# The offline cost on its axes (make bench-offline): for every NUMA node
# count (NODES, default "1 2 4 8": numa=fake=N) and every number of dead
# memcgs kept alive by page cache below the removed one (DEAD, default
# "0 100 1000": bench's dead=), one bench batch of original and patched
# (ROUNDS, default 1, boots each), part offline only, in instruction-count
# mode, SIZES (default 64) MiB of page cache, REPS (default 5) reps.  Then
# the table of every axis (reports/offline_axes.py), also written to
# build/bench/offline-axes.md.  NOBUILD=1 uses the kernels and guest there.
# Exit status 0 only when every batch was clean.
#
# IRQSOFF=1 (make bench-irqsoff): the same axes on original and patched
# built with the irqsoff tracer (qemu-run/kernel/config/irqsoff.config, in
# KERNEL_BUILDS, default build/kernel-irqsoff), bench knob irqsoff=1: the
# longest section with interrupts off from each rmdir to the release, and
# whether it ended in memcg offline; table build/bench/offline-irqsoff.md.
# The tracer slows every irqs-off section, so its batches stay out of the
# plain table (and the plain ones out of its table).
set -uo pipefail
if [ "${IRQSOFF:-0}" = 1 ]; then
	export KERNEL_BUILDS=${KERNEL_BUILDS:-$(cd "$(dirname "$0")/../.." && pwd)/build/kernel-irqsoff}
	KCONFIG_EXTRA="$(cd "$(dirname "$0")/.." && pwd)/kernel/config/irqsoff.config"
	export KCONFIG_EXTRA
	knobs=" irqsoff=1" report=(--irqsoff) table=offline-irqsoff.md
else
	knobs="" report=() table=offline-axes.md
fi
. "$(dirname "$0")/../lib.sh"

nodes_list=${NODES:-1 2 4 8}
dead_list=${DEAD:-0 100 1000}
for v in $nodes_list $dead_list ${SIZES:-64} ${REPS:-5} ${ROUNDS:-1}; do
	[[ "$v" =~ ^[0-9]+(,[0-9]+)*$ ]] || die "NODES, DEAD, SIZES, REPS and ROUNDS are numbers, not '$v'"
done
if [ "${NOBUILD:-0}" != 1 ]; then
	"$TOP/qemu-run/kernel/build.sh" original || exit 1
	"$TOP/qemu-run/kernel/build.sh" patched || exit 1
	"$TOP/qemu-run/guest/image.sh" || exit 1
fi
for k in original patched; do
	[ -f "$KBUILD/$k/arch/x86/boot/bzImage" ] || die "no $k kernel in $KBUILD: run without NOBUILD=1"
done
t0=$(date +%s)
status=0
since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
for nodes in $nodes_list; do
	for dead in $dead_list; do
		say "offline axes: $nodes node(s), $dead dead memcg(s)"
		# NODES is this script's list of fake node counts, not boot.sh's
		# QEMU topology: the machine keeps one node, which numa=fake splits.
		NODES=1 APPEND="numa=fake=$nodes${APPEND:+ $APPEND}" NOBUILD=1 ROUNDS=${ROUNDS:-1} BENCH_CHURN=0 \
			BENCH="parts=offline sizes=${SIZES:-64} reps=${REPS:-5} dead=$dead$knobs" \
			"$TOP/qemu-run/jobs/bench.sh" >/dev/null || { status=1; warn "the batch of $nodes node(s), $dead dead failed"; }
	done
done
mkdir -p "$BUILD/bench"
python3 "$TOP/reports/offline_axes.py" --since "$since" "${report[@]}" || status=1
python3 "$TOP/reports/offline_axes.py" --since "$since" "${report[@]}" --markdown >"$BUILD/bench/$table" || status=1
say "offline axes $([ $status = 0 ] && echo "done" || echo FAILED) in $(elapsed "$t0"); table: $BUILD/bench/$table"
exit $status
