#!/usr/bin/env python3
"""Store guest runs in the runs database.

usage: db/ingest.py RUN_DIR [RUN_DIR ...] [--db PATH] [--replace] [--batch NAME]

RUN_DIR is a folder written by qemu-run/boot/boot.sh (qemu-run/records/RECORDS.md):
meta, results.log, samples.log, and summary when there is one.  Each run
is stored in one transaction: a run is there whole or not at all, and a
kill halfway leaves the database as it was.  A run is keyed by its folder
name and start time, so storing it again does nothing but bring its
stored summary up to the summary file's last line (--replace stores it
anew).  Snapshots of samples.log cut short or malformed are dropped and
counted, never stored half.  A kselftest run's outcomes are stored as
qemu-run/verdict/tap.py judged them (RUN_DIR/verdict.json, written by
kselftest.sh): ingest keeps verdicts, it does not make them.
A bench run's "@@ result" records go to the bench table; a malformed one
is dropped and counted.  A scenario run (the differential oracle, job
scenario) is a run of kind oracle: its complete checkpoints' values, its
actions, audits and kernel reports go to the oracle_* tables; a
checkpoint cut short is dropped and counted, never stored half.  --batch
puts the runs in a batch (qemu-run/jobs/bench.sh groups a benchmark's
boots and churn soaks so), runs already stored too.

The database: --db, else $RUNS_DB, else $BUILD/db/runs.sqlite.
Prints one line per run; exit status 1 when a run could not be stored.
"""
import argparse
import datetime
import hashlib
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'qemu-run', 'records'))
import insn  # noqa: E402
import kselftest  # noqa: E402
import records  # noqa: E402
import store  # noqa: E402

PROGRESS_SECS = 5


class RunError(Exception):
    pass


def kind_of(job):
    if job == 'kselftest':
        return 'kselftest'
    if job.startswith('soak'):
        return 'soak'
    if job == 'bench':
        return 'bench'
    if job == 'stress':
        return 'stress'
    if job == 'scenario':
        return 'oracle'
    raise RunError(f'job "{job}" leaves nothing to store: only kselftest, soak, bench, stress and scenario '
                   'runs are')


def sha16(chunks):
    h = hashlib.sha256()
    for c in chunks:
        h.update(c)
    return h.hexdigest()[:16]


def build_hashes(kernel, meta):
    """(series_hash, config_hash) of the image that ran: from meta when boot.sh
    wrote them, else from the build folder if it still holds that image."""
    series, config = meta.get('series_key'), meta.get('config_key')
    if series is not None and config is not None:
        return series, config
    kbuild = os.path.join(os.environ.get('BUILD') or os.path.join(store.TOP, 'build'), 'kernel', kernel)
    try:
        with open(os.path.join(kbuild, '.key')) as f:
            if f.read().strip() != meta.get('image_key'):
                return series, config
        if config is None:
            with open(os.path.join(kbuild, '.config'), 'rb') as f:
                config = sha16([f.read()])
    except OSError:
        return series, config
    if series is None:
        pdir = os.path.join(store.TOP, 'patches')
        # The series' patches, the cover letter aside (qemu-run/lib.sh series_key_of).
        patches = sorted(p for p in os.listdir(pdir) if p.endswith('.patch') and not p.startswith('0000-')) \
            if os.path.isdir(pdir) else []
        if kernel == 'original' or not patches:
            series = ''
        else:
            series = sha16(open(os.path.join(pdir, p), 'rb').read() for p in patches)
    return series, config


def base_version(release):
    """6.12.118+ -> 6.12.118; 6.12.0-rc1-dirty -> 6.12.0."""
    if not release:
        return None
    v = ''
    for part in release.split('.'):
        digits = ''
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        v += ('.' if v else '') + digits
        if digits != part:
            break
    return v or None


def read_lines(path):
    if not os.path.exists(path):
        return []
    with open(path, errors='replace') as f:
        return f.read().splitlines()


