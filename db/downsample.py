#!/usr/bin/env python3
"""Keep the runs database's sampling within a budget: thin the snapshots
of old soaks, keep their figures.

usage: db/downsample.py [--budget N] [--older-than DAYS] [--run ID ...] [--dry-run] [--db PATH]

A soak of days samples every few seconds; a fleet of them every night
grows the database without bound.  This keeps at most --budget snapshots
(default 40) of every soak that started more than --older-than days ago
(default 7; 0: every soak), or of the --run soaks given, and deletes the
samples of the others.  Whatever the budget, it keeps:
  - the first snapshot and the last one of the churn;
  - every snapshot with a note (after=settle, after=drop_caches);
  - the snapshot with the most dying memory cgroups;
so the figures the reports and the fleet trend draw from a soak (the most
dying, dying at the end, after drop_caches) are the same before and after.
The rest of the budget goes to the snapshots nearest to evenly spaced
generations.  The run keeps the count it had in the parameter
downsampled_from, and runs.snapshots says how many are left.

One transaction for the whole call: killed halfway, the database is as it
was.  Running it again with the same budget changes nothing.
"""
import argparse
import datetime
import os
import sys

import store  # noqa: E402

DEFAULT_BUDGET = 40
DEFAULT_OLDER_THAN = 7


def keep_set(snaps, budget):
    """The seqs to keep of one soak's snapshots [(seq, gen, note, dying)],
    in seq order."""
    churn = [s for s in snaps if s[2] is None]
    keep = {s[0] for s in snaps if s[2] is not None}
    if churn:
        keep.add(churn[0][0])
        keep.add(churn[-1][0])
        most = max(churn, key=lambda s: (s[3] if s[3] is not None else -1, -s[0]))
        keep.add(most[0])
    left = budget - len(keep)
    rest = [s for s in churn if s[0] not in keep]
    if left > 0 and rest:
        g0, g1 = churn[0][1], churn[-1][1]
        picked = set()
        for i in range(1, left + 1):
            want = g0 + (g1 - g0) * i / (left + 1)
            best = min((s for s in rest if s[0] not in picked), key=lambda s: (abs(s[1] - want), s[0]),
                       default=None)
            if best is None:
                break
            picked.add(best[0])
        keep |= picked
    return keep


def figures(db, run_id):
    """The figures of a soak that downsampling must not change."""
    return db.execute('SELECT max(dying), (SELECT dying FROM dying WHERE run_id = ? AND note IS NULL '
                      'ORDER BY seq DESC LIMIT 1), (SELECT dying FROM dying WHERE run_id = ? AND note LIKE '
                      "'%drop_caches%' ORDER BY seq DESC LIMIT 1) FROM dying WHERE run_id = ? AND note IS NULL",
                      (run_id, run_id, run_id)).fetchone()


def downsample(db, budget=DEFAULT_BUDGET, older_than=DEFAULT_OLDER_THAN, runs=None, dry_run=False, now=None):
    """Thin the snapshots of the chosen soaks; returns [(run_id, before, after)]
    for the soaks that had more than budget."""
    if budget < 4:
        raise ValueError(f'a budget of {budget} snapshots cannot keep the first, last, most dying and '
                         'after drop_caches ones: give at least 4')
    if runs:
        marks = ','.join('?' * len(runs))
        chosen = db.execute(f"SELECT id FROM runs WHERE kind = 'soak' AND id IN ({marks}) ORDER BY id",
                            list(runs)).fetchall()
        missing = set(runs) - {r[0] for r in chosen}
        if missing:
            raise ValueError(f'no soak run with id {", ".join(map(str, sorted(missing)))}')
    else:
        now = now or datetime.datetime.now(datetime.timezone.utc)
        cut = (now - datetime.timedelta(days=older_than)).strftime('%Y-%m-%dT%H:%M:%SZ')
        chosen = db.execute("SELECT id FROM runs WHERE kind = 'soak' AND started <= ? ORDER BY id",
                            (cut,)).fetchall()
    done = []
    db.execute('BEGIN IMMEDIATE')
    try:
        db.execute('CREATE TEMP TABLE IF NOT EXISTS drop_snaps (run_id INTEGER, seq INTEGER)')
        db.execute('DELETE FROM drop_snaps')
        for (run_id,) in chosen:
            snaps = db.execute('SELECT seq, gen, note, dying FROM dying WHERE run_id = ? ORDER BY seq',
                               (run_id,)).fetchall()
            if len(snaps) <= budget:
                continue
            keep = keep_set(snaps, budget)
            gone = [(run_id, s[0]) for s in snaps if s[0] not in keep]
            db.executemany('INSERT INTO drop_snaps VALUES (?, ?)', gone)
            done.append((run_id, len(snaps), len(snaps) - len(gone)))
        if done and not dry_run:
            before = {r: figures(db, r) for r, _, _ in done}
            db.execute('DELETE FROM samples WHERE (run_id, seq) IN (SELECT run_id, seq FROM drop_snaps)')
            db.execute('DELETE FROM snapshots WHERE (run_id, seq) IN (SELECT run_id, seq FROM drop_snaps)')
            for run_id, n_before, n_after in done:
                db.execute("INSERT OR IGNORE INTO params (run_id, key, value) VALUES (?, 'downsampled_from', ?)",
                           (run_id, str(n_before)))
                db.execute('UPDATE runs SET snapshots = ? WHERE id = ?', (n_after, run_id))
                after = figures(db, run_id)
                if after != before[run_id]:
                    raise RuntimeError(f'run {run_id}: the figures changed from {before[run_id]} to {after}')
        db.execute('ROLLBACK' if dry_run else 'COMMIT')
    except BaseException:
        db.execute('ROLLBACK')
        raise
    return done


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--budget', type=int, default=DEFAULT_BUDGET, help='snapshots kept per soak')
    ap.add_argument('--older-than', type=float, default=DEFAULT_OLDER_THAN,
                    help='only soaks that started more than this many days ago (0: all)')
    ap.add_argument('--run', type=int, action='append', help='only this soak (repeatable)')
    ap.add_argument('--dry-run', action='store_true', help='say what would go, change nothing')
    ap.add_argument('--db', help='the runs database (default: $RUNS_DB or build/db/runs.sqlite)')
    args = ap.parse_args(argv)
    path = args.db or store.default_path()
    try:
        db = store.connect(path, create=False)
    except FileNotFoundError:
        print(f'error: {path}: no runs database (make test or make run makes one)', file=sys.stderr)
        return 2
    try:
        done = downsample(db, args.budget, args.older_than, args.run, args.dry_run)
    except ValueError as e:
        print(f'error: {e}', file=sys.stderr)
        return 2
    verb = 'would keep' if args.dry_run else 'kept'
    for run_id, before, after in done:
        print(f'run {run_id}: {verb} {after} of {before} snapshots')
    print(f'{len(done)} soak(s) over the budget of {args.budget} snapshots'
          + (' (dry run: nothing changed)' if args.dry_run else ''))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
