import contextlib
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'kernel'))
import kconfig_check  # noqa: E402


class KconfigCheck(unittest.TestCase):
    def run_check(self, config, fragment):
        with tempfile.TemporaryDirectory() as d:
            c, f = os.path.join(d, '.config'), os.path.join(d, 'frag')
            open(c, 'w').write(config)
            open(f, 'w').write(fragment)
            with contextlib.redirect_stdout(io.StringIO()):
                return kconfig_check.main(['kconfig_check.py', c, f])

    def test_survivors_pass(self):
        cfg = 'CONFIG_MEMCG=y\nCONFIG_NR_CPUS=4\n# CONFIG_SLUB_TINY is not set\n'
        frag = 'CONFIG_MEMCG=y\nCONFIG_NR_CPUS=4\n# CONFIG_SLUB_TINY is not set\n'
        self.assertEqual(self.run_check(cfg, frag), 0)

    def test_dropped_option_fails(self):
        # The trap of NOTES.md: a dependency missing drops the option.
        self.assertEqual(self.run_check('CONFIG_MEMCG=y\n', 'CONFIG_CGROUP_WRITEBACK=y\n'), 1)

    def test_changed_value_fails(self):
        self.assertEqual(self.run_check('CONFIG_NR_CPUS=8\n', 'CONFIG_NR_CPUS=4\n'), 1)

    def test_unset_option_that_is_set_fails(self):
        # tinyconfig's SLUB_TINY=y silently drops /proc/slabinfo.
        self.assertEqual(self.run_check('CONFIG_SLUB_TINY=y\n', '# CONFIG_SLUB_TINY is not set\n'), 1)

    def test_unset_option_absent_passes(self):
        self.assertEqual(self.run_check('CONFIG_SLUB=y\n', '# CONFIG_SLUB_TINY is not set\n'), 0)

    def run_frags(self, config, *frags):
        with tempfile.TemporaryDirectory() as d:
            c = os.path.join(d, '.config')
            open(c, 'w').write(config)
            paths = []
            for i, frag in enumerate(frags):
                paths.append(os.path.join(d, f'frag{i}'))
                open(paths[-1], 'w').write(frag)
            with contextlib.redirect_stdout(io.StringIO()):
                return kconfig_check.main(['kconfig_check.py', c] + paths)

    def test_later_fragment_overrides(self):
        # debug.config turns base.config's PREEMPT_VOLUNTARY into PREEMPT.
        cfg = '# CONFIG_PREEMPT_VOLUNTARY is not set\nCONFIG_PREEMPT=y\n'
        base = 'CONFIG_PREEMPT_VOLUNTARY=y\n'
        debug = '# CONFIG_PREEMPT_VOLUNTARY is not set\nCONFIG_PREEMPT=y\n'
        self.assertEqual(self.run_frags(cfg, base, debug), 0)
        # ...but the earlier fragment still rules what the later one leaves
        self.assertEqual(self.run_frags(cfg, base + 'CONFIG_MEMCG=y\n', debug), 1)
        # and the later one must survive itself
        self.assertEqual(self.run_frags('CONFIG_PREEMPT_VOLUNTARY=y\n', base, debug), 1)

    def test_real_fragments_parse(self):
        top = os.path.join(os.path.dirname(__file__), '..', 'kernel', 'config')
        for name in ('base.config', 'debug.config'):
            with open(os.path.join(top, name)) as f:
                opts = kconfig_check.parse(f)
            self.assertIn('CONFIG_SLUB_TINY' if name == 'base.config' else 'CONFIG_KASAN', opts)


if __name__ == '__main__':
    unittest.main()
