#!/usr/bin/env python3
"""Make fake run folders, as qemu-run/boot/boot.sh leaves them, without booting.

usage: db/tests/fake_run.py DIR --kernel original|patched [--job soak|kselftest]
       [--gens N] [--sample-every N] [--seed N] [--started ISO] [--cpus N]
       [--truncate] [--miscount] [--no-end] [--no-drop]
       db/tests/fake_run.py --fill-db DB WORKDIR [NIGHTS [GENS [SAMPLE_EVERY]]]

A soak folder gets meta, results.log and samples.log in the format of
qemu-run/records/RECORDS.md, shaped like what guest/soak.c records: on original the
dying memory cgroups grow with the generation (about 0.8 per generation,
each costing percpu and slab memory), on patched they stay bounded near
the number of jobs.  The workload is the same on both (same seed).
--fill-db stores a demo set in DB: NIGHTS nights of soaks of GENS
generations on both kernels, and a kselftest run of each.
--truncate cuts the last snapshot in half (a guest that crashed while
writing it); --miscount makes one snapshot's "lines=" wrong.  A kselftest
folder gets meta, results.log and summary: the LRU subtests of
test_memcg_reparent fail on original and pass on patched.
"""
import argparse
import math
import os
import random
import sys

MEMORY_STAT = """anon file kernel kernel_stack pagetables sec_pagetables percpu sock vmalloc
shmem zswap zswapped file_mapped file_dirty file_writeback swapcached anon_thp file_thp
shmem_thp inactive_anon active_anon inactive_file active_file unevictable
slab_reclaimable slab_unreclaimable slab workingset_refault_anon workingset_refault_file
workingset_activate_anon workingset_activate_file workingset_restore_anon
workingset_restore_file workingset_nodereclaim pswpin pswpout pgscan pgsteal
pgscan_kswapd pgscan_direct pgscan_khugepaged pgsteal_kswapd pgsteal_direct
pgsteal_khugepaged pgfault pgmajfault pgrefill pgactivate pgdeactivate pglazyfree
pglazyfreed swpin_zero swpout_zero zswpin zswpout zswpwb thp_fault_alloc
thp_collapse_alloc thp_swpout thp_swpout_fallback""".split()

MEMINFO = """MemTotal MemFree MemAvailable Buffers Cached SwapCached Active Inactive
Active(anon) Inactive(anon) Active(file) Inactive(file) Unevictable Mlocked SwapTotal
SwapFree Zswap Zswapped Dirty Writeback AnonPages Mapped Shmem KReclaimable Slab
SReclaimable SUnreclaim KernelStack PageTables SecPageTables NFS_Unstable Bounce
WritebackTmp CommitLimit Committed_AS VmallocTotal VmallocUsed VmallocChunk Percpu
HardwareCorrupted AnonHugePages ShmemHugePages ShmemPmdMapped FileHugePages
FilePmdMapped Unaccepted HugePages_Total HugePages_Free HugePages_Rsvd HugePages_Surp
Hugepagesize Hugetlb DirectMap4k DirectMap2M DirectMap1G""".split()

