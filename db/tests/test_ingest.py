"""db/ingest.py against fake run folders (fake_run.py) and the real
kselftest fixture: counts, idempotence, dropped snapshots, a SIGKILL in
the middle of the transaction, schema versions."""
import contextlib
import io
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
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

INGEST = os.path.join(TOP, 'db', 'ingest.py')
FIXTURE = os.path.join(TOP, 'qemu-run', 'tests', 'fixtures', 'results-original-kselftest.log')
SOAK_FIXTURE = os.path.join(TOP, 'qemu-run', 'tests', 'fixtures', 'samples-original-soak.log')


consistent = check.problems


def counts(db):
    return tuple(db.execute(f'SELECT count(*) FROM {t}').fetchone()[0]
                 for t in ('kernels', 'runs', 'params', 'kselftest', 'sources', 'keys', 'snapshots', 'samples'))


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='db-test-')
        self.path = os.path.join(self.tmp, 'runs.sqlite')
        self.expect = os.path.join(self.tmp, 'expectations')
        with open(self.expect, 'w') as f:
            f.write(fake_run.expectations_text())
        self.known = os.path.join(self.tmp, 'known-issues')
        open(self.known, 'w').close()
        self.db = store.connect(self.path)

    def tearDown(self):
        self.db.close()
        shutil.rmtree(self.tmp)

    def ingest(self, d, replace=False):
        return fake_run.store(self.db, d, replace, self.known, self.expect, self.path)

    def one(self, sql, *args):
        return self.db.execute(sql, args).fetchone()[0]


