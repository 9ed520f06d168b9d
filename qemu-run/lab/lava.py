#!/usr/bin/env python3
"""LAVA job definitions for the harness's jobs, and their validation.

usage: qemu-run/lab/lava.py write [--out DIR] [--artifacts URL] [--kernels original,patched]
                              [--jobs kselftest,kselftest-v1,soak,stress,bench]
       qemu-run/lab/lava.py check JOB.yaml ...

write: one job per job and kernel (DIR default build/lava/jobs), each
checked with lava-common's own job schema before it is written, and the
guest's root and swap disks they deploy (build/lava/root.img, swap.img).
A job boots the kernel image and the guest root disk on LAVA's QEMU
device type (no KVM) with the command line boot.sh uses plus rr.lava=1:
the guest then puts its records on the console (guest/lava-demux.awk),
and the job's monitor action turns the "L| case" lines into LAVA test
cases (every kselftest subtest as pass, fail or skip; the tools' end
figures as measurements).  kselftest-v1 is the kselftest job of the
cgroup v1 tests (lib.sh's KSELFTESTS_V1), on a boot with the memory
controller on a v1 hierarchy (rr.cgroup=v1), as kselftest.sh's second
boot: stored as a kselftest run whose knobs say cgroup=v1.  kselftest-numa
is the kselftest job of the two-node tests (KSELFTESTS_NUMA) on a boot
with numa=fake=2, as kselftest.sh's two-node boot: stored with that
append.  The metadata holds what db/lava_collect.py
needs to store the finished job as a local run: kernel, job, knobs, image
key, series key, config key, memory, vCPUs, clock and command line.

--artifacts URL: where a lab fetches the images (default: file:// paths of
this machine, for lava-run here).  For a lab, also see docs/lab.md "Running
in a LAVA lab".  Knobs come from the environment as for the local jobs:
SOAK, STRESS, BENCH ("key=value ..."), STRESS_SECS, MEM, SMP, CLOCK.

check: validate job files with lava-common's schema (exit 1 if one fails).
"""
import argparse
import os
import re
import shlex
import subprocess
import sys

QEMU_RUN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOP = os.path.dirname(QEMU_RUN)
sys.path.insert(0, os.path.join(QEMU_RUN, 'kernel'))
from kernels import KERNELS, KSELFTESTS, KSELFTESTS_NUMA, KSELFTESTS_V1  # noqa: E402

JOBS = ('kselftest', 'kselftest-v1', 'kselftest-numa', 'soak', 'stress', 'bench')
# The guest's job (rr.job=) of each: the v1 and two-node kselftests are kselftests.
GUEST_JOB = {'kselftest-v1': 'kselftest', 'kselftest-numa': 'kselftest'}
# Kernel command line a job adds (boot.sh's APPEND), as kselftest.sh's boots do.
JOB_APPEND = {'kselftest-numa': 'numa=fake=2'}
BUILD = os.environ.get('BUILD') or os.path.join(TOP, 'build')


def debian_module(name, package):
    import importlib
    try:
        return importlib.import_module(name)
    except ImportError:
        if '/usr/lib/python3/dist-packages' not in sys.path:
            sys.path.append('/usr/lib/python3/dist-packages')
    try:
        return importlib.import_module(name)
    except ImportError:
        raise SystemExit(f'lava: no python module {name}: install the Debian package {package} (make deps)')


def sh(snippet, *args):
    """Run a bash snippet with qemu-run/lib.sh loaded; its stdout."""
    r = subprocess.run(['bash', '-c', f'. "{QEMU_RUN}/lib.sh" && {snippet}', 'lava', *args],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f'lava: {r.stderr.strip() or snippet + " failed"}')
    return r.stdout.strip()


def flaky_list():
    r = subprocess.run([sys.executable, os.path.join(QEMU_RUN, 'verdict', 'tap.py'), '--kernel', 'original', '--known',
                        os.path.join(QEMU_RUN, 'verdict', 'known-issues'), '--flaky'], capture_output=True, text=True)
    return r.stdout.strip()


