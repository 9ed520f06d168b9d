// SPDX-License-Identifier: GPL-2.0
/*
 * scenario: the guest side of the differential oracle.  Plays scenario
 * files (scenarios/NAME.scn, the language is in scenarios/README.md) one after
 * the other and records, on the samples port, what every action did and,
 * at each checkpoint, every counter of every live cgroup, then audits them
 * (conservation: a parent holds at least its children, the root agrees with
 * /proc/meminfo, no counter beyond RAM plus swap, ancestors back to their
 * baseline once everything is freed, no kernel report).  The host runs the
 * same files on two kernels and compares (reports/oracle.py).  The records
 * are in qemu-run/records/RECORDS.md.
 *
 *   scenario files=a.scn,b.scn [dir=/scenarios] [out=/dev/ttyS2] [seed=1]
 */
#define _GNU_SOURCE
#include "tool.h"

#include <ctype.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <arpa/inet.h>

static struct knob knobs[] = {
	{ "files", K_STR, 0, "", "comma-separated scenario files, played in this order" },
	{ "dir", K_STR, 0, "/scenarios", "where the scenario files are" },
	{ "out", K_STR, 0, "/dev/ttyS2", "the records port (or a file)" },
	{ "seed", K_NUM, 1, NULL, "seed of the random stream ({r} in a scenario)" },
	{ "settle_ms", K_NUM, 2500, NULL, "wait before a checkpoint reads: the stats' periodic flush is 2 s" },
	{ "check", K_NUM, 0, NULL, "1: only check that the files read (on the host too: touches nothing)" },
	{ NULL, 0, 0, NULL, NULL },
};

#define MAX_LINES 1024
#define MAX_WORDS 16
#define MAX_TASKS 32
#define MAX_CG 256
#define MAX_DEPTH 8

static int out_fd = -1;
static char cgroot[128];	/* /sys/fs/cgroup, or /sys/fs/cgroup/memory on a v1 boot */
static int v1;
static int ncpus;
static long long ram_swap;	/* MemTotal + SwapTotal, bytes */
static int kmsg_fd = -1;

/* the scenario being played */
static const char *scen;
static int seq, kmsg_seen, failed;
static int dry;		/* check=1: read the files, do nothing */
static int removed;	/* cgroups the scenario removed */

static void record(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void record(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vrecord(out_fd, "scenario", fmt, ap);
	va_end(ap);
}

/* ---- sizes and names */

/* "64M", "4k", "4096" -> bytes; -1 when it is not a size. */
static long long parse_size(const char *s)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || v < 0)
		return -1;
	switch (toupper((unsigned char)*end)) {
	case 0:
		return v;
	case 'K':
		v <<= 10;
		break;
	case 'M':
		v <<= 20;
		break;
	case 'G':
		v <<= 30;
		break;
	default:
		return -1;
	}
	return end[1] ? -1 : v;
}

static void cg_path(char *buf, size_t len, const char *cg)
{
	if (!strcmp(cg, "/"))
		snprintf(buf, len, "%s", cgroot);
	else
		snprintf(buf, len, "%s/%s", cgroot, cg);
}

/* The outcome word of a failed call: "E" and the errno's name. */
static const char *errword(int e)
{
	static char buf[32];
	const char *n = strerrorname_np(e);

	snprintf(buf, sizeof(buf), "E%s", n ? n + 1 : "UNKNOWN");
	return buf;
}

/* ---- tasks: a child in a cgroup that does one thing */

struct task {
	char name[32];
	pid_t pid;
	int ack;		/* read end: one byte per phase reached */
	int status;		/* once reaped */
	int reaped;
};

static struct task tasks[MAX_TASKS];

/* what a scenario made, undone at its end whatever happened */
static char made_cg[MAX_CG][400];
static int nmade_cg;
static char made_file[MAX_CG][300];
static int nmade_file;

static volatile sig_atomic_t got_usr1, got_term;

static void on_usr1(int s) { (void)s; got_usr1 = 1; }
static void on_term(int s) { (void)s; got_term = 1; }

static int child_ack = -1;

static void ack(void)
{
	char c = 'R';

	if (child_ack >= 0 && write(child_ack, &c, 1) != 1)
		_exit(3);
}

/*
 * Wait in the child for SIGUSR1 (returns 1) or SIGTERM (exits).  The two
 * are blocked between the test of the flags and sigsuspend(), or one that
 * came in between would be lost and the wait last for ever.
 */
static int wait_poke(void)
{
	sigset_t block, old;

	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	while (!got_usr1 && !got_term)
		sigsuspend(&old);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (got_term)
		_exit(0);
	got_usr1 = 0;
	return 1;
}

static char iobuf[64 << 10];

static int read_file_once(const char *p)
{
	int fd = open(p, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	while ((n = read(fd, iobuf, sizeof(iobuf))) > 0)
		;
	close(fd);
	return n < 0 ? -1 : 0;
}

static char *map_anon(long long bytes)
{
	char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	for (long long i = 0; i < bytes; i += 4096)
		p[i] = (char)(i >> 12) | 1;
	return p;
}

/* A connected TCP pair on 127.0.0.1; fills in w (writer) and r (reader). */
static int tcp_pair(int *w, int *r)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	if (l < 0 || bind(l, (void *)&a, sizeof(a)) || listen(l, 1) || getsockname(l, (void *)&a, &al))
		return -1;
	*w = socket(AF_INET, SOCK_STREAM, 0);
	if (*w < 0 || connect(*w, (void *)&a, sizeof(a)))
		return -1;
	*r = accept(l, NULL, NULL);
	close(l);
	return *r < 0 ? -1 : 0;
}

