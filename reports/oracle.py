#!/usr/bin/env python3
"""The differential oracle's verdict: a scenario run of original and one of
patched (qemu-run/jobs/oracle.sh), compared value by value.

usage: reports/oracle.py compare ORIG_RUN_DIR PATCHED_RUN_DIR [--tolerances F] [--expected F]
                                 [--json OUT] [--all] [--store [--db PATH]] [--kernels A,B]

Both run folders hold the samples.log of the guest's scenario tool
(qemu-run/records/RECORDS.md, "samples.log of a scenario run") and boot.sh's
meta, which must say job=scenario and kernel=original resp. kernel=patched
(--kernels names two others: original,original for a noise run that
measures the tolerances).  Every (scenario, checkpoint, cgroup, file:key)
present on either side is compared, and every action's outcome (key
act:<seq>, exactly; its time ms is shown, not compared), and how each
scenario ended (scenario:rc).  A row's verdict:

  same        equal
  agrees      within the tolerance of its key (scenarios/tolerances)
  differs     beyond it: fails
  deliberate  a difference the series means to make (scenarios/expected: a
              "deliberate" entry, or a "lower" one when patched is lower)
  unstable    an outcome the reference kernel itself gave differently over its
              plays: the scenario cannot judge it; fails (fix the scenario)
  finding     a known bug of patched the oracle must keep finding (scenarios/expected;
              an "intermittent" entry: one that shows in some plays, allowed
              only while a finding of its scenario shows)
  missing     on one side only (a scenario, checkpoint, value or action): fails
  audit-fail  a conservation audit that failed, or a kernel report (kmsg), on
              either kernel: fails, unless an "audit" entry of scenarios/expected
              covers it (audit-known)

These fail the comparison too ("problems"): a "finding" or "audit" entry
of scenarios/expected that no longer matches anything in the scenarios
the runs played (the series may have fixed it: the entry must go); two
runs that did not play the same thing (other "@@ run" knobs but the
guest's RAM, another file, an action whose command differs); a run cut
short (no "@@ end"); a scenario that ended rc!=0 on both kernels; no
scenario at all; a boot whose verdict is not clean (boot.sh: a kernel
report on the console, a hang), even where no scenario saw it.

Prints the rows that are neither same nor agrees (--all: every row) as a
table, grouped by scenario, then the problems, then one summary line, the
last, ending in PASS or FAIL; exit status 0 only on PASS.  --json OUT
writes every row and the summary (whole, renamed into place); --store
keeps the rows in the runs database (both runs must be stored already,
db/ingest.py), replacing an earlier comparison of the same two runs.  The
database: --db, else $RUNS_DB, else $BUILD/db/runs.sqlite.

From Python: compare_dirs(orig_dir, patched_dir) -> Comparison
(.rows, .problems, .passed, .summary), or compare(orig, patched) of two
parsed runs (records_oracle.parse).
"""
import argparse
import collections
import datetime
import fnmatch
import json
import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, 'db'))
sys.path.insert(0, os.path.join(TOP, 'qemu-run', 'records'))
import records  # noqa: E402
import store  # noqa: E402

records_oracle = records.oracle_module()

TOLERANCES = os.path.join(TOP, 'scenarios', 'tolerances')
EXPECTED = os.path.join(TOP, 'scenarios', 'expected')
KINDS = ('deliberate', 'lower', 'finding', 'intermittent', 'audit')
FAILING = ('differs', 'missing', 'audit-fail', 'unstable')
# "@@ run" words that may differ between the two kernels: the guest's RAM
# (MemTotal) depends on the kernel image; the records port is the tool's.
OWN_KNOBS = {'mem_kb', 'out'}
SIZE = re.compile(r'^(\d+)([KMGkmg]?)$')
PERCENT = re.compile(r'^(\d+(?:\.\d+)?)%$')

Tolerance = collections.namedtuple('Tolerance', 'pattern abs rel line')
Entry = collections.namedtuple('Entry', 'kind scenario checkpoint cgroup key reason line')
# side: for an audit or kmsg row, the side it is of (original or patched); '' for a value
Row = collections.namedtuple('Row', 'scenario checkpoint cgroup key original patched verdict reason side')


class OracleError(Exception):
    pass


