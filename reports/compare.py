"""The one comparison layer: original against a version of the series.

Every report (the dashboard, report.py; the README's figures, readme.py
and figures.py; the bench table, bench_table.py; the kselftest figures,
metrics.py) and make test's verdict on its soaks (jobs/test.sh) compare
through here:

- a side is a kernel name *and* the series hash of its image (original's is
  empty), never a name alone: two versions of the series never mix under
  "patched" (SIDE_SQL, side_label);
- runs are picked by side and by workload (pick_soak_pair, pick_soak_sets);
- a change is given the same way everywhere (change, pct, spread, bootstrap_ci, overlap,
  p75_delta; fisher_greater for failure rates, reports/flaky.py), with numbers written by the same formatters (num, short_num,
  whole, size, mb);
- each kernel has one colour, for the page (css_kernels) and for every plot
  (GNUPLOT_STYLES).

usage: reports/compare.py direction KERNEL 0|1 SAMPLES.LOG   (make test's soak verdict)
"""
import math
import os
import random
import statistics
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, 'db'))
sys.path.insert(0, os.path.join(TOP, 'qemu-run', 'kernel'))
sys.path.insert(0, os.path.join(TOP, 'qemu-run', 'records'))
import store  # noqa: E402
from kernels import KERNELS  # noqa: E402

# ---- colours: one per kernel, in qemu-run/lib.sh's order; then the series styles

KERNEL_COLOURS = {'original': '#c0392b', 'patched': '#2471a3', 'debug': '#7d3c98'}
SERIES_COLOURS = ['#1b9e77', '#d95f02', '#7570b3', '#e7298a', '#66a61e', '#e6ab02', '#a6761d', '#666666']


def _gnuplot_styles():
    lines = [f'set style line {i + 1} lc rgb "{KERNEL_COLOURS[k]}" lw 2 pt 7 ps 0.6'
             for i, k in enumerate(KERNELS)]
    lines += [f'set style line {11 + i} lc rgb "{c}" lw 2' for i, c in enumerate(SERIES_COLOURS)]
    return '; '.join(lines)


# gnuplot's line styles: 1, 2, 3 the kernels (KERNELS' order), 11 and up the series.
GNUPLOT_STYLES = _gnuplot_styles()


def kernel_style(name):
    """The gnuplot line style of a kernel name (an unknown one: the last kernel's)."""
    return KERNELS.index(name) + 1 if name in KERNELS else len(KERNELS)


def css_kernels():
    """The page's .k-NAME classes, in the kernels' colours."""
    return '\n'.join(f'.k-{k} {{ color: {c}; font-weight: bold; }}' for k, c in KERNEL_COLOURS.items())


# ---- numbers

def num(v):
    """A number with 3 significant digits, no exponent below a billion."""
    if v == 0:
        return '0'
    a = abs(v)
    if a >= 100:
        return f'{v:.0f}'
    if a >= 10:
        return f'{v:.1f}'
    if a >= 1:
        return f'{v:.2f}'
    return f'{v:.3g}'


def short_num(v):
    """An integer as it is, anything else with 3 significant digits."""
    return f'{v:.0f}' if abs(v) >= 100 or v == int(v) else f'{v:.3g}'


def whole(v, digits=0):
    """v rounded (to digits decimals), 'n/a' for None."""
    if v is None:
        return 'n/a'
    return f'{v:.{digits}f}' if digits else f'{round(v)}'


def mb(kb):
    return kb / 1024.0


def size(kb):
    """A size in KiB as "64 MiB" or "64 KiB"; '-' for none."""
    if not kb:
        return '-'
    if kb % 1024 == 0:
        return f'{kb // 1024} MiB'
    return f'{kb} KiB'


# ---- the change from original to the series

def change(o, p):
    """The change from o to p in %, a number, or None when there is none."""
    return 100 * (p - o) / o if o and p is not None else None


def pct(o, p, digits=1):
    """The change from o to p in %, written, or '' when there is none to give."""
    c = change(o, p)
    return f'{c:+.{digits}f}%' if c is not None else ''


def spread(vals, f=None):
    """"median [min-max]" of the values (None left out), each written by f
    (default whole); the median alone when all are equal; 'n/a' for none."""
    f = f or whole
    vals = [v for v in vals if v is not None]
    if not vals:
        return 'n/a'
    med, lo, hi = statistics.median(vals), min(vals), max(vals)
    return f(med) if lo == hi else f'{f(med)} [{f(lo)}-{f(hi)}]'


