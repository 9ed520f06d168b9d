// SPDX-License-Identifier: GPL-2.0
/*
 * census_check: does /proc/memcg_census (census/memcg_census.c) name the
 * pin of a dying memcg right?  A TAP test that the kselftest job runs beside
 * the cgroup kselftests (it is judged by the same expectations matrix).
 *
 * Four children of /sys/fs/cgroup/census_check are each given one pin on
 * purpose and removed:
 *   pagecache  a clean file, written and dropped by the root, read in C;
 *   dirty      4 MiB written in C, the flusher held off (vm.dirty_*);
 *   socket     a TCP socket made in C, handed to the root (SCM_RIGHTS), its
 *              64 KiB receive queue unread, C's task gone;
 *   swap       a tmpfs file written in C, all of it reclaimed to swap.
 * For each kind K, after up to WAIT_MS of waiting for C to be released:
 *   census_K.released  C is no longer dying (the census does not list it,
 *                      cgroup.stat agrees): fails where the kind pins C;
 *   census_K.truthful  C is released, or listed with pin=K, K's counter
 *                      above 0 and its path; never another pin;
 * and once:
 *   census.header      the module is loaded and reads statistics (stats=yes);
 *   census.consistent  the census counts as many dying memcgs as the root's
 *                      cgroup.stat (read before and after it).
 */
#define _GNU_SOURCE
#include "tool.h"
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define CG "/sys/fs/cgroup"
#define TOP CG "/census_check"
#define CENSUS "/proc/memcg_census"
#define WAIT_MS 5000
#define FILE_MB 4

static struct knob knobs[] = {
	{ NULL, 0, 0, NULL, NULL },
};

enum kind { PAGECACHE, DIRTY, SOCKET, SWAP, NR_KINDS };
static const char *const kind_names[NR_KINDS] = { "pagecache", "dirty", "socket", "swap" };
/* The counter each kind must show in its census line. */
static const char *const kind_counter[NR_KINDS] = { "file", "dirty", "sock", "swap" };

static int ntest, nfail;
static char census[1 << 20];

static void result(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	nfail += !ok;
	printf("%sok %d %s", ok ? "" : "not ", ++ntest, name);
	if (fmt) {
		printf(" # ");
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	}
	printf("\n");
	fflush(stdout);
}

static int read_census(void)
{
	return read_str(CENSUS, census, sizeof(census));
}

/* The census line of cgroup id, copied into line; 0 if not listed. */
static int census_line(unsigned long id, char *line, size_t len)
{
	char want[64], *s = census, *nl;

	snprintf(want, sizeof(want), "id=%lu ", id);
	for (; *s; s = nl + 1) {
		nl = strchrnul(s, '\n');
		if (!strncmp(s, want, strlen(want))) {
			snprintf(line, len, "%.*s", (int)(nl - s), s);
			return 1;
		}
		if (!*nl)
			break;
	}
	return 0;
}

/* The value of " key=" in a census line, as text in out (up to the next space). */
static int field(const char *line, const char *key, char *out, size_t len)
{
	char want[64];
	const char *s;
	size_t n;

	snprintf(want, sizeof(want), " %s=", key);
	s = strstr(line, want);
	if (!s)
		return -1;
	s += strlen(want);
	n = strcspn(s, " ");
	snprintf(out, len, "%.*s", (int)n, s);
	return 0;
}

static long long field_num(const char *line, const char *key)
{
	char v[64];

	return field(line, key, v, sizeof(v)) ? -1 : atoll(v);
}

static unsigned long cg_id(const char *cg)
{
	struct stat st;

	return stat(cg, &st) ? 0 : st.st_ino;
}

/* ---- the pins, each made by a child started in C */

static char buf[64 << 10];

static int child_read(long arg)
{
	int fd = open("/census_check.pagecache", O_RDONLY);

	(void)arg;
	if (fd < 0)
		return 1;
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	return close(fd) ? 1 : 0;
}

static int child_dirty(long arg)
{
	(void)arg;
	return write_file("/census_check.dirty", O_TRUNC, FILE_MB << 20, 0, buf, sizeof(buf)) ? 1 : 0;
}

static int child_shmem(long arg)
{
	(void)arg;
	return write_file("/tmp/census_check.swap", O_TRUNC, FILE_MB << 20, 0, buf, sizeof(buf)) ? 1 : 0;
}

static int sock_pair[2], listen_port;

/* Connect to the root's listener and hand the socket to the root. */
static int child_socket(long arg)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(listen_port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = "s", .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	(void)arg;
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
		return 1;
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock_pair[1], &msg, 0) == 1 ? 0 : 1;
}

