#!/usr/bin/env bash
# Installs what is needed, builds cronledger and runs the main job: `serve` on
# the example configuration, with its ledger in examples/cronledger.db
# (SQLite). Stop it with Ctrl-C.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" release
exec "$root/build/release/cronledger" serve --config "$root/examples/cronledger.toml" "$@"
