// SPDX-License-Identifier: GPL-2.0
/*
 * Reclaim after a child's removal must take what the child left before a
 * live sibling's working set: when the parent is reclaimed
 * (test_reparent_reclaim), and when the parent is under memory.low or
 * memory.min and its own parent is reclaimed (test_reparent_protection).
 * Two checks, a TAP line each:
 *
 *  sibling_kept     the sibling keeps at least 7/8 of its file in memory;
 *  child_reclaimed  at most a quarter of the removed child's pages are
 *                   left.
 *
 * They run under MGLRU only: the classic LRU takes a fifth of the
 * sibling's file on 6.12 too.
 */
#define _GNU_SOURCE

#include <linux/bpf.h>
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

#define RECLAIM_HOT		(32 << 20)
#define RECLAIM_COLD		(64 << 20)
#define RECLAIM_COLD_MAX	(16 << 20)
#define LRU_GEN_ENABLED		"/sys/kernel/mm/lru_gen/enabled"

/* A file of the test's own, named after it and @what, not in the page cache. */
static int reclaim_file(struct reparent_test *t, struct file_state *s,
			const char *what)
{
	char made[PATH_MAX - 16];

	s->fd = make_uncached_file(t, made, sizeof(made), s->size);
	if (s->fd < 0)
		return -1;
	snprintf(s->path, sizeof(s->path), "%s.%s", made, what);
	if (rename(made, s->path)) {
		report(t, 0, "rename %s: %s\n", made, strerror(errno));
		unlink(made);
		s->path[0] = '\0';
		return -1;
	}
	return 0;
}

/* Is cgroup2 mounted with memory_recursiveprot? */
static bool recursiveprot(void)
{
	char line[PATH_MAX];
	bool on = false;
	FILE *f;

	f = fopen("/proc/self/mounts", "re");
	if (!f)
		return false;
	while (!on && fgets(line, sizeof(line), f))
		on = strstr(line, " cgroup2 ") &&
		     strstr(line, "memory_recursiveprot");
	fclose(f);
	return on;
}

/*
 * Reclaim after the rmdir takes what the removed child left, not a live
 * sibling's working set. On 6.12 the dying C keeps its own LRU, and
 * reclaim scrapes a deleted memcg out before it takes shares by size
 * (get_nr_to_scan() under MGLRU); once C's lists are spliced into P's,
 * P's own lruvec must be treated the same, or reclaim takes K's pages in
 * proportion to their number.
 *
 * K (t.keep) reads its file three times: a working set. C reads another,
 * larger file twice under memory.max, so that it reclaims and ages its own
 * LRU, and is removed. K reads its file once more, then memory.reclaim
 * asks @target for what C had.
 *   check 5: K keeps at least 7/8 of its file in memory;
 *   check 6: at most a quarter of C's pages are left.
 * Under the classic LRU a deleted memcg only gets a rounding in its favour,
 * and 6.12 takes a fifth of K too: the tests want MGLRU on.
 */
