#!/usr/bin/env bash
# Issue 4's idle target: `cronledger serve` with 1,000 daily jobs of 10
# static partitions each, measured while no run is due. Target: RSS under
# 50 MB and CPU under 1% of one core over 10 minutes (every background pass
# that serve runs while idle is included).
#
# Usage: bench/idle_serve.sh [--binary PATH] [--warmup SECONDS] [--duration SECONDS]
#                            [--jobs N] [--keep-samples FILE]
#                            [--store URL [--pg-datadir DIR]]
#   --binary PATH     the cronledger binary to measure (default: build
#                     build/release/cronledger with scripts/build.sh release)
#   --warmup S        seconds between serve's start and the window (default 60)
#   --duration S      length of the measurement window (default 600)
#   --jobs N          number of jobs (default 1000; 10 partitions each)
#   --keep-samples F  write the 5 s samples (elapsed, cpu ticks, VmRSS kB) to F
#   --store URL       the ledger (default: a SQLite file in the folder); a
#                     postgresql:// URL names an empty database (bench/pg_bench.sh)
#   --pg-datadir DIR  that server's data directory: also report the CPU of its
#                     processes (postmaster and backends) over the window
#
# What it does: writes a config to a temporary folder (SQLite ledger and
# log_dir there, listen on a free loopback port), with every job's daily
# schedule in UTC placed outside [start - 2 min, end of window + 5 min], so
# that no occurrence is planned, released or run during the measurement;
# validates it with `cronledger check`; starts `serve --log-format json`;
# waits --warmup seconds; then samples /proc/PID every 5 s for --duration
# seconds. CPU = delta(utime + stime) / CLK_TCK / wall seconds, all threads
# of serve. Exit 1 when serve dies or the config does not validate; serve is
# stopped (SIGTERM, SIGKILL after 30 s) and the folder removed on any exit.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

binary=""
warmup=60
duration=600
jobs=1000
partitions=10
samples_out=""
sample_every=5
store="sqlite:ledger.db"
pg_datadir=""

usage() { sed -n '7,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }
while (($# > 0)); do
  case $1 in
    --binary) binary=${2:?--binary needs a path}; shift 2 ;;
    --warmup) warmup=${2:?--warmup needs seconds}; shift 2 ;;
    --duration) duration=${2:?--duration needs seconds}; shift 2 ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift 2 ;;
    --keep-samples) samples_out=${2:?--keep-samples needs a file}; shift 2 ;;
    --store) store=${2:?--store needs a URL}; shift 2 ;;
    --pg-datadir) pg_datadir=${2:?--pg-datadir needs a folder}; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "idle_serve: unknown argument: $1" >&2; usage ;;
  esac
done
for n in "$warmup" "$duration" "$jobs"; do
  [[ $n =~ ^[0-9]+$ ]] || { echo "idle_serve: not a whole number: $n" >&2; exit 2; }
done
((duration >= sample_every)) || { echo "idle_serve: --duration must be >= $sample_every" >&2; exit 2; }
((jobs >= 1)) || { echo "idle_serve: --jobs must be >= 1" >&2; exit 2; }

if [[ -z $binary ]]; then
  "$root/scripts/build.sh" release >/dev/null
  binary="$root/build/release/cronledger"
fi
[[ -x $binary ]] || { echo "idle_serve: not an executable: $binary" >&2; exit 2; }
binary=$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")

dir=$(mktemp -d "${TMPDIR:-/tmp}/cronledger-idle.XXXXXX")
serve_pid=""

stop_serve() {
  [[ -n $serve_pid ]] || return 0
  local pid=$serve_pid
  serve_pid=""
  if alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    local waited=0
    while alive "$pid" && ((waited < 300)); do sleep 0.1; waited=$((waited + 1)); done
    if alive "$pid"; then
      echo "idle_serve: serve did not exit 30 s after SIGTERM; SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  wait "$pid" 2>/dev/null || true
}
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
  stop_serve
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'echo "idle_serve: interrupted" >&2; exit 130' INT TERM

