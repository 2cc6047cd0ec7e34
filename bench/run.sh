#!/usr/bin/env bash
# Builds the Release benchmark binaries and runs one of them with
# repetitions, printing the medians recorded in docs/benchmarks.md.
# Usage: bench/run.sh [schedule|ledger|serve|subprocess|effect|fire|idle|effect-run|gaps|api|pg] [extra flags]
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
#   pg                  PostgreSQL (durable server of its own): cronledger 1x8 and
#                       2x4 claim + complete throughput, graphile-worker and
#                       pg-boss (npm ci in bench/pg_peers), the raw SQL ceiling
#                       (pgbench), fire latency and idle CPU; medians of 3
#                       rounds and ratios (bench/pg_bench.sh; its own flags)
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
  fire | idle | effect-run | gaps | api | pg) ;;
  *) echo "unknown benchmark: $name (schedule, ledger, serve, subprocess, effect, fire, idle, effect-run, gaps, api or pg)" >&2; exit 2 ;;
esac
"$root/scripts/install-deps.sh"
if [[ $name == idle ]]; then
  exec "$root/bench/idle_serve.sh" "$@"
fi
"$root/scripts/build.sh" bench >/dev/null
echo "load average before the run: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)" >&2
if [[ $name == fire ]]; then
  exec "$root/build/bench/bench/fire_latency_bench" "$@"
fi
if [[ $name == gaps ]]; then
  exec "$root/build/bench/bench/gaps_bench" --cli "$root/build/bench/cronledger" "$@"
fi
if [[ $name == api ]]; then
  exec "$root/bench/api_bench.sh" --binary "$root/build/bench/cronledger" \
    --gaps-bench "$root/build/bench/bench/gaps_bench" "$@"
fi
if [[ $name == pg ]]; then
  exec "$root/bench/pg_bench.sh" --build "$root/build/bench" "$@"
fi
if [[ $name == effect-run ]]; then
  exec "$root/bench/effect_run_bench.sh" --binary "$root/build/bench/cronledger" "$@"
fi
"$root/build/bench/bench/${name}_bench" "${flags[@]}" \
  --benchmark_report_aggregates_only=true "$@"
