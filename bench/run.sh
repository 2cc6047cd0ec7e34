#!/usr/bin/env bash
# Builds the Release benchmark binaries and runs one of them with
# repetitions, printing the medians recorded in docs/benchmarks.md; or, with
# `all`, every one of them in turn and then the plots.
# Usage: bench/run.sh [all|schedule|ledger|serve|subprocess|effect|fire|idle|effect-run|gaps|api|api-attack|pg|apscheduler|plots] [extra flags]
#   all [--out DIR] [--quick] [--skip LIST]
#                       the whole suite, one benchmark after the other with the
#                       settings of docs/benchmarks.md, each one's output in
#                       DIR/<name>.txt (default build/bench-results/all-<time>),
#                       then the plots from this run into DIR/img; a summary of
#                       durations and exit codes in DIR/index.txt. About 2 hours
#                       on the 2-core reference machine (pg 50 min, apscheduler
#                       25 min, idle 11 min). --quick: shorter settings for a
#                       smoke run (idle 60 s, pg 1 round of 2,000 runs,
#                       apscheduler 1 round, fewer api/effect-run/gaps runs;
#                       about 25 minutes); --skip: comma-separated names
#                       left out (e.g. pg,api). Continues past a failing
#                       benchmark; exits 1 if any failed.
#   schedule (default)  the schedule engine
#   ledger              planning, status and the due-run lookup on SQLite; the
#                       first run builds a 1,000,000-run ledger in
#                       /tmp/cronledger-bench-1m.db (minutes), later runs reuse it
#   serve               the raw SQL claim/complete ceiling and the dispatcher
#   subprocess          the raw fork+exec rate of /bin/true and the dispatcher
#                       running `true` steps (8 workers) on SQLite
#   effect              committed in-process ctx.Effect calls per second through
#                       the dispatcher, 1 and 16 handlers, durability full and normal
#   fire                fire latency: 1,000 runs due at one instant through the
#                       serve loop (bench/fire_latency_bench.cc; its own flags)
#   idle                an idle `serve` with 1,000 daily jobs for 10 minutes
#                       (bench/idle_serve.sh; its own flags)
#   effect-run          what `cronledger effect run -- true` costs over `true`,
#                       called from a step of a real serve on loopback
#                       (bench/effect_run_bench.sh; its own flags)
#   gaps                a gap scan over 1,000,000 expected keys, in-process and
#                       `cronledger gaps --json`, time and peak RSS; the first
#                       run builds the ledger in /tmp/cronledger-bench-gaps
#                       (bench/gaps_bench.cc; its own flags: --runs N, --rebuild)
#   api                 GET /v1/jobs of a real serve over that ledger: latency
#                       one request at a time, and wrk with 8 connections
#                       (bench/api_bench.sh; its own flags)
#   api-attack          heartbeat, effect and /healthz latency of a real serve,
#                       idle and with 200 idle + 50 slow connections open
#                       (bench/api_attack_bench.cc; its own flags: --calls N,
#                       --rounds N (phases alternate in order), --control
#                       (no attack: what the order alone does),
#                       --cronledger PATH to measure another build)
#   pg                  PostgreSQL (durable server of its own): cronledger 1x8 and
#                       2x4 claim + complete throughput, graphile-worker and
#                       pg-boss (npm ci in bench/pg_peers), the raw SQL ceiling
#                       (pgbench), fire latency and idle CPU; medians of 3
#                       rounds and ratios (bench/pg_bench.sh; its own flags)
#   apscheduler         cronledger on SQLite next to APScheduler 3 (SQLAlchemy job
#                       store on SQLite) in the same run: throughput of no-op
#                       jobs at 1-16 workers, fire latency of 1,000 jobs due at
#                       once (bench/apscheduler_bench.sh; its own flags)
#   plots [DIR] [--img DIR]
#                       the PNG plots (gnuplot) from an apscheduler output
#                       folder (default: the newest under build/bench-results)
#                       into docs/img (bench/plots/plots.sh)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
name=schedule
if [[ $# -gt 0 && $1 != -* ]]; then
  name=$1
  shift
fi
case $name in
  schedule) flags=(--benchmark_repetitions=5 --benchmark_min_time=0.2) ;;
  ledger) flags=(--benchmark_repetitions=5) ;;
  serve) flags=(--benchmark_repetitions=3) ;;
  subprocess) flags=(--benchmark_repetitions=5) ;;
  effect) flags=(--benchmark_repetitions=5) ;;
  fire | idle | effect-run | gaps | api | api-attack | pg | apscheduler | plots | all) ;;
  *) echo "unknown benchmark: $name (all, schedule, ledger, serve, subprocess, effect, fire, idle, effect-run, gaps, api, api-attack, pg, apscheduler or plots)" >&2; exit 2 ;;
