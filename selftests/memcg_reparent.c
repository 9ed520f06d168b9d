// SPDX-License-Identifier: GPL-2.0
/*
 * The machinery that the test_memcg_reparent_* kselftests share: the run
 * of a struct reparent_kind through its checks, the tolerances, the nudge
 * of what is legitimately asynchronous, the holders, and a main() that
 * reports each check of each subtest as a TAP line of its own. See
 * memcg_reparent.h.
 */
#define _GNU_SOURCE

#include <linux/bpf.h>
#include <linux/kernel-page-flags.h>
#include <linux/limits.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
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
#include "cgroup_util.h"
#include "memcg_reparent.h"

const char * const key_names[NR_KEYS] = {
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

long page_size;
long nr_cpus;
long nr_cpus_conf;
double dying_timeout = 20.0;
int churn_generations = 200;
static char *nudge_cg;
static char *nudge_scratch_cg;
/* test_reparent_cgwb turns the scratch offline off: see there */
bool nudge_offline = true;

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
long stat_tol(void)
{
	return MEMCG_CHARGE_BATCH * page_size * nr_cpus;
}

long key_tol(int key)
{
	return key == K_CURRENT ? 2 * stat_tol() : stat_tol();
}

double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void sleep_ms(long ms)
{
	usleep(ms * 1000);
}

long kib(long bytes)
{
	return bytes / 1024;
}

int snap_memcg(const char *cgroup, struct memcg_snap *s)
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
			s->v[i] = cg_parse_key_long(buf, key_names[i]);
		if (s->v[i] < 0) {
			ksft_print_msg("%s: no %s\n", cgroup, key_names[i]);
			return -1;
		}
	}

	return 0;
}

/* The TAP names of the checks of the subtest that runs, if it has its own */
static const char * const *cur_checks;

static const char * const check_names[NR_CHECKS] = {
	[CHECK_SETUP]		= "setup",
	[CHECK_RELEASED]	= "css released",
	[CHECK_ACCOUNTED]	= "still accounted",
	[CHECK_UNCHARGED]	= "uncharged on free",
	[CHECK_RESIDENT]	= "not reclaimed",
	[CHECK_SIBLING_KEPT]	= "sibling kept",
	[CHECK_CHILD_RECLAIMED]	= "dead reclaimed first",
	[CHECK_NO_OOM]		= "no memcg OOM",
	[CHECK_NO_SLOWDOWN]	= "no slowdown",
	[CHECK_MIGRATED]	= "migrated",
	[CHECK_SWAPIN_CHARGED]	= "swapin charged to the faulting task",
};

/*
 * What became of each check of the running subtest, over all its rounds:
 * one TAP line each (memcg_reparent_main()).
 */
enum check_state {
	CHECK_NOT_RUN,
	CHECK_RAN,
	CHECK_SKIPPED,
	CHECK_FAILED,
};

static enum check_state check_state[NR_CHECKS];
static char check_why[NR_CHECKS][128];

/* A check starts: it passes unless report() fails it. */
void check_run(int check)
{
	if (check_state[check] == CHECK_NOT_RUN)
		check_state[check] = CHECK_RAN;
}

/* A check that cannot give an answer, and why. */
__printf(2, 3)
void check_skip(int check, const char *fmt, ...)
{
	va_list args;

	if (check_state[check] != CHECK_NOT_RUN)
		return;
	check_state[check] = CHECK_SKIPPED;
	va_start(args, fmt);
	vsnprintf(check_why[check], sizeof(check_why[check]), fmt, args);
	va_end(args);
}

/*
 * The whole subtest skips: say why, and keep the reason for its TAP
 * lines. The caller returns KSFT_SKIP.
 */
__printf(2, 3)
void rt_skip(struct reparent_test *t, const char *fmt, ...)
{
	va_list args;

	printf("# %s: ", t->name);
	va_start(args, fmt);
	vprintf(fmt, args);
	va_end(args);
	fflush(stdout);

	va_start(args, fmt);
	vsnprintf(check_why[CHECK_SETUP], sizeof(check_why[CHECK_SETUP]), fmt,
		  args);
	va_end(args);
	check_why[CHECK_SETUP][strcspn(check_why[CHECK_SETUP], "\n")] = '\0';
}

