// SPDX-License-Identifier: GPL-2.0
/*
 * stress: the reliability run.  Memory cgroups are created and removed
 * while the memory charged to them is under reclaim, writeback, mmap,
 * migration and compaction, with the whole guest in swap and OOM kills in
 * a sibling.  Runs in the guest as the "stress" job (qemu-run/jobs/stress.sh);
 * the kernel (the debug one: lockdep, KASAN, DEBUG_VM, panic_on_warn) must
 * stay silent.
 *
 *   stress [key=value ...]        stress help   lists the knobs
 *
 * Processes, all started by the main one, which only watches and records:
 *   worker  (workers=N) loops: mkdir parent/wW-G with memory.high and
 *           memory.max, start 1..tasks tasks in it (clone3 CLONE_INTO_CGROUP),
 *           each running one body of the mix in a loop; after a random while
 *           move up to keep of them out to parent/keeper (their memory, still
 *           charged to the cgroup, outlives it: they go on using it), SIGKILL
 *           the others in the middle of their work and rmdir the cgroup at
 *           once, with dirty pages, writeback, swap and reclaim in flight.
 *           Kept tasks are killed up to keep_ms later.
 *   oom     every oom_ms: parent/oom-N with a small memory.max, no swap and
 *           memory.oom.group; a holder and an eater go beyond the limit: both
 *           must be OOM-killed (inside that memcg); then the cgroup is removed.
 *   vm      compact_memory every compact_ms, drop_caches every drop_ms,
 *           memory.reclaim and stat reads on a random cgroup of the parent
 *           every reclaim_ms (racing with rmdir), migrate_pages() of a kept
 *           task to another node every migrate_ms, MGLRU aging or
 *           eviction of a random cgroup through debugfs lru_gen every
 *           lrugen_ms.
 *   walker  /proc/kpagecgroup, /proc/kpageflags and page_owner read over
 *           a window of page frames every kpage_ms: page frame walkers
 *           racing with migration and reparenting.
 *   toggle  parent/toggle, a task inside its child t using anon and file
 *           memory; every toggle_ms memory is taken out of toggle's
 *           subtree_control and put back: t's memcg goes offline with its
 *           task still charging, now to toggle.
 *   hog     hog_pct of MemTotal of anon memory in /sys/fs/cgroup/stress-hog
 *           (outside the parent), kept warm: the whole guest goes into swap.
 * Bodies (mix=):
 *   write   write to a worker's data file on the ext4 root, then fsync,
 *           fdatasync, sync_file_range (async or waiting), leave it dirty or
 *           truncate it; fadvise DONTNEED now and then
 *   read    read any worker's data and mapped files
 *   mmap    a shared mapping of a file, dirtied, msync, MADV_PAGEOUT/COLD
 *   anon    anon memory above memory.high (reclaim, swap), content verified
 *   shmem   a tmpfs file (huge=advise) or memfd, mapped and dirtied, paged
 *           out, holes punched; tmpfs files stay behind for later jobs
 *   thp     MADV_HUGEPAGE anon: partial unmap (deferred split), mprotect,
 *           MADV_PAGEOUT, MADV_COLLAPSE, content verified
 *   migrate move_pages, mbind MPOL_MF_MOVE and migrate_pages between NUMA
 *           nodes (anon and file pages), content verified
 *   mlock   mlocked anon and file pages (unevictable), relocked now and then
 *   sock    a TCP connection over lo, opened in the job, data pushed through
 *           it and verified; a kept task goes on pushing after the rmdir
 *           (socket memory charged past the removal of its cgroup)
 *   inotify an inotify (or fanotify) group made in the job, watching a tmpfs
 *           file the task writes; events read (group memory charged to the
 *           job, then, once kept, past its removal)
 *   swap    anon and memfd memory filled, paged out whole, swapped back in
 *           and verified a moment later: the swap-in of a kept task finds
 *           entries of a removed cgroup
 *
 * Records go to out=/dev/ttyS2 (qemu-run/records/RECORDS.md): "@@ run" once, "@@
 * progress" every progress_ms, "@@ end" with every counter.  Each operation
 * that must not fail and did is named on the console ("stress: FAIL: ...")
 * and makes rc 1.  At the end everything is killed and removed, and the
 * dying count is taken before and after drop_caches; then the data is
 * deleted and the parent must give back its charges (leak_kb); with
 * require=1 each kind of stress must have happened (swap-out, migration,
 * THP, OOM kills, writeback, compaction, tasks kept past rmdir).
 *
 * Exit status: 0; 1 when something failed; 2 on bad arguments or setup failure.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <linux/mempolicy.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/fanotify.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "tool.h"

static struct knob knobs[] = {
	{ "seed", K_NUM, 1, NULL, "seed of the random choices" },
	{ "secs", K_NUM, 1800, NULL, "seconds of stress (cleanup and checks come after)" },
	{ "workers", K_NUM, 3, NULL, "worker processes, each creating and removing cgroups" },
	{ "tasks", K_NUM, 3, NULL, "tasks per job cgroup, at most (1..tasks)" },
	{ "mix", K_STR, 0, "write,read,mmap,anon,shmem,thp,migrate,mlock,sock,inotify,swap", "task bodies to draw from" },
	{ "run_ms", K_NUM, 3000, NULL, "mean life of a job cgroup before its removal, ms" },
	{ "keep", K_NUM, 2, NULL, "tasks each worker keeps alive in parent/keeper past rmdir" },
	{ "keep_ms", K_NUM, 20000, NULL, "a kept task is killed at most this much later, ms" },
	{ "high_mb", K_NUM, 24, NULL, "memory.high of a job cgroup, MiB" },
	{ "max_mb", K_NUM, 64, NULL, "memory.max of a job cgroup, MiB" },
	{ "job_swap_mb", K_NUM, 48, NULL, "memory.swap.max of a job cgroup, MiB (0: not set)" },
	{ "anon_mb", K_NUM, 16, NULL, "anon memory of an anon task, MiB (up to 1.5x)" },
	{ "file_mb", K_NUM, 8, NULL, "written to a data file per write round, MiB at most" },
	{ "mmap_mb", K_NUM, 8, NULL, "size of a shared mapped file, MiB" },
	{ "shmem_mb", K_NUM, 8, NULL, "size of a tmpfs file, MiB" },
	{ "thp_mb", K_NUM, 8, NULL, "THP-eligible anon memory of a thp task, MiB" },
	{ "mig_mb", K_NUM, 4, NULL, "anon memory a migrate task moves between nodes, MiB" },
	{ "mlock_mb", K_NUM, 2, NULL, "anon and file memory an mlock task locks, MiB each" },
	{ "sock_kb", K_NUM, 512, NULL, "data a sock task pushes through its connection per round, KiB at most" },
	{ "swap_mb", K_NUM, 8, NULL, "anon and memfd memory a swap task pages out and back in, MiB each" },
	{ "files", K_NUM, 6, NULL, "data files per worker (mapped and tmpfs files: half as many)" },
	{ "oom_ms", K_NUM, 10000, NULL, "an OOM kill in a sibling cgroup this often, ms (0: none)" },
	{ "oom_mb", K_NUM, 16, NULL, "memory.max of the OOM sibling, MiB" },
	{ "compact_ms", K_NUM, 5000, NULL, "echo 1 > /proc/sys/vm/compact_memory this often, ms (0: never)" },
	{ "drop_ms", K_NUM, 30000, NULL, "drop_caches (1, 2 or 3) this often, ms (0: never)" },
	{ "reclaim_ms", K_NUM, 1000, NULL, "memory.reclaim on a random cgroup this often, ms (0: never)" },
	{ "migrate_ms", K_NUM, 2000, NULL, "migrate_pages() of a kept task this often, ms (0: never)" },
	{ "kpage_ms", K_NUM, 250, NULL, "read /proc/kpagecgroup and kpageflags over a window of page frames this often, ms (0: never)" },
	{ "lrugen_ms", K_NUM, 1000, NULL, "MGLRU aging or eviction of a random cgroup (debugfs lru_gen) this often, ms (0: never)" },
	{ "toggle_ms", K_NUM, 3000, NULL, "memory out of parent/toggle's subtree_control and back, a task inside, this often, ms (0: never)" },
	{ "hog_pct", K_NUM, 55, NULL, "anon memory kept warm outside the parent, % of MemTotal (0: none)" },
	{ "parent_pct", K_NUM, 50, NULL, "memory.max of the parent, % of MemTotal" },
	{ "parent_swap_mb", K_NUM, 256, NULL, "memory.swap.max of the parent, MiB" },
	{ "need_nodes", K_NUM, 2, NULL, "NUMA nodes the guest must have (numa=fake=2; 1: no migration)" },
	{ "io", K_NUM, 1, NULL, "1: enable the io controller too (cgroup writeback)" },
	{ "require", K_NUM, 1, NULL, "1: fail unless every kind of stress happened" },
	{ "leak_kb", K_NUM, 16384, NULL, "charge the parent may keep once all is deleted, KiB (0: no check)" },
	{ "drain_secs", K_NUM, 30, NULL, "wait this long for dying cgroups and charges to go, s" },
	{ "stop_secs", K_NUM, 300, NULL, "the processes must stop within this after secs, s" },
	{ "progress_ms", K_NUM, 2000, NULL, "\"@@ progress\" every T ms" },
	{ "audit_ms", K_NUM, 10000, NULL, "audit the parent's tree this often, ms: no counter above RAM + swap, parents hold their children's (0: only at the end)" },
	{ "parent", K_STR, 0, "/sys/fs/cgroup/stress", "the common parent cgroup" },
	{ "dir", K_STR, 0, "/stress-data", "where the files go (tmpfs on dir/tmp)" },
	{ "out", K_STR, 0, "/dev/ttyS2", "where the records go" },
	{ NULL, 0, 0, NULL, NULL },
};

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25	/* Linux 6.1; glibc 2.36 does not name it */
#endif

#define HOG_CG "/sys/fs/cgroup/stress-hog"
#define PAGE 4096L
#define HPAGE (2L << 20)
#define MB(x) ((long)(x) << 20)
#define MAXTASKS 16
#define MAXKEEP 16

/* ---- counters, shared by all the processes; one list, in record order */

