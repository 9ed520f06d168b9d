#!/usr/bin/env bash
# Build original or patched from Debian's own configuration, as installable
# packages (make bindeb-pkg):
#
#   qemu-run/kernel/deb.sh NAME         NAME: original or patched
#
# The configuration is DEB_FLAVOUR's (default cloud-amd64, the smallest
# that Debian ships for real machines; also amd64, or rt_amd64 for
# PREEMPT_RT) from linux-config-6.12, plus qemu-run/kernel/config/deb.config
# (what a QEMU guest without an initramfs and a build here need; it says
# why).  The build folder is build/deb/FLAVOUR/NAME, the packages land in
# build/deb/FLAVOUR/; the census module is built against it too.  The
# image boots as any other: KERNEL_IMAGE=build/deb/FLAVOUR/NAME/arch/x86/boot/bzImage.
# A build is skipped when its key (configuration, fragment, source diff)
# did not change.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

name=${1:-}
case "$name" in
original|patched) ;;
*) die "usage: deb.sh original|patched (Debian's configuration, DEB_FLAVOUR=${DEB_FLAVOUR:-cloud-amd64})" ;;
esac
flavour=${DEB_FLAVOUR:-cloud-amd64}
case "$flavour" in
cloud-amd64|amd64) debcfg=/usr/src/linux-config-6.12/config.amd64_none_$flavour.xz ;;
rt_amd64) debcfg=/usr/src/linux-config-6.12/config.amd64_rt_amd64.xz ;;
*) die "DEB_FLAVOUR is cloud-amd64, amd64 or rt_amd64, not '$flavour'" ;;
esac
"$TOP/qemu-run/deps.sh" deb

"$TOP/qemu-run/kernel/tree.sh"
tree=$(tree_of "$name")
frag="$TOP/qemu-run/kernel/config/deb.config"
top="$BUILD/deb/$flavour"
out="$top/$name"
image="$out/arch/x86/boot/bzImage"
key=$({
	xzcat "$debcfg"
	cat "$frag"
	git -C "$tree" diff --no-ext-diff base -- . ':(exclude)tools'
} | sha)
if [ -f "$image" ] && [ "$(cat "$out/.key" 2>/dev/null)" = "$key" ]; then
	say "Debian-config kernel $name ($flavour) is up to date ($key)"
	exit 0
fi

mkdir -p "$out"
rm -f "$out/.key"
log="$out/build.log"
t0=$(date +%s)
say "configuring $name: Debian's $flavour + deb.config"
xzcat "$debcfg" >"$out/.config"
(cd "$out" && "$tree/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "$frag") >"$log" 2>&1 ||
	{ tail -20 "$log" >&2; die "merge_config failed for $name (log: $log)"; }
make -s -C "$tree" O="$out" olddefconfig >>"$log" 2>&1 || { tail -20 "$log" >&2; die "olddefconfig failed for $name (log: $log)"; }
python3 "$TOP/qemu-run/kernel/kconfig_check.py" "$out/.config" "$frag" ||
	die "deb.config options did not survive olddefconfig for $name (see above)"
# What the build changed of Debian's configuration, for the record.
diff <(xzcat "$debcfg" | grep '^CONFIG_' | sort) <(grep '^CONFIG_' "$out/.config" | sort) \
	>"$out/debian-config.diff" || true
[ "${DEB_CONFIG_ONLY:-0}" = 1 ] && { say "configured $out (DEB_CONFIG_ONLY=1: no build)"; exit 0; }

say "building $name as Debian packages with -j$JOBS (log: $log; original took 52 min here, 2 cores)"
if ! make -C "$tree" O="$out" -j"$JOBS" bindeb-pkg >>"$log" 2>&1; then
	grep -E 'error|Error' "$log" | head -20 >&2 || true
	tail -20 "$log" >&2
	die "Debian-config kernel $name failed to build after $(elapsed "$t0") (log: $log)"
fi
[ -f "$image" ] || die "no $image after bindeb-pkg (log: $log)"
# The census module against this build, as kernel/build.sh does.
build_census_module "$tree" "$out" "$name ($flavour)"
echo "$key" >"$out/.key"
series_key_of "$name" >"$out/.series"
say "built $name ($flavour) in $(elapsed "$t0"): $image; packages: $(cd "$top" && ls ./*.deb 2>/dev/null | paste -sd' ')"
