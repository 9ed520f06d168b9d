"""The dashboard's fleet trend: nights x kernel x configuration x workload.

A database of 30 nights of soaks on 6 configurations (guest memory x vCPUs)
and 2 kernels, 360 soaks of 20 snapshots, one of them run by a LAVA lab, is
made directly in SQL (only the dying counts the trend reads); the whole
dashboard must render from it in under 10 s, with one trend plot per
configuration and the lab run named."""
import datetime
import os
import shutil
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, 'reports'))
sys.path.insert(0, os.path.join(TOP, 'db'))
import report  # noqa: E402
import store  # noqa: E402

NIGHTS, SNAPS, GENS = 30, 20, 2000
CONFIGS = [(mem, smp) for mem in (1024, 2048, 4096) for smp in (2, 4)]
WORKLOAD = ('gens={gens} jobs=2 mix=log,read/anon,tmpfs slices=2 rate=50 hog_mb=0 sample_every=100 '
            'drop=1')


def fill(path):
    db = store.connect(path)
    db.execute('BEGIN')
    src = db.execute("INSERT INTO sources (name) VALUES ('cgroup.stat')").lastrowid
    key = db.execute("INSERT INTO keys (name) VALUES ('nr_dying_subsys_memory')").lastrowid
    kernels = {}
    for name, series in (('original', ''), ('patched', 'feedc0ffee000001')):
        kernels[name] = db.execute(
            "INSERT INTO kernels (name, image_key, release, base_version, series_hash, config_hash) "
            "VALUES (?, ?, '6.12.118+', '6.12.118', ?, 'abcdef0123456789')",
            (name, f'img-{name}', series)).lastrowid
    run = 0
    day0 = datetime.date(2026, 11, 1)
    for night in range(NIGHTS):
        day = (day0 + datetime.timedelta(days=night)).isoformat()
        for mem, smp in CONFIGS:
            for name, kid in kernels.items():
                run += 1
                workload = f'seed={night + 1} ' + WORKLOAD.format(gens=GENS)
                db.execute(
                    "INSERT INTO runs (id, uid, kind, kernel_id, job, args, workload, started, wall_secs, mem_mib, "
                    "smp, verdict, done_rc, soak_rc, gens, t_ms, snapshots, dropped, run_dir, ingested, lab) "
                    "VALUES (?, ?, 'soak', ?, 'soak', '', ?, ?, 600, ?, ?, 'clean', 0, 0, ?, 600000, ?, 0, ?, ?, ?)",
                    (run, f'fleet-{run}', kid, workload, f'{day}T02:00:00Z', mem, smp, GENS, SNAPS + 1,
                     f'/nonexistent/{run}', f'{day}T03:00:00Z', 'lava:4242' if run == 7 else None))
                for seq in range(1, SNAPS + 2):
                    gen = GENS * min(seq - 1, SNAPS - 1) // (SNAPS - 1)
                    note = 'after=drop_caches' if seq == SNAPS + 1 else None
                    dying = (gen if name == 'original' else min(gen, 10 + smp + night % 3)) \
                        if note is None else (gen // 2 if name == 'original' else 0)
                    db.execute('INSERT INTO snapshots (run_id, seq, gen, t_ms, note, lines) VALUES (?, ?, ?, ?, ?, 1)',
                               (run, seq, gen, seq * 1000, note))
                    db.execute('INSERT INTO samples (run_id, seq, gen, t_ms, source_id, key_id, value) '
                               'VALUES (?, ?, ?, ?, ?, ?, ?)', (run, seq, gen, seq * 1000, src, key, dying))
    db.execute('COMMIT')
    db.close()
    return run


class Fleet(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix='fleet-test-')
        cls.db = os.path.join(cls.tmp, 'fleet.sqlite')
        cls.runs = fill(cls.db)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_view(self):
        db = store.connect(self.db)
        self.addCleanup(db.close)
        n = db.execute('SELECT count(*), count(DISTINCT config), count(DISTINCT shape), count(DISTINCT day), '
                       'count(DISTINCT label) FROM fleet_trend').fetchone()
        # the seed changes every night; the shape (the workload but its seed) does not
        self.assertEqual(n, (NIGHTS * len(CONFIGS) * 2, len(CONFIGS), 1, NIGHTS, 2))
        row = db.execute("SELECT max_dying, final_dying, dropped_dying, lab FROM fleet_trend WHERE run_id = 7"
                         ).fetchone()
        self.assertEqual(row, (GENS, GENS, GENS // 2, 'lava:4242'))

    def test_renders_30_nights_x_6_configurations_in_10_s(self):
        out = os.path.join(self.tmp, 'report')
        t = time.monotonic()
        bad, _ = report.render_swap(self.db, out)
        secs = time.monotonic() - t
        self.assertEqual(bad, [])
        self.assertLess(secs, 10, f'the dashboard took {secs:.1f} s')
        for n in range(1, len(CONFIGS) + 1):
            self.assertTrue(os.path.getsize(os.path.join(out, f'trend-{n}.png')) > 0)
        self.assertFalse(os.path.exists(os.path.join(out, f'trend-{len(CONFIGS) + 1}.png')))
        with open(os.path.join(out, 'index.html')) as f:
            page = f.read()
        self.assertIn('4096 MiB, 4 vCPU, wall, config abcdef01', page)
        self.assertIn('<td>lava:4242</td>', page)
        self.assertIn('patched@feedc0ff', page)
        print(f'\nfleet: {self.runs} soaks, dashboard rendered in {secs:.1f} s', file=sys.stderr)


if __name__ == '__main__':
    unittest.main()
