"""reports/figures.py: the README's measured blocks from a runs database.
Each block names its runs, never mixes two versions of the series, and
says which command stores a run when it has none."""
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, 'db', 'tests'))
sys.path.insert(0, os.path.join(TOP, 'db'))
sys.path.insert(0, os.path.join(TOP, 'reports'))
import fake_run  # noqa: E402
import figures  # noqa: E402
import store  # noqa: E402
from kernels import KSELFTESTS  # noqa: E402

V2, V3 = '60e1b404381c312c', 'aaaabbbbccccdddd'
FULL = 'tests=' + ','.join(KSELFTESTS) + ' timeout=900'


def set_meta(d, **kv):
    """Change or add meta keys of a fake run folder."""
    path = os.path.join(d, 'meta')
    with open(path) as f:
        meta = dict(line.rstrip('\n').split('=', 1) for line in f if '=' in line)
    meta.update({k: str(v) for k, v in kv.items()})
    with open(path, 'w') as f:
        f.writelines(f'{k}={v}\n' for k, v in meta.items())


class Blocks(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='figures-test-')
        self.addCleanup(shutil.rmtree, self.tmp)
        self.path = os.path.join(self.tmp, 'runs.sqlite')
        self.db = store.connect(self.path)
        self.addCleanup(self.db.close)
        self.known = os.path.join(self.tmp, 'known')
        open(self.known, 'w').close()
        self.n = 0

    def store(self, d, batch=None):
        fake_run.store(self.db, d, known=self.known, expect=self.known, db_path=self.path, batch=batch)

    def kselftest(self, kernel, series, started, args=FULL, metric=None):
        self.n += 1
        d = os.path.join(self.tmp, f'run{self.n}')
        fake_run.kselftest_run(d, kernel, started=started)
        set_meta(d, args=args, series_key=series, image_key=f'img-{kernel}-{series}')
        if metric is not None:
            path = os.path.join(d, 'results.log')
            with open(path) as f:
                text = f.read()
            with open(path, 'w') as f:
                f.write(text.replace('ok 1 test_reparent_slab\n',
                                     f'ok 1 test_reparent_slab\n# METRIC test_reparent_slab dead_ms={metric}\n'))
        self.store(d)

    def text(self, name):
        return '\n'.join(figures.BLOCKS[name](self.db))

    def test_empty_blocks_name_the_command(self):
        self.assertIn('No full kselftest run in this database: `make test`', self.text('measured-kselftest'))
        self.assertIn('No `# METRIC` figure', self.text('measured-metrics'))
        self.assertIn('make nightly-flaky', self.text('measured-flaky'))
        self.assertIn('No bench batch with 3 values a side in this database: `NOBUILD=1 make bench`', self.text('measured-bench'))
        self.assertIn('No stress run in this database: `make stress`', self.text('measured-stress'))

    def test_kselftest_shows_original_and_the_newest_series_only(self):
        self.kselftest('original', '', '2026-12-04T01:00:00Z')
        self.kselftest('patched', V2, '2026-12-04T02:00:00Z')
        self.kselftest('patched', V3, '2026-12-04T03:00:00Z')
        # A later run limited to one test is not a full run.
        self.kselftest('patched', V2, '2026-12-04T04:00:00Z', args='tests=test_kmem timeout=900')
        t = self.text('measured-kselftest')
        rows = [line for line in t.splitlines() if line.startswith('| ') and 'kernel' not in line
                and not line.startswith('| ---')]
        self.assertEqual([r.split(' | ')[0] for r in rows], ['| original', '| patched@aaaabbbb'])
        self.assertNotIn('patched@60e1b404', t)
        self.assertIn('`patched@aaaabbbb`: a series version not named', t)

    def test_this_checkouts_series_comes_first(self):
        cur = store.current_series()
        self.kselftest('original', '', '2026-12-04T01:00:00Z')
        self.kselftest('patched', cur, '2026-12-04T02:00:00Z')
        self.kselftest('patched', V3, '2026-12-04T03:00:00Z')
        t = self.text('measured-kselftest')
        self.assertIn(f'| patched@{cur[:8]} |', t)
        self.assertNotIn('aaaabbbb', t)
        self.assertIn("this checkout's patches/", t)

    def test_metrics_per_series(self):
        self.kselftest('original', '', '2026-12-04T01:00:00Z', metric=50)
        self.kselftest('original', '', '2026-12-04T01:10:00Z', metric=70)
        self.kselftest('patched', V2, '2026-12-04T02:00:00Z', metric=900)
        self.kselftest('patched', V3, '2026-12-04T03:00:00Z', metric=55)
        t = self.text('measured-metrics')
        self.assertIn('| test_memcg_reparent:test_reparent_slab | dead_ms | original | 2 | 60 [50-70] |', t)
        self.assertIn('| dead_ms | patched@60e1b404 | 1 | 900 |', t)
        self.assertIn('| dead_ms | patched@aaaabbbb | 1 | 55 |', t)
        self.assertIn('`patched@60e1b404`: v2', t)      # named in reports/series-names
        self.assertIn('From 4 kselftest runs', t)

    def test_flaky_compares_the_newest_series(self):
        self.kselftest('original', '', '2026-12-04T01:00:00Z')
        self.kselftest('patched', V2, '2026-12-04T02:00:00Z')
        self.kselftest('patched', V3, '2026-12-04T03:00:00Z')
        # fake kselftests fail the LRU subtests on original only: every row is
        # original failing, the newest series passing.
        t = self.text('measured-flaky')
        self.assertIn('| original fails | patched@aaaabbbb fails | p |', t)
        self.assertIn('| test_memcg_reparent:test_reparent_pagecache | 1 of 1 | 0 of 1 | 1 |', t)
        self.assertNotIn('60e1b404', t)

    def test_bench_block_is_the_newest_batch(self):
        for i, k in enumerate(('original', 'patched')):
            d = os.path.join(self.tmp, f'bench-{k}')
            fake_run.bench_run(d, k, started=f'2026-12-04T0{i}:00:00Z')
            self.store(d, batch='b1')
        t = self.text('measured-bench')
        self.assertIn('`python3 reports/bench_table.py --batch b1 --markdown`', t)
        self.assertIn('| fast.read_mibps |', t)

    def test_bench_block_is_not_a_batch_of_some_fast_paths(self):
        """A newer batch of fast_tests=read only (one question) does not
        replace the newest batch that ran every fast path."""
        for batch, hour, words in (('b-all', 1, 'fast_tests=read,fault'), ('b-read', 3, 'fast_tests=read')):
            for k in ('original', 'patched'):
                d = os.path.join(self.tmp, f'{batch}-{k}')
                fake_run.bench_run(d, k, started=f'2026-12-04T0{hour}:00:00Z', run_words=words)
                self.store(d, batch=batch)
        t = self.text('measured-bench')
        self.assertIn('--batch b-all --markdown', t)
        self.assertNotIn('b-read', t)

    def test_bench_jobs_block_is_a_batch_of_the_jobs_alone(self):
        """The newest batch of fast_tests=jobs,spin (or jobs), not a newer
        one of every fast path nor one of another fast path alone."""
        self.assertIn('`NOBUILD=1 make bench-jobs`', self.text('measured-bench-jobs'))
        for batch, hour, words in (('b-jobs', 1, 'fast_tests=jobs,spin'), ('b-all', 2, 'fast_tests=read,jobs,spin'),
                                   ('b-read', 3, 'fast_tests=read')):
            for k in ('original', 'patched'):
                d = os.path.join(self.tmp, f'{batch}-{k}')
                jobs = [f'@@ result metric=fast.jobs_per_s param=16 rep={rep} value={300 + rep} unit=jobs/s'
                        for rep in (1, 2, 3)]
                fake_run.bench_run(d, k, started=f'2026-12-04T0{hour}:00:00Z', run_words=words, extra=jobs)
                self.store(d, batch=batch)
        t = self.text('measured-bench-jobs')
        self.assertIn('--batch b-jobs --markdown', t)
        self.assertIn('| fast.jobs_per_s |', t)
        self.assertNotIn('b-all', t)
        self.assertNotIn('b-read', t)

    def reclaim_batch(self, batch, series, started, reps=3, refault=0.0):
        for k in ('original', 'patched'):
            d = os.path.join(self.tmp, f'{batch}-{k}')
            fake_run.bench_run(d, k, reps=0, parts='reclaim', reclaim_reps=reps, started=started,
                               reclaim_refault=refault if k == 'patched' else 0.0, clock='icount')
            set_meta(d, series_key=series, image_key=f'img-{k}-{series}')
            self.store(d, batch=batch)

    def test_reclaim_block_is_the_newest_batch_of_two_series(self):
        """One table per series version, its newest batch that gives an
        interval; a smoke batch of one rep, or a third version, is left out."""
        self.assertIn("BENCH='parts=reclaim'", self.text('measured-reclaim'))
        self.reclaim_batch('v2-old', V2, '2026-12-04T01:00:00Z', refault=30.0)
        self.reclaim_batch('v2-new', V2, '2026-12-04T02:00:00Z', refault=25.8)
        self.reclaim_batch('v3', V3, '2026-12-04T03:00:00Z')
        self.reclaim_batch('v3-smoke', V3, '2026-12-04T04:00:00Z', reps=1)
        t = self.text('measured-reclaim')
        self.assertIn('--batch v3 --markdown` (patched@aaaabbbb)', t)
        self.assertIn('--batch v2-new --markdown` (patched@60e1b404)', t)
        self.assertNotIn('v2-old', t)
        self.assertNotIn('smoke', t)
        self.assertIn('| reclaim.gen.refault_pct |', t)
        self.assertIn('| 25.8 [25.8-25.8] (3) |', t)
        self.assertIn('knobs: parts=reclaim', t)
        self.assertLess(t.index('--batch v3 '), t.index('--batch v2-new '))

    def test_insn_block_lists_the_functions_apart(self):
        self.assertIn('No two profiling boots', self.text('measured-insn'))
        ids = {}
        for i, k in enumerate(('original', 'patched', 'original', 'patched')):
            d = os.path.join(self.tmp, f'prof{i}')
            fake_run.bench_run(d, k, started=f'2026-12-04T0{i}:00:00Z', tag=f'20261204-0{i}0000-bench')
            set_meta(d, series_key='abcdef12' if k == 'patched' else '')
            self.store(d)
            rid = self.db.execute('SELECT max(id) FROM runs').fetchone()[0]
            ids.setdefault(k, []).append(rid)
            extra = 10 if k == 'patched' else 0
            rows = [('folio_memcg', 1000 + 100 * extra + i, 100), ('noise', 5000 + 7 * i, 50),
                    ('new_helper', 300 * (k == 'patched'), 30 * (k == 'patched'))]
            self.db.executemany('INSERT INTO insn_profile (run_id, function, insns, calls) VALUES (?, ?, ?, ?)',
                                [(rid, f, n, c) for f, n, c in rows if n])
        self.db.commit()
        t = self.text('measured-insn')
        self.assertIn(f'Runs {ids["original"][1]}, {ids["original"][0]} (original) and '
                      f'{ids["patched"][1]}, {ids["patched"][0]} (patched@abcdef12)', t)
        self.assertIn('| folio_memcg | +1001 | 100 | 100 | 10.0 | 20.0 |', t)
        self.assertIn('| new_helper | +300 | 0 | 30 | - | 10.0 |', t)
        self.assertNotIn('| noise |', t)      # its ranges overlap
        self.assertIn('2 functions have ranges apart; their differences sum to +1301', t)

    def test_insn_block_keeps_windowed_profiles_apart(self):
        """Profiles counted from a mark with user space (FROM_SYNC,
        PROFILE_USER) are compared among themselves, and say so."""
        ids = {}
        for i, k in enumerate(('original', 'patched') * 4):
            d = os.path.join(self.tmp, f'prof{i}')
            fake_run.bench_run(d, k, started=f'2026-12-04T0{i}:00:00Z', tag=f'20261204-0{i}0000-bench')
            set_meta(d, series_key='abcdef12' if k == 'patched' else '')
            window = i >= 4
            if window:
                with open(os.path.join(d, 'meta'), 'a') as f:
                    f.write('profile_from=sync:2,user\n')
            self.store(d)
            rid = self.db.execute('SELECT max(id) FROM runs').fetchone()[0]
            ids.setdefault((k, window), []).append(rid)
            self.db.execute('INSERT INTO insn_profile (run_id, function, insns, calls) VALUES (?, ?, ?, ?)',
                            (rid, 'folio_memcg', (10 ** 6 if not window else 1000) + 100 * (k == 'patched') + i, 5))
        self.db.commit()
        t = self.text('measured-insn')
        o, p = ids[('original', True)], ids[('patched', True)]
        self.assertIn(f'Runs {o[1]}, {o[0]} (original) and {p[1]}, {p[0]} (patched@abcdef12)', t)
        self.assertIn('`FROM_SYNC=2 PROFILE_USER=1 qemu-run/jobs/insn-profile.sh KERNEL', t)
        self.assertIn("Instructions from the guest's sync(2) number 2 on, user space included: original", t)
        self.assertNotIn('the boot and idle included', t)

    def test_insn_block_passes_over_a_probe_and_other_jobs(self):
        """The newest workload with two boots a side: a newer one-boot
        probe (other reps) and a kselftest run's profile are passed over."""
        ids = {}
        runs = [('original', 'fast_reps=2'), ('patched', 'fast_reps=2')] * 2 + [('patched', 'fast_reps=6')]
        for i, (k, reps) in enumerate(runs):
            d = os.path.join(self.tmp, f'prof{i}')
            fake_run.bench_run(d, k, started=f'2026-12-04T0{i}:00:00Z', tag=f'20261204-0{i}0000-bench',
                               fast_reps=int(reps.split('=')[1]))
            set_meta(d, series_key='abcdef12' if k == 'patched' else '')
            self.store(d)
            rid = self.db.execute('SELECT max(id) FROM runs').fetchone()[0]
            ids.setdefault((k, reps), []).append(rid)
            self.db.execute('INSERT INTO insn_profile (run_id, function, insns, calls) VALUES (?, ?, ?, ?)',
                            (rid, 'folio_memcg', 1000 + 100 * (k == 'patched') + i, 5))
        d = os.path.join(self.tmp, 'ksft')
        fake_run.kselftest_run(d, 'patched', started='2026-12-04T09:00:00Z')
        set_meta(d, series_key='abcdef12')
        self.store(d)
        rid = self.db.execute('SELECT max(id) FROM runs').fetchone()[0]
        self.db.execute('INSERT INTO insn_profile (run_id, function, insns, calls) VALUES (?, ?, ?, ?)',
                        (rid, 'swap_cgroup_reassign', 10 ** 8, 1))
        self.db.commit()
        t = self.text('measured-insn')
        o, p = ids[('original', 'fast_reps=2')], ids[('patched', 'fast_reps=2')]
        self.assertIn(f'Runs {o[1]}, {o[0]} (original) and {p[1]}, {p[0]} (patched@abcdef12)', t)
        self.assertNotIn('swap_cgroup_reassign', t)

    def test_stress_block_shows_the_end_record(self):
        d = os.path.join(self.tmp, 'stress')
        fake_run.stress_run(d)
        self.store(d)
        t = self.text('measured-stress')
        row = [line for line in t.splitlines() if line.startswith('| debug')]
        self.assertEqual(len(row), 1, t)
        self.assertIn('| 180083 |', row[0])         # end.t_ms of the captured run


class Series(unittest.TestCase):
    def test_current_series_is_lib_sh_series_key(self):
        import subprocess
        r = subprocess.run(['bash', '-c', f'. {TOP}/qemu-run/lib.sh && series_key_of patched'],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(store.current_series(), r.stdout.strip())

    def test_legend(self):
        names = {'60e1b404': 'v2'}
        self.assertEqual(figures.legend(['original', 'patched@60e1b404', 'patched@60e1b404'], names),
                         'Series: `patched@60e1b404`: v2.')
        self.assertEqual(figures.legend(['original'], names), '')


if __name__ == '__main__':
    unittest.main()
