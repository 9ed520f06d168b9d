#!/usr/bin/env python3
"""Check the runs database and say what it holds.

usage: db/check.py [--db PATH]

Checks: sqlite's integrity and foreign keys, the schema version, and that
every run is whole (each snapshot has the samples its "lines=" said, each
run the snapshots, or for a bench run the results, it counted).  Prints one line per kernel and kind, then
one summary line; exit status 1 on any problem.
"""
import argparse
import os
import sys

import ingest  # noqa: E402
import store  # noqa: E402


def problems(db):
    """What is wrong with an open database, as lines; [] when nothing is."""
    bad = [f'integrity: {r[0]}' for r in db.execute('PRAGMA integrity_check') if r[0] != 'ok']
    bad += [f'foreign key: table {r[0]} row {r[1]} points to a missing {r[2]}'
            for r in db.execute('PRAGMA foreign_key_check')]
    # One pass over the samples (the long table), not one per snapshot.
    stored = dict(((r, q), n) for r, q, n in db.execute(
        'SELECT run_id, seq, count(*) FROM samples GROUP BY run_id, seq'))
    for run_id, seq, lines in db.execute('SELECT run_id, seq, lines FROM snapshots'):
        n = stored.pop((run_id, seq), 0)
        if n != lines:
            bad.append(f'run {run_id} snapshot {seq}: {n} samples stored, {lines} recorded')
    bad += [f'run {r} snapshot {q}: {n} samples without their snapshot' for (r, q), n in sorted(stored.items())]
    bad += [f'run {r[0]}: {r[2]} snapshots stored, {r[1]} counted' for r in db.execute(
        "SELECT r.id, r.snapshots, count(sn.seq) FROM runs r LEFT JOIN snapshots sn ON sn.run_id = r.id "
        "WHERE r.kind NOT IN ('bench', 'oracle') GROUP BY r.id HAVING count(sn.seq) != r.snapshots")]
    # An oracle run counts its checkpoints there (ingest.oracle_problems).
    bad += ingest.oracle_problems(db)
    # A bench run counts its results in runs.snapshots.
    bad += [f'run {r[0]}: {r[2]} bench results stored, {r[1]} counted' for r in db.execute(
        "SELECT r.id, r.snapshots, count(b.rep) FROM runs r LEFT JOIN bench b ON b.run_id = r.id "
        "WHERE r.kind = 'bench' GROUP BY r.id HAVING count(b.rep) != r.snapshots")]
    bad += [f'run {r[0]}: {r[1]} bench results of a {r[2]} run' for r in db.execute(
        "SELECT r.id, count(*), r.kind FROM bench b JOIN runs r ON r.id = b.run_id "
        "WHERE r.kind != 'bench' GROUP BY r.id")]
    return bad


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--db', help='the database (default: $RUNS_DB, else $BUILD/db/runs.sqlite)')
    path = ap.parse_args(argv).db or store.default_path()
    if not os.path.exists(path):
        print(f'db-check: no database at {path} yet: runs are stored by db/ingest.py RUN_DIR '
              '(make kselftest and make soak do it)')
        return 0
    db = store.connect(path)
    for kernel, kind, n, last in db.execute(
            'SELECT kernel, kind, count(*), max(started) FROM run_list GROUP BY kernel, kind ORDER BY kernel, kind'):
        print(f'  {kernel:9} {kind:9} {n:5} runs, latest {last}')
    bad = problems(db)
    for b in bad:
        print(f'db-check: {b}')
    runs, samples, results = db.execute('SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM samples), '
                                        '(SELECT count(*) FROM bench)').fetchone()
    version = db.execute('PRAGMA user_version').fetchone()[0]
    db.close()
    size = os.path.getsize(path) / 1e6
    print(f'db-check: {path}: schema version {version}, {runs} runs, {samples} samples, '
          f'{results} bench results, {size:.1f} MB: '
          + (f'{len(bad)} PROBLEMS' if bad else 'consistent'))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