# ---- scenarios/tolerances and scenarios/expected

def _lines(path, inline=True):
    """(number, text) of the lines of a file, blank lines and comments
    aside: a line that starts with #, and with inline the rest of a line
    from a # after a blank."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise OracleError(f'{path}: {e.strerror}')
    for n, line in enumerate(text.splitlines(), 1):
        line = re.sub(r'(^|\s)#.*$', '', line) if inline else line
        line = line.strip()
        if line and not line.startswith('#'):
            yield n, line


def parse_size(text):
    """An integer with an optional binary suffix: 512, 256K, 2M, 1G -> bytes
    (or a plain count); None when it is not one."""
    m = SIZE.match(text)
    if not m:
        return None
    return int(m.group(1)) << {'': 0, 'k': 10, 'm': 20, 'g': 30}[m.group(2).lower()]


def parse_percent(text):
    """'5%' -> 0.05; None when it is not a percentage."""
    m = PERCENT.match(text)
    return float(m.group(1)) / 100 if m else None


def read_tolerances(path):
    """[Tolerance(pattern, abs, rel, line)] of a tolerances file: lines
    "PATTERN ABS REL", PATTERN an fnmatch glob over file:key, ABS an
    integer with an optional K, M or G (binary), REL a percentage."""
    out = []
    for n, line in _lines(path):
        words = line.split()
        if len(words) != 3:
            raise OracleError(f'{path}:{n}: "{line}" is not "PATTERN ABS REL": write e.g. '
                              '"memory.current:bytes 2M 5%"')
        a, r = parse_size(words[1]), parse_percent(words[2])
        if a is None:
            raise OracleError(f'{path}:{n}: ABS "{words[1]}" is not an integer with an optional K, M or G '
                              '(2M, 256K, 2000)')
        if r is None:
            raise OracleError(f'{path}:{n}: REL "{words[2]}" is not a percentage (5%, 0%, 2.5%)')
        out.append(Tolerance(words[0], a, r, n))
    return out


def tolerance_for(tolerances, key):
    """The first tolerance whose pattern matches file:key, else None (exact)."""
    for t in tolerances:
        if fnmatch.fnmatchcase(key, t.pattern):
            return t
    return None


def agrees(a, b, tol):
    """a and b agree within tol: |a-b| <= ABS or |a-b| <= REL * max(|a|,|b|)."""
    d = abs(a - b)
    return d <= tol.abs or d <= tol.rel * max(abs(a), abs(b))


def read_expected(path):
    """[Entry] of an expected file.  Lines "deliberate|finding SCENARIO
    CHECKPOINT CGROUP KEY REASON..." and "audit SCENARIO CHECKPOINT KERNEL
    CHECK REASON..." (an audit entry keeps KERNEL in .cgroup and CHECK in
    .key); the four fields are fnmatch globs, the reason is required."""
    out = []
    for n, line in _lines(path, inline=False):
        words = line.split(None, 5)
        if words[0] not in KINDS:
            raise OracleError(f'{path}:{n}: "{words[0]}" is not deliberate, lower, finding, intermittent or audit')
        if len(words) < 6:
            what = 'CHECKPOINT KERNEL CHECK' if words[0] == 'audit' else 'CHECKPOINT CGROUP KEY'
            raise OracleError(f'{path}:{n}: "{line}" is not "{words[0]} SCENARIO {what} REASON...": '
                              'every entry says why, in words')
        if words[0] == 'audit' and words[3] not in ('original', 'patched', '*'):
            raise OracleError(f'{path}:{n}: KERNEL "{words[3]}" is not original, patched or *')
        out.append(Entry(*words, n))
    return out


def _glob(value, pattern):
    return fnmatch.fnmatchcase(str(value), pattern)


def matches(entry, row):
    """Whether an expected entry covers a row: a deliberate or finding entry
    a differing or missing row, an audit entry an audit or kmsg row of its
    kernel side (a kmsg line is at no checkpoint: any CHECKPOINT covers it,
    with CHECK kmsg)."""
    if not _glob(row.scenario, entry.scenario):
        return False
    if entry.kind != 'audit':
        if entry.kind == 'lower' and not (isinstance(row.original, int) and isinstance(row.patched, int)
                                          and row.patched < row.original):
            return False
        return (row.verdict == 'differs' and _glob(row.checkpoint, entry.checkpoint)
                and _glob(row.cgroup, entry.cgroup) and _glob(row.key, entry.key))
    if row.verdict != 'audit-fail' or not _glob(row.side, entry.cgroup):
        return False
    if row.key == 'kmsg':
        return _glob('kmsg', entry.key)
    return _glob(row.checkpoint, entry.checkpoint) and _glob(row.key[len('audit:'):], entry.key)


def describe(entry):
    if entry.kind == 'audit':
        return f'audit {entry.scenario} {entry.checkpoint} {entry.cgroup} {entry.key}'
    return f'{entry.kind} {entry.scenario} {entry.checkpoint} {entry.cgroup} {entry.key}'


# ---- the comparison

class Comparison:
    """The rows of a comparison and its verdict.

    rows      [Row]: scenario, checkpoint ('-' for an action, a scenario's
              end, a kmsg line), cgroup ('-' but for values), key (file:key,
              act:<seq>, scenario:rc, checkpoint, scenario, audit:<check>,
              kmsg), original, patched (None: absent), verdict, reason, side
    problems  what fails the gate besides the rows: the two runs did not
              play the same thing, an expected entry no longer shows
    notes     what does not fail it but is worth a line
    counts    the figures of the summary line
    passed    no row differs, is missing or is an uncovered audit failure,
              and no problem
    summary   the summary line
    """

    def __init__(self, rows, problems, notes, kernels=('original', 'patched')):
        self.rows, self.problems, self.notes, self.kernels = rows, problems, notes, kernels
        self.dirs = (None, None)
        v = collections.Counter(r.verdict for r in rows)
        audits = [r for r in rows if r.key.startswith('audit:')]
        kmsg = [r for r in rows if r.key == 'kmsg']
        self.counts = {
            'scenarios': len({r.scenario for r in rows}),
            'values': sum(1 for r in rows if r.side == ''),
            'same': v['same'], 'agrees': v['agrees'],
            'differ': v['differs'] + v['deliberate'] + v['finding'],
            'differs': v['differs'], 'findings': v['finding'], 'deliberate': v['deliberate'],
            'missing': v['missing'],
            'audit_failures': len(audits), 'audit_known': sum(r.verdict == 'audit-known' for r in audits),
            'kmsg': len(kmsg), 'kmsg_known': sum(r.verdict == 'audit-known' for r in kmsg),
            'problems': len(problems),
        }
        self.passed = not (v['differs'] or v['missing'] or v['audit-fail'] or v['unstable'] or problems)
        c = self.counts
        self.summary = (f'oracle: {c["scenarios"]} scenarios, {c["values"]} values compared: '
                        f'{c["differ"]} differ ({c["findings"]} known findings, {c["deliberate"]} deliberate), '
                        f'{c["missing"]} missing, {c["audit_failures"]} audit failures ({c["audit_known"]} known), '
                        f'{c["kmsg"]} kmsg lines ({c["kmsg_known"]} known)'
                        + (f', {c["problems"]} problems (above)' if problems else '')
                        + f': {"PASS" if self.passed else "FAIL"}')

    def to_json(self):
        return {'format': 'oracle-compare 1', 'kernels': list(self.kernels),
                'run_dirs': list(self.dirs), 'summary': self.summary, 'passed': self.passed,
                'counts': self.counts, 'problems': self.problems, 'notes': self.notes,
                'rows': [r._asdict() for r in self.rows]}


def _exact(a, b):
    if a is None or b is None:
        return 'missing'
    return 'same' if a == b else 'differs'


def _value_row(scenario, cp, cgroup, key, a, b, tolerances, names):
    """The row of one counter: same, agrees (within its tolerance),
    differs, or missing (one side only)."""
    if a is None or b is None:
        return Row(scenario, cp, cgroup, key, a, b, 'missing', f'only on {names[a is None]}', '')
    if a == b:
        return Row(scenario, cp, cgroup, key, a, b, 'same', '', '')
    tol = tolerance_for(tolerances, key)
    d = b - a
    if tol is None:
        return Row(scenario, cp, cgroup, key, a, b, 'differs', f'{d:+d}, compared exactly (no tolerance matches)', '')
    within = f'{tol.abs} or {tol.rel * 100:g}% ({tol.pattern}, tolerances line {tol.line})'
    if agrees(a, b, tol):
        return Row(scenario, cp, cgroup, key, a, b, 'agrees', f'{d:+d} within {within}', '')
    rel = abs(d) / max(abs(a), abs(b))
    return Row(scenario, cp, cgroup, key, a, b, 'differs', f'{d:+d} ({rel * 100:.1f}%) beyond {within}', '')


def _union(*seqs):
    """The keys of the first, then those of each next that the ones before
    lack, in their order."""
    out, seen = [], set()
    for seq in seqs:
        for k in seq:
            if k not in seen:
                seen.add(k)
                out.append(k)
    return out


def _base(name):
    """A scenario's name without the #N of its second, third... play."""
    return name.split('#', 1)[0]


