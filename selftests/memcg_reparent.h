/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The machinery of the test_memcg_reparent_* kselftests (memcg_reparent.c).
 *
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
 *     deadline ("released");
 *  2. nothing was lost or counted twice: P's memory.current and the
 *     memory.stat keys of that kind still account for the memory
 *     ("accounted");
 *  3. freeing the memory later uncharges P back to its baseline, and no
 *     memory.stat size is absurd (an underflowed counter) ("uncharged");
 *  4. the memory was moved, not reclaimed: P's workingset refault counters
 *     do not grow and, where pages can be seen, mincore() still finds them
 *     resident ("resident").
 *
 * Each check is a TAP line of its own, "<subtest>.<check>", and every
 * check runs whatever became of the ones before it: on a kernel that does
 * not reparent, check 1 fails while checks 2 to 4 still tell whether the
 * counters are right. A check that cannot run is skipped with the reason;
 * a failed setup fails every check it kept from running. Subtests with
 * a structure of their own (the pins and reclaim tests) name their checks
 * in their tables.
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
 * Each kind of memory is a struct reparent_kind (how to set up, charge in
 * C, see and free it) that run_reparent_test() takes through these steps;
 * the subtests with a structure of their own drive the steps themselves.
 *
 * The tests do not rely on madvise() or fadvise(): kernels built without
 * CONFIG_ADVISE_SYSCALLS (tinyconfig) return ENOSYS for both. The one
 * exception, test_reparent_thp, skips there unless THP is "always".
 *
 * Environment: MEMCG_REPARENT_TIMEOUT (seconds to wait for check 1,
 * default 20), MEMCG_REPARENT_GENERATIONS (test_reparent_churn, default
 * 200), MEMCG_REPARENT_ONLY (a comma-separated list of subtests to run,
 * e.g. "test_reparent_dirty"; the checks of the others are reported as
 * skipped). The working directory must be on a disk filesystem that
 * supports O_DIRECT (ext4 is what the tests were written against) for the
 * page cache tests.
 *
 * Include cgroup_util.h first.
 */
#ifndef __MEMCG_REPARENT_H
#define __MEMCG_REPARENT_H

#include <linux/limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* mm/memcontrol.h: the charge batch of the per-CPU stocks */
#define MEMCG_CHARGE_BATCH	64

#define POLL_MS			20
#define STAT_POLL_MS		50
#define SETTLE_TIMEOUT		10.0	/* stats catch up (2 s periodic flush) */
#define UNCHARGE_TIMEOUT	20.0	/* RCU and workqueue frees */
#define INFO_TIMEOUT		5.0
#define HOLDER_TIMEOUT_MS	120000
#define IO_CHUNK		(64 << 10)

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
	long dirty_pages;	/* C's dirty pages when its writeback began */
	long wb_pages;		/* C's pages under writeback at rmdir */
	uint64_t *pfns;		/* C's page frames (kpage_collect()) */
	long nr_pfns;
	double removed_at;	/* now() when C was removed */
	double released_at;	/* now() when check 1 passed, or 0 */
	void *priv;		/* the state of the kind of memory */
};

/* The checks; report() names the one that failed. */
enum reparent_check {
	CHECK_SETUP,		/* 0: not a check, what they need */
	CHECK_RELEASED,		/* 1 */
	CHECK_ACCOUNTED,	/* 2 */
	CHECK_UNCHARGED,	/* 3 */
	CHECK_RESIDENT,		/* 4 */
	CHECK_SIBLING_KEPT,	/* 5: test_memcg_reparent_reclaim */
	CHECK_CHILD_RECLAIMED,	/* 6: test_memcg_reparent_reclaim */
	CHECK_NO_OOM,		/* 7: test_reparent_socket_limit */
	CHECK_NO_SLOWDOWN,	/* 8: test_reparent_socket_limit */
	CHECK_MIGRATED,		/* 9: test_memcg_reparent_numa */
	CHECK_SWAPIN_CHARGED,	/* 10: test_reparent_swap */
	NR_CHECKS
};

/* The TAP names of checks 1 to 4 of a struct reparent_kind subtest */
#define KIND_CHECKS {						\
	[CHECK_RELEASED]	= "released",			\
	[CHECK_ACCOUNTED]	= "accounted",			\
	[CHECK_UNCHARGED]	= "uncharged",			\
	[CHECK_RESIDENT]	= "resident",			\
}

/* A subtest and the TAP names of its checks (NULL: it has no such check) */
struct memcg_reparent_subtest {
	int (*fn)(const char *root);
	const char *name;
	const char *checks[NR_CHECKS];
};

