#!/usr/bin/env python3
"""Summarize the kselftest results of a guest run against expectations.

usage: tap.py --kernel NAME [--known FILE] [--expect FILE] [--plans FILE] [--tests a,b]
              [--verdict RUN_DIR/verdict.json] results.log
       tap.py --kernel NAME --known FILE --flaky

results.log is the guest's results channel: "@@ begin T", T's TAP output,
"@@ end T rc=N secs=N", "@@ done rc=N".  Prints one line per subtest, the
expectations table when something surprised, and one summary line:

    original: N passed, N failed, N skipped; N as expected, N surprises

A test binary's results count only when its TAP is whole and its exit
status agrees, read as kselftest's runner reads KSFT codes (0 pass, 4 skip,
anything else fail): a binary killed by a signal, with no plan, with fewer
results than planned, with a result number outside the plan, or exiting
non-zero with no failed subtest, fails as "(binary)" with the reason.
Known issues (--known, qemu-run/verdict/known-issues): "KIND test:subtest KERNELS
UNTIL reason", KERNELS "all" or a comma list, UNTIL the last day
(YYYY-MM-DD) on which the entry holds: past it the entry is ignored (the
failure counts) and the summary names it.  KIND is
  flaky          the guest reruns the binary when this subtest fails (up to
                 rr.retries more attempts, "@@ begin T attempt=N"); it
                 passes, reported as "flaky (k of n failed)", when any
                 attempt passed, and fails when every attempt failed;
  needs-cpus=N   its failure on a boot with fewer than N CPUs is a skip
                 that says so (kselftest.sh runs it again on a boot with N,
                 where it is rerun and counted as a flaky one is);
  broken         its failure is a skip with the reason, never a pass.
Expectations (--expect): "test:subtest  original patched debug" with
pass|fail per kernel; subtests not listed must pass (or skip, with the
test's reason).  A listed subtest that did not run, skipped, or had any
outcome other than the expected one, is a surprise.
--verdict writes the judged outcomes, one row per subtest, to a file that
db/ingest.py stores as it is (qemu-run/records/RECORDS.md, verdict.json):
the verdict is decided here, once, and the database only keeps it.
Exit status: 0 when there is no surprise, 1 otherwise.
"""
import argparse
import datetime
import json
import os
import sys

QEMU_RUN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(QEMU_RUN, 'kernel'))
sys.path.insert(0, os.path.join(QEMU_RUN, 'records'))
from kernels import KERNELS  # noqa: E402
# The records are read with the others (records/); this file judges them.
from kselftest import VERDICT_FORMAT  # noqa: E402
from kselftest import (  # noqa: E402,F401
    OK, BEGIN, END, PLAN, BOOT, METRIC, KSFT_PASS, KSFT_SKIP, Result, parse_tap_line, binary_verdict,
    parse_run, parse_results, merge_attempts)


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


class Known:
    """One entry of qemu-run/verdict/known-issues."""
    KINDS = ('flaky', 'broken', 'needs-cpus')

    def __init__(self, kind, key, kernels, until, reason, cpus=0):
        self.kind, self.key, self.kernels = kind, key, kernels
        self.until, self.reason, self.cpus = until, reason, cpus

    def applies(self, kernel, today=None):
        return (self.kernels is None or kernel in self.kernels) and not self.expired(today)

    def expired(self, today=None):
        return (today or datetime.date.today()) > self.until


def read_known(path):
    """{test:subtest: Known} from a known-issues file; a malformed line is
    an error that names it."""
    known = {}
    if not path:
        return known
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.lstrip().startswith('#'):
                continue
            cols = line.split(None, 4)

            def bad(why):
                raise SystemExit(f'{path}:{n}: {why}; want "KIND test:subtest KERNELS UNTIL reason" '
                                 f'(KIND flaky|broken|needs-cpus=N, KERNELS all or a comma list '
                                 f'of {",".join(KERNELS)}, UNTIL YYYY-MM-DD)')
            if len(cols) < 5:
                bad('too few columns')
            kind, key, kernels, until, reason = cols
            cpus = 0
            if kind.startswith('needs-cpus='):
                kind, _, num = kind.partition('=')
                if not num.isdigit() or int(num) < 2:
                    bad(f'needs-cpus wants a number of CPUs, got "{num}"')
                cpus = int(num)
            if kind not in Known.KINDS:
                bad(f'unknown kind "{kind}"')
            if ':' not in key:
                bad(f'"{key}" is not test:subtest')
            if kernels == 'all':
                kernels = None
            else:
                kernels = set(kernels.split(','))
                if not kernels <= set(KERNELS):
                    bad(f'unknown kernel in "{",".join(sorted(kernels))}"')
            try:
                until = datetime.date.fromisoformat(until)
            except ValueError:
                bad(f'"{until}" is not a date')
            if key in known:
                bad(f'{key} is listed twice')
            known[key] = Known(kind, key, kernels, until, reason.strip(), cpus)
    return known


