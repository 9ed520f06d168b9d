// SPDX-License-Identifier: GPL-2.0
/*
 * LRU folios of a removed memcg that migrate to another NUMA node. A
 * removed memcg is reparented one node at a time, so a folio must stay
 * bound to the obj_cgroup of its own node: migration makes a new folio on
 * the other node, which must be bound to the objcg there and charged to
 * the same memcg. Needs two nodes with memory (a boot with numa=fake=2);
 * with one, every check is skipped and says so.
 *
 * test_reparent_migrate_anon: anon pages faulted in C by a task that then
 * moved to K. C is removed; the task moves its pages to the other node
 * (move_pages(2)). Checks 1 to 4 of memcg_reparent.h, and "migrated": at
 * least 90% of the pages are on the other node and P's memory.numa_stat
 * counts them there. On a kernel that does not reparent LRU folios check 1
 * ("released") fails; the others still run.
 */
#define _GNU_SOURCE

#include <linux/limits.h>
#include <linux/mempolicy.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../kselftest.h"
#include "cgroup_util.h"
#include "memcg_reparent.h"

#define MIGRATE_SIZE	MB(16)
#define NODE_SHIFT	32	/* holder_act() returns node << NODE_SHIFT | pages */

/* The nodes with memory, from /sys/devices/system/node/has_memory. */
static int nodes_with_memory(int *first, int *second)
{
	char buf[256], *p = buf;
	int n = 0, a, b, nid;
	FILE *f;

	f = fopen("/sys/devices/system/node/has_memory", "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	/* "0-1" or "0,2-3" */
	while (*p && *p != '\n') {
		if (sscanf(p, "%d-%d", &a, &b) != 2) {
			if (sscanf(p, "%d", &a) != 1)
				break;
			b = a;
		}
		for (nid = a; nid <= b; nid++, n++) {
			if (n == 0)
				*first = nid;
			else if (n == 1)
				*second = nid;
		}
		p += strcspn(p, ",\n");
		if (*p == ',')
			p++;
	}
	return n;
}

static long move_pages_of(void *addr, long nr, const int *nodes, int *status)
{
	void **pages = malloc(nr * sizeof(*pages));
	long i, ret;

	if (!pages)
		return -1;
	for (i = 0; i < nr; i++)
		pages[i] = (char *)addr + i * page_size;
	ret = syscall(__NR_move_pages, 0, nr, pages, nodes, status,
		      MPOL_MF_MOVE);
	free(pages);
	return ret;
}

/*
 * In the holder: move every page to the node with memory that holds fewest
 * of them; return that node and how many pages are there afterwards.
 */
static long migrate_anon(void *arg)
{
	struct file_state *s = arg;
	long nr = s->size / page_size, i, on[2] = { 0, 0 }, ret = -1;
	int *status = calloc(nr, sizeof(int));
	int *nodes = calloc(nr, sizeof(int));
	int first = 0, second = 1, target;

	if (!status || !nodes || nodes_with_memory(&first, &second) < 2 ||
	    move_pages_of(s->map, nr, NULL, status))
		goto out;
	for (i = 0; i < nr; i++)
		on[status[i] == second]++;
	target = on[0] <= on[1] ? first : second;
	for (i = 0; i < nr; i++)
		nodes[i] = target;
	if (move_pages_of(s->map, nr, nodes, status) < 0 ||
	    move_pages_of(s->map, nr, NULL, status))
		goto out;
	ret = 0;
	for (i = 0; i < nr; i++)
		ret += status[i] == target;
	ret |= (long)target << NODE_SHIFT;
out:
	free(status);
	free(nodes);
	return ret;
}

static int anon_charge(struct reparent_test *t)
{
	struct file_state *s = t->priv;

	t->min_charge = s->size - s->size / 10;
	s->h.act = migrate_anon;
	return holder_start(&s->h, t, holder_fault_anon,
			    holder_query_resident, s) ?
		KSFT_FAIL : KSFT_PASS;
}

/* P's anon bytes on @nid, from memory.numa_stat's "anon N0=.. N1=.." */
static long numa_anon(const char *cgroup, int nid)
{
	char buf[4096], key[32], *line, *end, *p;
	long v;

	if (cg_read(cgroup, "memory.numa_stat", buf, sizeof(buf)))
		return -1;
	snprintf(key, sizeof(key), " N%d=", nid);
	for (line = buf; *line; line = *end ? end + 1 : end) {
		end = line + strcspn(line, "\n");
		if (strncmp(line, "anon ", 5))
			continue;
		p = strstr(line, key);
		if (!p || p > end)
			return -1;
		return sscanf(p + strlen(key), "%ld", &v) == 1 ? v : -1;
	}
	return -1;
}

/* Checks 1, 2 and 4 passed (or failed); migrate, check, then free. */
static void migrate_free(struct reparent_test *t)
{
	struct file_state *s = t->priv;
	long nr = s->size / page_size, want = nr - nr / 10, v, there, anon = -1;
	double deadline;
	int nid;

	check_run(CHECK_MIGRATED);
	v = holder_act(&s->h);
	if (v < 0) {
		report(t, CHECK_MIGRATED, "move_pages in the holder failed\n");
		file_free(t);
		return;
	}
	nid = v >> NODE_SHIFT;
	there = v & ((1L << NODE_SHIFT) - 1);
	ksft_print_msg("%s: %ld of %ld pages now on node %d\n", t->name, there,
		       nr, nid);
	if (there < want)
		report(t, CHECK_MIGRATED, "%ld of %ld pages moved to node %d\n",
		       there, nr, nid);
	/* The stats of the new folios are P's, on the new node. */
	deadline = now() + SETTLE_TIMEOUT;
	do {
		anon = numa_anon(t->parent, nid);
		if (anon >= want * page_size)
			break;
		sleep_ms(STAT_POLL_MS);
	} while (now() < deadline);
	if (anon < want * page_size)
		report(t, CHECK_MIGRATED,
		       "P's numa_stat: anon N%d=%ld KiB, want at least %ld KiB\n",
		       nid, kib(anon), kib(want * page_size));
	file_free(t);
}

static const struct reparent_kind migrate_anon_kind = {
	KEYS(K_ANON),
	.charged_key	= K_ANON,
	.charge		= anon_charge,
	.resident	= holder_resident,
	.free		= migrate_free,
	.cleanup	= file_free,
};

static int test_reparent_migrate_anon(const char *root)
{
	struct file_state s = FILE_STATE(MIGRATE_SIZE);
	struct reparent_test t = { .name = __func__ };
	int first, second;

	if (nodes_with_memory(&first, &second) < 2) {
		rt_skip(&t, "one node with memory: boot with numa=fake=2\n");
		return KSFT_SKIP;
	}
	return run_reparent_test(root, __func__, &migrate_anon_kind, &s);
}

static const struct memcg_reparent_subtest tests[] = {
	{ test_reparent_migrate_anon, "test_reparent_migrate_anon",
	  { [CHECK_RELEASED] = "released", [CHECK_ACCOUNTED] = "accounted",
	    [CHECK_UNCHARGED] = "uncharged", [CHECK_RESIDENT] = "resident",
	    [CHECK_MIGRATED] = "migrated" } },
};

int main(int argc, char **argv)
{
	return memcg_reparent_main(tests, ARRAY_SIZE(tests));
}
