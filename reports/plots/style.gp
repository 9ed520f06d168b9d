# The look of every dashboard plot; each script loads it first.
# Set by reports/report.py with -e: out (the PNG to write).
set terminal pngcairo size 900,460 font "sans,10" noenhanced
set output out
set datafile separator "\t"
set datafile missing "NaN"
set grid lc rgb "#dddddd"
set border 3 lc rgb "#555555"
set tics nomirror
set key top left opaque box lc rgb "#bbbbbb"
# The line styles -- 1, 2, 3 one colour per kernel (qemu-run/lib.sh's order:
# original, patched, debug), 11 and up the series within one kernel's plot --
# come from reports/compare.py (GNUPLOT_STYLES), set with -e before this
# file by reports/report.py: the page and every plot share its colours.
