import contextlib
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'verdict'))
import tap  # noqa: E402

FIX = os.path.join(os.path.dirname(__file__), 'fixtures')

RESULTS = """\
@@ boot kernel=6.12.118 uptime=1.10 job=kselftest mem_kb=1000000 cpus=2
@@ begin test_kmem
TAP version 13
1..3
ok 1 test_kmem_basic
not ok 2 test_kmem_memcg_deletion
ok 3 # SKIP test_percpu_basic
# Totals: pass:1 fail:1 xfail:0 xpass:0 skip:1 error:0
@@ end test_kmem rc=1 secs=12
@@ done rc=1
"""


class ParseTap(unittest.TestCase):
    def test_lines(self):
        self.assertEqual(tap.parse_tap_line('ok 1 test_a'), ('pass', 'test_a', ''))
        self.assertEqual(tap.parse_tap_line('not ok 2 test_b'), ('fail', 'test_b', ''))
        self.assertEqual(tap.parse_tap_line('ok 3 # SKIP test_c'), ('skip', 'test_c', ''))
        self.assertEqual(tap.parse_tap_line('ok 4 test_d # SKIP no swap'), ('skip', 'test_d', 'no swap'))
        self.assertEqual(tap.parse_tap_line('ok 5 # SKIP test_e (not in MEMCG_REPARENT_ONLY)'),
                         ('skip', 'test_e', 'not in MEMCG_REPARENT_ONLY'))
        self.assertEqual(tap.parse_tap_line('ok 5 - test_e'), ('pass', 'test_e', ''))
        self.assertIsNone(tap.parse_tap_line('# ok 1 nested'))
        self.assertIsNone(tap.parse_tap_line('okay'))

    def test_results(self):
        res, done = tap.parse_results(RESULTS.splitlines())
        self.assertTrue(done)
        self.assertEqual([(r.key, r.outcome) for r in res], [
            ('test_kmem:test_kmem_basic', 'pass'),
            ('test_kmem:test_kmem_memcg_deletion', 'fail'),
            ('test_kmem:test_percpu_basic', 'skip')])

    def test_timeout_and_missing_subtests_fail(self):
        lines = ['@@ begin t', '1..3', 'ok 1 a', '@@ end t rc=124 secs=900', '@@ done rc=1']
        res, _ = tap.parse_results(lines)
        self.assertEqual(res[-1].outcome, 'fail')
        self.assertIn('timed out', res[-1].reason)
        lines = ['@@ begin t', '1..3', 'ok 1 a', '@@ end t rc=0 secs=9', '@@ done rc=0']
        res, _ = tap.parse_results(lines)
        self.assertEqual(res[-1].outcome, 'fail')
        self.assertIn('1 of 3', res[-1].reason)

    def test_result_glued_to_a_message(self):
        # test_zswap in 6.12 prints a diagnostic without its newline.
        lines = ['@@ begin t', '1..2', 'ok 1 a', '# zswpwb_after is 0 while wb is enablednot ok 2 b',
                 '@@ end t rc=1 secs=3', '@@ done rc=1']
        res, _ = tap.parse_results(lines)
        self.assertEqual([(r.key, r.outcome) for r in res], [('t:a', 'pass'), ('t:b', 'fail')])

    def test_whole_program_skip(self):
        lines = ['@@ begin t', '1..0 # SKIP memory hugetlb accounting is disabled',
                 '@@ end t rc=4 secs=0', '@@ done rc=0']
        res, _ = tap.parse_results(lines)
        self.assertEqual([(r.key, r.outcome, r.reason) for r in res],
                         [('t:(binary)', 'skip', 'memory hugetlb accounting is disabled')])

    def test_truncated_run(self):
        # The guest died in the middle of a test: no end, no done.
        res, done = tap.parse_results(['@@ begin t', '1..2', 'ok 1 a'])
        self.assertFalse(done)
        self.assertEqual([(r.key, r.outcome) for r in res], [('t:a', 'pass'), ('t:(binary)', 'fail')])


def write_known(case, text):
    """A known-issues file holding text, removed when the test case ends."""
    f = tempfile.NamedTemporaryFile('w', suffix='.known', delete=False)
    f.write(text)
    f.close()
    case.addCleanup(os.unlink, f.name)
    return f.name


def known(key, kind='broken', kernels=None, until='2999-12-31', reason='x', cpus=0):
    import datetime
    return {key: tap.Known(kind, key, kernels, datetime.date.fromisoformat(until), reason, cpus)}


def run(*body, rc=0, test='t', attempt=None):
    head = f'@@ begin {test}' + (f' attempt={attempt}' if attempt else '')
    return [head, *body, f'@@ end {test} rc={rc} secs=1']