/*
 * A holder charges memory in C, moves to K and keeps it while C is
 * removed. On request it reports the result of @query (e.g. resident
 * pages); it exits when its command pipe is closed.
 */
struct holder {
	pid_t pid;
	int cmd;
	int resp;
	long (*act)(void *arg);	/* run by holder_act(); set before the start */
};

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

/* start_writeback(): how many writebacks a look may miss, and one more */
#define WRITEBACK_ATTEMPTS	3

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
	int (*setup)(struct reparent_test *t);
	int (*charge)(struct reparent_test *t);
	/*
	 * Once C's charge shows, start the writeback of its pages: C is then
	 * removed while some of them are under writeback. If it is over
	 * before a look sees it, charge and start again, WRITEBACK_ATTEMPTS
	 * times in all.
	 */
	int (*start_writeback)(struct reparent_test *t);
	long (*resident)(struct reparent_test *t);	/* for check 4 */
	void (*free)(struct reparent_test *t);
	void (*check_freed)(struct reparent_test *t);
	void (*pinned_info)(struct reparent_test *t);	/* when check 1 failed */
	void (*cleanup)(struct reparent_test *t);	/* also after a failure */
};

#define KEYS(...)	.keys = (const int []){ __VA_ARGS__ },			\
			.nr_keys = ARRAY_SIZE(((const int []){ __VA_ARGS__ }))

extern const char * const key_names[NR_KEYS];
extern long page_size;
extern long nr_cpus;
extern long nr_cpus_conf;
extern double dying_timeout;
extern int churn_generations;
extern bool nudge_offline;

long stat_tol(void);
long key_tol(int key);
double now(void);
void sleep_ms(long ms);
long kib(long bytes);
int snap_memcg(const char *cgroup, struct memcg_snap *s);
void check_run(int check);
__printf(2, 3)
void check_skip(int check, const char *fmt, ...);
__printf(2, 3)
void rt_skip(struct reparent_test *t, const char *fmt, ...);
__printf(3, 4)
void report(struct reparent_test *t, int check, const char *fmt, ...);
long wait_dying(const char *cgroup, long bound, double timeout,
		double *elapsed);
bool expect_ranges(struct reparent_test *t, int check,
		   const char *cgroup, const struct key_range *r,
		   int nr, double timeout, struct memcg_snap *seen);
int rt_setup(struct reparent_test *t, const char *root,
	     const char *name);
int kpage_collect(struct reparent_test *t, const char *cgroup);
long kpage_count(struct reparent_test *t, int kpf);
int rt_remove_child(struct reparent_test *t, int wait_key);
bool wait_charged(struct reparent_test *t, int key, long min);
bool check_released(struct reparent_test *t, long bound);
bool check_accounted(struct reparent_test *t, const int *keys, int nr);
bool check_no_refaults(struct reparent_test *t,
		       const struct memcg_snap *since);
bool check_resident(struct reparent_test *t, long before, long after);
bool check_sane_sizes(struct reparent_test *t, int check);
bool check_uncharged(struct reparent_test *t, const int *keys, int nr,
		     long extra);
bool check_clean(struct reparent_test *t);
void info_released_after_free(struct reparent_test *t);
int rt_cleanup(struct reparent_test *t, int ret);
int read_full(int fd, void *buf, size_t len, int timeout_ms);
int holder_start(struct holder *h, struct reparent_test *t,
		 int (*charge)(void *arg), long (*query)(void *arg),
		 void *arg);
long holder_query(struct holder *h);
long holder_act(struct holder *h);
void holder_stop(struct holder *h);
long resident_pages(void *addr, size_t size);
long file_resident_pages(int fd, size_t size);
int write_pattern(int fd, size_t size, char pattern);
bool cwd_on_block_device(void);
int drop_bdev_cache(void);
long drop_file_cache(const char *path, int fd, size_t size);
int make_uncached_file(struct reparent_test *t, char *path, size_t len,
		       size_t size);
char *tmpfs_mount(struct reparent_test *t);
void tmpfs_umount(char *dir);
int skip_unless_on_disk(struct reparent_test *t);
int run_reparent_test(const char *root, const char *name,
		      const struct reparent_kind *kind, void *priv);
void close_fd(int *fd);
int file_setup(struct reparent_test *t);
void file_pinned_info(struct reparent_test *t);
long file_resident(struct reparent_test *t);
int holder_fault_anon(void *arg);
long holder_query_resident(void *arg);
long holder_resident(struct reparent_test *t);
void file_free(struct reparent_test *t);
int read_file(void *arg);
int write_file(void *arg);
int memcg_reparent_main(const struct memcg_reparent_subtest *tests, int nr);

#endif /* __MEMCG_REPARENT_H */
