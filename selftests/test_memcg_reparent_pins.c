// SPDX-License-Identifier: GPL-2.0
/*
 * What else may hold a removed memcg, and what is left of it must not
 * harm: sockets it created (used after the rmdir from a live sibling,
 * released once closed, or kept open), a file it left dirty, inotify and
 * fanotify groups it created, and its anon memory in swap. Each subtest
 * has its own checks, a TAP line each, named in tests[]:
 *
 *  released   the child's memory css is released (check 1 of
 *             memcg_reparent.h);
 *  accounted  the parent accounts for what the child left (check 2);
 *  charged    what is charged after the rmdir goes to the parent (check 2
 *             of test_reparent_fsnotify);
 *  uncharged  freeing it brings the parent back to its baseline (check 3);
 *  deferred   the child's dirty file was not written because it was
 *             removed (check 2 of test_reparent_dirty_cgwb);
 *  intact     once synced and dropped from the page cache, it reads back
 *             from the disk as written (check 3 of test_reparent_dirty_cgwb);
 *  untouched  test_reparent_dirty_live: the rmdir of a memcg leaves the
 *             dirty inodes of a live one, whose blkcg changed, on its cgwbs;
 *  released   (test_reparent_stock) no per-CPU charge stock keeps a
 *             removed memcg dying, with a sibling at its memory.max;
 *  swapin_charged  test_reparent_swap: a live task that swaps in what the
 *             removed child left is charged for it in its own memcg, as
 *             for any record of a memcg that is gone;
 *  no_oom     test_reparent_socket_limit: no memcg OOM in the parent while
 *             the removed child's sockets are used, nor during the test;
 *  no_slowdown  and the transfer through them is not slower than through
 *             sockets made in the live sibling.
 */
#define _GNU_SOURCE

#include <linux/bpf.h>
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

/* test_reparent_socket_limit */
#define SOCKET_CG_MAX		MB(32)	/* memory.max of C */
#define SOCKET_FILE_SIZE	MB(100)	/* the page cache C reads */
#define TRANSFER_SIZE		MB(64)
#define SOCKET_SLOWDOWN		3
#define SOCKET_GRACE_US		500000

struct socket_state {
	struct file_state f;	/* the file C reads, and the holder */
	int dead[2];		/* in the holder: the connection made in C */
	int nr_transfers;	/* in the holder: transfers done */
	size_t queued;		/* in the holder: left unread in dead[1] */
	const char *root;	/* test_reparent_socket_release */
	char *page;		/* in the holder: a page it charged to C */
	unsigned long child_ino;	/* /proc/kpagecgroup of it, in C */
};

/* the holder's transfers, in order: only DEAD_TRANSFER uses s->dead */
#define NR_TRANSFERS	3
#define DEAD_TRANSFER	1

static const char * const transfer_names[NR_TRANSFERS] = {
	"reference before", "removed child's", "reference after",
};

struct memcg_events {
	long max;
	long oom;
	long oom_kill;
};

static int read_events(const char *cgroup, struct memcg_events *e)
{
	char buf[PAGE_SIZE];

	if (cg_read(cgroup, "memory.events", buf, sizeof(buf)))
		return -1;
	e->max = cg_parse_key_long(buf, "max");
	e->oom = cg_parse_key_long(buf, "oom");
	e->oom_kill = cg_parse_key_long(buf, "oom_kill");

	return e->max < 0 || e->oom < 0 || e->oom_kill < 0 ? -1 : 0;
}

static int pin_to_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static void close_pair(int fd[2])
{
	close_fd(&fd[0]);
	close_fd(&fd[1]);
}

/*
 * A TCP connection over 127.0.0.1, both ends created by this task: fd[0]
 * connected, fd[1] accepted. Returns 0, or -1 with errno set.
 */
static int tcp_pair(int fd[2])
{
	struct sockaddr_in addr = {
		.sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	socklen_t len = sizeof(addr);
	int lfd, err;

	fd[0] = -1;
	fd[1] = -1;
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return -1;
	if (bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) ||
	    listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&addr, &len))
		goto fail;
	fd[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd[0] < 0 ||
	    connect(fd[0], (struct sockaddr *)&addr, sizeof(addr)))
		goto fail;
	fd[1] = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd[1] < 0)
		goto fail;
	close(lfd);

	return 0;

fail:
	err = errno;
	close_pair(fd);
	close(lfd);
	errno = err;
	return -1;
}

/*
 * Send TRANSFER_SIZE bytes into fd[0] in IO_CHUNK writes, then shut it
 * down, while a forked reader reads fd[1] until EOF. Returns the time from
 * the first send to the reader's exit in microseconds, -1 on error.
 */
static long timed_transfer(int fd[2])
{
	size_t sent = 0, len;
	double start;
	ssize_t n = 0;
	int status;
	char *buf;
	pid_t pid;

	buf = malloc(IO_CHUNK);
	if (!buf)
		return -1;
	memset(buf, 's', IO_CHUNK);

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		free(buf);
		return -1;
	}
	if (pid == 0) {
		size_t got = 0;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		while ((n = read(fd[1], buf, IO_CHUNK)) > 0)
			got += n;
		_exit(!n && got == TRANSFER_SIZE ? EXIT_SUCCESS : EXIT_FAILURE);
	}

	start = now();
	while (sent < TRANSFER_SIZE) {
		len = TRANSFER_SIZE - sent;
		if (len > IO_CHUNK)
			len = IO_CHUNK;
		n = send(fd[0], buf, len, MSG_NOSIGNAL);
		if (n <= 0)
			break;
		sent += n;
	}
	shutdown(fd[0], SHUT_WR);
	free(buf);

	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != EXIT_SUCCESS || sent != TRANSFER_SIZE)
		return -1;
	return (now() - start) * 1e6;
}

/* Runs in the holder, in C: fill C with page cache, then connect. */
static int socket_charge(void *arg)
{
	struct socket_state *s = arg;

	/* its own process group, which takes the readers along */
	if (setpgid(0, 0) || read_file(&s->f) || tcp_pair(s->dead))
		return EXIT_FAILURE;

	return EXIT_SUCCESS;
}

/* Runs in the holder, in K: one transfer per query (transfer_names). */
static long socket_query(void *arg)
{
	struct socket_state *s = arg;
	int fresh[2];
	long us;

	if (s->nr_transfers++ == DEAD_TRANSFER) {
		us = timed_transfer(s->dead);
		close_pair(s->dead);
		return us;
	}
	if (tcp_pair(fresh))
		return -1;
	us = timed_transfer(fresh);
	close_pair(fresh);

	return us;
}

/*
 * Whether TCP over 127.0.0.1 works: KSFT_PASS; KSFT_SKIP without IPv4
 * (CONFIG_INET); KSFT_FAIL, reported, when connecting fails otherwise.
 */
static int check_tcp(struct reparent_test *t)
{
	int fd[2];

	if (!tcp_pair(fd)) {
		close_pair(fd);
		return KSFT_PASS;
	}
	if (errno == EAFNOSUPPORT || errno == EPROTONOSUPPORT) {
		rt_skip(t, "no TCP over IPv4 (CONFIG_INET): %s\n",
			strerror(errno));
		return KSFT_SKIP;
	}
	report(t, 0, "cannot connect over 127.0.0.1 (is lo up?): %s\n",
	       strerror(errno));
	return KSFT_FAIL;
}

