"""Read the files of a run folder (qemu-run/records/RECORDS.md): meta, results.log
and samples.log (a soak's snapshots, a bench's results; a scenario run's
records are oracle.py's, oracle_module()).  Parsing only; db/ingest.py
stores what this yields."""
import importlib.util
import os
import re
import sys

SAMPLE = re.compile(r'^@@ sample (\d+) gen=(-?\d+) t_ms=(-?\d+)\s*(.*)$')
ENDSAMPLE = re.compile(r'^@@ endsample (\d+) lines=(\d+)\s*$')
END = re.compile(r'^@@ end rc=(-?\d+)(.*)$')
METRIC = re.compile(r'^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$')
NUMBER = re.compile(r'^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$')
DONE = re.compile(r'^@@ done rc=(-?\d+)(?: error=(.*))?')


INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def printable(word):
    """A source or key: printable ASCII, no space, no control byte (a NUL
    from a corrupted channel must not become a new key)."""
    return bool(word) and all(33 <= ord(c) <= 126 for c in word)


def read_meta(path):
    """boot.sh's key=value lines; a key written twice keeps its last value."""
    meta = {}
    with open(path, errors='replace') as f:
        for line in f:
            key, eq, value = line.rstrip('\r\n').partition('=')
            if eq and key.strip():
                meta[key.strip()] = value
    return meta


def kv_words(text):
    """{key: value} of the key=value words of text; other words are ignored."""
    out = {}
    for w in text.split():
        k, eq, v = w.partition('=')
        if eq and k:
            out[k] = v
    return out


def read_boot(lines):
    """(boot record {key: value}, done record {key: value} or None) of results.log."""
    boot, done = {}, None
    for line in lines:
        line = line.rstrip('\r\n')
        if line.startswith('@@ boot '):
            boot = kv_words(line[8:])
        else:
            m = DONE.match(line)
            if m:
                done = {'rc': int(m.group(1)), 'error': m.group(2)}
    return boot, done


def _run_or_end(walk, line):
    """Keep a "@@ run <program> knobs..." record's knobs (walk.run_line,
    walk.run) or a "@@ end rc=N ..." record (walk.end); any other line is
    left alone."""
    if line.startswith('@@ run '):
        words = line[7:].split(None, 1)
        walk.run_line = words[1].strip() if len(words) > 1 else ''
        walk.run = kv_words(walk.run_line)
    elif line.startswith('@@ end '):
        m = END.match(line)
        if m:
            walk.end = {'rc': int(m.group(1)), **kv_words(m.group(2))}