#define COUNTERS(X) X(cgroups_created) X(removed) X(tasks) X(moved) X(ooms) X(oom_kills) \
	X(job_ooms) X(compactions) X(drops) X(reclaims) X(migrate_calls) X(pages_moved) \
	X(writebacks) X(collapses) X(sock_kb) X(sockets) X(notify_events) X(notify_groups) \
	X(swap_rounds) X(kpage_reads) X(lrugen_cmds) X(toggles) X(audits) X(failures)
#define ENUM(name) C_##name,
#define NAME(name) #name,
enum { COUNTERS(ENUM) NCOUNTERS };
static const char *const counter_names[] = { COUNTERS(NAME) };

static struct shared {
	volatile int stop;
	long c[NCOUNTERS];
} *sh;

#define COUNT(name, n) __atomic_add_fetch(&sh->c[C_##name], (n), __ATOMIC_RELAXED)
#define GET(name) __atomic_load_n(&sh->c[C_##name], __ATOMIC_RELAXED)

/* An operation that must not fail did: name it on the console. */
static void fail(const char *fmt, ...)
{
	long n = COUNT(failures, 1);
	char msg[512];
	va_list ap;

	if (n > 100) {
		if (n == 101)
			printf("stress: FAIL: more failures, not shown\n");
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("stress: FAIL: %s\n", msg);
}

/* ---- what the guest has, resolved at setup */

static long mem_kb, hog_mb, parent_mb, mapfiles, shmfiles;
/* debugfs lru_gen is there and MGLRU is on (see setup()) */
static int lru_gen_ok;
static int nodes = 1, thp;

/* ---- random numbers: tool.h's xorshift64*, one stream per process */

static void rng_seed(long a, long b)
{
	uint64_t r = ((uint64_t)NUM("seed") * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)a << 32) ^
		     (uint64_t)b * 0xbf58476d1ce4e5b9ULL;

	rng_set(r ^ r >> 29);
}

/* ---- the task bodies */

enum { B_WRITE, B_READ, B_MMAP, B_ANON, B_SHMEM, B_THP, B_MIGRATE, B_MLOCK, B_SOCK, B_INOTIFY, B_SWAP, NBODIES };
static const char *const body_names[NBODIES] = {
	"write", "read", "mmap", "anon", "shmem", "thp", "migrate", "mlock", "sock", "inotify", "swap",
};
static int mix[NBODIES * 4], nmix;

static void parse_mix(void)
{
	nmix = knob_names("mix", body_names, NBODIES, mix, sizeof(mix) / sizeof(mix[0]));
	if (!nmix) {
		fprintf(stderr, "stress: mix is empty\n");
		exit(2);
	}
}

static int in_mix(int body)
{
	int i;

	for (i = 0; i < nmix; i++)
		if (mix[i] == body)
			return 1;
	return 0;
}

/* The task being started; a task is a child that sees its own copy. */
static struct task {
	long worker, gen;
	int idx, body;
	char cg[128];
} cur;

#define TFAIL(fmt, ...) do { \
	fail("%s task of %s: " fmt, body_names[cur.body], cur.cg, ##__VA_ARGS__); \
	_exit(1); \
} while (0)

static char *fpath(char *buf, size_t len, const char *kind, long worker, long k)
{
	snprintf(buf, len, "%s/%s/w%ld-%ld", STR("dir"), kind, worker, k);
	return buf;
}

static void pause_round(void)
{
	sleep_ms(10 + rnd(50));
}

static char *map_anon(long len)
{
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		TFAIL("mmap of %ld KiB of anon memory: %s", len >> 10, strerror(errno));
	return m;
}

/* madvise that must work; EAGAIN and EINTR (a fatal signal) are fine. */
static void advise(void *p, long len, int advice, const char *name)
{
	if (madvise(p, len, advice) && errno != EAGAIN && errno != EINTR)
		TFAIL("madvise(%s) of %ld KiB: %s", name, len >> 10, strerror(errno));
}

/*
 * Verified memory: 8 words per page, derived from (salt, round, page).
 * Check what round - 1 left, write round's.  Whatever reclaim, swap,
 * migration, compaction or reparenting did in between, the words stay.
 */
static uint64_t pattern(uint64_t salt, long round, long page, int w)
{
	return salt ^ ((uint64_t)round << 40) ^ ((uint64_t)page << 8) ^ (uint64_t)w;
}

static void fill_page(char *m, long page, uint64_t salt, long round)
{
	uint64_t *p = (uint64_t *)(m + page * PAGE);
	int w;

	for (w = 0; w < 8; w++)
		p[w * 64] = pattern(salt, round, page, w);
}

static void verify_fill(char *m, long pages, uint64_t salt, long round, const char *what)
{
	long i;
	int w;

	for (i = 0; i < pages; i++) {
		uint64_t *p = (uint64_t *)(m + i * PAGE);

		for (w = 0; round && w < 8; w++)
			if (p[w * 64] != pattern(salt, round - 1, i, w))
				TFAIL("%s memory corrupted: page %ld of %ld, word %d is %#llx, expected %#llx (round %ld)",
				      what, i, pages, w, (unsigned long long)p[w * 64],
				      (unsigned long long)pattern(salt, round - 1, i, w), round);
		fill_page(m, i, salt, round);
	}
}

static char chunk[64 << 10];

static void pwrite_all(int fd, long off, long len, const char *p)
{
	while (len > 0) {
		long n = len < (long)sizeof(chunk) ? len : (long)sizeof(chunk);

		if (pwrite(fd, chunk, n, off) != n)
			TFAIL("writing %s at %ld: %s", p, off, strerror(errno));
		off += n;
		len -= n;
	}
}

static int body_write(void)
{
	char p[256];
	long round, off, len;
	int fd, r;

	for (round = 0;; round++) {
		fpath(p, sizeof(p), "data", cur.worker, rnd(NUM("files")));
		fd = open(p, O_RDWR | O_CREAT, 0644);
		if (fd < 0)
			TFAIL("open %s: %s", p, strerror(errno));
		len = (1 + rnd(NUM("file_mb") * 16)) * (64L << 10);
		off = rnd(NUM("file_mb") * 16 + 1) * (64L << 10);
		memset(chunk, 'a' + (int)(round % 26), sizeof(chunk));
		pwrite_all(fd, off, len, p);
		switch (rnd(7)) {
		case 0:
			r = fsync(fd);
			break;
		case 1:
			r = fdatasync(fd);
			break;
		case 2:
			r = sync_file_range(fd, off, len, SYNC_FILE_RANGE_WRITE);
			break;
		case 3:
			r = sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE |
					    SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
			break;
		case 4:
			/* Truncation of pages that may belong to dead cgroups, some under writeback. */
			sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
			r = ftruncate(fd, off + rnd(len));
			break;
		default:
			r = 0; /* left dirty for the flusher */
			break;
		}
		if (r)
			TFAIL("writeback of %s: %s", p, strerror(errno));
		COUNT(writebacks, 1);
		if (rnd(8) == 0 && (errno = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)))
			TFAIL("fadvise DONTNEED %s: %s", p, strerror(errno));
		close(fd);
		pause_round();
	}
	return 0;
}

static int body_read(void)
{
	static char buf[64 << 10];
	char p[256];
	ssize_t n;
	int fd;

	for (;;) {
		if (rnd(3))
			fpath(p, sizeof(p), "data", rnd(NUM("workers")), rnd(NUM("files")));
		else
			fpath(p, sizeof(p), "map", rnd(NUM("workers")), rnd(mapfiles));
		fd = open(p, O_RDONLY);
		if (fd < 0 && errno != ENOENT)
			TFAIL("open %s: %s", p, strerror(errno));
		if (fd >= 0) {
			if (rnd(4) == 0)
				posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
			while ((n = read(fd, buf, sizeof(buf))) > 0)
				;
			if (n < 0)
				TFAIL("read %s: %s", p, strerror(errno));
			if (rnd(8) == 0)
				posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
			close(fd);
		}
		pause_round();
	}
	return 0;
}

/* Map file p (created and grown to len if needed), shared. */
static char *map_file(const char *p, long len, int prot)
{
	struct stat st;
	char *m;
	int fd = open(p, O_RDWR | O_CREAT, 0644);

	if (fd < 0)
		TFAIL("open %s: %s", p, strerror(errno));
	if (fstat(fd, &st))
		TFAIL("fstat %s: %s", p, strerror(errno));
	/* Files are only ever grown, so a mapping never reaches past the end. */
	if (st.st_size < len && ftruncate(fd, len))
		TFAIL("ftruncate %s to %ld: %s", p, len, strerror(errno));
	m = mmap(NULL, len, prot, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		TFAIL("mmap %s: %s", p, strerror(errno));
	close(fd);
	return m;
}

static int body_mmap(void)
{
	long len = MB(NUM("mmap_mb")), pages = len / PAGE, round, i, from;
	char p[256], *m = NULL;

	for (round = 0;; round++) {
		if (round % 16 == 0) {
			if (m)
				munmap(m, len);
			m = map_file(fpath(p, sizeof(p), "map", cur.worker, rnd(mapfiles)), len,
				     PROT_READ | PROT_WRITE);
		}
		from = rnd(pages);
		for (i = 0; i < pages / 4; i++)
			m[((from + i) % pages) * PAGE + rnd(PAGE)] = (char)round;
		switch (rnd(6)) {
		case 0:
		case 1:
			if (msync(m, len, rnd(2) ? MS_SYNC : MS_ASYNC))
				TFAIL("msync %s: %s", p, strerror(errno));
			COUNT(writebacks, 1);
			break;
		case 2:
			advise(m + from / 2 * PAGE, (pages - from / 2) * PAGE, MADV_PAGEOUT, "MADV_PAGEOUT");
			break;
		case 3:
			advise(m, len, MADV_COLD, "MADV_COLD");
			break;
		}
		pause_round();
	}
	return 0;
}

static int body_anon(void)
{
	long pages = NUM("anon_mb") * 256 + rnd(NUM("anon_mb") * 128 + 1), round, from;
	char *m = map_anon(pages * PAGE);
	uint64_t salt = rnd64();

	for (round = 0;; round++) {
		verify_fill(m, pages, salt, round, "anon");
		from = rnd(pages);
		switch (rnd(6)) {
		case 0:
			advise(m + from * PAGE, (pages - from) * PAGE, MADV_PAGEOUT, "MADV_PAGEOUT");
			break;
		case 1:
			advise(m + from * PAGE, (pages - from) * PAGE, MADV_COLD, "MADV_COLD");
			break;
		}
		pause_round();
	}
	return 0;
}

static int body_shmem(void)
{
	long len = MB(NUM("shmem_mb")), pages = len / PAGE, round, i, off;
	char p[256], *m = NULL;
	int fd = -1;

	for (round = 0;; round++) {
		if (round % 16 == 0) {
			if (m) {
				munmap(m, len);
				close(fd);
			}
			if (rnd(4) == 0) {
				/* Shmem that goes with the task. */
				snprintf(p, sizeof(p), "memfd");
				fd = memfd_create("stress", 0);
			} else {
				/* A tmpfs file that stays behind for later jobs of this worker. */
				fpath(p, sizeof(p), "tmp", cur.worker, rnd(shmfiles));
				fd = open(p, O_RDWR | O_CREAT, 0644);
			}
			if (fd < 0)
				TFAIL("open %s: %s", p, strerror(errno));
			if (ftruncate(fd, len))
				TFAIL("ftruncate %s: %s", p, strerror(errno));
			m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			if (m == MAP_FAILED)
				TFAIL("mmap %s: %s", p, strerror(errno));
			if (thp)
				advise(m, len, MADV_HUGEPAGE, "MADV_HUGEPAGE");
		}
		for (i = rnd(pages); i < pages; i += 1 + rnd(4))
			m[i * PAGE + rnd(PAGE)] = (char)round;
		off = rnd(pages) * PAGE;
		switch (rnd(8)) {
		case 0:
			advise(m + off, len - off, MADV_PAGEOUT, "MADV_PAGEOUT");
			break;
		case 1:
			if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, (1 + rnd(64)) * PAGE))
				TFAIL("punching a hole in %s: %s", p, strerror(errno));
			break;
		case 2:
			pwrite_all(fd, off, len - off < MB(1) ? len - off : MB(1), p);
			break;
		case 3:
			/* Removed while still mapped: freed when the mapping goes. */
			if (rnd(4) == 0 && strcmp(p, "memfd") && unlink(p) && errno != ENOENT)
				TFAIL("unlink %s: %s", p, strerror(errno));
			break;
		}
		pause_round();
	}
	return 0;
}

