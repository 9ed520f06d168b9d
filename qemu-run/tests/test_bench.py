"""The bench's records (samples.log of a bench run) and bench.sh's reading
of them.

samples-patched-bench.log is a real samples.log: the patched kernel,
`qemu-run/jobs/bench.sh sizes=1,64,256 reps=1 fast_reps=1 timeout_ms=5000`.
The format tests hold it to qemu-run/records/RECORDS.md and to qemu-run/records/records.py's
parser; the summary tests cut it the ways a crash or the deadline cuts it.
"""
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
BENCH_SH = os.path.join(TOP, 'qemu-run', 'jobs', 'bench.sh')
FIXTURE = os.path.join(HERE, 'fixtures', 'samples-patched-bench.log')
sys.path.insert(0, os.path.join(TOP, 'qemu-run', 'records'))
import records  # noqa: E402

RESULT = re.compile(r'^@@ result metric=[a-z][a-z0-9_]*(\.[a-z0-9_]+)* param=\d+ rep=[1-9]\d* '
                    r'value=(-?[0-9.]+(e[-+]\d+)?|none) unit=\S+( limit=[0-9.]+(e[-+]\d+)?)?$')


def read_fixture():
    with open(FIXTURE, 'rb') as f:
        return f.read()


def bench_sh(mode, data):
    with tempfile.NamedTemporaryFile(suffix='.log') as f:
        f.write(data)
        f.flush()
        return subprocess.run(['bash', BENCH_SH, mode, f.name], capture_output=True, text=True, timeout=60)


def scan(data):
    out = bench_sh('--scan', data)
    return dict(w.split('=', 1) for w in out.stdout.split())


class Format(unittest.TestCase):
    def test_records(self):
        lines = read_fixture().decode().splitlines()
        self.assertTrue(lines[0].startswith('@@ run bench '), lines[0])
        self.assertIn(' sizes=1,64,256 ', lines[0])
        self.assertTrue(lines[-1].startswith('@@ end rc=0 '), lines[-1])
        for line in lines[1:-1]:
            if line.startswith('@@ result '):
                self.assertRegex(line, RESULT)
            else:
                self.assertRegex(line, r'^@@ progress part=(offline|fast) done=\d+ of=\d+ t_ms=\d+$')
        # value=none only with its limit.
        for line in lines:
            self.assertEqual(' value=none ' in line, ' limit=' in line, line)

    def test_parser_agrees(self):
        w = records.BenchResults(io.StringIO(read_fixture().decode()))
        got = list(w)
        self.assertEqual(w.dropped, 0, w.problems)
        self.assertEqual(len(got), int(w.end['results']))
        metrics = {g[0] for g in got}
        for m in ('offline.release_us', 'offline.stall_us', 'offline.rmdir_us', 'fast.read_mibps',
                  'fast.fault_per_s', 'fast.charge_per_s', 'fast.ctxsw_per_s'):
            self.assertIn(m, metrics)
        self.assertEqual({g[1] for g in got if g[0] == 'offline.release_us'}, {1024, 65536, 262144})
        self.assertEqual(w.run['tag'].endswith('-bench'), True)


class Summary(unittest.TestCase):
    def test_complete(self):
        s = scan(read_fixture())
        self.assertEqual((s['ended'], s['rc']), ('1', '0'))
        out = bench_sh('--summary', read_fixture())
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertRegex(out.stdout, r'^bench: done: \d+ results')

    def test_cut_short(self):
        data = read_fixture()
        cut = data[:data.index(b'@@ result metric=fast.')]
        s = scan(cut)
        self.assertEqual(s['ended'], '0')
        self.assertEqual(s['part'], 'offline')
        out = bench_sh('--summary', cut)
        self.assertEqual(out.returncode, 1)
        self.assertIn('FAILED: no "@@ end"', out.stdout)

    def test_empty(self):
        out = bench_sh('--summary', b'')
        self.assertEqual(out.returncode, 1)
        self.assertIn('no results at all', out.stdout)

    def test_errors_fail_the_run(self):
        out = bench_sh('--summary', read_fixture().replace(b'@@ end rc=0 ', b'@@ end rc=1 '))
        self.assertEqual(out.returncode, 1)
        self.assertIn('done with errors (rc=1)', out.stdout)