# Running, and not a zombie waiting to be reaped.
alive() {
  local state
  state=$(awk '{sub(/.*\) /, ""); print $1}' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $state && $state != Z && $state != X ]]
}
# utime + stime of every thread of the process, in clock ticks (fields 14
# and 15; the command name in field 2 may hold spaces, so count after ')').
cpu_ticks() { awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$1/stat"; }
child_ticks() { awk '{sub(/.*\) /, ""); print $14 + $15}' "/proc/$1/stat"; }
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
now_s() { date +%s.%N; }
# CPU of a PostgreSQL server in clock ticks: utime + stime of the postmaster
# and of each live child (backends, checkpointer, WAL writer, ...), plus the
# postmaster's cutime + cstime (children that exited and were reaped).
pg_ticks() {
  local pm p
  pm=$(head -1 "$pg_datadir/postmaster.pid")
  {
    awk '{sub(/.*\) /, ""); print $12 + $13 + $14 + $15}' "/proc/$pm/stat"
    for p in $(ps -o pid= --ppid "$pm"); do
      awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$p/stat" 2>/dev/null || true
    done
  } | awk '{s += $1} END {print s + 0}'
}
mb() { awk -v kb="$1" 'BEGIN {printf "%.1f", kb / 1024}'; }

free_port() {
  if command -v python3 >/dev/null; then
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
    return
  fi
  local p
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 40000))
    ss -ltnH "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return; }
  done
  echo 18377
}

# --- the configuration -------------------------------------------------------
# Minutes of the UTC day where no occurrence may fall: from 2 min before now
# to 5 min after the window's end (the planner looks 60 s ahead).
now_epoch=$(date -u +%s)
now_min=$(( (now_epoch % 86400) / 60 ))
span_min=$(( 2 + (warmup + duration + 59) / 60 + 5 + 1 ))
if ((span_min >= 1440)); then
  echo "idle_serve: warm-up + duration must leave part of the day free for the schedules" >&2
  exit 2
fi
allowed=()
for ((m = 0; m < 1440; m++)); do
  off=$(( (m - now_min + 2 + 1440) % 1440 ))  # minutes since (now - 2 min)
  ((off < span_min)) || allowed+=("$m")
done

