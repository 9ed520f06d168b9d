#!/usr/bin/env python3
"""Bring a LAVA job's results into the runs database, as a local run.

usage: db/lava_collect.py --job JOB.yaml --log LOG.yaml [--db PATH] [--runs DIR]
       db/lava_collect.py --split RUN_DIR

A LAVA lab sees the guest's console only; with rr.lava=1 the guest puts its
records there, each line prefixed by its channel ("R| " results, "S| "
samples; guest/lava-demux.awk), beside dmesg, its own messages and the
"L| case" lines LAVA turns into test cases.

--job and --log: JOB.yaml is the job definition qemu-run/lab/lava.py wrote (its
metadata holds the harness's meta: kernel, job, args, image and series
keys, memory, vCPUs, clock, command line); LOG.yaml is the job's log as
LAVA keeps it (JSON lines of {dt, lvl, msg}, as lava-run prints it, or a
lava-server's YAML list of the same), whose lvl "target" and "feedback"
lines are the console.  The collector makes a run folder as boot.sh leaves one (meta,
console.log, results.log, samples.log), judges the console with the same
classifier (qemu-run/boot/console.py), and stores it with db/ingest.py: one
transaction, and the folder is named from the LAVA job id and the log's
first timestamp, so collecting the same job again stores nothing new.

--split RUN_DIR: the same split of a run folder's console.log in place
(boot.sh LAVA=1, which boots as a lab does).
"""
import argparse
import datetime
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)

CHANNELS = {'R| ': 'results.log', 'S| ': 'samples.log'}


class CollectError(Exception):
    pass


def split_console(lines):
    """(console lines, results lines, samples lines) of a LAVA-mode console;
    every line keeps its own end (a record's cooked "\\r\\n" becomes "\\n")."""
    out = {'console.log': [], 'results.log': [], 'samples.log': []}
    for line in lines:
        body = line.rstrip('\r\n')
        for prefix, name in CHANNELS.items():
            if body.startswith(prefix):
                out[name].append(body[len(prefix):] + '\n')
                break
        else:
            out['console.log'].append(body + '\n')
    return out['console.log'], out['results.log'], out['samples.log']


def split_run_dir(run_dir):
    """Split RUN_DIR/console.log in place (boot.sh LAVA=1); the console as
    the lab would see it stays as lava-console.log."""
    path = os.path.join(run_dir, 'console.log')
    with open(path, errors='replace', newline='') as f:
        lines = f.read().splitlines(keepends=True)
    with open(os.path.join(run_dir, 'lava-console.log'), 'w') as f:
        f.writelines(lines)
    parts = dict(zip(('console.log', 'results.log', 'samples.log'), split_console(lines)))
    for name, body in parts.items():
        tmp = os.path.join(run_dir, name + '.tmp')
        with open(tmp, 'w') as f:
            f.writelines(body)
        os.replace(tmp, os.path.join(run_dir, name))
    return {k: len(v) for k, v in parts.items()}


def load_log(path):
    """A LAVA job log: lava-run's JSON lines ({"dt", "lvl", "msg"} per line)
    or a lava-server's YAML list of the same entries."""
    import json
    try:
        with open(path, errors='replace') as f:
            text = f.read()
    except OSError as e:
        raise CollectError(f'job log {path}: {e.strerror}')
    if text.lstrip().startswith('{'):
        # One YAML flow mapping a line, JSON but for the odd tag ("! ")
        # in results: JSON first, YAML for the rest.
        out = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
                continue
            except ValueError:
                pass
            try:
                out.append(yaml_module().safe_load(line))
            except Exception:
                raise CollectError(f'job log {path}, line {n}: not a log entry (lava-run prints one '
                                   '{dt, lvl, msg} mapping a line)')
        return out
    return load_yaml(path, 'job log')


def yaml_module():
    try:
        import yaml
    except ImportError:
        sys.path.append('/usr/lib/python3/dist-packages')
        try:
            import yaml
        except ImportError:
            raise CollectError('no python yaml module: install the Debian package python3-yaml (make deps)')
    return yaml


