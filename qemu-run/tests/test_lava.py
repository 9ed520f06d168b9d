"""qemu-run/lab/lava.py: every job it writes passes lava-common's own job
schema, boots the command line boot.sh would with rr.lava=1, and its
monitor pattern finds every test case in a console captured from a guest
booted as a lab boots it (boot.sh LAVA=1); the guest's demultiplexer
(guest/lava-demux.awk) runs here under busybox awk as in the guest."""
import copy
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, 'qemu-run', 'lab'))
import lava  # noqa: E402

FIX = os.path.join(HERE, 'fixtures')
AWK = os.path.join(TOP, 'qemu-run', 'guest', 'lava-demux.awk')


class Jobs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix='lava-test-')
        r = subprocess.run([sys.executable, os.path.join(TOP, 'qemu-run', 'lab', 'lava.py'), 'write', '--no-disks',
                            '--out', cls.tmp], capture_output=True, text=True,
                           env=dict(os.environ, STRESS_SECS='600'))
        assert r.returncode == 0, r.stderr
        cls.written = sorted(os.listdir(cls.tmp))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def load(self, name):
        yaml = lava.debian_module('yaml', 'python3-yaml')
        with open(os.path.join(self.tmp, name)) as f:
            return yaml.safe_load(f)

    def test_every_job_on_every_kernel_is_valid(self):
        self.assertEqual(self.written, sorted(f'{j}-{k}.yaml' for j in lava.JOBS for k in ('original', 'patched')))
        r = subprocess.run([sys.executable, os.path.join(TOP, 'qemu-run', 'lab', 'lava.py'), 'check',
                            *[os.path.join(self.tmp, n) for n in self.written]], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.count('valid (lava-common job schema)'), 2 * len(lava.JOBS))
        self.assertIn('kselftest-v1', lava.JOBS)

    def test_the_schema_refuses_broken_jobs(self):
        good = self.load('soak-patched.yaml')
        self.assertIsNone(lava.validate(good))
        for change, want in (
                (lambda d: d['timeouts'].pop('job'), 'job'),
                (lambda d: d['actions'][1]['boot'].update(method='qemu-fast'), 'unknown action type'),
                (lambda d: d['actions'][2]['test']['monitors'][0].update(name='has space'), 'name'),
                (lambda d: d['actions'][0]['deploy']['images']['kernel'].pop('url'), 'url'),
                (lambda d: d.update(visibility='everyone'), 'visibility'),
                (lambda d: d['timeouts'].update(action={'hours': 9}), 'larger than job timeout')):
            bad = copy.deepcopy(good)
            change(bad)
            why = lava.validate(bad)
            self.assertIsNotNone(why, want)
            self.assertIn(want, why)

    def test_command_line_is_boot_sh_s_with_lava(self):
        job = self.load('kselftest-original.yaml')
        cmdline = job['metadata']['harness.cmdline']
        self.assertIn(' rr.job=kselftest rr.lava=1 rr.tests=test_core,', cmdline)
        self.assertIn(' rr.retries=5', cmdline)
        self.assertIn(f'-append "{cmdline}"', job['actions'][0]['deploy']['images']['kernel']['image_arg'])
        stress = self.load('stress-patched.yaml')
        self.assertIn('rr.stress.secs=600', stress['metadata']['harness.cmdline'])
        self.assertEqual(stress['metadata']['harness.deadline'], str(600 + 150 + 600))
        # The cgroup v1 tests: a kselftest boot of their own with the memory
        # controller on v1, as kselftest.sh's second boot, stored as a kselftest
        v1 = self.load('kselftest-v1-patched.yaml')
        v1_cmdline = v1['metadata']['harness.cmdline']
        self.assertIn(' rr.job=kselftest rr.lava=1 rr.tests=test_memcg_reparent_v1 ', v1_cmdline)
        self.assertIn(' rr.cgroup=v1', v1_cmdline)
        self.assertNotIn('rr.cgroup', cmdline)
        self.assertNotIn('test_memcg_reparent_v1', cmdline)
        self.assertEqual(v1['metadata']['harness.job'], 'kselftest')
        self.assertIn('cgroup=v1', v1['metadata']['harness.args'].split())
        self.assertEqual(v1['actions'][2]['test']['monitors'][0]['name'], 'kselftest-v1')
        # The two-node tests: a kselftest boot with numa=fake=2, as
        # kselftest.sh's two-node boot, stored with that append.
        numa = self.load('kselftest-numa-original.yaml')
        numa_cmdline = numa['metadata']['harness.cmdline']
        self.assertIn(' rr.job=kselftest rr.lava=1 rr.tests=test_memcg_reparent_numa ', numa_cmdline)
        self.assertTrue(numa_cmdline.endswith(' numa=fake=2'), numa_cmdline)
        self.assertEqual(numa['metadata']['harness.append'], 'numa=fake=2')
        self.assertEqual(numa['metadata']['harness.job'], 'kselftest')
        self.assertNotIn('numa=fake', cmdline)
        self.assertNotIn('harness.append', job['metadata'])
        self.assertNotIn('test_memcg_reparent_numa', cmdline)
        bench = self.load('bench-patched.yaml')
        self.assertIn('-icount', bench['context']['extra_options'])
        for name in self.written:
            meta = self.load(name)['metadata']
            for key in ('kernel', 'job', 'image_key', 'mem', 'smp', 'clock', 'cmdline'):
                self.assertIn(f'harness.{key}', meta, name)

    def test_monitor_finds_every_case_of_a_real_console(self):
        pat = re.compile(self.load('kselftest-patched.yaml')['actions'][2]['test']['monitors'][0]['pattern'])
        with open(os.path.join(FIX, 'console-lava-kselftest.log')) as f:
            text = f.read()
        cases = {m['test_case_id']: m['result'] for m in pat.finditer(text)}
        taps = re.findall(r'^R\| (?:not )?ok \d+ (\S+)', text, re.M)
        self.assertEqual(len(cases), len(taps))
        self.assertEqual(cases['test_core.test_cgcore_destroy'], 'pass')
        self.assertEqual(cases['test_kmem.test_percpu_basic'], 'fail')     # 2 vCPUs: its tolerance needs 13
        soak = self.load('soak-patched.yaml')['actions'][2]['test']['monitors'][0]
        with open(os.path.join(FIX, 'console-lava-soak.log')) as f:
            text = f.read()
        # start and end are regular expressions to LAVA (pexpect): each must
        # match once, on its record, never earlier (a bare "R| @@ boot" is an
        # alternation that matches any "R").
        starts = [m.start() for m in re.finditer(soak['start'], text)]
        ends = [m.start() for m in re.finditer(soak['end'], text)]
        self.assertEqual(len(starts), 1)
        self.assertEqual(len(ends), 1)
        self.assertEqual(text[starts[0]:].split('\n')[0][:11], 'R| @@ boot ')
        self.assertEqual(text[ends[0]:].split('\n')[0][:14], 'R| @@ done rc=')
        got = {m['test_case_id']: (m['result'], m['measurement']) for m in re.finditer(soak['pattern'], text)}
        self.assertEqual(got['soak.rc'], ('pass', None))
        self.assertEqual(got['soak.gens'], ('pass', '40'))


