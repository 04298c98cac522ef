#!/usr/bin/env bash
# Runs every fuzz target of fuzz/ (cargo-fuzz, libFuzzer) for a bounded time, starting from the
# committed seeds in fuzz/seeds/ and the corpus earlier runs left in fuzz/corpus/ (not
# committed). Prints, per target, the executions, the coverage reached and whether anything was
# found; exits non-zero when a target crashed (the input is in fuzz/artifacts/TARGET/).
#
#   bash scripts/fuzz.sh [SECONDS_PER_TARGET] [--dev|-O]   (default 15 s, --dev; CI gives 10 s)
#
# --dev builds without optimizations, with debug assertions and overflow checks: about 7 minutes
# here against about 15 for -O (whose one codegen unit a crate keeps 2 cores idle), for some 40
# times fewer executions a second; a smoke run. For a long run, -O.
#
# Needs cargo-fuzz (installed here when missing). The machine has only the stable toolchain:
# cargo-fuzz passes `-Z` flags to rustc, which a stable rustc accepts with RUSTC_BOOTSTRAP=1.
# No sanitizer (`-s none`): the code under test is safe Rust, and the sanitizers need a std
# built with them.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs=${1:-15}
build=${2:---dev}
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  echo "== cargo install cargo-fuzz"
  cargo install cargo-fuzz --locked --version 0.13.2 >/dev/null
fi
export RUSTC_BOOTSTRAP=1
echo "== cargo fuzz build $build"
cargo fuzz build -s none "$build"
failed=0
printf '%-18s %14s %8s %8s  %s\n' target executions cov features result
for target in $(cargo fuzz list); do
  mkdir -p "corpus/$target" "seeds/$target"
  out=$(mktemp)
  if cargo fuzz run -s none "$build" "$target" "corpus/$target" "seeds/$target" -- \
      -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 -print_final_stats=1 \
      >"$out" 2>&1; then
    result=ok
  else
    result="CRASH (see fuzz/artifacts/$target)"
    failed=1
    tail -40 "$out" >&2
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$out" | tail -1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$out" | tail -1 | cut -d' ' -f2)
  printf '%-18s %14s %8s %8s  %s\n' "$target" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$result"
  rm -f "$out"
done
exit "$failed"
