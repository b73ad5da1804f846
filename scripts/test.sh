#!/usr/bin/env bash
# Sets up (first run only) and runs the whole test suite: real model, real Chroma, real HTTP.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh dev
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/python -m pytest "$@"
