"""The kselftest records of results.log (qemu-run/records/RECORDS.md):
TAP lines per binary between "@@ begin" and "@@ end", the "@@ boot"
record, "# METRIC" figures, reruns of flaky subtests as attempts.  Parsing
only: qemu-run/verdict/tap.py judges what this reads against the
expectations matrix."""
import json
import re
import signal

OK = re.compile(r'^(not )?ok (\d+)\s*(.*)$')
BEGIN = re.compile(r'^@@ begin (\S+)(?:.*\battempt=(\d+))?')
END = re.compile(r'^@@ end (\S+) rc=(\d+) secs=(\d+)')
PLAN = re.compile(r'^1\.\.(\d+)(?:\s*#\s*SKIP\b\s*(.*))?')
BOOT = re.compile(r'^@@ boot (.*)')
# A figure a subtest prints for the record: "# METRIC subtest key=value ...".
METRIC = re.compile(r'^#\s*METRIC (\S+)((?:\s+[A-Za-z0-9_.]+=-?[0-9]+(?:\.[0-9]+)?)+)\s*$')
KSFT_PASS, KSFT_SKIP = 0, 4


class Result:
    def __init__(self, test, subtest, outcome, reason='', num=None, attempt=1):
        self.test, self.subtest = test, subtest
        self.outcome, self.reason = outcome, reason
        self.num, self.attempt = num, attempt
        # The outcomes of every attempt, first one first (flaky reruns).
        self.attempts = [outcome]

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


def binary_verdict(test, rc, secs, plan, seen, nums):
    """The '(binary)' failure of one run of a test binary, or None when its
    TAP is whole and its exit status agrees with its results."""
    def fail(why):
        return Result(test, '(binary)', 'fail', why)
    if rc == 124:
        return fail(f'timed out after {secs} s')
    if rc == 127:
        return fail('not found in the guest')
    if rc == 125:
        return fail('ptyrun could not run it (rc=125)')
    if rc > 128:
        try:
            name = signal.Signals(rc - 128).name
        except ValueError:
            name = f'signal {rc - 128}'
        return fail(f'killed by {name} (rc={rc}) after {len(seen)} results')
    if plan is None:
        return fail(f'no TAP plan line, and none in qemu-run/verdict/plans (rc={rc}, {len(seen)} results)')
    outside = sorted(n for n in nums if n < 1 or n > plan)
    if outside:
        return fail(f'result {outside[0]} is not in the plan 1..{plan} (rc={rc})')
    if len(set(nums)) != len(nums):
        return fail(f'a result number is repeated (rc={rc})')
    if plan and len(seen) < plan:
        return fail(f'ran {len(seen)} of {plan} planned subtests (rc={rc})')
    failed = any(r.outcome == 'fail' for r in seen)
    if rc not in (KSFT_PASS, KSFT_SKIP) and not failed:
        return fail(f'exit status {rc} although no subtest failed')
    return None


def parse_run(lines, plans=None):
    """Return (results, done, boot, metrics) from the lines of a results
    channel: boot is the "@@ boot" record's key=value words, metrics the
    "# METRIC" figures as (test, subtest, attempt, key, value).  plans:
    {test: N} for binaries that print no plan line (qemu-run/verdict/plans)."""
    plans = plans or {}
    results, done, boot, metrics = [], False, {}, []
    test, attempt, seen, nums, plan, ended = None, 1, [], [], None, False
    for line in lines:
        line = line.rstrip('\r\n')
        m = BOOT.match(line)
        if m:
            boot = dict(w.split('=', 1) for w in m.group(1).split() if '=' in w)
            continue
        m = BEGIN.match(line)
        if m:
            test, seen, nums, plan, ended = m.group(1), [], [], None, False
            attempt = int(m.group(2) or 1)
            continue
        m = END.match(line)
        if m and test == m.group(1):
            results.extend(seen)
            if plan is None:
                plan = plans.get(test)
            whole_skip = plan == 0 and seen
            bad = None if whole_skip else binary_verdict(test, int(m.group(2)), m.group(3),
                                                          plan, seen, nums)
            if bad:
                bad.attempt = attempt
                results.append(bad)
            test, ended = None, True
            continue
        if line.startswith('@@ done'):
            done = True
            continue
        if test is None:
            continue
        m = METRIC.match(line)
        if m:
            for word in m.group(2).split():
                key, _, value = word.partition('=')
                metrics.append((test, m.group(1), attempt, key, float(value)))
            continue
        m = PLAN.match(line)
        if m:
            plan = int(m.group(1))
            if plan == 0:
                # "1..0 # SKIP why": the whole program skipped.
                seen.append(Result(test, '(binary)', 'skip', (m.group(2) or '').strip(),
                                   attempt=attempt))
            continue
        r = parse_tap_line(line)
        num = None
        if r:
            num = int(OK.match(line).group(2))
        else:
            # A test that prints a message without its newline glues the
            # next result to it ("...enablednot ok 4 name"): find the
            # result with the number that is due.
            m = re.search(rf'(?:not )?ok {len(seen) + 1}\b.*$', line)
            if m and not line.startswith('    '):
                r = parse_tap_line(m.group(0))
                num = len(seen) + 1
        if r:
            nums.append(num)
            seen.append(Result(test, r[1], r[0], r[2], num=num, attempt=attempt))
    if test is not None and not ended:
        # The guest died inside this test: what it printed counts, the rest fails.
        results.extend(seen)
        results.append(Result(test, '(binary)', 'fail', 'guest stopped during this test',
                              attempt=attempt))
    return results, done, boot, metrics


