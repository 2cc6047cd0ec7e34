#!/usr/bin/env bash
# Builds the Release benchmark binaries and runs the ledger (SQLite)
# benchmarks with repetitions, printing the medians recorded in
# docs/benchmarks.md. The first run builds a 1,000,000-run ledger in
# /tmp/cronledger-bench-1m.db (a few minutes); later runs reuse it.
# Usage: bench/run_ledger.sh [extra Google Benchmark flags]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" bench >/dev/null
echo "load average before the run: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)" >&2
"$root/build/bench/bench/ledger_bench" --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true "$@"
