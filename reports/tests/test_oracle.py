"""reports/oracle.py: the differential oracle's comparison of a scenario run
of original with one of patched (the hand-written fixtures
qemu-run/tests/fixtures/samples-oracle-*.log: one value beyond its
tolerance, two deliberate differences, one audit failure on patched),
its tolerances and expected entries, its refusals, --json and --store."""
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, 'reports'))
# First: db/ingest.py puts qemu-run/records, which has an oracle.py of its
# own (the records' parser, loaded as "records_oracle"), ahead on the path.
import oracle  # noqa: E402
sys.path.insert(0, os.path.join(TOP, 'db'))
sys.path.insert(0, os.path.join(TOP, 'db', 'tests'))
import fake_run  # noqa: E402
import ingest  # noqa: E402
import store  # noqa: E402

ORACLE = os.path.join(TOP, 'reports', 'oracle.py')
FIXTURES = os.path.join(TOP, 'qemu-run', 'tests', 'fixtures')
DELIBERATE = ('deliberate * * * cgroup.stat:nr_dying_* the series releases removed memory cgroups: '
              'fewer dying descendants is its purpose\n')
# What the fixtures need to pass: the shmem value as a finding, the audit as known.
KNOWN = (DELIBERATE + 'finding pagecache after-rmdir oracle memory.stat:shmem reparented shmem counted twice\n'
         'audit pagecache after-rmdir patched meminfo the same bug seen from the root\n')


def scenario_run(d, kernel, text=None, started=None, job='scenario'):
    """A run folder of a scenario run: the fixture's samples.log of kernel
    (or text), boot.sh's meta and results.log."""
    os.makedirs(d)
    if text is None:
        with open(os.path.join(FIXTURES, f'samples-oracle-{kernel}.log')) as f:
            text = f.read()
    with open(os.path.join(d, 'samples.log'), 'w') as f:
        f.write(text)
    fake_run.write_meta(d, kernel, job, 'scenario.files=basic.scn,pagecache.scn scenario.seed=1',
                        started or f'2026-12-05T10:00:0{int(kernel == "patched")}Z', 300)
    with open(os.path.join(d, 'results.log'), 'w') as f:
        f.write('@@ boot kernel=6.12.118+ job=scenario\n@@ done rc=0\n')
    return d


