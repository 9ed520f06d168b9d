"""db/ingest.py and schema version 7 for scenario runs (the differential
oracle, job scenario, kind oracle): a run stored whole, a checkpoint cut
short dropped, a SIGKILL in the middle of the transaction, and the
migration that lets runs.kind say 'oracle', from an empty database and
from one at version 6 with runs in it."""
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, 'db'))
sys.path.insert(0, os.path.join(TOP, 'qemu-run', 'records'))
sys.path.insert(0, HERE)
import check  # noqa: E402
import fake_run  # noqa: E402
import ingest  # noqa: E402
import records  # noqa: E402
import store  # noqa: E402
import test_ingest  # noqa: E402 (wait_read)

INGEST = os.path.join(TOP, 'db', 'ingest.py')
FIXTURES = os.path.join(TOP, 'qemu-run', 'tests', 'fixtures')
TABLES = ('kernels', 'runs', 'params', 'oracle_scenarios', 'oracle_checkpoints', 'oracle_values', 'oracle_acts',
          'oracle_audits', 'oracle_kmsg')
VIEWS = ('run_list', 'latest_runs', 'sample_list', 'memory_stat', 'dying', 'kselftest_matrix', 'soak_final',
         'nightly_trend', 'bench_list', 'fleet_soaks', 'fleet_trend')


def counts(db):
    return tuple(db.execute(f'SELECT count(*) FROM {t}').fetchone()[0] for t in TABLES)


def fixture(kernel):
    with open(os.path.join(FIXTURES, f'samples-oracle-{kernel}.log')) as f:
        return f.read()


def scenario_run(d, kernel, text, started='2026-12-05T10:00:00Z'):
    """A scenario run folder as boot.sh leaves it (meta, results.log) with
    text as its samples.log."""
    os.makedirs(d)
    fake_run.write_meta(d, kernel, 'scenario', 'scenario.files=basic.scn,pagecache.scn scenario.seed=1', started, 300)
    with open(os.path.join(d, 'results.log'), 'w') as f:
        f.write('@@ boot kernel=6.12.118+ job=scenario\n@@ done rc=0\n')
    with open(os.path.join(d, 'samples.log'), 'w') as f:
        f.write(text)
    return d


def big_records(scenarios=10, checkpoints=6, cgroups=25, keys=80, seed=1):
    """The samples.log of a large scenario run (guest/scenario.c's records,
    made up): scenarios x checkpoints x cgroups x keys values."""
    rng = random.Random(seed)
    files = ','.join(f's{i}.scn' for i in range(scenarios))
    out = [f'@@ run scenario files={files} seed={seed} cpus=2 mem_kb=1016164 swap_kb=524284 cgroup=v2']
    cgs = ['/'] + [f'P/job{i}' for i in range(cgroups - 1)]
    for s in range(scenarios):
        name = f's{s}'
        out.append(f'@@ scenario {name} file={name}.scn')
        seq = 0
        for c in range(checkpoints):
            for _ in range(3):
                seq += 1
                out.append(f'@@ act {name} {seq} line={seq + 2} ms={rng.randint(1, 90)} out=ok '
                           f'cmd=run P/job{c} anon 1M')
            out.append(f'@@ cp {name} cp{c}')
            for cg in cgs:
                out += [f'{cg} memory.stat:k{k} {rng.randint(0, 1 << 30)}' for k in range(keys)]
            out.append(f'@@ endcp {name} cp{c} lines={len(cgs) * keys}')
            for check_name in ('hierarchy', 'bounds', 'meminfo', 'kmsg'):
                out.append(f'@@ audit {name} cp{c} {check_name} ok fine')
        out.append(f'@@ endscenario {name} rc=0 acts={seq} t_ms={rng.randint(1000, 9000)}')
    out.append(f'@@ end rc=0 scenarios={scenarios} t_ms=600000')
    return '\n'.join(out) + '\n', scenarios * checkpoints * len(cgs) * keys


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='db-oracle-test-')
        self.addCleanup(shutil.rmtree, self.tmp)
        self.path = os.path.join(self.tmp, 'runs.sqlite')
        self.db = store.connect(self.path)
        self.addCleanup(self.db.close)

    def one(self, sql, *args):
        return self.db.execute(sql, args).fetchone()[0]

    def consistent(self):
        """sqlite's checks and the oracle runs' (db/check.py's snapshot
        count is a soak's: ingest.oracle_problems is the oracle's)."""
        bad = [r[0] for r in self.db.execute('PRAGMA integrity_check') if r[0] != 'ok']
        bad += [str(r) for r in self.db.execute('PRAGMA foreign_key_check')]
        return bad + ingest.oracle_problems(self.db)