static int body_thp(void)
{
	long len = MB(NUM("thp_mb")) & ~(HPAGE - 1), pages, round, pg, hp;
	char *raw, *m;
	uint64_t salt = rnd64();

	if (len < HPAGE)
		len = HPAGE;
	pages = len / PAGE;
	raw = map_anon(len + HPAGE);
	m = (char *)(((uintptr_t)raw + HPAGE - 1) & ~(uintptr_t)(HPAGE - 1));
	if (thp)
		advise(m, len, MADV_HUGEPAGE, "MADV_HUGEPAGE");
	for (round = 0;; round++) {
		verify_fill(m, pages, salt, round, "THP anon");
		pg = rnd(pages);
		hp = rnd(len / HPAGE) * HPAGE;
		switch (rnd(6)) {
		case 0:
			/* A hole in a huge page: split it or queue it for deferred split. */
			advise(m + pg * PAGE, PAGE, MADV_DONTNEED, "MADV_DONTNEED");
			fill_page(m, pg, salt, round);
			break;
		case 1:
			advise(m + hp, HPAGE, MADV_PAGEOUT, "MADV_PAGEOUT");
			break;
		case 2:
			if (!thp)
				break;
			if (madvise(m, len, MADV_COLLAPSE) == 0)
				COUNT(collapses, 1);
			else if (errno != EAGAIN && errno != ENOMEM && errno != EBUSY && errno != EINVAL && errno != EINTR)
				TFAIL("madvise(MADV_COLLAPSE) of %ld KiB: %s", len >> 10, strerror(errno));
			break;
		case 3:
			/* Split the PMD mapping and let the VMAs merge back. */
			if (mprotect(m + pg * PAGE, PAGE, PROT_READ) ||
			    mprotect(m + pg * PAGE, PAGE, PROT_READ | PROT_WRITE))
				TFAIL("mprotect: %s", strerror(errno));
			break;
		}
		pause_round();
	}
	return 0;
}

/* The migration syscalls, which glibc does not wrap. */
static long sys_move_pages(long n, void **pages, const int *to, int *status, int flags)
{
	return syscall(SYS_move_pages, 0, n, pages, to, status, flags);
}

static long sys_mbind(void *p, long len, int mode, const unsigned long *mask, int flags)
{
	return syscall(SYS_mbind, p, len, mode, mask, mask ? 64 : 0, flags);
}

static long sys_migrate_pages(pid_t pid, const unsigned long *from, const unsigned long *to)
{
	return syscall(SYS_migrate_pages, pid, 64, from, to);
}

/* Errors the migration calls may return under memory pressure. */
static int migrate_busy(int e)
{
	return e == ENOMEM || e == EBUSY || e == EAGAIN || e == EINTR;
}

static void move_to(char *m, long pages, int node, int flags, const char *what)
{
	static void *addr[4096];
	static int to[4096], status[4096];
	long i, n = pages < 4096 ? pages : 4096, moved = 0;

	for (i = 0; i < n; i++) {
		addr[i] = m + i * PAGE;
		to[i] = node;
	}
	if (sys_move_pages(n, addr, to, status, flags) < 0) {
		if (!migrate_busy(errno))
			TFAIL("move_pages of %ld %s pages to node %d: %s", n, what, node, strerror(errno));
		return;
	}
	for (i = 0; i < n; i++)
		moved += status[i] == node;
	COUNT(migrate_calls, 1);
	COUNT(pages_moved, moved);
}

static int body_migrate(void)
{
	long pages = NUM("mig_mb") * 256, flen = MB(NUM("mmap_mb")), round, i;
	unsigned long all = (1UL << nodes) - 1, mask;
	char p[256], *m = map_anon(pages * PAGE), *f;
	uint64_t salt = rnd64();
	volatile char sink;
	int node;

	f = map_file(fpath(p, sizeof(p), "map", cur.worker, rnd(mapfiles)), flen, PROT_READ);
	for (round = 0;; round++) {
		verify_fill(m, pages, salt, round, "migrated anon");
		for (i = 0; i < flen; i += PAGE)
			sink = f[i];
		(void)sink;
		if (nodes < 2) {
			pause_round();
			continue;
		}
		node = (int)(round % nodes);
		mask = 1UL << node;
		switch (rnd(4)) {
		case 0:
			move_to(m, pages, node, MPOL_MF_MOVE, "anon");
			break;
		case 1:
			/* Page cache shared with other tasks and cgroups. */
			move_to(f, flen / PAGE, node, MPOL_MF_MOVE_ALL, "file");
			break;
		case 2:
			if (sys_mbind(m, pages * PAGE, MPOL_BIND, &mask, MPOL_MF_MOVE) && !migrate_busy(errno))
				TFAIL("mbind MPOL_BIND to node %d: %s", node, strerror(errno));
			COUNT(migrate_calls, 1);
			if (sys_mbind(m, pages * PAGE, MPOL_DEFAULT, NULL, 0))
				TFAIL("mbind MPOL_DEFAULT: %s", strerror(errno));
			break;
		case 3:
			if (sys_migrate_pages(0, &all, &mask) < 0 && !migrate_busy(errno))
				TFAIL("migrate_pages to node %d: %s", node, strerror(errno));
			COUNT(migrate_calls, 1);
			break;
		}
		pause_round();
	}
	return 0;
}

static int body_mlock(void)
{
	long len = MB(NUM("mlock_mb")), pages = len / PAGE, round, i;
	char p[256], *m = map_anon(len), *f;
	uint64_t salt = rnd64();

	f = map_file(fpath(p, sizeof(p), "map", cur.worker, rnd(mapfiles)), len, PROT_READ | PROT_WRITE);
	for (round = 0;; round++) {
		if (round % 8 == 0) {
			if (round && (munlock(m, len) || munlock(f, len)))
				TFAIL("munlock: %s", strerror(errno));
			if ((mlock(m, len) || mlock(f, len)) && errno != EAGAIN && errno != ENOMEM)
				TFAIL("mlock of %ld KiB: %s", len >> 10, strerror(errno));
		}
		verify_fill(m, pages, salt, round, "mlocked anon");
		for (i = rnd(pages); i < pages; i += 1 + rnd(8))
			f[i * PAGE] = (char)round;
		pause_round();
	}
	return 0;
}

/* A TCP connection over lo: *tx connected to *rx, both non-blocking. */
static void tcp_pair(int *tx, int *rx)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &len))
		TFAIL("a listening TCP socket on 127.0.0.1: %s", strerror(errno));
	*tx = socket(AF_INET, SOCK_STREAM, 0);
	if (*tx < 0 || connect(*tx, (struct sockaddr *)&a, sizeof(a)))
		TFAIL("connecting to 127.0.0.1:%d: %s", ntohs(a.sin_port), strerror(errno));
	*rx = accept(l, NULL, NULL);
	if (*rx < 0)
		TFAIL("accept on 127.0.0.1:%d: %s", ntohs(a.sin_port), strerror(errno));
	close(l);
	if (fcntl(*tx, F_SETFL, O_NONBLOCK) || fcntl(*rx, F_SETFL, O_NONBLOCK))
		TFAIL("O_NONBLOCK on a TCP socket: %s", strerror(errno));
	COUNT(sockets, 1);
}

static unsigned char stream_byte(uint64_t salt, long off)
{
	return (unsigned char)(salt >> ((off & 7) * 8)) ^ (unsigned char)(off >> 3);
}

/*
 * Push len bytes of the stream (salt, from off) from tx to rx and check
 * them on arrival.  Both ends are driven here, non-blocking, so neither
 * waits for the other; poll when neither can move.
 */