def fixture(kernel):
    with open(os.path.join(FIXTURES, f'samples-oracle-{kernel}.log')) as f:
        return f.read()


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='oracle-test-')
        self.addCleanup(shutil.rmtree, self.tmp)
        self.tolerances = os.path.join(TOP, 'scenarios', 'tolerances')

    def file(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def compare(self, expected=DELIBERATE, orig=None, patched=None, tolerances=None):
        """The comparison of the two fixtures (or the texts given)."""
        o = os.path.join(self.tmp, 'o')
        p = os.path.join(self.tmp, 'p')
        for d in (o, p):
            shutil.rmtree(d, ignore_errors=True)
        scenario_run(o, 'original', orig)
        scenario_run(p, 'patched', patched)
        return oracle.compare_dirs(o, p, tolerances or self.tolerances, self.file('expected', expected))

    @staticmethod
    def row(c, scenario, checkpoint, cgroup, key):
        got = [r for r in c.rows if (r.scenario, r.checkpoint, r.cgroup, r.key) == (scenario, checkpoint, cgroup, key)]
        assert len(got) == 1, (scenario, checkpoint, cgroup, key, got)
        return got[0]


class Verdicts(Base):
    def test_same_agrees_differs_deliberate_audit(self):
        c = self.compare()
        self.assertEqual(self.row(c, 'basic', 'start', '/', 'memory.current:bytes').verdict, 'same')
        r = self.row(c, 'basic', 'end', 'oracle/a', 'memory.current:bytes')
        self.assertEqual((r.original, r.patched, r.verdict), (16908288, 17039360, 'agrees'))
        self.assertIn('memory.current:bytes', r.reason)
        self.assertEqual(self.row(c, 'basic', 'end', 'oracle', 'memory.stat:pgfault').verdict, 'agrees')
        r = self.row(c, 'pagecache', 'after-rmdir', 'oracle', 'memory.stat:shmem')
        self.assertEqual((r.original, r.patched, r.verdict), (0, 4194304, 'differs'))
        for cg in ('/', 'oracle'):
            r = self.row(c, 'pagecache', 'after-rmdir', cg, 'cgroup.stat:nr_dying_descendants')
            self.assertEqual((r.original, r.patched, r.verdict), (1, 0, 'deliberate'))
            self.assertIn('fewer dying descendants is its purpose', r.reason)
        r = self.row(c, 'pagecache', 'after-rmdir', '-', 'audit:meminfo')
        self.assertEqual((r.original, r.patched, r.verdict, r.side), ('ok', 'fail', 'audit-fail', 'patched'))
        self.assertIn('patched: root memory.stat shmem 1048576 vs /proc/meminfo 5242880', r.reason)
        self.assertEqual(self.row(c, 'basic', '-', '-', 'act:4').original, 'EBUSY')
        self.assertEqual(self.row(c, 'basic', '-', '-', 'act:4').verdict, 'same')
        self.assertEqual(self.row(c, 'basic', '-', '-', 'scenario:rc').verdict, 'same')
        self.assertFalse(c.passed)
        self.assertEqual(c.problems, [])
        self.assertEqual(c.summary, 'oracle: 2 scenarios, 97 values compared: 3 differ (0 known findings, '
                         '2 deliberate), 0 missing, 1 audit failures (0 known), 0 kmsg lines (0 known): FAIL')

    def test_known_findings_pass(self):
        c = self.compare(KNOWN)
        self.assertEqual(self.row(c, 'pagecache', 'after-rmdir', 'oracle', 'memory.stat:shmem').verdict, 'finding')
        r = self.row(c, 'pagecache', 'after-rmdir', '-', 'audit:meminfo')
        self.assertEqual(r.verdict, 'audit-known')
        self.assertIn('the same bug seen from the root', r.reason)
        self.assertEqual(c.problems, [])
        self.assertTrue(c.passed, c.summary)
        self.assertTrue(c.summary.endswith('3 differ (1 known findings, 2 deliberate), 0 missing, '
                                           '1 audit failures (1 known), 0 kmsg lines (0 known): PASS'), c.summary)

    def test_a_finding_that_no_longer_shows_fails(self):
        """Strict: the series fixed it (the value is the same now), and the
        entry must go."""
        c = self.compare(KNOWN, patched=fixture('patched').replace('oracle memory.stat:shmem 4194304',
                                                                   'oracle memory.stat:shmem 0'))
        self.assertEqual(self.row(c, 'pagecache', 'after-rmdir', 'oracle', 'memory.stat:shmem').verdict, 'same')
        self.assertFalse(c.passed)
        self.assertEqual(len(c.problems), 1)
        self.assertIn('finding pagecache after-rmdir oracle memory.stat:shmem (expected line 2) no longer shows: '
                      'if the series fixed it, remove the entry (reason: reparented shmem counted twice)',
                      c.problems[0])
        self.assertIn('1 problems (above): FAIL', c.summary)

    def test_a_finding_within_tolerance_no_longer_shows(self):
        c = self.compare(KNOWN, patched=fixture('patched').replace('oracle memory.stat:shmem 4194304',
                                                                   'oracle memory.stat:shmem 4096'))
        self.assertEqual(self.row(c, 'pagecache', 'after-rmdir', 'oracle', 'memory.stat:shmem').verdict, 'agrees')
        self.assertIn('no longer shows', c.problems[0])

    def test_entries_of_scenarios_not_played_are_not_judged(self):
        """oracle.sh compares the v1 scenarios apart from the v2 ones, with
        the same expected file: a finding of a scenario not played stays."""
        c = self.compare(KNOWN + 'finding sock-v1-* * * memory.kmem.tcp.* a v1 finding\n'
                         'audit sock-v1-* * patched kmsg a v1 report\n')
        self.assertEqual(c.problems, [])
        self.assertTrue(c.passed)

    def test_an_audit_entry_that_no_longer_shows_fails(self):
        c = self.compare(KNOWN, patched=fixture('patched').replace(
            'after-rmdir meminfo fail root memory.stat shmem 1048576 vs /proc/meminfo 5242880',
            'after-rmdir meminfo ok anon, shmem, file within 4 MiB or 2%'))
        self.assertEqual([r for r in c.rows if r.key.startswith('audit:')], [])
        self.assertEqual(len(c.problems), 1)
        self.assertIn('audit pagecache after-rmdir patched meminfo (expected line 3) no longer shows', c.problems[0])
        self.assertFalse(c.passed)

    def test_audit_entry_of_the_other_kernel_does_not_cover(self):
        c = self.compare(KNOWN.replace('audit pagecache after-rmdir patched', 'audit pagecache after-rmdir original'))
        self.assertEqual(self.row(c, 'pagecache', 'after-rmdir', '-', 'audit:meminfo').verdict, 'audit-fail')
        self.assertIn('no longer shows', c.problems[0])

    def test_audit_failure_on_original_fails(self):
        orig = fixture('original').replace('@@ audit basic start bounds ok RAM + swap 1610612736',
                                           '@@ audit basic start bounds fail oracle sock 18446744073709 > RAM + swap 1')
        c = self.compare(KNOWN, orig=orig)
        r = self.row(c, 'basic', 'start', '-', 'audit:bounds')
        self.assertEqual((r.original, r.patched, r.verdict, r.side), ('fail', 'ok', 'audit-fail', 'original'))
        self.assertFalse(c.passed)
        c = self.compare(KNOWN + 'audit basic start original bounds the original underflows too\n', orig=orig)
        self.assertTrue(c.passed, c.summary)

    def test_kmsg_fails_unless_covered(self):
        patched = fixture('patched').replace('@@ endscenario basic',
                                             '@@ kmsg basic WARNING: CPU: 0 PID: 1 at mm/page_counter.c:60\n'
                                             '@@ endscenario basic')
        c = self.compare(KNOWN, patched=patched)
        r = self.row(c, 'basic', '-', '-', 'kmsg')
        self.assertEqual((r.original, r.patched, r.verdict), (None, 'kmsg', 'audit-fail'))
        self.assertIn('patched: WARNING: CPU: 0 PID: 1 at mm/page_counter.c:60', r.reason)
        self.assertFalse(c.passed)
        self.assertIn('1 kmsg lines (0 known)', c.summary)
        c = self.compare(KNOWN + 'audit basic * patched kmsg the page counter underflow\n', patched=patched)
        self.assertEqual(self.row(c, 'basic', '-', '-', 'kmsg').verdict, 'audit-known')
        self.assertTrue(c.passed, c.summary)

    def test_missing_checkpoint_fails(self):
        text = fixture('patched')
        cut = text[:text.index('@@ cp basic end')] + text[text.index('@@ scenario pagecache'):]
        c = self.compare(KNOWN, patched=cut)
        r = self.row(c, 'basic', 'end', '-', 'checkpoint')
        self.assertEqual((r.original, r.patched, r.verdict), (33, None, 'missing'))
        self.assertIn('not reached on patched', r.reason)
        self.assertFalse(c.passed)
        self.assertIn('missing', c.summary)

    def test_dropped_checkpoint_says_so(self):
        text = fixture('original')
        c = self.compare(KNOWN, orig=text.replace('@@ endcp basic end lines=33', '@@ endcp basic end lines=3'))
        r = self.row(c, 'basic', 'end', '-', 'checkpoint')
        self.assertEqual((r.original, r.patched, r.verdict), (None, 33, 'missing'))
        self.assertIn('dropped on original: 33 data lines, "@@ endcp" says 3', r.reason)
        self.assertFalse(c.passed)
        self.assertTrue(any('1 checkpoints dropped' in n for n in c.notes))

    def test_missing_value_and_scenario_fail(self):
        text = fixture('patched')
        c = self.compare(KNOWN, patched=text.replace('oracle/a memory.events:oom 0\n', '').replace(
            '@@ endcp basic end lines=33', '@@ endcp basic end lines=32'))
        r = self.row(c, 'basic', 'end', 'oracle/a', 'memory.events:oom')
        self.assertEqual((r.original, r.patched, r.verdict), (0, None, 'missing'))
        self.assertFalse(c.passed)
        # the run cut short before its second scenario
        c = self.compare(KNOWN, patched=text[:text.index('@@ scenario pagecache')])
        r = self.row(c, 'pagecache', '-', '-', 'scenario')
        self.assertEqual((r.original, r.patched, r.verdict), ('pagecache.scn', None, 'missing'))
        self.assertIn('not played on patched', r.reason)
        self.assertFalse(c.passed)
        self.assertIn('the patched run (patched) has no "@@ end": it was cut short', c.problems[0])

    def test_runs_cut_alike_fail(self):
        """Both runs cut between the same two scenarios: nothing is missing
        on one side only, and still the comparison is incomplete."""
        text = {k: fixture(k)[:fixture(k).index('@@ scenario pagecache')] for k in ('original', 'patched')}
        c = self.compare(DELIBERATE, orig=text['original'], patched=text['patched'])
        self.assertEqual(c.counts['differ'] + c.counts['missing'], 0)
        self.assertEqual(len(c.problems), 2)
        self.assertFalse(c.passed)
        c = self.compare(DELIBERATE, orig='', patched='')
        self.assertIn('neither run played a scenario', c.problems[-1])
        self.assertFalse(c.passed)

    def test_act_outcome_difference_fails(self):
        patched = fixture('patched').replace('@@ act basic 4 line=6 ms=3 out=EBUSY cmd=rmdir oracle',
                                             '@@ act basic 4 line=6 ms=3 out=ok cmd=rmdir oracle')
        c = self.compare(KNOWN, patched=patched)
        r = self.row(c, 'basic', '-', '-', 'act:4')
        self.assertEqual((r.original, r.patched, r.verdict), ('EBUSY', 'ok', 'differs'))
        self.assertIn('line 6: rmdir oracle; ms 3/3', r.reason)
        self.assertFalse(c.passed)
        c = self.compare(KNOWN + 'finding basic - - act:4 the rmdir of a busy parent succeeds\n', patched=patched)
        self.assertEqual(self.row(c, 'basic', '-', '-', 'act:4').verdict, 'finding')
        self.assertTrue(c.passed, c.summary)

    def test_ms_is_not_compared(self):
        c = self.compare(KNOWN, patched=fixture('patched').replace('line=5 ms=41', 'line=5 ms=90000'))
        r = self.row(c, 'basic', '-', '-', 'act:3')
        self.assertEqual(r.verdict, 'same')
        self.assertIn('ms 40/90000', r.reason)

    def test_act_missing_after_a_must_failed(self):
        patched = fixture('patched').replace('@@ act basic 4 line=6 ms=3 out=EBUSY cmd=rmdir oracle\n', '').replace(
            '@@ endscenario basic rc=0 acts=4', '@@ endscenario basic rc=1 acts=3')
        c = self.compare(KNOWN, patched=patched)
        self.assertEqual(self.row(c, 'basic', '-', '-', 'act:4').verdict, 'missing')
        r = self.row(c, 'basic', '-', '-', 'scenario:rc')
        self.assertEqual((r.original, r.patched, r.verdict), (0, 1, 'differs'))
        self.assertFalse(c.passed)

    def test_a_scenario_that_fails_on_both_fails(self):
        text = {k: fixture(k).replace('@@ endscenario basic rc=0', '@@ endscenario basic rc=1')
                for k in ('original', 'patched')}
        c = self.compare(KNOWN, orig=text['original'], patched=text['patched'])
        self.assertEqual(self.row(c, 'basic', '-', '-', 'scenario:rc').verdict, 'same')
        self.assertIn('scenario basic ended rc=1 on both kernels', c.problems[0])
        self.assertFalse(c.passed)

    def test_other_commands_make_the_comparison_invalid(self):
        patched = fixture('patched').replace('cmd=write oracle/a memory.max 64M', 'cmd=write oracle/a memory.max 32M')
        c = self.compare(KNOWN, patched=patched)
        self.assertEqual(len(c.problems), 1)
        self.assertIn('scenario basic: act 2 is "write oracle/a memory.max 64M" (line 4) on original, '
                      '"write oracle/a memory.max 32M" (line 4) on patched', c.problems[0])
        self.assertIn('the comparison is invalid', c.problems[0])
        self.assertFalse(c.passed)

    def test_other_knobs_make_the_comparison_invalid(self):
        patched = fixture('patched').replace(' seed=1 ', ' seed=2 ', 1)
        c = self.compare(KNOWN, patched=patched)
        self.assertIn('"@@ run" seed=1 on original, seed=2 on patched', c.problems[0])
        self.assertFalse(c.passed)


class Refusals(Base):
    def test_kernel_mismatch_refused(self):
        o = scenario_run(os.path.join(self.tmp, 'o'), 'original')
        p = scenario_run(os.path.join(self.tmp, 'p'), 'patched')
        with self.assertRaisesRegex(oracle.OracleError, r'p/meta says kernel=patched, the first run folder must be '
                                    r'of original: give ORIG_RUN_DIR \(original\) first'):
            oracle.compare_dirs(p, o)
        with self.assertRaisesRegex(oracle.OracleError, 'o/meta says kernel=original, the second run folder must '
                                    'be of patched'):
            oracle.compare_dirs(o, o)
        r = subprocess.run([sys.executable, ORACLE, 'compare', p, o], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertNotIn('Traceback', r.stderr)
        self.assertIn('kernel=patched', r.stderr)
        # a noise run: original against original, when asked for
        c = oracle.compare_dirs(o, o, kernels=('original', 'original'))
        self.assertEqual(c.counts['differ'], 0)

    def test_not_a_scenario_run_refused(self):
        o = scenario_run(os.path.join(self.tmp, 'o'), 'original', job='soak')
        p = scenario_run(os.path.join(self.tmp, 'p'), 'patched')
        with self.assertRaisesRegex(oracle.OracleError, 'job=soak: not a scenario run'):
            oracle.compare_dirs(o, p)
        with self.assertRaisesRegex(oracle.OracleError, 'not a run folder'):
            oracle.compare_dirs(self.tmp, p)


class Files(Base):
    def test_sizes_and_percentages(self):
        self.assertEqual([oracle.parse_size(x) for x in ('0', '512', '256K', '2M', '1G', '3k', '4x', '-1', '2.5M')],
                         [0, 512, 256 << 10, 2 << 20, 1 << 30, 3 << 10, None, None, None])
        self.assertEqual([oracle.parse_percent(x) for x in ('5%', '0%', '2.5%', '5', '%')],
                         [0.05, 0.0, 0.025, None, None])

    def test_tolerances(self):
        path = self.file('tol', '# comment\n\nmemory.current:bytes 2M 5%   # trailing comment\n'
                         'memory.stat:pg* 2000 25%\nmemory.stat:* 1G 0%\nmemory.stat:anon 0 0%\n')
        tols = oracle.read_tolerances(path)
        self.assertEqual(tols[0], oracle.Tolerance('memory.current:bytes', 2 << 20, 0.05, 3))
        self.assertEqual(oracle.tolerance_for(tols, 'memory.stat:pgfault').pattern, 'memory.stat:pg*')
        # the first match wins: anon's own line comes too late
        self.assertEqual(oracle.tolerance_for(tols, 'memory.stat:anon').abs, 1 << 30)
        self.assertIsNone(oracle.tolerance_for(tols, 'memory.events:oom_kill'))
        t = tols[0]
        self.assertTrue(oracle.agrees(100 << 20, (100 << 20) + (2 << 20), t))     # ABS, at its edge
        self.assertTrue(oracle.agrees(100 << 20, 105 << 20, t))                    # 5% of the larger
        self.assertFalse(oracle.agrees(100 << 20, 106 << 20, t))
        self.assertTrue(oracle.agrees(-100, -104, oracle.Tolerance('*', 0, 0.05, 1)))    # of the magnitudes
        self.assertFalse(oracle.agrees(-100, 100, oracle.Tolerance('*', 0, 0.05, 1)))
        self.assertFalse(oracle.agrees(0, 1, oracle.Tolerance('*', 0, 0.0, 1)))
        for text, why in (('memory.current:bytes 2M\n', 'is not "PATTERN ABS REL"'),
                          ('memory.current:bytes 2X 5%\n', 'ABS "2X" is not an integer'),
                          ('memory.current:bytes 2M 5\n', 'REL "5" is not a percentage')):
            with self.assertRaisesRegex(oracle.OracleError, f'tol:1: .*{why}'):
                oracle.read_tolerances(self.file('tol', text))

    def test_unmatched_key_is_compared_exactly(self):
        c = self.compare(KNOWN, tolerances=self.file('tol', 'memory.stat:shmem 8M 0%\n'))
        self.assertEqual(self.row(c, 'basic', 'end', 'oracle/a', 'memory.current:bytes').verdict, 'differs')
        self.assertIn('compared exactly', self.row(c, 'basic', 'end', 'oracle/a', 'memory.current:bytes').reason)
        self.assertEqual(self.row(c, 'pagecache', 'after-rmdir', 'oracle', 'memory.stat:shmem').verdict, 'agrees')

    def test_expected(self):
        es = oracle.read_expected(self.file('exp', '# c\n' + KNOWN + 'finding bug#2 * * * names may hold a # sign\n'))
        self.assertEqual([e.kind for e in es], ['deliberate', 'finding', 'audit', 'finding'])
        self.assertEqual(es[2].cgroup, 'patched')
        self.assertEqual(es[2].key, 'meminfo')
        self.assertEqual(es[3].scenario, 'bug#2')
        self.assertEqual(es[3].reason, 'names may hold a # sign')
        for text, why in (('finding a b c d\n', 'every entry says why'),
                          ('bogus a b c d e\n', '"bogus" is not deliberate, lower, finding, intermittent or audit'),
                          ('audit a b debug kmsg why\n', 'KERNEL "debug" is not original, patched or \\*')):
            with self.assertRaisesRegex(oracle.OracleError, f'exp:1: .*{why}'):
                oracle.read_expected(self.file('exp', text))

    def test_lower_covers_only_lower(self):
        """A "lower" entry makes a lower patched value deliberate; a higher one
        (more dying cgroups: a leak) still differs."""
        e = oracle.Entry('lower', '*', '*', '*', 'cgroup.stat:nr_dying_*', 'fewer is the point', 1)
        row = oracle.Row('s', 'cp', 'P', 'cgroup.stat:nr_dying_descendants', 5, 0, 'differs', '', '')
        self.assertTrue(oracle.matches(e, row))
        self.assertFalse(oracle.matches(e, row._replace(original=0, patched=5)))
        rows, problems = oracle.apply_expected([row._replace(original=0, patched=5)], [], [e], {'s'})
        self.assertEqual(rows[0].verdict, 'differs')
        self.assertEqual(problems, [])      # never strict: nothing to keep finding

    def test_intermittent_rides_on_a_finding(self):
        """An intermittent entry covers its rows and is not strict, but fails
        once no finding of its scenario shows."""
        f = oracle.Entry('finding', 's', '*', 'P', 'memory.current:bytes', 'the bug', 1)
        i = oracle.Entry('intermittent', 's', '-', '-', 'act:*', 'its kill, some plays', 2)
        diff = oracle.Row('s', 'cp', 'P', 'memory.current:bytes', 0, 9, 'differs', '', '')
        act = oracle.Row('s', '-', '-', 'act:7', 'ok', 'signal=9', 'differs', '', '')
        rows, problems = oracle.apply_expected([diff, act], [], [f, i], {'s'})
        self.assertEqual([r.verdict for r in rows], ['finding', 'finding'])
        self.assertEqual(problems, [])
        rows, problems = oracle.apply_expected([diff], [], [f, i], {'s'})      # not this time: fine
        self.assertEqual(problems, [])
        rows, problems = oracle.apply_expected([act], [], [f, i], {'s'})       # the bug it rides on is gone
        self.assertEqual(len(problems), 2, problems)
        self.assertIn('rides on no finding of scenario s that still shows', problems[1])

    def test_repository_files(self):
        """scenarios/tolerances and scenarios/expected parse, with the figures
        they started with."""
        tols = oracle.read_tolerances(os.path.join(TOP, 'scenarios', 'tolerances'))
        t = {x.pattern: (x.abs, x.rel) for x in tols}
        self.assertEqual(t['memory.current:bytes'], (2 << 20, 0.05))
        self.assertEqual(t['memory.kmem.tcp.usage_in_bytes:bytes'], (256 << 10, 0.10))
        self.assertEqual(t['memory.stat:percpu'], (512 << 10, 0.25))
        self.assertEqual(t['cgroup.stat:*'], (0, 0.0))
        self.assertEqual(len(tols), 21)
        # the specific lines come before the catch-alls that would hide them
        self.assertEqual(oracle.tolerance_for(tols, 'memory.events:oom_kill').abs, 0)
        self.assertEqual(oracle.tolerance_for(tols, 'memory.stat:pgscan').abs, 2000)
        # v1's hierarchical event counts too, not only cgroup2's names
        self.assertEqual(oracle.tolerance_for(tols, 'memory.stat:total_pgscan').abs, 2000)
        self.assertEqual(oracle.tolerance_for(tols, 'memory.stat:total_workingset_refault_file').abs, 1000)
        es = oracle.read_expected(os.path.join(TOP, 'scenarios', 'expected'))
        self.assertIn(oracle.Entry('lower', '*', '*', '*', 'cgroup.stat:nr_dying_*',
                                   'the series releases removed memory cgroups: fewer dying descendants is its '
                                   'purpose (more would be a leak, and differs)', es[1].line), es)


class Cli(Base):
    def run_cli(self, *args, env=None):
        return subprocess.run([sys.executable, ORACLE, *args], capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, **(env or {})))

    def dirs(self):
        return (scenario_run(os.path.join(self.tmp, 'o'), 'original'),
                scenario_run(os.path.join(self.tmp, 'p'), 'patched'))

    def test_table_summary_exit_and_json(self):
        o, p = self.dirs()
        out = os.path.join(self.tmp, 'out.json')
        r = self.run_cli('compare', o, p, '--expected', self.file('exp', DELIBERATE), '--json', out)
        self.assertEqual(r.returncode, 1, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[-1], 'oracle: 2 scenarios, 97 values compared: 3 differ (0 known findings, '
                         '2 deliberate), 0 missing, 1 audit failures (0 known), 0 kmsg lines (0 known): FAIL')
        self.assertTrue(lines[0].startswith('  scenario   checkpoint   cgroup  key'), lines[0])
        self.assertEqual(lines[1], 'scenario pagecache')
        shmem = [x for x in lines if 'memory.stat:shmem' in x]
        self.assertEqual(len(shmem), 1)
        self.assertRegex(shmem[0], r'^  pagecache +after-rmdir +oracle +memory.stat:shmem +0 +4194304 +\+4194304 '
                         r'+differs ')
        self.assertFalse(any(re.search(r' (same|agrees)( |$)', x) for x in lines))
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual(doc['summary'], lines[-1])
        self.assertFalse(doc['passed'])
        self.assertEqual(len(doc['rows']), 98)
        self.assertEqual(doc['counts']['deliberate'], 2)
        self.assertEqual(set(doc['rows'][0]), {'scenario', 'checkpoint', 'cgroup', 'key', 'original', 'patched',
                                               'verdict', 'reason', 'side'})
        self.assertEqual([f for f in os.listdir(self.tmp) if f.startswith('out.json')], ['out.json'])
        r = self.run_cli('compare', o, p, '--expected', self.file('exp', KNOWN), '--all')
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertTrue(r.stdout.splitlines()[-1].endswith(': PASS'))
        # 79 values, 7 acts and 2 scenario ends are the same; 6 values agree
        self.assertEqual(sum(bool(re.search(r'  same(  |$)', x)) for x in r.stdout.splitlines()), 88)
        self.assertEqual(sum(bool(re.search(r'  agrees  ', x)) for x in r.stdout.splitlines()), 6)
        # grouped by scenario: a line that names it, then its rows
        lines = r.stdout.splitlines()
        groups = [i for i, x in enumerate(lines) if x.startswith('scenario ')]
        self.assertEqual([lines[i] for i in groups], ['scenario basic', 'scenario pagecache'])
        self.assertEqual({x.split()[0] for x in lines[groups[0] + 1:groups[1]]}, {'basic'})
        self.assertEqual(groups[1] - groups[0] - 1, 4 + 2 * 33 + 1)

    def test_bad_files_are_errors_not_tracebacks(self):
        o, p = self.dirs()
        r = self.run_cli('compare', o, p, '--tolerances', self.file('tol', 'x 1\n'))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('tol:1: "x 1" is not "PATTERN ABS REL"', r.stderr)
        r = self.run_cli('compare', o, p, '--expected', os.path.join(self.tmp, 'none'))
        self.assertIn('oracle: ', r.stderr)
        self.assertNotIn('Traceback', r.stderr)

    def test_store(self):
        o, p = self.dirs()
        db_path = os.path.join(self.tmp, 'runs.sqlite')
        exp = self.file('exp', KNOWN)
        env = {'RUNS_DB': db_path}
        r = self.run_cli('compare', '--store', o, p, '--expected', exp, env=env)
        self.assertIn('no runs database', r.stderr)
        db = store.connect(db_path)
        self.addCleanup(db.close)
        ingest.ingest(db, o, db_path=db_path)
        r = self.run_cli('compare', '--store', o, p, '--expected', exp, env=env)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f'{p} is not in the runs database: store it first (db/ingest.py {p})', r.stderr)
        self.assertEqual(db.execute('SELECT count(*) FROM oracle_compare').fetchone()[0], 0)
        ingest.ingest(db, p, db_path=db_path)
        for _ in range(2):      # the second replaces the first
            r = self.run_cli('compare', '--store', o, p, '--expected', exp, env=env)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn('oracle: stored as the comparison of runs 1 and 2', r.stdout)
            self.assertEqual(db.execute('SELECT count(*) FROM oracle_compare').fetchone()[0], 98)
            self.assertEqual(db.execute('SELECT orig_run_id, patched_run_id, passed '
                                        'FROM oracle_comparisons').fetchall(), [(1, 2, 1)])
        self.assertEqual(db.execute("SELECT original, patched, verdict FROM oracle_latest WHERE scenario = 'pagecache' "
                                    "AND cgroup = 'oracle' AND key = 'memory.stat:shmem'").fetchall(),
                         [(0, 4194304, 'finding')])
        self.assertEqual(db.execute("SELECT original, patched FROM oracle_compare WHERE key = 'act:4'").fetchone(),
                         ('EBUSY', 'EBUSY'))
        self.assertEqual(ingest.oracle_problems(db), [])

    def test_latest_is_the_newest_comparison(self):
        """oracle_latest: per key, the rows of the newest comparison stored."""
        db_path = os.path.join(self.tmp, 'runs.sqlite')
        db = store.connect(db_path)
        self.addCleanup(db.close)
        exp = oracle.read_expected(self.file('exp', KNOWN))
        tols = oracle.read_tolerances(self.tolerances)
        pairs = []
        for night, shmem in ((1, 4194304), (2, 0)):
            o = scenario_run(os.path.join(self.tmp, f'o{night}'), 'original', started=f'2026-12-0{night}T01:00:00Z')
            p = scenario_run(os.path.join(self.tmp, f'p{night}'), 'patched', started=f'2026-12-0{night}T02:00:00Z',
                             text=fixture('patched').replace('oracle memory.stat:shmem 4194304',
                                                             f'oracle memory.stat:shmem {shmem}'))
            for d in (o, p):
                ingest.ingest(db, d, db_path=db_path)
            pairs.append(oracle.store_comparison(db, oracle.compare_dirs(o, p, tols, exp)))
        db.execute("UPDATE oracle_comparisons SET stored = '2026-12-01T00:00:00Z' WHERE orig_run_id = 1")
        got = db.execute("SELECT patched, verdict, orig_run_id FROM oracle_latest WHERE scenario = 'pagecache' "
                         "AND cgroup = 'oracle' AND key = 'memory.stat:shmem'").fetchall()
        self.assertEqual(got, [(0, 'same', pairs[1][0])])
        self.assertEqual(db.execute('SELECT count(*) FROM oracle_latest').fetchone()[0],
                         db.execute('SELECT count(*) FROM oracle_compare WHERE orig_run_id = ?',
                                    (pairs[1][0],)).fetchone()[0])
        # storing a run again (--replace) takes its comparisons with it
        with contextlib.redirect_stderr(io.StringIO()):
            ingest.ingest(db, os.path.join(self.tmp, 'p2'), replace=True, db_path=db_path)
        self.assertEqual(db.execute('SELECT count(*) FROM oracle_comparisons').fetchone()[0], 1)
        self.assertEqual(ingest.oracle_problems(db), [])

    def played_twice(self, kernel, change=None):
        """The fixture of kernel with its basic scenario played twice; change
        (old, new) replaces a line in the second play only."""
        text = fixture(kernel)
        start = text.index('@@ scenario basic')
        end = text.index('@@ scenario pagecache')
        second = text[start:end]
        if change:
            assert change[0] in second
            second = second.replace(change[0], change[1])
        return text[:end] + second + text[end:]

    def compare_texts(self, to, tp):
        self.pairs = getattr(self, 'pairs', 0) + 1
        o = scenario_run(os.path.join(self.tmp, f'o-{self.pairs}'), 'original', text=to)
        p = scenario_run(os.path.join(self.tmp, f'p-{self.pairs}'), 'patched', text=tp)
        return oracle.compare_dirs(o, p, oracle.read_tolerances(self.tolerances),
                                   oracle.read_expected(self.file('exp2', KNOWN)))

    def test_plays_compared_as_ranges(self):
        """A scenario played twice is one scenario: its values are compared as
        ranges, shown as medians; ranges that meet agree, ranges apart beyond
        the tolerance differ."""
        base = 'oracle/a memory.current:bytes 0'
        # original 0 and 8M, patched 0 and 0: patched within the reference's range
        c = self.compare_texts(self.played_twice('original', (base, 'oracle/a memory.current:bytes 8388608')),
                               self.played_twice('patched'))
        rows = [r for r in c.rows if r.scenario == 'basic' and r.cgroup == 'oracle/a'
                and r.key == 'memory.current:bytes' and r.checkpoint == 'start']
        self.assertEqual([(r.original, r.patched, r.verdict) for r in rows], [(0, 0, 'agrees')])
        self.assertIn("within the reference's range: original 0..8388608, patched 0..0 (2 and 2 plays)",
                      rows[0].reason)
        # the other way round: one play of patched of two outside the reference's 0..0
        c = self.compare_texts(self.played_twice('original'),
                               self.played_twice('patched', (base, 'oracle/a memory.current:bytes 8388608')))
        rows = [r for r in c.rows if r.scenario == 'basic' and r.cgroup == 'oracle/a'
                and r.key == 'memory.current:bytes' and r.checkpoint == 'start']
        self.assertEqual([r.verdict for r in rows], ['differs'])
        self.assertIn("1 of 2 plays outside the reference's range", rows[0].reason)
        self.assertFalse([r for r in c.rows if '#' in r.scenario])
        # both plays of patched 8M, of original 0: apart beyond 2M
        two = 'oracle/a memory.current:bytes 8388608'
        tp = self.played_twice('patched', (base, two)).replace(base, two, 1)
        c = self.compare_texts(self.played_twice('original'), tp)
        rows = [r for r in c.rows if r.scenario == 'basic' and r.cgroup == 'oracle/a'
                and r.key == 'memory.current:bytes' and r.checkpoint == 'start']
        self.assertEqual([(r.original, r.patched, r.verdict) for r in rows], [(0, 8388608, 'differs')])
        self.assertIn("2 of 2 plays outside the reference's range beyond", rows[0].reason)
        self.assertFalse(c.passed)

    def test_a_bad_boot_fails(self):
        """A boot whose console had a kernel report (boot.sh's verdict=bad)
        fails the comparison, though no scenario saw it."""
        o = scenario_run(os.path.join(self.tmp, 'bad-o'), 'original')
        p = scenario_run(os.path.join(self.tmp, 'bad-p'), 'patched')
        with open(os.path.join(p, 'meta')) as f:
            meta = f.read()
        with open(os.path.join(p, 'meta'), 'w') as f:
            f.write(meta.replace('verdict=clean', 'verdict=bad') if 'verdict=' in meta else meta + 'verdict=bad\n')
        c = oracle.compare_dirs(o, p, oracle.read_tolerances(self.tolerances),
                                oracle.read_expected(self.file('exp-bad', KNOWN)))
        self.assertFalse(c.passed)
        self.assertTrue([x for x in c.problems if "the patched boot's verdict is bad" in x], c.problems)

    def test_outcomes_across_plays(self):
        """An action's outcomes across plays: patched's within the reference's
        agree, one never seen on the reference differs (even in one play of
        two), a reference that gave several is unstable: all but the first fail."""
        act = 'out=ok cmd=run oracle/a anon 16M'
        c = self.compare_texts(self.played_twice('original', (act, act.replace('out=ok', 'out=signal=9'))),
                               self.played_twice('patched'))
        row = [r for r in c.rows if r.scenario == 'basic' and r.key == 'act:3'][0]
        self.assertEqual((row.original, row.patched, row.verdict), ('ok,signal=9', 'ok', 'unstable'))
        self.assertFalse(c.passed)
        c = self.compare_texts(self.played_twice('original'),
                               self.played_twice('patched', (act, act.replace('out=ok', 'out=signal=9'))))
        row = [r for r in c.rows if r.scenario == 'basic' and r.key == 'act:3'][0]
        self.assertEqual((row.original, row.patched, row.verdict), ('ok', 'ok,signal=9', 'differs'))
        self.assertIn('patched gave signal=9, never seen on original', row.reason)
        killed = act.replace('out=ok', 'out=signal=9')
        tp = self.played_twice('patched', (act, killed)).replace(act, killed, 1)
        c = self.compare_texts(self.played_twice('original'), tp)
        row = [r for r in c.rows if r.scenario == 'basic' and r.key == 'act:3'][0]
        self.assertEqual((row.original, row.patched, row.verdict), ('ok', 'signal=9', 'differs'))

    def test_plays_counted_alike(self):
        c = self.compare_texts(self.played_twice('original'), fixture('patched'))
        self.assertIn('scenario basic was played 2 times on original, 1 on patched: play both with the same '
                      'ORACLE_REPEAT', c.problems)

    def test_dashboard_table(self):
        """The dashboard's oracle section: the newest comparison's rows that
        are not the same on both kernels, with their verdicts."""
        db_path = os.path.join(self.tmp, 'runs.sqlite')
        db = store.connect(db_path)
        self.addCleanup(db.close)
        o, p = self.dirs()
        for d in (o, p):
            ingest.ingest(db, d, db_path=db_path)
        exp = oracle.read_expected(self.file('exp', KNOWN))
        oracle.store_comparison(db, oracle.compare_dirs(o, p, oracle.read_tolerances(self.tolerances), exp))
        import report  # noqa: E402  (after oracle: see the imports above)
        page = report.Page(self.tmp)
        report.section_oracle(page, report.Store(db))
        html = '\n'.join(page.parts)
        self.assertIn('runs 1 (original) and 2 (patched', html)
        self.assertIn('<td>memory.stat:shmem</td><td>0</td><td>4194304</td>', html)
        self.assertIn('>finding</td>', html)
        self.assertNotIn('>same</td>', html)
        empty = store.connect(os.path.join(self.tmp, 'empty.sqlite'))
        self.addCleanup(empty.close)
        page = report.Page(self.tmp)
        report.section_oracle(page, report.Store(empty))
        self.assertIn('No comparison stored yet', '\n'.join(page.parts))


if __name__ == '__main__':
    unittest.main()
