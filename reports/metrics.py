#!/usr/bin/env python3
"""The figures kselftest subtests print ("# METRIC subtest key=value"),
per kernel: median [min-max] over every stored run.

usage: reports/metrics.py [--db PATH] [--subtest NAME] [--since TIMESTAMP]

A kernel is its name and the series hash of its image (kernels.series_hash,
the first 8 digits; "?" when unknown), so two versions of the series never
mix under "patched".  Only first attempts count (reruns of flaky subtests
print their figures again).
"""
import argparse
import os
import sys

from compare import short_num as fmt, spread  # noqa: E402 (and db/ on the path)
import store  # noqa: E402


def figures(db, subtest=None, since=''):
    """{(test, subtest, key): {kernel label: [values]}}"""
    out = {}
    q = (f"SELECT m.test, m.subtest, m.key, {store.KERNEL_LABEL_SQL}, m.value "
         "FROM kselftest_metrics m JOIN runs r ON r.id = m.run_id JOIN kernels k ON k.id = r.kernel_id "
         "WHERE m.attempt = 1 AND r.started >= ?")
    args = [since]
    if subtest:
        q += ' AND m.subtest = ?'
        args.append(subtest)
    for test, sub, key, kernel, value in db.execute(q + ' ORDER BY r.started, m.ord', args):
        out.setdefault((test, sub, key), {}).setdefault(kernel, []).append(value)
    return out


def table(figs):
    lines = []
    for (test, sub, key), per in sorted(figs.items()):
        for kernel, vals in sorted(per.items()):
            lines.append(f'{sub:32} {key:10} {kernel:17} {len(vals):3}  {spread(vals, fmt)}')
    return lines


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--db', help='the runs database (default: $RUNS_DB, else $BUILD/db/runs.sqlite)')
    ap.add_argument('--subtest')
    ap.add_argument('--since', default='')
    args = ap.parse_args(argv)
    _, db = store.open_existing(args.db, 'metrics', 'run a kselftest first (make kselftest)')
    figs = figures(db, args.subtest, args.since)
    if not figs:
        print('metrics: no figures stored' + (f' for {args.subtest}' if args.subtest else ''))
        return 1
    print(f'{"subtest":32} {"key":10} {"kernel":17} {"n":>3}  median [min-max]')
    for line in table(figs):
        print(line)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