config="$dir/cronledger.toml"
{
  printf '[server]\n'
  printf 'store = "%s"\n' "$store"
  printf 'listen = "127.0.0.1:%s"\n' "$(free_port)"
  printf 'log_dir = "logs"\n\n'
  plist=""
  for ((p = 0; p < partitions; p++)); do plist+="${plist:+, }\"p$(printf '%02d' "$p")\""; done
  for ((i = 0; i < jobs; i++)); do
    # Spread evenly over the allowed minutes of the day.
    m=${allowed[$(( i * ${#allowed[@]} / jobs ))]}
    printf '[[job]]\nname = "job%04d"\nschedule = "%d %d * * *"\ntimezone = "UTC"\n' \
      "$i" $((m % 60)) $((m / 60))
    printf 'executor = "subprocess"\npartitions = [%s]\n' "$plist"
    printf '  [[job.step]]\n  name = "noop"\n  command = ["true"]\n\n'
  done
} >"$config"

"$binary" check --config "$config" || { echo "idle_serve: the generated config does not validate" >&2; exit 1; }

# --- serve -------------------------------------------------------------------
log="$dir/serve.log"
start=$(now_s)
"$binary" serve --config "$config" --log-format json >"$log" 2>&1 &
serve_pid=$!
echo "idle_serve: serve pid $serve_pid, $jobs jobs x $partitions partitions, load average" \
  "$(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)" >&2

fail() {
  echo "idle_serve: $1" >&2
  echo "--- last lines of serve's log ---" >&2
  tail -n 20 "$log" >&2 || true
  exit 1
}

# The start-up line comes once the config is loaded and the store is open.
started=""
while [[ -z $started ]]; do
  alive "$serve_pid" || fail "serve exited during start-up"
  if grep -q '"serve: node .* started with' "$log" 2>/dev/null; then
    started=$(now_s)
  else
    sleep 0.1
  fi
done
startup_s=$(awk -v a="$start" -v b="$started" 'BEGIN {printf "%.2f", b - a}')
echo "idle_serve: start-up line after ${startup_s} s; warming up for ${warmup} s" >&2

# Warm-up in 1 s steps so a crash is noticed early.
warm_end=$(awk -v a="$start" -v w="$warmup" 'BEGIN {printf "%.3f", a + w}')
warm_ticks0=$(cpu_ticks "$serve_pid")
while awk -v e="$warm_end" -v n="$(now_s)" 'BEGIN {exit !(n < e)}'; do
  alive "$serve_pid" || fail "serve exited during the warm-up"
  sleep 1
done
alive "$serve_pid" || fail "serve exited during the warm-up"

# The first planning pass records one definition version per job (a fresh
# ledger); the last of those lines tells roughly how long that pass took.
ts_of() { sed -n 's/^{"ts":"\([^"]*\)".*/\1/p' | tail -n 1; }
epoch_of() { date -u -d "$1" +%s.%N; }
warm_lines=$(wc -l <"$log")
defs=$(grep -c '"planner: job .*: definition version' "$log" || true)
first_pass="n/a"
if ((defs > 0)); then
  t_started=$(grep -m 1 '"serve: node .* started with' "$log" | ts_of)
  t_last_def=$(grep '"planner: job .*: definition version' "$log" | ts_of)
  first_pass=$(awk -v a="$(epoch_of "$t_started")" -v b="$(epoch_of "$t_last_def")" \
    'BEGIN {printf "%.2f s after the start-up line", b - a}')
fi

# --- the window ----------------------------------------------------------------
hz=$(getconf CLK_TCK)
t0=$(now_s)
ticks0=$(cpu_ticks "$serve_pid")
[[ -z $pg_datadir ]] || pg0=$(pg_ticks)
child0=$(child_ticks "$serve_pid")
lines0=$(wc -l <"$log")
warm_cpu_s=$(awk -v a="$warm_ticks0" -v b="$ticks0" -v hz="$hz" 'BEGIN {printf "%.2f", (b - a) / hz}')
rss_max=$(status_kb "$serve_pid" VmRSS)
rss_start=$rss_max
samples=$(mktemp "$dir/samples.XXXXXX")
printf 'elapsed_s\tcpu_ticks\tvmrss_kb\n' >"$samples"
echo "idle_serve: measuring for ${duration} s (RSS ${rss_start} kB at the start)" >&2

next=$sample_every
while :; do
  # Sleep to the next 5 s mark of the window (or its end).
  target=$(awk -v t0="$t0" -v n="$next" -v d="$duration" 'BEGIN {printf "%.3f", t0 + (n < d ? n : d)}')
  wait_s=$(awk -v t="$target" -v n="$(now_s)" 'BEGIN {w = t - n; printf "%.3f", (w > 0 ? w : 0)}')
  sleep "$wait_s"
  alive "$serve_pid" || fail "serve died during the measurement window"
  t=$(now_s)
  ticks=$(cpu_ticks "$serve_pid")
  rss=$(status_kb "$serve_pid" VmRSS)
  ((rss > rss_max)) && rss_max=$rss
  printf '%.1f\t%s\t%s\n' "$(awk -v a="$t0" -v b="$t" 'BEGIN {print b - a}')" "$ticks" "$rss" >>"$samples"
  if awk -v a="$t0" -v b="$t" -v d="$duration" 'BEGIN {exit !(b - a >= d - 0.05)}'; then break; fi
  next=$((next + sample_every))
done
t1=$t
ticks1=$ticks
[[ -z $pg_datadir ]] || pg1=$(pg_ticks)
child1=$(child_ticks "$serve_pid")
rss_end=$rss
hwm=$(status_kb "$serve_pid" VmHWM)
threads=$(status_kb "$serve_pid" Threads)
lines1=$(wc -l <"$log")
runs_in_ledger="n/a"
if [[ $store == postgres* ]]; then
  runs_in_ledger=$(psql "$store" -tAc 'SELECT count(*) FROM runs' 2>/dev/null || echo "n/a")
elif command -v sqlite3 >/dev/null; then
  runs_in_ledger=$(sqlite3 -readonly "file:$dir/ledger.db?mode=ro" 'SELECT count(*) FROM runs' 2>/dev/null || echo "n/a")
fi
ledger_kb=$( (du -sk "$dir"/ledger.db* 2>/dev/null || true) | awk '{s += $1} END {print s + 0}')
[[ -n $samples_out ]] && cp "$samples" "$samples_out"

wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')
cpu_s=$(awk -v a="$ticks0" -v b="$ticks1" -v hz="$hz" 'BEGIN {printf "%.2f", (b - a) / hz}')
cpu_pct=$(awk -v c="$cpu_s" -v w="$wall" 'BEGIN {printf "%.2f", 100 * c / w}')
child_s=$(awk -v a="$child0" -v b="$child1" -v hz="$hz" 'BEGIN {printf "%.2f", (b - a) / hz}')
log_lines=$((lines1 - lines0))
# The busiest 5 s sample, to tell a steady cost from bursts.
peak_pct=$(awk -F'\t' -v hz="$hz" -v t0="$ticks0" '
  NR == 1 {prev_t = 0; prev_c = t0; next}
  {d = $1 - prev_t; if (d > 0) {p = 100 * ($2 - prev_c) / hz / d; if (p > m) m = p}
   prev_t = $1; prev_c = $2}
  END {printf "%.1f", m}' "$samples")

rss_target_kb=$((50 * 1024))
cat <<EOF
idle serve: $jobs jobs x $partitions partitions, window ${wall} s after ${warmup} s of warm-up
  start-up line        ${startup_s} s after launch; CPU during warm-up ${warm_cpu_s} s
  first planning pass  $defs definition(s) recorded, the last $first_pass
  log lines in warm-up $warm_lines
  CPU                  ${cpu_pct} % of one core (${cpu_s} s in ${wall} s; busiest 5 s: ${peak_pct} %)  target < 1 %
  CPU of children      ${child_s} s (steps; should be 0 while idle)
$([[ -z $pg_datadir ]] || awk -v a="$pg0" -v b="$pg1" -v hz="$hz" -v w="$wall" 'BEGIN {c = (b - a) / hz; printf "  database server CPU  %.2f %% of one core (%.2f s in %.1f s; postmaster and backends)\n", 100 * c / w, c, w}')
  RSS                  now $(mb "$rss_end") MB, max $(mb "$rss_max") MB (start $(mb "$rss_start") MB), HWM $(mb "$hwm") MB  target < 50 MB
  threads              $threads
  log lines in window  $log_lines ($(awk -v n="$log_lines" -v w="$wall" 'BEGIN {printf "%.2f", n / w}')/s)
  runs in ledger       $runs_in_ledger (0 expected: no occurrence in or near the window)
  ledger size          $([[ $store == postgres* ]] && echo "n/a (PostgreSQL)" || echo "$(mb "$ledger_kb") MB with -wal and -shm")
EOF
cpu_ok=$(awk -v p="$cpu_pct" 'BEGIN {print ((p < 1) ? "met" : "NOT met")}')
rss_ok=$( ((hwm < rss_target_kb)) && echo met || echo "NOT met")
echo "  targets              CPU $cpu_ok, RSS $rss_ok"
if [[ $runs_in_ledger != "n/a" && $runs_in_ledger != 0 ]]; then
  echo "idle_serve: warning: $runs_in_ledger run(s) were planned, so serve was not idle" >&2
fi
stop_serve
exit 0
