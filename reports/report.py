#!/usr/bin/env python3
"""Render the dashboard: original vs patched, from the runs database.

usage: reports/report.py [--db PATH] [--out DIR]

Reads the database (--db, else $RUNS_DB, else $BUILD/db/runs.sqlite),
writes DIR/index.html (default $BUILD/report) with PNG plots drawn by the
gnuplot scripts in reports/plots/, the data behind every plot in DIR/data/,
and the cover-letter table in DIR/table.txt.  The latest soak run of each
kernel is compared; a kernel without one, or an empty database, is said
so on the page.  Ends with one line: where the page is and how long it took.
"""
import argparse
import bisect
import datetime
import fcntl
import html
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
import compare  # noqa: E402 (and db/, qemu-run/kernel/ on the path)
import bench_table  # noqa: E402
import flaky  # noqa: E402
import offline_axes  # noqa: E402
import store  # noqa: E402
from kernels import KERNELS, KSELFTESTS  # noqa: E402

PLOTS = os.path.join(HERE, 'plots')

# What the page shows; change it here.
DYING_HELP = ('nr_dying_subsys_memory of the soak parent\'s cgroup.stat '
              '(nr_dying_descendants on kernels without it)')
# The memory dying cgroups cost, from /proc/meminfo (kB): name -> keys summed.
COST = [('slab', ['Slab']), ('percpu', ['Percpu']),
        ('kernel', ['Slab', 'Percpu', 'KernelStack', 'PageTables'])]
# The cover letter's "mem diff": the difference in slab and percpu usage.
TABLE_MEM = ['Slab', 'Percpu']
PERIODS = 7                     # columns of the table, like the cover letter's days 0..6
MEMORY_STAT = ['anon', 'file', 'kernel', 'slab', 'percpu', 'shmem', 'file_mapped', 'sock']
# The census module's pins (census/memcg_census.c), likeliest first.
PINS = ['dirty', 'shmem', 'pagecache', 'anon', 'swap', 'socket', 'cgwb', 'child', 'stock', 'unknown']
TOP_SLABS = 8                   # slabinfo caches shown: those that grew most
RECENT_RUNS = 30


mb = compare.mb
fmt = compare.whole


class Store:
    """Read access to the runs database, by name."""

    def __init__(self, db):
        self.db = db
        self.sources = dict(db.execute('SELECT name, id FROM sources'))
        self.keys = dict(db.execute('SELECT name, id FROM keys'))

    def q(self, sql, *args):
        return self.db.execute(sql, args).fetchall()

    def census_at_end(self, run_id):
        """{pin: dying memcgs} at a run's last snapshot before drop_caches; {} without a census."""
        s = self.sources.get('census')
        if s is None:
            return {}
        return dict(self.db.execute(
            'SELECT k.name, v.value FROM samples v JOIN keys k ON k.id = v.key_id '
            'WHERE v.run_id = ? AND v.source_id = ? AND v.seq = (SELECT MAX(seq) FROM snapshots '
            "WHERE run_id = ? AND (note IS NULL OR note = ''))", (run_id, s, run_id)))

    def series(self, run_id, source, key):
        """{seq: value} of one key of one source in one run."""
        s, k = self.sources.get(source), self.keys.get(key)
        if s is None or k is None:
            return {}
        return dict(self.db.execute('SELECT seq, value FROM samples WHERE source_id = ? AND key_id = ? '
                                    'AND run_id = ?', (s, k, run_id)))


class Soak:
    """The latest soak run of one kernel, with the series the page draws."""

    def __init__(self, st, row):
        (self.run_id, self.kernel, self.started, self.gens, self.workload, self.snapshots,
         self.dropped, self.verdict, self.release, self.soak_rc, self.t_ms) = row
        snaps = st.q('SELECT seq, gen, t_ms, note, dying FROM dying WHERE run_id = ? ORDER BY seq', self.run_id)
        self.snaps = [s for s in snaps if s[3] is None]          # the soak itself
        self.drop = [s for s in snaps if s[3] and 'drop_caches' in s[3]]
        self.meminfo = {k: st.series(self.run_id, 'meminfo', k)
                        for k in {k for _, keys in COST for k in keys} | set(TABLE_MEM)}

    def gens_of(self):
        return [s[1] for s in self.snaps]

    def mem_kb(self, keys, seq):
        vals = [self.meminfo.get(k, {}).get(seq) for k in keys]
        return None if any(v is None for v in vals) else sum(vals)

    def at_gen(self, g):
        """The last snapshot at or before generation g."""
        i = bisect.bisect_right(self.gens_of(), g) - 1
        return self.snaps[i] if i >= 0 else None


def interp(xs, ys, x):
    """ys at x, linearly between the points of xs (sorted); None outside."""
    if not xs or x < xs[0] or x > xs[-1]:
        return None
    i = bisect.bisect_left(xs, x)
    if xs[i] == x or i == 0:
        return ys[i]
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


class Page:
    def __init__(self, out):
        self.out = out
        self.parts = []
        self.jobs = []          # gnuplot processes: (png, Popen, stderr path)

    def add(self, s):
        self.parts.append(s)

    def notice(self, text):
        self.add(f'<p class="notice">{text}</p>')

    def write_data(self, name, header, rows, comment=''):
        path = os.path.join(self.out, 'data', name)
        with open(path, 'w') as f:
            if comment:
                f.write(f'# {comment}\n')
            f.write('\t'.join(header) + '\n')
            for r in rows:
                f.write('\t'.join('NaN' if v is None else (f'{v:.3f}' if isinstance(v, float) else str(v))
                                  for v in r) + '\n')
        return path

    def plot(self, script, png, alt, caption, data_links, **var):
        """Start gnuplot on script; put the figure on the page."""
        args = ['gnuplot', '-e', compare.GNUPLOT_STYLES]
        for k, v in dict(var, out=os.path.join(self.out, png)).items():
            args += ['-e', f'{k}={gp(v)}']
        args.append(script)
        err = os.path.join(self.out, 'data', png + '.log')
        with open(err, 'w') as ef:
            self.jobs.append((png, subprocess.Popen(args, cwd=PLOTS, stdout=ef, stderr=subprocess.STDOUT), err))
        links = ' '.join(f'<a href="data/{html.escape(os.path.basename(p))}">{html.escape(t)}</a>'
                         for t, p in data_links)
        self.add(f'<figure><img src="{png}" alt="{html.escape(alt)}" width="900" height="460">'
                 f'<figcaption>{caption} <span class="data">data: {links}</span></figcaption></figure>')

    def wait(self):
        bad = []
        for png, p, err in self.jobs:
            if p.wait() != 0 or not os.path.exists(os.path.join(self.out, png)):
                with open(err) as f:
                    bad.append(f'{png}: gnuplot failed:\n{f.read()}')
            elif os.path.getsize(err) == 0:
                os.remove(err)
        return bad


