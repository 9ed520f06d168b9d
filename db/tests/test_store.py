"""A bad RUNS_DB is a clear error, never a traceback, and loses nothing."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, '..'))
import store  # noqa: E402


class BadDatabase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='store-test-')
        self.addCleanup(shutil.rmtree, self.tmp)

    def refused(self, path, why):
        with self.assertRaises(SystemExit) as e:
            store.connect(path)
        self.assertIn(why, str(e.exception))
        self.assertIn(path, str(e.exception))

    def test_directory(self):
        self.refused(self.tmp, 'is a directory')

    def test_not_a_database(self):
        path = os.path.join(self.tmp, 'runs.sqlite')
        with open(path, 'w') as f:
            f.write('not a database, a text file of notes\n' * 200)
        self.refused(path, 'not an sqlite database')
        with open(path) as f:
            self.assertTrue(f.read().startswith('not a database'))   # untouched

    def test_read_only(self):
        path = os.path.join(self.tmp, 'runs.sqlite')
        store.connect(path).close()
        os.chmod(path, 0o444)
        self.refused(path, 'is read-only')

    def test_cli_says_it_without_a_traceback(self):
        r = subprocess.run([sys.executable, os.path.join(HERE, '..', 'check.py')],
                           capture_output=True, text=True, env=dict(os.environ, RUNS_DB=self.tmp))
        self.assertNotEqual(r.returncode, 0)
        self.assertNotIn('Traceback', r.stderr)
        self.assertIn('is a directory', r.stderr + r.stdout)


if __name__ == '__main__':
    unittest.main()
