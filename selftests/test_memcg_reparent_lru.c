// SPDX-License-Identifier: GPL-2.0
/*
 * LRU folios of a removed memcg: page cache, filesystem metadata (in the
 * block device's page cache), shmem, anon pages of a task that moved to a
 * live sibling, dirty pages, pages under writeback, mapped file pages, anon
 * THPs (one partially unmapped, so on the deferred split queue) and a file
 * whose inode belongs to the child's writeback structure (cgwb), plus a
 * churn of many generations under one parent. In 6.12 a charged folio
 * holds a css reference on its memcg from commit_charge() until it is
 * freed, so the memcg stays "dying" for as long as the folio is in use.
 *
 * Each subtest charges its memory in a child, removes the child while the
 * memory stays in use and runs checks 1 to 4 of memcg_reparent.h, a TAP
 * line each. On a kernel that does not reparent LRU folios check 1
 * ("released") fails; the others still run. test_reparent_thp also needs
 * the child's deferred split queue to follow its large folios, and
 * test_reparent_cgwb needs the cgwb of the inodes the child dirtied to be
 * let go once they are clean.
 */
#define _GNU_SOURCE

#include <linux/bpf.h>
#include <linux/kernel-page-flags.h>
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
#include "cgroup_util.h"
#include "memcg_reparent.h"

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
#define NR_META_DIRS		256
#define NR_META_FILES		4
#define CHURN_FILE_SIZE		(256 << 10)
#define CHURN_SHMEM_SIZE	(64 << 10)
#define CHURN_NR_FILES		16
#define CHURN_NR_LOOKUPS	32
#define CHURN_DYING_BOUND	8
/* fs metadata and negative dentries the churn may legitimately leave */
#define CHURN_RESIDUE		MB(2)