static int socket_setup(struct reparent_test *t)
{
	char max[32];
	int ret;

	ret = check_tcp(t);
	if (ret != KSFT_PASS)
		return ret;

	snprintf(max, sizeof(max), "%d", SOCKET_CG_MAX);
	if (cg_write(t->child, "memory.max", max)) {
		report(t, 0, "cannot set %s/memory.max\n", t->child);
		return KSFT_FAIL;
	}

	return file_setup(t);
}

/*
 * Kill the holder and a reader it may have left: they are in the
 * holder's process group, and a reader that outlived the holder is this
 * process's child now (PR_SET_CHILD_SUBREAPER).
 */
static void socket_cleanup(struct reparent_test *t)
{
	struct socket_state *s = t->priv;
	pid_t pgid = s->f.h.pid;

	if (pgid > 0) {
		kill(-pgid, SIGKILL);
		kill(pgid, SIGKILL);
	}
	file_free(t);
	if (pgid > 0)
		while (waitpid(-pgid, NULL, 0) > 0)
			;
}

static int test_reparent_socket_limit(const char *root)
{
	struct socket_state s = {
		.f = FILE_STATE(SOCKET_FILE_SIZE),
		.dead = { -1, -1 },
	};
	struct memcg_events base, ev[NR_TRANSFERS + 1], *b, *a;
	long us[NR_TRANSFERS], ref;
	struct reparent_test t;
	int i, ret;

	ret = rt_setup(&t, root, __func__);
	t.priv = &s;
	if (ret == KSFT_PASS)
		ret = skip_unless_on_disk(&t);
	if (ret == KSFT_PASS)
		ret = socket_setup(&t);
	if (ret != KSFT_PASS)
		goto cleanup;

	if (read_events(t.parent, &base)) {
		report(&t, 0, "cannot read %s/memory.events\n", t.parent);
		goto cleanup;
	}
	if (holder_start(&s.f.h, &t, socket_charge, socket_query, &s) ||
	    rt_remove_child(&t, -1))
		goto cleanup;
	if (!access(t.child, F_OK) || errno != ENOENT) {
		report(&t, 0, "%s is still there after rmdir\n", t.child);
		goto cleanup;
	}
	if (t.child_last.v[K_CURRENT] < SOCKET_CG_MAX / 4 * 3) {
		report(&t, 0,
		       "memory.current of the child: expected >= %d KiB before rmdir, saw %ld KiB\n",
		       SOCKET_CG_MAX / 4 * 3 / 1024,
		       kib(t.child_last.v[K_CURRENT]));
		goto cleanup;
	}
	ksft_print_msg("%s: the child had %ld KiB (file %ld KiB) of its %d KiB at rmdir\n",
		       t.name, kib(t.child_last.v[K_CURRENT]),
		       kib(t.child_last.v[K_FILE]), SOCKET_CG_MAX / 1024);

	for (i = 0; i < NR_TRANSFERS; i++) {
		if (read_events(t.parent, &ev[i])) {
			report(&t, 0, "cannot read %s/memory.events\n",
			       t.parent);
			goto cleanup;
		}
		us[i] = holder_query(&s.f.h);
		if (us[i] < 0) {
			report(&t, CHECK_SETUP, "the %s transfer failed\n",
			       transfer_names[i]);
			goto cleanup;
		}
	}
	if (read_events(t.parent, &ev[i])) {
		report(&t, 0, "cannot read %s/memory.events\n", t.parent);
		goto cleanup;
	}
	t.checked = true;

	ref = us[0] > us[2] ? us[0] : us[2];
	b = &ev[DEAD_TRANSFER];
	a = &ev[DEAD_TRANSFER + 1];
	ksft_print_msg("%s: %d MiB in %ld ms through C's sockets, %ld and %ld ms through K's\n",
		       t.name, TRANSFER_SIZE >> 20, us[DEAD_TRANSFER] / 1000,
		       us[0] / 1000, us[2] / 1000);
	ksft_print_msg("%s: P's memory.events during it: oom %+ld, oom_kill %+ld, max %+ld\n",
		       t.name, a->oom - b->oom, a->oom_kill - b->oom_kill,
		       a->max - b->max);
	/* the same figures for the harness's records (db/metrics.py) */
	ksft_print_msg("METRIC %s dead_ms=%ld ref_ms=%ld oom=%ld oom_kill=%ld max=%ld\n",
		       t.name, us[DEAD_TRANSFER] / 1000, ref / 1000,
		       a->oom - b->oom, a->oom_kill - b->oom_kill,
		       a->max - b->max);

	check_run(CHECK_NO_OOM);
	if (a->oom != b->oom || a->oom_kill != b->oom_kill)
		report(&t, CHECK_NO_OOM,
		       "memcg OOM in P during the transfer: oom %+ld, oom_kill %+ld\n",
		       a->oom - b->oom, a->oom_kill - b->oom_kill);
	if (ev[i].oom != base.oom || ev[i].oom_kill != base.oom_kill)
		report(&t, CHECK_NO_OOM,
		       "memcg OOM in P during the test: oom %+ld, oom_kill %+ld\n",
		       ev[i].oom - base.oom, ev[i].oom_kill - base.oom_kill);
	check_run(CHECK_NO_SLOWDOWN);
	if (us[DEAD_TRANSFER] > SOCKET_SLOWDOWN * ref + SOCKET_GRACE_US)
		report(&t, CHECK_NO_SLOWDOWN,
		       "the transfer took %ld ms, expected <= %d x %ld + %d ms\n",
		       us[DEAD_TRANSFER] / 1000, SOCKET_SLOWDOWN, ref / 1000,
		       SOCKET_GRACE_US / 1000);

cleanup:
	socket_cleanup(&t);
	return rt_cleanup(&t, ret);
}

/*
 * A removed C whose only memory was socket buffers must be released once
 * its sockets are closed: nothing may hold it then, a CPU's charge stock
 * included. mem_cgroup_charge_skmem() takes a socket's pages through the
 * charging CPU's stock, and a stock keeps a css reference on the memcg it
 * caches until its CPU charges another one, which on an idle CPU may be
 * never. So, unlike the other subtests, the wait for the release here
 * does not nudge the stocks. C's sockets are made in C, on CPU 0, and C
 * is removed.
 * Once C is offline (whose drain_all_stock() drains the stocks caching
 * it, or queues their drain on the other CPUs), SOCKET_QUEUED bytes are
 * sent from the root cgroup on CPU 1 and left unread: C's sockets charge
 * them there, both ends on loopback, and the ACK uncharges some, so CPU
 * 1's stock caches whatever memcg the sockets charge. Everything else
 * runs on CPU 0: the bytes are read, the holder closes the sockets and
 * exits, and the sockets' own slab objects are freed there. P's
 * nr_dying_subsys_memory must be back to its base within dying_timeout;
 * SOCKET_RELEASE_ROUNDS times over, a new P, C and K each. Any charge or
 * uncharge of another memcg on CPU 1 (a kernel object's free included)
 * can still replace its stock: a kernel whose stocks pin removed memcgs
 * released C in 3 rounds of 23 here, twice in a row once, so one round
 * proves little, and all of 12 in a row is out of reach.
 */
#define SOCKET_QUEUED		4096
#define SOCKET_RELEASE_ROUNDS	12

/*
 * The memcg inode number that /proc/kpagecgroup gives for the page at
 * @addr of this process, -1 on error (no page there, or no permission).
 */
