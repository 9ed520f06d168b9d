"""Knobs that cannot work are refused on the host, before a boot
(qemu-run/guest/knobs.py, and boot.sh's MEM and SMP)."""
import os
import subprocess
import sys
import tempfile
import unittest

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
