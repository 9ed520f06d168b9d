# Nightly trend: dying memory cgroups at the end of each night's soak, per kernel.
# -e: out; files, titles, styles (one per kernel: data file "day<TAB>dying");
# xmin, xmax (days, YYYY-MM-DD); xtic (seconds between day marks).
load 'style.gp'
set title "Dying memory cgroups at the end of each nightly soak"
set xdata time
set timefmt "%Y-%m-%d"
set format x "%Y-%m-%d"
set xrange [xmin:xmax]
set xtics xtic rotate by -30
set rmargin 8
set offsets 0, 0, graph 0.1, 0
set ylabel "dying memory cgroups"
set yrange [0:*]
plot for [i=1:words(files)] word(files, i) using 1:2 with linespoints ls word(styles, i) + 0 \
	title word(titles, i)
