#!/usr/bin/env python3
"""The side-by-side table of a benchmark batch (qemu-run/jobs/bench.sh).

usage: reports/bench_table.py [--batch NAME] [--markdown] [--db PATH]

One row per metric and param (the page cache size for offline.*, the
working set for fast.*, the instances for stressng.*): original and patched
as median [min-max] (n) over every rep of every boot of the batch, and the
change from original to patched in %, for the fast.* rates also that of the
upper quartile.  Every rate (fast.*, stressng.*_ops_per_s) is better
higher, every time (_us) lower.  A value the guest could not give within
its limit (a memory css that was not released within timeout_ms) is never
a number: the cell says "not released (k/n)", with the median of the others
when some were; a stress-ng stressor that failed, "failed (k/n)".  A batch
of a multi-node guest (boot.sh NODES) says so in its head; one that mixes
node counts, like one that mixes guest clocks, is refused.
The last rows are the churn soaks of the batch: dying memory cgroups
after the last generation and after the final drop_caches.
"--batch" defaults to the newest batch that has bench results.  Only clean
boots count: a boot with a kernel report or no "@@ done" is left out and
said so.  Exit status 1 when there is no such batch.
"""
import argparse
import os
import statistics
import sys

import compare  # noqa: E402,F401 (puts db/ on the path)
import store  # noqa: E402
from compare import (  # noqa: E402
    bootstrap_ci, num as fmt, overlap, p75_delta, pct, size)

KERNELS = ('original', 'patched')
NOT_REACHED = {'offline.release_us': 'not released'}


def not_reached(metric):
    """What value=none of a metric means, for its cell."""
    if metric.startswith('stressng.'):
        return 'failed'
    return NOT_REACHED.get(metric, 'not reached')


def param_text(metric, param):
    """The param column: a size in KiB (offline.*, fast.*), the instances
    of a stress-ng stressor."""
    if metric.startswith('stressng.'):
        return f'{param} instances'
    return size(param)


def cell(values, metric):
    """(text, median or None) of one kernel's values; None in values: not reached."""
    if not values:
        return '-', None
    got = sorted(v for v in values if v is not None)
    missing = len(values) - len(got)
    text = ''
    med = None
    if got:
        med = statistics.median(got)
        text = f'{fmt(med)} [{fmt(got[0])}-{fmt(got[-1])}] ({len(got)})'
    if missing:
        word = not_reached(metric)
        miss = f'{word} ({missing}/{len(values)})'
        text = f'{text}; {miss}' if text else miss
    return text, (med if not missing else None)












def batches(db, part=None):
    """The batches with bench results, newest first; with part, those whose
    bench ran that part (fast: not a batch of the offline axes)."""
    return [r[0] for r in db.execute(
        'SELECT r.batch FROM runs r WHERE r.kind = \'bench\' AND r.batch IS NOT NULL '
        'AND (? IS NULL OR EXISTS (SELECT 1 FROM params p WHERE p.run_id = r.id AND '
        "p.key = 'parts' AND ',' || p.value || ',' LIKE '%,' || ? || ',%')) "
        'GROUP BY r.batch ORDER BY max(r.started) DESC, max(r.id) DESC', (part, part))]


def latest_batch(db, part=None):
    """The newest batch with bench results; with part, the newest whose
    bench ran that part (fast: not a batch of the offline axes)."""
    row = db.execute('SELECT r.batch FROM runs r WHERE r.kind = \'bench\' AND r.batch IS NOT NULL '
                     'AND (? IS NULL OR EXISTS (SELECT 1 FROM params p WHERE p.run_id = r.id AND '
                     "p.key = 'parts' AND ',' || p.value || ',' LIKE '%,' || ? || ',%')) "
                     'ORDER BY r.started DESC, r.id DESC LIMIT 1', (part, part)).fetchone()
    return row[0] if row else None


def has_interval(rows, prefix):
    """Whether a row of the metrics starting with prefix has an interval (3
    values a side: a smoke batch of one boot and one rep has none)."""
    ci = COLUMNS.index('delta 95% CI')
    return any(r[0].startswith(prefix) and r[ci] for r in rows)