static void tcp_push(int tx, int rx, uint64_t salt, long off, long len)
{
	static unsigned char out[16 << 10], in[16 << 10];
	long sent = 0, got = 0, i;
	ssize_t n;

	while (got < len) {
		int moved = 0;

		if (sent < len) {
			long k = len - sent < (long)sizeof(out) ? len - sent : (long)sizeof(out);

			for (i = 0; i < k; i++)
				out[i] = stream_byte(salt, off + sent + i);
			n = send(tx, out, k, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n > 0) {
				sent += n;
				moved = 1;
			} else if (errno != EAGAIN && errno != EINTR) {
				TFAIL("send on a TCP connection over lo: %s", strerror(errno));
			}
		}
		n = recv(rx, in, sizeof(in), MSG_DONTWAIT);
		if (n > 0) {
			for (i = 0; i < n; i++)
				if (in[i] != stream_byte(salt, off + got + i))
					TFAIL("TCP data over lo corrupted at byte %ld of the stream", off + got + i);
			got += n;
			moved = 1;
		} else if (n == 0) {
			TFAIL("the TCP connection over lo was closed with %ld of %ld bytes to come", len - got, len);
		} else if (errno != EAGAIN && errno != EINTR) {
			TFAIL("recv on a TCP connection over lo: %s", strerror(errno));
		}
		if (!moved) {
			struct pollfd p[2] = { { tx, sent < len ? POLLOUT : 0, 0 }, { rx, POLLIN, 0 } };

			poll(p, 2, 100);
		}
	}
	COUNT(sock_kb, len >> 10);
}

static int body_sock(void)
{
	long round, off = 0, len;
	uint64_t salt = rnd64();
	int tx = -1, rx = -1;

	for (round = 0;; round++) {
		/* A new connection now and then: charged to whichever cgroup the task is in. */
		if (round % 32 == 0) {
			if (tx >= 0) {
				close(tx);
				close(rx);
			}
			tcp_pair(&tx, &rx);
			off = 0;
		}
		len = (1 + rnd(NUM("sock_kb") > 0 ? NUM("sock_kb") : 1)) << 10;
		tcp_push(tx, rx, salt, off, len);
		off += len;
		pause_round();
	}
	return 0;
}

/* A notification group: fanotify now and then (when the kernel has it), inotify otherwise. */
static int notify_group(const char *p, int *fan)
{
	int fd = -1;

	*fan = 0;
	if (rnd(3) == 0) {
		fd = syscall(SYS_fanotify_init, FAN_CLASS_NOTIF | FAN_NONBLOCK, O_RDONLY);
		if (fd >= 0 && syscall(SYS_fanotify_mark, fd, FAN_MARK_ADD, FAN_MODIFY | FAN_CLOSE_WRITE,
				       AT_FDCWD, p))
			TFAIL("fanotify_mark on %s: %s", p, strerror(errno));
		if (fd < 0 && errno != ENOSYS && errno != EPERM)
			TFAIL("fanotify_init: %s", strerror(errno));
		*fan = fd >= 0;
	}
	if (fd < 0) {
		fd = inotify_init1(IN_NONBLOCK);
		if (fd < 0)
			TFAIL("inotify_init1: %s", strerror(errno));
		if (inotify_add_watch(fd, p, IN_MODIFY | IN_CLOSE_WRITE | IN_OPEN) < 0)
			TFAIL("inotify_add_watch on %s: %s", p, strerror(errno));
	}
	COUNT(notify_groups, 1);
	return fd;
}

/* Read what the group has queued; fanotify events carry a file to close. */
static long notify_drain(int fd, int fan)
{
	static char buf[16 << 10];
	long events = 0;
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		char *e = buf;

		while (e < buf + n) {
			if (fan) {
				struct fanotify_event_metadata *m = (struct fanotify_event_metadata *)e;

				if (m->fd >= 0)
					close(m->fd);
				e += m->event_len;
			} else {
				struct inotify_event *ie = (struct inotify_event *)e;

				e += sizeof(*ie) + ie->len;
			}
			events++;
		}
	}
	if (n < 0 && errno != EAGAIN && errno != EINTR)
		TFAIL("reading %s events: %s", fan ? "fanotify" : "inotify", strerror(errno));
	return events;
}

static int body_inotify(void)
{
	long round, i, events;
	char p[256];
	int fd = -1, nfd, fan = 0, wfd;

	/* A file of this task alone, on tmpfs: the group is what is charged. */
	fpath(p, sizeof(p), "tmp", cur.worker, 1000 + cur.idx);
	wfd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (wfd < 0)
		TFAIL("open %s: %s", p, strerror(errno));
	close(wfd);
	for (round = 0;; round++) {
		if (round % 32 == 0) {
			nfd = notify_group(p, &fan);
			if (fd >= 0)
				close(fd);
			fd = nfd;
		}
		for (i = 0; i < 1 + (long)rnd(32); i++) {
			wfd = open(p, O_WRONLY | O_APPEND);
			if (wfd < 0 || write(wfd, chunk, 64 + rnd(4096)) < 0)
				TFAIL("appending to %s: %s", p, strerror(errno));
			close(wfd);
		}
		events = notify_drain(fd, fan);
		if (!events)
			TFAIL("no %s event for %ld writes to %s", fan ? "fanotify" : "inotify", i, p);
		COUNT(notify_events, events);
		if (round % 8 == 7 && truncate(p, 0))
			TFAIL("truncating %s: %s", p, strerror(errno));
		pause_round();
	}
	return 0;
}

static int body_swap(void)
{
	long len = MB(NUM("swap_mb")), pages = len / PAGE, round;
	uint64_t salt = rnd64(), ssalt = rnd64();
	char *m = map_anon(len), *s;
	int fd = memfd_create("stress-swap", 0);

	if (fd < 0 || ftruncate(fd, len))
		TFAIL("a memfd of %ld KiB: %s", len >> 10, strerror(errno));
	s = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s == MAP_FAILED)
		TFAIL("mmap of a memfd of %ld KiB: %s", len >> 10, strerror(errno));
	for (round = 0;; round++) {
		/* Swapped back in (from the previous round's page-out) and checked. */
		verify_fill(m, pages, salt, round, "swapped anon");
		verify_fill(s, pages, ssalt, round, "swapped shmem");
		advise(m, len, MADV_PAGEOUT, "MADV_PAGEOUT");
		advise(s, len, MADV_PAGEOUT, "MADV_PAGEOUT");
		COUNT(swap_rounds, 1);
		/* Long enough, at times, for the swap records of a removed cgroup to move. */
		sleep_ms(100 + rnd(2500));
	}
	return 0;
}

static int (*const bodies[NBODIES])(void) = {
	body_write, body_read, body_mmap, body_anon, body_shmem, body_thp, body_migrate, body_mlock,
	body_sock, body_inotify, body_swap,
};

static int task_main(long arg)
{
	(void)arg;
	rng_seed(cur.worker << 20 | cur.idx, cur.gen);
	memset(chunk, 'x', sizeof(chunk));
	return bodies[cur.body]();
}

/* ---- cgroups and processes */

static int cg_set(const char *cg, const char *file, const char *fmt, ...)
{
	char p[300], v[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(v, sizeof(v), fmt, ap);
	va_end(ap);
	snprintf(p, sizeof(p), "%s/%s", cg, file);
	if (write_str(p, v)) {
		fail("echo %s > %s: %s", v, p, strerror(errno));
		return -1;
	}
	return 0;
}

/* rmdir cg; count says whether it is one of the cgroups_created. */
static void remove_cgroup(const char *cg, int count)
{
	int i;

	/* The tasks are reaped, but the cgroup may still be busy for a moment. */
	for (i = 0; rmdir(cg); i++) {
		if (errno != EBUSY || i == 1000) {
			fail("rmdir %s: %s (after %d tries)", cg, strerror(errno), i + 1);
			return;
		}
		sleep_ms(10);
	}
	if (count)
		COUNT(removed, 1);
}

static pid_t wait_pid(pid_t pid, int *status, int flags)
{
	pid_t r;

	while ((r = waitpid(pid, status, flags)) < 0 && errno == EINTR)
		;
	return r;
}

/* Reap a task, killing it if it is still running: any other end is reported. */
static void end_task(pid_t pid, int body, const char *cg)
{
	static long oom_notes;
	int status = 0, ours = 0;
	pid_t r = wait_pid(pid, &status, WNOHANG);

	if (r == 0) {
		kill(pid, SIGKILL);
		ours = 1;
		r = wait_pid(pid, &status, 0);
	}
	if (r != pid) {
		fail("waitpid for the %s task %d of %s: %s", body_names[body], pid, cg, strerror(errno));
		return;
	}
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
		/* Nobody else sends SIGKILL here: the OOM killer, at the job's or the parent's limit. */
		if (!ours) {
			COUNT(job_ooms, 1);
			if (++oom_notes <= 5)
				printf("stress: the %s task %d of %s was OOM-killed\n", body_names[body], pid, cg);
		}
		return;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 1)
		return; /* it said why */
	if (WIFEXITED(status))
		fail("the %s task %d of %s exited with status %d", body_names[body], pid, cg, WEXITSTATUS(status));
	else
		fail("the %s task %d of %s died of signal %d (%s)", body_names[body], pid, cg,
		     WTERMSIG(status), strsignal(WTERMSIG(status)));
}

struct kept {
	pid_t pid;
	int body;
	long until;
	char cg[128];
};

static char keeper[160];

static void expire_kept(struct kept *kept, int *nkept, int all)
{
	int i;

	for (i = 0; i < *nkept;) {
		if (all || now_ms() >= kept[i].until) {
			end_task(kept[i].pid, kept[i].body, kept[i].cg);
			kept[i] = kept[--*nkept];
		} else {
			i++;
		}
	}
}

/* Wait ms, ending kept tasks when they are due; stop early when told to. */
static void worker_wait(long ms, struct kept *kept, int *nkept)
{
	long end = now_ms() + ms;

	while (!sh->stop && now_ms() < end) {
		expire_kept(kept, nkept, 0);
		sleep_ms(100);
	}
}

