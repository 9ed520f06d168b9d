// SPDX-License-Identifier: GPL-2.0
/*
 * memcg_census: what pins each dying memory cgroup, on a stock 6.12 kernel.
 *
 * A removed memory cgroup stays in the kernel ("dying") until every
 * reference to it is gone.  cgroup.stat counts them; this module says,
 * for each one, what it still holds: its page counters, its own page
 * statistics, its LRU pages per node, its writeback structures and its
 * references, and sorts it by the pin that most likely keeps it.
 *
 * Reading /proc/memcg_census walks the memory controller's hierarchy under
 * RCU, holding a reference only on the cgroup it looks at, and changes
 * nothing.  The only lock of the memory paths it may take is the stats
 * flush's (cgroup_rstat_lock), as a read of memory.stat does.
 *
 * The kernel does not export the functions that read a memcg's own page
 * statistics.  memcg-census-load (beside this file) reads their addresses
 * from /proc/kallsyms and passes them as parameters; the module checks
 * that each address is the function named, by its symbol, before it
 * calls it.  Without them (or where indirect branch tracking forbids the
 * call) the census still gives the counters, the LRU sizes and the
 * references, and sorts by those ("stats=no" in its header).
 *
 * The module refuses to load into a kernel other than the one it was
 * built against (its version string): struct mem_cgroup differs between
 * kernels, with or without the reparenting series.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/cgroup.h>
#include <linux/memcontrol.h>
#include <linux/mmzone.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/kernfs.h>
#include <linux/xarray.h>
#include <linux/jiffies.h>
#include <linux/utsname.h>
#include <linux/kallsyms.h>
#include <linux/uaccess.h>
#if __has_include(<generated/utsversion.h>)
#include <generated/utsversion.h>
#endif
#ifdef CONFIG_X86_KERNEL_IBT
#include <asm/ibt.h>
#endif

#define CENSUS_FORMAT 1

static unsigned long memcg_page_state_local_addr;
module_param(memcg_page_state_local_addr, ulong, 0400);
MODULE_PARM_DESC(memcg_page_state_local_addr, "address of memcg_page_state_local() (/proc/kallsyms)");
static unsigned long mem_cgroup_flush_stats_addr;
module_param(mem_cgroup_flush_stats_addr, ulong, 0400);
MODULE_PARM_DESC(mem_cgroup_flush_stats_addr, "address of mem_cgroup_flush_stats() (/proc/kallsyms)");

static unsigned long (*state_local)(struct mem_cgroup *memcg, int idx);
static void (*flush_stats)(struct mem_cgroup *memcg);

/* When the census first saw each dying css, by its serial number. */
static DEFINE_XARRAY(first_seen);
static DEFINE_MUTEX(census_lock);

enum pin {
	PIN_DIRTY,	/* dirty or under writeback: page cache the flusher holds */
	PIN_SHMEM,	/* tmpfs, shm, memfd pages */
	PIN_PAGECACHE,	/* clean page cache */
	PIN_ANON,	/* anon pages of tasks now elsewhere, swap cache */
	PIN_SWAP,	/* swap entries charged to it (memory.swap / memsw) */
	PIN_SOCKET,	/* socket buffers charged to it */
	PIN_CGWB,	/* a writeback structure (bdi_writeback) of its own */
	PIN_CHILD,	/* nothing of its own: a dying descendant holds it */
	PIN_STOCK,	/* only pages charged ahead (a per-CPU stock) or left */
	PIN_UNKNOWN,	/* a reference this census cannot see */
	NR_PINS,
};

static const char *const pin_names[NR_PINS] = {
	[PIN_DIRTY] = "dirty",
	[PIN_SHMEM] = "shmem",
	[PIN_PAGECACHE] = "pagecache",
	[PIN_ANON] = "anon",
	[PIN_SWAP] = "swap",
	[PIN_SOCKET] = "socket",
	[PIN_CGWB] = "cgwb",
	[PIN_CHILD] = "child",
	[PIN_STOCK] = "stock",
	[PIN_UNKNOWN] = "unknown",
};

struct census_row {
	long memory, swap, memsw, kmem, tcp;
	long file, anon, shmem, dirty, writeback, sock;
	long lru_anon, lru_file;
	long swap_own;		/* its own swap entries (v2, stats), -1 unknown */
	long css_refs, id_refs;
	bool cgwb, children;
	unsigned int kinds;	/* bit per enum pin */
};

