"""The records of a scenario run (samples.log of the differential oracle)
and their reading: qemu-run/records/oracle.py and records.py's CLI for the
tool "scenario".

samples-oracle-original.log and samples-oracle-patched.log are written by
hand in the format of qemu-run/records/RECORDS.md ("samples.log of a
scenario run"): two scenarios, basic and pagecache; patched has one value
beyond its tolerance, fewer dying cgroups and a failed audit.  The tests
cut them the ways a crash cuts a run and garble lines the ways a noisy
channel does.
"""
import io
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
RECORDS = os.path.join(TOP, 'qemu-run', 'records', 'records.py')
FIXTURES = {k: os.path.join(HERE, 'fixtures', f'samples-oracle-{k}.log') for k in ('original', 'patched')}
sys.path.insert(0, os.path.join(TOP, 'qemu-run', 'records'))
import records  # noqa: E402

oracle = records.oracle_module()

RECORD = {
    'run': r'^@@ run scenario files=\S+( \w+=\S+)* cpus=\d+ mem_kb=\d+ swap_kb=\d+( \w+=\S+)*$',
    'scenario': r'^@@ scenario \S+ file=\S+\.scn$',
    'act': r'^@@ act \S+ \d+ line=\d+ ms=\d+ out=\S+ cmd=.*$',
    'cp': r'^@@ cp \S+ \S+$',
    'endcp': r'^@@ endcp \S+ \S+ lines=\d+$',
    'audit': r'^@@ audit \S+ \S+ (hierarchy|meminfo|bounds|baseline|kmsg) (ok|fail)( .*)?$',
    'kmsg': r'^@@ kmsg \S+ .+$',
    'endscenario': r'^@@ endscenario \S+ rc=\d+ acts=\d+ t_ms=\d+$',
    'end': r'^@@ end rc=\d+ scenarios=\d+ t_ms=\d+$',
}


def fixture(kernel='original'):
    with open(FIXTURES[kernel]) as f:
        return f.read()


def walk(text):
    run = oracle.ScenarioRecords(io.StringIO(text))
    yielded = list(run)
    return run, yielded


def with_file(text, fn, *args):
    with tempfile.NamedTemporaryFile('w', suffix='.log', delete=False) as f:
        f.write(text)
    try:
        return fn(f.name, *args)
    finally:
        os.unlink(f.name)


class Format(unittest.TestCase):
    """The fixtures follow RECORDS.md: a test of the fixtures, so that the
    parser's tests stand on the format as documented."""

    def test_records(self):
        for kernel in FIXTURES:
            lines = fixture(kernel).split('\n')
            self.assertEqual(lines.pop(), '', 'the file ends with a newline')
            self.assertRegex(lines[0], RECORD['run'])
            cp = None
            for line in lines[1:]:
                if not line.startswith('@@'):
                    self.assertIsNotNone(cp, f'data line outside a checkpoint: {line}')
                    self.assertRegex(line, r'^(/|[a-z]\S*) [a-z.]+:[a-z_]+ -?\d+$')
                    cp[1] += 1
                    continue
                kind = line.split()[1]
                self.assertIn(kind, RECORD, line)
                self.assertRegex(line, RECORD[kind])
                if kind == 'cp':
                    cp = [line.split()[3], 0]
                elif kind == 'endcp':
                    self.assertEqual(line, f'@@ endcp {line.split()[2]} {cp[0]} lines={cp[1]}')
                    cp = None
            self.assertRegex(lines[-1], RECORD['end'])


