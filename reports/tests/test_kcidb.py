"""reports/kcidb.py: the runs database as KCIDB v5.3 JSON.  The export of
real-shaped runs passes the schema (written from the v5.3 spec), the schema
accepts what v5.1 to v5.3 added and refuses what the spec refuses, and
reading the export back gives the outcomes and figures the database holds
(round trip)."""
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, 'db', 'tests'))
sys.path.insert(0, os.path.join(TOP, 'db'))
sys.path.insert(0, os.path.join(TOP, 'reports'))
import fake_run  # noqa: E402
import kcidb  # noqa: E402
import store  # noqa: E402

KCIDB = os.path.join(TOP, 'reports', 'kcidb.py')


class Export(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix='kcidb-test-')
        cls.path = os.path.join(cls.tmp, 'runs.sqlite')
        fake_run.fill_db(cls.path, os.path.join(cls.tmp, 'runs'), nights=2, gens=200, sample_every=50)
        cls.db = store.connect(cls.path)
        cls.doc = kcidb.export(cls.db)

    @classmethod
    def tearDownClass(cls):
        cls.db.close()
        shutil.rmtree(cls.tmp)

    def test_valid(self):
        self.assertEqual(kcidb.problems(self.doc), [])
        self.assertEqual(self.doc['version'], {'major': 5, 'minor': 3})
        self.assertTrue(kcidb.SCHEMA.endswith('schema-v5.3.json'))
        self.assertEqual(len(self.doc['builds']), 2)
        self.assertEqual(sorted(b['config_name'] for b in self.doc['builds']), ['original', 'patched'])

    def test_round_trip_kselftests(self):
        """Every stored subtest comes back with its outcome, once."""
        want = sorted((k, f'kselftest.cgroup.{t}.{s}'.replace('(', '_').replace(')', '_'), kcidb.STATUS[o], None)
                      for k, t, s, o in self.db.execute(
                          'SELECT k.name, t.test, t.subtest, t.outcome FROM kselftest t JOIN runs r ON r.id = t.run_id '
                          'JOIN kernels k ON k.id = r.kernel_id'))
        got = sorted(r for r in kcidb.read(self.doc) if r[1].startswith('kselftest.'))
        self.assertEqual(got, want)
        # The fake kselftests fail the LRU subtests on original only.
        self.assertIn(('original', 'kselftest.cgroup.test_memcg_reparent.test_reparent_pagecache', 'FAIL', None), got)
        self.assertIn(('patched', 'kselftest.cgroup.test_memcg_reparent.test_reparent_pagecache', 'PASS', None), got)

    def test_round_trip_soak_figures(self):
        want = sorted((k, v1, v2) for k, v1, v2 in self.db.execute(
            'SELECT kernel, final_dying, dropped_dying FROM soak_final'))
        rows = kcidb.read(self.doc)
        ends = sorted((k, v) for k, p, s, v in rows if p == 'soak.dying_end')
        drops = sorted((k, v) for k, p, s, v in rows if p == 'soak.dying_after_drop')
        self.assertEqual(ends, sorted((k, a) for k, a, _ in want))
        self.assertEqual(drops, sorted((k, b) for k, _, b in want))
        self.assertEqual(sum(1 for r in rows if r[1] == 'soak'), len(want))

    def test_builds_have_a_status_not_valid(self):
        """v5.0 replaced a build's valid with status (and dropped a test's
        waived): v5.3 keeps that."""
        for b in self.doc['builds']:
            self.assertEqual(b['status'], 'PASS')
            self.assertNotIn('valid', b)
        self.assertFalse([t for t in self.doc['tests'] if 'waived' in t])

    def test_a_nul_in_a_reason_is_dropped(self):
        """KCIDB v5 refuses NUL characters outside misc; a kselftest reason
        read off a console may hold one."""
        tmp = os.path.join(self.tmp, 'nul.sqlite')
        shutil.copy(self.path, tmp)
        db = store.connect(tmp)
        try:
            run_id, ord_ = db.execute('SELECT run_id, ord FROM kselftest ORDER BY run_id, ord LIMIT 1').fetchone()
            db.execute('UPDATE kselftest SET reason = ? WHERE run_id = ? AND ord = ?', ('bad\0byte', run_id, ord_))
            db.commit()
            doc = kcidb.export(db)
        finally:
            db.close()
        self.assertEqual(kcidb.problems(doc), [])
        self.assertIn('badbyte', [t.get('comment') for t in doc['tests']])

    def test_the_same_runs_give_the_same_ids(self):
        again = kcidb.export(self.db)
        self.assertEqual(json.dumps(again, sort_keys=True), json.dumps(self.doc, sort_keys=True))

    def test_cli_writes_then_checks_then_reads(self):
        out = os.path.join(self.tmp, 'out', 'k.json')
        r = subprocess.run([sys.executable, KCIDB, '--db', self.path, '--out', out], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = subprocess.run([sys.executable, KCIDB, '--check', out], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('valid KCIDB v5.3', r.stdout)
        r = subprocess.run([sys.executable, KCIDB, '--read', out], capture_output=True, text=True)
        self.assertEqual(len(r.stdout.splitlines()), len(self.doc['tests']))


class Schema(unittest.TestCase):
    """What the spec refuses, the check refuses."""

    def setUp(self):
        self.good = {
            'version': {'major': 5, 'minor': 3},
            'checkouts': [{'id': 'o:c', 'origin': 'o', 'patchset_hash': ''}],
            'builds': [{'id': 'o:b', 'origin': 'o', 'checkout_id': 'o:c', 'status': 'PASS',
                        'architecture': 'x86_64'}],
            'tests': [{'id': 'o:t', 'origin': 'o', 'build_id': 'o:b', 'path': 'kselftest.cgroup.a',
                       'status': 'DONE', 'number': {'value': 1.5}, 'start_time': '2026-12-04T19:13:41Z'}]}
        self.assertEqual(kcidb.problems(self.good), [])

    def bad(self, change, want):
        doc = copy.deepcopy(self.good)
        change(doc)
        p = kcidb.problems(doc)
        self.assertTrue(p, 'accepted')
        self.assertIn(want, ' '.join(p))

    def test_refusals(self):
        self.bad(lambda d: d['tests'][0].update(status='OK'), "'OK' is not one of")
        self.bad(lambda d: d['tests'][0].pop('build_id'), "'build_id' is a required property")
        self.bad(lambda d: d['builds'][0].update(origin='Dying-Memcg'), 'does not match')
        self.bad(lambda d: d['tests'][0].update(id='no-origin'), 'does not match')
        self.bad(lambda d: d['tests'][0].update(path='kselftest..a'), 'does not match')
        self.bad(lambda d: d['tests'][0].update(start_time='2026-12-04 19:13'), 'is not a')
        self.bad(lambda d: d['tests'][0].update(number={'unit': 's'}), "'value' is a required property")
        self.bad(lambda d: d['tests'][0].update(value=3), 'Additional properties')
        self.bad(lambda d: d.update(version={'major': 4, 'minor': 0}), '5 was expected')
        self.bad(lambda d: d['checkouts'][0].update(patchset_hash='abc'), 'does not match')
        self.bad(lambda d: d['tests'][0].update(status=None), 'None is not')
        self.bad(lambda d: d['tests'].append(dict(d['tests'][0])), 'appears more than once')
        self.bad(lambda d: d['tests'][0].update(build_id='o:elsewhere'), 'not in the file')

    def test_refusals_of_v5_0_rules(self):
        """Rules of v5.0 that stay in v5.3."""
        self.bad(lambda d: d['tests'][0].update(waived=True), 'Additional properties')
        self.bad(lambda d: d['builds'][0].update(valid=True), 'Additional properties')
        self.bad(lambda d: d['tests'][0].update(comment='a\0b'), 'does not match')
        self.bad(lambda d: d['checkouts'][0].update(git_repository_url='git://git.kernel.org/linux.git'),
                 'does not match')
        self.bad(lambda d: d['checkouts'][0].update(git_commit_hash='0' * 64), 'does not match')
        self.bad(lambda d: d['tests'][0].update(path='kselftest.cgroup.a b'), 'does not match')

    def test_what_v5_1_to_v5_3_add(self):
        """Fields a v5.0 document may not hold, which v5.3 accepts."""
        doc = copy.deepcopy(self.good)
        # v5.1: when the origin finished the checkout's builds and tests
        doc['checkouts'][0].update(origin_builds_finish_time='2026-12-04T19:00:00Z',
                                   origin_tests_finish_time='2026-12-04T21:30:00+01:00')
        # v5.3: a test's input files
        doc['tests'][0]['input_files'] = [{'name': 'rootfs.cpio.gz', 'url': 'https://example.org/rootfs.cpio.gz'}]
        # v5.2: an issue's categories (dot-separated paths, as test paths)
        doc['issues'] = [{'id': 'o:i', 'origin': 'o', 'version': 1, 'categories': ['runtime.oops', 'build']},
                         {'id': 'o:i', 'origin': 'o', 'version': 2}]
        doc['incidents'] = [{'id': 'o:n', 'origin': 'o', 'issue_id': 'o:i', 'issue_version': 2,
                             'test_id': 'o:t', 'present': True}]
        self.assertEqual(kcidb.problems(doc), [])
        # a document of an older minor version, or none, is still valid
        for version in ({'major': 5, 'minor': 0}, {'major': 5}):
            self.assertEqual(kcidb.problems(dict(doc, version=version)), [])

    def test_refusals_of_v5_1_to_v5_3_rules(self):
        """Rules that v5.0 does not have: the new fields' shapes, the
        versions a v5.3 schema knows."""
        self.bad(lambda d: d.update(version={'major': 5, 'minor': 4}), 'is greater than the maximum of 3')
        self.bad(lambda d: d['tests'][0].update(input_files=[{'name': 'rootfs', 'url': 'https://example.org/r'},
                                                             {'name': 'initrd/initrd.img',
                                                              'url': 'https://example.org/i'}]),
                 'does not match')
        self.bad(lambda d: d['tests'][0].update(input_files=[{'name': 'rootfs'}]), "'url' is a required property")
        self.bad(lambda d: d['tests'][0].update(input_files={'name': 'rootfs', 'url': 'https://example.org/r'}),
                 'is not of type')
        self.bad(lambda d: d['checkouts'][0].update(origin_tests_finish_time='2026-12-04 21:30'), 'is not a')
        self.bad(lambda d: d['checkouts'][0].update(origin_builds_finish_time=1765000000), 'is not of type')
        self.bad(lambda d: d.update(issues=[{'id': 'o:i', 'origin': 'o', 'version': 1,
                                             'categories': ['runtime..oops']}]), 'does not match')
        self.bad(lambda d: d.update(issues=[{'id': 'o:i', 'origin': 'o', 'version': 1, 'categories': ['a']},
                                            {'id': 'o:i', 'origin': 'o', 'version': 1}]),
                 'appears more than once')

    def test_schema_is_draft_2020_12(self):
        js = kcidb.debian_module('jsonschema', 'python3-jsonschema')
        with open(kcidb.SCHEMA) as f:
            js.Draft202012Validator.check_schema(json.load(f))

    def test_patchset_hash_is_the_spec_recipe(self):
        """sha256sum *.patch | cut -c-64 | sha256sum (the cover letter aside)."""
        pdir = os.path.join(TOP, 'patches')
        names = sorted(n for n in os.listdir(pdir) if n.endswith('.patch') and not n.startswith('0000-'))
        r = subprocess.run(['bash', '-c', 'sha256sum "$@" | cut -c-64 | sha256sum | cut -c-64', '-', *names],
                           cwd=pdir, capture_output=True, text=True)
        self.assertEqual(kcidb.patchset_hash(), r.stdout.strip())


if __name__ == '__main__':
    unittest.main()
