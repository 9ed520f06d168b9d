"""Bench runs in the database: db/ingest.py on fake bench folders
(fake_run.bench_run), the bench records' parser, batches, the side-by-side
table (reports/bench_table.py), and schema migration 002 on a version-1
database full of runs."""
import io
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, 'db'))
sys.path.insert(0, os.path.join(TOP, 'qemu-run', 'records'))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(TOP, 'reports'))
import bench_table  # noqa: E402
import compare  # noqa: E402
import check  # noqa: E402
import fake_run  # noqa: E402
import records  # noqa: E402
import store  # noqa: E402
from test_ingest import Base  # noqa: E402

BENCH_TABLE = os.path.join(TOP, 'reports', 'bench_table.py')
BATCH = '20261203-100000-bench'


class Ingest(Base):
    def bench(self, kernel, name=None, **kw):
        d = os.path.join(self.tmp, name or kernel)
        n = fake_run.bench_run(d, kernel, **kw)
        return d, n

    def test_results_stored(self):
        d, n = self.bench('original')
        line = self.ingest(d)
        self.assertIn(f'bench on original, {n} results', line)
        self.assertEqual(self.one('SELECT count(*) FROM bench'), n)
        self.assertEqual(self.one("SELECT kind FROM runs"), 'bench')
        self.assertEqual(self.one('SELECT snapshots FROM runs'), n)
        self.assertEqual(self.one('SELECT soak_rc FROM runs'), 0)
        self.assertEqual(self.one("SELECT value FROM params WHERE key = 'sizes'"), '1,64,512')
        # Not released on original: no value, the bound instead.
        rows = self.db.execute("SELECT value, lim, unit FROM bench WHERE metric = 'offline.release_us'").fetchall()
        self.assertEqual(len(rows), 6)
        self.assertTrue(all(v is None and lim == 10_000_000 and u == 'us' for v, lim, u in rows), rows)
        self.assertEqual(check.problems(self.db), [])
        self.assertIn('already stored', self.ingest(d))
        self.assertEqual(self.one('SELECT count(*) FROM bench'), n)

    def test_replace(self):
        d, n = self.bench('patched')
        self.ingest(d)
        self.ingest(d, replace=True)
        self.assertEqual(self.one('SELECT count(*) FROM bench'), n)
        self.assertEqual(self.one('SELECT count(*) FROM runs'), 1)
        self.assertEqual(check.problems(self.db), [])

    def test_malformed_results_are_dropped(self):
        extra = ['@@ result metric=fast.x param=0 rep=1 value=abc unit=us',
                 '@@ result metric=fast.x param=0 rep=1 value=none unit=us',
                 '@@ result metric=fast.x param=0 rep=0 value=1 unit=us',
                 '@@ result metric=Bad-Name param=0 rep=1 value=1 unit=us',
                 '@@ result metric=fast.x param=0 rep=1 value=1',
                 '@@ result metric=fast.read_mibps param=65536 rep=1 value=1 unit=MiB/s',   # a repeat
                 '@@ result metric=fast.y param=0 rep=1 value=-1.5e+03 unit=us',
                 '@@ result metric=fast.z param=0 rep=1 value=none unit=us limit=5']
        d, n = self.bench('patched', extra=extra)
        line = self.ingest(d)
        self.assertIn(f'bench on patched, {n + 2} results; 6 results dropped', line)
        self.assertEqual(self.one("SELECT value FROM bench WHERE metric = 'fast.y'"), -1500.0)
        self.assertEqual(self.one("SELECT lim FROM bench WHERE metric = 'fast.z'"), 5.0)
        self.assertEqual(self.one('SELECT dropped FROM runs'), 6)
        self.assertEqual(check.problems(self.db), [])

    def test_no_end(self):
        d, n = self.bench('patched', end=False)
        line = self.ingest(d)
        self.assertIn('no "@@ end" record', line)
        self.assertIsNone(self.one('SELECT soak_rc FROM runs'))

    def test_batch(self):
        d1, _ = self.bench('original')
        d2, _ = self.bench('patched')
        self.ingest(d1)        # stored without a batch first, as soak.sh does
        line = ingest_batch(self, d1, BATCH)
        self.assertIn(f'in batch {BATCH}', line)
        ingest_batch(self, d2, BATCH)
        self.assertEqual(self.one('SELECT count(*) FROM runs WHERE batch = ?', BATCH), 2)
        line = ingest_batch(self, d1, 'other')
        self.assertIn(f'stays in batch {BATCH}', line)
        self.assertEqual(self.one('SELECT count(DISTINCT batch) FROM run_list'), 1)


