#!/usr/bin/env bash
# Issue 7's API target: with 1,000,000 runs in the ledger, GET /v1/jobs
# answers in under 100 ms; `wrk` on it for 10 s with 8 connections gives
# requests per second and p99.
#
# Usage: bench/api_bench.sh [--binary PATH] [--gaps-bench PATH] [--requests N]
#                           [--wrk-seconds S] [--runs R] [--no-browser]
#   --binary PATH      the cronledger binary (default: build/bench/cronledger)
#   --gaps-bench PATH  builds or reuses the 1,000,000-run ledger
#                      (default: build/bench/bench/gaps_bench)
#   --requests N       sequential GET /v1/jobs per run, timed by curl (default 50)
#   --wrk-seconds S    length of each wrk run (default 10)
#   --runs R           repetitions of the whole measurement (default 3)
#   --no-browser       skip the dashboard's first load in chromium
#
# What it does: copies the gap benchmark's ledger (100 daily jobs x 100
# partitions x 100 business dates, 997,948 runs; bench/gaps_bench.cc) and
# its config to a temporary folder, turns every job into `executor =
# "external"` (so that nothing runs on this machine while it is measured:
# the planner still plans, as in production), starts `serve` on a free
# loopback port, waits until the planner has caught up to today (the copied
# ledger ends on 2026-11-08, so the first passes record the missed
# occurrences: the ledger then holds more than 1,000,000 runs) and the run
# count stops moving, then per run: N sequential `curl` requests (median and
# largest time_total, i.e. connect to last byte) and `wrk -t2 -c8 -d S
# --latency` (requests/s and p99); then the dashboard's first load in
# headless chromium (bench/dashboard_load.js: a fresh browser context per
# load, from navigation to the overview holding all 100 jobs; playwright-core
# from tests/browser's lock file, installed once into build/bench). serve is
# stopped and the folder removed on any exit.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

binary="$root/build/bench/cronledger"
gaps_bench="$root/build/bench/bench/gaps_bench"
requests=50
wrk_seconds=10
runs=3
browser=1

usage() { sed -n '6,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }
while (($# > 0)); do
  case $1 in
    --binary) binary=${2:?--binary needs a path}; shift 2 ;;
    --gaps-bench) gaps_bench=${2:?--gaps-bench needs a path}; shift 2 ;;
    --requests) requests=${2:?--requests needs a number}; shift 2 ;;
    --wrk-seconds) wrk_seconds=${2:?--wrk-seconds needs seconds}; shift 2 ;;
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --no-browser) browser=0; shift ;;
    -h|--help) usage 0 ;;
    *) echo "api_bench: unknown argument: $1" >&2; usage ;;
  esac
done
for n in "$requests" "$wrk_seconds" "$runs"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "api_bench: not a positive whole number: $n" >&2; exit 2; }
done
for t in curl wrk python3; do
  command -v "$t" >/dev/null || { echo "api_bench: $t is missing (scripts/install-deps.sh installs it)" >&2; exit 2; }
done
[[ -x $binary ]] || { echo "api_bench: not an executable: $binary" >&2; exit 2; }
[[ -x $gaps_bench ]] || { echo "api_bench: not an executable: $gaps_bench" >&2; exit 2; }

source_dir=$("$gaps_bench" --build-only)
dir=$(mktemp -d "${TMPDIR:-/tmp}/cronledger-api.XXXXXX")
serve_pid=""
cleanup() {
  if [[ -n $serve_pid ]] && kill -0 "$serve_pid" 2>/dev/null; then
    kill -TERM "$serve_pid" 2>/dev/null || true
    for _ in $(seq 300); do kill -0 "$serve_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$serve_pid" 2>/dev/null || true
    wait "$serve_pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT

cp "$source_dir/ledger.db" "$dir/ledger.db"
# Every job external: the step keeps its name, loses its command.
sed -e 's|^timezone = |executor = "external"\ntimezone = |' \
  -e '/^  command = \["\/bin\/true"\]$/d' "$source_dir/cronledger.toml" >"$dir/cronledger.toml"
"$binary" check --config "$dir/cronledger.toml" >/dev/null

"$binary" serve --config "$dir/cronledger.toml" --log-format text >"$dir/serve.log" 2>&1 &
serve_pid=$!
url=""
for _ in $(seq 600); do
  url=$(grep -o 'API listening on http://[0-9.:]*' "$dir/serve.log" | head -1 | sed 's/API listening on //') || true
  [[ -n $url ]] && break
  kill -0 "$serve_pid" 2>/dev/null || { cat "$dir/serve.log" >&2; echo "api_bench: serve died" >&2; exit 1; }
  sleep 0.1
done
[[ -n $url ]] || { echo "api_bench: serve did not report its address" >&2; exit 1; }
token=$(cat "$dir/cronledger.token")
auth=(-H "Authorization: Bearer $token")

# The newest run and event ids: stable for 5 s once the planner has caught
# up and the gap scanner has recorded what the catch-up missed.
newest_run() {
  local runs events
  runs=$(curl -sf "${auth[@]}" "$url/v1/runs?limit=1" | python3 -c 'import json,sys; r=json.load(sys.stdin)["runs"]; print(r[0]["id"] if r else 0)')
  events=$(curl -sf "${auth[@]}" "$url/v1/events?limit=1" | python3 -c 'import json,sys; e=json.load(sys.stdin)["events"]; print(e[-1]["id"] if e else 0)')
  echo "$runs/$events"
}
last=-1
stable=0
for _ in $(seq 600); do
  now=$(newest_run)
  if [[ $now == "$last" ]]; then stable=$((stable + 1)); else stable=0; last=$now; fi
  ((stable >= 5)) && break
  sleep 1
done
((stable >= 5)) || { echo "api_bench: the planner did not settle in 10 minutes" >&2; exit 1; }
total=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from runs").fetchone()[0])' "$dir/ledger.db")
jobs=$(curl -sf "${auth[@]}" "$url/v1/jobs" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["jobs"]))')
echo "api_bench: $url serving $jobs jobs over $total runs; load average $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)" >&2

