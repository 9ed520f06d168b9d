// SPDX-License-Identifier: GPL-2.0
/*
 * bench: what reparenting at offline costs, and what the memcg fast paths
 * cost, on the kernel it runs on.  Runs in the guest as the "bench" job;
 * qemu-run/jobs/bench.sh boots original and patched in turn with the same knobs
 * and compares them.
 *
 *   bench [key=value ...]        bench help   lists the knobs and defaults
 *
 * Part "offline", for each page cache size (sizes=, MiB) and rep: a fresh
 * parent P (parent/off-<size>-<rep>, memory enabled) and child C; a task
 * started in C writes a file of that size on the ext4 root, fsyncs it (clean
 * page cache, charged to C) and exits; with dead=N, N grandchildren of P
 * are made under C then, each writes one page of its own file and is
 * removed: N dead memcgs whose page cache C (or, on 6.12, they themselves
 * as dying memcgs) keeps, the objcgs C's offline has to walk.  Then C is
 * removed and we measure
 *   offline.charged_kb    C's memory.stat "file" just before rmdir (the
 *                         check that the page cache really is charged to C)
 *   offline.rmdir_us      the rmdir() syscall
 *   offline.mkdir_us      a mkdir issued right after it (another subtree)
 *   offline.stall_us      the longest a cgroup_mutex user waited within
 *                         probe_ms of the rmdir: a probe process on the
 *                         other CPU writes cgroup.max.descendants (takes
 *                         cgroup_mutex) every probe_us; css offline runs in
 *                         a workqueue under cgroup_mutex, so this is what
 *                         the offline work costs everybody else
 *   offline.stall_idle_us the same probe for probe_ms just before the
 *                         rmdir, with nothing going on: the noise floor
 *   offline.release_us    rmdir until P's nr_dying_subsys_memory is back to
 *                         its value before the rmdir (polled every poll_us),
 *                         i.e. until C's memory css is released; "value=none
 *                         limit=" when it is not within timeout_ms
 *   offline.parent_file_kb P's memory.stat "file" after the wait
 *   offline.kept_pct      that, in % of charged_kb: the page cache is still
 *                         charged to P (moved or still in the dying C), not
 *                         reclaimed
 *   offline.resident_pct  the file's pages still in memory (mincore)
 * then the file is deleted and P removed; the next rep waits until the
 * dying count under parent settles.  Every rep has its own P, so a child
 * left dying by an earlier rep (original) never moves this rep's baseline.
 * Before the rmdir, bench syncs and replaces the CPUs' memcg stocks
 * (prepare_rmdir()), so that only the page cache can keep C alive.
 *
 * Part "fast", fast_reps times each, every time in a fresh cgroup
 * (parent/fast-<test>-<rep>), the task pinned to CPU cpu=:
 *   fast.read_mibps      read a cached read_mb file read_passes times
 *   fast.fault_per_s     mmap anon_mb, write a byte per page, munmap; x anon_loops
 *   fast.charge_per_s    pwrite charge_kb to a file and ftruncate it to 0
 *                        (charge, then uncharge page cache); x charge_ops;
 *                        the file on /dev/ram1's file system (charge_on=ram)
 *                        or in dir (disk)
 *   fast.ctxsw_per_s     pipe ping-pong of two processes of the cgroup on
 *                        one CPU (round trips); x ctxsw_trips
 *   fast.squeeze_mibps   read a squeeze_file_mb file squeeze_passes times under
 *                        memory.max=squeeze_mb: charge, reclaim and uncharge
 *                        of page cache in a memcg that reclaims itself
 *   fast.tcp_mibps       a TCP stream over 127.0.0.1 between two processes
 *                        of the cgroup on one CPU: every socket buffer is
 *                        charged and uncharged (tcp_mb, x tcp_loops)
 *   fast.jobs_per_s      jobs in a row, each in a memcg of its own under the
 *                        test's cgroup: mkdir, a task that appends jobs_kb to
 *                        a shared log, writes a jobs_kb file and deletes the
 *                        file of the job 4 before it, exits; rmdir (what the
 *                        soak's churn does, timed: offline included); x jobs.
 *                        fast.jobs_gone_per_s: the same jobs, warm-up
 *                        included, from the first mkdir until the dying
 *                        count below the test's cgroup stops changing:
 *                        the release of the jobs' memcgs counts wherever
 *                        it happens.  The jobs run jobs_warmup times
 *                        untimed before the first rep.  jobs_sync=1 puts
 *                        a sync(2) either side of a timed rep's loop (out
 *                        of its time): insn-profile.sh's windows then
 *                        cut out the loop (insn_profile.py --jobs-sync).
 *                        On a file system on /dev/ram1 (jobs_on=ram), whose
 *                        writeback is instructions: ext4 with its journal
 *                        (jobs_fs=ext4), or ext2 (no journal); or in dir (disk)
 *   fast.spin_mops       the control: a loop in user space, no syscalls,
 *                        no faults; the kernel plays no part in it, so its
 *                        spread and delta are those of the emulator and
 *                        the host, the noise the others must be read against
 *
 * Part "reclaim", reclaim of a parent after its children were removed, for
 * each LRU mode of lru= (gen: MGLRU, classic: the active/inactive lists;
 * /sys/kernel/mm/lru_gen/enabled is switched) and rep: a fresh parent
 * P (parent/rcl-<mode>-<rep>) with a live child H that reads hot_mb of
 * its own file twice, then rounds= times a child C that reads cold_mb of
 * another file twice under memory.max=cold_max_mb (so C reclaims and ages
 * its own LRU: under MGLRU its generations run ahead of P's), is removed,
 * H reads its file again, and memory.reclaim asks P for what C had
 * charged.  On 6.12 C stays dying with its own LRU, which P's reclaim
 * still walks; with the series C's lists were spliced into P's at
 * offline, MGLRU generations by index, so folios of a generation P does
 * not use yet are invisible until P ages: worse reclaim shows as cold
 * pages left, a hot sibling evicted in their place, or more scanning.  On
 * the last round (the earlier ones age P):
 *   reclaim.<mode>.dead_left_pct      C's pages still in memory after it, in % of
 *                                     those in memory before it (mincore)
 *   reclaim.<mode>.hot_left_pct       H's file still in memory after it
 *   reclaim.<mode>.refault_pct        H's workingset_refault_file while it
 *                                     reads its file once more, in % of its pages
 *   reclaim.<mode>.scan_per_reclaim   P's pgscan / pgsteal over the reclaim
 *   reclaim.<mode>.reclaimed_pct      P's pgsteal over it, in % of what was asked
 *   reclaim.<mode>.reclaim_us         the memory.reclaim write
 * param is cold_mb (KiB).  Then the files go and P is removed.
 *
 * Part "stressng", stress-ng's stressors (stressors=, default switch, pipe,
 * sock and fork: the LKP stress-ng tests that per-node objcg work in
 * mainline regressed, stress-ng.switch by 67.7%, when the per-CPU obj_stock
 * caching one objcg was drained by cross-node ping-pong), stressng_reps
 * times each, the order shuffled per rep from seed=: every run in a fresh
 * cgroup (parent/sng-<stressor>-<rep>, the memory controller on, as the
 * parent enables it), the task not pinned (bench itself is on cpu=; its
 * child takes every CPU back, so that on a NODES=2 boot, boot.sh, the
 * stressor's tasks run on both nodes), which execs
 *   /bin/stress-ng --<stressor> <instances> --timeout <stressng_secs>s
 *       --metrics-brief --yaml /tmp/... --temp-path /tmp
 * (stress-ng 0.15, Debian's, guest/image.sh copies it and its libraries;
 * its own output goes to a log in /tmp, shown on the console only when it
 * fails), waits, and reads the stressor's rate from the YAML:
 *   stressng.<stressor>_ops_per_s  bogo-ops-per-second-real-time: bogo ops
 *                                  of all instances per second of the run
 *                                  (guest seconds: under CLOCK=icount a
 *                                  count of instructions, so the rate is
 *                                  an instruction cost, host load aside)
 * param is the instances (stressng_instances, 0: the online CPUs), '-' in
 * a stressor's name becomes '_' in the metric.  A stressor that exits
 * non-zero, gives no rate or outlives 2 x stressng_secs + 60 s (then its
 * process group is killed) records value=none limit=0 and fails the run.
 *
 * Records go to out=/dev/ttyS2 (samples.log) as qemu-run/records/RECORDS.md says:
 * "@@ run bench <knobs>", one "@@ result metric= param= rep= value= unit="
 * per measurement, "@@ progress", "@@ end rc=".  They are written, and the
 * port drained, between measurements, never during one.  The order of the
 * sizes, of the fast tests and of the stressors is shuffled per rep from
 * seed=, the same on every kernel.
 *
 * Exit status: 0; 1 when a measurement failed or a check did not hold
 * (the page cache not charged to C); 2 on bad arguments or setup failure.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "tool.h"

static struct knob knobs[] = {
	{ "parts", K_STR, 0, "offline,fast", "what to run: offline, fast, reclaim, stressng" },
	{ "sizes", K_STR, 0, "1,4,16,64,256,512", "offline: page cache sizes of the child, MiB" },
	{ "reps", K_NUM, 3, NULL, "offline: reps per size" },
	{ "dead", K_NUM, 0, NULL, "offline: grandchildren made, given a page of page cache each and removed in C first" },
	{ "timeout_ms", K_NUM, 5000, NULL, "offline: wait at most this long for the css release" },
	{ "poll_us", K_NUM, 150, NULL, "offline: poll nr_dying_subsys_memory this often" },
	{ "irqsoff", K_NUM, 0, NULL, "offline: 1 = the irqs-off sections of memcg offline, traced (a kernel that make bench-irqsoff built)" },
	{ "probe_ms", K_NUM, 1000, NULL, "offline: the cgroup_mutex probe runs this long after each rmdir" },
	{ "probe_us", K_NUM, 500, NULL, "offline: pause between two probe operations" },
	{ "fast_reps", K_NUM, 5, NULL, "fast: reps of each test" },
	{ "fast_tests", K_STR, 0, "read,fault,charge,ctxsw,spin,filefault,truncate,fork,tcp,squeeze,jobs", "fast: the tests to run" },
	{ "read_mb", K_NUM, 64, NULL, "fast.read: file size, MiB" },
	{ "read_passes", K_NUM, 16, NULL, "fast.read: passes over it per rep" },
	{ "anon_mb", K_NUM, 64, NULL, "fast.fault: anon memory per loop, MiB" },
	{ "anon_loops", K_NUM, 16, NULL, "fast.fault: loops per rep" },
	{ "charge_kb", K_NUM, 64, NULL, "fast.charge: KiB written per operation" },
	{ "charge_on", K_STR, 0, "ram", "fast.charge: ram, a file on fast.jobs's file system on /dev/ram1 (see jobs_fs), or disk, a file in dir (the ext4 root, whose journal commits wait for emulated disk I/O)" },
	{ "charge_ops", K_NUM, 8000, NULL, "fast.charge: operations per rep" },
	{ "ctxsw_trips", K_NUM, 40000, NULL, "fast.ctxsw: round trips per rep" },
	{ "spin_m", K_NUM, 200, NULL, "fast.spin (the control): millions of loop iterations per rep" },
	{ "mapped_mb", K_NUM, 64, NULL, "fast.filefault: cached file mapped and read, MiB" },
	{ "mapped_loops", K_NUM, 16, NULL, "fast.filefault: loops per rep" },
	{ "truncate_mb", K_NUM, 64, NULL, "fast.truncate: file written then truncated, MiB" },
	{ "truncate_dir", K_STR, 0, "/tmp", "fast.truncate: where the file is (the guest's /tmp is tmpfs)" },
	/* 16: with 4, the change had a 95% interval up to 1.5 points wide */
	{ "truncate_loops", K_NUM, 16, NULL, "fast.truncate: loops per rep" },
	{ "fork_mb", K_NUM, 64, NULL, "fast.fork: anon memory of the task that forks, MiB" },
	{ "forks", K_NUM, 200, NULL, "fast.fork: forks and exits per rep" },
	{ "tcp_mb", K_NUM, 64, NULL, "fast.tcp: MiB sent over 127.0.0.1 per loop" },
	/* 16: with 4, the change had a 95% interval 0.8 to 1.3 points wide */
	{ "tcp_loops", K_NUM, 16, NULL, "fast.tcp: loops per rep" },
	{ "squeeze_mb", K_NUM, 16, NULL, "fast.squeeze: memory.max of the cgroup, MiB" },
	{ "squeeze_file_mb", K_NUM, 64, NULL, "fast.squeeze: file read under it, MiB" },
	{ "squeeze_passes", K_NUM, 4, NULL, "fast.squeeze: passes over the file per rep" },
	{ "jobs", K_NUM, 400, NULL, "fast.jobs: jobs per rep" },
	{ "jobs_kb", K_NUM, 16, NULL, "fast.jobs: KiB each job appends to the log and writes to its file" },
	{ "jobs_on", K_STR, 0, "ram", "fast.jobs: ram, a filesystem made on /dev/ram1 (brd: writeback is instructions), or disk, dir (emulated disk I/O)" },
	{ "jobs_warmup", K_NUM, 1, NULL, "fast.jobs: untimed runs of the jobs before the first rep (see part_fast())" },
	{ "jobs_sync", K_NUM, 0, NULL, "fast.jobs: 1 calls sync(2) just before a timed rep's jobs and just after them, out of the timing, so that insn-profile.sh's EVERY_SYNC windows cut out the timed loop (reports/insn_profile.py windows --jobs-sync)" },
	{ "jobs_fs", K_STR, 0, "ext4", "fast.jobs with jobs_on=ram: ext4 (with a journal, from the guest's /jobs-ext4.img.gz) or ext2 (no journal: see ram_fs())" },
	{ "squeeze_on", K_STR, 0, "ram", "fast.squeeze: ram, the page cache of /dev/ram0 (brd: instructions), or disk, a file in dir (emulated disk I/O)" },
	{ "lru", K_STR, 0, "gen,classic", "reclaim: LRU modes to run, gen (MGLRU) and/or classic (/sys/kernel/mm/lru_gen/enabled)" },
	{ "reclaim_reps", K_NUM, 3, NULL, "reclaim: reps per LRU mode" },
	{ "rounds", K_NUM, 3, NULL, "reclaim: children aged, removed and reclaimed in turn under one parent; the last is measured" },
	{ "cold_mb", K_NUM, 64, NULL, "reclaim: file each removed child read twice, MiB" },
	{ "cold_max_mb", K_NUM, 16, NULL, "reclaim: memory.max of that child while it reads (it reclaims and ages itself)" },
	{ "hot_mb", K_NUM, 32, NULL, "reclaim: the live sibling's working set, a file it reads again and again, MiB" },
	{ "stressors", K_STR, 0, "switch,pipe,sock,fork", "stressng: stress-ng stressors to run, each as --NAME (any of 'stress-ng --stressors')" },
	{ "stressng_secs", K_NUM, 5, NULL, "stressng: --timeout of each run, guest seconds (instructions under CLOCK=icount)" },
	{ "stressng_reps", K_NUM, 3, NULL, "stressng: reps of each stressor" },
	{ "stressng_instances", K_NUM, 0, NULL, "stressng: instances of each stressor (--NAME N); 0: the online CPUs" },
	{ "cpu", K_NUM, 1, NULL, "CPU for the fast paths (the probe takes the other one)" },
	{ "seed", K_NUM, 1, NULL, "seed of the order of sizes and tests in each rep" },
	{ "tag", K_STR, 0, "-", "a label copied into \"@@ run\" (bench.sh: the batch)" },
	{ "parent", K_STR, 0, "/sys/fs/cgroup/bench", "the cgroup everything runs under" },
	{ "probe_cg", K_STR, 0, "/sys/fs/cgroup/bench-probe", "the probe's cgroup (no memory controller below it)" },
	{ "nudge_cg", K_STR, 0, "/sys/fs/cgroup/bench-nudge", "where the charges that replace the CPUs' memcg stocks come from" },
	{ "dir", K_STR, 0, "/bench-data", "the working directory, on the ext4 root" },
	{ "out", K_STR, 0, "/dev/ttyS2", "where the records go" },
	{ NULL, 0, 0, NULL, NULL },
};

