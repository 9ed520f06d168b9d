# Fleet trend: per night, the most dying memory cgroups during the churn of
# the night's soak, one line per kernel, for one configuration and workload.
# -e: out; files, titles, styles (one per kernel: data file "day<TAB>dying");
# ttl (the plot's title); xmin, xmax (days, YYYY-MM-DD); xtic (seconds
# between day marks).
load 'style.gp'
set title ttl
set xdata time
set timefmt "%Y-%m-%d"
set format x "%Y-%m-%d"
set xrange [xmin:xmax]
set xtics xtic rotate by -30
set rmargin 8
set offsets 0, 0, graph 0.1, 0
set ylabel "most dying memory cgroups in the churn"
set yrange [0:*]
plot for [i=1:words(files)] word(files, i) using 1:2 with linespoints ls word(styles, i) + 0 \
	title word(titles, i)
