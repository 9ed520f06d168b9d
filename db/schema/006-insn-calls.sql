-- Calls per function of a profiling boot: the TCG plugin also counts how often
-- each kernel translation block ran, and a function's calls are the runs of
-- the blocks at its first instruction (qemu-run/records/insn.py).  NULL for
-- a profile whose plugin did not count runs yet.
ALTER TABLE insn_profile ADD COLUMN calls INTEGER;
