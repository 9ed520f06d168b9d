// SPDX-License-Identifier: GPL-2.0
/*
 * The reparenting of a removed memcg's memory, on a cgroup v1 hierarchy.
 *
 * cgroup v1 shows what cgroup2 does not: each memcg's own counts (the
 * memory.stat entries without "total_"), and the memory+swap counter
 * (memory.memsw.*). A memcg that is removed hands its memory to its
 * parent; its own counts must go with it, or the parent's fall below what
 * it holds once that memory is freed. Each check is its own TAP line, so
 * that the expectations say which one a kernel fails:
 *
 *  test_v1_shmem_released  the child's memory css is freed while its shmem
 *                          stays (the memory hierarchy's num_cgroups in
 *                          /proc/cgroups comes back)
 *  test_v1_shmem_moved     the parent's own cache and shmem now count it
 *  test_v1_shmem_exact     once the file is gone, the parent's own and
 *                          total counts and its usage are back to what
 *                          they were before the child
 *  test_v1_swap_*          the same for anon memory in swap, with the
 *                          parent's own swap count and memsw usage
 *  test_v1_root_counters   anon memory left to the root by a removed child
 *                          and swapped out afterwards: once it is freed,
 *                          the root's memory and memsw counters are back
 *                          to where they were (read through their
 *                          watermarks, which a write resets to the usage)
 *
 * The test needs the memory controller on a v1 hierarchy; it skips when
 * none is mounted (the harness runs it on a boot that mounts one).
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../kselftest.h"
#include "cgroup_util.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

#define OWN_SIZE	((long)MB(8))	/* the parent's own shmem */
#define CHILD_SIZE	((long)MB(32))	/* what the child leaves */
#define RELEASE_TIMEOUT	20.0	/* RCU, workqueues, the swap record mover */
#define SETTLE_TIMEOUT	10.0	/* stats catch up (2 s periodic flush) */
#define POLL_MS		50

static long page_size;
static long tol;		/* per-CPU stat and charge batches */
static char root[PATH_MAX];
static char tmpdir[64];	/* /tmp/memcg_v1_XXXXXX */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* The mount point of a cgroup v1 hierarchy with the memory controller. */
static int find_v1_memory(char *buf, size_t len)
{
	char dev[256], dir[PATH_MAX], type[64], opts[1024];
	int ret = -1;
	FILE *f;

	f = fopen("/proc/self/mounts", "r");
	if (!f)
		return -1;
	while (fscanf(f, "%255s %4095s %63s %1023s %*d %*d",
		      dev, dir, type, opts) == 4) {
		char *o, *save = NULL;

		if (strcmp(type, "cgroup"))
			continue;
		for (o = strtok_r(opts, ",", &save); o;
		     o = strtok_r(NULL, ",", &save)) {
			if (!strcmp(o, "memory")) {
				snprintf(buf, len, "%s", dir);
				ret = 0;
			}
		}
	}
	fclose(f);
	return ret;
}

/* num_cgroups of the memory hierarchy: it counts dying cgroups too. */
static long nr_memcgs(void)
{
	char name[64];
	long hier, num, enabled;
	long ret = -1;
	FILE *f;

	f = fopen("/proc/cgroups", "r");
	if (!f)
		return -1;
	fscanf(f, "%*[^\n]\n");
	while (fscanf(f, "%63s %ld %ld %ld", name, &hier, &num, &enabled) == 4)
		if (!strcmp(name, "memory"))
			ret = num;
	fclose(f);
	return ret;
}

static long nr_dirs;

static int count_dir(const char *path, const struct stat *sb, int type,
		     struct FTW *ftw)
{
	if (type == FTW_D)
		nr_dirs++;
	return 0;
}

/* The memcgs that are not removed: the hierarchy's directories. */
static long live_memcgs(void)
{
	nr_dirs = 0;
	if (nftw(root, count_dir, 16, FTW_PHYS | FTW_MOUNT))
		return -1;
	return nr_dirs;
}

/* memory.stat entry @key of @cg, exactly (not "total_" + @key), or -1. */
static long stat_of(const char *cg, const char *key)
{
	return cg_read_key_long_exact(cg, "memory.stat", key);
}

static long counter_of(const char *cg, const char *file)
{
	return cg_read_long(cg, file);
}

/*
 * Wait until read(@cg, @name) is within [@lo, @hi], and say what it was
 * when it was not.
 */
