#!/usr/bin/env bash
# The reliability suite (examples/reliability.rs) against a release build of genai: a
# misbehaving provider, hostile input, kill -9 during turns, 1,000 concurrent turns, two
# daemons on one database; prints each case's figures. `--quick` runs smaller counts on the
# debug build (what CI runs). The figures in docs/BENCHMARKS.md come from the full run.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--quick" ]; then
  cargo build --locked --bin genai --example reliability
  exec target/debug/examples/reliability --quick
fi
cargo build --locked --release --no-default-features --bin genai --example reliability
exec target/release/examples/reliability