def fast_tests_of(db, batch):
    """The fast paths a batch ran (its fast_tests knob), or None when its
    runs do not say (before the knob: all of them)."""
    row = db.execute("SELECT p.value FROM params p JOIN runs r ON r.id = p.run_id "
                     "WHERE r.batch = ? AND p.key = 'fast_tests' LIMIT 1", (batch,)).fetchone()
    return set(row[0].split(',')) if row else None


def newest_with_interval(db, part, prefix=None, every_fast=False):
    """(batch, head, rows, notes) of the newest batch that ran part and
    gives a prefix (default: part + '.') row its interval; None when there
    is none.  every_fast: prefer the newest such batch that ran every fast
    path any batch named (fast_tests=tcp,spin is a batch of one question,
    not the table of them all), else the newest."""
    prefix = prefix or part + '.'
    named = set()
    if every_fast:
        for (value,) in db.execute("SELECT DISTINCT value FROM params WHERE key = 'fast_tests'"):
            named |= set(value.split(','))
    first = None
    for batch in batches(db, part):
        head, rows, notes = table(db, batch)
        if not has_interval(rows, prefix):
            continue
        ran = fast_tests_of(db, batch) if every_fast else None
        if ran is None or ran >= named:
            return batch, head, rows, notes
        first = first or (batch, head, rows, notes)
    return first


def batch_values(db, batch, clean=None, boots=False):
    """({(metric, param): {kernel: [value or None]}}, {metric: first seen},
    {metric: unit}) of a batch's bench runs, the clean boots only (clean:
    their run ids, else every boot whose verdict is clean).  boots: each
    kernel's values boot by boot, [[value or None] of a boot], in run order
    (for compare.bootstrap_ci's two stages)."""
    if clean is None:
        clean = {r[0] for r in db.execute("SELECT id FROM runs WHERE batch = ? AND kind = 'bench' "
                                          "AND verdict = 'clean'", (batch,))}
    data, order, units = {}, {}, {}
    for run_id, kernel, metric, param, value, unit, ord_ in db.execute(
            'SELECT run_id, kernel, metric, param, value, unit, ord FROM bench_list WHERE batch = ? '
            'ORDER BY run_id, ord', (batch,)):
        if run_id not in clean or kernel not in KERNELS:
            continue
        data.setdefault((metric, param), {k: {} for k in KERNELS})[kernel].setdefault(run_id, []).append(value)
        order.setdefault(metric, len(order))
        units[metric] = unit
    for vals in data.values():
        for k, runs in vals.items():
            groups = [runs[r] for r in sorted(runs)]
            vals[k] = groups if boots else [v for g in groups for v in g]
    return data, order, units


