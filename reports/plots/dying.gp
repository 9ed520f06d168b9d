# Dying memory cgroups vs generation, one line per kernel, and the count
# after the soak's final drop_caches as a separate mark.
# -e: out; files, titles, styles (word lists, one per kernel: data file
# "gen<TAB>dying", legend, style line); drops, drop_titles, drop_styles
# (the same for the after-drop_caches points; may be empty); every (mark
# every Nth point).
load 'style.gp'
set title "Dying memory cgroups vs generation"
set xlabel "generation (cgroups created and removed)"
set ylabel "dying memory cgroups"
set yrange [0:*]
plot for [i=1:words(files)] word(files, i) using 1:2 with linespoints ls word(styles, i) + 0 pi every \
	title word(titles, i), \
     for [i=1:words(drops)] word(drops, i) using 1:2 with points ls word(drop_styles, i) + 0 pt 5 ps 1.6 \
	title word(drop_titles, i)
