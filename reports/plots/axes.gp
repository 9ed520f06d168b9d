# One figure of the series against a categorical x (column 2, e.g. the dead
# memcgs), one line with min-max bars per series of columns: the data file
# is "i<TAB>x<TAB>a<TAB>a_lo<TAB>a_hi<TAB>b<TAB>b_lo<TAB>b_hi..." with a
# header row naming each line in its first column of three.
# -e: out, data, ttl, xlabel, ylabel, nlines.
load 'style.gp'
set title ttl
set xlabel xlabel
set ylabel ylabel
set xrange [-0.4:*]
set offsets 0, 0.4, graph 0.1, graph 0.05
set yrange [0:*]
set key outside right top
# the labels of x once, then each line a little to the right of the last
plot data using 1:(1/0):xtic(2) notitle, \
	for [i=0:nlines-1] data using ($1 + 0.06 * i):(column(3 + 3 * i)):(column(4 + 3 * i)):(column(5 + 3 * i)) \
	with yerrorlines ls 11 + i pt 7 title columnheader(3 + 3 * i)
