#!/usr/bin/env bash
# Sets up (first run only) and runs the server: streamable HTTP on http://127.0.0.1:8000/mcp.
# Extra arguments go to `symbiote serve` (e.g. --port 9000); `scripts/serve.sh stdio` runs stdio.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >&2
export HF_HUB_OFFLINE=1
echo "serve.sh: starting the server (Ctrl+C stops it)" >&2
if [ "${1:-}" = "stdio" ]; then shift; exec .venv/bin/symbiote stdio "$@"; fi
exec .venv/bin/symbiote serve "$@"
