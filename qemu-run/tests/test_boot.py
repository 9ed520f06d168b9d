"""boot.sh owns its QEMU and names how it ended (a fake QEMU on PATH: no
kernel, no guest).  Needs mke2fs (e2fsprogs) and setpriv (util-linux)."""
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

BOOT = os.path.join(os.path.dirname(__file__), '..', 'boot', 'boot.sh')

FAKE_QEMU = """#!/bin/bash
echo $$ >"$FAKE_PIDFILE"
exec sleep 600
"""


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead too.
    with open(f'/proc/{pid}/stat') as f:
        return f.read().split(')')[-1].split()[0] != 'Z'


class FakeBoot(unittest.TestCase):
    def setUp(self):
        if not shutil.which('mke2fs') or not shutil.which('setpriv'):
            self.skipTest('mke2fs and setpriv are needed (make deps)')
        self.tmp = tempfile.mkdtemp(prefix='boot-test-')
        self.addCleanup(shutil.rmtree, self.tmp, True)
        image = os.path.join(self.tmp, 'kernel', 'original', 'arch', 'x86', 'boot')
        os.makedirs(image)
        open(os.path.join(image, 'bzImage'), 'w').close()
        with open(os.path.join(self.tmp, 'kernel', 'original', '.key'), 'w') as f:
            f.write('test\n')
        disk = os.path.join(self.tmp, 'guest', 'disk')
        os.makedirs(disk)
        with open(os.path.join(disk, 'init'), 'w') as f:
            f.write('#!/bin/sh\n')
        os.chmod(os.path.join(disk, 'init'), 0o755)
        bin_dir = os.path.join(self.tmp, 'bin')
        os.makedirs(bin_dir)
        with open(os.path.join(bin_dir, 'qemu-system-x86_64'), 'w') as f:
            f.write(FAKE_QEMU)
        os.chmod(os.path.join(bin_dir, 'qemu-system-x86_64'), 0o755)
        self.pidfile = os.path.join(self.tmp, 'qemu.pid')
        self.env = dict(os.environ, BUILD=self.tmp, PATH=f'{bin_dir}:{os.environ["PATH"]}',
                        FAKE_PIDFILE=self.pidfile, DEADLINE='120', DISK='16M',
                        RUN_DIR=os.path.join(self.tmp, 'run'))
        self.boot = subprocess.Popen(['bash', BOOT, 'original', 'kselftest'], env=self.env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.addCleanup(self.reap)
        self.qemu = self.wait_for_pid()

    def reap(self):
        try:
            os.killpg(self.boot.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.boot.communicate()

    def wait_for_pid(self):
        for _ in range(200):
            if os.path.exists(self.pidfile):
                with open(self.pidfile) as f:
                    pid = f.read().strip()
                if pid:
                    return int(pid)
            time.sleep(0.05)
        self.fail('the fake QEMU never started: ' + self.boot.stderr.read())

    def gone_within(self, pid, secs=5):
        for _ in range(secs * 20):
            if not alive(pid):
                return True
            time.sleep(0.05)
        return False

    def test_killing_the_timeout_wrapper_ends_qemu(self):
        out = subprocess.run(['pgrep', '-f', '-s', str(self.boot.pid), '^timeout '],
                             capture_output=True, text=True).stdout.split()
        self.assertEqual(len(out), 1, out)
        os.kill(int(out[0]), signal.SIGKILL)
        self.assertTrue(self.gone_within(self.qemu), 'QEMU outlived the timeout wrapper')

    def test_killing_the_harness_ends_qemu(self):
        os.kill(self.boot.pid, signal.SIGKILL)
        self.assertTrue(self.gone_within(self.qemu), 'QEMU outlived boot.sh')

    def test_qemu_killed_by_a_signal_is_named_so(self):
        os.kill(self.qemu, signal.SIGKILL)
        _, err = self.boot.communicate(timeout=30)
        self.assertNotEqual(self.boot.returncode, 0)
        self.assertIn('QEMU was killed by SIGKILL', err)
        self.assertNotIn('deadline: no result', err)
        with open(os.path.join(self.env['RUN_DIR'], 'meta')) as f:
            self.assertIn('verdict=killed', f.read())


if __name__ == '__main__':
    unittest.main()
