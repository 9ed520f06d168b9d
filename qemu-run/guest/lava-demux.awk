# The guest's records on the console, for a LAVA lab (rr.lava=1 in init):
# a lab sees only the console, so every record line goes there prefixed by
# its channel, "R| " (results: kselftest TAP and the @@ frames) or "S| "
# (samples of soak, stress and bench), and the collector (db/lava_collect.py)
# splits them back into results.log and samples.log.  Each TAP result and
# the tools' end records also become "L| case ID RESULT [VALUE]" lines,
# which the monitor action of the LAVA job (qemu-run/lab/lava.py) turns into
# test cases: a LAVA view only; the verdicts are the harness's, from the
# records.
#   awk -v ch=R|S -f lava-demux.awk <fifo >/dev/ttyS0
{
	sub(/\r$/, "")
	print ch "| " $0
}
ch == "R" && /^@@ begin / { test = $3 }
ch == "R" && /^(not )?ok [0-9]+ [^ ]/ {
	if ($1 == "not") { result = "fail"; name = $4 } else { result = "pass"; name = $3 }
	if ($0 ~ /# [Ss][Kk][Ii][Pp]/) result = "skip"
	print "L| case " test "." name " " result
}
ch == "S" && /^@@ run / { tool = $3 }
ch == "S" && /^@@ progress / {
	for (i = 3; i <= NF; i++) if ($i ~ /^dying=/) { dying = substr($i, 7) }
}
ch == "S" && /^@@ end / {
	for (i = 3; i <= NF; i++) {
		n = index($i, "=")
		if (n == 0) continue
		k = substr($i, 1, n - 1); v = substr($i, n + 1)
		if (k == "rc") print "L| case " tool ".rc " (v == 0 ? "pass" : "fail")
		else if (v ~ /^-?[0-9]+(\.[0-9]+)?$/) print "L| case " tool "." k " pass " v
	}
	if (dying != "") print "L| case " tool ".dying_last pass " dying
}
{ fflush() }
ch == "R" && /^@@ done / { system("touch /tmp/lava.done") }