def knobs_of(kind, env):
    """The guest's rr.* words of a job, as the local scripts pass them."""
    if kind in ('kselftest', 'kselftest-v1', 'kselftest-numa'):
        tests = {'kselftest-v1': KSELFTESTS_V1, 'kselftest-numa': KSELFTESTS_NUMA}.get(kind, KSELFTESTS)
        words = [f'tests={",".join(tests)}', f'timeout={env.get("TEST_TIMEOUT", "900")}']
        flaky = flaky_list()
        if flaky:
            words.append(f'flaky={flaky}')
        words.append(f'retries={env.get("RETRIES", "5")}')
        if kind == 'kselftest-v1':
            words.append('cgroup=v1')
        return words
    extra = shlex.split(env.get(kind.upper(), ''))
    if kind == 'stress' and env.get('STRESS_SECS'):
        extra.insert(0, f'secs={env["STRESS_SECS"]}')
    return [f'{kind}.{kv}' for kv in extra]


def deadline_of(kind, env):
    """Seconds for the whole boot, as the local scripts give it."""
    if kind == 'stress':
        secs = int(env.get('STRESS_SECS', '1800'))
        return secs + secs // 4 + 600
    return {'kselftest': 1800, 'kselftest-v1': 1800, 'kselftest-numa': 1800, 'soak': 1200, 'bench': 2400}[kind]


def build_meta(kernel):
    out = {}
    for line in sh('build_ids "$1"', os.path.join(BUILD, 'kernel', kernel)).splitlines():
        k, _, v = line.partition('=')
        out[k] = v
    key = os.path.join(BUILD, 'kernel', kernel, '.key')
    out['image_key'] = open(key).read().strip() if os.path.exists(key) else 'unknown'
    return out


