#!/usr/bin/env python3
"""Export the runs database as KCIDB JSON (KernelCI's common results
schema, I/O version 5.3), check it against the schema, or read it back.

usage: reports/kcidb.py [--db PATH] [--out FILE] [--origin NAME]
       reports/kcidb.py --check FILE
       reports/kcidb.py --read FILE

What goes where:
  - a checkout per version of the tree: Debian's linux-source-6.12 alone
    (original), or with a version of the series (its series hash: the
    patchset_hash is KCIDB's own hash of this checkout's patches/ when the
    series is this checkout's, and absent for older versions, whose patches
    are not here);
  - a build per kernel image (kernels row: name, image key, series hash,
    config hash), config_name the kernel's name;
  - a test per kselftest subtest of every stored run (path
    kselftest.cgroup.TEST.SUBTEST, status PASS/FAIL/SKIP/MISS), with the
    matrix's expectation, the attempts and the reason in misc; its
    "# METRIC" figures as DONE tests below it (path ...SUBTEST.KEY);
  - a test per soak run (path soak, PASS when the guest run was clean and
    the soak ended rc=0) with its figures as DONE tests (soak.dying_end,
    soak.dying_after_drop, soak.gens, soak.gens_per_s);
  - a test per stress run (path stress) and its end record's counters
    (stress.KEY), and a test per bench value (bench.METRIC.PARAM, DONE).
Ids are "ORIGIN:" and the run's uid (its folder and start time, unique
and the same in every export), so a second export of the same runs
submits the same objects again, which KCIDB merges.

No v5.1-v5.3 field is sent: the checkout's origin_builds_finish_time and
origin_tests_finish_time (v5.1) would say that every planned build or
test of the checkout is done, which a database that keeps growing never
knows, and a test's input_files (v5.3) need downloadable URLs, which a
local rootfs has not.  Strings outside misc carry no NUL character (a
kselftest reason read off a console could; KCIDB v5 refuses them).

--check validates a file with reports/kcidb/schema-v5.3.json (written from
the KCIDB I/O v5.3 spec, which accepts documents of v5.0 to v5.3) and
checks what the schema cannot: unique ids (issues: id and version), and
builds and tests that point at objects in the file.  --read prints
the tests of a file, one per line (path, status, value), as the
round-trip test reads them.  Exit status 1 on an invalid file.
"""
import argparse
import datetime
import hashlib
import json
import os
import re
import sys
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
import compare  # noqa: E402,F401 (db/ on the path)
import store  # noqa: E402

SCHEMA = os.path.join(HERE, 'kcidb', 'schema-v5.3.json')
VERSION = {'major': 5, 'minor': 3}
V = f'v{VERSION["major"]}.{VERSION["minor"]}'
ORIGIN = 'dying_memcg'
TREE = 'debian-linux-source-6.12'
STATUS = {'pass': 'PASS', 'fail': 'FAIL', 'skip': 'SKIP', 'miss': 'MISS', 'cut': 'MISS'}
PATH_PART = re.compile(r'[^a-zA-Z0-9_-]')


def part(s):
    """A KCIDB test path element: letters, digits, _ and - only."""
    return PATH_PART.sub('_', s) or '_'


def no_nul(s):
    """A KCIDB string outside misc: no NUL character (v5 refuses it)."""
    return s.replace('\0', '')


def patchset_hash():
    """KCIDB's patchset_hash of this checkout's series: sha256 over the
    newline-terminated sha256 of each patch, in order (the cover letter
    is no patch)."""
    lines = ''.join(hashlib.sha256(p).hexdigest() + '\n' for p in store.series_patches())
    return hashlib.sha256(lines.encode()).hexdigest()


def number(v):
    """A JSON number: an int when the value is whole."""
    return int(v) if float(v).is_integer() else float(v)


