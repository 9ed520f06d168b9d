#!/usr/bin/env python3
"""Summarize the kselftest results of a guest run against expectations.

usage: tap.py --kernel NAME [--known FILE] [--expect FILE] [--tests a,b] results.log

results.log is the guest's results channel: "@@ begin T", T's TAP output,
"@@ end T rc=N secs=N", "@@ done rc=N".  Prints one line per subtest, the
expectations table when something surprised, and one summary line:

    original: N passed, N failed, N skipped; N as expected, N surprises

Known issues (--known): "test:subtest  reason" lines; such a subtest that
fails is reported as a skip with its reason, never as a pass.  A line
"test:subtest@kernel[,kernel]  reason" applies to those kernels only, and
may name a subtest of the matrix: its failure there is then a known-issue
skip, not a surprise (a known bug, measured, said in the summary).
Expectations (--expect): "test:subtest  original patched debug" with
pass|fail per kernel; subtests not listed must pass (or skip, with the
test's reason).  A listed subtest that did not run, skipped, or had any
outcome other than the expected one, is a surprise.
Exit status: 0 when there is no surprise, 1 otherwise.
"""
import argparse
import re
import sys

from kernels import KERNELS

OK = re.compile(r'^(not )?ok (\d+)\s*(.*)$')
BEGIN = re.compile(r'^@@ begin (\S+)')
END = re.compile(r'^@@ end (\S+) rc=(\d+) secs=(\d+)')
PLAN = re.compile(r'^1\.\.(\d+)(?:\s*#\s*SKIP\b\s*(.*))?')


class Result:
    def __init__(self, test, subtest, outcome, reason=''):
        self.test, self.subtest = test, subtest
        self.outcome, self.reason = outcome, reason

    @property
    def key(self):
        return f'{self.test}:{self.subtest}'


def parse_tap_line(line):
    """(outcome, name, reason) of a TAP result line, or None."""
    m = OK.match(line)
    if not m:
        return None
    failed, num, rest = m.group(1), m.group(2), m.group(3)
    rest = rest.lstrip('- ').strip()
    skip = re.search(r'#\s*SKIP\b\s*(.*)$', rest, re.I)
    if skip:
        # kselftest prints "ok N # SKIP name"; others "ok N name # SKIP why".
        before = rest[:skip.start()].strip()
        after = skip.group(1).strip()
        if before:
            return ('skip', before, after)
        # "ok N # SKIP name (why)": the reason is not part of the name.
        m = re.match(r'^(\S+)\s+\((.*)\)$', after)
        if m:
            return ('skip', m.group(1), m.group(2))
        return ('skip', after or f'#{num}', '')
    rest = re.sub(r'\s*#.*$', '', rest) or f'#{num}'
    return ('fail' if failed else 'pass', rest, '')


def parse_results(lines):
    """Return ([Result], done) from the lines of a results channel."""
    results, done = [], False
    test, seen, plan, ended = None, [], None, False
    for line in lines:
        line = line.rstrip('\r\n')
        m = BEGIN.match(line)
        if m:
            test, seen, plan, ended = m.group(1), [], None, False
            continue
        m = END.match(line)
        if m and test == m.group(1):
            rc = int(m.group(2))
            results.extend(seen)
            if rc == 124:
                results.append(Result(test, '(binary)', 'fail',
                                      f'timed out after {m.group(3)} s'))
            elif rc == 127:
                results.append(Result(test, '(binary)', 'fail', 'not found in the guest'))
            elif plan is not None and len(seen) < plan:
                results.append(Result(test, '(binary)', 'fail',
                                      f'ran {len(seen)} of {plan} planned subtests (rc={rc})'))
            elif not seen:
                results.append(Result(test, '(binary)', 'fail' if rc else 'pass',
                                      f'no TAP results (rc={rc})'))
            test, ended = None, True
            continue
        if line.startswith('@@ done'):
            done = True
            continue
        if test is None:
            continue
        m = PLAN.match(line)
        if m:
            plan = int(m.group(1))
            if plan == 0:
                # "1..0 # SKIP why": the whole program skipped.
                seen.append(Result(test, '(binary)', 'skip', (m.group(2) or '').strip()))
            continue
        r = parse_tap_line(line)
        if not r:
            # A test that prints a message without its newline glues the
            # next result to it ("...enablednot ok 4 name"): find the
            # result with the number that is due.
            m = re.search(rf'(?:not )?ok {len(seen) + 1}\b.*$', line)
            if m and not line.startswith('    '):
                r = parse_tap_line(m.group(0))
        if r:
            seen.append(Result(test, r[1], r[0], r[2]))
    if test is not None and not ended:
        # The guest died inside this test: what it printed counts, the rest fails.
        results.extend(seen)
        results.append(Result(test, '(binary)', 'fail', 'guest stopped during this test'))
    return results, done


def read_table(path):
    """Lines of a whitespace table, comments and blank lines dropped."""
    rows = []
    if not path:
        return rows
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split('#', 1)[0].strip()
            if line:
                rows.append((n, line.split()))
    return rows


def read_known(path):
    known = {}
    if not path:
        return known
    with open(path) as f:
        for line in f:
            if not line.strip() or line.lstrip().startswith('#'):
                continue
            key, _, reason = line.strip().partition(' ')
            key, _, kernels = key.partition('@')
            known[key] = (reason.strip() or 'known issue',
                          set(kernels.split(',')) if kernels else None)
    return known


