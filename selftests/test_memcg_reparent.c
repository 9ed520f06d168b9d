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
 * test_reparent_thp also needs C's deferred split queue to follow its large
 * folios, and test_reparent_cgwb needs the writeback structure (cgwb) of
 * the inodes C dirtied to be let go once they are clean.
 *
 * Each kind of memory is a struct reparent_kind (how to set up, charge in
 * C, see and free it) that run_reparent_test() takes through these steps;
 * test_reparent_churn, which removes many children, drives them itself.
 *
 * test_reparent_socket_limit checks instead that what is left of C harms
 * no one alive: sockets C created, used from K after C is removed, must
 * not run into C's memory.max once C's page cache went to P (no memcg
 * OOM, no slowdown against sockets made in K). It passes on a kernel that
 * does not reparent, whose C reclaims its own page cache.
 *
 * The tests do not rely on madvise() or fadvise(): kernels built without
 * CONFIG_ADVISE_SYSCALLS (tinyconfig) return ENOSYS for both. The one
 * exception, test_reparent_thp, skips there unless THP is "always".
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
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
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
#define THP_SIZE		MB(2)
#define NR_THPS			4
#define CGWB_SIZE		MB(8)
#define WRITEBACK_RUN		4	/* dirty pages in a row */
#define IO_CHUNK		(64 << 10)
#define NR_PIPES		16
#define PIPE_BYTES		MB(1)
#define NR_SLAB_FILES		6000
#define NR_STACK_HOLDERS	256
#define PERCPU_VALUE_SIZE	4096	/* per CPU and element */
#define NR_META_DIRS		256
#define NR_META_FILES		4
#define CHURN_FILE_SIZE		(256 << 10)
#define CHURN_SHMEM_SIZE	(64 << 10)
#define CHURN_NR_FILES		16
#define CHURN_NR_LOOKUPS	32
#define CHURN_DYING_BOUND	8
/* fs metadata and negative dentries the churn may legitimately leave */
#define CHURN_RESIDUE		MB(2)
/* test_reparent_socket_limit */
#define SOCKET_CG_MAX		MB(32)	/* memory.max of C */
#define SOCKET_FILE_SIZE	MB(100)	/* the page cache C reads */
#define TRANSFER_SIZE		MB(64)
#define SOCKET_SLOWDOWN		3
#define SOCKET_GRACE_US		500000

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
	K_ANON_THP,
	K_SLAB_RECLAIMABLE,
	K_SLAB_UNRECLAIMABLE,
	K_SLAB,
	K_REFAULT_ANON,
	K_REFAULT_FILE,
	K_SOCK,
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
	[K_ANON_THP]		= "anon_thp",
	[K_SLAB_RECLAIMABLE]	= "slab_reclaimable",
	[K_SLAB_UNRECLAIMABLE]	= "slab_unreclaimable",
	[K_SLAB]		= "slab",
	[K_REFAULT_ANON]	= "workingset_refault_anon",
	[K_REFAULT_FILE]	= "workingset_refault_file",
	[K_SOCK]		= "sock",
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
	long min_charge;	/* C must have this much before rmdir */
	double removed_at;	/* now() when C was removed */
	double released_at;	/* now() when check 1 passed, or 0 */
	void *priv;		/* the state of the kind of memory */
};

static long page_size;
static long nr_cpus;
static long nr_cpus_conf;
static double dying_timeout = 20.0;
static int churn_generations = 200;
static char *nudge_cg;
static char *nudge_scratch_cg;
/* test_reparent_cgwb turns the scratch offline off: see there */
static bool nudge_offline = true;

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
	"sibling kept",
	"dead reclaimed first",
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

	if (nudge_offline && !cg_create(nudge_scratch_cg))
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
 * Record P and then C right before removing C, then remove C. Every task
 * must have left C already. With @wait_key >= 0, C is removed at the first
 * read of C whose @wait_key exceeds what the stats may lag (stat_tol()), so
 * that the read right before the rmdir proves the memory was there.
 * Returns -1 if C could not be removed.
 */
