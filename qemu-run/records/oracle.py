"""Read the samples.log of a scenario run (guest/scenario.c, the differential
oracle; the format is the last section of qemu-run/records/RECORDS.md).
Parsing only: reports/oracle.py compares two runs, db/ingest.py stores one.

    run = parse(path)            # or ScenarioRecords(f), iterated: checkpoint by checkpoint
    run.run                      # the "@@ run" knobs {key: value}
    run.scenarios['basic']       # Scenario: name, file, acts, checkpoints, audits, kmsg, end
    run.end                      # {'rc': int, 'scenarios': int, 't_ms': int}, None: cut short

What the host prints while a scenario run goes on and when it ends
(records.py's CLI calls these for the tool "scenario"):

    summary(path, label)         (status, line): 1 unless the run said "@@ end rc=0"
    progress(path, label, wall)  one line: the scenario being played, its actions so far
    last_words(run_dir)          what the guest said of a failed run
    scan(path)                   key=value words (tests)

This module is also loaded as "records_oracle" (records.oracle_module()):
reports/oracle.py is another module called oracle.
"""
import collections
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import records  # noqa: E402

Act = collections.namedtuple('Act', 'seq line ms out cmd')
Audit = collections.namedtuple('Audit', 'checkpoint check ok detail')

ACT = re.compile(r'^@@ act (\S+) (\d+) line=(\d+) ms=(-?\d+(?:\.\d+)?) out=(\S+) cmd=(.*)$')
CP = re.compile(r'^@@ cp (\S+) (\S+)\s*$')
ENDCP = re.compile(r'^@@ endcp (\S+) (\S+) lines=(\d+)\s*$')
AUDIT = re.compile(r'^@@ audit (\S+) (\S+) (\S+) (ok|fail)(?: (.*))?$')
KMSG = re.compile(r'^@@ kmsg (\S+) (.*)$')
SCENARIO = re.compile(r'^@@ scenario (\S+) file=(\S+)\s*$')
ENDSCENARIO = re.compile(r'^@@ endscenario (\S+) (.*)$')
FILEKEY = re.compile(r'^[A-Za-z0-9_.]+:\S+$')
MAX_PROBLEMS = 20


def _int(text):
    """A decimal integer within sqlite's 64 bits, else None."""
    if not (text.isascii() and (text.isdigit() or (text[:1] == '-' and text[1:].isdigit()))):
        return None
    v = int(text)
    return v if records.INT64_MIN <= v <= records.INT64_MAX else None


def unique_name(seen, name):
    """name, or name#2, name#3, ... when it was seen before in the same
    scope: a scenario file played twice in a run, a checkpoint inside a
    "repeat" block.  Both kernels play the same files, so the numbering is
    the same on both sides."""
    seen[name] = seen.get(name, 0) + 1
    return name if seen[name] == 1 else f'{name}#{seen[name]}'


class Scenario:
    """One "@@ scenario" .. "@@ endscenario" of a run.

    name        the key of the scenario in the run (the name the guest wrote,
                #2, #3, ... when the run played it again)
    written     the name as the guest wrote it (its records name it so)
    file        the scenario file (file=)
    acts        [Act(seq, line, ms, out, cmd)] in order
    checkpoints {checkpoint: {(cgroup, 'file:key'): int}}, complete ones only, in order
    dropped     {checkpoint: why} of the checkpoints cut short or inconsistent
    audits      [Audit(checkpoint, check, ok (bool), detail)]
    kmsg        [kernel log line]
    end         {'rc', 'acts', 't_ms'} of "@@ endscenario" (ints), None: cut short
    """

    def __init__(self, name, written, file):
        self.name, self.written, self.file = name, written, file
        self.acts = []
        self.checkpoints = {}
        self.dropped = {}
        self.audits = []
        self.kmsg = []
        self.end = None
        self.cp_seen = {}          # checkpoint names as written -> occurrences
        self.cp_last = {}          # checkpoint name as written -> its key, the latest

    def cp_key(self, written):
        """The key of the checkpoint an audit names: the latest of that name."""
        return self.cp_last.get(written, written)

    def audit_failures(self):
        return [a for a in self.audits if not a.ok]


