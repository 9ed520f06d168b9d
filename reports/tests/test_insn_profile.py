"""reports/insn_profile.py, qemu-run/records/insn.py and the TCG plugin: block counts are summed per
function by System.map, diffs with several runs list only functions whose
ranges are apart, and the plugin compiles against the API it declares."""
import io
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, 'reports'))
import insn_profile  # noqa: E402
import insn  # noqa: E402 (qemu-run/records/, on the path through compare)

MAP = """ffffffff81000000 T _stext
ffffffff81000100 T folio_memcg
ffffffff81000200 t css_tryget
ffffffff81000300 D some_data
ffffffff81000400 T __schedule
"""


def run_dir(root, name, counts):
    """A profiling run folder: meta naming an image next to System.map."""
    build = os.path.join(root, f'k-{name}')
    os.makedirs(os.path.join(build, 'arch', 'x86', 'boot'), exist_ok=True)
    with open(os.path.join(build, 'System.map'), 'w') as f:
        f.write(MAP)
    d = os.path.join(root, name)
    os.makedirs(d)
    with open(os.path.join(d, 'meta'), 'w') as f:
        f.write(f'kernel={name.split("-")[0]}\nimage={build}/arch/x86/boot/bzImage\nseries_key=abcdef0123456789\n')
    with open(os.path.join(d, 'insn.txt'), 'w') as f:
        for addr, c in counts:
            f.write(f'{addr:x} {c}\n')
        f.write('# blocks 3 of 16 slots\n')
    return d


class Profile(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='insn-test-')
        self.addCleanup(shutil.rmtree, self.tmp)

    def test_blocks_sum_per_function(self):
        d = run_dir(self.tmp, 'original-1', [(0xffffffff81000100, 10), (0xffffffff81000180, 5),
                                              (0xffffffff81000210, 7), (0xffffffff81000310, 3)])
        # 0x...310 is past css_tryget and some_data is no text symbol: css_tryget
        self.assertEqual(insn.per_function(d), {'folio_memcg': 15, 'css_tryget': 10})

    def test_diff_with_ranges_lists_only_functions_apart(self):
        a = [run_dir(self.tmp, f'original-{i}', [(0xffffffff81000100, 100), (0xffffffff81000400, s)])
             for i, s in enumerate((50, 70))]
        b = [run_dir(self.tmp, f'patched-{i}', [(0xffffffff81000100, 180), (0xffffffff81000400, s)])
             for i, s in enumerate((60, 65))]
        out = io.StringIO()
        with redirect_stdout(out):
            insn_profile.diff_many(a, b, 10)
        text = out.getvalue()
        self.assertIn('folio_memcg', text)
        self.assertIn('+80', text)
        self.assertNotIn('__schedule', text)       # 50-70 against 60-65: noise

    def test_ingest_stores_the_profile(self):
        sys.path.insert(0, os.path.join(TOP, 'db'))
        sys.path.insert(0, os.path.join(TOP, 'db', 'tests'))
        import fake_run
        import store
        d = os.path.join(self.tmp, 'profile-run')
        fake_run.bench_run(d, 'patched')
        prof = run_dir(self.tmp, 'patched-x', [(0xffffffff81000100, 40), (0xffffffff81000210, 2)])
        shutil.copy(os.path.join(prof, 'insn.txt'), d)
        with open(os.path.join(prof, 'meta')) as f:
            image = [line for line in f if line.startswith('image=')][0]
        with open(os.path.join(d, 'meta'), 'a') as f:
            f.write(image)
        path = os.path.join(self.tmp, 'runs.sqlite')
        db = store.connect(path)
        self.addCleanup(db.close)
        empty = os.path.join(self.tmp, 'empty')
        open(empty, 'w').close()
        line = fake_run.store(db, d, known=empty, expect=empty, db_path=path)
        self.assertIn('an instruction profile of 2 functions', line)
        self.assertEqual(dict(db.execute('SELECT function, insns FROM insn_profile').fetchall()),
                         {'folio_memcg': 40, 'css_tryget': 2})
        fake_run.store(db, d, replace=True, known=empty, expect=empty, db_path=path)
        self.assertEqual(db.execute('SELECT count(*) FROM insn_profile').fetchone()[0], 2)

    def test_plugin_compiles(self):
        cc = shutil.which('cc') or shutil.which('gcc')
        self.assertIsNotNone(cc, 'a C compiler (gcc, make deps)')
        out = os.path.join(self.tmp, 'p.so')
        r = subprocess.run([cc, '-O2', '-Wall', '-Wextra', '-Werror', '-shared', '-fPIC', '-o', out,
                            os.path.join(TOP, 'qemu-run', 'boot', 'plugin', 'insn_by_tb.c')], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        syms = subprocess.run(['nm', '-D', '--defined-only', out], capture_output=True, text=True).stdout
        self.assertIn('qemu_plugin_install', syms)
        self.assertIn('qemu_plugin_version', syms)


if __name__ == '__main__':
    unittest.main()
