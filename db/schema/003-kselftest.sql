-- Reruns of flaky subtests (qemu-run/verdict/known-issues, guest init's
-- "@@ begin T attempt=N"): what the first attempt gave, and how many
-- attempts there were and failed.  outcome stays the judged one (a flaky
-- subtest that passed on a rerun is 'pass'; a known-issue failure is
-- 'skip'); first is the raw outcome of the first attempt, which the
-- failure rates of make repeat count.
ALTER TABLE kselftest ADD COLUMN first TEXT CHECK (first IN ('pass', 'fail', 'skip', 'miss'));
ALTER TABLE kselftest ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1;
ALTER TABLE kselftest ADD COLUMN failed INTEGER NOT NULL DEFAULT 0;

-- Figures a subtest prints as TAP diagnostics, "# METRIC <subtest>
-- key=value ...", one row per key (test_memcg_reparent's socket test
-- prints its transfer times and memcg events): db/metrics.py tabulates them
-- per kernel.  attempt is the run of the binary that printed them.
CREATE TABLE kselftest_metrics (
	run_id   INTEGER NOT NULL REFERENCES runs(id),
	ord      INTEGER NOT NULL,         -- order in results.log
	test     TEXT NOT NULL,
	subtest  TEXT NOT NULL,
	attempt  INTEGER NOT NULL,
	key      TEXT NOT NULL,
	value    REAL NOT NULL,
	PRIMARY KEY (run_id, ord)
) WITHOUT ROWID;

-- The guest clock of a run (boot.sh CLOCK): 'wall', the host's, or
-- 'icount', driven by the instructions executed.  Figures of the two never
-- go into one table (db/bench_table.py refuses a batch that mixes them).
ALTER TABLE runs ADD COLUMN clock TEXT NOT NULL DEFAULT 'wall' CHECK (clock IN ('wall', 'icount'));
