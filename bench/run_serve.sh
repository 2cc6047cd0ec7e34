#!/usr/bin/env bash
# Builds the Release benchmark binaries and runs the serving benchmarks
# (issue 4: raw SQL claim/complete ceiling and the dispatcher with no-op
# in-process handlers, synchronous NORMAL and FULL) with repetitions,
# printing the medians recorded in docs/benchmarks.md. Each benchmark uses a
# fresh SQLite file in its own /tmp dir, removed at exit.
# Usage: bench/run_serve.sh [extra Google Benchmark flags]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" bench >/dev/null
echo "load average before the run: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)" >&2
"$root/build/bench/bench/serve_bench" --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true "$@"
