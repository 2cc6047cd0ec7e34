#!/usr/bin/env bash
# Builds the Release benchmark binaries and runs them with repetitions,
# printing the medians recorded in docs/benchmarks.md.
# Usage: bench/run.sh [extra Google Benchmark flags]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" bench >/dev/null
"$root/build/bench/bench/schedule_bench" --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true --benchmark_min_time=0.2 "$@"
