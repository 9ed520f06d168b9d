-- Schema version 2: benchmark runs (qemu-run/jobs/bench.sh, guest/bench.c) and
-- the reliability runs (stress) join kselftest and soak; bench results go
-- to a long table of their own.
--
-- runs.kind is a CHECK constraint, which sqlite cannot alter: the table is
-- rebuilt (create runs_new, copy, drop, rename) with the views that read it
-- dropped first and made again after, as sqlite's "making other kinds of
-- table schema changes" recipe says.  Ids are kept, so every table that
-- points to runs(id) stays right.  db/store.py runs this in one transaction.

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
	kind        TEXT NOT NULL CHECK (kind IN ('kselftest', 'soak', 'bench', 'stress')),
	kernel_id   INTEGER NOT NULL REFERENCES kernels(id),
	job         TEXT NOT NULL,         -- meta job=
	args        TEXT NOT NULL,         -- meta args=: boot.sh's key=value arguments
	workload    TEXT NOT NULL,         -- soak, bench: the knobs of "@@ run"; kselftest: the tests
	started     TEXT NOT NULL,         -- ISO 8601 UTC, meta started=
	wall_secs   INTEGER,               -- meta wall_secs= (NULL: the boot never ended)
	mem_mib     INTEGER,
	smp         INTEGER,
	verdict     TEXT NOT NULL,         -- meta verdict=: clean | bad; unfinished when absent
	done_rc     INTEGER,               -- results.log "@@ done rc=" (NULL: never said done)
	error       TEXT,                  -- results.log "@@ done ... error="
	soak_rc     INTEGER,               -- samples.log "@@ end rc=" of the guest tool, soak or bench (NULL: no end record)
	gens        INTEGER,               -- soak: generations run (the "@@ end" record, else the last snapshot)
	t_ms        INTEGER,               -- the guest tool's duration in the guest
	snapshots   INTEGER NOT NULL,      -- soak: snapshots stored; bench: results stored
	dropped     INTEGER NOT NULL,      -- truncated or malformed snapshots or results, not stored
	summary     TEXT,                  -- last line of the run's summary file
	cmdline     TEXT,
	run_dir     TEXT NOT NULL,
	ingested    TEXT NOT NULL,         -- ISO 8601 UTC
	batch       TEXT                   -- the runs one invocation made together (bench.sh), else NULL
);
INSERT INTO runs_new (id, uid, kind, kernel_id, job, args, workload, started, wall_secs, mem_mib, smp,
                      verdict, done_rc, error, soak_rc, gens, t_ms, snapshots, dropped, summary, cmdline,
                      run_dir, ingested)
SELECT id, uid, kind, kernel_id, job, args, workload, started, wall_secs, mem_mib, smp,
       verdict, done_rc, error, soak_rc, gens, t_ms, snapshots, dropped, summary, cmdline,
       run_dir, ingested
FROM runs;
DROP TABLE runs;
ALTER TABLE runs_new RENAME TO runs;
CREATE INDEX runs_kernel ON runs (kernel_id, kind, started);
CREATE INDEX runs_batch ON runs (batch);

-- One row per "@@ result" of a bench run (qemu-run/records/RECORDS.md).  value is
-- NULL when the event did not happen within limit (same unit): a css that
-- was not released within the wait, never a made-up number.
CREATE TABLE bench (
	run_id  INTEGER NOT NULL REFERENCES runs(id),
	metric  TEXT NOT NULL,             -- offline.release_us, fast.fault_per_s, ...
	param   INTEGER NOT NULL,          -- the size it was measured at, KiB (0: none)
	rep     INTEGER NOT NULL,          -- repetition within the run, from 1
	value   REAL,                      -- NULL: not within limit
	unit    TEXT NOT NULL,
	lim     REAL,                      -- the bound of a NULL value
	ord     INTEGER NOT NULL,          -- order in samples.log: the guest's order of metrics
	PRIMARY KEY (run_id, metric, param, rep),
	CHECK (value IS NOT NULL OR lim IS NOT NULL)
) WITHOUT ROWID;

-- The views of version 1; run_list gains the batch.
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

-- Every bench result with its run's kernel, batch and verdict: the side by
-- side table (db/bench_table.py) groups it by batch, metric, param, kernel.
CREATE VIEW bench_list AS
SELECT b.run_id, r.batch, k.name AS kernel, r.started, r.verdict, r.soak_rc AS bench_rc,
       b.metric, b.param, b.rep, b.value, b.unit, b.lim, b.ord
FROM bench b
JOIN runs r ON r.id = b.run_id
JOIN kernels k ON k.id = r.kernel_id;
