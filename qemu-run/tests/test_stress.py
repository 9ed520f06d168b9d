"""The stress run's records (samples.log) and stress.sh's verdict on them.

samples-patched-stress.log and console-patched-stress.log are a real run:
`NOBUILD=1 STRESS_SECS=180 qemu-run/jobs/stress.sh patched`, clean.  The format
tests hold the records to qemu-run/records/RECORDS.md; the summary tests break the
run the ways a guest failure, a crash, a kernel report or a global OOM
break it, and stress.sh must say FAILED and exit non-zero every time.
No guest is booted here.
"""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
STRESS_SH = os.path.join(HERE, '..', 'jobs', 'stress.sh')
FIX = os.path.join(HERE, 'fixtures')
PROGRESS_KEYS = {'t_ms', 'cgroups_created', 'removed', 'ooms', 'dying'}
END_KEYS = {'rc', 't_ms', 'cgroups_created', 'removed', 'tasks', 'moved', 'ooms', 'failures',
            'dying_end', 'dying_drop', 'dying_root', 'mem_end_kb'}


def read(name):
    with open(os.path.join(FIX, name)) as f:
        return f.read()


def words(line):
    """The key=value words of a record ("@@ run stress" has one more word first)."""
    skip = 3 if line.startswith('@@ run ') else 2
    return dict(w.split('=', 1) for w in line.split()[skip:])


def stress_sh(*args, env=None):
    return subprocess.run(['bash', STRESS_SH, *args], capture_output=True, text=True,
                          env=env, timeout=60)


class Records(unittest.TestCase):
    def setUp(self):
        self.lines = read('samples-patched-stress.log').splitlines()

    def test_framing(self):
        self.assertTrue(self.lines[0].startswith('@@ run stress '))
        self.assertTrue(self.lines[-1].startswith('@@ end '))
        for line in self.lines[1:-1]:
            self.assertTrue(line.startswith('@@ progress '), line)
            self.assertLessEqual(PROGRESS_KEYS, set(words(line)))
        for line in self.lines:
            for w in line.split()[3 if line.startswith('@@ run ') else 2:]:
                self.assertRegex(w, r'^[a-z_]+=\S+$')

    def test_run_has_every_knob_and_the_guest(self):
        run = words(self.lines[0])
        self.assertEqual(run['secs'], '180')
        self.assertEqual(run['nodes'], '2')
        for key in ('seed', 'workers', 'mix', 'hog_pct', 'mem_kb', 'thp', 'hog_mb', 'parent_mb'):
            self.assertIn(key, run)

    def test_end_and_counters(self):
        end = words(self.lines[-1])
        self.assertLessEqual(END_KEYS, set(end))
        self.assertEqual(end['rc'], '0')
        self.assertEqual(end['failures'], '0')
        # Every cgroup the run made was removed; the counters only grow.
        self.assertEqual(end['cgroups_created'], end['removed'])
        last = 0
        for line in self.lines[1:-1]:
            n = int(words(line)['cgroups_created'])
            self.assertGreaterEqual(n, last)
            last = n
        self.assertGreater(int(end['vm_pswpout']) + int(end['vm_zswpout']), 0)
        self.assertGreater(int(end['vm_pgmigrate_success']), 0)


class Summary(unittest.TestCase):
    """stress.sh --summary RUN_DIR on the real run and on broken copies of it."""

    def run_dir(self, samples=None, console=None, verdict='clean'):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        files = {'samples.log': samples if samples is not None else read('samples-patched-stress.log'),
                 'console.log': console if console is not None else read('console-patched-stress.log'),
                 'meta': 'kernel=patched\njob=stress\n' + (f'verdict={verdict}\n' if verdict else '')}
        for name, text in files.items():
            with open(os.path.join(d, name), 'w') as f:
                f.write(text)
        return d

    def summary(self, d):
        r = stress_sh('--summary', d)
        lines = r.stdout.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stdout + r.stderr)
        return r.returncode, lines[0]

    def test_clean_run(self):
        rc, line = self.summary(self.run_dir())
        self.assertEqual(rc, 0, line)
        self.assertIn('stress patched: clean: 180 s of stress', line)
        self.assertIn('184 cgroups created, 184 removed', line)
        self.assertIn('15 sibling OOMs (45 memcg OOM kills on the console, 0 global)', line)
        self.assertRegex(line, r'dying memory cgroups: 16 at the end, 13 after drop_caches, 8 after all is deleted')
        self.assertIn('no kernel report', line)

    def test_failed_operations(self):
        samples = re.sub(r'^@@ end rc=0 (.*) failures=0 ', r'@@ end rc=1 \1 failures=2 ',
                         read('samples-patched-stress.log'), flags=re.M)
        rc, line = self.summary(self.run_dir(samples=samples))
        self.assertEqual(rc, 1)
        self.assertIn('FAILED (stress rc=1, failures=2: see the "stress: FAIL" lines)', line)

    def test_cut_short(self):
        samples = ''.join(read('samples-patched-stress.log').splitlines(True)[:40])
        rc, line = self.summary(self.run_dir(samples=samples, verdict=''))
        self.assertEqual(rc, 1)
        self.assertRegex(line, r'FAILED: no "@@ end", stress stopped at \d+ s \(\d+ cgroups created')
        self.assertIn('no verdict', line)

    def test_kernel_report(self):
        rc, line = self.summary(self.run_dir(verdict='bad'))
        self.assertEqual(rc, 1)
        self.assertIn('FAILED', line)
        self.assertIn('KERNEL REPORT OR HANG', line)

    def test_global_oom(self):
        console = read('console-patched-stress.log') + (
            '[  100.000000] Out of memory: Killed process 140 (stress) total-vm:563012kB, '
            'anon-rss:550000kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:1100kB oom_score_adj:0\n')
        rc, line = self.summary(self.run_dir(console=console))
        self.assertEqual(rc, 1)
        self.assertIn('FAILED (an OOM kill outside a memory cgroup)', line)
        self.assertIn('1 global', line)


class Arguments(unittest.TestCase):
    """Mistakes stress.sh must name before it builds or boots anything."""

    def test_wrong_kernel_name(self):
        r = stress_sh('bogus')
        self.assertEqual(r.returncode, 1)
        self.assertIn("unknown kernel 'bogus'; valid names: original, patched, debug", r.stderr)

    def test_bad_secs(self):
        env = dict(os.environ, STRESS_SECS='soon')
        r = stress_sh('patched', env=env)
        self.assertEqual(r.returncode, 1)
        # The knob table (guest/knobs.py) refuses it before anything boots.
        self.assertIn('stress knob secs is a number, not "soon"', r.stderr)
        self.assertIn('nothing was booted', r.stderr)

    def test_bad_knob(self):
        r = stress_sh('patched', 'workers = 3')
        self.assertEqual(r.returncode, 1)
        self.assertIn('key=value without spaces', r.stderr)


if __name__ == '__main__':
    unittest.main()
