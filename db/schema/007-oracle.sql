-- Schema version 7: the differential oracle.  A scenario run (guest/scenario.c,
-- job scenario, qemu-run/jobs/oracle.sh; its records are the last section of
-- qemu-run/records/RECORDS.md) is stored as a run of kind 'oracle': every
-- value of its complete checkpoints, each action's outcome, the audits and
-- the kernel reports.  reports/oracle.py compare --store keeps the
-- comparison of two stored runs, original's and patched's.
--
-- runs.kind is a CHECK constraint, which sqlite cannot alter: the table is
-- rebuilt as 002-bench.sql did (create runs_new, copy, drop, rename), with
-- every view that reads it dropped first and made again after, as the
-- latest migration defined it (run_list .. bench_list: 002; fleet_soaks,
-- fleet_trend: 005).  The columns 003 (clock) and 005 (lab) added come
-- along.  Ids are kept, so every table that points to runs(id) stays right.
-- db/store.py runs this in one transaction.

DROP VIEW fleet_trend;
DROP VIEW fleet_soaks;
DROP VIEW bench_list;
DROP VIEW nightly_trend;
DROP VIEW soak_final;
DROP VIEW kselftest_matrix;
DROP VIEW dying;
DROP VIEW memory_stat;
DROP VIEW sample_list;
DROP VIEW latest_runs;
DROP VIEW run_list;

CREATE TABLE runs_new (
	id          INTEGER PRIMARY KEY,
	uid         TEXT NOT NULL UNIQUE,  -- <run folder name>@<started>: a run is stored once
	kind        TEXT NOT NULL CHECK (kind IN ('kselftest', 'soak', 'bench', 'stress', 'oracle')),
	kernel_id   INTEGER NOT NULL REFERENCES kernels(id),
	job         TEXT NOT NULL,         -- meta job=
	args        TEXT NOT NULL,         -- meta args=: boot.sh's key=value arguments
	workload    TEXT NOT NULL,         -- soak, bench, stress, oracle: the knobs of "@@ run"; kselftest: the tests
	started     TEXT NOT NULL,         -- ISO 8601 UTC, meta started=
	wall_secs   INTEGER,               -- meta wall_secs= (NULL: the boot never ended)
	mem_mib     INTEGER,
	smp         INTEGER,
	verdict     TEXT NOT NULL,         -- meta verdict=: clean | bad; unfinished when absent
	done_rc     INTEGER,               -- results.log "@@ done rc=" (NULL: never said done)
	error       TEXT,                  -- results.log "@@ done ... error="
	soak_rc     INTEGER,               -- samples.log "@@ end rc=" of the guest tool (NULL: no end record)
	gens        INTEGER,               -- soak: generations run (the "@@ end" record, else the last snapshot)
	t_ms        INTEGER,               -- the guest tool's duration in the guest
	snapshots   INTEGER NOT NULL,      -- soak: snapshots stored; bench: results stored; oracle: checkpoints stored
	dropped     INTEGER NOT NULL,      -- truncated or malformed snapshots, results or checkpoints, not stored
	summary     TEXT,                  -- last line of the run's summary file
	cmdline     TEXT,
	run_dir     TEXT NOT NULL,
	ingested    TEXT NOT NULL,         -- ISO 8601 UTC
	batch       TEXT,                  -- the runs one invocation made together (bench.sh), else NULL
	clock       TEXT NOT NULL DEFAULT 'wall' CHECK (clock IN ('wall', 'icount')),
	lab         TEXT                   -- NULL: this machine; 'lava:<job id>': a LAVA lab
);
INSERT INTO runs_new (id, uid, kind, kernel_id, job, args, workload, started, wall_secs, mem_mib, smp,
                      verdict, done_rc, error, soak_rc, gens, t_ms, snapshots, dropped, summary, cmdline,
                      run_dir, ingested, batch, clock, lab)
SELECT id, uid, kind, kernel_id, job, args, workload, started, wall_secs, mem_mib, smp,
       verdict, done_rc, error, soak_rc, gens, t_ms, snapshots, dropped, summary, cmdline,
       run_dir, ingested, batch, clock, lab