class Samples:
    """Walk samples.log.  Iterating yields the complete snapshots as
    (seq, gen, t_ms, note, rows) with rows [(source, key, value)]; a
    snapshot without its "@@ endsample" (cut by the end of the file or by
    another record), with another line count, with a data line that is not
    "source key integer", or with a source and key twice is dropped
    (counted in .dropped, reasons in .problems), as qemu-run/jobs/soak.sh
    counts them.  After the walk: .run (the "@@ run" knobs), .end (the "@@
    end" record), .lines (lines read)."""

    def __init__(self, f):
        self.f = f
        self.run = None
        self.run_line = ''         # the knobs of "@@ run <program> knobs..."
        self.end = None
        self.dropped = 0
        self.cut = False           # a dropped snapshot was cut short (not inconsistent)
        self.problems = []
        self.lines = 0
        self.max_lines = 0         # the largest complete snapshot: data lines,
        self.max_bytes = 0         # and bytes with its two record lines
        self.progress = {}         # the newest "@@ progress" record's words

    def _drop(self, seq, why, cut=False):
        self.dropped += 1
        self.cut = self.cut or cut
        if len(self.problems) < 20:
            self.problems.append(f'snapshot {seq}: {why}')

    def __iter__(self):
        cur = None          # [seq, gen, t_ms, note, rows, bad, bytes]
        seen = set()
        n = 0
        for n, line in enumerate(self.f, 1):
            if not line.startswith('@@'):
                if cur is None:
                    continue       # stray data outside a snapshot: not ours to guess
                cur[6] += len(line.rstrip('\n')) + 1
                parts = line.split(' ')
                why = 'is not "source key integer"'
                if len(parts) == 3:
                    v = parts[2].rstrip('\r\n')
                    if not (printable(parts[0]) and printable(parts[1])):
                        why = 'has a control or non-ASCII byte in its source or key'
                    elif v.isascii() and (v.isdigit() or (v[:1] == '-' and v[1:].isdigit())):
                        v = int(v)
                        if INT64_MIN <= v <= INT64_MAX:
                            cur[4].append((parts[0], parts[1], v))
                            continue
                        why = 'has a value outside sqlite\'s 64-bit integers'
                if not cur[5]:
                    cur[5] = f'line {n} {why}: {line.strip()[:80]!r}'
                continue
            line = line.rstrip('\r\n')
            if cur is not None and not line.startswith(('@@ sample ', '@@ endsample')):
                # A snapshot is written at once: any other record inside it
                # means it was cut short (qemu-run/jobs/soak.sh counts it so too).
                self._drop(cur[0], f'cut short by "{line[:20]}" at line {n}', cut=True)
                cur = None
            if line.startswith('@@ sample '):
                if cur is not None:
                    self._drop(cur[0], f'no "@@ endsample" before line {n}', cut=True)
                m = SAMPLE.match(line)
                if not m:
                    cur = None
                    self._drop('?', f'bad header at line {n}: {line[:80]!r}')
                    continue
                cur = [int(m.group(1)), int(m.group(2)), int(m.group(3)),
                       m.group(4).strip() or None, [], None, len(line) + 1]
            elif line.startswith('@@ endsample'):
                m = ENDSAMPLE.match(line)
                if cur is None:     # its snapshot was dropped already, or there was none
                    if len(self.problems) < 20:
                        self.problems.append(f'line {n}: "@@ endsample" without its "@@ sample"')
                elif not m or int(m.group(1)) != cur[0]:
                    self._drop(cur[0], f'bad or foreign "@@ endsample" at line {n}: {line[:80]!r}')
                elif cur[5]:
                    self._drop(cur[0], cur[5])
                elif int(m.group(2)) != len(cur[4]):
                    self._drop(cur[0], f'{len(cur[4])} data lines, "@@ endsample" says {m.group(2)}')
                elif cur[0] in seen:
                    self._drop(cur[0], 'sequence number seen before')
                elif len({(s, k) for s, k, _ in cur[4]}) != len(cur[4]):
                    self._drop(cur[0], 'a source and key appear twice')
                else:
                    seen.add(cur[0])
                    self.max_lines = max(self.max_lines, len(cur[4]))
                    self.max_bytes = max(self.max_bytes, cur[6] + len(line) + 1)
                    yield cur[0], cur[1], cur[2], cur[3], cur[4]
                cur = None
            elif line.startswith('@@ progress '):
                self.progress = {**self.progress, **kv_words(line[12:])}
                self.on_progress(self.progress)
            else:
                _run_or_end(self, line)     # unknown records are left alone
        if cur is not None:
            self._drop(cur[0], 'cut short: no "@@ endsample" before the end of the file', cut=True)
        self.lines = n

    def on_progress(self, words):
        """Called with each "@@ progress" record's words (merged with the
        earlier ones): for a walker that follows the run's progress."""