static int rt_remove_child(struct reparent_test *t, int wait_key)
{
	double start = now();

	if (snap_memcg(t->parent, &t->parent_last)) {
		report(t, 0, "cannot read %s before rmdir\n", t->parent);
		return -1;
	}
	for (;;) {
		if (snap_memcg(t->child, &t->child_last)) {
			report(t, 0, "cannot read %s before rmdir\n", t->child);
			return -1;
		}
		if (wait_key < 0 || t->child_last.v[wait_key] > stat_tol())
			break;
		if (now() - start >= SETTLE_TIMEOUT) {
			report(t, 0,
			       "%s of the child: expected > %ld KiB before rmdir, saw %ld KiB for %.1f s\n",
			       key_names[wait_key], kib(stat_tol()),
			       kib(t->child_last.v[wait_key]), now() - start);
			return -1;
		}
		sleep_ms(1);
	}

	if (rmdir(t->child)) {
		report(t, 0, "rmdir %s: %s\n", t->child, strerror(errno));
		return -1;
	}
	t->removed_at = now();
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
	if (dying >= 0 && dying <= bound) {
		t->released_at = now();
		return true;
	}

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

/*
 * One kind of memory, as run_reparent_test() runs it:
 *
 *   setup (outside C), charge (in C), C has at least t->min_charge of
 *   charged_key, rmdir C, checks 1, 2 and 4, free (which may check more),
 *   check 3 (check_freed, or the baseline for every key), cleanup.
 *
 * Hooks that can skip or fail return a KSFT code and say why; the kind's
 * state, set up by its test function, is t->priv. Only charge is required.
 */
struct reparent_kind {
	const int *keys;	/* memory.stat keys of checks 2 and 3 */
	int nr_keys;
	int charged_key;	/* C's key that shows the memory is charged */
	bool on_disk;		/* needs a disk filesystem as working directory */
	bool under_writeback;	/* remove C while its pages are under writeback */
	int (*setup)(struct reparent_test *t);
	int (*charge)(struct reparent_test *t);
	long (*resident)(struct reparent_test *t);	/* for check 4 */
	void (*free)(struct reparent_test *t);
	void (*check_freed)(struct reparent_test *t);
	void (*pinned_info)(struct reparent_test *t);	/* when check 1 failed */
	void (*cleanup)(struct reparent_test *t);	/* also after a failure */
};

#define KEYS(...)	.keys = (const int []){ __VA_ARGS__ },			\
			.nr_keys = ARRAY_SIZE(((const int []){ __VA_ARGS__ }))

static int skip_unless_on_disk(struct reparent_test *t)
{
	if (cwd_on_block_device())
		return KSFT_PASS;
	ksft_print_msg("%s: the working directory is not on a disk filesystem\n",
		       t->name);
	return KSFT_SKIP;
}

static int run_reparent_test(const char *root, const char *name,
			     const struct reparent_kind *kind, void *priv)
{
	struct reparent_test t;
	long resident = -1;
	int ret;

	ret = rt_setup(&t, root, name);
	t.priv = priv;
	if (ret == KSFT_PASS && kind->on_disk)
		ret = skip_unless_on_disk(&t);
	if (ret == KSFT_PASS && kind->setup)
		ret = kind->setup(&t);
	if (ret == KSFT_PASS)
		ret = kind->charge(&t);
	if (ret != KSFT_PASS || t.failed)
		goto cleanup;

	if (kind->resident)
		resident = kind->resident(&t);
	if (!wait_charged(&t, kind->charged_key, t.min_charge) ||
	    rt_remove_child(&t, kind->under_writeback ? K_FILE_WRITEBACK : -1))
		goto cleanup;

	check_released(&t, t.dying_base);
	check_accounted(&t, kind->keys, kind->nr_keys);
	check_no_refaults(&t, &t.parent_last);
	if (kind->resident)
		check_resident(&t, resident, kind->resident(&t));
	if (!t.released_at && kind->pinned_info)
		kind->pinned_info(&t);

	if (kind->free)
		kind->free(&t);
	if (kind->check_freed)
		kind->check_freed(&t);
	else
		check_uncharged(&t, kind->keys, kind->nr_keys, 0);
	info_released_after_free(&t);

cleanup:
	if (kind->cleanup)
		kind->cleanup(&t);
	return rt_cleanup(&t, ret);
}

struct slab_state {
	char *dir;		/* a tmpfs mount */
	int dirfd;
};

static int create_slab_files(void *arg)
{
	struct slab_state *s = arg;
	char name[NAME_MAX];
	int i, fd;

	for (i = 0; i < NR_SLAB_FILES; i++) {
		snprintf(name, sizeof(name),
			 "memcg-reparent-dentry-with-an-external-name-%06d", i);
		fd = openat(s->dirfd, name, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			return EXIT_FAILURE;
		close(fd);
	}

	return EXIT_SUCCESS;
}

static int slab_setup(struct reparent_test *t)
{
	struct slab_state *s = t->priv;

	s->dir = tmpfs_mount(t);
	if (!s->dir)
		return KSFT_SKIP;
	s->dirfd = open(s->dir, O_DIRECTORY | O_CLOEXEC);
	if (s->dirfd < 0) {
		report(t, 0, "cannot open %s: %s\n", s->dir, strerror(errno));
		return KSFT_FAIL;
	}
	t->min_charge = (long)NR_SLAB_FILES * 256;

	return KSFT_PASS;
}

static int slab_charge(struct reparent_test *t)
{
	struct slab_state *s = t->priv;

	if (run_in_cgroup(t->child, create_slab_files, s, false)) {
		report(t, 0, "cannot create %d files on tmpfs\n", NR_SLAB_FILES);
		return KSFT_FAIL;
	}

	return KSFT_PASS;
}

/* Unmounting the tmpfs frees its dentries and inodes. */
static void slab_free(struct reparent_test *t)
{
	struct slab_state *s = t->priv;

	if (s->dirfd >= 0)
		close(s->dirfd);
	s->dirfd = -1;
	tmpfs_umount(s->dir);
	s->dir = NULL;
}

static const struct reparent_kind slab_kind = {
	KEYS(K_SLAB_RECLAIMABLE, K_SLAB_UNRECLAIMABLE, K_SLAB, K_KERNEL),
	.charged_key	= K_SLAB,
	.setup		= slab_setup,
	.charge		= slab_charge,
	.free		= slab_free,
	.cleanup	= slab_free,
};

/*
 * Dentries, external names and inodes (all SLAB_ACCOUNT or
 * __GFP_ACCOUNT) of empty tmpfs files created in C. A tmpfs file has no
 * page and no cgroup writeback, so slab is all C gets; tmpfs pins its
 * dentries, so nothing is shrunk.
 */
static int test_reparent_slab(const char *root)
{
	struct slab_state s = { .dirfd = -1 };

	return run_reparent_test(root, __func__, &slab_kind, &s);
}

struct kmem_state {
	int fds[2 * NR_PIPES];
	int nr_fds;
};

static int fill_pipes(void *arg)
{
	struct kmem_state *s = arg;
	char *buf;
	int i, off;

	buf = malloc(page_size);
	if (!buf)
		return EXIT_FAILURE;
	memset(buf, 'k', page_size);

	for (i = 0; i < NR_PIPES; i++) {
		int fd = s->fds[2 * i + 1];

		if (fcntl(fd, F_SETPIPE_SZ, PIPE_BYTES) < 0)
			return EXIT_FAILURE;
		/* one page-sized write per pipe buffer: no merging */
		for (off = 0; off < PIPE_BYTES; off += page_size)
			if (write(fd, buf, page_size) != page_size)
				return EXIT_FAILURE;
	}

	return EXIT_SUCCESS;
}

static int kmem_setup(struct reparent_test *t)
{
	struct kmem_state *s = t->priv;

	for (; s->nr_fds < 2 * NR_PIPES; s->nr_fds += 2) {
		if (pipe2(s->fds + s->nr_fds, O_NONBLOCK | O_CLOEXEC)) {
			report(t, 0, "pipe2: %s\n", strerror(errno));
			return KSFT_FAIL;
		}
	}
	t->min_charge = (long)NR_PIPES * PIPE_BYTES;

	return KSFT_PASS;
}

static int kmem_charge(struct reparent_test *t)
{
	if (run_in_cgroup(t->child, fill_pipes, t->priv, false)) {
		report(t, 0, "cannot fill %d pipes of %d KiB\n", NR_PIPES,
		       PIPE_BYTES >> 10);
		return KSFT_FAIL;
	}

	return KSFT_PASS;
}

static void kmem_free(struct reparent_test *t)
{
	struct kmem_state *s = t->priv;

	while (s->nr_fds > 0)
		close(s->fds[--s->nr_fds]);
}

static const struct reparent_kind kmem_kind = {
	KEYS(K_KERNEL),
	.charged_key	= K_KERNEL,
	.setup		= kmem_setup,
	.charge		= kmem_charge,
	.free		= kmem_free,
	.cleanup	= kmem_free,
};

/*
 * Pipe buffer pages (alloc_page(GFP_HIGHUSER | __GFP_ACCOUNT) in
 * pipe_write(), kmem charged through the obj_cgroup) written by a process
 * in C. The pipes were opened by this process, which keeps them full after
 * the writer exited; closing them frees the pages.
 */
static int test_reparent_kmem(const char *root)
{
	struct kmem_state s = { .nr_fds = 0 };

	return run_reparent_test(root, __func__, &kmem_kind, &s);
}

struct percpu_state {
	int map;		/* in this process's file table */
	int pipe[2];		/* the filler's struct percpu_fill */
	int nr_cpus;		/* possible CPUs: values per element */
	int entries;
};

struct percpu_fill {
	int map;
	int inserted;
	int retries;
};

/* libbpf_num_possible_cpus(): the list in /sys/devices/system/cpu/possible */
static int possible_cpus(void)
{
	char buf[256], *p = buf, *end;
	long first, last;
	int nr = 0;

	if (read_text("/sys/devices/system/cpu/possible", buf, sizeof(buf)) <= 0)
		return -1;
	while (*p >= '0' && *p <= '9') {
		first = strtol(p, &end, 10);
		last = first;
		if (*end == '-')
			last = strtol(end + 1, &end, 10);
		nr += last - first + 1;
		p = *end == ',' ? end + 1 : end;
	}

	return nr;
}

static int percpu_map_create(int max_entries)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.map_type = BPF_MAP_TYPE_PERCPU_HASH;
	attr.key_size = sizeof(__u32);
	attr.value_size = PERCPU_VALUE_SIZE;
	attr.max_entries = max_entries;
	attr.map_flags = BPF_F_NO_PREALLOC;

	return syscall(__NR_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
}

static int percpu_map_insert(int map, __u32 key, void *values)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.map_fd = map;
	attr.key = (unsigned long)&key;
	attr.value = (unsigned long)values;
	attr.flags = BPF_NOEXIST;

	return syscall(__NR_bpf, BPF_MAP_UPDATE_ELEM, &attr, sizeof(attr));
}

/*
 * Runs in C, sharing this process's file table: create the map and insert
 * its elements. An element's per-CPU value comes from the map's
 * bpf_mem_alloc cache, which irq_work refills with GFP_NOWAIT: when the
 * per-CPU allocator has no populated page left the insert fails with
 * ENOMEM until pcpu_balance_workfn() has populated more, so retry as
 * long as it makes progress.
 */
static int fill_percpu_map(void *arg)
{
	struct percpu_state *s = arg;
	struct percpu_fill f = { .map = -1 };
	double progress = now();
	void *values;

	values = calloc(s->nr_cpus, PERCPU_VALUE_SIZE);
	if (!values)
		return EXIT_FAILURE;
	f.map = percpu_map_create(s->entries);
	while (f.map >= 0 && f.inserted < s->entries) {
		if (!percpu_map_insert(f.map, f.inserted, values)) {
			f.inserted++;
			progress = now();
			continue;
		}
		if (errno != ENOMEM || now() - progress > SETTLE_TIMEOUT)
			break;
		f.retries++;
		sleep_ms(1);
	}
	free(values);

	return write(s->pipe[1], &f, sizeof(f)) == sizeof(f) ?
		EXIT_SUCCESS : EXIT_FAILURE;
}

static int percpu_setup(struct reparent_test *t)
{
	struct percpu_state *s = t->priv;
	int fd;

	fd = percpu_map_create(1);
	if (fd < 0) {
		ksft_print_msg("%s: no BPF per-CPU hash map (CONFIG_BPF_SYSCALL): %s\n",
			       t->name, strerror(errno));
		return KSFT_SKIP;
	}
	close(fd);

	s->nr_cpus = possible_cpus();
	if (s->nr_cpus <= 0) {
		report(t, 0, "cannot read /sys/devices/system/cpu/possible\n");
		return KSFT_FAIL;
	}
	if (pipe2(s->pipe, O_CLOEXEC)) {
		report(t, 0, "pipe2: %s\n", strerror(errno));
		return KSFT_FAIL;
	}
	/* more than 8 times what the stats may lag: 513 elements on 2 CPUs */
	s->entries = 8 * stat_tol() / ((long)PERCPU_VALUE_SIZE * s->nr_cpus) + 1;
	t->min_charge = (long)s->entries * PERCPU_VALUE_SIZE * s->nr_cpus;

	return KSFT_PASS;
}

static int percpu_charge(struct reparent_test *t)
{
	struct percpu_state *s = t->priv;
	struct percpu_fill f = { .map = -1 };
	int err;

	err = run_in_cgroup(t->child, fill_percpu_map, s, true);
	if (read_full(s->pipe[0], &f, sizeof(f), HOLDER_TIMEOUT_MS))
		f.map = -1;
	s->map = f.map;
	if (err || f.map < 0 || f.inserted < s->entries) {
		report(t, 0,
		       "map %d: inserted %d of %d elements in the child (%d ENOMEM retries)\n",
		       f.map, f.inserted, s->entries, f.retries);
		return KSFT_FAIL;
	}
	ksft_print_msg("%s: %d elements of %d x %d bytes inserted, %d ENOMEM retries\n",
		       t->name, f.inserted, s->nr_cpus, PERCPU_VALUE_SIZE,
		       f.retries);

	return KSFT_PASS;
}

/* The map and its elements are freed after RCU grace periods. */
static void percpu_free(struct reparent_test *t)
{
	struct percpu_state *s = t->priv;
	int i;

	if (s->map >= 0)
		close(s->map);
	s->map = -1;
	for (i = 0; i < 2; i++) {
		if (s->pipe[i] >= 0)
			close(s->pipe[i]);
		s->pipe[i] = -1;
	}
}

static const struct reparent_kind percpu_kind = {
	KEYS(K_PERCPU),
	.charged_key	= K_PERCPU,
	.setup		= percpu_setup,
	.charge		= percpu_charge,
	.free		= percpu_free,
	.cleanup	= percpu_free,
};

/*
 * Percpu memory charged to C that outlives it: the elements of a BPF
 * per-CPU hash map created in C without preallocation, held by this
 * process's descriptor. htab_map_alloc() -> bpf_mem_alloc_init() binds the
 * map's element caches to the creator's obj_cgroup, and their refills
 * allocate each element's per-CPU value with __GFP_ACCOUNT under
 * set_active_memcg() of that obj_cgroup's memcg.
 *
 * Not what is allocated at map creation: ops->map_alloc() runs before
 * bpf_map_save_memcg() in map_create(), so a per-CPU array's values and
 * a preallocated hash map's are charged to the root memcg. Nor cgroups
 * created in C: mem_cgroup_css_alloc() charges a new memcg's percpu data
 * to the new cgroup's parent (set_active_memcg()).
 */
static int test_reparent_percpu(const char *root)
{
	struct percpu_state s = { .map = -1, .pipe = { -1, -1 } };

	return run_reparent_test(root, __func__, &percpu_kind, &s);
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

struct stack_state {
	int keep_fd;
	int ready[2];
	int release[2];
	pid_t pids[NR_STACK_HOLDERS];
	int nr_pids;
};

/*
 * Runs in C: clone the holders straight into K. dup_task_struct() charges
 * each holder's kernel stack to the forking task's memcg, i.e. C. Each
 * holder then execs: the copied mm, which shares pages this process
 * touched in C, is dropped and the new one is charged to K.
 */
static int spawn_stack_holders(void *arg)
{
	struct stack_state *s = arg;
	struct __clone_args args = {
		.flags = CLONE_INTO_CGROUP,
		.exit_signal = SIGCHLD,
		.cgroup = s->keep_fd,
	};
	char ready[16], release[16];
	int i;

	snprintf(ready, sizeof(ready), "%d", s->ready[1]);
	snprintf(release, sizeof(release), "%d", s->release[0]);

	for (i = 0; i < NR_STACK_HOLDERS; i++) {
		pid_t pid = sys_clone3(&args, sizeof(args));

		if (pid < 0)
			return errno == E2BIG ? KSFT_SKIP : EXIT_FAILURE;
		if (pid == 0) {
			fcntl(s->ready[1], F_SETFD, 0);
			fcntl(s->release[0], F_SETFD, 0);
			execl("/proc/self/exe", "/proc/self/exe", HOLDER_ARG,
			      ready, release, (char *)NULL);
			_exit(EXIT_FAILURE);
		}
	}

	return EXIT_SUCCESS;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int stack_setup(struct reparent_test *t)
{
	struct stack_state *s = t->priv;

	s->keep_fd = dirfd_open_opath(t->keep);
	if (s->keep_fd < 0 || pipe2(s->ready, O_CLOEXEC) ||
	    pipe2(s->release, O_CLOEXEC)) {
		report(t, 0, "cannot open %s or pipes\n", t->keep);
		return KSFT_FAIL;
	}
	t->min_charge = (long)NR_STACK_HOLDERS * page_size;

	return KSFT_PASS;
}

static int stack_charge(struct reparent_test *t)
{
	struct stack_state *s = t->priv;
	int err;

	err = run_in_cgroup(t->child, spawn_stack_holders, s, false);
	close_fd(&s->ready[1]);
	if (err == KSFT_SKIP) {
		ksft_print_msg("%s: clone3(CLONE_INTO_CGROUP) unsupported\n",
			       t->name);
		return KSFT_SKIP;
	}
	for (; s->nr_pids < NR_STACK_HOLDERS; s->nr_pids++)
		if (read_full(s->ready[0], &s->pids[s->nr_pids], sizeof(pid_t),
			      HOLDER_TIMEOUT_MS))
			break;
	if (err || s->nr_pids < NR_STACK_HOLDERS) {
		report(t, 0, "%d of %d stack holders started\n", s->nr_pids,
		       NR_STACK_HOLDERS);
		return KSFT_FAIL;
	}

	return KSFT_PASS;
}

/* The holders exit when the release pipe closes. */
static void stack_free(struct reparent_test *t)
{
	struct stack_state *s = t->priv;

	close_fd(&s->release[1]);
	while (s->nr_pids > 0)
		waitpid(s->pids[--s->nr_pids], NULL, 0);
}

static void stack_cleanup(struct reparent_test *t)
{
	struct stack_state *s = t->priv;
	int i;

	for (i = 0; i < s->nr_pids; i++)
		kill(s->pids[i], SIGKILL);
	stack_free(t);
	for (i = 0; i < 2; i++) {
		close_fd(&s->ready[i]);
		close_fd(&s->release[i]);
	}
	close_fd(&s->keep_fd);
}

static const struct reparent_kind stack_kind = {
	KEYS(K_KERNEL_STACK, K_KERNEL),
	.charged_key	= K_KERNEL_STACK,
	.setup		= stack_setup,
	.charge		= stack_charge,
	.free		= stack_free,
	.cleanup	= stack_cleanup,
};

/*
 * Kernel stacks of tasks forked in C that outlive C (in K). Also charged
 * to C and reparented with them: the task_structs and the other slab
 * objects of the fork.
 */
static int test_reparent_kernel_stack(const char *root)
{
	struct stack_state s = {
		.keep_fd = -1,
		.ready = { -1, -1 },
		.release = { -1, -1 },
	};

	return run_reparent_test(root, __func__, &stack_kind, &s);
}

/*
 * The state of the page cache, shmem and anon kinds: a file (on disk when
 * path is set), or a mapping in a holder, and for the writeback kind the
 * process that starts the writeback.
 */
struct file_state {
	char path[PATH_MAX];
	int fd;
	size_t size;
	void *map;		/* in a holder */
	struct holder h;
	pid_t flusher;
	int flusher_done;	/* the flusher sends when it was done */
};

#define FILE_STATE(bytes)						\
	{ .fd = -1, .size = (bytes), .h = { .pid = -1 },		\
	  .flusher = -1, .flusher_done = -1 }

static int file_setup(struct reparent_test *t)
{
	struct file_state *s = t->priv;

	s->fd = make_uncached_file(t, s->path, sizeof(s->path), s->size);
	if (s->fd < 0) {
		s->path[0] = '\0';
		return KSFT_FAIL;
	}
	t->min_charge = s->size - s->size / 10;

	return KSFT_PASS;
}

/*
 * Check 1 failed: are the file's pages what holds C? Write the file back
 * and drop its page cache, keeping the inode: if C goes then, some of
 * the pages were still charged to it; if it stays, something of the
 * inode holds C (the writeback structure it is attached to, for one).
 * /proc/kpagecgroup cannot tell: it names the nearest online ancestor.
 */
static void file_pinned_info(struct reparent_test *t)
{
	struct file_state *s = t->priv;
	double elapsed;
	long left, dying;

	if (fsync(s->fd)) {
		ksft_print_msg("%s: fsync: %s\n", t->name, strerror(errno));
		return;
	}
	left = drop_file_cache(s->path, s->fd, s->size);
	dying = wait_dying(t->parent, t->dying_base, INFO_TIMEOUT, &elapsed);
	ksft_print_msg("%s: page cache dropped, inode kept (%ld pages left): ",
		       t->name, left);
	printf("nr_dying_subsys_memory is %ld (%.1f s)\n", dying, elapsed);
}

static long file_resident(struct reparent_test *t)
{
	struct file_state *s = t->priv;

	return file_resident_pages(s->fd, s->size);
}

static long holder_resident(struct reparent_test *t)
{
	struct file_state *s = t->priv;

	return holder_query(&s->h);
}

/* Whatever the kind used: the holder, the file, the flusher. */
static void file_free(struct reparent_test *t)
{
	struct file_state *s = t->priv;

	holder_stop(&s->h);
	close_fd(&s->fd);
	if (s->path[0])
		unlink(s->path);
	s->path[0] = '\0';
	if (s->flusher > 0)
		waitpid(s->flusher, NULL, 0);
	s->flusher = -1;
	close_fd(&s->flusher_done);
}

static int read_file(void *arg)
{
	struct file_state *s = arg;
	char *buf = malloc(IO_CHUNK);
	size_t off;

	if (!buf)
		return EXIT_FAILURE;
	for (off = 0; off < s->size; off += IO_CHUNK)
		if (pread(s->fd, buf, IO_CHUNK, off) != IO_CHUNK)
			return EXIT_FAILURE;

	return EXIT_SUCCESS;
}

static int write_file(void *arg)
{
	struct file_state *s = arg;

	return write_pattern(s->fd, s->size, 'c') ? EXIT_FAILURE : EXIT_SUCCESS;
}

static int pagecache_charge(struct reparent_test *t)
{
	if (run_in_cgroup(t->child, read_file, t->priv, false)) {
		report(t, 0, "cannot read the file in the child\n");
		return KSFT_FAIL;
	}

	return KSFT_PASS;
}

static const struct reparent_kind pagecache_kind = {
	KEYS(K_FILE),
	.charged_key	= K_FILE,
	.on_disk	= true,
	.setup		= file_setup,
	.charge		= pagecache_charge,
	.resident	= file_resident,
	.free		= file_free,
	.pinned_info	= file_pinned_info,
	.cleanup	= file_free,
};

/*
 * Clean page cache of a file on the working filesystem, read in C and left
 * cached: nothing reclaims it without memory pressure.
 */
static int test_reparent_pagecache(const char *root)
{
	struct file_state s = FILE_STATE(PAGECACHE_SIZE);

	return run_reparent_test(root, __func__, &pagecache_kind, &s);
}

struct meta_state {
	char dir[PATH_MAX];
	int dirfd;
};

static int create_metadata(void *arg)
{
	struct meta_state *s = arg;
	char name[NAME_MAX];
	int i, j, fd;

	for (i = 0; i < NR_META_DIRS; i++) {
		snprintf(name, sizeof(name), "d%03d", i);
		if (mkdirat(s->dirfd, name, 0700))
			return EXIT_FAILURE;
		for (j = 0; j < NR_META_FILES; j++) {
			snprintf(name, sizeof(name), "d%03d/f%d", i, j);
			fd = openat(s->dirfd, name,
				    O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
			if (fd < 0)
				return EXIT_FAILURE;
			close(fd);
		}
	}

	return syncfs(s->dirfd) ? EXIT_FAILURE : EXIT_SUCCESS;
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

static int meta_setup(struct reparent_test *t)
{
	struct meta_state *s = t->priv;

	snprintf(s->dir, sizeof(s->dir), "memcg_reparent_fs_metadata.%d",
		 getpid());
	if (mkdir(s->dir, 0700)) {
		report(t, 0, "mkdir %s: %s\n", s->dir, strerror(errno));
		s->dir[0] = '\0';
		return KSFT_FAIL;
	}
	s->dirfd = open(s->dir, O_DIRECTORY | O_CLOEXEC);
	if (s->dirfd < 0 || syncfs(s->dirfd)) {
		report(t, 0, "cannot open or sync %s\n", s->dir);
		return KSFT_FAIL;
	}
	if (drop_bdev_cache())
		ksft_print_msg("%s: cannot drop the block device's cache: %s\n",
			       t->name, strerror(errno));
	/* block device pages the child brings in (a few are enough) */
	t->min_charge = 16 * page_size;

	return KSFT_PASS;
}

static int meta_charge(struct reparent_test *t)
{
	struct meta_state *s = t->priv;

	if (run_in_cgroup(t->child, create_metadata, s, false)) {
		report(t, 0, "cannot create %d directories in %s\n",
		       NR_META_DIRS, s->dir);
		return KSFT_FAIL;
	}

	return KSFT_PASS;
}

static void meta_free(struct reparent_test *t)
{
	struct meta_state *s = t->priv;

	remove_metadata(s->dirfd);
	syncfs(s->dirfd);
}

/*
 * Deleting the files does not free the block device's pages, and not all
 * of them can be dropped right after (the journal holds blocks until they
 * are checkpointed): P must not grow past what it had, nor underflow.
 */
static void meta_check_freed(struct reparent_test *t)
{
	struct key_range r[2] = {
		{ K_FILE, t->base.v[K_FILE] - key_tol(K_FILE),
		  t->parent_last.v[K_FILE] + key_tol(K_FILE) },
		{ K_CURRENT, t->base.v[K_CURRENT] - key_tol(K_CURRENT),
		  t->parent_last.v[K_CURRENT] + key_tol(K_CURRENT) },
	};
	struct memcg_snap seen;

	expect_ranges(t, 3, t->parent, r, 2, SETTLE_TIMEOUT, &seen);
	check_sane_sizes(t, 3);
}

static void meta_cleanup(struct reparent_test *t)
{
	struct meta_state *s = t->priv;

	if (s->dirfd >= 0)
		remove_metadata(s->dirfd);
	close_fd(&s->dirfd);
	if (s->dir[0])
		rmdir(s->dir);
}

static const struct reparent_kind meta_kind = {
	KEYS(K_FILE),
	.charged_key	= K_FILE,
	.on_disk	= true,
	.setup		= meta_setup,
	.charge		= meta_charge,
	.free		= meta_free,
	.check_freed	= meta_check_freed,
	.cleanup	= meta_cleanup,
};

/*
 * Filesystem metadata: directories and empty files created in C, then
 * synced. New directory blocks, inode table and bitmap blocks are read or
 * created in the block device's page cache (getblk) by the task in C and
 * stay cached as clean buffers. The block device's clean pages are dropped
 * first (drop_bdev_cache()), or a run after another would find them
 * cached. Check 3 is weaker here (meta_check_freed()).
 */
static int test_reparent_fs_metadata(const char *root)
{
	struct meta_state s = { .dirfd = -1 };

	return run_reparent_test(root, __func__, &meta_kind, &s);
}

static int shmem_setup(struct reparent_test *t)
{
	struct file_state *s = t->priv;

	s->fd = memfd_create("memcg_reparent_shmem", MFD_CLOEXEC);
	if (s->fd < 0) {
		ksft_print_msg("%s: memfd_create: %s\n", t->name,
			       strerror(errno));
		return KSFT_SKIP;
	}
	t->min_charge = s->size - s->size / 10;

	return KSFT_PASS;
}

static int write_in_child(struct reparent_test *t)
{
	if (run_in_cgroup(t->child, write_file, t->priv, false)) {
		report(t, 0, "cannot write the file in the child\n");
		return KSFT_FAIL;
	}

	return KSFT_PASS;
}

static const struct reparent_kind shmem_kind = {
	KEYS(K_SHMEM, K_FILE),
	.charged_key	= K_SHMEM,
	.setup		= shmem_setup,
	.charge		= write_in_child,
	.resident	= file_resident,
	.free		= file_free,
	.cleanup	= file_free,
};

/* shmem pages of a memfd (an unlinked tmpfs file) written in C. */
static int test_reparent_shmem(const char *root)
{
	struct file_state s = FILE_STATE(SHMEM_SIZE);

	return run_reparent_test(root, __func__, &shmem_kind, &s);
}

static int fault_anon(void *arg)
{
	struct file_state *s = arg;

	/*
	 * Small pages only: khugepaged must not recharge them to K. Not
	 * MADV_NOHUGEPAGE, which needs CONFIG_ADVISE_SYSCALLS.
	 */
	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0))
		return EXIT_FAILURE;
	s->map = mmap(NULL, s->size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->map == MAP_FAILED)
		return EXIT_FAILURE;
	memset(s->map, 'a', s->size);

	return EXIT_SUCCESS;
}

static long query_resident(void *arg)
{
	struct file_state *s = arg;

	return resident_pages(s->map, s->size);
}

static int anon_charge(struct reparent_test *t)
{
	struct file_state *s = t->priv;

	t->min_charge = s->size - s->size / 10;
	return holder_start(&s->h, t, fault_anon, query_resident, s) ?
		KSFT_FAIL : KSFT_PASS;
}

static const struct reparent_kind anon_kind = {
	KEYS(K_ANON),
	.charged_key	= K_ANON,
	.charge		= anon_charge,
	.resident	= holder_resident,
	.free		= file_free,
	.cleanup	= file_free,
};

/*
 * Anon pages faulted in C by a task that then moved to K and keeps them:
 * charges do not move with a task on cgroup v2.
 */
static int test_reparent_anon(const char *root)
{
	struct file_state s = FILE_STATE(ANON_SIZE);

	return run_reparent_test(root, __func__, &anon_kind, &s);
}

static void sync_and_check_clean(struct reparent_test *t)
{
	struct file_state *s = t->priv;

	if (fsync(s->fd))
		report(t, 3, "fsync: %s\n", strerror(errno));
	check_clean(t);
}

static void dirty_free(struct reparent_test *t)
{
	sync_and_check_clean(t);
	file_free(t);
}

static const struct reparent_kind dirty_kind = {
	KEYS(K_FILE_DIRTY, K_FILE),
	.charged_key	= K_FILE_DIRTY,
	.on_disk	= true,
	.setup		= file_setup,
	.charge		= write_in_child,
	.resident	= file_resident,
	.free		= dirty_free,
	.pinned_info	= file_pinned_info,
	.cleanup	= file_free,
};

/*
 * Dirty page cache: a file overwritten in C and not synced, C removed
 * while the pages are dirty. The inode belongs to this process's
 * writeback (make_uncached_file()), so no writeback structure of C holds
 * dirty io. Check 2 reads file_dirty within dirty_expire_centisecs (30 s)
 * of the write even when check 1 waits its full default 20 s, so the
 * flusher has not cleaned the pages yet.
 */
static int test_reparent_dirty(const char *root)
{
	struct file_state s = FILE_STATE(DIRTY_SIZE);

	return run_reparent_test(root, __func__, &dirty_kind, &s);
}

/*
 * Read the whole file and dirty it in runs of WRITEBACK_RUN pages, one
 * clean page apart: the writeback is one small IO per run, which keeps
 * the device busy longer than the same data in large requests, while
 * the IOs in flight still hold several times stat_tol().
 */
static int dirty_in_runs(void *arg)
{
	struct file_state *s = arg;
	size_t run = WRITEBACK_RUN * page_size, off;
	char *buf;

	if (read_file(s))
		return EXIT_FAILURE;
	buf = malloc(run);
	if (!buf)
		return EXIT_FAILURE;
	memset(buf, 'w', run);
	for (off = 0; off + run <= s->size; off += run + page_size)
		if (pwrite(s->fd, buf, run, off) != (ssize_t)run)
			return EXIT_FAILURE;

	return EXIT_SUCCESS;
}

/*
 * Charge the file's pages in C, most of them dirty, then start their
 * writeback from a process outside C (the flusher), which sends the time
 * its sync_file_range() returned.
 */
static int writeback_charge(struct reparent_test *t)
{
	struct file_state *s = t->priv;
	int done[2];
	double end;

	if (run_in_cgroup(t->child, dirty_in_runs, s, false)) {
		report(t, 0, "cannot read and write the file in the child\n");
		return KSFT_FAIL;
	}
	if (pipe2(done, O_CLOEXEC)) {
		report(t, 0, "pipe2: %s\n", strerror(errno));
		return KSFT_FAIL;
	}

	fflush(stdout);
	s->flusher = fork();
	if (s->flusher < 0) {
		report(t, 0, "fork: %s\n", strerror(errno));
		close(done[0]);
		close(done[1]);
		return KSFT_FAIL;
	}
	if (s->flusher == 0) {
		if (sync_file_range(s->fd, 0, 0, SYNC_FILE_RANGE_WRITE))
			_exit(EXIT_FAILURE);
		end = now();
		_exit(write(done[1], &end, sizeof(end)) == sizeof(end) ?
		      EXIT_SUCCESS : EXIT_FAILURE);
	}
	close(done[1]);
	s->flusher_done = done[0];

	return KSFT_PASS;
}

static void writeback_free(struct reparent_test *t)
{
	struct file_state *s = t->priv;
	double end;

	if (read_full(s->flusher_done, &end, sizeof(end), HOLDER_TIMEOUT_MS)) {
		report(t, 3, "sync_file_range(SYNC_FILE_RANGE_WRITE) failed or hung\n");
	} else {
		char released[32] = "not released";

		if (t->released_at)
			snprintf(released, sizeof(released), "released %+.2f s",
				 t->released_at - t->removed_at);
		ksft_print_msg("%s: %ld KiB of C under writeback at its last read before rmdir; ",
			       t->name, kib(t->child_last.v[K_FILE_WRITEBACK]));
		printf("submission ended %+.2f s from rmdir, C %s\n",
		       end - t->removed_at, released);
	}
	sync_and_check_clean(t);
	file_free(t);
}

static const struct reparent_kind writeback_kind = {
	KEYS(K_FILE),
	.charged_key	= K_FILE,
	.on_disk	= true,
	.under_writeback = true,
	.setup		= file_setup,
	.charge		= writeback_charge,
	.resident	= file_resident,
	.free		= writeback_free,
	.pinned_info	= file_pinned_info,
	.cleanup	= file_free,
};

/*
 * Pages under writeback at removal: C reads a file and dirties most of
 * it, a process outside C starts the writeback
 * (sync_file_range(SYNC_FILE_RANGE_WRITE)), and C is
 * removed right after a read of its memory.stat that shows more of it
 * under writeback than the stats may lag: that read is the setup's
 * guarantee (check 0). Without a way to hold IO back (blk-throttle, loop
 * and device mapper are not in every config, nor in the kernels this was
 * written for), the test does not claim the pages are still under
 * writeback when C's css goes offline, which happens after the rmdir,
 * asynchronously; it prints when the submission ended and when C was
 * released, both relative to the rmdir. The IOs in flight (2 to 3 MiB
 * on a 2-CPU guest) must exceed stat_tol(). Once the
 * writeback is over, P's file_writeback and file_dirty are back to their
 * baseline exactly, whatever moved while the IO was in flight.
 */
static int test_reparent_writeback(const char *root)
{
	struct file_state s = FILE_STATE(WRITEBACK_SIZE);

	return run_reparent_test(root, __func__, &writeback_kind, &s);
}

static int map_file(void *arg)
{
	struct file_state *s = arg;

	/* read faults on every page (MADV_POPULATE_READ may be ENOSYS) */
	s->map = mmap(NULL, s->size, PROT_READ, MAP_SHARED | MAP_POPULATE,
		      s->fd, 0);

	return s->map == MAP_FAILED ? EXIT_FAILURE : EXIT_SUCCESS;
}

static int mapped_charge(struct reparent_test *t)
{
	struct file_state *s = t->priv;

	return holder_start(&s->h, t, map_file, query_resident, s) ?
		KSFT_FAIL : KSFT_PASS;
}

/* Unmapping first: file_mapped goes back to the baseline, the cache stays. */
static void mapped_free(struct reparent_test *t)
{
	struct file_state *s = t->priv;
	struct key_range r = {
		K_FILE_MAPPED,
		t->base.v[K_FILE_MAPPED] - key_tol(K_FILE_MAPPED),
		t->base.v[K_FILE_MAPPED] + key_tol(K_FILE_MAPPED),
	};
	struct memcg_snap seen;

	holder_stop(&s->h);
	expect_ranges(t, 3, t->parent, &r, 1, UNCHARGE_TIMEOUT, &seen);
	file_free(t);
}

static const struct reparent_kind mapped_kind = {
	KEYS(K_FILE_MAPPED, K_FILE),
	.charged_key	= K_FILE_MAPPED,
	.on_disk	= true,
	.setup		= file_setup,
	.charge		= mapped_charge,
	.resident	= holder_resident,
	.free		= mapped_free,
	.pinned_info	= file_pinned_info,
	.cleanup	= file_free,
};

/*
 * Mapped page cache: a file mmapped and faulted in by a task in C that
 * then moved to K and keeps the mapping.
 */
static int test_reparent_mapped(const char *root)
{
	struct file_state s = FILE_STATE(MAPPED_SIZE);

	return run_reparent_test(root, __func__, &mapped_kind, &s);
}

struct churn_arg {
	int diskfd;
	int tmpfd;
	int gen;
};

static int write_new_file(int dirfd, const char *name, int flags, size_t size)
{
	int fd, ret;

	fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC | flags, 0600);
	if (fd < 0)
		return -1;
	ret = write_pattern(fd, size, 'c');
	close(fd);

	return ret;
}

/* One job: a small file write, a tmpfs file and tree, negative lookups. */
static int churn_job(void *arg)
{
	struct churn_arg *a = arg;
	char name[NAME_MAX];
	struct stat st;
	int i, fd;

	snprintf(name, sizeof(name), "gen%d", a->gen);
	if (write_new_file(a->diskfd, name, 0, CHURN_FILE_SIZE) ||
	    write_new_file(a->tmpfd, name, O_CREAT, CHURN_SHMEM_SIZE))
		return EXIT_FAILURE;

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
 * Anon THPs faulted in C (MADV_HUGEPAGE on an aligned range: THP may be in
 * "madvise" mode) by a task that moves to K and keeps them. The last THP
 * loses one page, which splits its PMD mapping and queues it on C's
 * deferred split queue as partially mapped; the others sit there too when
 * the underused-THP shrinker is enabled. So this also checks that the
 * queue follows the folios to P.
 */
static int fault_thp(void *arg)
{
	struct file_state *s = arg;
	char *p;

	p = mmap(NULL, s->size + THP_SIZE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return EXIT_FAILURE;
	s->map = (void *)(((unsigned long)p + THP_SIZE - 1) & ~(THP_SIZE - 1));
	if (madvise(s->map, s->size, MADV_HUGEPAGE) && errno != ENOSYS)
		return EXIT_FAILURE;
	memset(s->map, 't', s->size);
	if (munmap((char *)s->map + s->size - page_size, page_size))
		return EXIT_FAILURE;
	s->size -= page_size;	/* the holder's copy, for query_resident() */

	return EXIT_SUCCESS;
}

static int thp_setup(struct reparent_test *t)
{
	char mode[128];

	if (read_text("/sys/kernel/mm/transparent_hugepage/enabled", mode,
		      sizeof(mode)) <= 0) {
		ksft_print_msg("%s: no transparent hugepages (CONFIG_TRANSPARENT_HUGEPAGE)\n",
			       t->name);
		return KSFT_SKIP;
	}
	if (strstr(mode, "[never]") ||
	    (!strstr(mode, "[always]") && madvise(NULL, 0, MADV_HUGEPAGE) &&
	     errno == ENOSYS)) {
		ksft_print_msg("%s: THP is %s and madvise() is missing\n",
			       t->name, strstr(mode, "[never]") ? "off" : "on madvise");
		return KSFT_SKIP;
	}

	return KSFT_PASS;
}

static int thp_charge(struct reparent_test *t)
{
	struct file_state *s = t->priv;

	/* Every THP but the partially unmapped one is still PMD-mapped. */
	t->min_charge = s->size - THP_SIZE;
	return holder_start(&s->h, t, fault_thp, query_resident, s) ?
		KSFT_FAIL : KSFT_PASS;
}

static const struct reparent_kind thp_kind = {
	KEYS(K_ANON, K_ANON_THP),
	.charged_key	= K_ANON_THP,
	.setup		= thp_setup,
	.charge		= thp_charge,
	.resident	= holder_resident,
	.free		= file_free,
	.cleanup	= file_free,
};

static int test_reparent_thp(const char *root)
{
	struct file_state s = FILE_STATE(NR_THPS * THP_SIZE);

	return run_reparent_test(root, __func__, &thp_kind, &s);
}

/*
 * A file that C creates and writes: unlike the other file tests, its
 * inode is attached to C's writeback structure (cgwb), which holds a
 * reference on C's memcg until the inode is switched to an ancestor's.
 * cleanup_offline_cgwbs_work does that at offline, but skips a cgwb with
 * dirty io, and C is removed while the file is dirty. The flusher is made
 * quick (dirty_expire and dirty_writeback 1 s, restored afterwards) and
 * nudge() offlines no scratch memcg for this test: the kernel itself must
 * come back to the cgwb once it is clean.
 */
struct cgwb_state {
	struct file_state f;
	long expire, writeback;	/* the sysctls before the test */
};

static long read_sysctl(const char *path)
{
	char buf[32];

	if (read_text(path, buf, sizeof(buf)) <= 0)
		return -1;
	return atol(buf);
}

static int write_sysctl(const char *path, long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld", v);
	return write_text(path, buf, strlen(buf)) < 0 ? -1 : 0;
}

#define DIRTY_EXPIRE	"/proc/sys/vm/dirty_expire_centisecs"
#define DIRTY_WRITEBACK	"/proc/sys/vm/dirty_writeback_centisecs"

static int cgwb_setup(struct reparent_test *t)
{
	struct cgwb_state *s = t->priv;

	s->expire = read_sysctl(DIRTY_EXPIRE);
	s->writeback = read_sysctl(DIRTY_WRITEBACK);
	if (s->expire < 0 || s->writeback < 0 ||
	    write_sysctl(DIRTY_EXPIRE, 100) || write_sysctl(DIRTY_WRITEBACK, 100)) {
		report(t, 0, "cannot set %s and %s\n", DIRTY_EXPIRE, DIRTY_WRITEBACK);
		return KSFT_FAIL;
	}
	snprintf(s->f.path, sizeof(s->f.path), "memcg_reparent_cgwb.%d", getpid());
	unlink(s->f.path);
	t->min_charge = s->f.size - s->f.size / 10;
	nudge_offline = false;

	return KSFT_PASS;
}

static int create_and_write(void *arg)
{
	struct file_state *s = arg;
	int fd = open(s->path, O_CREAT | O_EXCL | O_WRONLY, 0600);

	if (fd < 0 || write_pattern(fd, s->size, 'g'))
		return EXIT_FAILURE;
	close(fd);

	return EXIT_SUCCESS;
}

static int cgwb_charge(struct reparent_test *t)
{
	struct cgwb_state *s = t->priv;

	if (run_in_cgroup(t->child, create_and_write, &s->f, false)) {
		report(t, 0, "cannot create and write %s in the child\n", s->f.path);
		return KSFT_FAIL;
	}
	s->f.fd = open(s->f.path, O_RDONLY);
	if (s->f.fd < 0) {
		report(t, 0, "open %s: %s\n", s->f.path, strerror(errno));
		return KSFT_FAIL;
	}

	return KSFT_PASS;
}

static void cgwb_cleanup(struct reparent_test *t)
{
	struct cgwb_state *s = t->priv;

	file_free(t);
	nudge_offline = true;
	if (s->expire >= 0)
		write_sysctl(DIRTY_EXPIRE, s->expire);
	if (s->writeback >= 0)
		write_sysctl(DIRTY_WRITEBACK, s->writeback);
}

static const struct reparent_kind cgwb_kind = {
	KEYS(K_FILE),
	.charged_key	= K_FILE,
	.on_disk	= true,
	.setup		= cgwb_setup,
	.charge		= cgwb_charge,
	.resident	= file_resident,
	.free		= file_free,
	.pinned_info	= file_pinned_info,
	.cleanup	= cgwb_cleanup,
};

static int test_reparent_cgwb(const char *root)
{
	struct cgwb_state s = { .f = FILE_STATE(CGWB_SIZE), .expire = -1,
				.writeback = -1 };

	return run_reparent_test(root, __func__, &cgwb_kind, &s);
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
 * charges their data but not their inodes and directory blocks. This test
 * removes many children, so it drives the steps itself.
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
	if (ret == KSFT_PASS)
		ret = skip_unless_on_disk(&t);
	if (ret != KSFT_PASS)
		goto cleanup;
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
		if (rt_remove_child(&t, -1))
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
 * Sockets made in C and used after C is removed. A socket is charged to
 * the memcg of the task that created it (sk->sk_memcg: set by
 * mem_cgroup_sk_alloc() at socket(), and in inet_csk_accept() for the task
 * that accepts), whatever cgroup the tasks using it are in later, so a
 * removed C goes on being charged. Once C's memory was handed to P, C's
 * limit must not get in the way: a kernel that reparents C's folios but
 * keeps C's page counter usage and memory.max makes every socket charge
 * hit C's limit with nothing left below it to reclaim, and the memcg OOM
 * that follows finds no task in C to kill. A kernel that leaves the
 * folios in C reclaims C's page cache instead.
 *
 * C (memory.max SOCKET_CG_MAX) reads a file larger than its limit, so it
 * sits at the limit with page cache, then opens a TCP connection over
 * 127.0.0.1 (both ends created in C) and moves to K. C is removed, and
 * the holder, in K, pushes TRANSFER_SIZE bytes through that connection
 * to a reader it forks. The reference is the same transfer, by the same
 * holder, through a fresh connection made in K, before and after. P's
 * memory.events must count no oom or oom_kill, during that transfer or
 * anywhere in the test, and the transfer must take at most
 * SOCKET_SLOWDOWN times the slower reference plus SOCKET_GRACE_US.
 */
struct socket_state {
	struct file_state f;	/* the file C reads, and the holder */
	int dead[2];		/* in the holder: the connection made in C */
	int nr_transfers;	/* in the holder: transfers done */
	size_t queued;		/* in the holder: left unread in dead[1] */
	const char *root;	/* test_reparent_socket_release */
};

/* the holder's transfers, in order: only DEAD_TRANSFER uses s->dead */
#define NR_TRANSFERS	3
#define DEAD_TRANSFER	1

static const char * const transfer_names[NR_TRANSFERS] = {
	"reference before", "removed child's", "reference after",
};

struct memcg_events {
	long max;
	long oom;
	long oom_kill;
};

static int read_events(const char *cgroup, struct memcg_events *e)
{
	char buf[PAGE_SIZE];

	if (cg_read(cgroup, "memory.events", buf, sizeof(buf)))
		return -1;
	e->max = stat_value(buf, "max");
	e->oom = stat_value(buf, "oom");
	e->oom_kill = stat_value(buf, "oom_kill");

	return e->max < 0 || e->oom < 0 || e->oom_kill < 0 ? -1 : 0;
}

static void close_pair(int fd[2])
{
	close_fd(&fd[0]);
	close_fd(&fd[1]);
}

/*
 * A TCP connection over 127.0.0.1, both ends created by this task: fd[0]
 * connected, fd[1] accepted. Returns 0, or -1 with errno set.
 */
static int tcp_pair(int fd[2])
{
	struct sockaddr_in addr = {
		.sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	socklen_t len = sizeof(addr);
	int lfd, err;

	fd[0] = -1;
	fd[1] = -1;
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return -1;
	if (bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) ||
	    listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&addr, &len))
		goto fail;
	fd[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd[0] < 0 ||
	    connect(fd[0], (struct sockaddr *)&addr, sizeof(addr)))
		goto fail;
	fd[1] = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd[1] < 0)
		goto fail;
	close(lfd);

	return 0;

fail:
	err = errno;
	close_pair(fd);
	close(lfd);
	errno = err;
	return -1;
}

/*
 * Send TRANSFER_SIZE bytes into fd[0] in IO_CHUNK writes, then shut it
 * down, while a forked reader reads fd[1] until EOF. Returns the time from
 * the first send to the reader's exit in microseconds, -1 on error.
 */
static long timed_transfer(int fd[2])
{
	size_t sent = 0, len;
	double start;
	ssize_t n = 0;
	int status;
	char *buf;
	pid_t pid;

	buf = malloc(IO_CHUNK);
	if (!buf)
		return -1;
	memset(buf, 's', IO_CHUNK);

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		free(buf);
		return -1;
	}
	if (pid == 0) {
		size_t got = 0;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		while ((n = read(fd[1], buf, IO_CHUNK)) > 0)
			got += n;
		_exit(!n && got == TRANSFER_SIZE ? EXIT_SUCCESS : EXIT_FAILURE);
	}

	start = now();
	while (sent < TRANSFER_SIZE) {
		len = TRANSFER_SIZE - sent;
		if (len > IO_CHUNK)
			len = IO_CHUNK;
		n = send(fd[0], buf, len, MSG_NOSIGNAL);
		if (n <= 0)
			break;
		sent += n;
	}
	shutdown(fd[0], SHUT_WR);
	free(buf);

	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != EXIT_SUCCESS || sent != TRANSFER_SIZE)
		return -1;
	return (now() - start) * 1e6;
}

/* Runs in the holder, in C: fill C with page cache, then connect. */
static int socket_charge(void *arg)
{
	struct socket_state *s = arg;

	/* its own process group, which takes the readers along */
	if (setpgid(0, 0) || read_file(&s->f) || tcp_pair(s->dead))
		return EXIT_FAILURE;

	return EXIT_SUCCESS;
}

/* Runs in the holder, in K: one transfer per query (transfer_names). */
static long socket_query(void *arg)
{
	struct socket_state *s = arg;
	int fresh[2];
	long us;

	if (s->nr_transfers++ == DEAD_TRANSFER) {
		us = timed_transfer(s->dead);
		close_pair(s->dead);
		return us;
	}
	if (tcp_pair(fresh))
		return -1;
	us = timed_transfer(fresh);
	close_pair(fresh);

	return us;
}

/*
 * Whether TCP over 127.0.0.1 works: KSFT_PASS; KSFT_SKIP without IPv4
 * (CONFIG_INET); KSFT_FAIL, reported, when connecting fails otherwise.
 */
static int check_tcp(struct reparent_test *t)
{
	int fd[2];

	if (!tcp_pair(fd)) {
		close_pair(fd);
		return KSFT_PASS;
	}
	if (errno == EAFNOSUPPORT || errno == EPROTONOSUPPORT) {
		ksft_print_msg("%s: no TCP over IPv4 (CONFIG_INET): %s\n",
			       t->name, strerror(errno));
		return KSFT_SKIP;
	}
	report(t, 0, "cannot connect over 127.0.0.1 (is lo up?): %s\n",
	       strerror(errno));
	return KSFT_FAIL;
}

static int socket_setup(struct reparent_test *t)
{
	char max[32];
	int ret;

	ret = check_tcp(t);
	if (ret != KSFT_PASS)
		return ret;

	snprintf(max, sizeof(max), "%d", SOCKET_CG_MAX);
	if (cg_write(t->child, "memory.max", max)) {
		report(t, 0, "cannot set %s/memory.max\n", t->child);
		return KSFT_FAIL;
	}

	return file_setup(t);
}

/*
 * Kill the holder and a reader it may have left: they are in the
 * holder's process group, and a reader that outlived the holder is this
 * process's child now (PR_SET_CHILD_SUBREAPER).
 */
static void socket_cleanup(struct reparent_test *t)
{
	struct socket_state *s = t->priv;
	pid_t pgid = s->f.h.pid;

	if (pgid > 0) {
		kill(-pgid, SIGKILL);
		kill(pgid, SIGKILL);
	}
	file_free(t);
	if (pgid > 0)
		while (waitpid(-pgid, NULL, 0) > 0)
			;
}

static int test_reparent_socket_limit(const char *root)
{
	struct socket_state s = {
		.f = FILE_STATE(SOCKET_FILE_SIZE),
		.dead = { -1, -1 },
	};
	struct memcg_events base, ev[NR_TRANSFERS + 1], *b, *a;
	long us[NR_TRANSFERS], ref;
	struct reparent_test t;
	int i, ret;

	ret = rt_setup(&t, root, __func__);
	t.priv = &s;
	if (ret == KSFT_PASS)
		ret = skip_unless_on_disk(&t);
	if (ret == KSFT_PASS)
		ret = socket_setup(&t);
	if (ret != KSFT_PASS)
		goto cleanup;

	if (read_events(t.parent, &base)) {
		report(&t, 0, "cannot read %s/memory.events\n", t.parent);
		goto cleanup;
	}
	if (holder_start(&s.f.h, &t, socket_charge, socket_query, &s) ||
	    rt_remove_child(&t, -1))
		goto cleanup;
	if (!access(t.child, F_OK) || errno != ENOENT) {
		report(&t, 0, "%s is still there after rmdir\n", t.child);
		goto cleanup;
	}
	if (t.child_last.v[K_CURRENT] < SOCKET_CG_MAX / 4 * 3) {
		report(&t, 0,
		       "memory.current of the child: expected >= %d KiB before rmdir, saw %ld KiB\n",
		       SOCKET_CG_MAX / 4 * 3 / 1024,
		       kib(t.child_last.v[K_CURRENT]));
		goto cleanup;
	}
	ksft_print_msg("%s: the child had %ld KiB (file %ld KiB) of its %d KiB at rmdir\n",
		       t.name, kib(t.child_last.v[K_CURRENT]),
		       kib(t.child_last.v[K_FILE]), SOCKET_CG_MAX / 1024);

	for (i = 0; i < NR_TRANSFERS; i++) {
		if (read_events(t.parent, &ev[i])) {
			report(&t, 0, "cannot read %s/memory.events\n",
			       t.parent);
			goto cleanup;
		}
		us[i] = holder_query(&s.f.h);
		if (us[i] < 0) {
			ksft_print_msg("%s: the %s transfer failed\n", t.name,
				       transfer_names[i]);
			t.failed = true;
			goto cleanup;
		}
	}
	if (read_events(t.parent, &ev[i])) {
		report(&t, 0, "cannot read %s/memory.events\n", t.parent);
		goto cleanup;
	}
	t.checked = true;

	ref = us[0] > us[2] ? us[0] : us[2];
	b = &ev[DEAD_TRANSFER];
	a = &ev[DEAD_TRANSFER + 1];
	ksft_print_msg("%s: %d MiB in %ld ms through C's sockets, %ld and %ld ms through K's\n",
		       t.name, TRANSFER_SIZE >> 20, us[DEAD_TRANSFER] / 1000,
		       us[0] / 1000, us[2] / 1000);
	ksft_print_msg("%s: P's memory.events during it: oom %+ld, oom_kill %+ld, max %+ld\n",
		       t.name, a->oom - b->oom, a->oom_kill - b->oom_kill,
		       a->max - b->max);
	/* the same figures for the harness's records (db/metrics.py) */
	ksft_print_msg("METRIC %s dead_ms=%ld ref_ms=%ld oom=%ld oom_kill=%ld max=%ld\n",
		       t.name, us[DEAD_TRANSFER] / 1000, ref / 1000,
		       a->oom - b->oom, a->oom_kill - b->oom_kill,
		       a->max - b->max);

	if (a->oom != b->oom || a->oom_kill != b->oom_kill) {
		ksft_print_msg("%s: memcg OOM in P during the transfer: oom %+ld, oom_kill %+ld\n",
			       t.name, a->oom - b->oom, a->oom_kill - b->oom_kill);
		t.failed = true;
	}
	if (ev[i].oom != base.oom || ev[i].oom_kill != base.oom_kill) {
		ksft_print_msg("%s: memcg OOM in P during the test: oom %+ld, oom_kill %+ld\n",
			       t.name, ev[i].oom - base.oom,
			       ev[i].oom_kill - base.oom_kill);
		t.failed = true;
	}
	if (us[DEAD_TRANSFER] > SOCKET_SLOWDOWN * ref + SOCKET_GRACE_US) {
		ksft_print_msg("%s: the transfer took %ld ms, expected <= %d x %ld + %d ms\n",
			       t.name, us[DEAD_TRANSFER] / 1000,
			       SOCKET_SLOWDOWN, ref / 1000,
			       SOCKET_GRACE_US / 1000);
		t.failed = true;
	}

cleanup:
	socket_cleanup(&t);
	return rt_cleanup(&t, ret);
}

/*
 * A removed C whose only memory was socket buffers must be released once
 * its sockets are closed: nothing may hold it then, a CPU's charge stock
 * included. mem_cgroup_uncharge_skmem() gives a socket's pages back
 * through refill_stock(), and a stock keeps a css reference on the memcg
 * it caches until its CPU charges another one, which on an idle CPU may
 * be never. So, unlike the other subtests, the wait for the release here
 * does not nudge the stocks: C's sockets are made in C, C is removed,
 * TRANSFER_SIZE bytes go through them from K, the holder closes them and
 * exits, and P's nr_dying_subsys_memory must be back to its base within
 * dying_timeout; SOCKET_RELEASE_ROUNDS times over, a new P, C and K each.
 */
static int socket_release_charge(void *arg)
{
	struct socket_state *s = arg;

	if (setpgid(0, 0) || tcp_pair(s->dead))
		return EXIT_FAILURE;

	return EXIT_SUCCESS;
}

static long socket_release_query(void *arg)
{
	struct socket_state *s = arg;
	long us;

	/*
	 * From the root cgroup, whose charges bypass the stocks: nothing the
	 * holder does after the sockets close (its answer on the pipe, its
	 * exit) replaces the stock their last uncharge refilled.
	 */
	if (cg_enter_current(s->root))
		return -1;
	us = timed_transfer(s->dead);
	close_pair(s->dead);
	return us;
}

static int socket_release_round(const char *root)
{
	struct socket_state s = {
		.f = FILE_STATE(0),
		.dead = { -1, -1 },
		.root = root,
	};
	struct reparent_test t;
	double start, waited;
	long dying;
	int ret;

	ret = rt_setup(&t, root, "test_reparent_socket_release");
	t.priv = &s;
	if (ret != KSFT_PASS)
		goto cleanup;
	ret = check_tcp(&t);
	if (ret != KSFT_PASS)
		goto cleanup;

	if (holder_start(&s.f.h, &t, socket_release_charge,
			 socket_release_query, &s) ||
	    rt_remove_child(&t, -1))
		goto cleanup;
	if (holder_query(&s.f.h) < 0) {
		report(&t, 0, "the transfer through the removed child's sockets failed\n");
		goto cleanup;
	}
	/* the holder exits: no charge of its own replaces a stock */
	holder_stop(&s.f.h);
	t.checked = true;

	start = now();
	for (;;) {
		dying = read_dying(t.parent);
		waited = now() - start;
		if (dying < 0 || dying <= t.dying_base || waited >= dying_timeout)
			break;
		sleep_ms(POLL_MS);
	}
	if (dying != t.dying_base)
		report(&t, 1,
		       "nr_dying_subsys_memory: expected %ld, saw %ld %.1f s after the sockets closed (stocks not nudged)\n",
		       t.dying_base, dying, waited);
	else
		ksft_print_msg("%s: released %.2f s after the sockets closed\n",
			       t.name, waited);

cleanup:
	socket_cleanup(&t);
	return rt_cleanup(&t, ret);
}

/*
 * Whether the stock still caches C at the end depends on which CPU took
 * the last uncharge and on what else was charged there since: a kernel
 * that lets stocks pin dead memcgs released C in about 1 run of 5 here.
 * Every one of SOCKET_RELEASE_ROUNDS children must be released.
 */
#define SOCKET_RELEASE_ROUNDS	3

static int test_reparent_socket_release(const char *root)
{
	int i, ret = KSFT_PASS;

	for (i = 0; i < SOCKET_RELEASE_ROUNDS && ret == KSFT_PASS; i++)
		ret = socket_release_round(root);

	return ret;
}

/*
 * A file C created and left dirty: its inode is attached to C's writeback
 * structure (cgwb), which holds C's css. Offline switches the inodes of a
 * clean cgwb to the parent's; a dirty one waited for the flusher's next
 * periodic run (dirty_writeback_centisecs, 5 s by default), and every job
 * that ended with unwritten data stayed dying that long. Here both that
 * period and the dirty expiry are raised to DIRTY_CGWB_FLUSH_S, longer than
 * the wait, so that only writeback started at offline can release C within
 * dying_timeout. The data must then read back whole. No sync: it would
 * clean the inode itself.
 */
#define DIRTY_CGWB_SIZE		MB(4)
#define DIRTY_CGWB_FLUSH_S	120

static const char * const dirty_cgwb_knobs[] = {
	"/proc/sys/vm/dirty_expire_centisecs",
	"/proc/sys/vm/dirty_writeback_centisecs",
};

struct dirty_cgwb_state {
	char path[PATH_MAX];
};

static int dirty_cgwb_charge(void *arg)
{
	struct dirty_cgwb_state *s = arg;
	int fd, ret;

	fd = open(s->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return EXIT_FAILURE;
	ret = write_pattern(fd, DIRTY_CGWB_SIZE, 'c');
	close(fd);

	return ret ? EXIT_FAILURE : EXIT_SUCCESS;
}

static bool dirty_cgwb_intact(struct dirty_cgwb_state *s)
{
	char buf[IO_CHUNK];
	size_t off = 0;
	ssize_t n, i;
	int fd;

	fd = open(s->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (i = 0; i < n; i++)
			if (buf[i] != 'c')
				break;
		if (i < n)
			break;
		off += n;
	}
	close(fd);

	return n == 0 && off == DIRTY_CGWB_SIZE;
}

static int test_reparent_dirty_cgwb(const char *root)
{
	struct dirty_cgwb_state s = { .path = "" };
	char saved[ARRAY_SIZE(dirty_cgwb_knobs)][32] = { "" }, raised[32];
	struct reparent_test t;
	double waited;
	long dying;
	int ret, i;

	ret = rt_setup(&t, root, __func__);
	if (ret != KSFT_PASS)
		goto cleanup;
	ret = skip_unless_on_disk(&t);
	if (ret != KSFT_PASS)
		goto cleanup;
	snprintf(s.path, sizeof(s.path), "memcg_reparent_dirty_cgwb.%d", getpid());
	unlink(s.path);
	snprintf(raised, sizeof(raised), "%d", DIRTY_CGWB_FLUSH_S * 100);
	for (i = 0; i < ARRAY_SIZE(dirty_cgwb_knobs); i++) {
		if (read_text(dirty_cgwb_knobs[i], saved[i], sizeof(saved[i])) <= 0 ||
		    write_text(dirty_cgwb_knobs[i], raised, strlen(raised)) < 0) {
			report(&t, 0, "cannot raise %s\n", dirty_cgwb_knobs[i]);
			saved[i][0] = '\0';
			goto cleanup;
		}
	}

	if (run_in_cgroup(t.child, dirty_cgwb_charge, &s, false)) {
		report(&t, 0, "cannot write %s in the child\n", s.path);
		goto cleanup;
	}
	if (rt_remove_child(&t, K_FILE_DIRTY))
		goto cleanup;
	t.checked = true;

	dying = wait_dying(t.parent, t.dying_base, dying_timeout, &waited);
	if (dying != t.dying_base)
		report(&t, 1,
		       "nr_dying_subsys_memory: expected %ld, saw %ld %.1f s after rmdir, with the child's file dirty and the flusher's period and expiry at %d s\n",
		       t.dying_base, dying, waited, DIRTY_CGWB_FLUSH_S);
	else
		ksft_print_msg("%s: released %.2f s after rmdir\n", t.name, waited);
	ksft_print_msg("METRIC %s release_s=%.2f released=%d\n", t.name, waited,
		       dying == t.dying_base);
	if (!dirty_cgwb_intact(&s))
		report(&t, 3, "%s does not read back as written\n", s.path);

cleanup:
	for (i = 0; i < ARRAY_SIZE(dirty_cgwb_knobs); i++)
		if (saved[i][0])
			write_text(dirty_cgwb_knobs[i], saved[i], strlen(saved[i]));
	if (s.path[0])
		unlink(s.path);
	return rt_cleanup(&t, ret);
}

/*
 * A connection made in C that stays open after C is removed, as a pooled
 * or handed-over connection does: its sockets must not keep C dying, and
 * what they charged before and after the rmdir must be uncharged exactly.
 * The holder makes a TCP pair in C and leaves SOCKET_OPEN_QUEUED bytes
 * unread in the accepting end, so that C has socket memory at rmdir; it
 * then moves to K. C must be released while the sockets are open (check
 * 1), with P still accounting for their memory (check 2). Then the holder
 * reads the queued data, pushes TRANSFER_SIZE bytes through the same
 * connection from K and closes it, and P's sock must be back to its
 * baseline exactly, and memory.current within the stock tolerance, once
 * the holder is gone (check 3).
 */
#define SOCKET_OPEN_QUEUED	MB(8)

static int socket_open_charge(void *arg)
{
	struct socket_state *s = arg;
	int rcvbuf = 2 * SOCKET_OPEN_QUEUED, sndbuf = MB(1);
	double deadline = now() + SETTLE_TIMEOUT;
	char *buf;
	ssize_t n;

	if (setpgid(0, 0) || tcp_pair(s->dead))
		return EXIT_FAILURE;
	/* root: past net.core.rmem_max; the kernel doubles the value */
	if (setsockopt(s->dead[1], SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf,
		       sizeof(rcvbuf)) ||
	    setsockopt(s->dead[0], SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf,
		       sizeof(sndbuf)))
		return EXIT_FAILURE;

	buf = malloc(IO_CHUNK);
	if (!buf)
		return EXIT_FAILURE;
	memset(buf, 's', IO_CHUNK);
	/* until SOCKET_OPEN_QUEUED, or the receive window stays shut */
	while (s->queued < SOCKET_OPEN_QUEUED && now() < deadline) {
		n = send(s->dead[0], buf, IO_CHUNK, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EAGAIN) {
			if (s->queued >= SOCKET_OPEN_QUEUED / 4)
				break;
			sleep_ms(POLL_MS);
			continue;
		}
		if (n <= 0)
			break;
		s->queued += n;
	}
	free(buf);

	return s->queued >= SOCKET_OPEN_QUEUED / 4 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* In K: drain what C queued, then a transfer through C's connection. */
static long socket_open_query(void *arg)
{
	struct socket_state *s = arg;
	char buf[IO_CHUNK];
	size_t drained = 0, len;
	long us;

	/* every byte sent in C, some of which may still be in flight */
	while (drained < s->queued) {
		len = s->queued - drained;
		if (len > sizeof(buf))
			len = sizeof(buf);
		if (read_full(s->dead[1], buf, len, HOLDER_TIMEOUT_MS))
			return -1;
		drained += len;
	}
	us = timed_transfer(s->dead);
	close_pair(s->dead);

	return us < 0 ? -1 : (long)drained;
}

static int test_reparent_socket_open(const char *root)
{
	static const int keys[] = { K_SOCK };
	struct socket_state s = {
		.f = FILE_STATE(0),
		.dead = { -1, -1 },
	};
	struct key_range exact;
	struct memcg_snap seen;
	struct reparent_test t;
	long drained;
	int ret;

	ret = rt_setup(&t, root, __func__);
	t.priv = &s;
	if (ret != KSFT_PASS)
		goto cleanup;
	ret = check_tcp(&t);
	if (ret != KSFT_PASS)
		goto cleanup;

	if (holder_start(&s.f.h, &t, socket_open_charge, socket_open_query,
			 &s) ||
	    rt_remove_child(&t, K_SOCK))
		goto cleanup;
	ksft_print_msg("%s: the child's sockets held %ld KiB at rmdir\n",
		       t.name, kib(t.child_last.v[K_SOCK]));

	if (!check_released(&t, t.dying_base))
		t.failed = true;
	else
		ksft_print_msg("%s: released %.2f s after rmdir, its sockets open\n",
			       t.name, t.released_at - t.removed_at);
	if (!check_accounted(&t, keys, ARRAY_SIZE(keys)))
		t.failed = true;

	drained = holder_query(&s.f.h);
	if (drained < 0) {
		report(&t, 3, "the transfer through the removed child's connection failed\n");
		goto cleanup;
	}
	ksft_print_msg("%s: %ld KiB drained and %d MiB sent through the connection from K\n",
		       t.name, kib(drained), TRANSFER_SIZE >> 20);
	holder_stop(&s.f.h);

	exact = (struct key_range){ K_SOCK, t.base.v[K_SOCK], t.base.v[K_SOCK] };
	if (!expect_ranges(&t, 3, t.parent, &exact, 1, UNCHARGE_TIMEOUT, &seen))
		t.failed = true;
	if (!check_uncharged(&t, keys, ARRAY_SIZE(keys), 0))
		t.failed = true;
	info_released_after_free(&t);

cleanup:
	socket_cleanup(&t);
	return rt_cleanup(&t, ret);
}

/*
 * An inotify and a fanotify group made in C that outlive it, as a
 * long-lived watcher handed to another cgroup does: they must not keep C
 * dying, and the events queued after the rmdir must be charged to P, not
 * lost to the dead C or to nobody. The holder makes both groups in C,
 * watching a directory of its own, and moves to K. C must be released
 * (check 1). Then FSNOTIFY_EVENTS inotify events are queued unread (an
 * open and a close of one file, alternating so that none merges with the
 * last), and P's slab must grow by at least half their size (check 2);
 * reading them and closing the groups must bring P's slab back to within
 * the tolerance of its baseline (check 3).
 */
#define FSNOTIFY_EVENTS		32768
#define FSNOTIFY_EVENT_SIZE	32	/* sizeof(struct inotify_event_info), at least */

static const char fsnotify_queue_knob[] = "/proc/sys/fs/inotify/max_queued_events";

struct fsnotify_state {
	struct holder h;
	char dir[PATH_MAX];
	char file[PATH_MAX];
	int inotify;
	int fanotify;
	int nr_queries;
};

static int fsnotify_charge(void *arg)
{
	struct fsnotify_state *s = arg;

	s->inotify = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (s->inotify < 0 ||
	    inotify_add_watch(s->inotify, s->dir, IN_OPEN | IN_CLOSE) < 0)
		return EXIT_FAILURE;
	s->fanotify = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC |
				    FAN_NONBLOCK, O_RDONLY);
	if (s->fanotify < 0 ||
	    fanotify_mark(s->fanotify, FAN_MARK_ADD,
			  FAN_OPEN | FAN_CLOSE | FAN_EVENT_ON_CHILD,
			  AT_FDCWD, s->dir))
		return EXIT_FAILURE;

	return EXIT_SUCCESS;
}

/*
 * In K. First query: queue the events, return how many inotify queued.
 * Second: read them all, and every fanotify event; return how many
 * inotify events were read.
 */
static long fsnotify_query(void *arg)
{
	struct fsnotify_state *s = arg;
	/* long: struct inotify_event is read in place */
	long words[IO_CHUNK / sizeof(long)];
	char *buf = (char *)words;
	long nr = 0, i;
	ssize_t n;
	int fd, bytes;

	if (s->nr_queries++ == 0) {
		for (i = 0; i < FSNOTIFY_EVENTS / 2; i++) {
			fd = open(s->file, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				return -1;
			close(fd);
		}
		if (ioctl(s->inotify, FIONREAD, &bytes))
			return -1;
		return bytes;
	}

	while ((n = read(s->inotify, buf, sizeof(words))) > 0) {
		for (i = 0; i < n; ) {
			struct inotify_event *ev = (void *)(buf + i);

			i += sizeof(*ev) + ev->len;
			nr++;
		}
	}
	if (n < 0 && errno != EAGAIN)
		return -1;
	while ((n = read(s->fanotify, buf, sizeof(words))) > 0) {
		struct fanotify_event_metadata *m = (void *)buf;
		long len = n;

		for (; FAN_EVENT_OK(m, len); m = FAN_EVENT_NEXT(m, len))
			if (m->fd >= 0)
				close(m->fd);
	}
	if (n < 0 && errno != EAGAIN)
		return -1;
	close_fd(&s->inotify);
	close_fd(&s->fanotify);

	return nr;
}

static int test_reparent_fsnotify(const char *root)
{
	static const int keys[] = { K_SLAB };
	struct fsnotify_state s = { .inotify = -1, .fanotify = -1 };
	char saved[32] = "", raised[32];
	struct memcg_snap before, seen;
	struct key_range grown;
	struct reparent_test t;
	long queued, nr;
	int fd, ret;

	ret = rt_setup(&t, root, __func__);
	t.priv = &s;
	if (ret != KSFT_PASS)
		goto cleanup;
	fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC, O_RDONLY);
	if (fd < 0 && errno == ENOSYS) {
		ksft_print_msg("%s: no fanotify (CONFIG_FANOTIFY)\n", t.name);
		ret = KSFT_SKIP;
		goto cleanup;
	}
	if (fd < 0) {
		report(&t, 0, "fanotify_init: %s\n", strerror(errno));
		goto cleanup;
	}
	close(fd);
	if (!getcwd(s.dir, sizeof(s.dir) - 32) ||
	    strlen(s.dir) > sizeof(s.dir) - 64) {
		report(&t, 0, "getcwd: %s\n", strerror(errno));
		goto cleanup;
	}
	strcat(s.dir, "/memcg_reparent_fsnotify");
	snprintf(s.file, sizeof(s.file), "%s/watched", s.dir);
	unlink(s.file);
	rmdir(s.dir);
	/* made here, not in C: C's only memory is the groups */
	if (mkdir(s.dir, 0700)) {
		report(&t, 0, "mkdir %s: %s\n", s.dir, strerror(errno));
		goto cleanup;
	}
	fd = open(s.file, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		report(&t, 0, "cannot create %s: %s\n", s.file, strerror(errno));
		goto cleanup;
	}
	close(fd);
	/* every event must stay queued: none may be dropped as overflow */
	if (read_text(fsnotify_queue_knob, saved, sizeof(saved)) <= 0) {
		report(&t, 0, "cannot read %s\n", fsnotify_queue_knob);
		goto cleanup;
	}
	snprintf(raised, sizeof(raised), "%d", 2 * FSNOTIFY_EVENTS);
	if (write_text(fsnotify_queue_knob, raised, strlen(raised)) < 0) {
		report(&t, 0, "cannot write %s\n", fsnotify_queue_knob);
		saved[0] = '\0';
		goto cleanup;
	}

	if (holder_start(&s.h, &t, fsnotify_charge, fsnotify_query, &s) ||
	    rt_remove_child(&t, -1))
		goto cleanup;

	if (!check_released(&t, t.dying_base))
		t.failed = true;
	else
		ksft_print_msg("%s: released %.2f s after rmdir, its groups open\n",
			       t.name, t.released_at - t.removed_at);

	if (snap_memcg(t.parent, &before)) {
		report(&t, 2, "cannot read %s\n", t.parent);
		goto cleanup;
	}
	queued = holder_query(&s.h);
	if (queued < (long)FSNOTIFY_EVENTS * (long)sizeof(struct inotify_event)) {
		report(&t, 2, "inotify queued %ld bytes of events, expected %ld\n",
		       queued,
		       (long)FSNOTIFY_EVENTS * (long)sizeof(struct inotify_event));
		goto cleanup;
	}
	grown = (struct key_range){
		K_SLAB,
		before.v[K_SLAB] + FSNOTIFY_EVENTS * FSNOTIFY_EVENT_SIZE / 2,
		LONG_MAX,
	};
	if (!expect_ranges(&t, 2, t.parent, &grown, 1, SETTLE_TIMEOUT, &seen))
		t.failed = true;
	ksft_print_msg("%s: P's slab grew by %ld KiB with %d events queued\n",
		       t.name, kib(seen.v[K_SLAB] - before.v[K_SLAB]),
		       FSNOTIFY_EVENTS);

	nr = holder_query(&s.h);
	if (nr != FSNOTIFY_EVENTS) {
		report(&t, 3, "read %ld inotify events, expected %d\n", nr,
		       FSNOTIFY_EVENTS);
		goto cleanup;
	}
	holder_stop(&s.h);
	if (!check_uncharged(&t, keys, ARRAY_SIZE(keys), 0))
		t.failed = true;
	info_released_after_free(&t);

cleanup:
	if (s.h.pid > 0) {
		kill(s.h.pid, SIGKILL);
		holder_stop(&s.h);
	}
	if (saved[0])
		write_text(fsnotify_queue_knob, saved, strlen(saved));
	if (s.file[0])
		unlink(s.file);
	if (s.dir[0])
		rmdir(s.dir);
	return rt_cleanup(&t, ret);
}

/*
 * Anon memory of C that went to swap, kept by a task that moved to K: the
 * swap records name C's id, and must not keep C dying. The holder faults
 * SWAP_SIZE of anon memory in C (small pages, a pattern per page) and
 * moves to K; memory.reclaim of C pushes it to swap (zswap, in the guest
 * of the harness). C must be released (check 1) with P's
 * memory.swap.current still holding what C had in swap (check 2). Then
 * the holder reads every page back, which must hold its pattern, and
 * exits: P's memory.swap.current must be back to its baseline, but for
 * the freed slots that a CPU's swap slot cache has not given back yet
 * (up to SWAP_SLOTS_CACHE pages per CPU: their uncharge waits for the
 * cache), and memory.current within the stock tolerance (check 3).
 */
#define SWAP_SIZE		MB(32)
#define SWAP_SLOTS_CACHE	64	/* SWAP_SLOTS_CACHE_SIZE */

static int fault_anon_pattern(void *arg)
{
	struct file_state *s = arg;
	size_t off;

	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0))
		return EXIT_FAILURE;
	s->map = mmap(NULL, s->size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->map == MAP_FAILED)
		return EXIT_FAILURE;
	for (off = 0; off < s->size; off += page_size)
		memset((char *)s->map + off, 'a' + off / page_size % 26, page_size);

	return EXIT_SUCCESS;
}

