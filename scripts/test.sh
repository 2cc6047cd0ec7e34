#!/usr/bin/env bash
# Installs what is needed, builds the sanitized test build and runs every
# test through ctest, then builds the fuzz targets and runs each for a fixed
# number of inputs. This is the README's test command and exactly what CI
# runs (.ci/run).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" test
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$root/build/test"
# ctest's pg_server fixture starts and stops a throwaway PostgreSQL; this
# stops it too if ctest itself is interrupted.
trap '"$root/scripts/pg-server.sh" stop "$root/build/test/pg"' EXIT
ctest --output-on-failure --timeout 600 -j"$(nproc)"

# The fuzz targets (tests/fuzz): a clang build of the sources they reach,
# then each target with a fixed seed and number of runs over its seed corpus.
"$root/scripts/build.sh" fuzz
cd "$root/build/fuzz"
ctest --output-on-failure --timeout 600 -j"$(nproc)"
