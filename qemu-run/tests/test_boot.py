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


def fake_build(top, qemu):
    """A build folder under @top that boot.sh accepts (an image with its
    .key, a guest root with an init) and a bin folder whose
    qemu-system-x86_64 is the script @qemu; returns the bin folder."""
    image = os.path.join(top, 'kernel', 'original', 'arch', 'x86', 'boot')
    os.makedirs(image)
    open(os.path.join(image, 'bzImage'), 'w').close()
    with open(os.path.join(top, 'kernel', 'original', '.key'), 'w') as f:
        f.write('test\n')
    disk = os.path.join(top, 'guest', 'disk')
    os.makedirs(disk)
    with open(os.path.join(disk, 'init'), 'w') as f:
        f.write('#!/bin/sh\n')
    os.chmod(os.path.join(disk, 'init'), 0o755)
    bin_dir = os.path.join(top, 'bin')
    os.makedirs(bin_dir)
    with open(os.path.join(bin_dir, 'qemu-system-x86_64'), 'w') as f:
        f.write(qemu)
    os.chmod(os.path.join(bin_dir, 'qemu-system-x86_64'), 0o755)
    return bin_dir


class FakeBoot(unittest.TestCase):
    def setUp(self):
        if not shutil.which('mke2fs') or not shutil.which('setpriv'):
            self.skipTest('mke2fs and setpriv are needed (make deps)')
        self.tmp = tempfile.mkdtemp(prefix='boot-test-')
        self.addCleanup(shutil.rmtree, self.tmp, True)
        bin_dir = fake_build(self.tmp, FAKE_QEMU)
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


ARGS_QEMU = """#!/bin/bash
printf '%s\\n' "$@" >"$FAKE_ARGS"
"""


class Nodes(unittest.TestCase):
    """NODES gives QEMU a NUMA topology (a fake QEMU on PATH writes its
    arguments and exits: the guest never says "@@ done", the run fails, the
    arguments and the meta stay)."""

    def setUp(self):
        if not shutil.which('mke2fs') or not shutil.which('setpriv'):
            self.skipTest('mke2fs and setpriv are needed (make deps)')
        self.tmp = tempfile.mkdtemp(prefix='boot-nodes-test-')
        self.addCleanup(shutil.rmtree, self.tmp, True)
        bin_dir = fake_build(self.tmp, ARGS_QEMU)
        self.env = dict(os.environ, BUILD=self.tmp, PATH=f'{bin_dir}:{os.environ["PATH"]}', DEADLINE='60',
                        DISK='16M', SWAP='16M')
        for k in ('NODES', 'SMP', 'MEM', 'APPEND', 'CLOCK', 'PROFILE', 'LAVA'):
            self.env.pop(k, None)

    def boot(self, **env):
        """(QEMU's arguments, the run's meta) of a boot with env."""
        run = os.path.join(self.tmp, 'run-' + '-'.join(f'{k}{v}' for k, v in sorted(env.items())))
        args = os.path.join(self.tmp, 'args')
        if os.path.exists(args):
            os.unlink(args)
        r = subprocess.run(['bash', BOOT, 'original', 'kselftest'], capture_output=True, text=True, timeout=120,
                           env=dict(self.env, RUN_DIR=run, FAKE_ARGS=args, **env))
        self.assertNotEqual(r.returncode, 0)        # no "@@ done": the run fails after QEMU
        with open(args) as f:
            got = f.read().splitlines()
        with open(os.path.join(run, 'meta')) as f:
            meta = dict(line.split('=', 1) for line in f.read().splitlines() if '=' in line)
        return got, meta

    @staticmethod
    def numa(args):
        """The -object and -numa options, in order."""
        return [(a, args[i + 1]) for i, a in enumerate(args) if a in ('-object', '-numa')]

    def test_default_no_numa(self):
        args, meta = self.boot()
        self.assertEqual(self.numa(args), [])
        self.assertEqual(meta['nodes'], '1')
        self.assertEqual(args[args.index('-m') + 1], '1024')
        args, meta = self.boot(NODES='1', SMP='4')
        self.assertEqual(self.numa(args), [])
        self.assertEqual((meta['nodes'], meta['smp']), ('1', '4'))

    def test_two_nodes(self):
        args, meta = self.boot(NODES='2', MEM='1536')
        self.assertEqual(self.numa(args), [
            ('-object', 'memory-backend-ram,id=m0,size=768M'), ('-numa', 'node,nodeid=0,cpus=0,memdev=m0'),
            ('-object', 'memory-backend-ram,id=m1,size=768M'), ('-numa', 'node,nodeid=1,cpus=1,memdev=m1')])
        self.assertEqual((meta['nodes'], meta['mem'], meta['smp']), ('2', '1536', '2'))
        # one socket a node: no last-level cache across two nodes
        self.assertEqual((args[args.index('-m') + 1], args[args.index('-smp') + 1]),
                         ('1536', '2,sockets=2,cores=1,threads=1'))

    def test_sockets_of_contiguous_vcpus(self):
        args, meta = self.boot(NODES='3', SMP='9', MEM='1536')
        self.assertEqual([v for k, v in self.numa(args) if k == '-numa'],
                         ['node,nodeid=0,cpus=0-2,memdev=m0', 'node,nodeid=1,cpus=3-5,memdev=m1',
                          'node,nodeid=2,cpus=6-8,memdev=m2'])
        self.assertEqual({v for k, v in self.numa(args) if k == '-object'},
                         {f'memory-backend-ram,id=m{i},size=512M' for i in range(3)})
        self.assertEqual(args[args.index('-smp') + 1], '9,sockets=3,cores=3,threads=1')
        self.assertEqual(meta['nodes'], '3')

    def test_uneven_vcpus_refused(self):
        run = os.path.join(self.tmp, 'uneven')
        r = subprocess.run(['bash', BOOT, 'original', 'kselftest'], capture_output=True, text=True, timeout=60,
                           env=dict(self.env, RUN_DIR=run, FAKE_ARGS=os.path.join(self.tmp, 'args'),
                                    NODES='3', SMP='8', MEM='1536'))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('SMP must be a multiple of 3', r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, 'args')))

    def test_refused_before_qemu(self):
        run = os.path.join(self.tmp, 'refused')
        r = subprocess.run(['bash', BOOT, 'original', 'kselftest'], capture_output=True, text=True, timeout=60,
                           env=dict(self.env, RUN_DIR=run, FAKE_ARGS=os.path.join(self.tmp, 'args'),
                                    NODES='2', MEM='1025'))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('NODES=2 with MEM=1025: the guest memory is split evenly', r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, 'args')))
        self.assertFalse(os.path.exists(run))


if __name__ == '__main__':
    unittest.main()