static int pagecache_charge(struct reparent_test *t)
{
	if (cg_run_pinned(t->child, read_file, t->priv, false)) {
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

	if (cg_run_pinned(t->child, create_metadata, s, false)) {
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
		rt_skip(t, "memfd_create: %s\n", strerror(errno));
		return KSFT_SKIP;
	}
	t->min_charge = s->size - s->size / 10;

	return KSFT_PASS;
}

static int write_in_child(struct reparent_test *t)
{
	if (cg_run_pinned(t->child, write_file, t->priv, false)) {
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

static int anon_charge(struct reparent_test *t)
{
	struct file_state *s = t->priv;

	t->min_charge = s->size - s->size / 10;
	return holder_start(&s->h, t, holder_fault_anon,
			    holder_query_resident, s) ?
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
 * the device busy longer than the same data in large requests.
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

/* Charge the file's pages in C, most of them dirty, and note their frames. */
static int writeback_charge(struct reparent_test *t)
{
	struct file_state *s = t->priv;

	if (cg_run_pinned(t->child, dirty_in_runs, s, false)) {
		report(t, 0, "cannot read and write the file in the child\n");
		return KSFT_FAIL;
	}
	/* C's page frames, for rt_remove_child()'s look at their flags */
	if (kpage_collect(t, t->child)) {
		report(t, 0, "cannot read /proc/kpagecgroup\n");
		return KSFT_FAIL;
	}

	return KSFT_PASS;
}

/*
 * Start the writeback from a process outside C (the flusher), which sends
 * the time its sync_file_range() returned. Not in writeback_charge(): on
 * a slow kernel the wait for C's charge to show in memory.stat
 * (wait_charged()) can outlast the whole writeback.
 */
static int writeback_start(struct reparent_test *t)
{
	struct file_state *s = t->priv;
	int done[2];
	double end;

	/* the flusher of an attempt whose writeback went unseen */
	if (s->flusher > 0)
		waitpid(s->flusher, NULL, 0);
	s->flusher = -1;
	close_fd(&s->flusher_done);
	t->dirty_pages = kpage_count(t, KPF_DIRTY);
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
		ksft_print_msg("%s: %ld KiB of C dirty when its writeback began, ",
			       t->name, t->dirty_pages * page_size / 1024);
		printf("%ld KiB under writeback right before rmdir (memory.stat: %ld KiB); ",
		       t->wb_pages * page_size / 1024,
		       kib(t->child_last.v[K_FILE_WRITEBACK]));
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
	.setup		= file_setup,
	.charge		= writeback_charge,
	.start_writeback = writeback_start,
	.resident	= file_resident,
	.free		= writeback_free,
	.pinned_info	= file_pinned_info,
	.cleanup	= file_free,
};

/*
 * Pages under writeback at removal: C reads a file and dirties most of
 * it; once C's memory.stat shows the file, a process outside C starts the
 * writeback (sync_file_range(SYNC_FILE_RANGE_WRITE)), and C is removed
 * right after a read of /proc/kpageflags that finds pages of C (found by
 * /proc/kpagecgroup before the writeback began) under writeback: that
 * read is the setup's guarantee (check 0). A writeback over before a look
 * saw it is started again on the file dirtied again, WRITEBACK_ATTEMPTS
 * attempts in all. memory.stat cannot give that guarantee: on a slow
 * kernel the IO in flight at any moment may stay below what its per-CPU
 * counts lag (stat_tol()) for the whole writeback. Without a way to hold
 * IO back (blk-throttle, loop and device mapper are not in every config,
 * nor in the kernels this was written for), the test does not claim the
 * pages are still under writeback when C's css goes offline, which
 * happens after the rmdir, asynchronously; it prints when the submission
 * ended and when C was released, both relative to the rmdir. Once the
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

	return holder_start(&s->h, t, map_file, holder_query_resident, s) ?
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
	/* the holder's copy, for holder_query_resident() */
	s->size -= page_size;

	return EXIT_SUCCESS;
}

static int thp_setup(struct reparent_test *t)
{
	char mode[128];

	if (read_text("/sys/kernel/mm/transparent_hugepage/enabled", mode,
		      sizeof(mode)) <= 0) {
		rt_skip(t,
			"no transparent hugepages (CONFIG_TRANSPARENT_HUGEPAGE)\n");
		return KSFT_SKIP;
	}
	if (strstr(mode, "[never]") ||
	    (!strstr(mode, "[always]") && madvise(NULL, 0, MADV_HUGEPAGE) &&
	     errno == ENOSYS)) {
		rt_skip(t, "THP is %s and madvise() is missing\n",
			strstr(mode, "[never]") ? "off" : "on madvise");
		return KSFT_SKIP;
	}

	return KSFT_PASS;
}

static int thp_charge(struct reparent_test *t)
{
	struct file_state *s = t->priv;

	/* Every THP but the partially unmapped one is still PMD-mapped. */
	t->min_charge = s->size - THP_SIZE;
	return holder_start(&s->h, t, fault_thp, holder_query_resident, s) ?
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

	if (cg_run_pinned(t->child, create_and_write, &s->f, false)) {
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
		    cg_run_pinned(t.child, churn_job, &a, false)) {
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

static const struct memcg_reparent_subtest tests[] = {
	{ test_reparent_pagecache, "test_reparent_pagecache",
	  KIND_CHECKS },
	{ test_reparent_fs_metadata, "test_reparent_fs_metadata",
	  KIND_CHECKS },
	{ test_reparent_shmem, "test_reparent_shmem",
	  KIND_CHECKS },
	{ test_reparent_anon, "test_reparent_anon",
	  KIND_CHECKS },
	{ test_reparent_dirty, "test_reparent_dirty",
	  KIND_CHECKS },
	{ test_reparent_writeback, "test_reparent_writeback",
	  KIND_CHECKS },
	{ test_reparent_mapped, "test_reparent_mapped",
	  KIND_CHECKS },
	{ test_reparent_thp, "test_reparent_thp",
	  KIND_CHECKS },
	{ test_reparent_cgwb, "test_reparent_cgwb",
	  KIND_CHECKS },
	{ test_reparent_churn, "test_reparent_churn",
	  KIND_CHECKS },
};

int main(int argc, char **argv)
{
	return memcg_reparent_main(tests, ARRAY_SIZE(tests));
}
