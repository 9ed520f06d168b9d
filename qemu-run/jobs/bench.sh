#!/usr/bin/env bash
# The benchmark (make bench): original vs patched, side by side, in one run.
#
#   qemu-run/jobs/bench.sh [key=value ...]     key=value: knobs of the guest's bench
#   make bench ROUNDS=2 BENCH='sizes=1,64,512 reps=2'
#   qemu-run/jobs/bench.sh --summary SAMPLES.LOG   check a bench samples.log, print its summary
#   qemu-run/jobs/bench.sh --scan SAMPLES.LOG      the same as key=value words (tests)
#
# ROUNDS boots of each kernel (default 3), interleaved original, patched,
# original, patched, ... with the same knobs, each running guest/bench
# (offline cost vs the child's page cache, fast paths; with parts=stressng,
# stress-ng's switch, pipe, sock and fork stressors in a memcg, their tasks
# on every CPU: stressng.<stressor>_ops_per_s; "bench help" lists the
# knobs), each stored in the runs database as it ends.  Then, unless
# BENCH_CHURN=0, the churn soak of the selftests (soak.sh, CHURN_GENS=1000
# generations, the same seed) on each kernel.  All these runs share a batch
# id in the database; the end is the side-by-side table of the batch
# (reports/bench_table.py), also written to build/bench/<batch>.md.
#
# Environment: CLOCK (icount, the default: the guest clock counts
# instructions, boot.sh; wall for the host's), NOBUILD=1 uses the kernels
# and guest that are there (else
# both kernels and the guest are built first), ROUNDS, BENCH_CHURN,
# CHURN_GENS, SEED (bench's order of sizes and tests, and the soak's seed;
# default 1), BENCH (more "key=value ..." bench knobs; the command line wins),
# MEM (guest MiB for the bench boots, default 1536: the 512 MiB page cache
# must stay resident; the churn soaks use CHURN_MEM, default 1024 as make
# soak), SMP (default 2), NODES (NUMA nodes of the guest, boot.sh: default
# 1; NODES=2 gives each node half of MEM and of the vCPUs, a real two-node
# machine for the stressng part, whose tasks then ping-pong across nodes;
# the churn soaks get the same), DEADLINE (per bench boot; default from the
# knobs), PROGRESS_SECS (default 10), RUNS_DB (the database).
# Under CLOCK=icount a guest second is 250M instructions, whatever the
# host does: stressng's bogo ops per guest second are bogo ops per
# instruction (a CPU cost, as the fast paths' rates are), not a throughput
# of this host.  Measure the stressors alone:
#   NODES=2 NOBUILD=1 BENCH_CHURN=0 BENCH='parts=stressng' make bench
# Exit status: 0 only when every boot was clean and every guest tool ended
# with rc=0.  Numbers are from an emulated machine (TCG): read the ratios.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

records_cli bench "$@"

ROUNDS=${ROUNDS:-3}
SEED=${SEED:-1}
CHURN_GENS=${CHURN_GENS:-1000}
[[ "$ROUNDS$CHURN_GENS$SEED" =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge 1 ] ||
	die "ROUNDS (>= 1), CHURN_GENS and SEED are numbers, not '$ROUNDS', '$CHURN_GENS', '$SEED'"

knobs=("seed=$SEED")
TOOL_EXTRA=${BENCH:-} tool_knobs bench "$@"
sizes=$(knob sizes 1,4,16,64,256,512)
parts=$(knob parts offline,fast)
reps=$(knob reps 3)
timeout_ms=$(knob timeout_ms 5000)
probe_ms=$(knob probe_ms 1000)
fast_reps=$(knob fast_reps 5)
reclaim_reps=$(knob reclaim_reps 3)
rounds=$(knob rounds 3)
stressors=$(knob stressors switch,pipe,sock,fork)
stressng_secs=$(knob stressng_secs 5)
stressng_reps=$(knob stressng_reps 3)
[[ "$sizes" =~ ^[0-9]+(,[0-9]+)*$ ]] || die "sizes is a list of MiB like 1,64,512, not '$sizes'"
[[ "$reps$timeout_ms$probe_ms$fast_reps$reclaim_reps$rounds$stressng_secs$stressng_reps" =~ ^[0-9]+$ ]] ||
	die "reps, timeout_ms, probe_ms, fast_reps, reclaim_reps, rounds, stressng_secs and stressng_reps are numbers"
if [ -z "${DEADLINE:-}" ]; then
	# Per offline rep: writing and fsyncing the file (~10 MiB/s emulated at
	# worst), the two probe windows, the wait, settling; per fast rep 60 s.
	DEADLINE=300
	case ",$parts," in *,offline,*)
		n=$(tr ',' '\n' <<<"$sizes" | wc -l)
		sum=$((${sizes//,/+}))
		DEADLINE=$((DEADLINE + reps * (n * ((timeout_ms + 2 * probe_ms) / 1000 + 5) + sum / 10)))
	esac
	case ",$parts," in *,fast,*) DEADLINE=$((DEADLINE + fast_reps * 60)) ;; esac
	# Per reclaim round: a file written and read twice, the reclaim (two LRU modes).
	case ",$parts," in *,reclaim,*) DEADLINE=$((DEADLINE + reclaim_reps * 2 * rounds * 60)) ;; esac
	# Per stressor run: its stressng_secs of guest time (under icount 250M
	# instructions each; the fast paths ran 1.5 guest seconds per host
	# second, but a context switch costs TCG more: allow 5 host seconds),
	# and 30 s for stress-ng's start and end, the sync and the settling.
	case ",$parts," in *,stressng,*)
		n=$(tr ',' '\n' <<<"$stressors" | wc -l)
		DEADLINE=$((DEADLINE + stressng_reps * n * (5 * stressng_secs + 30)))
	esac
