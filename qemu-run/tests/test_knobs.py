"""Knobs that cannot work are refused on the host, before a boot
(qemu-run/guest/knobs.py, and boot.sh's MEM and SMP)."""
import os
import re
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'guest'))
import knobs  # noqa: E402


class Table(unittest.TestCase):
    def test_tables_read_from_the_guest_sources(self):
        soak = knobs.table('soak')
        self.assertEqual(soak['gens'], ('num', -1))
        self.assertEqual(soak['mix'][0], 'str')
        self.assertIn('tmpfs', soak['mix'][1].split(','))
        self.assertEqual(knobs.table('bench')['parts'], ('str', 'offline,fast'))
        self.assertIn('mix', knobs.table('stress'))

    def test_stressng_knobs(self):
        # the part stressng, not among the default parts: other batches stay as they were
        bench = knobs.table('bench')
        self.assertNotIn('stressng', bench['parts'][1].split(','))
        self.assertEqual(bench['stressors'], ('str', 'switch,pipe,sock,fork'))
        self.assertEqual(bench['stressng_secs'], ('num', 5))
        self.assertEqual(bench['stressng_reps'], ('num', 3))
        self.assertEqual(bench['stressng_instances'], ('num', 0))
        with open(os.path.join(HERE, '..', 'guest', 'bench.c')) as f:
            src = f.read()
        # each has its help text in the table (bench help)
        for name in ('stressors', 'stressng_secs', 'stressng_reps', 'stressng_instances'):
            self.assertRegex(src, r'\{ "%s", K_(NUM|STR), [^}]*"stressng: [^"]+" \}' % name)
        self.assertEqual(knobs.MAX_STRESSORS, int(re.search(r'#define MAX_STRESSORS (\d+)', src).group(1)))

    def test_stressors(self):
        host = {'switch', 'pipe', 'sock', 'fork', 'af-alg', 'mmap'}
        with mock.patch.object(knobs, 'stressng_names', lambda: host):
            self.assertEqual(knobs.problems('bench', ['parts=stressng']), [])
            self.assertEqual(knobs.problems('bench', ['parts=fast,stressng', 'stressors=af-alg,mmap',
                                                      'stressng_secs=2', 'stressng_reps=1',
                                                      'stressng_instances=4']), [])
            for words, why in ((['stressors=swich'], '"swich" is not a stressor of /usr/bin/stress-ng'),
                               (['stressors=switch,Pipe'], '"Pipe" is not a stress-ng stressor name'),
                               (['stressors=switch;reboot'], 'is not a stress-ng stressor name'),
                               (['stressors=switch,,pipe'], 'is not a stress-ng stressor name'),
                               (['stressors=pipe,pipe'], 'names a stressor twice'),
                               (['stressng_secs=five'], 'is a number'),
                               (['parts=stress-ng'], 'is not among offline,fast,reclaim,stressng')):
                errs = knobs.problems('bench', words)
                self.assertTrue(errs and why in errs[0], (words, errs))
            many = ','.join(f'x{i}' for i in range(knobs.MAX_STRESSORS + 1))
            self.assertIn('at most 32', knobs.problems('bench', [f'stressors={many}'])[0])
        # no stress-ng on the host to ask: the names' form only
        with mock.patch.object(knobs, 'stressng_names', lambda: None):
            self.assertEqual(knobs.problems('bench', ['stressors=whatever-1']), [])

    def test_bad_knobs(self):
        for tool, words, why in (
                ('soak', ['mix=nonsense'], '"nonsense" is not among'),
                ('soak', ['mix=log,nonsense'], '"nonsense" is not among'),
                ('soak', ['mix=log,read/anon,nonsense', 'slices=2'], '"nonsense" is not among'),
                ('soak', ['mix=log/', 'slices=2'], 'is not among'),
                ('soak', ['slices=two'], 'is a number'),
                ('soak', ['bogus=1'], 'has no knob "bogus"'),
                ('soak', ['gens=x'], 'is a number'),
                ('soak', ['gens=0'], 'would run until its deadline'),
                ('soak', ['gens=0', 'secs=0'], 'would run until its deadline'),
                ('bench', ['parts=slow'], 'is not among offline,fast,reclaim'),
                ('bench', ['lru=lru'], 'is not among gen,classic'),
                ('stress', ['secs=ten'], 'is a number'),
                ('soak', ['gens'], 'is not key=value')):
            errs = knobs.problems(tool, words)
            self.assertTrue(errs and why in errs[0], (tool, words, errs))

    def test_good_knobs(self):
        self.assertEqual(knobs.problems('soak', ['gens=300', 'sample_every=50', 'mix=log,tmpfs']), [])
        self.assertEqual(knobs.problems('soak', ['gens=0', 'secs=60']), [])
        # fleet shape: a list of job bodies per slice, a pace
        self.assertEqual(knobs.problems('soak', ['slices=3', 'mix=log,read/anon,tmpfs,fork/files,sock',
                                                 'rate=50']), [])
        self.assertEqual(knobs.problems('bench', ['parts=fast', 'fast_reps=4', 'seed=2']), [])
        self.assertEqual(knobs.problems('bench', ['parts=reclaim', 'lru=classic']), [])