FROM runs;
DROP TABLE runs;
ALTER TABLE runs_new RENAME TO runs;
CREATE INDEX runs_kernel ON runs (kernel_id, kind, started);
CREATE INDEX runs_batch ON runs (batch);

-- The views, as 002 and 005 made them.
CREATE VIEW run_list AS
SELECT r.id AS run_id, r.kind, k.name AS kernel, k.release, k.image_key,
       r.started, date(r.started) AS day, r.wall_secs, r.verdict, r.done_rc,
       r.soak_rc, r.gens, r.t_ms, r.snapshots, r.dropped, r.workload,
       r.summary, r.run_dir, r.batch
FROM runs r JOIN kernels k ON k.id = r.kernel_id;

CREATE VIEW latest_runs AS
SELECT l.* FROM run_list l
WHERE l.run_id = (SELECT r.id FROM runs r JOIN kernels k ON k.id = r.kernel_id
                  WHERE k.name = l.kernel AND r.kind = l.kind
                  ORDER BY r.started DESC, r.id DESC LIMIT 1);

CREATE VIEW sample_list AS
SELECT s.run_id, k.name AS kernel, s.seq, s.gen, s.t_ms,
       src.name AS source, ky.name AS key, s.value
FROM samples s
JOIN sources src ON src.id = s.source_id
JOIN keys ky ON ky.id = s.key_id
JOIN runs r ON r.id = s.run_id
JOIN kernels k ON k.id = r.kernel_id;

CREATE VIEW memory_stat AS
SELECT run_id, kernel, seq, gen, t_ms, key, value
FROM sample_list WHERE source = 'memory.stat';

CREATE VIEW dying AS
SELECT sn.run_id, k.name AS kernel, r.started, sn.seq, sn.gen, sn.t_ms, sn.note,
       coalesce(dm.value, dd.value) AS dying,
       dm.value AS dying_memory, dd.value AS dying_descendants
FROM snapshots sn
JOIN runs r ON r.id = sn.run_id
JOIN kernels k ON k.id = r.kernel_id
LEFT JOIN samples dm ON dm.run_id = sn.run_id AND dm.seq = sn.seq
	AND dm.source_id = (SELECT id FROM sources WHERE name = 'cgroup.stat')
	AND dm.key_id = (SELECT id FROM keys WHERE name = 'nr_dying_subsys_memory')
LEFT JOIN samples dd ON dd.run_id = sn.run_id AND dd.seq = sn.seq
	AND dd.source_id = (SELECT id FROM sources WHERE name = 'cgroup.stat')
	AND dd.key_id = (SELECT id FROM keys WHERE name = 'nr_dying_descendants');

CREATE VIEW kselftest_matrix AS
SELECT l.kernel, l.run_id, l.started, t.test, t.subtest, t.outcome,
       t.expected, t.surprise, t.reason
FROM latest_runs l JOIN kselftest t ON t.run_id = l.run_id
WHERE l.kind = 'kselftest';

CREATE VIEW soak_final AS
SELECT l.run_id, l.kernel, l.started, l.day, l.gens, l.workload,
       (SELECT d.dying FROM dying d WHERE d.run_id = l.run_id AND d.note IS NULL
        ORDER BY d.seq DESC LIMIT 1) AS final_dying,
       (SELECT d.dying FROM dying d WHERE d.run_id = l.run_id AND d.note LIKE '%drop_caches%'
        ORDER BY d.seq DESC LIMIT 1) AS dropped_dying
FROM run_list l WHERE l.kind = 'soak';

CREATE VIEW nightly_trend AS
SELECT f.* FROM soak_final f
WHERE f.run_id = (SELECT g.run_id FROM run_list g
                  WHERE g.kind = 'soak' AND g.kernel = f.kernel AND g.day = f.day
                  ORDER BY g.gens DESC, g.started DESC, g.run_id DESC LIMIT 1);

