#!/usr/bin/env bash
# Kept for the commands in docs/benchmarks.md: bench/run.sh serve.
exec "$(dirname "${BASH_SOURCE[0]}")/run.sh" serve "$@"
