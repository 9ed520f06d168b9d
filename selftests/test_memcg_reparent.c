// SPDX-License-Identifier: GPL-2.0
/*
 * A removed memory cgroup must not be kept alive by the memory that was
 * charged to it: on rmdir the charges are handed to the parent. 6.12 does
 * this for slab, kmem pages, percpu and kernel stacks through obj_cgroup
 * (mem_cgroup_css_offline() -> memcg_offline_kmem() ->
 * memcg_reparent_objcgs() in mm/memcontrol.c), but an LRU folio (page
 * cache, shmem, anon, filesystem metadata in the block device's page cache)
 * holds a css reference on its memcg from commit_charge() until it is
 * freed, so the memcg stays "dying".
 *
 * Each test charges one kind of memory in a child C of a test parent P,
 * removes C while that memory stays in use and checks:
 *
 *  1. C's memory css is released: P's nr_dying_subsys_memory (cgroup.stat)
 *     comes back to its value from before C existed, polled up to a
 *     deadline;
 *  2. nothing was lost or counted twice: P's memory.current and the
 *     memory.stat keys of that kind still account for the memory;
 *  3. freeing the memory later uncharges P back to its baseline, and no
 *     memory.stat size is absurd (an underflowed counter);
 *  4. the memory was moved, not reclaimed: P's workingset refault counters
 *     do not grow and, where pages can be seen, mincore() still finds them
 *     resident.
 *
 * Only the intended kind of memory may be charged to C, or the test would
 * measure something else (an anon page of a helper would pin C as surely
 * as the page cache under test): the helpers that run in C are pinned to
 * one CPU and exit before the rmdir, so that their anon pages are freed
 * (the exit path drains the local per-CPU LRU batches in
 * free_pages_and_swap_cache(); a folio left in another CPU's batch would
 * stay charged). Tasks that must outlive C live in K, a live sibling of C:
 * P itself cannot hold tasks while it has +memory in subtree_control.
 * Memory the tests create outside C (files, directories, pipes) is charged
 * to the test's own cgroup.
 *
 * On a kernel that does not reparent LRU folios the tests of LRU memory
 * fail check 1; the slab, kmem, percpu and kernel stack tests pass.
 *
 * The tests do not rely on madvise() or fadvise(): kernels built without
 * CONFIG_ADVISE_SYSCALLS (tinyconfig) return ENOSYS for both.
 *
 * Environment: MEMCG_REPARENT_TIMEOUT (seconds to wait for check 1,
 * default 20), MEMCG_REPARENT_GENERATIONS (test_reparent_churn, default
 * 200), MEMCG_REPARENT_ONLY (a comma-separated list of subtests to run,
 * e.g. "test_reparent_dirty"; the others are reported as skipped). The
 * working directory must be on a disk filesystem that supports O_DIRECT
 * (ext4 is what the tests were written against) for the page cache tests.
 */
#define _GNU_SOURCE

#include <linux/bpf.h>
#include <linux/limits.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../kselftest.h"
#include "../clone3/clone3_selftests.h"
#include "cgroup_util.h"

/* mm/memcontrol.h: the charge batch of the per-CPU stocks */
#define MEMCG_CHARGE_BATCH	64

#define POLL_MS			20
#define STAT_POLL_MS		50
#define NUDGE_MS		250
#define SETTLE_TIMEOUT		10.0	/* stats catch up (2 s periodic flush) */
#define UNCHARGE_TIMEOUT	20.0	/* RCU and workqueue frees */
#define INFO_TIMEOUT		5.0
#define HOLDER_TIMEOUT_MS	120000

#define HOLDER_ARG		"--memcg-reparent-holder"

/* sizes of the memory under test */
#define PAGECACHE_SIZE		MB(32)
#define SHMEM_SIZE		MB(32)
#define ANON_SIZE		MB(32)
#define MAPPED_SIZE		MB(16)
#define DIRTY_SIZE		MB(16)
#define WRITEBACK_SIZE		MB(64)
#define IO_CHUNK		(64 << 10)
#define NR_PIPES		16
#define PIPE_BYTES		MB(1)
#define NR_SLAB_FILES		6000
#define NR_STACK_HOLDERS	256
#define NR_PERCPU_MAPS		2
#define PERCPU_ENTRIES		256
#define PERCPU_VALUE_SIZE	4096
#define NR_META_DIRS		256
#define NR_META_FILES		4
#define CHURN_FILE_SIZE		(256 << 10)
#define CHURN_SHMEM_SIZE	(64 << 10)
#define CHURN_NR_FILES		16
#define CHURN_NR_LOOKUPS	32
#define CHURN_DYING_BOUND	8
/* fs metadata and negative dentries the churn may legitimately leave */
#define CHURN_RESIDUE		MB(2)

enum memcg_key {
	K_ANON,
	K_FILE,
	K_KERNEL,
	K_KERNEL_STACK,
	K_PERCPU,
	K_SHMEM,
	K_FILE_MAPPED,
	K_FILE_DIRTY,
	K_FILE_WRITEBACK,
	K_SLAB_RECLAIMABLE,
	K_SLAB_UNRECLAIMABLE,
	K_SLAB,
	K_REFAULT_ANON,
	K_REFAULT_FILE,
	K_CURRENT,		/* memory.current, not memory.stat */
	NR_KEYS
};

static const char * const key_names[NR_KEYS] = {
	[K_ANON]		= "anon",
	[K_FILE]		= "file",
	[K_KERNEL]		= "kernel",
	[K_KERNEL_STACK]	= "kernel_stack",
	[K_PERCPU]		= "percpu",
	[K_SHMEM]		= "shmem",
	[K_FILE_MAPPED]		= "file_mapped",
	[K_FILE_DIRTY]		= "file_dirty",
	[K_FILE_WRITEBACK]	= "file_writeback",
	[K_SLAB_RECLAIMABLE]	= "slab_reclaimable",
	[K_SLAB_UNRECLAIMABLE]	= "slab_unreclaimable",
	[K_SLAB]		= "slab",
	[K_REFAULT_ANON]	= "workingset_refault_anon",
	[K_REFAULT_FILE]	= "workingset_refault_file",
	[K_CURRENT]		= "memory.current",
};

struct memcg_snap {
	long v[NR_KEYS];
};

struct key_range {
	int key;
	long lo;
	long hi;
};

/* One test: parent P, child C (removed), keeper K (live sibling of C) */
struct reparent_test {
	const char *name;
	char *parent;
	char *child;
	char *keep;
	long dying_base;
	struct memcg_snap base;		/* P before C existed */
	struct memcg_snap child_last;	/* C right before rmdir */
	struct memcg_snap parent_last;	/* P right before rmdir */
	bool child_removed;
	bool checked;		/* reached check 1 */
	bool failed;
};

static long page_size;
static long nr_cpus;
static long nr_cpus_conf;
static double dying_timeout = 20.0;
static int churn_generations = 200;
static char *nudge_cg;
static char *nudge_scratch_cg;

/*
 * Tolerances. A CPU's stock may hold up to MEMCG_CHARGE_BATCH pages that
 * are charged to a memcg (counted in memory.current) but not used; C's
 * stocks are drained at offline (drain_all_stock()) and P's stocks come
 * and go, hence two batches per CPU for memory.current. memory.stat is
 * only flushed synchronously when more than MEMCG_CHARGE_BATCH * nr_cpus
 * updates are pending (mem_cgroup_flush_stats()), so it may lag by one
 * batch per CPU until the 2 s periodic flush; stats are polled for a few
 * seconds on top of that.
 */
static long stat_tol(void)
{
	return MEMCG_CHARGE_BATCH * page_size * nr_cpus;
}

static long key_tol(int key)
{
	return key == K_CURRENT ? 2 * stat_tol() : stat_tol();
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
	usleep(ms * 1000);
}

static long kib(long bytes)
{
	return bytes / 1024;
}

/* Exact "key value" line lookup; cg_read_key_long() matches substrings. */
static long stat_value(const char *buf, const char *key)
{
	size_t len = strlen(key);
	const char *line = buf;

	while (line && *line) {
		if (!strncmp(line, key, len) && line[len] == ' ')
			return strtol(line + len + 1, NULL, 10);
		line = strchr(line, '\n');
		if (line)
			line++;
	}

	return -1;
}

static long read_dying(const char *cgroup)
{
	char buf[PAGE_SIZE];

	if (cg_read(cgroup, "cgroup.stat", buf, sizeof(buf)))
		return -1;

	return stat_value(buf, "nr_dying_subsys_memory");
}

static int snap_memcg(const char *cgroup, struct memcg_snap *s)
{
	char buf[4 * PAGE_SIZE];
	int i;

	if (cg_read(cgroup, "memory.stat", buf, sizeof(buf))) {
		ksft_print_msg("cannot read %s/memory.stat\n", cgroup);
		return -1;
	}

	for (i = 0; i < NR_KEYS; i++) {
		if (i == K_CURRENT)
			s->v[i] = cg_read_long(cgroup, "memory.current");
		else
			s->v[i] = stat_value(buf, key_names[i]);
		if (s->v[i] < 0) {
			ksft_print_msg("%s: no %s\n", cgroup, key_names[i]);
			return -1;
		}
	}

	return 0;
}

static const char * const check_names[] = {
	"setup",
	"css released",
	"still accounted",
	"uncharged on free",
	"not reclaimed",
};

/* Print one failed expectation; the test fails at the end. */
static __printf(3, 4)
void report(struct reparent_test *t, int check, const char *fmt, ...)
{
	va_list args;

	t->failed = true;
	printf("# %s: check %d (%s): ", t->name, check, check_names[check]);
	va_start(args, fmt);
	vprintf(fmt, args);
	va_end(args);
	fflush(stdout);
}