CREATE VIEW bench_list AS
SELECT b.run_id, r.batch, k.name AS kernel, r.started, r.verdict, r.soak_rc AS bench_rc,
       b.metric, b.param, b.rep, b.value, b.unit, b.lim, b.ord
FROM bench b
JOIN runs r ON r.id = b.run_id
JOIN kernels k ON k.id = r.kernel_id;

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

CREATE VIEW fleet_trend AS
SELECT * FROM (
    SELECT f.*, row_number() OVER (PARTITION BY f.day, f.label, f.config, f.shape
                                   ORDER BY f.gens DESC, f.started DESC, f.run_id DESC) AS pick
    FROM fleet_soaks f)
WHERE pick = 1;

-- One row per scenario a run played ("@@ scenario" .. "@@ endscenario"):
-- name is the scenario's in the run (#2, #3, ... for a file played again).
-- rc, acts and t_ms are "@@ endscenario"'s; NULL: cut short.
CREATE TABLE oracle_scenarios (
	run_id   INTEGER NOT NULL REFERENCES runs(id),
	scenario TEXT NOT NULL,
	ord      INTEGER NOT NULL,         -- order in the run, from 1
	file     TEXT NOT NULL,            -- file= (scenarios/NAME.scn)
	rc       INTEGER,
	acts     INTEGER,
	t_ms     INTEGER,
	PRIMARY KEY (run_id, scenario)
) WITHOUT ROWID;

-- One row per complete checkpoint ("@@ cp" .. "@@ endcp"): lines is its
-- data lines, as "@@ endcp lines=" said; oracle_values has as many rows
-- of it (db/ingest.py oracle_problems checks).  A checkpoint cut short is
-- dropped (runs.dropped), never stored half.
CREATE TABLE oracle_checkpoints (
	run_id     INTEGER NOT NULL REFERENCES runs(id),
	scenario   TEXT NOT NULL,
	checkpoint TEXT NOT NULL,          -- #2, #3, ... for one reached again (a repeat block)
	ord        INTEGER NOT NULL,       -- order in the scenario, from 1
	lines      INTEGER NOT NULL,
	PRIMARY KEY (run_id, scenario, checkpoint)
) WITHOUT ROWID;

-- Every value of every complete checkpoint: a live cgroup ('/' the root,
-- else its path below /sys/fs/cgroup) and file:key (memory.stat:anon).
CREATE TABLE oracle_values (
	run_id     INTEGER NOT NULL REFERENCES runs(id),
	scenario   TEXT NOT NULL,
	checkpoint TEXT NOT NULL,
	cgroup     TEXT NOT NULL,
	key        TEXT NOT NULL,
	value      INTEGER NOT NULL,
	PRIMARY KEY (run_id, scenario, checkpoint, cgroup, key)
) WITHOUT ROWID;

-- Every action ("@@ act"): outcome is the word (ok, EBUSY, signal=9, ...),
-- cmd the command as played; ms its guest time (instructions under icount).
CREATE TABLE oracle_acts (
	run_id   INTEGER NOT NULL REFERENCES runs(id),
	scenario TEXT NOT NULL,
	seq      INTEGER NOT NULL,
	line     INTEGER NOT NULL,         -- line of the scenario file
	ms       INTEGER NOT NULL,
	outcome  TEXT NOT NULL,
	cmd      TEXT NOT NULL,
	PRIMARY KEY (run_id, scenario, seq)
) WITHOUT ROWID;

-- The conservation audits ("@@ audit"), passed and failed; the kernel is
-- the run's.
CREATE TABLE oracle_audits (
	run_id     INTEGER NOT NULL REFERENCES runs(id),
	ord        INTEGER NOT NULL,       -- order in the run
	scenario   TEXT NOT NULL,
	checkpoint TEXT NOT NULL,
	check_name TEXT NOT NULL,          -- hierarchy, meminfo, bounds, baseline, kmsg
	ok         INTEGER NOT NULL CHECK (ok IN (0, 1)),
	detail     TEXT NOT NULL,
	PRIMARY KEY (run_id, ord)
) WITHOUT ROWID;

