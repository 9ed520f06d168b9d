"""reports/insn_profile.py, qemu-run/records/insn.py and the TCG plugin: block counts are summed per
function by System.map, a function's calls are the runs of its first block,
diffs with several runs list only functions whose ranges are apart, and the
plugin compiles against the API it declares."""
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
        for block in counts:
            f.write(' '.join([f'{block[0]:x}'] + [str(v) for v in block[1:]]) + '\n')
        f.write('# blocks 3 of 16 slots\n')
    return d


def append(d, name, line):
    with open(os.path.join(d, name), 'a') as f:
        f.write(line + '\n')


class Profile(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='insn-test-')
        self.addCleanup(shutil.rmtree, self.tmp)

    def test_blocks_sum_per_function(self):
        d = run_dir(self.tmp, 'original-1', [(0xffffffff81000100, 10), (0xffffffff81000180, 5),
                                              (0xffffffff81000210, 7), (0xffffffff81000310, 3)])
        # 0x...310 is past css_tryget and some_data is no text symbol: css_tryget
        self.assertEqual(insn.per_function(d), {'folio_memcg': 15, 'css_tryget': 10})

    def test_calls_are_the_runs_of_the_first_block(self):
        # folio_memcg: its first block ran 4 times, a later block of it 3
        # times (a loop); css_tryget's only block starts past its entry
        d = run_dir(self.tmp, 'patched-1', [(0xffffffff81000100, 20, 4), (0xffffffff81000180, 9, 3),
                                             (0xffffffff81000210, 7, 7)])
        self.assertEqual(insn.profile(d), {'folio_memcg': (29, 4), 'css_tryget': (7, 0)})
        out = io.StringIO()
        with redirect_stdout(out):
            insn_profile.top(d, 5)
        self.assertRegex(out.getvalue(), r'29 +\S+% +4 +7\.2  folio_memcg')

    def test_profile_without_runs_has_no_calls(self):
        d = run_dir(self.tmp, 'original-1', [(0xffffffff81000100, 10)])
        self.assertEqual(insn.profile(d), {'folio_memcg': (10, None)})
        out = io.StringIO()
        with redirect_stdout(out):
            insn_profile.top(d, 5)
        self.assertRegex(out.getvalue(), r'10 +\S+% +- +-  folio_memcg')

    def test_mixed_lines_are_refused(self):
        d = run_dir(self.tmp, 'original-1', [(0xffffffff81000100, 10, 1), (0xffffffff81000180, 5)])
        with self.assertRaisesRegex(insn.ProfileError, 'insn.txt:2: want'):
            insn.profile(d)

    def test_a_mark_never_reached_is_refused(self):
        # FROM_SYNC: the plugin zeroes its counters at the mark; a guest that
        # never got there leaves a profile of the whole run
        d = run_dir(self.tmp, 'original-1', [(0xffffffff81000100, 10, 1)])
        append(d, 'insn.txt', '# mark ffffffff81000400 from run 2: never reached (1 runs)')
        with self.assertRaisesRegex(insn.ProfileError, 'never reached'):
            insn.profile(d)

    def test_a_mark_reached_is_a_window(self):
        d = run_dir(self.tmp, 'original-1', [(0xffffffff81000100, 10, 1)])
        append(d, 'insn.txt', '# mark ffffffff81000400 from run 2: reached (3 runs)')
        append(d, 'meta', 'profile_from=sync:2')
        self.assertEqual(insn.profile(d), {'folio_memcg': (10, 1)})
        out = io.StringIO()
        with redirect_stdout(out):
            insn_profile.top(d, 5)
        self.assertIn('(counted from sync call 2)', out.getvalue())

    def test_user_space_blocks_are_one_entry(self):
        # PROFILE_USER=1: blocks below the kernel's half are user space's
        d = run_dir(self.tmp, 'original-1', [(0xffffffff81000100, 10, 1), (0x401000, 7, 2), (0x7f0000001000, 5, 1)])
        append(d, 'meta', 'profile_from=sync:2,user')
        self.assertEqual(insn.profile(d), {'folio_memcg': (10, 1), '(user)': (12, 0)})
        out = io.StringIO()
        with redirect_stdout(out):
            insn_profile.top(d, 5)
        self.assertIn('(counted from sync call 2, user space included)', out.getvalue())

    def windowed(self):
        # EVERY_SYNC=1: windows 1 and 2 closed by marks, the last in insn.txt
        d = run_dir(self.tmp, 'patched-1', [(0xffffffff81000100, 1, 1)])
        append(d, 'meta', 'profile_from=sync:1,user,every')
        with open(os.path.join(d, 'insn.txt.1'), 'w') as f:
            f.write('ffffffff81000100 100 10\nffffffff81000210 50 5\n# window 1\n')
        with open(os.path.join(d, 'insn.txt.2'), 'w') as f:
            f.write('ffffffff81000100 130 13\nffffffff81000210 50 5\n401000 40 4\n# window 2\n')
        return d

    def test_windows_add_up_to_the_profile(self):
        d = self.windowed()
        self.assertEqual(insn.profile(d), {'folio_memcg': (231, 24), 'css_tryget': (100, 0), '(user)': (40, 0)})
        self.assertEqual(insn.windows(d), [{'folio_memcg': (100, 10), 'css_tryget': (50, 0)},
                                           {'folio_memcg': (130, 13), 'css_tryget': (50, 0), '(user)': (40, 0)},
                                           {'folio_memcg': (1, 1)}])

    def test_a_missing_window_is_refused(self):
        d = self.windowed()
        os.rename(os.path.join(d, 'insn.txt.2'), os.path.join(d, 'insn.txt.3'))
        with self.assertRaisesRegex(insn.ProfileError, r'\[1, 3\], not 1 to 2: one is missing'):
            insn.profile(d)

    def test_windows_beside_their_reps(self):
        # window N is rep N (FROM_SYNC=1); the spread is over the reps'
        # windows only: the last runs to the end and has no rep
        d = self.windowed()
        append(d, 'samples.log', '@@ result metric=fast.jobs_per_s param=16 rep=1 value=300.5 unit=jobs/s')
        append(d, 'samples.log', '@@ result metric=fast.jobs_per_s param=16 rep=2 value=290 unit=jobs/s')
        out = io.StringIO()
        with redirect_stdout(out):
            insn_profile.show_windows(d, 5)
        text = out.getvalue()
        self.assertRegex(text, r'\n +1 +150 +0  fast.jobs_per_s=300.5\n')
        self.assertRegex(text, r'\n +2 +180 +40  fast.jobs_per_s=290\n')
        self.assertRegex(text, r'\n +3 +1 +0  \(to the end\)')
        self.assertIn('over windows 1-2', text)
        self.assertRegex(text, r'\n +40 +0 +40  \(user\): 0 40\n')
        self.assertRegex(text, r'\n +30 +100 +130  folio_memcg: 100 130\n')
        self.assertRegex(text, r'\n +0 +50 +50  css_tryget: 50 50\n')

    def jobs_synced(self, user=True):
        # fast_tests=jobs jobs_sync=1, FROM_SYNC=2 EVERY_SYNC=1: sync call 2
        # starts rep 1's timed loop (window 1), 3 ends it, 4 is rep 2's own
        # sync, 5 starts its loop (window 4); the last window is to the end
        d = run_dir(self.tmp, 'patched-2', [(0xffffffff81000100, 1, 1)])
        append(d, 'meta', 'profile_from=sync:2,user,every' if user else 'profile_from=sync:2,every')
        loops = {1: (250000, 50000), 4: (400000, 100000)}
        for i in range(1, 5):
            kern, usr = loops.get(i, (7, 3))
            with open(os.path.join(d, f'insn.txt.{i}'), 'w') as f:
                f.write(f'ffffffff81000100 {kern} 1\n' + (f'401000 {usr} 1\n' if user else '') + f'# window {i}\n')
        append(d, 'samples.log', '@@ result metric=fast.jobs_per_s param=16 rep=1 value=2000 unit=jobs/s')
        append(d, 'samples.log', '@@ result metric=fast.jobs_gone_per_s param=16 rep=1 value=9 unit=jobs/s')
        append(d, 'samples.log', '@@ result metric=fast.jobs_per_s param=16 rep=2 value=2000 unit=jobs/s')
        return d

    def test_jobs_loops_time_against_instructions(self):
        # 4 jobs at 2000/s: a 2 ms loop; 300k instructions took 1.2 ms, so
        # 0.8 ms no vCPU ran; rep 2's 500k took the whole 2 ms
        d = self.jobs_synced()
        out = io.StringIO()
        with redirect_stdout(out):
            rows = insn_profile.show_windows(d, 5, jobs_sync=True, jobs=4)
        text = out.getvalue()
        self.assertRegex(text, r'\n +1 +2\.0 +0\.2 +0\.1 +1\.2 +0\.8 +40\.0\n')
        self.assertRegex(text, r'\n +2 +2\.0 +0\.4 +0\.1 +2\.0 +0\.0 +0\.0\n')
        self.assertEqual(len(text.strip().splitlines()), 4)
        self.assertEqual([r[0] for r in rows], [1, 2])

    def test_jobs_loops_need_user_space_counted(self):
        d = self.jobs_synced(user=False)
        with self.assertRaisesRegex(SystemExit, 'PROFILE_USER=1'):
            insn_profile.show_windows(d, 5, jobs_sync=True, jobs=4)

    def test_diff_of_jobs_loops_compares_loop_windows_only(self):
        # windows 1 and 4 are the loops (folio_memcg 250000 and 400000);
        # the others (7 each) and the last window are not compared
        a = self.jobs_synced()
        b = os.path.join(self.tmp, 'patched-3')
        shutil.copytree(a, b)
        with open(os.path.join(b, 'insn.txt.4'), 'w') as f:
            f.write('ffffffff81000100 500000 1\n401000 100000 1\n# window 4\n')
        self.assertEqual([w['folio_memcg'][0] for w in insn_profile.loop_windows(a)], [250000, 400000])
        out = io.StringIO()
        with redirect_stdout(out):
            insn_profile.diff_many([a], [b], 5, jobs_sync=True)
        text = out.getvalue()
        self.assertIn('timed jobs loops (2 and 2), instructions 300000-500000', text)
        self.assertIn('timed jobs loops (2 and 2), instructions 300000-600000', text)
        self.assertIn('functions whose ranges are apart: 0', text)

    def test_diff_shows_calls_and_instructions_per_call(self):
        # the same 1000 calls, 5 instructions each on A and 9 on B
        a = [run_dir(self.tmp, f'original-{i}', [(0xffffffff81000100, 5000, 1000)]) for i in range(2)]
        b = [run_dir(self.tmp, f'patched-{i}', [(0xffffffff81000100, 9000, 1000)]) for i in range(2)]
        out = io.StringIO()
        with redirect_stdout(out):
            insn_profile.diff_many(a, b, 10)
            insn_profile.diff(a[0], b[0], 10)
        text = out.getvalue()
        self.assertRegex(text, r'\+4000 +5000-5000 +9000-9000 +1000 +1000 +5\.0 +9\.0  folio_memcg')
        self.assertRegex(text, r'\+4000 +5000 +9000 +1000 +1000 +5\.0 +9\.0  folio_memcg')

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
        db = self.ingest([(0xffffffff81000100, 40), (0xffffffff81000210, 2)])
        self.assertEqual(dict(db.execute('SELECT function, insns FROM insn_profile').fetchall()),
                         {'folio_memcg': 40, 'css_tryget': 2})
        # this insn.txt has no runs column: no calls
        self.assertEqual(db.execute('SELECT count(*) FROM insn_profile WHERE calls IS NOT NULL').fetchone()[0], 0)

    def test_ingest_stores_the_calls(self):
        db = self.ingest([(0xffffffff81000100, 40, 8), (0xffffffff81000210, 2, 1)])
        self.assertEqual(db.execute('SELECT function, insns, calls FROM insn_profile ORDER BY function').fetchall(),
                         [('css_tryget', 2, 0), ('folio_memcg', 40, 8)])

    def test_ingest_stores_a_kselftest_profile(self):
        # PROFILE=1 works for any job: a kselftest run's profile is stored too
        db = self.ingest([(0xffffffff81000100, 40, 8)], job='kselftest', meta='swap=64G\n')
        self.assertEqual(db.execute('SELECT r.kind, p.function, p.insns, p.calls FROM insn_profile p '
                                    'JOIN runs r ON r.id = p.run_id').fetchall(),
                         [('kselftest', 'folio_memcg', 40, 8)])
        # the swap disk's size (boot.sh SWAP) is one of the run's params
        self.assertEqual(db.execute("SELECT value FROM params WHERE key = 'swap'").fetchall(), [('64G',)])

    def ingest(self, blocks, job='bench', meta=''):
        sys.path.insert(0, os.path.join(TOP, 'db'))
        sys.path.insert(0, os.path.join(TOP, 'db', 'tests'))
        import fake_run
        import store
        d = os.path.join(self.tmp, 'profile-run')
        if job == 'bench':
            fake_run.bench_run(d, 'patched')
        else:
            fake_run.kselftest_run(d, 'patched')
        prof = run_dir(self.tmp, 'patched-x', blocks)
        shutil.copy(os.path.join(prof, 'insn.txt'), d)
        with open(os.path.join(prof, 'meta')) as f:
            image = [line for line in f if line.startswith('image=')][0]
        with open(os.path.join(d, 'meta'), 'a') as f:
            f.write(image + meta)
        path = os.path.join(self.tmp, 'runs.sqlite')
        db = store.connect(path)
        self.addCleanup(db.close)
        empty = os.path.join(self.tmp, 'empty')
        open(empty, 'w').close()
        line = fake_run.store(db, d, known=empty, expect=empty, db_path=path)
        funcs = len(insn.profile(d))
        self.assertIn(f'an instruction profile of {funcs} functions', line)
        fake_run.store(db, d, replace=True, known=empty, expect=empty, db_path=path)
        self.assertEqual(db.execute('SELECT count(*) FROM insn_profile').fetchone()[0], funcs)
        return db

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
