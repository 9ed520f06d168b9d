#!/usr/bin/env bash
# Commit subjects of at most 72 characters: the what in the subject, the
# why in the body.  Checks the subject of every patch in patches/ (the
# "[PATCH ...]" prefix aside) and of every commit of this repository since
# SINCE, the last commit before the rule was checked (older ones stay as
# they are: rewriting published history would break the hashes that
# docs/history.md cites).  A shallow clone that lacks SINCE has its
# available commits checked, and says how many.
#
#   qemu-run/series/subjects.sh
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

MAX=72
SINCE=cd2a86d
bad=0

for p in $(series_patches) "$TOP/patches/0000-cover-letter.patch"; do
	[ -f "$p" ] || continue
	# the Subject header, unfolded, without "[PATCH v4 03/20] "
	s=$(awk '/^Subject: /{s=substr($0,10); f=1; next} f && /^ /{s=s $0; next} f{print s; exit}' "$p" |
		sed 's/^\[[^]]*\] *//')
	if [ "${#s}" -gt $MAX ]; then
		warn "$(basename "$p"): subject of ${#s} characters (at most $MAX): $s"
		bad=1
	fi
done

if git -C "$TOP" rev-parse -q --verify "$SINCE^{commit}" >/dev/null; then
	range="$SINCE..HEAD"
	what="commit since $SINCE"
else
	range=HEAD
	what="commit of this shallow clone"
	say "subjects: $SINCE is not in this clone (shallow?): checking the $(git -C "$TOP" rev-list --count HEAD) commits it has"
fi
while read -r h s; do
	if [ "${#s}" -gt $MAX ]; then
		warn "commit $h: subject of ${#s} characters (at most $MAX): $s"
		bad=1
	fi
done < <(git -C "$TOP" log --format='%h %s' "$range")

[ $bad = 0 ] || die "commit subjects longer than $MAX characters (above): the what in the subject, the why in the body"
say "subjects: every patch and $what within $MAX characters"