static int pin_to_this_cpu(void)
{
	cpu_set_t set;
	int cpu = sched_getcpu();

	if (cpu < 0)
		return -1;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/*
 * Nudge what is legitimately asynchronous, without reclaiming anything:
 *
 * - A CPU's memcg stock keeps a css reference on the memcg it caches even
 *   with no pages left in it, and drain_all_stock() at offline skips such
 *   stocks (and skips everything when another drain is running). A charge
 *   from another memcg on that CPU replaces the stock (__refill_stock()).
 * - The unmap then drains the CPU's LRU batches (lru_add_drain() in
 *   free_pages_and_swap_cache()), so no folio waits in a batch.
 * - cleanup_offline_cgwbs_work switches inodes of a dead memcg's writeback
 *   to the parent, but skips a wb that still has dirty io and only runs
 *   again when some memcg goes offline (wb_memcg_offline()): offline an
 *   empty scratch memcg.
 *
 * The nudge memcgs live under the root, outside P.
 */
static void nudge(void)
{
	long cpu;
	pid_t pid;

	if (!nudge_cg)
		return;

	if (!cg_create(nudge_scratch_cg))
		rmdir(nudge_scratch_cg);

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return;
	if (pid == 0) {
		if (cg_enter_current(nudge_cg))
			_exit(EXIT_FAILURE);
		for (cpu = 0; cpu < nr_cpus_conf && cpu < CPU_SETSIZE; cpu++) {
			cpu_set_t set;
			char *p;

			CPU_ZERO(&set);
			CPU_SET(cpu, &set);
			if (sched_setaffinity(0, sizeof(set), &set))
				continue;
			p = mmap(NULL, 4 * page_size, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED)
				continue;
			memset(p, 1, 4 * page_size);
			munmap(p, 4 * page_size);
		}
		_exit(EXIT_SUCCESS);
	}
	waitpid(pid, NULL, 0);
}

/*
 * Poll nr_dying_subsys_memory of @cgroup until it is <= @bound or the
 * deadline passes. Returns the last value seen, -1 on read error.
 */
static long wait_dying(const char *cgroup, long bound, double timeout,
		       double *elapsed)
{
	double start = now(), last_nudge = 0;
	long dying;

	for (;;) {
		dying = read_dying(cgroup);
		*elapsed = now() - start;
		if (dying < 0 || dying <= bound || *elapsed >= timeout)
			return dying;
		if (now() - last_nudge >= NUDGE_MS / 1000.0) {
			nudge();
			last_nudge = now();
		}
		sleep_ms(POLL_MS);
	}
}

/*
 * Poll @cgroup's counters until all @r hold or @timeout passes, then
 * report the ones that do not hold. Returns true if all hold.
 */
static bool expect_ranges(struct reparent_test *t, int check,
			  const char *cgroup, const struct key_range *r,
			  int nr, double timeout, struct memcg_snap *seen)
{
	double start = now();
	bool ok;
	int i;

	for (;;) {
		if (snap_memcg(cgroup, seen)) {
			report(t, check, "cannot read %s\n", cgroup);
			return false;
		}
		ok = true;
		for (i = 0; i < nr; i++)
			if (seen->v[r[i].key] < r[i].lo ||
			    seen->v[r[i].key] > r[i].hi)
				ok = false;
		if (ok || now() - start >= timeout)
			break;
		sleep_ms(STAT_POLL_MS);
	}

	for (i = 0; i < nr; i++) {
		long v = seen->v[r[i].key];

		if (v >= r[i].lo && v <= r[i].hi)
			continue;
		report(t, check,
		       "%s: expected %ld..%ld KiB, saw %ld KiB after %.1f s\n",
		       key_names[r[i].key], kib(r[i].lo), kib(r[i].hi),
		       kib(v), now() - start);
	}

	return ok;
}

static int rt_setup(struct reparent_test *t, const char *root,
		    const char *name)
{
	char leaf[NAME_MAX];

	memset(t, 0, sizeof(*t));
	t->name = name;
	snprintf(leaf, sizeof(leaf), "memcg_reparent_%s",
		 name + strlen("test_reparent_"));
	t->parent = cg_name(root, leaf);
	t->child = cg_name(t->parent, "child");
	t->keep = cg_name(t->parent, "keep");
	if (!t->parent || !t->child || !t->keep)
		return KSFT_FAIL;

	/* leftovers of an interrupted run */
	cg_destroy(t->child);
	cg_destroy(t->keep);
	cg_destroy(t->parent);

	if (cg_create(t->parent) ||
	    cg_write(t->parent, "cgroup.subtree_control", "+memory") ||
	    cg_create(t->keep)) {
		ksft_print_msg("%s: cannot create %s\n", name, t->parent);
		return KSFT_FAIL;
	}

	t->dying_base = read_dying(t->parent);
	if (t->dying_base < 0) {
		ksft_print_msg("%s: no nr_dying_subsys_memory in cgroup.stat\n",
			       name);
		return KSFT_SKIP;
	}

	if (snap_memcg(t->parent, &t->base))
		return KSFT_FAIL;

	if (cg_create(t->child)) {
		ksft_print_msg("%s: cannot create %s\n", name, t->child);
		return KSFT_FAIL;
	}

	return KSFT_PASS;
}

/*
 * Record C and P right before removing C, then remove C. Every task must
 * have left C already. Returns -1 if C could not be removed.
 */
static int rt_remove_child(struct reparent_test *t)
{
	if (snap_memcg(t->child, &t->child_last) ||
	    snap_memcg(t->parent, &t->parent_last)) {
		report(t, 0, "cannot read the counters before rmdir\n");
		return -1;
	}

	if (rmdir(t->child)) {
		report(t, 0, "rmdir %s: %s\n", t->child, strerror(errno));
		return -1;
	}
	t->child_removed = true;

	return 0;
}

/*
 * The memory under test really was charged to C: poll C's counter, which
 * may lag behind (see stat_tol()).
 */
static bool wait_charged(struct reparent_test *t, int key, long min)
{
	double start = now();
	struct memcg_snap s;

	for (;;) {
		if (snap_memcg(t->child, &s)) {
			report(t, 0, "cannot read %s\n", t->child);
			return false;
		}
		if (s.v[key] >= min)
			return true;
		if (now() - start >= SETTLE_TIMEOUT)
			break;
		sleep_ms(STAT_POLL_MS);
	}

	report(t, 0, "%s of the child: expected >= %ld KiB, saw %ld KiB\n",
	       key_names[key], kib(min), kib(s.v[key]));
	return false;
}

/* Check 1: C's memory css is released within the deadline. */
static bool check_released(struct reparent_test *t, long bound)
{
	double elapsed;
	long dying;

	t->checked = true;
	dying = wait_dying(t->parent, bound, dying_timeout, &elapsed);
	if (dying >= 0 && dying <= bound)
		return true;

	if (dying < 0)
		report(t, 1, "cannot read %s/cgroup.stat\n", t->parent);
	else
		report(t, 1, "nr_dying_subsys_memory: expected %s%ld, saw %ld after %.1f s\n",
		       bound == t->dying_base ? "" : "<= ", bound, dying,
		       elapsed);
	return false;
}

/*
 * Check 2: P still accounts for what C had. P's hierarchical counters
 * already included C's charges before rmdir, so after the removal each key
 * must lie between P's baseline plus what C had (minus the tolerance: C's
 * stock drained at offline, stat lag), and what P had right before rmdir
 * (which also counts C's own memcg structures, charged to P, plus the
 * tolerance). Double counting lands near baseline + 2 * C, losing the
 * memory near the baseline.
 */
static bool check_accounted(struct reparent_test *t, const int *keys, int nr)
{
	struct key_range r[NR_KEYS];
	struct memcg_snap seen;
	int i;

	for (i = 0; i < nr; i++) {
		int k = keys[i];

		r[i].key = k;
		r[i].lo = t->base.v[k] + t->child_last.v[k] - key_tol(k);
		r[i].hi = t->parent_last.v[k] + key_tol(k);
	}
	r[nr].key = K_CURRENT;
	r[nr].lo = t->base.v[K_CURRENT] + t->child_last.v[K_CURRENT] -
		   key_tol(K_CURRENT);
	r[nr].hi = t->parent_last.v[K_CURRENT] + key_tol(K_CURRENT);

	return expect_ranges(t, 2, t->parent, r, nr + 1, SETTLE_TIMEOUT,
			     &seen);
}

/*
 * Check 4, refaults: nothing under test was evicted, so P's refault
 * counters must not move at all across the removal.
 */
static bool check_no_refaults(struct reparent_test *t,
			      const struct memcg_snap *since)
{
	static const int keys[] = { K_REFAULT_ANON, K_REFAULT_FILE };
	struct memcg_snap now_snap;
	bool ok = true;
	size_t i;

	if (snap_memcg(t->parent, &now_snap)) {
		report(t, 4, "cannot read %s\n", t->parent);
		return false;
	}

	for (i = 0; i < ARRAY_SIZE(keys); i++) {
		long before = since->v[keys[i]];
		long after = now_snap.v[keys[i]];

		if (after <= before)
			continue;
		report(t, 4, "%s: expected no growth (%ld), saw %ld\n",
		       key_names[keys[i]], before, after);
		ok = false;
	}

	return ok;
}

/* Check 4, residency: every page resident before rmdir still is. */
static bool check_resident(struct reparent_test *t, long before, long after)
{
	if (before >= 0 && after >= before)
		return true;

	report(t, 4, "resident pages (mincore): expected %ld, saw %ld\n",
	       before, after);
	return false;
}

/*
 * Memory sizes in memory.stat come before the first event counter
 * ("workingset_refault_anon"). A per-memcg counter that went negative
 * reads as 0 (memcg_page_state() clamps it), one that wrapped reads as a
 * huge value: none may exceed RAM plus swap.
 */
static bool check_sane_sizes(struct reparent_test *t, int check)
{
	char buf[4 * PAGE_SIZE];
	struct sysinfo si;
	long limit, current;
	char *line, *save;
	bool ok = true;

	if (sysinfo(&si) ||
	    cg_read(t->parent, "memory.stat", buf, sizeof(buf))) {
		report(t, check, "cannot read memory.stat or sysinfo\n");
		return false;
	}
	limit = (long)((si.totalram + si.totalswap) * (unsigned long)si.mem_unit);

	current = cg_read_long(t->parent, "memory.current");
	if (current < 0 || current > limit) {
		report(t, check, "memory.current: expected 0..%ld KiB, saw %ld KiB\n",
		       kib(limit), kib(current));
		ok = false;
	}

	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *val = strchr(line, ' ');
		unsigned long long v;

		if (!strncmp(line, "workingset_refault_anon ", 24))
			break;
		if (!val)
			continue;
		*val++ = '\0';
		v = strtoull(val, NULL, 10);
		if (v <= (unsigned long long)limit)
			continue;
		report(t, check, "%s: expected 0..%ld KiB, saw %llu KiB (underflow?)\n",
		       line, kib(limit), v / 1024);
		ok = false;
	}

	return ok;
}