class BinaryVerdict(unittest.TestCase):
    """A binary's results count only when its TAP is whole and its exit
    status agrees (qemu-run/verdict/tap.py binary_verdict)."""

    def outcomes(self, lines):
        res, _ = tap.parse_results(lines + ['@@ done rc=0'])
        return [(r.key, r.outcome) for r in res], [r.reason for r in res if r.subtest == '(binary)' and r.outcome == 'fail']

    def test_whole_and_agreeing_passes(self):
        got, why = self.outcomes(run('1..2', 'ok 1 a', 'ok 2 b'))
        self.assertEqual(got, [('t:a', 'pass'), ('t:b', 'pass')])
        self.assertEqual(why, [])
        # A failure with exit status 1, a skip-only run with KSFT_SKIP: agree.
        got, _ = self.outcomes(run('1..2', 'ok 1 a', 'not ok 2 b', rc=1))
        self.assertEqual(got, [('t:a', 'pass'), ('t:b', 'fail')])
        got, _ = self.outcomes(run('1..1', 'ok 1 # SKIP a', rc=4))
        self.assertEqual(got, [('t:a', 'skip')])

    def test_crash_after_its_ok_lines_fails(self):
        got, why = self.outcomes(run('1..2', 'ok 1 a', 'ok 2 b', rc=139))
        self.assertIn(('t:(binary)', 'fail'), got)
        self.assertIn('SIGSEGV', why[0])

    def test_no_output_and_exit_0_fails(self):
        got, why = self.outcomes(run(rc=0))
        self.assertEqual(got, [('t:(binary)', 'fail')])
        self.assertIn('no TAP plan', why[0])

    def test_results_without_a_plan_fail(self):
        got, why = self.outcomes(run('ok 1 a', rc=0))
        self.assertIn(('t:(binary)', 'fail'), got)
        self.assertIn('no TAP plan', why[0])

    def test_plan_from_qemu_run_plans(self):
        # 6.12's upstream tests print no plan: qemu-run/verdict/plans gives it.
        res, _ = tap.parse_results(run('ok 1 a', 'ok 2 b') + ['@@ done rc=0'])
        self.assertIn('t:(binary)', [r.key for r in res])
        res, _, _, _ = tap.parse_run(run('ok 1 a', 'ok 2 b') + ['@@ done rc=0'], {'t': 2})
        self.assertEqual([(r.key, r.outcome) for r in res], [('t:a', 'pass'), ('t:b', 'pass')])
        res, _, _, _ = tap.parse_run(run('ok 1 a', rc=0) + ['@@ done rc=0'], {'t': 2})
        self.assertIn('ran 1 of 2', [r.reason for r in res if r.subtest == '(binary)'][0])

    def test_repo_plans_parse(self):
        plans = tap.read_plans(os.path.join(os.path.dirname(__file__), '..', 'verdict', 'plans'))
        self.assertEqual(plans['test_memcontrol'], 14)
        self.assertEqual(plans['test_hugetlb_memcg'], 1)

    def test_fewer_results_than_planned_fail(self):
        _, why = self.outcomes(run('1..3', 'ok 1 a', rc=0))
        self.assertIn('ran 1 of 3', why[0])

    def test_result_number_outside_the_plan_fails(self):
        _, why = self.outcomes(run('1..2', 'ok 1 a', 'ok 2 b', 'ok 7 c', rc=0))
        self.assertIn('result 7 is not in the plan 1..2', why[0])

    def test_repeated_result_number_fails(self):
        _, why = self.outcomes(run('1..2', 'ok 1 a', 'ok 1 b', rc=0))
        self.assertIn('repeated', why[0])

    def test_nonzero_exit_without_a_failed_subtest_fails(self):
        _, why = self.outcomes(run('1..1', 'ok 1 a', rc=1))
        self.assertIn('exit status 1 although no subtest failed', why[0])

    def test_whole_program_skip_is_no_failure(self):
        got, why = self.outcomes(run('1..0 # SKIP no hugetlb', rc=4))
        self.assertEqual((got, why), ([('t:(binary)', 'skip')], []))