static bool wait_value(long (*read)(const char *, const char *),
		       const char *cg, const char *name, long lo, long hi)
{
	double end = now() + SETTLE_TIMEOUT;
	long v;

	do {
		v = read(cg, name);
		if (v >= lo && v <= hi)
			return true;
		sleep_ms(POLL_MS);
	} while (now() < end);
	ksft_print_msg("%s %s: %ld KiB, wanted %ld to %ld KiB\n",
		       cg, name, v >> 10, lo >> 10, hi >> 10);
	return false;
}

static bool wait_stat(const char *cg, const char *key, long lo, long hi)
{
	return wait_value(stat_of, cg, key, lo, hi);
}

static bool wait_counter(const char *cg, const char *file, long lo, long hi)
{
	return wait_value(counter_of, cg, file, lo, hi);
}

/* Wait until no memcg of the hierarchy is dying. */
static bool wait_released(void)
{
	double end = now() + RELEASE_TIMEOUT;
	long n, live;

	do {
		n = nr_memcgs();
		live = live_memcgs();
		if (n >= 0 && n == live)
			return true;
		sleep_ms(POLL_MS);
	} while (now() < end);
	ksft_print_msg("memory num_cgroups %ld after %.0f s, %ld live: dying\n",
		       n, RELEASE_TIMEOUT, live);
	return false;
}

/* Write @size bytes to the tmpfs file @path from a task in @cg. */
static int write_in(const char *cg, const char *path, long size)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char *buf = malloc(1 << 20);
		long done;
		int fd;

		if (!buf || cg_enter_current(cg))
			_exit(1);
		memset(buf, 'v', 1 << 20);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0)
			_exit(1);
		for (done = 0; done < size; done += 1 << 20)
			if (write(fd, buf, 1 << 20) != 1 << 20)
				_exit(1);
		_exit(close(fd) ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status) ? -1 : 0;
}

/*
 * A task that maps @size of anon memory in @cg and then does what it is
 * told through its pipe: 'p' pages the mapping out, 'f' unmaps it. It
 * answers each command (and its start) with the number of the mapping's
 * pages still resident.
 */
struct holder {
	pid_t pid;
	int cmd, ans;
	long size;
};

static long resident(char *p, long size)
{
	long i, n = 0, pages = size / page_size;
	unsigned char *vec = malloc(pages);

	if (!vec || mincore(p, size, vec)) {
		free(vec);
		return -1;
	}
	for (i = 0; i < pages; i++)
		n += vec[i] & 1;
	free(vec);
	return n;
}

/*
 * Page @p out: a folio whose write was not done when reclaim looked stays
 * in the swap cache (resident) until the next pass.
 */
static long pageout(char *p, long size)
{
	long n = resident(p, size);
	int i;

	for (i = 0; i < 10 && n > size / page_size / 10; i++) {
		madvise(p, size, MADV_PAGEOUT);
		n = resident(p, size);
		if (n > size / page_size / 10)
			sleep_ms(100);
	}
	return n;
}

static void holder_main(const char *cg, long size, int cmd, int ans,
			bool out)
{
	char *p;
	long n;
	char c;

	if (cg_enter_current(cg))
		_exit(1);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		_exit(1);
	memset(p, 'a', size);
	n = out ? pageout(p, size) : resident(p, size);
	if (write(ans, &n, sizeof(n)) != sizeof(n))
		_exit(1);
	while (read(cmd, &c, 1) == 1) {
		if (c == 'p') {
			n = pageout(p, size);
		} else if (c == 'f') {
			munmap(p, size);
			n = 0;
		}
		if (write(ans, &n, sizeof(n)) != sizeof(n))
			_exit(1);
	}
	_exit(0);
}

static long holder_start(struct holder *h, const char *cg, long size,
			 bool out)
{
	int cmd[2], ans[2];
	long n;

	if (pipe(cmd) || pipe(ans))
		return -1;
	fflush(stdout);
	h->pid = fork();
	if (h->pid < 0)
		return -1;
	if (h->pid == 0) {
		close(cmd[1]);
		close(ans[0]);
		holder_main(cg, size, cmd[0], ans[1], out);
	}
	close(cmd[0]);
	close(ans[1]);
	h->cmd = cmd[1];
	h->ans = ans[0];
	if (read(h->ans, &n, sizeof(n)) != sizeof(n))
		return -1;
	return n;
}

/* Send @c, return the holder's answer (resident pages), -1 on error. */
static long holder_do(struct holder *h, char c)
{
	long n;

	if (write(h->cmd, &c, 1) != 1 || read(h->ans, &n, sizeof(n)) != sizeof(n))
		return -1;
	return n;
}

static void holder_stop(struct holder *h)
{
	if (h->pid <= 0)
		return;
	close(h->cmd);
	close(h->ans);
	waitpid(h->pid, NULL, 0);
	h->pid = 0;
}