static int run_in(const char *cg, int (*fn)(long))
{
	int st;
	pid_t pid = spawn_in(cg, fn, 0);

	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static int held_fd = -1, conn_fd = -1, listen_fd = -1;

static int make_socket_pin(const char *cg, char *why, size_t len)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	char cbuf[CMSG_SPACE(sizeof(int))], one;
	struct iovec iov = { .iov_base = &one, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	long sent = 0;

	listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(listen_fd, (struct sockaddr *)&a, &alen) || listen(listen_fd, 1) ||
	    socketpair(AF_UNIX, SOCK_DGRAM, 0, sock_pair)) {
		snprintf(why, len, "listener: %s", strerror(errno));
		return -1;
	}
	listen_port = ntohs(a.sin_port);
	if (run_in(cg, child_socket)) {
		snprintf(why, len, "the child in C could not connect and pass its socket");
		return -1;
	}
	if (recvmsg(sock_pair[0], &msg, 0) != 1 || !CMSG_FIRSTHDR(&msg)) {
		snprintf(why, len, "no socket from C: %s", strerror(errno));
		return -1;
	}
	memcpy(&held_fd, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof(int));
	conn_fd = accept(listen_fd, NULL, NULL);
	if (conn_fd < 0) {
		snprintf(why, len, "accept: %s", strerror(errno));
		return -1;
	}
	/* 64 KiB into the receive queue of the socket C made, left unread. */
	while (sent < (64 << 10)) {
		ssize_t n = send(conn_fd, buf, (64 << 10) - sent, MSG_DONTWAIT);

		if (n <= 0)
			break;
		sent += n;
	}
	sleep_ms(200);
	return 0;
}

static long long stat_of(const char *cg, const char *key)
{
	char p[300];

	snprintf(p, sizeof(p), "%s/memory.stat", cg);
	return key_value(p, key);
}

static int make_pin(enum kind k, const char *cg, char *why, size_t len)
{
	char p[300], v[64];
	int i;

	switch (k) {
	case PAGECACHE:
		if (run_in(cg, child_read) || stat_of(cg, "file") <= 0) {
			snprintf(why, len, "C read the file but holds no page cache");
			return -1;
		}
		return 0;
	case DIRTY:
		if (run_in(cg, child_dirty) || stat_of(cg, "file_dirty") <= 0) {
			snprintf(why, len, "C wrote the file but holds no dirty page cache");
			return -1;
		}
		return 0;
	case SOCKET:
		if (make_socket_pin(cg, why, len))
			return -1;
		/* 16 pages are below memory.stat's flush threshold: the periodic flush (2 s) shows them. */
		for (i = 0; i < 40 && stat_of(cg, "sock") <= 0; i++)
			sleep_ms(100);
		if (stat_of(cg, "sock") <= 0) {
			snprintf(why, len, "C's socket holds no charged buffer (sock 0)");
			return -1;
		}
		return 0;
	case SWAP:
		if (run_in(cg, child_shmem)) {
			snprintf(why, len, "C could not write its tmpfs file");
			return -1;
		}
		snprintf(p, sizeof(p), "%s/memory.reclaim", cg);
		for (i = 0; i < 20 && stat_of(cg, "shmem") > 0; i++)
			write_str(p, "16M");
		snprintf(p, sizeof(p), "%s/memory.swap.current", cg);
		if (read_str(p, v, sizeof(v)))
			*v = 0;
		if (stat_of(cg, "shmem") > 0 || atoll(v) <= 0) {
			snprintf(why, len, "C's tmpfs file is not all in swap (shmem %lld, swap %lld)",
				 stat_of(cg, "shmem"), atoll(v));
			return -1;
		}
		return 0;
	default:
		return -1;
	}
}