/* Queue up to size bytes at the reader of a non-blocking pair, unread. */
static void sock_queue(int wr, long long size)
{
	long long sent = 0;
	ssize_t n;

	while (sent < size) {
		n = write(wr, iobuf, size - sent < (long long)sizeof(iobuf) ? size - sent : (long long)sizeof(iobuf));
		if (n <= 0)
			break;
		sent += n;
	}
}

/*
 * The body of a task: op and its words.  once: do it and return (run);
 * otherwise ack each phase and go on (start).  Returns the exit status.
 */
static int task_body(char **w, int nw, int once)
{
	const char *op = w[0];
	long long size;
	char *mem;

	if (!strcmp(op, "read") && (nw == 2 || nw == 3)) {
		int rounds = nw == 3 ? atoi(w[2]) : 1;

		for (int i = 0; i < rounds; i++)
			if (read_file_once(w[1]))
				return 1;
		if (once)
			return 0;
		ack();
		/* a working set: read it again and again until stopped */
		while (!got_term)
			if (read_file_once(w[1]))
				return 1;
		return 0;
	}
	if (!strcmp(op, "ws") && nw == 2) {
		/* a working set read on demand: once now, once more each poke */
		if (read_file_once(w[1]))
			return 1;
		if (once)
			return 0;
		for (;;) {
			ack();
			wait_poke();
			if (read_file_once(w[1]))
				return 1;
		}
	}
	if (!strcmp(op, "write") && nw == 3 && (size = parse_size(w[2])) >= 0) {
		memset(iobuf, 'w', sizeof(iobuf));
		if (write_file(w[1], O_TRUNC, size, 0, iobuf, sizeof(iobuf)))
			return 1;
		if (once)
			return 0;
		ack();
		wait_poke();
		return 0;
	}
	if ((!strcmp(op, "anon") || !strcmp(op, "hold")) && nw == 2 && (size = parse_size(w[1])) > 0) {
		mem = map_anon(size);
		if (!mem)
			return 1;
		if (once)
			return 0;
		ack();
		if (!strcmp(op, "hold")) {
			/* touch it again on each poke (a swapin), then ack */
			for (;;) {
				wait_poke();
				for (long long i = 0; i < size; i += 4096)
					((volatile char *)mem)[i]++;
				ack();
			}
		}
		while (!got_term)
			for (long long i = 0; i < size && !got_term; i += 4096)
				((volatile char *)mem)[i]++;
		return 0;
	}
	if (!strcmp(op, "sock") && (nw == 2 || (nw == 3 && !strcmp(w[2], "refill"))) &&
	    (size = parse_size(w[1])) > 0) {
		int wr, rd;
		ssize_t n;

		if (tcp_pair(&wr, &rd))
			return 1;
		fcntl(wr, F_SETFL, O_NONBLOCK);
		fcntl(rd, F_SETFL, O_NONBLOCK);
		memset(iobuf, 's', sizeof(iobuf));
		sock_queue(wr, size);
		if (once)
			return 0;
		ack();
		/* each poke: read out what is queued (and queue size again) */
		for (;;) {
			wait_poke();
			while ((n = read(rd, iobuf, sizeof(iobuf))) > 0)
				;
			if (nw == 3)
				sock_queue(wr, size);
			ack();
		}
	}
	fprintf(stderr, "scenario: unknown task op '%s' or wrong arguments\n", op);
	return 2;
}

/* Fork a task into cgroup cg (cgroup.procs, so that v1 works too). */
static pid_t task_spawn(const char *cg, char **w, int nw, int once, int *ack_fd)
{
	char p[300];
	int pfd[2];
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct sigaction sa = { .sa_handler = on_usr1 };

		close(pfd[0]);
		child_ack = pfd[1];
		sigaction(SIGUSR1, &sa, NULL);
		sa.sa_handler = on_term;
		sigaction(SIGTERM, &sa, NULL);
		cg_path(p, sizeof(p) - 16, cg);
		strcat(p, "/cgroup.procs");
		if (write_str(p, "0"))
			_exit(125);
		_exit(task_body(w, nw, once));
	}
	close(pfd[1]);
	*ack_fd = pfd[0];
	return pid;
}

static const char *status_word(int st)
{
	static char buf[32];

	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return "ok";
	if (WIFEXITED(st))
		snprintf(buf, sizeof(buf), "exit=%d", WEXITSTATUS(st));
	else
		snprintf(buf, sizeof(buf), "signal=%d", WTERMSIG(st));
	return buf;
}

static struct task *task_find(const char *name)
{
	for (int i = 0; i < MAX_TASKS; i++)
		if (tasks[i].pid && !strcmp(tasks[i].name, name))
			return &tasks[i];
	return NULL;
}

/* Wait for the task's next ack; "ok", or how it ended. */
static const char *task_wait_ack(struct task *t)
{
	char c;
	ssize_t n;

	do
		n = read(t->ack, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1)
		return "ok";
	/* it ended without acking */
	if (!t->reaped && waitpid(t->pid, &t->status, 0) == t->pid)
		t->reaped = 1;
	return t->reaped ? status_word(t->status) : "exit=255";
}

static int tasks_alive(void)
{
	int n = 0;

	for (int i = 0; i < MAX_TASKS; i++)
		if (tasks[i].pid && !tasks[i].reaped)
			n++;
	return n;
}

static void task_forget(struct task *t)
{
	close(t->ack);
	memset(t, 0, sizeof(*t));
}

/* Stop every task left (end of a scenario). */
static void tasks_reap_all(void)
{
	for (int i = 0; i < MAX_TASKS; i++) {
		struct task *t = &tasks[i];

		if (!t->pid)
			continue;
		if (!t->reaped) {
			kill(t->pid, SIGKILL);
			waitpid(t->pid, &t->status, 0);
		}
		task_forget(t);
	}
}