/* The address must be the function named: its symbol says so. */
static void * __init checked_addr(unsigned long addr, const char *name)
{
	static char sym[KSYM_SYMBOL_LEN] __initdata, want[KSYM_NAME_LEN + 8] __initdata;

	if (!addr)
		return NULL;
	/* The function's first byte: "name+0x0/size". */
	snprintf(sym, sizeof(sym), "%pS", (void *)addr);
	snprintf(want, sizeof(want), "%s+0x0/", name);
	if (strncmp(sym, want, strlen(want))) {
		pr_warn("address %lx is %s, not the start of %s: statistics off\n",
			addr, sym, name);
		return NULL;
	}
#ifdef CONFIG_X86_KERNEL_IBT
	/*
	 * objtool seals the ENDBR of functions whose address the kernel never
	 * takes (a poison NOP in its place, which is_endbr() also accepts):
	 * an indirect call to one is fatal where IBT is on.
	 */
	if (cpu_feature_enabled(X86_FEATURE_IBT)) {
		u32 insn;

		if (get_kernel_nofault(insn, (u32 *)addr) ||
		    insn == gen_endbr_poison() || !is_endbr(insn)) {
			pr_warn("%s has no ENDBR and IBT is on: statistics off\n", name);
			return NULL;
		}
	}
#endif
	return (void *)addr;
}

static long counter(struct page_counter *c)
{
	return page_counter_read(c);
}

/*
 * The references on a killed css, the census's own left out: its
 * percpu_ref counts in data->count once the switch to atomic has ended.
 */
static long css_refs(struct cgroup_subsys_state *css)
{
	unsigned long ptr = READ_ONCE(css->refcnt.percpu_count_ptr);
	struct percpu_ref_data *data = READ_ONCE(css->refcnt.data);

	if (!(ptr & __PERCPU_REF_ATOMIC) || !data || READ_ONCE(data->confirm_switch))
		return -1;
	/* Not the census's own. */
	return atomic_long_read(&data->count) - 1;
}

static void lru_sizes(struct mem_cgroup *memcg, int nid, long *anon, long *file)
{
	struct mem_cgroup_per_node *pn = memcg->nodeinfo[nid];
	int z, lru, gen;

	*anon = *file = 0;
	for (z = 0; z < MAX_NR_ZONES; z++) {
		for (lru = 0; lru < NR_LRU_LISTS; lru++) {
			long n = READ_ONCE(pn->lru_zone_size[z][lru]);

			if (is_file_lru(lru))
				*file += n;
			else if (lru != LRU_UNEVICTABLE)
				*anon += n;
		}
#ifdef CONFIG_LRU_GEN
		for (gen = 0; gen < MAX_NR_GENS; gen++) {
			*anon += READ_ONCE(pn->lruvec.lrugen.nr_pages[gen][LRU_GEN_ANON][z]);
			*file += READ_ONCE(pn->lruvec.lrugen.nr_pages[gen][LRU_GEN_FILE][z]);
		}
#endif
	}
	(void)gen;
}

