#!/usr/bin/env bash
# Kept for the commands in docs/benchmarks.md: bench/run.sh ledger.
exec "$(dirname "${BASH_SOURCE[0]}")/run.sh" ledger "$@"
