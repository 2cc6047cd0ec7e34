#!/usr/bin/env bash
# Configures and builds one flavour of cronledger into build/<flavour>.
# Usage: scripts/build.sh release|test|bench|fuzz
#   release  optimised binary for `serve` (README's first command)
#   test     AddressSanitizer + UBSan, -Werror, every test (README's second command, CI)
#   bench    optimised binary with the Google Benchmark suite (not needed by CI)
#   fuzz     clang: only the libFuzzer targets of tests/fuzz, with ASan + UBSan (CI)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
flavour=${1:?usage: scripts/build.sh release|test|bench|fuzz}

# ccache hits across clones in other folders (CI builds a fresh clone).
export CCACHE_BASEDIR="$root"
export CCACHE_NOHASHDIR=1
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}

case $flavour in
  release) args=(-DCMAKE_BUILD_TYPE=Release -DCRONLEDGER_BUILD_TESTS=OFF) ;;
  # Batched translation units and line tables only (-g1: enough for the
  # sanitizers' stacks) halve a cold build; docs/benchmarks.md, CI time.
  test) args=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-g1 -O1"
              -DCRONLEDGER_SANITIZE=ON -DCRONLEDGER_WERROR=ON -DCRONLEDGER_UNITY=ON) ;;
  bench) args=(-DCMAKE_BUILD_TYPE=Release -DCRONLEDGER_BUILD_TESTS=OFF -DCRONLEDGER_BUILD_BENCH=ON) ;;
  # libFuzzer comes with clang; -gline-tables-only is enough for the stacks.
  fuzz) export CC=clang CXX=clang++
        args=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only -O1"
              -DCRONLEDGER_SANITIZE=ON -DCRONLEDGER_WERROR=ON -DCRONLEDGER_FUZZ=ON) ;;
  *) echo "unknown flavour: $flavour" >&2; exit 2 ;;
esac

build="$root/build/$flavour"
# Ninja schedules the two cores better than make; a folder configured by an
# earlier make-based build is configured again from scratch.
if [[ -f "$build/CMakeCache.txt" ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$build/CMakeCache.txt"; then
  rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
fi
cmake -S "$root" -B "$build" -G Ninja -Wno-dev "${args[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
