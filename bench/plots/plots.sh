#!/usr/bin/env bash
# Draws the benchmark report's plots (PNG, gnuplot's pngcairo terminal) from
# the data files bench/apscheduler/summarize.py writes into an
# apscheduler_bench.sh output folder, plus bench/plots/recorded-fire.dat (the
# PostgreSQL-side fire latencies recorded in docs/benchmarks.md).
#
# Usage: bench/plots/plots.sh [RESULTS_DIR] [--img DIR]
#   RESULTS_DIR  an apscheduler_bench.sh output folder (default: the newest
#                build/bench-results/**/apscheduler* folder with the data files;
#                docs/img/apscheduler-run holds the recorded run's data)
#   --img DIR    where the PNGs go (default docs/img)
#
# Writes:
#   throughput-workers.png  jobs/s against worker count, cronledger (SQLite,
#                           NORMAL and FULL) and APScheduler (three stores)
#   fire-percentiles.png    p50 / p90 / p99 from scheduled instant to start,
#                           1,000 jobs due at once, log scale
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here="$root/bench/plots"
results=""
img="$root/docs/img"
while (($# > 0)); do
  case $1 in
    --img) img=${2:?--img needs a folder}; shift 2 ;;
    -h|--help) sed -n '7,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 0 ;;
    *) results=$1; shift ;;
  esac
done
if [[ -z $results ]]; then
  results=$(ls -td "$root"/build/bench-results/*/ "$root"/build/bench-results/*/apscheduler/ 2>/dev/null \
    | while read -r d; do [[ -f $d/throughput-workers.dat ]] && echo "${d%/}"; done | head -1)
  [[ -n $results ]] || { echo "plots: no results folder with throughput-workers.dat; run bench/run.sh apscheduler" >&2; exit 1; }
fi
for f in throughput-workers.dat fire-percentiles.dat; do
  [[ -f $results/$f ]] || { echo "plots: $results/$f is missing" >&2; exit 1; }
done
command -v gnuplot >/dev/null || { echo "plots: gnuplot is missing (gnuplot-nox; scripts/install-deps.sh)" >&2; exit 1; }
mkdir -p "$img"
# The run's date, load and rounds for the subtitles.
when=$(sed -n 's/^date: \(.\{10\}\).*/\1/p' "$results/../machine.txt" "$results/machine.txt" 2>/dev/null | head -1 || true)
rounds=$(ls -d "$results"/round-* 2>/dev/null | wc -l || true)
# A copy without the raw rounds (docs/img/apscheduler-run): its settings line.
((rounds > 0)) || rounds=$(sed -n 's/.*rounds=\([0-9]*\).*/\1/p' "$results/machine.txt" 2>/dev/null | head -1 || true)
jobs=$(sed -n 's/.*jobs=\([0-9]*\).*/\1/p' "$results/machine.txt" 2>/dev/null | head -1 || true)
# The machine and how busy it was: a shared machine's figures read differently.
machine_file=$(ls "$results/machine.txt" "$results/../machine.txt" 2>/dev/null | head -1 || true)
cpu=$(sed -n 's/^cpu: //p' "$machine_file" 2>/dev/null | head -1 || true)
load_from=$(sed -n 's/^load average at the start: \([0-9.]*\).*/\1/p' "$machine_file" 2>/dev/null | head -1 || true)
load_to=$(sed -n 's/^load average at the end: \([0-9.]*\).*/\1/p' "$machine_file" 2>/dev/null | head -1 || true)
# When the recorded PostgreSQL figures were measured: recorded-fire.dat says.
recorded_when=$(sed -n 's/^# recorded: //p' "$here/recorded-fire.dat" | head -1)
where="${cpu:-machine unknown}${load_from:+, load $load_from at the start}${load_to:+ and $load_to at the end}"
jobs=$(echo "$jobs" | sed -e :a -e "s/\B[0-9]\{3\}\>/,&/;ta")
echo "plots: from $results ($when, $rounds rounds) into $img" >&2

gnuplot <<GP
set terminal pngcairo size 1000,620 enhanced font "DejaVu Sans,11"
set datafile missing "NaN"

set output "$img/throughput-workers.png"
set title "No-op jobs per second against worker count, SQLite, one node\n{/*0.8 median of $rounds rounds, $when, $where}\n{/*0.8 cronledger: 2 x 2,048 runs per measurement; APScheduler: ${jobs:-?} jobs per measurement}"
set xlabel "workers (cronledger max\\\\_workers; APScheduler ThreadPoolExecutor threads)"
set ylabel "throughput (jobs/s, log scale)"
set logscale x 2
set logscale y 10
set xrange [0.8:20]
set xtics ("1" 1, "2" 2, "4" 4, "8" 8, "10" 10, "16" 16)
set yrange [10:30000]
set format y "%.0f"
set grid xtics ytics mytics
set key outside below center horizontal maxcols 3 box spacing 1.2 width 1
set bmargin 8
plot "$results/throughput-workers.dat" \
       using 1:2 with linespoints lw 2 pt 7 ps 1.2 lc rgb "#1f77b4" title "cronledger, WAL, NORMAL", \
    "" using 1:3 with linespoints lw 2 pt 5 ps 1.2 lc rgb "#0b3c6e" title "cronledger, WAL, FULL (serve's default)", \
    "" using 1:4 with linespoints lw 2 pt 9 ps 1.3 lc rgb "#d62728" dt 2 title "APScheduler, default store (journal, FULL)", \
    "" using 1:5 with linespoints lw 2 pt 11 ps 1.3 lc rgb "#ff7f0e" dt 2 title "APScheduler, WAL, FULL, pooled", \
    "" using 1:6 with linespoints lw 2 pt 13 ps 1.3 lc rgb "#e6a100" dt 2 title "APScheduler, WAL, NORMAL, pooled"

reset
set terminal pngcairo size 1500,720 enhanced font "DejaVu Sans,11"
set datafile missing "NaN"
set output "$img/fire-percentiles.png"
set title "Fire latency: from the scheduled instant to each job's start, 1,000 jobs due at one instant (unless noted)\n{/*0.8 'this run': SQLite, median of $rounds rounds, $when; 'recorded': the PostgreSQL figures of docs/benchmarks.md ($recorded_when), no p90 recorded}"
set ylabel "latency (ms, log scale)"
set logscale y 10
set yrange [0.5:30000]
set format y "%g"
set grid ytics mytics
set style data histograms
set style histogram clustered gap 1.5
set style fill solid 0.85 border rgb "#333333"
set boxwidth 0.9
set xtics nomirror font ",9"
set key top left box
set bmargin 6
w = 1.0 / 4.5
lab(v) = (v == v) ? (v < 10 ? sprintf("%.1f", v) : sprintf("%.0f", v)) : ""
data = "< cat '$results/fire-percentiles.dat' '$here/recorded-fire.dat'"
plot data using 2:xtic(1) title "p50" lc rgb "#9ecae1", \
    "" using 3 title "p90" lc rgb "#4292c6", \
    "" using 4 title "p99" lc rgb "#08306b", \
    "" using (\$0 - w):2:(lab(\$2)) with labels offset 0,0.7 font ",8" notitle, \
    "" using (\$0):3:(lab(\$3)) with labels offset 0,0.7 font ",8" notitle, \
    "" using (\$0 + w):4:(lab(\$4)) with labels offset 0,0.7 font ",8" notitle
GP
ls -l "$img"/throughput-workers.png "$img"/fire-percentiles.png >&2