static long kpagecgroup_of(const void *addr)
{
	uint64_t ent = 0, ino;
	long ret = -1;
	int fd;

	fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (pread(fd, &ent, sizeof(ent),
		  (uintptr_t)addr / page_size * sizeof(ent)) != sizeof(ent))
		ent = 0;
	close(fd);
	/* present, with a PFN (bits 0-54) */
	if (!(ent & (1ULL << 63)) || !(ent & ((1ULL << 55) - 1)))
		return -1;
	fd = open("/proc/kpagecgroup", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (pread(fd, &ino, sizeof(ino),
		  (ent & ((1ULL << 55) - 1)) * sizeof(ino)) == sizeof(ino))
		ret = ino;
	close(fd);

	return ret;
}

static int socket_release_charge(void *arg)
{
	struct socket_state *s = arg;
	long ino;

	/*
	 * On CPU 0 while in C: no stock on CPU 1 caches C, so offline queues
	 * no drain there that could land after the charges below.
	 */
	if (pin_to_cpu(0) || setpgid(0, 0) || tcp_pair(s->dead))
		return EXIT_FAILURE;
	s->page = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->page == MAP_FAILED)
		return EXIT_FAILURE;
	memset(s->page, 'p', page_size);
	ino = kpagecgroup_of(s->page);
	if (ino <= 0)
		return EXIT_FAILURE;
	s->child_ino = ino;

	return EXIT_SUCCESS;
}

/*
 * Offline drains the stocks that cache the removed memcg, or queues their
 * drain on other CPUs (drain_all_stock()), so a charge on CPU 1 proves
 * something only after it. /proc/kpagecgroup names a page's memcg while
 * it is online, and an online ancestor after: wait for the holder's page
 * to change hands.
 */
static int wait_child_offline(struct socket_state *s)
{
	double start = now();
	long ino;

	for (;;) {
		ino = kpagecgroup_of(s->page);
		if (ino <= 0)
			return -1;
		if ((unsigned long)ino != s->child_ino)
			return 0;
		if (now() - start >= dying_timeout)
			return -1;
		sleep_ms(1);
	}
}

static long socket_release_query(void *arg)
{
	struct socket_state *s = arg;
	char buf[SOCKET_QUEUED];
	size_t got = 0;
	ssize_t n;

	/*
	 * From the root cgroup, whose charges bypass the stocks: nothing the
	 * holder does after the sockets close (its answer on the pipe, its
	 * exit) replaces the stock that their charges on CPU 1 filled.
	 */
	if (cg_enter_current(s->root) || wait_child_offline(s) ||
	    pin_to_cpu(1))
		return -1;
	/*
	 * Were a stock on CPU 1 caching C all the same (a kernel charge of
	 * C's there), offline only queued its drain: let it run before the
	 * charges on CPU 1, or it empties their stock.
	 */
	sleep_ms(100);
	memset(buf, 'q', sizeof(buf));
	if (send(s->dead[0], buf, sizeof(buf), MSG_NOSIGNAL) != sizeof(buf))
		return -1;
	if (pin_to_cpu(0))
		return -1;
	while (got < sizeof(buf)) {
		n = read(s->dead[1], buf, sizeof(buf) - got);
		if (n <= 0)
			return -1;
		got += n;
	}
	close_pair(s->dead);
	return 0;
}

static int socket_release_round(const char *root)
{
	struct socket_state s = {
		.f = FILE_STATE(0),
		.dead = { -1, -1 },
		.root = root,
	};
	struct reparent_test t;
	long dying, waited;
	int ret;

	ret = rt_setup(&t, root, "test_reparent_socket_release");
	t.priv = &s;
	if (ret != KSFT_PASS)
		goto cleanup;
	if (nr_cpus < 2) {
		rt_skip(&t, "needs 2 CPUs, has %ld\n", nr_cpus);
		ret = KSFT_SKIP;
		goto cleanup;
	}
	ret = check_tcp(&t);
	if (ret != KSFT_PASS)
		goto cleanup;

	if (holder_start(&s.f.h, &t, socket_release_charge,
			 socket_release_query, &s) ||
	    rt_remove_child(&t, -1))
		goto cleanup;
	if (holder_query(&s.f.h) < 0) {
		report(&t, 0, "the removed child's sockets failed to carry the queued bytes\n");
		goto cleanup;
	}
	/* the holder exits: no charge of its own replaces a stock */
	holder_stop(&s.f.h);
	t.checked = true;
	check_run(CHECK_RELEASED);

	dying = cg_wait_dying(t.parent, "memory", t.dying_base,
			      dying_timeout * 1000, NULL, &waited);
	if (dying != t.dying_base)
		report(&t, CHECK_RELEASED,
		       "nr_dying_subsys_memory: expected %ld, saw %ld %.1f s after the sockets closed (stocks not nudged)\n",
		       t.dying_base, dying, waited / 1000.0);
	else
		ksft_print_msg("%s: released %.2f s after the sockets closed\n",
			       t.name, waited / 1000.0);

cleanup:
	socket_cleanup(&t);
	return rt_cleanup(&t, ret);
}

static int test_reparent_socket_release(const char *root)
{
	int i, ret = KSFT_PASS;

	for (i = 0; i < SOCKET_RELEASE_ROUNDS && ret == KSFT_PASS; i++)
		ret = socket_release_round(root);

	return ret;
}

/*
 * A file C created and left dirty: its inode is attached to C's writeback
 * structure (cgwb), which holds C's css. Offline switches the inodes of a
 * clean cgwb to the parent's; a dirty one waited for the flusher's next
 * periodic run (dirty_writeback_centisecs, 5 s by default), and every job
 * that ended with unwritten data stayed dying that long. Here both that
 * period and the dirty expiry are raised to DIRTY_CGWB_FLUSH_S, longer than
 * the wait, so that nothing but the offline itself can release C within
 * dying_timeout (released). No sync: it would clean the inode itself.
 *
 * The rmdir must not write the data either (deferred): writing a job's
 * dirty pages when it ends writes what the flusher would have coalesced
 * or never written, a file deleted by the next job. Fewer than half of
 * C's pages may be written between the rmdir and the release (or the end
 * of the wait): the ext4 journal's commits write a few. Then the file is
 * synced, dropped from the page cache and read back from the disk: its
 * writeback, through whichever wb the inode has now, wrote it whole
 * (intact).
 */
#define DIRTY_CGWB_SIZE		MB(4)
#define DIRTY_CGWB_FLUSH_S	120

static const char * const dirty_cgwb_knobs[] = {
	"/proc/sys/vm/dirty_expire_centisecs",
	"/proc/sys/vm/dirty_writeback_centisecs",
};

struct dirty_cgwb_state {
	char path[PATH_MAX];
	size_t size;		/* written with 'c' by dirty_cgwb_charge() */
};

