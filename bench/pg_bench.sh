#!/usr/bin/env bash
# cronledger on PostgreSQL next to graphile-worker, pg-boss and the raw SQL
# ceiling, all on one throwaway PostgreSQL 15 server with the stock durable
# settings (fsync on, synchronous_commit on) that this script starts and
# stops (issue 8, Performance; results in docs/benchmarks.md).
#
# Usage: bench/pg_bench.sh [--rounds N] [--runs N] [--only LIST] [--profile]
#                          [--out FILE] [--build DIR]
#   --rounds N   repetitions of every measurement, interleaved (default 3);
#                the summary is the median of the rounds
#   --runs N     runs (jobs) per throughput measurement (default 20000)
#   --only LIST  comma-separated subset of: cl1x8, cl2x4, cl1x8-ahead,
#                cl2x4-ahead, gw-default, gw-best,
#                boss-default, boss-best, raw-queue, raw-ledger,
#                raw-ledger-batched, raw-ledger-folded-batched,
#                raw-runs-batched, raw-runs-min-batched, fire, fire-ahead,
#                gw-latency, idle, what-if
#                (default: all but what-if)
#   --profile    also run cronledger 1x8 and 2x4 once more with the libpq
#                round-trip profile (bench/pg_trace.h), after the rounds
#   --out FILE   also write every measurement (round, name, value, unit) there
#   --build DIR  the bench build (default: build/bench, built by bench/run.sh)
#
# Every measurement gets a fresh database on the server:
#   cl1x8, cl2x4    build/bench/bench/pg_bench throughput: N due runs of an
#                   in-process no-op job, 1 node x 8 workers and 2 nodes x 4
#                   workers (engine::Dispatcher, each node its own store and
#                   connection), runs/s until every completion committed
#   cl*-ahead       the same with server.claim_ahead = 1s (claims beyond the
#                   free workers, cronledger's best documented configuration)
#   gw-*, boss-*    bench/pg_peers/peers.js: graphile-worker and pg-boss on N
#                   queued no-op jobs, default and best documented options
#                   (pg-boss's default is time-boxed at 30 s: one job per 2 s)
#   raw-*           pgbench with bench/pg_raw/{queue,ledger}.sql, 8 clients,
#                   N jobs: per job a FOR UPDATE SKIP LOCKED claim and a
#                   completion fenced by the token, on cronledger's schema;
#                   raw-ledger-batched: every write cronledger makes (runs,
#                   attempts, steps, four events) set-based, 32 runs per
#                   claim statement and per completion statement;
#                   raw-ledger-folded-batched: the same without the step's
#                   row and events (runs, attempt, claimed, succeeded);
#                   raw-runs-batched: the runs row alone; raw-runs-min-batched:
#                   the runs row alone with only the indexes a queue needs
#                   (the ledger's readers' indexes dropped)
#   fire            pg_bench fire: 1,000 runs due at one instant, p50 and p99
#                   of scheduled-instant-to-handler-start (3 occurrences);
#                   fire-ahead: the same with server.claim_ahead = 1s
#   gw-latency      graphile-worker add-to-start: one job at a time, and
#                   1,000 jobs added in one call
#   idle            bench/idle_serve.sh --store: a real `cronledger serve` with
#                   1,000 daily jobs on the server, CPU of serve and of the
#                   server's processes over 30 s
#   what-if         experiments, not the product: cl1x8 with ANALYZE after
#                   planning; cl1x8 and cl2x4 with ANALYZE and the index on
#                   (scheduled_at, id) proposed in docs/benchmarks.md; fire
#                   with ANALYZE after the warm-up occurrence
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

rounds=3
runs=20000
only="cl1x8,cl2x4,cl1x8-ahead,cl2x4-ahead,gw-default,gw-best,boss-default,boss-best,raw-queue,raw-ledger,raw-ledger-batched,raw-ledger-folded-batched,raw-runs-batched,raw-runs-min-batched,fire,fire-ahead,gw-latency,idle"
profile=0
out=""
build="$root/build/bench"
usage() { sed -n '7,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }
while (($# > 0)); do
  case $1 in
    --rounds) rounds=${2:?}; shift 2 ;;
    --runs) runs=${2:?}; shift 2 ;;
    --only) only=${2:?}; shift 2 ;;
    --profile) profile=1; shift ;;
    --out) out=${2:?}; shift 2 ;;
    --build) build=${2:?}; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "pg_bench: unknown argument: $1" >&2; usage ;;
  esac