class ScenarioRecords:
    """Walk the samples.log of a scenario run.  Iterating yields each
    complete checkpoint as (scenario, checkpoint, {(cgroup, file:key):
    value}) as soon as its "@@ endcp" is read; after the walk (or parse())
    the whole run is here:

    .run, .run_line   the "@@ run scenario" knobs, and as written
    .program          the program "@@ run" named ("scenario" for a scenario run)
    .scenarios        {name: Scenario}, in the order they started
    .end              the "@@ end" record {'rc', 'scenarios', 't_ms'} (ints), None: cut short
    .dropped          checkpoints dropped: cut short (no "@@ endcp", another
                      record inside), a wrong lines= count, a bad data line,
                      a cgroup and key twice; never stored half
    .malformed        lines that are no record of the format (counted, not
                      fatal): a record that does not parse, a record that
                      names a scenario other than the one being played,
                      a data line outside a checkpoint, a second act of a seq
    .cut              a dropped checkpoint was cut short (not only inconsistent)
    .problems         the first reasons of both, as text
    .lines            lines read

    A record belongs to the scenario being played (the last "@@ scenario"
    not yet ended): one that names another is malformed.  A "@@ scenario"
    while another is open ends that one cut short (its end stays None)."""

    def __init__(self, f):
        self.f = f
        self.run = None
        self.run_line = ''
        self.program = None
        self.scenarios = {}
        self.end = None
        self.dropped = 0
        self.cut = False
        self.malformed = 0
        self.problems = []
        self.lines = 0
        self._names = {}
        self._cur = None

    def _problem(self, text):
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(text)

    def _bad(self, n, why, line):
        self.malformed += 1
        self._problem(f'line {n}: {why}: {line[:80]!r}')

    def _drop(self, scen, cp, why, cut=False):
        self.dropped += 1
        self.cut = self.cut or cut
        if scen is not None:
            scen.dropped[cp] = why
        self._problem(f'checkpoint {scen.name if scen else "?"}/{cp}: {why}')

    def _open(self, n, name, line):
        """The scenario being played if the record names it, else None (malformed)."""
        s = self._cur
        if s is None:
            self._bad(n, 'no scenario is being played', line)
            return None
        if name != s.written:
            self._bad(n, f'names scenario {name}, {s.written} is being played', line)
            return None
        return s

    def __iter__(self):
        self._cur = None
        cur = None      # the open checkpoint: [scenario, key, written, {values}, bad]
        n = 0
        for n, raw in enumerate(self.f, 1):
            line = raw.rstrip('\r\n')
            if not line.startswith('@@'):
                if cur is None:
                    if line.strip():
                        self._bad(n, 'data line outside a checkpoint', line)
                    continue
                parts = line.rsplit(' ', 2)
                why = 'is not "cgroup file:key integer"'
                if len(parts) == 3 and parts[0] and FILEKEY.match(parts[1]):
                    v = _int(parts[2])
                    if not (records.printable(parts[0].replace(' ', '_')) and records.printable(parts[1])):
                        why = 'has a control or non-ASCII byte in its cgroup or key'
                    elif v is None:
                        why = 'has a value that is not an integer within 64 bits'
                    elif (parts[0], parts[1]) in cur[3]:
                        why = 'repeats a cgroup and key'
                    else:
                        cur[3][(parts[0], parts[1])] = v
                        continue
                self._bad(n, why, line)
                cur[4] = cur[4] or f'line {n} {why}'
                continue
            if cur is not None and not line.startswith('@@ endcp'):
                # A checkpoint is written at once: any other record inside
                # it means it was cut short.
                self._drop(cur[0], cur[1], f'cut short by "{line[:20]}" at line {n}', cut=True)
                cur = None
            if line.startswith('@@ act '):
                m = ACT.match(line)
                if not m:
                    self._bad(n, 'bad "@@ act" record', line)
                    continue
                s = self._open(n, m.group(1), line)
                if s is None:
                    continue
                seq = int(m.group(2))
                if s.acts and seq <= s.acts[-1].seq:
                    self._bad(n, f'act {seq} comes after act {s.acts[-1].seq}', line)
                    continue
                ms = float(m.group(4))
                s.acts.append(Act(seq, int(m.group(3)), int(ms) if ms == int(ms) else ms, m.group(5), m.group(6)))
            elif line.startswith('@@ cp '):
                m = CP.match(line)
                if not m:
                    self._bad(n, 'bad "@@ cp" record', line)
                    continue
                s = self._open(n, m.group(1), line)
                if s is None:
                    continue
                key = unique_name(s.cp_seen, m.group(2))
                s.cp_last[m.group(2)] = key
                cur = [s, key, m.group(2), {}, None]
            elif line.startswith('@@ endcp'):
                m = ENDCP.match(line)
                if cur is None:
                    self._bad(n, '"@@ endcp" without its "@@ cp"', line)
                elif not m or m.group(1) != cur[0].written or m.group(2) != cur[2]:
                    self._drop(cur[0], cur[1], f'bad or foreign "@@ endcp" at line {n}: {line[:80]!r}')
                elif cur[4]:
                    self._drop(cur[0], cur[1], cur[4])
                elif int(m.group(3)) != len(cur[3]):
                    self._drop(cur[0], cur[1], f'{len(cur[3])} data lines, "@@ endcp" says {m.group(3)}')
                else:
                    cur[0].checkpoints[cur[1]] = cur[3]
                    yield cur[0].name, cur[1], cur[3]
                cur = None
            elif line.startswith('@@ audit '):
                m = AUDIT.match(line)
                if not m:
                    self._bad(n, 'bad "@@ audit" record', line)
                    continue
                s = self._open(n, m.group(1), line)
                if s is not None:
                    s.audits.append(Audit(s.cp_key(m.group(2)), m.group(3), m.group(4) == 'ok', m.group(5) or ''))
            elif line.startswith('@@ kmsg '):
                m = KMSG.match(line)
                if not m:
                    self._bad(n, 'bad "@@ kmsg" record', line)
                    continue
                s = self._open(n, m.group(1), line)
                if s is not None:
                    s.kmsg.append(m.group(2))
            elif line.startswith('@@ scenario '):
                m = SCENARIO.match(line)
                if not m:
                    self._bad(n, 'bad "@@ scenario" record', line)
                    continue
                if self._cur is not None:
                    self._problem(f'line {n}: scenario {self._cur.name} cut short: no "@@ endscenario"')
                s = Scenario(unique_name(self._names, m.group(1)), m.group(1), m.group(2))
                self.scenarios[s.name] = self._cur = s
            elif line.startswith('@@ endscenario '):
                m = ENDSCENARIO.match(line)
                kv = records.kv_words(m.group(2)) if m else {}
                end = {k: _int(kv.get(k, '')) for k in ('rc', 'acts', 't_ms')}
                if not m or None in end.values():
                    self._bad(n, 'bad "@@ endscenario" record', line)
                    continue
                s = self._open(n, m.group(1), line)
                if s is None:
                    continue
                s.end = end
                if end['acts'] != len(s.acts):
                    self._problem(f'scenario {s.name}: "@@ endscenario" says acts={end["acts"]}, '
                                  f'{len(s.acts)} "@@ act" records read')
                self._cur = None
            elif line.startswith('@@ run '):
                words = line[7:].split(None, 1)
                self.program = words[0] if words else ''
                self.run_line = words[1].strip() if len(words) > 1 else ''
                self.run = records.kv_words(self.run_line)
            elif line.startswith('@@ end '):
                m = records.END.match(line)
                kv = records.kv_words(m.group(2)) if m else {}
                if not m:
                    self._bad(n, 'bad "@@ end" record', line)
                    continue
                self.end = {'rc': int(m.group(1)), 'scenarios': _int(kv.get('scenarios', '')),
                            't_ms': _int(kv.get('t_ms', ''))}
                if self._cur is not None:
                    self._problem(f'line {n}: scenario {self._cur.name} cut short: no "@@ endscenario"')
                    self._cur = None
            # other records ("@@ progress", ...): not ours to judge
        if cur is not None:
            self._drop(cur[0], cur[1], 'cut short: no "@@ endcp" before the end of the file', cut=True)
        self.lines = n

    # ---- the whole run, once walked

    def checkpoint_count(self):
        return sum(len(s.checkpoints) for s in self.scenarios.values())

    def value_count(self):
        return sum(len(v) for s in self.scenarios.values() for v in s.checkpoints.values())

    def audit_failures(self):
        return sum(len(s.audit_failures()) for s in self.scenarios.values())

    def kmsg_count(self):
        return sum(len(s.kmsg) for s in self.scenarios.values())


