"""The measured tables of RESULTS.md other than the soak's, each from the runs
database (reports/readme.py writes them between their markers).

Every block names the runs it comes from (run ids, dates) and the command
that makes more of them; a block with no run in the database says so and
names that command.  A kernel is its label (db/store.py KERNEL_LABEL_SQL:
"patched@26311f42"), never its name alone, and the legend under each block
says which version of the series each hash is (reports/series-names, and
the hash of this checkout's patches/).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
import compare  # noqa: E402,F401 (db/ and qemu-run/kernel/ on the path)
import bench_table  # noqa: E402
import flaky  # noqa: E402
import insn_profile  # noqa: E402
import metrics  # noqa: E402
import offline_axes  # noqa: E402
import store  # noqa: E402
from kernels import KSELFTESTS  # noqa: E402

SERIES_NAMES = os.path.join(HERE, 'series-names')
LABEL = store.KERNEL_LABEL_SQL


def series_names(path=SERIES_NAMES):
    """{8-digit hash: what it is} from reports/series-names ("HASH text"
    lines, # comments), plus this checkout's series."""
    names = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith('#'):
                h, _, text = line.partition(' ')
                names[h[:8]] = text.strip()
    cur = store.current_series()[:8]
    names[cur] = (names[cur] + '; ' if cur in names else '') + "this checkout's patches/"
    return names


def legend(labels, names=None):
    """The line under a block that says what each patched@HASH is."""
    names = names if names is not None else series_names()
    parts = []
    for lab in dict.fromkeys(labels):
        if '@' not in lab:
            continue
        h = lab.split('@', 1)[1]
        parts.append(f'`{lab}`: {names.get(h, "a series version not named in reports/series-names")}')
    return ('Series: ' + '; '.join(parts) + '.') if parts else ''


def spread(vals):
    return compare.spread(vals, metrics.fmt)


def table(header, rows):
    out = ['| ' + ' | '.join(header) + ' |', '|' + '|'.join(' --- ' for _ in header) + '|']
    out += ['| ' + ' | '.join(str(c) if c not in (None, '') else ' ' for c in r) + ' |' for r in rows]
    return out


def label_order(labels, newest=()):
    """original first, then the labels of newest (newest first), then the rest."""
    rank = {lab: i for i, lab in enumerate(newest)}
    return sorted(labels, key=lambda lab: (lab != 'original', rank.get(lab, len(rank)), lab))


def patched_by_age(db, kind=None):
    """Labels of the series kernels (of runs of kind, else any): this
    checkout's series first when it has runs, then the others, the one with
    the newest run first."""
    rows = db.execute(f"SELECT {LABEL}, max(r.started) FROM runs r JOIN kernels k ON k.id = r.kernel_id "
                      "WHERE k.name != 'original' AND (? IS NULL OR r.kind = ?) GROUP BY 1 ORDER BY 2 DESC",
                      (kind, kind)).fetchall()
    mine = store.kernel_label('patched', store.current_series())
    return sorted((r[0] for r in rows), key=lambda lab: lab != mine)


def block_kselftest(db):
    """The newest full kselftest run of each kernel, and its 16-vCPU test_kmem boot."""
    full = 'tests=' + ','.join(KSELFTESTS) + ' %'
    rows = db.execute(
        f"SELECT r.id, {LABEL}, r.started, r.smp, r.wall_secs, r.verdict, r.summary, r.args "
        "FROM runs r JOIN kernels k ON k.id = r.kernel_id WHERE r.kind = 'kselftest' "
        "AND coalesce(r.cmdline, '') NOT LIKE '%\\_ONLY=%' ESCAPE '\\' "
        "AND (r.args LIKE ? OR (r.smp >= 16 AND r.args LIKE 'tests=test\\_kmem %' ESCAPE '\\')) "
        "ORDER BY r.started DESC, r.id DESC", (full,)).fetchall()
    picked = {}
    for r in rows:
        picked.setdefault((r[1], r[3] >= 16), r)
    if not picked:
        return ['No full kselftest run in this database: `make test` (or `make kselftest KERNEL=NAME`) '
                'stores one.']
    # One series beside original (this checkout's, else the newest with a
    # full run): older versions are history.
    full_by_age = sorted((lab for lab, many in picked if not many and lab != 'original'),
                         key=lambda lab: picked[(lab, False)][2], reverse=True)
    mine = store.kernel_label('patched', store.current_series())
    newest = mine if mine in full_by_age else next(iter(full_by_age), None)
    keep = [k for k in picked if k[0] in ('original', newest)]
    keep.sort(key=lambda k: (k[0] != 'original', k[1]))
    out = ['| kernel | run | started | vCPUs | boot, s | verdict | summary |',
           '| --- | --- | --- | --- | --- | --- | --- |']
    for k in keep:
        run_id, lab, started, smp, wall, verdict, summary, _ = picked[k]
        out.append(f'| {lab} | {run_id} | {started} | {smp} | {wall if wall is not None else "?"} | {verdict} '
                   f'| {(summary or "no summary").replace("|", "/")} |')
    out.append('')
    out.append('A full run is every kselftest of `make kselftest` on 2 vCPUs, and test_kmem alone on 16 '
               '(test_percpu_basic needs them); "boot, s" is the guest\'s whole boot, host wall clock.  '
               'Per subtest: the dashboard\'s matrix (`make report`).')
    lg = legend([k[0] for k in keep])
    return out + ([lg] if lg else [])


def block_metrics(db):
    """The figures subtests print (# METRIC), per kernel label."""
    figs = metrics.figures(db)
    if not figs:
        return ['No `# METRIC` figure in this database: `APPEND=MEMCG_REPARENT_ONLY=test_reparent_socket_limit '
                'REPEAT=8 NOBUILD=1 qemu-run/jobs/kselftest.sh KERNEL test_memcg_reparent_pins` stores eight.']
    order = patched_by_age(db)
    labels = set()
    rows = []
    for (test, sub, key), per in sorted(figs.items()):
        for lab in label_order(per, order):
            vals = per[lab]
            labels.add(lab)
            rows.append([f'{test}:{sub}', key, lab, len(vals), spread(vals)])
    runs = db.execute("SELECT count(DISTINCT m.run_id), min(r.started), max(r.started) FROM kselftest_metrics m "
                      "JOIN runs r ON r.id = m.run_id WHERE m.attempt = 1").fetchone()
    out = [f'From {runs[0]} kselftest runs between {runs[1]} and {runs[2]} (first attempts only): '
           '`python3 reports/metrics.py`.  test_reparent_socket_limit: `dead_ms`, 64 MiB through the sockets of '
           'a removed child that sat at its memory.max; `ref_ms`, the same through a live sibling\'s; '
           '`oom`, `oom_kill`, `max`: the parent\'s memory.events during the transfer.  test_reparent_dirty_cgwb: '
           '`release_s`, seconds from the rmdir of a child that left a dirty file to its release (the wait ends at '
           '20 s), `released` 1 or 0; `written_pages`, pages written from the rmdir to the release (or the end '
           'of the wait), of the `dirtied_pages` the child left dirty.', '']
    out += table(['test:subtest', 'figure', 'kernel', 'n', 'median [min-max]'], rows)
    lg = legend(label_order(labels, order))
    return out + ([''] + [lg] if lg else [])


def block_flaky(db):
    """First-attempt failure rates per kernel label, against original."""
    rates = flaky.rates(db)
    rows = flaky.compare(rates)
    if not rows:
        return ['No subtest failed in a stored kselftest run beside original: `NOBUILD=1 make nightly-flaky` '
                'runs the flaky-listed tests 20 times per kernel.']
    order = [lab for lab in patched_by_age(db, 'kselftest') if any(r[1] == lab for r in rows)]
    newest = order[0] if order else None
    rows = [r for r in rows if r[1] == newest]
    n_runs = db.execute("SELECT count(*), min(started), max(started) FROM runs WHERE kind = 'kselftest'").fetchone()
    out = [f'First attempts of every subtest in the {n_runs[0]} stored kselftest runs ({n_runs[1]} to '
           f'{n_runs[2]}; `make nightly-flaky` adds 20 per kernel), subtests that failed at least once, '
           f'original against this checkout\'s series (else the newest that ran): `python3 reports/flaky.py` (all versions).  p: one-sided Fisher '
           'exact test that the series fails more often; p < 0.05 fails the nightly.', '']
    out += table(['test:subtest', 'original fails', f'{newest} fails', 'p'],
                 [[f'{t}:{s}', f'{kb} of {nb}', f'{k} of {n}', f'{p:.3g}' + (' **worse**' if w else '')]
                  for (t, s), _, (kb, nb), (k, n), p, w in rows])
    lg = legend([newest])
    return out + ([''] + [lg] if lg else [])


def bench_batch_lines(db, batch, head, rows, notes):
    """A bench batch's table as reports/bench_table.py --markdown prints
    it, the command before it and the legend of its series after it."""
    lab = db.execute(f"SELECT DISTINCT {LABEL} FROM runs r JOIN kernels k ON k.id = r.kernel_id "
                     "WHERE r.batch = ? AND k.name != 'original'", (batch,)).fetchall()
    out = [f'`python3 reports/bench_table.py --batch {batch} --markdown`:', '',
           bench_table.render(head, rows, notes, True)]
    lg = legend([r[0] for r in lab])
    return out + ([''] + [lg] if lg else [])


def block_bench(db):
    """The newest bench batch with the fast paths that gives their changes
    an interval (3 values a side: a smoke run of one boot and one rep does
    not), and ran all of them (not fast_tests=some), as
    reports/bench_table.py --markdown prints it."""
    got = bench_table.newest_with_interval(db, 'fast', every_fast=True)
    if not got:
        return ['No bench batch with 3 values a side in this database: `NOBUILD=1 make bench` stores one '
                '(about 18 minutes).']
    return bench_batch_lines(db, *got)


def block_bench_jobs(db):
    """The job churn's rates alone (make bench-jobs): the newest bench batch
    that ran fast.jobs and no other fast path but the control, and gives
    its change an interval, as reports/bench_table.py --markdown prints it.
    Their medians move from boot to boot more than the other fast paths',
    so these batches have many boots of each kernel."""
    for batch in bench_table.batches(db, 'fast'):
        ran = bench_table.fast_tests_of(db, batch)
        if not ran or 'jobs' not in ran or not ran <= {'jobs', 'spin'}:
            continue
        head, rows, notes = bench_table.table(db, batch)
        if not bench_table.has_interval(rows, 'fast.jobs'):
            continue
        return bench_batch_lines(db, batch, head, rows, notes)
    return ['No bench batch of fast.jobs alone in this database: `NOBUILD=1 make bench-jobs` stores one '
            '(about 11 minutes).']


def block_reclaim(db):
    """Reclaim after a rmdir (bench part "reclaim"): for the two series
    versions with the newest such batches, the newest batch of each that
    gives the changes an interval, as bench_table.py --markdown prints it."""
    out, seen = [], []
    for batch in bench_table.batches(db, 'reclaim'):
        labels = [r[0] for r in db.execute(
            f"SELECT DISTINCT {LABEL} FROM runs r JOIN kernels k ON k.id = r.kernel_id "
            "WHERE r.batch = ? AND r.kind = 'bench' AND k.name != 'original'", (batch,))]
        if len(labels) != 1 or labels[0] in seen:
            continue
        head, rows, notes = bench_table.table(db, batch)
        if not bench_table.has_interval(rows, 'reclaim.'):
            continue
        seen.append(labels[0])
        out += ([''] if out else []) + [
            f'`python3 reports/bench_table.py --batch {batch} --markdown` ({labels[0]}):', '',
            bench_table.render(head, rows, notes, True)]
        if len(seen) == 2:
            break
    if not out:
        return ["No reclaim batch with 3 values a side in this database: `NOBUILD=1 ROUNDS=2 make bench "
                "BENCH='parts=reclaim'` stores one (about 2 minutes)."]
    lg = legend(seen)
    return out + ([''] + [lg] if lg else [])


def block_stress(db):
    """The newest stress run of each kernel label: its end record."""
    rows = db.execute(f"SELECT r.id, {LABEL}, r.started, r.wall_secs, r.verdict, r.soak_rc, r.summary "
                      "FROM runs r JOIN kernels k ON k.id = r.kernel_id WHERE r.kind = 'stress' "
                      "ORDER BY r.started DESC, r.id DESC").fetchall()
    if not rows:
        return ['No stress run in this database: `make stress` (debug kernel, 30 minutes; `STRESS_SECS` '
                'for another length) stores one.']
    picked = {}
    for r in rows:
        picked.setdefault(r[1], r)
    keys = ('t_ms', 'cgroups_created', 'tasks', 'ooms', 'oom_kills', 'pages_moved', 'swap_peak_kb',
            'failures', 'dying_end', 'dying_drop', 'mem_end_kb')
    out = table(['kernel', 'run', 'started', 'wall, s', 'verdict', 'rc'] + [f'end.{k}' for k in keys], [
        [lab, r[0], r[2], r[3], r[4], r[5]] + [
            dict(db.execute('SELECT key, value FROM params WHERE run_id = ?', (r[0],)).fetchall())
            .get(f'end.{k}', '') for k in keys] for lab, r in picked.items()])
    out += ['', 'The guest stress tool\'s end record (`qemu-run/records/RECORDS.md`); a kernel report or an '
            'unfinished boot makes the verdict "bad".']
    lg = legend(list(picked))
    return out + ([lg] if lg else [])


def block_offline_axes(db):
    """The offline cost on its axes (reports/offline_axes.py --markdown)."""
    rows = offline_axes.table(db, '')
    if not rows:
        return ['No batch of the offline axes in this database: `NOBUILD=1 make bench-offline` stores them.']
    return ['`python3 reports/offline_axes.py --markdown` (batches of `make bench-offline`, instruction-count '
            'mode):', '', offline_axes.render(rows, True), '',
            'release: rmdir until the memory css is released ("not released": still dying at timeout_ms, '
            'pinned by its page cache or its dead children); stall: the longest another task waited for '
            'cgroup_mutex within the probe window after the rmdir; rmdir: the syscall.']


def block_irqsoff(db):
    """The longest irqs-off section at offline (reports/offline_axes.py --irqsoff --markdown)."""
    rows = offline_axes.table(db, '', irqsoff=True)
    if not rows:
        return ['No batch of kernels with the irqsoff tracer in this database: `make bench-irqsoff` stores them.']
    return ['`python3 reports/offline_axes.py --irqsoff --markdown` (batches of `make bench-irqsoff`, '
            'instruction-count mode: a microsecond is 250 instructions):', '', offline_axes.render(rows, True), '',
            'irqs off in memcg offline: the longest section with interrupts off that ended in memcg offline '
            '(objcg_lock, and with the series the lru_locks and the splice), from the preemptirq trace events; '
            'anywhere: the longest in the guest in the same window, for scale; release: as above, slowed by '
            'the tracing.']


def profiled_runs(db):
    """The newest profiled bench workload that two clean boots of each
    kernel ran (insn_profile rows with calls, qemu-run/jobs/insn-profile.sh;
    the workload but its tag=): (label, workload, [original run ids],
    [patched run ids]), the newest 3 of each, the patched ones of the newest
    patched kernel that ran it.  A workload with fewer boots (a probe of
    other reps) is passed over for an older one; a profile of another job
    (PROFILE=1 with kselftest.sh) is no bench workload.  When no workload
    has two a side, the newest patched one's (the caller says too few);
    None if there is no patched profile at all."""
    q = (f"SELECT r.id, {LABEL}, r.workload FROM runs r JOIN kernels k ON k.id = r.kernel_id "
         "WHERE r.verdict = 'clean' AND r.kind = 'bench' "
         "AND r.id IN (SELECT run_id FROM insn_profile WHERE calls IS NOT NULL) "
         "AND k.name {} 'original' ORDER BY r.started DESC, r.id DESC")
    def knobs(w):     # tag= names the invocation, not the workload
        return ' '.join(x for x in w.split() if not x.startswith('tag='))
    patched = [(rid, label, knobs(w)) for rid, label, w in db.execute(q.format('!='))]
    original = [(rid, knobs(w)) for rid, _, w in db.execute(q.format('='))]
    if not patched:
        return None
    first = None
    for _, label, workload in patched:
        b = [rid for rid, lab, w in patched if lab == label and w == workload][:3]
        a = [rid for rid, w in original if w == workload][:3]
        first = first or (label, workload, a, b)
        if len(a) >= 2 and len(b) >= 2:
            return label, workload, a, b
    return first


def block_insn(db):
    """Where the series' extra instructions go: the functions whose kernel
    instructions differ, ranges apart, between the newest profiling boots
    of original and of the newest patched kernel (qemu-run/jobs/insn-profile.sh)."""
    got = profiled_runs(db)
    if not got or len(got[2]) < 2 or len(got[3]) < 2:
        return ['No two profiling boots of each kernel with one workload in this database: '
                '`NOBUILD=1 qemu-run/jobs/insn-profile.sh KERNEL parts=fast fast_reps=1 '
                'fast_tests=charge,filefault,fault,spin`, twice for original and twice for patched, stores them.']
    label, workload, a, b = got
    pa, pb = insn_profile.db_profiles(db, a), insn_profile.db_profiles(db, b)
    ta, tb = insn_profile.totals(pa), insn_profile.totals(pb)
    rows = insn_profile.apart_rows(pa, pb)
    total = sum(r[0] for r in rows)
    ids = ', '.join(map(str, a)) + ' (original) and ' + ', '.join(map(str, b)) + f' ({label})'
    what = ' '.join(w for w in workload.split() if w.split('=')[0] in ('parts', 'fast_reps', 'fast_tests'))
    # a profile counted from a mark (FROM_SYNC) or with user space
    # (PROFILE_USER): ingest.workload_of() keeps it apart in the workload
    since = next((w.split('=', 1)[1] for w in workload.split() if w.startswith('profile_from=')), '')
    parts = since.split(',') if since else []
    mark = next((p[len('sync:'):] for p in parts if p.startswith('sync:')), None)
    env = (f'FROM_SYNC={mark} ' if mark else '') + ('PROFILE_USER=1 ' if 'user' in parts else '')
    if not parts:
        counted = 'Kernel instructions per boot, the boot and idle included'
    else:
        counted = ((f"Instructions from the guest's sync(2) number {mark} on" if mark else 'Instructions per boot') +
                   (', user space included' if 'user' in parts else ", the kernel's"))
    out = [f'Runs {ids}: `{env}qemu-run/jobs/insn-profile.sh KERNEL {what}` boots; '
           f'`qemu-run/jobs/insn-profile.sh --diff --a RUN... --b RUN...` prints the same from their folders.',
           '',
           f'{counted}: original {min(ta)}-{max(ta)}, '
           f'{label} {min(tb)}-{max(tb)}. {len(rows)} functions have ranges apart; their differences sum to '
           f'{total:+.0f}; those on the memcg paths repeat to within a few hundred instructions from boot to '
           'boot, others (the scheduler\'s balancing, the entropy pool) move by a few % and can fall apart '
           'by chance with few boots. The 15 largest:',
           '',
           '| function | patched - original (mean) | calls, original | calls, patched | per call, original '
           '| per call, patched |',
           '| --- | --- | --- | --- | --- | --- |']
    for d, k, va, vb, xa, xb in rows[:15]:
        out.append(f'| {k} | {d:+.0f} | {"-" if xa is None else f"{xa:.0f}"} | {"-" if xb is None else f"{xb:.0f}"} '
                   f'| {insn_profile.per_call(sum(va) / len(va), xa)} | {insn_profile.per_call(sum(vb) / len(vb), xb)} |')
    out += ['', 'calls: the runs of the block at the function\'s first instruction (a function that costs more '
            'per call got longer; one called more often is on more paths); "-": not counted, or a function '
            'with no entry block in the profile.']
    return out


BLOCKS = {
    'measured-kselftest': block_kselftest,
    'measured-metrics': block_metrics,
    'measured-flaky': block_flaky,
    'measured-bench': block_bench,
    'measured-bench-jobs': block_bench_jobs,
    'measured-offline-axes': block_offline_axes,
    'measured-irqsoff': block_irqsoff,
    'measured-insn': block_insn,
    'measured-reclaim': block_reclaim,
    'measured-stress': block_stress,
}
