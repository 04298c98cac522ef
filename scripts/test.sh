#!/usr/bin/env bash
# Sets up and runs every check and test of genai: formatting, lints, unit and integration tests,
# and a smoke run of the daemon benchmark. Needs only a Rust toolchain (cargo, rustfmt, clippy).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo is missing: install Rust from https://rustup.rs first" >&2
  exit 1
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --all-targets --locked -- -D warnings
echo "== cargo test"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --all-targets --locked 2>&1 | tee "$log"
echo "== benchmark smoke run (release)"
cargo build --release --locked --bin genai --example bench-daemon
cargo run --release --locked --example bench-daemon -- --quick
# One closing line for all test binaries together.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;?$/) p += $i; if ($(i+1) ~ /^failed;?$/) f += $i; if ($(i+1) ~ /^ignored;?$/) s += $i } }
     END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, s }' "$log"
