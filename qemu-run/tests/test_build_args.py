"""kernel/build.sh refuses extra config fragments (KCONFIG_EXTRA) that would
land in the default build folders, whose kernels the tests and the bench
boot, and names a fragment that does not exist; both before it touches any
source tree."""
import os
import subprocess
import tempfile
import unittest

BUILD_SH = os.path.join(os.path.dirname(__file__), '..', 'kernel', 'build.sh')


class ExtraFragments(unittest.TestCase):
    def run_build(self, **env):
        with tempfile.TemporaryDirectory(prefix='build-test-') as tmp:
            e = {k: v for k, v in os.environ.items() if k not in ('KERNEL_OUT', 'KERNEL_BUILDS', 'KCONFIG_EXTRA')}
            e.update(BUILD=tmp, **env)
            r = subprocess.run(['bash', BUILD_SH, 'patched'], env=e, capture_output=True, text=True, timeout=60)
            made = os.listdir(tmp)
        return r, made

    def test_extra_fragments_need_a_folder_of_their_own(self):
        r, made = self.run_build(KCONFIG_EXTRA='/dev/null')
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('give it a folder of its own (KERNEL_BUILDS=DIR or KERNEL_OUT=DIR)', r.stderr)
        self.assertEqual(made, [])

    def test_a_missing_fragment_is_named(self):
        r, made = self.run_build(KCONFIG_EXTRA='/nonexistent/irqsoff.config', KERNEL_BUILDS='/nonexistent/k')
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('KCONFIG_EXTRA: no fragment /nonexistent/irqsoff.config', r.stderr)
        self.assertEqual(made, [])


if __name__ == '__main__':
    unittest.main()
