-- Schema version 1: kernels, runs, kselftest results, soak samples in long
-- form with small lookup tables for their sources and keys (the shape of
-- perf's export-to-sqlite.py), and views for the common questions.
-- db/store.py applies this file once, in one transaction, and sets
-- PRAGMA user_version to 1.  Never edit a released migration: add 002-*.sql.

-- One row per kernel image that ran: a name from qemu-run/lib.sh and the
-- build key qemu-run/kernel/build.sh gave the image (fragments + source diff).
CREATE TABLE kernels (
	id           INTEGER PRIMARY KEY,
	name         TEXT NOT NULL,      -- original | patched | debug
	image_key    TEXT NOT NULL,      -- build/kernel/NAME/.key when it ran
	release      TEXT,               -- uname -r in the guest ("@@ boot kernel=")
	base_version TEXT,               -- the release without its local suffix: 6.12.118
	series_hash  TEXT,               -- patches/ it was built from; '' for original; NULL unknown
	config_hash  TEXT,               -- the .config it was built with; NULL unknown
	UNIQUE (name, image_key)
);

-- One row per guest run (a folder build/runs/<id>/).
CREATE TABLE runs (
	id          INTEGER PRIMARY KEY,
	uid         TEXT NOT NULL UNIQUE,  -- <run folder name>@<started>: a run is stored once
	kind        TEXT NOT NULL CHECK (kind IN ('kselftest', 'soak')),
	kernel_id   INTEGER NOT NULL REFERENCES kernels(id),
	job         TEXT NOT NULL,         -- meta job=
	args        TEXT NOT NULL,         -- meta args=: boot.sh's key=value arguments
	workload    TEXT NOT NULL,         -- soak: the knobs of "@@ run"; kselftest: the tests
	started     TEXT NOT NULL,         -- ISO 8601 UTC, meta started=
	wall_secs   INTEGER,               -- meta wall_secs= (NULL: the boot never ended)
	mem_mib     INTEGER,
	smp         INTEGER,
	verdict     TEXT NOT NULL,         -- meta verdict=: clean | bad; unfinished when absent
	done_rc     INTEGER,               -- results.log "@@ done rc=" (NULL: never said done)
	error       TEXT,                  -- results.log "@@ done ... error="
	soak_rc     INTEGER,               -- samples.log "@@ end rc=" (NULL: no end record)
	gens        INTEGER,               -- generations run (the "@@ end" record, else the last snapshot)
	t_ms        INTEGER,               -- soak duration in the guest
	snapshots   INTEGER NOT NULL,      -- snapshots stored
	dropped     INTEGER NOT NULL,      -- truncated or malformed snapshots, not stored
	summary     TEXT,                  -- last line of the run's summary file
	cmdline     TEXT,
	run_dir     TEXT NOT NULL,
	ingested    TEXT NOT NULL          -- ISO 8601 UTC
);
CREATE INDEX runs_kernel ON runs (kernel_id, kind, started);

-- Parameters of a run, one per row: the soak's knobs from "@@ run",
-- boot.sh's key=value arguments for the other jobs.
CREATE TABLE params (
	run_id INTEGER NOT NULL REFERENCES runs(id),
	key    TEXT NOT NULL,
	value  TEXT NOT NULL,
	PRIMARY KEY (run_id, key)
) WITHOUT ROWID;

-- Kselftest outcomes after qemu-run/verdict/known-issues, compared with
-- qemu-run/verdict/expectations as qemu-run/verdict/tap.py does.  outcome 'miss': listed in
-- the matrix, did not run.
CREATE TABLE kselftest (
	run_id   INTEGER NOT NULL REFERENCES runs(id),
	ord      INTEGER NOT NULL,         -- order in results.log
	test     TEXT NOT NULL,
	subtest  TEXT NOT NULL,
	outcome  TEXT NOT NULL CHECK (outcome IN ('pass', 'fail', 'skip', 'miss')),
	reason   TEXT NOT NULL,
	expected TEXT NOT NULL CHECK (expected IN ('pass', 'fail')),
	surprise INTEGER NOT NULL CHECK (surprise IN (0, 1)),
	PRIMARY KEY (run_id, ord)
) WITHOUT ROWID;

-- Lookup tables of samples.log's "source key value" lines.
CREATE TABLE sources (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE keys (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);

-- One row per complete snapshot ("@@ sample" .. "@@ endsample").
CREATE TABLE snapshots (
	run_id INTEGER NOT NULL REFERENCES runs(id),
	seq    INTEGER NOT NULL,
	gen    INTEGER NOT NULL,
	t_ms   INTEGER NOT NULL,
	note   TEXT,                       -- more header attributes: after=drop_caches
	lines  INTEGER NOT NULL,           -- data lines, as "@@ endsample lines=" said
	PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

-- The long table.  Keyed by what the reports ask first: one key of one
-- source, over runs and time.
CREATE TABLE samples (
	run_id    INTEGER NOT NULL REFERENCES runs(id),
	seq       INTEGER NOT NULL,
	gen       INTEGER NOT NULL,
	t_ms      INTEGER NOT NULL,
	source_id INTEGER NOT NULL REFERENCES sources(id),
	key_id    INTEGER NOT NULL REFERENCES keys(id),
	value     INTEGER NOT NULL,
	PRIMARY KEY (source_id, key_id, run_id, seq)
) WITHOUT ROWID;

-- Runs with their kernel's name.
CREATE VIEW run_list AS
SELECT r.id AS run_id, r.kind, k.name AS kernel, k.release, k.image_key,
       r.started, date(r.started) AS day, r.wall_secs, r.verdict, r.done_rc,
       r.soak_rc, r.gens, r.t_ms, r.snapshots, r.dropped, r.workload,
       r.summary, r.run_dir
FROM runs r JOIN kernels k ON k.id = r.kernel_id;

-- The latest run of each kind on each kernel.
CREATE VIEW latest_runs AS
SELECT l.* FROM run_list l
WHERE l.run_id = (SELECT r.id FROM runs r JOIN kernels k ON k.id = r.kernel_id
                  WHERE k.name = l.kernel AND r.kind = l.kind
                  ORDER BY r.started DESC, r.id DESC LIMIT 1);

-- Every sample with names: WHERE source = 'memory.stat' AND key = 'anon'.
CREATE VIEW sample_list AS
SELECT s.run_id, k.name AS kernel, s.seq, s.gen, s.t_ms,
       src.name AS source, ky.name AS key, s.value
FROM samples s
JOIN sources src ON src.id = s.source_id
JOIN keys ky ON ky.id = s.key_id
JOIN runs r ON r.id = s.run_id
JOIN kernels k ON k.id = r.kernel_id;

-- The parent's memory.stat over time: WHERE run_id = ? AND key = 'file'.
CREATE VIEW memory_stat AS
SELECT run_id, kernel, seq, gen, t_ms, key, value
FROM sample_list WHERE source = 'memory.stat';

-- Dying cgroups per snapshot: dying memory csses (nr_dying_subsys_memory,
-- 6.11+), else dying cgroups (nr_dying_descendants).
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

-- The kselftest matrix of the latest kselftest run of each kernel.
CREATE VIEW kselftest_matrix AS
SELECT l.kernel, l.run_id, l.started, t.test, t.subtest, t.outcome,
       t.expected, t.surprise, t.reason
FROM latest_runs l JOIN kselftest t ON t.run_id = l.run_id
WHERE l.kind = 'kselftest';

-- Per soak run: dying cgroups at the last generation, and after the final
-- drop_caches when the soak took one.
CREATE VIEW soak_final AS
SELECT l.run_id, l.kernel, l.started, l.day, l.gens, l.workload,
       (SELECT d.dying FROM dying d WHERE d.run_id = l.run_id AND d.note IS NULL
        ORDER BY d.seq DESC LIMIT 1) AS final_dying,
       (SELECT d.dying FROM dying d WHERE d.run_id = l.run_id AND d.note LIKE '%drop_caches%'
        ORDER BY d.seq DESC LIMIT 1) AS dropped_dying
FROM run_list l WHERE l.kind = 'soak';

-- The nightly trend: per day and kernel, the soak that ran the most
-- generations that day (the nightly soak, not a short CI one).
CREATE VIEW nightly_trend AS
SELECT f.* FROM soak_final f
WHERE f.run_id = (SELECT g.run_id FROM run_list g
                  WHERE g.kind = 'soak' AND g.kernel = f.kernel AND g.day = f.day
                  ORDER BY g.gens DESC, g.started DESC, g.run_id DESC LIMIT 1);
