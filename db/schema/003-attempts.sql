-- Reruns of flaky subtests (qemu-run/known-issues, guest init's
-- "@@ begin T attempt=N"): what the first attempt gave, and how many
-- attempts there were and failed.  outcome stays the judged one (a flaky
-- subtest that passed on a rerun is 'pass'; a known-issue failure is
-- 'skip'); first is the raw outcome of the first attempt, which the
-- failure rates of make repeat count.
ALTER TABLE kselftest ADD COLUMN first TEXT CHECK (first IN ('pass', 'fail', 'skip', 'miss'));
ALTER TABLE kselftest ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1;
ALTER TABLE kselftest ADD COLUMN failed INTEGER NOT NULL DEFAULT 0;