/* A measured task that hangs is killed (and counted as failed), not left to the boot's deadline. */
#define CHILD_SECS 600

static long failures;

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("bench: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	failures++;
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static int ncpus = 1;

/* ---- records: buffered, written out (and the port drained) between measurements */

static int out_fd = -1;
static char rbuf[64 << 10];
static size_t rlen;
static long nresults;
static long long t_start;

static void record(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(rbuf + rlen, sizeof(rbuf) - rlen - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(rbuf) - rlen - 1) {
		fprintf(stderr, "bench: record buffer full\n");
		exit(2);
	}
	rlen += n;
	rbuf[rlen++] = '\n';
}

static void flush_records(void)
{
	size_t off = 0;

	while (off < rlen) {
		ssize_t n = write(out_fd, rbuf + off, rlen - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("bench: writing records");
			exit(2);
		}
		off += n;
	}
	rlen = 0;
	/* The emulated UART costs guest CPU until it is empty. */
	tcdrain(out_fd);
	fflush(stdout);
	tcdrain(1);
}

static void result(const char *metric, long param, long rep, double value, const char *unit)
{
	record("@@ result metric=%s param=%ld rep=%ld value=%.6g unit=%s", metric, param, rep, value, unit);
	nresults++;
}

/* A value that never came: the event did not happen within limit (same unit). */
static void result_none(const char *metric, long param, long rep, double limit, const char *unit)
{
	record("@@ result metric=%s param=%ld rep=%ld value=none unit=%s limit=%.6g",
	       metric, param, rep, unit, limit);
	nresults++;
}

/* ---- small helpers */

static char chunk[1 << 20];

static long long cg_key(const char *cg, const char *file, const char *key)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", cg, file);
	return key_value(p, key);
}

/* Write value to cg's file; -1 with errno (EAGAIN from a short memory.reclaim). */
static int cg_write_knob(const char *cg, const char *file, const char *value)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", cg, file);
	return write_str(p, value);
}

/* nr_dying_subsys_memory from an open cgroup.stat, re-read with pread. */
static long dying_fd(int fd)
{
	char buf[1024], *s;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return -1;
	buf[n] = 0;
	s = strstr(buf, "nr_dying_subsys_memory ");
	if (!s)
		s = strstr(buf, "nr_dying_descendants ");
	return s ? atol(strchr(s, ' ') + 1) : -1;
}

static int mkcg(const char *cg, int memory)
{
	char p[512];

	if (mkdir(cg, 0755) && errno != EEXIST)
		return -1;
	if (!memory)
		return 0;
	snprintf(p, sizeof(p), "%s/cgroup.subtree_control", cg);
	return write_str(p, "+memory");
}