/* ---- the cgroup tree: one checkpoint */

struct cgval {
	char cg[300];
	long long current;	/* -1: no memory.current */
	long long sock, anon, file, shmem, swap, tcp;
};

static struct cgval cgs[MAX_CG];
static int ncgs;
static char *cpbuf;
static size_t cplen, cpcap;
static int cplines;

static void cp_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void cp_add(const char *fmt, ...)
{
	va_list ap;
	int n;

	if (cpcap - cplen < 512) {
		cpcap = cpcap ? cpcap * 2 : 1 << 16;
		cpbuf = realloc(cpbuf, cpcap);
		if (!cpbuf) {
			perror("scenario: realloc");
			exit(2);
		}
	}
	va_start(ap, fmt);
	n = vsnprintf(cpbuf + cplen, cpcap - cplen, fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < cpcap - cplen) {
		cplen += n;
		cplines++;
	}
}

static char filebuf[64 << 10];

/*
 * The root's counters are the whole machine's, since boot: what one
 * scenario did, or what the other kernel's own memory is, would show in
 * every scenario.  So for the root they are recorded as their growth since
 * the scenario began (rootbase, taken at its start); the audits read the
 * values themselves.
 */
struct rootev {
	char key[64];
	long long val;
};
static struct rootev rootbase[256];
static int nrootbase, taking_rootbase;

static long long root_growth(const char *file, const char *key, long long val)
{
	char k[64];

	snprintf(k, sizeof(k), "%.20s:%.40s", file, key);
	for (int i = 0; i < nrootbase; i++)
		if (!strcmp(rootbase[i].key, k))
			return taking_rootbase ? (rootbase[i].val = val) : val - rootbase[i].val;
	if (taking_rootbase && nrootbase < 256) {
		snprintf(rootbase[nrootbase].key, sizeof(rootbase[0].key), "%s", k);
		rootbase[nrootbase++].val = val;
	}
	return val;
}

/* Every "key value" line of dir/file as cg file:key value; the struct fields it fills. */
static int read_keyed(const char *dir, const char *cg, const char *file, struct cgval *v)
{
	char p[800], *s, *nl, *sp;

	snprintf(p, sizeof(p), "%s/%s", dir, file);
	if (read_str(p, filebuf, sizeof(filebuf)))
		return -1;
	for (s = filebuf; *s; s = nl + 1) {
		nl = strchrnul(s, '\n');
		sp = memchr(s, ' ', nl - s);
		if (sp) {
			long long val = atoll(sp + 1);

			long long shown = val;

			if (!strcmp(cg, "/")) {
				*sp = 0;
				shown = root_growth(file, s, val);
				*sp = ' ';
			}
			cp_add("%s %s:%.*s %lld\n", cg, file, (int)(sp - s), s, shown);
			if (v && !strcmp(file, "memory.stat")) {
				*sp = 0;
				if (!strcmp(s, "sock"))
					v->sock = val;
				else if (!strcmp(s, "anon") || !strcmp(s, "total_rss"))
					v->anon = val;
				else if (!strcmp(s, "file") || !strcmp(s, "total_cache"))
					v->file = val;
				else if (!strcmp(s, "shmem") || !strcmp(s, "total_shmem"))
					v->shmem = val;
				*sp = ' ';
			}
		}
		if (!*nl)
			break;
	}
	return 0;
}

static long long read_num(const char *dir, const char *file)
{
	char p[800], buf[64];

	snprintf(p, sizeof(p), "%s/%s", dir, file);
	if (read_str(p, buf, sizeof(buf)))
		return -1;
	if (!strncmp(buf, "max", 3))
		return -2;
	return atoll(buf);
}

static void walk(const char *dir, const char *cg, int depth)
{
	struct cgval *v;
	struct dirent *de;
	DIR *d;
	char sub[700], subcg[300];

	if (ncgs == MAX_CG || depth > MAX_DEPTH)
		return;
	v = &cgs[ncgs++];
	memset(v, 0, sizeof(*v));
	snprintf(v->cg, sizeof(v->cg), "%s", cg);
	/* the counter first, then the rest: a parent is read before its children */
	v->current = read_num(dir, v1 ? "memory.usage_in_bytes" : "memory.current");
	if (!strcmp(cg, "/") && v1)
		v->current = -1;	/* v1's root usage is the whole machine's */
	if (v->current >= 0)
		cp_add("%s %s:bytes %lld\n", cg, v1 ? "memory.usage_in_bytes" : "memory.current", v->current);
	if (v1) {
		long long m = read_num(dir, "memory.memsw.usage_in_bytes");
		long long t = read_num(dir, "memory.kmem.tcp.usage_in_bytes");

		v->swap = -1;
		v->tcp = strcmp(cg, "/") ? t : -1;
		if (m >= 0 && strcmp(cg, "/"))
			cp_add("%s memory.memsw.usage_in_bytes:bytes %lld\n", cg, m);
		if (t >= 0 && strcmp(cg, "/"))
			cp_add("%s memory.kmem.tcp.usage_in_bytes:bytes %lld\n", cg, t);
		/* the charges that found a tcp limit full: v1's socket pressure */
		t = read_num(dir, "memory.kmem.tcp.failcnt");
		if (t >= 0 && strcmp(cg, "/"))
			cp_add("%s memory.kmem.tcp.failcnt:count %lld\n", cg, t);
	} else {
		v->tcp = -1;
		v->swap = read_num(dir, "memory.swap.current");
		if (v->swap >= 0)
			cp_add("%s memory.swap.current:bytes %lld\n", cg, v->swap);
		read_keyed(dir, cg, "memory.events", NULL);
		read_keyed(dir, cg, "cgroup.stat", NULL);
	}
	read_keyed(dir, cg, "memory.stat", v);

	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		if (!strcmp(cg, "/"))
			snprintf(subcg, sizeof(subcg), "%s", de->d_name);
		else
			snprintf(subcg, sizeof(subcg), "%s/%s", cg, de->d_name);
		walk(sub, subcg, depth + 1);
	}
	closedir(d);
}

