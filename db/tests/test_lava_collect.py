"""db/lava_collect.py: a LAVA job's console, captured from a real guest
booted as a lab boots it (boot.sh LAVA=1), split back into the harness's
channels and stored as a local run, once."""
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, 'db'))
sys.path.insert(0, os.path.join(TOP, 'qemu-run', 'kernel'))
import lava_collect  # noqa: E402
import store  # noqa: E402

FIX = os.path.join(TOP, 'qemu-run', 'tests', 'fixtures')


def fixture(name):
    with open(os.path.join(FIX, name), newline='') as f:
        return f.read().splitlines(keepends=True)


def yaml_dump(obj, path):
    sys.path.append('/usr/lib/python3/dist-packages')
    import yaml
    with open(path, 'w') as f:
        yaml.safe_dump(obj, f, sort_keys=False, width=1000)


def job_log(lines, start='2026-12-04T22:01:02.123456'):
    """A LAVA job log around console lines, as lava-run prints one."""
    log = [{'dt': start, 'lvl': 'info', 'msg': 'lava-dispatcher, installed at version: 2023.01'},
           {'dt': start, 'lvl': 'info', 'msg': 'start: 1 tmpfs-deploy (timeout 00:10:00) [common]'}]
    log += [{'dt': start, 'lvl': 'target', 'msg': line.rstrip('\r\n')} for line in lines]
    log.append({'dt': start, 'lvl': 'results',
                'msg': {'definition': 'lava', 'case': 'job', 'result': 'pass'}})
    return log


def job_def(kernel, kind, args=''):
    return {'device_type': 'qemu', 'job_name': f'dying-memcg {kind} on {kernel}',
            'metadata': {'harness.kernel': kernel, 'harness.job': kind, 'harness.args': args,
                         'harness.mem': '1024', 'harness.smp': '2', 'harness.clock': 'wall',
                         'harness.image_key': 'lavaimg0000', 'harness.series_key': 'aaaabbbbccccdddd',
                         'harness.cmdline': 'rr.job=' + kind + ' rr.lava=1'}}


class Split(unittest.TestCase):
    def test_kselftest_console(self):
        console, results, samples = lava_collect.split_console(fixture('console-lava-kselftest.log'))
        self.assertEqual(samples, [])
        self.assertTrue(results[0].startswith('@@ boot kernel='))
        self.assertTrue(results[-1].startswith('@@ done rc='))
        self.assertIn('ok 1 test_cgcore_internal_process_constraint\n', results)
        self.assertFalse(any(line.startswith(('R| ', 'S| ')) for line in console))
        # LAVA's own case lines stay on the console: they are no record.
        self.assertTrue(any(line.startswith('L| case test_kmem.') for line in console))

    def test_soak_console(self):
        console, results, samples = lava_collect.split_console(fixture('console-lava-soak.log'))
        self.assertTrue(samples[0].startswith('@@ run soak '))
        self.assertIn(' out=/dev/ttyS2', samples[0])        # the knobs of a local run
        self.assertTrue(samples[-1].startswith('@@ end rc=0 '))
        self.assertEqual(sum(1 for s in samples if s.startswith('@@ sample ')),
                         sum(1 for s in samples if s.startswith('@@ endsample ')))


class Collect(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='lava-collect-test-')
        self.addCleanup(shutil.rmtree, self.tmp)
        self.db = os.path.join(self.tmp, 'runs.sqlite')
        self.runs = os.path.join(self.tmp, 'runs')

    def files(self, kernel, kind, console, args=''):
        j, log = os.path.join(self.tmp, f'{kind}.yaml'), os.path.join(self.tmp, f'{kind}-log.yaml')
        yaml_dump(job_def(kernel, kind, args), j)
        yaml_dump(job_log(fixture(console)), log)
        return j, log

    def test_soak_job_stored_once(self):
        j, log = self.files('patched', 'soak', 'console-lava-soak.log')
        run_dir, line = lava_collect.collect(j, log, self.runs, self.db, job_id='17')
        self.assertIn('soak on patched', line)
        self.assertTrue(run_dir.endswith('20261204-220102-patched-soak-lava17'))
        with open(os.path.join(run_dir, 'meta')) as f:
            meta = f.read()
        self.assertIn('verdict=clean\n', meta)
        self.assertIn('started=2026-12-04T22:01:02Z\n', meta)
        db = store.connect(self.db)
        self.addCleanup(db.close)
        row = db.execute("SELECT kind, verdict, soak_rc, gens FROM run_list").fetchone()
        self.assertEqual(row, ('soak', 'clean', 0, 40))
        series = db.execute('SELECT series_hash FROM kernels').fetchone()[0]
        self.assertEqual(series, 'aaaabbbbccccdddd')
        # the dashboard names the lab run (runs.lab, from meta lava_job=)
        self.assertEqual(db.execute('SELECT lab FROM runs').fetchone(), ('lava:17',))
        # The same job again: nothing new.
        _, again = lava_collect.collect(j, log, self.runs, self.db, job_id='17')
        self.assertIn('already stored', again)
        self.assertEqual(db.execute('SELECT count(*) FROM runs').fetchone()[0], 1)

    def test_kselftest_job(self):
        j, log = self.files('patched', 'kselftest', 'console-lava-kselftest.log',
                            args='tests=test_core,test_kmem timeout=300')
        lava_collect.collect(j, log, self.runs, self.db, job_id='18')
        db = store.connect(self.db)
        self.addCleanup(db.close)
        got = dict(db.execute("SELECT subtest, outcome FROM kselftest WHERE test = 'test_core'").fetchall())
        self.assertEqual(got['test_cgcore_destroy'], 'pass')
        self.assertEqual(len(got), 12)        # test_core has 12 subtests

    def test_a_panicked_guest_is_bad(self):
        lines = fixture('console-lava-soak.log')[:40] + ['[   9.1] Kernel panic - not syncing: Fatal exception\n']
        j, log = os.path.join(self.tmp, 'j.yaml'), os.path.join(self.tmp, 'l.yaml')
        yaml_dump(job_def('patched', 'soak'), j)
        yaml_dump(job_log(lines), log)
        run_dir, _ = lava_collect.collect(j, log, self.runs, self.db)
        with open(os.path.join(run_dir, 'meta')) as f:
            self.assertIn('verdict=bad\n', f.read())

    def test_bad_input_is_a_clear_error(self):
        j = os.path.join(self.tmp, 'j.yaml')
        yaml_dump({'job_name': 'x'}, j)
        log = os.path.join(self.tmp, 'l.yaml')
        yaml_dump(job_log(fixture('console-lava-soak.log')), log)
        with self.assertRaisesRegex(lava_collect.CollectError, 'no metadata'):
            lava_collect.collect(j, log, self.runs, self.db)
        yaml_dump(job_def('patched', 'soak'), j)
        yaml_dump({'not': 'a log'}, log)
        with self.assertRaisesRegex(lava_collect.CollectError, 'not a list'):
            lava_collect.collect(j, log, self.runs, self.db)
        yaml_dump([{'dt': '2026-12-04T22:00:00', 'lvl': 'info', 'msg': 'start'}], log)
        with self.assertRaisesRegex(lava_collect.CollectError, 'no console lines'):
            lava_collect.collect(j, log, self.runs, self.db)
        with self.assertRaisesRegex(lava_collect.CollectError, 'No such file'):
            lava_collect.collect(j, os.path.join(self.tmp, 'missing.yaml'), self.runs, self.db)
        self.assertFalse(os.path.exists(self.db))


if __name__ == '__main__':
    unittest.main()