VMSTAT = """nr_free_pages nr_zone_inactive_anon nr_zone_active_anon nr_zone_inactive_file
nr_zone_active_file nr_zone_unevictable nr_zone_write_pending nr_mlock nr_bounce
nr_zspages nr_free_cma nr_unaccepted numa_hit numa_miss numa_foreign numa_interleave
numa_local numa_other nr_inactive_anon nr_active_anon nr_inactive_file nr_active_file
nr_unevictable nr_slab_reclaimable nr_slab_unreclaimable nr_isolated_anon
nr_isolated_file workingset_nodes workingset_refault_anon workingset_refault_file
workingset_activate_anon workingset_activate_file workingset_restore_anon
workingset_restore_file workingset_nodereclaim nr_anon_pages nr_mapped nr_file_pages
nr_dirty nr_writeback nr_writeback_temp nr_shmem nr_shmem_hugepages
nr_shmem_pmdmapped nr_file_hugepages nr_file_pmdmapped nr_anon_transparent_hugepages
nr_vmscan_write nr_vmscan_immediate_reclaim nr_dirtied nr_written nr_throttled_written
nr_kernel_misc_reclaimable nr_foll_pin_acquired nr_foll_pin_released nr_kernel_stack
nr_page_table_pages nr_sec_page_table_pages nr_iommu_pages nr_swapcached
pgpromote_success pgpromote_candidate pgdemote_kswapd pgdemote_direct
pgdemote_khugepaged nr_memmap_pages nr_memmap_boot_pages nr_dirty_threshold
nr_dirty_background_threshold pgpgin pgpgout pswpin pswpout pgalloc_dma pgalloc_dma32
pgalloc_normal pgalloc_movable allocstall_dma allocstall_dma32 allocstall_normal
allocstall_movable pgskip_dma pgskip_dma32 pgskip_normal pgskip_movable pgfree
pgactivate pgdeactivate pglazyfree pglazyfreed pgfault pgmajfault pgrefill
pgreuse pgsteal_kswapd pgsteal_direct pgsteal_khugepaged pgscan_kswapd pgscan_direct
pgscan_khugepaged pgscan_direct_throttle pgscan_anon pgscan_file pgsteal_anon
pgsteal_file zone_reclaim_success zone_reclaim_failed pginodesteal slabs_scanned
kswapd_inodesteal kswapd_low_wmark_hit_quickly kswapd_high_wmark_hit_quickly
pageoutrun pgrotated drop_pagecache drop_slab oom_kill pgmigrate_success
pgmigrate_fail thp_migration_success thp_migration_fail thp_migration_split
compact_migrate_scanned compact_free_scanned compact_isolated compact_stall
compact_fail compact_success compact_daemon_wake compact_daemon_migrate_scanned
compact_daemon_free_scanned htlb_buddy_alloc_success htlb_buddy_alloc_fail
unevictable_pgs_culled unevictable_pgs_scanned unevictable_pgs_rescued
unevictable_pgs_mlocked unevictable_pgs_munlocked unevictable_pgs_cleared
unevictable_pgs_stranded thp_fault_alloc thp_fault_fallback thp_fault_fallback_charge
thp_collapse_alloc thp_collapse_alloc_failed thp_file_alloc thp_file_fallback
thp_file_fallback_charge thp_file_mapped thp_split_page thp_split_page_failed
thp_deferred_split_page thp_underused_split_page thp_split_pmd thp_scan_exceed_none_pte
thp_scan_exceed_swap_pte thp_scan_exceed_share_pte thp_zero_page_alloc
thp_zero_page_alloc_failed thp_swpout thp_swpout_fallback balloon_inflate
balloon_deflate balloon_migrate swap_ra swap_ra_hit swpin_zero swpout_zero ksm_swpin_copy
cow_ksm zswpin zswpout zswpwb direct_map_level2_splits direct_map_level3_splits
nr_unstable""".split()