static void report(const char *name, bool ok)
{
	if (ok)
		ksft_test_result_pass("%s\n", name);
	else
		ksft_test_result_fail("%s\n", name);
}

/*
 * P writes OWN_SIZE of shmem, its child C writes CHILD_SIZE and is removed
 * while the file stays, then the file goes.
 */
static void test_v1_shmem(void)
{
	bool released = false, moved = false, exact = false;
	char own[PATH_MAX], left[PATH_MAX];
	long cache0, shmem0, total0, usage0;
	char *p = NULL, *c = NULL;

	snprintf(own, sizeof(own), "%s/own", tmpdir);
	snprintf(left, sizeof(left), "%s/left", tmpdir);
	p = cg_name(root, "memcg_v1_shmem");
	c = p ? cg_name(p, "child") : NULL;
	if (!c || cg_create(p) || write_in(p, own, OWN_SIZE)) {
		ksft_print_msg("cannot set up %s\n", p ? p : "the parent");
		goto out;
	}
	sleep_ms(2500);		/* one periodic stat flush */
	cache0 = stat_of(p, "cache");
	shmem0 = stat_of(p, "shmem");
	total0 = stat_of(p, "total_cache");
	usage0 = counter_of(p, "memory.usage_in_bytes");
	if (cache0 < OWN_SIZE - tol || shmem0 < OWN_SIZE - tol) {
		ksft_print_msg("%s holds %ld KiB of cache, %ld of shmem, wanted %ld\n",
			       p, cache0 >> 10, shmem0 >> 10, OWN_SIZE >> 10);
		goto out;
	}
	if (cg_create(c) || write_in(c, left, CHILD_SIZE) ||
	    !wait_stat(c, "shmem", CHILD_SIZE - tol, CHILD_SIZE + tol)) {
		ksft_print_msg("cannot charge %s\n", c);
		goto out;
	}
	if (cg_destroy(c)) {
		ksft_print_msg("cannot remove %s: %s\n", c, strerror(errno));
		goto out;
	}

	released = wait_released();
	moved = wait_stat(p, "shmem", shmem0 + CHILD_SIZE - tol,
			  shmem0 + CHILD_SIZE + tol) &&
		wait_stat(p, "cache", cache0 + CHILD_SIZE - tol,
			  cache0 + CHILD_SIZE + tol);

	unlink(left);
	exact = wait_stat(p, "cache", cache0 - tol, cache0 + tol) &&
		wait_stat(p, "shmem", shmem0 - tol, shmem0 + tol) &&
		wait_stat(p, "total_cache", total0 - tol, total0 + tol) &&
		wait_counter(p, "memory.usage_in_bytes", usage0 - tol,
			     usage0 + tol);
out:
	report("test_v1_shmem_released", released);
	report("test_v1_shmem_moved", moved);
	report("test_v1_shmem_exact", exact);
	unlink(left);
	unlink(own);
	if (c)
		cg_destroy(c);
	if (p)
		cg_destroy(p);
	free(c);
	free(p);
}

/*
 * P has OWN_SIZE of anon memory in swap, its child C CHILD_SIZE; C's task
 * moves to P (v1 moves no charges with it), C is removed, and the task
 * unmaps its memory.
 */
static void test_v1_swap(void)
{
	bool released = false, moved = false, exact = false;
	long swap0, memsw0, swapped, left;
	struct holder own = { 0 }, h = { 0 };
	char *p = NULL, *c = NULL;

	p = cg_name(root, "memcg_v1_swap");
	c = p ? cg_name(p, "child") : NULL;
	if (!c || cg_create(p)) {
		ksft_print_msg("cannot set up %s\n", p ? p : "the parent");
		goto out;
	}
	if (counter_of(p, "memory.memsw.usage_in_bytes") < 0) {
		ksft_print_msg("%s has no memory.memsw (swap on? swapaccount?)\n", p);
		goto out;
	}
	left = holder_start(&own, p, OWN_SIZE, true);
	sleep_ms(2500);		/* one periodic stat flush */
	swap0 = stat_of(p, "swap");
	memsw0 = counter_of(p, "memory.memsw.usage_in_bytes");
	if (left < 0 || swap0 < OWN_SIZE / 2) {
		ksft_print_msg("%s: %ld KiB swapped, %ld pages resident, wanted %ld KiB\n",
			       p, swap0 >> 10, left, OWN_SIZE / 2 >> 10);
		goto out;
	}
	if (cg_create(c)) {
		ksft_print_msg("cannot create %s\n", c);
		goto out;
	}
	left = holder_start(&h, c, CHILD_SIZE, true);
	sleep_ms(2500);
	swapped = stat_of(c, "swap");
	if (left < 0 || swapped < CHILD_SIZE / 2) {
		ksft_print_msg("%s: %ld KiB swapped, %ld pages resident, wanted %ld KiB\n",
			       c, swapped >> 10, left, CHILD_SIZE / 2 >> 10);
		goto out;
	}
	if (cg_enter(p, h.pid) || cg_destroy(c)) {
		ksft_print_msg("cannot move the holder to %s or remove %s\n", p, c);
		goto out;
	}

	released = wait_released();
	moved = wait_stat(p, "swap", swap0 + swapped - tol, swap0 + swapped + tol);

	if (holder_do(&h, 'f') < 0) {
		ksft_print_msg("the holder did not unmap\n");
		goto out;
	}
	exact = wait_stat(p, "swap", swap0 - tol, swap0 + tol) &&
		wait_counter(p, "memory.memsw.usage_in_bytes", memsw0 - tol,
			     memsw0 + tol);
out:
	holder_stop(&h);
	holder_stop(&own);
	report("test_v1_swap_released", released);
	report("test_v1_swap_moved", moved);
	report("test_v1_swap_exact", exact);
	if (c)
		cg_destroy(c);
	if (p)
		cg_destroy(p);
	free(c);
	free(p);
}

