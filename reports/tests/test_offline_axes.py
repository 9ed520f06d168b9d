"""reports/offline_axes.py: one row set per (nodes, dead) pair, from the
newest clean instruction-count offline batch of that pair, original
against patched; wall-clock batches and mixed parts never count; batches
of kernels with the irqsoff tracer have their own table."""
import os
import sys
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, 'reports'))
sys.path.insert(0, os.path.join(TOP, 'db', 'tests'))
import compare  # noqa: E402,F401 (db/ on the path)
import fake_run  # noqa: E402
import offline_axes  # noqa: E402
from test_ingest import Base  # noqa: E402 (a fresh database and matrix files)


class Axes(Base):
    def batch(self, name, nodes, dead, clock='icount', parts='offline', started='2026-12-05T10:00:00Z', irqsoff=None):
        for k in ('original', 'patched'):
            d = os.path.join(self.tmp, f'{name}-1-{k}')
            extra = []
            if irqsoff:
                # in memcg offline: 4 us on original, 25 us on patched; anywhere: 2000 us
                extra = [f'@@ result metric=offline.{m} param=65536 rep={rep} value={v} unit=us'
                         for rep in (1, 2, 3)
                         for m, v in (('irqsoff_us', 3 + rep if k == 'original' else 24 + rep),
                                      ('irqsoff_max_us', 1999 + rep))]
            fake_run.bench_run(d, k, sizes=(64,), reps=3, tag=name, started=started, parts=parts,
                               run_words=f'nodes={nodes} dead={dead}' + (f' irqsoff={irqsoff}' if irqsoff else ''),
                               clock=clock, extra=extra)
            fake_run.store(self.db, d, False, self.known, self.expect, self.path, name)

    def test_irqsoff_batches_have_a_table_of_their_own(self):
        self.batch('plain', 1, 0, started='2026-12-05T09:00:00Z')
        self.batch('traced', 1, 0, started='2026-12-05T10:00:00Z', irqsoff=1)
        self.assertEqual({r[8] for r in offline_axes.table(self.db, '')}, {'plain'})
        rows = offline_axes.table(self.db, '', irqsoff=True)
        self.assertEqual({r[8] for r in rows}, {'traced'})
        by = {r[3]: r for r in rows}
        self.assertEqual(by['irqs off in memcg offline (us)'][4:7], ['5.00 [4.00-6.00] (3)', '26.0 [25.0-27.0] (3)',
                                                                      '+420.0%'])
        self.assertEqual(by['irqs off anywhere (us)'][4:6], ['2001 [2000-2002] (3)'] * 2)
        self.assertIn('release (us)', by)

    def test_one_row_set_per_pair(self):
        self.batch('b1', 1, 0)
        self.batch('b2', 2, 100)
        self.batch('b3', 2, 100, clock='wall', started='2026-12-05T11:00:00Z')   # never mixed in
        self.batch('b4', 4, 0, parts='offline,fast')                               # not an axes batch
        rows = offline_axes.table(self.db, '')
        pairs = sorted({(r[0], r[1], r[8]) for r in rows})
        self.assertEqual(pairs, [('1', '0', 'b1'), ('2', '100', 'b2')])
        release = [r for r in rows if r[3].startswith('release')][0]
        self.assertEqual(release[4], 'not released (3/3)')     # original: the page cache pins it
        self.assertRegex(release[5], r'^\d+ \[\d+-\d+\] \(3\)$')
        self.assertEqual(release[6], '')                        # no change against "not released"

    def test_newest_batch_of_a_pair(self):
        self.batch('old', 1, 0, started='2026-12-05T09:00:00Z')
        self.batch('new', 1, 0, started='2026-12-05T10:00:00Z')
        self.assertEqual({r[8] for r in offline_axes.table(self.db, '')}, {'new'})
        self.assertEqual(offline_axes.table(self.db, '2026-12-06'), [])

    def test_axes_batches_never_hide_the_fast_paths(self):
        """The README's bench block is the newest batch with the fast
        paths, not a newer batch of the offline axes."""
        import bench_table
        self.batch('full', 1, 0, parts='offline,fast', started='2026-12-05T09:00:00Z')
        self.batch('axes', 2, 100, started='2026-12-05T10:00:00Z')
        self.assertEqual(bench_table.latest_batch(self.db), 'axes')
        self.assertEqual(bench_table.latest_batch(self.db, 'fast'), 'full')

    def test_a_smoke_batch_never_stands_for_the_fast_paths(self):
        """One boot and one rep a side gives no interval: the README's bench
        block keeps the newest batch that does."""
        import figures
        for name, reps, started in (('real', 3, '2026-12-05T09:00:00Z'), ('smoke', 1, '2026-12-05T10:00:00Z')):
            for k in ('original', 'patched'):
                d = os.path.join(self.tmp, f'{name}-1-{k}')
                fake_run.bench_run(d, k, sizes=(64,), reps=1, fast_reps=reps, tag=name, started=started,
                                   clock='icount')
                fake_run.store(self.db, d, False, self.known, self.expect, self.path, name)
        text = '\n'.join(figures.block_bench(self.db))
        self.assertIn('--batch real ', text)
        self.assertNotIn('smoke', text)


if __name__ == '__main__':
    unittest.main()
