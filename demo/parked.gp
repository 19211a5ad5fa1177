# Chart of parked events over a demo run ("healthy parking drains; a
# stuck gap climbs", as "Handling Out-of-Order Events with Sequence
# Numbers" puts it), and the events that wait behind a dead letter for the
# operator.  Input: the --samples file of ordering_demo, columns: seconds
# parked produced delivered gap_loop_paused behind_dead_letters.
#   gnuplot -e "datafile='samples.dat'; outfile='parked.svg'" demo/parked.gp
# (outfile may end in .png instead)
# outfile ending in .png: PNG (cairo), else SVG
if (outfile[strlen(outfile)-2:] eq "png") {
    set terminal pngcairo size 900,420 font "sans,11" background rgb "white"
} else {
    set terminal svg size 900,420 dynamic font "sans,13" background rgb "white"
}
set output outfile
stats datafile using 2 nooutput
ymax = STATS_max > 0 ? STATS_max * 1.25 : 1
set yrange [0:ymax]
set xrange [0:*]
set title "Parked events (ordering.parked), sampled every 100 ms"
set xlabel "seconds since the start of the run"
set ylabel "events parked"
set grid ytics lc rgb "#dddddd"
set key top left box opaque
set style fill transparent solid 0.18 noborder
plot datafile using 1:($5 > 0 ? ymax : 0) with fillsteps lc rgb "#d62728" \
         title "gap loop paused: gaps are not closing, parked climbs", \
     datafile using 1:2 with lines lw 2 lc rgb "#1f77b4" \
         title "parked (ledger consumer)", \
     datafile using 1:6 with lines lw 2 dt 2 lc rgb "#7f7f7f" \
         title "of which behind a dead letter, waiting for the operator"