def parse(path):
    """The whole run of a samples.log (a ScenarioRecords, walked)."""
    with open(path, errors='replace', newline='') as f:
        run = ScenarioRecords(f)
        for _ in run:
            pass
    return run


# ---- what the host prints while the guest plays and when it ends

def scan(path):
    """The figures of a scenario run's samples.log, for the summary and tests."""
    run = parse(path)
    ss = list(run.scenarios.values())
    last = ss[-1] if ss else None
    end = run.end or {}
    return {
        'scenarios': len(ss), 'ended_scenarios': sum(s.end is not None for s in ss),
        'ok_scenarios': sum(s.end is not None and s.end['rc'] == 0 for s in ss),
        'checkpoints': run.checkpoint_count(), 'values': run.value_count(),
        'dropped': run.dropped, 'cut': int(run.cut), 'malformed': run.malformed,
        'acts': sum(len(s.acts) for s in ss), 'audit_fail': run.audit_failures(), 'kmsg': run.kmsg_count(),
        'ended': int(run.end is not None), 'rc': end.get('rc', ''),
        't_ms': '' if end.get('t_ms') is None else end['t_ms'],
        'files': len([f for f in (run.run or {}).get('files', '').split(',') if f]),
        'last': last.name if last else '', 'last_acts': len(last.acts) if last else 0,
    }


