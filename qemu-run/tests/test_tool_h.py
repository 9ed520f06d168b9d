"""The pure helpers of qemu-run/guest/tool.h, compiled into a small host
program: knob parsing and knob_names (the "mix" of soak and stress).  Nothing
here touches cgroups or /proc."""
import os
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
GUEST = os.path.join(HERE, '..', 'guest')

PROG = r'''
#define _GNU_SOURCE
#include "tool.h"

static struct knob knobs[] = {
	{ "mix", K_STR, 0, "a,b", "names" },
	{ "n", K_NUM, 3, NULL, "a number" },
	{ NULL },
};
static const char *const names[] = { "a", "b", "c" };

int main(int argc, char **argv)
{
	int out[4], i, n;

	knob_parse("t", knobs, argc, argv);
	n = knob_names("mix", names, 3, out, (int)NUM("n"));
	printf("%d:", n);
	for (i = 0; i < n; i++)
		printf(" %d", out[i]);
	printf("\n");
	return 0;
}
'''


@unittest.skipUnless(shutil.which('gcc'), 'needs gcc (make deps installs it)')
class ToolH(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        src = os.path.join(cls.tmp, 't.c')
        with open(src, 'w') as f:
            f.write(PROG)
        cls.bin = os.path.join(cls.tmp, 't')
        subprocess.run(['gcc', '-Wall', '-Wextra', '-Werror', '-O2', '-I', GUEST, '-o', cls.bin, src],
                       check=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def run_t(self, *args):
        p = subprocess.run([self.bin, *args], capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr

    def test_default_and_given(self):
        self.assertEqual(self.run_t()[:2], (0, '2: 0 1\n'))
        self.assertEqual(self.run_t('mix=c,a,c')[:2], (0, '3: 2 0 2\n'))
        self.assertEqual(self.run_t('mix=')[:2], (0, '0:\n'))
        self.assertEqual(self.run_t('mix=,b,,')[:2], (0, '1: 1\n'))

    def test_unknown_name(self):
        rc, out, err = self.run_t('mix=a,zz')
        self.assertEqual((rc, out), (2, ''))
        self.assertIn("t: mix: unknown name 'zz' (names: a,b,c; at most 3)", err)

    def test_too_many(self):
        rc, out, err = self.run_t('mix=a,b,c', 'n=2')
        self.assertEqual((rc, out), (2, ''))
        self.assertIn("t: mix: too many names at 'c'", err)
        self.assertEqual(self.run_t('mix=a,b', 'n=2')[:2], (0, '2: 0 1\n'))

    def test_bad_knobs(self):
        rc, _, err = self.run_t('n=x')
        self.assertEqual(rc, 2)
        self.assertIn("n wants a number >= 0, not 'x'", err)
        rc, _, err = self.run_t('bogus=1')
        self.assertEqual(rc, 2)
        self.assertIn("unknown knob 'bogus'", err)
        rc, out, _ = self.run_t('help')
        self.assertEqual(rc, 0)
        self.assertIn('usage: t [key=value ...]', out)


if __name__ == '__main__':
    unittest.main()
