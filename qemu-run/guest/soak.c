// SPDX-License-Identifier: GPL-2.0
/*
 * soak: the churn workload of the 2019 "reparent slab memory on cgroup
 * removal" series, with a sampler.  Runs in the guest as the "soak" job.
 *
 *   soak [key=value ...]        soak help   lists the knobs and defaults
 *
 * Periodic jobs, each one a generation: mkdir a new cgroup under one parent
 * (/sys/fs/cgroup/soak), start the job in it (clone3 CLONE_INTO_CGROUP),
 * wait for it, rmdir the cgroup.  Up to jobs=N run at once, in slots: job g
 * starts once job g-N is reaped, so jobs are reaped in generation order and
 * "gen=g" in a record means generations 1..g are done and removed.  The jobs
 * share a filesystem (the guest's ext4 root, dir=/soak-data) and a tmpfs
 * (dir/tmp) and files between generations.  Job bodies (mix=):
 *   log    append log_kb to its own log and a line to the shared log; its log
 *          is deleted keep generations later (by that later job)
 *   read   read 4 of the shared files (created by whichever job needs one
 *          first), now and then replace one
 *   files  create a directory of small files, delete the one of an older job
 *   neg    negative lookups: stat names that do not exist
 *   anon   malloc and touch anon_kb
 *   tmpfs  write tmpfs_kb on tmpfs; half the jobs leave it behind (deleted
 *          keep generations later), half delete it at once
 *   fork   fork a child that touches some anon memory and exits
 *   sock   an AF_UNIX socketpair and a TCP connection on lo, sock_kb each way
 * What each job does is drawn from seed and its generation number only, so
 * every kernel runs the same workload.
 *
 * Fleet shape: with slices=N the jobs go round-robin into N slices under
 * the parent (parent/slice-1 .. slice-N, as systemd puts services and
 * users in slices), job g into slice 1 + (g - 1) % N.  mix= may give one
 * list per slice, separated by '/': slice s runs list (s - 1) % lists, so
 * "mix=log,read/anon,tmpfs,fork" with slices=2 gives a file-serving slice
 * and a compute slice.  rate=R starts at most R generations per second
 * (a machine whose jobs come at a pace, not as fast as it can), the rest
 * of the time idle.  The snapshots read the parent, which holds the
 * slices; the parent's dying count is the fleet's figure.  hog_mb keeps that much anon memory
 * touched in a cgroup outside the parent (memory pressure).
 *
 * Records go to out=/dev/ttyS2 (the host's samples.log) in the format of
 * qemu-run/records/RECORDS.md: "@@ run" once; a snapshot ("@@ sample" .. "@@
 * endsample", built in memory, one write()) at gen 0, every sample_every
 * generations and/or sample_ms, and after the last generation; "@@ progress"
 * every progress_ms; with drop=1 a last snapshot marked after=drop_caches
 * (sync, drop_caches, then up to drain_s until the dying count stops
 * falling); "@@ end".  A writer
 * process forwards them to the port in order.  Human-readable lines go to
 * stdout (the console).  A snapshot is about 21 KB and the emulated serial
 * port takes about 30 ms of guest CPU per KiB: sample_every sets the cost.
 *
 * Exit status: 0, 1 when jobs or cgroup operations failed (counts on
 * stdout), 2 on bad arguments or setup failure.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

/* ---- knobs: the one table; "soak help" prints it */

