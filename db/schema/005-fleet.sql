-- Fleet-shaped soaks and lab runs.
--
-- runs.lab: where the run ran.  NULL for this machine; 'lava:<job id>' for a
-- run a LAVA lab (or lava-run here) ran and db/lava_collect.py stored, from
-- its meta lava_job=.
ALTER TABLE runs ADD COLUMN lab TEXT;
-- The lab runs stored before: db/lava_collect.py names their folders
-- <stamp>-<kernel>-<job>-lava<job id>.
UPDATE runs SET lab = 'lava:' || substr(run_dir, instr(run_dir, '-lava') + 5)
WHERE run_dir GLOB '*-lava[0-9]*';

-- Every soak with the three axes of the fleet trend, and its figures:
--   label   the kernel as comparisons see it (store.KERNEL_LABEL_SQL):
--           original, or patched@<series hash>;
--   config  the machine it ran on: guest memory, vCPUs, clock mode and the
--           kernel's .config hash;
--   shape   the soak's knobs ("@@ run", boot APPEND included) but its seed,
--           which a nightly job may change from night to night: the
--           workload; workload keeps the seed.
-- max_dying is the most dying memcgs at any snapshot of the churn, final the
-- last snapshot of the churn, dropped the snapshot after drop_caches.
CREATE VIEW fleet_soaks AS
SELECT r.id AS run_id, date(r.started) AS day, r.started, k.name AS kernel,
       CASE WHEN k.name = 'original' OR k.series_hash = '' THEN k.name
            ELSE k.name || '@' || coalesce(substr(k.series_hash, 1, 8), '?') END AS label,
       coalesce(r.mem_mib, '?') || ' MiB, ' || coalesce(r.smp, '?') || ' vCPU, ' || r.clock ||
           ', config ' || coalesce(substr(k.config_hash, 1, 8), '?') AS config,
       CASE WHEN r.workload LIKE 'seed=% %' THEN substr(r.workload, instr(r.workload, ' ') + 1)
            ELSE r.workload END AS shape,
       r.workload, r.gens, r.t_ms, r.verdict, r.soak_rc, r.lab,
       (SELECT max(d.dying) FROM dying d WHERE d.run_id = r.id AND d.note IS NULL) AS max_dying,
       (SELECT d.dying FROM dying d WHERE d.run_id = r.id AND d.note IS NULL
        ORDER BY d.seq DESC LIMIT 1) AS final_dying,
       (SELECT d.dying FROM dying d WHERE d.run_id = r.id AND d.note LIKE '%drop_caches%'
        ORDER BY d.seq DESC LIMIT 1) AS dropped_dying
FROM runs r JOIN kernels k ON k.id = r.kernel_id
WHERE r.kind = 'soak';

-- The fleet trend: per night, kernel label, configuration and shape, the
-- soak that ran the most generations (the latest of equals).
CREATE VIEW fleet_trend AS
SELECT * FROM (
    SELECT f.*, row_number() OVER (PARTITION BY f.day, f.label, f.config, f.shape
                                   ORDER BY f.gens DESC, f.started DESC, f.run_id DESC) AS pick
    FROM fleet_soaks f)
WHERE pick = 1;

-- Deleting a run's snapshots (db/downsample.py, a re-ingest) finds their
-- samples without a scan of the whole table.
CREATE INDEX samples_run ON samples (run_id, seq);