static int worker_main(long w)
{
	long gen, keep = NUM("keep") < MAXKEEP ? NUM("keep") : MAXKEEP;
	long tasks = NUM("tasks") < MAXTASKS ? NUM("tasks") : MAXTASKS;
	long run_ms = NUM("run_ms");
	struct kept kept[MAXKEEP];
	pid_t pid[MAXTASKS];
	int body[MAXTASKS], moved[MAXTASKS], n, i, nkept = 0;
	char cg[128], num[32], p[300];

	rng_seed(w, -1);
	snprintf(p, sizeof(p), "%s/cgroup.procs", keeper);
	for (gen = 1; !sh->stop; gen++) {
		snprintf(cg, sizeof(cg), "%s/w%ld-%ld", STR("parent"), w, gen);
		if (mkdir(cg, 0755)) {
			fail("mkdir %s: %s", cg, strerror(errno));
			worker_wait(1000, kept, &nkept);
			continue;
		}
		COUNT(cgroups_created, 1);
		cg_set(cg, "memory.high", "%ldM", NUM("high_mb"));
		cg_set(cg, "memory.max", "%ldM", NUM("max_mb"));
		if (NUM("job_swap_mb"))
			cg_set(cg, "memory.swap.max", "%ldM", NUM("job_swap_mb"));
		n = 1 + rnd(tasks);
		for (i = 0; i < n; i++) {
			cur.worker = w;
			cur.gen = gen;
			cur.idx = i;
			cur.body = body[i] = mix[rnd(nmix)];
			snprintf(cur.cg, sizeof(cur.cg), "%s", cg);
			moved[i] = 0;
			pid[i] = spawn_in(cg, task_main, 0);
			if (pid[i] < 0)
				fail("starting a %s task in %s: %s", body_names[body[i]], cg, strerror(errno));
			else
				COUNT(tasks, 1);
		}
		worker_wait(run_ms / 4 + rnd(run_ms * 3 / 2 + 1), kept, &nkept);
		/* Some tasks move out, their memory stays charged to cg. */
		for (i = 0; i < n; i++) {
			if (pid[i] <= 0 || nkept >= keep || rnd(2))
				continue;
			snprintf(num, sizeof(num), "%d", pid[i]);
			if (write_str(p, num)) {
				if (errno != ESRCH)
					fail("moving the %s task %d from %s to %s: %s", body_names[body[i]],
					     pid[i], cg, keeper, strerror(errno));
				continue; /* end_task below says how it ended */
			}
			COUNT(moved, 1);
			moved[i] = 1;
			kept[nkept].pid = pid[i];
			kept[nkept].body = body[i];
			kept[nkept].until = now_ms() + 1000 + rnd(NUM("keep_ms") + 1);
			snprintf(kept[nkept].cg, sizeof(kept[nkept].cg), "%s", cg);
			nkept++;
		}
		/* The others die in the middle of their work; the cgroup goes at once. */
		for (i = 0; i < n; i++)
			if (pid[i] > 0 && !moved[i])
				end_task(pid[i], body[i], cg);
		remove_cgroup(cg, 1);
	}
	expire_kept(kept, &nkept, 1);
	return 0;
}

static int oom_holder(long mb)
{
	long len = MB(mb) / 4, i;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return 3;
	for (i = 0; i < len; i += PAGE)
		m[i] = 1;
	for (;;)
		pause();
}

static int oom_eater(long mb)
{
	long len = MB(mb) * 4, i;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return 3;
	for (i = 0; i < len; i += PAGE)
		m[i] = 1;
	return 0; /* the limit did not hold */
}

/* Wait up to ms for pid; 1 when it was SIGKILLed, 0 otherwise (said why). */
static int expect_oom_kill(pid_t pid, long ms, const char *who, const char *cg)
{
	long end = now_ms() + ms;
	int status;
	pid_t r;

	while ((r = wait_pid(pid, &status, WNOHANG)) == 0 && now_ms() < end)
		sleep_ms(50);
	if (r == 0) {
		fail("the %s in %s is still alive %ld s after the eater went beyond memory.max", who, cg, ms / 1000);
		kill(pid, SIGKILL);
		wait_pid(pid, &status, 0);
		return 0;
	}
	if (r != pid) {
		fail("waitpid for the %s in %s: %s", who, cg, strerror(errno));
		return 0;
	}
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		return 1;
	if (WIFEXITED(status))
		fail("the %s in %s was not OOM-killed: it exited with status %d", who, cg, WEXITSTATUS(status));
	else
		fail("the %s in %s died of signal %d, not an OOM kill", who, cg, WTERMSIG(status));
	return 0;
}

static int oom_main(long unused)
{
	long mb = NUM("oom_mb"), round, kills;
	char cg[128], p[300];
	pid_t holder, eater;
	int killed;

	(void)unused;
	rng_seed(1000, -2);
	for (round = 1;; round++) {
		long end = now_ms() + NUM("oom_ms") / 2 + rnd(NUM("oom_ms") + 1);

		while (!sh->stop && now_ms() < end)
			sleep_ms(100);
		if (sh->stop)
			break;
		snprintf(cg, sizeof(cg), "%s/oom-%ld", STR("parent"), round);
		if (mkdir(cg, 0755)) {
			fail("mkdir %s: %s", cg, strerror(errno));
			continue;
		}
		COUNT(cgroups_created, 1);
		if (cg_set(cg, "memory.max", "%ldM", mb) || cg_set(cg, "memory.swap.max", "0") ||
		    cg_set(cg, "memory.oom.group", "1")) {
			remove_cgroup(cg, 1);
			continue;
		}
		holder = spawn_in(cg, oom_holder, mb);
		if (holder < 0)
			fail("starting the holder in %s: %s", cg, strerror(errno));
		sleep_ms(200);
		eater = spawn_in(cg, oom_eater, mb);
		if (eater < 0)
			fail("starting the eater in %s: %s", cg, strerror(errno));
		killed = eater > 0 && expect_oom_kill(eater, 120000, "eater", cg);
		/* memory.oom.group: the whole cgroup goes with it. */
		if (holder > 0 && !expect_oom_kill(holder, 20000, "holder (memory.oom.group)", cg))
			killed = 0;
		snprintf(p, sizeof(p), "%s/memory.events", cg);
		kills = key_value(p, "oom_kill");
		if (killed && kills < 2)
			fail("%s: memory.events has oom_kill %lld after the OOM kill of its 2 tasks", cg,
			     (long long)kills);
		if (kills > 0)
			COUNT(oom_kills, kills);
		if (killed)
			COUNT(ooms, 1);
		remove_cgroup(cg, 1);
	}
	return 0;
}

/* A random cgroup below the parent (or the parent itself), in p. */
static int random_cgroup(char *p, size_t len)
{
	char names[64][64];
	struct dirent *d;
	int n = 0;
	DIR *dir = opendir(STR("parent"));

	if (!dir) {
		fail("opendir %s: %s", STR("parent"), strerror(errno));
		return -1;
	}
	while ((d = readdir(dir)) && n < 64)
		if (d->d_type == DT_DIR && d->d_name[0] != '.')
			snprintf(names[n++], sizeof(names[0]), "%.63s", d->d_name);
	closedir(dir);
	if (!n || rnd(8) == 0)
		snprintf(p, len, "%s", STR("parent"));
	else
		snprintf(p, len, "%s/%s", STR("parent"), names[rnd(n)]);
	return 0;
}

/* A file of a cgroup that may be removed meanwhile: ENOENT and ENODEV are fine. */
static int gone(int e)
{
	return e == ENOENT || e == ENODEV;
}

