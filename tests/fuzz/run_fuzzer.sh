#!/usr/bin/env bash
# One deterministic fuzzing run, as CI runs it (ctest in build/fuzz): the
# fuzzer over its seed corpus with the libFuzzer flags given (a fixed -seed
# and -runs). The seed corpus is only read: new inputs go to a scratch
# folder that is removed after. The seeds are passed as a sorted list
# (-seed_inputs) rather than as a folder, whose listing order depends on the
# file system, and the fuzzer runs without address space randomisation:
# libFuzzer's indirect-call features hash code addresses. So the same flags
# run the same inputs on every machine.
# Usage: run_fuzzer.sh FUZZER CORPUS_DIR [libFuzzer flags...]
set -euo pipefail
fuzzer=${1:?usage: run_fuzzer.sh FUZZER CORPUS_DIR [flags...]}
corpus=${2:?usage: run_fuzzer.sh FUZZER CORPUS_DIR [flags...]}
shift 2

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/new"
find "$corpus" -type f -print | LC_ALL=C sort | paste -sd, - >"$scratch/seeds"
# setarch -R may be refused in some containers; the run is then still
# correct, only its path may vary.
norandom=()
if setarch "$(uname -m)" -R true 2>/dev/null; then
  norandom=(setarch "$(uname -m)" -R)
fi
"${norandom[@]}" "$fuzzer" "$@" -seed_inputs="@$scratch/seeds" "$scratch/new"