class Parse(unittest.TestCase):
    def test_complete_run(self):
        run, yielded = walk(fixture('patched'))
        self.assertEqual(run.program, 'scenario')
        self.assertEqual(run.run['files'], 'basic.scn,pagecache.scn')
        self.assertEqual(run.run['seed'], '1')
        self.assertEqual(run.end, {'rc': 0, 'scenarios': 2, 't_ms': 250402})
        self.assertEqual((run.dropped, run.malformed, run.problems), (0, 0, []))
        self.assertEqual(list(run.scenarios), ['basic', 'pagecache'])
        basic = run.scenarios['basic']
        self.assertEqual(basic.file, 'basic.scn')
        self.assertEqual(basic.end, {'rc': 0, 'acts': 4, 't_ms': 5302})
        self.assertEqual(basic.acts[1], oracle.Act(2, 4, 3, 'ok', 'write oracle/a memory.max 64M'))
        self.assertEqual(basic.acts[3].out, 'EBUSY')
        self.assertEqual(list(basic.checkpoints), ['start', 'end'])
        self.assertEqual(basic.checkpoints['end'][('oracle/a', 'memory.current:bytes')], 17039360)
        self.assertEqual(len(basic.checkpoints['start']), 33)
        self.assertEqual([(s, c) for s, c, _ in yielded], [('basic', 'start'), ('basic', 'end'),
                                                           ('pagecache', 'after-rmdir')])
        pc = run.scenarios['pagecache']
        self.assertEqual(pc.audit_failures(), [oracle.Audit(
            'after-rmdir', 'meminfo', False, 'root memory.stat shmem 1048576 vs /proc/meminfo 5242880')])
        self.assertEqual(len(pc.audits), 4)
        self.assertEqual((run.checkpoint_count(), run.value_count(), run.audit_failures(), run.kmsg_count()),
                         (3, 88, 1, 0))

    def test_cut_short_checkpoint_is_dropped(self):
        """A crash in the middle of a checkpoint: the checkpoint is dropped,
        never stored half; the scenario and the run have no end."""
        text = fixture()
        cut = text[:text.index('oracle memory.stat:anon', text.index('@@ cp basic end'))]
        run, yielded = walk(cut)
        self.assertEqual(run.dropped, 1)
        self.assertTrue(run.cut)
        self.assertEqual([c for _, c, _ in yielded], ['start'])
        basic = run.scenarios['basic']
        self.assertEqual(list(basic.checkpoints), ['start'])
        self.assertIn('cut short', basic.dropped['end'])
        self.assertIsNone(basic.end)
        self.assertIsNone(run.end)
        self.assertEqual(run.malformed, 0)

    def test_checkpoint_cut_by_another_record_or_miscounted(self):
        text = fixture()
        # a record inside a checkpoint: the guest writes one at once, so it was cut
        inside = text.replace('oracle/a memory.stat:file 0\n', '@@ kmsg basic x\noracle/a memory.stat:file 0\n', 1)
        run, _ = walk(inside)
        self.assertEqual((run.dropped, list(run.scenarios['basic'].checkpoints)), (1, ['end']))
        self.assertIn('cut short by "@@ kmsg', run.problems[0])
        # the checkpoint's lines after the cut (3 data lines, its "@@ endcp")
        # are stray lines outside any checkpoint
        self.assertEqual(run.malformed, 4)
        wrong = text.replace('@@ endcp basic start lines=33', '@@ endcp basic start lines=32')
        run, _ = walk(wrong)
        self.assertEqual(run.dropped, 1)
        self.assertIn('33 data lines, "@@ endcp" says 32', run.scenarios['basic'].dropped['start'])
        self.assertFalse(run.cut)
        foreign = text.replace('@@ endcp basic start lines=33', '@@ endcp basic end lines=33')
        run, _ = walk(foreign)
        self.assertEqual(run.dropped, 1)
        self.assertEqual(list(run.scenarios['basic'].checkpoints), ['end'])

    def test_bad_data_line_drops_its_checkpoint(self):
        text = fixture()
        for bad in ('oracle memory.stat:anon 12x', 'oracle memory.stat:anon 99999999999999999999',
                    'oracle memory.stat:anon', 'oracle anon 1', 'oracle memory.stat:anon\x00 1'):
            garbled = text.replace('oracle memory.stat:anon 0\n', bad + '\n', 1)
            run, _ = walk(garbled)
            self.assertEqual(run.dropped, 1, bad)
            self.assertEqual(run.malformed, 1, bad)
            self.assertEqual(list(run.scenarios['basic'].checkpoints), ['end'], bad)
        twice = text.replace('oracle memory.stat:anon 0\n', 'oracle memory.stat:anon 0\noracle memory.stat:anon 0\n', 1)
        run, _ = walk(twice.replace('lines=33', 'lines=34', 1))
        self.assertEqual(run.dropped, 1)
        self.assertIn('repeats a cgroup and key', run.problems[0])

    def test_missing_end(self):
        text = fixture()
        run, _ = walk(text[:text.index('@@ end ')])
        self.assertIsNone(run.end)
        self.assertEqual(run.scenarios['pagecache'].end, {'rc': 0, 'acts': 3, 't_ms': 9000})
        self.assertEqual((run.dropped, run.malformed), (0, 0))
        run, _ = walk(text[:text.index('@@ endscenario pagecache')])
        self.assertIsNone(run.scenarios['pagecache'].end)
        self.assertEqual(run.checkpoint_count(), 3)

    def test_malformed_lines_are_counted_not_fatal(self):
        text = fixture()
        lines = text.split('\n')
        garbage = [
            'stray data line outside a checkpoint 1',
            '@@ act basic x line=1 ms=1 out=ok cmd=mkdir P',          # seq not a number
            '@@ act pagecache 9 line=1 ms=1 out=ok cmd=mkdir P',      # names another scenario
            '@@ act basic 2 line=4 ms=2 out=ok cmd=write again',      # seq seen before
            '@@ audit basic start hierarchy maybe 3 cgroups',          # neither ok nor fail
            '@@ endcp basic start lines=0',                           # no "@@ cp" open
            '@@ endscenario basic rc=zero acts=4 t_ms=1',             # not a number
        ]
        at = lines.index('@@ act basic 3 line=5 ms=40 out=ok cmd=run oracle/a anon 16M')
        run, _ = walk('\n'.join(lines[:at] + garbage + lines[at:]))
        self.assertEqual(run.malformed, len(garbage))
        self.assertEqual(run.dropped, 0)
        self.assertEqual(len(run.problems), len(garbage))
        self.assertEqual(run.checkpoint_count(), 3)
        self.assertEqual([a.seq for a in run.scenarios['basic'].acts], [1, 2, 3, 4])
        self.assertEqual(run.scenarios['basic'].end['rc'], 0)
        self.assertEqual(run.end['rc'], 0)
        # records before any scenario, and unknown records, are not fatal either
        run, _ = walk('@@ act basic 1 line=1 ms=1 out=ok cmd=x\n@@ progress whatever=1\n' + text)
        self.assertEqual((run.malformed, run.checkpoint_count()), (1, 3))

    def test_names_seen_again_are_numbered(self):
        """A file played twice, a checkpoint inside a repeat block: #2, the
        same on both kernels; an audit belongs to the latest checkpoint of
        its name."""
        text = fixture()
        basic = text[text.index('@@ scenario basic'):text.index('@@ scenario pagecache')]
        twice = basic.replace('@@ cp basic end', '@@ cp basic start').replace(
            '@@ endcp basic end', '@@ endcp basic start').replace('@@ audit basic end', '@@ audit basic start')
        run, _ = walk(text.split('\n', 1)[0] + '\n' + twice + basic)
        self.assertEqual(list(run.scenarios), ['basic', 'basic#2'])
        self.assertEqual(list(run.scenarios['basic'].checkpoints), ['start', 'start#2'])
        self.assertEqual({a.checkpoint for a in run.scenarios['basic'].audits}, {'start', 'start#2'})
        self.assertEqual(run.scenarios['basic#2'].file, 'basic.scn')
        self.assertEqual(run.malformed, 0)

    def test_kmsg_and_crlf(self):
        text = fixture().replace('@@ endscenario basic',
                                 '@@ kmsg basic WARNING: CPU: 1 PID: 9 at mm/memcontrol.c:123 x\n@@ endscenario basic')
        run, _ = walk(text.replace('\n', '\r\n'))
        self.assertEqual(run.scenarios['basic'].kmsg, ['WARNING: CPU: 1 PID: 9 at mm/memcontrol.c:123 x'])
        self.assertEqual((run.malformed, run.dropped, run.checkpoint_count()), (0, 0, 3))