static void snapshot(void)
{
	ncgs = 0;
	cplen = 0;
	cplines = 0;
	walk(cgroot, "/", 0);
}

static const char *parent_of(const char *cg, char *buf, size_t len)
{
	const char *sl = strrchr(cg, '/');

	if (!strcmp(cg, "/"))
		return NULL;
	if (!sl)
		return "/";
	snprintf(buf, len, "%.*s", (int)(sl - cg), cg);
	return buf;
}

static struct cgval *cg_find(const char *cg)
{
	for (int i = 0; i < ncgs; i++)
		if (!strcmp(cgs[i].cg, cg))
			return &cgs[i];
	return NULL;
}

/* ---- the audit */

static int audit_fails;

static void audit(const char *cp, const char *check, int ok, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void audit(const char *cp, const char *check, int ok, const char *fmt, ...)
{
	char detail[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	record("@@ audit %s %s %s %s %s", scen, cp, check, ok ? "ok" : "fail", detail);
	if (!ok) {
		audit_fails++;
		printf("scenario: %s: %s: audit %s failed: %s\n", scen, cp, check, detail);
	}
}

static long long meminfo_kb(const char *key)
{
	return key_value("/proc/meminfo", key);
}

/* New kernel log lines that report a problem: recorded, and counted for the kmsg check. */
static int kmsg_scan(void)
{
	static const char *const bad[] = {
		"WARNING:", "BUG:", "BUG ", "underflow", "Oops", "general protection",
		"KASAN", "refcount_t:", "corruption", "Bad page", "bad page", "lockdep",
		"possible circular", "stack-out-of-bounds", "use-after-free", "list_add", "list_del",
		NULL,
	};
	char buf[2048];
	ssize_t n;
	int found = 0;

	if (kmsg_fd < 0)
		return 0;
	while ((n = read(kmsg_fd, buf, sizeof(buf) - 1)) != 0) {
		char *msg;

		if (n < 0) {
			if (errno == EPIPE)	/* overwritten: go on */
				continue;
			break;		/* EAGAIN: nothing more */
		}
		buf[n] = 0;
		msg = strchr(buf, ';');
		msg = msg ? msg + 1 : buf;
		msg[strcspn(msg, "\n")] = 0;
		for (int i = 0; bad[i]; i++)
			if (strstr(msg, bad[i])) {
				record("@@ kmsg %s %s", scen, msg);
				found++;
				break;
			}
	}
	kmsg_seen += found;
	return found;
}

static void audit_all(const char *cp)
{
	int bad = 0;
	/* a charge in flight shows in a child before its parent (which was read first) */
	long long slack = tasks_alive() ? 2LL * 64 * 4096 * ncpus : 0;
	char pb[200];

	/* hierarchy: a parent holds at least what its children hold */
	for (int i = 0; i < ncgs; i++) {
		long long sum = 0;
		int kids = 0;

		if (cgs[i].current < 0)
			continue;
		for (int j = 0; j < ncgs; j++) {
			const char *p = parent_of(cgs[j].cg, pb, sizeof(pb));

			if (p && !strcmp(p, cgs[i].cg) && cgs[j].current >= 0) {
				sum += cgs[j].current;
				kids++;
			}
		}
		if (kids && cgs[i].current + slack < sum) {
			audit(cp, "hierarchy", 0, "%s memory.current %lld < its children's sum %lld", cgs[i].cg,
			      cgs[i].current, sum);
			bad++;
		}
	}
	if (!bad)
		audit(cp, "hierarchy", 1, "%d cgroups", ncgs);

	/* bounds: no byte counter beyond RAM plus swap (an underflow shows so) */
	bad = 0;
	for (int i = 0; i < ncgs; i++) {
		struct cgval *v = &cgs[i];
		long long vals[] = { v->current, v->swap, v->sock, v->anon, v->file, v->shmem, v->tcp };
		static const char *const names[] = { "current", "swap", "sock", "anon", "file", "shmem", "tcp" };

		for (unsigned k = 0; k < sizeof(vals) / sizeof(vals[0]); k++)
			if (vals[k] > ram_swap) {
				audit(cp, "bounds", 0, "%s %s %lld > RAM + swap %lld", v->cg, names[k], vals[k],
				      ram_swap);
				bad++;
			}
	}
	if (!bad)
		audit(cp, "bounds", 1, "RAM + swap %lld", ram_swap);

	/* meminfo: the root's memory.stat is the machine's (v2; v1 root has its own) */
	if (!v1) {
		struct cgval *r = cg_find("/");
		long long tol = 4LL << 20;
		struct { const char *name; long long memcg, global; } m[] = {
			{ "anon", r ? r->anon : -1, meminfo_kb("AnonPages") * 1024 },
			{ "shmem", r ? r->shmem : -1, meminfo_kb("Shmem") * 1024 },
			/* the swap cache counts in the node's NR_FILE_PAGES, not the memcg's */
			{ "file", r ? r->file : -1, (meminfo_kb("Cached") + meminfo_kb("Buffers")) * 1024 },
		};

		bad = 0;
		for (unsigned k = 0; k < sizeof(m) / sizeof(m[0]); k++) {
			long long d = m[k].memcg - m[k].global;

			if (m[k].memcg < 0)
				continue;
			if (d < 0)
				d = -d;
			if (d > tol && d > m[k].global / 50) {
				audit(cp, "meminfo", 0, "root memory.stat %s %lld vs /proc/meminfo %lld", m[k].name,
				      m[k].memcg, m[k].global);
				bad++;
			}
		}
		if (!bad)
			audit(cp, "meminfo", 1, "anon, shmem, file within 4 MiB or 2%%");
	}

	kmsg_scan();
	if (kmsg_seen)
		audit(cp, "kmsg", 0, "%d kernel report line(s) in this scenario so far (the @@ kmsg records)",
		      kmsg_seen);
	else
		audit(cp, "kmsg", 1, "none");
}

static void checkpoint(const char *cp)
{
	sleep_ms(NUM("settle_ms"));
	snapshot();
	record("@@ cp %s %s", scen, cp);
	if (write_all(out_fd, cpbuf, cplen))
		perror("scenario: writing a checkpoint");
	record("@@ endcp %s %s lines=%d", scen, cp, cplines);
	audit_all(cp);
}

/* ---- baseline: every cgroup's counters, to come back to once all is freed */

static struct cgval base[MAX_CG];
static int nbase;

/*
 * Empty every CPU's charge stocks: a task in a scratch cgroup charges a
 * few pages and a few kernel objects on each CPU (which flushes the stock
 * that CPU held for another cgroup), then the scratch cgroup goes away
 * (its offline drains its own).
 */
static int drain_stocks(void)
{
	char scratch[200], procs[240];
	int rc = 0;

	snprintf(scratch, sizeof(scratch), "%s/oracle-drain", cgroot);
	if (mkdir(scratch, 0755) && errno != EEXIST)
		return -1;
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", scratch);
	for (int c = 0; c < ncpus; c++) {
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			cpu_set_t set;
			char f[64];

			CPU_ZERO(&set);
			CPU_SET(c, &set);
			if (write_str(procs, "0") || sched_setaffinity(0, sizeof(set), &set))
				_exit(1);
			if (!map_anon(16 * 4096))
				_exit(1);
			snprintf(f, sizeof(f), "/tmp/.oracle-drain-%d", c);
			if (write_file(f, O_TRUNC, 4096, 0, "x", 1))
				_exit(1);
			unlink(f);
			_exit(0);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			rc = -1;
	}
	for (int i = 0; i < 100 && rmdir(scratch); i++)
		sleep_ms(10);
	return rc;
}

static void take_baseline(void)
{
	drain_stocks();
	sleep_ms(NUM("settle_ms"));
	snapshot();
	memcpy(base, cgs, sizeof(cgs[0]) * ncgs);
	nbase = ncgs;
}

static void check_settled(const char *cp)
{
	int bad = 0;
	long long slack = 0, used;

	if (drain_stocks())
		audit(cp, "baseline", 0, "could not drain the charge stocks (scratch cgroup)");
	sleep_ms(NUM("settle_ms"));
	/*
	 * Freed swap slots wait in the per-CPU swap slot caches (64 entries a
	 * CPU), and their swap cache folios stay charged until reclaim takes
	 * them: nothing short of swapoff empties those.  So where swap is in
	 * use, memory may come back short of its baseline by that much.
	 */
	used = meminfo_kb("SwapTotal") - meminfo_kb("SwapFree") + meminfo_kb("SwapCached");
	if (used > 0)
		slack = 64LL * 4096 * ncpus;
	snapshot();
	for (int i = 0; i < nbase; i++) {
		struct cgval *b = &base[i], *n = cg_find(b->cg);
		int root = !strcmp(b->cg, "/");

		if (!n)
			continue;	/* removed since */
		/* the root's own counters are the machine's: only its sockets come back */
		struct { const char *name; long long was, is; } m[] = {
			{ "memory.current", root ? -1 : b->current, n->current },
			{ "memory.swap.current", root ? -1 : b->swap, n->swap },
			{ "memory.stat:sock", b->sock, n->sock },
			{ "memory.stat:anon", root ? -1 : b->anon, n->anon },
			{ "memory.stat:file", root ? -1 : b->file, n->file },
			{ "memory.stat:shmem", root ? -1 : b->shmem, n->shmem },
			{ "memory.kmem.tcp.usage_in_bytes", b->tcp, n->tcp },
		};

		for (unsigned k = 0; k < sizeof(m) / sizeof(m[0]); k++) {
			long long d = m[k].is - m[k].was;
			/* sockets have no swap: exact */
			long long room = strstr(m[k].name, "sock") || strstr(m[k].name, "tcp") ? 0 : slack;

			/*
			 * Kernel objects are charged by the byte: each obj_cgroup
			 * charged here (this cgroup's, and one for each cgroup
			 * removed below it) may keep less than a page of them
			 * charged (nr_charged_bytes).
			 */
			if (k == 0)
				room += 4096LL * (1 + removed);

			if (m[k].was < 0 || (d <= room && d >= -room))
				continue;
			audit(cp, "baseline", 0, "%s %s %lld, baseline %lld (%+lld, allowed %lld)", b->cg,
			      m[k].name, m[k].is, m[k].was, d, room);
			bad++;
		}
	}
	if (!bad)
		audit(cp, "baseline", 1, "%d cgroups back to their baseline (within %lld bytes of swap caches, "
		      "a page of kernel objects per obj_cgroup)", nbase, slack);
	kmsg_scan();
}

/* ---- MGLRU: lru_gen_cmd() in tool.h */

#define LRU_GEN_ENABLED "/sys/kernel/mm/lru_gen/enabled"
static char lru_gen_was[32];

/* The end of a scenario: its tasks, cgroups (children first) and files go. */
static void cleanup(void)
{
	tasks_reap_all();
	for (int i = nmade_cg - 1; i >= 0; i--)
		for (int k = 0; rmdir(made_cg[i]) && errno == EBUSY && k < 100; k++)
			sleep_ms(10);
	for (int i = 0; i < nmade_file; i++)
		unlink(made_file[i]);
	nmade_cg = nmade_file = 0;
	/* a scenario that switched the LRU (sys) leaves it as it found it */
	if (lru_gen_was[0]) {
		char now[32];

		if (!read_str(LRU_GEN_ENABLED, now, sizeof(now)) && strcmp(now, lru_gen_was))
			write_str(LRU_GEN_ENABLED, lru_gen_was);
	}
}

/* ---- the interpreter */

struct line {
	int no;
	char *text;
};

static struct line lines[MAX_LINES];
static int nlines;

static int split(char *s, char **w)
{
	int n = 0;

	for (char *t = strtok(s, " \t"); t && n < MAX_WORDS; t = strtok(NULL, " \t"))
		w[n++] = t;
	return n;
}

/* "{i}" -> the innermost repeat's count, "{j}" the one around it */
static void expand(const char *in, char *out, size_t len, const int *counts, int depth)
{
	size_t o = 0;

	for (const char *s = in; *s && o < len - 12; s++) {
		if (s[0] == '{' && (s[1] == 'i' || s[1] == 'j') && s[2] == '}') {
			int lvl = depth - (s[1] == 'i' ? 1 : 2);

			o += snprintf(out + o, len - o, "%d", lvl >= 0 ? counts[lvl] : 0);
			s += 2;
		} else {
			out[o++] = *s;
		}
	}
	out[o] = 0;
}

/* Is w[0..nw) a task op with the right arguments? */
static int op_valid(char **w, int nw)
{
	if (nw < 1)
		return 0;
	if (!strcmp(w[0], "read"))
		return nw == 2 || (nw == 3 && atoi(w[2]) > 0);
	if (!strcmp(w[0], "ws"))
		return nw == 2;
	if (!strcmp(w[0], "write"))
		return nw == 3 && parse_size(w[2]) >= 0;
	if (!strcmp(w[0], "sock") && nw == 3)
		return !strcmp(w[2], "refill") && parse_size(w[1]) > 0;
	if (!strcmp(w[0], "anon") || !strcmp(w[0], "hold") || !strcmp(w[0], "sock"))
		return nw == 2 && parse_size(w[1]) > 0;
	return 0;
}

/* Is w[0..nw) an action of the language (scenarios/README.md)? */
static int valid(char **w, int nw)
{
	static const struct { const char *verb; int min, max; } verbs[] = {
		{ "mkdir", 2, 2 }, { "rmdir", 2, 2 }, { "set", 4, MAX_WORDS }, { "reclaim", 3, 3 },
		{ "file", 3, 3 }, { "rm", 2, 2 }, { "run", 3, MAX_WORDS }, { "start", 4, MAX_WORDS },
		{ "poke", 2, 2 }, { "move", 3, 3 }, { "stop", 2, 2 }, { "sync", 1, 1 },
		{ "drop_caches", 1, 1 }, { "sleep", 2, 2 }, { "lru_gen", 3, 3 }, { "baseline", 1, 1 },
		{ "settled", 2, 2 }, { "checkpoint", 2, 2 }, { "sys", 3, 3 },
	};
	unsigned i;

	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (!strcmp(w[0], verbs[i].verb))
			break;
	if (i == sizeof(verbs) / sizeof(verbs[0]) || nw < verbs[i].min || nw > verbs[i].max)
		return 0;
	if (!strcmp(w[0], "reclaim") || !strcmp(w[0], "file"))
		return parse_size(w[2]) >= 0;
	if (!strcmp(w[0], "sleep"))
		return strspn(w[1], "0123456789") == strlen(w[1]);
	if (!strcmp(w[0], "lru_gen"))
		return !strcmp(w[2], "age") || !strcmp(w[2], "evict");
	if (!strcmp(w[0], "run"))
		return op_valid(w + 2, nw - 2);
	if (!strcmp(w[0], "start"))
		return op_valid(w + 3, nw - 3);
	return 1;
}

/* One action; returns its outcome word. */
static const char *act(char **w, int nw)
{
	static char word[64];
	char p[400];
	long long size;
	struct task *t;

	if (!strcmp(w[0], "mkdir") && nw == 2) {
		cg_path(p, sizeof(p), w[1]);
		if (mkdir(p, 0755))
			return errword(errno);
		if (nmade_cg < MAX_CG)
			snprintf(made_cg[nmade_cg++], sizeof(made_cg[0]), "%s", p);
		return "ok";
	}
	if (!strcmp(w[0], "rmdir") && nw == 2) {
		int r;

		cg_path(p, sizeof(p), w[1]);
		/* a task that just exited may still be leaving its cgroup */
		for (int i = 0; (r = rmdir(p)) && errno == EBUSY && i < 100; i++)
			sleep_ms(10);
		if (!r)
			removed++;
		return r ? errword(errno) : "ok";
	}
	if (!strcmp(w[0], "set") && nw >= 4) {
		char val[256] = "";

		for (int i = 3; i < nw; i++) {
			strncat(val, w[i], sizeof(val) - strlen(val) - 2);
			if (i + 1 < nw)
				strcat(val, " ");
		}
		cg_path(p, sizeof(p) - 100, w[1]);
		strcat(p, "/");
		strncat(p, w[2], 90);
		return write_str(p, val) ? errword(errno) : "ok";
	}
	if (!strcmp(w[0], "reclaim") && nw == 3 && parse_size(w[2]) >= 0) {
		cg_path(p, sizeof(p) - 20, w[1]);
		strcat(p, "/memory.reclaim");
		return write_str(p, w[2]) ? errword(errno) : "ok";
	}
	if (!strcmp(w[0], "file") && nw == 3 && (size = parse_size(w[2])) >= 0) {
		int fd;

		memset(iobuf, 'f', sizeof(iobuf));
		if (write_file(w[1], O_TRUNC, size, 1, iobuf, sizeof(iobuf)))
			return errword(errno);
		if (nmade_file < MAX_CG)
			snprintf(made_file[nmade_file++], sizeof(made_file[0]), "%s", w[1]);
		/* not cached: whoever reads it first is charged for it */
		fd = open(w[1], O_RDONLY);
		if (fd < 0)
			return errword(errno);
		size = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
		return size ? errword(size) : "ok";
	}
	if (!strcmp(w[0], "rm") && nw == 2)
		return unlink(w[1]) && errno != ENOENT ? errword(errno) : "ok";
	if (!strcmp(w[0], "run") && nw >= 3) {
		int st, fd;
		pid_t pid = task_spawn(w[1], w + 2, nw - 2, 1, &fd);

		if (pid < 0)
			return errword(errno);
		close(fd);
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		return status_word(st);
	}
	if (!strcmp(w[0], "start") && nw >= 4) {
		int slot = -1;

		if (task_find(w[1]))
			return "EEXIST";
		for (int i = 0; i < MAX_TASKS; i++)
			if (!tasks[i].pid) {
				slot = i;
				break;
			}
		if (slot < 0)
			return "ENOSPC";
		t = &tasks[slot];
		snprintf(t->name, sizeof(t->name), "%s", w[1]);
		t->pid = task_spawn(w[2], w + 3, nw - 3, 0, &t->ack);
		if (t->pid < 0) {
			memset(t, 0, sizeof(*t));
			return errword(errno);
		}
		return task_wait_ack(t);
	}
	if ((!strcmp(w[0], "poke") || !strcmp(w[0], "stop") || !strcmp(w[0], "move")) && nw >= 2) {
		t = task_find(w[1]);
		if (!t)
			return "ENOENT";
		if (!strcmp(w[0], "poke")) {
			if (t->reaped)
				return status_word(t->status);
			kill(t->pid, SIGUSR1);
			return task_wait_ack(t);
		}
		if (!strcmp(w[0], "move") && nw == 3) {
			char pid[24];

			cg_path(p, sizeof(p) - 20, w[2]);
			strcat(p, "/cgroup.procs");
			snprintf(pid, sizeof(pid), "%d", t->pid);
			return write_str(p, pid) ? errword(errno) : "ok";
		}
		if (!strcmp(w[0], "stop") && nw == 2) {
			if (!t->reaped) {
				kill(t->pid, SIGTERM);
				while (waitpid(t->pid, &t->status, 0) < 0 && errno == EINTR)
					;
				t->reaped = 1;
			}
			snprintf(word, sizeof(word), "%s", status_word(t->status));
			task_forget(t);
			return word;
		}
	}
	if (!strcmp(w[0], "sys") && nw == 3) {
		/* a knob of /proc/sys or /sys, such as the LRU in use */
		if (strncmp(w[1], "/proc/sys/", 10) && strncmp(w[1], "/sys/", 5))
			return "EINVAL";
		return write_str(w[1], w[2]) ? errword(errno) : "ok";
	}
	if (!strcmp(w[0], "sync") && nw == 1) {
		sync();
		return "ok";
	}
	if (!strcmp(w[0], "drop_caches") && nw == 1) {
		sync();
		return write_str("/proc/sys/vm/drop_caches", "3") ? errword(errno) : "ok";
	}
	if (!strcmp(w[0], "sleep") && nw == 2) {
		sleep_ms(atol(w[1]));
		return "ok";
	}
	if (!strcmp(w[0], "lru_gen") && nw == 3 && (!strcmp(w[2], "age") || !strcmp(w[2], "evict"))) {
		int r = lru_gen_cmd(w[1], !strcmp(w[2], "age"));

		return r ? errword(-r) : "ok";
	}
	if (!strcmp(w[0], "baseline") && nw == 1) {
		take_baseline();
		return "ok";
	}
	if (!strcmp(w[0], "settled") && nw == 2) {
		check_settled(w[1]);
		return "ok";
	}
	if (!strcmp(w[0], "checkpoint") && nw == 2) {
		checkpoint(w[1]);
		return "ok";
	}
	return NULL;
}

static int load(const char *path)
{
	static char text[256 << 10];
	char *s, *nl;
	int no = 0;

	if (read_str(path, text, sizeof(text)))
		return -1;
	nlines = 0;
	for (s = text; *s && nlines < MAX_LINES; s = nl + 1) {
		char *c;

		no++;
		nl = strchrnul(s, '\n');
		*nl = 0;
		c = strchr(s, '#');
		if (c)
			*c = 0;
		while (*s == ' ' || *s == '\t')
			s++;
		for (c = s + strlen(s); c > s && isspace((unsigned char)c[-1]);)
			*--c = 0;
		if (*s) {
			lines[nlines].no = no;
			lines[nlines].text = s;
			nlines++;
		}
		if (nl >= text + sizeof(text) - 1)
			break;
	}
	return 0;
}

/* Play lines [from, to) at repeat depth with counts; returns -1 to stop the scenario. */
static int play(int from, int to, int *counts, int depth)
{
	for (int i = from; i < to; i++) {
		char buf[512], copy[512], *w[MAX_WORDS];
		const char *out;
		int nw, must = 0;
		long t0;

		expand(lines[i].text, buf, sizeof(buf), counts, depth);
		snprintf(copy, sizeof(copy), "%s", buf);
		nw = split(copy, w);
		if (!strcmp(w[0], "name") || (!strcmp(w[0], "needs") && nw == 2 &&
		    (!strcmp(w[1], "cgroup-v1") || !strcmp(w[1], "first-in-boot"))))
			continue;
		if (!strcmp(w[0], "repeat") && nw == 2) {
			int n = atoi(w[1]), level = 1, j;

			for (j = i + 1; j < to; j++) {
				if (!strncmp(lines[j].text, "repeat ", 7))
					level++;
				else if (!strcmp(lines[j].text, "end") && !--level)
					break;
			}
			if (j == to || depth == MAX_DEPTH) {
				printf("scenario: %s line %d: repeat without its end\n", scen, lines[i].no);
				return -1;
			}
			if (n < 1) {
				printf("scenario: %s line %d: repeat wants a count from 1\n", scen, lines[i].no);
				return -1;
			}
			for (int k = 1; k <= (dry ? 1 : n); k++) {
				counts[depth] = k;
				if (play(i + 1, j, counts, depth + 1))
					return -1;
			}
			i = j;
			continue;
		}
		if (!strcmp(w[0], "must") && nw > 1) {
			must = 1;
			memmove(w, w + 1, sizeof(w[0]) * --nw);
		}
		if (!valid(w, nw)) {
			printf("scenario: %s line %d: cannot read '%s' (scenarios/README.md has the verbs)\n", scen,
			       lines[i].no, buf);
			return -1;
		}
		if (dry)
			continue;
		t0 = now_ms();
		out = act(w, nw);
		if (!out) {
			printf("scenario: %s line %d: '%s' has a case the player lacks\n", scen, lines[i].no, buf);
			return -1;
		}
		seq++;
		record("@@ act %s %d line=%d ms=%ld out=%s cmd=%s", scen, seq, lines[i].no, now_ms() - t0, out, buf);
		if (must && strcmp(out, "ok")) {
			printf("scenario: %s line %d: '%s' must succeed, it gave %s: the scenario stops\n", scen,
			       lines[i].no, buf, out);
			failed = 1;
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	char *files, *tok, *save = NULL;
	char path[300], name[100], kw[3072];
	int counts[MAX_DEPTH + 1] = { 0 }, nscen = 0, rc = 0;
	long t_start;
	struct sysinfo si;

	knob_parse("scenario", knobs, argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	dry = NUM("check");
	if (dry) {
		files = strdup(STR("files"));
		for (tok = strtok_r(files, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			snprintf(path, sizeof(path), "%s/%s", STR("dir"), tok);
			scen = tok;
			if (load(path)) {
				printf("scenario: cannot read %s: %s\n", path, strerror(errno));
				rc = 1;
			} else if (play(0, nlines, counts, 0)) {
				rc = 1;
			}
			nscen++;
		}
		if (!nscen) {
			printf("scenario: check=1 wants files=...\n");
			rc = 1;
		}
		return rc;
	}
	out_fd = open_raw(STR("out"));
	if (out_fd < 0) {
		fprintf(stderr, "scenario: cannot open %s: %s\n", STR("out"), strerror(errno));
		return 2;
	}
	rng_set(NUM("seed"));
	ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	sysinfo(&si);
	ram_swap = ((long long)si.totalram + si.totalswap) * si.mem_unit;
	v1 = access("/sys/fs/cgroup/memory/memory.usage_in_bytes", F_OK) == 0;
	snprintf(cgroot, sizeof(cgroot), "%s", v1 ? "/sys/fs/cgroup/memory" : "/sys/fs/cgroup");
	mkdir("/data", 0755);	/* the scenarios' files, on the root file system */
	kmsg_fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (kmsg_fd >= 0)
		lseek(kmsg_fd, 0, SEEK_END);
	knob_words(kw, sizeof(kw));
	record("@@ run scenario%s cpus=%d mem_kb=%lld swap_kb=%lld cgroup=%s", kw, ncpus,
	       (long long)si.totalram * si.mem_unit >> 10, (long long)si.totalswap * si.mem_unit >> 10,
	       v1 ? "v1" : "v2");
	t_start = now_ms();

	files = strdup(STR("files"));
	for (tok = strtok_r(files, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		long t0 = now_ms();

		snprintf(path, sizeof(path), "%s/%s", STR("dir"), tok);
		snprintf(name, sizeof(name), "%s", tok);
		if (strstr(name, ".scn"))
			*strstr(name, ".scn") = 0;
		scen = name;
		seq = kmsg_seen = failed = removed = 0;
		nbase = 0;
		if (load(path)) {
			printf("scenario: cannot read %s: %s\n", path, strerror(errno));
			record("@@ scenario %s file=%s", name, tok);
			record("@@ endscenario %s rc=2 acts=0 t_ms=0", name);
			rc = 1;
			nscen++;
			continue;
		}
		printf("scenario: playing %s (%d lines)\n", tok, nlines);
		record("@@ scenario %s file=%s", name, tok);
		/* each starts from clean caches; reports from before it are not its */
		sync();
		write_str("/proc/sys/vm/drop_caches", "3");
		kmsg_scan();
		kmsg_seen = 0;
		nrootbase = 0;
		taking_rootbase = 1;
		snapshot();
		taking_rootbase = 0;
		lru_gen_was[0] = 0;
		read_str(LRU_GEN_ENABLED, lru_gen_was, sizeof(lru_gen_was));
		if (play(0, nlines, counts, 0))
			failed = 1;
		cleanup();
		kmsg_scan();
		record("@@ endscenario %s rc=%d acts=%d t_ms=%ld", name, failed, seq, now_ms() - t0);
		if (failed)
			rc = 1;
		nscen++;
	}
	record("@@ end rc=%d scenarios=%d t_ms=%ld", rc, nscen, now_ms() - t_start);
	printf("scenario: %d scenarios, %d audit failures, rc=%d\n", nscen, audit_fails, rc);
	return rc;
}
