import os
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
AWK = os.path.join(HERE, '..', 'series', 'checkpatch-accept.awk')
LIST = os.path.join(HERE, '..', 'series', 'checkpatch-accepted')

ENOSYS = """\
WARNING: ENOSYS means 'invalid syscall nr' and nothing else
#412: FILE: tools/testing/selftests/cgroup/test_memcg_reparent.c:376:
+\t\tif (errno == ENOSYS)
"""
# checkpatch's own words on patch 10's tracepoint list (series-check, 2026-12-05).
EM_SPACE = """\
ERROR: space prohibited after that open parenthesis '('
#111: FILE: include/trace/events/writeback.h:48:
+\tEM( WB_REASON_FOREIGN_FLUSH,\t\t"foreign_flush")\t\\
"""
OTHER = """\
CHECK: Alignment should match open parenthesis
#88: FILE: mm/memcontrol.c:120:
+\tfoo(a,
"""


def run(patch, text, lst=LIST):
    p = subprocess.run(['awk', '-v', 'patch=' + patch, '-v', 'list=' + lst, '-f', AWK],
                       input=text, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


class Accept(unittest.TestCase):
    def test_accepted_for_its_patch_only(self):
        rc, out, _ = run('0001-selftests-cgroup-test-that.patch', ENOSYS + '\n' + ENOSYS)
        self.assertEqual(rc, 0)
        self.assertEqual(out.strip(), '@@ accepted 2')
        # The same report on a kernel patch is not accepted.
        rc, out, _ = run('0005-mm-memcontrol-charge.patch', ENOSYS)
        self.assertIn("ENOSYS means", out)
        self.assertTrue(out.rstrip().endswith('@@ accepted 0'))

    def test_every_entry_matches_the_words_it_accepts(self):
        """Each accepted item of the real list matches checkpatch's real
        words: the first version of patch 10's regex wanted '(' at the end
        of the line, which never ends so, and accepted nothing."""
        rc, out, _ = run('0010-writeback-write-back-a-dying.patch', EM_SPACE)
        self.assertEqual((rc, out.strip()), (0, '@@ accepted 1'))
        rc, out, _ = run('0011-mm-memcontrol-let-sockets.patch', EM_SPACE)
        self.assertTrue(out.rstrip().endswith('@@ accepted 0'))

    def test_other_reports_kept(self):
        rc, out, _ = run('0001-selftests-cgroup-x.patch', ENOSYS + '\n' + OTHER)
        self.assertEqual(rc, 0)
        self.assertIn('Alignment should match', out)
        self.assertNotIn('ENOSYS', out)
        self.assertTrue(out.rstrip().endswith('@@ accepted 1'))

    def test_clean(self):
        rc, out, _ = run('0002-x.patch', '')
        self.assertEqual((rc, out.strip()), (0, '@@ accepted 0'))

    def test_failed_checkpatch_output_kept(self):
        rc, out, _ = run('0001-selftests-cgroup-x.patch', 'Can\'t locate Foo.pm in @INC\n')
        self.assertIn("Can't locate", out)

    def test_bad_list(self):
        with tempfile.NamedTemporaryFile('w', suffix='.txt') as f:
            f.write('0001-*.patch no tab here\n')
            f.flush()
            rc, out, err = run('0001-x.patch', ENOSYS, f.name)
        self.assertEqual((rc, out), (2, ''))
        self.assertIn('no tab-separated regex', err)
        rc, out, err = run('0001-x.patch', ENOSYS, '/nonexistent/list')
        self.assertEqual((rc, out), (2, ''))
        self.assertIn('cannot read', err)


if __name__ == '__main__':
    unittest.main()
