#!/usr/bin/env python3
"""Put the measured tables and the soak plot into RESULTS.md, from the runs database.

usage: reports/readme.py [--db PATH] [--runs N] [--readme FILE] [--png FILE] [--only NAMES] [--check]

Every table of measurements in RESULTS.md sits between two markers,
<!-- NAME:begin --> and <!-- NAME:end -->, and this writes all of them: the
soak's (below) and those of reports/figures.py (kselftests, the figures
subtests print, flaky rates, the newest bench batch, the newest stress
runs).  Each says which runs it comes from; one with nothing stored says
which command stores it.

Takes the latest clean soak runs of `original` and `patched` that ran the
same workload (the knobs of the latest clean patched soak; up to N of each,
default 3), and writes:
  - docs/soak-dying.png: dying memory cgroups vs generation, every run;
  - the part of RESULTS.md between the markers
    <!-- measured-soak:begin --> and <!-- measured-soak:end -->: which runs,
    and per period the dying count of each kernel as median [min-max] over
    its runs, and the difference in Slab + Percpu (original minus patched,
    medians) in MiB, in the shape of the 2019 cover letter's table.
Patched means the series version (kernels.series_hash) of the newest clean
patched soak: runs of other versions of the series are left out.  The
churn soaks of a bench batch (runs with a batch) are the bench's: its
block shows them.
--only measured-bench,measured-soak,... writes those blocks and leaves the
others as they are: a new machine's database holds only what that machine
ran, and a block written from an earlier database names its runs.
Fails, changing nothing, when either kernel has no such run.  --check only
says whether RESULTS.md is what this would write (exit 1 if not).
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
import compare  # noqa: E402
import figures  # noqa: E402
import report  # noqa: E402
from report import Soak, Store, mb, store  # noqa: E402

BEGIN = '<!-- measured-soak:begin -->'
END = '<!-- measured-soak:end -->'
WRITTEN = '<!-- written by reports/readme.py (make readme-figures) from the runs database; do not edit -->'


def die(msg):
    print(f'readme: error: {msg}', file=sys.stderr)
    sys.exit(1)


def pick_runs(st, n):
    """{kernel: [Soak, ...]} of the latest clean runs with the same workload
    and one version of the series (compare.pick_soak_sets)."""
    try:
        workload, rows = compare.pick_soak_sets(st.db, n)
    except compare.NoRuns as e:
        die(str(e))
    runs = {}
    for k, rs in rows.items():
        runs[k] = [Soak(st, r[:11]) for r in rs]
        for s, r in zip(runs[k], rs):
            s.series = r[11]
            s.settle = [x for x in st.q('SELECT seq, gen, t_ms, note, dying FROM dying WHERE run_id = ? '
                                        'ORDER BY seq', s.run_id) if x[3] and 'settle' in x[3]]
            s.params = dict(st.q('SELECT key, value FROM params WHERE run_id = ?', s.run_id))
    return workload, runs


def spread(vals):
    return compare.spread(vals, report.fmt)


def settle_of(s):
    """The snapshot the soak took after idling (knob settle_s), or None."""
    return s.settle[-1] if s.settle else None


def settle_secs(runs):
    vals = sorted({s.params.get('settle_s', '?') for ss in runs.values() for s in ss})
    return '/'.join(vals)


def table(runs):
    """Markdown table: per period, dying median [min-max] and the memory difference."""
    last = min(s.snaps[-1][1] for ss in runs.values() for s in ss)
    ref = runs['original'][0]
    points = sorted({ref.at_gen(round(last * i / (report.PERIODS - 1)))[1]
                     for i in range(report.PERIODS)})
    cols = [str(g) for g in points]
    rows = {}
    mem = {}
    for k, ss in runs.items():
        rows[k] = [spread([s.at_gen(g)[4] if s.at_gen(g) else None for s in ss]) for g in points]
        mem[k] = []
        for g in points:
            v = [s.mem_kb(report.TABLE_MEM, s.at_gen(g)[0]) for s in ss if s.at_gen(g)]
            v = [x for x in v if x is not None]
            mem[k].append(statistics.median(v) if v else None)
    diff = ['n/a' if a is None or b is None else report.fmt(mb(a - b))
            for a, b in zip(mem['original'], mem['patched'])]
    settles = {k: [settle_of(s) for s in ss if settle_of(s)] for k, ss in runs.items()}
    if all(len(settles[k]) == len(runs[k]) for k in runs):
        cols.append(f'after {settle_secs(runs)} s idle')
        for k in runs:
            rows[k].append(spread([x[4] for x in settles[k]]))
        a = [s.mem_kb(report.TABLE_MEM, settle_of(s)[0]) for s in runs['original']]
        b = [s.mem_kb(report.TABLE_MEM, settle_of(s)[0]) for s in runs['patched']]
        a, b = [x for x in a if x is not None], [x for x in b if x is not None]
        diff.append(report.fmt(mb(statistics.median(a) - statistics.median(b))) if a and b else 'n/a')
    drops = {k: [s.drop[-1] for s in ss if s.drop] for k, ss in runs.items()}
    if all(len(drops[k]) == len(runs[k]) for k in runs):
        cols.append('after drop_caches')
        for k in runs:
            rows[k].append(spread([d[4] for d in drops[k]]))
        a = [s.mem_kb(report.TABLE_MEM, s.drop[-1][0]) for s in runs['original']]
        b = [s.mem_kb(report.TABLE_MEM, s.drop[-1][0]) for s in runs['patched']]
        a, b = [x for x in a if x is not None], [x for x in b if x is not None]
        diff.append(report.fmt(mb(statistics.median(a) - statistics.median(b))) if a and b else 'n/a')
    lines = ['| generation | ' + ' | '.join(cols) + ' |',
             '| --- |' + ' ---: |' * len(cols)]
    for k in runs:
        lines.append(f'| dying, {k} | ' + ' | '.join(rows[k]) + ' |')
    lines.append('| Slab + Percpu, original minus patched (MiB) | ' + ' | '.join(diff) + ' |')
    return '\n'.join(lines)


def write_dying(path, snaps):
    """The plot's data file: "generation<TAB>dying" per snapshot; returns path."""
    with open(path, 'w') as fh:
        fh.writelines(f'{x[1]}\t{x[4]}\n' for x in snaps)
    return path