class BenchResults:
    """Walk the samples.log of a bench run (guest/bench.c).  Iterating
    yields (metric, param, rep, value, unit, limit) per "@@ result" record,
    value None when the record says value=none (then limit is its bound).
    A result that is malformed (a field missing or not a number, a bad
    metric name, value=none without limit=) or that repeats a metric,
    param and rep already seen is dropped: counted in .dropped, reasons in
    .problems.  After the walk: .run (the "@@ run" knobs), .run_line,
    .end (the "@@ end" record), .lines."""

    def __init__(self, f):
        self.f = f
        self.run = None
        self.run_line = ''
        self.end = None
        self.dropped = 0
        self.problems = []
        self.lines = 0

    def _drop(self, n, why):
        self.dropped += 1
        if len(self.problems) < 20:
            self.problems.append(f'line {n}: {why}')

    def parse(self, n, line):
        """The fields of one "@@ result" line, or None (dropped)."""
        kv = kv_words(line[len('@@ result '):])
        missing = [k for k in ('metric', 'param', 'rep', 'value', 'unit') if k not in kv]
        if missing:
            return self._drop(n, f'no {", ".join(missing)}: {line[:80]!r}')
        if not METRIC.match(kv['metric']):
            return self._drop(n, f'bad metric name {kv["metric"][:40]!r}')
        if not kv['param'].isdigit() or not kv['rep'].isdigit() or int(kv['rep']) < 1:
            return self._drop(n, f'param and rep are integers (rep from 1): {line[:80]!r}')
        limit = kv.get('limit')
        if limit is not None and not NUMBER.match(limit):
            return self._drop(n, f'limit is not a number: {line[:80]!r}')
        if kv['value'] == 'none':
            if limit is None:
                return self._drop(n, f'value=none without limit=: {line[:80]!r}')
            value = None
        elif NUMBER.match(kv['value']):
            value = float(kv['value'])
        else:
            return self._drop(n, f'value is not a number: {line[:80]!r}')
        return (kv['metric'], int(kv['param']), int(kv['rep']), value, kv['unit'],
                float(limit) if limit is not None else None)

    def __iter__(self):
        seen = set()
        n = 0
        for n, line in enumerate(self.f, 1):
            if not line.startswith('@@ '):
                continue
            line = line.rstrip('\r\n')
            if line.startswith('@@ result '):
                r = self.parse(n, line)
                if r is None:
                    continue
                if r[:3] in seen:
                    self._drop(n, f'{r[0]} param={r[1]} rep={r[2]} seen before')
                    continue
                seen.add(r[:3])
                yield r
            else:
                _run_or_end(self, line)
            # "@@ progress" and unknown records: for the host's progress line only.
        self.lines = n


# ---- what the host prints while a guest tool runs and when it ends
#
# The jobs (qemu-run/jobs/soak.sh, stress.sh, bench.sh) print a progress
# line every few seconds and one summary line at the end; the LAVA collector
# writes the same summary.  All of them come from here:
#
#   records.py scan soak|bench|scenario SAMPLES.LOG           key=value words (tests, test.sh)
#   records.py summary soak|bench|scenario SAMPLES.LOG LABEL [WALL]   status 1 unless it ended rc=0
#   records.py summary stress RUN_DIR LABEL [WALL]    status 1 unless the run was clean
#   records.py progress soak|stress|bench|scenario SAMPLES.LOG LABEL WALL [SECS]
#   records.py last-words soak|stress|bench|scenario RUN_DIR   what the guest said of a failed run


def _num(d, key):
    """A figure of a record as awk would read it: missing or not a number is 0."""
    try:
        return float(d.get(key) or 0)
    except ValueError:
        m = re.match(r'-?\d+(\.\d*)?', d.get(key) or '')
        return float(m.group(0)) if m else 0.0


def _d(d, key):
    return int(_num(d, key))


def _open(path):
    return open(path, errors='replace', newline='')


class _SoakScan(Samples):
    """Samples, and what the soak's summary needs of them: the dying count
    of the last snapshot of each kind, the generation reached."""

    def __init__(self, f):
        super().__init__(f)
        self.reached = None        # as written, and as a number
        self.reached_n = 0.0
        self.reached_dying = None

    def reach(self, gen, text, dying):
        """The newest generation seen, if it is not behind the one before."""
        if gen >= self.reached_n:
            self.reached, self.reached_n, self.reached_dying = text, gen, dying

    def on_progress(self, words):
        self.reach(_num(words, 'gen'), words.get('gen', ''), words.get('dying', ''))


def _dying(rows):
    """nr_dying_subsys_memory of a snapshot's cgroup.stat, else
    nr_dying_descendants (kernels without the first), else ''."""
    kv = {k: v for s, k, v in rows if s == 'cgroup.stat'}
    v = kv.get('nr_dying_subsys_memory', kv.get('nr_dying_descendants'))
    return '' if v is None else str(v)