def load_yaml(path, what):
    yaml = yaml_module()
    try:
        with open(path) as f:
            return yaml.safe_load(f)
    except OSError as e:
        raise CollectError(f'{what} {path}: {e.strerror}')
    except yaml.YAMLError as e:
        raise CollectError(f'{what} {path} is not YAML: {str(e).splitlines()[0]}')


def console_of(log):
    """(console lines, first timestamp, last timestamp, job id or None,
    LAVA's end result) from a LAVA job log."""
    if not isinstance(log, list):
        raise CollectError('the job log is not a list of {dt, lvl, msg} entries (a LAVA job log)')
    lines, first, last, job_id, result = [], None, None, None, None
    for e in log:
        if not isinstance(e, dict):
            continue
        first = first or e.get('dt')
        last = e.get('dt') or last
        msg = e.get('msg')
        # "target": the console while an action reads it; "feedback": what
        # it printed while none did (after the monitor stopped).
        if e.get('lvl') in ('target', 'feedback') and isinstance(msg, str):
            lines.append(msg + '\n')
        elif e.get('lvl') == 'results' and isinstance(msg, dict) and msg.get('definition') == 'lava' \
                and msg.get('case') == 'job':
            result = msg.get('result')
        if isinstance(msg, str) and job_id is None:
            m = re.match(r'start: 0 validate|^lava-dispatcher, installed at version', msg)
            if m is None:
                m2 = re.search(r'\bjob id[ :=]+(\d+)', msg)
                if m2:
                    job_id = m2.group(1)
    if not lines:
        raise CollectError('the job log has no console lines (lvl "target"): the guest never booted, '
                           'or this is not the log of a job of qemu-run/lab/lava.py')
    return lines, first, last, job_id, result