class NothingBoots(unittest.TestCase):
    """The scripts stop at the bad knob: no build, no boot (BUILD is empty)."""

    def run_script(self, args, **env):
        with tempfile.TemporaryDirectory() as build:
            r = subprocess.run(['bash', *args], capture_output=True, text=True, timeout=60,
                               env=dict(os.environ, BUILD=build, NOBUILD='1', **env))
            self.assertEqual(os.listdir(build), [])          # nothing made
        return r

    def test_soak_mix_nonsense(self):
        r = self.run_script([os.path.join(HERE, '..', 'jobs', 'soak.sh'), 'original'], MIX='nonsense')
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('"nonsense" is not among', r.stderr)
        self.assertIn('nothing was booted', r.stderr)

    def test_soak_gens_0(self):
        r = self.run_script([os.path.join(HERE, '..', 'jobs', 'soak.sh'), 'original'], GENS='0')
        self.assertIn('would run until its deadline', r.stderr)

    def test_boot_mem_16(self):
        r = self.run_script([os.path.join(HERE, '..', 'boot', 'boot.sh'), 'original', 'kselftest'], MEM='16')
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('MEM=16: the guest needs', r.stderr)

    def test_boot_nodes(self):
        boot = [os.path.join(HERE, '..', 'boot', 'boot.sh'), 'original', 'kselftest']
        for env, why in (({'NODES': '3'}, 'NODES=3 with SMP=2: every NUMA node needs a vCPU of its own'),
                         ({'NODES': '2', 'SMP': '1'}, 'NODES is at most SMP'),
                         ({'NODES': '3', 'SMP': '4'}, 'NODES=3 with SMP=4: every node is a socket '
                          'with the same number of vCPUs, so SMP must be a multiple of 3'),
                         ({'NODES': '3', 'SMP': '6', 'MEM': '1024'},
                          'NODES=3 with MEM=1024: the guest memory is split evenly between the nodes, '
                          'so MEM must be a multiple of 3 MiB (such as 1023 or 1026)'),
                         ({'NODES': '0'}, 'NODES=0: a number of NUMA nodes'),
                         ({'NODES': '2x'}, 'NODES=2x: a number of NUMA nodes'),
                         ({'NODES': '02'}, 'NODES=02: a number of NUMA nodes')):
            r = self.run_script(boot, **env)
            self.assertNotEqual(r.returncode, 0, env)
            self.assertIn(why, r.stderr, env)

    def test_bench_nodes_before_the_build(self):
        # the bench boots (MEM 1536) and the churn soaks (CHURN_MEM 1024) must both split
        bench = [os.path.join(HERE, '..', 'jobs', 'bench.sh'), 'parts=stressng']
        r = self.run_script(bench, NODES='3', SMP='3')
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('NODES=3 with MEM=1024', r.stderr)
        r = self.run_script(bench, NODES='4', SMP='2')
        self.assertIn('NODES=4 with SMP=2', r.stderr)
        r = self.run_script(bench + ['stressors=Switch'], NODES='2')
        self.assertIn('"Switch" is not a stress-ng stressor name', r.stderr)
        self.assertIn('nothing was booted', r.stderr)


if __name__ == '__main__':
    unittest.main()


class MissingImage(unittest.TestCase):
    def test_advice_names_the_right_fix(self):
        boot = os.path.join(HERE, '..', 'boot', 'boot.sh')
        with tempfile.TemporaryDirectory() as build:
            r = subprocess.run(['bash', boot, 'patched', 'kselftest'], capture_output=True, text=True,
                               env=dict(os.environ, BUILD=build))
            self.assertIn("run 'make kernel KERNEL=patched'", r.stderr)
            img = os.path.join(build, 'elsewhere', 'arch', 'x86', 'boot', 'bzImage')
            os.makedirs(os.path.dirname(img))
            open(img, 'w').close()
            r = subprocess.run(['bash', boot, 'patched', 'kselftest'], capture_output=True, text=True,
                               env=dict(os.environ, BUILD=build, KERNEL_IMAGE=img))
            self.assertIn('was not built by qemu-run/kernel/build.sh', r.stderr)
            r = subprocess.run(['bash', boot, 'patched', 'kselftest'], capture_output=True, text=True,
                               env=dict(os.environ, BUILD=build, KERNEL_IMAGE=img + '.gone'))
            self.assertIn('does not exist', r.stderr)