static struct knob knobs[] = {
	{ "seed", K_NUM, 1, NULL, "seed of the per-generation random choices" },
	{ "gens", K_NUM, -1, NULL, "generations to run (default 2000, or no limit when secs is set)" },
	{ "jobs", K_NUM, 2, NULL, "jobs alive at once (each its own cgroup)" },
	{ "mix", K_STR, 0, "log,read,files,neg,anon,tmpfs,fork,sock", "job bodies, in this order; '/' separates the lists of the slices" },
	{ "slices", K_NUM, 1, NULL, "parent slices the jobs go into, round-robin (1: the jobs sit in the parent)" },
	{ "rate", K_NUM, 0, NULL, "at most this many generations started per second (0: as fast as they go)" },
	{ "hog_mb", K_NUM, 0, NULL, "MiB of anon memory kept touched outside the parent (pressure)" },
	{ "secs", K_NUM, 0, NULL, "stop after this many seconds (0: no limit)" },
	{ "sample_every", K_NUM, 100, NULL, "snapshot every N generations (0: off)" },
	{ "sample_ms", K_NUM, 0, NULL, "snapshot every T ms as well (0: off)" },
	{ "progress_ms", K_NUM, 1000, NULL, "\"@@ progress\" every T ms" },
	{ "log_kb", K_NUM, 8, NULL, "KiB each job writes to its own log" },
	{ "file_kb", K_NUM, 16, NULL, "KiB per shared file" },
	{ "shared_files", K_NUM, 32, NULL, "number of shared files" },
	{ "files", K_NUM, 4, NULL, "small files per job directory" },
	{ "lookups", K_NUM, 32, NULL, "negative lookups per job" },
	{ "anon_kb", K_NUM, 256, NULL, "KiB of anon memory per job" },
	{ "tmpfs_kb", K_NUM, 16, NULL, "KiB per job's tmpfs file" },
	{ "sock_kb", K_NUM, 16, NULL, "KiB through each socket, each way" },
	{ "keep", K_NUM, 5000, NULL, "job logs and tmpfs files left behind are deleted this many generations later (0: never)" },
	{ "settle_s", K_NUM, 0, NULL, "seconds to wait idle after the churn, then a snapshot marked after=settle (0: none)" },
	{ "drop", K_NUM, 1, NULL, "1: a last snapshot after sync and drop_caches" },
	{ "drain_s", K_NUM, 10, NULL, "after drop_caches, wait up to this long for the dying count to stop falling" },
	{ "parent", K_STR, 0, "/sys/fs/cgroup/soak", "the common parent cgroup" },
	{ "dir", K_STR, 0, "/soak-data", "the shared working directory (tmpfs on dir/tmp)" },
	{ "out", K_STR, 0, "/dev/ttyS2", "where the records go" },
	{ NULL, 0, 0, NULL, NULL },
};

static void parse_args(int argc, char **argv)
{
	knob_parse("soak", knobs, argc, argv);
	if (NUM("gens") < 0)
		knob("gens")->num = NUM("secs") ? 0 : 2000;
	if (NUM("jobs") < 1)
		knob("jobs")->num = 1;
	if (NUM("progress_ms") < 100)
		knob("progress_ms")->num = 100;
}

/* ---- the job bodies */

enum { B_LOG, B_READ, B_FILES, B_NEG, B_ANON, B_TMPFS, B_FORK, B_SOCK, NBODIES };
static const char *const body_names[NBODIES] = {
	"log", "read", "files", "neg", "anon", "tmpfs", "fork", "sock",
};
#define MAX_SLICES 16
static int mix[MAX_SLICES][NBODIES * 4], nmix[MAX_SLICES], nmixes;

static void parse_mix(void)
{
	char *s = strdup(STR("mix")), *list, *save = NULL;

	for (list = strtok_r(s, "/", &save); list; list = strtok_r(NULL, "/", &save)) {
		if (nmixes == MAX_SLICES) {
			fprintf(stderr, "soak: mix: more than %d lists\n", MAX_SLICES);
			exit(2);
		}
		nmix[nmixes] = parse_names("mix", list, body_names, NBODIES, mix[nmixes],
					   sizeof(mix[0]) / sizeof(mix[0][0]));
		nmixes++;
	}
	free(s);
	if (!nmixes) {
		fprintf(stderr, "soak: mix: no job bodies\n");
		exit(2);
	}
	if (NUM("slices") < 1 || NUM("slices") > MAX_SLICES || NUM("rate") < 0) {
		fprintf(stderr, "soak: slices must be 1..%d and rate >= 0\n", MAX_SLICES);
		exit(2);
	}
}

/* The slice of generation gen, 1-based; 0 when the jobs sit in the parent. */
static long slice_of(long gen)
{
	return NUM("slices") > 1 ? 1 + (gen - 1) % NUM("slices") : 0;
}

