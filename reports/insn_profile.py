#!/usr/bin/env python3
"""Kernel instructions per function from profiling runs (jobs/insn-profile.sh).

usage: reports/insn_profile.py top RUN_DIR [--n 25]
       reports/insn_profile.py diff RUN_A RUN_B [--n 25]
       reports/insn_profile.py diff --a RUN ... --b RUN ... [--n 25] [--jobs-sync]
       reports/insn_profile.py windows RUN_DIR [--n 15]
       reports/insn_profile.py windows RUN_DIR --jobs-sync [--jobs 400]

Each run's instructions and calls per function are read by
qemu-run/records/insn.py (the TCG plugin's insn.txt, the System.map of the
run's image).
top: the functions with the most instructions, their calls and
instructions per call, and the kernel's total.
diff: per function, B minus A, sorted by the absolute difference, with
each side's calls and instructions per call (a function that grew by its
calls costs the same per call; one that grew per call got longer); the
totals and the share of the difference the listed functions explain.
With several runs per side (--a, --b), each side is a range [min-max]
and only functions whose ranges are apart (compare.overlap) are listed:
the rest (the entropy pool's mixing, the scheduler's tick work) moves
between two boots of one kernel as much as between kernels.
windows: a profile taken with EVERY_SYNC=1, window by window (the bench
syncs before each fast test: with one test, window N is its rep N, from
the sync before it to the next; the last window runs to the end and is
left out of the spread, as is any window without a rep's results): each window's instructions (kernel, and user
space with PROFILE_USER=1) beside the bench results of that rep, then the
functions whose instructions vary most between the windows.  It tells a
rep that ran more instructions from one that waited longer.
windows --jobs-sync: the bench ran fast_tests=jobs jobs_sync=1 (a sync
either side of each rep's timed loop) and PROFILE_USER=1 counted user
space: per rep, the loop's time (jobs / fast.jobs_per_s) against the time
its instructions took (4 ns each, every vCPU's, on the icount clock); the
difference is time when no vCPU ran (the clock skips to the next timer).
"""
import argparse
import os
import sys

import compare  # noqa: F401 (qemu-run/records/ and db/ on the path)
from insn import USER, profile, windows  # noqa: E402
from records import read_meta  # noqa: E402


def meta(run_dir):
    return read_meta(os.path.join(run_dir, 'meta'))


def counted(run_dir):
    """What a run's profile counts: the whole boot, or from a mark on."""
    parts = (meta(run_dir).get('profile_from') or '').split(',')
    mark = [p for p in parts if p.startswith('sync:')]
    where = f'counted from sync call {mark[0][5:]}' if mark else 'the whole boot'
    return where + (', user space included' if 'user' in parts else '')


def per_call(insns, calls):
    """Instructions per call, as text ("-" without calls)."""
    return f'{insns / calls:.1f}' if calls else '-'


def calls_text(calls):
    return '-' if calls is None else str(calls)


def top(run_dir, n):
    f = profile(run_dir)
    total = sum(v for v, _ in f.values())
    print(f'{run_dir}: {total} kernel instructions ({counted(run_dir)})')
    print(f'{"instructions":>14} {"share":>7} {"calls":>10} {"per call":>9}  function')
    for name, (c, calls) in sorted(f.items(), key=lambda kv: -kv[1][0])[:n]:
        print(f'{c:14d} {100 * c / total:6.2f}% {calls_text(calls):>10} {per_call(c, calls):>9}  {name}')