def upper_quartile(values):
    """The upper quartile (statistics.quantiles, inclusive method: linear
    interpolation between the sorted values), or None with fewer than 4
    values or with a value not reached."""
    got = sorted(v for v in values if v is not None)
    if len(got) < 4 or len(got) != len(values):
        return None
    return statistics.quantiles(got, n=4, method='inclusive')[2]


def p75_delta(metric, o, p):
    """The change of the upper quartile, for the fast.* rates (higher is
    better): the emulator runs in a fast and a slow state (the control
    fast.spin_mops shows both), a median moves with the mix of the two, and
    the upper quartile compares the fast state."""
    if not metric.startswith('fast.'):
        return ''
    return pct(upper_quartile(o), upper_quartile(p))


def bootstrap_ci(a, b, reps=2000, seed=1):
    """The 95% interval of the change of the median from a to b, in %, by
    the percentile bootstrap (reps resamples, a fixed seed so the table is
    reproducible), or '' when a value is missing or there are fewer than 3
    on a side.  a and b are each a kernel's values, or its values boot by
    boot (a list of lists): then the resampling has two stages, the boots
    with replacement and then each drawn boot's values, so that a gap
    between two boots of one kernel widens the interval instead of being
    taken for reps that agree (see bootstrap_interval)."""
    got = bootstrap_interval(a, b, reps, seed)
    return f'[{got[0]:+.1f}%, {got[1]:+.1f}%]' if got else ''


def by_boot(side):
    """A side of bootstrap_interval as its boots' values, None left out and
    empty boots dropped: flat values are one boot."""
    if side and all(isinstance(g, (list, tuple)) for g in side):
        groups = [[v for v in g if v is not None] for g in side]
    else:
        groups = [[v for v in side if v is not None]]
    return [g for g in groups if g]


def bootstrap_interval(a, b, reps=2000, seed=1):
    """bootstrap_ci's interval as numbers (lo, hi), or None.  Each resample
    draws len(boots) boots of a side with replacement and, from each drawn
    boot, as many values as it has; with a single boot a side this is the
    plain percentile bootstrap of its values."""
    a, b = by_boot(a), by_boot(b)
    if sum(map(len, a)) < 3 or sum(map(len, b)) < 3:
        return None
    rng = random.Random(seed)

    def resample(groups):
        if len(groups) == 1:
            return rng.choices(groups[0], k=len(groups[0]))
        out = []
        for g in rng.choices(groups, k=len(groups)):
            out += rng.choices(g, k=len(g))
        return out

    deltas = []
    for _ in range(reps):
        ma = statistics.median(resample(a))
        mb_ = statistics.median(resample(b))
        if ma:
            deltas.append(100 * (mb_ - ma) / ma)
    if len(deltas) < reps // 2:
        return None
    deltas.sort()
    return deltas[int(0.025 * len(deltas))], deltas[int(0.975 * len(deltas)) - 1]


def fisher_greater(k_base, n_base, k_other, n_other):
    """One-sided Fisher's exact test: the probability, with both kernels
    failing at one rate, that the other kernel fails k_other or more times
    of n_other, given k_base + k_other failures in all."""
    total, fails = n_base + n_other, k_base + k_other
    denom = math.comb(total, n_other)
    p = 0
    for k in range(k_other, min(fails, n_other) + 1):
        p += math.comb(fails, k) * math.comb(total - fails, n_other - k)
    return p / denom


def overlap(a, b):
    a, b = [v for v in a if v is not None], [v for v in b if v is not None]
    if not a or not b:
        return ''
    return 'overlap' if min(a) <= max(b) and min(b) <= max(a) else 'apart'


# ---- sides and runs

side_label = store.kernel_label          # "original", "patched@1234abcd"
current_series = store.current_series

SOAK_COLUMNS = ('l.run_id, l.kernel, l.started, l.gens, l.workload, l.snapshots, l.dropped, l.verdict, '
                'l.release, l.soak_rc, l.t_ms')
# Every stored soak with its side: SOAK_COLUMNS, then the series hash ('' for
# none, original's; NULL where the image did not record it).
SOAKS_SQL = (f"SELECT {SOAK_COLUMNS}, k.series_hash FROM run_list l "
             "JOIN kernels k ON k.image_key = l.image_key AND k.name = l.kernel "
             "WHERE l.kind = 'soak' {} ORDER BY l.started DESC, l.run_id DESC")


def _clean(r):
    return r[7] == 'clean' and r[9] == 0


