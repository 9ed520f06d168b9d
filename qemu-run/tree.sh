#!/usr/bin/env bash
# Prepare the kernel source trees outside git:
#   build/src/original  pristine extract of linux-source-6.12, a git repo
#                       whose tag "base" is the untouched tree;
#   build/src/patched   a worktree of it with patches/*.patch applied by git am.
# The patched tree is re-made only when the series changes; files the series
# does not touch keep their mtimes, so the kernel rebuild stays incremental.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

series_hash() {
	local p
	for p in "$TOP"/patches/*.patch; do
		if [ -e "$p" ]; then cat "$p"; fi
	done | sha
}

extract() {
	[ -f "$LINUX_TARBALL" ] || die "$LINUX_TARBALL is missing: install Debian's linux-source-6.12 (make deps)"
	local t0 tmp
	t0=$(date +%s)
	say "extracting $(basename "$LINUX_TARBALL") into $BASE_TREE"
	mkdir -p "$SRC"
	tmp=$(mktemp -d "$SRC/extract.XXXXXX")
	tar -xJf "$LINUX_TARBALL" -C "$tmp" --strip-components=1
	# Debian's top-level .gitignore ends with "/*": without -f git adds nothing.
	git -C "$tmp" init -q -b original
	git -C "$tmp" add -f -A .
	git -C "$tmp" -c user.name=qemu-run -c user.email=qemu-run@localhost \
		commit -q -m "linux-source-6.12 $(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || echo unknown)"
	git -C "$tmp" tag base
	mv "$tmp" "$BASE_TREE"
	say "extracted in $(elapsed "$t0")"
}

apply_series() {
	local want have p
	want=$(series_hash)
	have=$(cat "$PATCHED_TREE/.series-hash" 2>/dev/null || true)
	if [ -d "$PATCHED_TREE" ] && [ "$want" = "$have" ]; then
		return 0
	fi
	if [ ! -d "$PATCHED_TREE" ]; then
		git -C "$BASE_TREE" worktree prune
		git -C "$BASE_TREE" worktree add -q -f -B patched "$PATCHED_TREE" base
	fi
	say "applying patches/ to $PATCHED_TREE"
	rm -f "$PATCHED_TREE/.series-hash"
	git -C "$PATCHED_TREE" am --abort >/dev/null 2>&1 || true
	# reset only rewrites files that differ from base: mtimes elsewhere survive.
	git -C "$PATCHED_TREE" reset -q --hard base
	for p in "$TOP"/patches/*.patch; do
		[ -e "$p" ] || continue
		if ! git -C "$PATCHED_TREE" -c user.name=qemu-run -c user.email=qemu-run@localhost \
			am -q --keep-cr "$p" >/dev/null 2>"$BUILD/am.err"; then
			git -C "$PATCHED_TREE" am --abort >/dev/null 2>&1 || true
			sed 's/^/    /' "$BUILD/am.err" >&2
			die "patch does not apply: patches/$(basename "$p")"
		fi
		printf '    applied %s\n' "$(basename "$p")" >&2
	done
	echo "$want" >"$PATCHED_TREE/.series-hash"
}

[ -d "$BASE_TREE/.git" ] || extract
apply_series
