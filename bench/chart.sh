#!/usr/bin/env bash
#
# Draw the ratio table of bench/run.sh as a bar chart (gnuplot, PNG):
# the extension's variants in blue, the hand-written and peer alternatives in
# grey, the floor in green; the dashed line is each workload's baseline.
#
#   bash bench/chart.sh TABLE.txt OUT.png
set -euo pipefail
table=$1
png=$2
dat=$(mktemp)
trap 'rm -f "$dat"' EXIT
title=$(head -n1 "$table" | sed 's/ (tps.*//')
awk 'NR > 2 {
	sub(/x$/, "", $4)
	c = ($2 ~ /^(ordering|apply_ext|apply_newer_only|deliver_ext)/) ? 1 : ($2 == "floor" ? 3 : 2)
	print $1 "/" $2, $4, c
}' "$table" >"$dat"
gnuplot <<GP
set terminal pngcairo size 1200,600 font "DejaVu Sans,10"
set output "$png"
set title "ordering: throughput relative to each workload's baseline, $title" noenhanced
set style fill solid 0.7 border -1
set boxwidth 0.7
set yrange [0:*]
set grid ytics
set ylabel "ratio of median tps to the baseline"
set xtics rotate by 40 right font ",8" noenhanced
set bmargin 9
set palette defined (1 "#3070c0", 2 "#a0a0a0", 3 "#40a040")
set cbrange [1:3]
unset colorbox
plot "$dat" using 0:2:3:xtic(1) with boxes lc palette notitle, \
	1 with lines dt 2 lc rgb "black" notitle
GP
