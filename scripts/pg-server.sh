#!/usr/bin/env bash
# A throwaway PostgreSQL 15 server on 127.0.0.1 for tests and benchmarks.
#   scripts/pg-server.sh start STATE_DIR [--durable]
#       initdb into a fresh data directory, start on a free port, write the
#       connection URL to STATE_DIR/url. Without --durable, fsync is off
#       (tests only: benchmarks pass --durable for the stock settings).
#   scripts/pg-server.sh stop STATE_DIR
#       stop the server and delete its data directory; no-op when none runs.
# Works as root (the server runs as user postgres, which initdb and
# postgres require) and as an ordinary user.
set -euo pipefail
cmd=${1:?usage: pg-server.sh start|stop STATE_DIR [--durable]}
state=${2:?usage: pg-server.sh start|stop STATE_DIR [--durable]}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[[ -x "$bin/pg_ctl" ]] || { echo "pg-server: PostgreSQL server binaries not found (apt-get install postgresql)" >&2; exit 1; }

as_pg=()
if [[ $(id -u) -eq 0 ]]; then as_pg=(runuser -u postgres --); fi

stop() {
  [[ -f "$state/datadir" ]] || return 0
  local data
  data=$(cat "$state/datadir")
  if [[ -f "$data/postmaster.pid" ]]; then
    kill -INT "$(head -1 "$data/postmaster.pid")" 2>/dev/null || true
    # Exited processes can linger as zombies here: wait for the pid file.
    for _ in $(seq 1 300); do [[ -f "$data/postmaster.pid" ]] || break; sleep 0.1; done
  fi
  rm -rf "$data"
  rm -f "$state/datadir" "$state/url"
}

case $cmd in
  start)
    mkdir -p "$state"
    stop
    # The data directory must be reachable by user postgres (not under /root).
    data=$(mktemp -d /tmp/cronledger-pg-XXXXXX)
    if [[ $(id -u) -eq 0 ]]; then chown postgres "$data"; fi
    echo "$data" > "$state/datadir"
    "${as_pg[@]}" "$bin/initdb" -D "$data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 -N >/dev/null
    settings="-c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c max_connections=200"
    if [[ ${3:-} != --durable ]]; then
      settings+=" -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    fi
    for _ in $(seq 1 20); do
      port=$((20000 + RANDOM % 20000))
      (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue  # taken
      if "${as_pg[@]}" "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 \
           -o "$settings -p $port" start >/dev/null; then
        echo "postgresql://postgres@127.0.0.1:$port/postgres" > "$state/url"
        exit 0
      fi
    done
    cat "$data/server.log" >&2 || true
    stop
    echo "pg-server: could not start PostgreSQL" >&2
    exit 1
    ;;
  stop) stop ;;
  *) echo "usage: pg-server.sh start|stop STATE_DIR [--durable]" >&2; exit 2 ;;
esac