def soak_scan(path):
    """The fields of a soak's samples.log: snapshots complete and dropped
    (cut short or inconsistent), the "@@ end" record, the generation
    reached (last progress record or complete snapshot), the dying memory
    cgroups in the last complete snapshot, after settling and after
    drop_caches, the largest snapshot."""
    with _open(path) as f:
        w = _SoakScan(f)
        complete = 0
        last = {'': ('', ''), 'settle': None, 'drop_caches': None}
        for seq, gen, t_ms, note, rows in w:
            complete += 1
            after = kv_words(note or '').get('after', '')
            dy = _dying(rows)
            if after in ('settle', 'drop_caches'):
                last[after] = dy
                continue
            last[''] = (str(gen), dy)
            w.reach(gen, str(gen), dy)
    end = w.end or {}
    run = w.run or {}
    return {
        'complete': complete, 'dropped': w.dropped, 'cut': int(w.cut), 'ended': int(w.end is not None),
        'rc': end.get('rc', ''), 'gens': end.get('gens', ''), 't_ms': end.get('t_ms', ''),
        'target_gens': run.get('gens', ''), 'target_secs': run.get('secs', ''),
        'reached': w.reached if w.reached is not None else '',
        'reached_dying': w.reached_dying if w.reached_dying is not None else '',
        'last_gen': last[''][0], 'dying': last[''][1],
        'dying_settle': last['settle'] if last['settle'] is not None else '',
        'dying_drop': last['drop_caches'] if last['drop_caches'] is not None else '',
        'max_lines': w.max_lines, 'max_bytes': w.max_bytes,
    }


def words(d):
    return ' '.join(f'{k}={v}' for k, v in d.items())


def soak_summary(path, label):
    """(status, line): the soak's summary line."""
    v = soak_scan(path)
    snaps = f'snapshots: {v["complete"]} complete (up to {v["max_lines"]} lines, {v["max_bytes"] / 1000:.1f} KB)'
    if v['dropped']:
        snaps += f', {v["dropped"]} dropped ({"cut short" if v["cut"] else "inconsistent"})'
    if v['ended']:
        t = _num(v, 't_ms') / 1000
        drop = f', {_d(v, "dying_settle")} after settling' if v['dying_settle'] != '' else ''
        drop += f', {_d(v, "dying_drop")} after drop_caches' if v['dying_drop'] != '' else ''
        ok = _num(v, 'rc') == 0
        status = 'done' if ok else f'done with errors (rc={v["rc"]})'
        rate = _num(v, 'gens') / t if t > 0 else 0
        return (0 if ok else 1, f'{label}: {status}: {_d(v, "gens")} generations in {t:.1f} s ({rate:.1f} gen/s), '
                f'{_d(v, "dying")} dying memory cgroups at the end{drop}; {snaps}; samples: {path}')
    at = (f'after generation {_d(v, "reached")} ({_d(v, "reached_dying")} dying)' if v['reached'] != ''
          else 'before the first generation')
    return 1, f'{label}: FAILED: no "@@ end", the soak stopped {at}; {snaps}; samples: {path}'


def _mmss(secs):
    return f'{int(secs // 60)}m{int(secs % 60):02d}s'


def _last_records(path, tail=None):
    """The "@@ run" words and the newest "@@ progress" words of a samples.log
    (tail: read only that many bytes at the end for the progress)."""
    run, prog = {}, {}
    try:
        with open(path, 'rb') as f:
            first = f.readline().decode(errors='replace')
            if first.startswith('@@ run '):
                run = kv_words(first[7:].split(None, 1)[1] if len(first[7:].split(None, 1)) > 1 else '')
            if tail:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - tail))
            else:
                f.seek(0)
            for line in f.read().decode(errors='replace').splitlines():
                if line.startswith('@@ progress '):
                    prog = kv_words(line[12:])
    except OSError:
        pass
    return run, prog


