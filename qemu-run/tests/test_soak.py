"""The soak's records (samples.log) and soak.sh's reading of them.

samples-original-soak.log is a real samples.log: the original kernel,
`qemu-run/jobs/soak.sh original gens=20 sample_every=10`.  The format tests hold
it to qemu-run/records/RECORDS.md; the summary tests cut it the ways a crash or the
deadline cuts it.

The guest test (a soak killed by its deadline) boots QEMU: it runs only when
SOAK_GUEST_KERNEL names a built kernel, e.g.
    SOAK_GUEST_KERNEL=original python3 -m unittest qemu-run/tests/test_soak.py
(with NOBUILD=1 and GUEST_DISK honoured as by soak.sh).
"""
import os
import re
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOAK_SH = os.path.join(HERE, '..', 'jobs', 'soak.sh')
FIXTURE = os.path.join(HERE, 'fixtures', 'samples-original-soak.log')
SOURCES = {'cgroup.stat', 'memory.current', 'memory.stat', 'meminfo', 'vmstat',
           'slabinfo', 'cgroups'}


def read_fixture():
    with open(FIXTURE, 'rb') as f:
        return f.read()


def soak_sh(*args, env=None, timeout=60):
    return subprocess.run(['bash', SOAK_SH, *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


def scan(data):
    """soak.sh --scan of a samples.log given as bytes, as a dict."""
    with tempfile.NamedTemporaryFile(suffix='.log') as f:
        f.write(data)
        f.flush()
        out = soak_sh('--scan', f.name)
    if out.returncode:
        raise AssertionError(out.stderr)
    return dict(w.split('=', 1) for w in out.stdout.split())


def summary(data):
    with tempfile.NamedTemporaryFile(suffix='.log') as f:
        f.write(data)
        f.flush()
        out = soak_sh('--summary', f.name)
    return out.returncode, out.stdout


class Format(unittest.TestCase):
    """The real samples.log follows RECORDS.md."""

    def setUp(self):
        self.lines = read_fixture().decode().split('\n')
        self.assertEqual(self.lines[-1], '', 'the file ends with a newline')
        self.lines.pop()

    def test_lines_end_in_newline_only(self):
        self.assertNotIn(b'\r', read_fixture())

    def test_run_line_first(self):
        self.assertRegex(self.lines[0],
                         r'^@@ run soak seed=\d+ gens=\d+ jobs=\d+ mix=[a-z,]+ hog_mb=\d+( \w+=\S+)*$')
        self.assertFalse(any(line.startswith('@@ run') for line in self.lines[1:]))

    def test_records_and_snapshots(self):
        seq, data, seqs = None, 0, []
        for line in self.lines[1:]:
            if seq is None:
                if line.startswith('@@ sample '):
                    m = re.match(r'^@@ sample (\d+) gen=(\d+) t_ms=(\d+)( after=drop_caches)?$', line)
                    self.assertTrue(m, line)
                    seq, data = int(m.group(1)), 0
                    seqs.append(seq)
                else:
                    self.assertRegex(line, r'^@@ (progress gen=\d+ t_ms=\d+ dying=\d+'
                                           r'|end rc=\d+ gens=\d+ t_ms=\d+)$')
            elif line.startswith('@@ '):
                self.assertEqual(line, f'@@ endsample {seq} lines={data}')
                seq = None
            else:
                source, key, value = line.split(' ')
                self.assertIn(source, SOURCES)
                self.assertRegex(value, r'^-?\d+$', line)
                data += 1
        self.assertIsNone(seq, 'no snapshot left open')
        self.assertEqual(seqs, list(range(1, len(seqs) + 1)))
        self.assertTrue(self.lines[-1].startswith('@@ end rc=0 '))

    def test_every_source_in_every_snapshot(self):
        text = '\n'.join(self.lines)
        for snap in re.findall(r'^@@ sample .*?^@@ endsample', text, re.M | re.S):
            seen = {line.split(' ')[0] for line in snap.split('\n')[1:-1]}
            self.assertEqual(seen, SOURCES)
            for key in ('nr_dying_descendants', 'nr_dying_subsys_memory'):
                self.assertIn(f'\ncgroup.stat {key} ', snap)
            for suffix in (':active_objs', ':num_objs', ':objsize', ':bytes'):
                self.assertIn(f'\nslabinfo dentry{suffix} ', snap)
            self.assertIn('\ncgroups memory:num_cgroups ', snap)


class Summary(unittest.TestCase):
    def test_complete_run(self):
        s = scan(read_fixture())
        self.assertEqual((s['ended'], s['rc'], s['dropped']), ('1', '0', '0'))
        self.assertEqual(s['gens'], s['target_gens'])
        self.assertEqual(s['last_gen'], s['gens'])
        self.assertGreater(int(s['dying']), 0)
        self.assertNotEqual(s['dying_drop'], '')
        rc, out = summary(read_fixture())
        self.assertEqual(rc, 0, out)
        self.assertRegex(out, r'^soak: done: 20 generations in [\d.]+ s \([\d.]+ gen/s\), \d+ dying')

    def test_cut_inside_a_line(self):
        data = read_fixture()
        third = data.index(b'@@ sample 3 ')
        cut = data[:third + 5000]
        s = scan(cut)
        self.assertEqual((s['ended'], s['complete'], s['dropped'], s['cut']), ('0', '2', '1', '1'))
        rc, out = summary(cut)
        self.assertEqual(rc, 1)
        self.assertIn('FAILED', out)
        self.assertIn('1 dropped (cut short)', out)

    def test_cut_at_a_line_end(self):
        data = read_fixture()
        third = data.index(b'@@ sample 3 ')
        cut = data[:data.index(b'\n', third + 5000) + 1]
        s = scan(cut)
        self.assertEqual((s['complete'], s['dropped'], s['cut']), ('2', '1', '1'))

    def test_cut_before_endsample(self):
        data = read_fixture()
        end = data.index(b'@@ endsample 2 ')
        s = scan(data[:end])
        self.assertEqual((s['complete'], s['dropped'], s['cut']), ('1', '1', '1'))

    def test_wrong_line_count_is_dropped(self):
        data = re.sub(rb'@@ endsample 2 lines=(\d+)', b'@@ endsample 2 lines=7', read_fixture())
        s = scan(data)
        self.assertEqual((s['dropped'], s['cut'], s['ended']), ('1', '0', '1'))

    def test_errors_fail_the_run(self):
        data = read_fixture().replace(b'@@ end rc=0 ', b'@@ end rc=1 ')
        rc, out = summary(data)
        self.assertEqual(rc, 1)
        self.assertIn('done with errors (rc=1)', out)


@unittest.skipUnless(os.environ.get('SOAK_GUEST_KERNEL'), 'boots QEMU: set SOAK_GUEST_KERNEL')
class KilledByDeadline(unittest.TestCase):
    """A soak killed mid-run: a cut snapshot at the end, and a failed run."""

    def test_deadline(self):
        kernel = os.environ['SOAK_GUEST_KERNEL']
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, DEADLINE='45', RUN_DIR=tmp, PROGRESS_SECS='5')
            # A snapshot every generation: the port is always in the middle of one.
            out = soak_sh(kernel, 'gens=100000', 'sample_every=1', env=env, timeout=600)
            with open(os.path.join(tmp, 'samples.log'), 'rb') as f:
                data = f.read()
            with open(os.path.join(tmp, 'meta')) as f:
                meta = f.read()
        self.assertNotEqual(out.returncode, 0)
        self.assertIn('guest run failed: hang', out.stderr)
        self.assertIn('FAILED: no "@@ end"', out.stdout)
        self.assertIn('verdict=bad', meta)
        self.assertNotIn(b'\n@@ end ', data)
        last = data.rindex(b'@@ sample ')
        self.assertNotIn(b'@@ endsample', data[last:])
        s = scan(data)
        self.assertEqual((s['ended'], s['cut'], s['dropped']), ('0', '1', '1'))
        self.assertGreater(int(s['complete']), 0)


if __name__ == '__main__':
    unittest.main()
