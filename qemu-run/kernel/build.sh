#!/usr/bin/env bash
# Build one kernel: original, patched or debug.
#
#   qemu-run/kernel/build.sh NAME      -> build/kernel/NAME/arch/x86/boot/bzImage
#
# The configuration is x86_64 tinyconfig plus the fragments in
# qemu-run/kernel/config/ (see fragments_of in lib.sh); every fragment option must
# survive olddefconfig.  A build is skipped when its key -- the fragments and
# the kernel source diff against the pristine base (tools/ excluded) -- did not
# change.  A kernel whose key equals original's (an empty series, or a series
# that only adds selftests) reuses original's image instead of building again.
# KERNEL_TREE and KERNEL_OUT build NAME's configuration from another source
# tree into another folder (qemu-run/series/series-check.sh builds every prefix of
# the series so).  KCONFIG_EXTRA="FRAGMENT ..." adds fragments after NAME's,
# into KERNEL_BUILDS/NAME (or KERNEL_OUT): make bench-irqsoff (IRQSOFF=1 qemu-run/jobs/offline-axes.sh) builds
# kernels with the irqsoff tracer so.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

name=${1:-}
[ -n "$name" ] || die "usage: kernel.sh NAME (one of: $KERNELS)"
check_kernel_name "$name"

# Extra fragments make another kernel: never in the default folders, whose
# kernels the tests and the bench boot.
if [ -n "${KCONFIG_EXTRA:-}" ]; then
	[ -n "${KERNEL_BUILDS:-}${KERNEL_OUT:-}" ] ||
		die "KCONFIG_EXTRA builds a kernel of another configuration: give it a folder of its own (KERNEL_BUILDS=DIR or KERNEL_OUT=DIR)"
	for f in $KCONFIG_EXTRA; do
		[ -f "$f" ] || die "KCONFIG_EXTRA: no fragment $f"
	done
fi

"$TOP/qemu-run/kernel/tree.sh"

# Key of the kernel NAME: fragment contents plus the source diff from base.
kernel_key() {
	local tree
	tree=$(tree_of "$1")
	[ "$1" = "$name" ] && tree=${KERNEL_TREE:-$tree}
	{
		for f in $(fragments_of "$1"); do cat "$f"; done
		git -C "$tree" diff --no-ext-diff base -- . ':(exclude)tools'
	} | sha
}

out=${KERNEL_OUT:-$KBUILD/$name}

# The census module (census/) against this build: OUT/census/memcg_census.ko,
# which boot.sh puts into the guest's root disk.  Seconds; always rebuilt.
build_census() {
	local t=${KERNEL_TREE:-$(tree_of "$name")}
	# A build folder from before CONFIG_MODULES has no Module.symvers.
	if [ ! -f "$out/Module.symvers" ]; then
		make -C "$t" O="$out" -j"$JOBS" modules >>"$out/build.log" 2>&1 ||
			die "make modules failed for kernel $name (log: $out/build.log)"
	fi
	build_census_module "$t" "$out" "kernel $name"
	return 0
}
image="$out/arch/x86/boot/bzImage"
key=$(kernel_key "$name")
# The series version, beside the key (boot.sh puts it into every run's meta):
# SERIES_KEY when the caller builds a tree of its own (series-check.sh).
series=${SERIES_KEY-$(series_key_of "$name")}
if [ -f "$image" ] && [ "$(cat "$out/.key" 2>/dev/null)" = "$key" ]; then
	say "kernel $name is up to date ($key)"
	echo "$series" >"$out/.series"
	build_census
	exit 0
fi

# Only for the default folders: a caller that names its own tree or build
# folder (series-check.sh) wants that folder built.
if [ -z "${KERNEL_OUT:-}${KERNEL_TREE:-}" ] && [ "$name" != original ] &&
	[ "$key" = "$(kernel_key original)" ]; then
	say "kernel $name has the same sources and config as original: reusing its image"
	"$0" original
	mkdir -p "$out/arch/x86/boot"
	cp "$KBUILD/original/arch/x86/boot/bzImage" "$image"
	cp "$KBUILD/original/.config" "$out/.config"
	rm -rf "$out/census"
	cp -r "$KBUILD/original/census" "$out/census"
	echo "$key" >"$out/.key"
	# The same code as original: no kernel change of any series.
	echo "" >"$out/.series"
	exit 0
fi

tree=${KERNEL_TREE:-$(tree_of "$name")}
frags=$(fragments_of "$name")
fragkey=$(cat $frags | sha)
mkdir -p "$out"
rm -f "$out/.key" "$out/.series"
log="$out/build.log"
t0=$(date +%s)

# A config change invalidates the whole build folder's config, nothing else:
# kbuild itself rebuilds only what the changed options touch.
if [ "$(cat "$out/.fragkey" 2>/dev/null)" != "$fragkey" ] || [ ! -f "$out/.config" ]; then
	say "configuring $name: tinyconfig + $(for f in $frags; do basename "$f"; done | paste -sd+)"
	# A build folder made from a kernel-only diff may be rebuilt in a tree
	# that was re-made from scratch: keep the source tree clean for O=.
	make -s -C "$tree" O="$out" tinyconfig >"$log" 2>&1 || { tail -20 "$log" >&2; die "tinyconfig failed for $name (log: $log)"; }
	# shellcheck disable=SC2086
	(cd "$out" && "$tree/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" $frags) >>"$log" 2>&1 ||
		{ tail -20 "$log" >&2; die "merge_config failed for $name (log: $log)"; }
	make -s -C "$tree" O="$out" olddefconfig >>"$log" 2>&1 || { tail -20 "$log" >&2; die "olddefconfig failed for $name (log: $log)"; }
	# shellcheck disable=SC2086
	python3 "$TOP/qemu-run/kernel/kconfig_check.py" "$out/.config" $frags ||
		die "config fragment options did not survive olddefconfig for $name (see above)"
	echo "$fragkey" >"$out/.fragkey"
fi

say "building kernel $name from $tree with -j$JOBS (log: $log)"
# "modules" writes Module.symvers, which census/ (an out-of-tree module) links
# against; the configuration itself builds no module.
if ! make -C "$tree" O="$out" -j"$JOBS" bzImage modules >>"$log" 2>&1; then
	grep -E 'error|Error' "$log" | head -20 >&2 || true
	tail -20 "$log" >&2
	die "kernel $name failed to build after $(elapsed "$t0") (log: $log)"
fi
build_census
echo "$key" >"$out/.key"
echo "$series" >"$out/.series"
say "built kernel $name in $(elapsed "$t0"): $image ($(du -k "$image" | cut -f1) KiB)"
