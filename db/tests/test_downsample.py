"""db/downsample.py: old soaks keep at most a budget of snapshots and every
figure drawn from them, in one transaction."""
import datetime
import os
import shutil
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import downsample  # noqa: E402
import fake_run  # noqa: E402
import store  # noqa: E402

NOW = datetime.datetime(2026, 12, 20, tzinfo=datetime.timezone.utc)


class Downsample(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix='downsample-test-')
        cls.master = os.path.join(cls.tmp, 'master.sqlite')
        # 2 nights x 2 kernels, 41 churn snapshots + 1 after drop_caches each
        fake_run.fill_db(cls.master, os.path.join(cls.tmp, 'runs'), nights=2, gens=400, sample_every=10,
                         kselftest=False)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def setUp(self):
        self.path = os.path.join(self.tmp, f'{self.id()}.sqlite')
        shutil.copy(self.master, self.path)
        self.db = store.connect(self.path)
        self.addCleanup(self.db.close)

    def state(self):
        return {r[0]: r[1:] for r in self.db.execute(
            'SELECT run_id, max_dying, final_dying, dropped_dying, '
            '(SELECT count(*) FROM snapshots s WHERE s.run_id = f.run_id), '
            '(SELECT count(*) FROM samples s WHERE s.run_id = f.run_id) FROM fleet_soaks f')}

    def test_budget_kept_figures_unchanged(self):
        before = self.state()
        self.assertEqual({v[3] for v in before.values()}, {42})
        done = downsample.downsample(self.db, budget=10, older_than=0, now=NOW)
        self.assertEqual(sorted(d[1:] for d in done), [(42, 10)] * 4)
        after = self.state()
        for run_id, b in before.items():
            self.assertEqual(after[run_id][:3], b[:3])            # the figures
            self.assertEqual(after[run_id][3], 10)                # the budget
            self.assertLess(after[run_id][4], b[4])               # samples went with their snapshots
            seqs = [r[0] for r in self.db.execute(
                'SELECT seq FROM snapshots WHERE run_id = ? ORDER BY seq', (run_id,))]
            self.assertEqual(seqs[0], 1)                          # the first
            self.assertEqual(seqs[-1], 42)                        # after drop_caches
            self.assertIn(41, seqs)                               # the last of the churn
            left = dict(self.db.execute("SELECT id, snapshots FROM runs"))
            self.assertEqual(left[run_id], 10)
            was = self.db.execute("SELECT value FROM params WHERE run_id = ? AND key = 'downsampled_from'",
                                  (run_id,)).fetchone()
            self.assertEqual(was, ('42',))
        # no orphan samples
        self.assertEqual(self.db.execute('SELECT count(*) FROM samples s WHERE NOT EXISTS (SELECT 1 FROM '
                                         'snapshots n WHERE n.run_id = s.run_id AND n.seq = s.seq)').fetchone(),
                         (0,))
        # again: nothing to do
        self.assertEqual(downsample.downsample(self.db, budget=10, older_than=0, now=NOW), [])

    def test_spacing(self):
        snaps = [(i + 1, i * 10, None, 5) for i in range(41)] + [(42, 400, 'after=drop_caches', 0)]
        snaps[30] = (31, 300, None, 99)                           # the most dying
        keep = downsample.keep_set(snaps, 8)
        self.assertEqual(len(keep), 8)
        self.assertTrue({1, 41, 42, 31} <= keep)
        gens = sorted(snaps[s - 1][1] for s in keep if s not in (1, 41, 42, 31))
        self.assertEqual(gens, [80, 160, 240, 320])              # evenly spaced over 0..400

    def test_only_old_soaks(self):
        # the fake soaks started on 2026-12-01 and 02: 18.5 days before NOW keeps them all
        self.assertEqual(downsample.downsample(self.db, budget=10, older_than=30, now=NOW), [])
        done = downsample.downsample(self.db, budget=10, older_than=18.5, now=NOW)
        self.assertEqual(len(done), 2)
        day = {r[0]: r[1] for r in self.db.execute('SELECT run_id, day FROM fleet_soaks')}
        self.assertEqual({day[d[0]] for d in done}, {'2026-12-01'})

    def test_dry_run_and_bad_input(self):
        before = self.state()
        self.assertEqual(len(downsample.downsample(self.db, budget=10, older_than=0, dry_run=True)), 4)
        self.assertEqual(self.state(), before)
        with self.assertRaisesRegex(ValueError, 'at least 4'):
            downsample.downsample(self.db, budget=3, older_than=0)
        with self.assertRaisesRegex(ValueError, 'no soak run with id 999'):
            downsample.downsample(self.db, budget=10, runs=[999])
        with mock.patch("sys.stderr"):
            self.assertEqual(downsample.main(["--db", os.path.join(self.tmp, "nope.sqlite")]), 2)

    def test_a_failure_halfway_changes_nothing(self):
        before = self.state()
        with mock.patch.object(downsample, 'figures', side_effect=[(1, 1, 1)] * 4 + [RuntimeError('killed')]):
            with self.assertRaisesRegex(RuntimeError, 'killed'):
                downsample.downsample(self.db, budget=10, older_than=0, now=NOW)
        self.assertEqual(self.state(), before)
        self.assertFalse(self.db.in_transaction)


if __name__ == '__main__':
    unittest.main()