# (cache, objsize, objects at gen 0, objects per generation, objects per dying cgroup)
SLABS = [
    ('dentry', 192, 9000, 2.0, 0.0), ('inode_cache', 600, 2500, 0.3, 0.0),
    ('ext4_inode_cache', 1200, 400, 0.6, 0.0), ('shmem_inode_cache', 760, 300, 0.2, 0.0),
    ('radix_tree_node', 576, 800, 0.25, 0.0), ('buffer_head', 104, 1500, 0.4, 0.0),
    ('ext4_extent_status', 40, 600, 0.2, 0.0), ('filp', 256, 700, 0.0, 0.0),
    ('vm_area_struct', 176, 900, 0.0, 0.0), ('task_struct', 4416, 90, 0.0, 0.0),
    ('kmalloc-cg-1k', 1024, 200, 0.0, 1.0), ('kmalloc-cg-4k', 4096, 60, 0.0, 0.5),
    ('kmalloc-cg-512', 512, 300, 0.0, 1.0), ('kmalloc-1k', 1024, 900, 0.0, 0.2),
    ('kmalloc-2k', 2048, 200, 0.0, 0.0), ('kmalloc-4k', 4096, 120, 0.0, 0.0),
    ('kmalloc-8k', 8192, 40, 0.0, 0.0), ('kmalloc-512', 512, 600, 0.0, 0.5),
    ('kmalloc-256', 256, 800, 0.0, 0.0), ('kmalloc-192', 192, 900, 0.0, 0.0),
    ('kmalloc-128', 128, 1100, 0.0, 0.0), ('kmalloc-96', 96, 1300, 0.0, 0.0),
    ('kmalloc-64', 64, 4000, 0.0, 2.0), ('kmalloc-32', 32, 3000, 0.0, 0.0),
    ('kmalloc-16', 16, 2500, 0.0, 0.0), ('kmalloc-8', 8, 2000, 0.0, 0.0),
    ('kernfs_node_cache', 128, 16000, 0.0, 10.0), ('kernfs_iattrs_cache', 88, 200, 0.0, 0.0),
    ('sock_inode_cache', 832, 60, 0.0, 0.0), ('skbuff_head_cache', 256, 120, 0.0, 0.0),
    ('mm_struct', 1344, 40, 0.0, 0.0), ('files_cache', 704, 60, 0.0, 0.0),
    ('signal_cache', 1152, 90, 0.0, 0.0), ('sighand_cache', 2112, 90, 0.0, 0.0),
    ('anon_vma', 104, 600, 0.0, 0.0), ('anon_vma_chain', 64, 1200, 0.0, 0.0),
    ('pid', 128, 150, 0.0, 0.0), ('cred_jar', 192, 300, 0.0, 0.0),
    ('proc_inode_cache', 688, 400, 0.0, 0.0), ('sigqueue', 80, 50, 0.0, 0.0),
    ('ext4_groupinfo_4k', 144, 30, 0.0, 0.0), ('jbd2_journal_head', 120, 200, 0.1, 0.0),
    ('mnt_cache', 320, 60, 0.0, 0.0), ('bio-120', 128, 80, 0.0, 0.0),
    ('UNIX', 1088, 30, 0.0, 0.0), ('TCP', 2432, 8, 0.0, 0.0),
    ('request_sock_TCP', 304, 10, 0.0, 0.0), ('numa_policy', 24, 100, 0.0, 0.0),
    ('lsm_inode_cache', 64, 3000, 0.0, 0.0), ('pool_workqueue', 256, 60, 0.0, 0.0),
]
CGROUP_STAT = ['nr_descendants', 'nr_dying_descendants', 'nr_subsys_cpu', 'nr_subsys_io',
               'nr_subsys_memory', 'nr_subsys_pids', 'nr_dying_subsys_cpu', 'nr_dying_subsys_io',
               'nr_dying_subsys_memory', 'nr_dying_subsys_pids']
CONTROLLERS = ['cpuset', 'cpu', 'cpuacct', 'blkio', 'memory', 'devices', 'freezer', 'pids', 'misc']

KSELFTEST = {
    'test_core': ['test_cgcore_internal_process_constraint', 'test_cgcore_populated', 'test_cgcore_destroy'],
    'test_kmem': ['test_kmem_basic', 'test_kmem_memcg_deletion', 'test_kmem_dead_cgroups', 'test_percpu_basic'],
    'test_memcg_reparent': ['test_reparent_slab', 'test_reparent_pagecache', 'test_reparent_shmem',
                            'test_reparent_anon', 'test_reparent_dirty'],
}
# Fail on original, pass on patched: the bug the series fixes.
LRU_SUBTESTS = {'test_reparent_pagecache', 'test_reparent_shmem', 'test_reparent_anon', 'test_reparent_dirty'}


def dying_at(kernel, gen, jobs, rng):
    """Dying memory cgroups after gen generations."""
    if kernel == 'original':
        return max(0, int(0.8 * gen * (1 + 0.03 * math.sin(gen / 37)) + rng.gauss(0, 3)))
    return max(0, int(jobs + 25 * (1 - math.exp(-gen / 200)) + rng.gauss(0, 3)))


