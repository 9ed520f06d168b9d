"""reports/flaky.py: failure rates from the stored first attempts, and Fisher's
exact test between kernels."""
import os
import shutil
import sys
import tempfile
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, 'db'))
sys.path.insert(0, os.path.join(TOP, 'db', 'tests'))
sys.path.insert(0, os.path.join(TOP, 'reports'))
import compare  # noqa: E402
import fake_run  # noqa: E402
import flaky  # noqa: E402
import store  # noqa: E402


def repeat_run(d, kernel, fails, reps=20, started='2026-12-04T02:00:00Z', series=None):
    """A make repeat run: test t, subtests a (never fails) and b (fails in
    the repetitions listed in fails), no reruns; series: the image's series
    key (None: not recorded; original records '')."""
    os.makedirs(d)
    if series is None and kernel == 'original':
        series = ''
    image = f'k-{kernel}-{series}' if series else f'k-{kernel}'
    with open(os.path.join(d, 'meta'), 'w') as f:
        f.write(f'kernel={kernel}\njob=kselftest\nargs=tests={",".join(["t"] * reps)} timeout=900 retries=0\n'
                f'mem=1024\nsmp=2\nimage_key={image}\nstarted={started}\nwall_secs=9\nverdict=clean\n'
                + (f'series_key={series}\n' if series is not None else ''))
    out = ['@@ boot kernel=6.12.118 job=kselftest cpus=2']
    for i in range(reps):
        bad = i in fails
        out += ['@@ begin t', '1..2', 'ok 1 a', f'{"not ok" if bad else "ok"} 2 b', f'@@ end t rc={int(bad)} secs=1']
    out.append('@@ done rc=0')
    with open(os.path.join(d, 'results.log'), 'w') as f:
        f.write('\n'.join(out) + '\n')


class Fisher(unittest.TestCase):
    def test_values(self):
        # 0 of 20 against 6 of 20: p = C(20,6)/C(40,6) = 0.0101...
        self.assertAlmostEqual(compare.fisher_greater(0, 20, 6, 20), 38760 / 3838380, places=6)
        # 3 of 20 on each: 1 - P(X <= 2) for X ~ hypergeometric(40, 6, 20)
        self.assertAlmostEqual(compare.fisher_greater(3, 20, 3, 20), 0.669290, places=5)
        self.assertEqual(compare.fisher_greater(5, 20, 0, 20), 1.0)


class Rates(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='flaky-test-')
        self.addCleanup(shutil.rmtree, self.tmp)
        self.path = os.path.join(self.tmp, 'runs.sqlite')
        self.db = store.connect(self.path)
        self.addCleanup(self.db.close)
        empty = os.path.join(self.tmp, 'empty')
        open(empty, 'w').close()
        self.empty = empty

    def store(self, kernel, fails, series=None):
        d = os.path.join(self.tmp, f'{kernel}-{series}')
        repeat_run(d, kernel, fails, series=series)
        fake_run.store(self.db, d, known=self.empty, expect=self.empty, db_path=self.path)

    def test_worse_on_patched_fails_the_check(self):
        self.store('original', {3})
        self.store('patched', {1, 4, 7, 9, 12, 15, 18})
        table = flaky.rates(self.db)
        self.assertEqual(table[('t', 'b')], {'original': (1, 20), 'patched@?': (7, 20)})
        self.assertEqual(table[('t', 'a')], {'original': (0, 20), 'patched@?': (0, 20)})
        rows = flaky.compare(table)
        self.assertEqual([(r[0], r[1], r[5]) for r in rows], [(('t', 'b'), 'patched@?', True)])
        self.assertEqual(flaky.main(['--db', self.path]), 1)

    def test_two_versions_of_the_series_never_mix(self):
        # v2 failed 7 of 20, v3 1 of 20: mixed under "patched" the rate would
        # be 8 of 40 and still fail the check, on v3's name.
        self.store('original', {3})
        self.store('patched', {1, 4, 7, 9, 12, 15, 18}, series='60e1b404381c312c')
        self.store('patched', {5}, series='26311f425ea19c92')
        table = flaky.rates(self.db)
        self.assertEqual(table[('t', 'b')], {'original': (1, 20), 'patched@60e1b404': (7, 20),
                                             'patched@26311f42': (1, 20)})
        worse = [r[1] for r in flaky.compare(table) if r[5]]
        self.assertEqual(worse, ['patched@60e1b404'])

    def test_the_same_rate_passes(self):
        self.store('original', {3, 9})
        self.store('patched', {5, 11})
        rows = flaky.compare(flaky.rates(self.db))
        self.assertFalse(rows[0][5])
        self.assertEqual(flaky.main(['--db', self.path]), 0)


if __name__ == '__main__':
    unittest.main()


class Metrics(unittest.TestCase):
    """"# METRIC" lines of a kselftest run are stored and tabulated."""

    def test_stored_and_tabulated(self):
        import metrics
        tmp = tempfile.mkdtemp(prefix='metrics-test-')
        self.addCleanup(shutil.rmtree, tmp)
        path = os.path.join(tmp, 'runs.sqlite')
        db = store.connect(path)
        self.addCleanup(db.close)
        empty = os.path.join(tmp, 'empty')
        open(empty, 'w').close()
        for n, (kernel, ms) in enumerate((('original', 90), ('original', 110), ('patched', 1700))):
            d = os.path.join(tmp, f'run{n}')
            repeat_run(d, kernel, set(), reps=1, started=f'2026-12-04T0{n}:00:00Z')
            with open(os.path.join(d, 'results.log')) as f:
                text = f.read()
            text = text.replace('ok 1 a\n', f'ok 1 a\n# METRIC a dead_ms={ms} oom=0.5\n# METRIC bad x=y\n')
            with open(os.path.join(d, 'results.log'), 'w') as f:
                f.write(text)
            fake_run.store(db, d, known=empty, expect=empty, db_path=path)
        figs = metrics.figures(db, 'a')
        self.assertEqual(figs[('t', 'a', 'dead_ms')], {'original': [90.0, 110.0], 'patched@?': [1700.0]})
        self.assertEqual(figs[('t', 'a', 'oom')]['patched@?'], [0.5])
        rows = metrics.table(figs)
        self.assertIn('100 [90-110]', [r for r in rows if 'dead_ms' in r and 'original' in r][0])