static int dirty_cgwb_charge(void *arg)
{
	struct dirty_cgwb_state *s = arg;
	int fd, ret;

	fd = open(s->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return EXIT_FAILURE;
	ret = write_pattern(fd, s->size, 'c');
	close(fd);

	return ret ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * Raise the flusher's period and the dirty expiry to DIRTY_CGWB_FLUSH_S,
 * keeping their values in @saved for restore_dirty_knobs().
 */
static int raise_dirty_knobs(struct reparent_test *t,
			     char saved[][32])
{
	char raised[32];
	int i;

	snprintf(raised, sizeof(raised), "%d", DIRTY_CGWB_FLUSH_S * 100);
	for (i = 0; i < ARRAY_SIZE(dirty_cgwb_knobs); i++) {
		if (read_text(dirty_cgwb_knobs[i], saved[i], 32) <= 0 ||
		    write_text(dirty_cgwb_knobs[i], raised, strlen(raised)) < 0) {
			report(t, 0, "cannot raise %s\n", dirty_cgwb_knobs[i]);
			saved[i][0] = '\0';
			return -1;
		}
	}
	return 0;
}

static void restore_dirty_knobs(char saved[][32])
{
	int i;

	for (i = 0; i < ARRAY_SIZE(dirty_cgwb_knobs); i++)
		if (saved[i][0])
			write_text(dirty_cgwb_knobs[i], saved[i], strlen(saved[i]));
}

/*
 * Check 1 while what the child left is still in use (what, for the
 * message): the child must be released all the same.
 */
static void check_released_while(struct reparent_test *t, const char *what)
{
	if (!check_released(t, t->dying_base))
		t->failed = true;
	else
		ksft_print_msg("%s: released %.2f s after rmdir, %s\n",
			       t->name, t->released_at - t->removed_at, what);
}

/* The pages written back since boot, from /proc/vmstat, or -1 */
static long vmstat_nr_written(void)
{
	char buf[8 * PAGE_SIZE];

	if (read_text("/proc/vmstat", buf, sizeof(buf)) <= 0)
		return -1;

	return cg_parse_key_long(buf, "nr_written");
}

/* The last of check 3: sync the file, drop its pages, read it back from the disk */
static void check_dirty_cgwb_intact(struct reparent_test *t,
				    struct dirty_cgwb_state *s)
{
	char buf[IO_CHUNK];
	size_t off = 0;
	ssize_t n, i;
	int fd, err;

	fd = open(s->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		report(t, CHECK_UNCHARGED, "open %s: %s\n", s->path,
		       strerror(errno));
		return;
	}
	err = fsync(fd) ? errno : posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (err) {
		report(t, CHECK_UNCHARGED, "cannot sync and drop %s: %s\n",
		       s->path, strerror(err));
		close(fd);
		return;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (i = 0; i < n; i++)
			if (buf[i] != 'c')
				break;
		if (i < n)
			break;
		off += n;
	}
	close(fd);
	if (n == 0 && off == DIRTY_CGWB_SIZE)
		return;
	report(t, CHECK_UNCHARGED,
	       "%s does not read back from the disk as written: %zu of %ld bytes\n",
	       s->path, off, (long)DIRTY_CGWB_SIZE);
}

static int test_reparent_dirty_cgwb(const char *root)
{
	struct dirty_cgwb_state s = { .path = "", .size = DIRTY_CGWB_SIZE };
	char saved[ARRAY_SIZE(dirty_cgwb_knobs)][32] = { "" };
	struct reparent_test t;
	long dying, written, after, pages = DIRTY_CGWB_SIZE / page_size;
	double waited;
	int ret;

	ret = rt_setup(&t, root, __func__);
	if (ret != KSFT_PASS)
		goto cleanup;
	ret = skip_unless_on_disk(&t);
	if (ret != KSFT_PASS)
		goto cleanup;
	snprintf(s.path, sizeof(s.path), "memcg_reparent_dirty_cgwb.%d", getpid());
	unlink(s.path);
	if (raise_dirty_knobs(&t, saved))
		goto cleanup;

	if (cg_run_pinned(t.child, dirty_cgwb_charge, &s, false)) {
		report(&t, 0, "cannot write %s in the child\n", s.path);
		goto cleanup;
	}
	written = vmstat_nr_written();
	if (written < 0) {
		report(&t, 0, "cannot read nr_written in /proc/vmstat\n");
		goto cleanup;
	}
	if (rt_remove_child(&t, K_FILE_DIRTY))
		goto cleanup;
	t.checked = true;
	check_run(CHECK_RELEASED);

	dying = wait_dying(t.parent, t.dying_base, dying_timeout, &waited);
	if (dying != t.dying_base)
		report(&t, 1,
		       "nr_dying_subsys_memory: expected %ld, saw %ld %.1f s after rmdir, with the child's file dirty and the flusher's period and expiry at %d s\n",
		       t.dying_base, dying, waited, DIRTY_CGWB_FLUSH_S);
	else
		ksft_print_msg("%s: released %.2f s after rmdir\n", t.name, waited);
	ksft_print_msg("METRIC %s release_s=%.2f released=%d\n", t.name, waited,
		       dying == t.dying_base);
	/* "deferred": the rmdir did not write the child's dirty pages */
	check_run(CHECK_ACCOUNTED);
	after = vmstat_nr_written();
	written = after - written;
	ksft_print_msg("METRIC %s written_pages=%ld dirtied_pages=%ld\n",
		       t.name, written, pages);
	if (after < 0)
		report(&t, CHECK_ACCOUNTED,
		       "cannot read nr_written in /proc/vmstat after the rmdir\n");
	else if (written >= pages / 2)
		report(&t, CHECK_ACCOUNTED,
		       "%ld pages written between the rmdir and %.1f s after it, of the %ld the child left dirty with the flusher's expiry at %d s\n",
		       written, waited, pages, DIRTY_CGWB_FLUSH_S);
	/* "intact": the data of the file the child left dirty, from the disk */
	check_run(CHECK_UNCHARGED);
	check_dirty_cgwb_intact(&t, &s);

cleanup:
	restore_dirty_knobs(saved);
	if (s.path[0])
		unlink(s.path);
	return rt_cleanup(&t, ret);
}

/*
 * The writeback of a live memcg is none of a removal's business. K, live,
 * leaves a file dirty. Then P enables the io controller, so that K's
 * writes belong to a blkcg of K's own: K's next file gets a new cgwb, and
 * the one that holds the dirty file is killed and put on the list that
 * every memcg's offline cleans up (cgwb_create()). Then C, empty, is
 * removed. 6.12's cleanup leaves a dirty cgwb alone: the dirty file stays
 * on a cgwb of K, its dirty pages counted in K's writeback domain, written
 * at its expiry under the blkcg it was dirtied in. Switched to P's cgwb,
 * it would leave K's dirty throttling for P's, its expiry restarted
 * (untouched). The flusher's period and expiry are raised past the test,
 * as for test_reparent_dirty_cgwb, so that nothing writes the file; where
 * its pages are is read from debugfs (bdi/<dev>/wb_stats: one block per
 * cgwb, WbCgIno its memcg's cgroup, WbReclaimable its dirty pages).
 */
#define DIRTY_LIVE_SIZE		MB(4)
#define WB_STATS_SIZE		(64 * 1024)

/* The dirty KiB of the cgwbs of the memcg whose cgroup has inode @ino */
static long wb_dirty_kib(unsigned long ino)
{
	char path[PATH_MAX], *buf, *block, *save, *p;
	long sum = 0, kb;
	unsigned long cg;
	struct stat st;

	if (stat(".", &st))
		return -1;
	snprintf(path, sizeof(path), "/sys/kernel/debug/bdi/%u:%u/wb_stats",
		 major(st.st_dev), minor(st.st_dev));
	buf = malloc(WB_STATS_SIZE);
	if (!buf || read_text(path, buf, WB_STATS_SIZE) <= 0) {
		free(buf);
		return -1;
	}
	for (block = strtok_r(buf, "\n", &save); block;
	     block = strtok_r(NULL, "\n", &save)) {
		if (sscanf(block, "WbCgIno: %lu", &cg) == 1)
			continue;
		p = strstr(block, "WbReclaimable:");
		if (p && sscanf(p, "WbReclaimable: %ld", &kb) == 1 && cg == ino)
			sum += kb;
	}
	free(buf);

	return sum;
}

static int test_reparent_dirty_live(const char *root)
{
	struct dirty_cgwb_state a = { .path = "", .size = DIRTY_LIVE_SIZE };
	struct dirty_cgwb_state b = { .path = "", .size = IO_CHUNK };
	char saved[ARRAY_SIZE(dirty_cgwb_knobs)][32] = { "" };
	long before, after, want = DIRTY_LIVE_SIZE / 1024;
	bool root_io = false;
	struct reparent_test t;
	struct stat st;
	int ret;

	ret = rt_setup(&t, root, __func__);
	if (ret != KSFT_PASS)
		goto cleanup;
	ret = skip_unless_on_disk(&t);
	if (ret != KSFT_PASS)
		goto cleanup;
	if (stat(t.keep, &st) || wb_dirty_kib(st.st_ino) < 0) {
		rt_skip(&t,
			"no wb_stats of the working directory's disk in /sys/kernel/debug/bdi\n");
		ret = KSFT_SKIP;
		goto cleanup;
	}
	if (cg_read_strstr(root, "cgroup.subtree_control", "io")) {
		if (cg_write(root, "cgroup.subtree_control", "+io")) {
			rt_skip(&t, "no io controller to enable in %s\n", root);
			ret = KSFT_SKIP;
			goto cleanup;
		}
		root_io = true;
	}
	snprintf(a.path, sizeof(a.path), "memcg_reparent_dirty_live.%d", getpid());
	snprintf(b.path, sizeof(b.path), "memcg_reparent_dirty_live_b.%d", getpid());
	unlink(a.path);
	unlink(b.path);
	if (raise_dirty_knobs(&t, saved))
		goto cleanup;

	if (cg_run_pinned(t.keep, dirty_cgwb_charge, &a, false)) {
		report(&t, 0, "cannot write %s in K\n", a.path);
		goto cleanup;
	}
	if (cg_write(t.parent, "cgroup.subtree_control", "+io") ||
	    cg_run_pinned(t.keep, dirty_cgwb_charge, &b, false)) {
		report(&t, 0, "cannot enable io in %s and write %s in K\n",
		       t.parent, b.path);
		goto cleanup;
	}
	before = wb_dirty_kib(st.st_ino);
	if (before < want) {
		report(&t, 0, "K's cgwbs hold %ld KiB dirty before the rmdir, not the %ld K left\n",
		       before, want);
		goto cleanup;
	}
	if (rt_remove_child(&t, -1))
		goto cleanup;
	t.checked = true;

	check_run(CHECK_ACCOUNTED);
	/* the cleanup runs from a workqueue, the switch after a grace period */
	sleep_ms(1000);
	after = wb_dirty_kib(st.st_ino);
	ksft_print_msg("METRIC %s k_dirty_kib_before=%ld k_dirty_kib_after=%ld\n",
		       t.name, before, after);
	if (after < want)
		report(&t, CHECK_ACCOUNTED,
		       "K's cgwbs hold %ld KiB dirty after C's rmdir, %ld before: the rmdir moved live K's dirty file away\n",
		       after, before);

cleanup:
	restore_dirty_knobs(saved);
	if (a.path[0])
		unlink(a.path);
	if (b.path[0])
		unlink(b.path);
	ret = rt_cleanup(&t, ret);
	if (root_io)
		cg_write(root, "cgroup.subtree_control", "-io");
	return ret;
}

/*
 * A CPU's charge stock holds a css reference on the memcg it caches, and
 * offline's drain_all_stock() must empty a removed memcg's stock on every
 * CPU, or the memcg stays dying until that CPU charges another one. Each
 * of STOCK_ROUNDS children charges 1 to STOCK_ROUNDS pages of anon memory
 * on CPU 0 and exits, so that CPU 0's stock caches it with any number of
 * pages left, none included; the child is removed from CPU 1, where
 * everything else of the test runs and CPU 0 stays idle. Meanwhile K, a
 * sibling at its memory.max (STOCK_K_MAX), reads a file of STOCK_K_FILE
 * in a loop on CPU 1: its reclaim drains the stocks too, and a drain that
 * finds another running gives up (mutex_trylock()). Every child must be
 * released within STOCK_WAIT_MS of its rmdir with nothing nudged
 * (released): otherwise the stock pins it.
 */
#define STOCK_ROUNDS		64
#define STOCK_K_MAX		MB(8)
#define STOCK_K_FILE		MB(32)
#define STOCK_WAIT_MS		1000

/* Fault @pages pages of anon memory in @cgroup on CPU 0, and exit. */
static int stock_charge(const char *cgroup, long pages)
{
	int status;
	pid_t pid;
	char *p;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (pin_to_cpu(0) || cg_enter_current(cgroup))
			_exit(EXIT_FAILURE);
		p = mmap(NULL, pages * page_size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			_exit(EXIT_FAILURE);
		madvise(p, pages * page_size, MADV_NOHUGEPAGE);
		memset(p, 1, pages * page_size);
		_exit(EXIT_SUCCESS);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status) ? -1 : 0;
}

/* K's reader: read @fd from the start, again and again, until killed */
static pid_t stock_start_reader(const char *cgroup, int fd)
{
	char buf[IO_CHUNK];
	pid_t pid;
	off_t off;

	fflush(stdout);
	pid = fork();
	if (pid != 0)
		return pid;
	if (pin_to_cpu(1) || cg_enter_current(cgroup))
		_exit(EXIT_FAILURE);
	for (;;)
		for (off = 0; off < STOCK_K_FILE; off += sizeof(buf))
			if (pread(fd, buf, sizeof(buf), off) <= 0)
				_exit(EXIT_FAILURE);
}

static int test_reparent_stock(const char *root)
{
	char path[PATH_MAX] = "", *child = NULL, pinned[256] = "";
	long dying, ms, kept = 0, i, max_events;
	bool restore_cpus = false;
	pid_t reader = -1;
	struct reparent_test t;
	cpu_set_t cpus;
	double waited;
	int ret, fd = -1;

	ret = rt_setup(&t, root, __func__);
	if (ret != KSFT_PASS)
		goto cleanup;
	if (nr_cpus < 2) {
		rt_skip(&t, "needs 2 CPUs, has %ld\n", nr_cpus);
		ret = KSFT_SKIP;
		goto cleanup;
	}
	ret = skip_unless_on_disk(&t);
	if (ret != KSFT_PASS)
		goto cleanup;
	/* C of rt_setup() is not used: every round makes its own */
	cg_destroy(t.child);
	t.child_removed = true;
	child = cg_name(t.parent, "round");
	fd = make_uncached_file(&t, path, sizeof(path), STOCK_K_FILE);
	restore_cpus = !sched_getaffinity(0, sizeof(cpus), &cpus);
	if (!child || fd < 0 || !restore_cpus || pin_to_cpu(1) ||
	    cg_write_numeric(t.keep, "memory.max", STOCK_K_MAX)) {
		report(&t, 0, "cannot set up K at its memory.max on CPU 1\n");
		goto cleanup;
	}
	reader = stock_start_reader(t.keep, fd);
	if (reader < 0) {
		report(&t, 0, "cannot start K's reader\n");
		goto cleanup;
	}
	sleep_ms(500);
	max_events = cg_read_key_long(t.keep, "memory.events", "max ");

	t.checked = true;
	check_run(CHECK_RELEASED);
	for (i = 1; i <= STOCK_ROUNDS; i++) {
		if (cg_create(child) || stock_charge(child, i)) {
			report(&t, 0, "round %ld: cannot charge %ld pages in %s on CPU 0\n",
			       i, i, child);
			break;
		}
		if (cg_destroy(child)) {
			report(&t, 0, "round %ld: cannot remove %s\n", i, child);
			break;
		}
		dying = cg_wait_dying(t.parent, "memory", t.dying_base,
				      STOCK_WAIT_MS, NULL, &ms);
		if (dying > t.dying_base) {
			kept++;
			if (strlen(pinned) < sizeof(pinned) - 8)
				snprintf(pinned + strlen(pinned),
					 sizeof(pinned) - strlen(pinned), " %ld", i);
			/* the next round's charge on CPU 0 releases it */
		}
	}
	max_events = cg_read_key_long(t.keep, "memory.events", "max ") - max_events;
	ksft_print_msg("METRIC %s rounds=%ld kept=%ld k_max_events=%ld\n",
		       t.name, i - 1, kept, max_events);
	/* K must have been at its memory.max all along, or this proves nothing */
	if (max_events < STOCK_ROUNDS)
		report(&t, CHECK_RELEASED,
		       "K met its memory.max %ld times during %ld rounds: not under pressure\n",
		       max_events, i - 1);
	if (kept)
		report(&t, CHECK_RELEASED,
		       "%ld of %ld removed children still dying %d ms after their rmdir, with K at its memory.max (rounds:%s)\n",
		       kept, i - 1, STOCK_WAIT_MS, pinned);

cleanup:
	if (reader > 0) {
		kill(reader, SIGKILL);
		waitpid(reader, NULL, 0);
	}
	if (fd >= 0)
		close(fd);
	if (path[0])
		unlink(path);
	if (child) {
		cg_destroy(child);
		free(child);
	}
	/* let go of whatever a stock still holds before P goes */
	if (t.parent)
		wait_dying(t.parent, t.dying_base, 2, &waited);
	if (restore_cpus)
		sched_setaffinity(0, sizeof(cpus), &cpus);
	return rt_cleanup(&t, ret);
}

/*
 * A connection made in C that stays open after C is removed, as a pooled
 * or handed-over connection does: its sockets must not keep C dying, and
 * what they charged before and after the rmdir must be uncharged exactly.
 * The holder makes a TCP pair in C and leaves SOCKET_OPEN_QUEUED bytes
 * unread in the accepting end, so that C has socket memory at rmdir; it
 * then moves to K. C must be released while the sockets are open (check
 * 1), with P still accounting for their memory (check 2). Then the holder
 * reads the queued data, pushes TRANSFER_SIZE bytes through the same
 * connection from K and closes it, and P's sock must be back to its
 * baseline exactly, and memory.current within the stock tolerance, once
 * the holder is gone (check 3).
 */
#define SOCKET_OPEN_QUEUED	MB(8)

static int socket_open_charge(void *arg)
{
	struct socket_state *s = arg;
	int rcvbuf = 2 * SOCKET_OPEN_QUEUED, sndbuf = MB(1);
	double deadline = now() + SETTLE_TIMEOUT;
	char *buf;
	ssize_t n;

	if (setpgid(0, 0) || tcp_pair(s->dead))
		return EXIT_FAILURE;
	/* root: past net.core.rmem_max; the kernel doubles the value */
	if (setsockopt(s->dead[1], SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf,
		       sizeof(rcvbuf)) ||
	    setsockopt(s->dead[0], SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf,
		       sizeof(sndbuf)))
		return EXIT_FAILURE;

	buf = malloc(IO_CHUNK);
	if (!buf)
		return EXIT_FAILURE;
	memset(buf, 's', IO_CHUNK);
	/* until SOCKET_OPEN_QUEUED, or the receive window stays shut */
	while (s->queued < SOCKET_OPEN_QUEUED && now() < deadline) {
		n = send(s->dead[0], buf, IO_CHUNK, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EAGAIN) {
			if (s->queued >= SOCKET_OPEN_QUEUED / 4)
				break;
			sleep_ms(POLL_MS);
			continue;
		}
		if (n <= 0)
			break;
		s->queued += n;
	}
	free(buf);

	return s->queued >= SOCKET_OPEN_QUEUED / 4 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* In K: drain what C queued, then a transfer through C's connection. */
static long socket_open_query(void *arg)
{
	struct socket_state *s = arg;
	char buf[IO_CHUNK];
	size_t drained = 0, len;
	long us;

	/* every byte sent in C, some of which may still be in flight */
	while (drained < s->queued) {
		len = s->queued - drained;
		if (len > sizeof(buf))
			len = sizeof(buf);
		if (read_full(s->dead[1], buf, len, HOLDER_TIMEOUT_MS))
			return -1;
		drained += len;
	}
	us = timed_transfer(s->dead);
	close_pair(s->dead);

	return us < 0 ? -1 : (long)drained;
}

static int test_reparent_socket_open(const char *root)
{
	static const int keys[] = { K_SOCK };
	struct socket_state s = {
		.f = FILE_STATE(0),
		.dead = { -1, -1 },
	};
	struct key_range exact;
	struct memcg_snap seen;
	struct reparent_test t;
	long drained;
	int ret;

	ret = rt_setup(&t, root, __func__);
	t.priv = &s;
	if (ret != KSFT_PASS)
		goto cleanup;
	ret = check_tcp(&t);
	if (ret != KSFT_PASS)
		goto cleanup;

	if (holder_start(&s.f.h, &t, socket_open_charge, socket_open_query,
			 &s) ||
	    rt_remove_child(&t, K_SOCK))
		goto cleanup;
	ksft_print_msg("%s: the child's sockets held %ld KiB at rmdir\n",
		       t.name, kib(t.child_last.v[K_SOCK]));

	check_released_while(&t, "its sockets open");
	if (!check_accounted(&t, keys, ARRAY_SIZE(keys)))
		t.failed = true;

	check_run(CHECK_UNCHARGED);
	drained = holder_query(&s.f.h);
	if (drained < 0) {
		report(&t, 3, "the transfer through the removed child's connection failed\n");
		goto cleanup;
	}
	ksft_print_msg("%s: %ld KiB drained and %d MiB sent through the connection from K\n",
		       t.name, kib(drained), TRANSFER_SIZE >> 20);
	holder_stop(&s.f.h);

	exact = (struct key_range){ K_SOCK, t.base.v[K_SOCK], t.base.v[K_SOCK] };
	if (!expect_ranges(&t, 3, t.parent, &exact, 1, UNCHARGE_TIMEOUT, &seen))
		t.failed = true;
	if (!check_uncharged(&t, keys, ARRAY_SIZE(keys), 0))
		t.failed = true;
	info_released_after_free(&t);

cleanup:
	socket_cleanup(&t);
	return rt_cleanup(&t, ret);
}

/*
 * An inotify and a fanotify group made in C that outlive it, as a
 * long-lived watcher handed to another cgroup does: they must not keep C
 * dying, and the events queued after the rmdir must be charged to P, not
 * lost to the dead C or to nobody. The holder makes both groups in C,
 * watching a directory of its own, and moves to K. C must be released
 * (check 1). Then FSNOTIFY_EVENTS inotify events are queued unread (an
 * open and a close of one file, alternating so that none merges with the
 * last), and P's slab must grow by at least half their size (check 2);
 * reading them and closing the groups must bring P's slab back to within
 * the tolerance of its baseline (check 3).
 */
#define FSNOTIFY_EVENTS		32768
#define FSNOTIFY_EVENT_SIZE	32	/* sizeof(struct inotify_event_info), at least */

static const char fsnotify_queue_knob[] = "/proc/sys/fs/inotify/max_queued_events";

struct fsnotify_state {
	struct holder h;
	char dir[PATH_MAX];
	char file[PATH_MAX];
	int inotify;
	int fanotify;
	int nr_queries;
};

static int fsnotify_charge(void *arg)
{
	struct fsnotify_state *s = arg;

	s->inotify = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (s->inotify < 0 ||
	    inotify_add_watch(s->inotify, s->dir, IN_OPEN | IN_CLOSE) < 0)
		return EXIT_FAILURE;
	s->fanotify = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC |
				    FAN_NONBLOCK, O_RDONLY);
	if (s->fanotify < 0 ||
	    fanotify_mark(s->fanotify, FAN_MARK_ADD,
			  FAN_OPEN | FAN_CLOSE | FAN_EVENT_ON_CHILD,
			  AT_FDCWD, s->dir))
		return EXIT_FAILURE;

	return EXIT_SUCCESS;
}

/*
 * In K. First query: queue the events, return how many inotify queued.
 * Second: read them all, and every fanotify event; return how many
 * inotify events were read.
 */
static long fsnotify_query(void *arg)
{
	struct fsnotify_state *s = arg;
	/* long: struct inotify_event is read in place */
	long words[IO_CHUNK / sizeof(long)];
	char *buf = (char *)words;
	long nr = 0, i;
	ssize_t n;
	int fd, bytes;

	if (s->nr_queries++ == 0) {
		for (i = 0; i < FSNOTIFY_EVENTS / 2; i++) {
			fd = open(s->file, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				return -1;
			close(fd);
		}
		if (ioctl(s->inotify, FIONREAD, &bytes))
			return -1;
		return bytes;
	}

	while ((n = read(s->inotify, buf, sizeof(words))) > 0) {
		for (i = 0; i < n; ) {
			struct inotify_event *ev = (void *)(buf + i);

			i += sizeof(*ev) + ev->len;
			nr++;
		}
	}
	if (n < 0 && errno != EAGAIN)
		return -1;
	while ((n = read(s->fanotify, buf, sizeof(words))) > 0) {
		struct fanotify_event_metadata *m = (void *)buf;
		long len = n;

		for (; FAN_EVENT_OK(m, len); m = FAN_EVENT_NEXT(m, len))
			if (m->fd >= 0)
				close(m->fd);
	}
	if (n < 0 && errno != EAGAIN)
		return -1;
	close_fd(&s->inotify);
	close_fd(&s->fanotify);

	return nr;
}

static int test_reparent_fsnotify(const char *root)
{
	static const int keys[] = { K_SLAB };
	struct fsnotify_state s = { .inotify = -1, .fanotify = -1 };
	char saved[32] = "", raised[32];
	struct memcg_snap before, seen;
	struct key_range grown;
	struct reparent_test t;
	long queued, nr;
	int fd, ret;

	ret = rt_setup(&t, root, __func__);
	t.priv = &s;
	if (ret != KSFT_PASS)
		goto cleanup;
	fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC, O_RDONLY);
	if (fd < 0 && errno == ENOSYS) {
		rt_skip(&t, "no fanotify (CONFIG_FANOTIFY)\n");
		ret = KSFT_SKIP;
		goto cleanup;
	}
	if (fd < 0) {
		report(&t, 0, "fanotify_init: %s\n", strerror(errno));
		goto cleanup;
	}
	close(fd);
	if (!getcwd(s.dir, sizeof(s.dir) - 32) ||
	    strlen(s.dir) > sizeof(s.dir) - 64) {
		report(&t, 0, "getcwd: %s\n", strerror(errno));
		goto cleanup;
	}
	strcat(s.dir, "/memcg_reparent_fsnotify");
	if (snprintf(s.file, sizeof(s.file), "%s/watched", s.dir) >=
	    (int)sizeof(s.file)) {
		report(&t, 0, "%s/watched: path too long\n", s.dir);
		s.file[0] = '\0';
		goto cleanup;
	}
	unlink(s.file);
	rmdir(s.dir);
	/* made here, not in C: C's only memory is the groups */
	if (mkdir(s.dir, 0700)) {
		report(&t, 0, "mkdir %s: %s\n", s.dir, strerror(errno));
		goto cleanup;
	}
	fd = open(s.file, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		report(&t, 0, "cannot create %s: %s\n", s.file, strerror(errno));
		goto cleanup;
	}
	close(fd);
	/* every event must stay queued: none may be dropped as overflow */
	if (read_text(fsnotify_queue_knob, saved, sizeof(saved)) <= 0) {
		report(&t, 0, "cannot read %s\n", fsnotify_queue_knob);
		goto cleanup;
	}
	snprintf(raised, sizeof(raised), "%d", 2 * FSNOTIFY_EVENTS);
	if (write_text(fsnotify_queue_knob, raised, strlen(raised)) < 0) {
		report(&t, 0, "cannot write %s\n", fsnotify_queue_knob);
		saved[0] = '\0';
		goto cleanup;
	}

	if (holder_start(&s.h, &t, fsnotify_charge, fsnotify_query, &s) ||
	    rt_remove_child(&t, -1))
		goto cleanup;

	check_released_while(&t, "its groups open");

	check_run(CHECK_ACCOUNTED);
	if (snap_memcg(t.parent, &before)) {
		report(&t, 2, "cannot read %s\n", t.parent);
		check_skip(CHECK_UNCHARGED, "check 2 could not read the parent");
		goto cleanup;
	}
	queued = holder_query(&s.h);
	if (queued < (long)FSNOTIFY_EVENTS * (long)sizeof(struct inotify_event)) {
		report(&t, 2, "inotify queued %ld bytes of events, expected %ld\n",
		       queued,
		       (long)FSNOTIFY_EVENTS * (long)sizeof(struct inotify_event));
		check_skip(CHECK_UNCHARGED,
			   "the events were not queued, see check 2");
		goto cleanup;
	}
	grown = (struct key_range){
		K_SLAB,
		before.v[K_SLAB] + FSNOTIFY_EVENTS * FSNOTIFY_EVENT_SIZE / 2,
		LONG_MAX,
	};
	if (!expect_ranges(&t, 2, t.parent, &grown, 1, SETTLE_TIMEOUT, &seen))
		t.failed = true;
	ksft_print_msg("%s: P's slab grew by %ld KiB with %d events queued\n",
		       t.name, kib(seen.v[K_SLAB] - before.v[K_SLAB]),
		       FSNOTIFY_EVENTS);

	check_run(CHECK_UNCHARGED);
	nr = holder_query(&s.h);
	if (nr != FSNOTIFY_EVENTS) {
		report(&t, 3, "read %ld inotify events, expected %d\n", nr,
		       FSNOTIFY_EVENTS);
		goto cleanup;
	}
	holder_stop(&s.h);
	if (!check_uncharged(&t, keys, ARRAY_SIZE(keys), 0))
		t.failed = true;
	info_released_after_free(&t);

cleanup:
	if (s.h.pid > 0) {
		kill(s.h.pid, SIGKILL);
		holder_stop(&s.h);
	}
	if (saved[0])
		write_text(fsnotify_queue_knob, saved, strlen(saved));
	if (s.file[0])
		unlink(s.file);
	if (s.dir[0])
		rmdir(s.dir);
	return rt_cleanup(&t, ret);
}

/*
 * Anon memory of C that went to swap, kept by a task that moved to K: the
 * swap records name C's id, and must not keep C dying. The holder faults
 * SWAP_SIZE of anon memory in C (small pages, a pattern per page) and
 * moves to K; memory.reclaim of C pushes it to swap (zswap, in the guest
 * of the harness). C must be released (check 1) with P's
 * memory.swap.current still holding what C had in swap (check 2). Then
 * the holder reads every page back, which must hold its pattern, and
 * exits: P's memory.swap.current must be back to its baseline, but for
 * the freed slots that a CPU's swap slot cache has not given back yet
 * (up to SWAP_SLOTS_CACHE pages per CPU: their uncharge waits for the
 * cache), and memory.current within the stock tolerance (check 3).
 */
#define SWAP_SIZE		MB(32)
#define SWAP_SLOTS_CACHE	64	/* SWAP_SLOTS_CACHE_SIZE */

static int fault_anon_pattern(void *arg)
{
	struct file_state *s = arg;
	size_t off;

	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0))
		return EXIT_FAILURE;
	s->map = mmap(NULL, s->size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->map == MAP_FAILED)
		return EXIT_FAILURE;
	for (off = 0; off < s->size; off += page_size)
		memset((char *)s->map + off, 'a' + off / page_size % 26, page_size);

	return EXIT_SUCCESS;
}

