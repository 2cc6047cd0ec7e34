#!/usr/bin/env bash
# The embedding API as its users get it: installs this build into a
# temporary prefix, builds examples/embed against the installed package
# (find_package(cronledger), and again with pkg-config), runs it on a
# temporary SQLite ledger until two runs have published, and checks with the
# cronledger command that the run succeeded with its effect committed and
# its checkpoint written and read by the next run.
# Usage: check_installed_package.sh BUILD_DIR SOURCE_DIR CRONLEDGER_BIN [CXXFLAGS]
set -euo pipefail
build=$1 source=$2 cronledger=$3 cxxflags=${4:-}
tmp=$(mktemp -d /tmp/cronledger-embed-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
test -f "$tmp/prefix/include/cronledger/node.h"

cmake -S "$source/examples/embed" -B "$tmp/build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_CXX_FLAGS="$cxxflags" >/dev/null
cmake --build "$tmp/build" >/dev/null

# pkg-config's flags build the same program.
pc=$(PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --cflags --libs cronledger)
# shellcheck disable=SC2086
c++ $cxxflags "$source/examples/embed/main.cc" -o "$tmp/embed_pkgconfig" $pc
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/embed_pkgconfig" 2>/dev/null && exit 1 || test $? -eq 2

app="$tmp/app"
mkdir "$app"
sed 's/^listen = .*/listen = "127.0.0.1:0"/' "$source/examples/embed/cronledger.toml" >"$app/cronledger.toml"
timeout 120 "$tmp/build/embed_example" "$app/cronledger.toml" 2 >"$tmp/out" 2>"$tmp/err" || {
  echo "embed_example failed ($?):" >&2; cat "$tmp/out" "$tmp/err" >&2; exit 1; }

# Two runs, two lines: each effect once. The second run read the first's
# checkpoint (its line says "after" the first period).
lines=$(wc -l <"$app/outbox.txt")
[[ $lines -eq 2 ]] || { echo "outbox.txt has $lines lines, want 2" >&2; cat "$app/outbox.txt" >&2; exit 1; }
first=$(head -1 "$app/outbox.txt" | cut -d' ' -f1)
grep -q "(after $first)" "$tmp/out" || { echo "the second run did not see the first's checkpoint:" >&2; cat "$tmp/out" >&2; exit 1; }

"$cronledger" runs --config "$app/cronledger.toml" --state succeeded --json >"$tmp/runs.json"
id=$(python3 -c '
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
assert len(runs) == 2, f"{len(runs)} succeeded runs, want 2"
print(runs[-1]["id"])' "$tmp/runs.json")
"$cronledger" runs --config "$app/cronledger.toml" --run "$id" --json >"$tmp/run.json"
python3 - "$tmp/run.json" "$app/outbox.txt" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
periods = [line.split()[0] for line in open(sys.argv[2])]
assert run["state"] == "succeeded", run["state"]
assert run["job"] == "export_orders", run["job"]
effects = run["effects"]
assert [e["key"] for e in effects] == ["outbox-" + run["period"]], effects
assert effects[0]["state"] == "committed", effects[0]
assert run["period"] in periods, (run["period"], periods)
types = [e["type"] for e in run["events"]]
assert "effect_committed" in types and "succeeded" in types, types
print("embedded node: run", run["run_key"], "succeeded with its effect committed")
PY
cat "$tmp/out" "$tmp/err" | grep -q "stopped cleanly" || { echo "no clean stop in the log:" >&2; cat "$tmp/out" "$tmp/err" >&2; exit 1; }