static void check_kind(enum kind k)
{
	char cg[200], name[64], why[300] = "", line[4096], v[64];
	unsigned long id;
	int listed = 0, ok;
	long t;

	snprintf(cg, sizeof(cg), TOP "/%s", kind_names[k]);
	if (mkdir(cg, 0755) && errno != EEXIST) {
		snprintf(why, sizeof(why), "mkdir %s: %s", cg, strerror(errno));
		goto broken;
	}
	id = cg_id(cg);
	if (make_pin(k, cg, why, sizeof(why)))
		goto broken;
	if (rmdir(cg)) {
		snprintf(why, sizeof(why), "rmdir %s: %s", cg, strerror(errno));
		goto broken;
	}
	for (t = now_ms(); ; sleep_ms(100)) {
		if (read_census()) {
			snprintf(why, sizeof(why), "cannot read " CENSUS ": %s", strerror(errno));
			goto broken;
		}
		listed = census_line(id, line, sizeof(line));
		if (!listed || now_ms() - t >= WAIT_MS)
			break;
	}
	snprintf(name, sizeof(name), "census_%s.released", kind_names[k]);
	result(!listed, name, listed ? "still dying after %d ms" : NULL, WAIT_MS);
	snprintf(name, sizeof(name), "census_%s.truthful", kind_names[k]);
	if (!listed) {
		result(1, name, "released: not listed");
		return;
	}
	printf("# %s\n", line);
	ok = !field(line, "pin", v, sizeof(v)) && !strcmp(v, kind_names[k]);
	if (!ok) {
		result(0, name, "listed with pin=%s, not %s", v, kind_names[k]);
		return;
	}
	if (field_num(line, kind_counter[k]) <= 0 &&
	    !(k == DIRTY && field_num(line, "writeback") > 0)) {
		result(0, name, "pin=%s but %s=%lld", v, kind_counter[k], field_num(line, kind_counter[k]));
		return;
	}
	snprintf(cg, sizeof(cg), "/census_check/%s", kind_names[k]);
	if (field(line, "path", v, sizeof(v)) || strcmp(v, cg)) {
		result(0, name, "listed as path=%s, not %s", v, cg);
		return;
	}
	result(1, name, "pin=%s %s=%lld", kind_names[k], kind_counter[k], field_num(line, kind_counter[k]));
	return;
broken:
	/* The set-up failed: both checks fail, saying why. */
	snprintf(name, sizeof(name), "census_%s.released", kind_names[k]);
	result(0, name, "set-up: %s", why);
	snprintf(name, sizeof(name), "census_%s.truthful", kind_names[k]);
	result(0, name, "set-up: %s", why);
}

static int sysctl(const char *name, const char *val, char *old, size_t len)
{
	char p[200];

	snprintf(p, sizeof(p), "/proc/sys/vm/%s", name);
	if (old && read_str(p, old, len))
		return -1;
	if (old)
		old[strcspn(old, "\n")] = 0;
	return write_str(p, val);
}

int main(int argc, char **argv)
{
	char expire[32] = "", wb[32] = "", hdr[256];
	long long before, after, total;
	enum kind k;
	char *s;

	tool_name = "census_check";
	tool_knobs = knobs;
	knob_parse("census_check", knobs, argc, argv);
	memset(buf, 'c', sizeof(buf));
	printf("TAP version 13\n1..%d\n", 2 + 2 * NR_KINDS);
	fflush(stdout);

	if (read_census()) {
		result(0, "census.header", "cannot read " CENSUS ": %s (is the module loaded?)",
		       strerror(errno));
	} else {
		snprintf(hdr, sizeof(hdr), "%.*s", (int)strcspn(census, "\n"), census);
		printf("# %s\n", hdr);
		result(strstr(hdr, "# memcg_census format=1 ") && strstr(hdr, " stats=yes"),
		       "census.header", NULL);
	}

	/* The pagecache file comes from the root, clean and dropped. */
	if (write_file("/census_check.pagecache", O_TRUNC, FILE_MB << 20, 1, buf, sizeof(buf)) == 0) {
		int fd = open("/census_check.pagecache", O_RDONLY);

		if (fd >= 0) {
			posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
			close(fd);
		}
	}
	/* The dirty file stays dirty: no periodic writeback, no expiry. */
	if (sysctl("dirty_expire_centisecs", "360000", expire, sizeof(expire)) ||
	    sysctl("dirty_writeback_centisecs", "0", wb, sizeof(wb)))
		printf("# cannot hold the flusher off: %s\n", strerror(errno));
	rmdir(TOP);
	if (mkdir(TOP, 0755) || write_str(TOP "/cgroup.subtree_control", "+memory"))
		printf("# cannot make " TOP ": %s\n", strerror(errno));
	for (k = 0; k < NR_KINDS; k++)
		check_kind(k);

	/* The census against cgroup.stat, in a still moment. */
	before = dying_below(CG);
	total = -1;
	if (!read_census() && (s = strstr(census, "\ntotal dying=")))
		total = atoll(s + strlen("\ntotal dying="));
	after = dying_below(CG);
	result(total >= 0 && (total == before || total == after), "census.consistent",
	       "census %lld, cgroup.stat %lld then %lld", total, before, after);

	/* Let go of everything: the socket, the files, the flusher's sysctls. */
	close(held_fd);
	close(conn_fd);
	close(listen_fd);
	unlink("/census_check.pagecache");
	unlink("/census_check.dirty");
	unlink("/tmp/census_check.swap");
	if (*expire)
		sysctl("dirty_expire_centisecs", expire, NULL, 0);
	if (*wb)
		sysctl("dirty_writeback_centisecs", wb, NULL, 0);
	sync();
	rmdir(TOP);
	return nfail ? 1 : 0;
}