static int rmcg(const char *cg)
{
	int i;

	for (i = 0; rmdir(cg) && i < 200; i++) {
		if (errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return -1;
		sleep_ms(10);
	}
	return i < 200 ? 0 : -1;
}

/* Wait until the dying count under parent has not changed for 200 ms (at most 3 s). */
static void settle(void)
{
	long last = dying_below(STR("parent")), v;
	long long t0 = now_ns(), still = t0;

	while (now_ns() - t0 < 3000000000LL) {
		sleep_ms(10);
		v = dying_below(STR("parent"));
		if (v != last) {
			last = v;
			still = now_ns();
		} else if (now_ns() - still >= 200000000LL) {
			return;
		}
	}
}

/* The order of each rep depends on seed and rep only (tool.h's xorshift64*). */
static void shuffle(int *v, int n, long rep)
{
	int i, j, t;

	rng_set(((uint64_t)NUM("seed") << 32 ^ (uint64_t)rep) * 0x9e3779b97f4a7c15ULL + 1);
	for (i = n - 1; i > 0; i--) {
		j = rnd(i + 1);
		t = v[i];
		v[i] = v[j];
		v[j] = t;
	}
}

/* A file of bytes written and fsynced, from chunk (tool.h). */
static int write_synced(const char *p, long bytes)
{
	return write_file(p, O_TRUNC, bytes, 1, chunk, sizeof(chunk));
}

/* A clean file of mb MiB that is not in the page cache (fsynced, then dropped). */
static int write_uncached(const char *p, long mb)
{
	int fd;

	if (write_synced(p, mb << 20))
		return -1;
	fd = open(p, O_RDONLY);
	if (fd < 0)
		return -1;
	errno = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	return errno ? -1 : 0;
}

/*
 * Read the first len bytes of fd (all of it when len is 0) passes times;
 * the bytes read, -1 when a read fails.
 */
static long long read_passes(int fd, long passes, long long len)
{
	long long got = 0;
	size_t want;
	ssize_t n;
	off_t off;
	long pass;

	for (pass = 0; pass < passes; pass++) {
		for (off = 0;; off += n) {
			want = sizeof(chunk);
			if (len && (long long)want > len - off)
				want = len - off;
			if (!want)
				break;
			n = pread(fd, chunk, want, off);
			if (n <= 0)
				break;
			got += n;
		}
		if (n < 0)
			return -1;
	}
	return got;
}

/* Percent of the file's pages in memory. */
static double resident_pct(const char *p)
{
	struct stat st;
	unsigned char *vec;
	long pages, i, in = 0, psz = sysconf(_SC_PAGESIZE);
	void *m;
	int fd = open(p, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) || st.st_size == 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	m = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -1;
	pages = (st.st_size + psz - 1) / psz;
	vec = malloc(pages);
	if (vec && mincore(m, st.st_size, vec) == 0)
		for (i = 0; i < pages; i++)
			in += vec[i] & 1;
	else
		in = -1;
	free(vec);
	munmap(m, st.st_size);
	return in < 0 ? -1 : 100.0 * in / pages;
}

/*
 * Before the rmdir, take away what would pin C for reasons other than its
 * page cache, as a busy machine would (the selftests' nudge()):
 * - sync: an inode with dirty metadata keeps its cgroup writeback (which
 *   holds a reference on C's memory css) from being switched to the
 *   parent by the cleanup that runs at offline;
 * - a CPU's memcg stock keeps a reference on the last memcg that charged
 *   there, even with no pages left in it, and drain_all_stock() at offline
 *   skips such stocks: a charge from another cgroup on every CPU replaces
 *   them.
 */
static int nudge_body(long arg)
{
	long psz = sysconf(_SC_PAGESIZE);
	int cpu;

	(void)arg;
	for (cpu = 0; cpu < ncpus && cpu < CPU_SETSIZE; cpu++) {
		char *m;

		pin(cpu);
		m = mmap(NULL, 4 * psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return 1;
		memset(m, 1, 4 * psz);
		munmap(m, 4 * psz);
	}
	return 0;
}

static int prepare_rmdir(void)
{
	int status = -1;
	pid_t pid;

	sync();
	pid = spawn_in(STR("nudge_cg"), nudge_body, 0);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return status ? -1 : 0;
}

/* ---- the cgroup_mutex probe: a process that writes cgroup.max.descendants */

struct probe {
	int cmd[2], res[2];
	pid_t pid;
};

struct probe_result {
	long long max_ns, sum_ns;
	long ops, errors;
};

static void probe_loop(struct probe *pr)
{
	char p[300], c;
	int fd;

	snprintf(p, sizeof(p), "%s/cgroup.max.descendants", STR("probe_cg"));
	fd = open(p, O_WRONLY);
	if (fd < 0) {
		fprintf(stderr, "bench: probe: open %s: %s\n", p, strerror(errno));
		_exit(2);
	}
	pin(ncpus > 1 ? (NUM("cpu") == 0 ? 1 : 0) : 0);
	while (read(pr->cmd[0], &c, 1) == 1) {
		struct probe_result r = { 0 };
		long long end = now_ns() + NUM("probe_ms") * 1000000LL, t, d;

		while ((t = now_ns()) < end) {
			if (write(fd, "max\n", 4) != 4)
				r.errors++;
			d = now_ns() - t;
			r.sum_ns += d;
			r.ops++;
			if (d > r.max_ns)
				r.max_ns = d;
			sleep_us(NUM("probe_us"));
		}
		if (write(pr->res[1], &r, sizeof(r)) != sizeof(r))
			_exit(1);
	}
	_exit(0);
}

static int probe_start(struct probe *pr)
{
	if (pipe(pr->cmd) || pipe(pr->res))
		return -1;
	pr->pid = fork();
	if (pr->pid < 0)
		return -1;
	if (pr->pid == 0) {
		close(pr->cmd[1]);
		close(pr->res[0]);
		probe_loop(pr);
	}
	close(pr->cmd[0]);
	close(pr->res[1]);
	return 0;
}

static void probe_stop(struct probe *pr)
{
	close(pr->cmd[1]);
	waitpid(pr->pid, NULL, 0);
	close(pr->res[0]);
}

/* ---- part offline */

static long offline_size_mb;
static char offline_file[300];

static int offline_writer(long arg)
{
	(void)arg;
	alarm(CHILD_SECS);
	return write_synced(offline_file, offline_size_mb << 20) ? 1 : 0;
}

static int dead_writer(long i)
{
	char p[320];

	snprintf(p, sizeof(p), "%s/dead-%ld", STR("dir"), i);
	return write_file(p, O_TRUNC, 4096, 0, chunk, sizeof(chunk)) ? 1 : 0;
}

/* dead=N: N memcgs below C, each charged one page of page cache, then removed. */
static int make_dead(const char *C)
{
	char D[360];
	int status = 0;
	long i;
	pid_t pid;

	for (i = 0; i < NUM("dead"); i++) {
		snprintf(D, sizeof(D), "%s/d%ld", C, i);
		if (mkcg(D, 0)) {
			fail("offline: cannot create %s: %s", D, strerror(errno));
			return -1;
		}
		pid = spawn_in(D, dead_writer, i);
		if (pid < 0 || waitpid(pid, &status, 0) != pid || status) {
			fail("offline: the writer in %s failed (status %d)", D, status);
			return -1;
		}
		if (rmcg(D)) {
			fail("offline: rmdir %s: %s", D, strerror(errno));
			return -1;
		}
	}
	return 0;
}

static void unlink_dead(void)
{
	char p[320];
	long i;

	for (i = 0; i < NUM("dead"); i++) {
		snprintf(p, sizeof(p), "%s/dead-%ld", STR("dir"), i);
		unlink(p);
	}
}

/*
 * irqsoff=1: every section with interrupts off from the rmdir to the
 * release, from the preemptirq trace events (irq_disable and irq_enable,
 * which fire on each transition; a kernel with TRACE_IRQFLAGS, as the
 * irqsoff tracer's config gives).  The sections that ended in memcg
 * offline (see in_offline(): objcg_lock held with interrupts off) give
 * offline.irqsoff_us, the longest of them; all sections but idle's give
 * offline.irqsoff_max_us, the longest anywhere (an interrupt's entry to its
 * softirqs, most often).  Under CLOCK=icount a microsecond is 250
 * instructions, whatever the host's load.
 */
#define TRACEFS "/sys/kernel/tracing"

static void irqsoff_start(void)
{
	static const char *const steps[][2] = {
		{ "tracing_on", "0" }, { "current_tracer", "nop" }, { "buffer_size_kb", "16384" },
		{ "events/preemptirq/irq_disable/enable", "1" }, { "events/preemptirq/irq_enable/enable", "1" },
	};
	char p[128];
	size_t i;

	if (!NUM("irqsoff"))
		return;
	if (access(TRACEFS "/tracing_on", F_OK) && mount("tracefs", TRACEFS, "tracefs", 0, NULL)) {
		fprintf(stderr, "bench: irqsoff=1: cannot mount tracefs on %s: %s\n", TRACEFS, strerror(errno));
		exit(2);
	}
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", TRACEFS, steps[i][0]);
		if (write_str(p, steps[i][1])) {
			fprintf(stderr, "bench: irqsoff=1: %s: %s (a kernel without the preemptirq events: boot one "
				"that make bench-irqsoff built)\n", p, strerror(errno));
			exit(2);
		}
	}
}

static void irqsoff_reset(void)
{
	int fd;

	if (!NUM("irqsoff"))
		return;
	fd = open(TRACEFS "/trace", O_WRONLY | O_TRUNC);	/* empties the buffers */
	if (fd < 0 || close(fd) || write_str(TRACEFS "/tracing_on", "1"))
		fail("offline: cannot start tracing: %s", strerror(errno));
}

/*
 * Whether an irq_enable event ended a section of memcg offline.  Its caller
 * is the function that enabled interrupts: spin_unlock_irq() is inlined, so
 * objcg_lock's section ends in memcg_reparent_objcgs() or the function it
 * was inlined into (memcg_offline_kmem() on 6.12, mem_cgroup_css_offline()
 * with the series).  The disable's caller is _raw_spin_lock_irq(), and its
 * parent is not known without frame pointers.
 */
static int in_offline(const char *line)
{
	static const char *const sites[] = {
		"caller=memcg_reparent_objcgs", "caller=memcg_offline_kmem", "caller=mem_cgroup_css_offline",
	};
	size_t i;

	for (i = 0; i < sizeof(sites) / sizeof(sites[0]); i++)
		if (strstr(line, sites[i]))
			return 1;
	return 0;
}

static void irqsoff_read(long size_kb, long rep)
{
	double open_at[64], ts, off_max = -1, all_max = 0, d;
	char line[512], *ev, all_site[80] = "?";
	int cpu, n_off = 0;
	long in_buf = -1, written = -1;
	FILE *f;

	if (!NUM("irqsoff"))
		return;
	if (write_str(TRACEFS "/tracing_on", "0")) {
		fail("offline: cannot stop tracing: %s", strerror(errno));
		return;
	}
	f = fopen(TRACEFS "/trace", "r");
	if (!f) {
		fail("offline: cannot read %s/trace: %s", TRACEFS, strerror(errno));
		return;
	}
	for (cpu = 0; cpu < 64; cpu++)
		open_at[cpu] = -1;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#') {
			sscanf(line, "# entries-in-buffer/entries-written: %ld/%ld", &in_buf, &written);
			continue;
		}
		/* "  task-pid  [001] d....  12.345678: irq_disable: caller=... parent=..." */
		ev = strstr(line, ": irq_");
		if (!ev || sscanf(strchr(line, '[') ? strchr(line, '[') : "", "[%d]", &cpu) != 1 || cpu < 0 || cpu >= 64)
			continue;
		*ev = 0;
		ts = atof(strrchr(line, ' ') + 1);
		*ev = ':';
		if (!strncmp(ev, ": irq_disable:", 14)) {
			open_at[cpu] = ts;
		} else if (!strncmp(ev, ": irq_enable:", 13) && open_at[cpu] >= 0) {
			d = (ts - open_at[cpu]) * 1e6;
			open_at[cpu] = -1;
			/* idle: sti;hlt wakes with interrupts on, the event comes after the wait */
			if (strstr(ev, "caller=default_idle_call"))
				continue;
			if (d > all_max) {
				all_max = d;
				sscanf(ev, ": irq_enable: caller=%79[^+ ]", all_site);
			}
			if (in_offline(ev)) {
				n_off++;
				if (d > off_max)
					off_max = d;
			}
		}
	}
	fclose(f);
	if (in_buf < 0 || in_buf != written) {
		fail("offline %ld KiB rep %ld: the trace kept %ld of %ld events: raise buffer_size_kb",
		     size_kb, rep, in_buf, written);
		return;
	}
	if (!n_off) {
		fail("offline %ld KiB rep %ld: no irqs-off section of memcg offline in %ld events", size_kb, rep, in_buf);
		return;
	}
	result("offline.irqsoff_us", size_kb, rep, off_max, "us");
	result("offline.irqsoff_max_us", size_kb, rep, all_max, "us");
	printf("bench: offline %4ld MiB rep %ld: irqs off in memcg offline at most %.0f us (%d sections), "
	       "anywhere at most %.0f us (ended in %s; %ld events)\n", size_kb >> 10, rep, off_max, n_off, all_max,
	       all_site, in_buf);
}

