"""reports/readme.py on fake databases: the README section it writes, its
table and plot, --check, and the errors that leave README.md unchanged."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, 'db', 'tests'))
import fake_run  # noqa: E402

README = ('# Title\n\ntext before\n\n<!-- measured-soak:begin -->\nold\n<!-- measured-soak:end -->\n\ntext after\n'
          + ''.join(f'\n<!-- {n}:begin -->\nold {n}\n<!-- {n}:end -->\n' for n in (
              'measured-kselftest', 'measured-metrics', 'measured-flaky', 'measured-bench', 'measured-bench-jobs', 'measured-offline-axes', 'measured-irqsoff', 'measured-insn', 'measured-reclaim', 'measured-stress')))


class Readme(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='readme-test-')
        self.readme = os.path.join(self.tmp, 'README.md')
        with open(self.readme, 'w') as f:
            f.write(README)
        self.png = os.path.join(self.tmp, 'docs', 'soak-dying.png')
        self.env = dict(os.environ, BUILD=self.tmp)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def run_readme(self, db, *more):
        return subprocess.run([sys.executable, os.path.join(TOP, 'reports', 'readme.py'), '--db', db,
                               '--readme', self.readme, '--png', self.png, *more],
                              capture_output=True, text=True, env=self.env)

    def text(self):
        with open(self.readme) as f:
            return f.read()

    def same_workload(self, db, reps=3):
        """reps soak runs of each kernel with one workload, interleaved, plus
        a later original run with another seed that must not be picked."""
        sys.path.insert(0, os.path.join(TOP, 'db'))
        import store
        conn = store.connect(db)
        known = os.path.join(TOP, 'qemu-run', 'verdict', 'known-issues')
        expect = os.path.join(self.tmp, 'expectations')
        with open(expect, 'w') as f:
            f.write(fake_run.expectations_text())
        plan = [(k, 7, f'2026-12-03T1{i}:0{j}:00Z') for i in range(reps)
                for j, k in enumerate(('original', 'patched'))]
        plan.append(('original', 8, '2026-12-03T19:00:00Z'))
        for k, seed, started in plan:
            d = os.path.join(self.tmp, 'runs', f'{started[:13]}{started[14:16]}-{k}-soak')
            fake_run.soak_run(d, k, gens=300, sample_every=25, seed=seed, started=started)
            fake_run.store(conn, d, known=known, expect=expect, db_path=db)
        conn.close()

    def test_spread(self):
        sys.path.insert(0, os.path.join(TOP, 'reports'))
        import readme
        self.assertEqual(readme.spread([3, 1, 2]), '2 [1-3]')
        self.assertEqual(readme.spread([4, 4]), '4')
        self.assertEqual(readme.spread([None, 5]), '5')
        self.assertEqual(readme.spread([None]), 'n/a')

    def test_both_kernels(self):
        db = os.path.join(self.tmp, 'both.sqlite')
        self.same_workload(db)
        r = self.run_readme(db)
        self.assertEqual(r.returncode, 0, r.stderr)
        t = self.text()
        self.assertTrue(t.startswith('# Title\n\ntext before\n\n<!-- measured-soak:begin -->'))
        self.assertIn('<!-- measured-soak:end -->\n\ntext after\n', t)
        self.assertNotIn('\nold', t)
        self.assertIn('<!-- measured-stress:begin -->\n<!-- written by', t)
        self.assertIn('No stress run in this database', t)
        self.assertIn('| dying, original |', t)
        self.assertIn('| dying, patched |', t)
        # The three seed-7 runs of each kernel, not the later seed-8 one.
        self.assertIn('3 run(s) of `original`', t)
        self.assertIn('and 3 of `patched@?`', t)      # fake runs record no series
        self.assertIn('seed=7 ', t)
        self.assertIn('started between 2026-12-03T10:00:00Z and 2026-12-03T12:01:00Z', t)
        self.assertIn('](docs/soak-dying.png)', t)
        with open(self.png, 'rb') as f:
            self.assertEqual(f.read(8), b'\x89PNG\r\n\x1a\n')
        self.assertEqual(self.run_readme(db, '--check').returncode, 0)
        # A second write is the same text: the section is a function of the database.
        self.assertEqual(self.run_readme(db).returncode, 0)
        self.assertEqual(self.text(), t)

    def test_check_sees_a_stale_readme(self):
        db = os.path.join(self.tmp, 'both.sqlite')
        fake_run.fill_db(db, os.path.join(self.tmp, 'runs'), nights=1, gens=200, sample_every=50)
        r = self.run_readme(db, '--check')
        self.assertEqual(r.returncode, 1)
        self.assertIn('make readme-figures', r.stdout)
        self.assertEqual(self.text(), README)

    def test_one_kernel_only(self):
        db = os.path.join(self.tmp, 'orig.sqlite')
        fake_run.fill_db(db, os.path.join(self.tmp, 'runs'), ('original',), nights=1, gens=200,
                         sample_every=50, kselftest=False)
        r = self.run_readme(db)
        self.assertEqual(r.returncode, 1)
        self.assertIn('no clean soak run of the patched kernel', r.stderr)
        self.assertEqual(self.text(), README)
        self.assertFalse(os.path.exists(self.png))

    def test_only_some_blocks(self):
        # A database with no soak: --only writes the named block, keeps the rest.
        db = os.path.join(self.tmp, 'orig.sqlite')
        fake_run.fill_db(db, os.path.join(self.tmp, 'runs'), ('original',), nights=1, gens=200,
                         sample_every=50, kselftest=False)
        r = self.run_readme(db, '--only', 'measured-stress')
        self.assertEqual(r.returncode, 0, r.stderr)
        t = self.text()
        self.assertIn('No stress run in this database', t)
        self.assertIn('<!-- measured-soak:begin -->\nold\n', t)
        self.assertIn('\nold measured-bench\n', t)
        self.assertNotIn('old measured-stress', t)
        self.assertFalse(os.path.exists(self.png))
        # An unknown name changes nothing and lists the real ones.
        with open(self.readme, 'w') as f:
            f.write(README)
        r = self.run_readme(db, '--only', 'measured-stress,measured-typo')
        self.assertEqual(r.returncode, 1)
        self.assertIn('no block measured-typo', r.stderr)
        self.assertIn('measured-offline-axes', r.stderr)
        self.assertEqual(self.text(), README)

    def test_no_markers(self):
        db = os.path.join(self.tmp, 'both.sqlite')
        fake_run.fill_db(db, os.path.join(self.tmp, 'runs'), nights=1, gens=200, sample_every=50)
        with open(self.readme, 'w') as f:
            f.write('# no markers\n')
        r = self.run_readme(db)
        self.assertEqual(r.returncode, 1)
        self.assertIn('must hold the markers', r.stderr)

    def test_one_series_under_patched(self):
        """A later patched soak of another series version: only it is patched,
        the three earlier ones (another version) are left out."""
        db = os.path.join(self.tmp, 'both.sqlite')
        self.same_workload(db)
        sys.path.insert(0, os.path.join(TOP, 'db'))
        import store
        d = os.path.join(self.tmp, 'runs', 'v3-patched-soak')
        fake_run.soak_run(d, 'patched', gens=300, sample_every=25, seed=7, started='2026-12-03T20:00:00Z')
        with open(os.path.join(d, 'meta')) as f:
            meta = f.read().replace('image_key=fakepatc0000000000', 'image_key=v3img')
        with open(os.path.join(d, 'meta'), 'w') as f:
            f.write(meta + 'series_key=aaaabbbbccccdddd\n')
        conn = store.connect(db)
        fake_run.store(conn, d, known=os.path.join(TOP, 'qemu-run', 'verdict', 'known-issues'), db_path=db)
        conn.close()
        r = self.run_readme(db)
        self.assertEqual(r.returncode, 0, r.stderr)
        t = self.text()
        self.assertIn('3 run(s) of `original`', t)
        self.assertIn('and 1 of `patched@aaaabbbb`', t)

    def test_a_newer_shorter_soak_pair_does_not_replace_the_longer(self):
        """make test's short soaks, stored after make run's longer ones of
        the same series: the table stays on the longer workload."""
        db = os.path.join(self.tmp, 'both.sqlite')
        self.same_workload(db)
        import store
        conn = store.connect(db)
        for j, k in enumerate(('original', 'patched')):
            d = os.path.join(self.tmp, 'runs', f'short-{k}-soak')
            fake_run.soak_run(d, k, gens=100, sample_every=25, seed=7, started=f'2026-12-03T22:0{j}:00Z')
            fake_run.store(conn, d, db_path=db)
        conn.close()
        r = self.run_readme(db)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('gens=300 ', self.text())
        self.assertNotIn('gens=100 ', self.text())
        self.assertIn('3 run(s) of `original`', self.text())

    def test_a_newer_patched_workload_original_never_ran(self):
        """The newest patched soak ran a workload original never ran (an
        experiment): the table stays on the workload both kernels ran."""
        db = os.path.join(self.tmp, 'both.sqlite')
        self.same_workload(db)
        sys.path.insert(0, os.path.join(TOP, 'db'))
        import store
        d = os.path.join(self.tmp, 'runs', 'experiment-patched-soak')
        fake_run.soak_run(d, 'patched', gens=300, sample_every=25, seed=9, started='2026-12-03T21:00:00Z')
        conn = store.connect(db)
        fake_run.store(conn, d, known=os.path.join(TOP, 'qemu-run', 'verdict', 'known-issues'), db_path=db)
        conn.close()
        r = self.run_readme(db)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('seed=7 ', self.text())
        self.assertIn('and 3 of `patched@?`', self.text())

    def test_bench_churn_soaks_are_not_the_soak_table(self):
        """Later churn soaks of a bench batch, on both kernels with one
        workload: the table stays on the soaks run on their own."""
        db = os.path.join(self.tmp, 'both.sqlite')
        self.same_workload(db)
        sys.path.insert(0, os.path.join(TOP, 'db'))
        import store
        conn = store.connect(db)
        for k in ('original', 'patched'):
            d = os.path.join(self.tmp, 'runs', f'bench-churn-{k}-soak')
            fake_run.soak_run(d, k, gens=300, sample_every=25, seed=11, started='2026-12-03T22:00:00Z')
            fake_run.store(conn, d, known=os.path.join(TOP, 'qemu-run', 'verdict', 'known-issues'), db_path=db, batch='b1')
        conn.close()
        r = self.run_readme(db)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('seed=7 ', self.text())

    def test_a_missing_block_marker(self):
        db = os.path.join(self.tmp, 'both.sqlite')
        self.same_workload(db)
        with open(self.readme, 'w') as f:
            f.write(README.replace('<!-- measured-bench:end -->', ''))
        r = self.run_readme(db)
        self.assertEqual(r.returncode, 1)
        self.assertIn('<!-- measured-bench:end -->', r.stderr)

    def test_no_database(self):
        r = self.run_readme(os.path.join(self.tmp, 'none.sqlite'))
        self.assertEqual(r.returncode, 1)
        self.assertIn('no runs database', r.stderr)
        self.assertEqual(self.text(), README)


if __name__ == '__main__':
    unittest.main()