class Soak(Base):
    def test_original_and_patched(self):
        for k in ('original', 'patched'):
            d = os.path.join(self.tmp, k)
            n = fake_run.soak_run(d, k, gens=400, sample_every=20)
            line = self.ingest(d)
            self.assertIn(f'soak on {k}, 22 snapshots, {n} samples', line)
        self.assertEqual(consistent(self.db), [])
        self.assertEqual(self.one("SELECT count(*) FROM run_list WHERE kind = 'soak'"), 2)
        # What is stored is what samples.log says, read here line by line:
        # each snapshot's nr_dying_subsys_memory, at its generation.
        for k in ('original', 'patched'):
            want = []
            with open(os.path.join(self.tmp, k, 'samples.log')) as f:
                for line in f:
                    w = line.split()
                    if line.startswith('@@ sample '):
                        gen = int(w[3].split('=')[1])
                        note = ' '.join(w[5:]) or None
                    elif w[:2] == ['cgroup.stat', 'nr_dying_subsys_memory']:
                        want.append((gen, int(w[2]), note))
            got = self.db.execute('SELECT gen, dying, note FROM dying WHERE kernel = ? ORDER BY seq',
                                  (k,)).fetchall()
            self.assertEqual(got, want, k)
            self.assertEqual(len([g for g in got if g[2] is None]), 21)
            final = self.one('SELECT final_dying FROM soak_final WHERE kernel = ?', k)
            self.assertEqual(final, [g for g in got if g[2] is None][-1][1])
        self.assertEqual(self.one("SELECT count(*) FROM dying WHERE note = 'after=drop_caches'"), 2)
        self.assertEqual(self.one("SELECT value FROM params p JOIN runs r ON r.id = p.run_id "
                                  "JOIN kernels k ON k.id = r.kernel_id WHERE k.name = 'patched' AND key = 'seed'"), '1')
        self.assertEqual(self.one("SELECT count(DISTINCT gen) FROM memory_stat WHERE key = 'anon' AND kernel = 'patched'"), 21)
        self.assertEqual(self.one("SELECT gens FROM run_list WHERE kernel = 'original'"), 400)
        self.assertEqual(self.one("SELECT soak_rc FROM run_list WHERE kernel = 'original'"), 0)
        self.assertEqual(self.one("SELECT base_version FROM kernels WHERE name = 'original'"), '6.12.118')

    def test_twice_is_once(self):
        d = os.path.join(self.tmp, 'o')
        fake_run.soak_run(d, 'original', gens=200)
        self.ingest(d)
        before = counts(self.db)
        self.assertIn('already stored as run 1', self.ingest(d))
        self.assertIn('already stored', self.ingest(d + '/'))
        self.assertEqual(counts(self.db), before)
        self.assertIn('soak on original', self.ingest(d, replace=True))
        self.assertEqual(counts(self.db), before)
        self.assertEqual(consistent(self.db), [])

    def test_summary_follows_its_file(self):
        """kselftest.sh appends the line of every boot of a job to the main
        run's summary once the last boot is done, after the run was stored:
        storing it again brings the stored summary up to date, and nothing
        else (no second run, the same outcomes)."""
        d = os.path.join(self.tmp, 'k')
        fake_run.kselftest_run(d, 'original')
        self.ingest(d)
        before = counts(self.db)
        self.assertEqual(self.one('SELECT summary FROM runs'), 'original: fake summary line')
        whole = 'original: fake summary line | cgroup v1: original: 3 passed'
        with open(os.path.join(d, 'summary'), 'a') as f:
            f.write(whole + '\n')
        line = self.ingest(d)
        self.assertIn('already stored as run 1', line)
        self.assertIn('summary brought up to date', line)
        self.assertEqual(self.one('SELECT summary FROM runs'), whole)
        self.assertEqual(counts(self.db), before)
        self.assertNotIn('summary', self.ingest(d))
        self.assertEqual(consistent(self.db), [])

    def workloads_with_meta(self, plain_meta, other_meta):
        """Two soaks of the same knobs, each meta given a line more; their
        stored workloads, in that order."""
        for name, line, hour in (('plain', plain_meta, 10), ('other', other_meta, 11)):
            d = os.path.join(self.tmp, name)
            fake_run.soak_run(d, 'patched', gens=100, started=f'2026-12-03T{hour}:00:00Z')
            if line:
                with open(os.path.join(d, 'meta'), 'a') as f:
                    f.write(line + '\n')
            self.ingest(d)
        return [r[0] for r in self.db.execute('SELECT workload FROM runs ORDER BY id')]

    def test_extra_kernel_command_line_is_another_workload(self):
        """A soak booted with APPEND (a sysctl on the kernel command line)
        has the same knobs as the default soak but is another workload."""
        w = self.workloads_with_meta(None, 'append=sysctl.vm.dirty_expire_centisecs=300')
        self.assertEqual(w[1], w[0] + ' append=sysctl.vm.dirty_expire_centisecs=300')
        self.assertNotIn('append=', w[0])

    def test_a_windowed_profile_is_another_workload(self):
        """A profile counted from a mark (boot.sh FROM_SYNC, PROFILE_USER)
        is never grouped with whole-boot profiles of the same knobs."""
        w = self.workloads_with_meta('profile_from=', 'profile_from=sync:2,user')
        self.assertEqual(w[1], w[0] + ' profile_from=sync:2,user')
        self.assertNotIn('profile_from', w[0])

    def test_same_folder_name_other_start_is_another_run(self):
        d = os.path.join(self.tmp, 'o')
        fake_run.soak_run(d, 'original', gens=100, started='2026-12-03T10:00:00Z')
        self.ingest(d)
        fake_run.soak_run(d, 'original', gens=100, started='2026-12-04T10:00:00Z')
        self.ingest(d)
        self.assertEqual(self.one('SELECT count(*) FROM runs'), 2)
        self.assertEqual(self.one('SELECT count(*) FROM kernels'), 1)

    def test_truncated_last_snapshot_is_dropped(self):
        d = os.path.join(self.tmp, 'o')
        n = fake_run.soak_run(d, 'original', gens=200, sample_every=50, truncate=True)
        line = self.ingest(d)
        self.assertIn(f'4 snapshots, {n} samples', line)
        self.assertIn('1 snapshots dropped (snapshot 5: cut short', line)
        self.assertIn('no "@@ end" record', line)
        self.assertEqual(self.one('SELECT dropped FROM runs'), 1)
        self.assertIsNone(self.one('SELECT soak_rc FROM runs'))
        self.assertEqual(self.one('SELECT gens FROM runs'), 150)   # the last stored snapshot
        self.assertEqual(self.one('SELECT count(*) FROM samples WHERE seq = 5'), 0)
        self.assertEqual(consistent(self.db), [])

    def test_huge_value_drops_a_snapshot_not_the_run(self):
        d = os.path.join(self.tmp, 'o')
        fake_run.soak_run(d, 'original', gens=200, sample_every=50)
        path = os.path.join(d, 'samples.log')
        with open(path) as f:
            text = f.read()
        # The first data line of snapshot 2 gets a value past int64.
        head, _, tail = text.partition('@@ sample 2 ')
        first, _, rest = tail.partition('\n')
        line, _, rest = rest.partition('\n')
        src, key, _ = line.split(' ')
        with open(path, 'w') as f:
            f.write(f'{head}@@ sample 2 {first}\n{src} {key} 99999999999999999999\n{rest}')
        line = self.ingest(d)
        self.assertIn('1 snapshots dropped (snapshot 2: line', line)
        self.assertIn('64-bit', line)
        self.assertEqual(self.one('SELECT count(*) FROM samples WHERE seq = 2'), 0)
        self.assertEqual(consistent(self.db), [])

    def test_miscounted_snapshot_is_dropped(self):
        d = os.path.join(self.tmp, 'o')
        fake_run.soak_run(d, 'original', gens=200, sample_every=50, miscount=True)
        line = self.ingest(d)
        self.assertRegex(line, r'1 snapshots dropped \(snapshot 3: \d+ data lines, "@@ endsample" says 1\d+\)')
        self.assertEqual(self.one('SELECT snapshots FROM runs'), 5)
        self.assertEqual(consistent(self.db), [])

    def test_not_a_run(self):
        with self.assertRaisesRegex(ingest.RunError, 'not a run folder'):
            self.ingest(self.tmp)
        d = os.path.join(self.tmp, 'shell')
        os.makedirs(d)
        fake_run.write_meta(d, 'patched', 'shell', '', '2026-12-03T10:00:00Z', 3)
        with self.assertRaisesRegex(ingest.RunError, 'job "shell" leaves nothing to store'):
            self.ingest(d)
        self.assertEqual(counts(self.db)[1], 0)

    def test_unfinished_run(self):
        # A boot that never ended: no wall_secs or verdict, no "@@ done".
        d = os.path.join(self.tmp, 'o')
        fake_run.soak_run(d, 'original', gens=100, end=False)
        with open(os.path.join(d, 'meta')) as f:
            meta = [x for x in f if not x.startswith(('wall_secs=', 'verdict='))]
        with open(os.path.join(d, 'meta'), 'w') as f:
            f.writelines(meta)
        with open(os.path.join(d, 'results.log'), 'w') as f:
            f.write('@@ boot kernel=6.12.118+ job=soak\n')
        self.ingest(d)
        row = self.db.execute('SELECT verdict, wall_secs, done_rc, soak_rc FROM runs').fetchone()
        self.assertEqual(row, ('unfinished', None, None, None))