static void reclaim_random(void)
{
	static char buf[16 << 10];
	static const char *const stats[] = { "memory.stat", "memory.numa_stat", "memory.events", "cgroup.stat" };
	char cg[300], p[400], v[32];
	unsigned i;

	if (random_cgroup(cg, sizeof(cg)))
		return;
	snprintf(p, sizeof(p), "%s/memory.reclaim", cg);
	snprintf(v, sizeof(v), "%uM", 1 + rnd(8));
	if (write_str(p, v) == 0 || errno == EAGAIN)
		COUNT(reclaims, 1);
	else if (!gone(errno) && errno != EINTR)
		fail("echo %s > %s: %s", v, p, strerror(errno));
	for (i = 0; i < sizeof(stats) / sizeof(stats[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", cg, stats[i]);
		if (read_str(p, buf, sizeof(buf)) && !gone(errno))
			fail("reading %s: %s", p, strerror(errno));
	}
}

/* Is pid gone or on its way out (zombie, or PF_EXITING: its mm may be gone)? */
static int exiting(pid_t pid)
{
	char p[64], buf[512], state, *s;
	unsigned long flags;

	snprintf(p, sizeof(p), "/proc/%d/stat", pid);
	if (read_str(p, buf, sizeof(buf)) || !(s = strrchr(buf, ')')))
		return 1;
	if (sscanf(s + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) != 2)
		return 1;
	return state == 'Z' || state == 'X' || (flags & 0x4);
}

/* migrate_pages() of a random kept task: memory of removed cgroups moves. */
static void migrate_kept(void)
{
	static char buf[4096];
	unsigned long all = (1UL << nodes) - 1, to = 1UL << rnd(nodes);
	char p[300], *s;
	long pids[256];
	int n = 0;
	pid_t pid;

	snprintf(p, sizeof(p), "%s/cgroup.procs", keeper);
	if (read_str(p, buf, sizeof(buf))) {
		fail("reading %s: %s", p, strerror(errno));
		return;
	}
	for (s = buf; *s && n < 256; s++) {
		pids[n++] = strtol(s, &s, 10);
		if (!*s)
			break;
	}
	if (!n || !pids[0])
		return;
	pid = pids[rnd(n)];
	if (sys_migrate_pages(pid, &all, &to) >= 0)
		COUNT(migrate_calls, 1);
	else if (errno != ESRCH && !migrate_busy(errno) && !(errno == EINVAL && exiting(pid)))
		fail("migrate_pages of kept task %d to node mask %#lx: %s", pid, to, strerror(errno));
}

/* Sleep about ms (ms/2 to 3ms/2), or less if the run stops. */
static void nap(long ms)
{
	long end = now_ms() + ms / 2 + rnd(ms + 1);

	while (!sh->stop && now_ms() < end)
		sleep_ms(50);
}

/*
 * Page frame walkers: /proc/kpagecgroup (page_cgroup_ino(), which reads a
 * folio's memcg_data under RCU) and /proc/kpageflags over a window of
 * 16Ki frames, and page_owner where there is one, while migration,
 * reparenting and uncharging change and put what those walkers read.
 */
static void kpage_read(void)
{
	static const char *const files[] = { "/proc/kpagecgroup", "/proc/kpageflags" };
	static uint64_t buf[4096];
	long frames = mem_kb / 4 + mem_kb / 16, start = rnd(frames), left;
	unsigned i;
	off_t off;
	ssize_t n;
	int fd;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		fd = open(files[i], O_RDONLY);
		if (fd < 0) {
			fail("open %s: %s", files[i], strerror(errno));
			return;
		}
		off = start * 8;
		for (left = 16384; left > 0; left -= n / 8, off += n) {
			n = pread(fd, buf, left * 8 < (long)sizeof(buf) ? left * 8 : (long)sizeof(buf), off);
			if (n < 0)
				fail("reading %s at frame %ld: %s", files[i], (long)(off / 8), strerror(errno));
			if (n <= 0)
				break;
		}
		close(fd);
	}
	/*
	 * page_owner (the debug kernel boots with it on) prints the memcg of
	 * each page it reports: one read a page, from the frame the offset
	 * names.
	 */
	fd = open("/sys/kernel/debug/page_owner", O_RDONLY);
	if (fd >= 0) {
		static char rec[4096];

		if (lseek(fd, start, SEEK_SET) < 0)
			fail("lseek page_owner to %ld: %s", start, strerror(errno));
		for (left = 256; left > 0 && read(fd, rec, sizeof(rec)) > 0; left--)
			;
		close(fd);
	}
	COUNT(kpage_reads, 1);
}

/* The walker: kpage_read() every kpage_ms, apart from vm (slow on a debug kernel). */
static int walker_main(long ms)
{
	rng_seed(5000, -6);
	while (!sh->stop) {
		kpage_read();
		nap(ms);
	}
	return 0;
}

/*
 * Age or evict a random cgroup's generations through debugfs lru_gen: the
 * MGLRU windows that reparenting splices into move under it.  A cgroup
 * removed meanwhile, a dying one, or a window too small to evict from is
 * refused (ENOENT, EINVAL, ERANGE): not a failure.
 */
static void lrugen_random(void)
{
	const char *root = "/sys/fs/cgroup/";
	char cg[300];
	int r;

	if (random_cgroup(cg, sizeof(cg)) || strncmp(cg, root, strlen(root)))
		return;
	r = lru_gen_cmd(cg + strlen(root), rnd(2));
	if (!r)
		COUNT(lrugen_cmds, 1);
	else if (r != -ENOENT && r != -EINVAL && r != -ERANGE)
		fail("lru_gen command on %s: %s", cg, strerror(-r));
}

static int vm_main(long unused)
{
	long compact = NUM("compact_ms"), drop = NUM("drop_ms"), reclaim = NUM("reclaim_ms");
	long migrate = nodes > 1 ? NUM("migrate_ms") : 0, t0 = now_ms(), t;
	long lrugen = lru_gen_ok ? NUM("lrugen_ms") : 0;
	long next_compact = t0 + compact, next_drop = t0 + drop, next_reclaim = t0 + reclaim;
	long next_migrate = t0 + migrate, next_lrugen = t0 + lrugen;
	char v[4];

	(void)unused;
	rng_seed(2000, -3);
	while (!sh->stop) {
		t = now_ms();
		if (compact && t >= next_compact) {
			if (write_str("/proc/sys/vm/compact_memory", "1"))
				fail("echo 1 > /proc/sys/vm/compact_memory: %s", strerror(errno));
			else
				COUNT(compactions, 1);
			next_compact = now_ms() + compact / 2 + rnd(compact + 1);
		}
		if (drop && t >= next_drop) {
			snprintf(v, sizeof(v), "%u", 1 + rnd(3));
			if (write_str("/proc/sys/vm/drop_caches", v))
				fail("echo %s > /proc/sys/vm/drop_caches: %s", v, strerror(errno));
			else
				COUNT(drops, 1);
			next_drop = now_ms() + drop / 2 + rnd(drop + 1);
		}
		if (reclaim && t >= next_reclaim) {
			reclaim_random();
			next_reclaim = now_ms() + reclaim / 2 + rnd(reclaim + 1);
		}
		if (migrate && t >= next_migrate) {
			migrate_kept();
			next_migrate = now_ms() + migrate / 2 + rnd(migrate + 1);
		}
		if (lrugen && t >= next_lrugen) {
			lrugen_random();
			next_lrugen = now_ms() + lrugen / 2 + rnd(lrugen + 1);
		}
		sleep_ms(50);
	}
	return 0;
}

/* The task inside parent/toggle/t: anon memory touched, a file written and read. */
static int toggle_task(long mb)
{
	char *m = map_anon(MB(mb)), p[300];
	long round, i;
	int fd;

	snprintf(p, sizeof(p), "%s/data/toggle", STR("dir"));
	fd = open(p, O_RDWR | O_CREAT, 0644);
	if (!m || fd < 0) {
		fail("the toggle task cannot map or open %s: %s", p, strerror(errno));
		return 1;
	}
	for (round = 0; !sh->stop; round++) {
		for (i = 0; i < MB(mb) / PAGE; i++)
			m[i * PAGE] = (char)round;
		pwrite_all(fd, rnd(4) * MB(1), MB(1), p);
		if (pread(fd, chunk, sizeof(chunk), rnd(4) * MB(1)) < 0)
			fail("reading %s: %s", p, strerror(errno));
		sleep_ms(50);
	}
	close(fd);
	unlink(p);
	return 0;
}


/*
 * "-memory" in parent/toggle's subtree_control takes t's memcg offline (it
 * is reparented) while t's task goes on, charging toggle; "+memory" gives t
 * a new memcg.  On the default hierarchy toggle then has tasks charging its
 * own lists, which must not be taken for what a removed child left.
 */
static int toggle_main(long unused)
{
	char cg[300], t[320];
	long ms = NUM("toggle_ms");
	int status;
	pid_t pid;

	(void)unused;
	rng_seed(4000, -5);
	snprintf(cg, sizeof(cg), "%s/toggle", STR("parent"));
	snprintf(t, sizeof(t), "%s/t", cg);
	if (mkdir(cg, 0755) || cg_set(cg, "cgroup.subtree_control", "+memory") || mkdir(t, 0755)) {
		fail("cannot set up %s: %s", t, strerror(errno));
		return 1;
	}
	pid = spawn_in(t, toggle_task, 8);
	if (pid < 0)
		fail("cannot start a task in %s: %s", t, strerror(errno));
	while (pid > 0 && !sh->stop) {
		nap(ms);
		if (sh->stop)
			break;
		if (cg_set(cg, "cgroup.subtree_control", "-memory") == 0)
			COUNT(toggles, 1);
		nap(ms / 4);
		cg_set(cg, "cgroup.subtree_control", "+memory");
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		wait_pid(pid, &status, 0);
	}
	remove_cgroup(t, 0);
	remove_cgroup(cg, 0);
	return 0;
}

/*
 * The hog: random data, which zswap cannot compress, so it goes to the swap
 * disk; a quarter of it touched every half second, so it stays warm.
 */
static int hog_main(long mb)
{
	long len = MB(mb), pages = len / PAGE, i, q;
	uint64_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED) {
		printf("stress: the hog cannot map %ld MiB: %s\n", mb, strerror(errno));
		return 3;
	}
	rng_seed(3000, -4);
	for (i = 0; i < len / 8; i++)
		m[i] = rnd64();
	for (q = 0;; q = (q + 1) % 4) {
		for (i = q; i < pages; i += 4)
			fill_page((char *)m, i, rnd64(), q);
		sleep_ms(500);
	}
}

/* ---- setup, records and the main process */

static void setup_fail(const char *what, const char *p)
{
	fprintf(stderr, "stress: %s %s: %s\n", what, p, strerror(errno));
	exit(2);
}

static void setup(void)
{
	static const char *const dirs[] = { "", "data", "map", "tmp" };
	char p[300], opts[64], buf[256] = "";
	unsigned i;

	mem_kb = key_value("/proc/meminfo", "MemTotal");
	nodes = count_nodes();
	thp = access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0;
	if (access("/sys/kernel/debug/lru_gen", W_OK) == 0 &&
	    !read_str("/sys/kernel/mm/lru_gen/enabled", buf, sizeof(buf)))
		lru_gen_ok = strtol(buf, NULL, 0) & 1;
	hog_mb = mem_kb * NUM("hog_pct") / 100 / 1024;
	parent_mb = mem_kb * NUM("parent_pct") / 100 / 1024;
	mapfiles = NUM("files") / 2 > 0 ? NUM("files") / 2 : 1;
	shmfiles = mapfiles;
	if (!NUM("files"))
		knob("files")->num = 1;
	if (!NUM("workers"))
		knob("workers")->num = 1;
	if (mem_kb <= 0) {
		fprintf(stderr, "stress: no MemTotal in /proc/meminfo\n");
		exit(2);
	}
	if (nodes < NUM("need_nodes")) {
		fprintf(stderr, "stress: the guest has %d NUMA node(s), %ld needed: boot with numa=fake=%ld "
			"(stress.sh passes numa=fake=2) or run with need_nodes=1 (no migration between nodes)\n",
			nodes, NUM("need_nodes"), NUM("need_nodes"));
		exit(2);
	}
	memset(chunk, 'x', sizeof(chunk));
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", STR("dir"), dirs[i]);
		if (mkdir(p, 0755) && errno != EEXIST)
			setup_fail("mkdir", p);
	}
	snprintf(p, sizeof(p), "%s/tmp", STR("dir"));
	snprintf(opts, sizeof(opts), "size=40%%%s", thp ? ",huge=advise" : "");
	if (mount("stress-tmp", p, "tmpfs", 0, opts) && errno != EBUSY)
		setup_fail("mount tmpfs on", p);

	/* The parent, its limits, the keeper; cgroup writeback with io. */
	if (NUM("io") && read_str("/sys/fs/cgroup/cgroup.controllers", buf, sizeof(buf)) == 0 &&
	    strstr(buf, "io") && write_str("/sys/fs/cgroup/cgroup.subtree_control", "+io"))
		setup_fail("enabling io in", "/sys/fs/cgroup/cgroup.subtree_control");
	if (mkdir(STR("parent"), 0755) && errno != EEXIST)
		setup_fail("mkdir", STR("parent"));
	snprintf(p, sizeof(p), "%s/cgroup.subtree_control", STR("parent"));
	if (write_str(p, "+memory") || write_str(p, "+pids"))
		setup_fail("enabling memory and pids in", p);
	if (NUM("io") && strstr(buf, "io") && write_str(p, "+io"))
		setup_fail("enabling io in", p);
	snprintf(buf, sizeof(buf), "%ldM", parent_mb);
	snprintf(p, sizeof(p), "%s/memory.max", STR("parent"));
	if (write_str(p, buf))
		setup_fail("setting", p);
	snprintf(buf, sizeof(buf), "%ldM", NUM("parent_swap_mb"));
	snprintf(p, sizeof(p), "%s/memory.swap.max", STR("parent"));
	if (write_str(p, buf))
		setup_fail("setting", p);
	snprintf(keeper, sizeof(keeper), "%.140s/keeper", STR("parent"));
	if (mkdir(keeper, 0755) && errno != EEXIST)
		setup_fail("mkdir", keeper);
	if (hog_mb && mkdir(HOG_CG, 0755) && errno != EEXIST)
		setup_fail("mkdir", HOG_CG);
}

