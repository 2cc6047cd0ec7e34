#!/usr/bin/env bash
# Long fuzzing sessions outside CI (docs/development.md, fuzzing).
# Usage: scripts/fuzz.sh cron|config|api [SECONDS] [libFuzzer flags...]
#   SECONDS   how long (default 600; 0: until Ctrl-C)
#   FUZZ_JOBS=N in the environment runs N fuzzing processes (-fork=N).
# Builds the fuzz flavour, then fuzzes TARGET at low priority, starting from
# the seed corpus tests/fuzz/corpus/TARGET (read, never written) and the
# session corpus build/fuzz/corpus/TARGET, which keeps what earlier
# sessions found and receives the new inputs. Crashes, timeouts and leaks
# are written to build/fuzz/crashes/TARGET/.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage="usage: scripts/fuzz.sh cron|config|api [SECONDS] [libFuzzer flags...]"
target=${1:?$usage}
seconds=${2:-600}
shift $(($# >= 2 ? 2 : 1))
case $target in
  cron) max_len=320 ;;
  config | api) max_len=4096 ;;
  *) echo "$usage" >&2; exit 2 ;;
esac

"$root/scripts/build.sh" fuzz >/dev/null
fuzzer="$root/build/fuzz/tests/fuzz/${target}_fuzzer"
session="$root/build/fuzz/corpus/$target"
crashes="$root/build/fuzz/crashes/$target"
mkdir -p "$session" "$crashes"

flags=(-max_len="$max_len" -dict="$root/tests/fuzz/dict/$target.dict" -timeout=60
       -artifact_prefix="$crashes/" -print_final_stats=1)
if [[ $seconds != 0 ]]; then flags+=(-max_total_time="$seconds"); fi
if [[ -n ${FUZZ_JOBS:-} ]]; then flags+=(-fork="$FUZZ_JOBS" -ignore_crashes=1); fi

echo "fuzz: $target for ${seconds}s; new inputs in $session, crashes in $crashes" >&2
status=0
nice -n 19 "$fuzzer" "${flags[@]}" "$@" "$session" "$root/tests/fuzz/corpus/$target" || status=$?

found=$(find "$crashes" -type f | wc -l)
cat >&2 <<MSG
fuzz: $(find "$session" -type f | wc -l) inputs in the session corpus, $found file(s) in $crashes
  replay one:   $fuzzer FILE
  minimise it:  $fuzzer -minimize_crash=1 -runs=100000 FILE
  keep new seeds (only the inputs that add coverage):
                $fuzzer -merge=1 -max_len=$max_len $root/tests/fuzz/corpus/$target $session
MSG
exit "$status"