def job(kind, kernel, env, artifacts):
    """The job definition (a dict) of one job on one kernel."""
    words = knobs_of(kind, env)
    guest_job = GUEST_JOB.get(kind, kind)
    append = ' '.join(a for a in (JOB_APPEND.get(kind), env.get('APPEND')) if a)
    cmdline = sh('APPEND="$1" guest_cmdline "${@:2}"', append, kernel, guest_job, 'lava=1', *words)
    mem, smp, clock = env.get('MEM', '1536' if kind == 'bench' else '1024'), env.get('SMP', '2'), \
        env.get('CLOCK', 'icount' if kind == 'bench' else 'wall')
    deadline = deadline_of(kind, env)
    minutes = max(1, -(-deadline // 60))
    extra = ['-smp', smp, '-no-reboot']
    if clock == 'icount':
        extra += ['-icount', 'shift=2,sleep=off']
    meta = {'harness.kernel': kernel, 'harness.job': guest_job, 'harness.args': ' '.join(words),
            'harness.mem': mem, 'harness.smp': smp, 'harness.clock': clock, 'harness.deadline': str(deadline),
            'harness.cmdline': cmdline}
    if append:
        meta['harness.append'] = append
    meta.update({f'harness.{k}': v for k, v in build_meta(kernel).items()})
    image = f'{artifacts}/kernel/{kernel}/bzImage' if artifacts else \
        'file://' + os.path.join(BUILD, 'kernel', kernel, 'arch', 'x86', 'boot', 'bzImage')
    root = f'{artifacts}/root.img' if artifacts else 'file://' + os.path.join(BUILD, 'lava', 'root.img')
    swap = f'{artifacts}/swap.img' if artifacts else 'file://' + os.path.join(BUILD, 'lava', 'swap.img')
    monitor_name, end = kind, 'R| @@ done rc='
    return {
        'device_type': 'qemu',
        'job_name': f'dying-memcg {kind} on {kernel}',
        'timeouts': {'job': {'minutes': minutes + 10}, 'action': {'minutes': minutes + 5},
                     'connection': {'minutes': 2}},
        'priority': 'medium',
        'visibility': 'public',
        'context': {'arch': 'amd64', 'memory': int(mem), 'no_kvm': True, 'extra_options': extra},
        'metadata': meta,
        'actions': [
            {'deploy': {
                'to': 'tmpfs',
                'timeout': {'minutes': 10},
                'images': {
                    'kernel': {'image_arg': f'-kernel {{kernel}} -append "{cmdline}"', 'url': image},
                    'rootfs': {'image_arg': '-drive format=raw,if=virtio,file={rootfs}', 'url': root},
                    'swap': {'image_arg': '-drive format=raw,if=virtio,file={swap}', 'url': swap},
                },
            }},
            {'boot': {'method': 'qemu', 'media': 'tmpfs', 'timeout': {'minutes': 5}}},
            {'test': {
                'timeout': {'minutes': minutes},
                'monitors': [{
                    'name': monitor_name,
                    # regular expressions, as the pattern
                    'start': r'R\| @@ boot ',
                    'end': re.escape(end),
                    'pattern': r'L\| case (?P<test_case_id>\S+) (?P<result>pass|fail|skip)'
                               r'(?: (?P<measurement>-?[0-9.]+))?',
                }],
            }},
        ],
    }


def validate(doc):
    """None, or what is wrong with a job by lava-common's schema."""
    schemas = debian_module('lava_common.schemas', 'lava-common')
    voluptuous = debian_module('voluptuous', 'python3-voluptuous')
    try:
        schemas.validate(doc, strict=True)
    except voluptuous.Invalid as e:
        return f'{e} (at {"/".join(str(p) for p in e.path)})'
    return None


def dump(doc):
    yaml = debian_module('yaml', 'python3-yaml')
    return yaml.safe_dump(doc, sort_keys=False, width=1000)


def disks(out_dir):
    """The guest's root disk (ext4 of build/guest/disk) and a swap disk."""
    os.makedirs(out_dir, exist_ok=True)
    disk = os.environ.get('GUEST_DISK') or os.path.join(BUILD, 'guest', 'disk')
    if not os.path.exists(os.path.join(disk, 'init')):
        raise SystemExit(f'lava: no guest root in {disk}: run qemu-run/guest/image.sh (make guest) first')
    root = os.path.join(out_dir, 'root.img')
    r = subprocess.run(['mke2fs', '-q', '-F', '-t', 'ext4', '-L', 'root', '-d', disk, root + '.tmp', '2G'],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f'lava: cannot make the root disk: {r.stderr.strip()}')
    # One disk for every kernel: each census module built here, as
    # /census-KERNEL.ko; the guest's init loads the one its kernel takes
    # (a module refuses a kernel other than its own).
    kbuild = os.environ.get('KERNEL_BUILDS') or os.path.join(BUILD, 'kernel')
    for k in KERNELS:
        ko = os.path.join(kbuild, k, 'census', 'memcg_census.ko')
        if os.path.exists(ko):
            r = subprocess.run(['debugfs', '-w', '-R', f'write {ko} census-{k}.ko', root + '.tmp'],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit(f'lava: cannot put {ko} on the root disk: {r.stderr.strip()}')
    os.replace(root + '.tmp', root)
    with open(os.path.join(out_dir, 'swap.img'), 'wb') as f:
        f.truncate(512 << 20)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    w = sub.add_parser('write')
    w.add_argument('--out', default=os.path.join(BUILD, 'lava', 'jobs'))
    w.add_argument('--artifacts', default='', help='URL the lab fetches the images from (default: file:// here)')
    w.add_argument('--kernels', default='original,patched')
    w.add_argument('--jobs', default=','.join(JOBS))
    w.add_argument('--no-disks', action='store_true', help='only the job files (tests)')
    c = sub.add_parser('check')
    c.add_argument('files', nargs='+')
    args = ap.parse_args(argv)
    if args.cmd == 'check':
        yaml = debian_module('yaml', 'python3-yaml')
        bad = 0
        for path in args.files:
            with open(path) as f:
                why = validate(yaml.safe_load(f))
            print(f'lava: {path}: ' + (f'INVALID: {why}' if why else 'valid (lava-common job schema)'))
            bad += bool(why)
        return 1 if bad else 0
    kernels = [k for k in args.kernels.split(',') if k]
    for k in kernels:
        sh('check_kernel_name "$1"', k)
    jobs = [j for j in args.jobs.split(',') if j]
    for j in jobs:
        if j not in JOBS:
            raise SystemExit(f'lava: unknown job "{j}": one of {", ".join(JOBS)}')
    os.makedirs(args.out, exist_ok=True)
    for k in kernels:
        for j in jobs:
            doc = job(j, k, os.environ, args.artifacts.rstrip('/'))
            why = validate(doc)
            if why:
                raise SystemExit(f'lava: the {j} job on {k} fails lava-common\'s schema: {why}')
            path = os.path.join(args.out, f'{j}-{k}.yaml')
            with open(path + '.tmp', 'w') as f:
                f.write(dump(doc))
            os.replace(path + '.tmp', path)
            print(f'lava: {path} (valid)')
    if not args.no_disks:
        disks(os.path.dirname(args.out.rstrip('/')) if args.out.rstrip('/').endswith('jobs') else args.out)
        print(f'lava: guest disks in {os.path.join(BUILD, "lava")}')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