def export(db, origin=ORIGIN):
    """The KCIDB document of every run in db."""
    o = origin + ':'
    cur = store.current_series()
    checkouts, builds, tests = {}, [], []
    kernels = db.execute('SELECT id, name, image_key, release, base_version, series_hash, config_hash '
                         'FROM kernels ORDER BY id').fetchall()
    build_of = {}
    for kid, name, image_key, release, base, series, config in kernels:
        series_key = '' if name == 'original' else (series if series is not None else 'unknown')
        cid = f'{o}{TREE}+{series_key or "none"}'
        if cid not in checkouts:
            c = {'id': cid, 'origin': origin, 'tree_name': TREE, 'valid': True,
                 'comment': (f'Debian linux-source-6.12 ({no_nul(base or "6.12")})' +
                             (f' with the series {series_key}' if series_key else ', no patches')),
                 'misc': {'series_hash': series_key}}
            if series_key == '':
                c['patchset_hash'] = ''
            elif series_key == cur:
                c['patchset_hash'] = patchset_hash()
            checkouts[cid] = c
        bid = f'{o}{name}-{image_key}'
        build_of[kid] = bid
        b = {'id': bid, 'origin': origin, 'checkout_id': cid, 'architecture': 'x86_64',
             'config_name': name, 'status': 'PASS',
             'misc': {'image_key': image_key, 'kernel': name, 'series_hash': series_key}}
        if release:
            b['misc']['release'] = release
        if config:
            b['misc']['config_hash'] = config
        builds.append(b)

    runs = db.execute('SELECT id, uid, kind, kernel_id, started, wall_secs, mem_mib, smp, verdict, soak_rc, gens, '
                      't_ms, clock, workload, nodes FROM runs ORDER BY id').fetchall()
    for rid, uid, kind, kid, started, wall, mem, smp, verdict, rc, gens, t_ms, clock, workload, nodes in runs:
        env = {'comment': f'QEMU (TCG), {smp or "?"} vCPUs, {mem or "?"} MiB'
                          + (f', {nodes} NUMA nodes' if nodes > 1 else ''),
               'misc': {'smp': smp, 'mem_mib': mem, 'nodes': nodes, 'clock': clock}}
        base = {'origin': origin, 'build_id': build_of[kid], 'start_time': started, 'environment': env}
        rid_s = f'{o}{uid}'
        if kind == 'kselftest':
            for ord_, test, sub, outcome, expected, surprise, reason, first, attempts, failed in db.execute(
                    'SELECT ord, test, subtest, outcome, expected, surprise, reason, first, attempts, failed '
                    'FROM kselftest WHERE run_id = ? ORDER BY ord', (rid,)):
                t = dict(base, id=f'{rid_s}:{ord_}', path=f'kselftest.cgroup.{part(test)}.{part(sub)}',
                         status=STATUS[outcome],
                         misc={'expected': expected, 'surprise': bool(surprise), 'attempts': attempts,
                               'failed_attempts': failed, 'first': first or outcome})
                if reason:
                    t['comment'] = no_nul(reason)
                tests.append(t)
            for ord_, test, sub, attempt, key, value in db.execute(
                    'SELECT ord, test, subtest, attempt, key, value FROM kselftest_metrics '
                    'WHERE run_id = ? ORDER BY ord', (rid,)):
                tests.append(dict(base, id=f'{rid_s}:m{ord_}',
                                  path=f'kselftest.cgroup.{part(test)}.{part(sub)}.{part(key)}',
                                  status='DONE', number={'value': number(value)}, misc={'attempt': attempt}))
        elif kind == 'soak':
            ok = verdict == 'clean' and rc == 0
            tests.append(dict(base, id=f'{rid_s}:soak', path='soak', status='PASS' if ok else 'FAIL',
                              duration=wall, misc={'workload': workload, 'verdict': verdict, 'rc': rc}))
            fin = db.execute('SELECT final_dying, dropped_dying FROM soak_final WHERE run_id = ?', (rid,)).fetchone()
            figs = {'gens': gens, 'dying_end': fin[0] if fin else None, 'dying_after_drop': fin[1] if fin else None,
                    'gens_per_s': round(gens / (t_ms / 1000.0), 3) if gens and t_ms else None}
            for key, value in figs.items():
                if value is not None:
                    tests.append(dict(base, id=f'{rid_s}:soak.{key}', path=f'soak.{key}', status='DONE',
                                      number={'value': number(value)}))
        elif kind == 'stress':
            ok = verdict == 'clean' and rc == 0
            tests.append(dict(base, id=f'{rid_s}:stress', path='stress', status='PASS' if ok else 'FAIL',
                              duration=wall, misc={'verdict': verdict, 'rc': rc}))
            for key, value in db.execute("SELECT key, value FROM params WHERE run_id = ? AND key LIKE 'end.%' "
                                         "ORDER BY key", (rid,)):
                try:
                    v = number(float(value))
                except ValueError:
                    continue
                tests.append(dict(base, id=f'{rid_s}:stress.{key[4:]}', path=f'stress.{part(key[4:])}',
                                  status='DONE', number={'value': v}))
        elif kind == 'bench':
            for metric, param, rep, value, unit, ord_ in db.execute(
                    'SELECT metric, param, rep, value, unit, ord FROM bench WHERE run_id = ? ORDER BY ord', (rid,)):
                path = f'bench.{".".join(part(p) for p in metric.split("."))}.{part(str(param))}'
                t = dict(base, id=f'{rid_s}:b{ord_}', path=path, status='DONE' if value is not None else 'MISS',
                         misc={'rep': rep, 'param': param})
                if value is not None:
                    t['number'] = {'value': number(value), 'unit': unit}
                tests.append(t)
    return {'version': VERSION, 'checkouts': list(checkouts.values()), 'builds': builds, 'tests': tests}