/* Print one failed expectation; the test fails at the end. */
__printf(3, 4)
void report(struct reparent_test *t, int check, const char *fmt, ...)
{
	va_list args;

	t->failed = true;
	check_state[check] = CHECK_FAILED;
	printf("# %s: check %d (%s): ", t->name, check,
	       cur_checks && cur_checks[check] ? cur_checks[check] :
	       check_names[check]);
	va_start(args, fmt);
	vprintf(fmt, args);
	va_end(args);
	fflush(stdout);
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
 * deadline passes, nudging meanwhile. Returns the last value seen, -1 on
 * read error.
 */
long wait_dying(const char *cgroup, long bound, double timeout,
		double *elapsed)
{
	long dying, ms;

	dying = cg_wait_dying(cgroup, "memory", bound, timeout * 1000, nudge,
			      &ms);
	*elapsed = ms / 1000.0;
	return dying;
}

/*
 * Poll @cgroup's counters until all @r hold or @timeout passes, then
 * report the ones that do not hold. Returns true if all hold.
 */
bool expect_ranges(struct reparent_test *t, int check,
		   const char *cgroup, const struct key_range *r,
		   int nr, double timeout, struct memcg_snap *seen)
{
	double start = now();
	bool ok;
	int i;

	check_run(check);
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

int rt_setup(struct reparent_test *t, const char *root,
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

	t->dying_base = cg_read_dying(t->parent, "memory");
	if (t->dying_base < 0) {
		rt_skip(t, "no nr_dying_subsys_memory in cgroup.stat\n");
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

#define KPAGE_CHUNK	8192	/* entries per read of /proc/kpage* */

/*
 * The page frames that /proc/kpagecgroup gives to @cgroup, in ascending
 * order, into t->pfns (t->nr_pfns of them): a scan of all of physical
 * memory, too slow to repeat while something changes fast. Needs
 * CONFIG_PROC_PAGE_MONITOR and root (the file is 0400). Returns 0, or -1
 * on error.
 */
int kpage_collect(struct reparent_test *t, const char *cgroup)
{
	uint64_t *cg, *pfns = NULL, *p;
	long nr = 0, size = 0, i;
	struct stat st;
	off_t off = 0;
	ssize_t n;
	int fd;

	if (stat(cgroup, &st))
		return -1;
	cg = malloc(KPAGE_CHUNK * sizeof(*cg));
	fd = open("/proc/kpagecgroup", O_RDONLY | O_CLOEXEC);
	if (!cg || fd < 0)
		goto fail;
	while ((n = pread(fd, cg, KPAGE_CHUNK * sizeof(*cg), off)) > 0) {
		for (i = 0; i < n / (ssize_t)sizeof(*cg); i++) {
			if (cg[i] != st.st_ino)
				continue;
			if (nr == size) {
				size = size ? 2 * size : 1024;
				p = realloc(pfns, size * sizeof(*pfns));
				if (!p)
					goto fail;
				pfns = p;
			}
			pfns[nr++] = off / sizeof(*cg) + i;
		}
		off += n;
	}
	if (n < 0)
		goto fail;
	close(fd);
	free(cg);
	free(t->pfns);
	t->pfns = pfns;
	t->nr_pfns = nr;
	return 0;

fail:
	if (fd >= 0)
		close(fd);
	free(cg);
	free(pfns);
	return -1;
}

/*
 * How many of t->pfns have flag @kpf (KPF_*) in /proc/kpageflags: exact
 * at the time of the read, unlike memory.stat, whose per-CPU counts may
 * lag (stat_tol()). Returns -1 on error.
 */
long kpage_count(struct reparent_test *t, int kpf)
{
	uint64_t *fl = malloc(KPAGE_CHUNK * sizeof(*fl));
	long count = 0, i = 0, got;
	int fd;

	fd = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	if (!fl || fd < 0) {
		count = -1;
		goto out;
	}
	while (i < t->nr_pfns) {
		uint64_t first = t->pfns[i];
		long last = i;
		ssize_t n;

		/* up to the last frame within a chunk: they may be far apart */
		while (last + 1 < t->nr_pfns &&
		       t->pfns[last + 1] < first + KPAGE_CHUNK)
			last++;
		n = pread(fd, fl, (t->pfns[last] - first + 1) * sizeof(*fl),
			  first * sizeof(*fl));
		if (n <= 0) {
			count = -1;
			break;
		}
		got = n / sizeof(*fl);
		for (; i < t->nr_pfns && t->pfns[i] < first + got; i++)
			if (fl[t->pfns[i] - first] >> kpf & 1)
				count++;
	}
out:
	if (fd >= 0)
		close(fd);
	free(fl);

	return count;
}

/*
 * Record P and then C right before removing C, then remove C. Every task
 * must have left C already. With @wait_key >= 0, C is removed at the first
 * read of C whose @wait_key exceeds what the stats may lag (stat_tol()), so
 * that the read right before the rmdir proves the memory was there. For
 * K_FILE_WRITEBACK the proof is exact instead: /proc/kpageflags, read
 * right before the rmdir, has pages of C under writeback (t->wb_pages),
 * among the page frames that kpage_collect() found C had (t->pfns). On a
 * slow kernel the writeback in flight at any moment may never exceed
 * stat_tol(), though it goes on for seconds.
 * Returns 0 once C is removed, -1 if it could not be, and 1 (C is still
 * there) when the writeback was over before a look saw any of it.
 */
int rt_remove_child(struct reparent_test *t, int wait_key)
{
	bool exact = wait_key == K_FILE_WRITEBACK;
	double start = now(), look, slowest = 0;
	long looks = 0;

	if (snap_memcg(t->parent, &t->parent_last)) {
		report(t, 0, "cannot read %s before rmdir\n", t->parent);
		return -1;
	}
	for (;;) {
		if (snap_memcg(t->child, &t->child_last)) {
			report(t, 0, "cannot read %s before rmdir\n", t->child);
			return -1;
		}
		if (exact) {
			look = now();
			t->wb_pages = kpage_count(t, KPF_WRITEBACK);
			looks++;
			if (now() - look > slowest)
				slowest = now() - look;
			if (t->wb_pages < 0) {
				report(t, 0, "cannot read /proc/kpageflags\n");
				return -1;
			}
			if (t->wb_pages > 0)
				break;
			/* none dirty either: the writeback is over, unseen */
			if (!kpage_count(t, KPF_DIRTY))
				return 1;
		} else if (wait_key < 0 ||
			   t->child_last.v[wait_key] > stat_tol()) {
			break;
		}
		if (now() - start >= SETTLE_TIMEOUT) {
			if (exact)
				report(t, 0,
				       "none of the child's %ld page frames (%ld dirty when the writeback began) under writeback in /proc/kpageflags for %.1f s, %ld looks, the longest %.3f s (memory.stat: file_writeback %ld KiB, file_dirty %ld KiB)\n",
				       t->nr_pfns, t->dirty_pages, now() - start,
				       looks, slowest,
				       kib(t->child_last.v[wait_key]),
				       kib(t->child_last.v[K_FILE_DIRTY]));
			else
				report(t, 0,
				       "%s of the child: expected > %ld KiB before rmdir, saw %ld KiB for %.1f s\n",
				       key_names[wait_key], kib(stat_tol()),
				       kib(t->child_last.v[wait_key]),
				       now() - start);
			return -1;
		}
		if (!exact)
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
bool wait_charged(struct reparent_test *t, int key, long min)
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
bool check_released(struct reparent_test *t, long bound)
{
	double elapsed;
	long dying;

	t->checked = true;
	check_run(CHECK_RELEASED);
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
bool check_accounted(struct reparent_test *t, const int *keys, int nr)
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
bool check_no_refaults(struct reparent_test *t,
		       const struct memcg_snap *since)
{
	static const int keys[] = { K_REFAULT_ANON, K_REFAULT_FILE };
	struct memcg_snap now_snap;
	bool ok = true;
	size_t i;

	check_run(CHECK_RESIDENT);
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
bool check_resident(struct reparent_test *t, long before, long after)
{
	check_run(CHECK_RESIDENT);
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
bool check_sane_sizes(struct reparent_test *t, int check)
{
	char buf[4 * PAGE_SIZE];
	struct sysinfo si;
	long limit, current;
	char *line, *save;
	bool ok = true;

	check_run(check);
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
bool check_uncharged(struct reparent_test *t, const int *keys, int nr,
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
bool check_clean(struct reparent_test *t)
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
void info_released_after_free(struct reparent_test *t)
{
	double elapsed;
	long dying;

	if (!t->failed)
		return;

	dying = wait_dying(t->parent, t->dying_base, INFO_TIMEOUT, &elapsed);
	ksft_print_msg("%s: after freeing the memory nr_dying_subsys_memory is %ld (%.1f s)\n",
		       t->name, dying, elapsed);
}

int rt_cleanup(struct reparent_test *t, int ret)
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
	free(t->pfns);

	if (ret != KSFT_PASS)
		return ret;
	if (!t->checked && !t->failed)
		ksft_print_msg("%s: setup failed\n", t->name);
	return t->failed || !t->checked ? KSFT_FAIL : KSFT_PASS;
}

/* Read exactly @len bytes from @fd, waiting at most @timeout_ms. */
int read_full(int fd, void *buf, size_t len, int timeout_ms)
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

int holder_start(struct holder *h, struct reparent_test *t,
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
			long v = c == 'a' ? (h->act ? h->act(arg) : -1) :
				 query ? query(arg) : 0;

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

static long holder_send(struct holder *h, char c)
{
	long v;

	if (write(h->cmd, &c, 1) != 1 ||
	    read_full(h->resp, &v, sizeof(v), HOLDER_TIMEOUT_MS))
		return -1;
	return v;
}

/* What the holder's query returns now (e.g. its resident pages). */
long holder_query(struct holder *h)
{
	return holder_send(h, 'q');
}

/* Run the holder's act on its memory; its result, or -1. */
long holder_act(struct holder *h)
{
	return holder_send(h, 'a');
}

void holder_stop(struct holder *h)
{
	if (h->pid < 0)
		return;
	close(h->cmd);
	close(h->resp);
	waitpid(h->pid, NULL, 0);
	h->pid = -1;
}

long resident_pages(void *addr, size_t size)
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
long file_resident_pages(int fd, size_t size)
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
int write_pattern(int fd, size_t size, char pattern)
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
bool cwd_on_block_device(void)
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
int drop_bdev_cache(void)
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
long drop_file_cache(const char *path, int fd, size_t size)
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
int make_uncached_file(struct reparent_test *t, char *path, size_t len,
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

char *tmpfs_mount(struct reparent_test *t)
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
		rt_skip(t, "cannot mount tmpfs: %s\n", strerror(errno));
		rmdir(dir);
		free(dir);
		return NULL;
	}

	return dir;
}

void tmpfs_umount(char *dir)
{
	if (!dir)
		return;
	if (umount2(dir, 0))
		umount2(dir, MNT_DETACH);
	rmdir(dir);
	free(dir);
}

int skip_unless_on_disk(struct reparent_test *t)
{
	if (cwd_on_block_device())
		return KSFT_PASS;
	rt_skip(t, "the working directory is not on a disk filesystem\n");
	return KSFT_SKIP;
}

int run_reparent_test(const char *root, const char *name,
		      const struct reparent_kind *kind, void *priv)
{
	int ret, attempt, removed;
	struct reparent_test t;
	long resident = -1;

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
	if (!wait_charged(&t, kind->charged_key, t.min_charge))
		goto cleanup;
	for (attempt = 1; ; attempt++) {
		if (kind->start_writeback && kind->start_writeback(&t) != KSFT_PASS)
			goto cleanup;
		removed = rt_remove_child(&t, kind->start_writeback ?
					  K_FILE_WRITEBACK : -1);
		if (removed <= 0)
			break;
		/*
		 * A look at thousands of page flags takes a while on a slow
		 * kernel, and an IO completes fast: dirty the pages again.
		 */
		if (attempt == WRITEBACK_ATTEMPTS) {
			report(&t, 0,
			       "the child's writeback was over before a look at /proc/kpageflags saw it, %d times\n",
			       attempt);
			goto cleanup;
		}
		ksft_print_msg("%s: the writeback was over before a look saw it, dirtying again\n",
			       t.name);
		if (kind->charge(&t) != KSFT_PASS)
			goto cleanup;
	}
	if (removed)
		goto cleanup;

	check_released(&t, t.dying_base);
	check_accounted(&t, kind->keys, kind->nr_keys);
	check_no_refaults(&t, &t.parent_last);
	if (kind->resident)
		check_resident(&t, resident, kind->resident(&t));
	if (!t.released_at && kind->pinned_info)
		kind->pinned_info(&t);

	/* check 3 starts with the free, which may check more */
	check_run(CHECK_UNCHARGED);
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

void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int file_setup(struct reparent_test *t)
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
void file_pinned_info(struct reparent_test *t)
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

long file_resident(struct reparent_test *t)
{
	struct file_state *s = t->priv;

	return file_resident_pages(s->fd, s->size);
}

/*
 * A holder's charge: s->size of anon memory, faulted in. Small pages
 * only: khugepaged must not recharge them to K. Not MADV_NOHUGEPAGE,
 * which needs CONFIG_ADVISE_SYSCALLS.
 */
int holder_fault_anon(void *arg)
{
	struct file_state *s = arg;

	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0))
		return EXIT_FAILURE;
	s->map = mmap(NULL, s->size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->map == MAP_FAILED)
		return EXIT_FAILURE;
	memset(s->map, 'a', s->size);

	return EXIT_SUCCESS;
}

/* A holder's query: the resident pages of its mapping, s->map. */
long holder_query_resident(void *arg)
{
	struct file_state *s = arg;

	return resident_pages(s->map, s->size);
}

long holder_resident(struct reparent_test *t)
{
	struct file_state *s = t->priv;

	return holder_query(&s->h);
}

/* Whatever the kind used: the holder, the file, the flusher. */
void file_free(struct reparent_test *t)
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

int read_file(void *arg)
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

int write_file(void *arg)
{
	struct file_state *s = arg;

	return write_pattern(s->fd, s->size, 'c') ? EXIT_FAILURE : EXIT_SUCCESS;
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

static int nr_checks(const struct memcg_reparent_subtest *test)
{
	int check, nr = 0;

	for (check = 0; check < NR_CHECKS; check++)
		nr += !!test->checks[check];

	return nr;
}

/*
 * One TAP line per check of @test, named "<subtest>.<check>", from what
 * became of it (@ret: the subtest's KSFT code). A check that ran and was
 * not reported passes; one that did not run is skipped when the subtest or
 * the check said why it could not run, and fails otherwise: a setup that
 * failed, in any round, fails every check that did not fail on its own.
 */
static void report_checks(const struct memcg_reparent_subtest *test, int ret)
{
	bool setup_failed = check_state[CHECK_SETUP] == CHECK_FAILED;
	bool any_failed = false;
	const char *name;
	int check;

	for (check = 1; check < NR_CHECKS; check++)
		any_failed |= check_state[check] == CHECK_FAILED;
	/* a failure that no check owns must not leave a pass behind */
	if (ret == KSFT_FAIL && !any_failed)
		setup_failed = true;

	for (check = 1; check < NR_CHECKS; check++) {
		name = test->checks[check];
		if (!name)
			continue;
		switch (check_state[check]) {
		case CHECK_FAILED:
			ksft_test_result_fail("%s.%s\n", test->name, name);
			break;
		case CHECK_RAN:
			if (setup_failed) {
				ksft_print_msg("%s.%s: a round did not get to it: setup failed\n",
					       test->name, name);
				ksft_test_result_fail("%s.%s\n", test->name, name);
			} else {
				ksft_test_result_pass("%s.%s\n", test->name,
						      name);
			}
			break;
		case CHECK_SKIPPED:
			ksft_test_result_skip("%s.%s (%s)\n", test->name, name,
					      check_why[check]);
			break;
		case CHECK_NOT_RUN:
			if (ret == KSFT_SKIP && !setup_failed) {
				ksft_test_result_skip("%s.%s (%s)\n", test->name,
						      name,
						      check_why[CHECK_SETUP][0] ?
						      check_why[CHECK_SETUP] :
						      "skipped, see above");
				break;
			}
			ksft_print_msg("%s.%s: not run: %s\n", test->name, name,
				       setup_failed ? "setup failed" :
				       "the subtest ended before it");
			ksft_test_result_fail("%s.%s\n", test->name, name);
			break;
		}
	}
}

/*
 * The main() of each test_memcg_reparent_* binary: run @tests, each
 * subtest's checks a TAP line each.
 */
int memcg_reparent_main(const struct memcg_reparent_subtest *tests, int nr)
{
	char root[PATH_MAX];
	const char *env, *only;
	int i, check, plan = 0;

	for (i = 0; i < nr; i++)
		plan += nr_checks(&tests[i]);

	ksft_print_header();
	ksft_set_plan(plan);

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

	for (i = 0; i < nr; i++) {
		if (!selected(only, tests[i].name)) {
			for (check = 1; check < NR_CHECKS; check++)
				if (tests[i].checks[check])
					ksft_test_result_skip("%s.%s (%s)\n",
							      tests[i].name,
							      tests[i].checks[check],
							      "not in MEMCG_REPARENT_ONLY");
			continue;
		}
		memset(check_state, 0, sizeof(check_state));
		memset(check_why, 0, sizeof(check_why));
		cur_checks = tests[i].checks;
		report_checks(&tests[i], tests[i].fn(root));
		cur_checks = NULL;
	}

	cleanup_nudge();
	ksft_finished();
}