static void offline_rep(struct probe *pr, long size_mb, long rep)
{
	char P[256], C[300], M[320];
	long size_kb = size_mb << 10, base, v;
	int fd = -1, status = 0, bad_read = 0;
	long long charged, p_file, t0, t1, t2, t3, limit_ns, released = -1;
	struct probe_result r, idle;
	double resident;
	pid_t pid;
	char c = 'g';

	snprintf(P, sizeof(P), "%s/off-%ld-%ld", STR("parent"), size_mb, rep);
	snprintf(C, sizeof(C), "%s/child", P);
	snprintf(M, sizeof(M), "%s/m-%ld-%ld", STR("probe_cg"), size_mb, rep);
	snprintf(offline_file, sizeof(offline_file), "%s/off-%ld-%ld", STR("dir"), size_mb, rep);
	offline_size_mb = size_mb;
	if (mkcg(P, 1) || mkcg(C, 0)) {
		fail("offline %ld MiB rep %ld: cannot create %s: %s", size_mb, rep, C, strerror(errno));
		return;
	}
	pid = spawn_in(C, offline_writer, 0);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || status) {
		fail("offline %ld MiB rep %ld: the writer in %s failed (status %d)", size_mb, rep, C, status);
		goto out;
	}
	charged = cg_key(C, "memory.stat", "file");
	if (charged < 0) {
		fail("offline: no \"file\" in %s/memory.stat", C);
		goto out;
	}
	/* C is empty now: its dead children (no task may sit in C once it has memory below it). */
	if (NUM("dead")) {
		if (mkcg(C, 1) || make_dead(C))
			goto out;
		/* Their own offline and release (or, on 6.12, none) over before the baseline. */
		settle();
	}
	/* A clean page cache of size_kb, charged to C. */
	if (charged < size_kb * 1024 * 9 / 10)
		fail("offline %ld MiB rep %ld: only %lld KiB charged to the child", size_mb, rep, charged >> 10);
	result("offline.charged_kb", size_kb, rep, charged >> 10, "KiB");

	snprintf(M, sizeof(M), "%s/cgroup.stat", P);
	fd = open(M, O_RDONLY);
	snprintf(M, sizeof(M), "%s/m-%ld-%ld", STR("probe_cg"), size_mb, rep);
	base = fd < 0 ? -1 : dying_fd(fd);
	if (base < 0) {
		fail("offline: cannot read %s/cgroup.stat", P);
		goto out;
	}
	limit_ns = NUM("timeout_ms") * 1000000LL;
	if (prepare_rmdir()) {
		fail("offline: sync and stock replacement failed");
		goto out;
	}

	/* The probe alone first: what cgroup_mutex users wait when nothing happens. */
	if (write(pr->cmd[1], &c, 1) != 1 || read(pr->res[0], &idle, sizeof(idle)) != sizeof(idle)) {
		fail("offline: the probe is gone");
		goto out;
	}
	/* The measured window: nothing else is written or printed in it. */
	if (write(pr->cmd[1], &c, 1) != 1) {
		fail("offline: the probe is gone");
		goto out;
	}
	irqsoff_reset();
	t0 = now_ns();
	if (rmdir(C)) {
		fail("offline %ld MiB rep %ld: rmdir %s: %s", size_mb, rep, C, strerror(errno));
		if (read(pr->res[0], &r, sizeof(r)) != sizeof(r))
			fail("offline: no answer from the probe");
		goto out;
	}
	t1 = now_ns();
	if (mkdir(M, 0755))
		fail("offline: mkdir %s: %s", M, strerror(errno));
	t2 = now_ns();
	for (;;) {
		t3 = now_ns();
		v = dying_fd(fd);
		if (v < 0) {
			bad_read = errno ? errno : EIO;
			break;
		}
		if (v <= base) {
			released = t3 - t0;
			break;
		}
		if (t3 - t0 >= limit_ns)
			break;
		sleep_us(NUM("poll_us"));
	}
	if (read(pr->res[0], &r, sizeof(r)) != sizeof(r)) {
		fail("offline: no answer from the probe");
		goto out;
	}
	irqsoff_read(size_kb, rep);
	p_file = cg_key(P, "memory.stat", "file");

	result("offline.rmdir_us", size_kb, rep, (t1 - t0) / 1e3, "us");
	result("offline.mkdir_us", size_kb, rep, (t2 - t1) / 1e3, "us");
	if (r.errors || idle.errors)
		fail("offline: %ld probe writes failed", r.errors + idle.errors);
	result("offline.stall_us", size_kb, rep, r.max_ns / 1e3, "us");
	result("offline.stall_idle_us", size_kb, rep, idle.max_ns / 1e3, "us");
	if (bad_read)
		fail("offline: cannot re-read %s/cgroup.stat: %s", P, strerror(bad_read));
	else if (released >= 0)
		result("offline.release_us", size_kb, rep, released / 1e3, "us");
	else
		result_none("offline.release_us", size_kb, rep, limit_ns / 1e3, "us");
	if (p_file >= 0) {
		result("offline.parent_file_kb", size_kb, rep, p_file >> 10, "KiB");
		if (charged > 0)
			result("offline.kept_pct", size_kb, rep, 100.0 * p_file / charged, "%");
	} else
		fail("offline: no \"file\" in %s/memory.stat", P);
	resident = resident_pct(offline_file);
	if (resident >= 0)
		result("offline.resident_pct", size_kb, rep, resident, "%");
	else
		fail("offline: mincore of %s failed: %s", offline_file, strerror(errno));
	printf("bench: offline %4ld MiB rep %ld: rmdir %.0f us, mkdir %.0f us, stall %.0f us (idle %.0f us, %ld probes), %s%.0f us, parent file %lld KiB\n",
	       size_mb, rep, (t1 - t0) / 1e3, (t2 - t1) / 1e3, r.max_ns / 1e3, idle.max_ns / 1e3, r.ops,
	       released >= 0 ? "released after " : "NOT released within ",
	       (released >= 0 ? released : limit_ns) / 1e3, p_file >> 10);
out:
	if (fd >= 0)
		close(fd);
	rmcg(M);
	unlink(offline_file);
	unlink_dead();
	rmcg(C);
	if (rmcg(P))
		fail("offline: rmdir %s: %s", P, strerror(errno));
}

static void part_offline(void)
{
	long sizes[64], n = 0, rep, i, done = 0;
	int order[64];
	char *s = strdup(STR("sizes")), *tok, *save = NULL, *end;
	struct probe pr;

	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == 64 || !(sizes[n] = strtol(tok, &end, 10)) || *end || sizes[n] < 0) {
			fprintf(stderr, "bench: sizes: a list of MiB > 0, not '%s'\n", STR("sizes"));
			exit(2);
		}
		n++;
	}
	free(s);
	if (mkcg(STR("probe_cg"), 0) || mkcg(STR("nudge_cg"), 0)) {
		fprintf(stderr, "bench: mkdir %s or %s: %s\n", STR("probe_cg"), STR("nudge_cg"), strerror(errno));
		exit(2);
	}
	irqsoff_start();
	if (probe_start(&pr)) {
		perror("bench: starting the probe");
		exit(2);
	}
	for (rep = 1; rep <= NUM("reps"); rep++) {
		for (i = 0; i < n; i++)
			order[i] = i;
		shuffle(order, n, rep);
		for (i = 0; i < n; i++) {
			sync();
			settle();
			offline_rep(&pr, sizes[order[i]], rep);
			record("@@ progress part=offline done=%ld of=%ld t_ms=%lld", ++done,
			       n * NUM("reps"), (now_ns() - t_start) / 1000000);
			flush_records();
		}
	}
	probe_stop(&pr);
}

/* ---- part fast: each test in a child of a fresh cgroup, pinned; the rate comes back on a pipe */

static int res_pipe[2];
static long fast_rep;
static char fast_cg[300];	/* the test's cgroup (fast.jobs makes its jobs there) */
static char jobs_dir[300];	/* where fast.jobs's jobs write */
static char charge_dir[300];	/* where fast.charge's file is */

/*
 * A fast test's child hands its rates to bench in one write (a pipe write
 * of up to PIPE_BUF bytes is whole or nothing): a child that fails between
 * two rates cannot leave the first for the next test to read.
 */
static void send_rates(const double *rates, int n)
{
	if (write(res_pipe[1], rates, n * sizeof(*rates)) != (ssize_t)(n * sizeof(*rates)))
		_exit(1);
}

static void send_rate(double rate)
{
	send_rates(&rate, 1);
}

static int fast_read(long arg)
{
	long bytes = NUM("read_mb") << 20, pass, got = 0;
	long long t = 0;
	char p[300];
	ssize_t n;
	int fd;

	(void)arg;
	alarm(CHILD_SECS);
	pin(NUM("cpu"));
	snprintf(p, sizeof(p), "%s/fast-read-%ld", STR("dir"), fast_rep);
	if (write_synced(p, bytes))
		return 1;
	fd = open(p, O_RDONLY);
	if (fd < 0)
		return 1;
	for (pass = 0; pass <= NUM("read_passes"); pass++) {
		if (pass == 1) {        /* pass 0 warms up */
			t = now_ns();
			got = 0;
		}
		while ((n = pread(fd, chunk, 128 << 10, got % bytes)) > 0) {
			got += n;
			if (got % bytes == 0)
				break;
		}
		if (n < 0)
			return 1;
	}
	t = now_ns() - t;
	close(fd);
	unlink(p);
	send_rate(got / 1048576.0 / (t / 1e9));
	return 0;
}

static int fast_fault(long arg)
{
	long len = NUM("anon_mb") << 20, psz = sysconf(_SC_PAGESIZE), loop, i, faults = 0;
	long long t = 0;
	char *m;

	(void)arg;
	alarm(CHILD_SECS);
	pin(NUM("cpu"));
	for (loop = 0; loop <= NUM("anon_loops"); loop++) {
		if (loop == 1) {        /* loop 0 warms up */
			t = now_ns();
			faults = 0;
		}
		m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return 1;
		for (i = 0; i < len; i += psz)
			m[i] = 1;
		faults += len / psz;
		munmap(m, len);
	}
	t = now_ns() - t;
	send_rate(faults / (t / 1e9));
	return 0;
}

static int fast_charge(long arg)
{
	long len = NUM("charge_kb") << 10, ops = NUM("charge_ops"), i;
	long long t = 0;
	char p[400];
	int fd;

	(void)arg;
	alarm(CHILD_SECS);
	pin(NUM("cpu"));
	snprintf(p, sizeof(p), "%s/fast-charge-%ld", charge_dir, fast_rep);
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || len > (long)sizeof(chunk))
		return 1;
	for (i = -ops / 10; i < ops; i++) {   /* a tenth to warm up */
		if (i == 0)
			t = now_ns();
		if (pwrite(fd, chunk, len, 0) != len || ftruncate(fd, 0))
			return 1;
	}
	t = now_ns() - t;
	close(fd);
	unlink(p);
	send_rate(ops / (t / 1e9));
	return 0;
}

