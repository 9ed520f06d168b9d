/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the guest tools share: key=value knobs with a help table, time,
 * cgroup files, starting a child inside a cgroup, the raw records port.
 * Header only, because guest/image.sh builds every guest tool (a .c file) on its
 * own; define _GNU_SOURCE before including it.  soak.c, stress.c and bench.c
 * use it.
 */
#ifndef GUEST_TOOL_H
#define GUEST_TOOL_H

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define TOOL_UNUSED __attribute__((unused))

/* ---- knobs: one table per tool; "TOOL help" prints it */

enum { K_NUM, K_STR };

struct knob {
	const char *name;
	int type;
	long num;
	const char *str;
	const char *help;
};

static const char *tool_name = "tool";
static struct knob *tool_knobs;

static TOOL_UNUSED struct knob *knob(const char *name)
{
	struct knob *k;

	for (k = tool_knobs; k->name; k++)
		if (!strcmp(k->name, name))
			return k;
	fprintf(stderr, "%s: internal error: no knob %s\n", tool_name, name);
	exit(2);
}

#define NUM(name) (knob(name)->num)
#define STR(name) (knob(name)->str)

static TOOL_UNUSED void knob_usage(FILE *f)
{
	struct knob *k;

	fprintf(f, "usage: %s [key=value ...]\n", tool_name);
	for (k = tool_knobs; k->name; k++) {
		if (k->type == K_NUM)
			fprintf(f, "  %-14s %-8ld %s\n", k->name, k->num, k->help);
		else
			fprintf(f, "  %-14s %s\n  %-14s %-8s %s\n", k->name, k->str, "", "", k->help);
	}
}

/* key=value arguments into the table; "help" prints it and exits. */
static TOOL_UNUSED void knob_parse(const char *name, struct knob *table, int argc, char **argv)
{
	int i;

	tool_name = name;
	tool_knobs = table;
	for (i = 1; i < argc; i++) {
		char *eq = strchr(argv[i], '='), *end;
		struct knob *k;

		if (!strcmp(argv[i], "help") || !strcmp(argv[i], "--help")) {
			knob_usage(stdout);
			exit(0);
		}
		if (!eq)
			goto bad;
		*eq = 0;
		for (k = table; k->name; k++)
			if (!strcmp(k->name, argv[i]))
				break;
		if (!k->name) {
			fprintf(stderr, "%s: unknown knob '%s'\n", name, argv[i]);
			goto bad;
		}
		if (k->type == K_STR) {
			k->str = eq + 1;
			continue;
		}
		errno = 0;
		k->num = strtol(eq + 1, &end, 10);
		if (errno || end == eq + 1 || *end || k->num < 0) {
			fprintf(stderr, "%s: %s wants a number >= 0, not '%s'\n", name, k->name, eq + 1);
			goto bad;
		}
	}
	return;
bad:
	knob_usage(stderr);
	exit(2);
}

/* " key=value" for every knob, for the "@@ run" record. */
static TOOL_UNUSED int knob_words(char *buf, size_t len)
{
	struct knob *k;
	size_t n = 0;

	for (k = tool_knobs; k->name && n < len; k++) {
		if (k->type == K_NUM)
			n += snprintf(buf + n, len - n, " %s=%ld", k->name, k->num);
		else
			n += snprintf(buf + n, len - n, " %s=%s", k->name, k->str);
	}
	return n < len ? (int)n : (int)len - 1;
}

/*
 * The comma-separated names of the string knob @kname, as indices into
 * @names (@n of them), at most @max into @out; returns how many.  An unknown
 * name or one too many exits 2, naming the knob and listing the names.
 */
/* A comma-separated list of names (here a part of knob kname's value) into indices. */
static TOOL_UNUSED int parse_names(const char *kname, const char *list, const char *const *names,
				   int n, int *out, int max)
{
	char *s = strdup(list), *tok, *save = NULL;
	int i, count = 0;

	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < n; i++)
			if (!strcmp(tok, names[i]))
				break;
		if (i == n || count == max) {
			fprintf(stderr, "%s: %s: %s '%s' (names:", tool_name, kname,
				i == n ? "unknown name" : "too many names at", tok);
			for (i = 0; i < n; i++)
				fprintf(stderr, "%c%s", i ? ',' : ' ', names[i]);
			fprintf(stderr, "; at most %d)\n", max);
			exit(2);
		}
		out[count++] = i;
	}
	free(s);
	return count;
}

static TOOL_UNUSED int knob_names(const char *kname, const char *const *names, int n, int *out, int max)
{
	return parse_names(kname, STR(kname), names, n, out, max);
}

/* ---- time */

static TOOL_UNUSED long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static TOOL_UNUSED void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---- files: cgroup knobs, /proc */

