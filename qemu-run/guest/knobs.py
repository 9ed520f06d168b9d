#!/usr/bin/env python3
"""Check a guest tool's key=value knobs on the host, before a boot.

usage: qemu-run/guest/knobs.py TOOL key=value ...

TOOL is soak, stress, bench or scenario; its knob table is read from
qemu-run/guest/TOOL.c (the table "TOOL help" prints in the guest), so the
two cannot disagree.  An unknown knob, a number knob that is not a
number, a list knob (soak's and stress's mix, bench's parts and lru)
naming something it cannot run, a stressor bench's stress-ng does not
have (stressors=, checked against this host's `stress-ng --stressors`:
guest/image.sh copies this host's stress-ng into the guest), or a soak that
would run until its deadline (gens=0 and secs=0) is an error that names the
knob and what is valid; nothing boots.  Exit status 0 when every knob is
good, 2 if not.
"""
import functools
import os
import re
import subprocess
import sys

GUEST = os.path.dirname(os.path.abspath(__file__))
TOOLS = ('soak', 'stress', 'bench', 'scenario')
ENTRY = re.compile(r'\{\s*"([a-z_]+)",\s*(K_NUM|K_STR),\s*(-?\d+),\s*(NULL|"[^"]*")')
# Knobs whose value is a comma list of names: each one of the default's,
# or of the names given here when the default runs only some.
LISTS = {('soak', 'mix'): None, ('stress', 'mix'): None,
         ('bench', 'parts'): ('offline', 'fast', 'reclaim', 'stressng'), ('bench', 'lru'): None,
         ('bench', 'fast_tests'): None}
STRESS_NG = '/usr/bin/stress-ng'
STRESSOR = re.compile(r'[a-z][a-z0-9-]{0,39}')
MAX_STRESSORS = 32      # guest/bench.c MAX_STRESSORS


@functools.lru_cache(maxsize=None)
def stressng_names():
    """The stressors of this host's stress-ng (the guest's is a copy of
    it), or None when there is none to ask."""
    try:
        out = subprocess.run([STRESS_NG, '--stressors'], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = set(out.stdout.split())
    return names if out.returncode == 0 and names else None


def stressors_problem(value):
    """What is wrong with bench's stressors= list, or None."""
    names = value.split(',')
    bad = [n for n in names if not STRESSOR.fullmatch(n)]
    if bad or not value:
        return (f'bench knob stressors: "{",".join(bad) or value}" is not a stress-ng stressor name '
                f'(a-z, 0-9 and -, comma-separated)')
    if len(set(names)) != len(names):
        return f'bench knob stressors: "{value}" names a stressor twice'
    if len(names) > MAX_STRESSORS:
        return f'bench knob stressors: {len(names)} stressors, at most {MAX_STRESSORS}'
    known = stressng_names()
    unknown = [n for n in names if known is not None and n not in known]
    if unknown:
        return (f'bench knob stressors: "{",".join(unknown)}" is not a stressor of {STRESS_NG} '
                f'(its list: stress-ng --stressors)')
    return None


def table(tool):
    """{name: (kind, default)} from the tool's 'static struct knob knobs[]'."""
    path = os.path.join(GUEST, f'{tool}.c')
    with open(path) as f:
        text = f.read()
    start = text.find('static struct knob knobs[]')
    if start < 0:
        raise SystemExit(f'knobs: no knob table in {path}')
    end = text.index('};', start)
    out = {}
    for name, kind, num, s in ENTRY.findall(text[start:end]):
        out[name] = ('num', int(num)) if kind == 'K_NUM' else ('str', s.strip('"'))
    return out


def problems(tool, words):
    knobs = table(tool)
    errs, last = [], {}
    for w in words:
        name, eq, value = w.partition('=')
        if not eq or not name:
            errs.append(f'"{w}" is not key=value')
            continue
        if name not in knobs:
            errs.append(f'{tool} has no knob "{name}" (its knobs: {", ".join(sorted(knobs))})')
            continue
        kind, default = knobs[name]
        if kind == 'num' and not re.fullmatch(r'-?\d+', value):
            errs.append(f'{tool} knob {name} is a number, not "{value}"')
        elif (tool, name) == ('bench', 'stressors'):
            why = stressors_problem(value)
            if why:
                errs.append(why)
        elif (tool, name) in LISTS:
            valid = LISTS[(tool, name)] or default.split(',')
            # soak's mix may give one list per slice, separated by '/'
            lists = value.split('/') if (tool, name) == ('soak', 'mix') else [value]
            bad = [v for part in lists for v in part.split(',') if v not in valid]
            if bad or not value:
                errs.append(f'{tool} knob {name}: "{",".join(bad) or value}" is not among {",".join(valid)}')
        last[name] = value
    if tool == 'soak' and not errs:
        gens = int(last.get('gens', knobs['gens'][1]))
        secs = int(last.get('secs', knobs['secs'][1]))
        if gens == 0 and secs == 0:
            errs.append('soak with gens=0 and secs=0 would run until its deadline: give gens or secs')
    return errs


def main(argv):
    if not argv or argv[0] not in TOOLS:
        print(f'usage: qemu-run/guest/knobs.py {"|".join(TOOLS)} key=value ...', file=sys.stderr)
        return 2
    errs = problems(argv[0], argv[1:])
    for e in errs:
        print(f'error: {e}', file=sys.stderr)
    return 2 if errs else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
