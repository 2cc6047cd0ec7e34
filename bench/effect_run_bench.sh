#!/usr/bin/env bash
# Issue 5's target: what `cronledger effect run --key K -- CMD` costs on top
# of running CMD itself, from inside a real step of a real `serve` on
# loopback. Target: under 5 ms median per call.
#
# Usage: bench/effect_run_bench.sh [--binary PATH] [--calls N] [--rounds R]
#                                  [--durability full|normal]
#   --binary PATH     the cronledger binary (default: build/bench/cronledger,
#                     built with scripts/build.sh bench)
#   --calls N         calls of each kind per round (default 200)
#   --rounds R        rounds (default 7); figures are medians over rounds
#   --durability D    server.durability of the ledger (default full, serve's
#                     default: SQLite synchronous = FULL, an fsync per commit)
#
# What it does: writes a config to a temporary folder (SQLite ledger and
# logs there, a free loopback port), one job that fires every second with
# key = "date" (so one run) and one step, and starts `serve`. The step runs
# R rounds; each round times N calls of each kind with bash's
# $EPOCHREALTIME (no process is started to read the clock):
#   plain   /bin/true                       what CMD costs by itself
#   effect  cronledger effect run --key rR-kI -- /bin/true
#                                           a new key: begin, CMD, commit
#   replay  the same N calls again          begin answers "replay": one
#                                           request, no CMD, nothing written
#   start   cronledger effect run with CRONLEDGER_API empty
#                                           process start and argument
#                                           parsing only (exits 64 at once)
#   get     cronledger checkpoint get       one request, read-only
# overhead = (effect - plain) / N per round; the report gives the median
# over rounds of every figure, per call. Afterwards every effect must be
# committed in the ledger (R x N of them) and the run succeeded, else the
# benchmark fails. serve is stopped and the folder removed on any exit.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

binary=""
calls=200
rounds=7
durability=full

usage() { sed -n '6,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }
while (($# > 0)); do
  case $1 in
    --binary) binary=${2:?--binary needs a path}; shift 2 ;;
    --calls) calls=${2:?--calls needs a number}; shift 2 ;;
    --rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
    --durability) durability=${2:?--durability needs full or normal}; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "effect_run_bench: unknown argument: $1" >&2; usage ;;
  esac
done
for n in "$calls" "$rounds"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "effect_run_bench: not a positive number: $n" >&2; exit 2; }
done
[[ $durability == full || $durability == normal ]] ||
  { echo "effect_run_bench: --durability must be full or normal" >&2; exit 2; }

if [[ -z $binary ]]; then
  "$root/scripts/build.sh" bench >/dev/null
  binary="$root/build/bench/cronledger"
fi
[[ -x $binary ]] || { echo "effect_run_bench: not an executable: $binary" >&2; exit 2; }
binary=$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$(dirname "$binary")/CMakeCache.txt" 2>/dev/null || true)

dir=$(mktemp -d "${TMPDIR:-/tmp}/cronledger-effect-bench.XXXXXX")
serve_pid=""

alive() {
  local state
  state=$(awk '{sub(/.*\) /, ""); print $1}' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $state && $state != Z && $state != X ]]
}
stop_serve() {
  [[ -n $serve_pid ]] || return 0
  local pid=$serve_pid waited=0
  serve_pid=""
  if alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    while alive "$pid" && ((waited < 300)); do sleep 0.1; waited=$((waited + 1)); done
    alive "$pid" && kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null || true
}
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
  stop_serve
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'echo "effect_run_bench: interrupted" >&2; exit 130' INT TERM

# --- the step ----------------------------------------------------------------
# Each round appends one line per kind: KIND WALL_US CHILD_TICKS SERVE_TICKS.
# Wall time from $EPOCHREALTIME ("s.micros" in bash 5); CPU in clock ticks
# from /proc: the step's reaped children (cutime + cstime: the calls and
# what they ran) and serve (utime + stime, all threads: the requests). The
# step's parent is serve's supervisor shim, whose parent is serve.
cat >"$dir/bench_step.sh" <<'STEP'
#!/bin/bash
set -u
cl=$1 calls=$2 rounds=$3 out=$4
read -r -a shim < "/proc/$PPID/stat"
serve=${shim[3]}
mark() {
  local -a me sv
  read -r -a me < "/proc/$$/stat"
  read -r -a sv < "/proc/$serve/stat"
  echo "${EPOCHREALTIME/./} $((me[15] + me[16])) $((sv[13] + sv[14]))"
}
report() {  # KIND BEFORE AFTER
  local -a a=($2) b=($3)
  echo "$1 $((b[0] - a[0])) $((b[1] - a[1])) $((b[2] - a[2]))" >>"$out"
}
for ((r = 1; r <= rounds; r++)); do
  m0=$(mark)
  for ((i = 0; i < calls; i++)); do /bin/true; done
  m1=$(mark)
  for ((i = 0; i < calls; i++)); do
    "$cl" effect run --key "r$r-k$i" -- /bin/true || { echo "effect run r$r-k$i: exit $?" >&2; exit 1; }
  done
  m2=$(mark)
  for ((i = 0; i < calls; i++)); do
    "$cl" effect run --key "r$r-k$i" -- /bin/true 2>/dev/null || { echo "replay r$r-k$i: exit $?" >&2; exit 1; }
  done
  m3=$(mark)
  for ((i = 0; i < calls; i++)); do
    CRONLEDGER_API= "$cl" effect run --key "x" -- /bin/true 2>/dev/null && exit 1
  done
  m4=$(mark)
  for ((i = 0; i < calls; i++)); do
    "$cl" checkpoint get >/dev/null || { echo "checkpoint get: exit $?" >&2; exit 1; }
  done
  m5=$(mark)
  report plain "$m0" "$m1"
  report effect "$m1" "$m2"
  report replay "$m2" "$m3"
  report start "$m3" "$m4"
  report get "$m4" "$m5"