class Store(Base):
    def test_fixture_runs_stored_whole(self):
        oracle = records.oracle_module()
        for kernel in ('original', 'patched'):
            d = scenario_run(os.path.join(self.tmp, kernel), kernel, fixture(kernel),
                             started=f'2026-12-05T10:00:0{int(kernel == "patched")}Z')
            line = ingest.ingest(self.db, d, db_path=self.path)
            audits = int(kernel == 'patched')
            self.assertIn(f'scenario run on {kernel}, 2 scenarios, 3 checkpoints, 88 values, 7 acts, '
                          f'{audits} audit failures, 0 kmsg', line)
        self.assertEqual(self.consistent(), [])
        self.assertEqual(self.db.execute("SELECT kind, job, soak_rc, t_ms, snapshots, dropped FROM runs "
                                         "ORDER BY id").fetchall(),
                         [('oracle', 'scenario', 0, 250210, 3, 0), ('oracle', 'scenario', 0, 250402, 3, 0)])
        self.assertTrue(self.one('SELECT workload FROM runs WHERE id = 1').startswith('files=basic.scn,pagecache.scn '))
        params = dict(self.db.execute('SELECT key, value FROM params WHERE run_id = 2'))
        self.assertEqual((params['files'], params['seed'], params['cgroup']), ('basic.scn,pagecache.scn', '1', 'v2'))
        # What is stored is what samples.log says.
        for run_id, kernel in ((1, 'original'), (2, 'patched')):
            run = oracle.parse(os.path.join(self.tmp, kernel, 'samples.log'))
            stored = {(s, c, cg, k): v for s, c, cg, k, v in self.db.execute(
                'SELECT scenario, checkpoint, cgroup, key, value FROM oracle_values WHERE run_id = ?', (run_id,))}
            want = {(s.name, c, cg, k): v for s in run.scenarios.values()
                    for c, vals in s.checkpoints.items() for (cg, k), v in vals.items()}
            self.assertEqual(stored, want)
            acts = self.db.execute('SELECT scenario, seq, line, ms, outcome, cmd FROM oracle_acts WHERE run_id = ? '
                                   'ORDER BY scenario, seq', (run_id,)).fetchall()
            self.assertEqual(acts, sorted((s.name, *a) for s in run.scenarios.values() for a in s.acts))
        self.assertEqual(self.db.execute('SELECT scenario, ord, file, rc, acts, t_ms FROM oracle_scenarios '
                                         'WHERE run_id = 2 ORDER BY ord').fetchall(),
                         [('basic', 1, 'basic.scn', 0, 4, 5302), ('pagecache', 2, 'pagecache.scn', 0, 3, 9100)])
        self.assertEqual(self.db.execute('SELECT scenario, checkpoint, check_name, detail FROM oracle_audits '
                                         'WHERE ok = 0').fetchall(),
                         [('pagecache', 'after-rmdir', 'meminfo',
                           'root memory.stat shmem 1048576 vs /proc/meminfo 5242880')])
        self.assertEqual(self.one('SELECT count(*) FROM oracle_audits'), 24)
        self.assertEqual(self.db.execute("SELECT kind, kernel FROM run_list ORDER BY run_id").fetchall(),
                         [('oracle', 'original'), ('oracle', 'patched')])
        # stored once
        before = counts(self.db)
        self.assertIn('already stored as run 1', ingest.ingest(self.db, os.path.join(self.tmp, 'original'),
                                                               db_path=self.path))
        ingest.ingest(self.db, os.path.join(self.tmp, 'original'), replace=True, db_path=self.path)
        self.assertEqual(counts(self.db), before)
        self.assertEqual(self.consistent(), [])

    def test_cut_short_checkpoint_is_dropped(self):
        text = fixture('original')
        cut = text[:text.index('oracle memory.stat:anon', text.index('@@ cp basic end'))]
        d = scenario_run(os.path.join(self.tmp, 'cut'), 'original', cut)
        line = ingest.ingest(self.db, d, db_path=self.path)
        self.assertIn('1 scenarios, 1 checkpoints, 33 values, 4 acts', line)
        self.assertIn('1 checkpoints dropped (checkpoint basic/end: cut short', line)
        self.assertIn('no "@@ end" record', line)
        self.assertEqual(self.db.execute('SELECT snapshots, dropped, soak_rc FROM runs').fetchone(), (1, 1, None))
        self.assertEqual(self.one("SELECT count(*) FROM oracle_values WHERE checkpoint = 'end'"), 0)
        self.assertEqual(self.db.execute('SELECT rc, acts FROM oracle_scenarios').fetchone(), (None, None))
        self.assertEqual(self.consistent(), [])

    def test_a_kernel_report_is_stored(self):
        text = fixture('patched').replace('@@ endscenario basic', '@@ kmsg basic WARNING: at mm/x.c:1\n'
                                          '@@ endscenario basic')
        ingest.ingest(self.db, scenario_run(os.path.join(self.tmp, 'k'), 'patched', text), db_path=self.path)
        self.assertEqual(self.db.execute('SELECT ord, scenario, line FROM oracle_kmsg').fetchall(),
                         [(1, 'basic', 'WARNING: at mm/x.c:1')])

    def test_no_samples_is_an_error_that_stores_nothing(self):
        d = scenario_run(os.path.join(self.tmp, 'x'), 'original', '')
        os.unlink(os.path.join(d, 'samples.log'))
        with self.assertRaisesRegex(ingest.RunError, 'samples.log is missing: a scenario run writes its records there'):
            ingest.ingest(self.db, d, db_path=self.path)
        self.assertEqual(self.one('SELECT count(*) FROM runs'), 0)