/* The per-generation stream (tool.h's xorshift64*) is a function of seed and gen only. */
static void rng_seed(long gen)
{
	uint64_t r = ((uint64_t)NUM("seed") << 32 ^ (uint64_t)gen) * 0x9e3779b97f4a7c15ULL + 1;

	rng_set(r ^ r >> 31);
}

static char *path(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(buf, len, "%s/", STR("dir"));

	va_start(ap, fmt);
	vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
	return buf;
}

static char chunk[64 << 10];

/* A file of bytes from chunk (tool.h's write_file, no fsync). */
static int put_file(const char *p, int flags, long bytes)
{
	return write_file(p, flags, bytes, 0, chunk, sizeof(chunk));
}

static long read_file_all(const char *p)
{
	long total = 0;
	ssize_t n;
	int fd = open(p, O_RDONLY);

	if (fd < 0)
		return -1;
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		total += n;
	close(fd);
	return total;
}

static int body_log(long gen)
{
	char p[256], line[128];
	int fd, n, bad = 0;

	if (put_file(path(p, sizeof(p), "logs/job-%ld.log", gen), O_TRUNC, NUM("log_kb") << 10))
		bad = 1;
	fd = open(path(p, sizeof(p), "shared.log"), O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd < 0)
		return 1;
	n = snprintf(line, sizeof(line), "gen %ld pid %d: job ran, %ld KiB of log\n",
		     gen, getpid(), NUM("log_kb"));
	if (write(fd, line, n) != n)
		bad = 1;
	close(fd);
	if (NUM("keep") && gen > NUM("keep"))
		unlink(path(p, sizeof(p), "logs/job-%ld.log", gen - NUM("keep")));
	return bad;
}

static int body_read(long gen)
{
	long nfiles = NUM("shared_files") ? NUM("shared_files") : 1;
	char p[256], tmp[256];
	int i;

	(void)gen;
	for (i = 0; i < 4; i++) {
		path(p, sizeof(p), "shared/s%u", rnd(nfiles));
		if (read_file_all(p) < 0 && put_file(p, O_EXCL, NUM("file_kb") << 10) && errno != EEXIST)
			return 1;
	}
	if (rnd(16) == 0) {
		/* A new version of a shared file, as a package update does it. */
		path(p, sizeof(p), "shared/s%u", rnd(nfiles));
		path(tmp, sizeof(tmp), "shared/.new-%ld", gen);
		if (put_file(tmp, O_TRUNC, NUM("file_kb") << 10) || rename(tmp, p))
			return 1;
	}
	return 0;
}

static void remove_tree(const char *dir, long nfiles)
{
	char p[300];
	long i;

	for (i = 0; i < nfiles; i++) {
		snprintf(p, sizeof(p), "%s/f%ld", dir, i);
		unlink(p);
	}
	rmdir(dir);
}

static int body_files(long gen)
{
	long i, n = NUM("files");
	char d[256], p[300];

	path(d, sizeof(d), "tree/g%ld", gen);
	if (mkdir(d, 0755) && errno != EEXIST)
		return 1;
	for (i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s/f%ld", d, i);
		if (put_file(p, O_TRUNC, rnd(1025)))
			return 1;
	}
	/* Jobs up to gen - jobs are done (slots): delete an older tree. */
	if (gen > NUM("jobs") + 8)
		remove_tree(path(d, sizeof(d), "tree/g%ld", gen - NUM("jobs") - 8), n);
	return 0;
}

static int body_neg(long gen)
{
	char p[256];
	struct stat st;
	long i;

	for (i = 0; i < NUM("lookups"); i++) {
		path(p, sizeof(p), "neg/missing-%ld-%u", gen, rnd(1u << 30));
		if (stat(p, &st) == 0 || errno != ENOENT)
			return 1;
	}
	return 0;
}

static int touch_anon(long kb)
{
	char *m;
	long i;

	if (!kb)
		return 0;
	m = malloc(kb << 10);
	if (!m)
		return 1;
	for (i = 0; i < kb << 10; i += 4096)
		m[i] = (char)i;
	free(m);
	return 0;
}

static int body_anon(long gen)
{
	(void)gen;
	return touch_anon(NUM("anon_kb"));
}