class Flaky(unittest.TestCase):
    """Reruns of a flaky subtest (guest init: '@@ begin T attempt=N')."""
    KNOWN = known('t:b', 'flaky')

    def verdict(self, lines, kernel='original', kn=None, expect=None):
        return tap.judge(lines + ['@@ done rc=1'], kernel, self.KNOWN if kn is None else kn, expect or {})

    def test_passes_when_a_rerun_passes(self):
        v = self.verdict(run('1..2', 'ok 1 a', 'not ok 2 b', rc=1)
                         + run('1..2', 'not ok 1 a', 'ok 2 b', rc=1, attempt=2))
        self.assertEqual([(r.key, r.outcome) for r in v.results], [('t:a', 'pass'), ('t:b', 'pass')])
        self.assertEqual(v.surprises, [])
        self.assertEqual(v.counts['flaky'], [('t:b', 1, 2)])
        self.assertIn('flaky: t:b (1 of 2 failed)', tap.summary_line('original', v))

    def test_fails_when_every_attempt_fails(self):
        v = self.verdict(run('1..2', 'ok 1 a', 'not ok 2 b', rc=1)
                         + run('1..2', 'ok 1 a', 'not ok 2 b', rc=1, attempt=2)
                         + run('1..1', rc=139, attempt=3))
        self.assertEqual(v.surprises, [('t:b', 'pass', 'fail')])
        self.assertIn('failed 3 of 3', [r.reason for r in v.results if r.key == 't:b'][0])
        self.assertIn('flaky: t:b (3 of 3 failed)', tap.summary_line('original', v))
        self.assertEqual(len(v.notes), 1)

    def test_a_rerun_never_passes_a_subtest_that_is_not_flaky(self):
        v = self.verdict(run('1..2', 'not ok 1 a', 'not ok 2 b', rc=1)
                         + run('1..2', 'ok 1 a', 'ok 2 b', rc=0, attempt=2))
        self.assertEqual([(r.key, r.outcome) for r in v.results], [('t:a', 'fail'), ('t:b', 'pass')])
        self.assertEqual(v.surprises, [('t:a', 'pass', 'fail')])

    def test_flaky_on_other_kernels_only(self):
        kn = known('t:b', 'flaky', kernels={'patched'})
        v = self.verdict(run('1..2', 'ok 1 a', 'not ok 2 b', rc=1)
                         + run('1..2', 'ok 1 a', 'ok 2 b', rc=0, attempt=2), kn=kn)
        self.assertEqual(v.surprises, [('t:b', 'pass', 'fail')])

    def test_flaky_list_for_the_guest(self):
        kn = dict(known('t:b', 'flaky'), **known('t:c', 'broken'), **known('t:d', 'flaky', until='2000-01-01'))
        self.assertEqual(tap.flaky_keys(kn, 'original'), ['t:b'])

    def test_repeat_table_counts_first_attempts(self):
        v = self.verdict(run('1..2', 'ok 1 a', 'not ok 2 b', rc=1)
                         + run('1..2', 'ok 1 a', 'ok 2 b', rc=0, attempt=2)
                         + run('1..2', 'ok 1 a', 'ok 2 b', rc=0))
        row = [ln for ln in tap.repeat_counts(v.results, 'original', {}) if 't:b' in ln][0]
        self.assertIn('pass 1, fail 1', row)