def ingest_batch(t, d, batch):
    return fake_run.store(t.db, d, False, t.known, t.expect, t.path, batch)


class Table(Base):
    def fill(self, rounds=2, churn=True):
        for r in range(rounds):
            for k in ('original', 'patched'):
                d = os.path.join(self.tmp, f'{BATCH}-{r}-{k}')
                fake_run.bench_run(d, k, seed=r, started=f'2026-12-03T10:0{r}:00Z')
                fake_run.store(self.db, d, False, self.known, self.expect, self.path, BATCH)
        if churn:
            for k in ('original', 'patched'):
                d = os.path.join(self.tmp, f'{BATCH}-churn-{k}')
                fake_run.soak_run(d, k, gens=1000, sample_every=100, started='2026-12-03T11:00:00Z')
                fake_run.store(self.db, d, False, self.known, self.expect, self.path, BATCH)

    def rows(self):
        _, rows, _ = bench_table.table(self.db, BATCH)
        return {(r[0], r[1]): r for r in rows}

    def test_side_by_side(self):
        self.fill()
        rows = self.rows()
        rel = rows[('offline.release_us', '512 MiB')]
        self.assertEqual(rel[3], 'not released (4/4)')
        self.assertRegex(rel[4], r'^\d+ \[\d+-\d+\] \(4\)$')
        self.assertEqual(rel[5], '')                      # no delta against "not released"
        read = rows[('fast.read_mibps', '64 MiB')]
        self.assertRegex(read[3], r'\(6\)$')              # 3 reps x 2 boots
        self.assertRegex(read[5], r'^[+-]\d+\.\d%$')
        self.assertRegex(read[6], r'^[+-]\d+\.\d%$')     # delta p75: 6 values each
        self.assertRegex(read[7], r'^\[[+-]\d+\.\d%, [+-]\d+\.\d%\]$')   # bootstrap interval
        self.assertIn(read[8], ('overlap', 'apart'))
        self.assertEqual(rel[6], '')                      # p75 only for the fast.* rates
        self.assertEqual(rel[7], '')                      # no interval against "not released"
        # The guest's order: offline before fast, sizes ascending.
        names = [r[0] for r in bench_table.table(self.db, BATCH)[1]]
        self.assertLess(names.index('offline.release_us'), names.index('fast.read_mibps'))
        self.assertEqual(names[-2:], ['churn.dying_end', 'churn.dying_after_drop'])
        self.assertRegex(rows[('churn.dying_end', '1000 gens')][3], r'^\d+ \[\d+-\d+\] \(1\)$')

    def test_bootstrap_interval(self):
        # Two clearly apart samples: the interval excludes 0, and holds the
        # change of the medians; the same sample twice: it holds 0.
        a = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2]
        b = [v * 0.97 for v in a]
        lo, hi = (float(x.strip('%')) for x in compare.bootstrap_ci(a, b).strip('[]').split(', '))
        self.assertLess(hi, 0)
        self.assertLessEqual(lo, -3.0 + 1e-9)
        self.assertGreaterEqual(hi, -3.0 - 1e-9)
        lo, hi = (float(x.strip('%')) for x in compare.bootstrap_ci(a, a).strip('[]').split(', '))
        self.assertTrue(lo < 0 < hi)                      # the same sample: no change measured
        self.assertEqual(compare.bootstrap_ci(a[:2], b), '')
        self.assertEqual(compare.bootstrap_ci(a + [None], b), compare.bootstrap_ci(a, b))

    def test_bootstrap_interval_by_boot(self):
        # Each kernel's reps agree within a boot, but its four boots are up
        # to 1.5% apart: pooled, the twenty reps look like one sample;
        # resampled boot by boot, the interval holds the gaps.  Boots that
        # agree give the pooled interval.
        reps = [0, 0.1, -0.1, 0.05, -0.05]
        o = [[100 + off + r for r in reps] for off in (0, 1, 0.5, -0.5)]
        p = [[v - 0.3 for v in g] for g in o]
        flat = lambda groups: [v for g in groups for v in g]
        lo_b, hi_b = compare.bootstrap_interval(o, p)
        lo_f, hi_f = compare.bootstrap_interval(flat(o), flat(p))
        self.assertGreater(hi_b - lo_b, 1.5 * (hi_f - lo_f))
        self.assertTrue(lo_b < 0 < hi_b)                  # the boots' gaps drown the -0.3%
        same = [[100 + off + r for r in reps] for off in (0, 0.01, -0.01, 0.02)]
        lo_s, hi_s = compare.bootstrap_interval(same, [[v - 0.3 for v in g] for g in same])
        lo_f, hi_f = compare.bootstrap_interval(flat(same), [v - 0.3 for v in flat(same)])
        self.assertAlmostEqual(lo_s, lo_f, delta=0.02)
        self.assertAlmostEqual(hi_s, hi_f, delta=0.02)
        self.assertLess(hi_s, 0)
        self.assertEqual(compare.bootstrap_interval([flat(o)], [flat(p)]),
                         compare.bootstrap_interval(flat(o), flat(p)))
        self.assertEqual(compare.bootstrap_interval([[1.0], [2.0]], p), None)      # 2 values: none
        self.assertEqual(compare.bootstrap_interval([o[0] + [None], [None]], p),
                         compare.bootstrap_interval([o[0]], p))

    def test_mixed_clocks_refused(self):
        self.fill(rounds=1, churn=False)
        self.db.execute("UPDATE runs SET clock = 'icount' WHERE id = 1")
        with self.assertRaises(SystemExit) as e:
            bench_table.table(self.db, BATCH)
        self.assertIn('mixes guest clocks', str(e.exception))
        self.db.execute("UPDATE runs SET clock = 'icount'")
        head, _, _ = bench_table.table(self.db, BATCH)
        self.assertIn('guest clock: icount', '\n'.join(head))

    def fill_stressng(self, rounds=2, nodes=2, failed=()):
        for r in range(rounds):
            for k in ('original', 'patched'):
                d = os.path.join(self.tmp, f'{BATCH}-{r}-{k}')
                fake_run.bench_run(d, k, seed=r, started=f'2026-12-03T10:0{r}:00Z', parts='stressng', sizes=(),
                                   clock='icount', nodes=nodes,
                                   stressng_failed=failed if (r, k) == (0, 'patched') else ())
                fake_run.store(self.db, d, False, self.known, self.expect, self.path, BATCH)

    def test_stressng(self):
        """parts=stressng on a two-node guest: a row per stressor, its
        instances as the param, a failed run as "failed (k/n)", never a
        number; the head names the nodes and the knobs."""
        self.fill_stressng(failed=(('sock', 2),))
        head, rows, notes = bench_table.table(self.db, BATCH)
        by = {(r[0], r[1]): r for r in rows}
        self.assertEqual(sorted(by), [(f'stressng.{s}_ops_per_s', '2 instances')
                                      for s in ('fork', 'pipe', 'sock', 'switch')])
        sw = by[('stressng.switch_ops_per_s', '2 instances')]
        self.assertEqual(sw[2], 'ops/s')
        self.assertRegex(sw[3], r'^\d+ \[\d+-\d+\] \(6\)$')        # 3 reps x 2 boots
        self.assertRegex(sw[5], r'^-\d+\.\d%$')                     # patched 1% fewer
        self.assertRegex(sw[7], r'^\[[+-]\d+\.\d%, [+-]\d+\.\d%\]$')
        sock = by[('stressng.sock_ops_per_s', '2 instances')]
        self.assertRegex(sock[4], r'^\d+ \[\d+-\d+\] \(5\); failed \(1/6\)$')
        self.assertEqual(sock[5], '')                                 # no delta against a failure
        text = '\n'.join(head)
        self.assertIn('guest: 2 NUMA nodes', text)
        self.assertIn('stressors=switch,pipe,sock,fork stressng_secs=5 stressng_reps=3', text)
        self.assertTrue(any(n.startswith('stressng.<stressor>_ops_per_s') and 'all 2 nodes' in n
                            and 'an instruction cost' in n for n in notes), notes)
        # the patched boot that failed ended rc=1: said, its results kept
        self.assertTrue(any('ended with rc=1' in n for n in notes), notes)

    def test_one_node_head_unchanged(self):
        self.fill(rounds=1, churn=False)
        head, _, _ = bench_table.table(self.db, BATCH)
        self.assertFalse(any('NUMA' in h for h in head), head)
        self.assertEqual(self.one('SELECT DISTINCT nodes FROM runs'), 1)

    def test_mixed_nodes_refused(self):
        self.fill_stressng(rounds=1)
        self.assertEqual(self.one('SELECT count(*) FROM runs WHERE nodes = 2'), 2)
        self.db.execute('UPDATE runs SET nodes = 1 WHERE id = 1')
        with self.assertRaises(SystemExit) as e:
            bench_table.table(self.db, BATCH)
        self.assertIn('mixes guests of 1 and 2 NUMA nodes', str(e.exception))

    def test_partly_released(self):
        self.fill(rounds=1, churn=False)
        self.db.execute("UPDATE bench SET value = NULL, lim = 1e7 WHERE metric = 'offline.release_us' "
                        "AND rep = 1 AND param = 1024 AND run_id = (SELECT r.id FROM runs r JOIN kernels k "
                        "ON k.id = r.kernel_id WHERE k.name = 'patched')")
        cell = self.rows()[('offline.release_us', '1 MiB')][4]
        self.assertRegex(cell, r'^\d+ \[\d+-\d+\] \(1\); not released \(1/2\)$')

    def test_bad_boot_left_out(self):
        self.fill(rounds=1, churn=False)
        self.db.execute("UPDATE runs SET verdict = 'bad' WHERE id = 1")
        head, rows, notes = bench_table.table(self.db, BATCH)
        self.assertIn('0 original and 1 patched boots', head[0])
        self.assertTrue(any('left out' in n for n in notes))
        self.assertEqual({r[3] for r in rows if r[0].startswith('offline.')}, {'-'})

    def test_command_line(self):
        self.fill(rounds=1)
        self.db.close()
        env = dict(os.environ, RUNS_DB=self.path)
        out = subprocess.run([sys.executable, BENCH_TABLE], env=env, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn(f'bench batch {BATCH}', out.stdout)
        self.assertIn('not released (2/2)', out.stdout)
        md = subprocess.run([sys.executable, BENCH_TABLE, '--markdown', '--batch', BATCH], env=env,
                            capture_output=True, text=True)
        self.assertEqual(md.returncode, 0, md.stderr)
        self.assertIn('| metric | param | unit |', md.stdout)
        none = subprocess.run([sys.executable, BENCH_TABLE, '--batch', 'nope'], env=env,
                              capture_output=True, text=True)
        self.assertEqual(none.returncode, 1)
        self.db = store.connect(self.path)


class Parse(unittest.TestCase):
    def test_walk(self):
        text = ('@@ run bench sizes=1 reps=1 tag=x\n'
                '@@ result metric=offline.release_us param=1024 rep=1 value=1234.5 unit=us\n'
                '@@ progress part=offline done=1 of=1 t_ms=5\n'
                'garbage\n'
                '@@ result metric=offline.release_us param=4096 rep=1 value=none unit=us limit=1e+07\n'
                '@@ end rc=1 results=2 t_ms=9\n')
        w = records.BenchResults(io.StringIO(text))
        got = list(w)
        self.assertEqual(got, [('offline.release_us', 1024, 1, 1234.5, 'us', None),
                               ('offline.release_us', 4096, 1, None, 'us', 1e7)])
        self.assertEqual(w.run, {'sizes': '1', 'reps': '1', 'tag': 'x'})
        self.assertEqual(w.end, {'rc': 1, 'results': '2', 't_ms': '9'})
        self.assertEqual(w.dropped, 0)

    def test_upper_quartile(self):
        # A bimodal sample: the same fast and slow states, mixed 6:2 and
        # 3:5.  The medians differ by 40%, the upper quartiles not at all
        # (while more than a quarter of the values are fast).
        o = [100, 100, 100, 100, 100, 100, 60, 60]
        p = [100, 100, 100, 60, 60, 60, 60, 60]
        self.assertEqual((statistics.median(o), statistics.median(p)), (100, 60))
        self.assertEqual(compare.upper_quartile(o), 100)
        self.assertEqual(compare.p75_delta('fast.read_mibps', o, p), '+0.0%')
        self.assertEqual(compare.p75_delta('fast.read_mibps', [1, 2, 3, 4], [2, 4, 6, 8]), '+100.0%')
        self.assertEqual(compare.upper_quartile([1, 2, 3, 4]), 3.25)
        # Too few values, a value not reached, or not a fast.* rate: nothing.
        self.assertIsNone(compare.upper_quartile([1, 2, 3]))
        self.assertIsNone(compare.upper_quartile([1, 2, 3, 4, None]))
        self.assertEqual(compare.p75_delta('offline.release_us', o, p), '')
        self.assertEqual(compare.p75_delta('fast.fault_per_s', o, [1, 2]), '')

    def test_fmt(self):
        self.assertEqual(bench_table.fmt(123456.7), '123457')
        self.assertEqual(bench_table.fmt(12.34), '12.3')
        self.assertEqual(bench_table.fmt(0.01234), '0.0123')
        self.assertEqual(compare.size(524288), '512 MiB')
        self.assertEqual(compare.size(64), '64 KiB')
        self.assertEqual(compare.size(0), '-')


class Migration(unittest.TestCase):
    """A version-1 database with runs in it becomes version 2 with its data
    intact; the new kinds are allowed, others still refused."""

    def test_v1_to_latest(self):
        tmp = tempfile.mkdtemp(prefix='db-mig-')
        try:
            path = os.path.join(tmp, 'v1.sqlite')
            first = store.migrations()[:1]
            with mock.patch.object(store, 'migrations', lambda: first), \
                    mock.patch.object(store, 'SCHEMA_VERSION', 1):
                # Today's ingest writes today's kselftest columns: the v1
                # rows are written as v1 had them.
                fake_run.fill_db(path, os.path.join(tmp, 'runs'), nights=2, gens=200, sample_every=50,
                                 kselftest=False)
            old = sqlite3.connect(path)
            rid = old.execute('SELECT min(id) FROM runs').fetchone()[0]
            old.executemany('INSERT INTO kselftest (run_id, ord, test, subtest, outcome, reason, expected, surprise) '
                            'VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
                            [(rid, 1, 't', 'a', 'pass', '', 'pass', 0), (rid, 2, 't', 'b', 'fail', '', 'fail', 0)])
            old.commit()
            self.assertEqual(old.execute('PRAGMA user_version').fetchone()[0], 1)
            tables = ('kernels', 'runs', 'params', 'kselftest', 'sources', 'keys', 'snapshots', 'samples')
            before = {t: old.execute(f'SELECT * FROM {t} ORDER BY 1, 2').fetchall() for t in tables}
            views = ('run_list', 'latest_runs', 'dying', 'kselftest_matrix', 'soak_final', 'nightly_trend')
            vbefore = {v: old.execute(f'SELECT * FROM {v} ORDER BY 1, 2').fetchall() for v in views}
            old.close()
            self.assertEqual(len(before['runs']), 4)
            self.assertEqual(len(before['kselftest']), 2)

            db = store.connect(path)
            self.assertEqual(db.execute('PRAGMA user_version').fetchone()[0], store.SCHEMA_VERSION)
            for t in tables:
                after = db.execute(f'SELECT * FROM {t} ORDER BY 1, 2').fetchall()
                if t == 'runs':         # v2: batch, NULL; v3: clock, 'wall'; v5: lab, NULL; v8: nodes, 1
                    self.assertEqual({r[-4:] for r in after}, {(None, 'wall', None, 1)})
                    after = [r[:-4] for r in after]
                if t == 'kselftest':    # v3: first NULL, 1 attempt, 0 failed
                    self.assertEqual({r[-3:] for r in after}, {(None, 1, 0)})
                    after = [r[:-3] for r in after]
                self.assertEqual(after, before[t], t)
            for v in views:
                after = db.execute(f'SELECT * FROM {v} ORDER BY 1, 2').fetchall()
                if v in ('run_list', 'latest_runs'):
                    after = [r[:-1] for r in after]
                self.assertEqual(after, vbefore[v], v)
            self.assertEqual(check.problems(db), [])
            kid = db.execute('SELECT id FROM kernels LIMIT 1').fetchone()[0]
            ins = ("INSERT INTO runs (uid, kind, kernel_id, job, args, workload, started, verdict, snapshots, "
                   "dropped, run_dir, ingested) VALUES (?, ?, ?, 'x', '', '', 'x', 'clean', 0, 0, 'x', 'x')")
            db.execute(ins, ('a', 'bench', kid))
            db.execute(ins, ('b', 'stress', kid))
            with self.assertRaises(sqlite3.IntegrityError):
                db.execute(ins, ('c', 'nonsense', kid))
            db.close()
            # Opening it again changes nothing.
            db = store.connect(path)
            self.assertEqual(db.execute('PRAGMA user_version').fetchone()[0], store.SCHEMA_VERSION)
            db.close()
        finally:
            shutil.rmtree(tmp)


if __name__ == '__main__':
    unittest.main()
