"""make test's verdict on a soak's direction (reports/compare.py soak_direction):
a missing figure fails, it never reads as 0 dying."""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'records'))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', 'reports'))
import compare  # noqa: E402
import records  # noqa: E402


def verdict(kernel, changes, scan):
    return compare.soak_direction(kernel, changes, records.kv_words(scan))[1]


class SoakDirection(unittest.TestCase):
    SCAN = 'complete=7 dropped=0 ended=1 rc=0 reached=300 dying=120 dying_drop={}'

    def test_original_keeps_a_quarter(self):
        self.assertTrue(verdict('original', 0, self.SCAN.format(75)).startswith('PASS original soak: 75 dying'))
        self.assertTrue(verdict('original', 0, self.SCAN.format(74)).startswith('FAIL'))

    def test_patched_keeps_at_most_two_percent(self):
        self.assertTrue(verdict('patched', 1, self.SCAN.format(6)).startswith('PASS'))
        self.assertTrue(verdict('patched', 1, self.SCAN.format(7)).startswith('FAIL'))
        # Without kernel changes patched is original and expects the same.
        self.assertTrue(verdict('patched', 0, self.SCAN.format(0)).startswith('FAIL'))

    def test_missing_figure_fails(self):
        for scan in ('complete=7 reached=300 dying=120', self.SCAN.format(''), self.SCAN.format('x1')):
            line = verdict('patched', 1, scan)
            self.assertTrue(line.startswith('FAIL patched soak: no dying count after drop_caches'), line)

    def test_no_generation_fails(self):
        for reached in ('', '0'):
            line = verdict('patched', 1, f'reached={reached} dying_drop=0')
            self.assertTrue(line.startswith('FAIL patched soak: no generation reached'), line)


class TestKnobs(unittest.TestCase):
    """test.sh refuses a shorter soak and clears make soak's variables."""

    def test_short_soak_refused(self):
        sh = os.path.join(os.path.dirname(__file__), '..', 'jobs', 'test.sh')
        r = subprocess.run(['bash', sh], capture_output=True, text=True,
                           env=dict(os.environ, TEST_SOAK_GENS='10', BUILD='/nonexistent'))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('would weaken the test', r.stderr)

    def test_soak_variables_are_cleared(self):
        with open(os.path.join(os.path.dirname(__file__), '..', 'jobs', 'test.sh')) as f:
            text = f.read()
        for var in ('GENS', 'SOAK', 'MIX', 'SEED', 'SAMPLE_EVERY', 'MEM'):
            self.assertIn(f'-u {var} ', text)


if __name__ == '__main__':
    unittest.main()