/* vmstat events whose growth the end record shows (and require checks). */
static const char *const vm_events[] = {
	"pswpin", "pswpout", "zswpin", "zswpout", "pgmigrate_success", "pgmigrate_fail",
	"thp_fault_alloc", "thp_fault_fallback", "thp_split_page", "thp_deferred_split_page",
	"thp_collapse_alloc", "compact_stall", "compact_success", "oom_kill", "nr_written",
	"workingset_refault_anon", "workingset_refault_file", "pgsteal_kswapd", "pgsteal_direct",
};
#define NVM (sizeof(vm_events) / sizeof(vm_events[0]))

static void vm_read(long long *v)
{
	unsigned i;

	for (i = 0; i < NVM; i++)
		v[i] = key_value("/proc/vmstat", vm_events[i]);
}

static long long vm_delta(const long long *a, const long long *b, const char *name)
{
	unsigned i;

	for (i = 0; i < NVM; i++)
		if (!strcmp(vm_events[i], name))
			return a[i] >= 0 && b[i] >= 0 ? b[i] - a[i] : 0;
	return 0;
}

static int out_fd = -1;

static void record(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vrecord(out_fd, "stress", fmt, ap);
	va_end(ap);
}

static long swap_used_kb(void)
{
	long long total = key_value("/proc/meminfo", "SwapTotal");
	long long free = key_value("/proc/meminfo", "SwapFree");

	return total >= 0 && free >= 0 ? total - free : -1;
}

static long t0, swap_peak_kb;

static void progress(int console)
{
	long t = now_ms() - t0, swap = swap_used_kb(), dying = dying_below(STR("parent"));

	if (swap > swap_peak_kb)
		swap_peak_kb = swap;
	record("@@ progress t_ms=%ld cgroups_created=%ld removed=%ld ooms=%ld dying=%ld moved=%ld tasks=%ld failures=%ld swap_kb=%ld",
	       t, GET(cgroups_created), GET(removed), GET(ooms), dying, GET(moved), GET(tasks),
	       GET(failures), swap);
	if (console)
		printf("stress: %ld s: %ld cgroups created, %ld removed, %ld tasks, %ld moved out, %ld OOM kills, %ld dying, swap %ld MiB, %ld failures\n",
		       t / 1000, GET(cgroups_created), GET(removed), GET(tasks), GET(moved), GET(ooms),
		       dying, swap / 1024, GET(failures));
}

static struct proc {
	const char *name;
	long arg;
	pid_t pid;
	int done;
} procs[64];
static int nprocs;

static void start_proc(const char *name, int (*fn)(long), long arg)
{
	struct proc *pr = &procs[nprocs++];

	pr->name = name;
	pr->arg = arg;
	pr->pid = fork();
	if (pr->pid == 0)
		_exit(fn(arg));
	if (pr->pid < 0) {
		fprintf(stderr, "stress: cannot start the %s process: %s\n", name, strerror(errno));
		exit(2);
	}
}

static pid_t hog_pid;

/* The hog only ends when killed: by us at the end, or by a global OOM before. */
static void check_hog(int flags)
{
	int status;

	if (hog_pid <= 0 || wait_pid(hog_pid, &status, flags) != hog_pid)
		return;
	hog_pid = 0;
	if (!sh->stop)
		fail("the hog ended before the end of the run (status %#x): %s", status,
		     WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ?
		     "a global OOM kill: hog_pct or parent_pct is too large for this guest" : "see above");
}

/* Reap the processes that ended; before the stop, or with a bad status, that is a failure. */
static int reap_procs(int flags)
{
	int i, status, alive = 0;

	for (i = 0; i < nprocs; i++) {
		struct proc *pr = &procs[i];

		if (pr->done)
			continue;
		if (wait_pid(pr->pid, &status, flags) != pr->pid) {
			alive++;
			continue;
		}
		pr->done = 1;
		if (!sh->stop)
			fail("the %s process %ld ended before the end of the run", pr->name, pr->arg);
		else if (!WIFEXITED(status) || WEXITSTATUS(status))
			fail("the %s process %ld ended badly (status %#x)", pr->name, pr->arg, status);
	}
	return alive;
}

static long read_kb(const char *cg, const char *file)
{
	char p[300], buf[64];

	snprintf(p, sizeof(p), "%s/%s", cg, file);
	if (read_str(p, buf, sizeof(buf)))
		return -1;
	return atoll(buf) / 1024;
}

/* Up to drain_secs for RCU and workqueues: the dying count of cg down to 0. */
static long drain_dying(const char *cg)
{
	long end = now_ms() + NUM("drain_secs") * 1000, v;

	while ((v = dying_below(cg)) > 0 && now_ms() < end)
		sleep_ms(500);
	return v;
}

/* The same for the memory charged to cg: down to kb KiB. */
static void drain_charge(const char *cg, long kb)
{
	long end = now_ms() + NUM("drain_secs") * 1000;

	while (read_kb(cg, "memory.current") > kb && now_ms() < end)
		sleep_ms(500);
}

static void remove_tree(const char *dir)
{
	char p[600];
	struct dirent *d;
	DIR *dd = opendir(dir);

	if (!dd) {
		fail("opendir %s: %s", dir, strerror(errno));
		return;
	}
	while ((d = readdir(dd)))
		if (d->d_name[0] != '.') {
			snprintf(p, sizeof(p), "%s/%s", dir, d->d_name);
			if (unlink(p))
				fail("unlink %s: %s", p, strerror(errno));
		}
	closedir(dd);
}

/* With require=1: each kind of stress must have happened, or the run proves nothing. */
static void require(const char *what, long long seen, int wanted)
{
	if (wanted && seen <= 0)
		fail("not exercised: %s (the run did not do what it is for; see the knobs)", what);
}

/* ---- the phases of a run, in order */

static struct end_figures {
	long stop_t, next_progress, dying_end, dying_drop, dying_root, mem_end_kb, swap_end_kb;
	long long vm0[NVM], vm1[NVM];
	char census[512];	/* " census_PIN=N ...": the census at dying_end */
} fig;

/*
 * The census module's totals by pin (census/memcg_census.c), as words
 * " census_dying=N census_dirty=N ..." in out; empty where it is not loaded.
 */
static void census_words(char *out, size_t len)
{
	char buf[512], *w, *save = NULL;
	size_t n = 0;

	*out = 0;
	if (read_str("/proc/memcg_census_totals", buf, sizeof(buf)) || strncmp(buf, "total ", 6))
		return;
	buf[strcspn(buf, "\n")] = 0;
	for (w = strtok_r(buf + 6, " ", &save); w && n < len; w = strtok_r(NULL, " ", &save))
		n += snprintf(out + n, len - n, " census_%s", w);
}

/* Parse, map the counters, set the guest up, open the port, say what runs. */
static void phase_setup(int argc, char **argv)
{
	char words[2048];

	setvbuf(stdout, NULL, _IOLBF, 0);
	knob_parse("stress", knobs, argc, argv);
	parse_mix();
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("stress: mmap");
		exit(2);
	}
	setup();
	out_fd = open_raw(STR("out"));
	if (out_fd < 0)
		setup_fail("cannot open", STR("out"));
	knob_words(words, sizeof(words));
	record("@@ run stress%s mem_kb=%ld nodes=%d thp=%d hog_mb=%ld parent_mb=%ld", words, mem_kb,
	       nodes, thp, hog_mb, parent_mb);
	printf("stress:%s mem_kb=%ld nodes=%d thp=%d hog_mb=%ld parent_mb=%ld\n", words, mem_kb, nodes,
	       thp, hog_mb, parent_mb);
	vm_read(fig.vm0);
}

/*
 * The audit of the parent's tree, as the oracle's (qemu-run/guest/scenario.c)
 * does at its checkpoints: no byte counter above RAM + swap (an underflow
 * shows so), and a cgroup's memory.current at least its children's sum.
 * While the run goes on charges race with the reads (a child read after
 * its parent may have grown meanwhile): the sum may then exceed the parent
 * by slack_kb; once every task is gone, by a page per CPU and cgroup.
 */
static long long audit_limit;

