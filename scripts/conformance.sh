#!/usr/bin/env bash
# Runs independent MCP clients against a Symbiote listening on loopback (the server is not started
# here): the official conformance suite (@modelcontextprotocol/conformance, TypeScript) in each
# version pinned in tests/e2e/conformance/package.json, each against its expected-failures baseline in
# tests/e2e/conformance/, then the MCP Inspector's CLI for a tools/list and a tools/call.
#
#   scripts/conformance.sh http://127.0.0.1:8000/mcp [RESULTS_DIR]
#   scripts/conformance.sh --install      (only install; scripts/setup.sh dev does it too)
#
# The runs: 0.1.16 over all its scenarios; 0.2.0-alpha.12 over all of its own, each at the revision
# the suite picks for it (2025-11-25 for the dated ones, 2026-07-28 for the new ones, the tasks
# extension); and 0.2.0-alpha.12 again with every 2026-07-28 scenario on the stateless wire. Prints a
# line per run, then 'N passed, M failed, K expected failures' (scenarios, and the Inspector's two
# calls). Exit 0 when nothing failed, 1 when something did, 2 when the install or the usage did.
set -uo pipefail
cd "$(dirname "$0")/.."
SPEC=tests/e2e/conformance
DIR=.venv-tools/conformance
RUNS=("0.1.16" "0.2.0-alpha.12" "0.2.0-alpha.12@2026-07-28")
die() { echo "conformance: $*" >&2; exit 2; }

install() {
  command -v npm >/dev/null || die "npm is not installed"
  local stamp
  stamp="$(cat "$SPEC/package.json" "$SPEC/package-lock.json" | sha256sum | cut -c1-16)"
  [ "$(cat "$DIR/.installed" 2>/dev/null)" = "$stamp" ] && return 0
  rm -rf "$DIR" && mkdir -p "$DIR" && cp "$SPEC/package.json" "$SPEC/package-lock.json" "$DIR/"
  for _try in 1 2; do  # one retry: a fresh machine's first download can flake
    (cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error >npm-install.log 2>&1) && { echo "$stamp" >"$DIR/.installed"; return 0; }
  done
  cat "$DIR/npm-install.log" >&2
  die "npm ci failed in $DIR"
}

node_22() {  # the Node the lock pins (an npm package on Linux x64/arm64), else the machine's if new enough
  if [ -x "$DIR/node_modules/.bin/node" ]; then realpath "$DIR/node_modules/.bin/node"; return; fi
  command -v node >/dev/null && [ "$(node -p 'process.versions.node.split(".")[0]')" -ge 22 ] && { command -v node; return; }
  die "the conformance suite needs Node 22; none was installed for this platform"
}

[ "${1:-}" = "--install" ] && { install; exit 0; }
URL="${1:-}"
case "$URL" in http://127.0.0.1:*|http://localhost:*|http://\[::1\]:*) ;; *) die "usage: $0 http://127.0.0.1:PORT/mcp [RESULTS_DIR] | --install" ;; esac
install
NODE="$(node_22)"
OUT="${2:-$(mktemp -d /tmp/symbiote-conformance.XXXXXX)}"
mkdir -p "$OUT" && OUT="$(realpath "$OUT")"
failed=0; passed=0; expected=0

for run in "${RUNS[@]}"; do
  version="${run%@*}"; args=(--suite all)
  [ "$run" != "$version" ] && args+=(--spec-version "${run#*@}")
  results="$OUT/${run/@/-at-}"
  "$NODE" "$DIR/node_modules/conformance-$version/dist/index.js" server --url "$URL" "${args[@]}" \
    --expected-failures "$SPEC/expected-failures-$version.yml" -o "$results" >"$results.log" 2>&1
  verdict=$?
  "$NODE" "$SPEC/summarize.mjs" "$DIR/node_modules" "$results" "$SPEC/expected-failures-$version.yml" "${run/@/ at }" \
    || die "no results from conformance $run (see $results.log)"
  counts="$("$NODE" -p "const t = require('$results/summary.json').totals; [t.passed, t.failed, t.expected].join(' ')")"
  read -r p f e <<<"$counts"
  passed=$((passed + p)); failed=$((failed + f)); expected=$((expected + e))
  if [ "$verdict" != 0 ] && [ "$f" = 0 ]; then  # the suite's own verdict counts even where ours saw nothing
    echo "  ✗ conformance $run exited $verdict (see $results.log)"; failed=$((failed + 1))
  fi
done

# The Inspector's CLI (the TypeScript SDK's client) lists the tools and calls one. It finds its own
# package.json relative to the working directory: run it from its build directory.
inspector() { (cd "$DIR/node_modules/@modelcontextprotocol/inspector-cli/build" && "$NODE" index.js "$URL" --transport http "$@"); }
if inspector --method tools/list >"$OUT/inspector-tools-list.json" 2>"$OUT/inspector-tools-list.err"; then
  echo "inspector tools/list: $("$NODE" -p "require('$OUT/inspector-tools-list.json').tools.map(t => t.name).join(', ')")"
  passed=$((passed + 1))
else
  echo "  ✗ inspector tools/list: $(tail -1 "$OUT/inspector-tools-list.err")"; failed=$((failed + 1))
fi
if inspector --method tools/call --tool-name memory_stats >"$OUT/inspector-tools-call.json" 2>"$OUT/inspector-tools-call.err" \
  && "$NODE" -e "const r = require('$OUT/inspector-tools-call.json'); process.exit(r.isError || !r.structuredContent ? 1 : 0)"; then
  echo "inspector tools/call memory_stats: $("$NODE" -p "JSON.stringify(require('$OUT/inspector-tools-call.json').structuredContent).slice(0, 120)")"
  passed=$((passed + 1))
else
  echo "  ✗ inspector tools/call memory_stats: $(tail -1 "$OUT/inspector-tools-call.err")"; failed=$((failed + 1))
fi
echo "results: $OUT"
echo "$passed passed, $failed failed, $expected expected failures"
[ "$failed" = 0 ]