# bench.c with its own main renamed: its YAML reader on the host, nothing run.
YAML_PROG = r'''
#define main bench_main
#include "bench.c"
#undef main

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	printf("%.6f\n", stressng_rate(argv[1], argv[2]));
	return 0;
}
'''
YAML_FIXTURE = os.path.join(HERE, 'fixtures', 'stressng-0.15-switch-pipe.yaml')


@unittest.skipUnless(shutil.which('gcc'), 'needs gcc (make deps installs it)')
class StressngYaml(unittest.TestCase):
    """Part stressng reads stress-ng 0.15's --yaml (the fixture: a real
    one, `stress-ng --switch 1 --pipe 1 --timeout 1s --metrics-brief --yaml`)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        src = os.path.join(cls.tmp, 't.c')
        with open(src, 'w') as f:
            f.write(YAML_PROG)
        cls.bin = os.path.join(cls.tmp, 't')
        subprocess.run(['gcc', '-Wall', '-Wextra', '-Werror', '-O2', '-I', os.path.join(TOP, 'qemu-run', 'guest'),
                        '-o', cls.bin, src], check=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def rate(self, path, name):
        return float(subprocess.run([self.bin, path, name], capture_output=True, text=True, check=True).stdout)

    def write(self, text):
        path = os.path.join(self.tmp, 'y.yaml')
        with open(path, 'w') as f:
            f.write(text)
        return path

    def test_each_stressor_its_own_rate(self):
        self.assertEqual(self.rate(YAML_FIXTURE, 'switch'), 80824.821629)
        self.assertEqual(self.rate(YAML_FIXTURE, 'pipe'), 127809.991464)

    def test_missing(self):
        self.assertEqual(self.rate(YAML_FIXTURE, 'sock'), -1)              # not in the run
        self.assertEqual(self.rate(YAML_FIXTURE, 'swi'), -1)               # a prefix is not a name
        self.assertEqual(self.rate(os.path.join(self.tmp, 'none.yaml'), 'switch'), -1)
        with open(YAML_FIXTURE) as f:
            text = f.read()
        # a run cut before its metrics: no rate, not the usr+sys one
        cut = text[:text.index('      bogo-ops-per-second-real-time: 80824')]
        self.assertEqual(self.rate(self.write(cut), 'switch'), -1)
        self.assertEqual(self.rate(self.write(text.replace('real-time: 80824.821629', 'real-time: x')),
                                   'switch'), -1)

    def test_records(self):
        # what part_stressng writes, as the host reads it
        text = ('@@ run bench parts=stressng stressors=switch,af-alg tag=x cpus=2 nodes=2\n'
                '@@ result metric=stressng.switch_ops_per_s param=2 rep=1 value=80824.8 unit=ops/s\n'
                '@@ progress part=stressng done=1 of=2 t_ms=9000\n'
                '@@ result metric=stressng.af_alg_ops_per_s param=2 rep=1 value=none unit=ops/s limit=0\n'
                '@@ progress part=stressng done=2 of=2 t_ms=18000\n'
                '@@ end rc=1 results=2 t_ms=18000\n')
        for line in text.splitlines():
            if line.startswith('@@ result '):
                self.assertRegex(line, RESULT)
        w = records.BenchResults(io.StringIO(text))
        self.assertEqual(list(w), [('stressng.switch_ops_per_s', 2, 1, 80824.8, 'ops/s', None),
                                   ('stressng.af_alg_ops_per_s', 2, 1, None, 'ops/s', 0.0)])
        self.assertEqual(w.dropped, 0)
        s = scan(text.encode())
        self.assertEqual((s['part'], s['done'], s['of'], s['none'], s['rc']), ('stressng', '2', '2', '1', '1'))
        self.assertEqual(s['nodes'], '2')             # bench.sh holds it to NODES
        out = bench_sh('--summary', text.encode())
        self.assertEqual(out.returncode, 1)
        self.assertIn('done with errors (rc=1): 2 results (1 of them not within their limit)', out.stdout)


if __name__ == '__main__':
    unittest.main()
