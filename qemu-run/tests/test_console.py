"""The console classifier against real guest logs (tests/fixtures).

Fixtures were captured with qemu-run/tests/capture-fixtures.sh: real consoles of
the stock and debug kernels, booted into trouble on purpose.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'boot'))
import console  # noqa: E402

FIX = os.path.join(os.path.dirname(__file__), 'fixtures')


def fixture(name):
    return console.read_lines(os.path.join(FIX, name))


def kinds(con, res, timed_out=None):
    return [k for k, _ in console.classify(con, res, timed_out)]


class Clean(unittest.TestCase):
    def test_clean_kselftest_run(self):
        # Includes memcg OOM kills from test_memcontrol: not a finding.
        con = fixture('console-clean.log')
        self.assertTrue(any('Memory cgroup out of memory' in line for line in con))
        self.assertEqual(kinds(con, fixture('results-original-kselftest.log')), [])

    def test_missing_done_is_a_failure(self):
        self.assertEqual(kinds(fixture('console-clean.log'), ['@@ boot x=1']), ['no-done'])

    def test_guest_error_is_a_failure(self):
        res = ['@@ done rc=2 error=cannot enable swap on /dev/vdb']
        self.assertEqual(kinds(fixture('console-clean.log'), res), ['guest-error'])

    def test_deadline_is_a_hang(self):
        self.assertEqual(kinds(fixture('console-clean.log'), [], timed_out=60), ['hang'])

    def test_user_output_is_not_a_report(self):
        # A test printing "BUG:" or "WARNING:" is not the kernel.
        con = ['not ok 1 BUG: my test', 'WARNING: CPU: 0 PID: 1 at x', '@@ nothing']
        self.assertEqual(kinds(con, ['@@ done rc=0']), [])


class RealFailures(unittest.TestCase):
    """Real consoles of the stock kernel booted into trouble on purpose."""

    def test_panic_without_init(self):
        # rdinit/root pointing nowhere: the kernel panics before any record.
        con = fixture('console-panic-no-init.log')
        res = fixture('results-panic-no-init.log')
        self.assertEqual(res, [])
        self.assertEqual(kinds(con, res), ['panic'])

    def test_sysrq_crash_after_boot(self):
        # The guest booted (its @@ boot record is there), then panicked.
        con = fixture('console-sysrq-crash.log')
        res = fixture('results-sysrq-crash.log')
        self.assertTrue(res[0].startswith('@@ boot '))
        found = console.classify(con, res)
        self.assertEqual([k for k, _ in found], ['panic'])
        self.assertIn('sysrq triggered crash', found[0][1][0])

    def test_hang_until_the_deadline(self):
        # A guest that sleeps forever: no report, no done, the deadline hit.
        con = fixture('console-hang.log')
        res = fixture('results-hang.log')
        self.assertEqual(kinds(con, res), ['no-done'])
        self.assertEqual(kinds(con, res, timed_out=20), ['hang'])


class Synthetic(unittest.TestCase):
    """One line per report kind, in the kernel's own words."""
    CASES = [
        ('kasan', 'BUG: KASAN: slab-use-after-free in lkdtm_SLAB_USE_AFTER_FREE+0x1/0x2'),
        ('lockdep', 'WARNING: possible circular locking dependency detected'),
        ('lockdep', 'BUG: sleeping function called from invalid context at kernel/x.c:1'),
        ('warning', 'WARNING: CPU: 1 PID: 77 at mm/memcontrol.c:1264 mem_cgroup_update_lru_size+0x1/0x2'),
        ('bug', 'kernel BUG at mm/memcontrol.c:3069!'),
        ('oops', 'BUG: kernel NULL pointer dereference, address: 0000000000000008'),
        ('oops', 'Oops: general protection fault, probably for non-canonical address 0xdead: 0000 [#1] SMP'),
        ('panic', 'Kernel panic - not syncing: Fatal exception'),
        ('rcu-stall', 'rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:'),
        ('hung-task', 'INFO: task kworker/0:1:12 blocked for more than 600 seconds.'),
        ('soft-lockup', 'watchdog: BUG: soft lockup - CPU#0 stuck for 26s! [a:1]'),
        ('bad-page', 'BUG: Bad page state in process a  pfn:1234'),
        ('list-corruption', 'list_add corruption. prev->next should be next (ffff), but was 0000.'),
        ('debugobjects', 'ODEBUG: free active (active state 0) object: ffff type: work_struct'),
    ]

    def test_each_kind(self):
        for kind, msg in self.CASES:
            with self.subTest(kind=kind):
                con = ['[    1.000000] ok', f'[   12.345678] {msg}']
                self.assertEqual(kinds(con, ['@@ done rc=0']), [kind])


class Oom(unittest.TestCase):
    """OOM-killer output is the kernel doing its job, not a report.

    console-stress-oom.log is an excerpt of a real console of the debug
    kernel under qemu-run/jobs/stress.sh: the sibling cgroup's OOM kill, with
    memory.oom.group killing its second task.  The synthetic lines are the other messages
    of mm/oom_kill.c and mm/memcontrol.c in the kernel's words: the
    pr_info() ones the guest's loglevel=6 hides, and a global OOM kill.
    """
    LINES = [
        'oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-1,'
        'oom_memcg=/stress/oom-3,task_memcg=/stress/oom-3,task=stress,pid=165,uid=0',
        'Tasks in /stress/oom-3 are going to be killed due to memory.oom.group set',
        'memory: usage 16384kB, limit 16384kB, failcnt 412',
        'swap: usage 0kB, limit 0kB, failcnt 0',
        'Memory cgroup stats for /stress/oom-3:',
        'Tasks state (memory values in pages):',
        'oom_reaper: reaped process 165 (stress), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB',
        'Out of memory: Killed process 140 (stress) total-vm:563012kB, anon-rss:550000kB, '
        'file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:1100kB oom_score_adj:0',
        'stress invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0',
    ]

    def test_real_memcg_oom_kill(self):
        con = fixture('console-stress-oom.log')
        self.assertTrue(any('invoked oom-killer' in line for line in con))
        self.assertEqual(sum('Memory cgroup out of memory: Killed process' in line for line in con), 3)
        self.assertEqual(kinds(con, ['@@ done rc=0']), [])

    def test_oom_messages(self):
        con = [f'[   33.{i:06d}] {msg}' for i, msg in enumerate(self.LINES)]
        self.assertEqual(kinds(con, ['@@ done rc=0']), [])

    def test_a_report_next_to_an_oom_kill_still_counts(self):
        con = fixture('console-stress-oom.log') + [
            '[   34.000001] BUG: Bad page state in process stress  pfn:1234']
        self.assertEqual(kinds(con, ['@@ done rc=0']), ['bad-page'])


if __name__ == '__main__':
    unittest.main()