class Demux(unittest.TestCase):
    def awk(self, ch, text):
        busybox = shutil.which('busybox')
        self.assertIsNotNone(busybox, 'busybox (busybox-static, make deps) runs the guest\'s awk')
        r = subprocess.run([busybox, 'awk', '-v', f'ch={ch}', '-f', AWK], input=text, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.splitlines()

    def test_results(self):
        out = self.awk('R', '@@ begin test_kmem\r\n1..3\r\nok 1 a\r\nnot ok 2 b\r\nok 3 c # SKIP why\r\n'
                            'ok 4 d # skip lower\r\n')
        self.assertEqual(out[:2], ['R| @@ begin test_kmem', 'R| 1..3'])
        self.assertEqual([x for x in out if x.startswith('L|')],
                         ['L| case test_kmem.a pass', 'L| case test_kmem.b fail', 'L| case test_kmem.c skip',
                          'L| case test_kmem.d skip'])

    def test_samples_end_record(self):
        out = self.awk('S', '@@ run stress secs=5\n@@ progress t_ms=1 dying=4\n@@ end rc=1 t_ms=5000 dying_end=3 x=y\n')
        self.assertIn('L| case stress.rc fail', out)
        self.assertIn('L| case stress.t_ms pass 5000', out)
        self.assertIn('L| case stress.dying_end pass 3', out)
        self.assertIn('L| case stress.dying_last pass 4', out)
        self.assertFalse(any('stress.x' in x for x in out))


if __name__ == '__main__':
    unittest.main()