def plot(runs, png, datadir):
    os.makedirs(datadir, exist_ok=True)
    files, titles, styles, drops, dtitles, dstyles = [], [], [], [], [], []
    for k, ss in runs.items():
        style = report.KERNELS.index(k) + 1
        for s in ss:
            files.append(write_dying(os.path.join(datadir, f'dying-{s.run_id}.tsv'), s.snaps))
            titles.append(f'{k}, run {s.run_id}')
            styles.append(style)
            if s.drop:
                drops.append(write_dying(os.path.join(datadir, f'dying-{s.run_id}-drop.tsv'), s.drop))
                dtitles.append(f'{k}, run {s.run_id}, after drop_caches')
                dstyles.append(style)
    every = max(1, max(len(s.snaps) for ss in runs.values() for s in ss) // 40)
    var = dict(out=png, files=files, titles=titles, styles=styles, drops=drops,
               drop_titles=dtitles, drop_styles=dstyles, every=every)
    args = ['gnuplot']
    for k, v in var.items():
        args += ['-e', f'{k}={report.gp(v)}']
    args.append('dying.gp')
    r = subprocess.run(args, cwd=report.PLOTS, capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(png):
        die(f'gnuplot failed: {r.stderr.strip()}')


def section(workload, runs, png_rel):
    ids = {k: ', '.join(str(s.run_id) for s in ss) for k, ss in runs.items()}
    rel = {k: sorted({s.release or '?' for s in ss}) for k, ss in runs.items()}
    started = sorted(s.started for ss in runs.values() for s in ss)
    rates = {k: spread([s.gens / (s.t_ms / 1000.0) for s in ss if s.t_ms]) for k, ss in runs.items()}
    n = {k: len(ss) for k, ss in runs.items()}
    lab = store.kernel_label('patched', runs['patched'][0].series)
    out = [BEGIN, WRITTEN,
           f'Soak `{workload}`: {n["original"]} run(s) of `original` '
           f'({", ".join(rel["original"])}; runs {ids["original"]}) and {n["patched"]} of `{lab}` '
           f'({", ".join(rel["patched"])}; runs {ids["patched"]}), started between {started[0]} and '
           f'{started[-1]}.  Dying memory cgroups (the soak parent\'s `nr_dying_subsys_memory`) at the last '
           f'snapshot at or before each generation, median [min-max] over the runs; "idle" is after the '
           f'soak waited that long without dropping anything, the last column after its final `sync` and '
           f'`drop_caches`.  Churn rate: original {rates["original"]}, '
           f'patched {rates["patched"]} generations/s (guest time).',
           '',
           table(runs),
           '',
           f'![Dying memory cgroups vs generation, original vs patched]({png_rel})',
           '',
           figures.legend([lab]),
           END]
    return '\n'.join(out)


def markers(name):
    return f'<!-- {name}:begin -->', f'<!-- {name}:end -->'


def check_markers(text, path, names):
    for name in names:
        b, e = markers(name)
        if text.count(b) != 1 or text.count(e) != 1 or text.index(b) > text.index(e):
            die(f'{path} must hold the markers {b} and {e} once each, in that order')


def replace_block(text, name, body):
    b, e = markers(name)
    return text[:text.index(b)] + body + text[text.index(e) + len(e):]


def block(name, lines):
    b, e = markers(name)
    return '\n'.join([b, WRITTEN] + lines + [e])


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--db', help='the runs database (default: $RUNS_DB, else $BUILD/db/runs.sqlite)')
    ap.add_argument('--runs', type=int, default=3, help='runs of each kernel (default 3)')
    ap.add_argument('--readme', default=os.path.join(TOP, 'RESULTS.md'), help='the file to write (RESULTS.md)')
    ap.add_argument('--png', default=os.path.join(TOP, 'docs', 'soak-dying.png'))
    ap.add_argument('--only', help='comma-separated block names to write (default: every block)')
    ap.add_argument('--check', action='store_true', help='only check that RESULTS.md is up to date')
    args = ap.parse_args(argv)
    names = ['measured-soak'] + list(figures.BLOCKS)
    only = names
    if args.only:
        only = [n.strip() for n in args.only.split(',') if n.strip()]
        bad = [n for n in only if n not in names]
        if bad or not only:
            die(f'--only: no block {", ".join(bad) or "named"}; the blocks are {", ".join(names)}')
    db_path = args.db or store.default_path()
    if not os.path.exists(db_path):
        die(f'no runs database at {db_path}: run "make run" first')
    with open(args.readme) as f:
        text = f.read()
    check_markers(text, args.readme, names)
    db = store.connect(db_path)
    st = Store(db)
    new = text
    runs = None
    if 'measured-soak' in only:
        workload, runs = pick_runs(st, args.runs)
        png_rel = os.path.relpath(args.png, os.path.dirname(os.path.abspath(args.readme)))
        new = replace_block(new, 'measured-soak', section(workload, runs, png_rel))
    for name, make in figures.BLOCKS.items():
        if name in only:
            new = replace_block(new, name, block(name, make(db)))
    if args.check:
        if new != text:
            print(f'readme: {args.readme} is not what the database says: run "make readme-figures"')
            return 1
        print(f'readme: {args.readme} is up to date')
        return 0
    build = os.environ.get('BUILD') or os.path.join(TOP, 'build')
    if runs is not None:
        os.makedirs(os.path.dirname(args.png), exist_ok=True)
        plot(runs, args.png, os.path.join(build, 'readme-data'))
    tmp = args.readme + '.tmp'
    with open(tmp, 'w') as f:
        f.write(new)
    os.replace(tmp, args.readme)
    if runs is None:
        print(f'readme: {args.readme}: {", ".join(only)}')
    else:
        print(f'readme: {args.readme} and {args.png} from runs '
              + '; '.join(f'{k} {", ".join(str(s.run_id) for s in ss)}' for k, ss in runs.items()))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