esac
"$root/scripts/install-deps.sh"
if [[ $name == plots ]]; then
  exec "$root/bench/plots/plots.sh" "$@"
fi
if [[ $name == all ]]; then
  out="$root/build/bench-results/all-$(date -u +%Y%m%dT%H%M%SZ)"
  quick=0
  skip=","
  while (($# > 0)); do
    case $1 in
      --out) out=${2:?--out needs a folder}; shift 2 ;;
      --quick) quick=1; shift ;;
      --skip) skip=",${2:?--skip needs a list},"; shift 2 ;;
      *) echo "run.sh all: unknown argument: $1 (--out DIR, --quick, --skip LIST)" >&2; exit 2 ;;
    esac
  done
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  "$root/scripts/build.sh" bench >/dev/null
  declare -A extra=(
    # idle: the bench build's binary (Release, the same code), not a
    # separate build/release that idle_serve.sh would otherwise build.
    [fire]="" [idle]="--binary $root/build/bench/cronledger" [effect-run]="" [gaps]="" [api]="" [api-attack]="" [pg]=""
    [apscheduler]="--out $out/apscheduler"
  )
  if ((quick)); then
    extra[fire]="--occurrences 3"
    extra[idle]+=" --warmup 20 --duration 60"
    extra[effect-run]="--rounds 3 --calls 100"
    extra[gaps]="--runs 1"
    extra[api]="--runs 1 --no-browser"
    extra[pg]="--rounds 1 --runs 2000"
    extra[apscheduler]+=" --rounds 1 --occurrences 2"
  fi
  {
    echo "bench/run.sh all$( ((quick)) && echo ' --quick'), started $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores," \
      "$(awk '/MemTotal/ {printf "%.1f GB", $2 / 1048576}' /proc/meminfo), $(. /etc/os-release && echo "$PRETTY_NAME")"
    echo "commit: $(git -C "$root" rev-parse --short HEAD)"
  } | tee "$out/index.txt" >&2
  failed=0
  for b in schedule ledger serve fire idle subprocess effect effect-run gaps api api-attack pg apscheduler; do
    if [[ $skip == *",$b,"* ]]; then
      echo "$b: skipped" | tee -a "$out/index.txt" >&2
      continue
    fi
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    t0=$(date +%s)
    echo "== $b (load $load) -> $out/$b.txt" >&2
    rc=0
    # shellcheck disable=SC2086  # the extra flags are words
    nice "$root/bench/run.sh" "$b" ${extra[$b]:-} >"$out/$b.txt" 2>&1 || rc=$?
    ((rc == 0)) || failed=1
    printf '%-12s exit %d  %5d s  load at start %s\n' "$b" "$rc" $(($(date +%s) - t0)) "$load" \
      | tee -a "$out/index.txt" >&2
  done
  if [[ -f $out/apscheduler/throughput-workers.dat ]]; then
    rc=0
    "$root/bench/plots/plots.sh" "$out/apscheduler" --img "$out/img" >"$out/plots.txt" 2>&1 || rc=$?
    ((rc == 0)) || failed=1
    echo "plots        exit $rc  -> $out/img" | tee -a "$out/index.txt" >&2
  fi
  echo "finished $(date -u +%Y-%m-%dT%H:%M:%SZ); load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/index.txt" >&2
  exit "$failed"
fi
if [[ $name == idle ]]; then
  exec "$root/bench/idle_serve.sh" "$@"
fi
"$root/scripts/build.sh" bench >/dev/null
echo "load average before the run: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)" >&2
if [[ $name == fire ]]; then
  exec "$root/build/bench/bench/fire_latency_bench" "$@"
fi
if [[ $name == api-attack ]]; then
  exec "$root/build/bench/bench/api_attack_bench" "$@"
fi
if [[ $name == gaps ]]; then
  exec "$root/build/bench/bench/gaps_bench" --cli "$root/build/bench/cronledger" "$@"
fi
if [[ $name == api ]]; then
  exec "$root/bench/api_bench.sh" --binary "$root/build/bench/cronledger" \
    --gaps-bench "$root/build/bench/bench/gaps_bench" "$@"
fi
if [[ $name == apscheduler ]]; then
  exec "$root/bench/apscheduler_bench.sh" --build "$root/build/bench" "$@"
fi
if [[ $name == pg ]]; then
  exec "$root/bench/pg_bench.sh" --build "$root/build/bench" "$@"
fi
if [[ $name == effect-run ]]; then
  exec "$root/bench/effect_run_bench.sh" --binary "$root/build/bench/cronledger" "$@"
fi
"$root/build/bench/bench/${name}_bench" "${flags[@]}" \
  --benchmark_report_aggregates_only=true "$@"
