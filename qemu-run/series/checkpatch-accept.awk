# Split checkpatch's output (stdin, blank-line separated reports) by
# qemu-run/series/checkpatch-accepted: print every report not accepted for the
# patch, then one last line "@@ accepted N" with the number of accepted ones.
# Any output that is not a report (a checkpatch that failed) is kept.
#
#   awk -v patch=0001-foo.patch -v list=qemu-run/series/checkpatch-accepted \
#       -f qemu-run/series/checkpatch-accept.awk
# Tests: qemu-run/tests/test_checkpatch_accept.py
function glob2re(g) {
	gsub(/[.+^$(){}|\\]/, "\\\\&", g)
	gsub(/\*/, ".*", g)
	gsub(/\?/, ".", g)
	return "^" g "$"
}
BEGIN {
	if (patch == "" || list == "") {
		print "checkpatch-accept.awk: set -v patch=NAME -v list=FILE" > "/dev/stderr"
		bad = 1
		exit 2
	}
	while ((r = (getline l < list)) > 0) {
		if (l ~ /^#/ || l == "")
			continue
		split(l, f, "\t")
		if (f[2] == "") {
			print "checkpatch-accept.awk: " list ": no tab-separated regex in: " l > "/dev/stderr"
			bad = 1
			exit 2
		}
		if (patch ~ glob2re(f[1]))
			re[++n] = f[2]
	}
	if (r < 0) {
		print "checkpatch-accept.awk: cannot read " list > "/dev/stderr"
		bad = 1
		exit 2
	}
	RS = ""
	FS = "\n"
}
{
	ok = 0
	for (i = 1; i <= n; i++)
		if ($1 ~ re[i])
			ok = 1
	if (ok)
		count++
	else {
		print
		print ""
	}
}
# END runs after an exit in BEGIN too: no count then.
END {
	if (!bad)
		print "@@ accepted " count + 0
}