done
echo done >"$out.done"
STEP
chmod +x "$dir/bench_step.sh"

cat >"$dir/cronledger.toml" <<EOF
[server]
store = "sqlite:ledger.db"
listen = "127.0.0.1:0"
durability = "$durability"
log_dir = "logs"

[[job]]
name = "effects"
schedule = "* * * * * *"
timezone = "UTC"
key = "date"

  [[job.step]]
  name = "bench"
  command = ["./bench_step.sh", "$binary", "$calls", "$rounds", "$dir/rounds.txt"]
  timeout = "1h"
  idempotent = true
EOF
"$binary" check --config "$dir/cronledger.toml" >/dev/null

echo "effect_run_bench: $calls calls x $rounds rounds, durability $durability," \
  "build ${build_type:-unknown}, load average $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)" >&2
"$binary" serve --config "$dir/cronledger.toml" >"$dir/serve.log" 2>&1 &
serve_pid=$!

fail() {
  echo "effect_run_bench: $1" >&2
  tail -n 20 "$dir/serve.log" >&2 || true
  find "$dir/logs" -name '*.log' -exec tail -n 20 {} + >&2 2>/dev/null || true
  exit 1
}
# The run's state and its committed effects, from the ledger (not from
# serve's log, which shows the dispatcher's own decision).
run_facts() {
  "$binary" runs --config "$dir/cronledger.toml" --run 1 --json 2>/dev/null | python3 -c '
import json, sys
run = json.load(sys.stdin)
print(run["state"], run["attempts"], sum(e["state"] == "committed" for e in run["effects"]))' \
    2>/dev/null || echo "none 0 0"
}
state=none attempts=0
until [[ $state == succeeded || $state == failed || $state == unknown ]]; do
  alive "$serve_pid" || fail "serve exited"
  [[ $state == pending ]] && ((attempts > 0)) && fail "the benchmark step failed (the run is retried)"
  sleep 0.5
  read -r state attempts committed < <(run_facts)
done
stop_serve
[[ -e $dir/rounds.txt.done && $state == succeeded ]] || fail "the run is $state"
((committed == calls * rounds)) || fail "$committed effects committed, expected $((calls * rounds))"

# --- the report --------------------------------------------------------------
python3 - "$dir/rounds.txt" "$calls" "$(getconf CLK_TCK)" <<'PY'
import collections, statistics, sys
calls, tick_ms = int(sys.argv[2]), 1000 / int(sys.argv[3])
rounds = collections.defaultdict(list)  # kind -> [(wall, client, serve) ms per call]
for line in open(sys.argv[1]):
    kind, wall, child, serve = line.split()
    rounds[kind].append((int(wall) / 1000 / calls, int(child) * tick_ms / calls,
                         int(serve) * tick_ms / calls))
names = {"plain": "plain /bin/true", "effect": "effect run, new key",
         "replay": "effect run, replay", "start": "start only (exits 64)",
         "get": "checkpoint get"}
med = lambda xs: statistics.median(xs)
print(f"per call, ms; median of {len(rounds['plain'])} rounds of {calls} calls"
      " (wall min..max); CPU from /proc in 10 ms ticks")
print(f"  {'':24s} {'wall':>6s} {'range':>13s} {'CPU calls':>10s} {'CPU serve':>10s}")
for kind, name in names.items():
    xs = rounds[kind]
    walls = [x[0] for x in xs]
    print(f"  {name:24s} {med(walls):6.2f} {min(walls):6.2f}..{max(walls):<6.2f}"
          f" {med([x[1] for x in xs]):10.2f} {med([x[2] for x in xs]):10.2f}")
over = [e[0] - p[0] for e, p in zip(rounds["effect"], rounds["plain"])]
print(f"  {'overhead: effect - plain':24s} {med(over):6.2f} {min(over):6.2f}..{max(over):<6.2f}"
      "   <- issue 5 target: under 5 ms")
PY
echo "effect_run_bench: load average after $(cut -d' ' -f1-3 /proc/loadavg)" >&2