class Kill(unittest.TestCase):
    """SIGKILL the ingest of a scenario run in the middle of its
    transaction: the database is as it was, and the run can be stored after."""

    def test_sigkill_mid_transaction(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'runs.sqlite')
            small = scenario_run(os.path.join(tmp, 'small'), 'original', fixture('original'))
            text, n = big_records()
            big = scenario_run(os.path.join(tmp, 'big'), 'patched', text, started='2026-12-05T11:00:00Z')
            env = dict(os.environ, RUNS_DB=path)
            subprocess.run([sys.executable, INGEST, small], env=env, check=True, capture_output=True)
            db = sqlite3.connect(path)
            before = counts(db)
            db.close()
            size = os.path.getsize(os.path.join(big, 'samples.log'))
            p = subprocess.Popen([sys.executable, INGEST, big], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            pos = test_ingest.wait_read(p, 'samples.log', size * 0.5)
            p.send_signal(signal.SIGKILL)
            p.wait()
            self.assertIsNotNone(pos, 'ingest ended before it could be killed')
            db = sqlite3.connect(path)
            self.assertEqual(counts(db), before, f'killed at {pos}/{size}')
            self.assertEqual(ingest.oracle_problems(db), [])
            self.assertEqual(db.execute('PRAGMA integrity_check').fetchone()[0], 'ok')
            db.close()
            out = subprocess.run([sys.executable, INGEST, big], env=env, check=True,
                                 capture_output=True, text=True).stdout
            self.assertIn(f'60 checkpoints, {n} values', out)
            db = sqlite3.connect(path)
            self.assertEqual(counts(db)[5], before[5] + n)
            self.assertEqual(ingest.oracle_problems(db), [])
            db.close()


def db_at(path, version):
    """A database with the first version migrations applied, as a checkout
    of that version made it."""
    db = sqlite3.connect(path, isolation_level=None)
    for n, script in store.migrations()[:version]:
        with open(script) as f:
            stmts = store.split_sql(f.read())
        db.execute('BEGIN')
        for stmt in stmts:
            db.execute(stmt)
        db.execute(f'PRAGMA user_version = {n}')
        db.execute('COMMIT')
    return db


class Migration(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='db-migrate-test-')
        self.addCleanup(shutil.rmtree, self.tmp)
        self.path = os.path.join(self.tmp, 'runs.sqlite')

    def test_from_empty(self):
        db = store.connect(self.path)
        self.assertEqual(db.execute('PRAGMA user_version').fetchone()[0], 8)
        self.assertEqual(store.SCHEMA_VERSION, 8)
        self.assertIn("'oracle'", db.execute("SELECT sql FROM sqlite_master WHERE name = 'runs'").fetchone()[0])
        for v in VIEWS + ('oracle_latest',):
            db.execute(f'SELECT * FROM {v}').fetchall()
        self.assertEqual({r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index' "
                                                   "AND tbl_name = 'runs' AND sql IS NOT NULL")},
                         {'runs_kernel', 'runs_batch'})
        d = scenario_run(os.path.join(self.tmp, 'o'), 'original', fixture('original'))
        self.assertIn('scenario run on original', ingest.ingest(db, d, db_path=self.path))
        db.close()

    def test_from_version_6(self):
        """A database of the previous checkout, with soak and bench runs (a
        lab run, a batch, the icount clock): migrated, every run is as it
        was, every view says what it said, with the same definition; and
        it takes an oracle run, which version 6 refused."""
        db = db_at(self.path, 6)
        soak = os.path.join(self.tmp, 'soak')
        fake_run.soak_run(soak, 'original', gens=100, sample_every=20)
        with open(os.path.join(soak, 'meta'), 'a') as f:
            f.write('lava_job=77\n')
        ingest.ingest(db, soak, db_path=self.path)
        bench = os.path.join(self.tmp, 'bench')
        fake_run.bench_run(bench, 'patched', clock='icount')
        ingest.ingest(db, bench, db_path=self.path, batch='b1')
        oracle_dir = scenario_run(os.path.join(self.tmp, 'o'), 'original', fixture('original'))
        with self.assertRaisesRegex(sqlite3.IntegrityError, 'CHECK constraint'):   # the kind is not allowed
            ingest.ingest(db, oracle_dir, db_path=self.path)
        self.assertEqual(db.execute('SELECT count(*) FROM runs').fetchone()[0], 2)
        with self.assertRaisesRegex(sqlite3.IntegrityError, 'CHECK constraint'):
            db.execute("UPDATE runs SET kind = 'oracle' WHERE id = 1")

        def state(db):
            return ({v: db.execute(f'SELECT * FROM {v}').fetchall() for v in VIEWS},
                    dict(db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'view'")),
                    db.execute('SELECT * FROM runs ORDER BY id').fetchall(),
                    db.execute('SELECT count(*) FROM samples').fetchone()[0])
        views, sql, runs, samples = state(db)
        self.assertEqual([(r[0], r[2], r[-3], r[-2], r[-1]) for r in runs],
                         [(1, 'soak', None, 'wall', 'lava:77'), (2, 'bench', 'b1', 'icount', None)])
        self.assertTrue(all(views[v] for v in ('run_list', 'dying', 'soak_final', 'bench_list', 'fleet_soaks')))
        db.close()

        db = store.connect(self.path)
        self.assertEqual(db.execute('PRAGMA user_version').fetchone()[0], store.SCHEMA_VERSION)
        views7, sql7, runs7, samples7 = state(db)
        self.assertEqual([r[:-1] for r in runs7], runs)     # 008 added nodes, 1 for every run
        self.assertEqual({r[-1] for r in runs7}, {1})
        self.assertEqual(samples7, samples)
        self.assertEqual(views7, views)
        # 008 made the fleet views again (test_from_version_7)
        self.assertEqual({k: v for k, v in sql7.items() if k not in ('oracle_latest', 'fleet_soaks', 'fleet_trend')},
                         {k: v for k, v in sql.items() if k not in ('fleet_soaks', 'fleet_trend')})
        self.assertEqual(check.problems(db), [])
        self.assertIn('scenario run on original', ingest.ingest(db, oracle_dir, db_path=self.path))
        self.assertEqual(db.execute("SELECT id, kind FROM runs WHERE kind = 'oracle'").fetchall(), [(3, 'oracle')])
        self.assertEqual(ingest.oracle_problems(db), [])
        db.close()

    def test_from_version_7(self):
        """Version 8 (runs.nodes, boot.sh NODES): a version-7 database's
        runs get nodes 1 and every view says what it said; a run whose meta
        says nodes=2 is stored so, and its soak's fleet configuration names
        the nodes, a one-node one's reads as before."""
        db = db_at(self.path, 7)
        soak = os.path.join(self.tmp, 'soak')
        fake_run.soak_run(soak, 'original', gens=100, sample_every=20)
        ingest.ingest(db, soak, db_path=self.path)
        bench = os.path.join(self.tmp, 'bench')
        fake_run.bench_run(bench, 'patched', clock='icount')
        ingest.ingest(db, bench, db_path=self.path, batch='b1')
        views = {v: db.execute(f'SELECT * FROM {v}').fetchall() for v in VIEWS}
        runs = db.execute('SELECT * FROM runs ORDER BY id').fetchall()
        self.assertEqual(views['fleet_soaks'][0][5][:21], '1024 MiB, 2 vCPU, wal')
        db.close()

        db = store.connect(self.path)
        self.assertEqual(db.execute('PRAGMA user_version').fetchone()[0], 8)
        self.assertEqual({v: db.execute(f'SELECT * FROM {v}').fetchall() for v in VIEWS}, views)
        after = db.execute('SELECT * FROM runs ORDER BY id').fetchall()
        self.assertEqual([r[:-1] for r in after], runs)
        self.assertEqual([r[-1] for r in after], [1, 1])
        self.assertEqual(check.problems(db), [])
        two = os.path.join(self.tmp, 'soak2')
        fake_run.soak_run(two, 'original', gens=100, sample_every=20, started='2026-12-03T11:00:00Z')
        with open(os.path.join(two, 'meta'), 'a') as f:
            f.write('nodes=2\n')
        ingest.ingest(db, two, db_path=self.path)
        self.assertEqual(db.execute('SELECT nodes FROM runs WHERE id = 3').fetchone()[0], 2)
        configs = dict(db.execute('SELECT run_id, config FROM fleet_soaks'))
        self.assertTrue(configs[3].startswith('1024 MiB, 2 vCPU, 2 NUMA nodes, wall, config '), configs[3])
        self.assertTrue(configs[1].startswith('1024 MiB, 2 vCPU, wall, config '), configs[1])
        self.assertEqual(db.execute('SELECT count(*) FROM fleet_trend').fetchone()[0], 2)   # two configurations
        bad = os.path.join(self.tmp, 'soak3')
        fake_run.soak_run(bad, 'original', gens=100, sample_every=20, started='2026-12-03T12:00:00Z')
        with open(os.path.join(bad, 'meta'), 'a') as f:
            f.write('nodes=two\n')
        with self.assertRaisesRegex(ingest.RunError, 'nodes=two is not a number of NUMA nodes'):
            ingest.ingest(db, bad, db_path=self.path)
        self.assertEqual(db.execute('SELECT count(*) FROM runs').fetchone()[0], 3)
        db.close()


if __name__ == '__main__':
    unittest.main()