class RealSoak(Base):
    def test_captured_samples(self):
        """A samples.log captured from a real guest: every snapshot whole,
        the same dying count as the soak's own progress record."""
        d = os.path.join(self.tmp, 'real-soak')
        os.makedirs(d)
        shutil.copy(SOAK_FIXTURE, os.path.join(d, 'samples.log'))
        fake_run.write_meta(d, 'original', 'soak', 'gens=20 sample_every=10', '2026-12-03T11:00:00Z', 30)
        with open(os.path.join(d, 'results.log'), 'w') as f:
            f.write('@@ boot kernel=6.12.118+ job=soak\r\n@@ done rc=0\r\n')
        with open(SOAK_FIXTURE) as f:
            lines = f.read().splitlines()
        data = sum(1 for x in lines if not x.startswith('@@'))
        progress = [x for x in lines if x.startswith('@@ progress')][-1]
        self.assertIn(f'{data} samples', self.ingest(d))
        self.assertEqual(consistent(self.db), [])
        self.assertEqual(self.one('SELECT dropped FROM runs'), 0)
        final = self.db.execute('SELECT gen, dying FROM dying WHERE note IS NULL ORDER BY seq DESC').fetchone()
        self.assertEqual(f'gen={final[0]}', progress.split()[2])
        self.assertEqual(f'dying={final[1]}', progress.split()[4])
        self.assertEqual(self.one("SELECT count(*) FROM dying WHERE note = 'after=drop_caches'"), 1)
        self.assertEqual(self.one("SELECT value FROM params WHERE key = 'sample_every'"), '10')
        self.assertEqual(self.one('SELECT t_ms FROM runs'), int(lines[-1].split('t_ms=')[1]))


