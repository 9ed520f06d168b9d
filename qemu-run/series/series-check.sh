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
#
# SERIES_BUILD=objects is the quick form (minutes, not hours): each prefix
# applies and passes checkpatch as above, then compiles, with the
# configuration of the whole series' SERIES_KERNEL build (olddefconfig drops
# the options a prefix does not have yet), every C file that patches 1..k
# change and that kernel builds, and must do so without a compiler report
# that the same files of base do not have (the debug configuration's KASAN
# makes a frame of mm/huge_memory.c larger than its limit).  No link,
# no boot: a header change that breaks a file the series does not touch is
# left to the full form.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"

kind=${SERIES_KERNEL:-patched}
case "$kind" in patched|debug) ;; *) die "SERIES_KERNEL is patched or debug, not '$kind'" ;; esac
mode=${SERIES_BUILD:-kernel}
case "$mode" in kernel|objects) ;; *) die "SERIES_BUILD is kernel (build and boot each prefix) or objects (compile the files each prefix changes), not '$mode'" ;; esac
tests=${SERIES_TESTS:-test_kmem}
tree="$SRC/prefix"
out="$KBUILD/prefix-$kind"
[ "$mode" = objects ] && out="$KBUILD/prefix-$kind-objects"

# SERIES_BUILD=objects: the objects, in the whole series' $kind build, of
# the C files changed between base and $1 (a commit) that exist at $2
# (a commit): "mm/memcontrol.o ...", one a line.
objects_of() {
	local f
	while read -r f; do
		[ -f "$KBUILD/$kind/${f%.c}.o" ] && git -C "$tree" cat-file -e "$2:$f" 2>/dev/null &&
			echo "${f%.c}.o"
	done < <(git -C "$tree" diff --name-only base "$1" -- '*.c' ':(exclude)tools')
}

# The compiler's reports in a log, without line and column (a patch moves
# them) and without the tree's path: "mm/huge_memory.c: warning: ...",
# sorted, each as often as it was made (a second report of a file, the same
# words as base's one, is new).
reports_of() {
	grep -E ': (warning|error): ' "$1" | sed -E "s#^$tree/##; s#^([^:]+):[0-9]+:[0-9]+: #\1: #" | sort
}

# Compile the objects named on stdin in $out, in the tree as checked out,
# with the configuration of the whole series' $kind kernel (olddefconfig
# drops the options the tree does not have yet).  Log: $1.
compile_in_tree() {
	local log=$1 objs
	mapfile -t objs < <(grep .)
	mkdir -p "$out"
	cp "$KBUILD/$kind/.config" "$out/.config"
	make -s -C "$tree" O="$out" olddefconfig >"$log" 2>&1 &&
		{ [ ${#objs[@]} -eq 0 ] || make -C "$tree" O="$out" -j"$JOBS" "${objs[@]}" >>"$log" 2>&1; }
}

# SERIES_BUILD=objects, prefix at $1 (a commit, checked out): compile the C
# files it changes against base that the whole series' kernel builds.
# Prints "N files" and returns 0 when they compiled without a report that
# the same files in base do not have ($out/base-reports); else prints the
# new reports.
compile_objects() {
	local head=$1 log="$out/objects.log" objs new n_base
	objs=$(objects_of "$head" "$head")
	[ -n "$objs" ] || { echo "0 files"; return 0; }
	if ! compile_in_tree "$log" <<<"$objs"; then
		grep -E 'error|warning:' "$log" | head -20 | sed 's/^/    /' >&2
		echo "$(wc -l <<<"$objs") files: does NOT compile (log: $log)"
		return 1
	fi
	new=$(reports_of "$log" | comm -23 - "$out/base-reports")
	n_base=$(reports_of "$log" | comm -12 - "$out/base-reports" | wc -l)
	if [ -n "$new" ]; then
		printf '%s\n' "$new" | head -20 | sed 's/^/    /' >&2
		echo "$(wc -l <<<"$objs") files: $(wc -l <<<"$new") reports that base does not have (log: $log)"
		return 1
	fi
	echo "$(wc -l <<<"$objs") files$([ "$n_base" -gt 0 ] && echo ", $n_base warnings as in base")"
}

"$TOP/qemu-run/kernel/tree.sh" || exit 1
if [ "$mode" = kernel ]; then
	"$TOP/qemu-run/guest/image.sh" || exit 1
else
	# The whole series' build: its configuration, and which files it builds.
	"$TOP/qemu-run/kernel/build.sh" "$kind" || exit 1
fi
mapfile -t patches < <(series_patches)
[ ${#patches[@]} -gt 0 ] || die "no patches in $TOP/patches"
if [ ! -d "$tree" ]; then
	git -C "$BASE_TREE" worktree prune
	git -C "$BASE_TREE" worktree add -q -f -B prefix "$tree" base || die "cannot make the worktree $tree"
fi

t0=$(date +%s)
status=0
# The cover letter's shortlog and diffstat are the series' own.
"$TOP/qemu-run/series/cover-tail.sh" --check || status=1
if [ "$mode" = objects ]; then
	# What the compiler says of the same files without the series: the
	# prefixes are judged by the reports base does not have.
	all=$(commit_series "${patches[@]}") || exit 1
	git -C "$tree" checkout -q -f -B prefix base || die "cannot check out base in $tree"
	base_objs=$(objects_of "$all" base)
	compile_in_tree "$out/base.log" <<<"$base_objs" ||
		die "the files the series changes do not compile in base (log: $out/base.log)"
	reports_of "$out/base.log" >"$out/base-reports"
	say "base: $(grep -c . <<<"$base_objs") files, $(wc -l <"$out/base-reports") compiler reports"
fi
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
	if [ "$mode" = objects ]; then
		if compiled=$(compile_objects "$head"); then
			results+=("$line, compiles with no warning base lacks ($compiled, $(elapsed "$tb"))")
		else
			results+=("$line, $compiled")
			status=1
		fi
		continue
	fi
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
say "series check ($kind, $mode) $verdict in $(elapsed "$t0")"
exit $status
