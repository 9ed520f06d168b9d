-- Kernel instructions per function of a profiling boot (qemu-run/jobs/insn-profile.sh):
-- the TCG plugin (qemu-run/boot/plugin/insn_by_tb.c) counts the instructions each
-- kernel translation block executed (insn.txt in the run folder); ingest sums
-- them per System.map function (qemu-run/records/insn.py) of the image the
-- run's meta names (image=).  The run itself is a bench boot, stored as one.
CREATE TABLE insn_profile (
	run_id   INTEGER NOT NULL REFERENCES runs(id),
	function TEXT NOT NULL,
	insns    INTEGER NOT NULL,
	PRIMARY KEY (run_id, function)
) WITHOUT ROWID;
