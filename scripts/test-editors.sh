#!/usr/bin/env bash
# Builds and tests the editor integrations against the real daemon: the VS Code extension
# (protocol types from schemas/, bundle, .vsix, Node tests of its client, the chat page in
# headless Chromium), the O3DE Python bridge (pytest), and `genai acp` driven by the official
# ACP TypeScript SDK's client as ACP editors drive it (tests/acp-client, npm ci), `genai lsp`
# driven by vscode-languageserver-protocol (tests/lsp-client, npm ci). Installs what
# it needs from the package registries (Debian's chromium, npm ci, pytest, PySide6 for the chat widget's window).
# The daemon is $GENAI_BIN (default target/debug/genai, built if missing), the model behind it
# examples/fake-provider on loopback.
# Ends with one line: `editors: N passed, N failed, N skipped`.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

step() { echo "== $*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
apt_updated=
apt_install() {
  [ -n "$apt_updated" ] || { as_root apt-get update -qq; apt_updated=1; }
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}

step "tools"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then apt_install nodejs npm; fi
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  echo "Node.js $(node --version) is too old: the extension's tools (vsce, playwright-core) need Node 20 or later" >&2
  exit 1
fi
[ -x /usr/bin/chromium ] || apt_install chromium
if ! python3 -c 'import pytest' 2>/dev/null; then
  python3 -m pip install -q pytest 2>/dev/null || apt_install python3-pytest
fi
# PySide for the O3DE chat widget's window test (offscreen); where neither the wheel nor Debian's
# package installs, that one test is skipped.
if ! python3 -c 'import PySide6' 2>/dev/null && ! python3 -c 'import PySide2' 2>/dev/null; then
  python3 -m pip install -q PySide6-Essentials 2>/dev/null || apt_install python3-pyside2.qtwidgets \
    || echo "PySide could not be installed: the O3DE chat window test will be skipped" >&2
fi

step "genai binaries"
export GENAI_BIN="${GENAI_BIN:-$root/target/debug/genai}"
export FAKE_PROVIDER_BIN="${FAKE_PROVIDER_BIN:-$root/target/debug/examples/fake-provider}"
export FAKE_MCP_BIN="${FAKE_MCP_BIN:-$root/target/debug/examples/fake-mcp-server}"
if [ ! -x "$GENAI_BIN" ] || [ ! -x "$FAKE_PROVIDER_BIN" ] || [ ! -x "$FAKE_MCP_BIN" ]; then
  cargo build --locked --bin genai --example fake-provider --example fake-mcp-server
fi
echo "daemon: $GENAI_BIN"

step "vscode: npm ci, protocol types, build, package"
cd "$root/editor-integrations/vscode"
npm ci --no-audit --no-fund --loglevel=error
npm run --silent build
npm run --silent package

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
touch "$logs/node.tap" "$logs/acp.tap" "$logs/lsp.tap"  # counted as empty if node crashes before writing them

step "vscode: node --test (client against the daemon, chat page in Chromium)"
node_status=0
node --test --test-timeout=60000 \
  --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=tap --test-reporter-destination="$logs/node.tap" \
  out/test/*.test.js || node_status=$?

# node --test on one suite of a folder with its own package-lock.json: spec to stdout, TAP
# to $logs/NAME.tap for the count; the status goes to NAME_status.
node_suite() {
  local name=$1 folder=$2 file=$3 status=0
  cd "$root/$folder"
  npm ci --no-audit --no-fund --loglevel=error
  node --test --test-timeout=60000 \
    --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$logs/$name.tap" \
    "$file" || status=$?
  printf -v "${name}_status" '%s' "$status"
}

step "acp: npm ci, node --test (the official ACP SDK's client against genai acp)"
node_suite acp tests/acp-client acp.test.mjs

step "lsp: npm ci, node --test (vscode-languageserver-protocol's client against genai lsp)"
node_suite lsp tests/lsp-client lsp.test.mjs

step "o3de: pytest (genai_bridge against the daemon)"
cd "$root/editor-integrations/o3de"
py_status=0
python3 -m pytest -q -p no:cacheprovider --junitxml="$logs/pytest.xml" tests || py_status=$?

cd "$root"
# passed, failed, skipped of a TAP file
tap_counts() {
  awk '/^# pass /{p=$3} /^# fail /{f+=$3} /^# cancelled /{f+=$3} /^# skipped /{s+=$3} /^# todo /{s+=$3}
    END { printf "%d %d %d\n", p, f, s }' "$1"
}
read -r np nf ns < <(tap_counts "$logs/node.tap")
read -r ap af as < <(tap_counts "$logs/acp.tap")
read -r lp lf ls < <(tap_counts "$logs/lsp.tap")
read -r pp pf ps < <(python3 - "$logs/pytest.xml" <<'EOF'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except (OSError, ET.ParseError):
    print(0, 1, 0)  # pytest did not get to write its report: count that as a failure
    sys.exit()
suites = [root] if root.tag == "testsuite" else list(root)
n = lambda k: sum(int(s.get(k, 0)) for s in suites)
print(n("tests") - n("failures") - n("errors") - n("skipped"), n("failures") + n("errors"), n("skipped"))
EOF
)
passed=$((np + pp + ap + lp)); failed=$((nf + pf + af + lf)); skipped=$((ns + ps + as + ls))
# A runner that failed without counting a failed test (a crash, a collection error) still fails.
if [ "$failed" = 0 ] && { [ "$node_status" != 0 ] || [ "$py_status" != 0 ] || [ "$acp_status" != 0 ] || [ "$lsp_status" != 0 ]; }; then failed=1; fi
echo "editors: $passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