static int fast_ctxsw(long arg)
{
	long trips = NUM("ctxsw_trips"), i;
	int a[2], b[2], status;
	long long t = 0;
	pid_t pid;
	char c = 0;

	(void)arg;
	alarm(CHILD_SECS);
	pin(NUM("cpu"));
	if (pipe(a) || pipe(b))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		close(a[1]);
		close(b[0]);
		while (read(a[0], &c, 1) == 1)
			if (write(b[1], &c, 1) != 1)
				_exit(1);
		_exit(0);
	}
	close(a[0]);
	close(b[1]);
	for (i = -trips / 10; i < trips; i++) {
		if (i == 0)
			t = now_ns();
		if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1)
			return 1;
	}
	t = now_ns() - t;
	close(a[1]);     /* the partner reads EOF and exits */
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	send_rate(trips / (t / 1e9));
	return 0;
}

static int fast_spin(long arg)
{
	unsigned long long x = 1, i, n = NUM("spin_m") * 1000000ULL;
	long long t;

	(void)arg;
	alarm(CHILD_SECS);
	pin(NUM("cpu"));
	t = now_ns();
	for (i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	t = now_ns() - t;
	/* x is used, or the loop would be optimised away. */
	send_rate(n / 1e6 / (t / 1e9) + (x == 42 ? 1e-9 : 0));
	return 0;
}

/*
 * File-backed faults: map a cached file read-only and read a byte of every
 * page, then unmap; the pages stay cached and charged, so this is the
 * fault and unmap paths of file pages (their NR_FILE_MAPPED updates find
 * the memcg of each folio).
 */
static int fast_filefault(long arg)
{
	long len = NUM("mapped_mb") << 20, psz = sysconf(_SC_PAGESIZE), loop, i, faults = 0;
	long long t = 0;
	volatile char sink = 0;
	char p[300];
	char *m;
	int fd;

	(void)arg;
	alarm(CHILD_SECS);
	pin(NUM("cpu"));
	snprintf(p, sizeof(p), "%s/fast-filefault-%ld", STR("dir"), fast_rep);
	if (write_synced(p, len))
		return 1;
	fd = open(p, O_RDONLY);
	if (fd < 0)
		return 1;
	for (loop = 0; loop <= NUM("mapped_loops"); loop++) {
		if (loop == 1) {        /* loop 0 warms up */
			t = now_ns();
			faults = 0;
		}
		m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED)
			return 1;
		for (i = 0; i < len; i += psz)
			sink += m[i];
		faults += len / psz;
		munmap(m, len);
	}
	t = now_ns() - t;
	close(fd);
	unlink(p);
	send_rate(faults / (t / 1e9));
	return 0;
}

/*
 * Truncate of a large cached file: write truncate_mb (page cache charged
 * to this cgroup, untimed), then time the ftruncate() to 0 that uncharges
 * it in batches.  The rate is MiB uncharged per second of truncate.  The
 * file is on tmpfs (truncate_dir): on the ext4 root the rate varied by 2%
 * from boot to boot and climbed 10% over a boot's first 4 GiB written and
 * truncated, on both kernels alike (docs/history.md).
 */
static int fast_truncate(long arg)
{
	long len = NUM("truncate_mb") << 20, loop, mib = 0;
	long long t = 0, t0;
	char p[300];
	int fd;

	(void)arg;
	alarm(CHILD_SECS);
	pin(NUM("cpu"));
	snprintf(p, sizeof(p), "%s/fast-truncate-%ld", STR("truncate_dir"), fast_rep);
	for (loop = 0; loop <= NUM("truncate_loops"); loop++) {
		if (write_synced(p, len))
			return 1;
		fd = open(p, O_RDWR);
		if (fd < 0)
			return 1;
		t0 = now_ns();
		if (ftruncate(fd, 0))
			return 1;
		if (loop > 0) {         /* loop 0 warms up */
			t += now_ns() - t0;
			mib += len >> 20;
		}
		close(fd);
	}
	unlink(p);
	send_rate(mib / (t / 1e9));
	return 0;
}

/*
 * Page cache read under a memory.max that forces reclaim: the cgroup
 * (memory.max = squeeze_mb, set by part_fast) reads squeeze_file_mb
 * squeeze_passes times; every pass evicts what the last one read.  The
 * rate is what charging, reclaiming and uncharging page cache together
 * cost, where the memcg reclaims itself all the time.
 *
 * What is read is the page cache of a brd RAM disk (squeeze_on=ram), whose
 * reads are instructions: from a file on the ext4 root every pass waited
 * for emulated disk I/O, which the instruction-count clock does not
 * resolve (a repetition of 10 took 18% longer than the others; see
 * docs/history.md).  brd's own pages are not charged to any memcg, and
 * what was never written reads as zeros without being allocated.  The
 * cache is dropped before and after, as the unlink of a file would.
 */
static int fast_squeeze(long arg)
{
	long long len = NUM("squeeze_file_mb") << 20, t, got, size;
	const char *dev = !strcmp(STR("squeeze_on"), "ram") ? "/dev/ram0" : NULL;
	char p[300];
	int fd;

	(void)arg;
	alarm(CHILD_SECS);
	pin(NUM("cpu"));
	if (dev) {
		fd = open(dev, O_RDONLY);
		if (fd < 0) {
			fprintf(stderr, "bench: fast.squeeze: %s: %s (CONFIG_BLK_DEV_RAM?)\n",
				dev, strerror(errno));
			return 1;
		}
		size = lseek(fd, 0, SEEK_END);
		if (size < len) {
			fprintf(stderr, "bench: fast.squeeze: %s holds %lld MiB, squeeze_file_mb is %lld\n",
				dev, size >> 20, len >> 20);
			close(fd);
			return 1;
		}
		errno = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		if (errno) {
			close(fd);
			return 1;
		}
	} else {
		snprintf(p, sizeof(p), "%s/fast-squeeze-%ld", STR("dir"), fast_rep);
		if (write_uncached(p, len >> 20))
			return 1;
		fd = open(p, O_RDONLY);
		if (fd < 0)
			return 1;
	}
	t = now_ns();
	got = read_passes(fd, NUM("squeeze_passes"), len);
	t = now_ns() - t;
	if (dev)
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	else
		unlink(p);
	close(fd);
	if (got != len * NUM("squeeze_passes"))
		return 1;
	send_rate(got / 1048576.0 / (t / 1e9));
	return 0;
}

/* A job of fast.jobs, in its own memcg: see part "fast" above. */
static int job_body(const char *dir, long i, long len)
{
	char p[400];
	int fd;

	snprintf(p, sizeof(p), "%s/fast-jobs-log", dir);
	fd = open(p, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd < 0 || write(fd, chunk, len) != len)
		return 1;
	close(fd);
	snprintf(p, sizeof(p), "%s/fast-jobs-%ld", dir, i);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, chunk, len) != len)
		return 1;
	close(fd);
	snprintf(p, sizeof(p), "%s/fast-jobs-%ld", dir, i - 4);
	if (unlink(p) && errno != ENOENT)
		return 1;
	return 0;
}

/*
 * Jobs in a row, each in a memcg of its own that is removed when it ends,
 * with a little page cache left dirty: the churn of the soak, timed.  The
 * rate counts the whole job, its memcg's offline included, since the next
 * mkdir waits for cgroup_mutex that offline holds.  It runs in
 * <test cgroup>/driver, the jobs in <test cgroup>/job-<i>.
 */
static int fast_jobs(long arg)
{
	long n = NUM("jobs"), len = NUM("jobs_kb") << 10, i, last, v;
	/* jobs_sync: the timed loop between two syncs, in timed reps only */
	int sync_loop = NUM("jobs_sync") && fast_rep > 0;
	long long t = 0, first = now_ns(), gone;
	double rates[2];
	char cg[400], p[450], pid[32];
	int status;
	pid_t c;

	(void)arg;
	alarm(CHILD_SECS);
	pin(NUM("cpu"));
	if (len > (long)sizeof(chunk))
		return 1;
	for (i = -n / 10; i < n + 4; i++) {   /* a tenth to warm up */
		if (i == 0) {
			if (sync_loop)
				sync();
			t = now_ns();
		}
		if (i == n) {
			t = now_ns() - t;
			if (sync_loop)
				sync();
			len = 0;	/* the last 4 only delete */
		}
		snprintf(cg, sizeof(cg), "%s/job-%ld", fast_cg, i + n);
		if (mkcg(cg, 0))
			return 1;
		c = fork();
		if (c < 0)
			return 1;
		if (c == 0) {
			snprintf(p, sizeof(p), "%s/cgroup.procs", cg);
			snprintf(pid, sizeof(pid), "%d", getpid());
			_exit(write_str(p, pid) || (len && job_body(jobs_dir, i, len)) ? 1 : 0);
		}
		if (waitpid(c, &status, 0) != c || status || rmcg(cg))
			return 1;
	}
	snprintf(p, sizeof(p), "%s/fast-jobs-log", jobs_dir);
	unlink(p);
	/*
	 * The second rate takes every job of the rep, from the first mkdir
	 * until their memcgs are released, or stop going (the dying count
	 * below the test's cgroup last changed; a memcg some page cache
	 * keeps, such as the file system's metadata, stays dying on
	 * original): a kernel that keeps a dead job's memcg until its log
	 * pages go pays for the release after the loop, where the first
	 * rate does not look.
	 */
	last = dying_below(fast_cg);
	gone = now_ns();
	for (v = last; now_ns() - gone < 300000000LL && now_ns() - first < 60000000000LL;) {
		sleep_ms(1);
		v = dying_below(fast_cg);
		if (v != last) {
			last = v;
			gone = now_ns();
		}
	}
	rates[0] = n / (t / 1e9);
	rates[1] = (n + n / 10 + 4) / ((gone - first) / 1e9);
	send_rates(rates, 2);
	return 0;
}

/*
 * Fork and exit of a task with a large anon mapping: the child exits at
 * once, the parent waits.  Page tables are copied and torn down; the anon
 * pages are shared, not charged again.
 */
static int fast_fork(long arg)
{
	long len = NUM("fork_mb") << 20, psz = sysconf(_SC_PAGESIZE), i, n = NUM("forks");
	long long t = 0;
	int status;
	pid_t pid;
	char *m;

	(void)arg;
	alarm(CHILD_SECS);
	pin(NUM("cpu"));
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 1;
	for (i = 0; i < len; i += psz)
		m[i] = 1;
	for (i = -n / 10; i < n; i++) {     /* a tenth to warm up */
		if (i == 0)
			t = now_ns();
		pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0)
			_exit(0);
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			return 1;
	}
	t = now_ns() - t;
	munmap(m, len);
	send_rate(n / (t / 1e9));
	return 0;
}