def _plural(n, word):
    return f'{n} {word}' if n == 1 else f'{n} {word}s'


def summary(path, label):
    """(status, line): the scenario run's summary line; status 1 unless the
    run ended with "@@ end rc=0"."""
    v = scan(path)
    text = (f'{_plural(v["scenarios"], "scenario")}, {v["ok_scenarios"]} ended rc=0, '
            f'{_plural(v["checkpoints"], "checkpoint")}, {v["audit_fail"]} audit failures, {v["kmsg"]} kmsg')
    if v['dropped']:
        text += f', {v["dropped"]} dropped ({"cut short" if v["cut"] else "inconsistent"})'
    if v['malformed']:
        text += f', {v["malformed"]} malformed lines'
    if v['ended']:
        t = f' ({records._mmss(v["t_ms"] / 1000)})' if v['t_ms'] != '' else ''
        if v['rc'] == 0:
            return 0, f'{label}: {text}{t}; records: {path}'
        return 1, f'{label}: done with errors (rc={v["rc"]}): {text}{t}; records: {path}'
    at = (f'in scenario {v["last"]} after {_plural(v["last_acts"], "act")}' if v['last']
          else 'before the first scenario')
    return 1, f'{label}: FAILED: no "@@ end", the run stopped {at}: {text}; records: {path}'


def progress(path, label, wall):
    """One line: the scenario being played (its number of the run's
    files), its actions and checkpoints so far.  A light pass over the
    records: data lines are skipped unread."""
    run = files = None
    started = ended = 0
    name, acts, cps, fails = '', 0, 0, 0
    try:
        with open(path, 'rb') as f:
            for raw in f:
                if not raw.startswith(b'@@ '):
                    continue
                line = raw.decode(errors='replace').rstrip('\r\n')
                word = line[3:].split(' ', 2)
                if word[0] == 'run' and run is None:
                    run = records.kv_words(line[7:])
                    files = len([x for x in run.get('files', '').split(',') if x])
                elif word[0] == 'scenario' and len(word) > 1:
                    started += 1
                    name, acts, cps, fails = word[1], 0, 0, 0
                elif word[0] == 'act':
                    acts += 1
                elif word[0] == 'endcp':
                    cps += 1
                elif word[0] == 'audit':
                    m = AUDIT.match(line)
                    fails += bool(m and m.group(4) == 'fail')
                elif word[0] == 'end':
                    ended = 1
    except OSError:
        pass
    if run is None:
        return f'{label}: booting, wall {wall}'
    if ended:
        return f'{label}: done, {_plural(started, "scenario")}, wall {wall}'
    if not started:
        return f'{label}: starting, wall {wall}'
    of = f'/{files}' if files else ''
    return (f'{label}: scenario {started}{of} {name}: {_plural(acts, "act")}, '
            f'{_plural(cps, "checkpoint")}, {fails} audit failures, wall {wall}')


def last_words(run_dir):
    """What the guest said of a failed run: the scenario tool's failures on
    the console (else its last lines), and where its records stop.
    Indented lines, or ''."""
    out = []
    try:
        with open(os.path.join(run_dir, 'console.log'), errors='replace') as f:
            ours = [line.rstrip('\r\n') for line in f if line.startswith('scenario')]
    except OSError:
        ours = []
    said = [line for line in ours if re.search(r'failed|must succeed|cannot', line)][:20] or ours[-5:]
    out += ['    guest: ' + line for line in said]
    try:
        run = parse(os.path.join(run_dir, 'samples.log'))
    except OSError:
        return '\n'.join(out)
    if run.end is None and run.scenarios:
        s = list(run.scenarios.values())[-1]
        if s.end is None:
            last = s.acts[-1] if s.acts else None
            at = f'act {last.seq} (line {last.line}: {last.cmd}) out={last.out}' if last else 'no act yet'
            out.append(f'    records: scenario {s.name} ({s.file}) stops after {at}')
    for s in run.scenarios.values():
        out += [f'    kmsg ({s.name}): {line}' for line in s.kmsg][:5]
    return '\n'.join(out)