class KnownIssues(unittest.TestCase):
    def test_format(self):
        k = tap.read_known(write_known(self, '# c\n\nflaky  t:a  all  2030-01-01  it races\n'
                                      'needs-cpus=14 t:b original,patched 2030-01-01 cpus\n'))
        self.assertEqual((k['t:a'].kind, k['t:a'].kernels, k['t:a'].reason), ('flaky', None, 'it races'))
        self.assertEqual((k['t:b'].kind, k['t:b'].cpus, k['t:b'].kernels),
                         ('needs-cpus', 14, {'original', 'patched'}))

    def test_bad_lines_name_themselves(self):
        for text, why in (('flaky t:a all 2030-01-01\n', 'too few columns'),
                          ('sometimes t:a all 2030-01-01 r\n', 'unknown kind'),
                          ('flaky t:a all 2030-13-01 r\n', 'not a date'),
                          ('flaky t:a weird 2030-01-01 r\n', 'unknown kernel'),
                          ('flaky ta all 2030-01-01 r\n', 'not test:subtest'),
                          ('needs-cpus=x t:a all 2030-01-01 r\n', 'number of CPUs'),
                          ('flaky t:a all 2030-01-01 r\nbroken t:a all 2030-01-01 r\n', 'listed twice')):
            with self.assertRaises(SystemExit) as e:
                tap.read_known(write_known(self, text))
            self.assertIn(why, str(e.exception))
            self.assertIn(':1:' if 'twice' not in why else ':2:', str(e.exception))

    def test_expired_entry_no_longer_turns_a_failure_into_a_skip(self):
        import datetime
        kn = known('t:b', 'broken', until='2026-01-01')
        lines = run('1..2', 'ok 1 a', 'not ok 2 b', rc=1) + ['@@ done rc=1']
        v = tap.judge(lines, 'original', kn, {}, today=datetime.date(2026, 1, 1))
        self.assertEqual(v.surprises, [])
        v = tap.judge(lines, 'original', kn, {}, today=datetime.date(2026, 1, 2))
        self.assertEqual(v.surprises, [('t:b', 'pass', 'fail')])
        self.assertIn('expired known issues: t:b (until 2026-01-01)', tap.summary_line('original', v))

    def test_needs_cpus(self):
        kn = known('t:b', 'needs-cpus', cpus=14)
        body = run('1..2', 'ok 1 a', 'not ok 2 b', rc=1) + ['@@ done rc=1']
        v = tap.judge(['@@ boot kernel=x cpus=2'] + body, 'original', kn, {})
        self.assertEqual(v.surprises, [])
        self.assertIn('needs 14 CPUs, this boot had 2', [r.reason for r in v.results if r.key == 't:b'][0])
        # On a boot with enough CPUs it must pass.
        v = tap.judge(['@@ boot kernel=x cpus=14'] + body, 'original', kn, {})
        self.assertEqual(v.surprises, [('t:b', 'pass', 'fail')])

    def test_needs_cpus_reruns_on_its_boot(self):
        kn = known('t:b', 'needs-cpus', cpus=14)
        self.assertEqual(tap.flaky_keys(kn, 'original'), [])
        self.assertEqual(tap.flaky_keys(kn, 'original', cpus=2), [])
        self.assertEqual(tap.flaky_keys(kn, 'original', cpus=14), ['t:b'])
        fail = run('1..2', 'ok 1 a', 'not ok 2 b', rc=1)
        again = run('1..2', 'ok 1 a', 'ok 2 b', rc=0, attempt=2)
        # On the 14-CPU boot a rerun that passes makes it flaky, counted.
        v = tap.judge(['@@ boot kernel=x cpus=14'] + fail + again + ['@@ done rc=0'], 'original', kn, {})
        self.assertEqual(v.surprises, [])
        self.assertIn('flaky: t:b (1 of 2 failed)', tap.summary_line('original', v))
        # Every attempt failed: a failure, never a skip.
        v = tap.judge(['@@ boot kernel=x cpus=14'] + fail + run('1..2', 'ok 1 a', 'not ok 2 b', rc=1, attempt=2)
                      + ['@@ done rc=1'], 'original', kn, {})
        self.assertEqual(v.surprises, [('t:b', 'pass', 'fail')])
        # On a smaller boot no rerun is folded in: the first attempt is a skip.
        v = tap.judge(['@@ boot kernel=x cpus=2'] + fail + again + ['@@ done rc=0'], 'original', kn, {})
        self.assertEqual([r.outcome for r in v.results if r.key == 't:b'], ['skip'])