def _plays(run):
    """{scenario: [Scenario of each play, in order]} of a parsed run:
    oracle.sh plays every file ORACLE_REPEAT times in a boot."""
    out = {}
    for name, s in run.scenarios.items():
        out.setdefault(_base(name), []).append(s)
    return out


def _median(xs):
    xs = sorted(xs)
    return xs[(len(xs) - 1) // 2]


def _outcome_row(scenario, key, a, b, why, names):
    """The row of words compared across plays (an action's outcome, a
    scenario's rc): same when every play of both gave one word; unstable
    when the reference kernel gave several (the scenario cannot judge it:
    fix the scenario); agrees when patched gave only words the reference
    gave; differs otherwise."""
    if not a or not b:
        return Row(scenario, '-', '-', key, ','.join(map(str, a)) or None, ','.join(map(str, b)) or None,
                   'missing', f'only on {names[not a]}: {why}', '')
    sa, sb = set(a), set(b)
    shown = [x[0] if len(set(x)) == 1 else ','.join(map(str, x)) for x in (a, b)]
    if sa == sb and len(sa) == 1:
        return Row(scenario, '-', '-', key, shown[0], shown[1], 'same', why, '')
    if len(sa) > 1:
        return Row(scenario, '-', '-', key, shown[0], shown[1], 'unstable',
                   f'{names[0]} itself gave {shown[0]} over its plays: the scenario does not decide this '
                   f'outcome; {why}', '')
    if sb <= sa:
        return Row(scenario, '-', '-', key, shown[0], shown[1], 'agrees', why, '')
    return Row(scenario, '-', '-', key, shown[0], shown[1], 'differs',
               f'{names[1]} gave {",".join(sorted(map(str, sb - sa)))}, never seen on {names[0]}; {why}', '')


def _range_row(scenario, cp, cgroup, key, a, b, tolerances, names):
    """The row of one counter over the plays of each kernel: same when all
    are equal; agrees when every play of patched lies within the range of
    the reference's plays, or within the key's tolerance of its nearer
    end; differs when one play does not (a bug that shows in one play of
    three is a bug).  The values shown are the medians; the reason gives
    the ranges."""
    if len(a) == 1 and len(b) == 1:
        return _value_row(scenario, cp, cgroup, key, a[0], b[0], tolerances, names)
    ma, mb = _median(a), _median(b)
    lo, hi = min(a), max(a)
    rng = f'{names[0]} {lo}..{hi}, {names[1]} {min(b)}..{max(b)} ({len(a)} and {len(b)} plays)'
    if len(set(a) | set(b)) == 1:
        return Row(scenario, cp, cgroup, key, ma, mb, 'same', '', '')
    tol = tolerance_for(tolerances, key)
    out = [x for x in b if not lo <= x <= hi and not (tol and agrees(lo if x < lo else hi, x, tol))]
    if not out:
        return Row(scenario, cp, cgroup, key, ma, mb, 'agrees', f'within the reference\'s range: {rng}', '')
    within = (f'{tol.abs} or {tol.rel * 100:g}% ({tol.pattern}, tolerances line {tol.line})' if tol
              else 'nothing (compared exactly)')
    return Row(scenario, cp, cgroup, key, ma, mb, 'differs',
               f'{len(out)} of {len(b)} plays outside the reference\'s range beyond {within}: {rng}', '')


def compare(orig, patched, tolerances=(), expected=(), kernels=('original', 'patched')):
    """Compare two parsed scenario runs (records_oracle.ScenarioRecords,
    walked) under tolerances and expected entries; a Comparison.  A
    scenario played several times in a boot (name, name#2, ...) is one
    scenario whose values are compared as ranges (_range_row)."""
    names = ('original', 'patched')     # the sides, whatever kernels ran them
    rows, problems, notes = [], [], []
    runs = (orig, patched)
    knobs = [r.run or {} for r in runs]
    for k in _union(*knobs):
        if k not in OWN_KNOBS and knobs[0].get(k) != knobs[1].get(k):
            problems.append(f'the runs were not played alike: "@@ run" {k}={knobs[0].get(k)} on {kernels[0]}, '
                            f'{k}={knobs[1].get(k)} on {kernels[1]}: play the same files with the same knobs '
                            'on both (qemu-run/jobs/oracle.sh does)')
    for side, k, r in zip(names, kernels, runs):
        if r.end is None:
            problems.append(f'the {side} run ({k}) has no "@@ end": it was cut short, and what it did not play '
                            'was compared on neither side (its console.log says why)')
        if r.dropped:
            why = [x for x in r.problems if x.startswith('checkpoint ')][:2]
            notes.append(f'{side}: {r.dropped} checkpoints dropped ({"; ".join(why)})')
        if r.malformed:
            notes.append(f'{side}: {r.malformed} malformed lines in samples.log')
    if not orig.scenarios and not patched.scenarios:
        problems.append('neither run played a scenario: there is nothing to compare')
    plays = (_plays(orig), _plays(patched))
    for scen in _union(*plays):
        ss = (plays[0].get(scen), plays[1].get(scen))
        for side, reps in zip(names, ss):
            for i, s in enumerate(reps or ()):
                play = f' (play {i + 1})' if len(reps) > 1 else ''
                for a in s.audit_failures():
                    st = [x and _audit_state(x[min(i, len(x) - 1)], a.checkpoint, a.check) for x in ss]
                    rows.append(Row(scen, a.checkpoint, '-', f'audit:{a.check}', st[0], st[1], 'audit-fail',
                                    f'{side}{play}: {a.detail}', side))
                for line in s.kmsg:
                    rows.append(Row(scen, '-', '-', 'kmsg', 'kmsg' if side == 'original' else None,
                                    'kmsg' if side == 'patched' else None, 'audit-fail', f'{side}{play}: {line}',
                                    side))
        if None in ss:
            one = ss[0] or ss[1]
            rows.append(Row(scen, '-', '-', 'scenario', ss[0] and one[0].file, ss[1] and one[0].file, 'missing',
                            f'not played on {names[0 if ss[0] is None else 1]}', ''))
            continue
        so, sp = ss
        if len(so) != len(sp):
            problems.append(f'scenario {scen} was played {len(so)} times on {kernels[0]}, {len(sp)} on '
                            f'{kernels[1]}: play both with the same ORACLE_REPEAT')
        if so[0].file != sp[0].file:
            problems.append(f'scenario {scen}: file {so[0].file} on {kernels[0]}, {sp[0].file} on {kernels[1]}: '
                            'the runs did not play the same file')
        ends = [[s.end['rc'] if s.end else None for s in reps] for reps in ss]
        rows.append(_outcome_row(scen, 'scenario:rc', ends[0], ends[1],
                                 'cut short: no "@@ endscenario"' if None in ends[0] + ends[1] else '', names))
        if set(ends[0]) == set(ends[1]) and len(set(ends[0])) == 1 and ends[0][0] not in (0, None):
            problems.append(f'scenario {scen} ended rc={ends[0][0]} on both kernels (a "must" action failed, or '
                            'the file could not be read: the console says which): what comes after it was '
                            'compared on neither; fix the scenario')
        acts = [[{a.seq: a for a in s.acts} for s in reps] for reps in ss]
        mismatch = []
        for seq in sorted(set().union(*acts[0], *acts[1])):
            got = [[p[seq] for p in side if seq in p] for side in acts]
            if got[0] and got[1] and got[0][0].cmd != got[1][0].cmd:
                mismatch.append(seq)
            one = (got[0] or got[1])[0]
            ms = '/'.join(','.join(str(a.ms) for a in g) or '-' for g in got)
            rows.append(_outcome_row(scen, f'act:{seq}', [a.out for a in got[0]], [a.out for a in got[1]],
                                     f'line {one.line}: {one.cmd}; ms {ms}', names))
        if mismatch:
            a = [p[mismatch[0]] for p in acts[0] if mismatch[0] in p][0]
            b = [p[mismatch[0]] for p in acts[1] if mismatch[0] in p][0]
            problems.append(f'scenario {scen}: act {mismatch[0]} is "{a.cmd}" (line {a.line}) on {kernels[0]}, '
                            f'"{b.cmd}" (line {b.line}) on {kernels[1]}'
                            + (f' ({len(mismatch)} acts differ so)' if len(mismatch) > 1 else '')
                            + ': the runs did not play the same scenario, the comparison is invalid; '
                            'play the same scenarios/ on both')
        cps = _union(*[c for reps in ss for c in (s.checkpoints for s in reps)])
        for cp in cps:
            vs = [[s.checkpoints[cp] for s in reps if cp in s.checkpoints] for reps in ss]
            if not vs[0] or not vs[1]:
                i = 0 if not vs[0] else 1
                gone = names[i]
                drops = [s.dropped[cp] for s in ss[i] if cp in s.dropped]
                why = f'dropped on {gone}: {drops[0]}' if drops else f'not reached on {gone}'
                n = [len(v[0]) if v else None for v in vs]      # values of the checkpoint
                rows.append(Row(scen, cp, '-', 'checkpoint', n[0], n[1], 'missing', why, ''))
                continue
            for cg, key in _union(*(v for side in vs for v in side)):
                a = [v[(cg, key)] for v in vs[0] if (cg, key) in v]
                b = [v[(cg, key)] for v in vs[1] if (cg, key) in v]
                if not a or not b:
                    rows.append(_value_row(scen, cp, cg, key, a[0] if a else None, b[0] if b else None,
                                           tolerances, names))
                else:
                    rows.append(_range_row(scen, cp, cg, key, a, b, tolerances, names))
    return Comparison(*apply_expected(rows, problems, expected, set(_union(*plays))),
                      notes, kernels)


def _audit_state(scenario, checkpoint, check):
    """'fail', 'ok' or None (not audited) of a check at a checkpoint of a scenario (None: not played)."""
    if scenario is None:
        return None
    got = [a.ok for a in scenario.audits if a.checkpoint == checkpoint and a.check == check]
    if not got:
        return None
    return 'ok' if all(got) else 'fail'


def apply_expected(rows, problems, expected, played):
    """(rows, problems) once scenarios/expected has spoken: the first
    entry that covers a differing, missing or audit row gives its verdict
    (deliberate, finding, audit-known) and reason; a finding or audit entry
    that covers no row of a scenario played fails (problems)."""
    shown = set()
    out = []
    for r in rows:
        hits = [e for e in expected if matches(e, r)]
        shown.update(hits)
        if hits:
            e = hits[0]
            verdict = {'audit': 'audit-known', 'lower': 'deliberate', 'intermittent': 'finding'}.get(e.kind, e.kind)
            r = r._replace(verdict=verdict, reason=f'expected line {e.line}: {e.reason}'
                           + (f' ({r.reason})' if r.side else ''))
        out.append(r)
    problems = list(problems)
    for e in expected:
        if not any(_glob(s, e.scenario) for s in played):
            continue
        if e.kind == 'intermittent':
            # not strict itself, but only as long as a finding of its
            # scenario still shows: it cannot outlive the bug it rides on
            if not any(f.kind == 'finding' and f.scenario == e.scenario and f in shown for f in expected):
                problems.append(f'{describe(e)} (expected line {e.line}) rides on no finding of scenario '
                                f'{e.scenario} that still shows: remove it (reason: {e.reason})')
            continue
        if e.kind in ('deliberate', 'lower') or e in shown:
            continue
        problems.append(f'{describe(e)} (expected line {e.line}) no longer shows: if the series fixed it, '
                        f'remove the entry (reason: {e.reason})')
    return out, problems


# ---- run folders

def read_run(run_dir, kernel, role):
    """(meta, parsed records) of a scenario run folder whose meta says
    kernel=<kernel> and job=scenario; role names it in errors."""
    meta_path = os.path.join(run_dir, 'meta')
    if not os.path.isfile(meta_path):
        raise OracleError(f'{run_dir} is not a run folder (no meta file from qemu-run/boot/boot.sh)')
    meta = records.read_meta(meta_path)
    if meta.get('job') != 'scenario':
        raise OracleError(f'{run_dir}/meta says job={meta.get("job", "")}: not a scenario run '
                          '(qemu-run/jobs/oracle.sh makes them)')
    if meta.get('kernel') != kernel:
        raise OracleError(f'{run_dir}/meta says kernel={meta.get("kernel", "")}, the {role} run folder must be '
                          f'of {kernel}: give ORIG_RUN_DIR (original) first, PATCHED_RUN_DIR second '
                          '(--kernels A,B for other kernels)')
    path = os.path.join(run_dir, 'samples.log')
    if not os.path.isfile(path):
        raise OracleError(f'{path} is missing: the scenario tool writes its records there')
    return meta, records_oracle.parse(path)


def compare_dirs(orig_dir, patched_dir, tolerances=TOLERANCES, expected=EXPECTED, kernels=('original', 'patched')):
    """The Comparison of two run folders; tolerances and expected are paths
    (None: none) or parsed lists."""
    if isinstance(tolerances, str):
        tolerances = read_tolerances(tolerances)
    if isinstance(expected, str):
        expected = read_expected(expected)
    (mo, ro), (mp, rp) = (read_run(orig_dir, kernels[0], 'first'), read_run(patched_dir, kernels[1], 'second'))
    c = compare(ro, rp, tolerances or (), expected or (), kernels)
    # A kernel report the guest's kmsg scan did not see (after the last
    # scenario, a stall, a hung task) still fails: boot.sh's verdict.
    bad = [f'the {k} boot\'s verdict is {m.get("verdict") or "unfinished"}: its console.log has a kernel report, '
           'a hang, or no end (boot.sh); a report is a failure whether a scenario saw it or not'
           for k, m in zip(kernels, (mo, mp)) if m.get('verdict') != 'clean']
    if bad:
        c = Comparison(c.rows, c.problems + bad, c.notes, kernels)
    c.dirs = (os.path.abspath(orig_dir.rstrip('/')), os.path.abspath(patched_dir.rstrip('/')))
    c.metas = (mo, mp)
    return c


# ---- output

def _cell(v):
    return '-' if v is None else str(v)


def table(rows):
    """The rows as aligned lines, indented, with the difference of two
    numbers, grouped by scenario: a line "scenario NAME" before each group
    (every row names its scenario too)."""
    head = ('scenario', 'checkpoint', 'cgroup', 'key', 'original', 'patched', 'diff', 'verdict')
    body = []
    for r in rows:
        d = (f'{r.patched - r.original:+d}' if isinstance(r.original, int) and isinstance(r.patched, int)
             and r.original != r.patched and not r.key.startswith('scenario') else '')
        body.append((r.scenario, r.checkpoint, r.cgroup, r.key, _cell(r.original), _cell(r.patched), d,
                     r.verdict, r.reason))
    width = [max(len(x[i]) for x in [head] + body) for i in range(len(head))]

    def fmt(cells):
        return ('  ' + '  '.join(c.ljust(w) for c, w in zip(cells, width)) + '  ' + cells[8]).rstrip()

    out = [fmt(head + ('reason',))]
    last = None
    for cells in body:
        if cells[0] != last:
            out.append(f'scenario {cells[0]}')
        last = cells[0]
        out.append(fmt(cells))
    return out


def write_json(path, comparison):
    """The comparison as JSON, written whole (a temporary file renamed)."""
    tmp = f'{path}.tmp{os.getpid()}'
    with open(tmp, 'w') as f:
        json.dump(comparison.to_json(), f, indent=1)
        f.write('\n')
    os.replace(tmp, path)


def run_id(db, run_dir, meta):
    """The stored run of a run folder (db/ingest.py keys it by its folder and start)."""
    row = db.execute("SELECT id, kind FROM runs WHERE run_dir = ? AND started = ? ORDER BY id DESC LIMIT 1",
                     (run_dir, meta.get('started', ''))).fetchone()
    if row is None:
        raise OracleError(f'{run_dir} is not in the runs database: store it first (db/ingest.py {run_dir})')
    if row[1] != 'oracle':
        raise OracleError(f'{run_dir} is stored as a {row[1]} run, not a scenario run')
    return row[0]


def store_comparison(db, comparison):
    """Keep the rows of a comparison of two stored runs (compare_dirs) in
    oracle_compare, in one transaction, replacing an earlier comparison of
    the same two runs; returns (original run id, patched run id)."""
    ids = [run_id(db, d, m) for d, m in zip(comparison.dirs, comparison.metas)]
    now = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
    db.execute('BEGIN IMMEDIATE')
    try:
        db.execute('DELETE FROM oracle_compare WHERE orig_run_id = ? AND patched_run_id = ?', ids)
        db.execute('DELETE FROM oracle_comparisons WHERE orig_run_id = ? AND patched_run_id = ?', ids)
        db.execute('INSERT INTO oracle_comparisons (orig_run_id, patched_run_id, stored, summary, passed) '
                   'VALUES (?, ?, ?, ?, ?)', (*ids, now, comparison.summary, int(comparison.passed)))
        db.executemany('INSERT INTO oracle_compare (orig_run_id, patched_run_id, ord, scenario, checkpoint, cgroup, '
                       'key, original, patched, verdict, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
                       [(*ids, i, r.scenario, r.checkpoint, r.cgroup, r.key, r.original, r.patched, r.verdict,
                         r.reason) for i, r in enumerate(comparison.rows, 1)])
        db.execute('COMMIT')
    except BaseException:
        db.execute('ROLLBACK')
        raise
    return ids


def main(argv):
    ap = argparse.ArgumentParser(prog='reports/oracle.py', description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    c = sub.add_parser('compare', help='compare a scenario run of original with one of patched')
    c.add_argument('orig_dir', metavar='ORIG_RUN_DIR')
    c.add_argument('patched_dir', metavar='PATCHED_RUN_DIR')
    c.add_argument('--tolerances', default=TOLERANCES, help='default: scenarios/tolerances')
    c.add_argument('--expected', default=EXPECTED, help='default: scenarios/expected')
    c.add_argument('--json', metavar='OUT', help='write every row and the summary as JSON')
    c.add_argument('--all', action='store_true', help='print every row, not only what neither is same nor agrees')
    c.add_argument('--store', action='store_true', help='keep the rows in the runs database (both runs stored)')
    c.add_argument('--db', help='the database (default: $RUNS_DB, else $BUILD/db/runs.sqlite)')
    c.add_argument('--kernels', default='original,patched',
                   help='the kernels of the two folders, the reference first (default original,patched)')
    a = ap.parse_args(argv)
    kernels = tuple(a.kernels.split(','))
    if len(kernels) != 2 or not all(kernels):
        raise SystemExit(f'oracle: --kernels names two kernels, the reference first, not "{a.kernels}"')
    try:
        comp = compare_dirs(a.orig_dir, a.patched_dir, a.tolerances, a.expected, kernels)
    except OracleError as e:
        raise SystemExit(f'oracle: {e}')
    shown = comp.rows if a.all else [r for r in comp.rows if r.verdict not in ('same', 'agrees')]
    if shown:
        print('\n'.join(table(shown)))
        print()
    for n in comp.notes:
        print(f'oracle: note: {n}')
    for p in comp.problems:
        print(f'oracle: FAIL: {p}')
    if a.json:
        write_json(a.json, comp)
    if a.store:
        path, db = store.open_existing(a.db, 'oracle', 'store the two runs first (db/ingest.py RUN_DIR)')
        try:
            ids = store_comparison(db, comp)
        except OracleError as e:
            raise SystemExit(f'oracle: {e}')
        finally:
            db.close()
        print(f'oracle: stored as the comparison of runs {ids[0]} and {ids[1]} in {path}')
    print(comp.summary)
    return 0 if comp.passed else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
