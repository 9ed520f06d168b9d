#!/usr/bin/env python3
"""The offline cost of a memory cgroup on its axes: NUMA nodes and dead
memcgs kept alive by page cache below it (qemu-run/jobs/offline-axes.sh).

usage: reports/offline_axes.py [--since TIMESTAMP] [--irqsoff] [--markdown] [--db PATH]

For each (nodes, dead) pair, the newest clean instruction-count bench
batch with part offline and that pair (the bench's "@@ run" nodes= and
dead=), original against patched: release (rmdir until the memory css is
released), the longest cgroup_mutex stall of another task within the probe
window, and the rmdir syscall, as median [min-max] (n) per kernel with the
change and its bootstrap interval (reports/compare.py).  Exit status 1
when no such batch exists.

--irqsoff: the batches of kernels with the irqsoff tracer's config (bench
knob irqsoff=1, make bench-irqsoff), and their figures: the longest
section with interrupts off that ended in memcg offline, and the longest
anywhere in the same window, from the rmdir to the release.  Without it
those batches are left out: the tracing slows every irqs-off section.
"""
import argparse
import os
import statistics
import sys

import compare  # noqa: E402 (and db/ on the path)
import store  # noqa: E402

METRICS = [('offline.release_us', 'release (us)'), ('offline.stall_us', 'cgroup_mutex stall (us)'),
           ('offline.rmdir_us', 'rmdir (us)')]
IRQSOFF_METRICS = [('offline.irqsoff_us', 'irqs off in memcg offline (us)'),
                   ('offline.irqsoff_max_us', 'irqs off anywhere (us)')]


def batches(db, since, irqsoff=False):
    """{(nodes, dead, size_kb): batch}: the newest batch of each pair, with
    the irqsoff tracer (irqsoff=1) or without."""
    rows = db.execute(
        "SELECT r.batch, max(r.started), "
        "max(CASE WHEN p.key = 'nodes' THEN p.value END), max(CASE WHEN p.key = 'dead' THEN p.value END), "
        "max(CASE WHEN p.key = 'parts' THEN p.value END), max(CASE WHEN p.key = 'sizes' THEN p.value END), "
        "max(CASE WHEN p.key = 'irqsoff' THEN p.value END) "
        "FROM runs r JOIN params p ON p.run_id = r.id "
        "WHERE r.kind = 'bench' AND r.clock = 'icount' AND r.batch IS NOT NULL AND r.started >= ? "
        "GROUP BY r.id", (since,)).fetchall()
    out = {}
    for batch, started, nodes, dead, parts, sizes, traced in rows:
        if nodes is None or parts != 'offline' or not sizes or not sizes.isdigit():
            continue
        if (traced not in (None, '0')) != irqsoff:
            continue
        key = (int(nodes), int(dead or 0), int(sizes) << 10)
        if key not in out or started > out[key][1]:
            out[key] = (batch, started)
    return {k: v[0] for k, v in out.items()}


def values(db, batch, metric, size_kb, boots=False):
    """{kernel: [value or None]} of the clean boots of a batch; boots: each
    kernel's values boot by boot, [[value or None] of a boot] (for
    compare.bootstrap_ci's two stages)."""
    out = {}
    for run_id, kernel, value in db.execute(
            "SELECT run_id, kernel, value FROM bench_list WHERE batch = ? AND metric = ? AND param = ? "
            "AND verdict = 'clean' ORDER BY run_id, rep", (batch, metric, size_kb)):
        out.setdefault(kernel, {}).setdefault(run_id, []).append(value)
    return {k: [g for _, g in sorted(runs.items())] if boots else [v for _, g in sorted(runs.items()) for v in g]
            for k, runs in out.items()}


def cell(vals):
    got = sorted(v for v in vals if v is not None)
    text = f'{compare.num(statistics.median(got))} [{compare.num(got[0])}-{compare.num(got[-1])}] ({len(got)})' \
        if got else ''
    missing = len(vals) - len(got)
    if missing:
        text = (text + '; ' if text else '') + f'not released ({missing}/{len(vals)})'
    return text or '-', (statistics.median(got) if got and not missing else None)


def table(db, since, irqsoff=False):
    rows = []
    found = batches(db, since, irqsoff)
    for (nodes, dead, size_kb), batch in sorted(found.items()):
        for metric, name in (IRQSOFF_METRICS + METRICS[:1] if irqsoff else METRICS):
            g = values(db, batch, metric, size_kb, boots=True)
            v = {k: [x for boot in boots for x in boot] for k, boots in g.items()}
            (ot, om), (pt, pm) = cell(v.get('original', [])), cell(v.get('patched', []))
            rows.append([str(nodes), str(dead), compare.size(size_kb), name, ot, pt, compare.pct(om, pm),
                         compare.bootstrap_ci(g.get('original', []), g.get('patched', [])), batch])
    return rows


HEAD = ['nodes', 'dead memcgs', 'page cache', 'figure', 'original median [min-max] (n)',
        'patched median [min-max] (n)', 'change', '95% CI', 'batch']


def render(rows, markdown):
    if markdown:
        out = ['| ' + ' | '.join(HEAD) + ' |', '|' + ' --- |' * len(HEAD)]
        out += ['| ' + ' | '.join(r) + ' |' for r in rows]
        return '\n'.join(out)
    w = [max(len(x) for x in col) for col in zip(HEAD, *rows)]
    return '\n'.join('  '.join(c.ljust(n) for c, n in zip(r, w)).rstrip() for r in [HEAD] + rows)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--since', default='')
    ap.add_argument('--irqsoff', action='store_true', help='the batches with the irqsoff tracer')
    ap.add_argument('--markdown', action='store_true')
    ap.add_argument('--db')
    a = ap.parse_args(argv)
    _, db = store.open_existing(a.db, 'offline_axes', 'run qemu-run/jobs/offline-axes.sh first')
    rows = table(db, a.since, a.irqsoff)
    if not rows:
        print(f'offline_axes: no instruction-count offline batch with nodes= and dead={" and irqsoff=1" if a.irqsoff else ""} '
              f'in the database: run {"IRQSOFF=1 qemu-run/jobs/offline-axes.sh (make bench-irqsoff)" if a.irqsoff else "qemu-run/jobs/offline-axes.sh (make bench-offline)"}',
              file=sys.stderr)
        return 1
    print(render(rows, a.markdown))
    if not a.markdown:
        print('\nrelease: rmdir until the memory css is released ("not released" within timeout_ms: the '
              'dead memcgs pin it, 6.12\'s behaviour); stall: the longest another task waited for '
              'cgroup_mutex within the probe window after the rmdir.')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