def table(db, batch):
    """(header lines, rows, notes): rows are lists of cells."""
    runs = db.execute('SELECT run_id, kind, kernel, verdict, soak_rc, started FROM run_list WHERE batch = ? '
                      'ORDER BY started, run_id', (batch,)).fetchall()
    bench = [r for r in runs if r[1] == 'bench']
    clean = {r[0] for r in bench if r[3] == 'clean'}
    notes = []
    for run_id, kind, kernel, verdict, rc, _ in runs:
        if verdict != 'clean':
            notes.append(f'run {run_id} ({kind} on {kernel}) is {verdict}: left out')
        elif rc not in (0, None) or (rc is None and kind in ('bench', 'soak')):
            notes.append(f'run {run_id} ({kind} on {kernel}) ended with rc={rc}: its results are in')
    clocks = dict(db.execute('SELECT clock, count(*) FROM runs WHERE batch = ? AND kind = \'bench\' '
                             'GROUP BY clock', (batch,)).fetchall())
    if len(clocks) > 1:
        raise SystemExit(f'bench_table: batch {batch} mixes guest clocks ({", ".join(sorted(clocks))}): '
                         'its figures cannot share a table')
    clock = next(iter(clocks), 'wall')
    nodes = dict(db.execute('SELECT nodes, count(*) FROM runs WHERE batch = ? AND kind = \'bench\' '
                            'GROUP BY nodes', (batch,)).fetchall())
    if len(nodes) > 1:
        raise SystemExit(f'bench_table: batch {batch} mixes guests of {" and ".join(map(str, sorted(nodes)))} '
                         'NUMA nodes: its figures cannot share a table')
    nodes = next(iter(nodes), 1)
    boots = {k: sum(1 for r in bench if r[2] == k and r[0] in clean) for k in KERNELS}
    knobs = db.execute("SELECT p.key, p.value FROM params p JOIN runs r ON r.id = p.run_id "
                       "WHERE r.batch = ? AND r.kind = 'bench' ORDER BY r.started DESC, r.id DESC",
                       (batch,)).fetchall()
    seen = {}
    for k, v in knobs:
        seen.setdefault(k, v)
    head = [f'bench batch {batch}: {boots["original"]} original and {boots["patched"]} patched boots '
            f'(runs {", ".join(str(r[0]) for r in runs)})']
    parts = seen.get('parts', 'offline,fast').split(',')
    shown = ['parts']
    if 'offline' in parts:
        shown += ['sizes', 'reps', 'dead', 'timeout_ms', 'poll_us', 'probe_ms']
    if 'fast' in parts:
        shown += ['fast_reps']
    if 'reclaim' in parts:
        shown += ['lru', 'reclaim_reps', 'rounds', 'cold_mb', 'cold_max_mb', 'hot_mb']
    if 'stressng' in parts:
        shown += ['stressors', 'stressng_secs', 'stressng_reps', 'stressng_instances']
    shown.append('seed')
    head.append('knobs: ' + ' '.join(f'{k}={seen[k]}' for k in shown if k in seen))
    head.append('guest clock: ' + ('icount (instructions executed: CPU cost, host load does not matter)'
                                   if clock == 'icount' else 'wall (the host\'s: swings with its load)'))
    if nodes > 1:
        head.append(f'guest: {nodes} NUMA nodes (boot.sh NODES), each with its share of the memory and vCPUs')

    data, order, units = batch_values(db, batch, clean, boots=True)
    rows = []
    for metric, param in sorted(data, key=lambda k: (order[k[0]], k[1])):
        groups = data[(metric, param)]
        vals = {k: [v for g in groups[k] for v in g] for k in groups}
        (o_text, o_med), (p_text, p_med) = cell(vals['original'], metric), cell(vals['patched'], metric)
        delta = pct(o_med, p_med)
        rows.append([metric, param_text(metric, param), units[metric], o_text, p_text, delta,
                     p75_delta(metric, vals['original'], vals['patched']),
                     bootstrap_ci(groups['original'], groups['patched']),
                     overlap(vals['original'], vals['patched'])])

    if any(r[0] == 'fast.spin_mops' for r in rows):
        notes.append('fast.spin_mops is the control, a user-space loop the kernel plays no part in: '
                     'a fast-path delta no larger than its delta is noise of the emulator and the host')
        notes.append('delta p75: the change of the upper quartile of a fast.* rate; the emulator alternates '
                     'between a fast and a slow state (the control shows both), so the median moves with '
                     'the mix of the two and the upper quartile compares the fast state')
    notes.append('delta 95% CI: the percentile bootstrap interval of the change of the median (2000 '
                 'resamples, seed 1), in two stages: each kernel\'s boots drawn with replacement, then the '
                 'values of each drawn boot, so that a gap between two boots of one kernel widens it; an '
                 'interval that holds 0 is no measured change')
    if any(m.startswith('reclaim.') for m in order):
        notes.append('reclaim.<lru>.*: memory.reclaim of a parent after its last child was removed, under '
                     'MGLRU (gen) or the classic LRU: dead_left_pct, the removed child\'s pages left in '
                     'memory; hot_left_pct and refault_pct, the live sibling\'s working set kept and '
                     'refaulted; scan_per_reclaim, pages scanned per page reclaimed (qemu-run/guest/bench.c)')
    if any(m.startswith('reclaim.') and m.endswith('.cold_left_pct') for m in order):
        notes.append('reclaim.<lru>.cold_left_pct: dead_left_pct\'s first name; in the first two reclaim '
                     'batches (20261205-062813-bench, 20261205-063033-bench) it was the removed child\'s file '
                     'still in memory in % of the whole file, of which the child had about 23% in memory')
    if any(m.startswith('stressng.') for m in order):
        notes.append('stressng.<stressor>_ops_per_s: stress-ng\'s bogo-ops-per-second-real-time of the stressor, '
                     'all its instances (param) together, in a memcg of its own, its tasks on every CPU'
                     + (f' and all {nodes} nodes' if nodes > 1 else '')
                     + ('; per guest second, which under icount is 250M instructions: an instruction cost'
                        if clock == 'icount' else '')
                     + '; higher is better; "failed (k/n)": k runs where stress-ng failed (qemu-run/guest/bench.c)')
    if 'offline.release_us' in order:
        notes.append('offline.release_us: "not released (k/n)" = k of n reps where the child\'s memory css '
                     'was still dying at timeout_ms; never a number')
    churn = {}
    for run_id, kernel, gens, final, dropped in db.execute(
            "SELECT f.run_id, f.kernel, f.gens, f.final_dying, f.dropped_dying FROM soak_final f "
            "JOIN runs r ON r.id = f.run_id WHERE r.batch = ? AND r.verdict = 'clean' ORDER BY f.run_id",
            (batch,)):
        churn.setdefault(kernel, []).append((gens, final, dropped))
    for i, name in enumerate(('churn.dying_end', 'churn.dying_after_drop')):
        if not churn:
            break
        vals = {k: [c[1 + i] for c in churn.get(k, []) if c[1 + i] is not None] for k in KERNELS}
        gens = sorted({c[0] for cs in churn.values() for c in cs if c[0] is not None})
        (o_text, o_med), (p_text, p_med) = cell(vals['original'], name), cell(vals['patched'], name)
        delta = pct(o_med, p_med)
        rows.append([name, '/'.join(str(g) for g in gens) + ' gens', 'memcgs', o_text, p_text, delta, '', '',
                     overlap(vals['original'], vals['patched'])])
        if i == 0:
            notes.append('churn.*: dying memory cgroups after the last generation and after the final '
                         'drop_caches (soak.sh, the same seed on both kernels)')
    return head, rows, notes