def kernel_id(db, name, meta, boot):
    image_key = meta.get('image_key') or 'unknown'
    release = boot.get('kernel')
    series, config = build_hashes(name, meta)
    row = db.execute('SELECT id FROM kernels WHERE name = ? AND image_key = ?',
                     (name, image_key)).fetchone()
    if row is None:
        return db.execute('INSERT INTO kernels (name, image_key, release, base_version, series_hash, config_hash) '
                          'VALUES (?, ?, ?, ?, ?, ?)',
                          (name, image_key, release, base_version(release), series, config)).lastrowid
    # The run's meta names the series version of its image (boot.sh): it
    # wins over what an older run or the build folder said.
    db.execute('UPDATE kernels SET release = coalesce(release, ?), base_version = coalesce(base_version, ?), '
               'series_hash = CASE WHEN ? THEN ? ELSE coalesce(series_hash, ?) END, '
               'config_hash = coalesce(config_hash, ?) WHERE id = ?',
               (release, base_version(release), meta.get('series_key') is not None, series, series,
                config, row[0]))
    return row[0]


def store_kselftest(db, run_id, run_dir, kernel, lines):
    """The outcomes tap.py judged (RUN_DIR/verdict.json) and the "# METRIC"
    figures of results.log."""
    path = os.path.join(run_dir, 'verdict.json')
    if not os.path.exists(path):
        raise RunError(f'{path} is missing: judge the run first, as qemu-run/jobs/kselftest.sh does: '
                       f'qemu-run/verdict/tap.py --kernel {kernel} --known qemu-run/verdict/known-issues '
                       f'--expect qemu-run/verdict/expectations --plans qemu-run/verdict/plans '
                       f'--verdict {path} {run_dir}/results.log')
    try:
        judged, _, rows = kselftest.read_verdict(path)
    except (kselftest.VerdictError, OSError) as e:
        raise RunError(str(e))
    if judged != kernel:
        raise RunError(f'{path} judges kernel {judged}, the run is of {kernel}')
    db.executemany('INSERT INTO kselftest (run_id, ord, test, subtest, outcome, reason, expected, surprise, '
                   'first, attempts, failed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
                   [(run_id, i, *row) for i, row in enumerate(rows, 1)])
    metrics = kselftest.parse_run(lines)[3]
    db.executemany('INSERT INTO kselftest_metrics (run_id, ord, test, subtest, attempt, key, value) '
                   'VALUES (?, ?, ?, ?, ?, ?, ?)', [(run_id, i, *m) for i, m in enumerate(metrics, 1)])
    return len(rows)


class Interner:
    """name -> id in a lookup table, cached; new names are inserted inside
    the run's transaction (and vanish with it on a rollback)."""

    def __init__(self, db, table):
        self.db, self.table = db, table
        self.ids = dict((n, i) for i, n in db.execute(f'SELECT id, name FROM {table}'))

    def __getitem__(self, name):
        i = self.ids.get(name)
        if i is None:
            i = self.ids[name] = self.db.execute(f'INSERT INTO {self.table} (name) VALUES (?)', (name,)).lastrowid
        return i


def store_samples(db, run_id, path, label):
    """Store the complete snapshots of samples.log; return the walker (counts, records)."""
    sources, keys = Interner(db, 'sources'), Interner(db, 'keys')
    src_ids, key_ids = sources.ids, keys.ids
    snaps = samples = 0
    t0 = last = time.monotonic()
    with open(path, errors='replace') as f:
        walk = records.Samples(f)
        for seq, gen, t_ms, note, rows in walk:
            data = []
            for s, k, v in rows:
                si = src_ids.get(s)
                if si is None:
                    si = sources[s]
                ki = key_ids.get(k)
                if ki is None:
                    ki = keys[k]
                data.append((run_id, seq, gen, t_ms, si, ki, v))
            db.execute('INSERT INTO snapshots (run_id, seq, gen, t_ms, note, lines) VALUES (?, ?, ?, ?, ?, ?)',
                       (run_id, seq, gen, t_ms, note, len(rows)))
            db.executemany('INSERT INTO samples (run_id, seq, gen, t_ms, source_id, key_id, value) '
                           'VALUES (?, ?, ?, ?, ?, ?, ?)', data)
            snaps += 1
            samples += len(rows)
            walk.last_gen, walk.last_t_ms = gen, t_ms
            now = time.monotonic()
            if now - last >= PROGRESS_SECS:
                last = now
                print(f'ingest: {label}: {snaps} snapshots, {samples} samples '
                      f'({samples / (now - t0):.0f}/s) ...', file=sys.stderr, flush=True)
    walk.snapshots, walk.samples = snaps, samples
    return walk