static int body_tmpfs(long gen)
{
	char p[256], q[256];

	if (put_file(path(p, sizeof(p), "tmp/job-%ld", gen), O_TRUNC, NUM("tmpfs_kb") << 10))
		return 1;
	if (rnd(2))
		unlink(p);
	/* A scratch file that lives only as long as the job. */
	if (put_file(path(q, sizeof(q), "tmp/scratch-%ld", gen), O_TRUNC, 4096))
		return 1;
	unlink(q);
	if (NUM("keep") && gen > NUM("keep"))
		unlink(path(p, sizeof(p), "tmp/job-%ld", gen - NUM("keep")));
	return 0;
}

static int body_fork(long gen)
{
	int status;
	pid_t pid;

	(void)gen;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0)
		_exit(touch_anon(64));
	if (waitpid(pid, &status, 0) != pid)
		return 1;
	return !WIFEXITED(status) || WEXITSTATUS(status);
}

/* Send len bytes from a to b and read them back on b. */
static int pump(int a, int b, long len)
{
	static char in[4096];
	long sent = 0, got = 0;

	while (got < len) {
		if (sent < len) {
			long n = len - sent < (long)sizeof(in) ? len - sent : (long)sizeof(in);
			ssize_t w = write(a, chunk, n);

			if (w < 0)
				return 1;
			sent += w;
		}
		while (got < sent) {
			ssize_t r = read(b, in, sizeof(in));

			if (r <= 0)
				return 1;
			got += r;
		}
	}
	return 0;
}

static int body_sock(long gen)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t salen = sizeof(sa);
	int sv[2], l = -1, c = -1, s = -1, bad = 1;
	long len = NUM("sock_kb") << 10;

	(void)gen;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 1;
	bad = pump(sv[0], sv[1], len) || pump(sv[1], sv[0], len);
	close(sv[0]);
	close(sv[1]);
	if (bad)
		return 1;
	bad = 1;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&sa, &salen))
		goto out;
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&sa, sizeof(sa)))
		goto out;
	s = accept(l, NULL, NULL);
	if (s < 0)
		goto out;
	bad = pump(c, s, len) || pump(s, c, len);
out:
	if (s >= 0)
		close(s);
	if (c >= 0)
		close(c);
	if (l >= 0)
		close(l);
	return bad;
}

static int (*const bodies[NBODIES])(long) = {
	body_log, body_read, body_files, body_neg, body_anon, body_tmpfs, body_fork, body_sock,
};

/* The job, in its own cgroup: every body of the mix, in order. */
static int run_job(long gen)
{
	long sl = slice_of(gen);
	int *m = mix[(sl ? sl - 1 : 0) % nmixes], n = nmix[(sl ? sl - 1 : 0) % nmixes];
	int i, failed = 0;

	rng_seed(gen);
	for (i = 0; i < n; i++) {
		errno = 0;
		if (bodies[m[i]](gen)) {
			printf("soak: job %ld: %s failed (%s)\n", gen, body_names[m[i]], strerror(errno));
			failed = 1;
		}
	}
	return failed;
}

/* ---- cgroups and processes */

static long dying(void)
{
	return dying_below(STR("parent"));
}

static volatile sig_atomic_t hog_stop;

static void hog_signal(int sig)
{
	(void)sig;
	hog_stop = 1;
}

/* The memory hog: hog_mb of anon memory, touched every 2 s so it stays hot. */
static int hog(long mb)
{
	long i, len = mb << 20;
	char *m = malloc(len);

	signal(SIGTERM, hog_signal);
	if (!m)
		return 1;
	while (!hog_stop) {
		for (i = 0; i < len; i += 4096)
			m[i]++;
		sleep_ms(2000);
	}
	return 0;
}

/* ---- records */

static int out_fd = -1;
static long t0, seq;

struct buf {
	char *p;
	size_t len, cap;
	long lines;
};

static void bprintf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < b->cap - b->len)
			break;
		b->cap = b->cap * 2 + n + 1;
		b->p = realloc(b->p, b->cap);
		if (!b->p) {
			perror("soak: realloc");
			exit(2);
		}
	}
	b->len += n;
}