class Stress(Base):
    def test_captured_stress_run(self):
        """A stress run's samples.log captured from a real guest: its knobs
        and the totals of its "@@ end" record are stored."""
        d = os.path.join(self.tmp, 'stress')
        fake_run.stress_run(d)
        self.assertIn('stress on debug', self.ingest(d))
        params = dict(self.db.execute('SELECT key, value FROM params'))
        self.assertEqual((params['secs'], params['end.cgroups_created'], params['end.dying_drop']),
                         ('180', '184', '13'))
        self.assertEqual(self.db.execute('SELECT kind, soak_rc, t_ms FROM runs').fetchone(), ('stress', 0, 180083))
        self.assertEqual(consistent(self.db), [])


class AgreesWithSoakScan(Base):
    """qemu-run/jobs/soak.sh reads samples.log on the host too (its summary line):
    both must count the same complete and dropped snapshots."""
    SOAK_SH = os.path.join(TOP, 'qemu-run', 'jobs', 'soak.sh')

    def test_same_counts(self):
        d = os.path.join(self.tmp, 'o')
        fake_run.soak_run(d, 'original', gens=300, sample_every=50, truncate=True, miscount=True)
        scan = subprocess.run([self.SOAK_SH, '--scan', os.path.join(d, 'samples.log')],
                              capture_output=True, text=True)
        # A scan that breaks is a failure of the thing under test, not a skip.
        self.assertIn('complete=', scan.stdout, f'soak.sh --scan said no counts: {scan.stderr[:300]}')
        fields = records.kv_words(scan.stdout)
        self.ingest(d)
        self.assertEqual(self.db.execute('SELECT snapshots, dropped FROM runs').fetchone(),
                         (int(fields['complete']), int(fields['dropped'])))


