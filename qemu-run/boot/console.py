#!/usr/bin/env python3
"""Classify a guest run from its console and results channel.

usage: console.py [--timed-out SECS] console.log results.log

Exit status 0 when the run is clean: the guest reported "@@ done" on the
results channel and the console holds no kernel report.  Otherwise status 1
and, per finding, its kind, the offending console lines and the last lines of
the console.

Only kernel messages count: a report line must carry the printk timestamp
("[   12.345678] "), so a test that prints "BUG" itself is not a finding.
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'records'))
import records  # noqa: E402

# (kind, regex on the message after the timestamp).  First match wins, so
# specific reports come before the generic ones they also match.
REPORTS = [
    ('kasan', r'BUG: KASAN: '),
    ('kfence', r'BUG: KFENCE: '),
    ('lockdep', r'WARNING: possible (circular|recursive) locking|'
                r'WARNING: inconsistent lock state|'
                r'WARNING: suspicious RCU usage|'
                r'WARNING: lock held when returning to user space|'
                r'WARNING: bad unlock balance|'
                r'WARNING: held lock freed|'
                r'INFO: possible irq lock inversion|'
                r'WARNING: .*-safe -> .*-unsafe lock order|'
                r'BUG: sleeping function called from invalid context|'
                r'BUG: scheduling while atomic|'
                r'BUG: MAX_LOCK|BUG: looking up invalid subclass'),
    ('list-corruption', r'list_(add|del) corruption|list_del corruption'),
    ('debugobjects', r'ODEBUG: '),
    ('bad-page', r'BUG: Bad page (state|map)|BUG: Bad rss-counter'),
    ('rcu-stall', r'rcu: INFO: .* detected stalls|INFO: rcu_\w+ (self-)?detected stall'),
    ('soft-lockup', r'watchdog: BUG: soft lockup|BUG: soft lockup'),
    ('hard-lockup', r'Watchdog detected hard LOCKUP'),
    ('hung-task', r'INFO: task .* blocked for more than \d+ seconds'),
    ('oops', r'Oops: |general protection fault|BUG: unable to handle|'
             r'BUG: kernel NULL pointer dereference'),
    ('bug', r'kernel BUG at |BUG: '),
    ('warning', r'WARNING: CPU: \d+ PID: \d+ at |WARNING: '),
    ('ubsan', r'UBSAN: '),
    ('panic', r'Kernel panic - not syncing'),
]
REPORT_RE = [(kind, re.compile(rx)) for kind, rx in REPORTS]
STAMP = re.compile(r'^\[\s*\d+\.\d+\]\s?')
CONTEXT = 24  # lines shown after a report header
TAIL = 15     # console lines shown at the end


def findings(console_lines):
    """Return [(kind, line_index)] of kernel reports in the console."""
    found = []
    for i, line in enumerate(console_lines):
        m = STAMP.match(line)
        if not m:
            continue
        msg = line[m.end():]
        for kind, rx in REPORT_RE:
            if rx.search(msg):
                found.append((kind, i))
                break
    return found


def done_record(results_lines):
    """(rc, error) of the guest's "@@ done rc=N [error=...]" record, or None."""
    done = records.read_boot(results_lines)[1]
    return (done['rc'], done['error']) if done else None


def classify(console_lines, results_lines, timed_out=None):
    """Return a list of (kind, detail lines) describing what went wrong."""
    out = []
    reports = findings(console_lines)
    for kind, i in reports:
        out.append((kind, console_lines[i:i + CONTEXT]))
    if timed_out is not None:
        out.append(('hang', [f'no result after the {timed_out} s deadline']))
    else:
        done = done_record(results_lines)
        if done is None and not reports:
            out.append(('no-done', ['the guest stopped without reporting "@@ done" '
                                    '(crash, reboot or killed)']))
        elif done is not None and done[1]:
            out.append(('guest-error', [f'the guest could not run its job: {done[1]}']))
    return out


def read_lines(path):
    with open(path, errors='replace') as f:
        return [line.rstrip('\r\n') for line in f]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--timed-out', type=int, metavar='SECS')
    ap.add_argument('console')
    ap.add_argument('results')
    args = ap.parse_args(argv)
    con = read_lines(args.console)
    res = read_lines(args.results)
    bad = classify(con, res, args.timed_out)
    if not bad:
        return 0
    kinds = sorted({k for k, _ in bad})
    print(f'guest run failed: {", ".join(kinds)}', file=sys.stderr)
    shown = 0
    for kind, lines in bad:
        if shown >= 3:
            print(f'... and {len(bad) - shown} more findings in {args.console}', file=sys.stderr)
            break
        print(f'--- {kind}:', file=sys.stderr)
        for line in lines:
            print(f'    {line}', file=sys.stderr)
        shown += 1
    print(f'--- last {TAIL} console lines ({args.console}):', file=sys.stderr)
    for line in con[-TAIL:]:
        print(f'    {line}', file=sys.stderr)
    return 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
