#!/usr/bin/env bash
# The shortlog and diffstat at the end of patches/0000-cover-letter.patch,
# from `git format-patch --cover-letter` on the patched tree, never typed:
#
#   qemu-run/series/cover-tail.sh          rewrite them in the cover letter
#   qemu-run/series/cover-tail.sh --check  fail when they differ from the series
#
# The cover letter's own text ends where the shortlog's first line
# ("Author Name (N):") begins; everything from there on is replaced.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

cover="$TOP/patches/0000-cover-letter.patch"
[ -f "$cover" ] || die "no cover letter at $cover"
"$TOP/qemu-run/kernel/tree.sh" >/dev/null

tail=$(mktemp)
new=$(mktemp)
trap 'rm -f "$tail" "$new"' EXIT
# format-patch's cover letter: the blurb placeholder, then the shortlog and
# the diffstat, then the signature separator.
git -C "$PATCHED_TREE" format-patch --cover-letter --stdout base..patched |
	sed -n '/^\*\*\* BLURB HERE \*\*\*$/,/^-- $/p' | sed '1,2d;$d' >"$tail"
[ -s "$tail" ] || die "git format-patch gave no shortlog for $PATCHED_TREE"

# The letter up to the shortlog header, which is the first line of $tail.
header=$(head -n 1 "$tail")
awk -v h="$header" '
	!done && $0 ~ /^[^ ].* \([0-9]+\):$/ { done = 1 }
	!done { print }
	END { if (!done) exit 3 }
' "$cover" >"$new" || die "no shortlog (\"Name (N):\") in $cover to replace"
cat "$tail" >>"$new"

if [ "${1:-}" = --check ]; then
	if ! cmp -s "$cover" "$new"; then
		diff -u "$cover" "$new" | head -40 >&2 || true
		die "the cover letter's shortlog or diffstat is stale: run qemu-run/series/cover-tail.sh"
	fi
	say "cover letter's shortlog and diffstat match the series ($header)"
else
	cp "$new" "$cover"
	say "wrote the shortlog and diffstat of $cover ($header)"
fi
