-- Schema version 8: the guest's NUMA nodes (boot.sh NODES, meta nodes=): how
-- many nodes QEMU gave the guest, each with its share of the memory and of
-- the vCPUs, beside mem_mib and smp.  Every run stored before had one (no
-- boot declared any; numa=fake=N on the kernel command line splits one
-- node, and is in the run's cmdline, not here).  db/ingest.py writes it
-- from the meta, 1 when the meta does not say.
ALTER TABLE runs ADD COLUMN nodes INTEGER NOT NULL DEFAULT 1 CHECK (nodes >= 1);

-- The fleet trend's configuration names the nodes when there is more than
-- one, so that a two-node soak never shares a line with a one-node soak of
-- the same memory and vCPUs; a one-node configuration reads as before
-- (views as 007 made them, but the config column).
DROP VIEW fleet_trend;
DROP VIEW fleet_soaks;

CREATE VIEW fleet_soaks AS
SELECT r.id AS run_id, date(r.started) AS day, r.started, k.name AS kernel,
       CASE WHEN k.name = 'original' OR k.series_hash = '' THEN k.name
            ELSE k.name || '@' || coalesce(substr(k.series_hash, 1, 8), '?') END AS label,
       coalesce(r.mem_mib, '?') || ' MiB, ' || coalesce(r.smp, '?') || ' vCPU, ' ||
           CASE WHEN r.nodes > 1 THEN r.nodes || ' NUMA nodes, ' ELSE '' END || r.clock ||
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

CREATE VIEW fleet_trend AS
SELECT * FROM (
    SELECT f.*, row_number() OVER (PARTITION BY f.day, f.label, f.config, f.shape
                                   ORDER BY f.gens DESC, f.started DESC, f.run_id DESC) AS pick
    FROM fleet_soaks f)
WHERE pick = 1;
