"""Read the files of a run folder (qemu-run/RECORDS.md): meta, results.log
and samples.log (a soak's snapshots, a bench's results).  Parsing only;
db/ingest.py stores what this yields."""
import re

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
        self.problems = []
        self.lines = 0

    def _drop(self, seq, why):
        self.dropped += 1
        if len(self.problems) < 20:
            self.problems.append(f'snapshot {seq}: {why}')

    def __iter__(self):
        cur = None          # [seq, gen, t_ms, note, rows, bad]
        seen = set()
        n = 0
        for n, line in enumerate(self.f, 1):
            if not line.startswith('@@'):
                if cur is None:
                    continue       # stray data outside a snapshot: not ours to guess
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
                self._drop(cur[0], f'cut short by "{line[:20]}" at line {n}')
                cur = None
            if line.startswith('@@ sample '):
                if cur is not None:
                    self._drop(cur[0], f'no "@@ endsample" before line {n}')
                m = SAMPLE.match(line)
                if not m:
                    cur = None
                    self._drop('?', f'bad header at line {n}: {line[:80]!r}')
                    continue
                cur = [int(m.group(1)), int(m.group(2)), int(m.group(3)),
                       m.group(4).strip() or None, [], None]
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
                    yield cur[0], cur[1], cur[2], cur[3], cur[4]
                cur = None
            elif line.startswith('@@ run '):
                words = line[7:].split(None, 1)     # "soak key=value ..."
                self.run_line = words[1].strip() if len(words) > 1 else ''
                self.run = kv_words(self.run_line)
            elif line.startswith('@@ end '):
                m = END.match(line)
                if m:
                    self.end = {'rc': int(m.group(1)), **kv_words(m.group(2))}
            # "@@ progress" and unknown records: for the host's progress line only.
        if cur is not None:
            self._drop(cur[0], 'cut short: no "@@ endsample" before the end of the file')
        self.lines = n


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
            elif line.startswith('@@ run '):
                words = line[7:].split(None, 1)     # "bench key=value ..."
                self.run_line = words[1].strip() if len(words) > 1 else ''
                self.run = kv_words(self.run_line)
            elif line.startswith('@@ end '):
                m = END.match(line)
                if m:
                    self.end = {'rc': int(m.group(1)), **kv_words(m.group(2))}
            # "@@ progress" and unknown records: for the host's progress line only.
        self.lines = n