/*
 * TCP over 127.0.0.1: a forked reader drains while this task sends
 * tcp_mb MiB per loop in 64 KiB writes.  Both ends belong to this cgroup,
 * so every sk_mem_schedule() of either end charges its socket memory, and
 * every reclaim of forward-allocated memory uncharges it.
 */
static int fast_tcp(long arg)
{
	long len = NUM("tcp_mb") << 20, loop, sent, mib = 0;
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int l, c, r, status;
	long long t = 0;
	ssize_t n;
	pid_t pid;

	(void)arg;
	alarm(CHILD_SECS);
	pin(NUM("cpu"));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &alen))
		return 1;
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)))
		return 1;
	r = accept(l, NULL, NULL);
	if (r < 0)
		return 1;
	close(l);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		close(c);
		while ((n = read(r, chunk, sizeof(chunk))) > 0)
			;
		_exit(n < 0);
	}
	close(r);
	for (loop = 0; loop <= NUM("tcp_loops"); loop++) {
		if (loop == 1) {        /* loop 0 warms up */
			t = now_ns();
			mib = 0;
		}
		for (sent = 0; sent < len; sent += n) {
			n = write(c, chunk, 64 << 10);
			if (n <= 0)
				return 1;
		}
		mib += len >> 20;
	}
	t = now_ns() - t;
	close(c);       /* the reader reads EOF and exits */
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	send_rate(mib / (t / 1e9));
	return 0;
}

/*
 * fast.jobs's filesystem.  With jobs_on=ram, a fresh one on the brd RAM disk
 * /dev/ram1, so that its writeback costs instructions, not emulated disk
 * I/O: on the ext4 root the rate's 95% interval was 2 points wide.
 * fast.charge writes its file there too (charge_on=ram): on the ext4 root
 * a rep now and then waited for a journal commit on the emulated disk, and
 * ran at a third to nine tenths of the others' rate, on both kernels, the
 * more often the busier the host (docs/history.md).
 * jobs_fs=ext4 (the default) writes the journaled ext4 that image.sh made
 * on the host (busybox's mke2fs makes no journal); jobs_fs=ext2 makes an
 * ext2 here (mounted by ext4: delayed allocation, cgroup writeback).
 *
 * Without a journal, ext4's inode allocator skips the inodes freed in an
 * earlier second of the last minute (recently_deleted()), so every inode
 * freed while no allocation takes it leaves a hole that each allocation
 * scans.  On v3 the final iput of a job's file, deleted while the switch
 * of its dirty inode off the dying cgwb is in flight, comes later, from the
 * switch work: more holes, and a rate that falls rep after rep with ext2
 * and stays flat with the journal.
 *
 * up: 1 makes and mounts it, 0 unmounts it, -1 only points jobs_dir and
 * charge_dir at dir (neither test on ram).
 */
static int on_ram(const char *name)
{
	return !strcmp(STR(name), "ram");
}

static int ram_fs(int up)
{
	const char *mnt = "/tmp/fast-jobs";
	int ext4 = !strcmp(STR("jobs_fs"), "ext4"), status;
	pid_t pid;

	snprintf(jobs_dir, sizeof(jobs_dir), "%s", on_ram("jobs_on") ? mnt : STR("dir"));
	snprintf(charge_dir, sizeof(charge_dir), "%s", on_ram("charge_on") ? mnt : STR("dir"));
	if (up < 0)
		return 0;	/* the folders only: nothing on ram */
	if (!up)
		return umount(mnt);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (ext4)
			execlp("sh", "sh", "-c", "zcat /jobs-ext4.img.gz >/dev/ram1", (char *)NULL);
		else
			execlp("mke2fs", "mke2fs", "-F", "/dev/ram1", (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "bench: fast.jobs: %s /dev/ram1 failed (status %d; CONFIG_BLK_DEV_RAM_COUNT >= 2?)\n",
			ext4 ? "writing /jobs-ext4.img.gz to" : "mke2fs", status);
		return -1;
	}
	if ((mkdir(mnt, 0755) && errno != EEXIST) ||
	    mount("/dev/ram1", mnt, ext4 ? "ext4" : "ext2", 0, NULL)) {
		fprintf(stderr, "bench: fast.jobs: mount /dev/ram1 on %s: %s\n", mnt, strerror(errno));
		return -1;
	}
	return 0;
}

struct fast_test {
	const char *name, *metric, *unit;
	int (*fn)(long);
	long param_kb;
};

static void part_fast(void)
{
	struct fast_test tests[] = {
		{ "read", "fast.read_mibps", "MiB/s", fast_read, NUM("read_mb") << 10 },
		{ "fault", "fast.fault_per_s", "faults/s", fast_fault, NUM("anon_mb") << 10 },
		{ "charge", "fast.charge_per_s", "ops/s", fast_charge, NUM("charge_kb") },
		{ "ctxsw", "fast.ctxsw_per_s", "trips/s", fast_ctxsw, 0 },
		{ "spin", "fast.spin_mops", "Mops/s", fast_spin, 0 },
		{ "filefault", "fast.filefault_per_s", "faults/s", fast_filefault, NUM("mapped_mb") << 10 },
		{ "truncate", "fast.truncate_mibps", "MiB/s", fast_truncate, NUM("truncate_mb") << 10 },
		{ "fork", "fast.fork_per_s", "forks/s", fast_fork, NUM("fork_mb") << 10 },
		{ "tcp", "fast.tcp_mibps", "MiB/s", fast_tcp, NUM("tcp_mb") << 10 },
		{ "squeeze", "fast.squeeze_mibps", "MiB/s", fast_squeeze, NUM("squeeze_file_mb") << 10 },
		{ "jobs", "fast.jobs_per_s", "jobs/s", fast_jobs, NUM("jobs_kb") },
	};
	int n = sizeof(tests) / sizeof(tests[0]), order[16], picked[16], run[16] = { 0 }, i, status;
	int jobs_up, ram_up = 0, need_ram = 0;
	const char *names[16];
	long rep, done = 0, nrun, warm = 0;
	double rates[2], junk[8];
	ssize_t want;
	char cg[300];
	pid_t pid;

	for (i = 0; i < n; i++)
		names[i] = tests[i].name;
	nrun = knob_names("fast_tests", names, n, picked, 16);
	for (i = 0; i < nrun; i++)
		run[picked[i]] = 1;
	/*
	 * The read end non-blocking: after its child is reaped, a test's rates
	 * are there or never will be.  The children's write end blocks as usual.
	 */
	if (pipe(res_pipe) || fcntl(res_pipe[0], F_SETFL, O_NONBLOCK)) {
		perror("bench: pipe");
		exit(2);
	}
	/* /dev/ram1's file system, for fast.jobs and fast.charge, when one of them is there and on ram */
	for (i = 0; i < n; i++)
		if (run[i] && ((tests[i].fn == fast_jobs && on_ram("jobs_on")) ||
			       (tests[i].fn == fast_charge && on_ram("charge_on"))))
			need_ram = 1;
	if (need_ram)
		ram_up = !ram_fs(1);
	else
		ram_fs(-1);
	jobs_up = !on_ram("jobs_on") || ram_up;
	/*
	 * fast.jobs runs jobs_warmup times untimed before the first rep
	 * (reps 1-jobs_warmup to 0, without the sync before them, so that the
	 * K-th sync still comes before the K-th rep's first test): the first
	 * run of the jobs after boot grows the per-CPU allocator's chunks and
	 * the page allocator's per-CPU lists, more on a kernel that keeps
	 * its dead memcgs, and was the lowest of a boot's reps on original.
	 */
	for (i = 0; i < n; i++)
		if (run[i] && tests[i].fn == fast_jobs && jobs_up)
			warm = NUM("jobs_warmup");
	for (rep = 1 - warm; rep <= NUM("fast_reps"); rep++) {
		for (i = 0; i < n; i++)
			order[i] = i;
		shuffle(order, n, 1000 + rep);
		for (i = 0; i < n; i++) {
			struct fast_test *ft = &tests[order[i]];

			if (!run[order[i]] || (rep < 1 && ft->fn != fast_jobs))
				continue;
			if ((ft->fn == fast_jobs && !jobs_up) ||
			    (ft->fn == fast_charge && !ram_up && on_ram("charge_on"))) {
				fail("fast: %s rep %ld: no file system on /dev/ram1", ft->name, rep);
				continue;
			}
			if (rep > 0)
				sync();
			settle();
			fast_rep = rep;
			if (rep > 0)
				snprintf(cg, sizeof(cg), "%s/fast-%s-%ld", STR("parent"), ft->name, rep);
			else
				snprintf(cg, sizeof(cg), "%s/fast-%s-warm%ld", STR("parent"), ft->name, 1 - rep);
			snprintf(fast_cg, sizeof(fast_cg), "%s", cg);
			if (mkcg(cg, ft->fn == fast_jobs)) {
				fail("fast: mkdir %s: %s", cg, strerror(errno));
				continue;
			}
			if (ft->fn == fast_jobs) {
				/* a cgroup with children's controllers holds no task */
				if (snprintf(cg, sizeof(cg), "%s/driver", fast_cg) >= (int)sizeof(cg) ||
				    mkcg(cg, 0)) {
					fail("fast: mkdir %s: %s", cg, strerror(errno));
					rmcg(fast_cg);
					continue;
				}
			}
			if (ft->fn == fast_squeeze) {
				char max[32];

				snprintf(max, sizeof(max), "%ld", NUM("squeeze_mb") << 20);
				if (cg_write_knob(cg, "memory.max", max)) {
					fail("fast: memory.max of %s: %s", cg, strerror(errno));
					rmcg(cg);
					continue;
				}
			}
			pid = spawn_in(cg, ft->fn, 0);
			status = -1;
			want = (ft->fn == fast_jobs ? 2 : 1) * sizeof(*rates);
			if (pid < 0 || waitpid(pid, &status, 0) != pid || status ||
			    read(res_pipe[0], rates, want) != want) {
				fail("fast: %s rep %ld failed (status %d)", ft->name, rep, status);
			} else if (rep < 1) {
				printf("bench: fast %-6s warm-up %ld: %.1f %s (not a result)\n",
				       ft->name, 1 - rep, rates[0], ft->unit);
			} else {
				result(ft->metric, ft->param_kb, rep, rates[0], ft->unit);
				printf("bench: fast %-6s rep %ld: %.1f %s\n", ft->name, rep, rates[0], ft->unit);
				if (ft->fn == fast_jobs)
					result("fast.jobs_gone_per_s", ft->param_kb, rep, rates[1], ft->unit);
			}
			/* whatever a failed child left in the pipe is not the next test's */
			while (read(res_pipe[0], junk, sizeof(junk)) > 0)
				;
			if (rmcg(cg))
				fail("fast: rmdir %s: %s", cg, strerror(errno));
			if (ft->fn == fast_jobs && rmcg(fast_cg))
				fail("fast: rmdir %s: %s", fast_cg, strerror(errno));
			if (rep < 1)
				continue;
			record("@@ progress part=fast done=%ld of=%ld t_ms=%lld", ++done,
			       nrun * NUM("fast_reps"), (now_ns() - t_start) / 1000000);
			flush_records();
		}
	}
	if (ram_up)
		ram_fs(0);
}