/* In K: read every page back (a swapin each); the pages that differ. */
static long query_pattern(void *arg)
{
	struct file_state *s = arg;
	long bad = 0;
	size_t off, i;

	for (off = 0; off < s->size; off += page_size) {
		const char *p = (const char *)s->map + off;
		char want = 'a' + off / page_size % 26;

		for (i = 0; i < (size_t)page_size && p[i] == want; i++)
			;
		bad += i < (size_t)page_size;
	}

	return bad;
}

static int test_reparent_swap(const char *root)
{
	struct file_state s = FILE_STATE(SWAP_SIZE);
	long base_swap, child_swap, parent_swap, swap, bad, slots;
	struct reparent_test t;
	char amount[32];
	double start;
	int ret;

	ret = rt_setup(&t, root, __func__);
	t.priv = &s;
	if (ret != KSFT_PASS)
		goto cleanup;
	base_swap = cg_read_long(t.parent, "memory.swap.current");
	if (base_swap < 0) {
		ksft_print_msg("%s: no memory.swap.current (CONFIG_SWAP, swapaccount)\n",
			       t.name);
		ret = KSFT_SKIP;
		goto cleanup;
	}
	if (holder_start(&s.h, &t, fault_anon_pattern, query_pattern, &s))
		goto cleanup;

	/* memory.reclaim may reclaim less than asked, and say EAGAIN */
	snprintf(amount, sizeof(amount), "%ld", (long)SWAP_SIZE);
	cg_write(t.child, "memory.reclaim", amount);
	child_swap = cg_read_long(t.child, "memory.swap.current");
	if (child_swap < SWAP_SIZE / 2) {
		report(&t, 0,
		       "memory.swap.current of the child: expected >= %d KiB after memory.reclaim, saw %ld KiB (is swap on?)\n",
		       SWAP_SIZE / 2 / 1024, kib(child_swap));
		goto cleanup;
	}
	ksft_print_msg("%s: the child had %ld KiB in swap at rmdir\n", t.name,
		       kib(child_swap));
	if (rt_remove_child(&t, -1))
		goto cleanup;

	if (!check_released(&t, t.dying_base))
		t.failed = true;
	else
		ksft_print_msg("%s: released %.2f s after rmdir, its swap still in use\n",
			       t.name, t.released_at - t.removed_at);
	parent_swap = cg_read_long(t.parent, "memory.swap.current");
	if (parent_swap < base_swap + child_swap - stat_tol()) {
		report(&t, 2,
		       "memory.swap.current of the parent: expected >= %ld KiB, saw %ld KiB\n",
		       kib(base_swap + child_swap - stat_tol()), kib(parent_swap));
		t.failed = true;
	}

	bad = holder_query(&s.h);
	if (bad) {
		report(&t, 3, "%ld of %ld pages read back wrong from swap (-1: the holder died)\n",
		       bad, SWAP_SIZE / page_size);
		goto cleanup;
	}
	holder_stop(&s.h);
	slots = SWAP_SLOTS_CACHE * page_size * nr_cpus;
	start = now();
	do {
		swap = cg_read_long(t.parent, "memory.swap.current");
		if (swap >= base_swap && swap <= base_swap + slots)
			break;
		sleep_ms(STAT_POLL_MS);
	} while (now() - start < UNCHARGE_TIMEOUT);
	if (swap < base_swap || swap > base_swap + slots) {
		report(&t, 3,
		       "memory.swap.current of the parent: expected %ld..%ld KiB, saw %ld KiB %.1f s after the swap was freed\n",
		       kib(base_swap), kib(base_swap + slots), kib(swap),
		       now() - start);
		t.failed = true;
	} else {
		ksft_print_msg("%s: %ld KiB of the parent's swap still in the swap slot caches\n",
			       t.name, kib(swap - base_swap));
	}
	if (!check_uncharged(&t, NULL, 0, 0))
		t.failed = true;
	info_released_after_free(&t);

cleanup:
	file_free(&t);
	return rt_cleanup(&t, ret);
}