done
[[ $rounds =~ ^[1-9][0-9]*$ && $runs =~ ^[1-9][0-9]*$ ]] || { echo "pg_bench: --rounds and --runs are positive numbers" >&2; exit 2; }
pg_bench="$build/bench/pg_bench"
cronledger="$build/cronledger"
[[ -x $pg_bench && -x $cronledger ]] || { echo "pg_bench: $pg_bench or $cronledger missing (scripts/build.sh bench)" >&2; exit 2; }
want() { [[ ",$only," == *",$1,"* ]]; }

state=$(mktemp -d /tmp/cronledger-pg-bench.XXXXXX)
results="$state/results.tsv"
cleanup() {
  "$root/scripts/pg-server.sh" stop "$state" || true
  rm -rf "$state"
}
trap cleanup EXIT
trap 'echo "pg_bench: interrupted" >&2; exit 130' INT TERM

# The peers, exactly as locked.
(cd "$root/bench/pg_peers" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)

"$root/scripts/pg-server.sh" start "$state" --durable
url=$(cat "$state/url")
base=${url%/*}
datadir=$(cat "$state/datadir")
echo "pg_bench: $(psql "$url" -tAc 'SELECT version()' | cut -d, -f1) at ${url}; fsync=$(psql "$url" -tAc 'SHOW fsync')," \
  "synchronous_commit=$(psql "$url" -tAc 'SHOW synchronous_commit'), wal_sync_method=$(psql "$url" -tAc 'SHOW wal_sync_method')," \
  "shared_buffers=$(psql "$url" -tAc 'SHOW shared_buffers'); node $(node --version); $(nproc) cores" >&2

# The index proposed in docs/benchmarks.md: the claim's ORDER BY scheduled_at,
# id without a sort (what-if runs and the raw ceiling only).
what_if_sql="CREATE INDEX runs_due_ordered ON runs (scheduled_at, id) WHERE state = 'pending' AND released = 1"

# The disk's flush rate (a commit with fsync on waits for one).
fsync_probe=$(mktemp "$state/fsync.XXXXXX")
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
echo "pg_bench: pg_test_fsync (one 8 kB write + fdatasync, 1 s): $("$pgbin/pg_test_fsync" -s 1 -f "$fsync_probe" 2>/dev/null |
  awk '/one 8kB write/ {one = 1} one && $1 == "fdatasync" {print $2, "ops/s,", $4, "us/op"; exit}')" >&2
rm -f "$fsync_probe"

# Every index of runs that only the ledger's readers use (status, gaps,
# dashboard, retention), leaving the primary key, the run key's UNIQUE and
# the two a queue needs: the claim's order and the reaper's expiry.
readers_indexes_dropped="DROP INDEX runs_unreleased, runs_active, runs_attention, runs_skipped, runs_succeeded, runs_job_date, runs_updated;"

db_seq=0
fresh_db() {
  db_seq=$((db_seq + 1))
  local name="bench_$db_seq"
  psql "$url" -qc "CREATE DATABASE $name" >/dev/null
  echo "$base/$name"
}
drop_db() { psql "$url" -qc "DROP DATABASE IF EXISTS ${1##*/}" >/dev/null; }

record() {  # round name value unit
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$results"
  [[ -z $out ]] || printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$out"
  printf 'pg_bench: round %s: %s = %s %s\n' "$1" "$2" "$3" "$4" >&2
}
# Runs a command that prints RESULT lines; records them for round $1.
collect() {
  local round=$1
  shift
  local lines
  lines=$("$@") || { echo "pg_bench: failed: $*" >&2; exit 1; }
  while IFS=$'\t' read -r tag name value unit; do
    [[ $tag == RESULT ]] && record "$round" "$name" "$value" "$unit"
  done <<<"$lines"
}
load() { cut -d' ' -f1-3 /proc/loadavg; }

