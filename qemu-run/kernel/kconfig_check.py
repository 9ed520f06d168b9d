#!/usr/bin/env python3
"""Check that every option of the config fragments survived olddefconfig.

usage: kconfig_check.py .config FRAGMENT...

A fragment line "CONFIG_X=v" must appear as such in .config; a line
"# CONFIG_X is not set" requires X to be neither =y nor =m.  Fragments are
merged in order, as merge_config.sh does: an option that a later fragment
names again is judged by the later one alone.  Exit status 1 and one line
per lost option otherwise.
"""
import re
import sys

SET = re.compile(r'^(CONFIG_[A-Za-z0-9_]+)=(.*)$')
UNSET = re.compile(r'^# (CONFIG_[A-Za-z0-9_]+) is not set$')


def parse(lines):
    """Map option -> value ('n' for 'is not set') for config-style lines."""
    opts = {}
    for line in lines:
        line = line.strip()
        m = SET.match(line)
        if m:
            opts[m.group(1)] = m.group(2)
            continue
        m = UNSET.match(line)
        if m:
            opts[m.group(1)] = 'n'
    return opts


def lost(config, fragment):
    """Return [(option, wanted, got)] for fragment options not in config."""
    bad = []
    for opt, want in fragment.items():
        got = config.get(opt, 'n')
        if got != want:
            bad.append((opt, want, got))
    return bad


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        config = parse(f)
    frags = []
    for path in argv[2:]:
        with open(path) as f:
            frags.append((path, parse(f)))
    status = 0
    for i, (path, frag) in enumerate(frags):
        later = set().union(*(f for _, f in frags[i + 1:]))
        mine = {opt: want for opt, want in frag.items() if opt not in later}
        for opt, want, got in lost(config, mine):
            print(f'{path}: {opt}={want} did not survive (got {opt}={got})')
            status = 1
    return status


if __name__ == '__main__':
    sys.exit(main(sys.argv))