/* In K: read every page back (a swapin each); the pages that differ. */
static long query_pattern(void *arg)
{
	struct file_state *s = arg;
	long bad = 0;
	size_t off, i;

	for (off = 0; off < s->size; off += page_size) {
		const char *p = (const char *)s->map + off;
		char want = 'a' + off / page_size % 26;

		for (i = 0; i < (size_t)page_size && p[i] == want; i++)
			;
		bad += i < (size_t)page_size;
	}

	return bad;
}

static int test_reparent_swap(const char *root)
{
	struct file_state s = FILE_STATE(SWAP_SIZE);
	long base_swap, child_swap, parent_swap, swap, bad, slots;
	long keep_before, keep_after;
	struct reparent_test t;
	char amount[32];
	double start;
	int ret;

	ret = rt_setup(&t, root, __func__);
	t.priv = &s;
	if (ret != KSFT_PASS)
		goto cleanup;
	base_swap = cg_read_long(t.parent, "memory.swap.current");
	if (base_swap < 0) {
		rt_skip(&t,
			"no memory.swap.current (CONFIG_SWAP, swapaccount)\n");
		ret = KSFT_SKIP;
		goto cleanup;
	}
	if (holder_start(&s.h, &t, fault_anon_pattern, query_pattern, &s))
		goto cleanup;

	/* memory.reclaim may reclaim less than asked, and say EAGAIN */
	snprintf(amount, sizeof(amount), "%ld", (long)SWAP_SIZE);
	cg_write(t.child, "memory.reclaim", amount);
	child_swap = cg_read_long(t.child, "memory.swap.current");
	if (child_swap < SWAP_SIZE / 2) {
		report(&t, 0,
		       "memory.swap.current of the child: expected >= %d KiB after memory.reclaim, saw %ld KiB (is swap on?)\n",
		       SWAP_SIZE / 2 / 1024, kib(child_swap));
		goto cleanup;
	}
	ksft_print_msg("%s: the child had %ld KiB in swap at rmdir\n", t.name,
		       kib(child_swap));
	if (rt_remove_child(&t, -1))
		goto cleanup;

	check_released_while(&t, "its swap still in use");
	check_run(CHECK_ACCOUNTED);
	parent_swap = cg_read_long(t.parent, "memory.swap.current");
	if (parent_swap < base_swap + child_swap - stat_tol()) {
		report(&t, 2,
		       "memory.swap.current of the parent: expected >= %ld KiB, saw %ld KiB\n",
		       kib(base_swap + child_swap - stat_tol()), kib(parent_swap));
		t.failed = true;
	}

	check_run(CHECK_UNCHARGED);
	keep_before = cg_read_long(t.keep, "memory.current");
	bad = holder_query(&s.h);
	if (bad) {
		report(&t, 3, "%ld of %ld pages read back wrong from swap (-1: the holder died)\n",
		       bad, SWAP_SIZE / page_size);
		goto cleanup;
	}
	/*
	 * The holder, a live task in K, faulted it all back in: whoever the
	 * swap record names now, the memcg that charged it is gone, and the
	 * swapin is charged to the faulting task's memcg, K, inside K's own
	 * limits, not to the ancestor that took the records over.
	 */
	check_run(CHECK_SWAPIN_CHARGED);
	keep_after = cg_read_long(t.keep, "memory.current");
	if (keep_before < 0 || keep_after < keep_before + child_swap * 3 / 4) {
		report(&t, CHECK_SWAPIN_CHARGED,
		       "memory.current of K, whose task swapped in %ld KiB: %ld KiB before, %ld KiB after; expected at least %ld KiB more\n",
		       kib(child_swap), kib(keep_before), kib(keep_after),
		       kib(child_swap * 3 / 4));
		t.failed = true;
	}
	holder_stop(&s.h);
	slots = SWAP_SLOTS_CACHE * page_size * nr_cpus;
	start = now();
	do {
		swap = cg_read_long(t.parent, "memory.swap.current");
		if (swap >= base_swap && swap <= base_swap + slots)
			break;
		sleep_ms(STAT_POLL_MS);
	} while (now() - start < UNCHARGE_TIMEOUT);
	if (swap < base_swap || swap > base_swap + slots) {
		report(&t, 3,
		       "memory.swap.current of the parent: expected %ld..%ld KiB, saw %ld KiB %.1f s after the swap was freed\n",
		       kib(base_swap), kib(base_swap + slots), kib(swap),
		       now() - start);
		t.failed = true;
	} else {
		ksft_print_msg("%s: %ld KiB of the parent's swap still in the swap slot caches\n",
			       t.name, kib(swap - base_swap));
	}
	if (!check_uncharged(&t, NULL, 0, 0))
		t.failed = true;
	info_released_after_free(&t);

cleanup:
	file_free(&t);
	return rt_cleanup(&t, ret);
}

