#!/usr/bin/env bash
# The reliability suite (examples/reliability.rs) against a release build of genai: a
# misbehaving provider, hostile input, kill -9 during turns, 1,000 concurrent turns, two
# daemons on one database; prints each case's figures. `--quick` runs smaller counts (what CI
# runs, on the release build it already has). The figures in docs/BENCHMARKS.md come from the full run.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--quick" ]; then
  cargo build --release --locked --bin genai --example reliability
  exec target/release/examples/reliability --quick
fi
cargo build --locked --release --no-default-features --bin genai --example reliability
exec target/release/examples/reliability