def snapshot(seq, gen, t_ms, kernel, jobs, cpus, rng, note=None):
    """The lines of one snapshot, header and trailer included."""
    dying = dying_at(kernel, gen, jobs, rng)
    if note:                                    # after drop_caches: page cache gone
        dying = dying // 3 if kernel == 'original' else min(dying, jobs)
    live = jobs
    out = []
    add = out.append
    stat = {'nr_descendants': live + dying, 'nr_dying_descendants': dying,
            'nr_subsys_cpu': 0, 'nr_subsys_io': 0, 'nr_subsys_memory': live + dying,
            'nr_subsys_pids': live + dying, 'nr_dying_subsys_cpu': 0, 'nr_dying_subsys_io': 0,
            'nr_dying_subsys_memory': dying, 'nr_dying_subsys_pids': 0}
    for k in CGROUP_STAT:
        add(f'cgroup.stat {k} {stat[k]}')
    pinned_kb = dying * 36                      # page cache and shmem the dying cgroups pin
    percpu_kb = 900 + dying * 9 * cpus          # memcg percpu stats
    slab_extra_kb = dying * 7                   # struct mem_cgroup and friends
    file_b = (2048 + pinned_kb + int(gen * 0.5)) * 1024
    anon_b = (jobs * 256 + rng.randint(0, 64)) * 1024
    slab_b = (3000 + int(gen * 0.9) + slab_extra_kb) * 1024
    ms = {k: 0 for k in MEMORY_STAT}
    ms.update(anon=anon_b, file=file_b, slab=slab_b, slab_reclaimable=slab_b * 2 // 3,
              slab_unreclaimable=slab_b // 3, percpu=percpu_kb * 1024, kernel_stack=jobs * 16384,
              pagetables=jobs * 40960, kernel=slab_b + percpu_kb * 1024 + jobs * 57344,
              shmem=pinned_kb * 1024 // 3, file_mapped=jobs * 409600, sock=4096 * (gen % 3),
              active_file=file_b // 2, inactive_file=file_b - file_b // 2, inactive_anon=anon_b,
              pgfault=gen * 900, pgmajfault=gen // 10, pgscan=gen * 3, pgsteal=gen * 2,
              workingset_refault_file=gen // 4)
    add(f'memory.current bytes {anon_b + file_b + ms["kernel"] + ms["sock"]}')
    for k in MEMORY_STAT:
        add(f'memory.stat {k} {ms[k]}')
    slab_kb = 38000 + int(gen * 1.2) + slab_extra_kb
    mi = {k: 0 for k in MEMINFO}
    mi.update(MemTotal=1016164, MemFree=max(20000, 800000 - gen * 2 - pinned_kb - percpu_kb - slab_kb),
              MemAvailable=max(30000, 880000 - gen - percpu_kb - slab_kb // 2), Cached=60000 + pinned_kb,
              Shmem=2000 + pinned_kb // 3, AnonPages=9000 + jobs * 256, Slab=slab_kb,
              SReclaimable=slab_kb * 2 // 3, SUnreclaim=slab_kb - slab_kb * 2 // 3, KReclaimable=slab_kb * 2 // 3,
              KernelStack=1800 + jobs * 16, PageTables=700 + jobs * 40, Percpu=percpu_kb,
              SwapTotal=524284, SwapFree=524284, VmallocTotal=34359738367, VmallocUsed=9000,
              Hugepagesize=2048, DirectMap4k=100000, DirectMap2M=948576, CommitLimit=1032364,
              Committed_AS=40000 + jobs * 300, Mapped=9000, Active=30000, Inactive=40000 + pinned_kb)
    for k in MEMINFO:
        add(f'meminfo {k} {mi[k]}')
    for i, k in enumerate(VMSTAT):
        v = gen * (i % 7) * 13 + i if (k.startswith('pg') or k.startswith('nr_')) else i
        add(f'vmstat {k} {v}')
    for name, size, base, per_gen, per_dying in SLABS:
        active = int(base + per_gen * gen + per_dying * dying + rng.randint(0, 20))
        num = active + rng.randint(0, 30)
        add(f'slabinfo {name}:active_objs {active}')
        add(f'slabinfo {name}:num_objs {num}')
        add(f'slabinfo {name}:objsize {size}')
        add(f'slabinfo {name}:bytes {num * size}')
    for c in CONTROLLERS:
        add(f'cgroups {c}:num_cgroups {1 + (live + dying + 1 if c in ("memory", "pids") else 0)}')
    # The census module's totals by pin (census/memcg_census.c).
    pins = {'dirty': dying // 10, 'shmem': dying // 8, 'anon': dying // 20, 'swap': dying // 25}
    pins['pagecache'] = dying - sum(pins.values())
    add(f'census dying {dying}')
    for k in ('dirty', 'shmem', 'pagecache', 'anon', 'swap', 'socket', 'cgwb', 'child', 'stock', 'unknown'):
        add(f'census {k} {pins.get(k, 0)}')
    head = f'@@ sample {seq} gen={gen} t_ms={t_ms}' + (f' {note}' if note else '')
    return [head] + out + [f'@@ endsample {seq} lines={len(out)}']


def write_meta(d, kernel, job, args, started, wall_secs, verdict='clean'):
    with open(os.path.join(d, 'meta'), 'w') as f:
        f.write(f'kernel={kernel}\njob={job}\nargs={args}\nmem=1024\nsmp=2\ndeadline=1800\n'
                f'image_key=fake{kernel[:4]}0000000000\n'
                f'cmdline=root=/dev/vda rw console=ttyS0 rr.job={job}\nstarted={started}\n'
                f'wall_secs={wall_secs}\nqemu_rc=0\nverdict={verdict}\n')


def soak_run(d, kernel, gens=1000, sample_every=50, seed=1, jobs=2, cpus=2,
             started='2026-12-03T10:00:00Z', truncate=False, miscount=False, end=True, drop=True):
    """Write a soak run folder; return the number of data lines written."""
    os.makedirs(d, exist_ok=True)
    rng = random.Random(f'{seed}-{kernel}')
    ms_per_gen = 50 if kernel == 'original' else 52
    knobs = f'seed={seed} gens={gens} jobs={jobs} mix=log,read,files,neg,anon,tmpfs,fork,sock hog_mb=0'
    write_meta(d, kernel, 'soak', knobs, started, gens * ms_per_gen // 1000 + 20)
    with open(os.path.join(d, 'results.log'), 'w') as f:
        f.write(f'@@ boot kernel=6.12.118+ init_uptime=2.06 ready_uptime=3.24 job=soak mem_kb=1016164 cpus={cpus}\n'
                '@@ done rc=0\n')
    points = list(range(0, gens, sample_every)) + [gens]
    data = 0
    miscounted = points[len(points) // 2] if miscount else None
    with open(os.path.join(d, 'samples.log'), 'w') as f:
        f.write(f'@@ run soak {knobs} secs=0 sample_every={sample_every} sample_ms=0\n')
        for seq, g in enumerate(points, 1):
            t_ms = g * ms_per_gen + rng.randint(0, 20)
            lines = snapshot(seq, g, t_ms, kernel, jobs, cpus, rng)
            if g == miscounted:
                lines[-1] = lines[-1].replace('lines=', 'lines=1')
            if truncate and seq == len(points):
                f.write('\n'.join(lines[:len(lines) // 2]) + '\n')
                return data
            data += len(lines) - 2
            f.write('\n'.join(lines) + '\n')
            if seq % 4 == 0:
                f.write(f'@@ progress gen={g} t_ms={t_ms} dying={dying_at(kernel, g, jobs, rng)}\n')
        if drop:
            lines = snapshot(len(points) + 1, gens, gens * ms_per_gen + 1500, kernel, jobs, cpus, rng,
                             note='after=drop_caches')
            data += len(lines) - 2
            f.write('\n'.join(lines) + '\n')
        if end:
            f.write(f'@@ end rc=0 gens={gens} t_ms={gens * ms_per_gen + 1600}\n')
    return data


def kselftest_run(d, kernel, started='2026-12-03T09:00:00Z'):
    os.makedirs(d, exist_ok=True)
    tests = ','.join(KSELFTEST)
    write_meta(d, kernel, 'kselftest', f'tests={tests} timeout=900', started, 25)
    out = ['@@ boot kernel=6.12.118+ init_uptime=2.06 ready_uptime=3.24 job=kselftest mem_kb=1016164 cpus=2']
    for test, subs in KSELFTEST.items():
        out.append(f'@@ begin {test}')
        out.append(f'1..{len(subs)}')
        rc = 0
        for i, s in enumerate(subs, 1):
            bad = kernel == 'original' and s in LRU_SUBTESTS
            rc |= bad
            out.append(f'{"not ok" if bad else "ok"} {i} {s}')
        out.append(f'@@ end {test} rc={rc} secs=3')
    out.append('@@ done rc=0')
    with open(os.path.join(d, 'results.log'), 'w') as f:
        f.write('\n'.join(out) + '\n')
    with open(os.path.join(d, 'summary'), 'w') as f:
        f.write(f'{kernel}: fake summary line\n')


def stress_run(d, kernel='debug'):
    """A stress run folder around the samples.log captured from a real
    guest (qemu-run/tests/fixtures/samples-patched-stress.log)."""
    import shutil
    os.makedirs(d)
    shutil.copy(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                             'qemu-run', 'tests', 'fixtures', 'samples-patched-stress.log'),
                os.path.join(d, 'samples.log'))
    write_meta(d, kernel, 'stress', 'stress.secs=180', '2026-12-04T12:00:00Z', 200)
    with open(os.path.join(d, 'results.log'), 'w') as f:
        f.write('@@ boot kernel=6.12.118+ job=stress\n@@ done rc=0\n')


BENCH_FAST = [('fast.read_mibps', 65536, 'MiB/s', 900.0), ('fast.fault_per_s', 65536, 'faults/s', 150000.0),
              ('fast.charge_per_s', 64, 'ops/s', 9000.0), ('fast.ctxsw_per_s', 0, 'trips/s', 30000.0)]
BENCH_STRESSNG = [('switch', 20000.0), ('pipe', 60000.0), ('sock', 150.0), ('fork', 400.0)]


def bench_run(d, kernel, sizes=(1, 64, 512), reps=2, fast_reps=3, seed=1, tag='20261203-100000-bench',
              started='2026-12-03T10:00:00Z', timeout_ms=10000, end=True, extra=(), parts='offline,fast',
              run_words='', clock=None, reclaim_reps=3, reclaim_refault=0.0, stressng_reps=3,
              stressng_failed=(), nodes=None):
    """Write a bench run folder (guest/bench.c's records, made up): on
    original the child's css is never released (value=none), on patched it
    is, after a time that grows with the page cache.  extra: more lines
    appended before "@@ end" (malformed records for the tests); run_words:
    more words of "@@ run" (nodes=, dead=); clock: meta clock= (icount);
    with "reclaim" in parts, reclaim_reps reps of the reclaim part whose
    sibling refaults reclaim_refault %; with "stressng" in parts,
    stressng_reps reps of switch, pipe, sock and fork at 2 instances, those
    named in stressng_failed (stressor, rep) as value=none; nodes: meta
    nodes= (boot.sh NODES).  Returns
    the number of "@@ result" records written."""
    os.makedirs(d, exist_ok=True)
    rng = random.Random(f'{seed}-{kernel}-bench')
    knobs = (f'parts={parts} sizes={",".join(map(str, sizes))} reps={reps} timeout_ms={timeout_ms} '
             f'poll_us=150 probe_ms=1000 probe_us=500 fast_reps={fast_reps} seed={seed} tag={tag}')
    if 'stressng' in parts:
        knobs += (f' stressors={",".join(s for s, _ in BENCH_STRESSNG)} stressng_secs=5 '
                  f'stressng_reps={stressng_reps} stressng_instances=0')
    write_meta(d, kernel, 'bench', ' '.join(f'bench.{k}' for k in knobs.split()), started, 300)
    if clock:
        with open(os.path.join(d, 'meta'), 'a') as f:
            f.write(f'clock={clock}\n')
    if nodes:
        with open(os.path.join(d, 'meta'), 'a') as f:
            f.write(f'nodes={nodes}\n')
    with open(os.path.join(d, 'results.log'), 'w') as f:
        f.write('@@ boot kernel=6.12.118+ init_uptime=2.06 ready_uptime=3.24 job=bench mem_kb=1530000 cpus=2\n'
                '@@ done rc=0\n')
    out = [f'@@ run bench {knobs} cpus=2{" " + run_words if run_words else ""}']
    n = 0
    for rep in range(1, reps + 1):
        for size in sizes:
            kb = size * 1024
            pages = kb // 4
            res = [('offline.charged_kb', kb + rng.randint(0, 200), 'KiB'),
                   ('offline.rmdir_us', 300 + rng.random() * 50, 'us'),
                   ('offline.mkdir_us', 200 + rng.random() * 50, 'us'),
                   ('offline.stall_us', 400 + (pages * 8 if kernel == 'patched' else 0) * (1 + rng.random() / 10), 'us')]
            for metric, value, unit in res:
                out.append(f'@@ result metric={metric} param={kb} rep={rep} value={value:.6g} unit={unit}')
            if kernel == 'patched':
                out.append(f'@@ result metric=offline.release_us param={kb} rep={rep} '
                           f'value={20000 + pages * 9 * (1 + rng.random() / 10):.6g} unit=us')
            else:
                out.append(f'@@ result metric=offline.release_us param={kb} rep={rep} value=none unit=us '
                           f'limit={timeout_ms * 1000}')
            out.append(f'@@ result metric=offline.kept_pct param={kb} rep={rep} value=100 unit=%')
            n += 6
            out.append(f'@@ progress part=offline done={n // 6} of={reps * len(sizes)} t_ms={n * 1000}')
    for rep in range(1, (reclaim_reps if 'reclaim' in parts else 0) + 1):
        # 6.12 and a series that scrapes the parent's lists: the dead child goes first
        for lru in ('gen', 'classic'):
            for metric, value, unit in ((f'reclaim.{lru}.dead_left_pct', 0.0, '%'),
                                        (f'reclaim.{lru}.refault_pct', reclaim_refault, '%'),
                                        (f'reclaim.{lru}.reclaim_us', 34000 * (1 + rng.random() / 20), 'us')):
                out.append(f'@@ result metric={metric} param=65536 rep={rep} value={value:.6g} unit={unit}')
                n += 1
    for rep in range(1, (fast_reps if 'fast' in parts else 0) + 1):
        for metric, kb, unit, base in BENCH_FAST:
            out.append(f'@@ result metric={metric} param={kb} rep={rep} '
                       f'value={base * (1 + rng.gauss(0, 0.01)):.6g} unit={unit}')
            n += 1
    for rep in range(1, (stressng_reps if 'stressng' in parts else 0) + 1):
        for name, base in BENCH_STRESSNG:
            metric = f'stressng.{name}_ops_per_s'
            if (name, rep) in stressng_failed:
                out.append(f'@@ result metric={metric} param=2 rep={rep} value=none unit=ops/s limit=0')
            else:
                # the series' cost: 1% fewer bogo ops on patched
                value = base * (0.99 if kernel == 'patched' else 1) * (1 + rng.gauss(0, 0.005))
                out.append(f'@@ result metric={metric} param=2 rep={rep} value={value:.6g} unit=ops/s')
            n += 1
    out += list(extra)
    if end:
        out.append(f'@@ end rc={1 if stressng_failed else 0} results={n} t_ms=250000')
    with open(os.path.join(d, 'samples.log'), 'w') as f:
        f.write('\n'.join(out) + '\n')
    with open(os.path.join(d, 'summary'), 'w') as f:
        f.write(f'bench {kernel}: fake summary line\n')
    return n


def expectations_text():
    """An expectations file (qemu-run/verdict/expectations format) matching kselftest_run()."""
    return ''.join(f'test_memcg_reparent:{s}  fail pass pass\n' for s in sorted(LRU_SUBTESTS))


def judge(d, known=None, expect=None):
    """Write d/verdict.json as kselftest.sh does (qemu-run/verdict/tap.py
    --verdict), against the given known-issues and expectations files
    (None: empty ones), for a kselftest run folder that has none."""
    import contextlib
    import io
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.join(top, 'qemu-run', 'verdict'))
    import tap
    with open(os.path.join(d, 'meta')) as f:
        meta = dict(line.rstrip('\n').split('=', 1) for line in f if '=' in line)
    tests = dict(w.split('=', 1) for w in meta.get('args', '').split() if '=' in w).get('tests')
    empty = os.path.join(d, '.empty')
    open(empty, 'w').close()
    argv = ['--kernel', meta['kernel'], '--known', known or empty, '--expect', expect or empty,
            '--plans', os.path.join(top, 'qemu-run', 'verdict', 'plans'),
            '--verdict', os.path.join(d, 'verdict.json')] + (['--tests', tests] if tests else [])
    with contextlib.redirect_stdout(io.StringIO()):
        tap.main(argv + [os.path.join(d, 'results.log')])
    os.unlink(empty)


def store(db, d, replace=False, known=None, expect=None, db_path='', batch=None):
    """db/ingest.py's ingest() of a fake run folder; a kselftest run is
    judged first (judge()) when it has no verdict.json yet."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import ingest
    path = os.path.join(d, 'meta')
    if os.path.exists(path) and not os.path.exists(os.path.join(d, 'verdict.json')):
        with open(path) as f:
            if 'job=kselftest' in f.read().splitlines():
                judge(d, known, expect)
    return ingest.ingest(db, d, replace, db_path, batch)


def fill_db(db_path, work, kernels=('original', 'patched'), nights=3, gens=1000, sample_every=50,
            kselftest=True, expect=None):
    """Make and store a set of fake runs: one soak per kernel and night (the
    seed changes every night), and a kselftest run per kernel.  Returns the
    number of samples stored."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import store as db_store
    db = db_store.connect(db_path)
    top = db_store.TOP
    known = os.path.join(top, 'qemu-run', 'verdict', 'known-issues')
    os.makedirs(work, exist_ok=True)
    if expect is None:
        expect = os.path.join(work, 'expectations')
        with open(expect, 'w') as f:
            f.write(expectations_text())
    total = 0
    for night in range(nights):
        day = f'2026-12-{night + 1:02d}'
        for k in kernels:
            d = os.path.join(work, f'{day.replace("-", "")}-020000-{k}-soak')
            total += soak_run(d, k, gens=gens, sample_every=sample_every, seed=night + 1,
                              started=f'{day}T02:00:00Z')
            store(db, d, known=known, expect=expect, db_path=db_path)
    if kselftest:
        for k in kernels:
            d = os.path.join(work, f'20261201-010000-{k}-kselftest')
            kselftest_run(d, k, started='2026-12-01T01:00:00Z')
            store(db, d, known=known, expect=expect, db_path=db_path)
    db.close()
    return total


def main(argv):
    if argv[:1] == ['--fill-db']:
        if len(argv) < 3:
            raise SystemExit('usage: fake_run.py --fill-db DB WORKDIR [NIGHTS [GENS [SAMPLE_EVERY]]]')
        nums = [int(x) for x in argv[3:6]]
        n = fill_db(argv[1], argv[2], *([('original', 'patched')] + nums))
        print(f'{argv[1]}: {n} fake samples stored (run folders in {argv[2]})')
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('dir')
    ap.add_argument('--kernel', required=True, choices=['original', 'patched', 'debug'])
    ap.add_argument('--job', default='soak', choices=['soak', 'kselftest'])
    ap.add_argument('--gens', type=int, default=1000)
    ap.add_argument('--sample-every', type=int, default=50)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--cpus', type=int, default=2)
    ap.add_argument('--started', default='2026-12-03T10:00:00Z')
    ap.add_argument('--truncate', action='store_true', help='cut the last snapshot in half')
    ap.add_argument('--miscount', action='store_true', help='one snapshot says a wrong lines=')
    ap.add_argument('--no-end', action='store_true', help='no "@@ end" record')
    ap.add_argument('--no-drop', action='store_true', help='no after=drop_caches snapshot')
    a = ap.parse_args(argv)
    if a.job == 'kselftest':
        kselftest_run(a.dir, a.kernel, a.started)
        print(f'{a.dir}: fake kselftest run of {a.kernel}')
    else:
        n = soak_run(a.dir, a.kernel, a.gens, a.sample_every, a.seed, cpus=a.cpus, started=a.started,
                     truncate=a.truncate, miscount=a.miscount, end=not a.no_end, drop=not a.no_drop)
        print(f'{a.dir}: fake soak run of {a.kernel}, {n} data lines')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