def diff(a, b, n):
    pa, pb = profile(a), profile(b)
    fa, fb = ({k: v for k, (v, _) in p.items()} for p in (pa, pb))
    ca, cb = ({k: c for k, (_, c) in p.items()} for p in (pa, pb))
    ta, tb = sum(fa.values()), sum(fb.values())
    rows = sorted(((fb.get(k, 0) - fa.get(k, 0), k) for k in set(fa) | set(fb)), key=lambda r: -abs(r[0]))
    print(f'A {a}: {ta} kernel instructions ({meta(a).get("kernel")} {meta(a).get("series_key", "")[:8]}, '
          f'{counted(a)})')
    print(f'B {b}: {tb} kernel instructions ({meta(b).get("kernel")} {meta(b).get("series_key", "")[:8]}, '
          f'{counted(b)})')
    print(f'B - A: {tb - ta:+d} ({compare.pct(ta, tb, 2)})')
    shown = 0
    print(f'{"B - A":>12} {"A":>12} {"B":>12} {"calls A":>9} {"calls B":>9} {"A/call":>7} {"B/call":>7}  function')
    for d, k in rows[:n]:
        shown += d
        xa, xb = ca.get(k, 0 if k not in fa else None), cb.get(k, 0 if k not in fb else None)
        print(f'{d:+12d} {fa.get(k, 0):12d} {fb.get(k, 0):12d} {calls_text(xa):>9} {calls_text(xb):>9} '
              f'{per_call(fa.get(k, 0), xa):>7} {per_call(fb.get(k, 0), xb):>7}  {k}')
    print(f'the {min(n, len(rows))} functions above: {shown:+d} of {tb - ta:+d}')


def mean_calls(profiles, k):
    """Mean calls of k over profiles that counted runs; None if none did."""
    counted = [p for p in profiles if p and next(iter(p.values()))[1] is not None]
    if not counted:
        return None
    return sum(p[k][1] if k in p else 0 for p in counted) / len(counted)


def apart_rows(pa, pb):
    """The functions whose instructions differ between two lists of
    profiles ({function: (insns, calls)}, one per boot) with ranges apart:
    [(mean B - A, function, [A insns], [B insns], mean calls A, mean calls
    B)], the largest difference first."""
    fa = [{k: v for k, (v, _) in p.items()} for p in pa]
    fb = [{k: v for k, (v, _) in p.items()} for p in pb]
    rows = []
    for k in set().union(*fa, *fb):
        va, vb = [f.get(k, 0) for f in fa], [f.get(k, 0) for f in fb]
        if compare.overlap(va, vb) == 'apart':
            d = sum(vb) / len(vb) - sum(va) / len(va)
            rows.append((d, k, va, vb, mean_calls(pa, k), mean_calls(pb, k)))
    rows.sort(key=lambda r: (-abs(r[0]), r[1]))
    return rows


def totals(profiles):
    return [sum(v for v, _ in p.values()) for p in profiles]


def first_sync(run_dir):
    """K of the profile's FROM_SYNC=K: its first window starts at sync call K."""
    return int(next(p for p in (meta(run_dir).get('profile_from') or '').split(',')
                    if p.startswith('sync:'))[5:])