static void census_read(struct mem_cgroup *memcg, struct census_row *r)
{
	struct cgroup_subsys_state *css = &memcg->css;
	int nid;

	memset(r, 0, sizeof(*r));
	r->swap_own = -1;
	r->memory = counter(&memcg->memory);
	if (cgroup_subsys_on_dfl(memory_cgrp_subsys)) {
		r->swap = counter(&memcg->swap);
	} else {
		r->memsw = counter(&memcg->memsw);
#ifdef CONFIG_MEMCG_V1
		r->kmem = counter(&memcg->kmem);
		r->tcp = counter(&memcg->tcpmem);
#endif
	}
	for_each_node(nid) {
		long a, f;

		if (!memcg->nodeinfo[nid])
			continue;
		lru_sizes(memcg, nid, &a, &f);
		r->lru_anon += a;
		r->lru_file += f;
	}
	if (state_local) {
		r->file = state_local(memcg, NR_FILE_PAGES);
		r->anon = state_local(memcg, NR_ANON_MAPPED);
		r->shmem = state_local(memcg, NR_SHMEM);
		r->dirty = state_local(memcg, NR_FILE_DIRTY);
		r->writeback = state_local(memcg, NR_WRITEBACK);
		r->sock = state_local(memcg, MEMCG_SOCK);
		if (cgroup_subsys_on_dfl(memory_cgrp_subsys))
			r->swap_own = state_local(memcg, MEMCG_SWAP);
	} else {
		r->file = -1;
		r->anon = -1;
		r->shmem = -1;
		r->dirty = -1;
		r->writeback = -1;
		r->sock = -1;
	}
	r->css_refs = css_refs(css);
	r->id_refs = refcount_read(&memcg->id.ref);
#ifdef CONFIG_CGROUP_WRITEBACK
	/*
	 * Writeback structures still listed: offline (wb_memcg_offline())
	 * kills them and leaves cgwb_list.next NULL; the killed ones hold
	 * the css from a list the memcg cannot see (offline_cgwbs).
	 */
	r->cgwb = READ_ONCE(memcg->cgwb_list.next) &&
		  !list_empty(&memcg->cgwb_list);
#endif
	r->children = !list_empty(&css->children);

	/*
	 * Every pin it holds; the first one set is the likeliest.  The
	 * statistics and LRU sizes are its own; the page counters count its
	 * descendants too, so they name a pin only of a memcg without any.
	 */
	if (r->dirty > 0 || r->writeback > 0)
		r->kinds |= BIT(PIN_DIRTY);
	if (r->shmem > 0)
		r->kinds |= BIT(PIN_SHMEM);
	if (state_local ? r->file - r->shmem > 0 : r->lru_file > 0)
		r->kinds |= BIT(PIN_PAGECACHE);
	if (state_local ? r->anon > 0 || r->lru_anon - r->shmem > 0 : r->lru_anon > 0)
		r->kinds |= BIT(PIN_ANON);
	if (r->swap_own > 0 ||
	    (!r->children && (r->swap > 0 || r->memsw > r->memory)))
		r->kinds |= BIT(PIN_SWAP);
	if (r->sock > 0 || (!r->children && r->tcp > 0))
		r->kinds |= BIT(PIN_SOCKET);
	if (r->cgwb)
		r->kinds |= BIT(PIN_CGWB);
	if (!r->kinds && r->children)
		r->kinds |= BIT(PIN_CHILD);
	/*
	 * Pages charged with no page behind them: a per-CPU stock's, or
	 * kernel memory charged before offline, which is uncharged from the
	 * parent since (the counter keeps it, no reference does).
	 */
	if (!r->kinds && r->memory > 0 &&
	    r->memory <= (long)MEMCG_CHARGE_BATCH * num_possible_cpus())
		r->kinds |= BIT(PIN_STOCK);
	if (!r->kinds)
		r->kinds |= BIT(PIN_UNKNOWN);
}

/*
 * The path it had: a removed kernfs node keeps its name and parent.  Under
 * kernfs_rename_lock (kernfs_path()): a live ancestor may be renamed (v1).
 */
static void census_path(struct seq_file *m, struct cgroup *cgrp)
{
	static char path[PATH_MAX];	/* under census_lock */
	int n = cgroup_path(cgrp, path, sizeof(path));

	if (n < 0 || n >= sizeof(path)) {
		seq_puts(m, "?");
		return;
	}
	seq_escape(m, path, " \t\n\\=");
}

static void census_print(struct seq_file *m, struct mem_cgroup *memcg,
			 const struct census_row *r, unsigned long seen_s)
{
	int i, nid;

	seq_printf(m, "id=%llu memcg_id=%d seen_s=%lu path=",
		   cgroup_id(memcg->css.cgroup), mem_cgroup_id(memcg), seen_s);
	census_path(m, memcg->css.cgroup);
	seq_printf(m, " pin=%s kinds=", pin_names[__ffs(r->kinds)]);
	for (i = 0; i < NR_PINS; i++)
		if (r->kinds & BIT(i))
			seq_printf(m, "%s%s", pin_names[i], r->kinds >> (i + 1) ? "," : "");
	seq_printf(m, " memory=%ld swap=%ld memsw=%ld kmem=%ld tcp=%ld",
		   r->memory, r->swap, r->memsw, r->kmem, r->tcp);
	seq_printf(m, " file=%ld anon=%ld shmem=%ld dirty=%ld writeback=%ld sock=%ld",
		   r->file, r->anon, r->shmem, r->dirty, r->writeback, r->sock);
	seq_printf(m, " lru_anon=%ld lru_file=%ld nodes=", r->lru_anon, r->lru_file);
	for_each_node(nid) {
		long a, f;

		if (!memcg->nodeinfo[nid])
			continue;
		lru_sizes(memcg, nid, &a, &f);
		seq_printf(m, "%s%d:%ld/%ld", nid ? "," : "", nid, a, f);
	}
	seq_printf(m, " css_refs=%ld id_refs=%ld cgwb=%d children=%d\n",
		   r->css_refs, r->id_refs, r->cgwb, r->children);
}