def known_for(known, key, kernel):
    """(reason, per_kernel) of key's known issue on kernel, or None."""
    k = known.get(key)
    if isinstance(k, str):
        k = (k, None)
    if k is None or (k[1] is not None and kernel not in k[1]):
        return None
    return k


def read_expect(path):
    """{test:subtest: {kernel: 'pass'|'fail'}}"""
    expect = {}
    for n, cols in read_table(path):
        if len(cols) != 1 + len(KERNELS) or any(c not in ('pass', 'fail') for c in cols[1:]):
            raise SystemExit(f'{path}:{n}: want "test:subtest {" ".join(KERNELS)}" '
                             f'with pass|fail, got {" ".join(cols)}')
        expect[cols[0]] = dict(zip(KERNELS, cols[1:]))
    return expect


def summarize(results, kernel, known, expect, tests=None):
    """Apply known issues and expectations; return (lines, counts, surprises)."""
    lines, surprises = [], []
    counts = {'pass': 0, 'fail': 0, 'skip': 0, 'expected': 0}
    ran = set()
    for r in results:
        ran.add(r.key)
        k = known_for(known, r.key, kernel)
        per_kernel_known = False
        if r.outcome == 'fail' and k:
            r.outcome, r.reason = 'skip', f'known issue on {kernel}: {k[0]}' if k[1] else f'known issue: {k[0]}'
            per_kernel_known = k[1] is not None
        want = expect.get(r.key, {}).get(kernel, 'pass')
        counts[r.outcome] += 1
        note = ''
        if r.outcome == 'skip':
            note = r.reason
            if r.key in expect and not per_kernel_known:
                # The matrix names what must happen; a skip proves nothing.
                surprises.append((r.key, want, 'skip'))
                note += f' [SURPRISE: expected {want}]'
        elif r.outcome == want:
            counts['expected'] += 1
            if want == 'fail':
                note = 'expected by the matrix'
        else:
            surprises.append((r.key, want, r.outcome))
            note = f'SURPRISE: expected {want}'
            if r.reason:
                note = f'{r.reason}; {note}'
        lines.append(f'{r.outcome.upper():4} {r.key}' + (f'  ({note})' if note else ''))
    for key, per_kernel in expect.items():
        test = key.split(':', 1)[0]
        if key not in ran and (tests is None or test in tests):
            surprises.append((key, per_kernel[kernel], 'did not run'))
            lines.append(f'MISS {key}  (SURPRISE: listed in the matrix, did not run)')
    return lines, counts, surprises


def repeat_counts(results, kernel, expect):
    """Lines of a table of outcome counts per subtest, when a test ran more
    than once in the boot (kselftest.sh REPEAT=N): how often each subtest
    gave the outcome the matrix wants. Empty when every subtest ran once."""
    order, outcomes = [], {}
    for r in results:
        if r.key not in outcomes:
            order.append(r.key)
            outcomes[r.key] = []
        outcomes[r.key].append(r.outcome)
    if not outcomes or max(len(o) for o in outcomes.values()) < 2:
        return []
    lines = [f'\nrepeated runs, kernel {kernel}: outcome counts per subtest',
             f'    {"test:subtest":56} {"expected":9} {"as expected":>12}  outcomes']
    for key in order:
        want = expect.get(key, {}).get(kernel, 'pass')
        got = outcomes[key]
        seen = ', '.join(f'{o} {got.count(o)}' for o in ('pass', 'fail', 'skip') if o in got)
        lines.append(f'    {key:56} {want:9} {f"{got.count(want)} of {len(got)}":>12}  {seen}')
    return lines


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--kernel', required=True, choices=KERNELS)
    ap.add_argument('--known')
    ap.add_argument('--expect')
    ap.add_argument('--tests', help='comma-separated tests that were asked for')
    ap.add_argument('results')
    args = ap.parse_args(argv)
    with open(args.results, errors='replace') as f:
        results, done = parse_results(f)
    tests = set(args.tests.split(',')) if args.tests else None
    if tests:
        for t in sorted(tests - {r.test for r in results}):
            results.append(Result(t, '(binary)', 'fail', 'no results at all'))
    lines, c, surprises = summarize(results, args.kernel, read_known(args.known),
                                    read_expect(args.expect), tests)
    for line in lines:
        print(line)
    if surprises:
        print(f'\nexpectations matrix, kernel {args.kernel}: {len(surprises)} surprises')
        print(f'    {"test:subtest":56} {"expected":9} outcome')
        for key, want, got in surprises:
            print(f'    {key:56} {want:9} {got}')
    for line in repeat_counts(results, args.kernel, read_expect(args.expect)):
        print(line)
    if not done:
        print('warning: the results channel has no "@@ done" record')
    # The last line is what make test's summary (and a truncated CI log)
    # shows: it names the surprises, not just their number.
    named = ''
    if surprises:
        named = ': ' + ', '.join(f'{key} {got} (want {want})' for key, want, got in surprises)
    print(f'{args.kernel}: {c["pass"]} passed, {c["fail"]} failed, {c["skip"]} skipped; '
          f'{c["expected"]} as expected, {len(surprises)} surprises{named}')
    return 1 if surprises or not done else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