medians=()
maxes=()
rps=()
p99s=()
for run in $(seq "$runs"); do
  : >"$dir/times"
  for _ in $(seq "$requests"); do
    curl -sf -o /dev/null -w '%{time_total}\n' "${auth[@]}" "$url/v1/jobs" >>"$dir/times"
  done
  read -r median largest < <(python3 -c 'import statistics,sys; t=[float(x)*1000 for x in open(sys.argv[1])]; print(f"{statistics.median(t):.1f} {max(t):.1f}")' "$dir/times")
  wrk -t2 -c8 -d"${wrk_seconds}s" --latency "${auth[@]}" "$url/v1/jobs" >"$dir/wrk.txt"
  if grep -q "Non-2xx" "$dir/wrk.txt"; then cat "$dir/wrk.txt" >&2; echo "api_bench: wrk got errors" >&2; exit 1; fi
  r=$(awk '/^Requests\/sec:/ {print $2}' "$dir/wrk.txt")
  p99=$(awk '$1 == "99%" {print $2}' "$dir/wrk.txt")
  echo "run $run: GET /v1/jobs sequential median $median ms, largest $largest ms; wrk 8 conns: $r req/s, p99 $p99" >&2
  medians+=("$median"); maxes+=("$largest"); rps+=("$r"); p99s+=("$p99")
done
load_median=""
if ((browser)); then
  for t in node npm; do
    command -v "$t" >/dev/null || { echo "api_bench: $t is missing (scripts/install-deps.sh installs it)" >&2; exit 2; }
  done
  node_dir="$root/build/bench/browser-node"
  if [[ ! -d $node_dir/node_modules/playwright-core ]]; then
    mkdir -p "$node_dir"
    cp "$root/tests/browser/package.json" "$root/tests/browser/package-lock.json" "$node_dir/"
    npm ci --prefix "$node_dir" --no-audit --no-fund --prefer-offline >/dev/null
  fi
  link=$(grep -o 'one-time login link (valid [0-9]* min): http://[^ ]*' "$dir/serve.log" | head -1 | sed 's/.*: //')
  [[ -n $link ]] || { echo "api_bench: serve printed no login link" >&2; exit 1; }
  NODE_PATH="$node_dir/node_modules" node "$root/bench/dashboard_load.js" "$link" "$jobs" "$runs" >"$dir/load.txt"
  sed '$d' "$dir/load.txt" >&2
  load_median=$(awk '$1 == "median" {print $2}' "$dir/load.txt")
fi
python3 - "${medians[*]}" "${maxes[*]}" "${rps[*]}" "${p99s[*]}" "$load_median" <<'EOF'
import statistics, sys
def ms(v):
    for unit, f in (("us", 0.001), ("ms", 1.0), ("s", 1000.0)):
        if v.endswith(unit):
            return float(v[: -len(unit)]) * f
    return float(v)
med, mx, rps, p99 = (a.split() for a in sys.argv[1:5])
print(f"medians of {len(med)} runs:")
print(f"GET /v1/jobs, one at a time: median {statistics.median(map(float, med)):.1f} ms, largest {statistics.median(map(float, mx)):.1f} ms (target: under 100 ms)")
print(f"wrk -t2 -c8: {statistics.median(map(float, rps)):.0f} requests/s, p99 {statistics.median(map(ms, p99)):.1f} ms")
if sys.argv[5]:
    print(f"dashboard first load (chromium, to the overview filled): median {sys.argv[5]} ms")
EOF
