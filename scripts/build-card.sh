#!/usr/bin/env bash
# Rebuilds the memory card (symbiote/mcp/card/memory-card.html, the MCP App view the server ships)
# from its sources: installs the card's pinned npm packages afresh from its lock, then bundles and
# inlines them (symbiote/mcp/card/build.mjs). The same sources give the same bytes
# (tests/e2e/card/test_build.py checks the shipped file). Usage: scripts/build-card.sh [--install]
# With --install it only installs the packages (the card's tests bundle their host page with them).
set -euo pipefail
cd "$(dirname "$0")/../symbiote/mcp/card"
command -v node >/dev/null 2>&1 || { echo "build-card: node (20 or later) is missing" >&2; exit 1; }
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' \
  || { echo "build-card: node $(node --version) is too old: 20 or later" >&2; exit 1; }
# No install scripts run: esbuild's binary comes in its platform package, which needs none.
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
[ "${1:-}" = "--install" ] && exit 0
node build.mjs