cl_throughput() {  # round nodes workers [extra args]
  local round=$1 nodes=$2 workers=$3 db
  shift 3
  db=$(fresh_db)
  collect "$round" "$pg_bench" throughput --url "$db" --runs "$runs" --nodes "$nodes" --workers "$workers" "$@"
  drop_db "$db"
}
peer() {  # round command mode [extra args]
  local round=$1 cmd=$2 mode=$3 db
  shift 3
  db=$(fresh_db)
  collect "$round" node "$root/bench/pg_peers/peers.js" "$cmd" --url "$db" --jobs "$runs" --mode "$mode" "$@"
  drop_db "$db"
}
raw() {  # round script [runs per script transaction [name [setup SQL]]]
  local round=$1 script=$2 batch=${3:-1} name=${4:-raw-${2//_/-}} setup=${5:-} db clients=8 tps done per_client want
  per_client=$((runs / clients / batch))
  want=$((per_client * clients * batch))
  db=$(fresh_db)
  # More runs than jobs: SKIP LOCKED always finds an unlocked one.
  "$pg_bench" prepare --url "$db" --runs $((runs + 100)) >&2
  # The claim's order has its index since migration 007 (runs_due_order).
  psql "$db" -qc "CREATE SEQUENCE bench_tokens; $setup ANALYZE" >/dev/null
  tps=$(pgbench -n -M prepared -c "$clients" -j 2 -t "$per_client" \
          -f "$root/bench/pg_raw/$script.sql" "$db" 2>&1 | tee "$state/pgbench.log" |
        sed -n 's/^tps = \([0-9.]*\) .*/\1/p')
  done=$(psql "$db" -tAc "SELECT count(*) FROM runs WHERE state = 'succeeded'")
  if [[ -z $tps || $done != "$want" ]]; then
    cat "$state/pgbench.log" >&2
    echo "pg_bench: raw $script: $done runs succeeded, want $want" >&2
    exit 1
  fi
  record "$round" "$name" "$(awk -v t="$tps" -v b="$batch" 'BEGIN {printf "%.3f", t * b}')" "jobs/s"
  drop_db "$db"
}
idle() {  # round
  local round=$1 db report cpu server
  db=$(fresh_db)
  report=$("$root/bench/idle_serve.sh" --binary "$cronledger" --store "$db" --pg-datadir "$datadir" \
             --warmup 20 --duration 30 --jobs 1000)
  echo "$report" >&2
  cpu=$(sed -n 's/^  CPU  *\([0-9.]*\) % of one core.*/\1/p' <<<"$report")
  server=$(sed -n 's/^  database server CPU  *\([0-9.]*\) %.*/\1/p' <<<"$report")
  record "$round" cronledger-idle-serve-cpu "$cpu" "% of a core"
  record "$round" cronledger-idle-server-cpu "$server" "% of a core"
  drop_db "$db"
}

for ((round = 1; round <= rounds; round++)); do
  echo "pg_bench: round $round of $rounds, load average $(load) ($(nproc) cores)" >&2
  want cl1x8 && cl_throughput "$round" 1 8
  want gw-default && peer "$round" graphile default
  want gw-best && peer "$round" graphile best
  want boss-default && peer "$round" pgboss default --max-seconds 30
  want boss-best && peer "$round" pgboss best
  want cl2x4 && cl_throughput "$round" 2 4
  want cl1x8-ahead && cl_throughput "$round" 1 8 --claim-ahead-ms 1000 --label cronledger-1x8-ahead
  want cl2x4-ahead && cl_throughput "$round" 2 4 --claim-ahead-ms 1000 --label cronledger-2x4-ahead
  want raw-queue && raw "$round" queue
  want raw-ledger && raw "$round" ledger
  want raw-ledger-batched && raw "$round" ledger_batched 32
  want raw-ledger-folded-batched && raw "$round" ledger_folded_batched 32
  want raw-runs-batched && raw "$round" runs_batched 32
  want raw-runs-min-batched && raw "$round" runs_batched 32 raw-runs-min-batched "$readers_indexes_dropped"
  if want what-if; then
    cl_throughput "$round" 1 8 --label cronledger-1x8-what-if-analyze --setup-sql "ANALYZE"
    cl_throughput "$round" 1 8 --label cronledger-1x8-what-if-analyze-index --setup-sql "$what_if_sql; ANALYZE"
    cl_throughput "$round" 2 4 --label cronledger-2x4-what-if-analyze-index --setup-sql "$what_if_sql; ANALYZE"
    db=$(fresh_db)
    collect "$round" "$pg_bench" fire --url "$db" --occurrences 3 --label cronledger-fire-what-if-analyze --setup-sql "ANALYZE"
    drop_db "$db"
  fi
  if want fire; then
    db=$(fresh_db)
    collect "$round" "$pg_bench" fire --url "$db" --occurrences 3
    drop_db "$db"
  fi
  if want fire-ahead; then
    db=$(fresh_db)
    collect "$round" "$pg_bench" fire --url "$db" --occurrences 3 --claim-ahead-ms 1000 --label cronledger-fire-ahead
    drop_db "$db"
  fi
  if want gw-latency; then
    db=$(fresh_db)
    collect "$round" node "$root/bench/pg_peers/peers.js" graphile-latency --url "$db" --samples 200 --bursts 3
    drop_db "$db"
  fi
  want idle && idle "$round"
done
echo "pg_bench: done, load average $(load)" >&2

if ((profile)); then
  for nw in "1 8" "2 4"; do
    read -r n w <<<"$nw"
    db=$(fresh_db)
    echo "pg_bench: profile of cronledger ${n}x${w} (not counted in the medians)" >&2
    "$pg_bench" throughput --url "$db" --runs "$runs" --nodes "$n" --workers "$w" --profile \
      --label "cronledger-${n}x${w}-profiled" >/dev/null
    drop_db "$db"
  done
fi

# ---- summary: medians over the rounds, and ratios ---------------------------------
medians="$state/medians.tsv"
awk -F'\t' '{v[$2] = v[$2] " " $3; u[$2] = $4; n[$2]++}
  END {for (k in v) {m = split(substr(v[k], 2), a, " "); 
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] + 0 < a[i] + 0) {t = a[i]; a[i] = a[j]; a[j] = t}
    med = (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    lo = a[1]; hi = a[m]
    printf "%s\t%s\t%s\t%s\t%d\t%s\n", k, med, lo, hi, n[k], u[k]}}' "$results" | sort >"$medians"
get() { awk -F'\t' -v k="$1" '$1 == k {print $2}' "$medians"; }

echo
echo "PostgreSQL benchmark: medians of $rounds round(s), $runs runs/jobs per throughput figure"
printf '%-40s %12s %12s %12s  %s\n' "measurement" "median" "min" "max" "unit"
while IFS=$'\t' read -r name med lo hi n unit; do
  printf '%-40s %12.1f %12.1f %12.1f  %s (n=%s)\n' "$name" "$med" "$lo" "$hi" "$unit" "$n"
done <"$medians"

echo
echo "Ratios cronledger / peer (throughput medians):"
for cl in cronledger-1x8 cronledger-2x4 cronledger-1x8-ahead cronledger-2x4-ahead cronledger-1x8-what-if-analyze cronledger-1x8-what-if-analyze-index cronledger-2x4-what-if-analyze-index; do
  c=$(get "$cl")
  [[ -n $c ]] || continue
  line=$(printf '%-30s' "$cl")
  for peer in graphile-worker-default graphile-worker-best pg-boss-default pg-boss-best raw-queue raw-ledger raw-ledger-batched; do
    p=$(get "$peer")
    [[ -n $p ]] || continue
    line+=$(awk -v c="$c" -v p="$p" -v n="$peer" 'BEGIN {if (p > 0) printf "  %s %.2f", n, c / p; else printf "  %s n/a", n}')
  done
  echo "$line"
done