-- Kernel log lines that report a problem ("@@ kmsg"), verbatim.
CREATE TABLE oracle_kmsg (
	run_id   INTEGER NOT NULL REFERENCES runs(id),
	ord      INTEGER NOT NULL,
	scenario TEXT NOT NULL,
	line     TEXT NOT NULL,
	PRIMARY KEY (run_id, ord)
) WITHOUT ROWID;

-- A stored comparison (reports/oracle.py compare --store) of two runs:
-- when, its summary line, and whether it passed.  One per pair: storing
-- the pair again replaces it.
CREATE TABLE oracle_comparisons (
	id             INTEGER PRIMARY KEY,
	orig_run_id    INTEGER NOT NULL REFERENCES runs(id),
	patched_run_id INTEGER NOT NULL REFERENCES runs(id),
	stored         TEXT NOT NULL,      -- ISO 8601 UTC
	summary        TEXT NOT NULL,
	passed         INTEGER NOT NULL CHECK (passed IN (0, 1)),
	UNIQUE (orig_run_id, patched_run_id)
);

-- Its rows (reports/oracle.py Row): key is file:key, act:<seq>,
-- scenario:rc, checkpoint, scenario, audit:<check> or kmsg; checkpoint and
-- cgroup are '-' where there is none.  original and patched are the two
-- values (an integer, or a word: an action's outcome), NULL where absent.
-- verdict: same, agrees, differs, deliberate, finding, missing,
-- audit-fail, audit-known.
CREATE TABLE oracle_compare (
	orig_run_id    INTEGER NOT NULL REFERENCES runs(id),
	patched_run_id INTEGER NOT NULL REFERENCES runs(id),
	ord            INTEGER NOT NULL,   -- order of the comparison: by scenario
	scenario       TEXT NOT NULL,
	checkpoint     TEXT NOT NULL,
	cgroup         TEXT NOT NULL,
	key            TEXT NOT NULL,
	original,
	patched,
	verdict        TEXT NOT NULL CHECK (verdict IN ('same', 'agrees', 'differs', 'deliberate', 'finding',
	                                                'missing', 'audit-fail', 'audit-known')),
	reason         TEXT NOT NULL,
	PRIMARY KEY (orig_run_id, patched_run_id, ord)
) WITHOUT ROWID;
CREATE INDEX oracle_compare_key ON oracle_compare (scenario, checkpoint, cgroup, key);

-- Per scenario, checkpoint, cgroup and key: the rows of the newest stored
-- comparison that has it (an older comparison may have played other
-- scenarios), with the kernels as comparisons see them (store.KERNEL_LABEL_SQL).
CREATE VIEW oracle_latest AS
SELECT scenario, checkpoint, cgroup, key, original, patched, verdict, reason,
       orig_run_id, patched_run_id, original_label, patched_label, stored, summary, passed
FROM (
    SELECT c.*, h.stored, h.summary, h.passed,
           CASE WHEN ko.name = 'original' OR ko.series_hash = '' THEN ko.name
                ELSE ko.name || '@' || coalesce(substr(ko.series_hash, 1, 8), '?') END AS original_label,
           CASE WHEN kp.name = 'original' OR kp.series_hash = '' THEN kp.name
                ELSE kp.name || '@' || coalesce(substr(kp.series_hash, 1, 8), '?') END AS patched_label,
           rank() OVER (PARTITION BY c.scenario, c.checkpoint, c.cgroup, c.key
                        ORDER BY h.stored DESC, h.id DESC) AS pick
    FROM oracle_compare c
    JOIN oracle_comparisons h ON h.orig_run_id = c.orig_run_id AND h.patched_run_id = c.patched_run_id
    JOIN runs ro ON ro.id = c.orig_run_id
    JOIN kernels ko ON ko.id = ro.kernel_id
    JOIN runs rp ON rp.id = c.patched_run_id
    JOIN kernels kp ON kp.id = rp.kernel_id)
WHERE pick = 1;