class Summary(unittest.TestCase):
    def test_complete(self):
        status, line = with_file(fixture('patched'), oracle.summary, 'scenario patched')
        self.assertEqual(status, 0)
        self.assertRegex(line, r'^scenario patched: 2 scenarios, 2 ended rc=0, 3 checkpoints, 1 audit failures, '
                         r'0 kmsg \(4m10s\); records: \S+$')

    def test_errors_and_cuts(self):
        text = fixture()
        status, line = with_file(text.replace('@@ end rc=0', '@@ end rc=1'), oracle.summary, 'x')
        self.assertEqual(status, 1)
        self.assertIn('x: done with errors (rc=1): 2 scenarios', line)
        status, line = with_file(text[:text.index('oracle memory.stat:anon', text.index('@@ cp basic end'))],
                                 oracle.summary, 'x')
        self.assertEqual(status, 1)
        self.assertIn('x: FAILED: no "@@ end", the run stopped in scenario basic after 4 acts: 1 scenario, '
                      '0 ended rc=0, 1 checkpoint, 0 audit failures, 0 kmsg, 1 dropped (cut short)', line)
        status, line = with_file('', oracle.summary, 'x')
        self.assertEqual(status, 1)
        self.assertIn('before the first scenario', line)

    def test_progress(self):
        text = fixture()
        self.assertEqual(with_file('', oracle.progress, 'l', '0m05s'), 'l: booting, wall 0m05s')
        self.assertEqual(with_file(text.split('\n', 1)[0] + '\n', oracle.progress, 'l', 'w'), 'l: starting, wall w')
        mid = text[:text.index('@@ act pagecache 3')]
        self.assertEqual(with_file(mid, oracle.progress, 'l', 'w'),
                         'l: scenario 2/2 pagecache: 2 acts, 0 checkpoints, 0 audit failures, wall w')
        self.assertEqual(with_file(text, oracle.progress, 'l', 'w'), 'l: done, 2 scenarios, wall w')
        self.assertEqual(oracle.progress('/nonexistent/samples.log', 'l', 'w'), 'l: booting, wall w')


