"""The guest init's kselftest loop and its reruns of flaky subtests, run
on the host under busybox sh with ptyrun replaced by a script that plays
back TAP: a flaky failure reruns its binary until the subtest passes or the
retries run out; any other failure reruns nothing."""
import os
import shutil
import subprocess
import tempfile
import unittest

INIT = os.path.join(os.path.dirname(__file__), '..', 'guest', 'init')
SH = shutil.which('busybox')


def init_functions(testdir):
    with open(INIT) as f:
        text = f.read()
    start = text.index('# "pass NAME" or "fail NAME"')
    end = text.index('# Make the kernel report something on purpose')
    return text[start:end].replace('/kselftest/cgroup', testdir)


@unittest.skipUnless(SH, 'busybox (busybox-static, make deps) runs the guest init')
class Reruns(unittest.TestCase):
    def run_init(self, plays, flaky='', retries='3', tests='t'):
        """plays: the TAP each successive run of a binary prints, with its
        exit status.  Returns (records, runs of each binary)."""
        tmp = tempfile.mkdtemp(prefix='init-test-')
        self.addCleanup(shutil.rmtree, tmp)
        testdir = os.path.join(tmp, 'cgroup')
        os.makedirs(testdir)
        for t in tests.split():
            path = os.path.join(testdir, t)
            with open(path, 'w') as f:
                f.write('#!/bin/sh\n')
            os.chmod(path, 0o755)
        for i, (tap, rc) in enumerate(plays):
            with open(os.path.join(tmp, f'play.{i}'), 'w') as f:
                f.write(tap)
            with open(os.path.join(tmp, f'rc.{i}'), 'w') as f:
                f.write(str(rc))
        res = os.path.join(tmp, 'res')
        script = f'''
RES={res}
tests="{tests}"
timeout=60
rec() {{ echo "@@ $*" >>"$RES"; }}
fail_boot() {{ echo "fail_boot $*"; exit 9; }}
arg() {{ case "$1" in rr.flaky) echo "{flaky}" ;; rr.retries) echo "{retries}" ;; esac; }}
n=0
ptyrun() {{
	out=$2
	i=$(cat {tmp}/n 2>/dev/null || echo 0)
	echo $((i + 1)) >{tmp}/n
	for p in $(echo "$out" | tr ',' ' '); do cat {tmp}/play.$i >>"$p"; done
	return $(cat {tmp}/rc.$i)
}}
{init_functions(testdir)}
run_kselftest
echo "status=$?"
'''
        r = subprocess.run([SH, 'sh', '-c', script], capture_output=True, text=True, cwd=tmp, timeout=60)
        self.assertNotIn('fail_boot', r.stdout, r.stdout + r.stderr)
        with open(res) as f:
            records = f.read().splitlines()
        return records, [ln for ln in records if ln.startswith('@@ begin')]

    def test_flaky_failure_reruns_until_it_passes(self):
        fail = ('1..2\nok 1 a\nnot ok 2 b\n', 1)
        ok = ('1..2\nok 1 a\nok 2 b\n', 0)
        records, begins = self.run_init([fail, fail, ok], flaky='t:b')
        self.assertEqual(begins, ['@@ begin t', '@@ begin t attempt=2', '@@ begin t attempt=3'])
        self.assertIn('ok 2 b', records)

    def test_retries_run_out(self):
        fail = ('1..2\nok 1 a\nnot ok 2 b\n', 1)
        _, begins = self.run_init([fail] * 5, flaky='t:b', retries='2')
        self.assertEqual(len(begins), 3)

    def test_other_failures_rerun_nothing(self):
        fail = ('1..2\nnot ok 1 a\nok 2 b\n', 1)
        _, begins = self.run_init([fail, fail], flaky='t:b')
        self.assertEqual(begins, ['@@ begin t'])
        # ... nor a flaky subtest of another test.
        _, begins = self.run_init([('1..2\nok 1 a\nnot ok 2 b\n', 1)], flaky='u:b')
        self.assertEqual(begins, ['@@ begin t'])

    def test_glued_result_counts(self):
        fail = ('1..2\nok 1 a\n# a message without its newlinenot ok 2 b\n', 1)
        ok = ('1..2\nok 1 a\nok 2 b\n', 0)
        _, begins = self.run_init([fail, ok], flaky='t:b')
        self.assertEqual(len(begins), 2)

    def test_no_retries_by_default(self):
        fail = ('1..2\nok 1 a\nnot ok 2 b\n', 1)
        _, begins = self.run_init([fail, fail], flaky='t:b', retries='')
        self.assertEqual(begins, ['@@ begin t'])


if __name__ == '__main__':
    unittest.main()
