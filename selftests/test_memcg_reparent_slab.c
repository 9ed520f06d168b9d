// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel memory of a removed memcg, which 6.12 already hands to the parent
 * through obj_cgroup (mem_cgroup_css_offline() -> memcg_offline_kmem() ->
 * memcg_reparent_objcgs()): slab (tmpfs inodes and dentries), kmem pages
 * (pipe buffers), percpu (the per-CPU values of a BPF hash map's elements)
 * and kernel stacks (of tasks that moved to a live sibling). Each subtest
 * charges its memory in a child, removes the child while the memory stays
 * in use and runs checks 1 to 4 of memcg_reparent.h, a TAP line each.
 * These pass on a kernel that does not reparent LRU folios too: they are
 * the reference that the other test_memcg_reparent_* binaries are held to.
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
#include "../clone3/clone3_selftests.h"
#include "cgroup_util.h"
#include "memcg_reparent.h"

#define HOLDER_ARG		"--memcg-reparent-holder"

#define NR_PIPES		16
#define PIPE_BYTES		MB(1)
#define NR_SLAB_FILES		6000
#define NR_STACK_HOLDERS	256
#define PERCPU_VALUE_SIZE	4096	/* per CPU and element */

struct slab_state {
	char *dir;		/* a tmpfs mount */
	int dirfd;
};

static int create_slab_files(void *arg)
{
	struct slab_state *s = arg;
	char name[NAME_MAX];
	int i, fd;

	for (i = 0; i < NR_SLAB_FILES; i++) {
		snprintf(name, sizeof(name),
			 "memcg-reparent-dentry-with-an-external-name-%06d", i);
		fd = openat(s->dirfd, name, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			return EXIT_FAILURE;
		close(fd);
	}

	return EXIT_SUCCESS;
}

static int slab_setup(struct reparent_test *t)
{
	struct slab_state *s = t->priv;

	s->dir = tmpfs_mount(t);
	if (!s->dir)
		return KSFT_SKIP;
	s->dirfd = open(s->dir, O_DIRECTORY | O_CLOEXEC);
	if (s->dirfd < 0) {
		report(t, 0, "cannot open %s: %s\n", s->dir, strerror(errno));
		return KSFT_FAIL;
	}
	t->min_charge = (long)NR_SLAB_FILES * 256;

	return KSFT_PASS;
}

static int slab_charge(struct reparent_test *t)
{
	struct slab_state *s = t->priv;

	if (cg_run_pinned(t->child, create_slab_files, s, false)) {
		report(t, 0, "cannot create %d files on tmpfs\n", NR_SLAB_FILES);
		return KSFT_FAIL;
	}

	return KSFT_PASS;
}

/* Unmounting the tmpfs frees its dentries and inodes. */
static void slab_free(struct reparent_test *t)
{
	struct slab_state *s = t->priv;

	if (s->dirfd >= 0)
		close(s->dirfd);
	s->dirfd = -1;
	tmpfs_umount(s->dir);
	s->dir = NULL;
}

static const struct reparent_kind slab_kind = {
	KEYS(K_SLAB_RECLAIMABLE, K_SLAB_UNRECLAIMABLE, K_SLAB, K_KERNEL),
	.charged_key	= K_SLAB,
	.setup		= slab_setup,
	.charge		= slab_charge,
	.free		= slab_free,
	.cleanup	= slab_free,
};

/*
 * Dentries, external names and inodes (all SLAB_ACCOUNT or
 * __GFP_ACCOUNT) of empty tmpfs files created in C. A tmpfs file has no
 * page and no cgroup writeback, so slab is all C gets; tmpfs pins its
 * dentries, so nothing is shrunk.
 */
static int test_reparent_slab(const char *root)
{
	struct slab_state s = { .dirfd = -1 };

	return run_reparent_test(root, __func__, &slab_kind, &s);
}

struct kmem_state {
	int fds[2 * NR_PIPES];
	int nr_fds;
};

static int fill_pipes(void *arg)
{
	struct kmem_state *s = arg;
	char *buf;
	int i, off;

	buf = malloc(page_size);
	if (!buf)
		return EXIT_FAILURE;
	memset(buf, 'k', page_size);

	for (i = 0; i < NR_PIPES; i++) {
		int fd = s->fds[2 * i + 1];

		if (fcntl(fd, F_SETPIPE_SZ, PIPE_BYTES) < 0)
			return EXIT_FAILURE;
		/* one page-sized write per pipe buffer: no merging */
		for (off = 0; off < PIPE_BYTES; off += page_size)
			if (write(fd, buf, page_size) != page_size)
				return EXIT_FAILURE;
	}

	return EXIT_SUCCESS;
}

static int kmem_setup(struct reparent_test *t)
{
	struct kmem_state *s = t->priv;

	for (; s->nr_fds < 2 * NR_PIPES; s->nr_fds += 2) {
		if (pipe2(s->fds + s->nr_fds, O_NONBLOCK | O_CLOEXEC)) {
			report(t, 0, "pipe2: %s\n", strerror(errno));
			return KSFT_FAIL;
		}
	}
	t->min_charge = (long)NR_PIPES * PIPE_BYTES;

	return KSFT_PASS;
}

static int kmem_charge(struct reparent_test *t)
{
	if (cg_run_pinned(t->child, fill_pipes, t->priv, false)) {
		report(t, 0, "cannot fill %d pipes of %d KiB\n", NR_PIPES,
		       PIPE_BYTES >> 10);
		return KSFT_FAIL;
	}

	return KSFT_PASS;
}

static void kmem_free(struct reparent_test *t)
{
	struct kmem_state *s = t->priv;

	while (s->nr_fds > 0)
		close(s->fds[--s->nr_fds]);
}

static const struct reparent_kind kmem_kind = {
	KEYS(K_KERNEL),
	.charged_key	= K_KERNEL,
	.setup		= kmem_setup,
	.charge		= kmem_charge,
	.free		= kmem_free,
	.cleanup	= kmem_free,
};

/*
 * Pipe buffer pages (alloc_page(GFP_HIGHUSER | __GFP_ACCOUNT) in
 * pipe_write(), kmem charged through the obj_cgroup) written by a process
 * in C. The pipes were opened by this process, which keeps them full after
 * the writer exited; closing them frees the pages.
 */
static int test_reparent_kmem(const char *root)
{
	struct kmem_state s = { .nr_fds = 0 };

	return run_reparent_test(root, __func__, &kmem_kind, &s);
}

struct percpu_state {
	int map;		/* in this process's file table */
	int pipe[2];		/* the filler's struct percpu_fill */
	int nr_cpus;		/* possible CPUs: values per element */
	int entries;
};

struct percpu_fill {
	int map;
	int inserted;
	int retries;
};

/* libbpf_num_possible_cpus(): the list in /sys/devices/system/cpu/possible */
static int possible_cpus(void)
{
	char buf[256], *p = buf, *end;
	long first, last;
	int nr = 0;

	if (read_text("/sys/devices/system/cpu/possible", buf, sizeof(buf)) <= 0)
		return -1;
	while (*p >= '0' && *p <= '9') {
		first = strtol(p, &end, 10);
		last = first;
		if (*end == '-')
			last = strtol(end + 1, &end, 10);
		nr += last - first + 1;
		p = *end == ',' ? end + 1 : end;
	}

	return nr;
}

static int percpu_map_create(int max_entries)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.map_type = BPF_MAP_TYPE_PERCPU_HASH;
	attr.key_size = sizeof(__u32);
	attr.value_size = PERCPU_VALUE_SIZE;
	attr.max_entries = max_entries;
	attr.map_flags = BPF_F_NO_PREALLOC;

	return syscall(__NR_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
}

static int percpu_map_insert(int map, __u32 key, void *values)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.map_fd = map;
	attr.key = (unsigned long)&key;
	attr.value = (unsigned long)values;
	attr.flags = BPF_NOEXIST;

	return syscall(__NR_bpf, BPF_MAP_UPDATE_ELEM, &attr, sizeof(attr));
}

/*
 * Runs in C, sharing this process's file table: create the map and insert
 * its elements. An element's per-CPU value comes from the map's
 * bpf_mem_alloc cache, which irq_work refills with GFP_NOWAIT: when the
 * per-CPU allocator has no populated page left the insert fails with
 * ENOMEM until pcpu_balance_workfn() has populated more, so retry as
 * long as it makes progress.
 */
static int fill_percpu_map(void *arg)
{
	struct percpu_state *s = arg;
	struct percpu_fill f = { .map = -1 };
	double progress = now();
	void *values;

	values = calloc(s->nr_cpus, PERCPU_VALUE_SIZE);
	if (!values)
		return EXIT_FAILURE;
	f.map = percpu_map_create(s->entries);
	while (f.map >= 0 && f.inserted < s->entries) {
		if (!percpu_map_insert(f.map, f.inserted, values)) {
			f.inserted++;
			progress = now();
			continue;
		}
		if (errno != ENOMEM || now() - progress > SETTLE_TIMEOUT)
			break;
		f.retries++;
		sleep_ms(1);
	}
	free(values);

	return write(s->pipe[1], &f, sizeof(f)) == sizeof(f) ?
		EXIT_SUCCESS : EXIT_FAILURE;
}

static int percpu_setup(struct reparent_test *t)
{
	struct percpu_state *s = t->priv;
	int fd;

	fd = percpu_map_create(1);
	if (fd < 0) {
		rt_skip(t, "no BPF per-CPU hash map (CONFIG_BPF_SYSCALL): %s\n",
			strerror(errno));
		return KSFT_SKIP;
	}
	close(fd);

	s->nr_cpus = possible_cpus();
	if (s->nr_cpus <= 0) {
		report(t, 0, "cannot read /sys/devices/system/cpu/possible\n");
		return KSFT_FAIL;
	}
	if (pipe2(s->pipe, O_CLOEXEC)) {
		report(t, 0, "pipe2: %s\n", strerror(errno));
		return KSFT_FAIL;
	}
	/* more than 8 times what the stats may lag: 513 elements on 2 CPUs */
	s->entries = 8 * stat_tol() / ((long)PERCPU_VALUE_SIZE * s->nr_cpus) + 1;
	t->min_charge = (long)s->entries * PERCPU_VALUE_SIZE * s->nr_cpus;

	return KSFT_PASS;
}

static int percpu_charge(struct reparent_test *t)
{
	struct percpu_state *s = t->priv;
	struct percpu_fill f = { .map = -1 };
	int err;

	err = cg_run_pinned(t->child, fill_percpu_map, s, true);
	if (read_full(s->pipe[0], &f, sizeof(f), HOLDER_TIMEOUT_MS))
		f.map = -1;
	s->map = f.map;
	if (err || f.map < 0 || f.inserted < s->entries) {
		report(t, 0,
		       "map %d: inserted %d of %d elements in the child (%d ENOMEM retries)\n",
		       f.map, f.inserted, s->entries, f.retries);
		return KSFT_FAIL;
	}
	ksft_print_msg("%s: %d elements of %d x %d bytes inserted, %d ENOMEM retries\n",
		       t->name, f.inserted, s->nr_cpus, PERCPU_VALUE_SIZE,
		       f.retries);

	return KSFT_PASS;
}

/* The map and its elements are freed after RCU grace periods. */
static void percpu_free(struct reparent_test *t)
{
	struct percpu_state *s = t->priv;
	int i;

	if (s->map >= 0)
		close(s->map);
	s->map = -1;
	for (i = 0; i < 2; i++) {
		if (s->pipe[i] >= 0)
			close(s->pipe[i]);
		s->pipe[i] = -1;
	}
}

static const struct reparent_kind percpu_kind = {
	KEYS(K_PERCPU),
	.charged_key	= K_PERCPU,
	.setup		= percpu_setup,
	.charge		= percpu_charge,
	.free		= percpu_free,
	.cleanup	= percpu_free,
};

/*
 * Percpu memory charged to C that outlives it: the elements of a BPF
 * per-CPU hash map created in C without preallocation, held by this
 * process's descriptor. htab_map_alloc() -> bpf_mem_alloc_init() binds the
 * map's element caches to the creator's obj_cgroup, and their refills
 * allocate each element's per-CPU value with __GFP_ACCOUNT under
 * set_active_memcg() of that obj_cgroup's memcg.
 *
 * Not what is allocated at map creation: ops->map_alloc() runs before
 * bpf_map_save_memcg() in map_create(), so a per-CPU array's values and
 * a preallocated hash map's are charged to the root memcg. Nor cgroups
 * created in C: mem_cgroup_css_alloc() charges a new memcg's percpu data
 * to the new cgroup's parent (set_active_memcg()).
 */
static int test_reparent_percpu(const char *root)
{
	struct percpu_state s = { .map = -1, .pipe = { -1, -1 } };

	return run_reparent_test(root, __func__, &percpu_kind, &s);
}

/*
 * A stack holder, run by re-executing this binary: tell the test its pid,
 * then sleep until the release pipe is closed.
 */
static int stack_holder_main(int ready, int release)
{
	pid_t pid = getpid();
	char c;

	if (write(ready, &pid, sizeof(pid)) != sizeof(pid))
		return EXIT_FAILURE;
	close(ready);
	while (read(release, &c, 1) > 0)
		;

	return EXIT_SUCCESS;
}

struct stack_state {
	int keep_fd;
	int ready[2];
	int release[2];
	pid_t pids[NR_STACK_HOLDERS];
	int nr_pids;
};

/*
 * Runs in C: clone the holders straight into K. dup_task_struct() charges
 * each holder's kernel stack to the forking task's memcg, i.e. C. Each
 * holder then execs: the copied mm, which shares pages this process
 * touched in C, is dropped and the new one is charged to K.
 */
static int spawn_stack_holders(void *arg)
{
	struct stack_state *s = arg;
	struct __clone_args args = {
		.flags = CLONE_INTO_CGROUP,
		.exit_signal = SIGCHLD,
		.cgroup = s->keep_fd,
	};
	char ready[16], release[16];
	int i;

	snprintf(ready, sizeof(ready), "%d", s->ready[1]);
	snprintf(release, sizeof(release), "%d", s->release[0]);

	for (i = 0; i < NR_STACK_HOLDERS; i++) {
		pid_t pid = sys_clone3(&args, sizeof(args));

		if (pid < 0)
			return errno == E2BIG ? KSFT_SKIP : EXIT_FAILURE;
		if (pid == 0) {
			fcntl(s->ready[1], F_SETFD, 0);
			fcntl(s->release[0], F_SETFD, 0);
			execl("/proc/self/exe", "/proc/self/exe", HOLDER_ARG,
			      ready, release, (char *)NULL);
			_exit(EXIT_FAILURE);
		}
	}

	return EXIT_SUCCESS;
}

static int stack_setup(struct reparent_test *t)
{
	struct stack_state *s = t->priv;

	s->keep_fd = dirfd_open_opath(t->keep);
	if (s->keep_fd < 0 || pipe2(s->ready, O_CLOEXEC) ||
	    pipe2(s->release, O_CLOEXEC)) {
		report(t, 0, "cannot open %s or pipes\n", t->keep);
		return KSFT_FAIL;
	}
	t->min_charge = (long)NR_STACK_HOLDERS * page_size;

	return KSFT_PASS;
}

static int stack_charge(struct reparent_test *t)
{
	struct stack_state *s = t->priv;
	int err;

	err = cg_run_pinned(t->child, spawn_stack_holders, s, false);
	close_fd(&s->ready[1]);
	if (err == KSFT_SKIP) {
		rt_skip(t, "clone3(CLONE_INTO_CGROUP) unsupported\n");
		return KSFT_SKIP;
	}
	for (; s->nr_pids < NR_STACK_HOLDERS; s->nr_pids++)
		if (read_full(s->ready[0], &s->pids[s->nr_pids], sizeof(pid_t),
			      HOLDER_TIMEOUT_MS))
			break;
	if (err || s->nr_pids < NR_STACK_HOLDERS) {
		report(t, 0, "%d of %d stack holders started\n", s->nr_pids,
		       NR_STACK_HOLDERS);
		return KSFT_FAIL;
	}

	return KSFT_PASS;
}

/* The holders exit when the release pipe closes. */
static void stack_free(struct reparent_test *t)
{
	struct stack_state *s = t->priv;

	close_fd(&s->release[1]);
	while (s->nr_pids > 0)
		waitpid(s->pids[--s->nr_pids], NULL, 0);
}

static void stack_cleanup(struct reparent_test *t)
{
	struct stack_state *s = t->priv;
	int i;

	for (i = 0; i < s->nr_pids; i++)
		kill(s->pids[i], SIGKILL);
	stack_free(t);
	for (i = 0; i < 2; i++) {
		close_fd(&s->ready[i]);
		close_fd(&s->release[i]);
	}
	close_fd(&s->keep_fd);
}

static const struct reparent_kind stack_kind = {
	KEYS(K_KERNEL_STACK, K_KERNEL),
	.charged_key	= K_KERNEL_STACK,
	.setup		= stack_setup,
	.charge		= stack_charge,
	.free		= stack_free,
	.cleanup	= stack_cleanup,
};

/*
 * Kernel stacks of tasks forked in C that outlive C (in K). Also charged
 * to C and reparented with them: the task_structs and the other slab
 * objects of the fork.
 */
static int test_reparent_kernel_stack(const char *root)
{
	struct stack_state s = {
		.keep_fd = -1,
		.ready = { -1, -1 },
		.release = { -1, -1 },
	};

	return run_reparent_test(root, __func__, &stack_kind, &s);
}

static const struct memcg_reparent_subtest tests[] = {
	{ test_reparent_slab, "test_reparent_slab",
	  KIND_CHECKS },
	{ test_reparent_kmem, "test_reparent_kmem",
	  KIND_CHECKS },
	{ test_reparent_percpu, "test_reparent_percpu",
	  KIND_CHECKS },
	{ test_reparent_kernel_stack, "test_reparent_kernel_stack",
	  KIND_CHECKS },
};

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], HOLDER_ARG))
		return stack_holder_main(atoi(argv[2]), atoi(argv[3]));

	return memcg_reparent_main(tests, ARRAY_SIZE(tests));
}