COLUMNS = ['metric', 'param', 'unit', 'original median [min-max] (n)', 'patched median [min-max] (n)',
           'delta', 'delta p75', 'delta 95% CI', 'ranges']


def render(head, rows, notes, markdown):
    out = []
    if markdown:
        out += [f'{h}  ' for h in head] + ['']
        out.append('| ' + ' | '.join(COLUMNS) + ' |')
        out.append('|' + '|'.join(' --- ' for _ in COLUMNS) + '|')
        out += ['| ' + ' | '.join(c or ' ' for c in r) + ' |' for r in rows]
        out += [''] + [f'- {n}' for n in notes]
    else:
        widths = [max(len(str(r[i])) for r in rows + [COLUMNS]) for i in range(len(COLUMNS))]
        out += head
        out.append('  '.join(c.ljust(w) for c, w in zip(COLUMNS, widths)).rstrip())
        out += ['  '.join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        out += [f'note: {n}' for n in notes]
    return '\n'.join(out)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--batch', help='the batch (default: the newest with bench runs)')
    ap.add_argument('--markdown', action='store_true', help='a Markdown table')
    ap.add_argument('--db', help='the database (default: $RUNS_DB, else $BUILD/db/runs.sqlite)')
    args = ap.parse_args(argv)
    path, db = store.open_existing(args.db, 'bench_table', 'run make bench first')
    batch = args.batch or latest_batch(db)
    if not batch or not db.execute('SELECT 1 FROM runs WHERE batch = ?', (batch,)).fetchone():
        print(f'bench_table: no bench batch {batch or ""} in {path}: run make bench first', file=sys.stderr)
        return 1
    head, rows, notes = table(db, batch)
    db.close()
    print(render(head, rows, notes, args.markdown))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