#define RECLAIM_HOT		(32 << 20)
#define RECLAIM_COLD		(64 << 20)
#define RECLAIM_COLD_MAX	(16 << 20)
#define LRU_GEN_ENABLED		"/sys/kernel/mm/lru_gen/enabled"

/* A file of the test's own, named after it and @what, not in the page cache. */
static int reclaim_file(struct reparent_test *t, struct file_state *s,
			const char *what)
{
	char made[PATH_MAX - 16];

	s->fd = make_uncached_file(t, made, sizeof(made), s->size);
	if (s->fd < 0)
		return -1;
	snprintf(s->path, sizeof(s->path), "%s.%s", made, what);
	if (rename(made, s->path)) {
		report(t, 0, "rename %s: %s\n", made, strerror(errno));
		unlink(made);
		s->path[0] = '\0';
		return -1;
	}
	return 0;
}

/* Is cgroup2 mounted with memory_recursiveprot? */
static bool recursiveprot(void)
{
	char line[PATH_MAX];
	bool on = false;
	FILE *f;

	f = fopen("/proc/self/mounts", "re");
	if (!f)
		return false;
	while (!on && fgets(line, sizeof(line), f))
		on = strstr(line, " cgroup2 ") &&
		     strstr(line, "memory_recursiveprot");
	fclose(f);
	return on;
}

