#!/usr/bin/env python3
"""Stale references (make check): every `make TARGET` and every path of this
repository named in the docs, the Makefile's help, the scripts and the Python
tools must exist.

usage: qemu-run/check_refs.py [--top DIR]

A path is a word that starts with one of the repository's own top folders
(qemu-run/, reports/, db/, scenarios/, selftests/, patches/, docs/, .ci/)
or is one of its top files (README.md, RESULTS.md, Makefile); build/ is
generated and not checked.  A glob (`scenarios/*.scn`) must match something;
a path with a placeholder (`<run>`, `NAME`, `...`) is skipped.  A target is
`make NAME` where NAME is not a variable assignment.  Prints one line per
stale reference, FILE:LINE: what, and exits 1 when there is one.
"""
import argparse
import glob
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP_FOLDERS = ('qemu-run/', 'reports/', 'db/', 'scenarios/', 'selftests/', 'patches/', 'docs/', '.ci/')
TOP_FILES = ('README.md', 'RESULTS.md', 'Makefile')
# a path: one of the top folders, then path characters; it ends before
# punctuation that closes a sentence or a quote
PATH = re.compile(r'(?<![\w/.-])((?:' + '|'.join(re.escape(f) for f in TOP_FOLDERS)
                  + r')[\w.*/+-]*[\w*/])')
TARGET = re.compile(r'(?<![\w-])make\s+(?:-[a-zA-Z]+\s+)*([a-z][a-z-]*)(?![\w=-])')
PLACEHOLDER = re.compile(r'[A-Z]{3,}|\.\.\.|<|>|\{|\}')


# records of what was, naming files as they were then
HISTORICAL = {'docs/history.md', 'docs/harness-redesign.md'}
# a shell line that tells the user something
MESSAGE = re.compile(r'\b(die|say|echo|warn|printf)\b')


def sources(top):
    """The files whose references are checked: the docs, the Makefile, the
    shell scripts and the Python tools (not the tests, whose fixtures name
    files that do not exist on purpose, nor the
    series' patches, whose text is upstream's, nor the records of what was:
    history.md and the redesign's before and after)."""
    out = ['README.md', 'RESULTS.md', 'Makefile']
    out += [p for p in sorted(glob.glob('docs/*.md', root_dir=top)) if p not in HISTORICAL]
    out += sorted(glob.glob('scenarios/*.md', root_dir=top)) + sorted(glob.glob('scenarios/*.scn', root_dir=top))
    out += ['scenarios/expected', 'scenarios/short', 'scenarios/tolerances']
    for pat in ('qemu-run/*.sh', 'qemu-run/*/*.sh', 'qemu-run/*.py', 'qemu-run/*/*.py',
                'qemu-run/*/*.md', 'db/*.py', 'reports/*.py', 'qemu-run/guest/*.c', 'qemu-run/guest/*.h'):
        out += sorted(glob.glob(pat, root_dir=top))
    return [p for p in out if os.path.isfile(os.path.join(top, p)) and '/tests/' not in p]


def targets(top):
    """The Makefile's targets."""
    names = set()
    with open(os.path.join(top, 'Makefile')) as f:
        for line in f:
            m = re.match(r'^([a-z][a-z-]*):', line)
            if m:
                names.add(m.group(1))
    return names


# words that follow "make" in prose without being a target of ours
NOT_TARGETS = {'sure', 'it', 'them', 'the', 'a', 'one', 'no', 'up', 'use', 'do', 'this', 'that', 'its',
               'each', 'every', 'any', 'room', 'sense', 'bindeb-pkg', 'olddefconfig', 'tinyconfig',
               'defconfig', 'headers_install', 'modules', 'bzimage', 'kselftest-install', 'install',
               'all', 'clean-only', 'scripts', 'prepare', 'mm', 'sort', 'out', 'things', 'so',
               'new', 'more', 'two', 'both', 'such', 'what', 'their', 'our', 'his', 'her', 'your',
               'and', 'or', 'to', 'for', 'with', 'in', 'on', 'at', 'by', 'of', 'as', 'an', 'is'}


def check(top):
    """[(file, line, message)] of the stale references below top."""
    have_targets = targets(top)
    problems = []
    for rel in sources(top):
        with open(os.path.join(top, rel), errors='replace') as f:
            text = f.read()
        for n, line in enumerate(text.splitlines(), 1):
            for m in PATH.finditer(line):
                path = m.group(1).rstrip('.')
                if PLACEHOLDER.search(path) or path.endswith('/*/'):
                    continue
                if '*' in path:
                    if not glob.glob(path, root_dir=top):
                        problems.append((rel, n, f'{path}: matches nothing'))
                elif not os.path.exists(os.path.join(top, path)):
                    problems.append((rel, n, f'{path}: no such file or folder'))
            if rel.endswith(('.py', '.c', '.h')):
                continue   # "make" in code is rarely ours
            if rel.endswith('.sh') and not MESSAGE.search(line):
                continue   # only what a script tells the user
            for m in TARGET.finditer(line):
                name = m.group(1)
                if name in NOT_TARGETS or name in have_targets:
                    continue
                problems.append((rel, n, f'make {name}: no such target in the Makefile'))
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--top', default=os.path.dirname(HERE))
    args = ap.parse_args(argv)
    problems = check(args.top)
    for rel, n, what in problems:
        print(f'{rel}:{n}: stale reference: {what}')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
