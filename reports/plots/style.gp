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
# One colour per kernel, in qemu-run/lib.sh's order: original, patched, debug.
set style line 1 lc rgb "#c0392b" lw 2 pt 7 ps 0.6
set style line 2 lc rgb "#2471a3" lw 2 pt 7 ps 0.6
set style line 3 lc rgb "#7d3c98" lw 2 pt 7 ps 0.6
# Series within one kernel's plot.
set style line 11 lc rgb "#1b9e77" lw 2
set style line 12 lc rgb "#d95f02" lw 2
set style line 13 lc rgb "#7570b3" lw 2
set style line 14 lc rgb "#e7298a" lw 2
set style line 15 lc rgb "#66a61e" lw 2
set style line 16 lc rgb "#e6ab02" lw 2
set style line 17 lc rgb "#a6761d" lw 2
set style line 18 lc rgb "#666666" lw 2