/* ---- part reclaim: a parent's reclaim after its children were removed */

#define LRU_GEN "/sys/kernel/mm/lru_gen/enabled"

static char rcl_file[300];
static long rcl_passes;

/* Read rcl_file rcl_passes times (page cache charged to the reader's cgroup). */
static int rcl_reader(long arg)
{
	long long got;
	int fd;

	(void)arg;
	alarm(CHILD_SECS);
	fd = open(rcl_file, O_RDONLY);
	if (fd < 0)
		return 1;
	got = read_passes(fd, rcl_passes, 0);
	close(fd);
	return got < 0 ? 1 : 0;
}

static int rcl_read(const char *cg, const char *file, long passes)
{
	int status = -1;
	pid_t pid;

	snprintf(rcl_file, sizeof(rcl_file), "%s", file);
	rcl_passes = passes;
	pid = spawn_in(cg, rcl_reader, 0);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || status) {
		fail("reclaim: reading %s in %s failed (status %d)", file, cg, status);
		return -1;
	}
	return 0;
}

/* Switch MGLRU on (gen) or off (classic) and check that it took. */
static int set_lru(int gen)
{
	char buf[64];

	if (write_str(LRU_GEN, gen ? "y" : "n") || read_str(LRU_GEN, buf, sizeof(buf)))
		return -1;
	/* "0x0007" with every MGLRU feature on, "0x0000" off. */
	return (strtol(buf, NULL, 16) != 0) == gen ? 0 : -1;
}

static void reclaim_rep(const char *mode, long rep)
{
	char P[256], H[300], C[320], hot[300], cold[320], m[80], metric[64];
	long cold_mb = NUM("cold_mb"), rounds = NUM("rounds"), round;
	long long charged = 0, scan0, steal0, ref0, scan, steal, ref, t0, t1;
	double cold_before = -1, cold_left = -1, hot_left = -1;
	long hot_pages = (NUM("hot_mb") << 20) / sysconf(_SC_PAGESIZE);
	int rc;

	snprintf(P, sizeof(P), "%s/rcl-%s-%ld", STR("parent"), mode, rep);
	snprintf(H, sizeof(H), "%s/hot", P);
	snprintf(hot, sizeof(hot), "%s/rcl-hot", STR("dir"));
	if (mkcg(P, 1) || mkcg(H, 0)) {
		fail("reclaim %s rep %ld: cannot create %s: %s", mode, rep, H, strerror(errno));
		goto out;
	}
	if (write_uncached(hot, NUM("hot_mb")) || rcl_read(H, hot, 2)) {
		fail("reclaim %s rep %ld: the hot file %s: %s", mode, rep, hot, strerror(errno));
		goto out;
	}
	for (round = 1; round <= rounds; round++) {
		snprintf(C, sizeof(C), "%s/cold-%ld", P, round);
		snprintf(cold, sizeof(cold), "%s/rcl-cold-%ld", STR("dir"), round);
		snprintf(m, sizeof(m), "%ld", NUM("cold_max_mb") << 20);
		if (mkcg(C, 0) || cg_write_knob(C, "memory.max", m) || write_uncached(cold, cold_mb)) {
			fail("reclaim %s rep %ld: setting up %s: %s", mode, rep, C, strerror(errno));
			goto out;
		}
		if (rcl_read(C, cold, 2))
			goto out;
		charged = cg_key(C, "memory.stat", "file");
		if (charged <= 0) {
			fail("reclaim %s rep %ld: no page cache charged to %s", mode, rep, C);
			goto out;
		}
		printf("bench: reclaim %s rep %ld round %ld: before rmdir: child active_file %lld inactive_file %lld KiB\n",
		       mode, rep, round, cg_key(C, "memory.stat", "active_file") >> 10,
		       cg_key(C, "memory.stat", "inactive_file") >> 10);
		if (rmcg(C)) {
			fail("reclaim %s rep %ld: rmdir %s: %s", mode, rep, C, strerror(errno));
			goto out;
		}
		settle();
		/* The sibling's working set is hot when the parent is reclaimed. */
		if (rcl_read(H, hot, 1))
			goto out;
		printf("bench: reclaim %s rep %ld round %ld: after rmdir: parent active_file %lld inactive_file %lld, hot sibling %lld %lld KiB\n",
		       mode, rep, round, cg_key(P, "memory.stat", "active_file") >> 10,
		       cg_key(P, "memory.stat", "inactive_file") >> 10,
		       cg_key(H, "memory.stat", "active_file") >> 10,
		       cg_key(H, "memory.stat", "inactive_file") >> 10);
		scan0 = cg_key(P, "memory.stat", "pgscan");
		steal0 = cg_key(P, "memory.stat", "pgsteal");
		ref0 = cg_key(H, "memory.stat", "workingset_refault_file");
		cold_before = resident_pct(cold);
		snprintf(m, sizeof(m), "%lld", charged);
		t0 = now_ns();
		rc = cg_write_knob(P, "memory.reclaim", m);
		t1 = now_ns();
		/* EAGAIN: it reclaimed less than asked; the counters say how much. */
		if (rc && errno != EAGAIN) {
			fail("reclaim %s rep %ld: memory.reclaim of %s: %s", mode, rep, P, strerror(errno));
			goto out;
		}
		cold_left = resident_pct(cold);
		hot_left = resident_pct(hot);
		scan = cg_key(P, "memory.stat", "pgscan") - scan0;
		steal = cg_key(P, "memory.stat", "pgsteal") - steal0;
		if (rcl_read(H, hot, 1))
			goto out;
		ref = cg_key(H, "memory.stat", "workingset_refault_file") - ref0;
		if (scan0 < 0 || steal0 < 0 || ref0 < 0 || cold_before <= 0 || cold_left < 0 || hot_left < 0) {
			fail("reclaim %s rep %ld: cannot read the counters of %s", mode, rep, P);
			goto out;
		}
		printf("bench: reclaim %-7s rep %ld round %ld: child had %lld KiB; %s, %.0f us, scanned %lld reclaimed %lld pages; cold file resident %.1f%% -> %.1f%%, hot %.1f%%, hot refaults %lld\n",
		       mode, rep, round, charged >> 10, rc ? "short (EAGAIN)" : "all reclaimed", (t1 - t0) / 1e3,
		       scan, steal, cold_before, cold_left, hot_left, ref);
		unlink(cold);
		if (round < rounds)
			continue;
#define R(name, v, unit) do { \
		snprintf(metric, sizeof(metric), "reclaim.%s.%s", mode, name); \
		result(metric, cold_mb << 10, rep, v, unit); } while (0)
		R("dead_left_pct", 100.0 * cold_left / cold_before, "%");
		R("hot_left_pct", hot_left, "%");
		R("refault_pct", 100.0 * ref / hot_pages, "%");
		if (steal > 0)
			R("scan_per_reclaim", (double)scan / steal, "pages");
		R("reclaimed_pct", 100.0 * steal * sysconf(_SC_PAGESIZE) / charged, "%");
		R("reclaim_us", (t1 - t0) / 1e3, "us");
#undef R
	}
out:
	for (round = 1; round <= rounds; round++) {
		snprintf(cold, sizeof(cold), "%s/rcl-cold-%ld", STR("dir"), round);
		unlink(cold);
		snprintf(C, sizeof(C), "%s/cold-%ld", P, round);
		rmcg(C);
	}
	unlink(hot);
	rmcg(H);
	if (rmcg(P))
		fail("reclaim: rmdir %s: %s", P, strerror(errno));
}

static void part_reclaim(void)
{
	const char *modes[2];
	char *s = strdup(STR("lru")), *tok, *save = NULL, buf[64];
	int n = 0, order[2], i, was_gen;
	long rep, done = 0;

	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == 2 || (strcmp(tok, "gen") && strcmp(tok, "classic"))) {
			fprintf(stderr, "bench: lru: gen and/or classic, not '%s'\n", STR("lru"));
			exit(2);
		}
		modes[n++] = !strcmp(tok, "gen") ? "gen" : "classic";
	}
	if (read_str(LRU_GEN, buf, sizeof(buf))) {
		fprintf(stderr, "bench: reclaim: %s: %s (a kernel without CONFIG_LRU_GEN)\n", LRU_GEN, strerror(errno));
		exit(2);
	}
	was_gen = strtol(buf, NULL, 16) != 0;
	for (rep = 1; rep <= NUM("reclaim_reps"); rep++) {
		for (i = 0; i < n; i++)
			order[i] = i;
		shuffle(order, n, 2000 + rep);
		for (i = 0; i < n; i++) {
			sync();
			settle();
			if (set_lru(!strcmp(modes[order[i]], "gen"))) {
				fail("reclaim: cannot switch %s to %s", LRU_GEN, modes[order[i]]);
				continue;
			}
			reclaim_rep(modes[order[i]], rep);
			record("@@ progress part=reclaim done=%ld of=%ld t_ms=%lld", ++done,
			       n * NUM("reclaim_reps"), (now_ns() - t_start) / 1000000);
			flush_records();
		}
	}
	if (set_lru(was_gen))
		fail("reclaim: cannot put %s back", LRU_GEN);
	free(s);
}

/* ---- part stressng: stress-ng's stressors in a memcg, their tasks on any CPU */

#define STRESS_NG "/bin/stress-ng"
#define MAX_STRESSORS 32

static const char *sng_name;	/* the stressor of the run */
static long sng_instances;
static char sng_yaml[300], sng_log[300];