/*
 * Check 3: once the memory is freed P goes back to its baseline from
 * before C existed, within the tolerance (@extra more, for memory the test
 * cannot free), and no size is absurd.
 */
static bool check_uncharged(struct reparent_test *t, const int *keys, int nr,
			    long extra)
{
	struct key_range r[NR_KEYS];
	struct memcg_snap seen;
	bool ok;
	int i;

	for (i = 0; i < nr; i++) {
		int k = keys[i];

		r[i].key = k;
		r[i].lo = t->base.v[k] - key_tol(k);
		r[i].hi = t->base.v[k] + key_tol(k) + extra;
	}
	r[nr].key = K_CURRENT;
	r[nr].lo = t->base.v[K_CURRENT] - key_tol(K_CURRENT);
	r[nr].hi = t->base.v[K_CURRENT] + key_tol(K_CURRENT) + extra;

	ok = expect_ranges(t, 3, t->parent, r, nr + 1, UNCHARGE_TIMEOUT,
			   &seen);

	return check_sane_sizes(t, 3) && ok;
}

/*
 * Check 3 for dirty and writeback pages: once the file is synced, P's
 * file_dirty and file_writeback are back to their baseline exactly. No
 * tolerance: nothing else dirties pages in P, and the values are polled
 * past the periodic stats flush.
 */
static bool check_clean(struct reparent_test *t)
{
	struct key_range r[2] = {
		{ K_FILE_DIRTY, 0, t->base.v[K_FILE_DIRTY] },
		{ K_FILE_WRITEBACK, 0, t->base.v[K_FILE_WRITEBACK] },
	};
	struct memcg_snap seen;

	return expect_ranges(t, 3, t->parent, r, 2, SETTLE_TIMEOUT, &seen);
}

/*
 * When check 1 failed, say whether freeing the memory under test let the
 * child go: that tells a pin by the memory under test from a pin by
 * something else.
 */
static void info_released_after_free(struct reparent_test *t)
{
	double elapsed;
	long dying;

	if (!t->failed)
		return;

	dying = wait_dying(t->parent, t->dying_base, INFO_TIMEOUT, &elapsed);
	ksft_print_msg("%s: after freeing the memory nr_dying_subsys_memory is %ld (%.1f s)\n",
		       t->name, dying, elapsed);
}

static int rt_cleanup(struct reparent_test *t, int ret)
{
	if (t->child && !t->child_removed)
		cg_destroy(t->child);
	if (t->keep)
		cg_destroy(t->keep);
	if (t->parent)
		cg_destroy(t->parent);
	free(t->child);
	free(t->keep);
	free(t->parent);

	if (ret != KSFT_PASS)
		return ret;
	if (!t->checked && !t->failed)
		ksft_print_msg("%s: setup failed\n", t->name);
	return t->failed || !t->checked ? KSFT_FAIL : KSFT_PASS;
}

/*
 * Run @fn in a new process inside @cgroup, pinned to the CPU it starts on
 * so that its exit drains the LRU batches holding its pages. With
 * @share_files the process shares the caller's file table: a descriptor
 * it opens outlives it in the caller. Returns fn's exit code, -1 on error.
 */
static int run_in_cgroup(const char *cgroup, int (*fn)(void *arg), void *arg,
			 bool share_files)
{
	struct __clone_args args = {
		.flags = share_files ? CLONE_FILES : 0,
		.exit_signal = SIGCHLD,
	};
	int status;
	pid_t pid;

	fflush(stdout);
	pid = share_files ? sys_clone3(&args, sizeof(args)) : fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (pin_to_this_cpu() || cg_enter_current(cgroup))
			_exit(EXIT_FAILURE);
		_exit(fn(arg));
	}

	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* Read exactly @len bytes from @fd, waiting at most @timeout_ms. */
static int read_full(int fd, void *buf, size_t len, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	double deadline = now() + timeout_ms / 1000.0;
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		int left = (deadline - now()) * 1000;

		if (left <= 0 || poll(&pfd, 1, left) <= 0)
			return -1;
		n = read(fd, (char *)buf + done, len - done);
		if (n <= 0)
			return -1;
		done += n;
	}

	return 0;
}

/*
 * A holder charges memory in C, moves to K and keeps it while C is
 * removed. On request it reports the result of @query (e.g. resident
 * pages); it exits when its command pipe is closed.
 */
struct holder {
	pid_t pid;
	int cmd;
	int resp;
};

static int holder_start(struct holder *h, struct reparent_test *t,
			int (*charge)(void *arg), long (*query)(void *arg),
			void *arg)
{
	int cmd[2], resp[2];
	char c;

	h->pid = -1;
	if (pipe2(cmd, O_CLOEXEC)) {
		report(t, 0, "pipe2: %s\n", strerror(errno));
		return -1;
	}
	if (pipe2(resp, O_CLOEXEC)) {
		report(t, 0, "pipe2: %s\n", strerror(errno));
		close(cmd[0]);
		close(cmd[1]);
		return -1;
	}

	fflush(stdout);
	h->pid = fork();
	if (h->pid < 0) {
		report(t, 0, "fork: %s\n", strerror(errno));
		close(cmd[0]);
		close(cmd[1]);
		close(resp[0]);
		close(resp[1]);
		return -1;
	}
	if (h->pid == 0) {
		close(cmd[1]);
		close(resp[0]);
		c = 'e';
		if (!cg_enter_current(t->child) && !charge(arg) &&
		    !cg_enter_current(t->keep))
			c = 'r';
		if (write(resp[1], &c, 1) != 1 || c != 'r')
			_exit(EXIT_FAILURE);
		while (read(cmd[0], &c, 1) == 1) {
			long v = query ? query(arg) : 0;

			if (write(resp[1], &v, sizeof(v)) != sizeof(v))
				_exit(EXIT_FAILURE);
		}
		_exit(EXIT_SUCCESS);
	}

	close(cmd[0]);
	close(resp[1]);
	h->cmd = cmd[1];
	h->resp = resp[0];
	if (read_full(h->resp, &c, 1, HOLDER_TIMEOUT_MS) || c != 'r') {
		report(t, 0, "the holder could not charge its memory\n");
		return -1;
	}

	return 0;
}

static long holder_query(struct holder *h)
{
	char c = 'q';
	long v;

	if (write(h->cmd, &c, 1) != 1 ||
	    read_full(h->resp, &v, sizeof(v), HOLDER_TIMEOUT_MS))
		return -1;
	return v;
}

static void holder_stop(struct holder *h)
{
	if (h->pid < 0)
		return;
	close(h->cmd);
	close(h->resp);
	waitpid(h->pid, NULL, 0);
	h->pid = -1;
}

static long resident_pages(void *addr, size_t size)
{
	size_t pages = size / page_size, i;
	unsigned char *vec;
	long nr = 0;

	vec = malloc(pages);
	if (!vec)
		return -1;
	if (mincore(addr, size, vec)) {
		free(vec);
		return -1;
	}
	for (i = 0; i < pages; i++)
		nr += vec[i] & 1;
	free(vec);

	return nr;
}

/* Resident pages of a file, seen through a mapping that touches nothing. */
static long file_resident_pages(int fd, size_t size)
{
	void *p;
	long nr;

	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	nr = resident_pages(p, size);
	munmap(p, size);

	return nr;
}

/* The buffer is page aligned: @fd may be opened with O_DIRECT. */
static int write_pattern(int fd, size_t size, char pattern)
{
	void *buf;
	size_t off;
	int ret = 0;

	if (posix_memalign(&buf, page_size, IO_CHUNK))
		return -1;
	memset(buf, pattern, IO_CHUNK);
	for (off = 0; off < size && !ret; off += IO_CHUNK)
		if (pwrite(fd, buf, IO_CHUNK, off) != IO_CHUNK)
			ret = -1;
	free(buf);

	return ret;
}

/* The page cache tests need a disk filesystem, not tmpfs or an overlay. */
static bool cwd_on_block_device(void)
{
	struct stat st;

	return !stat(".", &st) && major(st.st_dev) != 0;
}