def flaky_keys(known, kernel, today=None, cpus=None):
    """The subtests the guest reruns on kernel when they fail: the flaky
    entries and, on a boot of cpus CPUs, the needs-cpus entries that boot
    judges (their tolerance still races with the per-CPU charge stocks of
    every CPU the test ran on, so a failure there is counted and rerun as
    a flaky one is, never skipped)."""
    return sorted(k for k, e in known.items() if e.applies(kernel, today) and (
        e.kind == 'flaky' or
        (e.kind == 'needs-cpus' and cpus is not None and cpus >= e.cpus)))


def cpu_boots(known, kernel, tests=None, today=None):
    """[(cpus, [test, ...])]: the boots that needs-cpus entries want, for
    the tests asked for (all when tests is None)."""
    boots = {}
    for e in known.values():
        test = e.key.split(':', 1)[0]
        if e.kind == 'needs-cpus' and e.applies(kernel, today) and (tests is None or test in tests):
            boots.setdefault(e.cpus, set()).add(test)
    return [(cpus, sorted(names)) for cpus, names in sorted(boots.items())]


def expired_entries(known, kernel, today=None):
    return [e for e in known.values()
            if (e.kernels is None or kernel in e.kernels) and e.expired(today)]


def read_expect(path):
    """{test:subtest: {kernel: 'pass'|'fail'}}"""
    expect = {}
    for n, cols in read_table(path):
        if len(cols) != 1 + len(KERNELS) or any(c not in ('pass', 'fail') for c in cols[1:]):
            raise SystemExit(f'{path}:{n}: want "test:subtest {" ".join(KERNELS)}" '
                             f'with pass|fail, got {" ".join(cols)}')
        expect[cols[0]] = dict(zip(KERNELS, cols[1:]))
    return expect


def summarize(results, kernel, known, expect, tests=None, cpus=None, today=None):
    """Apply known issues and expectations; return (lines, counts, surprises).
    cpus is the boot's number of CPUs (for needs-cpus entries)."""
    lines, surprises = [], []
    counts = {'pass': 0, 'fail': 0, 'skip': 0, 'expected': 0, 'flaky': []}
    ran = set()
    for r in results:
        ran.add(r.key)
        k = known.get(r.key)
        if k is not None and not k.applies(kernel, today):
            k = None
        want = expect.get(r.key, {}).get(kernel, 'pass')
        known_skip = False
        if r.outcome == 'fail' and k is not None:
            if k.kind == 'broken':
                r.outcome, r.reason = 'skip', f'known issue until {k.until}: {k.reason}'
                known_skip = True
            elif k.kind == 'needs-cpus' and cpus is not None and cpus < k.cpus:
                r.outcome, r.reason = 'skip', (f'needs {k.cpus} CPUs, this boot had {cpus} '
                                               f'(judged in the {k.cpus}-CPU boot): {k.reason}')
                known_skip = True
        if len(r.attempts) > 1:
            counts['flaky'].append((r.key, r.attempts.count('fail'), len(r.attempts)))
        counts[r.outcome] += 1
        note = ''
        if r.outcome == 'skip':
            note = r.reason
            if r.key in expect and not known_skip:
                # The matrix names what must happen; a skip proves nothing.
                surprises.append((r.key, want, 'skip'))
                note += f' [SURPRISE: expected {want}]'
        elif r.outcome == want:
            counts['expected'] += 1
            note = r.reason
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
        # The first attempt's outcome: what the subtest did, reruns aside.
        outcomes[r.key].append(r.attempts[0] if r.outcome != 'skip' else 'skip')
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


class Verdict:
    """What one kselftest run's results channel says, judged: .results
    (first attempts, reruns folded in), .lines, .counts, .surprises, .notes
    (reruns' binary failures), .expired (known-issue entries past their
    date), .done, .boot, .metrics (parse_run)."""


def read_plans(path):
    """{test: N} from qemu-run/verdict/plans."""
    plans = {}
    for n, cols in read_table(path):
        if len(cols) != 2 or not cols[1].isdigit():
            raise SystemExit(f'{path}:{n}: want "test subtests", got {" ".join(cols)}')
        plans[cols[0]] = int(cols[1])
    return plans


def judge(lines, kernel, known, expect, tests=None, today=None, plans=None):
    v = Verdict()
    results, v.done, v.boot, v.metrics = parse_run(lines, plans)
    if tests:
        for t in sorted(set(tests) - {r.test for r in results}):
            results.append(Result(t, '(binary)', 'fail', 'no results at all'))
    cpus = v.boot.get('cpus')
    cpus = int(cpus) if cpus and cpus.isdigit() else None
    v.results, v.notes = merge_attempts(results, set(flaky_keys(known, kernel, today, cpus)))
    v.lines, v.counts, v.surprises = summarize(v.results, kernel, known, expect, tests, cpus, today)
    v.expired = expired_entries(known, kernel, today)
    return v