/* Seconds since the census first saw css @id dying; marks it seen now. */
static unsigned long census_seen(u64 id, unsigned long now, struct xarray *visited)
{
	void *old = xa_load(&first_seen, id);
	unsigned long since = now;

	if (old && xa_is_value(old))
		since = xa_to_value(old);
	else
		xa_store(&first_seen, id, xa_mk_value(now), GFP_KERNEL);
	xa_store(visited, id, xa_mk_value(1), GFP_KERNEL);
	return (now - since) / HZ;
}

/* /proc/memcg_census, or its last line alone (/proc/memcg_census_totals). */
static int census_show(struct seq_file *m, void *v)
{
	bool totals_only = m->private;
	struct cgroup_subsys_state *root, *css;
	unsigned long counts[NR_PINS] = {};
	unsigned long dying = 0, now = jiffies & LONG_MAX, idx;
	struct census_row r;
	struct xarray visited;
	void *entry;
	int i;

	xa_init(&visited);
	mutex_lock(&census_lock);
	if (flush_stats)
		flush_stats(NULL);

	if (!totals_only)
		seq_printf(m, "# memcg_census format=%d kernel=%s stats=%s unit=pages hierarchy=%s\n",
			   CENSUS_FORMAT, init_utsname()->release, state_local ? "yes" : "no",
			   cgroup_subsys_on_dfl(memory_cgrp_subsys) ? "v2" : "v1");

	rcu_read_lock();
	root = rcu_dereference(memory_cgrp_subsys.root->cgrp.subsys[memory_cgrp_id]);
	if (!root || !css_tryget(root)) {
		rcu_read_unlock();
		goto out;
	}
	/*
	 * The walk goes on from a css it holds a reference on, which
	 * css_next_descendant_pre() allows across RCU sections: it reads and
	 * prints each dying one outside RCU.
	 */
	css = root;
	while (css) {
		struct cgroup_subsys_state *next;

		if (css != root && css_is_dying(css)) {
			struct mem_cgroup *memcg = mem_cgroup_from_css(css);
			unsigned long seen_s;

			rcu_read_unlock();
			census_read(memcg, &r);
			seen_s = census_seen(css->serial_nr, now, &visited);
			if (!totals_only)
				census_print(m, memcg, &r, seen_s);
			counts[__ffs(r.kinds)]++;
			dying++;
			rcu_read_lock();
		}
		next = css_next_descendant_pre(css, root);
		while (next && !css_tryget(next))
			next = css_next_descendant_pre(next, root);
		if (css != root)
			css_put(css);
		css = next;
	}
	rcu_read_unlock();
	css_put(root);
	/* Forget the cgroups that are gone. */
	xa_for_each(&first_seen, idx, entry)
		if (!xa_load(&visited, idx))
			xa_erase(&first_seen, idx);
out:
	seq_printf(m, "total dying=%lu", dying);
	for (i = 0; i < NR_PINS; i++)
		seq_printf(m, " %s=%lu", pin_names[i], counts[i]);
	seq_putc(m, '\n');
	mutex_unlock(&census_lock);
	xa_destroy(&visited);
	return 0;
}

static int __init census_init(void)
{
#ifdef UTS_VERSION
	/*
	 * Kernels built from one release string with different code (this
	 * project's original and patched) differ in struct mem_cgroup.  A
	 * headers package without utsversion.h leaves the check to the
	 * module's vermagic, which names the release only.
	 */
	if (strcmp(init_utsname()->version, UTS_VERSION)) {
		pr_err("built for \"%s\", this kernel is \"%s\": rebuild against its tree\n",
		       UTS_VERSION, init_utsname()->version);
		return -EINVAL;
	}
#endif
	if (mem_cgroup_disabled()) {
		pr_err("the memory controller is disabled (cgroup_disable=memory)\n");
		return -ENODEV;
	}
	state_local = checked_addr(memcg_page_state_local_addr, "memcg_page_state_local");
	flush_stats = checked_addr(mem_cgroup_flush_stats_addr, "mem_cgroup_flush_stats");
	if (!flush_stats)
		state_local = NULL;
	if (!proc_create_single("memcg_census", 0400, NULL, census_show))
		return -ENOMEM;
	if (!proc_create_single_data("memcg_census_totals", 0400, NULL, census_show, (void *)1)) {
		remove_proc_entry("memcg_census", NULL);
		return -ENOMEM;
	}
	pr_info("/proc/memcg_census ready, statistics %s\n", state_local ? "on" : "off");
	return 0;
}

static void __exit census_exit(void)
{
	remove_proc_entry("memcg_census_totals", NULL);
	remove_proc_entry("memcg_census", NULL);
	xa_destroy(&first_seen);
}

module_init(census_init);
module_exit(census_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("List dying memory cgroups and what pins each one");