def parse_results(lines):
    """Return ([Result], done) from the lines of a results channel."""
    results, done, _, _ = parse_run(lines)
    return results, done


def merge_attempts(results, flaky):
    """Fold the reruns (attempt > 1) of the subtests in flaky (test:subtest
    keys) into the result of their first attempt: its .attempts lists every
    outcome.  Everything else a rerun reports judges nothing (the first
    attempt does), its '(binary)' failures are returned as notes; a flaky
    subtest that a rerun did not report at all failed in that attempt."""
    merged, first, binary_notes = [], {}, []
    reruns = []
    for r in results:
        if r.attempt <= 1:
            merged.append(r)
            first[r.key] = r
            continue
        reruns.append(r)
    # Group the reruns by (test, attempt) to find subtests a rerun lost.
    by_attempt = {}
    for r in reruns:
        by_attempt.setdefault((r.test, r.attempt), []).append(r)
    for (test, attempt), rs in sorted(by_attempt.items(), key=lambda kv: kv[0][1]):
        reported = set()
        for r in rs:
            if r.subtest == '(binary)':
                if r.outcome == 'fail':
                    binary_notes.append(f'{test} attempt {attempt}: {r.reason}')
                continue
            f = first.get(r.key)
            if f is not None and r.key in flaky and f.attempts[0] == 'fail':
                f.attempts.append(r.outcome)
                reported.add(r.key)
        for key, f in first.items():
            if f.test == test and key in flaky and f.attempts[0] == 'fail' \
                    and len(f.attempts) < attempt and key not in reported:
                f.attempts.append('fail')
    for f in merged:
        if len(f.attempts) > 1:
            k, n = f.attempts.count('fail'), len(f.attempts)
            if 'pass' in f.attempts:
                f.outcome, f.reason = 'pass', f'flaky ({k} of {n} failed)'
            else:
                f.reason = '; '.join(x for x in (f.reason, f'failed {k} of {n} attempts') if x)
    return merged, binary_notes


# verdict.json: tap.py --verdict writes it, db/ingest.py stores it.
VERDICT_FORMAT = 'kselftest-verdict 1'
VERDICT_COLUMNS = ('test', 'subtest', 'outcome', 'reason', 'expected', 'surprise', 'first', 'attempts', 'failed')
OUTCOMES = ('pass', 'fail', 'skip', 'miss')


class VerdictError(Exception):
    pass


def read_verdict(path):
    """(kernel, summary, rows) of a verdict.json; VerdictError names what is
    wrong with a file that is not one whole."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except ValueError as e:
        raise VerdictError(f'{path} is not JSON ({e}): judge the run again with qemu-run/verdict/tap.py --verdict')
    if not isinstance(doc, dict) or doc.get('format') != VERDICT_FORMAT:
        raise VerdictError(f'{path}: format is {doc.get("format") if isinstance(doc, dict) else None!r}, '
                           f'not {VERDICT_FORMAT!r}')
    rows = doc.get('rows')
    if not isinstance(rows, list):
        raise VerdictError(f'{path} has no rows')
    for i, row in enumerate(rows, 1):
        if not isinstance(row, list) or len(row) != len(VERDICT_COLUMNS) or row[2] not in OUTCOMES \
                or not all(isinstance(row[j], int) for j in (5, 7, 8)):
            raise VerdictError(f'{path}: row {i} is not {", ".join(VERDICT_COLUMNS)}: {row!r}')
    return doc.get('kernel'), doc.get('summary'), [tuple(r) for r in rows]