/*
 * Reclaim after the rmdir takes what the removed child left, not a live
 * sibling's working set. On 6.12 the dying C keeps its own LRU, and
 * reclaim scrapes a deleted memcg out before it takes shares by size
 * (get_nr_to_scan() under MGLRU); once C's lists are spliced into P's,
 * P's own lruvec must be treated the same, or reclaim takes K's pages in
 * proportion to their number.
 *
 * K (t.keep) reads its file three times: a working set. C reads another,
 * larger file twice under memory.max, so that it reclaims and ages its own
 * LRU, and is removed. K reads its file once more, then memory.reclaim
 * asks @target for what C had.
 *   check 5: K keeps at least 7/8 of its file in memory;
 *   check 6: at most a quarter of C's pages are left.
 * Under the classic LRU a deleted memcg only gets a rounding in its favour,
 * and 6.12 takes a fifth of K too: the tests want MGLRU on.
 */
static int reclaim_after_rmdir(struct reparent_test *t, const char *target)
{
	struct file_state hot = FILE_STATE(RECLAIM_HOT);
	struct file_state cold = FILE_STATE(RECLAIM_COLD);
	long charged, hot_pages, hot_in, cold_in, cold_left;
	char buf[32];
	int i;

	if (read_text(LRU_GEN_ENABLED, buf, sizeof(buf)) <= 0 ||
	    !strtol(buf, NULL, 16)) {
		ksft_print_msg("%s: MGLRU is off or absent (%s)\n", t->name,
			       LRU_GEN_ENABLED);
		return KSFT_SKIP;
	}
	if (reclaim_file(t, &hot, "hot") || reclaim_file(t, &cold, "cold"))
		goto cleanup;
	for (i = 0; i < 3; i++)
		if (run_in_cgroup(t->keep, read_file, &hot, false)) {
			report(t, 0, "cannot read %s in the sibling\n", hot.path);
			goto cleanup;
		}
	snprintf(buf, sizeof(buf), "%d", RECLAIM_COLD_MAX);
	if (cg_write(t->child, "memory.max", buf)) {
		report(t, 0, "cannot set memory.max of the child\n");
		goto cleanup;
	}
	for (i = 0; i < 2; i++)
		if (run_in_cgroup(t->child, read_file, &cold, false)) {
			report(t, 0, "cannot read %s in the child\n", cold.path);
			goto cleanup;
		}
	charged = cg_read_key_long(t->child, "memory.stat", "file ");
	if (charged < RECLAIM_COLD_MAX / 2) {
		report(t, 0, "file of the child: expected >= %d KiB, saw %ld KiB\n",
		       RECLAIM_COLD_MAX / 2048, kib(charged));
		goto cleanup;
	}
	if (rt_remove_child(t, -1))
		goto cleanup;
	t->checked = true;

	/* K's working set is hot when reclaim comes. */
	if (run_in_cgroup(t->keep, read_file, &hot, false)) {
		report(t, 0, "cannot read %s in the sibling\n", hot.path);
		goto cleanup;
	}
	cold_in = file_resident_pages(cold.fd, cold.size);
	snprintf(buf, sizeof(buf), "%ld", charged);
	/* EAGAIN: less than asked; what was taken from whom is the test */
	if (cg_write(target, "memory.reclaim", buf) && errno != EAGAIN) {
		report(t, 0, "memory.reclaim of %s: %s\n", target, strerror(errno));
		goto cleanup;
	}
	hot_pages = hot.size / page_size;
	hot_in = file_resident_pages(hot.fd, hot.size);
	cold_left = file_resident_pages(cold.fd, cold.size);
	if (cold_in <= 0 || hot_in < 0 || cold_left < 0) {
		report(t, 0, "mincore of the files failed\n");
		goto cleanup;
	}
	ksft_print_msg("%s: reclaimed %ld KiB: sibling kept %ld of %ld, child %ld -> %ld pages\n",
		       t->name, kib(charged), hot_in, hot_pages, cold_in, cold_left);
	if (hot_in < hot_pages - hot_pages / 8)
		report(t, 5,
		       "the sibling's file: expected >= %ld of its %ld pages in memory, saw %ld: reclaim took them in place of the removed child's\n",
		       hot_pages - hot_pages / 8, hot_pages, hot_in);
	if (cold_left > cold_in / 4)
		report(t, 6,
		       "the removed child's file: expected <= %ld of its %ld resident pages left, saw %ld\n",
		       cold_in / 4, cold_in, cold_left);

cleanup:
	for (i = 0; i < 2; i++) {
		struct file_state *f = i ? &cold : &hot;

		if (f->fd >= 0)
			close(f->fd);
		if (f->path[0])
			unlink(f->path);
	}
	return KSFT_PASS;
}