def store_bench(db, run_id, path):
    """Store the results of a bench run's samples.log; return the walker."""
    with open(path, errors='replace') as f:
        walk = records.BenchResults(f)
        rows = [(run_id, *r, ord_) for ord_, r in enumerate(walk, 1)]
    db.executemany('INSERT INTO bench (run_id, metric, param, rep, value, unit, lim, ord) '
                   'VALUES (?, ?, ?, ?, ?, ?, ?, ?)', rows)
    walk.results = len(rows)
    return walk


ORACLE_TABLES = ('oracle_scenarios', 'oracle_checkpoints', 'oracle_values', 'oracle_acts', 'oracle_audits',
                 'oracle_kmsg')


def store_oracle(db, run_id, path, label):
    """Store a scenario run's samples.log (qemu-run/records/oracle.py):
    each complete checkpoint's values as it is read, then the scenarios,
    their actions, audits and kernel reports.  Returns the walker, with
    .checkpoints and .values stored."""
    oracle = records.oracle_module()
    cps = values = 0
    order = {}
    last = time.monotonic()
    with open(path, errors='replace', newline='') as f:
        walk = oracle.ScenarioRecords(f)
        for scenario, checkpoint, data in walk:
            order[scenario] = order.get(scenario, 0) + 1
            db.execute('INSERT INTO oracle_checkpoints (run_id, scenario, checkpoint, ord, lines) '
                       'VALUES (?, ?, ?, ?, ?)', (run_id, scenario, checkpoint, order[scenario], len(data)))
            db.executemany('INSERT INTO oracle_values (run_id, scenario, checkpoint, cgroup, key, value) '
                           'VALUES (?, ?, ?, ?, ?, ?)',
                           [(run_id, scenario, checkpoint, cg, key, v) for (cg, key), v in data.items()])
            cps += 1
            values += len(data)
            now = time.monotonic()
            if now - last >= PROGRESS_SECS:
                last = now
                print(f'ingest: {label}: {cps} checkpoints, {values} values ...', file=sys.stderr, flush=True)
    audits, kmsg = [], []
    for i, s in enumerate(walk.scenarios.values(), 1):
        end = s.end or {}
        db.execute('INSERT INTO oracle_scenarios (run_id, scenario, ord, file, rc, acts, t_ms) '
                   'VALUES (?, ?, ?, ?, ?, ?, ?)', (run_id, s.name, i, s.file, end.get('rc'), end.get('acts'),
                                                    end.get('t_ms')))
        db.executemany('INSERT INTO oracle_acts (run_id, scenario, seq, line, ms, outcome, cmd) '
                       'VALUES (?, ?, ?, ?, ?, ?, ?)', [(run_id, s.name, *a) for a in s.acts])
        audits += [(s.name, a.checkpoint, a.check, int(a.ok), a.detail) for a in s.audits]
        kmsg += [(s.name, line) for line in s.kmsg]
    db.executemany('INSERT INTO oracle_audits (run_id, ord, scenario, checkpoint, check_name, ok, detail) '
                   'VALUES (?, ?, ?, ?, ?, ?, ?)', [(run_id, i, *a) for i, a in enumerate(audits, 1)])
    db.executemany('INSERT INTO oracle_kmsg (run_id, ord, scenario, line) VALUES (?, ?, ?, ?)',
                   [(run_id, i, *k) for i, k in enumerate(kmsg, 1)])
    walk.checkpoints, walk.values = cps, values
    return walk