def soak_progress(path, label, wall):
    run, p = _last_records(path, tail=262144)   # snapshots are ~21 KB: the newest progress is near the end
    if not p:
        return f'{label}: booting, wall {wall}'
    gen, t = _num(p, 'gen'), _num(p, 't_ms') / 1000
    rate = gen / t if t > 0 else 0
    gens, secs = _num(run, 'gens'), _num(run, 'secs')
    left = -1
    if gens > 0 and rate > 0:
        left = (gens - gen) / rate
    if secs > 0 and (left < 0 or secs - t < left):
        left = secs - t
    if left < 0 and secs > 0:
        left = 0
    eta = 'time left unknown' if left < 0 else f'~{_mmss(left)} left'
    of = f'/{int(gens)} ({int(100 * gen / gens)}%)' if gens > 0 else ''
    return f'{label}: gen {int(gen)}{of}, {rate:.1f} gen/s, {_d(p, "dying")} dying, {eta}, wall {wall}'


def stress_progress(path, label, wall, secs):
    _, p = _last_records(path)
    if not p:
        return f'{label}: booting, wall {wall}'
    t = _num(p, 't_ms') / 1000
    left = secs - t
    phase = (f'{int(t)}/{int(secs)} s ({int(100 * t / secs)}%), ~{_mmss(left)} left' if left > 0
             else f'{int(t)} s, stopping and cleaning up')
    return (f'{label}: {phase}: {_d(p, "cgroups_created")} cgroups created, {_d(p, "removed")} removed, '
            f'{_d(p, "ooms")} OOMs, {_d(p, "dying")} dying, swap {int(_num(p, "swap_kb") / 1024)} MiB, '
            f'{_d(p, "failures")} failures, wall {wall}')


def _records(path):
    """run, newest progress and end words of a samples.log, and the "@@ result" counts."""
    run, prog, end = {}, {}, None
    results = none = 0
    try:
        with _open(path) as f:
            for line in f:
                line = line.rstrip('\r\n')
                if line.startswith('@@ run '):
                    parts = line[7:].split(None, 1)
                    run = kv_words(parts[1] if len(parts) > 1 else '')
                elif line.startswith('@@ progress '):
                    prog = kv_words(line[12:])
                elif line.startswith('@@ end '):
                    m = END.match(line)
                    end = {'rc': m.group(1), **kv_words(m.group(2))} if m else kv_words(line[7:])
                elif line.startswith('@@ result '):
                    results += 1
                    none += ' value=none ' in line + ' '
    except OSError:
        pass
    return run, prog, end, results, none


def console_count(path, pattern):
    try:
        with open(path, errors='replace') as f:
            return sum(pattern in line for line in f)
    except OSError:
        return 0