class Summarize(unittest.TestCase):
    def results(self):
        return tap.parse_results(RESULTS.splitlines())[0]

    def test_unlisted_failure_is_a_surprise(self):
        _, c, s = tap.summarize(self.results(), 'original', {}, {})
        self.assertEqual((c['pass'], c['fail'], c['skip']), (1, 1, 1))
        self.assertEqual(s, [('test_kmem:test_kmem_memcg_deletion', 'pass', 'fail')])

    def test_known_issue_becomes_skip_with_reason(self):
        kn = known('test_kmem:test_kmem_memcg_deletion', reason='needs more RAM')
        lines, c, s = tap.summarize(self.results(), 'original', kn, {})
        self.assertEqual((c['pass'], c['fail'], c['skip']), (1, 0, 2))
        self.assertEqual(s, [])
        self.assertTrue(any('needs more RAM' in line for line in lines))

    def test_known_issue_of_one_kernel(self):
        # A subtest of the matrix, known to fail sometimes on patched only.
        expect = {'test_kmem:test_kmem_memcg_deletion': {'original': 'fail', 'patched': 'pass', 'debug': 'pass'}}
        known = tap.read_known(write_known(self, 
            'broken test_kmem:test_kmem_memcg_deletion patched 2999-01-01 a known bug\n'))
        lines, c, s = tap.summarize(self.results(), 'patched', known, expect)
        self.assertEqual(s, [])
        self.assertEqual((c['pass'], c['fail'], c['skip']), (1, 0, 2))
        self.assertTrue(any('known issue until 2999-01-01: a known bug' in line for line in lines))
        # Not on original, where the failure is the expected outcome ...
        _, c, s = tap.summarize(self.results(), 'original', known, expect)
        self.assertEqual((s, c['fail']), ([], 1))
        # ... nor on debug, where it is a surprise.
        _, _, s = tap.summarize(self.results(), 'debug', known, expect)
        self.assertEqual(s, [('test_kmem:test_kmem_memcg_deletion', 'pass', 'fail')])

    def test_expected_failure_is_not_a_surprise(self):
        expect = {'test_kmem:test_kmem_memcg_deletion': {'original': 'fail', 'patched': 'pass', 'debug': 'pass'}}
        _, c, s = tap.summarize(self.results(), 'original', {}, expect)
        self.assertEqual(s, [])
        self.assertEqual(c['expected'], 2)  # the pass and the expected failure
        # ... but the same outcome on patched is one.
        _, _, s = tap.summarize(self.results(), 'patched', {}, expect)
        self.assertEqual(s, [('test_kmem:test_kmem_memcg_deletion', 'pass', 'fail')])

    def test_expected_failure_that_passes_is_a_surprise(self):
        expect = {'test_kmem:test_kmem_basic': {'original': 'fail', 'patched': 'pass', 'debug': 'pass'}}
        known = globals()['known']('test_kmem:test_kmem_memcg_deletion')
        _, _, s = tap.summarize(self.results(), 'original', known, expect)
        self.assertEqual(s, [('test_kmem:test_kmem_basic', 'fail', 'pass')])

    def test_listed_test_that_skips_is_a_surprise(self):
        expect = {'test_kmem:test_percpu_basic': {'original': 'pass', 'patched': 'pass', 'debug': 'pass'}}
        known = globals()['known']('test_kmem:test_kmem_memcg_deletion')
        _, _, s = tap.summarize(self.results(), 'original', known, expect)
        self.assertEqual(s, [('test_kmem:test_percpu_basic', 'pass', 'skip')])

    def test_listed_test_that_did_not_run_is_a_surprise(self):
        expect = {'test_kmem:test_gone': {'original': 'fail', 'patched': 'pass', 'debug': 'pass'}}
        known = globals()['known']('test_kmem:test_kmem_memcg_deletion')
        _, _, s = tap.summarize(self.results(), 'original', known, expect, {'test_kmem'})
        self.assertEqual(s, [('test_kmem:test_gone', 'fail', 'did not run')])
        # Not asked for: not a surprise.
        _, _, s = tap.summarize(self.results(), 'original', known, expect, {'test_core'})
        self.assertEqual(s, [])

    def test_repo_tables_parse(self):
        top = os.path.join(os.path.dirname(__file__), '..')
        tap.read_expect(os.path.join(top, 'verdict', 'expectations'))
        tap.read_known(os.path.join(top, 'verdict', 'known-issues'))


class SummaryLine(unittest.TestCase):
    """The last line, all that a truncated CI log may keep, names the surprises."""

    def test_last_line_names_surprises(self):
        with tempfile.TemporaryDirectory() as d:
            res = os.path.join(d, 'results.log')
            with open(res, 'w') as f:
                f.write(RESULTS)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = tap.main(['--kernel', 'original', '--tests', 'test_kmem', res])
        last = out.getvalue().splitlines()[-1]
        self.assertEqual(rc, 1)
        self.assertIn('1 surprises: test_kmem:test_kmem_memcg_deletion fail (want pass)', last)


class RepeatCounts(unittest.TestCase):
    def test_counts_per_subtest(self):
        res = [tap.Result('t', 'a', 'pass', ''), tap.Result('t', 'b', 'fail', ''),
               tap.Result('t', 'a', 'pass', ''), tap.Result('t', 'b', 'pass', '')]
        lines = tap.repeat_counts(res, 'original', {'t:b': {'original': 'fail'}})
        self.assertIn('2 of 2', [ln for ln in lines if 't:a' in ln][0])
        row = [ln for ln in lines if 't:b' in ln][0]
        self.assertIn('1 of 2', row)
        self.assertIn('pass 1, fail 1', row)

    def test_no_table_for_a_single_run(self):
        self.assertEqual(tap.repeat_counts([tap.Result('t', 'a', 'pass', '')], 'original', {}), [])


class RealRun(unittest.TestCase):
    """The results channel of a real guest run of the stock kernel."""

    def test_real_results_channel(self):
        path = os.path.join(FIX, 'results-original-kselftest.log')
        with open(path) as f:
            res, done = tap.parse_results(f)
        self.assertTrue(done)
        self.assertGreater(len(res), 20)
        self.assertTrue(all(r.outcome in ('pass', 'fail', 'skip') for r in res))
        self.assertIn('test_kmem:test_kmem_basic', {r.key for r in res})


if __name__ == '__main__':
    unittest.main()