def rep_loops(ws, first):
    """[(rep, window)] of a jobs_sync=1 profile's windows: three syncs a rep
    (the rep's own, then one either side of its timed loop), so the window
    that starts at sync call c, c % 3 == 2, is rep (c + 1) // 3's timed
    loop; the last window (to the end) is left out."""
    return [((first + i + 1) // 3, w) for i, w in enumerate(ws[:-1]) if (first + i) % 3 == 2]


def loop_windows(run_dir):
    """The windows of a jobs_sync=1 profile that are a rep's timed loop."""
    loops = [w for _, w in rep_loops(windows(run_dir), first_sync(run_dir))]
    if not loops:
        raise SystemExit(f'{run_dir}: no timed loop window: profile fast_tests=jobs jobs_sync=1 with '
                         f'FROM_SYNC=K EVERY_SYNC=1')
    return loops


def diff_many(a_runs, b_runs, n, jobs_sync=False):
    if jobs_sync:
        pa = [w for r in a_runs for w in loop_windows(r)]
        pb = [w for r in b_runs for w in loop_windows(r)]
        what = f'timed jobs loops ({len(pa)} and {len(pb)}), instructions'
    else:
        pa = [profile(r) for r in a_runs]
        pb = [profile(r) for r in b_runs]
        what = 'kernel instructions'
    ta, tb = totals(pa), totals(pb)
    print(f'A: {len(a_runs)} runs of {meta(a_runs[0]).get("kernel")}, {what} {min(ta)}-{max(ta)}')
    print(f'B: {len(b_runs)} runs of {meta(b_runs[0]).get("kernel")} {meta(b_runs[0]).get("series_key", "")[:8]}, '
          f'{what} {min(tb)}-{max(tb)}')
    rows = apart_rows(pa, pb)
    total = sum(r[0] for r in rows)
    print(f'functions whose ranges are apart: {len(rows)}, their mean difference B - A: {total:+.0f}')
    print(f'{"B - A (mean)":>14} {"A [min-max]":>25} {"B [min-max]":>25} {"calls A":>9} {"calls B":>9} '
          f'{"A/call":>7} {"B/call":>7}  function')
    for d, k, va, vb, xa, xb in rows[:n]:
        print(f'{d:+14.0f} {f"{min(va)}-{max(va)}":>25} {f"{min(vb)}-{max(vb)}":>25} '
              f'{"-" if xa is None else f"{xa:.0f}":>9} {"-" if xb is None else f"{xb:.0f}":>9} '
              f'{per_call(sum(va) / len(va), xa):>7} {per_call(sum(vb) / len(vb), xb):>7}  {k}')


def rep_results(run_dir):
    """{rep: [(metric, value), ...]} of the run's "@@ result" records."""
    out = {}
    path = os.path.join(run_dir, 'samples.log')
    if not os.path.exists(path):
        return out
    with open(path, errors='replace') as f:
        for line in f:
            if not line.startswith('@@ result '):
                continue
            kv = dict(w.split('=', 1) for w in line.split()[2:] if '=' in w)
            try:
                out.setdefault(int(kv['rep']), []).append((kv['metric'], float(kv['value'])))
            except (KeyError, ValueError):
                continue
    return out


# qemu-run/boot/boot.sh's CLOCK=icount: -icount shift=2, 4 ns of guest time
# an instruction (any vCPU's: TCG runs them in turn on one clock).
NS_PER_INSN = 4


def show_jobs_loops(run_dir, ws, first, results, jobs):
    """The bench's fast.jobs run with jobs_sync=1 (rep_loops()): each rep's
    timed loop, its time (jobs / fast.jobs_per_s) against its instructions on every
    vCPU (guest time they took): the rest is time no vCPU ran, idle time
    the clock skipped to the next timer (sleep=off)."""
    print(f'{"rep":>4} {"loop ms":>9} {"kernel M":>9} {"user M":>8} {"busy ms":>8} {"idle ms":>8} {"idle %":>7}')
    rows = []
    for rep, w in rep_loops(ws, first):
        rate = dict(results.get(rep, [])).get('fast.jobs_per_s')
        if not rate:
            continue
        user = w.get(USER, (0, None))[0]
        kern = sum(v for k, (v, _) in w.items() if k != USER)
        loop_ms = jobs / rate * 1e3
        busy_ms = (kern + user) * NS_PER_INSN / 1e6
        rows.append((rep, loop_ms, kern, user, busy_ms))
        print(f'{rep:4d} {loop_ms:9.1f} {kern / 1e6:9.1f} {user / 1e6:8.1f} {busy_ms:8.1f} '
              f'{loop_ms - busy_ms:8.1f} {100 * (loop_ms - busy_ms) / loop_ms:7.1f}')
    if not rows:
        raise SystemExit(f'{run_dir}: no timed loop window with a fast.jobs_per_s result: was the bench run '
                         f'with fast_tests=jobs jobs_sync=1, and FROM_SYNC=K EVERY_SYNC=1?')
    return rows


def show_windows(run_dir, n, jobs_sync=False, jobs=400):
    ws = windows(run_dir)
    if len(ws) < 3:
        raise SystemExit(f'{run_dir}: {len(ws)} window(s): profile with FROM_SYNC=K EVERY_SYNC=1 and at least '
                         f'two reps after the K-th sync to compare windows')
    first = first_sync(run_dir)
    results = rep_results(run_dir)
    if jobs_sync:
        if not any(USER in w for w in ws):
            raise SystemExit(f'{run_dir}: no user space count: profile with PROFILE_USER=1, or the idle time '
                             f'would include user space\'s instructions')
        print(f'{run_dir}: the timed loops of fast.jobs ({jobs} jobs a rep), {len(ws)} windows from sync call '
              f'{first} ({counted(run_dir)}), {NS_PER_INSN} ns an instruction')
        return show_jobs_loops(run_dir, ws, first, results, jobs)
    print(f'{run_dir}: {len(ws)} windows from sync call {first} ({counted(run_dir)}); '
          f'window N starts at sync call {first}+N-1, the bench\'s rep {first}+N-1 with one fast test')
    print(f'{"window":>6} {"kernel":>12} {"user":>12}  bench results of that rep')
    for i, w in enumerate(ws, 1):
        user = w.get(USER, (0, None))[0]
        kern = sum(v for k, (v, _) in w.items() if k != USER)
        res = ' '.join(f'{m}={v:g}' for m, v in results.get(first + i - 1, []))
        if i == len(ws):
            res = (res + ' ' if res else '') + '(to the end)'
        print(f'{i:6d} {kern:12d} {user:12d}  {res}')
    # the windows of reps: those with results, else all but the last
    reps = [i for i in range(1, len(ws) + 1) if results.get(first + i - 1)] or list(range(1, len(ws)))
    full = [ws[i - 1] for i in reps]
    names = set().union(*full)
    rows = []
    for name in names:
        vals = [w.get(name, (0, None))[0] for w in full]
        rows.append((max(vals) - min(vals), name, vals))
    rows.sort(key=lambda r: (-r[0], r[1]))
    print(f'functions whose instructions vary most over windows {reps[0]}-{reps[-1]} (the reps\'):')
    print(f'{"spread":>10} {"min":>10} {"max":>10}  function: each window')
    for spread, name, vals in rows[:n]:
        print(f'{spread:10d} {min(vals):10d} {max(vals):10d}  {name}: {" ".join(str(v) for v in vals)}')


def db_profiles(db, run_ids):
    """The stored profiles of run_ids (the insn_profile table), in that order."""
    out = []
    for rid in run_ids:
        p = {}
        for func, insns, calls in db.execute('SELECT function, insns, calls FROM insn_profile WHERE run_id = ?',
                                             (rid,)):
            p[func] = (insns, calls)
        out.append(p)
    return out


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
    d.add_argument('--jobs-sync', action='store_true',
                   help='with --a/--b: compare the timed jobs loops of jobs_sync=1 profiles, one sample a loop')
    w = sub.add_parser('windows')
    w.add_argument('run')
    w.add_argument('--n', type=int, default=15)
    w.add_argument('--jobs-sync', action='store_true',
                   help='the bench ran fast_tests=jobs jobs_sync=1: each rep\'s timed loop, its time against '
                        'its instructions (needs PROFILE_USER=1)')
    w.add_argument('--jobs', type=int, default=400, help='the bench\'s jobs knob (jobs a rep), with --jobs-sync')
    args = ap.parse_args(argv)
    if args.cmd == 'top':
        top(args.run, args.n)
    elif args.cmd == 'windows':
        show_windows(args.run, args.n, args.jobs_sync, args.jobs)
    elif args.a or args.b:
        if not args.a or not args.b or args.runs:
            ap.error('diff --a RUN ... --b RUN ..., or diff RUN_A RUN_B')
        diff_many(args.a, args.b, args.n, args.jobs_sync)
    elif len(args.runs) == 2:
        diff(args.runs[0], args.runs[1], args.n)
    else:
        ap.error('diff RUN_A RUN_B, or diff --a RUN ... --b RUN ...')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
