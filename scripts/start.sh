#!/usr/bin/env bash
# Installs what is needed, builds cronledger and runs the main job. Until the
# ledger lands this shows the schedule engine on the example job: the next
# runs of "daily_report" (09:00 Asia/Seoul, reporting on yesterday).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" release
exec "$root/build/release/cronledger" next "0 9 * * *" --tz Asia/Seoul --offset-days -1 -n 10 "$@"