def oracle_problems(db):
    """What is wrong with the stored oracle runs, as lines ([]: nothing),
    for db/check.py: each checkpoint has the values its "lines=" said, each
    run the checkpoints it counted (runs.snapshots), and the values,
    actions and comparisons belong to oracle runs."""
    stored = dict(((r, s, c), n) for r, s, c, n in db.execute(
        'SELECT run_id, scenario, checkpoint, count(*) FROM oracle_values GROUP BY 1, 2, 3'))
    bad = []
    for r, s, c, lines in db.execute('SELECT run_id, scenario, checkpoint, lines FROM oracle_checkpoints'):
        n = stored.pop((r, s, c), 0)
        if n != lines:
            bad.append(f'run {r} checkpoint {s}/{c}: {n} values stored, {lines} recorded')
    bad += [f'run {r} checkpoint {s}/{c}: {n} values without their checkpoint'
            for (r, s, c), n in sorted(stored.items())]
    bad += [f'run {r}: {n} checkpoints stored, {want} counted' for r, want, n in db.execute(
        "SELECT r.id, r.snapshots, count(c.checkpoint) FROM runs r LEFT JOIN oracle_checkpoints c ON c.run_id = r.id "
        "WHERE r.kind = 'oracle' GROUP BY r.id HAVING count(c.checkpoint) != r.snapshots")]
    for table in ORACLE_TABLES:
        bad += [f'run {r}: {n} rows of {table} in a {k} run' for r, k, n in db.execute(
            f"SELECT t.run_id, r.kind, count(*) FROM {table} t JOIN runs r ON r.id = t.run_id "
            "WHERE r.kind != 'oracle' GROUP BY t.run_id")]
    bad += [f'comparison of runs {o} and {p}: a {ko} run and a {kp} run, not two oracle runs'
            for o, p, ko, kp in db.execute(
                'SELECT h.orig_run_id, h.patched_run_id, ro.kind, rp.kind FROM oracle_comparisons h '
                'JOIN runs ro ON ro.id = h.orig_run_id JOIN runs rp ON rp.id = h.patched_run_id '
                "WHERE ro.kind != 'oracle' OR rp.kind != 'oracle'")]
    bad += [f'comparison of runs {o} and {p}: {n} rows without their oracle_comparisons row'
            for o, p, n in db.execute(
                'SELECT c.orig_run_id, c.patched_run_id, count(*) FROM oracle_compare c '
                'LEFT JOIN oracle_comparisons h ON h.orig_run_id = c.orig_run_id '
                'AND h.patched_run_id = c.patched_run_id WHERE h.id IS NULL GROUP BY 1, 2')]
    return bad


def delete_run(db, run_id):
    for table in ('samples', 'snapshots', 'kselftest', 'kselftest_metrics', 'bench', 'insn_profile', 'params') \
            + ORACLE_TABLES:
        db.execute(f'DELETE FROM {table} WHERE run_id = ?', (run_id,))
    # A comparison of the run goes with it (reports/oracle.py compare --store makes it again).
    for table in ('oracle_compare', 'oracle_comparisons'):
        db.execute(f'DELETE FROM {table} WHERE orig_run_id = ? OR patched_run_id = ?', (run_id, run_id))
    db.execute('DELETE FROM runs WHERE id = ?', (run_id,))


def set_batch(db, run_id, batch):
    """Put a stored run in a batch (bench.sh: the churn soaks, which soak.sh
    stores itself); a run already in another batch stays there.  Returns
    the batch it was in."""
    db.execute('BEGIN IMMEDIATE')
    try:
        old = db.execute('SELECT batch FROM runs WHERE id = ?', (run_id,)).fetchone()[0]
        if old is None:
            db.execute('UPDATE runs SET batch = ? WHERE id = ?', (batch, run_id))
        db.execute('COMMIT')
    except BaseException:
        db.execute('ROLLBACK')
        raise
    return old