static int reclaim_after_rmdir(struct reparent_test *t, const char *target)
{
	struct file_state hot = FILE_STATE(RECLAIM_HOT);
	struct file_state cold = FILE_STATE(RECLAIM_COLD);
	long charged, hot_pages, hot_in, cold_in, cold_left;
	char buf[32];
	int i;

	if (read_text(LRU_GEN_ENABLED, buf, sizeof(buf)) <= 0 ||
	    !strtol(buf, NULL, 16)) {
		rt_skip(t, "MGLRU is off or absent (%s)\n", LRU_GEN_ENABLED);
		return KSFT_SKIP;
	}
	if (reclaim_file(t, &hot, "hot") || reclaim_file(t, &cold, "cold"))
		goto cleanup;
	for (i = 0; i < 3; i++)
		if (cg_run_pinned(t->keep, read_file, &hot, false)) {
			report(t, 0, "cannot read %s in the sibling\n", hot.path);
			goto cleanup;
		}
	snprintf(buf, sizeof(buf), "%d", RECLAIM_COLD_MAX);
	if (cg_write(t->child, "memory.max", buf)) {
		report(t, 0, "cannot set memory.max of the child\n");
		goto cleanup;
	}
	for (i = 0; i < 2; i++)
		if (cg_run_pinned(t->child, read_file, &cold, false)) {
			report(t, 0, "cannot read %s in the child\n", cold.path);
			goto cleanup;
		}
	charged = cg_read_key_long(t->child, "memory.stat", "file ");
	if (charged < RECLAIM_COLD_MAX / 2) {
		report(t, 0, "file of the child: expected >= %d KiB, saw %ld KiB\n",
		       RECLAIM_COLD_MAX / 2048, kib(charged));
		goto cleanup;
	}
	if (rt_remove_child(t, -1))
		goto cleanup;
	t->checked = true;

	/* K's working set is hot when reclaim comes. */
	if (cg_run_pinned(t->keep, read_file, &hot, false)) {
		report(t, 0, "cannot read %s in the sibling\n", hot.path);
		goto cleanup;
	}
	cold_in = file_resident_pages(cold.fd, cold.size);
	snprintf(buf, sizeof(buf), "%ld", charged);
	/* EAGAIN: less than asked; what was taken from whom is the test */
	if (cg_write(target, "memory.reclaim", buf) && errno != EAGAIN) {
		report(t, 0, "memory.reclaim of %s: %s\n", target, strerror(errno));
		goto cleanup;
	}
	hot_pages = hot.size / page_size;
	hot_in = file_resident_pages(hot.fd, hot.size);
	cold_left = file_resident_pages(cold.fd, cold.size);
	if (cold_in <= 0 || hot_in < 0 || cold_left < 0) {
		report(t, 0, "mincore of the files failed\n");
		goto cleanup;
	}
	ksft_print_msg("%s: reclaimed %ld KiB: sibling kept %ld of %ld, child %ld -> %ld pages\n",
		       t->name, kib(charged), hot_in, hot_pages, cold_in, cold_left);
	check_run(CHECK_SIBLING_KEPT);
	check_run(CHECK_CHILD_RECLAIMED);
	if (hot_in < hot_pages - hot_pages / 8)
		report(t, CHECK_SIBLING_KEPT,
		       "the sibling's file: expected >= %ld of its %ld pages in memory, saw %ld: reclaim took them in place of the removed child's\n",
		       hot_pages - hot_pages / 8, hot_pages, hot_in);
	if (cold_left > cold_in / 4)
		report(t, CHECK_CHILD_RECLAIMED,
		       "the removed child's file: expected <= %ld of its %ld resident pages left, saw %ld\n",
		       cold_in / 4, cold_in, cold_left);

cleanup:
	for (i = 0; i < 2; i++) {
		struct file_state *f = i ? &cold : &hot;

		if (f->fd >= 0)
			close(f->fd);
		if (f->path[0])
			unlink(f->path);
	}
	return KSFT_PASS;
}

/* memory.reclaim of P itself: P's own protection does not apply. */
static int test_reparent_reclaim(const char *root)
{
	struct reparent_test t;
	int ret;

	ret = rt_setup(&t, root, __func__);
	if (ret == KSFT_PASS)
		ret = reclaim_after_rmdir(&t, t.parent);
	return rt_cleanup(&t, ret);
}

/*
 * The same, with P under memory.low=max, then under memory.min=max, and
 * the reclaim asked of P's parent G. On 6.12 the dying C's protection is
 * reset at offline, so its pages have none of their own; once they are on
 * P's lists, P's protection must not cover them, or reclaim of G skips P
 * and takes K's working set (K has no protection) in their place.
 * Without memory_recursiveprot K's effective protection is 0; with it K
 * shares P's, and the test tells less.
 */
static int protected_reclaim(const char *root, const char *knob)
{
	char *g = cg_name(root, "memcg_reparent_protection_g");
	struct reparent_test t;
	int ret = KSFT_FAIL;

	if (!g)
		return KSFT_FAIL;
	if ((cg_create(g) && errno != EEXIST) ||
	    cg_write(g, "cgroup.subtree_control", "+memory")) {
		ksft_print_msg("%s: cannot create %s\n", __func__, g);
		goto out;
	}
	ret = rt_setup(&t, g, "test_reparent_protection");
	if (ret == KSFT_PASS && cg_write(t.parent, knob, "max")) {
		report(&t, 0, "cannot set %s of the parent\n", knob);
		ret = KSFT_FAIL;
	}
	if (ret == KSFT_PASS) {
		ksft_print_msg("%s: %s=max on the parent, memory_recursiveprot %s\n",
			       t.name, knob, recursiveprot() ? "on" : "off");
		ret = reclaim_after_rmdir(&t, g);
	}
	ret = rt_cleanup(&t, ret);
out:
	cg_destroy(g);
	free(g);
	return ret;
}

static int test_reparent_protection(const char *root)
{
	int low = protected_reclaim(root, "memory.low");
	int min = protected_reclaim(root, "memory.min");

	if (low == KSFT_FAIL || min == KSFT_FAIL)
		return KSFT_FAIL;
	return low == KSFT_PASS ? min : low;
}

#define RECLAIM_CHECKS {					\
	[CHECK_SIBLING_KEPT]	= "sibling_kept",		\
	[CHECK_CHILD_RECLAIMED]	= "child_reclaimed",		\
}

static const struct memcg_reparent_subtest tests[] = {
	{ test_reparent_reclaim, "test_reparent_reclaim",
	  RECLAIM_CHECKS },
	{ test_reparent_protection, "test_reparent_protection",
	  RECLAIM_CHECKS },
};

int main(int argc, char **argv)
{
	return memcg_reparent_main(tests, ARRAY_SIZE(tests));
}
