"""qemu-run/check_refs.py: stale paths and make targets are named with their
file and line; what exists, placeholders and generated folders pass."""
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import check_refs  # noqa: E402


class CheckRefs(unittest.TestCase):
    def setUp(self):
        self.top = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.top)
        self.write('Makefile', 'run: deps ## the main job\n\t@qemu-run/jobs/run.sh\n\ndeps:\n\t@true\n')
        self.write('qemu-run/jobs/run.sh', '#!/bin/sh\n')
        self.write('scenarios/a.scn', 'mkdir P\n')

    def write(self, rel, text):
        path = os.path.join(self.top, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(text)

    def test_clean(self):
        self.write('README.md', '`make run` runs qemu-run/jobs/run.sh; scenarios/*.scn; build/report/x.html;\n'
                   'qemu-run/jobs/NAME.sh and <run>/console.log are placeholders; make sure of it.\n')
        self.assertEqual(check_refs.check(self.top), [])

    def test_stale(self):
        self.write('README.md', 'intro\nrun `make nosuch` then see qemu-run/jobs/gone.sh.\n')
        self.write('docs/x.md', 'the plots: reports/plots/*.gp\n')
        self.write('qemu-run/jobs/t.sh', 'die "run make kernelz first"\n# make another kernel\n')
        got = sorted(check_refs.check(self.top))
        self.assertEqual(got, sorted([
            ('README.md', 2, 'make nosuch: no such target in the Makefile'),
            ('README.md', 2, 'qemu-run/jobs/gone.sh: no such file or folder'),
            ('docs/x.md', 1, 'reports/plots/*.gp: matches nothing'),
            ('qemu-run/jobs/t.sh', 1, 'make kernelz: no such target in the Makefile'),
        ]))

    def test_history_is_not_checked(self):
        self.write('docs/history.md', 'db/records.py was the reader then\n')
        self.assertEqual(check_refs.check(self.top), [])

    def test_main_exit_status(self):
        self.write('README.md', 'see qemu-run/none.py\n')
        self.assertEqual(check_refs.main(['--top', self.top]), 1)
        self.write('README.md', 'see qemu-run/jobs/run.sh\n')
        self.assertEqual(check_refs.main(['--top', self.top]), 0)


if __name__ == '__main__':
    unittest.main()
