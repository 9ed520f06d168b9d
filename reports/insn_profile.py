#!/usr/bin/env python3
"""Kernel instructions per function from profiling runs (jobs/insn-profile.sh).

usage: reports/insn_profile.py top RUN_DIR [--n 25]
       reports/insn_profile.py diff RUN_A RUN_B [--n 25]
       reports/insn_profile.py diff --a RUN ... --b RUN ... [--n 25]

Each run's instructions per function are read by qemu-run/records/insn.py
(the TCG plugin's insn.txt, the System.map of the run's image).
top: the functions with the most instructions, and the kernel's total.
diff: per function, B minus A, sorted by the absolute difference; the
totals and the share of the difference the listed functions explain.
With several runs per side (--a, --b), each side is a range [min-max]
and only functions whose ranges are apart (compare.overlap) are listed:
the rest (the entropy pool's mixing, the scheduler's tick work) moves
between two boots of one kernel as much as between kernels.
"""
import argparse
import os
import sys

import compare  # noqa: F401 (qemu-run/records/ and db/ on the path)
from insn import per_function  # noqa: E402
from records import read_meta  # noqa: E402


def meta(run_dir):
    return read_meta(os.path.join(run_dir, 'meta'))


def top(run_dir, n):
    f = per_function(run_dir)
    total = sum(f.values())
    print(f'{run_dir}: {total} kernel instructions')
    for name, c in sorted(f.items(), key=lambda kv: -kv[1])[:n]:
        print(f'{c:14d} {100 * c / total:6.2f}%  {name}')


def diff(a, b, n):
    fa, fb = per_function(a), per_function(b)
    ta, tb = sum(fa.values()), sum(fb.values())
    rows = sorted(((fb.get(k, 0) - fa.get(k, 0), k) for k in set(fa) | set(fb)), key=lambda r: -abs(r[0]))
    print(f'A {a}: {ta} kernel instructions ({meta(a).get("kernel")} {meta(a).get("series_key", "")[:8]})')
    print(f'B {b}: {tb} kernel instructions ({meta(b).get("kernel")} {meta(b).get("series_key", "")[:8]})')
    print(f'B - A: {tb - ta:+d} ({compare.pct(ta, tb, 2)})')
    shown = 0
    print(f'{"B - A":>12} {"A":>12} {"B":>12}  function')
    for d, k in rows[:n]:
        shown += d
        print(f'{d:+12d} {fa.get(k, 0):12d} {fb.get(k, 0):12d}  {k}')
    print(f'the {min(n, len(rows))} functions above: {shown:+d} of {tb - ta:+d}')


def diff_many(a_runs, b_runs, n):
    fa = [per_function(r) for r in a_runs]
    fb = [per_function(r) for r in b_runs]
    ta, tb = [sum(f.values()) for f in fa], [sum(f.values()) for f in fb]
    print(f'A: {len(a_runs)} runs of {meta(a_runs[0]).get("kernel")}, kernel instructions {min(ta)}-{max(ta)}')
    print(f'B: {len(b_runs)} runs of {meta(b_runs[0]).get("kernel")} {meta(b_runs[0]).get("series_key", "")[:8]}, '
          f'kernel instructions {min(tb)}-{max(tb)}')
    rows = []
    for k in set().union(*fa, *fb):
        va, vb = [f.get(k, 0) for f in fa], [f.get(k, 0) for f in fb]
        if compare.overlap(va, vb) == 'apart':
            d = sum(vb) / len(vb) - sum(va) / len(va)
            rows.append((d, k, va, vb))
    rows.sort(key=lambda r: -abs(r[0]))
    total = sum(r[0] for r in rows)
    print(f'functions whose ranges are apart: {len(rows)}, their mean difference B - A: {total:+.0f}')
    print(f'{"B - A (mean)":>14} {"A [min-max]":>25} {"B [min-max]":>25}  function')
    for d, k, va, vb in rows[:n]:
        print(f'{d:+14.0f} {f"{min(va)}-{max(va)}":>25} {f"{min(vb)}-{max(vb)}":>25}  {k}')


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    t = sub.add_parser('top')
    t.add_argument('run')
    t.add_argument('--n', type=int, default=25)
    d = sub.add_parser('diff')
    d.add_argument('runs', nargs='*', help='RUN_A RUN_B')
    d.add_argument('--a', nargs='+', default=[], help='runs of kernel A')
    d.add_argument('--b', nargs='+', default=[], help='runs of kernel B')
    d.add_argument('--n', type=int, default=25)
    args = ap.parse_args(argv)
    if args.cmd == 'top':
        top(args.run, args.n)
    elif args.a or args.b:
        if not args.a or not args.b or args.runs:
            ap.error('diff --a RUN ... --b RUN ..., or diff RUN_A RUN_B')
        diff_many(args.a, args.b, args.n)
    elif len(args.runs) == 2:
        diff(args.runs[0], args.runs[1], args.n)
    else:
        ap.error('diff RUN_A RUN_B, or diff --a RUN ... --b RUN ...')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