/* Write s to p in one write(); -1 with errno set when it fails. */
static TOOL_UNUSED int write_str(const char *p, const char *s)
{
	ssize_t n;
	int fd = open(p, O_WRONLY), e;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	e = errno;
	close(fd);
	if (n != (ssize_t)strlen(s)) {
		errno = n < 0 ? e : EIO;
		return -1;
	}
	return 0;
}

/* Up to len - 1 bytes of p, NUL-terminated; -1 with errno when it cannot be read. */
static TOOL_UNUSED int read_str(const char *p, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n = 0;
	int fd = open(p, O_RDONLY), e;

	if (fd < 0)
		return -1;
	while (got < len - 1 && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += n;
	e = errno;
	close(fd);
	buf[got] = 0;
	if (n < 0) {
		errno = e;
		return -1;
	}
	return 0;
}

/* The value of "key value" (cgroup.stat, memory.events, vmstat) or "key: value" (meminfo) in p; -1 if absent. */
static TOOL_UNUSED long long key_value(const char *p, const char *key)
{
	static char buf[16 << 10];
	size_t klen = strlen(key);
	char *s, *nl;

	if (read_str(p, buf, sizeof(buf)))
		return -1;
	for (s = buf; *s; s = nl + 1) {
		if (!strncmp(s, key, klen) && (s[klen] == ' ' || s[klen] == ':'))
			return atoll(s + klen + 1);
		nl = strchrnul(s, '\n');
		if (!*nl)
			break;
	}
	return -1;
}

/* Dying memory cgroups below cg: nr_dying_subsys_memory, or nr_dying_descendants before 6.12. */
static TOOL_UNUSED long dying_below(const char *cg)
{
	char p[320];
	long long v;

	snprintf(p, sizeof(p), "%s/cgroup.stat", cg);
	v = key_value(p, "nr_dying_subsys_memory");
	if (v < 0)
		v = key_value(p, "nr_dying_descendants");
	return v;
}

/* ---- processes */

static int tool_use_clone3 = 1;

/*
 * Start fn(arg) in a child that lives in cgroup cg from its first
 * instruction (clone3 CLONE_INTO_CGROUP; cgroup.procs where clone3 cannot).
 * -1 with errno when it cannot be started.
 */
static TOOL_UNUSED pid_t spawn_in(const char *cg, int (*fn)(long), long arg)
{
	struct clone_args ca = { .flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD };
	char p[300];
	pid_t pid = -1;
	int fd, e;

	if (tool_use_clone3) {
		fd = open(cg, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		ca.cgroup = fd;
		pid = syscall(SYS_clone3, &ca, sizeof(ca));
		if (pid == 0)
			_exit(fn(arg));
		e = errno;
		close(fd);
		if (pid > 0)
			return pid;
		if (e != ENOSYS && e != E2BIG) {
			errno = e;
			return -1;
		}
		printf("%s: clone3(CLONE_INTO_CGROUP) failed (%s): moving children with cgroup.procs\n",
		       tool_name, strerror(e));
		tool_use_clone3 = 0;
	}
	pid = fork();
	if (pid == 0) {
		snprintf(p, sizeof(p), "%s/cgroup.procs", cg);
		if (write_str(p, "0"))
			_exit(125);
		_exit(fn(arg));
	}
	return pid;
}

/* ---- the records port */

/* Open a serial port (or file) for records, raw: lines end in "\n" alone, no echo. */
static TOOL_UNUSED int open_raw(const char *p)
{
	struct termios tio;
	int fd = open(p, O_WRONLY | O_NOCTTY | O_APPEND | O_CREAT, 0644);

	if (fd >= 0 && tcgetattr(fd, &tio) == 0) {
		cfmakeraw(&tio);
		tcsetattr(fd, TCSANOW, &tio);
	}
	return fd;
}

/* Write all of p to fd (a record port or a file), through EINTR; -1 on error. */
static TOOL_UNUSED int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= n;
	}
	return 0;
}

/*
 * One record: fmt and a newline, cut to 4 KiB, written whole to fd
 * (qemu-run/records/RECORDS.md).  The tool's name is for the error.
 */
static TOOL_UNUSED void vrecord(int fd, const char *tool, const char *fmt, va_list ap)
{
	char line[4096];
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);

	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	if (write_all(fd, line, n))
		fprintf(stderr, "%s: writing a record: %s\n", tool, strerror(errno));
}

