#!/usr/bin/env bash
# Builds genai and asks a question end to end. Until the embedded local model lands (issue 4),
# the model behind it is the fake OpenAI-compatible server of examples/fake-provider.rs on
# loopback; with OPENAI_API_KEY set (and network), it asks OpenAI instead.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --bin genai --example fake-provider
question="${*:-Why is the sky blue? Answer in one sentence.}"
if [ -n "${OPENAI_API_KEY:-}" ]; then
  exec target/release/genai ask -m openai:gpt-4o-mini "$question"
fi
out=$(mktemp)
target/release/examples/fake-provider --port 0 --chunks 8 --delay-ms 40 \
  --reply "The sky looks blue because air scatters short blue wavelengths of sunlight far more than red ones." >"$out" &
fake=$!
trap 'kill $fake 2>/dev/null || true; rm -f "$out"' EXIT
for _ in $(seq 100); do grep -q listening "$out" && break; sleep 0.05; done
url=$(sed -n 's/^listening on //p' "$out")
GENAI_DATA_DIR="${GENAI_DATA_DIR:-$(mktemp -d)}" OPENAI_BASE_URL="$url" \
  target/release/genai ask -m openai:demo-model "$question"