static const struct memcg_reparent_subtest tests[] = {
	{ test_reparent_socket_limit, "test_reparent_socket_limit",
	  { [CHECK_NO_OOM] = "no_oom", [CHECK_NO_SLOWDOWN] = "no_slowdown" } },
	{ test_reparent_socket_release, "test_reparent_socket_release",
	  { [CHECK_RELEASED] = "released" } },
	{ test_reparent_dirty_cgwb, "test_reparent_dirty_cgwb",
	  { [CHECK_RELEASED] = "released", [CHECK_ACCOUNTED] = "deferred",
	    [CHECK_UNCHARGED] = "intact" } },
	{ test_reparent_dirty_live, "test_reparent_dirty_live",
	  { [CHECK_ACCOUNTED] = "untouched" } },
	{ test_reparent_stock, "test_reparent_stock",
	  { [CHECK_RELEASED] = "released" } },
	{ test_reparent_socket_open, "test_reparent_socket_open",
	  { [CHECK_RELEASED] = "released", [CHECK_ACCOUNTED] = "accounted",
	    [CHECK_UNCHARGED] = "uncharged" } },
	{ test_reparent_fsnotify, "test_reparent_fsnotify",
	  { [CHECK_RELEASED] = "released", [CHECK_ACCOUNTED] = "charged",
	    [CHECK_UNCHARGED] = "uncharged" } },
	{ test_reparent_swap, "test_reparent_swap",
	  { [CHECK_RELEASED] = "released", [CHECK_ACCOUNTED] = "accounted",
	    [CHECK_UNCHARGED] = "uncharged",
	    [CHECK_SWAPIN_CHARGED] = "swapin_charged" } },
};

int main(int argc, char **argv)
{
	return memcg_reparent_main(tests, ARRAY_SIZE(tests));
}