def gp(v):
    """A gnuplot literal for v."""
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, (list, tuple)):
        v = ' '.join("'" + str(w).replace("'", '') + "'" for w in v)
    return '"' + str(v).replace('\\', '\\\\').replace('"', '\\"') + '"'


def esc(v):
    return html.escape('' if v is None else str(v))


def pick_soaks(st):
    """The soaks the page compares (compare.pick_soak_pair), as Soaks with
    their series; and the notes on the newer soaks left out."""
    chosen, notes = compare.pick_soak_pair(st.db)
    soaks = {k: Soak(st, r[:11]) for k, r in chosen.items()}
    for k, s in soaks.items():
        s.series = chosen[k][11]
    return soaks, notes


def section_answer(page, soaks, st):
    """The answer first: what the newest runs say, one line each, from the
    stored verdicts (nothing is judged here)."""
    page.add('<h2 id="answer">The answer</h2>')
    lines = []
    if soaks:
        parts = []
        for k, s in soaks.items():
            end = s.snaps[-1][4] if s.snaps else None
            drop = s.drop[-1][4] if s.drop else None
            parts.append(f'<b class="k-{esc(k)}">{esc(k)}</b> {esc(end)} dying of {esc(s.gens)} generations'
                         + (f', {esc(drop)} after drop_caches' if drop is not None else '')
                         + f' (run {s.run_id})')
        lines.append('Soak: ' + '; '.join(parts) + '.')
    else:
        lines.append('Soak: none stored yet (<code>make run</code>).')
    ks = [(rid, k, summary, v, st.q('SELECT count(*) FROM kselftest WHERE run_id = ? AND surprise', rid)[0][0])
          for rid, k, _, summary, v in latest_kselftests(st)]
    if ks:
        lines.append('Kselftests, the latest full run of each kernel: ' + '; '.join(
            f'<b class="k-{esc(k)}">{esc(k)}</b> '
            + (f'<span class="fail">{n} surprises</span>' if n else 'as the matrix expects')
            + f' (run {rid}: {esc((summary or "no summary").split(" | ")[0])}; verdict {esc(v)})'
            for rid, k, summary, v, n in ks) + '.')
    else:
        lines.append('Kselftests: none stored yet (<code>make kselftest</code>).')
    oc = st.q('SELECT DISTINCT orig_run_id, patched_run_id, passed FROM oracle_latest')
    if oc:
        bad = [r for r in oc if not r[2]]
        lines.append('Differential oracle, the newest comparison of each scenario: '
                     + (f'<span class="fail">{len(bad)} of {len(oc)} comparisons failed</span>'
                        if bad else f'{len(oc)} comparisons passed')
                     + ' (<a href="#oracle">below</a>).')
    else:
        lines.append('Differential oracle: no comparison stored yet (<code>make oracle</code>).')
    page.add('<ul class="answer">' + ''.join(f'<li>{x}</li>' for x in lines) + '</ul>')


def fold_sections(parts, start):
    """From parts[start] on, make each section foldable: an h2 becomes the
    summary of an open <details> that runs to the next h2."""
    out, open_ = parts[:start], False
    for part in parts[start:]:
        if part.startswith('<h2'):
            if open_:
                out.append('</details>')
            out.append('<details open><summary>' + part + '</summary>')
            open_ = True
        else:
            out.append(part)
    if open_:
        out.append('</details>')
    return out


def section_runs(page, soaks, st, left_out=()):
    page.add('<h2 id="runs">Runs compared</h2>')
    if not soaks:
        page.notice('No soak run in the database yet: run <code>make soak</code> (or '
                    '<code>db/ingest.py RUN_DIR</code> on a soak run folder), then <code>make report</code>.')
        return
    page.add('<table><tr><th>kernel</th><th>series</th><th>run</th><th>started</th><th>release</th>'
             '<th>generations</th><th>snapshots</th><th>dropped</th><th>soak rc</th><th>verdict</th>'
             '<th>workload</th></tr>')
    for s in soaks.values():
        series = getattr(s, 'series', '') or ('-' if s.kernel == 'original' else '?')
        page.add(f'<tr><td class="k-{esc(s.kernel)}">{esc(s.kernel)}</td><td><code>{esc(series[:8])}</code></td>'
                 f'<td>{s.run_id}</td><td>{esc(s.started)}</td>'
                 f'<td>{esc(s.release)}</td><td>{esc(s.gens)}</td><td>{s.snapshots}</td><td>{s.dropped}</td>'
                 f'<td>{esc(s.soak_rc)}</td><td>{esc(s.verdict)}</td><td><code>{esc(s.workload)}</code></td></tr>')
    page.add('</table><p class="caption">The newest clean soak of patched (a clean guest run whose soak '
             'ended rc=0) and the newest clean soak of original with the same workload; series is the '
             'hash of the patches the kernel was built from.</p>')
    if left_out:
        page.notice('Newer soaks left out of the comparison: ' + '; '.join(esc(n) for n in left_out) + '.')
    missing = [k for k in ('original', 'patched') if k not in soaks]
    for k in missing:
        other = [o for o in soaks if o != k]
        page.notice(f'No soak run of <b>{k}</b> in the database yet: the plots show '
                    f'{", ".join(other) or "nothing"} only, and there is no {k} row nor memory '
                    f'difference in the table.')
    if 'original' in soaks and 'patched' in soaks and soaks['original'].workload != soaks['patched'].workload:
        page.notice('The latest original and patched soaks ran different workloads (see above): '
                    'the comparison is not like for like.')


