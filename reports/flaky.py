#!/usr/bin/env python3
"""Failure rates of the kselftest subtests per kernel, and whether a kernel
fails a subtest significantly more often than original.

usage: reports/flaky.py [--db PATH] [--since TIMESTAMP] [--alpha 0.05]

Counts every kselftest run in the runs database (started at or after
--since): per kernel (its name and series hash: "patched@534bd8e2", so two
versions of the series never mix) and subtest, how many times it ran and how many times
its first attempt failed (reruns of flaky subtests aside: the raw rate,
which make repeat measures with no reruns).  For each subtest and each
kernel but original, the one-sided Fisher's exact test asks whether that
kernel fails more often than original; p < alpha fails the check (exit 1).
The nightly runs make repeat REPEAT=20 on both kernels, then this.
"""
import argparse
import os
import sys

import compare as cmp  # noqa: E402 (and db/ on the path)
import store  # noqa: E402


def rates(db, since=''):
    """{(test, subtest): {kernel: (failed, ran)}} from the first attempts
    of every kselftest subtest run started at or after since."""
    out = {}
    rows = db.execute(
        f"SELECT {store.KERNEL_LABEL_SQL}, t.test, t.subtest, coalesce(t.first, t.outcome) AS o, count(*) "
        "FROM kselftest t JOIN runs r ON r.id = t.run_id JOIN kernels k ON k.id = r.kernel_id "
        "WHERE r.kind = 'kselftest' AND r.started >= ? AND t.subtest != '(binary)' "
        "GROUP BY 1, t.test, t.subtest, o", (since,))
    for kernel, test, subtest, outcome, n in rows:
        if outcome not in ('pass', 'fail'):
            continue        # a skip or a miss says nothing about a rate
        f, r = out.setdefault((test, subtest), {}).get(kernel, (0, 0))
        out[(test, subtest)][kernel] = (f + (n if outcome == 'fail' else 0), r + n)
    return out


def compare(table, alpha=0.05, base='original'):
    """[(key, kernel, (kb, nb), (k, n), p, worse)] for every subtest that
    failed at least once, and each kernel that ran it beside base."""
    out = []
    for key in sorted(table):
        per = table[key]
        if base not in per or not any(f for f, _ in per.values()):
            continue
        kb, nb = per[base]
        for kernel in sorted(per):
            if kernel == base:
                continue
            k, n = per[kernel]
            p = cmp.fisher_greater(kb, nb, k, n)
            out.append((key, kernel, (kb, nb), (k, n), p, p < alpha))
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--db', help='the runs database (default: $RUNS_DB, else $BUILD/db/runs.sqlite)')
    ap.add_argument('--since', default='', help='only runs started at or after this (ISO timestamp)')
    ap.add_argument('--alpha', type=float, default=0.05)
    args = ap.parse_args(argv)
    _, db = store.open_existing(args.db, 'flaky', 'run make nightly-flaky first')
    rows = compare(rates(db, args.since), args.alpha)
    if not rows:
        print(f'flaky: no subtest failed in the kselftest runs since {args.since or "the first"}, '
              'or no kernel ran beside original')
        return 0
    print(f'{"test:subtest":52} {"kernel":17} {"original":>12} {"kernel":>12}  p (more failures)')
    for (test, sub), kernel, (kb, nb), (k, n), p, worse in rows:
        print(f'{test + ":" + sub:52} {kernel:17} {f"{kb} of {nb}":>12} {f"{k} of {n}":>12}  {p:.3g}'
              + ('  WORSE' if worse else ''))
    worse = [f'{t}:{s} on {kernel}' for (t, s), kernel, _, _, _, w in rows if w]
    print(f'flaky: {len(worse)} subtests fail significantly more often than on original '
          f'(one-sided Fisher exact test, p < {args.alpha})' + (': ' + ', '.join(worse) if worse else ''))
    return 1 if worse else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
