#!/usr/bin/env python3
"""Measure the store and the dashboard on generated data of real size.

usage: db/tests/store_throughput.py [--samples N] [--keep DIR]

Generates soak runs of original and patched (fake_run.py) with about N
samples each (default 1,000,000), then measures:
  - ingest rate (samples per second, wall and CPU) of one N-sample run;
  - a SIGKILL of the ingest halfway through that run: the database must be
    unchanged and consistent afterwards;
  - render time of the dashboard from a database of N samples (both
    kernels, N/2 each) and of 2N samples (N each).
Prints a small table; exit status 1 if the kill left a trace.
"""
import argparse
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(TOP, 'db'))
import check  # noqa: E402
import fake_run  # noqa: E402
from test_ingest import counts, wait_read  # noqa: E402

INGEST = os.path.join(TOP, 'db', 'ingest.py')
REPORT = os.path.join(TOP, 'reports', 'report.py')
LINES_PER_SNAPSHOT = 511        # fake_run.snapshot(); a real 6.12 guest writes about 640


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd, env):
    c0, t0 = child_cpu(), time.monotonic()
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return time.monotonic() - t0, child_cpu() - c0, out


def soak(work, kernel, samples):
    every = 10
    gens = max(every, samples // LINES_PER_SNAPSHOT * every)
    d = os.path.join(work, f'{kernel}-{samples}')
    n = fake_run.soak_run(d, kernel, gens=gens, sample_every=every)
    return d, n


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--samples', type=int, default=1_000_000)
    ap.add_argument('--keep', help='work in this folder and keep it')
    args = ap.parse_args(argv)
    work = args.keep or tempfile.mkdtemp(prefix='db-bench-')
    os.makedirs(work, exist_ok=True)
    N = args.samples
    status = 0
    rows = []
    try:
        t0 = time.monotonic()
        orig, n_orig = soak(work, 'original', N)
        patched, n_patched = soak(work, 'patched', N)
        half_o, n_half_o = soak(work, 'original', N // 2)
        half_p, n_half_p = soak(work, 'patched', N // 2)
        print(f'bench: generated {n_orig + n_patched + n_half_o + n_half_p} samples in '
              f'{time.monotonic() - t0:.1f} s ({work})', file=sys.stderr)

        # Ingest rate: one N-sample run into a fresh database.
        big_db = os.path.join(work, 'big.sqlite')
        env = dict(os.environ, RUNS_DB=big_db)
        wall, cpu, _ = timed([sys.executable, INGEST, orig], env)
        rows.append(('ingest', f'{n_orig} samples, one run', f'{wall:.1f} s',
                     f'{n_orig / wall / 1000:.0f}k samples/s wall, {n_orig / cpu / 1000:.0f}k/s CPU'))
        wall, cpu, _ = timed([sys.executable, INGEST, patched], env)
        rows.append(('ingest', f'{n_patched} samples, one run', f'{wall:.1f} s',
                     f'{n_patched / wall / 1000:.0f}k samples/s wall, {n_patched / cpu / 1000:.0f}k/s CPU'))

        # SIGKILL halfway through an N-sample run.
        kill_db = os.path.join(work, 'kill.sqlite')
        kenv = dict(os.environ, RUNS_DB=kill_db)
        subprocess.run([sys.executable, INGEST, half_p], env=kenv, check=True, capture_output=True)
        db = sqlite3.connect(kill_db)
        before = counts(db)
        db.close()
        size = os.path.getsize(os.path.join(orig, 'samples.log'))
        p = subprocess.Popen([sys.executable, INGEST, orig], env=kenv,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        pos = wait_read(p, 'samples.log', size // 2, timeout=300)
        p.send_signal(signal.SIGKILL)
        p.wait()
        db = sqlite3.connect(kill_db)
        after, bad = counts(db), check.problems(db)
        db.close()
        ok = pos is not None and after == before and not bad
        status |= not ok
        rows.append(('SIGKILL', f'at byte {pos} of {size}', '',
                     'database unchanged and consistent' if ok else f'FAILED: {before} -> {after}; {bad[:3]}'))

        # Render: N samples (N/2 per kernel), then 2N (N per kernel).
        half_db = os.path.join(work, 'half.sqlite')
        henv = dict(os.environ, RUNS_DB=half_db)
        subprocess.run([sys.executable, INGEST, half_o, half_p], env=henv, check=True, capture_output=True)
        for label, path, total in (('render', half_db, n_half_o + n_half_p), ('render', big_db, n_orig + n_patched)):
            out = os.path.join(work, 'report-' + os.path.basename(path).split('.')[0])
            wall, cpu, text = timed([sys.executable, REPORT, '--db', path, '--out', out], dict(os.environ))
            rows.append((label, f'{total} samples in the database', f'{wall:.1f} s',
                         f'{cpu:.1f} s CPU; {out}/index.html'))
    finally:
        if not args.keep:
            shutil.rmtree(work)
    load = os.getloadavg()[0]
    for r in rows:
        print(f'{r[0]:8} {r[1]:34} {r[2]:>7}  {r[3]}')
    print(f'bench: load average {load:.1f} on {os.cpu_count()} CPUs while measuring')
    return status


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
