"""reports/report.py on fake databases: the page, its plots and links, the
cover-letter table, and the empty and one-kernel cases.  No browser here:
reports/tests/browser_check.py (make report-check) loads the page in Chromium."""
import html.parser
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, 'reports'))
sys.path.insert(0, os.path.join(TOP, 'db', 'tests'))
sys.path.insert(0, os.path.join(TOP, 'db'))
import fake_run  # noqa: E402
import report  # noqa: E402
import store  # noqa: E402


class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.imgs, self.hrefs, self.ids = [], [], set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if 'id' in a:
            self.ids.add(a['id'])
        if tag == 'img':
            self.imgs.append(a['src'])
        if tag == 'a' and 'href' in a:
            self.hrefs.append(a['href'])


def render(db, out):
    bad, secs = report.render_swap(db, out)
    with open(os.path.join(out, 'index.html')) as f:
        text = f.read()
    p = Links()
    p.feed(text)
    return bad, text, p


class Report(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix='report-test-')
        cls.both = os.path.join(cls.tmp, 'both.sqlite')
        fake_run.fill_db(cls.both, os.path.join(cls.tmp, 'runs-both'), nights=3, gens=300, sample_every=25)
        cls.orig = os.path.join(cls.tmp, 'orig.sqlite')
        fake_run.fill_db(cls.orig, os.path.join(cls.tmp, 'runs-orig'), ('original',), nights=1, gens=200,
                         sample_every=50, kselftest=False)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def check_files(self, out, p):
        for src in p.imgs:
            with open(os.path.join(out, src), 'rb') as f:
                self.assertEqual(f.read(8), b'\x89PNG\r\n\x1a\n', src)
        for href in p.hrefs:
            if href.startswith('#'):
                self.assertIn(href[1:], p.ids)
            else:
                self.assertTrue(os.path.getsize(os.path.join(out, href)) > 0, href)

    def test_answer_first(self):
        """The page opens with the answer (soak, kselftests, oracle, from the
        stored runs), then the dying plot and the table; the details below
        fold."""
        out = os.path.join(self.tmp, 'out-answer')
        bad, text, p = render(self.both, out)
        self.assertEqual(bad, [])
        h2 = text.index('<h2')
        self.assertTrue(text.startswith('<h2 id="answer">The answer</h2>\n<ul class="answer">', h2))
        answer = text[h2:text.index('</ul>', h2)]
        self.assertRegex(answer, r'Soak: <b class="k-original">original</b> \d+ dying of 300 generations')
        self.assertIn('<b class="k-patched">patched</b>', answer)
        self.assertIn('as the matrix expects', answer)
        self.assertIn('Differential oracle', answer)
        self.assertLess(text.index('id="dying"'), text.index('id="table"'))
        self.assertLess(text.index('id="table"'), text.index('<details open><summary><h2 id="runs"'))
        self.assertEqual(text.count('<details open>'), text.count('</details>'))
        self.assertNotIn('<details open><summary><h2 id="dying"', text)

    def test_both_kernels(self):
        out = os.path.join(self.tmp, 'out-both')
        bad, text, p = render(self.both, out)
        self.assertEqual(bad, [])
        self.assertEqual(sorted(p.imgs), sorted([
            'dying.png', 'census-original.png', 'census-patched.png', 'cost.png',
            'slabinfo-original.png', 'slabinfo-patched.png', 'memstat-original.png', 'memstat-patched.png', 'trend-1.png']))
        self.check_files(out, p)
        self.assertNotIn('class="notice"', text)
        # The nightly table gives each soak's dying memcgs by pin (census rows).
        self.assertRegex(text, r'<td>dirty \d+, shmem \d+, pagecache \d+(, anon \d+)?(, swap \d+)?</td>')
        # The kselftest matrix: the LRU subtests fail on original, as expected.
        self.assertIn('<td>test_reparent_pagecache</td><td class="fail" title="expected fail">fail</td>'
                      '<td class="pass" title="expected pass">pass</td>', text)

    def test_cover_table(self):
        out = os.path.join(self.tmp, 'out-table')
        render(self.both, out)
        with open(os.path.join(out, 'table.txt')) as f:
            lines = f.read().splitlines()
        self.assertEqual([x.split()[0] for x in lines], ['gen', 'original', 'patched', 'mem'])
        head = lines[0].split()
        self.assertEqual(head[1:], ['0', '50', '100', '150', '200', '250', '300', 'drop'])
        # Every cell is what the database says, read here by a query of
        # its own: the last snapshot at or before each generation of each
        # kernel's latest soak, and its drop_caches snapshot.
        db = store.connect(self.both)
        self.addCleanup(db.close)
        for row, kernel in ((1, 'original'), (2, 'patched')):
            run = db.execute("SELECT run_id FROM latest_runs WHERE kind = 'soak' AND kernel = ?",
                             (kernel,)).fetchone()[0]
            want = [db.execute('SELECT dying FROM dying WHERE run_id = ? AND note IS NULL AND gen <= ? '
                               'ORDER BY gen DESC, seq DESC LIMIT 1', (run, int(g))).fetchone()[0]
                    for g in head[1:8]]
            want.append(db.execute("SELECT dying FROM dying WHERE run_id = ? AND note LIKE '%drop_caches%'",
                                   (run,)).fetchone()[0])
            self.assertEqual([int(x) for x in lines[row].split()[1:]], want, kernel)

    def test_failed_or_other_workload_runs_left_out(self):
        path = os.path.join(self.tmp, 'left-out.sqlite')
        fake_run.fill_db(path, os.path.join(self.tmp, 'runs-left'), nights=1, gens=200, sample_every=50,
                         kselftest=False)
        db = store.connect(path)
        empty = os.path.join(self.tmp, 'empty-known')
        open(empty, 'w').close()
        expect = os.path.join(self.tmp, 'runs-left', 'expectations')
        # A newer patched soak whose guest run was bad (a panic), and a
        # newer original soak of another workload.
        for k, seed, verdict in (('patched', 1, 'bad'), ('original', 9, 'clean')):
            d = os.path.join(self.tmp, f'runs-left-{k}')
            fake_run.soak_run(d, k, gens=200, sample_every=50, seed=seed, started='2026-12-09T02:00:00Z')
            meta = os.path.join(d, 'meta')
            with open(meta) as f:
                text = f.read().replace('verdict=clean', f'verdict={verdict}')
            with open(meta, 'w') as f:
                f.write(text)
            fake_run.store(db, d, known=empty, expect=expect, db_path=path)
        db.close()
        out = os.path.join(self.tmp, 'out-left')
        _, text, _ = render(path, out)
        self.assertIn('Newer soaks left out of the comparison', text)
        self.assertRegex(text, r'run \d+ \(patched, 2026-12-09T02:00:00Z\): verdict bad')
        self.assertRegex(text, r'run \d+ \(original, 2026-12-09T02:00:00Z\): another workload')
        self.assertNotIn('ran different workloads', text)

    def test_guest_tool_failure_is_no_clean_verdict(self):
        path = os.path.join(self.tmp, 'tool-failed.sqlite')
        fake_run.fill_db(path, os.path.join(self.tmp, 'runs-tf'), ('original',), nights=1, gens=200,
                         sample_every=50, kselftest=False)
        db = store.connect(path)
        db.execute("UPDATE runs SET soak_rc = 3")
        db.close()
        _, text, _ = render(path, os.path.join(self.tmp, 'out-tf'))
        self.assertIn('<td>clean, soak failed (rc=3)</td>', text)

    def test_one_kernel(self):
        out = os.path.join(self.tmp, 'out-orig')
        bad, text, p = render(self.orig, out)
        self.assertEqual(bad, [])
        self.assertIn('No soak run of <b>patched</b> in the database yet', text)
        self.assertIn('No kselftest run in the database yet', text)
        self.assertEqual(sorted(p.imgs), ['census-original.png', 'cost.png', 'dying.png', 'memstat-original.png',
                                          'slabinfo-original.png', 'trend-1.png'])
        self.check_files(out, p)
        with open(os.path.join(out, 'table.txt')) as f:
            lines = f.read().splitlines()
        self.assertEqual([x.split()[0] for x in lines], ['gen', 'original', 'mem'])
        self.assertEqual(set(lines[2].split()[2:]), {'n/a'})

    def test_benchmarks(self):
        """The fast paths with their intervals, the offline cost against the
        page cache and on the dead x nodes axes are plotted, reclaim after a rmdir is a table; a smoke batch of one rep
        never stands for the fast paths."""
        path = os.path.join(self.tmp, 'bench.sqlite')
        db = store.connect(path)
        known = os.path.join(self.tmp, 'known-bench')
        open(known, 'w').close()

        def batch(name, started, **kw):
            for k in ('original', 'patched'):
                d = os.path.join(self.tmp, f'runs-bench-{name}-{k}')
                fake_run.bench_run(d, k, started=started, tag=name, **kw)
                fake_run.store(db, d, known=known, expect=known, db_path=path, batch=name)
        batch('fast', '2026-12-05T01:00:00Z', sizes=(64,), reps=1, fast_reps=3, parts='fast', clock='icount')
        batch('smoke', '2026-12-05T02:00:00Z', sizes=(64,), reps=1, fast_reps=1, parts='fast', clock='icount')
        for i, (nodes, dead) in enumerate(((1, 0), (1, 100), (2, 0), (2, 100))):
            batch(f'axes{i}', f'2026-12-05T03:0{i}:00Z', sizes=(64,), reps=3, parts='offline', clock='icount',
                  run_words=f'nodes={nodes} dead={dead}')
        batch('sizes', '2026-12-05T00:30:00Z', sizes=(1, 64, 512), reps=3, parts='offline,fast', clock='icount')
        batch('reclaim', '2026-12-05T04:00:00Z', reps=0, parts='reclaim', clock='icount')
        db.close()
        out = os.path.join(self.tmp, 'out-bench')
        bad, text, p = render(path, out)
        self.assertEqual(bad, [])
        self.assertIn('bench-fast.png', p.imgs)
        self.assertIn('bench-offline-axes.png', p.imgs)
        self.assertIn('bench-offline-size.png', p.imgs)
        self.assertIn('not released within the timeout in 9 of 9 repetitions', text)
        self.check_files(out, p)
        self.assertIn('The fast paths, batch <code>fast</code>', text)
        self.assertIn('Instruction-count mode', text)
        self.assertNotIn('<code>smoke</code>', text)
        self.assertIn('<td>reclaim.gen.refault_pct</td>', text)
        with open(os.path.join(out, 'data', 'bench-fast.tsv')) as f:
            rows = [line.split('\t') for line in f if not line.startswith(('#', 'i\t'))]
        self.assertEqual([r[1] for r in rows], ['read_mibps', 'fault_per_s', 'charge_per_s', 'ctxsw_per_s'])
        self.assertTrue(all(float(r[3]) <= float(r[2]) <= float(r[4]) for r in rows))
        with open(os.path.join(out, 'data', 'bench-offline-axes.tsv')) as f:
            lines = [line.rstrip('\n').split('\t') for line in f if not line.startswith('#')]
        self.assertEqual(lines[0][:3], ['i', 'dead_memcgs', '1 node'])
        self.assertEqual([r[1] for r in lines[1:]], ['0', '100'])

    def test_no_database(self):
        out = os.path.join(self.tmp, 'out-none')
        missing = os.path.join(self.tmp, 'nothing-here.sqlite')
        bad, text, p = render(missing, out)
        self.assertEqual(bad, [])
        self.assertIn('There is no runs database at', text)
        self.assertEqual(p.imgs, [])
        self.assertFalse(os.path.exists(missing))          # rendering creates nothing
        self.check_files(out, p)

    def test_empty_database(self):
        path = os.path.join(self.tmp, 'empty.sqlite')
        store.connect(path).close()
        out = os.path.join(self.tmp, 'out-empty')
        bad, text, p = render(path, out)
        self.assertEqual(bad, [])
        self.assertIn('No soak run in the database yet', text)
        self.assertIn('No kselftest run in the database yet', text)
        self.assertIn('The database holds no runs.', text)
        self.assertIn('No bench batch of the fast paths with 3 values a side', text)
        self.assertIn('No batch of the offline axes', text)
        self.assertEqual(p.imgs, [])
        self.check_files(out, p)

    def test_failed_render_keeps_the_last_dashboard(self):
        out = os.path.join(self.tmp, 'out-keep')
        render(self.orig, out)
        with open(os.path.join(out, 'index.html')) as f:
            before = f.read()
        future = os.path.join(self.tmp, 'future.sqlite')
        db = store.connect(future)
        db.execute(f'PRAGMA user_version = {store.SCHEMA_VERSION + 1}')
        db.close()
        with self.assertRaises(SystemExit) as e:
            report.render_swap(future, out)
        self.assertIn('newer than this checkout knows', str(e.exception))
        with open(os.path.join(out, 'index.html')) as f:
            self.assertEqual(f.read(), before)
        self.assertEqual([n for n in os.listdir(self.tmp) if n.startswith('out-keep.')], ['out-keep.lock'])

    def test_two_renders_at_once(self):
        import concurrent.futures
        out = os.path.join(self.tmp, 'out-twice')
        with concurrent.futures.ThreadPoolExecutor(2) as ex:
            jobs = [ex.submit(report.render_swap, self.both, out) for _ in range(2)]
            self.assertEqual([j.result()[0] for j in jobs], [[], []])
        _, _, p = render(self.both, out)
        self.check_files(out, p)

    def test_rerender_removes_stale_plots(self):
        out = os.path.join(self.tmp, 'out-stale')
        render(self.both, out)
        render(self.orig, out)
        self.assertFalse(os.path.exists(os.path.join(out, 'slabinfo-patched.png')))


class Helpers(unittest.TestCase):
    def test_interp(self):
        self.assertEqual(report.interp([0, 10], [0, 100], 5), 50)
        self.assertEqual(report.interp([0, 10], [0, 100], 10), 100)
        self.assertIsNone(report.interp([0, 10], [0, 100], 11))
        self.assertIsNone(report.interp([], [], 1))

    def test_gnuplot_literals(self):
        self.assertEqual(report.gp(['a b', 'c']), '"\'a b\' \'c\'"')
        self.assertEqual(report.gp('say "hi"'), '"say \\"hi\\""')
        self.assertEqual(report.gp(3), '3')

    def test_text_table(self):
        t = report.table_text(['gen', '0', '100'], [('original', ['39', '1574']), ('patched', ['23', '55'])])
        self.assertEqual(t, 'gen         0  100\noriginal   39 1574\npatched    23   55\n')


if __name__ == '__main__':
    unittest.main()