def verdict_rows(v, kernel, expect):
    """The judged outcomes as verdict.json's rows: (test, subtest, outcome,
    reason, expected, surprise, first, attempts, failed), a subtest of the
    matrix that did not run as outcome "miss"."""
    surprising = {(key, got) for key, _, got in v.surprises}
    rows = []
    for r in v.results:
        want = expect.get(r.key, {}).get(kernel, 'pass')
        rows.append([r.test, r.subtest, r.outcome, r.reason, want, int((r.key, r.outcome) in surprising),
                     r.attempts[0], len(r.attempts), r.attempts.count('fail')])
    for key, want, got in v.surprises:
        if got == 'did not run':
            test, _, subtest = key.partition(':')
            rows.append([test, subtest, 'miss', 'listed in the matrix, did not run', want, 1, 'miss', 0, 0])
    return rows


def write_verdict(path, v, kernel, expect, summary):
    """verdict.json, written whole or not at all (a temporary file renamed)."""
    head = {'format': VERDICT_FORMAT, 'kernel': kernel, 'summary': summary}
    rows = ',\n'.join(json.dumps(r) for r in verdict_rows(v, kernel, expect))
    tmp = path + '.tmp'
    with open(tmp, 'w') as f:     # one row a line, for a reader with less or grep
        f.write(json.dumps(head)[:-1] + ',\n"rows": [\n' + rows + '\n]}\n')
    os.replace(tmp, path)


SHOWN = 8     # surprises the summary line names


def summary_line(kernel, v):
    """The last line, what make test's summary (and a truncated CI log)
    shows: it names the surprises and the flaky subtests, not just their
    number."""
    c = v.counts
    line = (f'{kernel}: {c["pass"]} passed, {c["fail"]} failed, {c["skip"]} skipped; '
            f'{c["expected"]} as expected, {len(v.surprises)} surprises')
    if v.surprises:
        named = [f'{key} {got} (want {want})' for key, want, got in v.surprises]
        line += ': ' + ', '.join(named[:SHOWN])
        if len(named) > SHOWN:
            line += f' and {len(named) - SHOWN} more (table above)'
    if c['flaky']:
        line += '; flaky: ' + ', '.join(f'{key} ({k} of {n} failed)' for key, k, n in c['flaky'])
    if v.expired:
        line += '; expired known issues: ' + ', '.join(f'{e.key} (until {e.until})' for e in v.expired)
    return line


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--kernel', required=True, choices=KERNELS)
    ap.add_argument('--known')
    ap.add_argument('--expect')
    ap.add_argument('--tests', help='comma-separated tests that were asked for')
    ap.add_argument('--plans', help='plans of the binaries that print none (qemu-run/verdict/plans)')
    ap.add_argument('--flaky', action='store_true',
                    help='print the comma-separated subtests the guest reruns on KERNEL, and exit')
    ap.add_argument('--cpus', type=int,
                    help='with --flaky: the boot has this many CPUs (adds the needs-cpus '
                         'entries it judges)')
    ap.add_argument('--cpu-boots', action='store_true',
                    help='print "N test,test" for each boot of N CPUs that needs-cpus entries '
                         'want for the --tests on KERNEL, and exit')
    ap.add_argument('--verdict', metavar='FILE',
                    help='write the judged outcomes there (verdict.json, what db/ingest.py stores)')
    ap.add_argument('results', nargs='?')
    args = ap.parse_args(argv)
    known = read_known(args.known)
    tests = set(args.tests.split(',')) if args.tests else None
    if args.flaky:
        print(','.join(flaky_keys(known, args.kernel, cpus=args.cpus)))
        return 0
    if args.cpu_boots:
        for cpus, names in cpu_boots(known, args.kernel, tests):
            print(cpus, ','.join(names))
        return 0
    if not args.results:
        ap.error('the results file is missing')
    expect = read_expect(args.expect)
    with open(args.results, errors='replace') as f:
        v = judge(f, args.kernel, known, expect, tests, plans=read_plans(args.plans))
    for line in v.lines:
        print(line)
    for note in v.notes:
        print(f'note: a rerun failed as a whole: {note}')
    if v.surprises:
        print(f'\nexpectations matrix, kernel {args.kernel}: {len(v.surprises)} surprises')
        print(f'    {"test:subtest":56} {"expected":9} outcome')
        for key, want, got in v.surprises:
            print(f'    {key:56} {want:9} {got}')
    for line in repeat_counts(v.results, args.kernel, expect):
        print(line)
    for e in v.expired:
        print(f'warning: known-issues entry {e.key} expired on {e.until}: it no longer applies')
    if not v.done:
        print('warning: the results channel has no "@@ done" record')
    line = summary_line(args.kernel, v)
    if args.verdict:
        write_verdict(args.verdict, v, args.kernel, expect, line)
    print(line)
    return 1 if v.surprises or not v.done else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