static void out_write(const char *p, size_t len)
{
	if (write_all(out_fd, p, len))
		perror("soak: writing records");
}

static void record(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vrecord(out_fd, "soak", fmt, ap);
	va_end(ap);
}

static char fbuf[512 << 10];

/* The whole file in fbuf, NUL-terminated; NULL if it cannot be read. */
static char *slurp(const char *p)
{
	size_t len = 0;
	ssize_t n;
	int fd = open(p, O_RDONLY);

	if (fd < 0)
		return NULL;
	while (len < sizeof(fbuf) - 1 && (n = read(fd, fbuf + len, sizeof(fbuf) - 1 - len)) > 0)
		len += n;
	close(fd);
	fbuf[len] = 0;
	return fbuf;
}

/* "key value" per line (cgroup.stat, memory.stat, vmstat). */
static void sample_kv(struct buf *b, const char *source, const char *p)
{
	char *s = slurp(p), *line, *save = NULL, key[128];
	long long v;

	if (!s)
		return;
	for (line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (sscanf(line, "%127s %lld", key, &v) == 2) {
			bprintf(b, "%s %s %lld\n", source, key, v);
			b->lines++;
		}
}

static void sample_meminfo(struct buf *b)
{
	char *s = slurp("/proc/meminfo"), *line, *save = NULL, key[128];
	long long v;

	if (!s)
		return;
	for (line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (sscanf(line, "%127[^:]: %lld", key, &v) == 2) {
			bprintf(b, "meminfo %s %lld\n", key, v);
			b->lines++;
		}
}

static void sample_slabinfo(struct buf *b)
{
	char *s = slurp("/proc/slabinfo"), *line, *save = NULL, name[128];
	long long active, num, size;

	if (!s)
		return;
	for (line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#' || !strncmp(line, "slabinfo", 8))
			continue;
		if (sscanf(line, "%127s %lld %lld %lld", name, &active, &num, &size) != 4)
			continue;
		bprintf(b, "slabinfo %s:active_objs %lld\nslabinfo %s:num_objs %lld\n"
			"slabinfo %s:objsize %lld\nslabinfo %s:bytes %lld\n",
			name, active, name, num, name, size, name, num * size);
		b->lines += 4;
	}
}

static void sample_cgroups(struct buf *b)
{
	char *s = slurp("/proc/cgroups"), *line, *save = NULL, name[64];
	long long hier, num;

	if (!s)
		return;
	for (line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (line[0] != '#' && sscanf(line, "%63s %lld %lld", name, &hier, &num) == 3) {
			bprintf(b, "cgroups %s:num_cgroups %lld\n", name, num);
			b->lines++;
		}
}

/* The census's totals by pin (census/memcg_census.c), where it is loaded. */
static void sample_census(struct buf *b)
{
	struct timespec a, z;
	char *t, *w, *save = NULL, key[32];
	long long v;

	clock_gettime(CLOCK_MONOTONIC, &a);
	t = slurp("/proc/memcg_census_totals");
	clock_gettime(CLOCK_MONOTONIC, &z);
	if (!t || strncmp(t, "total ", 6))
		return;
	/* What one read costs: a walk of every memcg, the dying ones read. */
	bprintf(b, "census read_us %lld\n",
		(long long)(z.tv_sec - a.tv_sec) * 1000000 + (z.tv_nsec - a.tv_nsec) / 1000);
	b->lines++;
	t += strlen("total ");
	t[strcspn(t, "\n")] = 0;
	for (w = strtok_r(t, " ", &save); w; w = strtok_r(NULL, " ", &save))
		if (sscanf(w, "%31[a-z_]=%lld", key, &v) == 2) {
			bprintf(b, "census %s %lld\n", key, v);
			b->lines++;
		}
}

static struct buf snap;
static long sample_read_ms, sample_write_ms, sample_count, sample_max_bytes;

/* One snapshot, built in memory and written at once.  extra: more header attributes. */
static void sample(long gen, const char *extra)
{
	char p[300], *s;
	long t = now_ms();

	snap.len = 0;
	snap.lines = 0;
	bprintf(&snap, "@@ sample %ld gen=%ld t_ms=%ld%s%s\n", ++seq, gen, t - t0,
		extra ? " " : "", extra ? extra : "");
	snprintf(p, sizeof(p), "%s/cgroup.stat", STR("parent"));
	sample_kv(&snap, "cgroup.stat", p);
	snprintf(p, sizeof(p), "%s/memory.current", STR("parent"));
	s = slurp(p);
	if (s) {
		bprintf(&snap, "memory.current bytes %lld\n", atoll(s));
		snap.lines++;
	}
	snprintf(p, sizeof(p), "%s/memory.stat", STR("parent"));
	sample_kv(&snap, "memory.stat", p);
	sample_meminfo(&snap);
	sample_kv(&snap, "vmstat", "/proc/vmstat");
	sample_slabinfo(&snap);
	sample_cgroups(&snap);
	sample_census(&snap);
	bprintf(&snap, "@@ endsample %ld lines=%ld\n", seq, snap.lines);
	sample_read_ms += now_ms() - t;
	t = now_ms();
	out_write(snap.p, snap.len);
	sample_write_ms += now_ms() - t;
	sample_count++;
	if ((long)snap.len > sample_max_bytes)
		sample_max_bytes = snap.len;
}

static pid_t writer_pid;

/*
 * Records go through a pipe to a writer process: a serial port takes about
 * 40 ms per KiB under emulation, and the jobs should not wait for it.  The
 * pipe is large; when it is full the soak waits, nothing is dropped.
 */
static void open_out(void)
{
	static char wbuf[64 << 10];
	long bytes = 0, busy = 0, t;
	int fd, p[2];
	ssize_t n;

	fd = open_raw(STR("out"));
	if (fd < 0) {
		fprintf(stderr, "soak: cannot open %s: %s\n", STR("out"), strerror(errno));
		exit(2);
	}
	if (pipe(p)) {
		perror("soak: pipe");
		exit(2);
	}
	fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
	writer_pid = fork();
	if (writer_pid < 0) {
		perror("soak: fork");
		exit(2);
	}
	if (writer_pid == 0) {
		close(p[1]);
		while ((n = read(p[0], wbuf, sizeof(wbuf))) != 0) {
			if (n < 0) {
				if (errno == EINTR)
					continue;
				break;
			}
			t = now_ms();
			write_all(fd, wbuf, n);
			busy += now_ms() - t;
			bytes += n;
		}
		tcdrain(fd);
		printf("soak: the writer sent %ld bytes to %s, busy %ld ms\n", bytes, STR("out"), busy);
		_exit(0);
	}
	close(p[0]);
	close(fd);
	out_fd = p[1];
}

/* All records written out: the writer drains the port, then exits. */
static void close_out(void)
{
	close(out_fd);
	waitpid(writer_pid, NULL, 0);
}

static void setup(void)
{
	static const char *const dirs[] = { "", "logs", "shared", "tree", "neg", "tmp" };
	char p[300];
	unsigned i;

	memset(chunk, 'x', sizeof(chunk));
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		path(p, sizeof(p), "%s", dirs[i]);
		if (mkdir(p, 0755) && errno != EEXIST) {
			fprintf(stderr, "soak: mkdir %s: %s\n", p, strerror(errno));
			exit(2);
		}
	}
	path(p, sizeof(p), "tmp");
	if (mount("soak-tmp", p, "tmpfs", 0, "size=50%") && errno != EBUSY) {
		fprintf(stderr, "soak: mount tmpfs on %s: %s\n", p, strerror(errno));
		exit(2);
	}
	if (mkdir(STR("parent"), 0755) && errno != EEXIST) {
		fprintf(stderr, "soak: mkdir %s: %s\n", STR("parent"), strerror(errno));
		exit(2);
	}
	snprintf(p, sizeof(p), "%s/cgroup.subtree_control", STR("parent"));
	if (write_str(p, "+memory") < 0) {
		fprintf(stderr, "soak: cannot enable memory in %s\n", p);
		exit(2);
	}
	write_str(p, "+pids");
	for (i = 1; NUM("slices") > 1 && i <= (unsigned)NUM("slices"); i++) {
		snprintf(p, sizeof(p), "%s/slice-%u", STR("parent"), i);
		if (mkdir(p, 0755) && errno != EEXIST) {
			fprintf(stderr, "soak: mkdir %s: %s\n", p, strerror(errno));
			exit(2);
		}
		snprintf(p, sizeof(p), "%s/slice-%u/cgroup.subtree_control", STR("parent"), i);
		if (write_str(p, "+memory") < 0) {
			fprintf(stderr, "soak: cannot enable memory in %s\n", p);
			exit(2);
		}
		write_str(p, "+pids");
	}
}

/* ---- the main loop */

struct slot {
	pid_t pid;
	long gen;
	char cg[300];
};

static long failed_jobs, failed_cgroups, rmdir_retries;

static void reap(struct slot *s)
{
	int status = 0, i;
	pid_t pid;

	if (!s->pid)
		return;
	while ((pid = waitpid(s->pid, &status, 0)) < 0 && errno == EINTR)
		;
	if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		failed_jobs++;
		if (pid > 0 && WIFSIGNALED(status))
			printf("soak: job %ld killed by signal %d\n", s->gen, WTERMSIG(status));
	}
	s->pid = 0;
	/* The job is reaped, so the cgroup is empty; a busy rmdir is retried. */
	for (i = 0; rmdir(s->cg) && i < 100; i++) {
		if (errno != EBUSY) {
			failed_cgroups++;
			return;
		}
		rmdir_retries++;
		sleep_ms(10);
	}
	if (i == 100)
		failed_cgroups++;
}

static long every, every_ms, progress_ms, last_sample_gen, next_sample_ms, next_progress_ms;

/* After each reaped generation: a snapshot and a progress line when due. */
static void after_reap(long done)
{
	long t = now_ms() - t0;

	if ((every && done % every == 0 && done != last_sample_gen) ||
	    (every_ms && t >= next_sample_ms)) {
		sample(done, NULL);
		last_sample_gen = done;
		while (every_ms && next_sample_ms <= t)
			next_sample_ms += every_ms;
	}
	if (t >= next_progress_ms) {
		record("@@ progress gen=%ld t_ms=%ld dying=%ld", done, t, dying());
		while (next_progress_ms <= t)
			next_progress_ms += progress_ms;
	}
}

int main(int argc, char **argv)
{
	long gens, secs, jobs, gen, g, done = 0, t;
	struct slot *slots, *s;
	pid_t hog_pid = 0;
	struct knob *k;
	struct buf run = { 0 };
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_args(argc, argv);
	parse_mix();
	gens = NUM("gens");
	secs = NUM("secs");
	jobs = NUM("jobs");
	every = NUM("sample_every");
	every_ms = NUM("sample_ms");
	progress_ms = NUM("progress_ms");
	slots = calloc(jobs, sizeof(*slots));
	if (!slots)
		return 2;
	setup();
	open_out();

	/* "@@ run soak seed= gens= jobs= mix= hog_mb=" first, then the other knobs. */
	bprintf(&run, "@@ run soak");
	for (k = knobs; k->name; k++) {
		if (k->type == K_NUM)
			bprintf(&run, " %s=%ld", k->name, k->num);
		else
			bprintf(&run, " %s=%s", k->name, k->str);
	}
	bprintf(&run, "\n");
	out_write(run.p, run.len);
	printf("soak: %s", run.p + 3);

	if (NUM("hog_mb")) {
		char cg[] = "/sys/fs/cgroup/soak-hog";

		if (mkdir(cg, 0755) && errno != EEXIST) {
			fprintf(stderr, "soak: mkdir %s: %s\n", cg, strerror(errno));
			return 2;
		}
		hog_pid = spawn_in(cg, hog, NUM("hog_mb"));
		if (hog_pid < 0) {
			fprintf(stderr, "soak: cannot start the hog: %s\n", strerror(errno));
			return 2;
		}
	}

	t0 = now_ms();
	sample(0, NULL);
	next_sample_ms = every_ms;
	next_progress_ms = progress_ms;
	record("@@ progress gen=0 t_ms=%ld dying=%ld", now_ms() - t0, dying());

	/* Job gen goes into slot gen % jobs once the job of gen - jobs is reaped. */
	for (gen = 1;; gen++) {
		s = &slots[gen % jobs];
		t = now_ms() - t0;
		if ((gens && gen > gens) || (secs && t >= secs * 1000))
			break;
		if (s->pid) {
			reap(s);
			done = s->gen;
			after_reap(done);
		}
		/* rate: generation gen starts no earlier than (gen - 1) / rate s in */
		if (NUM("rate") && (gen - 1) * 1000 / NUM("rate") > t)
			sleep_ms((gen - 1) * 1000 / NUM("rate") - t);
		s->gen = gen;
		if (slice_of(gen))
			snprintf(s->cg, sizeof(s->cg), "%s/slice-%ld/job-%ld", STR("parent"),
				 slice_of(gen), gen);
		else
			snprintf(s->cg, sizeof(s->cg), "%s/job-%ld", STR("parent"), gen);
		if (mkdir(s->cg, 0755)) {
			fprintf(stderr, "soak: mkdir %s: %s\n", s->cg, strerror(errno));
			failed_cgroups++;
			break;
		}
		s->pid = spawn_in(s->cg, run_job, gen);
		if (s->pid < 0) {
			fprintf(stderr, "soak: cannot start job %ld: %s\n", gen, strerror(errno));
			s->pid = 0;
			failed_jobs++;
			rmdir(s->cg);
			break;
		}
	}
	/* The jobs still running, in generation order. */
	for (g = gen - jobs > 1 ? gen - jobs : 1; g < gen; g++) {
		s = &slots[g % jobs];
		if (s->pid && s->gen == g) {
			reap(s);
			done = g;
			after_reap(done);
		}
	}
	t = now_ms() - t0;
	if (done != last_sample_gen)
		sample(done, NULL);
	record("@@ progress gen=%ld t_ms=%ld dying=%ld", done, t, dying());

	if (hog_pid > 0) {
		kill(hog_pid, SIGTERM);
		waitpid(hog_pid, NULL, 0);
	}
	if (NUM("settle_s")) {
		/*
		 * Without dropping anything: what still pins dying memcgs once
		 * the flusher has written back what the jobs dirtied
		 * (dirty_expire_centisecs, 30 s by default) and the writeback
		 * structures of clean inodes were switched to the parent.
		 */
		sleep_ms(NUM("settle_s") * 1000);
		sample(done, "after=settle");
	}
	if (NUM("drop")) {
		long last, now_dying, waited = 0, flat = 0;

		sync();
		write_str("/proc/sys/vm/drop_caches", "3");
		/*
		 * The releases that follow are asynchronous (RCU, workqueues,
		 * the switch of clean cgwbs) and take longer on a loaded host:
		 * wait until the dying count is 0 or has not fallen for 2 s,
		 * at least 1 s and at most drain_s.
		 */
		last = dying();
		while (waited < NUM("drain_s") * 1000 &&
		       (waited < 1000 || (last > 0 && flat < 2000))) {
			sleep_ms(100);
			waited += 100;
			now_dying = dying();
			if (now_dying >= 0 && now_dying < last) {
				last = now_dying;
				flat = 0;
			} else {
				flat += 100;
			}
		}
		printf("soak: %ld dying memory cgroups %ld ms after drop_caches\n", last, waited);
		sample(done, "after=drop_caches");
	}
	rc = failed_jobs || failed_cgroups ? 1 : 0;
	record("@@ end rc=%d gens=%ld t_ms=%ld", rc, done, t);
	close_out();
	printf("soak: %ld generations in %ld ms (%.1f gen/s), %ld dying memory cgroups at the end\n",
	       done, t, t ? done * 1000.0 / t : 0.0, dying());
	if (sample_count)
		printf("soak: %ld snapshots, %ld ms to read and %ld ms to write each on average, largest %ld bytes\n",
		       sample_count, sample_read_ms / sample_count, sample_write_ms / sample_count,
		       sample_max_bytes);
	if (rc)
		printf("soak: %ld jobs failed, %ld cgroup operations failed\n", failed_jobs, failed_cgroups);
	if (rmdir_retries)
		printf("soak: %ld busy rmdir retries\n", rmdir_retries);
	return rc;
}