/* The guest's online NUMA nodes (numa=fake=N on the command line makes N). */
static TOOL_UNUSED int count_nodes(void)
{
	char buf[128], *s;
	long a, b;
	int n = 0;

	if (read_str("/sys/devices/system/node/online", buf, sizeof(buf)))
		return 1;
	for (s = buf; *s && *s != '\n';) {
		a = b = strtol(s, &s, 10);
		if (*s == '-')
			b = strtol(s + 1, &s, 10);
		n += b - a + 1;
		if (*s == ',')
			s++;
		else
			break;
	}
	return n ? n : 1;
}

/* ---- random numbers: xorshift64*, one stream per process, seeded by each tool */

static uint64_t tool_rng = 1;

static TOOL_UNUSED void rng_set(uint64_t seed)
{
	tool_rng = seed ? seed : 1;
}

static TOOL_UNUSED uint64_t rnd64(void)
{
	tool_rng ^= tool_rng >> 12;
	tool_rng ^= tool_rng << 25;
	tool_rng ^= tool_rng >> 27;
	return tool_rng * 0x2545f4914f6cdd1dULL;
}

/* Uniform in [0, n); 0 for n == 0 (the stream still moves on). */
static TOOL_UNUSED unsigned rnd(unsigned n)
{
	uint64_t r = rnd64();

	return n ? (unsigned)(r >> 33) % n : 0;
}

/* Write bytes of buf (repeated) to p, created or opened with flags; fsync it too. -1 on error. */
static TOOL_UNUSED int write_file(const char *p, int flags, long bytes, int do_fsync, const char *buf, long buflen)
{
	int fd = open(p, O_WRONLY | O_CREAT | flags, 0644);

	if (fd < 0)
		return -1;
	while (bytes > 0) {
		long n = bytes < buflen ? bytes : buflen;

		if (write(fd, buf, n) != n) {
			close(fd);
			return -1;
		}
		bytes -= n;
	}
	if (do_fsync && fsync(fd)) {
		close(fd);
		return -1;
	}
	return close(fd);
}

/* ---- MGLRU through /sys/kernel/debug/lru_gen */

/*
 * Age (+) or evict (-) the lruvecs of cg (a path below /sys/fs/cgroup, "/"
 * for the root) on every node once, through /sys/kernel/debug/lru_gen:
 * "+ ID NODE MAX_SEQ" makes a new generation, "- ID NODE MIN_SEQ" evicts
 * the oldest.  0, or -errno of the last command that failed (-ENOENT: no
 * such memcg listed).
 */
static TOOL_UNUSED int lru_gen_cmd(const char *cg, int age)
{
	static char buf[64 << 10];
	char want[320], cmd[96], *s, *nl;
	long id = -1, node = -1, first = -1, last = -1;
	int in = 0, rc = 0, done = 0;

	snprintf(want, sizeof(want), "/%s", strcmp(cg, "/") ? cg : "");
	if (!strcmp(cg, "/"))
		snprintf(want, sizeof(want), "/");
	if (read_str("/sys/kernel/debug/lru_gen", buf, sizeof(buf)))
		return -errno;
	for (s = buf;; s = nl + 1) {
		char w0[32], w1[320];
		int nw;

		nl = strchrnul(s, '\n');
		nw = sscanf(s, "%31s %319s", w0, w1);
		if (!*nl && in && node >= 0 && nw >= 1 && isdigit((unsigned char)w0[0])) {
			if (first < 0)
				first = atol(w0);
			last = atol(w0);
		}
		if (!*nl || (nw >= 1 && (!strcmp(w0, "memcg") || !strcmp(w0, "node")))) {
			/* a node's list ended: act on it */
			if (in && node >= 0 && first >= 0) {
				/* aging forced (a full window of empty generations is no error) */
				if (age)
					snprintf(cmd, sizeof(cmd), "+ %ld %ld %ld 1 1", id, node, last);
				else
					snprintf(cmd, sizeof(cmd), "- %ld %ld %ld", id, node, first);
				/*
				 * A dying memcg of the same path (an earlier
				 * play's) is listed too: the live one must take
				 * it, the dead may refuse.
				 */
				if (write_str("/sys/kernel/debug/lru_gen", cmd))
					rc = -errno;
				else
					done++;
			}
			first = last = -1;
		}
		if (nw == 2 && !strcmp(w0, "memcg")) {
			char path[320];

			if (sscanf(s, "memcg %ld %319s", &id, path) == 2)
				in = !strcmp(path, want);
			else
				in = 0;
			node = -1;
		} else if (nw == 2 && !strcmp(w0, "node")) {
			node = atol(w1);
		} else if (in && node >= 0 && nw >= 1 && isdigit((unsigned char)w0[0])) {
			long sq = atol(w0);

			if (first < 0)
				first = sq;
			last = sq;
		}
		if (!*nl)
			break;
	}
	if (done)
		return 0;
	return rc ? rc : -ENOENT;
}

#endif /* GUEST_TOOL_H */
