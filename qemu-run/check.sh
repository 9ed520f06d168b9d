#!/usr/bin/env bash
# Fast host-side checks (make check): no kernel build, no guest.
#  - shell scripts parse and pass shellcheck;
#  - the host-side Python tools (qemu-run, db, reports) pass their unit
#    tests against fixtures (real captured guest logs, generated runs);
#  - the expectations matrix and known-issues files parse;
#  - the selftests patch is in sync with selftests/ (when both exist);
#  - every scenario of the differential oracle (scenarios/*.scn) reads;
#  - no stale reference (qemu-run/check_refs.py), make help grouped.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$TOP"

fail=0
for s in qemu-run/*.sh qemu-run/*/*.sh qemu-run/guest/init .ci/run; do
	bash -n "$s" || { echo "syntax error: $s"; fail=1; }
done
command -v shellcheck >/dev/null || die "shellcheck is missing: run make deps"
shellcheck -x -S warning qemu-run/*.sh qemu-run/*/*.sh qemu-run/guest/init .ci/run || fail=1
for t in qemu-run/tests db/tests reports/tests; do
	python3 -m unittest discover -s "$t" -p 'test_*.py' -q 2>&1 | tail -4
	[ "${PIPESTATUS[0]}" = 0 ] || fail=1
done
python3 -c "
import sys; sys.path.insert(0, 'qemu-run/verdict')
import tap
tap.read_expect('qemu-run/verdict/expectations'); tap.read_known('qemu-run/verdict/known-issues')
" || fail=1
# every scenario of the oracle reads (the guest's player, built for the host)
( check_scenarios "$(cd scenarios && ls ./*.scn | sed 's|^\./||' | paste -sd,)" ) || fail=1
if [ -f selftests/COMMIT_MSG ]; then
	qemu-run/series/selftests-sync.sh check || fail=1
fi
# no stale reference: every path and make target named in the docs, the
# help and the scripts' messages exists
python3 qemu-run/check_refs.py || fail=1
# the cover letter's own text, up to its generated shortlog: at most 150
# lines (the long form is docs/series-notes.md)
n=$(awk '/^[^ ].* \([0-9]+\):$/ { print NR - 1; exit }' patches/0000-cover-letter.patch)
if [ "${n:-999}" -gt 150 ]; then
	echo "cover letter: ${n:-no shortlog, so all} lines of its own text, over 150: move detail to docs/series-notes.md"
	fail=1
fi
# ... and it is signed off, before its shortlog
if ! awk '/^[^ ].* \([0-9]+\):$/ { exit } /^Signed-off-by: / { ok = 1 } END { exit !ok }' \
	patches/0000-cover-letter.patch; then
	echo "cover letter: no Signed-off-by line before its shortlog"
	fail=1
fi
# make help: every target grouped, no line over 100 characters
make -s --no-print-directory help | awk 'length > 100 { print "make help: line over 100 characters: " $0; bad = 1 }
	/^[^ ]/ && NR > 1 { group = 1 } /^  / && !group { print "make help: a target outside a group: " $0; bad = 1 }
	END { exit bad }' || fail=1
# commit and patch subjects of at most 72 characters
qemu-run/series/subjects.sh || fail=1
[ $fail = 0 ] || die "make check failed"
say "make check passed"