/* memory.reclaim of P itself: P's own protection does not apply. */
static int test_reparent_reclaim(const char *root)
{
	struct reparent_test t;
	int ret;

	ret = rt_setup(&t, root, __func__);
	if (ret == KSFT_PASS)
		ret = reclaim_after_rmdir(&t, t.parent);
	return rt_cleanup(&t, ret);
}

/*
 * The same, with P under memory.low=max, then under memory.min=max, and
 * the reclaim asked of P's parent G. On 6.12 the dying C's protection is
 * reset at offline, so its pages have none of their own; once they are on
 * P's lists, P's protection must not cover them, or reclaim of G skips P
 * and takes K's working set (K has no protection) in their place.
 * Without memory_recursiveprot K's effective protection is 0; with it K
 * shares P's, and the test tells less.
 */
static int protected_reclaim(const char *root, const char *knob)
{
	char *g = cg_name(root, "memcg_reparent_protection_g");
	struct reparent_test t;
	int ret = KSFT_FAIL;

	if (!g)
		return KSFT_FAIL;
	if ((cg_create(g) && errno != EEXIST) ||
	    cg_write(g, "cgroup.subtree_control", "+memory")) {
		ksft_print_msg("%s: cannot create %s\n", __func__, g);
		goto out;
	}
	ret = rt_setup(&t, g, "test_reparent_protection");
	if (ret == KSFT_PASS && cg_write(t.parent, knob, "max")) {
		report(&t, 0, "cannot set %s of the parent\n", knob);
		ret = KSFT_FAIL;
	}
	if (ret == KSFT_PASS) {
		ksft_print_msg("%s: %s=max on the parent, memory_recursiveprot %s\n",
			       t.name, knob, recursiveprot() ? "on" : "off");
		ret = reclaim_after_rmdir(&t, g);
	}
	ret = rt_cleanup(&t, ret);
out:
	cg_destroy(g);
	free(g);
	return ret;
}

static int test_reparent_protection(const char *root)
{
	int low = protected_reclaim(root, "memory.low");
	int min = protected_reclaim(root, "memory.min");

	if (low == KSFT_FAIL || min == KSFT_FAIL)
		return KSFT_FAIL;
	return low == KSFT_PASS ? min : low;
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
	T(test_reparent_thp),
	T(test_reparent_cgwb),
	T(test_reparent_churn),
	T(test_reparent_socket_limit),
	T(test_reparent_socket_release),
	T(test_reparent_dirty_cgwb),
	T(test_reparent_socket_open),
	T(test_reparent_fsnotify),
	T(test_reparent_swap),
	T(test_reparent_reclaim),
	T(test_reparent_protection),
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