/* @cg's @counter usage, through its watermark. */
static long usage_by_watermark(const char *cg, const char *counter)
{
	char file[64];

	snprintf(file, sizeof(file), "%s.max_usage_in_bytes", counter);
	if (cg_write(cg, file, "0"))
		return -1;
	return counter_of(cg, file);
}

/*
 * C, a child of the root, maps CHILD_SIZE of anon memory; the task moves to
 * the root, C is removed, and only then the memory is paged out and
 * unmapped: the swap-out finds the folios charged to the root.
 */
static void test_v1_root_counters(void)
{
	long mem0, memsw0, left;
	struct holder h = { 0 };
	bool ok = false;
	char *c;

	c = cg_name(root, "memcg_v1_root_child");
	mem0 = usage_by_watermark(root, "memory");
	memsw0 = usage_by_watermark(root, "memory.memsw");
	if (!c || mem0 < 0 || memsw0 < 0) {
		ksft_print_msg("cannot read the root's counters\n");
		goto out;
	}
	if (cg_create(c) || holder_start(&h, c, CHILD_SIZE, false) < 0 ||
	    cg_enter(root, h.pid) || cg_destroy(c)) {
		ksft_print_msg("cannot charge and remove %s\n", c);
		goto out;
	}
	/* Only informative: original keeps the child until the unmap. */
	if (!wait_released())
		ksft_print_msg("(so the swap-out below finds the folios in the child)\n");
	left = holder_do(&h, 'p');
	if (left < 0 || left > CHILD_SIZE / page_size / 2) {
		ksft_print_msg("MADV_PAGEOUT left %ld of %ld pages resident\n",
			       left, CHILD_SIZE / page_size);
		goto out;
	}
	if (holder_do(&h, 'f') < 0) {
		ksft_print_msg("the holder did not unmap\n");
		goto out;
	}
	ok = wait_value(usage_by_watermark, root, "memory", mem0 - tol,
			mem0 + tol);
	ok = wait_value(usage_by_watermark, root, "memory.memsw", memsw0 - tol,
			memsw0 + tol) && ok;
out:
	holder_stop(&h);
	report("test_v1_root_counters", ok);
	if (c)
		cg_destroy(c);
	free(c);
}

int main(int argc, char **argv)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	ksft_print_header();
	page_size = sysconf(_SC_PAGESIZE);
	/* 64 pages of stat and charge batches per CPU, twice, and 1 MiB */
	tol = MB(1) + 2 * 64 * page_size * (cpus > 0 ? cpus : 1);

	if (find_v1_memory(root, sizeof(root)))
		ksft_exit_skip("no cgroup v1 hierarchy with the memory controller is mounted\n");
	if (nr_memcgs() < 0)
		ksft_exit_skip("no memory line in /proc/cgroups\n");
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/memcg_v1_XXXXXX");
	if (!mkdtemp(tmpdir) ||
	    mount("tmpfs", tmpdir, "tmpfs", 0, "size=256m"))
		ksft_exit_fail_msg("cannot mount a tmpfs at %s: %s\n", tmpdir,
				   strerror(errno));

	ksft_set_plan(7);
	test_v1_shmem();
	test_v1_swap();
	test_v1_root_counters();

	umount(tmpdir);
	rmdir(tmpdir);
	ksft_finished();
}