def iso(dt):
    """ISO 8601 UTC (Z) of a LAVA timestamp."""
    try:
        d = datetime.datetime.fromisoformat(str(dt).replace('Z', '+00:00'))
    except ValueError:
        raise CollectError(f'the job log\'s first timestamp "{dt}" is not ISO 8601')
    if d.tzinfo is None:
        d = d.replace(tzinfo=datetime.timezone.utc)
    return d.astimezone(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def write_summary(run_dir, meta):
    """The summary line the local script of the job writes (tap.py for
    kselftests, records.py for the guest tools), into RUN_DIR/summary; for
    a kselftest run also tap.py's verdict.json, which ingest stores."""
    q = os.path.join(TOP, 'qemu-run')
    kind = meta['job']
    if kind == 'kselftest':
        words = dict(w.split('=', 1) for w in meta.get('args', '').split() if '=' in w)
        cmd = [sys.executable, os.path.join(q, 'verdict', 'tap.py'), '--kernel', meta['kernel'],
               '--known', os.path.join(q, 'verdict', 'known-issues'), '--expect', os.path.join(q, 'verdict', 'expectations'),
               '--plans', os.path.join(q, 'verdict', 'plans'), '--verdict', os.path.join(run_dir, 'verdict.json')] \
            + (['--tests', words['tests']] if 'tests' in words else []) \
            + [os.path.join(run_dir, 'results.log')]
    elif kind in ('soak', 'stress', 'bench'):
        sys.path.insert(0, os.path.join(q, 'records'))
        import records
        if kind == 'stress':
            line = records.stress_summary(run_dir, f'stress {meta.get("kernel", "?")}')[1]
        else:
            summary = records.soak_summary if kind == 'soak' else records.bench_summary
            line = summary(os.path.join(run_dir, 'samples.log'), kind)[1]
        with open(os.path.join(run_dir, 'summary'), 'w') as f:
            f.write(line + '\n')
        return
    else:
        return
    r = subprocess.run(cmd, capture_output=True, text=True)
    lines = r.stdout.strip().splitlines()
    if lines:
        with open(os.path.join(run_dir, 'summary'), 'w') as f:
            f.write(lines[-1] + '\n')


def collect(job_path, log_path, runs_dir, db_path=None, job_id=None):
    """Make the run folder of a finished LAVA job and store it; returns
    (run folder, ingest's line)."""
    job = load_yaml(job_path, 'job definition')
    if not isinstance(job, dict) or not isinstance(job.get('metadata'), dict):
        raise CollectError(f'{job_path} has no metadata: not a job of qemu-run/lab/lava.py')
    meta_in = {k[len('harness.'):]: str(v) for k, v in job['metadata'].items() if k.startswith('harness.')}
    for need in ('kernel', 'job', 'image_key'):
        if need not in meta_in:
            raise CollectError(f'{job_path}: metadata harness.{need} is missing: not a job of qemu-run/lab/lava.py')
    lines, first, last, found_id, lava_result = console_of(load_log(log_path))
    started = iso(first) if first else None
    if not started:
        raise CollectError('the job log has no timestamps')
    job_id = job_id or found_id or 'local'
    stamp = started.replace('-', '').replace(':', '').replace('T', '-').rstrip('Z')
    run_dir = os.path.join(runs_dir, f'{stamp}-{meta_in["kernel"]}-{meta_in["job"]}-lava{job_id}')
    os.makedirs(run_dir, exist_ok=True)
    console, results, samples = split_console(lines)
    for name, body in (('console.log', console), ('results.log', results), ('samples.log', samples)):
        with open(os.path.join(run_dir, name), 'w') as f:
            f.writelines(body)
    meta = dict(meta_in)
    meta.pop('lab', None)
    meta['started'] = started
    try:
        meta['wall_secs'] = str(round((datetime.datetime.fromisoformat(str(last).replace('Z', '+00:00')) -
                                       datetime.datetime.fromisoformat(str(first).replace('Z', '+00:00')))
                                      .total_seconds()))
    except (TypeError, ValueError):
        pass
    meta['lava_job'] = str(job_id)
    if lava_result:
        meta['lava_result'] = lava_result
    r = subprocess.run([sys.executable, os.path.join(TOP, 'qemu-run', 'boot', 'console.py'),
                        os.path.join(run_dir, 'console.log'), os.path.join(run_dir, 'results.log')],
                       capture_output=True, text=True)
    meta['verdict'] = 'clean' if r.returncode == 0 else 'bad'
    with open(os.path.join(run_dir, 'meta'), 'w') as f:
        f.writelines(f'{k}={v}\n' for k, v in meta.items())
    write_summary(run_dir, meta)
    import ingest
    import store
    db = store.connect(db_path)
    try:
        line = ingest.ingest(db, run_dir, db_path=db_path or store.default_path())
    except ingest.RunError as e:
        raise CollectError(f'{run_dir} not stored: {e}')
    finally:
        db.close()
    return run_dir, line


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--job', help="the job definition (qemu-run/lab/lava.py's YAML)")
    ap.add_argument('--log', help="the job's log (LAVA's YAML list of {dt, lvl, msg})")
    ap.add_argument('--job-id', help='the LAVA job id (default: found in the log, else "local")')
    ap.add_argument('--db', help='the runs database (default: $RUNS_DB, else $BUILD/db/runs.sqlite)')
    ap.add_argument('--runs', default=os.path.join(os.environ.get('BUILD') or os.path.join(TOP, 'build'), 'runs'),
                    help='where the run folder goes (default build/runs)')
    ap.add_argument('--split', metavar='RUN_DIR', help='only split RUN_DIR/console.log in place')
    args = ap.parse_args(argv)
    try:
        if args.split:
            n = split_run_dir(args.split)
            print(f'lava_collect: {args.split}: {n["results.log"]} results lines, {n["samples.log"]} samples lines, '
                  f'{n["console.log"]} console lines')
            return 0
        if not args.job or not args.log:
            ap.error('--job and --log, or --split')
        run_dir, line = collect(args.job, args.log, args.runs, args.db, args.job_id)
    except CollectError as e:
        print(f'lava_collect: error: {e}', file=sys.stderr)
        return 1
    print(f'lava_collect: {run_dir}')
    print(line)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