/* The child, in the run's cgroup: every CPU back (bench is pinned), a process group of its own, exec. */
static int stressng_exec(long arg)
{
	char opt[64], inst[24], secs[24];
	cpu_set_t set;
	int fd, i;

	(void)arg;
	CPU_ZERO(&set);
	for (i = 0; i < CPU_SETSIZE; i++)
		CPU_SET(i, &set);
	if (sched_setaffinity(0, sizeof(set), &set) || setpgid(0, 0))
		return 126;
	fd = open(sng_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
		return 126;
	snprintf(opt, sizeof(opt), "--%s", sng_name);
	snprintf(inst, sizeof(inst), "%ld", sng_instances);
	snprintf(secs, sizeof(secs), "%lds", NUM("stressng_secs"));
	execl(STRESS_NG, "stress-ng", opt, inst, "--timeout", secs, "--metrics-brief",
	      "--yaml", sng_yaml, "--temp-path", "/tmp", (char *)NULL);
	fprintf(stderr, "bench: exec %s: %s\n", STRESS_NG, strerror(errno));
	return 127;
}

/*
 * The stressor's bogo-ops-per-second-real-time from stress-ng's YAML
 * (0.15's --yaml; -1 when the file, the stressor or the key is not there):
 *   metrics:
 *       - stressor: switch
 *         bogo-ops: 69688
 *         bogo-ops-per-second-real-time: 69608.356154
 */
static double stressng_rate(const char *yaml, const char *name)
{
	static const char key[] = "bogo-ops-per-second-real-time:";
	char line[512], *s, *v, *end;
	double rate = -1;
	int in = 0;
	FILE *f = fopen(yaml, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\r\n")] = 0;
		for (s = line; *s == ' '; s++)
			;
		if (!strncmp(s, "- stressor:", 11)) {
			for (v = s + 11; *v == ' '; v++)
				;
			in = !strcmp(v, name);
			continue;
		}
		if (in && !strncmp(s, key, sizeof(key) - 1)) {
			errno = 0;
			rate = strtod(s + sizeof(key) - 1, &end);
			if (errno || end == s + sizeof(key) - 1 || rate < 0)
				rate = -1;
			break;
		}
	}
	fclose(f);
	return rate;
}

/* The last lines stress-ng wrote, on the console (a failed run). */
static void stressng_tail(void)
{
	char lines[8][256];
	int n = 0, i;
	FILE *f = fopen(sng_log, "r");

	if (!f)
		return;
	while (fgets(lines[n % 8], sizeof(lines[0]), f))
		n++;
	fclose(f);
	for (i = n > 8 ? n - 8 : 0; i < n; i++)
		printf("bench:   stress-ng: %s%s", lines[i % 8], strchr(lines[i % 8], '\n') ? "" : "\n");
}

static volatile sig_atomic_t sng_alarm;

static void on_alarm(int sig)
{
	(void)sig;
	sng_alarm = 1;
}

/* One run of stressor sng_name in cg: its rate, or -1 when it failed (said why). */
static double stressng_run(const char *cg, long rep)
{
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	long limit = 2 * NUM("stressng_secs") + 60;
	int status = -1;
	double rate;
	pid_t pid, w;

	snprintf(sng_yaml, sizeof(sng_yaml), "/tmp/bench-sng-%s-%ld.yaml", sng_name, rep);
	snprintf(sng_log, sizeof(sng_log), "/tmp/bench-sng-%s-%ld.log", sng_name, rep);
	unlink(sng_yaml);
	/* no SA_RESTART: the alarm interrupts waitpid() */
	sigaction(SIGALRM, &sa, &old);
	sng_alarm = 0;
	pid = spawn_in(cg, stressng_exec, 0);
	if (pid < 0) {
		fail("stressng: %s rep %ld: cannot start stress-ng in %s: %s", sng_name, rep, cg, strerror(errno));
		sigaction(SIGALRM, &old, NULL);
		return -1;
	}
	alarm(limit);
	while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
		if (!sng_alarm)
			continue;
		printf("bench: stressng %s rep %ld: still running after %ld s: killing it\n", sng_name, rep, limit);
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		sng_alarm = 0;
	}
	alarm(0);
	sigaction(SIGALRM, &old, NULL);
	rate = stressng_rate(sng_yaml, sng_name);
	if (w != pid || !WIFEXITED(status) || WEXITSTATUS(status) || rate < 0) {
		if (w == pid && WIFSIGNALED(status))
			fail("stressng: %s rep %ld: stress-ng killed by signal %d", sng_name, rep, WTERMSIG(status));
		else if (w == pid && WEXITSTATUS(status))
			fail("stressng: %s rep %ld: stress-ng exited with %d", sng_name, rep, WEXITSTATUS(status));
		else
			fail("stressng: %s rep %ld: no bogo-ops-per-second-real-time for it in %s",
			     sng_name, rep, sng_yaml);
		stressng_tail();
		rate = -1;
	}
	unlink(sng_yaml);
	unlink(sng_log);
	return rate;
}

static void part_stressng(void)
{
	const char *names[MAX_STRESSORS];
	char *s = strdup(STR("stressors")), *tok, *save = NULL, cg[300], metric[96];
	int n = 0, order[MAX_STRESSORS], i, j, bad;
	long rep, done = 0;
	double rate;

	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		bad = n == MAX_STRESSORS || !islower((unsigned char)tok[0]) || strlen(tok) > 40;
		for (j = 0; tok[j] && !bad; j++)
			bad = !islower((unsigned char)tok[j]) && !isdigit((unsigned char)tok[j]) && tok[j] != '-';
		for (j = 0; j < n && !bad; j++)
			bad = !strcmp(names[j], tok);
		if (bad) {
			fprintf(stderr, "bench: stressors: at most %d different stress-ng stressors "
				"(a-z, 0-9 and '-'), not '%s'\n", MAX_STRESSORS, STR("stressors"));
			exit(2);
		}
		names[n++] = tok;
	}
	if (!n) {
		fprintf(stderr, "bench: stressors: no stressor named\n");
		exit(2);
	}
	if (access(STRESS_NG, X_OK)) {
		fprintf(stderr, "bench: stressng: no %s in the guest (guest/image.sh copies the host's)\n", STRESS_NG);
		exit(2);
	}
	sng_instances = NUM("stressng_instances") ? NUM("stressng_instances") : ncpus;
	for (rep = 1; rep <= NUM("stressng_reps"); rep++) {
		for (i = 0; i < n; i++)
			order[i] = i;
		shuffle(order, n, 3000 + rep);
		for (i = 0; i < n; i++) {
			sng_name = names[order[i]];
			snprintf(metric, sizeof(metric), "stressng.%s_ops_per_s", sng_name);
			for (j = 0; metric[j]; j++)
				if (metric[j] == '-')
					metric[j] = '_';
			sync();
			settle();
			snprintf(cg, sizeof(cg), "%s/sng-%s-%ld", STR("parent"), sng_name, rep);
			rate = -1;
			if (mkcg(cg, 0)) {
				fail("stressng: mkdir %s: %s", cg, strerror(errno));
			} else {
				rate = stressng_run(cg, rep);
				if (rmcg(cg))
					fail("stressng: rmdir %s: %s", cg, strerror(errno));
			}
			if (rate < 0) {
				/* never a number: the stressor failed (limit 0: no rate to bound it) */
				result_none(metric, sng_instances, rep, 0, "ops/s");
			} else {
				result(metric, sng_instances, rep, rate, "ops/s");
				printf("bench: stressng %-8s rep %ld: %.1f ops/s (%ld instances)\n",
				       sng_name, rep, rate, sng_instances);
			}
			record("@@ progress part=stressng done=%ld of=%ld t_ms=%lld", ++done,
			       n * NUM("stressng_reps"), (now_ns() - t_start) / 1000000);
			flush_records();
		}
	}
	free(s);
}

int main(int argc, char **argv)
{
	char words[2048], *s, *tok, *save = NULL;
	int offline = 0, fast = 0, reclaim = 0, stressng = 0, rc, i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	knob_parse("bench", knobs, argc, argv);
	s = strdup(STR("parts"));
	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "offline"))
			offline = 1;
		else if (!strcmp(tok, "fast"))
			fast = 1;
		else if (!strcmp(tok, "reclaim"))
			reclaim = 1;
		else if (!strcmp(tok, "stressng"))
			stressng = 1;
		else {
			fprintf(stderr, "bench: parts: offline, fast, reclaim and/or stressng, not '%s'\n", tok);
			return 2;
		}
	}
	free(s);
	if (!NUM("reps") || !NUM("fast_reps") || !NUM("poll_us") || !NUM("read_mb") || !NUM("anon_mb") ||
	    !NUM("charge_kb") || NUM("charge_kb") > 1024 || !NUM("read_passes") || !NUM("anon_loops") ||
	    !NUM("charge_ops") || !NUM("ctxsw_trips") || !NUM("spin_m") || !NUM("reclaim_reps") ||
	    !NUM("rounds") || !NUM("cold_mb") || !NUM("cold_max_mb") || !NUM("hot_mb") ||
	    !NUM("squeeze_mb") || !NUM("squeeze_file_mb") || !NUM("squeeze_passes") ||
	    !NUM("stressng_secs") || !NUM("stressng_reps")) {
		fprintf(stderr, "bench: reps, counts and sizes must be > 0 (charge_kb at most 1024)\n");
		return 2;
	}
	for (i = 0; i < 3; i++) {
		const char *k = i == 2 ? "charge_on" : i ? "jobs_on" : "squeeze_on";

		if (strcmp(STR(k), "ram") && strcmp(STR(k), "disk")) {
			fprintf(stderr, "bench: %s is ram or disk, not '%s'\n", k, STR(k));
			return 2;
		}
	}
	if (strcmp(STR("jobs_fs"), "ext4") && strcmp(STR("jobs_fs"), "ext2")) {
		fprintf(stderr, "bench: jobs_fs is ext4 or ext2, not '%s'\n", STR("jobs_fs"));
		return 2;
	}
	ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (NUM("cpu") >= ncpus)
		knob("cpu")->num = ncpus - 1;
	memset(chunk, 'b', sizeof(chunk));
	if (mkdir(STR("dir"), 0755) && errno != EEXIST) {
		fprintf(stderr, "bench: mkdir %s: %s\n", STR("dir"), strerror(errno));
		return 2;
	}
	if (mkcg(STR("parent"), 1)) {
		fprintf(stderr, "bench: cannot create %s with the memory controller: %s\n",
			STR("parent"), strerror(errno));
		return 2;
	}
	out_fd = open_raw(STR("out"));
	if (out_fd < 0) {
		fprintf(stderr, "bench: cannot open %s: %s\n", STR("out"), strerror(errno));
		return 2;
	}
	knob_words(words, sizeof(words));
	record("@@ run bench%s cpus=%d nodes=%d", words, ncpus, count_nodes());
	printf("bench:%s cpus=%d\n", words, ncpus);
	flush_records();
	/* The poller and the fast paths on cpu=, the probe on another CPU. */
	pin(NUM("cpu"));
	t_start = now_ns();
	if (offline)
		part_offline();
	if (fast)
		part_fast();
	if (reclaim)
		part_reclaim();
	if (stressng)
		part_stressng();
	rc = failures ? 1 : 0;
	record("@@ end rc=%d results=%ld t_ms=%lld", rc, nresults, (now_ns() - t_start) / 1000000);
	flush_records();
	printf("bench: %ld results in %lld s, %ld failures\n", nresults, (now_ns() - t_start) / 1000000000, failures);
	return rc;
}