def _date_time(s):
    if not isinstance(s, str) or not re.match(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$', s):
        return False
    try:
        datetime.datetime.fromisoformat(s.replace('Z', '+00:00'))
    except ValueError:
        return False
    return True


def _uri(s):
    u = urllib.parse.urlparse(s)
    return bool(u.scheme and (u.netloc or u.path))


def debian_module(name, package):
    """Import a module from the environment's python, else from Debian's
    (python3 may be another build of the same version: make deps installs
    the Debian package)."""
    import importlib
    try:
        return importlib.import_module(name)
    except ImportError:
        pass
    for d in ('/usr/lib/python3/dist-packages',):
        if os.path.isdir(os.path.join(d, name)) and d not in sys.path:
            sys.path.append(d)
    try:
        return importlib.import_module(name)
    except ImportError:
        raise SystemExit(f'kcidb: no python module {name}: install the Debian package {package} (make deps)')


def problems(doc):
    """Every way doc breaks the schema or the links between its objects."""
    jsonschema = debian_module('jsonschema', 'python3-jsonschema')
    with open(SCHEMA) as f:
        schema = json.load(f)
    fc = jsonschema.FormatChecker(formats=())
    fc.checks('date-time')(_date_time)
    fc.checks('uri')(_uri)
    fc.checks('email')(lambda s: isinstance(s, str) and '@' in s)
    v = jsonschema.Draft202012Validator(schema, format_checker=fc)
    out = [f'{"/".join(str(p) for p in e.absolute_path) or "(top)"}: {e.message}'
           for e in sorted(v.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))]
    if out:
        return out
    for kind in ('checkouts', 'builds', 'tests', 'issues', 'incidents'):
        # an issue is one object per (id, version): its versions share the id
        ids = [f'{x["id"]} version {x["version"]}' if kind == 'issues' else x['id'] for x in doc.get(kind, [])]
        dup = sorted({i for i in ids if ids.count(i) > 1}) if len(ids) != len(set(ids)) else []
        out += [f'{kind}: id {i} appears more than once' for i in dup[:5]]
    checkouts = {c['id'] for c in doc.get('checkouts', [])}
    builds = {b['id'] for b in doc.get('builds', [])}
    out += [f'builds: {b["id"]} points at checkout {b["checkout_id"]}, not in the file'
            for b in doc.get('builds', []) if b['checkout_id'] not in checkouts]
    out += [f'tests: {t["id"]} points at build {t["build_id"]}, not in the file'
            for t in doc.get('tests', []) if t['build_id'] not in builds][:5]
    return out


def read(doc):
    """[(build config_name, test path, status, value or None)] of a document."""
    config = {b['id']: b.get('config_name', '?') for b in doc.get('builds', [])}
    return [(config.get(t['build_id'], '?'), t.get('path', ''), t.get('status', ''),
             t.get('number', {}).get('value')) for t in doc.get('tests', [])]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--db', help='the runs database (default: $RUNS_DB, else $BUILD/db/runs.sqlite)')
    ap.add_argument('--out', help='where to write the JSON (default: stdout)')
    ap.add_argument('--origin', default=ORIGIN, help=f'the KCIDB origin (default {ORIGIN})')
    ap.add_argument('--check', metavar='FILE', help='only validate FILE')
    ap.add_argument('--read', metavar='FILE', help='print the tests of FILE')
    args = ap.parse_args(argv)
    if args.check or args.read:
        path = args.check or args.read
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print(f'kcidb: {path}: {e}', file=sys.stderr)
            return 1
        if args.read:
            for row in read(doc):
                print('\t'.join('' if x is None else str(x) for x in row))
            return 0
        bad = problems(doc)
        for p in bad[:20]:
            print(f'kcidb: {path}: {p}', file=sys.stderr)
        if bad:
            print(f'kcidb: {path} is not valid KCIDB {V} ({len(bad)} problems)', file=sys.stderr)
            return 1
        print(f'kcidb: {path}: valid KCIDB {V}: '
              f'{len(doc.get("checkouts", []))} checkouts, {len(doc.get("builds", []))} builds, '
              f'{len(doc.get("tests", []))} tests')
        return 0
    if not re.match(r'^[a-z0-9_]+$', args.origin):
        print(f'kcidb: origin "{args.origin}" must be lower-case letters, digits and _ (KCIDB)', file=sys.stderr)
        return 1
    _, db = store.open_existing(args.db, 'kcidb', 'run make test or make run first')
    doc = export(db, args.origin)
    bad = problems(doc)
    if bad:
        for p in bad[:20]:
            print(f'kcidb: export: {p}', file=sys.stderr)
        print(f'kcidb: the export is not valid KCIDB {V}: not written', file=sys.stderr)
        return 1
    text = json.dumps(doc, indent=1, sort_keys=True) + '\n'
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        tmp = args.out + '.tmp'
        with open(tmp, 'w') as f:
            f.write(text)
        os.replace(tmp, args.out)
        print(f'kcidb: {args.out}: {len(doc["checkouts"])} checkouts, {len(doc["builds"])} builds, '
              f'{len(doc["tests"])} tests (KCIDB {V}, valid)')
    else:
        sys.stdout.write(text)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