def section_dying(page, soaks):
    page.add('<h2 id="dying">Dying memory cgroups</h2>')
    if not soaks:
        page.notice('No soak data to plot.')
        return
    files, titles, styles, drops, dtitles, dstyles, links = [], [], [], [], [], [], []
    for s in soaks.values():
        style = compare.kernel_style(s.kernel)
        f = page.write_data(f'dying-{s.kernel}.tsv', ['gen', 'dying'], [(x[1], x[4]) for x in s.snaps],
                            f'{s.kernel}, run {s.run_id}: {DYING_HELP}')
        files.append(f)
        titles.append(f'{s.kernel} (run {s.run_id})')
        styles.append(style)
        links.append((s.kernel, f))
        if s.drop:
            d = page.write_data(f'dying-{s.kernel}-drop.tsv', ['gen', 'dying'], [(x[1], x[4]) for x in s.drop],
                                f'{s.kernel}, run {s.run_id}: after the final sync and drop_caches')
            drops.append(d)
            dtitles.append(f'{s.kernel} after drop_caches')
            dstyles.append(style)
            links.append((f'{s.kernel} after drop_caches', d))
    page.plot('dying.gp', 'dying.png', 'dying memory cgroups vs generation',
              f'Dying memory cgroups ({DYING_HELP}) as the soak creates and removes job cgroups. '
              'The square is the count after the soak\'s final sync and drop_caches.',
              links, files=files, titles=titles, styles=styles, drops=drops, drop_titles=dtitles,
              drop_styles=dstyles, every=max(1, max(len(s.snaps) for s in soaks.values()) // 40))


def section_census(page, soaks, st):
    """The soak's dying memcgs by what pins each one, from the census module."""
    page.add('<h2 id="census">Dying cgroups by pin</h2>')
    runs = [s for s in soaks.values() if s.snaps]
    if not runs:
        page.notice('No soak data to plot.')
        return
    page.add('<p class="caption">Every dying memory cgroup of the guest, by the pin that most likely keeps it '
             '(<code>/proc/memcg_census_totals</code>, census/): ' + ', '.join(PINS) + '. '
             'The same scales for every kernel.</p>')
    series = {s.kernel: [st.series(s.run_id, 'census', k) for k in PINS] for s in runs}
    y_max = max([v for ser in series.values() for one in ser for v in one.values()] + [0])
    g_max = max(x[1] for s in runs for x in s.snaps) or 1
    for s in runs:
        ser = series[s.kernel]
        present = [i for i, one in enumerate(ser) if one]
        if not present:
            page.notice(f'{esc(s.kernel)}: run {s.run_id} sampled no census (the module was not loaded).')
            continue
        rows = [[x[1]] + [ser[i].get(x[0]) for i in present] for x in s.snaps]
        header = ['gen'] + [PINS[i] for i in present]
        f = page.write_data(f'census-{s.kernel}.tsv', header, rows,
                            f'{s.kernel}, run {s.run_id}: dying memory cgroups by pin against generation')
        page.plot('lines.gp', f'census-{s.kernel}.png', f'dying memory cgroups by pin, {s.kernel}',
                  f'{esc(s.kernel)} (run {s.run_id}): dying memory cgroups by pin over the soak\'s generations.',
                  [(s.kernel, f)], data=f, ncols=len(header), title=f'dying by pin, {s.kernel} (run {s.run_id})',
                  xlabel='generation', ylabel='dying memory cgroups', xmax=g_max * 1.02, ymax=(y_max * 1.05) or 1)


def has_points(rows):
    """Whether a table of [x, y...] rows has a y to plot (gnuplot fails on none)."""
    return any(v is not None for r in rows for v in r[1:])


def section_cost(page, soaks):
    page.add('<h2 id="cost">The memory they cost</h2>')
    if not soaks:
        page.notice('No soak data to plot.')
        return
    header = ['gen'] + [f'{name} MB' for name, _ in COST]
    o, p = soaks.get('original'), soaks.get('patched')
    if o and p and o.snaps and p.snaps:
        pg = p.gens_of()
        pv = {name: [p.mem_kb(keys, s[0]) for s in p.snaps] for name, keys in COST}
        rows = []
        for s in o.snaps:
            row = [s[1]]
            for name, keys in COST:
                ov = o.mem_kb(keys, s[0])
                xs = [g for g, v in zip(pg, pv[name]) if v is not None]
                ys = [v for v in pv[name] if v is not None]
                pi = interp(xs, ys, s[1])
                row.append(None if ov is None or pi is None else mb(ov - pi))
            rows.append(row)
        if not has_points(rows):
            page.notice('The soaks hold no /proc/meminfo samples: no memory cost to draw.')
            return
        f = page.write_data('cost-diff.tsv', header, rows,
                            'original minus patched, /proc/meminfo in MB (MiB), patched interpolated at '
                            "original's generations; kernel = " + '+'.join(COST[-1][1]))
        page.plot('lines.gp', 'cost.png', 'memory difference, original minus patched, vs generation',
                  'What the dying cgroups cost: original minus patched, in MB, of /proc/meminfo\'s Slab, '
                  f'Percpu, and kernel memory ({"+".join(COST[-1][1])}), at the same generation.',
                  [('original - patched', f)], data=f, ncols=len(header),
                  title='Kernel memory, original minus patched', xlabel='generation', ylabel='MB')
        return
    s = next(iter(soaks.values()))
    rows = [[x[1]] + [None if s.mem_kb(keys, x[0]) is None else mb(s.mem_kb(keys, x[0])) for _, keys in COST]
            for x in s.snaps]
    if not has_points(rows):
        page.notice(f'{esc(s.kernel)}\'s soak holds no /proc/meminfo samples: no memory cost to draw.')
        return
    f = page.write_data(f'cost-{s.kernel}.tsv', header, rows, f'{s.kernel}, run {s.run_id}: /proc/meminfo in MB')
    page.notice('Only one kernel has a soak run: no difference to draw; the plot shows '
                f'{esc(s.kernel)}\'s absolute values.')
    page.plot('lines.gp', 'cost.png', f'kernel memory of {s.kernel} vs generation',
              f'{esc(s.kernel)}: /proc/meminfo\'s Slab, Percpu and kernel memory ({"+".join(COST[-1][1])}) in MB.',
              [(s.kernel, f)], data=f, ncols=len(header), title=f'Kernel memory, {s.kernel}',
              xlabel='generation', ylabel='MB')


def cover_table(soaks):
    """(header, rows) of the table in the shape of the 2019 cover letter."""
    o, p = soaks.get('original'), soaks.get('patched')
    have = [s for s in (o, p) if s and s.snaps]
    if not have:
        return None
    last = min(s.snaps[-1][1] for s in have)
    # Evenly spaced, moved to the generation of a real snapshot at or before.
    ref = have[0]
    points = sorted({ref.at_gen(round(last * i / (PERIODS - 1)))[1] for i in range(PERIODS)})
    rows = []
    for name, s in (('original', o), ('patched', p)):
        if s and s.snaps:
            rows.append((name, [fmt(s.at_gen(g)[4]) if s.at_gen(g) else 'n/a' for g in points]))
    diff = []
    for g in points:
        if not (o and p and o.snaps and p.snaps and o.at_gen(g) and p.at_gen(g)):
            diff.append('n/a')
            continue
        a, b = o.mem_kb(TABLE_MEM, o.at_gen(g)[0]), p.mem_kb(TABLE_MEM, p.at_gen(g)[0])
        diff.append('n/a' if a is None or b is None else fmt(mb(a - b)))
    rows.append(('mem diff(MB)', diff))
    header = ['gen'] + [str(g) for g in points]
    if o and p and o.drop and p.drop and o.drop[-1][1] == p.drop[-1][1]:
        header.append('drop')
        rows[0][1].append(fmt(o.drop[-1][4]))
        rows[1][1].append(fmt(p.drop[-1][4]))
        a, b = o.mem_kb(TABLE_MEM, o.drop[-1][0]), p.mem_kb(TABLE_MEM, p.drop[-1][0])
        rows[2][1].append('n/a' if a is None or b is None else fmt(mb(a - b)))
    return header, rows


def table_text(header, rows):
    cells = [header] + [[name] + vals for name, vals in rows]
    w0 = max(len(r[0]) for r in cells)
    w = max(len(c) for r in cells for c in r[1:])
    return '\n'.join(r[0].ljust(w0) + ' ' + ' '.join(c.rjust(w) for c in r[1:]) for r in cells) + '\n'


def section_table(page, soaks):
    page.add('<h2 id="table">Per period, as in the 2019 cover letter</h2>')
    t = cover_table(soaks)
    if t is None:
        page.notice('No soak data for the table.')
        return
    header, rows = t
    text = table_text(header, rows)
    with open(os.path.join(page.out, 'table.txt'), 'w') as f:
        f.write(text)
    page.add('<table class="cover"><tr>' + ''.join(f'<th>{esc(h)}</th>' for h in header) + '</tr>')
    for name, vals in rows:
        page.add(f'<tr><th>{esc(name)}</th>' + ''.join(f'<td>{esc(v)}</td>' for v in vals) + '</tr>')
    page.add('</table>')
    drop = ' The column "drop" is the end of the soak after sync and drop_caches.' if 'drop' in header else ''
    page.add(f'<p class="caption">Dying memory cgroups at the last snapshot at or before each generation; '
             f'mem diff is original minus patched of /proc/meminfo\'s {" + ".join(TABLE_MEM)} in MB (MiB), '
             f'the cover letter\'s "difference in slab and percpu usage".{drop} '
             f'As text: <a href="table.txt">table.txt</a>.</p>')
    page.add(f'<pre>{esc(text)}</pre>')


def time_axis(t_ms_max):
    if t_ms_max > 3 * 3600 * 1000:
        return 3600 * 1000, 'hours'
    if t_ms_max > 600 * 1000:
        return 60 * 1000, 'minutes'
    return 1000, 'seconds'


def section_slabinfo(page, soaks, st):
    page.add('<h2 id="slabinfo">/proc/slabinfo: the caches that grew most</h2>')
    if not soaks:
        page.notice('No soak data to plot.')
        return
    growth = {}
    for s in soaks.values():
        if not s.snaps:
            continue
        first, last = s.snaps[0][0], s.snaps[-1][0]
        sid = st.sources.get('slabinfo')
        for key, seq, value in st.q(
                "SELECT k.name, s.seq, s.value FROM keys k JOIN samples s ON s.key_id = k.id "
                "WHERE k.name LIKE '%:bytes' AND s.source_id = ? AND s.run_id = ? AND s.seq IN (?, ?)",
                sid, s.run_id, first, last):
            growth[key] = growth.get(key, 0) + (value if seq == last else -value)
    caches = [k for k, _ in sorted(growth.items(), key=lambda kv: -kv[1])[:TOP_SLABS]]
    if not caches:
        page.notice('The soak runs recorded no /proc/slabinfo.')
        return
    names = [c.rsplit(':', 1)[0] for c in caches]
    page.add(f'<p class="caption">Bytes (num_objs &times; objsize) of the {len(caches)} caches whose size grew most '
             f'during the latest soaks, same caches for every kernel.</p>')
    plot_timeseries(page, soaks, st, 'slabinfo', caches, names, 1024 * 1024, 'slabinfo', 'MB',
                    '/proc/slabinfo caches')


def section_memstat(page, soaks, st):
    page.add('<h2 id="memory-stat">The parent\'s memory.stat</h2>')
    if not soaks:
        page.notice('No soak data to plot.')
        return
    page.add('<p class="caption">memory.stat of the soak\'s common parent cgroup (the dying job cgroups\' parent): '
             f'{", ".join(MEMORY_STAT)}.</p>')
    plot_timeseries(page, soaks, st, 'memory.stat', MEMORY_STAT, MEMORY_STAT, 1024 * 1024, 'memstat', 'MB',
                    'the parent\'s memory.stat')


def plot_timeseries(page, soaks, st, source, keys, names, scale, stem, unit, what):
    """One plot per kernel of keys of source against time, on the same scales."""
    runs = [s for s in soaks.values() if s.snaps]
    for s in soaks.values():
        if not s.snaps:
            page.notice(f'{esc(s.kernel)}: no snapshots.')
    if not runs:
        return
    t_max = max(s.snaps[-1][2] for s in runs)
    div, tunit = time_axis(t_max)
    series = {s.kernel: [st.series(s.run_id, source, k) for k in keys] for s in runs}
    y_max = max([v / scale for ser in series.values() for one in ser for v in one.values()] + [0])
    for s in runs:
        present = [i for i, ser in enumerate(series[s.kernel]) if ser]
        if not present:
            page.notice(f'{esc(s.kernel)}: run {s.run_id} recorded no {esc(source)}.')
            continue
        ser = series[s.kernel]
        rows = [[x[2] / div] + [None if ser[i].get(x[0]) is None else ser[i][x[0]] / scale for i in present]
                for x in s.snaps]
        header = [tunit] + [names[i] for i in present]
        f = page.write_data(f'{stem}-{s.kernel}.tsv', header, rows,
                            f'{s.kernel}, run {s.run_id}: {source} in {unit} against time in {tunit}')
        page.plot('lines.gp', f'{stem}-{s.kernel}.png', f'{what} over time, {s.kernel}',
                  f'{esc(s.kernel)} (run {s.run_id}): {esc(what)} in {unit} over the soak; '
                  'the same scales for every kernel.',
                  [(s.kernel, f)], data=f, ncols=len(header), title=f'{what}, {s.kernel} (run {s.run_id})',
                  xlabel=f'time ({tunit})', ylabel=unit, xmax=t_max / div * 1.02, ymax=(y_max * 1.05) or 1)


def latest_kselftests(st):
    """[(run_id, kernel, started, summary, verdict)]: the latest full run of
    each kernel.  A full run: every kselftest of lib.sh, none limited to
    some subtests (MEMCG_REPARENT_ONLY on the command line).  A kernel
    without one gives its latest run, whatever it ran."""
    full = 'tests=' + ','.join(KSELFTESTS) + ' %'
    return st.q("SELECT l.run_id, l.kernel, l.started, l.summary, l.verdict FROM run_list l "
                "WHERE l.kind = 'kselftest' AND l.run_id = coalesce("
                "(SELECT r.id FROM runs r JOIN kernels k ON k.id = r.kernel_id WHERE k.name = l.kernel "
                "AND r.kind = 'kselftest' AND r.args LIKE ? AND coalesce(r.cmdline, '') NOT LIKE '%\\_ONLY=%' "
                "ESCAPE '\\' ORDER BY r.started DESC, r.id DESC LIMIT 1), "
                "(SELECT r.id FROM runs r JOIN kernels k ON k.id = r.kernel_id WHERE k.name = l.kernel "
                "AND r.kind = 'kselftest' ORDER BY r.started DESC, r.id DESC LIMIT 1))", full)


def section_kselftest(page, st):
    page.add('<h2 id="kselftest">Kselftests: the latest full run on each kernel</h2>')
    runs = latest_kselftests(st)
    if not runs:
        page.notice('No kselftest run in the database yet: run <code>make kselftest KERNEL=...</code> '
                    '(and ingest it), then <code>make report</code>.')
        return
    order = {k: i for i, k in enumerate(KERNELS)}
    runs.sort(key=lambda r: order.get(r[1], 99))
    kernels = [r[1] for r in runs]
    for k in ('original', 'patched'):
        if k not in kernels:
            page.notice(f'No kselftest run of <b>{k}</b> in the database yet.')
    cells, rows = {}, []
    for run_id, k, *_ in runs:
        for test, sub, outcome, expected, surprise, reason in st.q(
                'SELECT test, subtest, outcome, expected, surprise, reason FROM kselftest '
                'WHERE run_id = ? ORDER BY ord', run_id):
            if (test, sub) not in cells:
                cells[test, sub] = {}
                rows.append((test, sub))
            cells[test, sub][k] = (outcome, expected, surprise, reason)
    page.add('<table class="matrix"><tr><th>test</th><th>subtest</th>' +
             ''.join(f'<th>{esc(k)}</th>' for k in kernels) + '</tr>')
    page.add('<tr><td></td><td class="small">run, date, summary</td>' + ''.join(
        f'<td class="small">run {r[0]}, {esc(r[2])}<br>{esc(r[3] or "no summary")}; verdict {esc(r[4])}</td>'
        for r in runs) + '</tr>')
    for test, sub in rows:
        tds = []
        for k in kernels:
            c = cells[test, sub].get(k)
            if c is None:
                tds.append('<td class="none">not run</td>')
                continue
            outcome, expected, surprise, reason = c
            title = f'expected {expected}' + (f'; {reason}' if reason else '')
            mark = ' (!)' if surprise else ''
            cls = outcome + (' surprise' if surprise else '')
            tds.append(f'<td class="{cls}" title="{esc(title)}">{esc(outcome)}{mark}</td>')
        page.add(f'<tr><td>{esc(test)}</td><td>{esc(sub)}</td>{"".join(tds)}</tr>')
    page.add('</table><p class="caption">Outcomes after qemu-run/verdict/known-issues; (!) marks a surprise against '
             'qemu-run/verdict/expectations (hover a cell for the expected outcome and the reason).</p>')


def section_flaky(page, st):
    page.add('<h2 id="flaky">Flaky subtests: failure rate per kernel</h2>')
    rows = flaky.compare(flaky.rates(st.db))
    if not rows:
        page.add('<p>No subtest failed in a kselftest run of original and another kernel: nothing to '
                 'compare (<code>make nightly-flaky</code> runs each flaky-listed test 20 times per kernel).</p>')
        return
    page.add('<table><tr><th>test</th><th>subtest</th><th>kernel</th><th>original fails</th>'
             '<th>kernel fails</th><th>p (kernel fails more)</th></tr>')
    for (test, sub), kernel, (kb, nb), (k, n), p, worse in rows:
        cls = ' class="fail"' if worse else ''
        page.add(f'<tr{cls}><td>{esc(test)}</td><td>{esc(sub)}</td><td>{esc(kernel)}</td>'
                 f'<td>{kb} of {nb} ({100 * kb / nb:.0f}%)</td><td>{k} of {n} ({100 * k / n:.0f}%)</td>'
                 f'<td>{p:.3g}</td></tr>')
    page.add('</table><p class="caption">First attempts of every stored kselftest run (reruns of flaky '
             'subtests aside); p is the one-sided Fisher exact test that the kernel fails more often than '
             'original; a highlighted row (p &lt; 0.05) fails <code>make nightly-flaky</code> '
             '(<code>reports/flaky.py</code>).</p>')


# The oracle's verdicts that are no failure (reports/oracle.py).
ORACLE_QUIET = ('same', 'agrees')


def section_oracle(page, st):
    """The newest stored comparison of every scenario (view oracle_latest):
    every row that is not the same on both kernels, with its verdict."""
    page.add('<h2 id="oracle">Differential oracle: live cgroups, original against patched</h2>')
    rows = st.q('SELECT scenario, checkpoint, cgroup, key, original, patched, verdict, reason, '
                'orig_run_id, patched_run_id, original_label, patched_label, passed FROM oracle_latest '
                'ORDER BY scenario, checkpoint, cgroup, key')
    if not rows:
        page.add('<p>No comparison stored yet: <code>make oracle</code> plays scenarios/*.scn on both '
                 'kernels and stores the comparison.</p>')
        return
    shown = [r for r in rows if r[6] not in ORACLE_QUIET]
    pairs = sorted({(r[8], r[9], r[10], r[11], r[12]) for r in rows})
    page.add('<p>' + '; '.join(
        f'runs {o} ({esc(lo)}) and {p} ({esc(lp)}): {"passed" if ok else "FAILED"}'
        for o, p, lo, lp, ok in pairs) + f'. {len(rows)} values compared, {len(shown)} shown.</p>')
    cls = {'differs': 'fail', 'missing': 'fail', 'audit-fail': 'fail', 'finding': 'skip',
           'audit-known': 'skip', 'deliberate': 'pass'}
    page.add('<table><tr><th>scenario</th><th>checkpoint</th><th>cgroup</th><th>key</th>'
             '<th>original</th><th>patched</th><th>verdict</th></tr>')
    for scen, cp, cg, key, a, b, verdict, reason, *_ in shown:
        page.add(f'<tr class="{cls.get(verdict, "")}"><td>{esc(scen)}</td><td>{esc(cp)}</td><td>{esc(cg)}</td>'
                 f'<td>{esc(key)}</td><td>{esc(a)}</td><td>{esc(b)}</td>'
                 f'<td title="{esc(reason or "")}">{esc(verdict)}</td></tr>')
    page.add('</table><p class="caption">Rows that are the same on both kernels, or agree within '
             'scenarios/tolerances, are left out.  <i>finding</i>: a known bug of the patched kernel '
             'listed in scenarios/expected; <i>deliberate</i>: a difference the series means to make '
             '(hover the verdict for the reason).  The scenarios are scenarios/*.scn.</p>')


TREND_PLOTS = 12        # at most this many configuration x workload plots; the table has every row


def label_style(label, seen):
    """The gnuplot line style of a kernel label, the same on every plot of a
    page (seen keeps the choices): original, the first series of patched and
    debug keep their kernel's colour; other series get the series styles (11
    and up)."""
    name = label.split('@')[0]
    if name in KERNELS and seen.setdefault(name, label) == label:
        return KERNELS.index(name) + 1
    others = seen.setdefault('', [])
    if label not in others:
        others.append(label)
    return 11 + others.index(label) % 8


def short_workloads(workloads):
    """{workload: short name}: the knobs in which the workloads differ, or
    "every soak alike" when only one workload ran."""
    parsed = {w: dict(x.partition('=')[::2] for x in w.split()) for w in workloads}
    keys = sorted({k for p in parsed.values() for k in p})
    differ = [k for k in keys if len({p.get(k) for p in parsed.values()}) > 1]
    return {w: (' '.join(f'{k}={p.get(k, "-")}' for k in differ) or 'every soak alike')
            for w, p in parsed.items()}


def section_trend(page, st):
    page.add('<h2 id="trend">Across nights: kernel x configuration x workload</h2>')
    rows = st.q('SELECT day, label, config, shape, run_id, gens, max_dying, final_dying, dropped_dying, lab '
                'FROM fleet_trend ORDER BY config, shape, day, label')
    if not rows:
        page.notice('No soak runs yet, so no trend.')
        return
    names = short_workloads({r[3] for r in rows})
    groups = {}
    for r in rows:
        groups.setdefault((r[2], r[3]), []).append(r)
    # the groups with the most nights first
    order = sorted(groups, key=lambda g: (-len({r[0] for r in groups[g]}), g))
    days = sorted({r[0] for r in rows})
    d0 = datetime.date.fromisoformat(days[0]) - datetime.timedelta(days=1)
    d1 = datetime.date.fromisoformat(days[-1]) + datetime.timedelta(days=1)
    seen = {}
    for n, g in enumerate(order[:TREND_PLOTS], 1):
        config, workload = g
        grows = groups[g]
        labels = sorted({r[1] for r in grows}, key=lambda k: (KERNELS.index(k.split('@')[0])
                                                               if k.split('@')[0] in KERNELS else 99, k))
        files, titles, styles, links = [], [], [], []
        for k in labels:
            f = page.write_data(f'trend-{n}-{k}.tsv', ['day', 'most dying'],
                                [(r[0], r[6]) for r in grows if r[1] == k],
                                f'{k}, {config}, {names[workload]}: the most dying memory cgroups during '
                                'the churn of the longest soak of each night')
            files.append(f)
            titles.append(k)
            styles.append(label_style(k, seen))
            links.append((k, f))
        page.plot('trend.gp', f'trend-{n}.png', f'most dying memory cgroups per night: {config}, {names[workload]}',
                  f'Nights of <b>{esc(config)}</b>, workload <b>{esc(names[workload])}</b>: the most dying '
                  'memory cgroups at any snapshot of the churn, per night and kernel (the soak of the night '
                  'that ran the most generations).', links, files=files, titles=titles, styles=styles,
                  ttl=f'{config}; {names[workload]}', xmin=d0.isoformat(), xmax=d1.isoformat(),
                  xtic=86400 * max(1, (d1 - d0).days // 12))
    if len(order) > TREND_PLOTS:
        page.notice(f'{len(order) - TREND_PLOTS} more configuration x workload groups are in the table '
                    f'only (the plots show the {TREND_PLOTS} with the most nights).')
    page.add('<table><tr><th>day</th><th>kernel</th><th>configuration</th><th>workload</th><th>run</th>'
             '<th>generations</th><th>most dying</th><th>dying at the end</th><th>by pin at the end</th>'
             '<th>after drop_caches</th><th>ran in</th></tr>')
    for day, k, config, workload, run_id, gens, most, final, dropped, lab in rows:
        census = st.census_at_end(run_id)
        pins = ', '.join(f'{p} {fmt(census[p])}' for p in PINS if census.get(p)) if census else 'n/a'
        if census and not pins:
            pins = 'none'
        page.add(f'<tr><td>{esc(day)}</td><td class="k-{esc(k.split("@")[0])}">{esc(k)}</td>'
                 f'<td>{esc(config)}</td><td title="{esc(workload)}">{esc(names[workload])}</td><td>{run_id}</td>'
                 f'<td>{esc(gens)}</td><td>{fmt(most) if most is not None else "n/a"}</td>'
                 f'<td>{fmt(final) if final is not None else "n/a"}</td><td>{esc(pins)}</td>'
                 f'<td>{fmt(dropped) if dropped is not None else "n/a"}</td>'
                 f'<td>{esc(lab or "this machine")}</td></tr>')
    page.add('</table><p class="caption">One row per night, kernel (its series hash), configuration (guest '
             'memory, vCPUs, clock, kernel .config hash) and workload (the soak knobs in which the workloads '
             'differ; hover for all of them). "by pin": the census module\'s count of dying memory cgroups by the pin '
             'that most likely holds each (census/), at the last snapshot of the churn. "ran in" names the '
             'LAVA job of a lab run.</p>')


def section_recent(page, st):
    page.add('<h2 id="all-runs">Recent runs</h2>')
    # The verdict is the console's (boot.sh); a guest tool that failed in a
    # clean guest run says so next to it.
    rows = st.q("SELECT run_id, kind, kernel, started, wall_secs, verdict || CASE WHEN kind != 'kselftest' "
                "AND soak_rc IS NOT NULL AND soak_rc != 0 THEN ', ' || kind || ' failed (rc=' || soak_rc || ')' "
                "WHEN kind != 'kselftest' AND soak_rc IS NULL AND verdict = 'clean' THEN ', ' || kind || "
                "' did not end' ELSE '' END, gens, snapshots, dropped, summary, "
                "coalesce((SELECT x.lab FROM runs x WHERE x.id = run_id), 'this machine') "
                f'FROM run_list ORDER BY started DESC, run_id DESC LIMIT {RECENT_RUNS}')
    if not rows:
        page.notice('The database holds no runs.')
        return
    page.add('<table><tr><th>run</th><th>kind</th><th>kernel</th><th>started</th><th>wall s</th><th>verdict</th>'
             '<th>generations</th><th>snapshots</th><th>dropped</th><th>summary</th><th>ran in</th></tr>')
    for r in rows:
        page.add('<tr>' + ''.join(f'<td>{esc(v)}</td>' for v in r) + '</tr>')
    page.add('</table>')


CSS = """
body { font-family: sans-serif; margin: 1.5em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; margin-top: 2em; }
nav a { margin-right: 1em; }
table { border-collapse: collapse; font-size: 0.9em; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; vertical-align: top; }
table.cover td { text-align: right; font-family: monospace; }
.notice { background: #fff4ce; border: 1px solid #e0c060; padding: 0.5em; }
.caption, figcaption { font-size: 0.9em; color: #444; }
figure { margin: 1em 0; } img { max-width: 100%; height: auto; border: 1px solid #eee; }
.pass { background: #d5f5d5; } .fail { background: #f8d0d0; } .skip { background: #eee; }
.miss, .none { background: #fff; color: #999; }
.surprise { font-weight: bold; outline: 2px solid #c0392b; }
.small { font-size: 0.8em; color: #555; }
.data a { margin-left: 0.4em; }
ul.answer { font-size: 1.05em; background: #f4f8ff; border: 1px solid #b8c8e8; padding: 0.6em 0.6em 0.6em 2em; }
details > summary { cursor: pointer; } details > summary > h2 { display: inline-block; margin-bottom: 0.3em; }
"""

NAV = [('answer', 'the answer'), ('dying', 'dying cgroups'), ('census', 'by pin'), ('table', 'table'), ('runs', 'runs'),
       ('cost', 'memory cost'), ('slabinfo', 'slabinfo'), ('memory-stat', 'memory.stat'),
       ('kselftest', 'kselftests'),
       ('flaky', 'flaky subtests'), ('oracle', 'oracle'), ('bench', 'benchmarks'),
       ('trend', 'nightly trend'), ('all-runs', 'recent runs')]


def bench_batch_line(st, batch):
    """"batch B: runs ..., series ..." for a bench batch's caption."""
    rows = st.q(f"SELECT r.id, {store.KERNEL_LABEL_SQL} FROM runs r JOIN kernels k ON k.id = r.kernel_id "
                "WHERE r.batch = ? AND r.kind = 'bench' ORDER BY r.id", batch)
    labels = ', '.join(dict.fromkeys(esc(r[1]) for r in rows))
    return (f'batch <code>{esc(batch)}</code> (runs {", ".join(str(r[0]) for r in rows)}: {labels}; '
            f'<code>reports/bench_table.py --batch {esc(batch)}</code>)')


def section_bench(page, st):
    """The fast paths' changes with their intervals (the newest batch that
    gives them, of one guest clock, which the caption names), the offline
    cost on its axes (instruction-count batches) and reclaim after a rmdir,
    original against the series."""
    page.add('<h2 id="bench">Benchmarks: original against the series</h2>')
    got = bench_table.newest_with_interval(st.db, 'fast', every_fast=True)
    if got and st.q('SELECT count(DISTINCT clock) FROM runs WHERE batch = ? AND kind = \'bench\'', got[0])[0][0] > 1:
        got = None
    if not got:
        page.add('<p>No bench batch of the fast paths with 3 values a side: <code>NOBUILD=1 make bench</code> '
                 'stores one.</p>')
    else:
        batch = got[0]
        data, order, units = bench_table.batch_values(st.db, batch, boots=True)
        rows = []
        for (metric, param) in sorted(data, key=lambda k: (order[k[0]], k[1])):
            if not metric.startswith('fast.'):
                continue
            og, pg = data[(metric, param)]['original'], data[(metric, param)]['patched']
            o, p = [v for g in og for v in g], [v for g in pg for v in g]
            om = statistics.median([v for v in o if v is not None]) if any(v is not None for v in o) else None
            pm = statistics.median([v for v in p if v is not None]) if any(v is not None for v in p) else None
            ci = compare.bootstrap_interval(og, pg)
            rows.append([len(rows), metric[len('fast.'):], compare.change(om, pm),
                         ci[0] if ci else None, ci[1] if ci else None])
        path = page.write_data('bench-fast.tsv', ['i', 'figure', 'change_pct', 'lo_pct', 'hi_pct'], rows,
                               f'fast paths, batch {batch}: median change patched vs original, 95% bootstrap interval')
        clock = st.q("SELECT clock FROM runs WHERE batch = ? AND kind = 'bench' LIMIT 1", batch)[0][0]
        mode = ('Instruction-count mode: the guest clock counts instructions, so host load does not move these.'
                if clock == 'icount' else 'Wall-clock mode: the host\'s load moves these.')
        page.plot('bars.gp', 'bench-fast.png', 'fast paths: change from original, with 95% intervals',
                  f'The fast paths, {bench_batch_line(st, batch)}: the change of the median rate from original '
                  'to the series, with its 95% percentile-bootstrap interval (boots, then each boot\'s reps); spin is the control, a user-space '
                  f'loop. {mode}', [('tsv', path)], data=path, ttl=f'fast paths, batch {batch}',
                  ylabel='change of the median rate, %')

    # the page cache axis: the newest offline batch over 3 sizes or more
    for batch in bench_table.batches(st.db, 'offline'):
        data, _, _ = bench_table.batch_values(st.db, batch)
        sizes = sorted(param for metric, param in data if metric == 'offline.release_us')
        if len(sizes) >= 3:
            break
    else:
        sizes = []
    rows = []
    for i, kb in enumerate(sizes):
        v = sorted(x / 1000 for x in data[('offline.release_us', kb)]['patched'] if x is not None)
        o = data[('offline.release_us', kb)]['original']
        rows.append([i, compare.size(kb)] + ([statistics.median(v), v[0], v[-1]] if v else [None] * 3)
                    + [sum(1 for x in o if x is None), len(o)])
    if rows:
        path = page.write_data('bench-offline-size.tsv',
                               ['i', 'page_cache', 'patched', 'lo', 'hi', 'original_not_released', 'original_reps'],
                               rows, f'batch {batch}: rmdir to css release, ms (median, min, max), patched')
        never = sum(r[5] for r in rows)
        page.plot('axes.gp', 'bench-offline-size.png', 'offline cost: release time vs page cache size',
                  f'From rmdir to the release of the memory css against the page cache of the removed memcg, '
                  f'{bench_batch_line(st, batch)}: median with min-max. Original: not released within the '
                  f'timeout in {never} of {sum(r[6] for r in rows)} repetitions (its page cache pins it).',
                  [('tsv', path)], data=path, ttl=f'rmdir to css release vs page cache, batch {batch}',
                  xlabel='page cache of the removed memcg', ylabel='ms', nlines=1)

    axes = offline_axes.batches(st.db, '')
    release = {}
    for (nodes, dead, size_kb), batch in axes.items():
        v = offline_axes.values(st.db, batch, 'offline.release_us', size_kb).get('patched', [])
        got_v = sorted(x / 1000 for x in v if x is not None)
        if got_v:
            release[(nodes, dead)] = (statistics.median(got_v), got_v[0], got_v[-1])
    if not release:
        page.add('<p>No batch of the offline axes: <code>NOBUILD=1 make bench-offline</code> stores them.</p>')
    else:
        nodes_all = sorted({n for n, _ in release})
        dead_all = sorted({d for _, d in release})
        rows = [[i, d] + [x for n in nodes_all for x in release.get((n, d), (None, None, None))]
                for i, d in enumerate(dead_all)]
        header = ['i', 'dead_memcgs'] + [h for n in nodes_all for h in (f'{n} node{"s" if n != 1 else ""}',
                                                                          'lo', 'hi')]
        path = page.write_data('bench-offline-axes.tsv', header, rows,
                               'patched: rmdir to css release, ms: median, min, max per (dead memcgs, nodes)')
        page.plot('axes.gp', 'bench-offline-axes.png', 'offline cost: release time vs dead memcgs and nodes',
                  'The offline cost of the series on its axes (<code>make bench-offline</code>, '
                  'instruction-count mode): from rmdir to the release of the memory css, median with min-max, '
                  'against the dead memcgs below the removed one (each given a page of page cache) and the '
                  'NUMA nodes (<code>numa=fake</code>); 64 MiB of the removed memcg\'s own page cache. On '
                  'original the css is never released within the timeout at any point: its page cache pins it. '
                  '<code>reports/offline_axes.py</code> has the table.',
                  [('tsv', path)], data=path, ttl='rmdir to css release, patched', xlabel='dead memcgs below the removed one',
                  ylabel='ms', nlines=len(nodes_all))

    got = bench_table.newest_with_interval(st.db, 'reclaim')
    if not got:
        page.add('<p>No reclaim batch with 3 values a side: <code>NOBUILD=1 ROUNDS=2 make bench '
                 "BENCH='parts=reclaim'</code> stores one.</p>")
        return
    batch, head, rows, notes = got
    page.add(f'<p>Reclaim after a rmdir, {bench_batch_line(st, batch)}:</p>')
    cols = bench_table.COLUMNS
    keep = [i for i, c in enumerate(cols) if c != 'delta p75']
    page.add('<table><tr>' + ''.join(f'<th>{esc(cols[i])}</th>' for i in keep) + '</tr>')
    for r in rows:
        if r[0].startswith('reclaim.'):
            page.add('<tr>' + ''.join(f'<td>{esc(r[i])}</td>' for i in keep) + '</tr>')
    page.add('</table><p class="caption">' + esc(' '.join(n for n in notes if n.startswith('reclaim.'))) + '</p>')


def render(db_path, out):
    t0 = time.monotonic()
    if os.path.isdir(out):
        for name in os.listdir(out):
            if name.endswith(('.png', '.html', '.txt')):
                os.remove(os.path.join(out, name))
        shutil.rmtree(os.path.join(out, 'data'), ignore_errors=True)
    os.makedirs(os.path.join(out, 'data'), exist_ok=True)
    page = Page(out)
    now = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')
    db = None
    if os.path.exists(db_path):
        db = store.connect(db_path)
        st = Store(db)
        nruns, nsamples = st.q('SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM samples)')[0]
        about = (f'database <code>{esc(db_path)}</code> (schema version {store.SCHEMA_VERSION}): '
                 f'{nruns} runs, {nsamples} samples')
    else:
        about = f'no database at <code>{esc(db_path)}</code>'
    page.add(f'<h1>Dying memory cgroups: original vs patched</h1><p class="small">Rendered {now} from {about}.</p>')
    page.add('<nav>' + ''.join(f'<a href="#{a}">{t}</a>' for a, t in NAV) + '</nav>')
    if db is None:
        page.notice(f'There is no runs database at <code>{esc(db_path)}</code> yet: run <code>make soak</code> '
                    'or <code>make kselftest</code> (each run is stored with <code>db/ingest.py RUN_DIR</code>), '
                    'then <code>make report</code>.  Set RUNS_DB to use another database.')
        for a, t in NAV:
            page.add(f'<h2 id="{a}">{t}</h2><p>No data.</p>')
    else:
        soaks, left_out = pick_soaks(st)
        section_answer(page, soaks, st)
        section_dying(page, soaks)
        section_census(page, soaks, st)
        section_table(page, soaks)
        details = len(page.parts)
        section_runs(page, soaks, st, left_out)
        section_cost(page, soaks)
        section_slabinfo(page, soaks, st)
        section_memstat(page, soaks, st)
        section_kselftest(page, st)
        section_flaky(page, st)
        section_oracle(page, st)
        section_bench(page, st)
        section_trend(page, st)
        section_recent(page, st)
        db.close()
        page.parts = fold_sections(page.parts, details)
    bad = page.wait()
    secs = time.monotonic() - t0
    page.add(f'<p class="small">Rendered in {secs:.1f} s by reports/report.py.</p>')
    tmp = os.path.join(out, 'index.html.tmp')
    with open(tmp, 'w') as f:
        f.write('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
                '<title>Dying memory cgroups: original vs patched</title>'
                f'<style>{CSS}{compare.css_kernels()}\n</style></head><body>\n' + '\n'.join(page.parts) + '\n</body></html>\n')
    os.replace(tmp, os.path.join(out, 'index.html'))
    return bad, secs


def render_swap(db_path, out):
    """Render into a new folder beside out and swap it in at the end, under
    a lock: a render that fails (an error, a kill, a database this checkout
    cannot read) leaves the last dashboard as it was, and two renders at
    once take turns."""
    out = os.path.abspath(out)
    parent = os.path.dirname(out)
    os.makedirs(parent, exist_ok=True)
    with open(out + '.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        new = tempfile.mkdtemp(prefix=os.path.basename(out) + '.new-', dir=parent)
        try:
            result = render(db_path, new)
        except BaseException:
            shutil.rmtree(new, ignore_errors=True)
            raise
        old = None
        if os.path.isdir(out):
            old = tempfile.mkdtemp(prefix=os.path.basename(out) + '.old-', dir=parent)
            os.rename(out, os.path.join(old, 'report'))
        os.rename(new, out)
        os.chmod(out, 0o755)
        if old:
            shutil.rmtree(old, ignore_errors=True)
    return result


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--db', help='the runs database (default: $RUNS_DB, else $BUILD/db/runs.sqlite)')
    ap.add_argument('--out', help='where the page goes (default: $BUILD/report)')
    args = ap.parse_args(argv)
    if not shutil.which('gnuplot'):
        print('report: error: gnuplot is missing: install Debian\'s gnuplot-nox (qemu-run/deps.sh report)',
              file=sys.stderr)
        return 1
    db_path = args.db or store.default_path()
    out = args.out or os.path.join(os.environ.get('BUILD') or os.path.join(TOP, 'build'), 'report')
    bad, secs = render_swap(db_path, out)
    for b in bad:
        print(f'report: error: {b}', file=sys.stderr)
    print(f'report: {os.path.join(out, "index.html")} from {db_path} in {secs:.1f} s'
          + (f'; {len(bad)} plots FAILED' if bad else ''))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
