#!/usr/bin/env bash
# Check every prefix of the series, in order: patches 1..k apply to the
# pristine tree, pass checkpatch --strict, build with the patched
# configuration (SERIES_KERNEL=debug: the debug one) and boot, running one
# kselftest (SERIES_TESTS, default test_kmem) with a clean console and the
# outcomes qemu-run/verdict/expectations wants for that kernel (the LRU subtests of
# test_memcg_reparent_lru fail before the patch that reparents LRU folios: do
# not pick it for SERIES_TESTS).
#
#   qemu-run/series/series-check.sh            (make series-check)
#
# Slow (the first prefix is a full kernel build, the others incremental ones
# in the same folder) and not part of make test.  Works in its own tree
# (build/src/prefix) and build folder (build/kernel/prefix), so the
# original, patched and debug builds are left alone.  Ends with one line per
# patch; the exit status is 0 only when every step of every prefix passed.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

kind=${SERIES_KERNEL:-patched}
case "$kind" in patched|debug) ;; *) die "SERIES_KERNEL is patched or debug, not '$kind'" ;; esac
tests=${SERIES_TESTS:-test_kmem}
tree="$SRC/prefix"
out="$KBUILD/prefix-$kind"

"$TOP/qemu-run/kernel/tree.sh" || exit 1
"$TOP/qemu-run/guest/image.sh" || exit 1
mapfile -t patches < <(series_patches)
[ ${#patches[@]} -gt 0 ] || die "no patches in $TOP/patches"
if [ ! -d "$tree" ]; then
	git -C "$BASE_TREE" worktree prune
	git -C "$BASE_TREE" worktree add -q -f -B prefix "$tree" base || die "cannot make the worktree $tree"
fi

t0=$(date +%s)
status=0
results=()
for ((k = 1; k <= ${#patches[@]}; k++)); do
	p=${patches[k - 1]}
	name=$(basename "$p")
	say "prefix $k/${#patches[@]}: up to $name"
	line="$name:"
	if ! head=$(commit_series "${patches[@]:0:k}"); then
		results+=("$line does not apply")
		status=1
		break
	fi
	git -C "$tree" checkout -q -f -B prefix "$head" || die "cannot check out prefix $k in $tree"
	line+=" applies"
	# /usr/bin first: checkpatch runs scripts/spdxcheck.py with the python3
	# of the PATH, and Debian's has python3-ply and python3-git (make deps).
	cp_out=$(cd "$tree" && PATH=/usr/bin:$PATH ./scripts/checkpatch.pl --strict --quiet --no-summary "$p" 2>&1)
	cp_rc=$?
	# Split the reports into the accepted ones (qemu-run/series/checkpatch-accepted)
	# and the rest; any other output (a checkpatch that failed) is kept.
	cp_split=$(printf '%s\n' "$cp_out" | awk -v patch="$name" -v list="$TOP/qemu-run/series/checkpatch-accepted" \
		-f "$TOP/qemu-run/series/checkpatch-accept.awk") || die "qemu-run/series/checkpatch-accepted cannot be used (see above)"
	n_acc=${cp_split##*@@ accepted }
	cp_left=$(printf '%s\n' "$cp_split" | sed '$d')
	acc=""; [ "$n_acc" -gt 0 ] && acc=" ($n_acc accepted, see qemu-run/series/checkpatch-accepted)"
	if [ -z "$cp_left" ] && { [ $cp_rc = 0 ] || [ "$n_acc" -gt 0 ]; }; then
		line+=", checkpatch clean$acc"
	else
		printf '%s\n' "$cp_left" | sed 's/^/    /' >&2
		line+=", checkpatch: $(printf '%s\n' "$cp_left" | grep -cE '^(ERROR|WARNING|CHECK)') reports$acc"
		status=1
	fi
	tb=$(date +%s)
	if ! SERIES_KEY="prefix$k-$(cat "${patches[@]:0:k}" | sha)" KERNEL_TREE="$tree" KERNEL_OUT="$out" \
		"$TOP/qemu-run/kernel/build.sh" "$kind"; then
		results+=("$line, does NOT build")
		status=1
		break
	fi
	line+=", builds ($(elapsed "$tb"))"
	rd="$BUILD/runs/$(date +%Y%m%d-%H%M%S)-prefix$k-$kind"
	# SERIES_SMP CPUs (16): test_kmem's test_percpu_basic, the series'
	# only percpu check, needs them for its tolerance (known-issues).
	if SMP=${SERIES_SMP:-16} KERNEL_IMAGE="$out/arch/x86/boot/bzImage" RUN_DIR="$rd" \
		"$TOP/qemu-run/boot/boot.sh" "$kind" kselftest tests="${tests// /,}" timeout=900 >/dev/null; then
		# The outcomes the matrix wants for $kind, judged as kselftest.sh does.
		if python3 "$TOP/qemu-run/verdict/tap.py" --kernel "$kind" \
			--known "$TOP/qemu-run/verdict/known-issues" --expect "$TOP/qemu-run/verdict/expectations" \
			--plans "$TOP/qemu-run/verdict/plans" \
			--tests "${tests// /,}" "$rd/results.log" >"$rd/summary" 2>&1; then
			line+=", boots, $tests as expected ($(tail -1 "$rd/summary" | sed 's/^[a-z]*: //; s/;.*//'))"
		else
			line+=", boots, but $tests not as expected (see $rd/summary)"
			status=1
		fi
	else
		line+=", does NOT boot cleanly (logs: $rd)"
		status=1
	fi
	results+=("$line")
done

echo
printf '%s\n' "${results[@]}"
verdict=passed; [ $status = 0 ] || verdict=FAILED
say "series check ($kind) $verdict in $(elapsed "$t0")"
exit $status