static long long audit_cg(const char *cg, long long slack, int depth)
{
	static const char *const stats[] = { "anon", "file", "shmem", "sock", "kernel" };
	char p[400], v[64];
	long long cur = -1, sum = 0, x;
	struct dirent *d;
	unsigned i;
	DIR *dir;

	snprintf(p, sizeof(p), "%s/memory.current", cg);
	if (!read_str(p, v, sizeof(v)))
		cur = strtoll(v, NULL, 10);
	else if (!gone(errno))
		fail("audit: reading %s: %s", p, strerror(errno));
	if (cur > audit_limit)
		fail("audit: %s memory.current %lld > RAM + swap %lld", cg, cur, audit_limit);
	snprintf(p, sizeof(p), "%s/memory.swap.current", cg);
	if (!read_str(p, v, sizeof(v)) && (x = strtoll(v, NULL, 10)) > audit_limit)
		fail("audit: %s memory.swap.current %lld > RAM + swap %lld", cg, x, audit_limit);
	snprintf(p, sizeof(p), "%s/memory.stat", cg);
	for (i = 0; i < sizeof(stats) / sizeof(stats[0]); i++)
		if ((x = key_value(p, stats[i])) > audit_limit)
			fail("audit: %s memory.stat %s %lld > RAM + swap %lld", cg, stats[i], x, audit_limit);
	dir = depth < 8 ? opendir(cg) : NULL;
	while (dir && (d = readdir(dir))) {
		if (d->d_type != DT_DIR || d->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", cg, d->d_name);
		x = audit_cg(p, slack, depth + 1);
		if (x > 0)
			sum += x;
	}
	if (dir)
		closedir(dir);
	if (cur >= 0 && sum > cur + slack)
		fail("audit: %s memory.current %lld < its children's sum %lld (slack %lld)", cg, cur, sum,
		     slack);
	return cur;
}

static void audit_tree(int quiet)
{
	long long slack = quiet ? 4096LL * 64 * sysconf(_SC_NPROCESSORS_ONLN) : MB(16);

	if (!audit_limit)
		audit_limit = (key_value("/proc/meminfo", "MemTotal") + key_value("/proc/meminfo", "SwapTotal")) *
			      1024;
	audit_cg(STR("parent"), slack, 0);
	COUNT(audits, 1);
}

/* Start the hog, the workers, the OOM sibling and vm; watch them for secs. */
static void phase_run(void)
{
	long run_ms = NUM("secs") * 1000, next_console = 60000, t, w;
	long audit = NUM("audit_ms"), next_audit = audit;

	t0 = now_ms();
	if (hog_mb) {
		hog_pid = spawn_in(HOG_CG, hog_main, hog_mb);
		if (hog_pid < 0)
			setup_fail("cannot start the hog in", HOG_CG);
	}
	for (w = 0; w < NUM("workers"); w++)
		start_proc("worker", worker_main, w);
	if (NUM("oom_ms"))
		start_proc("oom", oom_main, 0);
	start_proc("vm", vm_main, 0);
	if (NUM("toggle_ms"))
		start_proc("toggle", toggle_main, 0);
	if (NUM("kpage_ms"))
		start_proc("walker", walker_main, NUM("kpage_ms"));

	fig.next_progress = 0;
	for (;;) {
		t = now_ms() - t0;
		if (t >= fig.next_progress) {
			progress(t >= next_console);
			if (t >= next_console)
				next_console += 60000;
			fig.next_progress = t + NUM("progress_ms");
		}
		if (t >= run_ms)
			break;
		if (audit && t >= next_audit) {
			audit_tree(0);
			next_audit = t + audit;
		}
		reap_procs(WNOHANG);
		check_hog(WNOHANG);
		sleep_ms(100);
	}
}

/* The end: the workers finish their job, remove it and end their kept tasks. */
static void phase_stop(void)
{
	unsigned i;

	fig.stop_t = now_ms() - t0;
	printf("stress: %ld s done, stopping\n", fig.stop_t / 1000);
	check_hog(WNOHANG);
	sh->stop = 1;
	if (hog_pid > 0) {
		kill(hog_pid, SIGKILL);
		check_hog(0);
	}
	while (reap_procs(WNOHANG) && now_ms() - t0 < fig.stop_t + NUM("stop_secs") * 1000) {
		sleep_ms(200);
		if (now_ms() - t0 >= fig.next_progress) {
			progress(0);
			fig.next_progress = now_ms() - t0 + NUM("progress_ms");
		}
	}
	if (reap_procs(WNOHANG)) {
		fail("processes still running %ld s after the end; blocked tasks follow (sysrq w)", NUM("stop_secs"));
		write_str("/proc/sysrq-trigger", "w");
		for (i = 0; i < (unsigned)nprocs; i++)
			if (!procs[i].done)
				kill(procs[i].pid, SIGKILL);
		sleep_ms(5000);
		reap_procs(WNOHANG);
	}
}

/* Every cgroup goes; the dying count before and after drop_caches. */
static void phase_remove(void)
{
	struct dirent *d;
	char p[300];
	DIR *dir;

	remove_cgroup(keeper, 0);
	dir = opendir(STR("parent"));
	while (dir && (d = readdir(dir)))
		if (d->d_type == DT_DIR && d->d_name[0] != '.') {
			fail("cgroup %s/%s was left behind", STR("parent"), d->d_name);
			snprintf(p, sizeof(p), "%s/%s", STR("parent"), d->d_name);
			rmdir(p);
		}
	if (dir)
		closedir(dir);
	fig.dying_end = dying_below(STR("parent"));
	census_words(fig.census, sizeof(fig.census));
	sync();
	if (write_str("/proc/sys/vm/drop_caches", "3"))
		fail("echo 3 > /proc/sys/vm/drop_caches: %s", strerror(errno));
	fig.dying_drop = drain_dying(STR("parent"));
	printf("stress: all cgroups removed: %ld dying, %ld after drop_caches\n", fig.dying_end, fig.dying_drop);
}

/* Delete the data: the parent must get back what was charged to it. */
static void phase_leak(void)
{
	char p[300];

	snprintf(p, sizeof(p), "%s/data", STR("dir"));
	remove_tree(p);
	snprintf(p, sizeof(p), "%s/map", STR("dir"));
	remove_tree(p);
	snprintf(p, sizeof(p), "%s/tmp", STR("dir"));
	if (umount(p))
		fail("umount %s: %s", p, strerror(errno));
	sync();
	if (write_str("/proc/sys/vm/drop_caches", "3"))
		fail("echo 3 > /proc/sys/vm/drop_caches: %s", strerror(errno));
	drain_charge(STR("parent"), NUM("leak_kb"));
	fig.mem_end_kb = read_kb(STR("parent"), "memory.current");
	fig.swap_end_kb = read_kb(STR("parent"), "memory.swap.current");
	printf("stress: with its data deleted the parent has %ld KiB charged, %ld KiB of swap\n",
	       fig.mem_end_kb, fig.swap_end_kb);
	if (NUM("leak_kb") && (fig.mem_end_kb < 0 || fig.mem_end_kb > NUM("leak_kb")))
		fail("the parent keeps %ld KiB charged once every task, cgroup and file is gone (leak_kb=%ld)",
		     fig.mem_end_kb, NUM("leak_kb"));
	if (NUM("leak_kb") && (fig.swap_end_kb < 0 || fig.swap_end_kb > NUM("leak_kb")))
		fail("the parent keeps %ld KiB of swap charged once every task, cgroup and file is gone (leak_kb=%ld)",
		     fig.swap_end_kb, NUM("leak_kb"));
	remove_cgroup(STR("parent"), 0);
	if (hog_mb)
		remove_cgroup(HOG_CG, 0);
	/* The parent and the hog were just removed: their release is asynchronous (RCU, a work). */
	fig.dying_root = drain_dying("/sys/fs/cgroup");
}

/* With require=1: each kind of stress must have happened, or the run proves nothing. */
static void phase_require(void)
{
	long long *vm0 = fig.vm0, *vm1 = fig.vm1;
	long secs = NUM("secs");

	vm_read(fig.vm1);
	if (!NUM("require"))
		return;
	require("cgroups created and removed", GET(removed), 1);
	require("tasks kept alive past their cgroup's removal", GET(moved), NUM("keep") > 0);
	require("OOM kills in the sibling", GET(ooms), NUM("oom_ms") && secs * 1000 >= 2 * NUM("oom_ms"));
	require("compaction", GET(compactions), NUM("compact_ms") && secs * 1000 >= 2 * NUM("compact_ms"));
	require("drop_caches", GET(drops), NUM("drop_ms") && secs * 1000 >= 2 * NUM("drop_ms"));
	require("memory.reclaim", GET(reclaims), NUM("reclaim_ms") && secs * 1000 >= 2 * NUM("reclaim_ms"));
	require("swap-out (pswpout + zswpout)",
		vm_delta(vm0, vm1, "pswpout") + vm_delta(vm0, vm1, "zswpout"), 1);
	require("page migration between nodes (pgmigrate_success)", vm_delta(vm0, vm1, "pgmigrate_success"),
		nodes > 1 && in_mix(B_MIGRATE));
	require("THP faults (thp_fault_alloc)", vm_delta(vm0, vm1, "thp_fault_alloc"), thp && in_mix(B_THP));
	require("writeback (nr_written)", vm_delta(vm0, vm1, "nr_written"), in_mix(B_WRITE) || in_mix(B_MMAP));
	require("data through TCP sockets", GET(sock_kb), in_mix(B_SOCK));
	require("inotify and fanotify events", GET(notify_events), in_mix(B_INOTIFY));
	require("swap-in (pswpin + zswpin)", vm_delta(vm0, vm1, "pswpin") + vm_delta(vm0, vm1, "zswpin"),
		in_mix(B_SWAP));
	require("page frame walks (/proc/kpagecgroup)", GET(kpage_reads),
		NUM("kpage_ms") && secs * 1000 >= 2 * NUM("kpage_ms"));
	require("MGLRU aging and eviction (debugfs lru_gen)", GET(lrugen_cmds),
		lru_gen_ok && NUM("lrugen_ms") && secs * 1000 >= 4 * NUM("lrugen_ms"));
	require("memory taken out of subtree_control and back (toggle)", GET(toggles),
		NUM("toggle_ms") && secs * 1000 >= 3 * NUM("toggle_ms"));
}

/* The "@@ end" record with every counter and figure; the exit status. */
static int phase_end(void)
{
	int rc = GET(failures) ? 1 : 0, n = 0;
	char line[4096];
	unsigned i;

	for (i = 0; i < NCOUNTERS; i++)
		n += snprintf(line + n, sizeof(line) - n, " %s=%ld", counter_names[i], sh->c[i]);
	n += snprintf(line + n, sizeof(line) - n,
		      " dying_end=%ld dying_drop=%ld dying_root=%ld mem_end_kb=%ld swap_end_kb=%ld swap_peak_kb=%ld cleanup_ms=%ld",
		      fig.dying_end, fig.dying_drop, fig.dying_root, fig.mem_end_kb, fig.swap_end_kb, swap_peak_kb,
		      now_ms() - t0 - fig.stop_t);
	for (i = 0; i < NVM; i++)
		n += snprintf(line + n, sizeof(line) - n, " vm_%s=%lld", vm_events[i],
			      vm_delta(fig.vm0, fig.vm1, vm_events[i]));
	n += snprintf(line + n, sizeof(line) - n, "%s", fig.census);
	record("@@ end rc=%d t_ms=%ld%s", rc, fig.stop_t, line);
	printf("stress: end rc=%d t_ms=%ld%s\n", rc, fig.stop_t, line);
	if (rc)
		printf("stress: %ld operations failed (the \"stress: FAIL:\" lines above)\n", GET(failures));
	close(out_fd);
	return rc;
}

int main(int argc, char **argv)
{
	phase_setup(argc, argv);
	phase_run();
	phase_stop();
	audit_tree(1);
	phase_remove();
	phase_leak();
	phase_require();
	return phase_end();
}