def workload_of(knobs, meta):
    """A run's workload: its knobs and, when the boot had one, the extra
    kernel command line (boot.sh's APPEND, meta append=): a sysctl on the
    command line makes another workload, never mixed with the default.
    A profile that counted from a mark or user space too (meta
    profile_from=, boot.sh FROM_SYNC and PROFILE_USER) is another
    workload too: its totals are not a whole boot's."""
    extra = (meta.get('append') or '').strip()
    out = f'{knobs} append={extra}' if extra else knobs
    since = (meta.get('profile_from') or '').strip()
    return f'{out} profile_from={since}' if since else out


def ingest(db, run_dir, replace=False, db_path='', batch=None):
    """Store one run folder (in batch, when given); return the line to print."""
    run_dir = os.path.abspath(run_dir.rstrip('/'))
    name = os.path.basename(os.path.realpath(run_dir))
    if not os.path.isfile(os.path.join(run_dir, 'meta')):
        raise RunError(f'{run_dir} is not a run folder (no meta file from qemu-run/boot/boot.sh)')
    meta = records.read_meta(os.path.join(run_dir, 'meta'))
    for key in ('kernel', 'job', 'started'):
        if not meta.get(key):
            raise RunError(f'{run_dir}/meta has no {key}=')
    kernel, job, kind = meta['kernel'], meta['job'], kind_of(meta['job'])
    uid = f'{name}@{meta["started"]}'
    results = read_lines(os.path.join(run_dir, 'results.log'))
    boot, done = records.read_boot(results)
    summary = read_lines(os.path.join(run_dir, 'summary'))
    t0 = time.monotonic()

    db.execute('BEGIN IMMEDIATE')
    try:
        old = db.execute('SELECT id FROM runs WHERE uid = ?', (uid,)).fetchone()
        if old and not replace:
            # The one thing that may grow after a run is stored: its summary
            # (kselftest.sh appends the line of every boot of the job to the
            # main run's once the last boot is done).  Storing it again
            # brings that up to date, in the same transaction.
            last = summary[-1] if summary else None
            updated = last is not None and db.execute(
                'UPDATE runs SET summary = ? WHERE id = ? AND summary IS NOT ?',
                (last, old[0], last)).rowcount
            db.execute('COMMIT' if updated else 'ROLLBACK')
            line = f'ingest: {name}: already stored as run {old[0]} (--replace to store it anew)'
            if updated:
                line += '; its summary brought up to date'
            if batch:
                was = set_batch(db, old[0], batch)
                line += (f'; in batch {batch}' if was in (None, batch)
                         else f'; it stays in batch {was}, not {batch}')
            return line
        if old:
            delete_run(db, old[0])
        kid = kernel_id(db, kernel, meta, boot)
        args = meta.get('args', '')
        run_id = db.execute(
            'INSERT INTO runs (uid, kind, kernel_id, job, args, workload, started, wall_secs, mem_mib, smp, '
            'verdict, done_rc, error, snapshots, dropped, summary, cmdline, run_dir, ingested) '
            'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, ?, ?, ?, ?)',
            (uid, kind, kid, job, args, workload_of(args, meta), meta['started'], to_int(meta.get('wall_secs')),
             to_int(meta.get('mem')), to_int(meta.get('smp')), meta.get('verdict') or 'unfinished',
             done and done['rc'], done and done['error'], summary[-1] if summary else None,
             meta.get('cmdline'), run_dir,
             datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ'))).lastrowid
        if batch:
            db.execute('UPDATE runs SET batch = ? WHERE id = ?', (batch, run_id))
        clock = meta.get('clock', 'wall')
        if clock not in ('wall', 'icount'):
            raise RunError(f'{run_dir}/meta: clock={clock} is neither wall nor icount')
        if clock != 'wall':     # the column's default
            db.execute('UPDATE runs SET clock = ? WHERE id = ?', (clock, run_id))
        nodes = to_int(meta.get('nodes'))
        if meta.get('nodes') and (nodes is None or nodes < 1):
            raise RunError(f'{run_dir}/meta: nodes={meta["nodes"]} is not a number of NUMA nodes')
        if nodes and nodes != 1:    # the column's default: no meta before boot.sh's NODES, no LAVA job, had more
            db.execute('UPDATE runs SET nodes = ? WHERE id = ?', (nodes, run_id))
        if meta.get('lava_job'):    # db/lava_collect.py: a lab ran it
            db.execute('UPDATE runs SET lab = ? WHERE id = ?', (f'lava:{meta["lava_job"]}', run_id))
        params = records.kv_words(args)
        if kind == 'kselftest':
            n = store_kselftest(db, run_id, run_dir, kernel, results)
            what = f'kselftest on {kernel}, {n} subtests'
            what += store_profile(db, run_id, run_dir)
            if done is None:
                # The guest never said it was done: the results stop where
                # the channel was cut, and the run says so.
                cut = 'results cut short: no "@@ done" record in results.log'
                db.execute("UPDATE runs SET error = coalesce(error, ?), "
                           "verdict = CASE verdict WHEN 'clean' THEN 'cut' ELSE verdict END WHERE id = ?",
                           (cut, run_id))
                what += f'; {cut}'
        elif kind == 'bench':
            path = os.path.join(run_dir, 'samples.log')
            if not os.path.exists(path):
                raise RunError(f'{path} is missing: a bench run writes its results there')
            w = store_bench(db, run_id, path)
            if w.run is not None:
                params = w.run
            end = w.end or {}
            db.execute('UPDATE runs SET workload = ?, soak_rc = ?, t_ms = ?, snapshots = ?, dropped = ? '
                       'WHERE id = ?', (workload_of(w.run_line or args, meta), end.get('rc'), to_int(end.get('t_ms')),
                                        w.results, w.dropped, run_id))
            what = f'bench on {kernel}, {w.results} results'
            what += store_profile(db, run_id, run_dir)
            if w.dropped:
                what += f'; {w.dropped} results dropped ({"; ".join(w.problems[:3])})'
            if w.end is None:
                what += '; no "@@ end" record'
        elif kind == 'stress':
            # guest/stress.c: "@@ run" knobs, progress, and the "@@ end"
            # record with the run's totals, stored as end.* params.
            path = os.path.join(run_dir, 'samples.log')
            if not os.path.exists(path):
                raise RunError(f'{path} is missing: a stress run writes its records there')
            with open(path, errors='replace') as f:
                w = records.Samples(f)
                for _ in w:
                    pass
            if w.run is not None:
                params = dict(w.run)
            end = w.end or {}
            params.update({f'end.{k}': str(v) for k, v in end.items() if k != 'rc'})
            db.execute('UPDATE runs SET workload = ?, soak_rc = ?, t_ms = ? WHERE id = ?',
                       (workload_of(w.run_line or args, meta), end.get('rc'), to_int(end.get('t_ms')), run_id))
            what = f'stress on {kernel}, {len(end) - 1 if end else 0} totals'
            what += store_profile(db, run_id, run_dir)
            if w.end is None:
                what += '; no "@@ end" record'
        elif kind == 'oracle':
            path = os.path.join(run_dir, 'samples.log')
            if not os.path.exists(path):
                raise RunError(f'{path} is missing: a scenario run writes its records there')
            w = store_oracle(db, run_id, path, name)
            if w.run is not None:
                params = w.run
            end = w.end or {}
            db.execute('UPDATE runs SET workload = ?, soak_rc = ?, t_ms = ?, snapshots = ?, dropped = ? '
                       'WHERE id = ?', (workload_of(w.run_line or args, meta), end.get('rc'), end.get('t_ms'),
                                        w.checkpoints, w.dropped, run_id))
            acts = sum(len(s.acts) for s in w.scenarios.values())
            what = (f'scenario run on {kernel}, {len(w.scenarios)} scenarios, {w.checkpoints} checkpoints, '
                    f'{w.values} values, {acts} acts, {w.audit_failures()} audit failures, {w.kmsg_count()} kmsg')
            what += store_profile(db, run_id, run_dir)
            if w.dropped:
                why = [x for x in w.problems if x.startswith('checkpoint ')][:3]
                what += f'; {w.dropped} checkpoints dropped ({"; ".join(why)})'
            if w.malformed:
                what += f'; {w.malformed} malformed lines'
            if w.end is None:
                what += '; no "@@ end" record'
        else:
            path = os.path.join(run_dir, 'samples.log')
            if not os.path.exists(path):
                raise RunError(f'{path} is missing: a soak run writes its samples there')
            w = store_samples(db, run_id, path, name)
            if w.run is not None:
                params = w.run
            end = w.end or {}
            gens = to_int(end.get('gens'))
            if gens is None and w.snapshots:
                gens = w.last_gen
            t_ms = to_int(end.get('t_ms'))
            if t_ms is None and w.snapshots:
                t_ms = w.last_t_ms
            db.execute('UPDATE runs SET workload = ?, soak_rc = ?, gens = ?, t_ms = ?, snapshots = ?, dropped = ? '
                       'WHERE id = ?', (workload_of(w.run_line or args, meta), end.get('rc'), gens, t_ms,
                                        w.snapshots, w.dropped, run_id))
            what = f'soak on {kernel}, {w.snapshots} snapshots, {w.samples} samples'
            what += store_profile(db, run_id, run_dir)
            if w.dropped:
                what += f'; {w.dropped} snapshots dropped ({"; ".join(w.problems[:3])})'
            if w.end is None:
                what += '; no "@@ end" record'
        if meta.get('swap'):    # boot.sh SWAP: the size of the guest's swap disk
            params = dict(params, swap=meta['swap'])
        db.executemany('INSERT INTO params (run_id, key, value) VALUES (?, ?, ?)',
                       [(run_id, k, v) for k, v in params.items()])
        db.execute('COMMIT')
    except BaseException:
        db.execute('ROLLBACK')
        raise
    secs = max(time.monotonic() - t0, 1e-6)
    rate = f', {w.samples / secs / 1000:.0f}k samples/s' if kind == 'soak' else ''
    return f'ingest: {name}: run {run_id}, {what} in {secs:.1f} s{rate} -> {db_path}'


def store_profile(db, run_id, run_dir):
    """Store the run's instruction profile (boot.sh PROFILE=1: insn.txt), of
    any job; returns the words for the ingest line."""
    if not os.path.exists(os.path.join(run_dir, 'insn.txt')):
        return ''
    try:
        funcs = insn.profile(run_dir)
    except (insn.ProfileError, OSError) as e:
        raise RunError(f'the instruction profile cannot be stored: {e}')
    db.executemany('INSERT INTO insn_profile (run_id, function, insns, calls) VALUES (?, ?, ?, ?)',
                   [(run_id, k, v, c) for k, (v, c) in funcs.items()])
    return f', an instruction profile of {len(funcs)} functions'


def to_int(s):
    try:
        return int(s)
    except (TypeError, ValueError):
        return None


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 epilog='The database: --db, else $RUNS_DB, else $BUILD/db/runs.sqlite.')
    ap.add_argument('run_dirs', nargs='+', metavar='RUN_DIR')
    ap.add_argument('--db', help='the database file (created when missing)')
    ap.add_argument('--replace', action='store_true', help='store a run again if it is there already')
    ap.add_argument('--batch', help='put the runs in this batch (qemu-run/jobs/bench.sh), stored ones too')
    args = ap.parse_args(argv)
    path = args.db or store.default_path()
    db = store.connect(path)
    status = 0
    for d in args.run_dirs:
        try:
            print(ingest(db, d, args.replace, path, args.batch), flush=True)
        except (RunError, OSError) as e:
            print(f'ingest: error: {e}', file=sys.stderr)
            status = 1
    db.close()
    return status


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
