#!/usr/bin/env bash
# cronledger on SQLite next to APScheduler 3 (Debian's python3-apscheduler,
# SQLAlchemyJobStore on a SQLite file, ThreadPoolExecutor), measured in the
# same run, interleaved round by round (issue 9; results in
# docs/benchmarks.md, "SQLite: cronledger next to APScheduler").
#
# Usage: bench/apscheduler_bench.sh [--rounds N] [--jobs N] [--occurrences K]
#                                   [--workers LIST] [--out DIR] [--build DIR]
#   --rounds N       repetitions of every measurement (default 3); the summary
#                    is the median of the rounds
#   --jobs N         APScheduler jobs per throughput measurement (default 2000)
#   --occurrences K  measured occurrences per fire-latency run, after one
#                    warm-up (default 4)
#   --workers LIST   worker counts of the throughput sweep (default 1,2,4,8,10,16;
#                    cronledger runs those of 1,2,4,8,16 its benchmark has)
#   --out DIR        where the raw outputs, summary.md and the plot data go
#                    (default build/bench-results/apscheduler-<time>)
#   --build DIR      the bench build (default build/bench, built by bench/run.sh)
#
# In each round, in this order:
#   1. for each worker count, back to back: a probe of the disk (200
#      fdatasyncs, aps_bench.py fsync); cronledger: serve_bench's
#      BM_DispatcherWorkers (engine::Dispatcher with in-process no-op
#      handlers, claim_batch 32, synchronous NORMAL then FULL; 2 x 2,048 runs
#      each; worker counts 1, 2, 4, 8, 16), runs/s until every completion
#      committed; APScheduler (aps_bench.py throughput): N one-shot no-op jobs
#      all due, for its three stores (default = rollback journal +
#      synchronous FULL + NullPool; wal-full; wal = WAL + synchronous NORMAL
#      + a kept connection pool);
#   2. fire latency in pairs: cronledger (fire_latency_bench, synchronous
#      NORMAL: 1,000 runs due every 10 s) then APScheduler's wal store
#      (aps_bench.py fire: bursts of 1,000 jobs due at one instant); then
#      cronledger FULL and APScheduler's default store.
# Then bench/apscheduler/summarize.py writes summary.md (medians, ratios)
# and the .dat files bench/plots/plots.sh draws.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=3
jobs=2000
occurrences=4
workers=1,2,4,8,10,16
out=""
build="$root/build/bench"
usage() { sed -n '7,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }
while (($# > 0)); do
  case $1 in
    --rounds) rounds=${2:?}; shift 2 ;;
    --jobs) jobs=${2:?}; shift 2 ;;
    --occurrences) occurrences=${2:?}; shift 2 ;;
    --workers) workers=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --build) build=${2:?}; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "apscheduler_bench: unknown argument: $1" >&2; usage ;;
  esac
done
[[ -n $out ]] || out="$root/build/bench-results/apscheduler-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
# Debian's Python, where python3-apscheduler and python3-sqlalchemy live (a
# python3 earlier on PATH, e.g. pyenv's, does not see them).
py=/usr/bin/python3
"$py" -c 'import apscheduler, sqlalchemy' || {
  echo "apscheduler_bench: needs python3-apscheduler and python3-sqlalchemy (scripts/install-deps.sh)" >&2
  exit 1
}
aps="$root/bench/apscheduler/aps_bench.py"
IFS=, read -r -a wlist <<<"$workers"

machine() {
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
  echo "memory: $(awk '/MemTotal/ {printf "%.1f GB", $2 / 1048576}' /proc/meminfo)"
  echo "os: $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r)"
  echo "commit: $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- src bench || echo ' (with local changes)')"
  echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
}
machine | tee "$out/machine.txt" >&2
echo "settings: rounds=$rounds jobs=$jobs occurrences=$occurrences workers=$workers" >>"$out/machine.txt"

cl_has() { [[ ,1,2,4,8,16, == *",$1,"* ]]; }
for ((r = 1; r <= rounds; r++)); do
  d="$out/round-$r"
  mkdir -p "$d"
  echo "== round $r of $rounds (load $(cut -d' ' -f1 /proc/loadavg))" >&2
  # Throughput, interleaved by worker count: the disk's fsync latency moves
  # by ten times within minutes here, so each worker count's measurements of
  # both schedulers run back to back, after a probe of the disk.
  for w in "${wlist[@]}"; do
    nice "$py" "$aps" fsync --label "throughput $w" >>"$d/fsync.jsonl"
    if cl_has "$w"; then
      echo "-- cronledger dispatcher, $w workers (NORMAL, FULL)" >&2
      nice "$build/bench/serve_bench" --benchmark_filter="BM_DispatcherWorkers/full:[01]/workers:$w/" \
        --benchmark_out="$d/cronledger-workers-$w.json" --benchmark_out_format=json \
        >"$d/cronledger-workers-$w.txt" 2>"$d/cronledger-workers-$w.err"
    fi
    for store in default wal-full wal; do
      echo "-- APScheduler throughput: store $store, $w workers, $jobs jobs" >&2
      nice "$py" "$aps" throughput --jobs "$jobs" --workers "$w" --store "$store" \
        >>"$d/apscheduler-throughput.jsonl"
    done
  done
  # Fire latency, in pairs: cronledger NORMAL then APScheduler's tuned WAL
  # NORMAL store; cronledger FULL then APScheduler's default store.
  for pair in normal:wal full:default; do
    sync=${pair%%:*}
    store=${pair#*:}
    nice "$py" "$aps" fsync --label "fire $sync" >>"$d/fsync.jsonl"
    echo "-- cronledger fire latency, synchronous $sync" >&2
    flag=()
    [[ $sync == full ]] && flag=(--full)
    nice "$build/bench/fire_latency_bench" --occurrences "$occurrences" "${flag[@]}" \
      >"$d/cronledger-fire-$sync.txt" 2>"$d/cronledger-fire-$sync.err"
    grep '^{' "$d/cronledger-fire-$sync.txt" >>"$d/fire.jsonl"
    echo "-- APScheduler fire latency, store $store" >&2
    nice "$py" "$aps" fire --jobs 1000 --occurrences "$occurrences" --store "$store" \
      >>"$d/fire.jsonl" 2>"$d/apscheduler-fire-$store.err"
  done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
"$py" "$root/bench/apscheduler/summarize.py" "$out"