def stress_summary(run_dir, label, wall=''):
    """(status, line) of a stress run folder: its records, boot.sh's verdict
    and the OOM kills on the console; clean only with "@@ end rc=0", a
    clean verdict and no global OOM kill."""
    f = os.path.join(run_dir, 'samples.log')
    console = os.path.join(run_dir, 'console.log')
    verdict = 'none'
    try:
        verdict = read_meta(os.path.join(run_dir, 'meta')).get('verdict') or 'none'
    except OSError:
        pass
    mo = console_count(console, '] Memory cgroup out of memory: Killed process')
    go = console_count(console, '] Out of memory: Killed process')
    r, p, e, _, _ = _records(f)
    w = f', wall {wall}' if wall else ''
    report = {'clean': 'no kernel report', 'bad': 'KERNEL REPORT OR HANG (above)'}.get(
        verdict, 'no verdict (the guest run did not finish)')
    oom = f'{mo} memcg OOM kills on the console, {go} global'
    if e is None:
        at = (f'at {int(_num(p, "t_ms") / 1000)} s ({_d(p, "cgroups_created")} cgroups created, '
              f'{_d(p, "removed")} removed, {_d(p, "dying")} dying)' if p.get('t_ms', '') != ''
              else 'before its first progress record')
        return 1, f'{label}: FAILED: no "@@ end", stress stopped {at}{w}; {oom}; {report}; records: {f}'
    ok = _num(e, 'rc') == 0 and verdict == 'clean' and go == 0
    why = ''
    if _num(e, 'rc') != 0:
        why += f' (stress rc={_d(e, "rc")}, failures={_d(e, "failures")}: see the "stress: FAIL" lines)'
    if go:
        why += ' (an OOM kill outside a memory cgroup)'
    mib = lambda *keys: int(sum(_num(e, k) for k in keys) * 4 / 1024)  # noqa: E731 (pages)
    line = (f'{label}: {"clean" if ok else "FAILED"}{why}: {int(_num(e, "t_ms") / 1000)} s of stress{w}, '
            f'{_d(r, "workers")} workers, seed {_d(r, "seed")}, {r.get("nodes", "")} nodes: '
            f'{_d(e, "cgroups_created")} cgroups created, {_d(e, "removed")} removed, {_d(e, "tasks")} tasks '
            f'({_d(e, "moved")} kept past rmdir), {_d(e, "ooms")} sibling OOMs ({oom}), {_d(e, "job_ooms")} job OOM kills, '
            f'{_d(e, "compactions")} compactions, {_d(e, "drops")} drop_caches, {_d(e, "reclaims")} memory.reclaim, '
            f'{_d(e, "migrate_calls")} migration calls ({_d(e, "pages_moved")} pages moved by move_pages, '
            f'{_d(e, "vm_pgmigrate_success")} pgmigrate_success), {mib("vm_pswpout", "vm_zswpout")} MiB swapped out '
            f'(peak {int(_num(e, "swap_peak_kb") / 1024)} MiB in use), {_d(e, "vm_thp_fault_alloc")} THP faults, '
            f'{int(_num(e, "sock_kb") / 1024)} MiB through {_d(e, "sockets")} TCP connections, '
            f'{_d(e, "notify_events")} inotify/fanotify events in {_d(e, "notify_groups")} groups, '
            f'{_d(e, "swap_rounds")} swap rounds ({mib("vm_pswpin", "vm_zswpin")} MiB swapped in); '
            f'dying memory cgroups: {_d(e, "dying_end")} at the end{_census_words(e)}, '
            f'{_d(e, "dying_drop")} after drop_caches, '
            f'{_d(e, "dying_root")} after all is deleted; parent left with {_d(e, "mem_end_kb")} KiB; {report}; records: {f}')
    return (0 if ok else 1), line


def _census_words(e):
    """" (by pin: dirty N, ...)" from the census_PIN=N words of an end record, if any."""
    pins = [(k[len('census_'):], v) for k, v in e.items()
            if k.startswith('census_') and k != 'census_dying' and str(v) not in ('0', '')]
    if not any(k.startswith('census_') for k in e):
        return ''
    return ' (by pin: ' + (', '.join(f'{k} {v}' for k, v in pins) or 'none') + ')'


def bench_scan(path):
    run, p, e, results, none = _records(path)
    return {'results': results, 'none': none, 'ended': int(e is not None),
            'rc': e.get('rc', '') if e else '', 't_ms': e.get('t_ms', '') if e else '',
            'part': p.get('part', ''), 'done': p.get('done', ''), 'of': p.get('of', ''),
            'nodes': run.get('nodes', '')}     # the NUMA nodes the guest saw ("@@ run")


def bench_summary(path, label):
    v = bench_scan(path)
    none = f' ({v["none"]} of them not within their limit)' if v['none'] else ''
    if v['ended']:
        ok = _num(v, 'rc') == 0
        status = 'done' if ok else f'done with errors (rc={v["rc"]})'
        return (0 if ok else 1), f'{label}: {status}: {v["results"]} results{none} in {_num(v, "t_ms") / 1000:.0f} s; results: {path}'
    if not v['results']:
        return 1, f'{label}: FAILED: no results at all ({path})'
    at = f' ({v["part"]} {v["done"]}/{v["of"]} done)' if v['part'] else ''
    return 1, f'{label}: FAILED: no "@@ end" after {v["results"]} results{at}; results: {path}'


def bench_progress(path, label, wall):
    v = bench_scan(path)
    if not v['part']:
        return f'{label}: booting or first measurement, wall {wall}'
    return f'{label}: {v["part"]} {_d(v, "done")}/{_d(v, "of")}, {v["results"]} results, wall {wall}'