class Kselftest(Base):
    def test_matrix(self):
        for k in ('original', 'patched'):
            d = os.path.join(self.tmp, k)
            fake_run.kselftest_run(d, k)
            self.ingest(d)
        m = {(k, s): (o, e, x) for k, s, o, e, x in self.db.execute(
            'SELECT kernel, subtest, outcome, expected, surprise FROM kselftest_matrix')}
        self.assertEqual(m['original', 'test_reparent_pagecache'], ('fail', 'fail', 0))
        self.assertEqual(m['patched', 'test_reparent_pagecache'], ('pass', 'pass', 0))
        self.assertEqual(m['original', 'test_reparent_slab'], ('pass', 'pass', 0))
        self.assertEqual(self.one('SELECT count(*) FROM kselftest WHERE surprise = 1'), 0)
        self.assertEqual(self.one("SELECT summary FROM run_list WHERE kernel = 'patched'"), 'patched: fake summary line')

    def test_real_fixture_stores_taps_verdict(self):
        """The stored outcomes are those tap.py judged, as kselftest.sh calls
        it: the same counts and surprises as its summary line."""
        d = os.path.join(self.tmp, 'real')
        os.makedirs(d)
        shutil.copy(FIXTURE, os.path.join(d, 'results.log'))
        fake_run.write_meta(d, 'original', 'kselftest', 'tests=test_core,test_kmem,test_memcontrol,test_zswap',
                            '2026-12-03T09:44:04Z', 23)
        tap_py = os.path.join(TOP, 'qemu-run', 'verdict', 'tap.py')
        out = subprocess.run([sys.executable, tap_py, '--kernel', 'original', '--known', self.known,
                              '--expect', self.expect, '--plans', os.path.join(TOP, 'qemu-run', 'verdict', 'plans'),
                              '--tests', 'test_core,test_kmem,test_memcontrol,test_zswap',
                              '--verdict', os.path.join(d, 'verdict.json'),
                              os.path.join(d, 'results.log')], capture_output=True, text=True).stdout
        self.ingest(d)
        got = dict(self.db.execute('SELECT outcome, count(*) FROM kselftest GROUP BY outcome'))
        want = f'original: {got.get("pass", 0)} passed, {got.get("fail", 0)} failed, {got.get("skip", 0)} skipped;'
        self.assertIn(want, out.splitlines()[-1])
        self.assertEqual(self.one('SELECT count(*) FROM kselftest WHERE surprise = 1'),
                         int(re.search(r'(\d+) surprises', out.splitlines()[-1]).group(1)))

    def test_no_verdict_is_an_error_that_names_the_judge(self):
        d = os.path.join(self.tmp, 'unjudged')
        fake_run.kselftest_run(d, 'original')
        with self.assertRaisesRegex(ingest.RunError, r'verdict.json is missing: judge the run first.*tap.py'):
            ingest.ingest(self.db, d, db_path=self.path)
        self.assertEqual(self.one('SELECT count(*) FROM runs'), 0)

    def test_bad_verdicts_store_nothing(self):
        d = os.path.join(self.tmp, 'bad')
        fake_run.kselftest_run(d, 'original')
        fake_run.judge(d, self.known, self.expect)
        path = os.path.join(d, 'verdict.json')
        with open(path) as f:
            good = f.read()
        for text, why in ((good[:len(good) // 2], 'not JSON'),
                          (good.replace('"original"', '"patched"', 1), 'judges kernel patched'),
                          (good.replace('kselftest-verdict 1', 'kselftest-verdict 0'), 'format is'),
                          (good.replace('"pass"', '"passed"', 1), 'row 1 is not')):
            with open(path, 'w') as f:
                f.write(text)
            with self.assertRaisesRegex(ingest.RunError, why):
                ingest.ingest(self.db, d, db_path=self.path)
            self.assertEqual(self.one('SELECT count(*) FROM runs'), 0)
            self.assertEqual(self.one('SELECT count(*) FROM kselftest'), 0)

    def test_cut_results_say_so(self):
        d = os.path.join(self.tmp, 'cut')
        fake_run.kselftest_run(d, 'patched')
        path = os.path.join(d, 'results.log')
        with open(path) as f:
            lines = f.read().splitlines()
        with open(path, 'w') as f:
            f.write('\n'.join(lines[:len(lines) // 2]) + '\n')
        line = self.ingest(d)
        self.assertIn('results cut short', line)
        self.assertEqual(self.db.execute('SELECT verdict, error FROM runs').fetchone(),
                         ('cut', 'results cut short: no "@@ done" record in results.log'))
        # ... and the test it stopped in failed.
        self.assertGreater(self.one("SELECT count(*) FROM kselftest WHERE outcome = 'fail'"), 0)

    def test_missing_from_matrix(self):
        d = os.path.join(self.tmp, 'o')
        fake_run.kselftest_run(d, 'original')
        with open(self.expect, 'a') as f:
            f.write('test_memcg_reparent:test_reparent_writeback  fail pass pass\n')
        self.ingest(d)
        self.assertEqual(self.db.execute("SELECT outcome, surprise FROM kselftest WHERE subtest = "
                                         "'test_reparent_writeback'").fetchone(), ('miss', 1))


class Parse(unittest.TestCase):
    def walk(self, text):
        w = records.Samples(io.StringIO(text))
        return [(s, g, t, n, r) for s, g, t, n, r in w], w

    def test_framing(self):
        snaps, w = self.walk(
            '@@ run soak seed=3 gens=10\r\n'
            '@@ sample 1 gen=0 t_ms=5\r\n'
            'cgroup.stat nr_dying_descendants 0\r\n'
            'meminfo Slab 100\r\n'
            '@@ endsample 1 lines=2\r\n'
            '@@ progress gen=0 t_ms=6 dying=0\n'
            'stray line outside a snapshot\n'
            '@@ sample 2 gen=5 t_ms=10 after=drop_caches\n'
            'meminfo Slab -3\n'
            '@@ endsample 2 lines=1\n'
            '@@ end rc=0 gens=10 t_ms=99\n')
        self.assertEqual(snaps, [
            (1, 0, 5, None, [('cgroup.stat', 'nr_dying_descendants', 0), ('meminfo', 'Slab', 100)]),
            (2, 5, 10, 'after=drop_caches', [('meminfo', 'Slab', -3)])])
        self.assertEqual(w.run, {'seed': '3', 'gens': '10'})
        self.assertEqual(w.run_line, 'seed=3 gens=10')
        self.assertEqual(w.end, {'rc': 0, 'gens': '10', 't_ms': '99'})
        self.assertEqual(w.dropped, 0)

    def test_drops(self):
        snaps, w = self.walk(
            '@@ sample 1 gen=0 t_ms=5\nmeminfo Slab 1\n'          # no endsample: next header comes
            '@@ sample 2 gen=1 t_ms=6\nmeminfo Slab x\n@@ endsample 2 lines=1\n'     # not an integer
            '@@ sample 3 gen=2 t_ms=7\nmeminfo Slab 1\nmeminfo Slab 2\n@@ endsample 3 lines=2\n'  # twice
            '@@ sample 4 gen=3 t_ms=8\nmeminfo Slab 1\n@@ endsample 5 lines=1\n'     # someone else's end
            '@@ sample 6 gen=4 t_ms=9\nmeminfo Slab 1\n@@ endsample 6 lines=1\n'     # good
            '@@ sample 6 gen=5 t_ms=9\nmeminfo Slab 1\n@@ endsample 6 lines=1\n'     # seq again
            '@@ endsample 7 lines=0\n'                                   # no header: not a snapshot
            '@@ sample 9 gen=6 t_ms=9\nmeminfo Slab  1\n@@ endsample 9 lines=1\n'    # two spaces
            '@@ sample 10 gen=6 t_ms=9\nmeminfo Slab 1_0\n@@ endsample 10 lines=1\n'  # not digits
            '@@ sample 11 gen=7 t_ms=9\nmeminfo Slab 1\n@@ progress gen=7 t_ms=9 dying=0\n'
            'meminfo Percpu 1\n@@ endsample 11 lines=1\n'                         # cut by a record
            '@@ sample 8 gen=6 t_ms=10\nmeminfo Sl')                               # cut short
        self.assertEqual([s[0] for s in snaps], [6])
        self.assertEqual(w.dropped, 9)
        self.assertIn('cut short', w.problems[-1])

    def test_garbage_bytes_and_huge_values_drop_their_snapshot(self):
        snaps, w = self.walk(
            '@@ sample 1 gen=0 t_ms=5\nmeminfo Sl\x00ab 1\n@@ endsample 1 lines=1\n'       # NUL in a key
            '@@ sample 2 gen=1 t_ms=6\nmeminfo Slab 9223372036854775808\n@@ endsample 2 lines=1\n'
            '@@ sample 3 gen=2 t_ms=7\nmeminfo Slab \u0661\n@@ endsample 3 lines=1\n'     # a non-ASCII digit
            '@@ sample 4 gen=3 t_ms=8\nmeminfo Slab -9223372036854775808\n@@ endsample 4 lines=1\n')
        self.assertEqual([(s[0], s[4]) for s in snaps], [(4, [('meminfo', 'Slab', -(1 << 63))])])
        self.assertEqual(w.dropped, 3)
        self.assertIn('control or non-ASCII byte', w.problems[0])
        self.assertIn('64-bit', w.problems[1])
        self.assertIn('not "source key integer"', w.problems[2])

    def test_done_record(self):
        boot, done = records.read_boot(['@@ boot kernel=6.12.118+ job=soak', '@@ done rc=2 error=no soak binary'])
        self.assertEqual(boot['kernel'], '6.12.118+')
        self.assertEqual(done, {'rc': 2, 'error': 'no soak binary'})
        self.assertEqual(ingest.base_version('6.12.118+'), '6.12.118')
        self.assertEqual(ingest.base_version('6.12.0-rc1-dirty'), '6.12.0')
        self.assertIsNone(ingest.base_version(None))


class Schema(unittest.TestCase):
    def test_versions(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'x.sqlite')
            db = store.connect(path)
            self.assertEqual(db.execute('PRAGMA user_version').fetchone()[0], store.SCHEMA_VERSION)
            db.execute(f'PRAGMA user_version = {store.SCHEMA_VERSION + 1}')
            db.close()
            with self.assertRaisesRegex(SystemExit, 'newer than this checkout'):
                store.connect(path)

    def test_default_path(self):
        env = dict(os.environ)
        try:
            os.environ.pop('RUNS_DB', None)
            os.environ['BUILD'] = '/b'
            self.assertEqual(store.default_path(), '/b/db/runs.sqlite')
            os.environ['RUNS_DB'] = '/x.sqlite'
            self.assertEqual(store.default_path(), '/x.sqlite')
        finally:
            os.environ.clear()
            os.environ.update(env)


class Kill(unittest.TestCase):
    """SIGKILL the ingest in the middle of its transaction: the database is
    as it was, consistent, and the run can be stored afterwards."""

    def test_sigkill_mid_transaction(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'runs.sqlite')
            small, big = os.path.join(tmp, 'small'), os.path.join(tmp, 'big')
            fake_run.soak_run(small, 'patched', gens=100)
            n = fake_run.soak_run(big, 'original', gens=2000, sample_every=10)   # ~100k samples
            env = dict(os.environ, RUNS_DB=path)
            subprocess.run([sys.executable, INGEST, small], env=env, check=True, capture_output=True)
            db = sqlite3.connect(path)
            before = counts(db)
            db.close()
            size = os.path.getsize(os.path.join(big, 'samples.log'))
            # Halfway through the file: surely inside the transaction.  At
            # its end: in the last inserts or the commit, so either nothing
            # or the whole run may be there, never a part.
            for where in (0.5, 1.0):
                p = subprocess.Popen([sys.executable, INGEST, big], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                pos = wait_read(p, 'samples.log', size * where)
                p.send_signal(signal.SIGKILL)
                p.wait()
                if where < 1:
                    self.assertIsNotNone(pos, 'ingest ended before it could be killed')
                db = sqlite3.connect(path)
                self.assertEqual(consistent(db), [], f'killed at {pos}/{size}')
                now = counts(db)
                db.close()
                if now != before:
                    self.assertEqual(where, 1.0, f'killed at {pos}/{size}: {before} -> {now}')
                    self.assertEqual(now[1], before[1] + 1)      # the whole run went in
                    self.assertEqual(now[-1], before[-1] + n)
                    return
            out = subprocess.run([sys.executable, INGEST, big], env=env, check=True,
                                 capture_output=True, text=True).stdout
            self.assertIn(f'{n} samples', out)
            db = sqlite3.connect(path)
            self.assertEqual(consistent(db), [])
            self.assertEqual(counts(db)[-1], before[-1] + n)
            db.close()


def wait_read(proc, name, want, timeout=60):
    """Wait until proc has read want bytes of its open file called name (its
    offset in /proc/PID/fdinfo); return the offset, or None if it ended or
    closed the file first."""
    deadline = time.monotonic() + timeout
    seen = False
    while time.monotonic() < deadline and proc.poll() is None:
        found = False
        with contextlib.suppress(OSError):
            for fd in os.listdir(f'/proc/{proc.pid}/fd'):
                with contextlib.suppress(OSError, ValueError, IndexError):
                    if os.readlink(f'/proc/{proc.pid}/fd/{fd}').endswith('/' + name):
                        found = seen = True
                        with open(f'/proc/{proc.pid}/fdinfo/{fd}') as f:
                            pos = int(f.readline().split()[1])
                        if pos >= want:
                            return pos
        if seen and not found:
            return None
        time.sleep(0.001)
    return None


if __name__ == '__main__':
    unittest.main()
