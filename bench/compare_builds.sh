#!/usr/bin/env bash
# Two bench builds side by side in one sitting: SQLite serve throughput,
# SQLite fire latency and PostgreSQL throughput, the rounds interleaved
# (the order of the two builds alternating round by round, so that drift on
# the machine falls on both), and the medians with after/before ratios.
# What a redesign that must not cost performance is measured with
# (docs/benchmarks.md, "Before and after the redesign").
#
# Usage: bench/compare_builds.sh BEFORE_BUILD AFTER_BUILD [--rounds N] [--only LIST]
#   BEFORE_BUILD, AFTER_BUILD   build/bench folders (scripts/build.sh bench),
#                               e.g. of a git worktree at the older commit
#   --rounds N   rounds (default 5)
#   --only LIST  comma-separated subset of serve, fire, pg (default: all)
#
#   serve   serve_bench's BM_DispatcherAhead at batch 256 (8 workers,
#           claim_ahead), durability normal and full: runs/s, the median of
#           3 repetitions
#   fire    fire_latency_bench with serve's defaults, 4 measured
#           occurrences: p50 and p99 ms (median over the occurrences)
#   pg      bench/pg_bench.sh --only cl1x8-ahead (a durable server of its
#           own, 20,000 runs, 1 node x 8 workers, claim_ahead 1s): runs/s
# Every figure goes to stdout as `round <tab> build <tab> name <tab> value`;
# the summary at the end: median per build and after/before.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage() { sed -n '9,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }
[[ $# -ge 2 ]] || usage
before=$(cd "$1" && pwd)
after=$(cd "$2" && pwd)
shift 2
rounds=5
only=serve,fire,pg
while (($# > 0)); do
  case $1 in
    --rounds) rounds=${2:?}; shift 2 ;;
    --only) only=${2:?}; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "compare_builds: unknown argument: $1" >&2; usage ;;
  esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "compare_builds: --rounds is a positive number" >&2; exit 2; }
want() { [[ ",$only," == *",$1,"* ]]; }
for b in "$before" "$after"; do
  for bin in serve_bench fire_latency_bench pg_bench; do
    [[ -x $b/bench/$bin ]] || { echo "compare_builds: $b/bench/$bin missing (scripts/build.sh bench)" >&2; exit 2; }
  done
done

results=$(mktemp /tmp/cronledger-compare.XXXXXX)
trap 'rm -f "$results" "$results".*' EXIT
record() {  # round build name value
  printf '%s\t%s\t%s\t%s\n' "$@" | tee -a "$results"
}

measure() {  # round label build
  local round=$1 label=$2 build=$3
  if want serve; then
    "$build/bench/serve_bench" --benchmark_filter='DispatcherAhead/full:[01]/batch:256' \
      --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
      --benchmark_format=json 2>/dev/null >"$results.json"
    python3 - "$results.json" <<'EOF' | while read -r name value; do record "$round" "$label" "$name" "$value"; done
import json, sys
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("aggregate_name") == "median":
        full = "full" if "full:1" in b["run_name"] else "normal"
        print(f"serve_{full}_runs_per_s", round(b["items_per_second"]))
EOF
  fi
  if want fire; then
    local line
    line=$("$build/bench/fire_latency_bench" --occurrences 4 2>/dev/null | grep '^median of')
    record "$round" "$label" fire_p50_ms "$(sed -E 's/.*p50 ([0-9.]+) ms.*/\1/' <<<"$line")"
    record "$round" "$label" fire_p99_ms "$(sed -E 's/.*p99 ([0-9.]+) ms.*/\1/' <<<"$line")"
  fi
  if want pg; then
    local tsv="$results.pg"
    rm -f "$tsv"
    "$root/bench/pg_bench.sh" --build "$build" --only cl1x8-ahead --rounds 1 --out "$tsv" >/dev/null 2>&1 ||
      { echo "compare_builds: pg_bench.sh failed for $build" >&2; exit 1; }
    while IFS=$'\t' read -r _ name value _; do
      [[ $name == cronledger-1x8-ahead ]] && record "$round" "$label" pg_1x8_ahead_runs_per_s "$value"
    done <"$tsv"
  fi
}

echo "compare_builds: before $before, after $after; $rounds rounds; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for round in $(seq 1 "$rounds"); do
  if ((round % 2)); then
    measure "$round" before "$before"
    measure "$round" after "$after"
  else
    measure "$round" after "$after"
    measure "$round" before "$before"
  fi
done

python3 - "$results" <<'EOF'
import statistics, sys
from collections import defaultdict
values = defaultdict(list)
for line in open(sys.argv[1]):
    _, build, name, value = line.rstrip("\n").split("\t")
    values[(name, build)].append(float(value))
print(f"\n{'figure':28} {'before':>12} {'after':>12} {'after/before':>13}")
for name in sorted({n for n, _ in values}):
    b = statistics.median(values[(name, "before")])
    a = statistics.median(values[(name, "after")])
    print(f"{name:28} {b:12.2f} {a:12.2f} {a / b:13.3f}")
EOF
