# The change from original to the series of each measured figure, as a
# point with its 95% interval, one per row of the data file
# "i<TAB>figure<TAB>change<TAB>lo<TAB>hi" (%, NaN when there is none).
# -e: out, data, ttl, ylabel.
load 'style.gp'
set title ttl
set ylabel ylabel
set xrange [-0.6:*]
set offsets 0, 0.6, graph 0.1, graph 0.1
set xtics rotate by -25
set key top right
set arrow from graph 0, first 0 to graph 1, first 0 nohead lc rgb "#555555" dt 2
plot data using 1:3:4:5:xtic(2) with yerrorbars ls 2 pt 7 title "patched against original: median change, 95% interval"