class Cli(unittest.TestCase):
    """records.py's commands for the tool "scenario", as lib.sh's tool_run calls them."""

    def cli(self, *args):
        return subprocess.run([sys.executable, RECORDS, *args], capture_output=True, text=True, timeout=60)

    def test_summary_scan_progress(self):
        r = self.cli('summary', 'scenario', FIXTURES['patched'], 'oracle v2 patched', '3m02s')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith('oracle v2 patched (wall 3m02s): 2 scenarios, 2 ended rc=0, '), r.stdout)
        r = self.cli('scan', 'scenario', FIXTURES['original'])
        words = records.kv_words(r.stdout)
        self.assertEqual((words['scenarios'], words['checkpoints'], words['values'], words['ended'], words['rc']),
                         ('2', '3', '88', '1', '0'))
        r = self.cli('progress', 'scenario', FIXTURES['original'], 'l', '1m', '600')
        self.assertEqual(r.stdout.strip(), 'l: done, 2 scenarios, wall 1m')
        self.assertEqual(self.cli('summary', 'scenario').returncode, 2)

    def test_failed_run_and_last_words(self):
        with tempfile.TemporaryDirectory() as d:
            text = fixture()
            with open(os.path.join(d, 'samples.log'), 'w') as f:
                f.write(text[:text.index('@@ act basic 4')])
            with open(os.path.join(d, 'console.log'), 'w') as f:
                f.write('[    3.1] random kernel line\r\nscenario: playing basic.scn (7 lines)\r\n'
                        "scenario: basic line 5: 'run oracle/a anon 16M' must succeed, it gave signal=9: "
                        'the scenario stops\r\n')
            r = self.cli('summary', 'scenario', os.path.join(d, 'samples.log'), 'l')
            self.assertEqual(r.returncode, 1)
            self.assertIn('FAILED: no "@@ end", the run stopped in scenario basic after 3 acts', r.stdout)
            r = self.cli('last-words', 'scenario', d)
            self.assertEqual(r.returncode, 0)
            lines = r.stdout.splitlines()
            self.assertEqual(len(lines), 2, r.stdout)
            self.assertRegex(lines[0], r"^    guest: scenario: basic line 5: .* must succeed")
            self.assertEqual(lines[1], '    records: scenario basic (basic.scn) stops after act 3 '
                             '(line 5: run oracle/a anon 16M) out=ok')

    def test_loaded_under_its_own_name(self):
        """reports/oracle.py is the module "oracle" of a program that uses
        both: the records' parser never takes its name."""
        self.assertEqual(oracle.__name__, 'records_oracle')
        self.assertIs(records.oracle_module(), oracle)
        self.assertNotIn('oracle', sys.modules)
        self.assertTrue(re.search(r'records_oracle', oracle.__doc__))


if __name__ == '__main__':
    unittest.main()
