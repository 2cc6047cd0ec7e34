#!/usr/bin/env bash
# Installs every Debian package cronledger needs to build, test and benchmark.
# Idempotent and quiet: when everything is already installed it prints nothing
# and touches nothing; otherwise it runs `apt-get update` once and installs
# only what is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache tzdata git
  libsqlite3-dev libpq-dev libpqxx-dev postgresql
  nlohmann-json3-dev libcpp-httplib-dev libssl-dev libhowardhinnant-date-dev libtomlplusplus-dev
  libboost1.81-dev  # Boost.Beast over Asio: the API server (src/api/http_server.cc)
  libcli11-dev libspdlog-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
  nettle-dev  # SHA-256 in the small `cronledger` front that answers effect run (static libnettle.a)
  curl wrk  # bench/api_bench.sh
  prometheus  # promtool: the metrics test checks GET /metrics with `promtool check metrics`
  chromium    # the dashboard's browser tests (tests/browser), driven by playwright-core from npm
  clang libclang-rt-14-dev  # the fuzz targets (tests/fuzz): clang 14 and its libFuzzer and sanitizer runtimes
  # bench/pg_bench.sh (bench/run.sh pg): the PostgreSQL 15 server (postgresql
  # above) also ships pgbench (the raw SQL ceiling) and pg_test_fsync; psql
  # comes with its client; procps's ps finds the server's processes for the
  # idle CPU figure (bench/idle_serve.sh --pg-datadir). graphile-worker and
  # pg-boss come from npm (bench/pg_peers/package-lock.json, npm ci).
  postgresql-15 postgresql-client-15 procps
  python3     # tests/embed/check_installed_package.sh reads the ledger's JSON
  faketime    # libfaketime: a node's clock an hour off in the multi-node fault tests
  # bench/apscheduler_bench.sh (bench/run.sh apscheduler): APScheduler 3 with its
  # SQLAlchemy job store on SQLite, the single-node peer, run by Debian's python3
  python3-apscheduler python3-sqlalchemy
  gnuplot-nox  # bench/plots/plots.sh: the PNG plots in docs/img/ (pngcairo terminal)
)
# Node.js and npm run the browser tests (npm ci at build time, from
# tests/browser/package-lock.json); Debian's only when the machine has none.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi

# Node.js runs examples/worker.js in the external-worker tests. A machine
# that already has `node` on PATH (Node 20 from elsewhere) keeps it.
if ! command -v node >/dev/null 2>&1; then
  packages+=(nodejs)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  sudo="sudo"
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