fi
export DEADLINE
export MEM=${MEM:-1536}
# NODES (boot.sh) must fit the bench boots and the churn soaks: said now,
# not after the builds and the first boots.
check_nodes "${NODES:-1}" "$MEM" "${SMP:-2}"
[ "${BENCH_CHURN:-1}" = 0 ] || check_nodes "${NODES:-1}" "${CHURN_MEM:-1024}" "${SMP:-2}"
# The bench boots count instructions (boot.sh CLOCK=icount): the fast paths
# and the offline cost are CPU work, and under plain TCG their rates swung
# 30-35% with the host.  The churn soaks below keep the wall clock.
export CLOCK=${CLOCK:-icount}

if [ "${NOBUILD:-0}" != 1 ]; then
	"$TOP/qemu-run/kernel/build.sh" original || exit 1
	"$TOP/qemu-run/kernel/build.sh" patched || exit 1
	"$TOP/qemu-run/guest/image.sh" || exit 1
fi

batch=$(date +%Y%m%d-%H%M%S)-bench
t0=$(date +%s)
status=0
failed=()

# One bench boot, stored in the batch as it ends.
bench_boot() {
	local kernel=$1 round=$2 label
	boot_rc=1 sum_rc=1 store_rc=1
	label="bench $kernel (round $round/$ROUNDS)"
	if ! RUN_DIR=$BUILD/runs/$batch-$round-$kernel RUN_BATCH=$batch PROGRESS_SECS=${PROGRESS_SECS:-10} \
		tool_run "$kernel" bench "$label" "bench.tag=$batch"; then
		status=1
		[ "$store_rc" = 0 ] || warn "run $BUILD/runs/$batch-$round-$kernel not stored in the runs database"
		{ [ "$boot_rc" = 0 ] && [ "$sum_rc" = 0 ]; } || failed+=("$label")
	fi
	# NODES=N: the guest must have seen N nodes (ACPI's SRAT), or its
	# figures are of another machine than the one asked for.
	local seen
	seen=$(python3 "$RECORDS" scan bench "$BUILD/runs/$batch-$round-$kernel/samples.log" 2>/dev/null |
		tr ' ' '\n' | sed -n 's/^nodes=//p')
	if [ "${NODES:-1}" -gt 1 ] && [ -n "$seen" ] && [ "$seen" != "$NODES" ]; then
		warn "$label: QEMU was given NODES=$NODES NUMA nodes, the guest saw $seen"
		status=1
		failed+=("$label (guest saw $seen of $NODES nodes)")
	fi
}

say "bench batch $batch: $ROUNDS round(s) of original and patched, knobs: ${knobs[*]}; MEM=$MEM, SMP=${SMP:-2}, NODES=${NODES:-1}, DEADLINE=${DEADLINE}s per boot"
for round in $(seq 1 "$ROUNDS"); do
	for k in original patched; do
		bench_boot "$k" "$round"
	done
done

if [ "${BENCH_CHURN:-1}" != 0 ]; then
	for k in original patched; do
		dir=$BUILD/runs/$batch-churn-$k
		# soak.sh stores the run in the batch.
		if ! NOBUILD=1 MEM=${CHURN_MEM:-1024} DEADLINE='' CLOCK=wall RUN_DIR=$dir RUN_BATCH=$batch \
			"$TOP/qemu-run/jobs/soak.sh" "$k" "gens=$CHURN_GENS" "seed=$SEED"; then
			status=1
			failed+=("churn $k")
		fi
	done
fi

mkdir -p "$BUILD/bench"
echo
python3 "$TOP/reports/bench_table.py" --batch "$batch" || status=1
python3 "$TOP/reports/bench_table.py" --batch "$batch" --markdown >"$BUILD/bench/$batch.md" || status=1
echo
if [ $status = 0 ]; then
	say "bench batch $batch finished in $(elapsed "$t0"); table: $BUILD/bench/$batch.md"
else
	say "bench batch $batch FAILED in $(elapsed "$t0")${failed[*]:+: ${failed[*]}}; logs in $BUILD/runs/$batch-*"
fi
exit $status