def _walled(a):
    """The label of a summary, with the wall time when one is given."""
    return f'{a[1]} (wall {a[2]})' if len(a) > 2 and a[2] else a[1]


def last_words(tool, run_dir):
    """What the guest said of a failed run: its own failures, else its last
    lines; for stress the global OOM kills too.  Indented lines, or ''."""
    try:
        with open(os.path.join(run_dir, 'console.log'), errors='replace') as f:
            lines = [line.rstrip('\r\n') for line in f]
    except OSError:
        return ''
    ours = [line for line in lines if line.startswith(tool)]
    if tool == 'stress':
        said = [line for line in ours if line.startswith('stress: FAIL')][:20] or \
            [line for line in ours if line.startswith('stress: ')][-3:]
        out = ['    guest: ' + line for line in said]
        out += ['    global OOM: ' + line for line in lines if '] Out of memory: Killed process' in line][:5]
    elif tool == 'bench':
        out = ['    guest: ' + line for line in ours if not re.search(r' rep \d+: ', line)][-5:]
    else:
        out = ['    guest: ' + line for line in ours][-5:]
    return '\n'.join(out)


def oracle_module():
    """oracle.py of this folder (the records of a scenario run), loaded once
    as the module "records_oracle": reports/oracle.py, the comparison, is
    the module "oracle" of a program that imports both."""
    mod = sys.modules.get('records_oracle')
    if mod is None:
        spec = importlib.util.spec_from_file_location(
            'records_oracle', os.path.join(os.path.dirname(os.path.abspath(__file__)), 'oracle.py'))
        mod = importlib.util.module_from_spec(spec)
        sys.modules['records_oracle'] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            del sys.modules['records_oracle']
            raise
    return mod


def main(argv):
    oracle = oracle_module      # loaded for a scenario command only
    cmds = {
        ('scan', 'soak'): lambda a: (0, words(soak_scan(a[0]))),
        ('scan', 'bench'): lambda a: (0, words(bench_scan(a[0]))),
        ('summary', 'soak'): lambda a: soak_summary(a[0], _walled(a)),
        ('summary', 'bench'): lambda a: bench_summary(a[0], _walled(a)),
        ('summary', 'stress'): lambda a: stress_summary(a[0], a[1], a[2] if len(a) > 2 else ''),
        ('progress', 'soak'): lambda a: (0, soak_progress(a[0], a[1], a[2])),
        ('progress', 'stress'): lambda a: (0, stress_progress(a[0], a[1], a[2], float(a[3]))),
        ('progress', 'bench'): lambda a: (0, bench_progress(a[0], a[1], a[2])),
        ('scan', 'scenario'): lambda a: (0, words(oracle().scan(a[0]))),
        ('summary', 'scenario'): lambda a: oracle().summary(a[0], _walled(a)),
        ('progress', 'scenario'): lambda a: (0, oracle().progress(a[0], a[1], a[2])),
        ('last-words', 'scenario'): lambda a: (0, oracle().last_words(a[0])),
    }
    nargs = {'scan': 1, 'summary': 2, 'progress': 3, 'last-words': 1}
    for tool in ('soak', 'stress', 'bench'):
        cmds[('last-words', tool)] = lambda a, tool=tool: (0, last_words(tool, a[0]))
    if len(argv) < 2 or (argv[0], argv[1]) not in cmds or len(argv) - 2 < nargs[argv[0]]:
        print('usage: records.py scan soak|bench|scenario SAMPLES.LOG | '
              'summary soak|bench|scenario SAMPLES.LOG LABEL | '
              'summary stress RUN_DIR LABEL [WALL] | last-words soak|stress|bench|scenario RUN_DIR | '
              'progress soak|bench|scenario SAMPLES.LOG LABEL WALL | '
              'progress stress SAMPLES.LOG LABEL WALL SECS', file=sys.stderr)
        return 2
    rc, line = cmds[(argv[0], argv[1])](argv[2:])
    print(line)
    return rc


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
