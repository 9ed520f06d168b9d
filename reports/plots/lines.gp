# Columns 2..N of one data file against column 1, named by its header row.
# -e: out, data, title, xlabel, ylabel; ncols (columns in data); optional
# xmax, ymax (the same scales on the plots of every kernel).
load 'style.gp'
set title title
set xlabel xlabel
set ylabel ylabel
set key outside right top
if (exists("xmax")) set xrange [0:xmax]
if (exists("ymax")) set yrange [0:ymax]
plot for [c=2:ncols] data using 1:c with lines ls 10 + c - 1 title columnheader(c)