def pick_soak_pair(db):
    """The two soaks the dashboard compares: the newest clean soak of
    patched (a clean guest run whose soak ended rc=0), and the newest clean
    soak of original with the same workload (knobs and seed); without a
    patched one, the newest clean original.  Returns ({kernel: row}, [notes
    on the newer soaks left out and why]); a row is SOAK_COLUMNS and the
    series hash."""
    rows = db.execute(SOAKS_SQL.format('')).fetchall()
    clean = [r for r in rows if _clean(r)]
    chosen = {}
    patched = next((r for r in clean if r[1] == 'patched'), None)
    if patched:
        chosen['patched'] = patched
        same = next((r for r in clean if r[1] == 'original' and r[4] == patched[4]), None)
        if same:
            chosen['original'] = same
    else:
        first = next((r for r in clean if r[1] == 'original'), None)
        if first:
            chosen['original'] = first
    notes = []
    for r in rows:
        c = chosen.get(r[1])
        if r[1] not in ('original', 'patched') or (c and (r[2], r[0]) <= (c[2], c[0])):
            continue
        if r[7] != 'clean':
            why = f'verdict {r[7]}'
        elif r[9] != 0:
            why = f'soak rc={r[9]}'
        else:
            why = 'another workload than the patched soak compared'
        notes.append(f'run {r[0]} ({r[1]}, {r[2]}): {why}')
    return {k: chosen[k] for k in KERNELS if k in chosen}, notes


class NoRuns(Exception):
    pass


def pick_soak_sets(db, n):
    """(workload, {kernel: [row, ...] oldest first}): up to n clean soaks of
    each side, outside bench batches, with one workload and one version of
    the series.  The version is that of the newest clean patched soak whose
    workload original also ran (else of the newest); within it, the
    workload is that of the longest such soak (the most generations; the
    newest of equals), so that make test's short soak never stands in for
    make run's.  NoRuns says what is missing."""
    q = SOAKS_SQL.format("AND l.verdict = 'clean' AND l.batch IS NULL AND l.soak_rc = 0 AND l.kernel = ? {}")
    latest = db.execute(q.format(''), ('patched',)).fetchall()
    if not latest:
        raise NoRuns('no clean soak run of the patched kernel in the database: run "make run" first')
    have = {r[4] for r in db.execute(q.format(''), ('original',))}
    both = [r for r in latest if r[4] in have]
    if both:
        series = both[0][11] or ''
        pick = max((r for r in both if (r[11] or '') == series), key=lambda r: (r[3] or 0, r[2], r[0]))
    else:
        pick = latest[0]
    workload, series = pick[4], pick[11] or ''
    runs = {}
    for k in ('original', 'patched'):
        rows = db.execute(q.format("AND l.workload = ? AND coalesce(k.series_hash, '') = ?") + ' LIMIT ?',
                          (k, workload, series if k == 'patched' else '', n)).fetchall()
        if not rows:
            raise NoRuns(f'no clean soak run of {k} with the workload "{workload}": run "make run" first')
        runs[k] = list(reversed(rows))
    return workload, runs


# ---- make test's verdict on a soak

def soak_direction(kernel, changes, v):
    """The verdict on a test soak (make test): judged on the dying memcgs
    after the guest's final drop_caches, which leaves only those that memory
    still in use pins.  Measured (1000 generations, default mix): original
    kept 559 (56%), patched 0.  So original must keep at least 25% of its
    generations, a kernel with the series' kernel changes at most 2%;
    without kernel changes patched is original and expects the same.  A
    missing figure fails: it never reads as 0.  v: records.soak_scan's
    fields.  Returns (0 or 1, "PASS|FAIL KERNEL soak: ...")."""
    dying, reached = str(v.get('dying_drop', '')), str(v.get('reached', ''))
    if not dying.isdigit():
        return 1, f"FAIL {kernel} soak: no dying count after drop_caches in the samples (got '{dying}')"
    if not reached.isdigit() or reached == '0':
        return 1, f"FAIL {kernel} soak: no generation reached in the samples (got '{reached}')"
    dying, reached = int(dying), int(reached)
    if changes:
        want, ok = f'at most {reached // 50} (2%)', dying <= reached // 50
    else:
        want, ok = f'at least {reached // 4} (25%)', dying >= reached // 4
    return (0 if ok else 1), (f'{"PASS" if ok else "FAIL"} {kernel} soak: {dying} dying memory cgroups after '
                              f'{reached} generations and drop_caches, want {want}')


def main(argv):
    if len(argv) == 4 and argv[0] == 'direction' and argv[2] in ('0', '1'):
        import records
        print(soak_direction(argv[1], argv[2] == '1', records.soak_scan(argv[3]))[1])
        return 0        # the verdict is the line's first word, as test.sh reads it
    print(__doc__.strip().splitlines()[-1], file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
