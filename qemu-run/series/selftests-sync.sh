#!/usr/bin/env bash
# Keep the selftests patch in patches/ in sync with selftests/.
#
#   qemu-run/series/selftests-sync.sh patch   regenerate the patch from selftests/
#   qemu-run/series/selftests-sync.sh check   fail if the patch and selftests/ differ
#
# selftests/ holds the files of tools/testing/selftests/cgroup that the series
# adds or changes, as they are after the series; selftests/COMMIT_MSG is the
# patch's message (subject line first).  Only the cgroup selftest folder of
# the tarball is needed, so this runs without a kernel tree.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

CG=tools/testing/selftests/cgroup
SELF="$TOP/selftests"
mode=${1:-}
case "$mode" in patch|check) ;; *) die "usage: selftests-sync.sh patch|check" ;; esac
[ -f "$SELF/COMMIT_MSG" ] || die "selftests/COMMIT_MSG is missing (the selftests patch's message)"

# The pristine cgroup selftest folder and MAINTAINERS, extracted once from
# the tarball.
base="$BUILD/selftests-base"
if [ ! -d "$base/.git" ] || [ ! -f "$base/MAINTAINERS" ]; then
	[ -f "$LINUX_TARBALL" ] || die "$LINUX_TARBALL is missing: install Debian's linux-source-6.12 (make deps)"
	rm -rf "$base.tmp"
	mkdir -p "$base.tmp"
	tar -xJf "$LINUX_TARBALL" -C "$base.tmp" --strip-components=1 \
		"linux-source-6.12/$CG" linux-source-6.12/MAINTAINERS
	git -C "$base.tmp" init -q
	git -C "$base.tmp" add -f -A .
	# A fixed identity and date: the base, and so the patch, are the same
	# on every machine.
	GIT_AUTHOR_DATE=2000-01-01T00:00:00Z GIT_COMMITTER_DATE=2000-01-01T00:00:00Z \
		git -C "$base.tmp" -c user.name=qemu-run -c user.email=qemu-run@localhost commit -q -m base
	git -C "$base.tmp" tag base
	rm -rf "$base"
	mv "$base.tmp" "$base"
fi

# A new source file (.c, .h) gets an F: line in the memcg section of MAINTAINERS,
# among the section's other cgroup selftest lines, in order.
MEMCG_SECTION='CONTROL GROUP - MEMORY RESOURCE CONTROLLER (MEMCG)'
add_maintainers() {
	local f=$1 m="$2/MAINTAINERS"
	awk -v sec="$MEMCG_SECTION" -v add="F:\t$f" '
	$0 == sec { in_sec = 1 }
	in_sec && /^$/ { if (!done) print add; done = 1; in_sec = 0 }
	in_sec && !done && index($0, "F:\ttools/testing/selftests/cgroup/") == 1 && $0 > add {
		print add; done = 1
	}
	{ print }
	END { if (!done) exit 1 }' "$m" >"$m.new" || die "no '$MEMCG_SECTION' section in MAINTAINERS"
	mv "$m.new" "$m"
}

existing=$(ls "$TOP"/patches/*-selftests-cgroup-*.patch 2>/dev/null | head -1 || true)

# Build the patch into $1 from selftests/ on top of the pristine folder.
make_patch() {
	local work="$BUILD/selftests-work" date author num
	rm -rf "$work"
	git clone -q "$base" "$work"
	(cd "$SELF" && find . -type f ! -name COMMIT_MSG | sort) | while read -r f; do
		f=${f#./}
		mkdir -p "$work/$CG/$(dirname "$f")"
		case "$f" in *.c|*.h) [ -e "$work/$CG/$f" ] || add_maintainers "$CG/$f" "$work" ;; esac
		cp "$SELF/$f" "$work/$CG/$f"
	done
	git -C "$work" add -f -A .
	# Keep the date and author of the existing patch so that the output is
	# byte-for-byte reproducible.
	local info=""
	[ -n "$existing" ] && info=$(git mailinfo /dev/null /dev/null <"$existing")
	date=$(sed -n 's/^Date: //p' <<<"$info")
	author=$(sed -n 's/^Author: //p' <<<"$info")
	[ -n "$author" ] && author="$author <$(sed -n 's/^Email: //p' <<<"$info")>"
	: "${date:=$(date -R)}"
	: "${author:=$(git -C "$TOP" config user.name) <$(git -C "$TOP" config user.email)>}"
	num=1
	[ -n "$existing" ] && num=$((10#$(basename "$existing" | cut -d- -f1)))
	GIT_AUTHOR_DATE="$date" GIT_COMMITTER_DATE="$date" \
		git -C "$work" -c user.name=qemu-run -c user.email=qemu-run@localhost \
		commit -q --author="$author" -F "$SELF/COMMIT_MSG"
	git -C "$work" format-patch -q --no-signature --start-number "$num" -1 -o "$1" >/dev/null
	ls "$1"/*.patch
}

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
new=$(make_patch "$out")
case "$mode" in
patch)
	[ -n "$existing" ] && rm -f "$existing"
	cp "$new" "$TOP/patches/"
	say "wrote patches/$(basename "$new")"
	;;
check)
	[ -n "$existing" ] || die "no selftests patch in patches/: run 'make selftests-patch'"
	# Line 1 ("From <commit> Mon Sep 17 ...") names a commit, not content.
	if ! diff -u <(tail -n +2 "$existing") <(tail -n +2 "$new") >"$out/diff"; then
		head -40 "$out/diff" >&2
		die "patches/$(basename "$existing") is out of sync with selftests/: run 'make selftests-patch'"
	fi
	say "selftests patch in sync with selftests/"
	;;
esac
