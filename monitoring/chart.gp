# The key series of a run of test/monitoring.sh, as Prometheus recorded them
# (query_range, one point a second).  Input files (seconds value): consumed
# (events/s handed to each consumer: ledger and billing), parked (ledger),
# stale (billing's stale share), hot (the busiest resource's share of stream
# "orders"), escalated (gap escalations of ledger, total).  Rates over 20 s:
# the run is shorter than the 5 minutes of the recording rules.
#   gnuplot -e "dir='DIR'; outfile='monitoring.png'" monitoring/chart.gp
set terminal pngcairo size 900,760 font "sans,10" background rgb "white" noenhanced
set output outfile
set multiplot layout 3,1 title "ordering metrics scraped by Prometheus through prometheus-postgres-exporter"
set xrange [0:*]
set grid ytics lc rgb "#dddddd"
set key top left box opaque
set lmargin 10

set title "Consumers: events handed in per second (rate over 20 s)"
set ylabel "events/s"
plot dir.'/consumed_ledger' using 1:2 with lines lw 2 lc rgb "#1f77b4" title "ledger (deliver)", \
     dir.'/consumed_billing' using 1:2 with lines lw 2 lc rgb "#2ca02c" title "billing (apply_if_newer)"

set title "Parked now: 1% of deliveries lost, nothing republished, so the gaps do not close"
set ylabel "events"
set y2label "escalations"
set y2tics
plot dir.'/parked' using 1:2 with lines lw 2 lc rgb "#1f77b4" title "ordering_events_parked_current (ledger)", \
     dir.'/escalated' using 1:2 axes x1y2 with steps lw 1 lc rgb "#d62728" title "ordering_event_gaps_escalated_total (ledger, right axis)"
unset y2label
unset y2tics

set title "Shares of events (over 20 s)"
set ylabel "%"
set yrange [0:100]
set xlabel "seconds since the start of the run"
plot dir.'/stale' using 1:($2*100) with lines lw 2 lc rgb "#2ca02c" title "stale events of billing (apply_if_newer)", \
     dir.'/hot' using 1:($2*100) with lines lw 2 lc rgb "#9467bd" title "busiest resource of stream orders (from ordering.hot_resources)"
unset multiplot
