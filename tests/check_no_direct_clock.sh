#!/usr/bin/env bash
# Time is injected: fails if any C++ source outside the real clock reads the
# system clock directly. Usage: check_no_direct_clock.sh REPO_ROOT
set -euo pipefail
root=${1:?usage: check_no_direct_clock.sh REPO_ROOT}
allowed=src/common/real_clock.cc
pattern='system_clock::now|steady_clock::now|high_resolution_clock::now|\btime\(|clock_gettime|gettimeofday'

scan() {  # prints offending lines of the C++ files under the given directory
  grep -rnE --include='*.cc' --include='*.h' --include='*.cpp' --include='*.hpp' "$pattern" "$1" || true
}

# The check must be able to fail: plant a violation and make sure it is seen.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf 'auto t = std::chrono::system_clock::now();\nlong s = time(nullptr);\n' >"$probe/probe.cc"
if [[ $(scan "$probe" | wc -l) -ne 2 ]]; then
  echo "FAIL: the pattern does not catch a planted system clock read" >&2
  exit 1
fi

cd "$root"
files=$(find src include tests bench -name '*.cc' -o -name '*.h' 2>/dev/null | wc -l)
if [[ $files -lt 10 ]]; then
  echo "FAIL: found only $files C++ files under $root; wrong root?" >&2
  exit 1
fi
violations=$(for d in src include tests bench; do [[ -d $d ]] && scan "$d"; done | grep -v "^$allowed:" || true)
if [[ -n $violations ]]; then
  echo "FAIL: read the time through cronledger::Clock, not directly:" >&2
  echo "$violations" >&2
  exit 1
fi
echo "ok: $files C++ files, no direct clock reads outside $allowed"
