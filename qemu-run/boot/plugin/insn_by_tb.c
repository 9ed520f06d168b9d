// SPDX-License-Identifier: GPL-2.0
/*
 * A QEMU TCG plugin: count the guest instructions executed per translation
 * block of the kernel's text, to attribute a benchmark's instructions to
 * kernel functions (qemu-run/jobs/insn-profile.sh maps the block addresses to
 * symbols with System.map).  Debian's QEMU can load plugins but ships no
 * header for them, so the few entry points used are declared here, as QEMU
 * 7.2's include/qemu/qemu-plugin.h (plugin API version 1) declares them.
 *
 *   -plugin insn_by_tb.so,out=FILE[,min=ADDR][,mark=ADDR,from=K[,every=1]]
 *
 * Each block translated at a virtual address >= min (default: the x86-64
 * kernel text, 0xffffffff80000000) gets a counter that an inline add bumps
 * by the block's instruction count each time the block runs; a block that
 * is translated again (another TB for the same address) adds to the same
 * counter, and a second inline add counts the block's runs.  At exit FILE
 * gets "ADDR COUNT RUNS" lines (hex address, decimal instructions, decimal
 * runs): the runs of the block at a function's first instruction are its
 * calls (and any jump back to that instruction).  The blocks run with
 * -icount, one vCPU at a time, so the counters need no atomics; a block
 * left early counts in full.
 *
 * With mark= and from=, the counters are zeroed when the block at the mark
 * address (a kernel function's entry, such as sync(2)'s) runs for the K-th
 * time: FILE then counts from there to the end, without the boot and what
 * the guest did before (qemu-run/jobs/insn-profile.sh FROM_SYNC=K).  FILE
 * says whether the mark was reached; a profile whose mark never was counts
 * the whole run and must not be read as the window.
 *
 * With every=1 as well, each later run of the mark closes a window: the
 * counters from the mark's previous run to this one go to FILE.N (window N,
 * from 1: from the mark's (K+N-1)-th run to its (K+N)-th) and are zeroed,
 * and FILE counts the last window, to the end.  The bench syncs before each
 * fast test, so with one test the windows are its repetitions
 * (FROM_SYNC=K EVERY_SYNC=1 qemu-run/jobs/insn-profile.sh).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
		void (*cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb));
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb,
		enum qemu_plugin_op op, void *ptr, uint64_t imm);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id,
		void (*cb)(qemu_plugin_id_t id, void *userdata), void *userdata);
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb,
		void (*cb)(unsigned int vcpu_index, void *userdata),
		enum qemu_plugin_cb_flags flags, void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

struct slot {
	uint64_t addr;
	uint64_t count;
	uint64_t runs;
};

static struct slot *table;
static size_t size = 1 << 20, used;
static uint64_t min_addr = 0xffffffff80000000ULL;
static char *out_path;
static uint64_t mark_addr, mark_from, mark_runs, every;

static struct slot *lookup(uint64_t addr)
{
	size_t i = (addr * 0x9e3779b97f4a7c15ULL) >> 44 & (size - 1);

	while (table[i].addr && table[i].addr != addr)
		i = (i + 1) & (size - 1);
	return &table[i];
}

static void write_counts(FILE *f)
{
	size_t i;

	for (i = 0; i < size; i++)
		if (table[i].addr && table[i].count)
			fprintf(f, "%" PRIx64 " %" PRIu64 " %" PRIu64 "\n",
				table[i].addr, table[i].count, table[i].runs);
	fprintf(f, "# blocks %zu of %zu slots\n", used, size);
}

static void zero_counts(void)
{
	size_t i;

	for (i = 0; i < size; i++) {
		table[i].count = 0;
		table[i].runs = 0;
	}
}

/*
 * The block at mark_addr ran: at its mark_from-th run, zero the counters;
 * with every=1, at each run after that, write them out as a window first.
 */
static void on_mark(unsigned int vcpu_index, void *userdata)
{
	uint64_t n;
	char *p;
	FILE *f;

	(void)vcpu_index;
	(void)userdata;
	if (++mark_runs < mark_from || (mark_runs > mark_from && !every))
		return;
	n = mark_runs - mark_from;	/* the window this run closes */
	if (n) {
		if (asprintf(&p, "%s.%" PRIu64, out_path, n) < 0)
			abort();
		f = fopen(p, "w");
		if (!f) {
			fprintf(stderr, "insn_by_tb: cannot write %s\n", p);
			abort();	/* a window lost is a profile that lies */
		}
		write_counts(f);
		fprintf(f, "# window %" PRIu64 ": mark %" PRIx64 " runs %" PRIu64 " to %" PRIu64 "\n",
			n, mark_addr, mark_runs - 1, mark_runs);
		if (fclose(f)) {
			fprintf(stderr, "insn_by_tb: cannot write %s\n", p);
			abort();
		}
		free(p);
	}
	zero_counts();
}

static void on_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t addr = qemu_plugin_tb_vaddr(tb);
	struct slot *s;

	(void)id;
	if (addr < min_addr)
		return;
	if (mark_from && addr == mark_addr)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, on_mark, QEMU_PLUGIN_CB_NO_REGS, NULL);
	s = lookup(addr);
	if (!s->addr) {
		if (used * 2 >= size)
			return;		/* full: the block goes uncounted */
		s->addr = addr;
		used++;
	}
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
						 &s->count, qemu_plugin_tb_n_insns(tb));
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
						 &s->runs, 1);
}

static void at_exit_write(qemu_plugin_id_t id, void *p)
{
	FILE *f = fopen(out_path, "w");

	(void)id;
	(void)p;
	if (!f)
		return;
	write_counts(f);
	if (mark_from)
		fprintf(f, "# mark %" PRIx64 " from run %" PRIu64 ": %s (%" PRIu64 " runs)\n", mark_addr,
			mark_from, mark_runs >= mark_from ? "reached" : "never reached", mark_runs);
	if (every && mark_runs >= mark_from)
		fprintf(f, "# window %" PRIu64 ": mark %" PRIx64 " run %" PRIu64 " to the end\n",
			mark_runs - mark_from + 1, mark_addr, mark_runs);
	fclose(f);
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	int i;

	(void)info;
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4))
			out_path = strdup(argv[i] + 4);
		else if (!strncmp(argv[i], "min=", 4))
			min_addr = strtoull(argv[i] + 4, NULL, 0);
		else if (!strncmp(argv[i], "mark=", 5))
			mark_addr = strtoull(argv[i] + 5, NULL, 0);
		else if (!strncmp(argv[i], "from=", 5))
			mark_from = strtoull(argv[i] + 5, NULL, 0);
		else if (!strcmp(argv[i], "every=1"))
			every = 1;
		else {
			fprintf(stderr, "insn_by_tb: unknown argument %s (out=FILE, min=ADDR, mark=ADDR, from=K, every=1)\n",
				argv[i]);
			return -1;
		}
	}
	if (!out_path) {
		fprintf(stderr, "insn_by_tb: out=FILE is required\n");
		return -1;
	}
	if (!mark_addr != !mark_from || (mark_addr && mark_addr < min_addr)) {
		fprintf(stderr, "insn_by_tb: mark=ADDR (a counted address) and from=K (>= 1) go together\n");
		return -1;
	}
	if (every && !mark_from) {
		fprintf(stderr, "insn_by_tb: every=1 needs mark=ADDR and from=K\n");
		return -1;
	}
	table = calloc(size, sizeof(*table));
	if (!table)
		return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_trans);
	qemu_plugin_register_atexit_cb(id, at_exit_write, NULL);
	return 0;
}