/*
 * Drop the clean block device pages of the working filesystem
 * (BLKFLSBUF: sync it, then invalidate_bdev()). Directory, inode table
 * and bitmap blocks an earlier run brought in stay cached, charged to its
 * memcg, and a block freed and allocated again finds its old page: without
 * this, a second run's child would not charge any metadata. Pages the
 * filesystem or the journal still holds stay. Returns 0 on success.
 */
static int drop_bdev_cache(void)
{
	char path[PATH_MAX], buf[PAGE_SIZE], *name, *end;
	struct stat st;
	int fd, ret;

	if (stat(".", &st))
		return -1;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent",
		 major(st.st_dev), minor(st.st_dev));
	if (read_text(path, buf, sizeof(buf)) <= 0)
		return -1;
	name = strstr(buf, "DEVNAME=");
	if (!name) {
		errno = ENODEV;
		return -1;
	}
	name += strlen("DEVNAME=");
	end = strchr(name, '\n');
	if (end)
		*end = '\0';

	snprintf(path, sizeof(path), "/dev/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ret = ioctl(fd, BLKFLSBUF, 0);
	close(fd);

	return ret;
}

/*
 * Drop the clean pages of a synced file from the page cache. Without
 * CONFIG_ADVISE_SYSCALLS POSIX_FADV_DONTNEED fails with ENOSYS, and it
 * may leave busy pages behind: then rewrite the same data with O_DIRECT,
 * which invalidates the cached pages of the range it writes
 * (kiocb_invalidate_pages()). The blocks are already allocated, so no
 * metadata changes. Returns the number of pages still cached.
 */
static long drop_file_cache(const char *path, int fd, size_t size)
{
	long nr;
	int dfd;

	/* fadvise retries after lru_add_drain_all() if pages were busy */
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	nr = file_resident_pages(fd, size);
	if (nr == 0)
		return 0;

	dfd = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
	if (dfd < 0)
		return nr;
	if (!write_pattern(dfd, size, 'a'))
		fsync(dfd);
	close(dfd);

	return file_resident_pages(fd, size);
}

/*
 * A file written, synced and dropped from the page cache by this process
 * (outside P): its blocks and metadata are allocated and cached, charged
 * elsewhere, and its inode is attached to this process's writeback, so
 * the child only charges the data pages it reads or writes.
 */
static int make_uncached_file(struct reparent_test *t, char *path, size_t len,
			      size_t size)
{
	long cached;
	int fd;

	snprintf(path, len, "memcg_reparent_%s.%d",
		 t->name + strlen("test_reparent_"), getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		report(t, 0, "cannot create %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (write_pattern(fd, size, 'a') || fsync(fd)) {
		report(t, 0, "cannot write %s: %s\n", path, strerror(errno));
		close(fd);
		unlink(path);
		return -1;
	}
	cached = drop_file_cache(path, fd, size);
	if (cached) {
		report(t, 0, "cannot drop %s from the page cache: %ld pages stay\n",
		       path, cached);
		close(fd);
		unlink(path);
		return -1;
	}

	return fd;
}

static char *tmpfs_mount(struct reparent_test *t)
{
	char *dir = malloc(PATH_MAX);

	if (!dir)
		return NULL;
	snprintf(dir, PATH_MAX, "memcg_reparent_%s.%d.tmpfs",
		 t->name + strlen("test_reparent_"), getpid());
	if (mkdir(dir, 0700)) {
		free(dir);
		return NULL;
	}
	if (mount("none", dir, "tmpfs", 0, "mode=0700")) {
		ksft_print_msg("%s: cannot mount tmpfs: %s\n", t->name,
			       strerror(errno));
		rmdir(dir);
		free(dir);
		return NULL;
	}

	return dir;
}

static void tmpfs_umount(char *dir)
{
	if (!dir)
		return;
	if (umount2(dir, 0))
		umount2(dir, MNT_DETACH);
	rmdir(dir);
	free(dir);
}

struct slab_arg {
	int dirfd;
	int nr;
};

static int create_slab_files(void *arg)
{
	struct slab_arg *a = arg;
	char name[NAME_MAX];
	int i, fd;

	for (i = 0; i < a->nr; i++) {
		snprintf(name, sizeof(name),
			 "memcg-reparent-dentry-with-an-external-name-%06d", i);
		fd = openat(a->dirfd, name, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			return EXIT_FAILURE;
		close(fd);
	}

	return EXIT_SUCCESS;
}

/*
 * Dentries, external names and inodes (all SLAB_ACCOUNT or
 * __GFP_ACCOUNT) of empty tmpfs files created in C. A tmpfs file has no
 * page and no cgroup writeback, so slab is all C gets; tmpfs pins its
 * dentries, so nothing is shrunk. Unmounting the tmpfs frees them.
 */
static int test_reparent_slab(const char *root)
{
	static const int keys[] = {
		K_SLAB_RECLAIMABLE, K_SLAB_UNRECLAIMABLE, K_SLAB, K_KERNEL,
	};
	struct reparent_test t;
	struct slab_arg a = { .dirfd = -1, .nr = NR_SLAB_FILES };
	char *dir = NULL;
	int ret;

	ret = rt_setup(&t, root, __func__);
	if (ret != KSFT_PASS)
		goto cleanup;

	dir = tmpfs_mount(&t);
	if (!dir) {
		ret = KSFT_SKIP;
		goto cleanup;
	}
	a.dirfd = open(dir, O_DIRECTORY | O_CLOEXEC);
	if (a.dirfd < 0 || run_in_cgroup(t.child, create_slab_files, &a, false)) {
		report(&t, 0, "cannot create %d files on tmpfs\n", a.nr);
		goto cleanup;
	}

	if (!wait_charged(&t, K_SLAB, (long)a.nr * 256) ||
	    rt_remove_child(&t))
		goto cleanup;

	check_released(&t, t.dying_base);
	check_accounted(&t, keys, ARRAY_SIZE(keys));
	check_no_refaults(&t, &t.parent_last);

	close(a.dirfd);
	a.dirfd = -1;
	tmpfs_umount(dir);
	dir = NULL;
	check_uncharged(&t, keys, ARRAY_SIZE(keys), 0);
	info_released_after_free(&t);

cleanup:
	if (a.dirfd >= 0)
		close(a.dirfd);
	tmpfs_umount(dir);
	return rt_cleanup(&t, ret);
}

static int fill_pipes(void *arg)
{
	int *fds = arg;
	char *buf;
	int i, off;

	buf = malloc(page_size);
	if (!buf)
		return EXIT_FAILURE;
	memset(buf, 'k', page_size);

	for (i = 0; i < NR_PIPES; i++) {
		if (fcntl(fds[2 * i + 1], F_SETPIPE_SZ, PIPE_BYTES) < 0)
			return EXIT_FAILURE;
		/* one page-sized write per pipe buffer: no merging */
		for (off = 0; off < PIPE_BYTES; off += page_size)
			if (write(fds[2 * i + 1], buf, page_size) != page_size)
				return EXIT_FAILURE;
	}

	return EXIT_SUCCESS;
}

/*
 * Pipe buffer pages (alloc_page(GFP_HIGHUSER | __GFP_ACCOUNT) in
 * pipe_write(), kmem charged through the obj_cgroup) written by a process
 * in C. The pipes were opened by this process, which keeps them full after
 * the writer exited; closing them frees the pages.
 */
static int test_reparent_kmem(const char *root)
{
	static const int keys[] = { K_KERNEL };
	struct reparent_test t;
	int fds[2 * NR_PIPES];
	int i, ret, nr_fds = 0;

	ret = rt_setup(&t, root, __func__);
	if (ret != KSFT_PASS)
		goto cleanup;

	for (i = 0; i < NR_PIPES; i++, nr_fds += 2) {
		if (pipe2(fds + 2 * i, O_NONBLOCK | O_CLOEXEC)) {
			report(&t, 0, "pipe2: %s\n", strerror(errno));
			goto cleanup;
		}
	}
	if (run_in_cgroup(t.child, fill_pipes, fds, false)) {
		report(&t, 0, "cannot fill %d pipes of %d KiB\n", NR_PIPES,
		       PIPE_BYTES >> 10);
		goto cleanup;
	}

	if (!wait_charged(&t, K_KERNEL, (long)NR_PIPES * PIPE_BYTES) ||
	    rt_remove_child(&t))
		goto cleanup;

	check_released(&t, t.dying_base);
	check_accounted(&t, keys, ARRAY_SIZE(keys));
	check_no_refaults(&t, &t.parent_last);

	for (i = 0; i < nr_fds; i++)
		close(fds[i]);
	nr_fds = 0;
	check_uncharged(&t, keys, ARRAY_SIZE(keys), 0);
	info_released_after_free(&t);

cleanup:
	for (i = 0; i < nr_fds; i++)
		close(fds[i]);
	return rt_cleanup(&t, ret);
}

static int percpu_map_create(void)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.map_type = BPF_MAP_TYPE_PERCPU_ARRAY;
	attr.key_size = sizeof(__u32);
	attr.value_size = PERCPU_VALUE_SIZE;
	attr.max_entries = PERCPU_ENTRIES;

	return syscall(__NR_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
}

/* The file table is shared: only the descriptor numbers must be sent. */
static int create_percpu_maps(void *arg)
{
	int *report_fd = arg;
	int i, fd;

	for (i = 0; i < NR_PERCPU_MAPS; i++) {
		fd = percpu_map_create();
		if (fd < 0 || write(*report_fd, &fd, sizeof(fd)) != sizeof(fd))
			return EXIT_FAILURE;
	}

	return EXIT_SUCCESS;
}

/*
 * Percpu memory charged to C that outlives it. A BPF per-CPU array map
 * allocates one percpu area per element (bpf_map_alloc_percpu(), with
 * __GFP_ACCOUNT against the creator's memcg). The maps are created in C by
 * a process that shares this process's file table, and stay alive through
 * this process's descriptors.
 *
 * Creating cgroups from C would not do: mem_cgroup_css_alloc() charges a
 * new memcg's percpu data to the new cgroup's parent (set_active_memcg()).
 */
static int test_reparent_percpu(const char *root)
{
	static const int keys[] = { K_PERCPU };
	struct reparent_test t;
	int fds[NR_PERCPU_MAPS];
	int pipefd[2] = { -1, -1 };
	int i, fd, ret, err;

	for (i = 0; i < NR_PERCPU_MAPS; i++)
		fds[i] = -1;

	ret = rt_setup(&t, root, __func__);
	if (ret != KSFT_PASS)
		goto cleanup;

	fd = percpu_map_create();
	if (fd < 0) {
		ksft_print_msg("%s: no BPF per-CPU array map (CONFIG_BPF_SYSCALL): %s\n",
			       t.name, strerror(errno));
		ret = KSFT_SKIP;
		goto cleanup;
	}
	close(fd);

	if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK)) {
		report(&t, 0, "pipe2: %s\n", strerror(errno));
		goto cleanup;
	}
	err = run_in_cgroup(t.child, create_percpu_maps, &pipefd[1], true);
	for (i = 0; i < NR_PERCPU_MAPS; i++)
		if (read(pipefd[0], &fds[i], sizeof(int)) != sizeof(int))
			fds[i] = -1;
	if (err || fds[NR_PERCPU_MAPS - 1] < 0) {
		report(&t, 0, "cannot create %d per-CPU maps in the child\n",
		       NR_PERCPU_MAPS);
		goto cleanup;
	}

	/*
	 * Some kernels charge the maps' percpu areas to the root memcg (seen
	 * on a 6.12 tinyconfig-based guest: the child's percpu stays 0 while
	 * its kernel grows by the map structures). Then there is nothing to
	 * test here.
	 */
	if (cg_read_key_long(t.child, "memory.stat", "percpu ") <= 0) {
		sleep(1);
		if (cg_read_key_long(t.child, "memory.stat", "percpu ") <= 0) {
			ksft_print_msg("%s: per-CPU maps not charged to the child's percpu\n",
				       t.name);
			ret = KSFT_SKIP;
			goto cleanup;
		}
	}
	if (!wait_charged(&t, K_PERCPU, (long)NR_PERCPU_MAPS *
			    PERCPU_ENTRIES * PERCPU_VALUE_SIZE) ||
	    rt_remove_child(&t))
		goto cleanup;

	check_released(&t, t.dying_base);
	check_accounted(&t, keys, ARRAY_SIZE(keys));
	check_no_refaults(&t, &t.parent_last);

	for (i = 0; i < NR_PERCPU_MAPS; i++) {
		close(fds[i]);
		fds[i] = -1;
	}
	check_uncharged(&t, keys, ARRAY_SIZE(keys), 0);
	info_released_after_free(&t);

cleanup:
	for (i = 0; i < NR_PERCPU_MAPS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	for (i = 0; i < 2; i++)
		if (pipefd[i] >= 0)
			close(pipefd[i]);
	return rt_cleanup(&t, ret);
}

/*
 * A stack holder, run by re-executing this binary: tell the test its pid,
 * then sleep until the release pipe is closed.
 */
static int stack_holder_main(int ready, int release)
{
	pid_t pid = getpid();
	char c;

	if (write(ready, &pid, sizeof(pid)) != sizeof(pid))
		return EXIT_FAILURE;
	close(ready);
	while (read(release, &c, 1) > 0)
		;

	return EXIT_SUCCESS;
}

struct stack_arg {
	int keep_fd;
	int ready;
	int release;
	int nr;
};

/*
 * Runs in C: clone the holders straight into K. dup_task_struct() charges
 * each holder's kernel stack to the forking task's memcg, i.e. C. Each
 * holder then execs: the copied mm, which shares pages this process
 * touched in C, is dropped and the new one is charged to K.
 */
static int spawn_stack_holders(void *arg)
{
	struct stack_arg *a = arg;
	struct __clone_args args = {
		.flags = CLONE_INTO_CGROUP,
		.exit_signal = SIGCHLD,
		.cgroup = a->keep_fd,
	};
	char ready[16], release[16];
	int i;

	snprintf(ready, sizeof(ready), "%d", a->ready);
	snprintf(release, sizeof(release), "%d", a->release);

	for (i = 0; i < a->nr; i++) {
		pid_t pid = sys_clone3(&args, sizeof(args));

		if (pid < 0)
			return errno == E2BIG ? KSFT_SKIP : EXIT_FAILURE;
		if (pid == 0) {
			fcntl(a->ready, F_SETFD, 0);
			fcntl(a->release, F_SETFD, 0);
			execl("/proc/self/exe", "/proc/self/exe", HOLDER_ARG,
			      ready, release, (char *)NULL);
			_exit(EXIT_FAILURE);
		}
	}

	return EXIT_SUCCESS;
}

/*
 * Kernel stacks of tasks forked in C that outlive C (in K). Also charged
 * to C and reparented with them: the task_structs and the other slab
 * objects of the fork.
 */
static int test_reparent_kernel_stack(const char *root)
{
	static const int keys[] = { K_KERNEL_STACK, K_KERNEL };
	struct reparent_test t;
	struct stack_arg a = { .keep_fd = -1, .nr = NR_STACK_HOLDERS };
	int ready[2] = { -1, -1 }, release[2] = { -1, -1 };
	pid_t pids[NR_STACK_HOLDERS];
	int i, ret, nr_pids = 0, err;

	ret = rt_setup(&t, root, __func__);
	if (ret != KSFT_PASS)
		goto cleanup;

	a.keep_fd = dirfd_open_opath(t.keep);
	if (a.keep_fd < 0 || pipe2(ready, O_CLOEXEC) ||
	    pipe2(release, O_CLOEXEC)) {
		report(&t, 0, "cannot open %s or pipes\n", t.keep);
		goto cleanup;
	}
	a.ready = ready[1];
	a.release = release[0];

	err = run_in_cgroup(t.child, spawn_stack_holders, &a, false);
	close(ready[1]);
	ready[1] = -1;
	if (err == KSFT_SKIP) {
		ksft_print_msg("%s: clone3(CLONE_INTO_CGROUP) unsupported\n",
			       t.name);
		ret = KSFT_SKIP;
		goto cleanup;
	}
	for (; nr_pids < a.nr; nr_pids++)
		if (read_full(ready[0], &pids[nr_pids], sizeof(pid_t),
			      HOLDER_TIMEOUT_MS))
			break;
	if (err || nr_pids < a.nr) {
		report(&t, 0, "%d of %d stack holders started\n", nr_pids,
		       a.nr);
		goto cleanup;
	}

	if (!wait_charged(&t, K_KERNEL_STACK, (long)a.nr * page_size) ||
	    rt_remove_child(&t))
		goto cleanup;

	check_released(&t, t.dying_base);
	check_accounted(&t, keys, ARRAY_SIZE(keys));
	check_no_refaults(&t, &t.parent_last);

	close(release[1]);
	release[1] = -1;
	for (i = 0; i < nr_pids; i++)
		waitpid(pids[i], NULL, 0);
	nr_pids = 0;
	check_uncharged(&t, keys, ARRAY_SIZE(keys), 0);
	info_released_after_free(&t);

cleanup:
	for (i = 0; i < nr_pids; i++)
		kill(pids[i], SIGKILL);
	for (i = 0; i < nr_pids; i++)
		waitpid(pids[i], NULL, 0);
	for (i = 0; i < 2; i++) {
		if (ready[i] >= 0)
			close(ready[i]);
		if (release[i] >= 0)
			close(release[i]);
	}
	if (a.keep_fd >= 0)
		close(a.keep_fd);
	return rt_cleanup(&t, ret);
}

struct file_arg {
	int fd;
	size_t size;
	void *map;
};

static int read_file(void *arg)
{
	struct file_arg *a = arg;
	char *buf = malloc(IO_CHUNK);
	size_t off;

	if (!buf)
		return EXIT_FAILURE;
	for (off = 0; off < a->size; off += IO_CHUNK)
		if (pread(a->fd, buf, IO_CHUNK, off) != IO_CHUNK)
			return EXIT_FAILURE;

	return EXIT_SUCCESS;
}

/*
 * Clean page cache of a file on the working filesystem, read in C and left
 * cached: nothing reclaims it without memory pressure.
 */
static int test_reparent_pagecache(const char *root)
{
	static const int keys[] = { K_FILE };
	struct reparent_test t;
	struct file_arg a = { .fd = -1, .size = PAGECACHE_SIZE };
	char path[PATH_MAX] = "";
	long resident;
	int ret;

	ret = rt_setup(&t, root, __func__);
	if (ret != KSFT_PASS)
		goto cleanup;
	if (!cwd_on_block_device()) {
		ksft_print_msg("%s: the working directory is not on a disk filesystem\n",
			       t.name);
		ret = KSFT_SKIP;
		goto cleanup;
	}

	a.fd = make_uncached_file(&t, path, sizeof(path), a.size);
	if (a.fd < 0)
		goto cleanup;
	if (run_in_cgroup(t.child, read_file, &a, false)) {
		report(&t, 0, "cannot read %s in the child\n", path);
		goto cleanup;
	}

	resident = file_resident_pages(a.fd, a.size);
	if (!wait_charged(&t, K_FILE, a.size - a.size / 10) ||
	    rt_remove_child(&t))
		goto cleanup;

	check_released(&t, t.dying_base);
	check_accounted(&t, keys, ARRAY_SIZE(keys));
	check_no_refaults(&t, &t.parent_last);
	check_resident(&t, resident, file_resident_pages(a.fd, a.size));

	close(a.fd);
	a.fd = -1;
	unlink(path);
	path[0] = '\0';
	check_uncharged(&t, keys, ARRAY_SIZE(keys), 0);
	info_released_after_free(&t);

cleanup:
	if (a.fd >= 0)
		close(a.fd);
	if (path[0])
		unlink(path);
	return rt_cleanup(&t, ret);
}

struct meta_arg {
	int dirfd;
};

static int create_metadata(void *arg)
{
	struct meta_arg *a = arg;
	char name[NAME_MAX];
	int i, j, fd;

	for (i = 0; i < NR_META_DIRS; i++) {
		snprintf(name, sizeof(name), "d%03d", i);
		if (mkdirat(a->dirfd, name, 0700))
			return EXIT_FAILURE;
		for (j = 0; j < NR_META_FILES; j++) {
			snprintf(name, sizeof(name), "d%03d/f%d", i, j);
			fd = openat(a->dirfd, name,
				    O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
			if (fd < 0)
				return EXIT_FAILURE;
			close(fd);
		}
	}

	return syncfs(a->dirfd) ? EXIT_FAILURE : EXIT_SUCCESS;
}

static void remove_metadata(int dirfd)
{
	char name[NAME_MAX];
	int i, j;

	for (i = 0; i < NR_META_DIRS; i++) {
		for (j = 0; j < NR_META_FILES; j++) {
			snprintf(name, sizeof(name), "d%03d/f%d", i, j);
			unlinkat(dirfd, name, 0);
		}
		snprintf(name, sizeof(name), "d%03d", i);
		unlinkat(dirfd, name, AT_REMOVEDIR);
	}
}

/*
 * Filesystem metadata: directories and empty files created in C, then
 * synced. New directory blocks, inode table and bitmap blocks are read or
 * created in the block device's page cache (getblk) by the task in C and
 * stay cached as clean buffers. The block device's clean pages are dropped
 * first (drop_bdev_cache()), or a run after another would find them cached.
 *
 * Check 3 is weaker here: deleting the files does not free the block
 * device's pages, and not all of them can be dropped right after (the
 * journal holds blocks until they are checkpointed), so it only checks
 * that P did not grow past what it had, or underflow.
 */
static int test_reparent_fs_metadata(const char *root)
{
	static const int keys[] = { K_FILE };
	struct reparent_test t;
	struct meta_arg a = { .dirfd = -1 };
	char dir[PATH_MAX] = "";
	struct key_range r[2];
	struct memcg_snap seen;
	int ret;

	ret = rt_setup(&t, root, __func__);
	if (ret != KSFT_PASS)
		goto cleanup;
	if (!cwd_on_block_device()) {
		ksft_print_msg("%s: the working directory is not on a disk filesystem\n",
			       t.name);
		ret = KSFT_SKIP;
		goto cleanup;
	}

	snprintf(dir, sizeof(dir), "memcg_reparent_fs_metadata.%d", getpid());
	if (mkdir(dir, 0700)) {
		report(&t, 0, "mkdir %s: %s\n", dir, strerror(errno));
		dir[0] = '\0';
		goto cleanup;
	}
	a.dirfd = open(dir, O_DIRECTORY | O_CLOEXEC);
	if (a.dirfd < 0 || syncfs(a.dirfd)) {
		report(&t, 0, "cannot open or sync %s\n", dir);
		goto cleanup;
	}
	if (drop_bdev_cache())
		ksft_print_msg("%s: cannot drop the block device's cache: %s\n",
			       t.name, strerror(errno));
	if (run_in_cgroup(t.child, create_metadata, &a, false)) {
		report(&t, 0, "cannot create %d directories in %s\n",
		       NR_META_DIRS, dir);
		goto cleanup;
	}

	/* block device pages the child brought in (a few are enough) */
	if (!wait_charged(&t, K_FILE, 16 * page_size) ||
	    rt_remove_child(&t))
		goto cleanup;

	check_released(&t, t.dying_base);
	check_accounted(&t, keys, ARRAY_SIZE(keys));
	check_no_refaults(&t, &t.parent_last);

	remove_metadata(a.dirfd);
	syncfs(a.dirfd);
	r[0].key = K_FILE;
	r[0].lo = t.base.v[K_FILE] - key_tol(K_FILE);
	r[0].hi = t.parent_last.v[K_FILE] + key_tol(K_FILE);
	r[1].key = K_CURRENT;
	r[1].lo = t.base.v[K_CURRENT] - key_tol(K_CURRENT);
	r[1].hi = t.parent_last.v[K_CURRENT] + key_tol(K_CURRENT);
	expect_ranges(&t, 3, t.parent, r, 2, SETTLE_TIMEOUT, &seen);
	check_sane_sizes(&t, 3);

cleanup:
	if (a.dirfd >= 0) {
		remove_metadata(a.dirfd);
		close(a.dirfd);
	}
	if (dir[0])
		rmdir(dir);
	return rt_cleanup(&t, ret);
}

static int write_file(void *arg)
{
	struct file_arg *a = arg;

	return write_pattern(a->fd, a->size, 'c') ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* shmem pages of a memfd (an unlinked tmpfs file) written in C. */
static int test_reparent_shmem(const char *root)
{
	static const int keys[] = { K_SHMEM, K_FILE };
	struct reparent_test t;
	struct file_arg a = { .fd = -1, .size = SHMEM_SIZE };
	long resident;
	int ret;

	ret = rt_setup(&t, root, __func__);
	if (ret != KSFT_PASS)
		goto cleanup;

	a.fd = memfd_create("memcg_reparent_shmem", MFD_CLOEXEC);
	if (a.fd < 0) {
		ksft_print_msg("%s: memfd_create: %s\n", t.name,
			       strerror(errno));
		ret = KSFT_SKIP;
		goto cleanup;
	}
	if (run_in_cgroup(t.child, write_file, &a, false)) {
		report(&t, 0, "cannot write the memfd in the child\n");
		goto cleanup;
	}

	resident = file_resident_pages(a.fd, a.size);
	if (!wait_charged(&t, K_SHMEM, a.size - a.size / 10) ||
	    rt_remove_child(&t))
		goto cleanup;

	check_released(&t, t.dying_base);
	check_accounted(&t, keys, ARRAY_SIZE(keys));
	check_no_refaults(&t, &t.parent_last);
	check_resident(&t, resident, file_resident_pages(a.fd, a.size));

	close(a.fd);
	a.fd = -1;
	check_uncharged(&t, keys, ARRAY_SIZE(keys), 0);
	info_released_after_free(&t);

cleanup:
	if (a.fd >= 0)
		close(a.fd);
	return rt_cleanup(&t, ret);
}

static int charge_anon(void *arg)
{
	struct file_arg *a = arg;

	/*
	 * Small pages only: khugepaged must not recharge them to K. Not
	 * MADV_NOHUGEPAGE, which needs CONFIG_ADVISE_SYSCALLS.
	 */
	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0))
		return EXIT_FAILURE;
	a->map = mmap(NULL, a->size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a->map == MAP_FAILED)
		return EXIT_FAILURE;
	memset(a->map, 'a', a->size);

	return EXIT_SUCCESS;
}

static long query_resident(void *arg)
{
	struct file_arg *a = arg;

	return resident_pages(a->map, a->size);
}

/*
 * Anon pages faulted in C by a task that then moved to K and keeps them:
 * charges do not move with a task on cgroup v2.
 */
static int test_reparent_anon(const char *root)
{
	static const int keys[] = { K_ANON };
	struct reparent_test t;
	struct file_arg a = { .fd = -1, .size = ANON_SIZE };
	struct holder h = { .pid = -1 };
	long resident;
	int ret;

	ret = rt_setup(&t, root, __func__);
	if (ret != KSFT_PASS)
		goto cleanup;

	if (holder_start(&h, &t, charge_anon, query_resident, &a))
		goto cleanup;

	resident = holder_query(&h);
	if (!wait_charged(&t, K_ANON, a.size - a.size / 10) ||
	    rt_remove_child(&t))
		goto cleanup;

	check_released(&t, t.dying_base);
	check_accounted(&t, keys, ARRAY_SIZE(keys));
	check_no_refaults(&t, &t.parent_last);
	check_resident(&t, resident, holder_query(&h));

	holder_stop(&h);
	check_uncharged(&t, keys, ARRAY_SIZE(keys), 0);
	info_released_after_free(&t);

cleanup:
	holder_stop(&h);
	return rt_cleanup(&t, ret);
}

/*
 * Dirty page cache: a file overwritten in C and not synced, C removed
 * while the pages are dirty. The inode belongs to this process's
 * writeback (make_uncached_file()), so no writeback structure of C holds
 * dirty io.
 *
 * Check 2 runs right after the rmdir, well within dirty_expire_centisecs
 * (30 s), so the flusher has not cleaned the pages yet. After fsync() P's
 * file_dirty and file_writeback must be back to their baseline exactly.
 */
static int test_reparent_dirty(const char *root)
{
	static const int keys[] = { K_FILE_DIRTY, K_FILE };
	struct reparent_test t;
	struct file_arg a = { .fd = -1, .size = DIRTY_SIZE };
	char path[PATH_MAX] = "";
	long resident;
	int ret;

	ret = rt_setup(&t, root, __func__);
	if (ret != KSFT_PASS)
		goto cleanup;
	if (!cwd_on_block_device()) {
		ksft_print_msg("%s: the working directory is not on a disk filesystem\n",
			       t.name);
		ret = KSFT_SKIP;
		goto cleanup;
	}

	a.fd = make_uncached_file(&t, path, sizeof(path), a.size);
	if (a.fd < 0)
		goto cleanup;
	if (run_in_cgroup(t.child, write_file, &a, false)) {
		report(&t, 0, "cannot write %s in the child\n", path);
		goto cleanup;
	}

	resident = file_resident_pages(a.fd, a.size);
	if (!wait_charged(&t, K_FILE_DIRTY, a.size - a.size / 10) ||
	    rt_remove_child(&t))
		goto cleanup;

	check_accounted(&t, keys, ARRAY_SIZE(keys));
	check_released(&t, t.dying_base);
	check_no_refaults(&t, &t.parent_last);
	check_resident(&t, resident, file_resident_pages(a.fd, a.size));

	if (fsync(a.fd))
		report(&t, 3, "fsync: %s\n", strerror(errno));
	check_clean(&t);

	close(a.fd);
	a.fd = -1;
	unlink(path);
	path[0] = '\0';
	check_uncharged(&t, keys, ARRAY_SIZE(keys), 0);
	info_released_after_free(&t);

cleanup:
	if (a.fd >= 0)
		close(a.fd);
	if (path[0])
		unlink(path);
	return rt_cleanup(&t, ret);
}

static int write_and_start_writeback(void *arg)
{
	struct file_arg *a = arg;

	if (write_pattern(a->fd, a->size, 'w'))
		return EXIT_FAILURE;
	if (sync_file_range(a->fd, 0, 0, SYNC_FILE_RANGE_WRITE))
		return EXIT_FAILURE;

	return EXIT_SUCCESS;
}

/*
 * Pages under writeback at removal. The child writes a file, starts
 * writeback with sync_file_range(SYNC_FILE_RANGE_WRITE) and exits, and C
 * is removed at once. How many pages are still under writeback at the
 * rmdir depends on the device (the submission may even have waited for
 * most of the IO), so the test cannot guarantee there are any: it prints
 * the count. What it guarantees is that once the writeback has completed
 * P's file_writeback and file_dirty are back to their baseline exactly,
 * whatever moved while the IO was in flight.
 */
static int test_reparent_writeback(const char *root)
{
	static const int keys[] = { K_FILE };
	struct reparent_test t;
	struct file_arg a = { .fd = -1, .size = WRITEBACK_SIZE };
	char path[PATH_MAX] = "";
	long resident;
	int ret;

	ret = rt_setup(&t, root, __func__);
	if (ret != KSFT_PASS)
		goto cleanup;
	if (!cwd_on_block_device()) {
		ksft_print_msg("%s: the working directory is not on a disk filesystem\n",
			       t.name);
		ret = KSFT_SKIP;
		goto cleanup;
	}

	a.fd = make_uncached_file(&t, path, sizeof(path), a.size);
	if (a.fd < 0)
		goto cleanup;
	if (run_in_cgroup(t.child, write_and_start_writeback, &a, false)) {
		report(&t, 0, "cannot write %s in the child\n", path);
		goto cleanup;
	}

	if (!wait_charged(&t, K_FILE, a.size - a.size / 10) ||
	    rt_remove_child(&t))
		goto cleanup;
	ksft_print_msg("%s: at rmdir the child had %ld KiB under writeback, %ld KiB dirty\n",
		       t.name, kib(t.child_last.v[K_FILE_WRITEBACK]),
		       kib(t.child_last.v[K_FILE_DIRTY]));

	check_released(&t, t.dying_base);

	if (fsync(a.fd))
		report(&t, 3, "fsync: %s\n", strerror(errno));
	check_clean(&t);

	resident = file_resident_pages(a.fd, a.size);
	check_accounted(&t, keys, ARRAY_SIZE(keys));
	check_no_refaults(&t, &t.parent_last);
	check_resident(&t, a.size / page_size, resident);

	close(a.fd);
	a.fd = -1;
	unlink(path);
	path[0] = '\0';
	check_uncharged(&t, keys, ARRAY_SIZE(keys), 0);
	info_released_after_free(&t);

cleanup:
	if (a.fd >= 0)
		close(a.fd);
	if (path[0])
		unlink(path);
	return rt_cleanup(&t, ret);
}

static int map_file(void *arg)
{
	struct file_arg *a = arg;

	/* read faults on every page (MADV_POPULATE_READ may be ENOSYS) */
	a->map = mmap(NULL, a->size, PROT_READ, MAP_SHARED | MAP_POPULATE,
		      a->fd, 0);

	return a->map == MAP_FAILED ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * Mapped page cache: a file mmapped and faulted in by a task in C that
 * then moved to K and keeps the mapping.
 */
static int test_reparent_mapped(const char *root)
{
	static const int keys[] = { K_FILE_MAPPED, K_FILE };
	struct reparent_test t;
	struct file_arg a = { .fd = -1, .size = MAPPED_SIZE };
	struct holder h = { .pid = -1 };
	char path[PATH_MAX] = "";
	struct key_range r;
	struct memcg_snap seen;
	long resident;
	int ret;

	ret = rt_setup(&t, root, __func__);
	if (ret != KSFT_PASS)
		goto cleanup;
	if (!cwd_on_block_device()) {
		ksft_print_msg("%s: the working directory is not on a disk filesystem\n",
			       t.name);
		ret = KSFT_SKIP;
		goto cleanup;
	}

	a.fd = make_uncached_file(&t, path, sizeof(path), a.size);
	if (a.fd < 0 || holder_start(&h, &t, map_file, query_resident, &a))
		goto cleanup;

	resident = holder_query(&h);
	if (!wait_charged(&t, K_FILE_MAPPED, a.size - a.size / 10) ||
	    rt_remove_child(&t))
		goto cleanup;

	check_released(&t, t.dying_base);
	check_accounted(&t, keys, ARRAY_SIZE(keys));
	check_no_refaults(&t, &t.parent_last);
	check_resident(&t, resident, holder_query(&h));

	/* unmapping first: file_mapped goes, the page cache stays */
	holder_stop(&h);
	r.key = K_FILE_MAPPED;
	r.lo = t.base.v[K_FILE_MAPPED] - key_tol(K_FILE_MAPPED);
	r.hi = t.base.v[K_FILE_MAPPED] + key_tol(K_FILE_MAPPED);
	expect_ranges(&t, 3, t.parent, &r, 1, UNCHARGE_TIMEOUT, &seen);
	close(a.fd);
	a.fd = -1;
	unlink(path);
	path[0] = '\0';
	check_uncharged(&t, keys, ARRAY_SIZE(keys), 0);
	info_released_after_free(&t);

cleanup:
	holder_stop(&h);
	if (a.fd >= 0)
		close(a.fd);
	if (path[0])
		unlink(path);
	return rt_cleanup(&t, ret);
}

struct churn_arg {
	int diskfd;
	int tmpfd;
	int gen;
};

/* One job: a small file write, a tmpfs file and tree, negative lookups. */
static int churn_job(void *arg)
{
	struct churn_arg *a = arg;
	char name[NAME_MAX];
	struct file_arg f;
	struct stat st;
	int i, fd, ret;

	snprintf(name, sizeof(name), "gen%d", a->gen);
	f.fd = openat(a->diskfd, name, O_WRONLY | O_CLOEXEC);
	f.size = CHURN_FILE_SIZE;
	if (f.fd < 0)
		return EXIT_FAILURE;
	ret = write_file(&f);
	close(f.fd);
	if (ret)
		return ret;

	f.fd = openat(a->tmpfd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	f.size = CHURN_SHMEM_SIZE;
	if (f.fd < 0)
		return EXIT_FAILURE;
	ret = write_file(&f);
	close(f.fd);
	if (ret)
		return ret;

	snprintf(name, sizeof(name), "gen%d.d", a->gen);
	if (mkdirat(a->tmpfd, name, 0700))
		return EXIT_FAILURE;
	for (i = 0; i < CHURN_NR_FILES; i++) {
		snprintf(name, sizeof(name), "gen%d.d/f%d", a->gen, i);
		fd = openat(a->tmpfd, name, O_RDONLY | O_CREAT | O_CLOEXEC,
			    0600);
		if (fd < 0)
			return EXIT_FAILURE;
		close(fd);
	}

	for (i = 0; i < CHURN_NR_LOOKUPS; i++) {
		snprintf(name, sizeof(name), "absent-gen%d-%d", a->gen, i);
		fstatat(a->diskfd, name, &st, 0);
	}

	return EXIT_SUCCESS;
}

static void churn_remove_files(int diskfd, int nr)
{
	char name[NAME_MAX];
	int i;

	for (i = 0; i < nr; i++) {
		snprintf(name, sizeof(name), "gen%d", i);
		unlinkat(diskfd, name, 0);
	}
	unlinkat(diskfd, "warmup", 0);
}

/*
 * Many generations of "mkdir C_i; run a small job; rmdir C_i" under one
 * parent, as periodic jobs do. At the end the parent's dying count must be
 * bounded (the last generations' offline work may still be in flight),
 * the parent must account for what the generations left, and after the
 * files are deleted it must be back to its baseline, give or take the
 * filesystem metadata and negative dentries that stay cached
 * (CHURN_RESIDUE).
 *
 * The disk files are created by this process beforehand, so that C_i
 * charges their data but not their inodes and directory blocks.
 */
static int test_reparent_churn(const char *root)
{
	static const int keys[] = { K_FILE, K_SHMEM };
	static const int drift_keys[] = { K_FILE, K_SHMEM, K_SLAB, K_ANON };
	struct reparent_test t;
	struct churn_arg a = { .diskfd = -1, .tmpfd = -1 };
	char disk[PATH_MAX] = "", name[NAME_MAX];
	struct memcg_snap sum = { 0 }, seen;
	struct key_range r[NR_KEYS];
	char *tmp = NULL;
	int k, fd, ret, nr_files = 0;
	size_t i;

	ret = rt_setup(&t, root, __func__);
	if (ret != KSFT_PASS)
		goto cleanup;
	if (!cwd_on_block_device()) {
		ksft_print_msg("%s: the working directory is not on a disk filesystem\n",
			       t.name);
		ret = KSFT_SKIP;
		goto cleanup;
	}
	tmp = tmpfs_mount(&t);
	if (!tmp) {
		ret = KSFT_SKIP;
		goto cleanup;
	}
	a.tmpfd = open(tmp, O_DIRECTORY | O_CLOEXEC);

	snprintf(disk, sizeof(disk), "memcg_reparent_churn.%d", getpid());
	if (mkdir(disk, 0700)) {
		report(&t, 0, "mkdir %s: %s\n", disk, strerror(errno));
		disk[0] = '\0';
		goto cleanup;
	}
	a.diskfd = open(disk, O_DIRECTORY | O_CLOEXEC);
	if (a.diskfd < 0 || a.tmpfd < 0) {
		report(&t, 0, "cannot open %s or %s\n", disk, tmp);
		goto cleanup;
	}

	/* cache the block bitmap and extent blocks the jobs will need */
	fd = openat(a.diskfd, "warmup", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0) {
		write_pattern(fd, MB(1), 'x');
		fsync(fd);
		close(fd);
	}
	/*
	 * The first dirty page attaches an inode to its memcg's writeback
	 * (__inode_attach_wb()): dirty one here, or a dirty inode would pin
	 * its generation's writeback, and with it the memcg, until flushed.
	 */
	for (; nr_files < churn_generations; nr_files++) {
		snprintf(name, sizeof(name), "gen%d", nr_files);
		fd = openat(a.diskfd, name, O_WRONLY | O_CREAT | O_CLOEXEC,
			    0600);
		if (fd < 0)
			break;
		ret = pwrite(fd, name, 1, 0) != 1;
		close(fd);
		if (ret)
			break;
	}
	ret = KSFT_PASS;
	syncfs(a.diskfd);
	if (nr_files < churn_generations) {
		report(&t, 0, "cannot create %d files in %s\n",
		       churn_generations, disk);
		goto cleanup;
	}
	/* generations are named child_<n>; baseline without rt_setup's child */
	if (rmdir(t.child) || snap_memcg(t.parent, &t.base)) {
		report(&t, 0, "cannot remove %s or read %s\n", t.child,
		       t.parent);
		goto cleanup;
	}
	t.child_removed = true;

	for (a.gen = 0; a.gen < churn_generations; a.gen++) {
		free(t.child);
		t.child = cg_name_indexed(t.parent, "child", a.gen);
		t.child_removed = false;
		if (!t.child || cg_create(t.child) ||
		    run_in_cgroup(t.child, churn_job, &a, false)) {
			report(&t, 0, "generation %d failed\n", a.gen);
			goto cleanup;
		}
		if (rt_remove_child(&t))
			goto cleanup;
		for (k = 0; k < NR_KEYS; k++)
			sum.v[k] += t.child_last.v[k];
	}
	ksft_print_msg("%s: %d generations\n", t.name, churn_generations);

	check_released(&t, t.dying_base + CHURN_DYING_BOUND);

	/* check 2 against the sum of what each generation had */
	for (i = 0; i < ARRAY_SIZE(keys); i++) {
		k = keys[i];
		r[i].key = k;
		r[i].lo = t.base.v[k] + sum.v[k] - key_tol(k);
		r[i].hi = t.parent_last.v[k] + key_tol(k);
	}
	/* stock pages are in each C_i's memory.current: use file instead */
	r[i].key = K_CURRENT;
	r[i].lo = t.base.v[K_CURRENT] + sum.v[K_FILE] - key_tol(K_CURRENT);
	r[i].hi = t.parent_last.v[K_CURRENT] + key_tol(K_CURRENT);
	expect_ranges(&t, 2, t.parent, r, i + 1, SETTLE_TIMEOUT, &seen);
	check_no_refaults(&t, &t.base);

	churn_remove_files(a.diskfd, nr_files);
	nr_files = 0;
	close(a.diskfd);
	a.diskfd = -1;
	rmdir(disk);
	disk[0] = '\0';
	close(a.tmpfd);
	a.tmpfd = -1;
	tmpfs_umount(tmp);
	tmp = NULL;
	check_uncharged(&t, drift_keys, ARRAY_SIZE(drift_keys),
			CHURN_RESIDUE);
	info_released_after_free(&t);

cleanup:
	if (a.diskfd >= 0) {
		churn_remove_files(a.diskfd, nr_files);
		close(a.diskfd);
	}
	if (disk[0])
		rmdir(disk);
	if (a.tmpfd >= 0)
		close(a.tmpfd);
	tmpfs_umount(tmp);
	return rt_cleanup(&t, ret);
}

/*
 * Read this binary once, so that the page cache of its text is charged
 * here and not to the first child that happens to execute a given page.
 */
static void cache_own_binary(void)
{
	char buf[IO_CHUNK];
	int fd;

	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
}

static void setup_nudge(const char *root)
{
	nudge_cg = cg_name(root, "memcg_reparent_nudge");
	nudge_scratch_cg = cg_name(root, "memcg_reparent_nudge_scratch");
	cg_destroy(nudge_scratch_cg);
	cg_destroy(nudge_cg);
	if (!nudge_cg || !nudge_scratch_cg || cg_create(nudge_cg)) {
		ksft_print_msg("cannot create %s: no nudging\n", nudge_cg);
		free(nudge_cg);
		nudge_cg = NULL;
	}
}

static void cleanup_nudge(void)
{
	if (nudge_cg)
		cg_destroy(nudge_cg);
	if (nudge_scratch_cg)
		cg_destroy(nudge_scratch_cg);
	free(nudge_cg);
	free(nudge_scratch_cg);
}

#define T(x) { x, #x }
static struct memcg_reparent_test {
	int (*fn)(const char *root);
	const char *name;
} tests[] = {
	T(test_reparent_slab),
	T(test_reparent_kmem),
	T(test_reparent_percpu),
	T(test_reparent_kernel_stack),
	T(test_reparent_pagecache),
	T(test_reparent_fs_metadata),
	T(test_reparent_shmem),
	T(test_reparent_anon),
	T(test_reparent_dirty),
	T(test_reparent_writeback),
	T(test_reparent_mapped),
	T(test_reparent_churn),
};

#undef T

/* MEMCG_REPARENT_ONLY: a comma-separated list of subtest names */
static bool selected(const char *only, const char *name)
{
	size_t len = strlen(name);
	const char *p = only;

	if (!only || !*only)
		return true;
	while ((p = strstr(p, name))) {
		if ((p == only || p[-1] == ',') &&
		    (p[len] == ',' || p[len] == '\0'))
			return true;
		p += len;
	}

	return false;
}

int main(int argc, char **argv)
{
	char root[PATH_MAX];
	const char *env, *only;
	size_t i;

	if (argc == 4 && !strcmp(argv[1], HOLDER_ARG))
		return stack_holder_main(atoi(argv[2]), atoi(argv[3]));

	ksft_print_header();
	ksft_set_plan(ARRAY_SIZE(tests));

	page_size = sysconf(_SC_PAGESIZE);
	nr_cpus = get_nprocs();
	nr_cpus_conf = get_nprocs_conf();
	env = getenv("MEMCG_REPARENT_TIMEOUT");
	if (env && atof(env) > 0)
		dying_timeout = atof(env);
	env = getenv("MEMCG_REPARENT_GENERATIONS");
	if (env && atoi(env) > 0)
		churn_generations = atoi(env);
	only = getenv("MEMCG_REPARENT_ONLY");

	if (cg_find_unified_root(root, sizeof(root), NULL))
		ksft_exit_skip("cgroup v2 isn't mounted\n");

	if (cg_read_strstr(root, "cgroup.controllers", "memory"))
		ksft_exit_skip("memory controller isn't available\n");

	if (cg_read_strstr(root, "cgroup.subtree_control", "memory"))
		if (cg_write(root, "cgroup.subtree_control", "+memory"))
			ksft_exit_skip("Failed to set memory controller\n");

	/* stack holders are orphaned when their forker exits: reap them */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1))
		ksft_exit_fail_msg("PR_SET_CHILD_SUBREAPER: %s\n",
				   strerror(errno));

	cache_own_binary();
	setup_nudge(root);
	ksft_print_msg("%ld CPUs, tolerances %ld KiB (current), %ld KiB (stat)\n",
		       nr_cpus, kib(key_tol(K_CURRENT)), kib(stat_tol()));
	ksft_print_msg("check 1 waits up to %.0f s\n", dying_timeout);

	for (i = 0; i < ARRAY_SIZE(tests); i++) {
		if (!selected(only, tests[i].name)) {
			ksft_test_result_skip("%s (not in MEMCG_REPARENT_ONLY)\n",
					      tests[i].name);
			continue;
		}
		switch (tests[i].fn(root)) {
		case KSFT_PASS:
			ksft_test_result_pass("%s\n", tests[i].name);
			break;
		case KSFT_SKIP:
			ksft_test_result_skip("%s\n", tests[i].name);
			break;
		default:
			ksft_test_result_fail("%s\n", tests[i].name);
			break;
		}
	}

	cleanup_nudge();
	ksft_finished();
}
